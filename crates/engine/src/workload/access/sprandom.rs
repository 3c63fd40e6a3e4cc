//! fio's sprandom: SanDisk's random preconditioning of a flash device, as fio 3.41+ does it.
//!
//! The method (Desnoyers, "Analytic Models of SSD Write Performance", ACM ToS 8(2), 2012): at
//! steady state under uniform random writes with greedy garbage collection, a block's validity
//! times the share of the device held by blocks of that validity is constant. With the write
//! amplification approximated from the over-provisioning `op` as WA = 0.5 / op + 0.7, the block
//! garbage collection picks has validity 1 - 1/WA. Validities spaced evenly from 1 down to that
//! value give relative sizes 1/v; their running sum, resampled at evenly spaced points and read
//! back through linear interpolation, gives the validity of each of `regions` equal regions; the
//! list is reversed, so the first region is the least valid.
//!
//! The device's physical size is the logical size plus ceil(logical * op), aligned down to the
//! block size; that is also the job's byte count (fio sets io_size to it). Each region is
//! physical / regions bytes, `region_writes` blocks. The writes go region by region: every write
//! of region r (fresh offset or replayed one) is kept, with chance (pct_r + 1) / 10001 where
//! pct_r = round((1 - validity_r) * 10000), in a two-phase ring; at the start of region r + 1
//! the kept offsets of region r are written again first (invalidating them), then fresh offsets
//! fill the region up to `region_writes`. With a cache size (fio's spr_cs) the replay of region r
//! comes at the end of region r + 1 instead. Fresh offsets are each block of the file once, in a
//! pseudo-random order (fio: its lfsr; here the random map's `BlockPerm`, blockmap.rs); the run ends after the region past the
//! last, when the blocks are all used, or at the byte count, whichever comes first.
//!
//! Every table (validities, per-region shares, the ring) is built before the measured phase;
//! `next` allocates nothing.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

/// fio's PCT_PRECISION: invalidation shares in 1/10000.
pub const PCT_PRECISION: u32 = 10_000;

fn default_regions() -> u32 {
    100
}

/// fio's sprandom options for one job (one file, random writes of one size aligned to it).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SprandomSpec {
    /// fio's spr_op: the over-provisioning ratio, in (0, 1).
    pub over_provisioning: f64,
    /// fio's spr_num_regions.
    #[serde(default = "default_regions")]
    pub regions: u32,
    /// fio's spr_cs: the device cache in bytes (0: none); with one, invalidations wait a region more.
    #[serde(default)]
    pub cache_size: u64,
    /// The logical size the plan is made for (fio: the smaller of the file size and io_size);
    /// 0: the file size.
    #[serde(default)]
    pub logical_size: u64,
}

impl SprandomSpec {
    pub fn validate(&self, file_size: u64, block: u64) -> Result<()> {
        if !(self.over_provisioning > 0.0 && self.over_provisioning < 1.0) {
            return Err(EngineError::invalid("sprandom.over_provisioning", "must be in (0, 1), e.g. 0.15"));
        }
        if self.regions == 0 {
            return Err(EngineError::invalid("sprandom.regions", "must be >= 1"));
        }
        if self.logical_size > file_size {
            return Err(EngineError::invalid("sprandom.logical_size", "must not exceed the file size"));
        }
        let plan = Plan::new(self, file_size, block);
        if plan.region_writes == 0 {
            return Err(EngineError::invalid(
                "sprandom.regions",
                format!(
                    "{} regions leave less than one {block}-byte block per region of a {}-byte device: use fewer",
                    self.regions, plan.physical
                ),
            ));
        }
        if self.cache_size > plan.region_size {
            return Err(EngineError::invalid(
                "sprandom.cache_size",
                format!(
                    "must not exceed the region size ({} bytes); at most {} regions for this cache size",
                    plan.region_size,
                    plan.physical / self.cache_size
                ),
            ));
        }
        Ok(())
    }
}

/// fio's physical size: logical + ceil(logical * op), aligned down to `block`.
pub fn physical_size(op: f64, logical: u64, block: u64) -> u64 {
    let size = logical + (logical as f64 * op).ceil() as u64;
    size - size % block.max(1)
}

fn linspace(start: f64, end: f64, n: usize) -> Vec<f64> {
    if n == 1 {
        return vec![start];
    }
    let step = (end - start) / (n as f64 - 1.0);
    (0..n).map(|i| start + i as f64 * step).collect()
}

/// Linear interpolation on increasing `xs`, clamped to the end points.
fn interp(q: f64, xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len();
    if n == 1 || q <= xs[0] {
        return ys[0];
    }
    if q >= xs[n - 1] {
        return ys[n - 1];
    }
    for i in 0..n - 1 {
        if q >= xs[i] && q <= xs[i + 1] {
            let dx = xs[i + 1] - xs[i];
            if dx.abs() < 1e-9 {
                return ys[i];
            }
            return ys[i] + (ys[i + 1] - ys[i]) * ((q - xs[i]) / dx);
        }
    }
    0.0
}

/// The steady-state validity of each of `regions` equal regions, least valid first (module doc).
pub fn validity(regions: usize, op: f64) -> Vec<f64> {
    let waf = 0.5 / op + 0.7;
    let gc = 1.0 - 1.0 / waf;
    let v = linspace(1.0, gc, regions);
    let mut acc = 0.0;
    let x: Vec<f64> = v
        .iter()
        .map(|&y| {
            acc += 1.0 / y;
            acc
        })
        .collect();
    let mut out: Vec<f64> = linspace(x[0], x[regions - 1], regions).into_iter().map(|q| interp(q, &x, &v)).collect();
    out.reverse();
    out
}

/// The precomputed layout: sizes, per-region invalidation shares, the ring's capacity.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub logical: u64,
    pub physical: u64,
    pub region_size: u64,
    pub region_writes: u64,
    /// Per region: the share of its writes invalidated later, in 1/PCT_PRECISION.
    pub invalid_pct: Vec<u32>,
    pub capacity: usize,
}

impl Plan {
    pub fn new(spec: &SprandomSpec, file_size: u64, block: u64) -> Plan {
        let block = block.max(1);
        let logical = if spec.logical_size > 0 { spec.logical_size } else { file_size };
        let op = spec.over_provisioning;
        let physical = physical_size(op, logical, block);
        let regions = spec.regions.max(1) as usize;
        let v = validity(regions, op);
        let invalid_pct = v.iter().map(|&x| ((1.0 - x) * PCT_PRECISION as f64).round() as u32).collect();
        let region_size = physical / regions as u64;
        let region_writes = region_size / block;
        // fio's estimate: the least valid region's expected invalidations plus six standard deviations,
        // twice that when invalidations wait a region more; the ring keeps one slot free.
        let (n, p) = (region_writes as f64, v[0]);
        let est = (n * (1.0 - p) + 6.0 * (n * p * (1.0 - p)).sqrt()).ceil() as usize;
        let capacity = (if spec.cache_size > 0 { est * 2 } else { est }).max(2);
        Plan { logical, physical, region_size, region_writes, invalid_pct, capacity }
    }
}

/// fio's two-phase ring: offsets are staged while a region is written and become visible to the
/// reader when the next region starts.
struct Ring {
    buf: Vec<u64>,
    commit: usize,
    staging: usize,
    tail: usize,
}

impl Ring {
    fn used(&self) -> usize {
        let cap = self.buf.len();
        (self.commit + cap - self.tail) % cap + (self.staging + cap - self.commit) % cap
    }

    #[inline]
    fn pop(&mut self) -> Option<u64> {
        if self.tail == self.commit {
            return None;
        }
        let v = self.buf[self.tail];
        self.tail = (self.tail + 1) % self.buf.len();
        Some(v)
    }
}

/// What the sequence did, per region (index `regions` is the region past the last); counted in
/// preallocated tables.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SprStats {
    /// Writes of each region (fresh and replayed).
    pub writes: Vec<u64>,
    /// Of those, replays of offsets kept in the region before.
    pub replays: Vec<u64>,
    /// Writes of each region kept to be written again (invalidated) later.
    pub kept: Vec<u64>,
    /// Invalidations the full ring could not keep (fio stops on an assertion there).
    pub dropped: u64,
}

/// The offset sequence of one sprandom job, in blocks.
pub struct Sprandom {
    plan: Plan,
    regions: u32,
    cache: bool,
    blocks: u64,
    drawn: u64,
    rng: Xoshiro256PlusPlus,
    ring: Ring,
    invalid_count: [u64; 2],
    region: u32,
    phase: usize,
    writes_remaining: u64,
    stats: SprStats,
    ended: bool,
}

impl Sprandom {
    /// The file's blocks (file size / block size) are each written once as a fresh offset, in the
    /// order the caller's permutation gives (`next`).
    pub fn new(spec: &SprandomSpec, file_size: u64, block: u64, seed: u64) -> Sprandom {
        let plan = Plan::new(spec, file_size, block);
        let regions = spec.regions.max(1);
        let blocks = file_size / block.max(1);
        let slots = regions as usize + 1;
        Sprandom {
            regions,
            cache: spec.cache_size > 0,
            blocks,
            drawn: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5350_5241_4E44_4F4D),
            ring: Ring { buf: vec![0; plan.capacity], commit: 0, staging: 0, tail: 0 },
            invalid_count: [0; 2],
            region: 0,
            phase: 0,
            writes_remaining: plan.region_writes,
            stats: SprStats { writes: vec![0; slots], replays: vec![0; slots], kept: vec![0; slots], dropped: 0 },
            ended: false,
            plan,
        }
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    pub fn stats(&self) -> &SprStats {
        &self.stats
    }

    /// What the plan did, for the phase's report (built when the thread ends, not per request):
    /// the plan's sizes, and per region its model share of invalidated writes, its writes, its
    /// rewrites of the region before, and its writes kept to be rewritten; `ended` when the plan
    /// itself ended the run (not the byte count or the clock).
    pub fn summary(&self) -> serde_json::Value {
        let st = &self.stats;
        let fresh: u64 = st.writes.iter().zip(&st.replays).map(|(w, r)| w - r).sum();
        serde_json::json!({
            "physical_bytes": self.plan.physical,
            "regions": self.regions,
            "region_bytes": self.plan.region_size,
            "region_writes": self.plan.region_writes,
            "invalid_share": self.plan.invalid_pct.iter().map(|&p| p as f64 / PCT_PRECISION as f64).collect::<Vec<_>>(),
            "writes": st.writes,
            "rewrites": st.replays,
            "kept": st.kept,
            "fresh_writes": fresh,
            "file_blocks": self.blocks,
            "dropped": st.dropped,
            "ended": self.ended,
        })
    }

    /// Keeps `block` for a later rewrite with the current region's chance: a draw uniform in
    /// [0, PCT_PRECISION], kept when <= the share (fio's rand_between and test).
    #[inline]
    fn keep(&mut self, block: u64, phase: usize) {
        let r = (self.region as usize).min(self.plan.invalid_pct.len() - 1);
        let v = ((self.rng.next_u64() as u128 * (PCT_PRECISION as u128 + 1)) >> 64) as u32;
        if v <= self.plan.invalid_pct[r] {
            if self.ring.used() < self.ring.buf.len() - 1 {
                let s = self.ring.staging;
                self.ring.buf[s] = block;
                self.ring.staging = (s + 1) % self.ring.buf.len();
                self.invalid_count[phase] += 1;
                self.stats.kept[self.region as usize] += 1;
            } else {
                self.stats.dropped += 1;
            }
        }
    }

    #[inline]
    fn replay(&mut self, block: u64, keep: bool) -> Option<u64> {
        if keep {
            self.keep(block, self.phase ^ 1);
        }
        self.stats.writes[self.region as usize] += 1;
        self.stats.replays[self.region as usize] += 1;
        Some(block)
    }

    /// The next block to write, or None when the sequence has ended. `fresh` gives the next block of a
    /// permutation of the file's blocks (the random map's `BlockPerm`, blockmap.rs); it is called at most once
    /// per block.
    #[inline]
    // Not an Iterator: the hot path wants no adapter machinery, and the sequence is consumed once.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self, fresh: impl FnOnce() -> u64) -> Option<u64> {
        if !self.cache {
            if let Some(b) = self.ring.pop() {
                return self.replay(b, true);
            }
        }
        if self.writes_remaining == 0 {
            if self.cache {
                if let Some(b) = self.ring.pop() {
                    return self.replay(b, true);
                }
            }
            if self.region >= self.regions {
                self.ended = true;
                return None;
            }
            self.invalid_count[self.phase] = 0;
            self.region += 1;
            self.phase ^= 1;
            self.writes_remaining = self.plan.region_writes.saturating_sub(self.invalid_count[self.phase]);
            self.ring.commit = self.ring.staging;
        }
        if self.drawn >= self.blocks {
            // Every block has had its fresh write: with a cache the kept ones still go (not kept again).
            if self.cache {
                if let Some(b) = self.ring.pop() {
                    return self.replay(b, false);
                }
            }
            self.ended = true;
            return None;
        }
        let b = fresh();
        self.drawn += 1;
        self.writes_remaining = self.writes_remaining.saturating_sub(1);
        self.keep(b, self.phase ^ 1);
        self.stats.writes[self.region as usize] += 1;
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A permutation of the file's blocks for the tests (Fisher-Yates with xoshiro).
    struct Shuffled(Vec<u64>, usize);

    impl Shuffled {
        fn new(n: u64, seed: u64) -> Self {
            let mut v: Vec<u64> = (0..n).collect();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            for i in (1..v.len()).rev() {
                v.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            Shuffled(v, 0)
        }

        fn next(&mut self) -> u64 {
            self.1 += 1;
            self.0[self.1 - 1]
        }
    }

    fn spec(op: f64, regions: u32) -> SprandomSpec {
        SprandomSpec { over_provisioning: op, regions, cache_size: 0, logical_size: 0 }
    }

    #[test]
    fn the_plan_of_a_64_mib_file_matches_fio() {
        // fio 3.42 on a 64 MiB file, bs 4k, spr_op 0.15, 100 regions: 77172736 bytes in 18841 writes.
        let p = Plan::new(&spec(0.15, 100), 64 << 20, 4096);
        assert_eq!(p.physical, 77_172_736);
        assert_eq!(p.physical / 4096, 18_841);
        assert_eq!(p.region_size, 771_727);
        assert_eq!(p.region_writes, 188);
        assert_eq!(p.capacity, 83, "fio: invalid_capacity 83");
        assert_eq!(p.invalid_pct.len(), 100);
    }

    #[test]
    fn validity_by_hand_for_three_regions() {
        // op 0.5: WA = 0.5/0.5 + 0.7 = 1.7, gc validity = 1 - 1/1.7 = 0.41176.
        // v = [1, 0.70588, 0.41176]; x = cumsum(1/v) = [1, 2.41667, 4.84524];
        // resampled at [1, 2.92262, 4.84524]: 1, 0.70588 + (0.41176 - 0.70588) * (0.50595 / 2.42857)
        // = 0.64461, 0.41176; reversed.
        let v = validity(3, 0.5);
        let want = [0.411_765, 0.644_608, 1.0];
        for (a, b) in v.iter().zip(want) {
            assert!((a - b).abs() < 1e-5, "{v:?}");
        }
        let p = Plan::new(&spec(0.5, 3), 1 << 20, 4096);
        assert_eq!(p.invalid_pct, vec![5882, 3554, 0]);
    }

    #[test]
    fn one_region_is_all_valid() {
        assert_eq!(validity(1, 0.15), vec![1.0]);
    }

    #[test]
    fn regions_are_written_whole_with_their_share_invalidated() {
        let s = spec(0.15, 100);
        let (file, bs) = (64u64 << 20, 4096u64);
        let mut g = Sprandom::new(&s, file, bs, 7);
        let mut perm = Shuffled::new(file / bs, 7);
        let limit = g.plan().physical / bs;
        let mut n = 0u64;
        let mut seen = vec![false; (file / bs) as usize];
        while n < limit {
            let Some(b) = g.next(|| perm.next()) else { break };
            assert!(b < file / bs, "block {b} outside the file");
            seen[b as usize] = true;
            n += 1;
        }
        let st = g.stats().clone();
        let p = g.plan().clone();
        assert_eq!(st.dropped, 0);
        let fresh: u64 = (0..=100).map(|r| st.writes[r] - st.replays[r]).sum();
        // Every region before the last is written exactly region_writes times (the last one too unless the
        // blocks ran out first), and the replays of region r + 1 are the writes region r kept.
        for r in 0..100 {
            if r < 99 || fresh < file / bs {
                assert_eq!(st.writes[r], p.region_writes, "region {r}");
                assert_eq!(st.replays[r + 1], st.kept[r], "region {r}");
            }
        }
        assert_eq!(st.replays[0], 0);
        // Each region keeps its share: binomial(188, p), summed over ten regions at a time to within 4 sd.
        for chunk in 0..10 {
            let rs = chunk * 10..chunk * 10 + 10;
            let expect: f64 = rs.clone().map(|r| (p.invalid_pct[r] + 1) as f64 / 10_001.0 * 188.0).sum();
            let var: f64 = rs
                .clone()
                .map(|r| {
                    let q = (p.invalid_pct[r] + 1) as f64 / 10_001.0;
                    188.0 * q * (1.0 - q)
                })
                .sum();
            let got: u64 = rs.map(|r| st.kept[r]).sum();
            assert!(
                (got as f64 - expect).abs() <= 4.0 * var.sqrt() + 1.0,
                "regions of chunk {chunk}: {got} vs {expect}"
            );
        }
        // The least valid region first. fio 3.42's debug log for this plan (--debug=sprandom) gives the
        // shares 0.2479, 0.2458, 0.2436 for the first regions and 0.0029 for the one before the last.
        assert_eq!(&p.invalid_pct[..3], &[2479, 2458, 2436]);
        assert_eq!(p.invalid_pct[98], 29);
        assert_eq!(p.invalid_pct[99], 0);
        // Fresh offsets are distinct blocks: the fresh writes cover that many different blocks.
        assert_eq!(seen.iter().filter(|&&x| x).count() as u64, fresh);
        assert!(n == limit || fresh == file / bs, "stopped early at {n} with {fresh} fresh writes");
    }

    #[test]
    fn the_sequence_ends_after_the_region_past_the_last() {
        // A file large enough that the blocks outlast the regions: 4 regions, then the one past them.
        let s = spec(0.15, 4);
        let mut g = Sprandom::new(&s, 1 << 20, 4096, 1);
        let mut perm = Shuffled::new(256, 1);
        let n = std::iter::from_fn(|| g.next(|| perm.next())).count() as u64;
        let p = g.plan().clone();
        let fresh: u64 = (0..=4).map(|r| g.stats().writes[r] - g.stats().replays[r]).sum();
        // It ends either when every block had its fresh write or after region 4 is full.
        assert!(fresh == 256 || n == 5 * p.region_writes, "{n} writes, {fresh} fresh");
        assert!(g.next(|| perm.next()).is_none());
    }

    #[test]
    fn a_cache_delays_replays_to_the_end_of_the_next_region() {
        let s = SprandomSpec { over_provisioning: 0.15, regions: 10, cache_size: 4096, logical_size: 0 };
        let mut g = Sprandom::new(&s, 4 << 20, 4096, 3);
        let mut perm = Shuffled::new(1024, 3);
        let mut order = Vec::new();
        while let Some(b) = g.next(|| perm.next()) {
            order.push(b);
        }
        let st = g.stats();
        assert_eq!(st.dropped, 0);
        // Region 0's kept writes are replayed while region 0 is still the current one only after its fresh
        // writes: the first region_writes writes are all fresh.
        let rw = g.plan().region_writes as usize;
        let first: std::collections::HashSet<u64> = order[..rw].iter().copied().collect();
        assert_eq!(first.len(), rw, "the first region's writes are distinct fresh blocks");
        // Region 1 writes rw - k0 fresh blocks, then the k0 blocks region 0 kept.
        let k0 = st.kept[0] as usize;
        assert!(k0 > 0);
        assert!(
            order[rw..2 * rw - k0].iter().all(|b| !first.contains(b)),
            "a replay came before region 1's fresh writes"
        );
        assert!(order[2 * rw - k0..2 * rw].iter().all(|b| first.contains(b)), "region 0's kept blocks come last");
    }

    #[test]
    fn validation_names_the_field() {
        let e = spec(1.5, 10).validate(1 << 20, 4096).unwrap_err().to_string();
        assert!(e.contains("over_provisioning"), "{e}");
        let e = spec(0.15, 0).validate(1 << 20, 4096).unwrap_err().to_string();
        assert!(e.contains("regions"), "{e}");
        let e = spec(0.15, 1000).validate(1 << 20, 4096).unwrap_err().to_string();
        assert!(e.contains("fewer"), "{e}");
        let big = SprandomSpec { cache_size: 1 << 20, ..spec(0.15, 10) };
        let e = big.validate(1 << 20, 4096).unwrap_err().to_string();
        assert!(e.contains("cache_size"), "{e}");
        assert!(spec(0.15, 100).validate(64 << 20, 4096).is_ok());
    }
}
