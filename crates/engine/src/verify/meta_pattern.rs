//! fio's `verify=meta` with `verify_pattern`: every verify block starts with fsmeter's header
//! (header.rs) and holds the pattern in the rest. fio fills the whole block with the pattern and
//! writes its header over the block's start (verify.c, fill_pattern_headers); reads check the
//! header's fields and then every byte after it against the pattern (verify_io_u with
//! VERIFY_HDR_ONLY and a pattern). fsmeter does the same with its own 80-byte header, so a
//! pattern byte keeps the place it has in fio's block: byte `o` of a block holds `pattern[o % n]`.
//!
//! The header carries the crc32c of the payload (the pattern after the header), which is the
//! same for every block, so a writer stamps headers without a pass over the data: per block one
//! header encoding (a crc32c of 72 bytes) and no allocation.

use super::content::byte_mismatch;
use super::header::{BlockHeader, Checksum, CHECKSUM_LEN, HEADER_LEN, MAGIC, MIN_BLOCK, VERSION};

/// The blocks of one job: their size, the pattern and what every block's payload must be.
pub struct MetaPattern {
    block: usize,
    pattern: Vec<u8>,
    /// Bytes HEADER_LEN.. of a block: the pattern from its place after the header.
    payload: Vec<u8>,
    payload_sum: [u8; CHECKSUM_LEN],
    /// The job's seed, in every header.
    seed: u64,
}

/// A block that fails: the first wrong byte and the header field (or "pattern") it is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaFault {
    /// The block's offset in its file.
    pub block_offset: u64,
    /// The first wrong byte, from the block's start.
    pub first: usize,
    pub field: &'static str,
}

impl MetaPattern {
    /// `block` bytes per header (fio's verify_interval); `pattern` divides it. Callers validate both.
    pub fn new(block: usize, pattern: &[u8], seed: u64) -> MetaPattern {
        assert!(block >= MIN_BLOCK && !pattern.is_empty() && block.is_multiple_of(pattern.len()));
        let payload: Vec<u8> = (HEADER_LEN..block).map(|i| pattern[i % pattern.len()]).collect();
        let payload_sum = Checksum::Crc32c.digest(&payload);
        MetaPattern { block, pattern: pattern.to_vec(), payload, payload_sum, seed }
    }

    pub fn block(&self) -> usize {
        self.block
    }

    /// Write the header of every block of `buf` (a whole number of blocks, the first at file offset
    /// `offset`) over the pattern already there (the buffer holds the pattern from its start).
    #[inline]
    pub fn stamp(&self, buf: &mut [u8], offset: u64, generation: u64, thread: u32) {
        for (i, b) in buf.chunks_mut(self.block).enumerate() {
            if b.len() < HEADER_LEN {
                break;
            }
            let off = offset + (i * self.block) as u64;
            let mut h = BlockHeader::new(off, self.block as u32, generation, thread, self.seed, Checksum::Crc32c);
            h.checksum = self.payload_sum;
            h.write_to(b);
        }
    }

    /// The whole block a reader expects at `offset`, given the header found (its thread, write
    /// number and seed cannot be known when another job wrote the file): for reports only.
    #[cold]
    fn expected(&self, found: &[u8], offset: u64) -> Vec<u8> {
        let mut out = vec![0u8; self.block];
        out[HEADER_LEN..].copy_from_slice(&self.payload);
        let (generation, thread) = if found.len() >= HEADER_LEN {
            let h = BlockHeader::parse(found);
            (h.generation, h.thread)
        } else {
            (0, 0)
        };
        self.stamp(&mut out, offset, generation, thread);
        out
    }

    /// Check the blocks of `data`, read at file offset `offset` (a block cut short by the end of
    /// the data is checked as far as it goes, the missing bytes counting as zeros). Returns the first
    /// bad block.
    #[inline]
    pub fn check(&self, data: &[u8], offset: u64) -> Option<MetaFault> {
        for (i, b) in data.chunks(self.block).enumerate() {
            let off = offset + (i * self.block) as u64;
            if let Some((first, field)) = self.check_block(b, off) {
                return Some(MetaFault { block_offset: off, first, field });
            }
        }
        None
    }

    /// Every bad block of `data` (after `check` found one: cold).
    #[cold]
    pub fn faults(&self, data: &[u8], offset: u64) -> Vec<MetaFault> {
        data.chunks(self.block)
            .enumerate()
            .filter_map(|(i, b)| {
                let off = offset + (i * self.block) as u64;
                self.check_block(b, off).map(|(first, field)| MetaFault { block_offset: off, first, field })
            })
            .collect()
    }

    #[inline]
    fn check_block(&self, b: &[u8], off: u64) -> Option<(usize, &'static str)> {
        if b.len() < HEADER_LEN {
            return Some((b.len(), "header (the block is cut short)"));
        }
        let h = BlockHeader::parse(b);
        let field = if h.magic != MAGIC {
            Some((0, "magic"))
        } else if h.version != VERSION {
            Some((4, "version"))
        } else if h.algo_code != Checksum::Crc32c.code() {
            Some((5, "algo"))
        } else if h.len as usize != self.block {
            Some((8, "len"))
        } else if h.offset != off {
            Some((16, "offset"))
        } else if h.checksum != self.payload_sum {
            Some((40, "checksum"))
        } else if !BlockHeader::header_crc_ok(b) {
            Some((72, "header_crc (a header field was changed: thread, write number or seed)"))
        } else {
            None
        };
        if field.is_some() {
            return field;
        }
        let got = &b[HEADER_LEN..];
        let want = &self.payload[..got.len()];
        if got != want {
            let k = got.iter().zip(want).position(|(x, y)| x != y).unwrap_or(0);
            return Some((HEADER_LEN + k, "pattern"));
        }
        (b.len() < self.block).then_some((b.len(), "pattern (the block is cut short)"))
    }

    /// A failed block as a report entry (content.rs's form, with the header field named).
    #[cold]
    pub fn describe(&self, file: &str, data_block: &[u8], fault: &MetaFault, phase: &str) -> serde_json::Value {
        let exp = self.expected(data_block, fault.block_offset);
        let mut found = data_block.to_vec();
        found.resize(self.block, 0);
        let mut v = byte_mismatch(file, fault.block_offset, self.block, phase, &exp, &found, fault.first);
        v["field"] = serde_json::json!(fault.field);
        v["pattern_bytes"] = serde_json::json!(self.pattern.len());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAT: [u8; 4] = [0xaa, 0x55, 0x5a, 0xa5];

    /// A buffer of `blocks` blocks of 512 bytes as a writer makes it: the pattern, then headers.
    fn written(m: &MetaPattern, blocks: usize, offset: u64) -> Vec<u8> {
        let mut b: Vec<u8> = PAT.iter().copied().cycle().take(blocks * 512).collect();
        m.stamp(&mut b, offset, 7, 3);
        b
    }

    #[test]
    fn each_block_is_the_header_then_the_pattern_in_its_place() {
        let m = MetaPattern::new(512, &PAT, 42);
        let b = written(&m, 128, 65536);
        for (i, blk) in b.chunks(512).enumerate() {
            assert_eq!(&blk[..4], b"FSMV");
            let h = BlockHeader::parse(blk);
            assert_eq!((h.offset, h.len, h.thread, h.generation), (65536 + 512 * i as u64, 512, 3, 7));
            assert_eq!(&h.checksum[..4], &crc32c::crc32c(&blk[80..]).to_le_bytes());
            // fio's layout: the pattern starts at the block's start, so byte 80 holds pattern[80 % 4] = 0xaa.
            assert!(blk[80..].iter().enumerate().all(|(j, &x)| x == PAT[(80 + j) % 4]));
        }
        assert_eq!(m.check(&b, 65536), None);
    }

    #[test]
    fn a_wrong_pattern_byte_is_found_at_its_offset() {
        let m = MetaPattern::new(512, &PAT, 42);
        let mut b = written(&m, 8, 0);
        b[3 * 512 + 300] ^= 0x01;
        let f = m.check(&b, 1 << 20).map(|f| (f.block_offset, f.first, f.field));
        // Checked at another offset, the first block's header names the wrong offset instead.
        assert_eq!(f, Some((1 << 20, 16, "offset")));
        assert_eq!(m.check(&b, 0), Some(MetaFault { block_offset: 3 * 512, first: 300, field: "pattern" }));
        b[6 * 512 + 20] ^= 0x01;
        let all: Vec<(u64, usize, &str)> = m.faults(&b, 0).iter().map(|f| (f.block_offset, f.first, f.field)).collect();
        assert_eq!(all, vec![(3 * 512, 300, "pattern"), (6 * 512, 16, "offset")]);
        let v = m.describe("f", &b[3 * 512..4 * 512], &m.check(&b, 0).unwrap(), "verify");
        assert_eq!(v["first_diff_offset"], 3 * 512 + 300);
        assert_eq!(v["found_bytes"].as_str().unwrap().len(), v["expected_bytes"].as_str().unwrap().len());
    }

    #[test]
    fn a_changed_header_field_is_caught() {
        let m = MetaPattern::new(512, &PAT, 42);
        let clean = written(&m, 4, 4096);
        for (at, field) in [
            (0, "magic"),
            (8, "len"),
            (16, "offset"),
            (41, "checksum"),
            (13, "header_crc"),
            (25, "header_crc"),
            (33, "header_crc"),
        ] {
            let mut b = clean.clone();
            b[512 * 2 + at] ^= 0x10;
            let f = m.check(&b, 4096).expect("caught");
            assert_eq!(f.block_offset, 4096 + 1024, "byte {at}");
            assert!(f.field.starts_with(field), "byte {at}: {}", f.field);
        }
        // A block whose header is pattern (written without meta) fails at the magic.
        let plain: Vec<u8> = PAT.iter().copied().cycle().take(512).collect();
        assert_eq!(m.check(&plain, 0).map(|f| f.field), Some("magic"));
        // A file that ends inside a block.
        assert_eq!(m.check(&clean[..512 + 100], 4096).map(|f| (f.block_offset, f.first)), Some((4096 + 512, 100)));
    }
}
