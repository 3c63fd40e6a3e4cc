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
//!       5  algo         u8 (1 crc32c, 2 xxh3, 3 sha256, 4 md5, 5 sha1, 6 crc32, 7 crc16,
//!                       8 crc7, 9 crc64, 10 sha3-224, 11 sha3-256)
//!       6  reserved     2 bytes, zero
//!       8  len          u32: the whole block, header included
//!      12  thread       u32: the writing thread
//!      16  offset       u64: the block's offset in its file
//!      24  generation   u64: the writer's write number (0 = laid out before the run)
//!      32  seed         u64: the job's seed
//!      40  checksum     32 bytes: the payload's checksum (`digest_len` bytes, the rest zero)
//!      72  header_crc   u32: crc32c of bytes 0..72
//!      76  reserved     4 bytes, zero
//!      80  payload      len - 80 bytes
//! ```
//! All integers are little-endian (a CRC's value too; a hash's digest is its byte string).
//! Algorithm codes 4 to 11 were added without a version change: the layout is the same, and
//! a reader that does not know a code reports the block as written with another algorithm. The payload is a pure function of
//! (seed, thread, offset, generation), so a check can say which byte differs
//! from what was written, not only that the checksum fails.

use serde::{Deserialize, Serialize};
use sha2::Digest;

/// The payload checksum a verified block carries. The CRCs beyond crc32c are fio's (its
/// `verify=` names; parameters from fio's crc/ sources): crc32 is CRC-32 over 0x04C11DB7 taken
/// MSB first with init 0 and no final XOR (the POSIX cksum register before its length and
/// complement), crc16 is CRC-16/ARC, crc7 is CRC-7/MMC, crc64 is the Jones CRC-64 (CRC-64/REDIS:
/// reflected, init 0, no final XOR).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Checksum {
    Crc32c,
    Xxh3,
    Sha256,
    Md5,
    Sha1,
    Crc32,
    Crc16,
    Crc7,
    Crc64,
    #[serde(rename = "sha3_224")]
    Sha3_224,
    #[serde(rename = "sha3_256")]
    Sha3_256,
}

/// fio's crc32 (crc/crc32.c): CRC-32 polynomial, not reflected, init 0, no final XOR.
const CRC32_FIO: crc::Algorithm<u32> = crc::Algorithm {
    width: 32,
    poly: 0x04C1_1DB7,
    init: 0,
    refin: false,
    refout: false,
    xorout: 0,
    check: 0x89A1_897F,
    residue: 0,
};
pub(crate) static CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&CRC32_FIO);
pub(crate) static CRC16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_ARC);
pub(crate) static CRC7: crc::Crc<u8> = crc::Crc::<u8>::new(&crc::CRC_7_MMC);
pub(crate) static CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);

impl Checksum {
    pub const ALL: [Checksum; 11] = [
        Checksum::Crc32c,
        Checksum::Xxh3,
        Checksum::Sha256,
        Checksum::Md5,
        Checksum::Sha1,
        Checksum::Crc32,
        Checksum::Crc16,
        Checksum::Crc7,
        Checksum::Crc64,
        Checksum::Sha3_224,
        Checksum::Sha3_256,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Checksum::Crc32c => "crc32c",
            Checksum::Xxh3 => "xxh3",
            Checksum::Sha256 => "sha256",
            Checksum::Md5 => "md5",
            Checksum::Sha1 => "sha1",
            Checksum::Crc32 => "crc32",
            Checksum::Crc16 => "crc16",
            Checksum::Crc7 => "crc7",
            Checksum::Crc64 => "crc64",
            Checksum::Sha3_224 => "sha3_224",
            Checksum::Sha3_256 => "sha3_256",
        }
    }

    /// The code stored in the header's `algo` byte.
    pub fn code(self) -> u8 {
        match self {
            Checksum::Crc32c => 1,
            Checksum::Xxh3 => 2,
            Checksum::Sha256 => 3,
            Checksum::Md5 => 4,
            Checksum::Sha1 => 5,
            Checksum::Crc32 => 6,
            Checksum::Crc16 => 7,
            Checksum::Crc7 => 8,
            Checksum::Crc64 => 9,
            Checksum::Sha3_224 => 10,
            Checksum::Sha3_256 => 11,
        }
    }

    pub fn from_code(code: u8) -> Option<Checksum> {
        Checksum::ALL.into_iter().find(|c| c.code() == code)
    }

    /// Bytes of the checksum field this algorithm uses.
    pub fn digest_len(self) -> usize {
        match self {
            Checksum::Crc32c | Checksum::Crc32 => 4,
            Checksum::Xxh3 | Checksum::Crc64 => 8,
            Checksum::Sha256 | Checksum::Sha3_256 => 32,
            Checksum::Md5 => 16,
            Checksum::Sha1 => 20,
            Checksum::Crc16 => 2,
            Checksum::Crc7 => 1,
            Checksum::Sha3_224 => 28,
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
            Checksum::Md5 => out[..16].copy_from_slice(&md5::Md5::digest(data)),
            Checksum::Sha1 => out[..20].copy_from_slice(&sha1::Sha1::digest(data)),
            Checksum::Crc32 => out[..4].copy_from_slice(&CRC32.checksum(data).to_le_bytes()),
            Checksum::Crc16 => out[..2].copy_from_slice(&CRC16.checksum(data).to_le_bytes()),
            Checksum::Crc7 => out[0] = CRC7.checksum(data),
            Checksum::Crc64 => out[..8].copy_from_slice(&CRC64.checksum(data).to_le_bytes()),
            Checksum::Sha3_224 => out[..28].copy_from_slice(&sha3::Sha3_224::digest(data)),
            Checksum::Sha3_256 => out.copy_from_slice(&sha3::Sha3_256::digest(data)),
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
        assert!(serde_json::from_str::<Checksum>("\"sha512\"").is_err());
    }

    fn hexd(a: Checksum, data: &[u8]) -> String {
        hex(&a.digest(data)[..a.digest_len()])
    }

    #[test]
    fn digests_match_published_test_vectors() {
        // RFC 1321, FIPS 180-2 and FIPS 202 examples for "abc".
        assert_eq!(hexd(Checksum::Md5, b"abc"), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(hexd(Checksum::Sha1, b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(hexd(Checksum::Sha256, b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hexd(Checksum::Sha3_224, b"abc"), "e642824c3f8cf24ad09234ee7d3c766fc9a3a5168d0c94ad73b46fdf");
        assert_eq!(
            hexd(Checksum::Sha3_256, b"abc"),
            "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"
        );
        // The CRC catalogue's check values (the CRC of "123456789"), stored little-endian.
        let crc = |a: Checksum| {
            let d = a.digest(b"123456789");
            let mut v = [0u8; 8];
            v[..a.digest_len()].copy_from_slice(&d[..a.digest_len()]);
            u64::from_le_bytes(v)
        };
        assert_eq!(crc(Checksum::Crc32c), 0xE306_9283);
        assert_eq!(crc(Checksum::Crc16), 0xBB3D, "CRC-16/ARC");
        assert_eq!(crc(Checksum::Crc7), 0x75, "CRC-7/MMC");
        assert_eq!(crc(Checksum::Crc64), 0xE9C6_D914_C4B8_D9CA, "CRC-64/REDIS (Jones)");
        // fio's crc32 is the POSIX cksum register without the length and the final complement.
        assert_eq!(crc(Checksum::Crc32), !0x765E_7680u32 as u64);
        for a in Checksum::ALL {
            let d = a.digest(b"abc");
            assert!(d[a.digest_len()..].iter().all(|&b| b == 0), "{a:?}: the unused bytes stay zero");
        }
    }
}
