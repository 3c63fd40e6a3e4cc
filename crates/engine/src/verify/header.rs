//! The header every verified block starts with, and the checksums it can carry.
//! The payload that follows it is made in payload.rs; a block read back is
//! checked in check.rs.
//!
//! Modelled on fio's `verify=` header (a magic, the block's offset and length,
//! the writer's thread, seed and write number, then a checksum of the data),
//! laid out for fsmeter (docs/verify.md has the table). Two versions; the checksum
//! decides which one a writer uses, and a reader checks the version and length it finds:
//!
//! ```text
//! byte  0  magic        "FSMV"
//!       4  version      u8: 1 for a digest of up to 32 bytes, 2 for a longer one
//!       5  algo         u8 (1 crc32c, 2 xxh3, 3 sha256, 4 md5, 5 sha1, 6 crc32, 7 crc16,
//!                       8 crc7, 9 crc64, 10 sha3-224, 11 sha3-256; version 2: 12 sha512,
//!                       13 sha3-384, 14 sha3-512)
//!       6  header_len   u16: version 1: zero (the header is 80 bytes); version 2: the
//!                       header's length H = 48 + the checksum field (96 or 112)
//!       8  len          u32: the whole block, header included
//!      12  thread       u32: the writing thread
//!      16  offset       u64: the block's offset in its file
//!      24  generation   u64: the writer's write number (0 = laid out before the run)
//!      32  seed         u64: the job's seed
//!      40  checksum     version 1: 32 bytes (`digest_len` bytes, the rest zero);
//!                       version 2: H - 48 bytes (48 for sha3-384, 64 for sha512, sha3-512)
//!   H - 8  header_crc   u32: crc32c of bytes 0..H-8 (version 1: H = 80)
//!   H - 4  reserved     4 bytes, zero
//!       H  payload      len - H bytes
//! ```
//! All integers are little-endian (a CRC's value too; a hash's digest is its byte string).
//! Algorithm codes 4 to 11 were added without a version change: the layout is the same, and
//! a reader that does not know a code reports the block as written with another algorithm.
//! Version 2 keeps every field of version 1 in its place and puts the header's length where
//! version 1 has two zero bytes, so a reader finds the header crc from the bytes it reads, and
//! a damaged length shows as a failing header crc. Blocks of version 1 are written and read
//! exactly as before. The payload is a pure function of
//! (seed, thread, offset, generation), so a check can say which byte differs
//! from what was written, not only that the checksum fails.

use serde::{Deserialize, Serialize};
use sha2::Digest;

/// The payload checksum a verified block carries. sha512 (FIPS 180-4), sha3-384 and sha3-512
/// (FIPS 202) have digests longer than version 1's checksum field and are written with a
/// version-2 header. The CRCs beyond crc32c are fio's (its
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
    Sha512,
    #[serde(rename = "sha3_384")]
    Sha3_384,
    #[serde(rename = "sha3_512")]
    Sha3_512,
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
    pub const ALL: [Checksum; 14] = [
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
        Checksum::Sha512,
        Checksum::Sha3_384,
        Checksum::Sha3_512,
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
            Checksum::Sha512 => "sha512",
            Checksum::Sha3_384 => "sha3_384",
            Checksum::Sha3_512 => "sha3_512",
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
            Checksum::Sha512 => 12,
            Checksum::Sha3_384 => 13,
            Checksum::Sha3_512 => 14,
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
            Checksum::Sha3_384 => 48,
            Checksum::Sha512 | Checksum::Sha3_512 => 64,
        }
    }

    /// The header version a block checked with this algorithm carries: 1 for a digest that fits
    /// version 1's 32-byte field, 2 for a longer one.
    #[inline]
    pub fn version(self) -> u8 {
        if self.digest_len() <= V1_CHECKSUM_LEN {
            VERSION
        } else {
            VERSION_LONG
        }
    }

    /// Bytes of the header's checksum field: 32 in version 1, the digest rounded up to 8 in version 2.
    #[inline]
    pub fn field_len(self) -> usize {
        if self.version() == VERSION {
            V1_CHECKSUM_LEN
        } else {
            self.digest_len().next_multiple_of(8)
        }
    }

    /// Bytes of the header in front of each block's payload (80 in version 1; 96 for sha3-384,
    /// 112 for sha512 and sha3-512).
    #[inline]
    pub fn header_len(self) -> usize {
        OFF_CHECKSUM + self.field_len() + 8
    }

    /// The smallest block this algorithm can verify: its header and one payload word.
    #[inline]
    pub fn min_block(self) -> usize {
        self.header_len() + 8
    }

    /// The checksum of `data`, in the first `digest_len()` bytes of a zeroed field.
    #[inline]
    pub fn digest(self, data: &[u8]) -> [u8; CHECKSUM_LEN] {
        let mut out = [0u8; CHECKSUM_LEN];
        match self {
            Checksum::Crc32c => out[..4].copy_from_slice(&crc32c::crc32c(data).to_le_bytes()),
            Checksum::Xxh3 => out[..8].copy_from_slice(&xxhash_rust::xxh3::xxh3_64(data).to_le_bytes()),
            Checksum::Sha256 => out[..32].copy_from_slice(&sha2::Sha256::digest(data)),
            Checksum::Md5 => out[..16].copy_from_slice(&md5::Md5::digest(data)),
            Checksum::Sha1 => out[..20].copy_from_slice(&sha1::Sha1::digest(data)),
            Checksum::Crc32 => out[..4].copy_from_slice(&CRC32.checksum(data).to_le_bytes()),
            Checksum::Crc16 => out[..2].copy_from_slice(&CRC16.checksum(data).to_le_bytes()),
            Checksum::Crc7 => out[0] = CRC7.checksum(data),
            Checksum::Crc64 => out[..8].copy_from_slice(&CRC64.checksum(data).to_le_bytes()),
            Checksum::Sha3_224 => out[..28].copy_from_slice(&sha3::Sha3_224::digest(data)),
            Checksum::Sha3_256 => out[..32].copy_from_slice(&sha3::Sha3_256::digest(data)),
            Checksum::Sha512 => out.copy_from_slice(&sha2::Sha512::digest(data)),
            Checksum::Sha3_384 => out[..48].copy_from_slice(&sha3::Sha3_384::digest(data)),
            Checksum::Sha3_512 => out.copy_from_slice(&sha3::Sha3_512::digest(data)),
        }
        out
    }
}

/// "FSMV" as read from the first four bytes.
pub const MAGIC: [u8; 4] = *b"FSMV";
/// The version of the 80-byte header (every checksum of up to 32 bytes).
pub const VERSION: u8 = 1;
/// The version whose header length depends on the checksum (sha512, sha3-384, sha3-512).
pub const VERSION_LONG: u8 = 2;
/// Bytes of a version-1 header (crc32c, xxh3, sha256 ... every digest of up to 32 bytes);
/// `Checksum::header_len` gives any algorithm's.
pub const HEADER_LEN: usize = 80;
/// The longest header (version 2 with a 64-byte digest).
pub const MAX_HEADER_LEN: usize = OFF_CHECKSUM + CHECKSUM_LEN + 8;
/// Room for the longest digest (sha512, sha3-512): what `Checksum::digest` returns.
pub const CHECKSUM_LEN: usize = 64;
/// Version 1's checksum field.
pub const V1_CHECKSUM_LEN: usize = 32;
/// The smallest block a version-1 header can verify: a header and at least one payload word
/// (`Checksum::min_block` gives any algorithm's).
pub const MIN_BLOCK: usize = HEADER_LEN + 8;

pub(super) const OFF_VERSION: usize = 4;
pub(super) const OFF_ALGO: usize = 5;
pub(super) const OFF_HEADER_LEN: usize = 6;
pub(super) const OFF_LEN: usize = 8;
pub(super) const OFF_THREAD: usize = 12;
pub(super) const OFF_OFFSET: usize = 16;
pub(super) const OFF_GENERATION: usize = 24;
pub(super) const OFF_SEED: usize = 32;
pub(super) const OFF_CHECKSUM: usize = 40;
/// Version 1's header crc (version 2: header length - 8).
pub(super) const OFF_HEADER_CRC: usize = 72;

/// A block header as written or as found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub magic: [u8; 4],
    pub version: u8,
    /// The algorithm byte as found; `algo` is its meaning (crc32c when the byte is unknown).
    pub algo_code: u8,
    pub algo: Checksum,
    /// The header's length: 80 for version 1 (whose bytes 6..8 are zero), as found in bytes 6..8
    /// for version 2 (96 or 112 when sound).
    pub header_len: u16,
    pub len: u32,
    pub thread: u32,
    pub offset: u64,
    pub generation: u64,
    pub seed: u64,
    /// The checksum field (version 1: 32 bytes; version 2: header_len - 48), zero after it.
    pub checksum: [u8; CHECKSUM_LEN],
    pub header_crc: u32,
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}
fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Where the header crc of a header of `version` with `header_len` in bytes 6..8 lies, when that
/// is a layout there is: version 1 (length field zero) at 72; version 2 at its length - 8, for a
/// length that is a multiple of 8 from 56 (an 8-byte checksum field) to `MAX_HEADER_LEN`.
#[inline]
fn crc_at(version: u8, header_len_field: u16) -> Option<usize> {
    let n = header_len_field as usize;
    match version {
        VERSION if n == 0 => Some(OFF_HEADER_CRC),
        VERSION_LONG if n.is_multiple_of(8) && (OFF_CHECKSUM + 16..=MAX_HEADER_LEN).contains(&n) => Some(n - 8),
        _ => None,
    }
}

impl BlockHeader {
    /// The header a writer puts in front of a block (checksum still zero).
    pub fn new(offset: u64, len: u32, generation: u64, thread: u32, seed: u64, algo: Checksum) -> BlockHeader {
        BlockHeader {
            magic: MAGIC,
            version: algo.version(),
            algo_code: algo.code(),
            algo,
            header_len: algo.header_len() as u16,
            len,
            thread,
            offset,
            generation,
            seed,
            checksum: [0; CHECKSUM_LEN],
            header_crc: 0,
        }
    }

    /// Bytes 6..8 as this header writes them: zero in version 1, the length in version 2.
    #[inline]
    fn header_len_field(&self) -> u16 {
        if self.version == VERSION {
            0
        } else {
            self.header_len
        }
    }

    /// Encode into `out[..self.header_len]`, computing `header_crc` (and storing it in self). A
    /// header whose version and length are no layout (one parsed from damaged bytes) is written
    /// with the layout of its algorithm.
    pub fn write_to(&mut self, out: &mut [u8]) {
        let crc = match crc_at(self.version, self.header_len_field()) {
            Some(c) => c,
            None => {
                self.version = self.algo.version();
                self.header_len = self.algo.header_len() as u16;
                self.header_len as usize - 8
            }
        };
        let field = self.header_len_field();
        let h = &mut out[..crc + 8];
        h[..4].copy_from_slice(&self.magic);
        h[OFF_VERSION] = self.version;
        h[OFF_ALGO] = self.algo_code;
        h[OFF_HEADER_LEN..OFF_HEADER_LEN + 2].copy_from_slice(&field.to_le_bytes());
        h[OFF_LEN..OFF_LEN + 4].copy_from_slice(&self.len.to_le_bytes());
        h[OFF_THREAD..OFF_THREAD + 4].copy_from_slice(&self.thread.to_le_bytes());
        h[OFF_OFFSET..OFF_OFFSET + 8].copy_from_slice(&self.offset.to_le_bytes());
        h[OFF_GENERATION..OFF_GENERATION + 8].copy_from_slice(&self.generation.to_le_bytes());
        h[OFF_SEED..OFF_SEED + 8].copy_from_slice(&self.seed.to_le_bytes());
        h[OFF_CHECKSUM..crc].copy_from_slice(&self.checksum[..crc - OFF_CHECKSUM]);
        self.header_crc = crc32c::crc32c(&h[..crc]);
        h[crc..crc + 4].copy_from_slice(&self.header_crc.to_le_bytes());
        h[crc + 4..crc + 8].fill(0);
    }

    /// Decode the header at the start of `b` as it stands (no check). Bytes past the end of a
    /// short `b` read as zero.
    pub fn parse(b: &[u8]) -> BlockHeader {
        let mut copy = [0u8; MAX_HEADER_LEN];
        let b = if b.len() >= MAX_HEADER_LEN {
            &b[..MAX_HEADER_LEN]
        } else {
            copy[..b.len()].copy_from_slice(b);
            &copy[..]
        };
        let algo_code = b[OFF_ALGO];
        let version = b[OFF_VERSION];
        let field = le_u16(b, OFF_HEADER_LEN);
        // A damaged version or length: read the fields where the algorithm's layout has them.
        let crc = crc_at(version, field)
            .unwrap_or_else(|| Checksum::from_code(algo_code).map_or(OFF_HEADER_CRC, |a| a.header_len() - 8));
        let mut checksum = [0u8; CHECKSUM_LEN];
        checksum[..crc - OFF_CHECKSUM].copy_from_slice(&b[OFF_CHECKSUM..crc]);
        BlockHeader {
            magic: b[..4].try_into().expect("4 bytes"),
            version,
            algo_code,
            algo: Checksum::from_code(algo_code).unwrap_or(Checksum::Crc32c),
            header_len: if version == VERSION && field == 0 { HEADER_LEN as u16 } else { field },
            len: le_u32(b, OFF_LEN),
            thread: le_u32(b, OFF_THREAD),
            offset: le_u64(b, OFF_OFFSET),
            generation: le_u64(b, OFF_GENERATION),
            seed: le_u64(b, OFF_SEED),
            checksum,
            header_crc: le_u32(b, crc),
        }
    }

    /// The header's version and length are a layout, `b` holds it whole, and its own crc32c
    /// matches its bytes.
    #[inline]
    pub fn header_crc_ok(b: &[u8]) -> bool {
        if b.len() < HEADER_LEN {
            return false;
        }
        match crc_at(b[OFF_VERSION], le_u16(b, OFF_HEADER_LEN)) {
            Some(c) if b.len() >= c + 4 => crc32c::crc32c(&b[..c]) == le_u32(b, c),
            _ => false,
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        let field = crc_at(self.version, self.header_len_field()).map_or(CHECKSUM_LEN, |c| c - OFF_CHECKSUM);
        serde_json::json!({
            "magic": hex(&self.magic),
            "version": self.version,
            "algo": Checksum::from_code(self.algo_code).map(|c| c.name().to_string()).unwrap_or_else(|| format!("unknown({})", self.algo_code)),
            "header_len": self.header_len,
            "len": self.len,
            "thread": self.thread,
            "offset": self.offset,
            "generation": self.generation,
            "seed": self.seed,
            "checksum": hex(&self.checksum[..Checksum::from_code(self.algo_code).map_or(field, |c| c.digest_len().min(field))]),
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
        for (name, algo) in
            [("sha512", Checksum::Sha512), ("sha3_384", Checksum::Sha3_384), ("sha3_512", Checksum::Sha3_512)]
        {
            assert_eq!(serde_json::from_str::<Checksum>(&format!("\"{name}\"")).unwrap(), algo);
        }
        assert!(serde_json::from_str::<Checksum>("\"sha3-512\"").is_err(), "the engine's names use underscores");
    }

    #[test]
    fn long_digests_get_a_version_2_header_of_their_length() {
        for a in Checksum::ALL {
            let (v, hl) = match a {
                Checksum::Sha3_384 => (2, 96),
                Checksum::Sha512 | Checksum::Sha3_512 => (2, 112),
                _ => (1, 80),
            };
            assert_eq!((a.version(), a.header_len(), a.min_block()), (v, hl, hl + 8), "{a:?}");
            assert!(a.digest_len() <= a.field_len() && a.header_len() <= MAX_HEADER_LEN);
        }
        // A version-2 header: the length in bytes 6..8, the header crc at length - 8.
        let mut b = [0xEEu8; 200];
        let mut h = BlockHeader::new(4096, 200, 3, 1, 9, Checksum::Sha3_384);
        h.checksum = Checksum::Sha3_384.digest(b"x");
        h.write_to(&mut b);
        assert_eq!((b[4], b[5], u16::from_le_bytes([b[6], b[7]])), (2, 13, 96));
        assert_eq!(&b[40..88], &Checksum::Sha3_384.digest(b"x")[..48]);
        assert_eq!(u32::from_le_bytes(b[88..92].try_into().unwrap()), crc32c::crc32c(&b[..88]));
        assert_eq!(&b[92..96], &[0; 4]);
        assert_eq!(b[96], 0xEE, "nothing written past the header");
        assert!(BlockHeader::header_crc_ok(&b));
        assert_eq!(BlockHeader::parse(&b), h);
        assert_eq!(h.to_json()["checksum"].as_str().unwrap().len(), 96);
        assert_eq!(h.to_json()["header_len"], 96);
        // A length that is no layout, or a header cut short, fails its check.
        for bad in [0u16, 80, 97, 120, 0xFFFF] {
            let mut c = b;
            c[6..8].copy_from_slice(&bad.to_le_bytes());
            assert!(!BlockHeader::header_crc_ok(&c), "header_len {bad}");
        }
        assert!(!BlockHeader::header_crc_ok(&b[..90]));
        // Version 1 leaves bytes 6..8 zero, as before version 2.
        let mut v1 = [0u8; 80];
        BlockHeader::new(0, 4096, 1, 0, 0, Checksum::Sha256).write_to(&mut v1);
        assert_eq!((v1[4], &v1[6..8]), (1, &[0u8, 0][..]));
        assert_eq!(BlockHeader::parse(&v1).header_len, 80);
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
        // FIPS 180-4 and FIPS 202 examples for "abc" and the empty message (as Python's hashlib gives them).
        assert_eq!(
            hexd(Checksum::Sha512, b"abc"),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        );
        assert_eq!(
            hexd(Checksum::Sha3_384, b"abc"),
            "ec01498288516fc926459f58e2c6ad8df9b473cb0fc08c2596da7cf0e49be4b298d88cea927ac7f539f1edf228376d25"
        );
        assert_eq!(
            hexd(Checksum::Sha3_512, b"abc"),
            "b751850b1a57168a5693cd924b6b096e08f621827444f70d884f5d0240d2712e10e116e9192af3c91a7ec57647e3934057340b4cf408d5a56592f8274eec53f0"
        );
        assert_eq!(
            hexd(Checksum::Sha512, b""),
            "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
        );
        assert_eq!(
            hexd(Checksum::Sha3_384, b""),
            "0c63a75b845e4f7d01107d852e4c2485c51a50aaaa94fc61995e71bbee983a2ac3713831264adb47fb6bd1e058d5f004"
        );
        assert_eq!(
            hexd(Checksum::Sha3_512, b""),
            "a69f73cca23a9ac5c8b567dc185a756e97c982164fe25859e0d1dcc1475c80a615b2123af1f5f94c11e3e9402c3ac558f500199d95b6d3e301758586281dcd26"
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
