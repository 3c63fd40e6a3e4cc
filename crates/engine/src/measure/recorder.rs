//! Recording: each worker's `Recorder` (its histograms and counters, no lock and no allocation per
//! operation), the per-thread atomics it publishes its running counts through (cache-line aligned,
//! written by that worker alone with plain relaxed stores), and the coordinator's `Sampler`, which
//! turns readings of them into interval samples that add up exactly to the totals.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};

use super::hist::LatHist;
use super::interval_lat::IntervalLatRecorder;
use crate::report::Interval;

/// The most operation kinds a workload may declare (dbench's op set fits).
pub const MAX_KINDS: usize = 24;

#[repr(align(128))]
pub(super) struct ThreadCounters {
    pub(super) ops: [AtomicU64; MAX_KINDS],
    pub(super) bytes: [AtomicU64; MAX_KINDS],
    /// Summed latency (ns) of the operations counted in `ops`, per kind (steady state on latency).
    pub(super) lat_ns: [AtomicU64; MAX_KINDS],
    /// Units of work counted with `Recorder::count_unit` (fileset: transactions).
    pub(super) units: AtomicU64,
    pub(super) finished: AtomicBool,
    /// When the worker restarted its measurement (Recorder::restart_measure; 0: never).
    pub(super) restart_ns: AtomicU64,
}

impl ThreadCounters {
    pub(super) fn new() -> Self {
        ThreadCounters {
            ops: std::array::from_fn(|_| AtomicU64::new(0)),
            bytes: std::array::from_fn(|_| AtomicU64::new(0)),
            lat_ns: std::array::from_fn(|_| AtomicU64::new(0)),
            units: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            restart_ns: AtomicU64::new(0),
        }
    }
}

/// A worker's view of the phase: where the measured window is, and where its
/// measurements go. One per worker thread, owned by it.
pub struct Recorder<'a> {
    pub tid: usize,
    pub measure_start_ns: u64,
    pub deadline_ns: u64,
    pub(super) stop: &'a AtomicBool,
    pub(super) shared: &'a ThreadCounters,
    pub(super) hists: Vec<LatHist>,
    pub(super) ops: [u64; MAX_KINDS],
    pub(super) bytes: [u64; MAX_KINDS],
    pub(super) lat_ns: [u64; MAX_KINDS],
    pub(super) units: u64,
    pub(super) last_end_ns: u64,
    /// Latency per sample interval, when the member asked for it (GroupMember::interval_lat).
    pub(super) interval_lat: Option<IntervalLatRecorder<MAX_KINDS>>,
    /// False when the phase counts its operations without timing each one (`run_threads` with
    /// sigfig 0, a family's `latency = false`): `stamp` then reads no clock and `record` keeps no
    /// latency, and the phase's end is its workers' end.
    pub(super) timed: bool,
}

impl<'a> Recorder<'a> {
    /// Count one unit of work that started at `t0`, for workloads whose headline is a rate of
    /// something other than operations (fileset: transactions, each made of several operations).
    /// Call it when the unit is done; units that started during warm-up are not counted. The
    /// interval samples then carry `units`, so the headline's own series can be judged.
    #[inline(always)]
    pub fn count_unit(&mut self, t0: u64) {
        if t0 >= self.measure_start_ns {
            self.units += 1;
            self.shared.units.store(self.units, Relaxed);
        }
    }

    /// The time to stamp an operation's start or end with: the clock (CLOCK_MONOTONIC) when the
    /// phase times its operations, else the start of the measured window, with no clock read (a
    /// phase of fixed work, with no warm-up, whose operations are counted and whose time is whole).
    #[inline(always)]
    pub fn stamp(&self) -> u64 {
        if self.timed {
            crate::measure::clock::now_ns()
        } else {
            self.measure_start_ns
        }
    }

    /// Record one operation that started at `t0` and ended at `t1`. Operations
    /// that started during warm-up are not measured. In a phase that does not time its
    /// operations, the operation and its bytes are counted and its latency is not kept.
    #[inline(always)]
    pub fn record(&mut self, kind: usize, bytes: u64, t0: u64, t1: u64) {
        if !self.timed {
            return self.record_untimed(kind, 1, bytes, t0, t1);
        }
        if t0 >= self.measure_start_ns {
            let lat = t1.saturating_sub(t0);
            self.hists[kind].record(lat);
            self.ops[kind] += 1;
            self.bytes[kind] += bytes;
            self.lat_ns[kind] = self.lat_ns[kind].wrapping_add(lat);
            // Single writer: a relaxed store is a plain move, no locked instruction.
            self.shared.ops[kind].store(self.ops[kind], Relaxed);
            self.shared.bytes[kind].store(self.bytes[kind], Relaxed);
            self.shared.lat_ns[kind].store(self.lat_ns[kind], Relaxed);
            if let Some(il) = &mut self.interval_lat {
                il.add(kind, lat, t1);
            }
            self.last_end_ns = t1;
        }
    }

    /// `n` operations of `bytes` in all, moved between `t0` and `t1`, counted without a latency
    /// each: for a workload that times only whole passes, as iozone does unless asked (-Q). The
    /// kind's histogram stays empty, so its latency reads as not measured.
    #[inline(always)]
    pub fn record_untimed(&mut self, kind: usize, n: u64, bytes: u64, t0: u64, t1: u64) {
        if t0 >= self.measure_start_ns && n > 0 {
            self.ops[kind] += n;
            self.bytes[kind] += bytes;
            self.shared.ops[kind].store(self.ops[kind], Relaxed);
            self.shared.bytes[kind].store(self.bytes[kind], Relaxed);
            self.last_end_ns = self.last_end_ns.max(t1);
        }
    }

    /// True once the worker should stop issuing: past the deadline or asked to stop.
    #[inline(always)]
    pub fn should_stop(&self, now: u64) -> bool {
        now >= self.deadline_ns || self.stop.load(Relaxed)
    }

    /// Whether the phase times its operations one by one (false: counted only, `Recorder::stamp`).
    #[inline(always)]
    pub fn timed(&self) -> bool {
        self.timed
    }

    /// True when a stop was requested from outside (Ctrl-C).
    #[inline(always)]
    pub fn interrupted(&self) -> bool {
        self.stop.load(Relaxed)
    }

    #[inline(always)]
    pub fn measuring(&self, now: u64) -> bool {
        now >= self.measure_start_ns
    }

    /// fio's reset_all_stats in the middle of a run (latency_target's final window): everything this
    /// worker measured so far is forgotten and its measurement starts again at `now`; the phase's
    /// window, samples and CPU use then start there too. Only for a phase of one worker (the phase
    /// has one window); never per operation (the histograms are made anew).
    #[cold]
    pub fn restart_measure(&mut self, now: u64) {
        for h in &mut self.hists {
            h.clear();
        }
        self.ops = [0; MAX_KINDS];
        self.bytes = [0; MAX_KINDS];
        self.lat_ns = [0; MAX_KINDS];
        self.units = 0;
        self.last_end_ns = 0;
        for k in 0..MAX_KINDS {
            self.shared.ops[k].store(0, Relaxed);
            self.shared.bytes[k].store(0, Relaxed);
            self.shared.lat_ns[k].store(0, Relaxed);
        }
        self.shared.units.store(0, Relaxed);
        self.measure_start_ns = now;
        self.shared.restart_ns.store(now, SeqCst);
    }

    /// Bytes this worker has measured so far, all kinds.
    pub fn measured_bytes(&self) -> u64 {
        self.bytes.iter().sum()
    }
}

/// Turns cumulative counter readings into interval samples.
pub(super) struct Sampler<'k> {
    pub(super) kinds: &'k [&'static str],
    pub(super) measure_start: u64,
    pub(super) prev_t: u64,
    pub(super) prev_ops: Vec<u64>,
    pub(super) prev_bytes: Vec<u64>,
    pub(super) prev_units: u64,
    pub(super) intervals: Vec<Interval>,
}

impl<'k> Sampler<'k> {
    pub(super) fn new(kinds: &'k [&'static str], measure_start: u64) -> Self {
        let nk = kinds.len();
        Sampler {
            kinds,
            measure_start,
            prev_t: measure_start,
            prev_ops: vec![0; nk],
            prev_bytes: vec![0; nk],
            prev_units: 0,
            intervals: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, t: u64, ops: &[u64], bytes: &[u64], units: u64) {
        let nk = self.kinds.len();
        let d_ops: Vec<u64> = (0..nk).map(|k| ops[k] - self.prev_ops[k]).collect();
        let d_bytes: Vec<u64> = (0..nk).map(|k| bytes[k] - self.prev_bytes[k]).collect();
        self.intervals.push(Interval::new(
            t.saturating_sub(self.measure_start) as f64 / 1e9,
            t.saturating_sub(self.prev_t) as f64 / 1e9,
            self.kinds,
            &d_ops,
            &d_bytes,
        ));
        self.intervals.last_mut().expect("just pushed").units = Some(units - self.prev_units);
        self.prev_units = units;
        self.prev_ops.copy_from_slice(ops);
        self.prev_bytes.copy_from_slice(bytes);
        self.prev_t = t;
    }
}

pub(super) fn sum_units(all: &[ThreadCounters]) -> u64 {
    all.iter().map(|c| c.units.load(Relaxed)).sum()
}

pub(super) fn sum_counters(all: &[ThreadCounters], nk: usize) -> (Vec<u64>, Vec<u64>) {
    let mut ops = vec![0u64; nk];
    let mut bytes = vec![0u64; nk];
    for c in all {
        for k in 0..nk {
            ops[k] += c.ops[k].load(Relaxed);
            bytes[k] += c.bytes[k].load(Relaxed);
        }
    }
    (ops, bytes)
}
