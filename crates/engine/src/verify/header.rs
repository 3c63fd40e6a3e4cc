//! The header every verified block starts with, the payload that follows it,
//! and the check of a block read back.
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

const OFF_VERSION: usize = 4;
const OFF_ALGO: usize = 5;
const OFF_LEN: usize = 8;
const OFF_THREAD: usize = 12;
const OFF_OFFSET: usize = 16;
const OFF_GENERATION: usize = 24;
const OFF_SEED: usize = 32;
const OFF_CHECKSUM: usize = 40;
const OFF_HEADER_CRC: usize = 72;

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

// ---- the payload -------------------------------------------------------------

/// Words of the fixed random pattern the payload is drawn from (8 KiB: small enough to stay in the L1 cache).
const PATTERN_WORDS: usize = 1024;

pub(crate) const fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const fn make_pattern() -> [u64; PATTERN_WORDS] {
    let mut p = [0u64; PATTERN_WORDS];
    let mut i = 0;
    while i < PATTERN_WORDS {
        p[i] = splitmix(0x5EED_F5E7_0000_0000 ^ i as u64);
        i += 1;
    }
    p
}

/// Computed at compile time: filling a block allocates nothing and draws no random numbers.
static PATTERN: [u64; PATTERN_WORDS] = make_pattern();

/// The 64-bit key a block's payload is derived from.
#[inline]
fn block_key(seed: u64, thread: u32, offset: u64, generation: u64) -> u64 {
    splitmix(seed ^ splitmix(offset ^ splitmix(generation ^ ((thread as u64) << 32))))
}

/// Payload word `i` of the block with `key`: the pattern, rotated by the key
/// and xored with it (a new xor value for every 8 KiB of payload, so long
/// blocks do not repeat). Random-looking, different for every block and write,
/// and as cheap to make as a copy.
#[inline(always)]
pub(crate) fn payload_word(key: u64, i: usize) -> u64 {
    let rot = (key >> 52) as usize;
    let lap = (i / PATTERN_WORDS) as u64;
    PATTERN[(i + rot) % PATTERN_WORDS] ^ key ^ lap.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Fill `payload` with the payload of the block with `key`.
///
/// On x86-64 CPUs with AVX2 the same loop is compiled for 32-byte vectors and
/// chosen at run time (the detection is cached by std): the fill is the
/// writer's main cost when verifying, and the baseline build only has SSE2.
/// Both paths write the same bytes (tested below).
#[inline]
fn fill_payload(payload: &mut [u8], key: u64) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        unsafe { fill_payload_avx2(payload, key) };
        return;
    }
    fill_payload_portable(payload, key)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fill_payload_avx2(payload: &mut [u8], key: u64) {
    fill_payload_portable(payload, key)
}

#[inline(always)]
fn fill_payload_portable(payload: &mut [u8], key: u64) {
    let rot = (key >> 52) as usize % PATTERN_WORDS;
    let words = payload.len() / 8;
    let mut i = 0usize;
    // Each lap over the rotated pattern is two straight runs, which the compiler vectorises.
    while i < words {
        let k = key ^ ((i / PATTERN_WORDS) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let lap_end = (i - i % PATTERN_WORDS + PATTERN_WORDS).min(words);
        let first = (PATTERN_WORDS - rot).min(lap_end - i);
        xor_run(&mut payload[i * 8..(i + first) * 8], &PATTERN[rot..rot + first], k);
        i += first;
        let second = lap_end - i;
        xor_run(&mut payload[i * 8..(i + second) * 8], &PATTERN[..second], k);
        i += second;
    }
    let tail = &mut payload[words * 8..];
    if !tail.is_empty() {
        let n = tail.len();
        tail.copy_from_slice(&payload_word(key, words).to_le_bytes()[..n]);
    }
}

#[inline(always)]
fn xor_run(out: &mut [u8], pattern: &[u64], k: u64) {
    for (w, &p) in out.chunks_exact_mut(8).zip(pattern) {
        w.copy_from_slice(&(p ^ k).to_le_bytes());
    }
}

/// The payload byte at index `j` (0 = first byte after the header) of the block with `key`.
#[inline]
fn payload_byte(key: u64, j: usize) -> u8 {
    payload_word(key, j / 8).to_le_bytes()[j % 8]
}

/// Fill a whole block: header + payload derived deterministically from
/// (seed, thread, offset, generation) + checksum of the payload. No allocation.
///
/// Panics if `buf` is shorter than `MIN_BLOCK` or longer than 4 GiB: callers
/// check block sizes when they validate their spec.
#[inline]
pub fn fill_block(buf: &mut [u8], offset: u64, generation: u64, thread: u32, seed: u64, algo: Checksum) {
    assert!(buf.len() >= MIN_BLOCK && buf.len() <= u32::MAX as usize, "a verified block holds {MIN_BLOCK}..4 GiB bytes, not {}", buf.len());
    let (head, payload) = buf.split_at_mut(HEADER_LEN);
    fill_payload(payload, block_key(seed, thread, offset, generation));
    let mut h = BlockHeader::new(offset, payload.len() as u32 + HEADER_LEN as u32, generation, thread, seed, algo);
    h.checksum = algo.digest(payload);
    h.write_to(head);
}

/// Fill `buf` with consecutive verified blocks of `block` bytes each, the first at
/// file offset `offset` (a request of several blocks, like fio's `verify_interval`).
/// A last partial block shorter than `MIN_BLOCK` is not possible: callers make
/// requests multiples of `block`.
#[inline]
pub fn fill_blocks(buf: &mut [u8], block: usize, offset: u64, generation: u64, thread: u32, seed: u64, algo: Checksum) {
    for (i, b) in buf.chunks_mut(block).enumerate() {
        fill_block(b, offset + (i * block) as u64, generation, thread, seed, algo);
    }
}

/// crc32c of payloads of one length without reading them.
///
/// A payload is the rotated pattern XOR the key repeated (for payloads of at
/// most one pattern lap), and crc32c is affine over GF(2): for messages a, b of
/// one length, crc(a ^ b) = crc(a) ^ crc(b) ^ crc(0...0). So
/// crc(payload) = crc(rotated pattern) ^ L(key repeated), where L is linear in
/// the key's 64 bits. Both parts are tabled once per payload length (one crc
/// per rotation and per key bit), so a writer gets the checksum of what it
/// writes with a table look-up and at most 64 XORs instead of a pass over the
/// data; readers still compute it over the bytes they read. The equality is
/// tested against the plain computation (tests below).
pub struct Crc32cPlan {
    payload_len: usize,
    rot_crc: Vec<u32>,
    /// key_byte[j][v]: the contribution of key byte j having value v (XOR of its bits' contributions).
    key_byte: Box<[[u32; 256]; 8]>,
}

impl Crc32cPlan {
    /// The plan for blocks of `block` bytes, or None when their payload is longer than one pattern lap.
    pub fn new(block: usize) -> Option<Crc32cPlan> {
        let len = block.checked_sub(HEADER_LEN)?;
        if block < MIN_BLOCK || len > PATTERN_WORDS * 8 {
            return None;
        }
        let mut buf = vec![0u8; len];
        let rot_crc = (0..PATTERN_WORDS)
            .map(|r| {
                for (i, w) in buf.chunks_mut(8).enumerate() {
                    let v = PATTERN[(i + r) % PATTERN_WORDS].to_le_bytes();
                    w.copy_from_slice(&v[..w.len()]);
                }
                crc32c::crc32c(&buf)
            })
            .collect();
        let zero = crc32c::crc32c(&vec![0u8; len]);
        let mut key_bit = [0u32; 64];
        for (b, slot) in key_bit.iter_mut().enumerate() {
            let v = (1u64 << b).to_le_bytes();
            for w in buf.chunks_mut(8) {
                w.copy_from_slice(&v[..w.len()]);
            }
            *slot = crc32c::crc32c(&buf) ^ zero;
        }
        let mut key_byte = Box::new([[0u32; 256]; 8]);
        for (j, table) in key_byte.iter_mut().enumerate() {
            for (v, slot) in table.iter_mut().enumerate() {
                *slot = (0..8).filter(|b| v >> b & 1 == 1).fold(0, |acc, b| acc ^ key_bit[8 * j + b]);
            }
        }
        Some(Crc32cPlan { payload_len: len, rot_crc, key_byte })
    }

    /// Bytes per block this plan is for.
    pub fn block_len(&self) -> usize {
        self.payload_len + HEADER_LEN
    }

    #[inline]
    fn crc(&self, key: u64) -> u32 {
        let mut c = self.rot_crc[(key >> 52) as usize % PATTERN_WORDS];
        for (j, table) in self.key_byte.iter().enumerate() {
            c ^= table[(key >> (8 * j)) as usize & 0xFF];
        }
        c
    }
}

/// As `fill_block` with crc32c, for a block of the plan's length, with the
/// payload's checksum from the plan (the same bytes as `fill_block` writes).
#[inline]
pub fn fill_block_planned(buf: &mut [u8], offset: u64, generation: u64, thread: u32, seed: u64, plan: &Crc32cPlan) {
    assert_eq!(buf.len(), plan.block_len(), "a planned block has the plan's length");
    let (head, payload) = buf.split_at_mut(HEADER_LEN);
    let key = block_key(seed, thread, offset, generation);
    fill_payload(payload, key);
    let mut h = BlockHeader::new(offset, buf_len(payload.len()), generation, thread, seed, Checksum::Crc32c);
    h.checksum[..4].copy_from_slice(&plan.crc(key).to_le_bytes());
    h.write_to(head);
}

#[inline(always)]
fn buf_len(payload: usize) -> u32 {
    (payload + HEADER_LEN) as u32
}

// ---- checking ----------------------------------------------------------------

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
        Mismatch { offset, len, kind, found, expected: None, first_diff: None, window_start: 0, expected_bytes: vec![], found_bytes: vec![] }
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
            write!(f, ", first differing byte at offset {} (block byte {d}): expected {} found {}", self.offset + d as u64, hex(&self.expected_bytes), hex(&self.found_bytes))?;
        }
        if let Some(h) = &self.found {
            write!(f, "; found header: offset {} len {} thread {} generation {}", h.offset, h.len, h.thread, h.generation)?;
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
pub fn check_block_expect(buf: &[u8], offset: u64, algo: Checksum, expect: Option<(u32, u64)>) -> Result<BlockHeader, Mismatch> {
    let len = buf.len();
    if len < HEADER_LEN {
        return Err(Mismatch::new(offset, len, MismatchKind::Short, None));
    }
    let h = BlockHeader::parse(buf);
    if h.magic != MAGIC || !BlockHeader::header_crc_ok(buf) || h.version != VERSION || h.algo_code != algo.code() || h.len as usize != len || h.offset != offset {
        return Err(header_mismatch(buf, offset, algo, h, expect));
    }
    let payload = &buf[HEADER_LEN..];
    if algo.digest(payload) != h.checksum {
        return Err(payload_mismatch(buf, offset, h));
    }
    if let Some((thread, generation)) = expect {
        if (h.thread, h.generation) != (thread, generation) {
            let mut exp = BlockHeader::new(offset, len as u32, generation, thread, h.seed, algo);
            let mut bytes = [0u8; HEADER_LEN];
            exp.write_to(&mut bytes);
            let first = (0..HEADER_LEN).find(|&i| bytes[i] != buf[i]).unwrap_or(0);
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
/// (`bad_magic`), the rest of the header (`bad_header`) or the payload
/// (`bad_checksum`, or `zero_tail` when everything from there on is zero; all
/// zero: `zero_filled`). Allocates nothing unless it fails.
#[allow(clippy::too_many_arguments)]
pub fn check_prefix(buf: &[u8], offset: u64, block_len: usize, generation: u64, thread: u32, seed: u64, algo: Checksum, scratch: &mut [u8]) -> Result<(), Mismatch> {
    let exp = &mut scratch[..block_len];
    fill_block(exp, offset, generation, thread, seed, algo);
    let n = buf.len().min(block_len);
    if buf[..n] == exp[..n] {
        return Ok(());
    }
    Err(prefix_mismatch(&buf[..n], offset, exp))
}

#[cold]
fn prefix_mismatch(buf: &[u8], offset: u64, exp: &[u8]) -> Mismatch {
    let found = (buf.len() >= HEADER_LEN).then(|| BlockHeader::parse(buf));
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
    } else if first < HEADER_LEN {
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
    } else if h.version != VERSION {
        MismatchKind::BadVersion
    } else if h.algo_code != algo.code() {
        MismatchKind::WrongAlgo
    } else if h.len as usize != len {
        MismatchKind::WrongLength
    } else {
        MismatchKind::WrongOffset
    };
    // The block that belongs here: this offset, length and algorithm, the writer fields as found
    // (or as expected, when the caller knows them), the checksum of the payload as it stands; so a
    // damaged offset, length, algorithm or checksum byte is pointed at exactly, and damage to the
    // writer fields shows as the header crc (byte 72) disagreeing.
    let (thread, generation) = expect.unwrap_or((h.thread, h.generation));
    let mut full = vec![0u8; len];
    let mut exp = BlockHeader::new(offset, len as u32, generation, thread, h.seed, algo);
    if len >= MIN_BLOCK {
        fill_payload(&mut full[HEADER_LEN..], block_key(h.seed, thread, offset, generation));
        exp.checksum = algo.digest(&buf[HEADER_LEN..]);
    }
    exp.write_to(&mut full);
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
    let payload = &buf[HEADER_LEN..];
    let first = (0..payload.len()).find(|&j| payload_byte(key, j) != payload[j]);
    let mut expected = buf.to_vec();
    fill_payload(&mut expected[HEADER_LEN..], key);
    let kind = match first {
        Some(j) if payload[j..].iter().all(|&b| b == 0) => MismatchKind::ZeroTail,
        _ => MismatchKind::BadChecksum,
    };
    // Payload as written but the checksum field disagrees (a damaged checksum that kept the
    // header crc valid cannot happen by accident): point at the checksum field.
    let first = first.map(|j| j + HEADER_LEN).unwrap_or(OFF_CHECKSUM);
    let mut m = Mismatch::new(offset, len, kind, Some(h)).with_diff(buf, &expected, first);
    m.expected = Some(BlockHeader::parse(&expected));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_algorithm_and_size() {
        for algo in Checksum::ALL {
            for len in [MIN_BLOCK, 512, 4096, 4096 + 3, 65536, 40_000 * 8 + 5] {
                let mut b = vec![0u8; len];
                fill_block(&mut b, 123 * 4096, 7, 3, 42, algo);
                let h = check_block(&b, 123 * 4096, algo).unwrap_or_else(|m| panic!("{algo:?} {len}: {m}"));
                assert_eq!((h.offset, h.len as usize, h.generation, h.thread, h.seed, h.algo), (123 * 4096, len, 7, 3, 42, algo));
                assert_eq!(h.magic, MAGIC);
                assert_eq!(&b[..4], b"FSMV");
                assert_eq!(h.checksum, algo.digest(&b[HEADER_LEN..]));
                // Re-encoding the parsed header gives the same bytes.
                let mut again = [0u8; HEADER_LEN];
                let mut h2 = h;
                h2.write_to(&mut again);
                assert_eq!(&again[..], &b[..HEADER_LEN]);
                assert!(check_block_expect(&b, 123 * 4096, algo, Some((3, 7))).is_ok());
            }
        }
    }

    #[test]
    fn layout_matches_the_documented_offsets() {
        let mut b = vec![0u8; 4096];
        fill_block(&mut b, 0x1122_3344_5566_7788, 0x0102_0304_0506_0708, 0xAABB_CCDD, 0x99, Checksum::Xxh3);
        assert_eq!(b[4], 1);
        assert_eq!(b[5], 2);
        assert_eq!(&b[6..8], &[0, 0]);
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 4096);
        assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 0xAABB_CCDD);
        assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), 0x1122_3344_5566_7788);
        assert_eq!(u64::from_le_bytes(b[24..32].try_into().unwrap()), 0x0102_0304_0506_0708);
        assert_eq!(u64::from_le_bytes(b[32..40].try_into().unwrap()), 0x99);
        assert_eq!(&b[40..48], &xxhash_rust::xxh3::xxh3_64(&b[80..]).to_le_bytes());
        assert!(b[48..72].iter().all(|&x| x == 0));
        assert_eq!(u32::from_le_bytes(b[72..76].try_into().unwrap()), crc32c::crc32c(&b[..72]));
    }

    #[test]
    fn payload_is_deterministic_and_differs_per_write() {
        let mut a = vec![0u8; 4096];
        let mut b = vec![0u8; 4096];
        fill_block(&mut a, 8192, 1, 0, 5, Checksum::Crc32c);
        fill_block(&mut b, 8192, 1, 0, 5, Checksum::Crc32c);
        assert_eq!(a, b);
        for (off, gen, th, seed) in [(4096u64, 1u64, 0u32, 5u64), (8192, 2, 0, 5), (8192, 1, 1, 5), (8192, 1, 0, 6)] {
            fill_block(&mut b, off, gen, th, seed, Checksum::Crc32c);
            assert_ne!(a[HEADER_LEN..], b[HEADER_LEN..], "{off} {gen} {th} {seed}");
        }
        // payload_byte agrees with the bulk fill, across the pattern's wrap and laps.
        let mut big = vec![0u8; 3 * PATTERN_WORDS * 8 + 13];
        let key = block_key(1, 2, 3, 4);
        fill_payload(&mut big, key);
        for j in (0..big.len()).step_by(7).chain(big.len() - 13..big.len()) {
            assert_eq!(big[j], payload_byte(key, j), "byte {j}");
        }
        // The portable loop and the one chosen at run time write the same bytes.
        let mut portable = vec![0u8; big.len()];
        fill_payload_portable(&mut portable, key);
        assert_eq!(big, portable);
        // Not a repeating pattern: the laps differ.
        assert_ne!(big[..PATTERN_WORDS * 8], big[PATTERN_WORDS * 8..2 * PATTERN_WORDS * 8]);
    }

    fn block(algo: Checksum) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        fill_block(&mut b, 40960, 9, 2, 77, algo);
        b
    }

    #[test]
    fn a_flipped_payload_byte_is_found_with_its_index() {
        for algo in Checksum::ALL {
            for at in [HEADER_LEN, 1000, 4095] {
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
    fn planned_crc32c_blocks_are_the_same_bytes() {
        for block in [MIN_BLOCK, 512, 4096, 4099, 8192, PATTERN_WORDS * 8 + HEADER_LEN] {
            let plan = Crc32cPlan::new(block).expect("a plan for blocks up to one lap");
            let (mut a, mut b) = (vec![0u8; block], vec![0u8; block]);
            for i in 0..200u64 {
                let (off, gen, th, seed) = (i * 4096, i * 7 + 1, (i % 5) as u32, 0xABCD ^ i);
                fill_block(&mut a, off, gen, th, seed, Checksum::Crc32c);
                fill_block_planned(&mut b, off, gen, th, seed, &plan);
                assert_eq!(a, b, "block {block}, write {i}");
            }
        }
        assert!(Crc32cPlan::new(PATTERN_WORDS * 8 + HEADER_LEN + 1).is_none());
        assert!(Crc32cPlan::new(40).is_none());
    }

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
        assert_eq!(check_prefix(&b, 1024, 512, 9, 2, 5, Checksum::Crc32c, &mut scratch).unwrap_err().kind, MismatchKind::BadHeader);
        let m = check_prefix(&full[..300], 1024, 512, 10, 2, 5, Checksum::Crc32c, &mut scratch).unwrap_err();
        assert_eq!(m.first_diff, Some(24), "another write: the generation field differs first");
        let mut z = full[..300].to_vec();
        z[150..].fill(0);
        assert_eq!(check_prefix(&z, 1024, 512, 9, 2, 5, Checksum::Crc32c, &mut scratch).unwrap_err().kind, MismatchKind::ZeroTail);
        assert_eq!(check_prefix(&[0u8; 60], 1024, 512, 9, 2, 5, Checksum::Crc32c, &mut scratch).unwrap_err().kind, MismatchKind::ZeroFilled);
    }
}
