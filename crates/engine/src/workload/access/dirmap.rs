//! fio's random map when the directions have block sizes of their own (a bssplit or bs with a READ,WRITE
//! pair whose smallest sizes differ), as fio 3.x keeps it (io_u.c, filesetup.c, lib/axmap.c):
//!
//! - the map has one bit per `random_map_block` bytes: fio's smallest block over reads, writes and trims
//!   (`rw_min_bs`);
//! - a direction draws a block number uniformly in [0, file / unit) where unit is its own smallest request
//!   size (`last_block`); a block whose bit is set moves to the map's next free bit after it, wrapping to
//!   the start (`axmap_next_free`); the request's offset is that number times the unit;
//! - the request marks one bit per unit it covers, from that number on, and ends at the first bit already
//!   set (`mark_random_map`, `axmap_set_nr`).
//!
//! So a 1 MiB write on a map of 64 KiB blocks takes one bit, bit b, which is also the bit of the 64 KiB read
//! at b x 64 KiB. A draw whose next free bit puts the offset at or past the end of the file (or too near it
//! for the direction's smallest size) ends the job in fio (`get_next_offset` fails, the file is done), as
//! does a full map; a time-based job starts over with an empty map. Which draw ends it depends on the draws,
//! so the job's bytes vary from seed to seed: fsmeter stops at the same rule, so its totals are draws from
//! the same distribution as fio's.

use rand_core::RngCore;

/// What the draw needs of the map (blockmap.rs's BlockMap, a bitmap with summary levels as fio's axmap).
pub trait MapBits {
    fn full(&self) -> bool;
    /// Every block free again.
    fn reset(&mut self);
    fn is_set(&self, i: u64) -> bool;
    /// The first free block after b, wrapping to the start (fio's axmap_next_free); None when full.
    fn next_free(&self, b: u64) -> Option<u64>;
    /// Marks up to nr blocks from b, stopping at the first one already set (fio's axmap_set_nr): how many.
    fn set_run(&mut self, b: u64, nr: u64) -> u64;
}

/// Lemire's multiply-shift: a uniform integer in [0, n) without division.
#[inline(always)]
fn below(x: u64, n: u64) -> u64 {
    ((x as u128 * n as u128) >> 64) as u64
}

/// Per direction (0 read, 1 write): its unit, its blocks, its entries and their weights within it.
pub struct DirMap {
    unit: [u64; 2],
    lastb: [u64; 2],
    /// Entry indices of each direction, in the spec's order (fio's: its bssplit sorted by percentage).
    entries: [Vec<usize>; 2],
    /// Cumulative 32-bit thresholds of those entries' weights within the direction.
    cum: [Vec<u64>; 2],
    /// End the thread at the stop rule (a run of bytes); false: start a new pass (time-based).
    ends: bool,
    ended: bool,
}

impl DirMap {
    /// `dirs[i]`: entry i writes; `weights[i]`, `sizes[i]`: its weight and request size.
    pub fn new(dirs: &[bool], weights: &[f64], sizes: &[u32], file_size: u64, ends: bool) -> Self {
        let mut entries: [Vec<usize>; 2] = [vec![], vec![]];
        for (i, &w) in dirs.iter().enumerate() {
            entries[w as usize].push(i);
        }
        let mut unit = [0u64; 2];
        let mut lastb = [0u64; 2];
        let mut cum: [Vec<u64>; 2] = [vec![], vec![]];
        for d in 0..2 {
            unit[d] = entries[d].iter().map(|&i| sizes[i] as u64).min().unwrap_or(1).max(1);
            lastb[d] = (file_size / unit[d]).max(1);
            let total: f64 = entries[d].iter().map(|&i| weights[i]).sum();
            let mut acc = 0.0;
            cum[d] = entries[d]
                .iter()
                .map(|&i| {
                    acc += weights[i];
                    ((acc / total) * (1u64 << 32) as f64).round() as u64
                })
                .collect();
            if let Some(last) = cum[d].last_mut() {
                *last = 1u64 << 32;
            }
        }
        DirMap { unit, lastb, entries, cum, ends, ended: false }
    }

    /// The stop rule has ended the thread.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// A direction's request size drawn again (fio's get_next_buflen draws again when the size does not
    /// fit): an entry of that direction by its weight within it.
    #[inline]
    fn redraw<R: RngCore>(&self, d: usize, rng: &mut R) -> usize {
        let r = rng.next_u32() as u64;
        let k = self.cum[d].iter().position(|&c| r < c).unwrap_or(self.cum[d].len() - 1);
        self.entries[d][k]
    }

    /// The next request of direction `write` whose entry was drawn as `entry`: (offset in the file, length,
    /// entry), or None when the stop rule ends the thread (then `ended()`) or, in a time-based run, the pass
    /// (the map is then empty: draw the next request afresh).
    #[inline]
    pub fn draw<M: MapBits, R: RngCore>(
        &mut self,
        map: &mut M,
        rng: &mut R,
        mut entry: usize,
        write: bool,
        sizes: &[u32],
        file_size: u64,
    ) -> Option<(u64, u32, usize)> {
        let d = write as usize;
        let unit = self.unit[d];
        if map.full() {
            // fio: no free bit ends the job; a time-based one empties the map and draws again (get_next_rand_block).
            if self.ends {
                self.ended = true;
                return None;
            }
            map.reset();
        }
        let mut b = below(rng.next_u64(), self.lastb[d]);
        if map.is_set(b) {
            b = map.next_free(b).expect("a map that is not full has a free bit");
        }
        // fio: an offset at or past the file's end fails get_next_offset, and one whose smallest size does not fit
        // fails get_next_buflen; either ends the job. A time-based job then runs again with an empty map: this
        // request is dropped (None without ended()) and the next one is drawn afresh, direction included.
        if b * unit + unit > file_size {
            self.ended = self.ends;
            map.reset();
            return None;
        }
        let off = b * unit;
        let room = file_size - off;
        // fio's get_next_buflen: the drawn size, or the first later one of its direction that fits, else a
        // new draw of the direction's sizes (the smallest always fits: checked above).
        let list = &self.entries[d];
        let mut len = sizes[entry] as u64;
        let mut found = false;
        for _ in 0..64 {
            let from = list.iter().position(|&i| i == entry).unwrap_or(0);
            if let Some(&k) = list[from..].iter().find(|&&k| sizes[k] as u64 <= room) {
                entry = k;
                len = sizes[k] as u64;
                found = true;
                break;
            }
            entry = self.redraw(d, rng);
        }
        if !found {
            entry = *list.iter().min_by_key(|&&k| sizes[k]).expect("a direction with entries");
            len = sizes[entry] as u64;
        }
        // fio's mark_random_map: one bit per unit of this direction, stopping at the first bit already set.
        let done = map.set_run(b, len.div_ceil(unit)).max(1);
        Some((off, len.min(done * unit) as u32, entry))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::access::blockmap::BlockMap;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    const K64: u64 = 64 << 10;
    const M1: u64 = 1 << 20;

    /// A 4 MiB file on a map of 64 KiB blocks (64 bits); reads of 64 KiB or 1 MiB, writes of 1 MiB (4 units).
    fn fixture(ends: bool) -> (DirMap, BlockMap, Vec<u32>) {
        let sizes = vec![K64 as u32, M1 as u32, M1 as u32];
        let m = DirMap::new(&[false, false, true], &[20.0, 30.0, 50.0], &sizes, 4 * M1, ends);
        (m, BlockMap::new(4 * M1 / K64), sizes)
    }

    #[test]
    fn a_write_takes_one_bit_and_a_read_its_own_units() {
        let (mut m, mut map, sizes) = fixture(true);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let (off, len, e) = m.draw(&mut map, &mut rng, 2, true, &sizes, 4 * M1).expect("a write");
        assert_eq!((off % M1, len as u64, e), (0, M1, 2));
        // One bit, the one numbered by the write's 1 MiB block: bit 0..3, nothing else.
        let set: Vec<u64> = (0..64).filter(|&i| map.is_set(i)).collect();
        assert_eq!(set, vec![off / M1]);
        // A 1 MiB read at block 40 (64 KiB units) marks bits 40..55.
        map.set_run(40, 16);
        assert_eq!((0..64).filter(|&i| map.is_set(i)).count(), 17);
    }

    #[test]
    fn a_write_whose_next_free_bit_is_past_the_file_ends_the_job() {
        // Bits 0..62 done, 63 free: every write draw (block 0..3) is taken, its next free bit is 63, and
        // 63 x 1 MiB is past the 4 MiB file: the first write ends the job, though 1 of 64 blocks is free.
        let (mut m, mut map, sizes) = fixture(true);
        map.set_run(0, 63);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        assert_eq!(m.draw(&mut map, &mut rng, 2, true, &sizes, 4 * M1), None);
        assert!(m.ended());
        // A read instead finds bit 63: 64 KiB at 63 x 64 KiB (its 1 MiB does not fit there).
        let (mut m, mut map, sizes) = fixture(true);
        map.set_run(0, 63);
        let (off, len, e) = m.draw(&mut map, &mut rng, 1, false, &sizes, 4 * M1).expect("a read");
        assert_eq!((off, len as u64, e), (63 * K64, K64, 0));
        assert!(!m.ended() && map.full());
        // Then the map is full: the next draw of either direction ends the job.
        assert_eq!(m.draw(&mut map, &mut rng, 0, false, &sizes, 4 * M1), None);
    }

    #[test]
    fn a_taken_write_block_moves_to_the_next_free_bit_wrapping_to_the_start() {
        // Bits 0 and 2..63 done, bit 1 free. Draws 0 and 1 give block 1; draws 2 and 3 search 3..63 (all
        // done) and wrap to the start, to bit 1. Every write lands at 1 MiB.
        for seed in 0..32 {
            let (mut m, mut map, sizes) = fixture(true);
            map.set_run(0, 1);
            map.set_run(2, 62);
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let (off, len, _) = m.draw(&mut map, &mut rng, 2, true, &sizes, 4 * M1).expect("a write");
            assert_eq!((off, len as u64), (M1, M1), "seed {seed}");
            assert!(map.full());
        }
    }

    #[test]
    fn a_time_based_run_drops_the_draw_and_starts_a_new_pass_instead_of_ending() {
        let (mut m, mut map, sizes) = fixture(false);
        map.set_run(0, 63);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        assert_eq!(m.draw(&mut map, &mut rng, 2, true, &sizes, 4 * M1), None, "fio drops the write that failed");
        assert!(!m.ended());
        assert!((0..64).all(|i| !map.is_set(i)), "the next pass starts with an empty map");
        let (off, len, _) = m.draw(&mut map, &mut rng, 2, true, &sizes, 4 * M1).expect("a write of the new pass");
        assert_eq!((off % M1, len as u64), (0, M1));
        // A full map instead empties itself and the request goes on in the same direction.
        map.set_run(0, 64);
        let (_, len, _) = m.draw(&mut map, &mut rng, 0, false, &sizes, 4 * M1).expect("a read of the new pass");
        assert_eq!(len as u64, K64);
        assert!(!m.ended());
    }

    #[test]
    fn writes_alone_stop_after_a_number_of_writes_whose_mean_is_fios() {
        // Writes of 1 MiB on 4 slots (bits 0..3 of the map; nothing else sets them, bit 4 stays free): the
        // job ends at the first draw b whose bit is set while bits b+1..3 are set too (the next free bit is
        // 4, at 4 MiB, past the file). The mean number of writes, by first-step analysis over the set S of
        // done slots, E(S) = sum over the 4 draws of 1/4 (1 + E(S + the slot written)), 0 for a draw that ends:
        //   E({0,1,2,3}) = 0, E({0,1,2}) = 1 (any draw writes slot 3), E({0,1,3}) = 3/4, E({0,2,3}) = 1/2,
        //   E({0,3}) = (7/4 + 7/4 + 3/2) / 4 = 5/4, ... E({}) = 821/256 = 3.2070.
        // The same chain gives the count's law: 1, 2, 3, 4 writes with 1/16, 5/32, 75/256, 125/256; its
        // standard deviation is 0.923, so over 40,000 seeds the mean's standard error is below 0.005 (allowed
        // 0.02) and that of the share of four-write runs 0.0025 (allowed 0.01).
        let mut total = 0u64;
        let mut four = 0u64;
        let n = 40_000u64;
        for seed in 0..n {
            let sizes = vec![K64 as u32, M1 as u32];
            let mut m = DirMap::new(&[false, true], &[0.0, 100.0], &sizes, 4 * M1, true);
            let mut map = BlockMap::new(64);
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut seen = [false; 4];
            while let Some((off, len, _)) = m.draw(&mut map, &mut rng, 1, true, &sizes, 4 * M1) {
                assert_eq!(len as u64, M1);
                assert!(!seen[(off / M1) as usize], "a slot written twice");
                seen[(off / M1) as usize] = true;
                total += 1;
            }
            four += seen.iter().all(|&x| x) as u64;
        }
        let mean = total as f64 / n as f64;
        assert!((mean - 821.0 / 256.0).abs() < 0.02, "mean {mean}");
        let share = four as f64 / n as f64;
        assert!((share - 125.0 / 256.0).abs() < 0.01, "four writes in {share} of the runs");
    }
}
