//! Latency histograms: an HDR histogram (bounded relative error, fixed memory,
//! no allocation when recording) plus exact count, sum, min and max.
//!
//! Memory: every worker thread keeps one histogram per operation kind, so their
//! size multiplies by threads x kinds (dbench with 128 clients: 128 x 17). The
//! per-thread histograms therefore count in u32 (half the memory of u64), and
//! move their counts into a u64 histogram before any count could overflow:
//! after 2^31 records, i.e. never in practice but still exactly. Merged
//! histograms (one per kind at the end of a phase) count in u64.

use hdrhistogram::{Counter, Histogram};
use serde::Serialize;

/// Highest latency the histogram resolves: 100 s. Slower operations are clamped
/// into the top bucket for percentiles; `max_ns` stays exact.
const HIST_MAX_NS: u64 = 100_000_000_000;
/// Records after which the u32 counts are moved into the u64 histogram: no u32
/// bucket can then hold more than this, so none can overflow.
const SPILL_EVERY: u32 = 1 << 31;

pub struct LatHist {
    sigfig: u8,
    small: Histogram<u32>,
    /// Counts moved out of `small` (and merged histograms); allocated on first need.
    big: Option<Histogram<u64>>,
    /// Records in `small` since it was last emptied.
    pending: u32,
    spill_every: u32,
    pub count: u64,
    pub sum_ns: u128,
    pub min_ns: u64,
    pub max_ns: u64,
}

fn histogram<T: Counter>(sigfig: u8) -> Histogram<T> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, sigfig).expect("valid histogram bounds")
}

/// Adds a u32 histogram's counts to a u64 one of the same configuration.
fn add_small(big: &mut Histogram<u64>, small: &Histogram<u32>) {
    for v in small.iter_recorded() {
        // value_iterated_to is the top of the bucket: it lands in the same bucket.
        big.saturating_record_n(v.value_iterated_to(), v.count_at_value() as u64);
    }
}

impl LatHist {
    /// `sigfig`: significant decimal digits (3 = 0.1% error; 2 = 1%, about a tenth of the memory).
    pub fn new(sigfig: u8) -> Self {
        LatHist {
            sigfig,
            small: histogram(sigfig),
            big: None,
            pending: 0,
            spill_every: SPILL_EVERY,
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    /// Forget every recorded value (a statistics reset mid-phase; allocates, so never per operation).
    pub fn clear(&mut self) {
        *self = LatHist::new(self.sigfig);
    }

    /// Bytes of bucket counts one (unmerged) histogram holds: what a worker pays per op kind.
    pub fn counts_bytes(&self) -> usize {
        self.small.distinct_values() * std::mem::size_of::<u32>()
            + self.big.as_ref().map_or(0, |b| b.distinct_values() * std::mem::size_of::<u64>())
    }

    #[inline(always)]
    pub fn record(&mut self, lat_ns: u64) {
        self.small.saturating_record(lat_ns.max(1));
        self.pending += 1;
        if self.pending >= self.spill_every {
            self.spill();
        }
        self.count += 1;
        self.sum_ns += lat_ns as u128;
        self.min_ns = self.min_ns.min(lat_ns);
        self.max_ns = self.max_ns.max(lat_ns);
    }

    /// Moves the u32 counts into the u64 histogram (once per 2^31 records).
    #[cold]
    fn spill(&mut self) {
        let sigfig = self.sigfig;
        add_small(self.big.get_or_insert_with(|| histogram(sigfig)), &self.small);
        self.small.reset();
        self.pending = 0;
    }

    pub fn merge(&mut self, other: &LatHist) {
        let sigfig = self.sigfig;
        let big = self.big.get_or_insert_with(|| histogram(sigfig));
        add_small(big, &other.small);
        if let Some(ob) = &other.big {
            big.add(ob).expect("histograms share bounds");
        }
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    pub fn summary(&self) -> LatSummary {
        if self.count == 0 {
            return LatSummary::default();
        }
        match &self.big {
            None => self.summary_of(&self.small),
            Some(big) if self.small.is_empty() => self.summary_of(big),
            Some(big) => {
                let mut all = big.clone();
                add_small(&mut all, &self.small);
                self.summary_of(&all)
            }
        }
    }

    fn summary_of<T: Counter>(&self, h: &Histogram<T>) -> LatSummary {
        let q = |p: f64| h.value_at_quantile(p).min(self.max_ns);
        LatSummary {
            count: self.count,
            min_ns: self.min_ns,
            mean_ns: self.sum_ns as f64 / self.count as f64,
            stdev_ns: h.stdev(),
            p50_ns: q(0.50),
            p90_ns: q(0.90),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            p9999_ns: q(0.9999),
            max_ns: self.max_ns,
            // Log-spaced buckets (1 us, x2): compact enough to store per trial and
            // to redraw a distribution, and they sum to `count`.
            buckets: h
                .iter_log(1000, 2.0)
                .map(|v| [v.value_iterated_to(), v.count_since_last_iteration()])
                .filter(|b| b[1] > 0)
                .collect(),
            // Every recorded HDR bucket at full precision: what a merge across processes
            // (MPI ranks) sums so that its percentiles are exactly those of one histogram.
            hdr: h.iter_recorded().map(|v| [v.value_iterated_to(), v.count_at_value().as_u64()]).collect(),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct LatSummary {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub stdev_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub p9999_ns: u64,
    pub max_ns: u64,
    /// [upper bound ns, count] of log-spaced buckets; counts add up to `count`.
    pub buckets: Vec<[u64; 2]>,
    /// [highest equivalent value ns, count] of every non-empty HDR bucket (sigfig precision).
    /// Python drops it from single-process results; MPI runs merge it across ranks.
    pub hdr: Vec<[u64; 2]>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_within_error_and_buckets_add_up() {
        let mut h = LatHist::new(3);
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        let s = h.summary();
        assert_eq!(s.count, 10_000);
        assert_eq!(s.min_ns, 1000);
        assert_eq!(s.max_ns, 10_000_000);
        assert!((s.p50_ns as f64 - 5_000_000.0).abs() / 5e6 < 0.002, "p50 {}", s.p50_ns);
        assert!((s.p99_ns as f64 - 9_900_000.0).abs() / 9.9e6 < 0.002, "p99 {}", s.p99_ns);
        assert!((s.mean_ns - 5_000_500.0).abs() < 1.0);
        assert_eq!(s.buckets.iter().map(|b| b[1]).sum::<u64>(), 10_000);
    }

    #[test]
    fn merge_adds_counts_and_keeps_extremes() {
        let mut a = LatHist::new(2);
        let mut b = LatHist::new(2);
        a.record(5);
        b.record(500_000_000_000); // beyond the histogram's range: clamped, max exact
        a.merge(&b);
        let s = a.summary();
        assert_eq!(s.count, 2);
        assert_eq!(s.min_ns, 5);
        assert_eq!(s.max_ns, 500_000_000_000);
    }

    /// Moving u32 counts into the u64 histogram (every 2^31 records for real; every
    /// 1000 here) changes no figure: the summary equals that of a plain u64 histogram.
    #[test]
    fn spilled_counts_give_the_same_summary() {
        let mut a = LatHist::new(2);
        a.spill_every = 1000;
        let mut plain: Histogram<u64> = histogram(2);
        let mut other = LatHist::new(2);
        for i in 0..10_500u64 {
            let v = 1 + (i * 7919) % 3_000_000;
            a.record(v);
            plain.record(v).unwrap();
            if i % 3 == 0 {
                other.record(v * 5);
                plain.record(v * 5).unwrap();
            }
        }
        assert!(a.big.is_some(), "spilled at least once");
        let mut merged = LatHist::new(2);
        merged.merge(&a);
        merged.merge(&other);
        let s = merged.summary();
        assert_eq!(s.count, plain.len());
        for (got, p) in [(s.p50_ns, 0.5), (s.p90_ns, 0.9), (s.p99_ns, 0.99), (s.p9999_ns, 0.9999)] {
            assert_eq!(got, plain.value_at_quantile(p).min(s.max_ns));
        }
        assert_eq!(s.stdev_ns, plain.stdev());
        assert_eq!(s.buckets.iter().map(|b| b[1]).sum::<u64>(), s.count);
        // The unmerged histogram's own summary, with counts on both sides, agrees too.
        assert_eq!(a.summary().p99_ns, {
            let mut only_a: Histogram<u64> = histogram(2);
            for i in 0..10_500u64 {
                only_a.record(1 + (i * 7919) % 3_000_000).unwrap();
            }
            only_a.value_at_quantile(0.99).min(a.max_ns)
        });
    }

    /// A worker keeps one histogram per op kind: at dbench's precision (2 digits) one
    /// costs at most 16 KiB, so 128 clients x 17 kinds stay under 35 MiB.
    #[test]
    fn a_worker_histogram_is_small() {
        assert!(LatHist::new(2).counts_bytes() <= 16 << 10, "{} bytes", LatHist::new(2).counts_bytes());
        assert!(LatHist::new(3).counts_bytes() <= 128 << 10, "{} bytes", LatHist::new(3).counts_bytes());
    }
}
