//! Latency per sample interval, kept by each worker for its own operations (fio's latency logs).
//!
//! The phase's interval grid is fixed in advance: interval k covers [origin + k*len, origin +
//! (k+1)*len), origin being the phase's measured start, as the sampler's intervals do. A worker
//! adds each operation's latency to the bucket of the interval its completion falls in (count,
//! sum, min, max per kind, in a fixed array: nothing allocated, no lock, no shared write). When a
//! completion falls past the current bucket, the bucket's non-empty kinds are appended to the
//! worker's own list of cells: once per interval, never per operation (the list is preallocated
//! for the phase's expected intervals and grows by doubling beyond). The coordinator merges the
//! workers' cells into the phase's intervals after the phase.

use std::collections::BTreeMap;

use crate::report::{Interval, IntervalLat};

#[derive(Clone, Copy, Debug)]
struct Acc {
    n: u64,
    sum: u64,
    min: u64,
    max: u64,
}

const EMPTY: Acc = Acc { n: 0, sum: 0, min: u64::MAX, max: 0 };

/// One kind's operations in one interval of one worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatCell {
    pub interval: u64,
    pub kind: u8,
    pub count: u64,
    pub sum_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
}

/// `N`: the most operation kinds (the harness's MAX_KINDS).
pub struct IntervalLatRecorder<const N: usize> {
    origin: u64,
    len: u64,
    cur: u64,
    cur_end: u64,
    acc: [Acc; N],
    touched: u32,
    cells: Vec<LatCell>,
}

impl<const N: usize> IntervalLatRecorder<N> {
    /// The kinds touched in a bucket are bits of a u32.
    const FITS: () = assert!(N <= 32, "at most 32 operation kinds");

    /// `origin`: the phase's measured start (ns, monotonic); `len`: the interval's length;
    /// `expected`: how many intervals the phase is expected to have (for the preallocation).
    pub fn new(origin: u64, len: u64, expected: usize) -> Self {
        let () = Self::FITS;
        let len = len.max(1);
        IntervalLatRecorder {
            origin,
            len,
            cur: 0,
            cur_end: origin.saturating_add(len),
            acc: [EMPTY; N],
            touched: 0,
            cells: Vec::with_capacity(expected.clamp(4, 1 << 16) * 2),
        }
    }

    /// One operation of `kind` that took `lat_ns` and completed at `t1`.
    #[inline(always)]
    pub fn add(&mut self, kind: usize, lat_ns: u64, t1: u64) {
        if t1 >= self.cur_end {
            self.roll(t1);
        }
        let a = &mut self.acc[kind];
        a.n += 1;
        a.sum = a.sum.saturating_add(lat_ns);
        a.min = a.min.min(lat_ns);
        a.max = a.max.max(lat_ns);
        self.touched |= 1 << kind;
    }

    #[cold]
    fn roll(&mut self, t1: u64) {
        self.flush();
        self.cur = t1.saturating_sub(self.origin) / self.len;
        self.cur_end = self.origin.saturating_add(self.cur.saturating_add(1).saturating_mul(self.len));
    }

    fn flush(&mut self) {
        let mut mask = self.touched;
        while mask != 0 {
            let k = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let a = self.acc[k];
            self.cells.push(LatCell {
                interval: self.cur,
                kind: k as u8,
                count: a.n,
                sum_ns: a.sum,
                min_ns: a.min,
                max_ns: a.max,
            });
            self.acc[k] = EMPTY;
        }
        self.touched = 0;
    }

    /// The worker's cells, its last bucket included (at the worker's end).
    pub fn finish(mut self) -> Vec<LatCell> {
        self.flush();
        self.cells
    }
}

/// Adds cells to the intervals they fall in (a cell past the last interval, which can only be
/// the last, shorter one, counts in it).
pub fn attach(intervals: &mut [Interval], kinds: &[&'static str], cells: &[LatCell]) {
    let Some(last) = intervals.len().checked_sub(1) else { return };
    for c in cells {
        let i = (c.interval.min(last as u64)) as usize;
        let name = kinds[c.kind as usize];
        let e: &mut BTreeMap<String, IntervalLat> = &mut intervals[i].lat;
        e.entry(name.to_string()).or_default().add(c.count, c.sum_ns, c.min_ns, c.max_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-checked: with intervals of 10 ns from 100, completions at 100, 105 and 109 are
    /// interval 0, 110 and 119 interval 1, 135 interval 3 (interval 2 is empty and left out).
    #[test]
    fn cells_follow_completion_time_on_the_grid() {
        let mut r = IntervalLatRecorder::<2>::new(100, 10, 4);
        r.add(0, 5, 100);
        r.add(0, 7, 105);
        r.add(1, 3, 109);
        r.add(0, 20, 110);
        r.add(0, 10, 119);
        r.add(0, 1, 135);
        let cells = r.finish();
        let c =
            |interval, kind, count, sum_ns, min_ns, max_ns| LatCell { interval, kind, count, sum_ns, min_ns, max_ns };
        assert_eq!(cells, vec![c(0, 0, 2, 12, 5, 7), c(0, 1, 1, 3, 3, 3), c(1, 0, 2, 30, 10, 20), c(3, 0, 1, 1, 1, 1)]);
        let kinds = ["read", "write"];
        let mut ivs: Vec<Interval> = (0..3).map(|_| Interval::new(0.0, 0.0, &kinds, &[0, 0], &[0, 0])).collect();
        attach(&mut ivs, &kinds, &cells);
        assert_eq!(ivs[0].lat["read"].mean_ns, 6.0);
        assert_eq!(ivs[0].lat["write"].count, 1);
        // Interval 3 is past the last (2): it counts in the last.
        assert_eq!(ivs[2].lat["read"], IntervalLat { count: 1, sum_ns: 1, mean_ns: 1.0, min_ns: 1, max_ns: 1 });
        assert_eq!(ivs[1].lat["read"].max_ns, 20);
    }
}
