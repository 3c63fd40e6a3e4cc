//! The payload of a verified block: bytes derived from (seed, thread, offset,
//! write number) alone, drawn from a fixed pattern so that making them costs
//! about a copy, and the whole block (header, payload, checksum) a writer puts
//! down. A check (check.rs) regenerates them to say which byte differs.

use super::header::{BlockHeader, Checksum, HEADER_LEN, MIN_BLOCK};

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
pub(super) fn block_key(seed: u64, thread: u32, offset: u64, generation: u64) -> u64 {
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
pub(super) fn fill_payload(payload: &mut [u8], key: u64) {
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
pub(super) fn payload_byte(key: u64, j: usize) -> u8 {
    payload_word(key, j / 8).to_le_bytes()[j % 8]
}

/// Fill a whole block: header + payload derived deterministically from
/// (seed, thread, offset, generation) + checksum of the payload. No allocation.
///
/// Panics if `buf` is shorter than `algo.min_block()` or longer than 4 GiB: callers
/// check block sizes when they validate their spec.
#[inline]
pub fn fill_block(buf: &mut [u8], offset: u64, generation: u64, thread: u32, seed: u64, algo: Checksum) {
    assert!(
        buf.len() >= algo.min_block() && buf.len() <= u32::MAX as usize,
        "a block verified with {} holds {}..4 GiB bytes, not {}",
        algo.name(),
        algo.min_block(),
        buf.len()
    );
    let len = buf.len() as u32;
    let (head, payload) = buf.split_at_mut(algo.header_len());
    fill_payload(payload, block_key(seed, thread, offset, generation));
    let mut h = BlockHeader::new(offset, len, generation, thread, seed, algo);
    h.checksum = algo.digest(payload);
    h.write_to(head);
}

/// Fill `buf` with consecutive verified blocks of `block` bytes each, the first at
/// file offset `offset` (a request of several blocks, like fio's `verify_interval`).
/// A last partial block shorter than `algo.min_block()` is not possible: callers make
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

    /// The plan for blocks of `block` bytes checked with `algo`: None unless crc32c with a
    /// payload of at most one pattern lap (the writer then makes a pass over the data).
    pub fn for_checksum(algo: Checksum, block: usize) -> Option<Crc32cPlan> {
        if algo == Checksum::Crc32c {
            Crc32cPlan::new(block)
        } else {
            None
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
