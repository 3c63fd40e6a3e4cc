//! Latency histograms: an HDR histogram (bounded relative error, fixed memory,
//! no allocation when recording) plus exact count, sum, min and max.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest latency the histogram resolves: 100 s. Slower operations are clamped
/// into the top bucket for percentiles; `max_ns` stays exact.
const HIST_MAX_NS: u64 = 100_000_000_000;

pub struct LatHist {
    h: Histogram<u64>,
    pub count: u64,
    pub sum_ns: u128,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl LatHist {
    /// `sigfig`: significant decimal digits (3 = 0.1% error; 2 = 1%, a quarter of the memory).
    pub fn new(sigfig: u8) -> Self {
        let h = Histogram::new_with_bounds(1, HIST_MAX_NS, sigfig).expect("valid histogram bounds");
        LatHist { h, count: 0, sum_ns: 0, min_ns: u64::MAX, max_ns: 0 }
    }

    #[inline(always)]
    pub fn record(&mut self, lat_ns: u64) {
        self.h.saturating_record(lat_ns.max(1));
        self.count += 1;
        self.sum_ns += lat_ns as u128;
        self.min_ns = self.min_ns.min(lat_ns);
        self.max_ns = self.max_ns.max(lat_ns);
    }

    pub fn merge(&mut self, other: &LatHist) {
        self.h.add(&other.h).expect("histograms share bounds");
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    pub fn summary(&self) -> LatSummary {
        if self.count == 0 {
            return LatSummary::default();
        }
        let q = |p: f64| self.h.value_at_quantile(p).min(self.max_ns);
        LatSummary {
            count: self.count,
            min_ns: self.min_ns,
            mean_ns: self.sum_ns as f64 / self.count as f64,
            stdev_ns: self.h.stdev(),
            p50_ns: q(0.50),
            p90_ns: q(0.90),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            p9999_ns: q(0.9999),
            max_ns: self.max_ns,
            // Log-spaced buckets (1 us, x2): compact enough to store per trial and
            // to redraw a distribution, and they sum to `count`.
            buckets: self
                .h
                .iter_log(1000, 2.0)
                .map(|v| [v.value_iterated_to(), v.count_since_last_iteration()])
                .filter(|b| b[1] > 0)
                .collect(),
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
}
