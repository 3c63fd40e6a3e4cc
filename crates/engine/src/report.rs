//! What a phase reports: totals, per-op-kind counts and latencies, interval
//! samples, CPU use, and workload counters. Serialised to JSON for Python.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::measure::cpu::CpuUsage;
use crate::measure::hist::LatSummary;

#[derive(Clone, Debug, Default, Serialize)]
pub struct Totals {
    pub ops: u64,
    pub bytes: u64,
    pub ops_per_s: f64,
    pub bytes_per_s: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct OpStats {
    pub count: u64,
    pub bytes: u64,
    pub ops_per_s: f64,
    pub bytes_per_s: f64,
    pub lat: LatSummary,
}

/// One sampling interval of the measured window. `t_s` is the interval's end
/// relative to the start of measurement; the last interval may be shorter.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Interval {
    pub t_s: f64,
    pub dur_s: f64,
    pub ops: u64,
    pub bytes: u64,
    pub ops_by_kind: BTreeMap<String, u64>,
    /// Units of work of the workload's own (fileset: transactions) counted in this interval;
    /// absent for workloads whose rates are rates of operations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units: Option<u64>,
    /// Latency of the operations that completed in this interval, per kind (only when the phase
    /// was asked to keep it: fio's latency logs). Counted by completion time on the interval grid,
    /// so `lat[k].count` may differ by a few from `ops_by_kind[k]` (counted when sampled); over the
    /// phase both add up to the kind's count.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub lat: BTreeMap<String, IntervalLat>,
}

/// Latency of one kind's operations in one interval: count, sum, mean, smallest and largest (ns).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct IntervalLat {
    pub count: u64,
    pub sum_ns: u64,
    pub mean_ns: f64,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl IntervalLat {
    pub fn add(&mut self, count: u64, sum_ns: u64, min_ns: u64, max_ns: u64) {
        if count == 0 {
            return;
        }
        if self.count == 0 {
            self.min_ns = min_ns;
        }
        self.count += count;
        self.sum_ns = self.sum_ns.saturating_add(sum_ns);
        self.min_ns = self.min_ns.min(min_ns);
        self.max_ns = self.max_ns.max(max_ns);
        self.mean_ns = self.sum_ns as f64 / self.count as f64;
    }
}

impl Interval {
    pub fn new(t_s: f64, dur_s: f64, kinds: &[&'static str], ops: &[u64], bytes: &[u64]) -> Self {
        Interval {
            t_s,
            dur_s,
            ops: ops.iter().sum(),
            bytes: bytes.iter().sum(),
            ops_by_kind: kinds.iter().zip(ops).filter(|(_, &n)| n > 0).map(|(k, &n)| (k.to_string(), n)).collect(),
            units: None,
            lat: BTreeMap::new(),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct PhaseReport {
    pub phase: String,
    /// True when a stop was requested (Ctrl-C) before the phase finished.
    pub interrupted: bool,
    pub threads: usize,
    pub warmup_s: f64,
    /// Length of the measured window: from the end of warm-up to the last measured op's end.
    pub elapsed_s: f64,
    pub total: Totals,
    pub ops: BTreeMap<String, OpStats>,
    pub intervals: Vec<Interval>,
    pub cpu: CpuUsage,
    /// Workload-specific counts (files created, transactions, ...).
    pub counters: BTreeMap<String, u64>,
    /// Workload-specific details (the access mix as executed, ...).
    pub extra: serde_json::Value,
    pub warnings: Vec<String>,
    /// The measured window on CLOCK_MONOTONIC (ns; 0 when the workload does not use the shared
    /// harness): MPI ranks place their windows on a common clock with it.
    pub window_mono_ns: [u64; 2],
    /// A group phase (several jobs measured together, as fio runs the jobs of one group): each
    /// job's own report by name (`ops`, `total`, ... as a phase has them, and `start_s`/`end_s`);
    /// absent for a phase of one job.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub jobs: BTreeMap<String, serde_json::Value>,
}

impl PhaseReport {
    pub fn new(phase: &str) -> Self {
        PhaseReport { phase: phase.to_string(), extra: serde_json::Value::Null, ..Default::default() }
    }

    /// Leaves op kinds that move no data (fsync) out of `total` and of each
    /// interval's `ops`, so the headline rates count data operations as fio does;
    /// those kinds keep their own entry in `ops` (count, rate, latency) and in
    /// each interval's `ops_by_kind`.
    pub fn totals_without(&mut self, kinds: &[&str]) {
        let (mut ops, mut bytes) = (0u64, 0u64);
        for (name, o) in &self.ops {
            if !kinds.contains(&name.as_str()) {
                ops += o.count;
                bytes += o.bytes;
            }
        }
        let per_s = |x: u64| if self.elapsed_s > 0.0 { x as f64 / self.elapsed_s } else { 0.0 };
        self.total = Totals { ops, bytes, ops_per_s: per_s(ops), bytes_per_s: per_s(bytes) };
        for iv in &mut self.intervals {
            iv.ops = iv.ops_by_kind.iter().filter(|(k, _)| !kinds.contains(&k.as_str())).map(|(_, n)| n).sum();
        }
    }
}
