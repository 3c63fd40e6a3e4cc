//! The random map's block structures: which blocks of the files a pass has done (`BlockMap`, a bitmap
//! with summary levels as fio's axmap) and a permutation of the blocks without memory (`BlockPerm`).
//! Both are made before the run; the request generator draws through them.

use super::dirmap::MapBits;

/// fio's random map for requests of several sizes: a bitmap of n blocks with a summary level per 64 words
/// (a bit set when the word below is full), as fio's axmap, so the next free block is found in a few
/// words. Bits past n are set from the start, so a full word means a full word. Made before the run.
pub struct BlockMap {
    levels: Vec<Vec<u64>>,
    n: u64,
    free: u64,
}

impl BlockMap {
    pub fn new(n: u64) -> Self {
        let n = n.max(1);
        let mut levels = Vec::new();
        let mut len = n;
        loop {
            let words = len.div_ceil(64);
            levels.push(vec![0u64; words as usize]);
            if words == 1 {
                break;
            }
            len = words;
        }
        let mut m = BlockMap { levels, n, free: n };
        m.reset();
        m
    }

    /// Every block free again (the next pass), without allocating.
    pub fn reset(&mut self) {
        let mut len = self.n;
        for level in self.levels.iter_mut() {
            level.fill(0);
            if !len.is_multiple_of(64) {
                *level.last_mut().expect("a word") = !0u64 << (len % 64);
            }
            len = len.div_ceil(64);
        }
        self.free = self.n;
    }

    /// How many blocks the map covers.
    pub fn blocks(&self) -> u64 {
        self.n
    }

    pub fn full(&self) -> bool {
        self.free == 0
    }

    #[inline]
    pub fn is_set(&self, i: u64) -> bool {
        self.levels[0][(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    #[inline]
    fn set(&mut self, i: u64) {
        let mut i = i;
        for level in self.levels.iter_mut() {
            let w = (i / 64) as usize;
            level[w] |= 1 << (i % 64);
            if level[w] != !0 {
                break;
            }
            i = w as u64;
        }
        self.free -= 1;
    }

    /// The first free index >= from at `lvl` (for lvl > 0: the first word below that is not full).
    fn first_free(&self, lvl: usize, from: u64) -> Option<u64> {
        let v = &self.levels[lvl];
        let w = (from / 64) as usize;
        if w >= v.len() {
            return None;
        }
        let word = v[w] | ((1u64 << (from % 64)) - 1);
        if word != !0 {
            return Some(w as u64 * 64 + (!word).trailing_zeros() as u64);
        }
        if lvl + 1 == self.levels.len() {
            return None;
        }
        let nw = self.first_free(lvl + 1, w as u64 + 1)?;
        Some(nw * 64 + (!v[nw as usize]).trailing_zeros() as u64)
    }

    /// fio's axmap_next_free: the first free block after b, wrapping to the start; None when full.
    #[inline]
    pub fn next_free(&self, b: u64) -> Option<u64> {
        self.first_free(0, b + 1).or_else(|| self.first_free(0, 0))
    }

    /// fio's axmap_set_nr: marks up to nr blocks from b, stopping at the first one already done (or the
    /// map's end); returns how many it marked.
    #[inline]
    pub fn set_run(&mut self, b: u64, nr: u64) -> u64 {
        let mut done = 0;
        while done < nr && b + done < self.n && !self.is_set(b + done) {
            self.set(b + done);
            done += 1;
        }
        done
    }
}

impl MapBits for BlockMap {
    #[inline(always)]
    fn full(&self) -> bool {
        BlockMap::full(self)
    }
    fn reset(&mut self) {
        BlockMap::reset(self)
    }
    #[inline(always)]
    fn is_set(&self, i: u64) -> bool {
        BlockMap::is_set(self, i)
    }
    #[inline(always)]
    fn next_free(&self, b: u64) -> Option<u64> {
        BlockMap::next_free(self, b)
    }
    #[inline(always)]
    fn set_run(&mut self, b: u64, nr: u64) -> u64 {
        BlockMap::set_run(self, b, nr)
    }
}

/// A permutation of [0, n) without memory: a full-period LCG modulo the next power of two (c odd,
/// a = 1 mod 4: Hull-Dobell), its state scrambled by a bijection of that range (xorshift, odd multiply),
/// values >= n skipped (cycle walking, < 2 steps on average). Each pass of 2^k steps yields every block
/// once; the next pass continues the cycle. fio's random map gives the same coverage with a bitmap.
pub struct BlockPerm {
    n: u64,
    mask: u64,
    shift: u32,
    state: u64,
    c: u64,
    mul: u64,
}

impl BlockPerm {
    pub fn new(n: u64, seed: u64) -> Self {
        let n = n.max(1);
        let bits = 64 - (n - 1).leading_zeros().min(63);
        let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        BlockPerm { n, mask, shift: (bits / 2).max(1), state: seed & mask, c: (seed >> 17) | 1, mul: (seed >> 7) | 1 }
    }

    #[inline]
    // A permutation's next block, not an Iterator: it never ends, and callers must not pay for Option.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        loop {
            self.state = self.state.wrapping_mul(0x5851_F42D_4C95_7F2D).wrapping_add(self.c) & self.mask;
            let mut x = self.state;
            x ^= x >> self.shift;
            x = x.wrapping_mul(self.mul) & self.mask;
            x ^= x >> self.shift;
            if x < self.n {
                return x;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_map_finds_the_next_free_block_and_stops_runs_at_done_blocks() {
        // 5000 blocks: three levels (5000 -> 79 words -> 2 words -> 1 word).
        let mut m = BlockMap::new(5000);
        assert_eq!(m.set_run(10, 4), 4);
        assert_eq!(m.set_run(8, 8), 2, "the run stops at block 10, done before");
        assert_eq!(m.next_free(8), Some(14));
        for i in 0..5000 {
            if i != 4321 && !m.is_set(i) {
                m.set_run(i, 1);
            }
        }
        assert_eq!(m.next_free(0), Some(4321), "found through the summary levels");
        assert_eq!(m.next_free(4999), Some(4321), "wraps to the start, as fio's axmap");
        assert_eq!(m.set_run(4999, 2), 0);
        m.set_run(4321, 1);
        assert!(m.full());
        assert_eq!(m.next_free(0), None);
        m.reset();
        assert!(!m.full() && !m.is_set(4999) && m.next_free(4998) == Some(4999) && m.blocks() == 5000);
    }
}
