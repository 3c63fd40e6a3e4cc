//! The check of a verified block read back, and what is wrong with one that
//! fails: its kind, the first differing byte and the bytes around it, the
//! header found and the one expected.

// The checks return the whole Mismatch as their error (about 256 bytes): it is built only for a
// corrupt block, and boxing it would allocate on that path and change every caller for nothing.
#![allow(clippy::result_large_err)]

use serde::{Deserialize, Serialize};

use super::header::{hex, BlockHeader, Checksum, MAGIC, MAX_HEADER_LEN, OFF_CHECKSUM, VERSION, VERSION_LONG};
use super::payload::{block_key, fill_block, fill_payload, payload_byte};

/// What is wrong with a block read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MismatchKind {
    /// Fewer bytes came back than a header needs (a short read of a short file).
    Short,
    /// The whole block reads as zeros: never written, or lost (a hole, a crash).
    ZeroFilled,
    /// The first bytes are not "FSMV": not a block fsmeter wrote.
    BadMagic,
    /// The header's own crc32c fails: the header bytes were damaged.
    BadHeader,
    /// A header of another format version.
    BadVersion,
    /// Written with another checksum algorithm than the one checked for.
    WrongAlgo,
    /// The header's length is not the block's.
    WrongLength,
    /// A good header for another offset: a misplaced (misdirected) write or read.
    WrongOffset,
    /// Header fine, payload checksum fails.
    BadChecksum,
    /// As BadChecksum, and everything from the first differing byte to the end is zero (a torn write's lost tail).
    ZeroTail,
    /// A consistent block, but an older write than the one expected there (a lost write).
    Stale,
}

impl MismatchKind {
    pub fn name(self) -> &'static str {
        match self {
            MismatchKind::Short => "short",
            MismatchKind::ZeroFilled => "zero_filled",
            MismatchKind::BadMagic => "bad_magic",
            MismatchKind::BadHeader => "bad_header",
            MismatchKind::BadVersion => "bad_version",
            MismatchKind::WrongAlgo => "wrong_algo",
            MismatchKind::WrongLength => "wrong_length",
            MismatchKind::WrongOffset => "wrong_offset",
            MismatchKind::BadChecksum => "bad_checksum",
            MismatchKind::ZeroTail => "zero_tail",
            MismatchKind::Stale => "stale",
        }
    }
}

/// Bytes shown either side of the first differing byte.
pub const WINDOW: usize = 16;

/// A block that failed its check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The block's offset in its file (where it was read from).
    pub offset: u64,
    /// Bytes checked.
    pub len: usize,
    pub kind: MismatchKind,
    /// The header as found (None when there is none: short or zero-filled).
    pub found: Option<BlockHeader>,
    /// The header that should be there, when known: the found header's writer
    /// and write number with this block's offset, length and algorithm, or the
    /// expected writer when the caller knew it.
    pub expected: Option<BlockHeader>,
    /// Index in the block of the first byte that differs from what was written.
    pub first_diff: Option<usize>,
    /// Index in the block of `expected_bytes[0]` / `found_bytes[0]`.
    pub window_start: usize,
    /// Bytes from `window_start`: what should be there, and what is.
    pub expected_bytes: Vec<u8>,
    pub found_bytes: Vec<u8>,
}

impl Mismatch {
    fn new(offset: u64, len: usize, kind: MismatchKind, found: Option<BlockHeader>) -> Mismatch {
        Mismatch {
            offset,
            len,
            kind,
            found,
            expected: None,
            first_diff: None,
            window_start: 0,
            expected_bytes: vec![],
            found_bytes: vec![],
        }
    }

    /// Record the first differing byte and the bytes around it (mismatch path only: may allocate).
    fn with_diff(mut self, buf: &[u8], expected: &[u8], first: usize) -> Mismatch {
        let start = first.saturating_sub(WINDOW);
        let end = (first + WINDOW).min(buf.len()).min(expected.len());
        self.first_diff = Some(first);
        self.window_start = start;
        self.expected_bytes = expected[start..end].to_vec();
        self.found_bytes = buf[start..end].to_vec();
        self
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "offset": self.offset,
            "len": self.len,
            "kind": self.kind.name(),
            "found": self.found.map(|h| h.to_json()),
            "expected": self.expected.map(|h| h.to_json()),
            "first_diff": self.first_diff,
            "first_diff_offset": self.first_diff.map(|d| self.offset + d as u64),
            "window_start": self.window_start,
            "expected_bytes": hex(&self.expected_bytes),
            "found_bytes": hex(&self.found_bytes),
        })
    }
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at offset {} ({} bytes)", self.kind.name(), self.offset, self.len)?;
        if let Some(d) = self.first_diff {
            write!(
                f,
                ", first differing byte at offset {} (block byte {d}): expected {} found {}",
                self.offset + d as u64,
                hex(&self.expected_bytes),
                hex(&self.found_bytes)
            )?;
        }
        if let Some(h) = &self.found {
            write!(
                f,
                "; found header: offset {} len {} thread {} generation {}",
                h.offset, h.len, h.thread, h.generation
            )?;
        }
        Ok(())
    }
}

/// Check a block read back from `offset`; Ok(header) or Err(Mismatch) with what
/// was expected/found and the first differing byte. Allocates nothing unless it fails.
#[inline]
pub fn check_block(buf: &[u8], offset: u64, algo: Checksum) -> Result<BlockHeader, Mismatch> {
    check_block_expect(buf, offset, algo, None)
}

/// As `check_block`, and when `expect = Some((thread, generation))` the block
/// must be that write: an older or other consistent write is `Stale`.
pub fn check_block_expect(
    buf: &[u8],
    offset: u64,
    algo: Checksum,
    expect: Option<(u32, u64)>,
) -> Result<BlockHeader, Mismatch> {
    let len = buf.len();
    let hl = algo.header_len();
    if len < hl {
        return Err(Mismatch::new(offset, len, MismatchKind::Short, None));
    }
    let h = BlockHeader::parse(buf);
    if h.magic != MAGIC
        || !BlockHeader::header_crc_ok(buf)
        || h.version != algo.version()
        || h.algo_code != algo.code()
        || h.header_len as usize != hl
        || h.len as usize != len
        || h.offset != offset
    {
        return Err(header_mismatch(buf, offset, algo, h, expect));
    }
    let payload = &buf[hl..];
    if algo.digest(payload) != h.checksum {
        return Err(payload_mismatch(buf, offset, h));
    }
    if let Some((thread, generation)) = expect {
        if (h.thread, h.generation) != (thread, generation) {
            let mut exp = BlockHeader::new(offset, len as u32, generation, thread, h.seed, algo);
            let mut bytes = [0u8; MAX_HEADER_LEN];
            exp.write_to(&mut bytes);
            let first = (0..hl).find(|&i| bytes[i] != buf[i]).unwrap_or(0);
            let mut m = Mismatch::new(offset, len, MismatchKind::Stale, Some(h)).with_diff(buf, &bytes, first);
            m.expected = Some(exp);
            return Err(m);
        }
    }
    Ok(h)
}

/// Check the first bytes of a block (a file's tail shorter than its verify block):
/// `buf` must equal the first `buf.len()` bytes of the block of `block_len` bytes
/// that write `(thread, generation)` of `seed` puts at `offset` (regenerated into
/// `scratch`, at least `block_len` long). Byte for byte, so stronger than a
/// checksum. A failure says where the first byte differs: in the magic
/// (`bad_magic`), the rest of the header (`bad_header`; `algo.header_len()` bytes) or the payload
/// (`bad_checksum`, or `zero_tail` when everything from there on is zero; all
/// zero: `zero_filled`). Allocates nothing unless it fails.
#[allow(clippy::too_many_arguments)] // a block's identity (offset, generation, thread, seed), per block
pub fn check_prefix(
    buf: &[u8],
    offset: u64,
    block_len: usize,
    generation: u64,
    thread: u32,
    seed: u64,
    algo: Checksum,
    scratch: &mut [u8],
) -> Result<(), Mismatch> {
    let exp = &mut scratch[..block_len];
    fill_block(exp, offset, generation, thread, seed, algo);
    let n = buf.len().min(block_len);
    if buf[..n] == exp[..n] {
        return Ok(());
    }
    Err(prefix_mismatch(&buf[..n], offset, exp, algo.header_len()))
}

#[cold]
fn prefix_mismatch(buf: &[u8], offset: u64, exp: &[u8], header_len: usize) -> Mismatch {
    let found = (buf.len() >= header_len).then(|| BlockHeader::parse(buf));
    if buf.iter().all(|&b| b == 0) {
        let mut m = Mismatch::new(offset, buf.len(), MismatchKind::ZeroFilled, None).zero_window(buf);
        m.expected = Some(BlockHeader::parse(exp));
        return m;
    }
    let first = (0..buf.len()).find(|&i| buf[i] != exp[i]).unwrap_or(0);
    let kind = if buf[first..].iter().all(|&b| b == 0) {
        MismatchKind::ZeroTail
    } else if first < 4 {
        MismatchKind::BadMagic
    } else if first < header_len {
        MismatchKind::BadHeader
    } else {
        MismatchKind::BadChecksum
    };
    let mut m = Mismatch::new(offset, buf.len(), kind, found).with_diff(buf, exp, first);
    m.expected = Some(BlockHeader::parse(exp));
    m
}

#[cold]
fn header_mismatch(buf: &[u8], offset: u64, algo: Checksum, h: BlockHeader, expect: Option<(u32, u64)>) -> Mismatch {
    let len = buf.len();
    if buf.iter().all(|&b| b == 0) {
        return Mismatch::new(offset, len, MismatchKind::ZeroFilled, None).zero_window(buf);
    }
    let kind = if h.magic != MAGIC {
        MismatchKind::BadMagic
    } else if !BlockHeader::header_crc_ok(buf) {
        MismatchKind::BadHeader
    } else if h.version != VERSION && h.version != VERSION_LONG {
        MismatchKind::BadVersion
    } else if h.algo_code != algo.code() {
        MismatchKind::WrongAlgo
    } else if h.version != algo.version() || h.header_len as usize != algo.header_len() {
        // A sound header of this algorithm in another version's layout: not one fsmeter writes.
        MismatchKind::BadVersion
    } else if h.len as usize != len {
        MismatchKind::WrongLength
    } else {
        MismatchKind::WrongOffset
    };
    // The block that belongs here: this offset, length and algorithm, the writer fields as found
    // (or as expected, when the caller knows them), the checksum of the payload as it stands; so a
    // damaged offset, length, algorithm or checksum byte is pointed at exactly, and damage to the
    // writer fields shows as the header crc (byte header_len - 8) disagreeing, a damaged header
    // length (version 2) as byte 6 or 7.
    let (thread, generation) = expect.unwrap_or((h.thread, h.generation));
    let hl = algo.header_len();
    let mut full = vec![0u8; len.max(hl)];
    let mut exp = BlockHeader::new(offset, len as u32, generation, thread, h.seed, algo);
    if len >= algo.min_block() {
        fill_payload(&mut full[hl..], block_key(h.seed, thread, offset, generation));
        exp.checksum = algo.digest(&buf[hl..]);
    }
    exp.write_to(&mut full);
    full.truncate(len);
    let first = (0..len).find(|&i| full[i] != buf[i]).unwrap_or(0);
    let mut m = Mismatch::new(offset, len, kind, Some(h)).with_diff(buf, &full, first);
    m.expected = Some(exp);
    m
}

impl Mismatch {
    /// A zero-filled block: show its first bytes (there is no expected content to compare with).
    fn zero_window(mut self, buf: &[u8]) -> Mismatch {
        self.first_diff = Some(0);
        self.window_start = 0;
        self.expected_bytes = vec![];
        self.found_bytes = buf[..WINDOW.min(buf.len())].to_vec();
        self
    }
}

#[cold]
fn payload_mismatch(buf: &[u8], offset: u64, h: BlockHeader) -> Mismatch {
    let len = buf.len();
    let key = block_key(h.seed, h.thread, h.offset, h.generation);
    let hl = h.algo.header_len();
    let payload = &buf[hl..];
    let first = (0..payload.len()).find(|&j| payload_byte(key, j) != payload[j]);
    let mut expected = buf.to_vec();
    fill_payload(&mut expected[hl..], key);
    let kind = match first {
        Some(j) if payload[j..].iter().all(|&b| b == 0) => MismatchKind::ZeroTail,
        _ => MismatchKind::BadChecksum,
    };
    // Payload as written but the checksum field disagrees (a damaged checksum that kept the
    // header crc valid cannot happen by accident): point at the checksum field.
    let first = first.map(|j| j + hl).unwrap_or(OFF_CHECKSUM);
    let mut m = Mismatch::new(offset, len, kind, Some(h)).with_diff(buf, &expected, first);
    m.expected = Some(BlockHeader::parse(&expected));
    m
}

#[cfg(test)]
mod tests {
    use super::super::header::{OFF_GENERATION, OFF_HEADER_CRC, OFF_HEADER_LEN, OFF_OFFSET};
    use super::super::payload::fill_blocks;
    use super::*;

    #[test]
    fn round_trip_every_algorithm_and_size() {
        for algo in Checksum::ALL {
            for len in [algo.min_block(), 512, 4096, 4096 + 3, 65536, 40_000 * 8 + 5] {
                let mut b = vec![0u8; len];
                fill_block(&mut b, 123 * 4096, 7, 3, 42, algo);
                let h = check_block(&b, 123 * 4096, algo).unwrap_or_else(|m| panic!("{algo:?} {len}: {m}"));
                assert_eq!(
                    (h.offset, h.len as usize, h.generation, h.thread, h.seed, h.algo),
                    (123 * 4096, len, 7, 3, 42, algo)
                );
                assert_eq!(h.magic, MAGIC);
                assert_eq!(&b[..4], b"FSMV");
                assert_eq!(h.checksum, algo.digest(&b[algo.header_len()..]));
                assert_eq!(h.header_len as usize, algo.header_len());
                // Re-encoding the parsed header gives the same bytes.
                let mut again = [0u8; MAX_HEADER_LEN];
                let mut h2 = h;
                h2.write_to(&mut again);
                assert_eq!(&again[..algo.header_len()], &b[..algo.header_len()]);
                assert!(check_block_expect(&b, 123 * 4096, algo, Some((3, 7))).is_ok());
            }
        }
    }

    fn block(algo: Checksum) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        fill_block(&mut b, 40960, 9, 2, 77, algo);
        b
    }

    #[test]
    fn a_flipped_payload_byte_is_found_with_its_index() {
        for algo in Checksum::ALL {
            for at in [algo.header_len(), 1000, 4095] {
                let mut b = block(algo);
                b[at] ^= 0x01;
                let m = check_block(&b, 40960, algo).unwrap_err();
                assert_eq!(m.kind, MismatchKind::BadChecksum, "{algo:?} {at}");
                assert_eq!(m.first_diff, Some(at));
                assert_eq!(m.offset, 40960);
                assert_eq!(m.to_json()["first_diff_offset"], 40960 + at as u64);
                let k = at - m.window_start;
                assert_eq!(m.found_bytes[k] ^ m.expected_bytes[k], 0x01);
                assert_eq!(m.found.unwrap().generation, 9);
                assert_eq!(m.expected.unwrap().checksum, m.found.unwrap().checksum);
            }
        }
    }

    #[test]
    fn header_damage_is_classified() {
        let algo = Checksum::Crc32c;
        let mut b = block(algo);
        b[0] = b'X';
        assert_eq!(check_block(&b, 40960, algo).unwrap_err().kind, MismatchKind::BadMagic);
        let mut b = block(algo);
        b[OFF_GENERATION] ^= 4;
        let m = check_block(&b, 40960, algo).unwrap_err();
        assert_eq!(m.kind, MismatchKind::BadHeader);
        assert_eq!(m.first_diff, Some(OFF_HEADER_CRC), "a damaged writer field shows as the header crc");
        let mut b = block(algo);
        b[OFF_OFFSET + 2] ^= 0x80;
        let m = check_block(&b, 40960, algo).unwrap_err();
        assert_eq!(m.kind, MismatchKind::BadHeader);
        assert_eq!(m.first_diff, Some(OFF_OFFSET + 2), "a damaged offset byte is pointed at");
        let mut b = block(algo);
        b[OFF_CHECKSUM + 1] ^= 0x10;
        assert_eq!(check_block(&b, 40960, algo).unwrap_err().first_diff, Some(OFF_CHECKSUM + 1));
        // Right block, wrong place: read back at another offset.
        let b = block(algo);
        let m = check_block(&b, 45056, algo).unwrap_err();
        assert_eq!(m.kind, MismatchKind::WrongOffset);
        assert_eq!(m.found.unwrap().offset, 40960);
        assert_eq!(m.expected.unwrap().offset, 45056);
        assert_eq!(m.first_diff, Some(OFF_OFFSET + 1), "40960 and 45056 differ in the second byte");
        assert_eq!(check_block(&b, 40960, Checksum::Xxh3).unwrap_err().kind, MismatchKind::WrongAlgo);
        assert_eq!(check_block(&b[..2048], 40960, algo).unwrap_err().kind, MismatchKind::WrongLength);
        assert_eq!(check_block(&b[..10], 40960, algo).unwrap_err().kind, MismatchKind::Short);
    }

    #[test]
    fn zeros_torn_tails_and_stale_writes() {
        let algo = Checksum::Sha256;
        let z = vec![0u8; 4096];
        let m = check_block(&z, 0, algo).unwrap_err();
        assert_eq!(m.kind, MismatchKind::ZeroFilled);
        assert!(m.found.is_none());
        // A write torn after 1024 bytes over a zero-filled file.
        let mut b = block(algo);
        b[1024..].fill(0);
        let m = check_block(&b, 40960, algo).unwrap_err();
        assert_eq!(m.kind, MismatchKind::ZeroTail);
        assert!(m.first_diff.unwrap() >= 1024 && m.first_diff.unwrap() < 1032, "{:?}", m.first_diff);
        // A write torn over an older write of the same block: new header, old tail.
        let mut old = vec![0u8; 4096];
        fill_block(&mut old, 40960, 8, 2, 77, algo);
        let mut b = block(algo);
        b[2048..].copy_from_slice(&old[2048..]);
        let m = check_block(&b, 40960, algo).unwrap_err();
        assert_eq!(m.kind, MismatchKind::BadChecksum);
        assert!((2048..2056).contains(&m.first_diff.unwrap()));
        // The older write whole: consistent, but not the write expected there.
        let m = check_block_expect(&old, 40960, algo, Some((2, 9))).unwrap_err();
        assert_eq!(m.kind, MismatchKind::Stale);
        assert_eq!(m.first_diff, Some(OFF_GENERATION));
        assert_eq!(m.expected.unwrap().generation, 9);
        assert_eq!(m.found.unwrap().generation, 8);
    }

    #[test]
    fn several_blocks_per_request() {
        let mut b = vec![0u8; 4 * 4096];
        fill_blocks(&mut b, 4096, 1 << 20, 3, 1, 9, Checksum::Xxh3);
        for (i, blk) in b.chunks(4096).enumerate() {
            let h = check_block(blk, (1 << 20) + i as u64 * 4096, Checksum::Xxh3).unwrap();
            assert_eq!(h.generation, 3);
        }
    }

    #[test]
    fn prefix_of_a_block_is_checked_byte_for_byte() {
        let mut scratch = vec![0u8; 512];
        let mut full = vec![0u8; 512];
        fill_block(&mut full, 1024, 9, 2, 5, Checksum::Crc32c);
        for n in [1usize, 40, 80, 300, 512] {
            assert!(check_prefix(&full[..n], 1024, 512, 9, 2, 5, Checksum::Crc32c, &mut scratch).is_ok(), "{n}");
        }
        let mut b = full[..300].to_vec();
        b[200] ^= 1;
        let m = check_prefix(&b, 1024, 512, 9, 2, 5, Checksum::Crc32c, &mut scratch).unwrap_err();
        assert_eq!((m.kind, m.first_diff, m.len), (MismatchKind::BadChecksum, Some(200), 300));
        b[200] ^= 1;
        b[10] ^= 1;
        assert_eq!(
            check_prefix(&b, 1024, 512, 9, 2, 5, Checksum::Crc32c, &mut scratch).unwrap_err().kind,
            MismatchKind::BadHeader
        );
        let m = check_prefix(&full[..300], 1024, 512, 10, 2, 5, Checksum::Crc32c, &mut scratch).unwrap_err();
        assert_eq!(m.first_diff, Some(24), "another write: the generation field differs first");
        let mut z = full[..300].to_vec();
        z[150..].fill(0);
        assert_eq!(
            check_prefix(&z, 1024, 512, 9, 2, 5, Checksum::Crc32c, &mut scratch).unwrap_err().kind,
            MismatchKind::ZeroTail
        );
        assert_eq!(
            check_prefix(&[0u8; 60], 1024, 512, 9, 2, 5, Checksum::Crc32c, &mut scratch).unwrap_err().kind,
            MismatchKind::ZeroFilled
        );
    }

    const LONG: [Checksum; 3] = [Checksum::Sha512, Checksum::Sha3_384, Checksum::Sha3_512];

    /// The mismatch of `b` (a 4096-byte block written at 40960) and the file offset of its first differing byte.
    fn damage(b: &[u8], algo: Checksum) -> (MismatchKind, usize, u64) {
        let m = check_block(b, 40960, algo).expect_err("damage is found");
        let first = m.first_diff.expect("a first differing byte");
        assert_eq!(m.to_json()["first_diff_offset"], 40960 + first as u64);
        (m.kind, first, 40960 + first as u64)
    }

    #[test]
    fn long_digests_find_a_damaged_digest_data_or_header_length_byte() {
        for algo in LONG {
            let hl = algo.header_len();
            let clean = block(algo);
            assert_eq!(clean[4], 2, "{algo:?}: a version-2 header");
            assert_eq!(u16::from_le_bytes([clean[6], clean[7]]) as usize, hl);
            assert_eq!(&clean[40..40 + algo.digest_len()], &algo.digest(&clean[hl..])[..algo.digest_len()]);
            let flip = |at: usize, bit: u8| {
                let mut b = clean.clone();
                b[at] ^= bit;
                b
            };
            // The digest's last byte (past version 1's 32-byte field): the header crc covers it, the report points at it.
            let last = OFF_CHECKSUM + algo.digest_len() - 1;
            assert_eq!(
                damage(&flip(last, 0x01), algo),
                (MismatchKind::BadHeader, last, 40960 + last as u64),
                "{algo:?}"
            );
            assert_eq!(damage(&flip(OFF_CHECKSUM, 0x80), algo).1, OFF_CHECKSUM);
            // The data: its first byte, one inside, the last.
            for at in [hl, 2000, 4095] {
                assert_eq!(
                    damage(&flip(at, 0x04), algo),
                    (MismatchKind::BadChecksum, at, 40960 + at as u64),
                    "{algo:?} {at}"
                );
            }
            // The header length: to another length a version-2 header can have (96 <-> 112), to one it cannot
            // (not a multiple of 8, longer than any header), and its high byte.
            for (at, bit) in
                [(OFF_HEADER_LEN, 0x10), (OFF_HEADER_LEN, 0x01), (OFF_HEADER_LEN, 0x80), (OFF_HEADER_LEN + 1, 0x01)]
            {
                let (kind, first, _) = damage(&flip(at, bit), algo);
                assert_eq!((kind, first), (MismatchKind::BadHeader, at), "{algo:?}: byte {at} ^ {bit:#x}");
            }
            // The header crc itself, and a writer field it covers.
            assert_eq!(damage(&flip(hl - 8, 0x01), algo).1, hl - 8);
            assert_eq!(damage(&flip(OFF_GENERATION, 0x01), algo).1, hl - 8, "a writer field shows as the header crc");
            // Found and expected headers in the report carry the whole digest.
            let m = check_block(&flip(2000, 1), 40960, algo).unwrap_err();
            assert_eq!(m.to_json()["found"]["checksum"].as_str().unwrap().len(), 2 * algo.digest_len());
            assert_eq!(m.to_json()["found"]["header_len"], hl);
        }
    }

    #[test]
    fn long_and_short_headers_are_not_taken_for_each_other() {
        let long = block(Checksum::Sha512);
        assert_eq!(check_block(&long, 40960, Checksum::Sha3_512).unwrap_err().kind, MismatchKind::WrongAlgo);
        assert_eq!(check_block(&long, 40960, Checksum::Sha256).unwrap_err().kind, MismatchKind::WrongAlgo);
        let short = block(Checksum::Sha256);
        assert_eq!(check_block(&short, 40960, Checksum::Sha512).unwrap_err().kind, MismatchKind::WrongAlgo);
        // A sound header (its crc recomputed) that claims another length than its algorithm's: not fsmeter's layout.
        let mut b = long.clone();
        b[OFF_HEADER_LEN] = 96;
        let crc = crc32c::crc32c(&b[..88]);
        b[88..92].copy_from_slice(&crc.to_le_bytes());
        assert!(BlockHeader::header_crc_ok(&b));
        assert_eq!(check_block(&b, 40960, Checksum::Sha512).unwrap_err().kind, MismatchKind::BadVersion);
        // Too short for the header: a block of 100 bytes holds a version-1 header, not a version-2 one.
        assert_eq!(check_block(&long[..100], 40960, Checksum::Sha512).unwrap_err().kind, MismatchKind::Short);
        // The smallest blocks: header and one payload word.
        for algo in LONG {
            let mut b = vec![0u8; algo.min_block()];
            fill_block(&mut b, 0, 1, 0, 3, algo);
            assert!(check_block(&b, 0, algo).is_ok(), "{algo:?}");
            b[algo.header_len()] ^= 1;
            assert_eq!(check_block(&b, 0, algo).unwrap_err().first_diff, Some(algo.header_len()));
        }
    }

    #[test]
    fn a_long_digest_blocks_prefix_is_checked_with_its_header_length() {
        let algo = Checksum::Sha512;
        let mut scratch = vec![0u8; 512];
        let mut full = vec![0u8; 512];
        fill_block(&mut full, 1024, 9, 2, 5, algo);
        for n in [1usize, 90, 112, 300, 512] {
            assert!(check_prefix(&full[..n], 1024, 512, 9, 2, 5, algo, &mut scratch).is_ok(), "{n}");
        }
        // Byte 100 lies in the digest of a 112-byte header (it would be payload after version 1's 80).
        let mut b = full[..300].to_vec();
        b[100] ^= 1;
        let m = check_prefix(&b, 1024, 512, 9, 2, 5, algo, &mut scratch).unwrap_err();
        assert_eq!((m.kind, m.first_diff), (MismatchKind::BadHeader, Some(100)));
        b[100] ^= 1;
        b[200] ^= 1;
        let m = check_prefix(&b, 1024, 512, 9, 2, 5, algo, &mut scratch).unwrap_err();
        assert_eq!((m.kind, m.first_diff), (MismatchKind::BadChecksum, Some(200)));
        assert_eq!(m.found.unwrap().header_len, 112);
    }
}
