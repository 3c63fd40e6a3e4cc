//! The header every verified block starts with, and the checksums it can carry.
//! The payload that follows it is made in payload.rs; a block read back is
//! checked in check.rs.
//!
//! Modelled on fio's `verify=` header (a magic, the block's offset and length,
//! the writer's thread, seed and write number, then a checksum of the data),
//! laid out for fsmeter (docs/verify.md has the table):
//!
//! ```text
//! byte  0  magic        "FSMV"
//!       4  version      u8 (1)
//!       5  algo         u8 (1 crc32c, 2 xxh3, 3 sha256)
//!       6  reserved     2 bytes, zero
//!       8  len          u32: the whole block, header included
//!      12  thread       u32: the writing thread
//!      16  offset       u64: the block's offset in its file
//!      24  generation   u64: the writer's write number (0 = laid out before the run)
//!      32  seed         u64: the job's seed
//!      40  checksum     32 bytes: the payload's checksum (crc32c: 4, xxh3: 8, sha256: 32; rest zero)
//!      72  header_crc   u32: crc32c of bytes 0..72
//!      76  reserved     4 bytes, zero
//!      80  payload      len - 80 bytes
//! ```
//! All integers are little-endian. The payload is a pure function of
//! (seed, thread, offset, generation), so a check can say which byte differs
//! from what was written, not only that the checksum fails.

use serde::{Deserialize, Serialize};
use sha2::Digest;

/// The payload checksum a verified block carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Checksum {
    Crc32c,
    Xxh3,
    Sha256,
}

impl Checksum {
    pub const ALL: [Checksum; 3] = [Checksum::Crc32c, Checksum::Xxh3, Checksum::Sha256];

    pub fn name(self) -> &'static str {
        match self {
            Checksum::Crc32c => "crc32c",
            Checksum::Xxh3 => "xxh3",
            Checksum::Sha256 => "sha256",
        }
    }

    /// The code stored in the header's `algo` byte.
    pub fn code(self) -> u8 {
        match self {
            Checksum::Crc32c => 1,
            Checksum::Xxh3 => 2,
            Checksum::Sha256 => 3,
        }
    }

    pub fn from_code(code: u8) -> Option<Checksum> {
        Checksum::ALL.into_iter().find(|c| c.code() == code)
    }

    /// Bytes of the checksum field this algorithm uses.
    pub fn digest_len(self) -> usize {
        match self {
            Checksum::Crc32c => 4,
            Checksum::Xxh3 => 8,
            Checksum::Sha256 => 32,
        }
    }

    /// The checksum of `data`, in the first `digest_len()` bytes of a zeroed field.
    #[inline]
    pub fn digest(self, data: &[u8]) -> [u8; CHECKSUM_LEN] {
        let mut out = [0u8; CHECKSUM_LEN];
        match self {
            Checksum::Crc32c => out[..4].copy_from_slice(&crc32c::crc32c(data).to_le_bytes()),
            Checksum::Xxh3 => out[..8].copy_from_slice(&xxhash_rust::xxh3::xxh3_64(data).to_le_bytes()),
            Checksum::Sha256 => out.copy_from_slice(&sha2::Sha256::digest(data)),
        }
        out
    }
}

/// "FSMV" as read from the first four bytes.
pub const MAGIC: [u8; 4] = *b"FSMV";
pub const VERSION: u8 = 1;
/// Bytes at the start of every verified block.
pub const HEADER_LEN: usize = 80;
/// The checksum field: room for the longest digest (sha256).
pub const CHECKSUM_LEN: usize = 32;
/// The smallest block that can be verified: a header and at least one payload word.
pub const MIN_BLOCK: usize = HEADER_LEN + 8;

pub(super) const OFF_VERSION: usize = 4;
pub(super) const OFF_ALGO: usize = 5;
pub(super) const OFF_LEN: usize = 8;
pub(super) const OFF_THREAD: usize = 12;
pub(super) const OFF_OFFSET: usize = 16;
pub(super) const OFF_GENERATION: usize = 24;
pub(super) const OFF_SEED: usize = 32;
pub(super) const OFF_CHECKSUM: usize = 40;
pub(super) const OFF_HEADER_CRC: usize = 72;

/// A block header as written or as found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub magic: [u8; 4],
    pub version: u8,
    /// The algorithm byte as found; `algo` is its meaning (crc32c when the byte is unknown).
    pub algo_code: u8,
    pub algo: Checksum,
    pub len: u32,
    pub thread: u32,
    pub offset: u64,
    pub generation: u64,
    pub seed: u64,
    pub checksum: [u8; CHECKSUM_LEN],
    pub header_crc: u32,
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl BlockHeader {
    /// The header a writer puts in front of a block (checksum still zero).
    pub fn new(offset: u64, len: u32, generation: u64, thread: u32, seed: u64, algo: Checksum) -> BlockHeader {
        BlockHeader {
            magic: MAGIC,
            version: VERSION,
            algo_code: algo.code(),
            algo,
            len,
            thread,
            offset,
            generation,
            seed,
            checksum: [0; CHECKSUM_LEN],
            header_crc: 0,
        }
    }

    /// Encode into `out[..HEADER_LEN]`, computing `header_crc` (and storing it in self).
    pub fn write_to(&mut self, out: &mut [u8]) {
        let h = &mut out[..HEADER_LEN];
        h[..4].copy_from_slice(&self.magic);
        h[OFF_VERSION] = self.version;
        h[OFF_ALGO] = self.algo_code;
        h[6] = 0;
        h[7] = 0;
        h[OFF_LEN..OFF_LEN + 4].copy_from_slice(&self.len.to_le_bytes());
        h[OFF_THREAD..OFF_THREAD + 4].copy_from_slice(&self.thread.to_le_bytes());
        h[OFF_OFFSET..OFF_OFFSET + 8].copy_from_slice(&self.offset.to_le_bytes());
        h[OFF_GENERATION..OFF_GENERATION + 8].copy_from_slice(&self.generation.to_le_bytes());
        h[OFF_SEED..OFF_SEED + 8].copy_from_slice(&self.seed.to_le_bytes());
        h[OFF_CHECKSUM..OFF_CHECKSUM + CHECKSUM_LEN].copy_from_slice(&self.checksum);
        self.header_crc = crc32c::crc32c(&h[..OFF_HEADER_CRC]);
        h[OFF_HEADER_CRC..OFF_HEADER_CRC + 4].copy_from_slice(&self.header_crc.to_le_bytes());
        h[76..80].fill(0);
    }

    /// Decode `b[..HEADER_LEN]` as it stands (no check).
    pub fn parse(b: &[u8]) -> BlockHeader {
        let algo_code = b[OFF_ALGO];
        BlockHeader {
            magic: b[..4].try_into().expect("4 bytes"),
            version: b[OFF_VERSION],
            algo_code,
            algo: Checksum::from_code(algo_code).unwrap_or(Checksum::Crc32c),
            len: le_u32(b, OFF_LEN),
            thread: le_u32(b, OFF_THREAD),
            offset: le_u64(b, OFF_OFFSET),
            generation: le_u64(b, OFF_GENERATION),
            seed: le_u64(b, OFF_SEED),
            checksum: b[OFF_CHECKSUM..OFF_CHECKSUM + CHECKSUM_LEN].try_into().expect("32 bytes"),
            header_crc: le_u32(b, OFF_HEADER_CRC),
        }
    }

    /// The header's own crc32c matches its bytes.
    pub fn header_crc_ok(b: &[u8]) -> bool {
        crc32c::crc32c(&b[..OFF_HEADER_CRC]) == le_u32(b, OFF_HEADER_CRC)
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "magic": hex(&self.magic),
            "version": self.version,
            "algo": Checksum::from_code(self.algo_code).map(|c| c.name().to_string()).unwrap_or_else(|| format!("unknown({})", self.algo_code)),
            "len": self.len,
            "thread": self.thread,
            "offset": self.offset,
            "generation": self.generation,
            "seed": self.seed,
            "checksum": hex(&self.checksum[..Checksum::from_code(self.algo_code).map_or(CHECKSUM_LEN, |c| c.digest_len())]),
            "header_crc": format!("{:08x}", self.header_crc),
        })
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_names_round_trip_through_serde() {
        for algo in Checksum::ALL {
            let s = serde_json::to_string(&algo).unwrap();
            assert_eq!(s, format!("\"{}\"", algo.name()));
            assert_eq!(serde_json::from_str::<Checksum>(&s).unwrap(), algo);
            assert_eq!(Checksum::from_code(algo.code()), Some(algo));
        }
        assert!(serde_json::from_str::<Checksum>("\"md5\"").is_err());
    }
}
