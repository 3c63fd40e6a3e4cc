//! The timed multi-thread harness every workload runs its phases in.
//!
//! Workers own their histograms and counters (no lock, no allocation per
//! operation). Each worker publishes its running op/byte counts through its own
//! cache-line-aligned atomics, written with plain relaxed stores by that worker
//! alone, so the coordinator (the calling thread) can sample them every interval
//! without slowing anyone down. Interval samples are deltas of those counters,
//! so they add up exactly to the totals.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::{Condvar, Mutex};

use super::clock::{now_ns, park_until_ns};
use super::cpu;
use super::hist::LatHist;
use super::interval_lat::{attach, IntervalLatRecorder, LatCell};
use crate::error::{EngineError, Result};
use crate::report::{Interval, OpStats, PhaseReport, Totals};

/// The start line of a phase: workers arrive, the coordinator releases them together.
/// Unlike std's `Barrier` its count is not fixed in advance, so when thread k of n
/// cannot be started the coordinator still releases the k that were (they then stop
/// at once) instead of leaving them waiting for ever. Used once per thread per phase,
/// never on the measured path.
pub struct StartGate {
    state: Mutex<(usize, bool)>, // (arrived, released)
    cv: Condvar,
}

impl Default for StartGate {
    fn default() -> Self {
        Self::new()
    }
}

impl StartGate {
    pub fn new() -> Self {
        StartGate { state: Mutex::new((0, false)), cv: Condvar::new() }
    }

    pub fn arrive_and_wait(&self) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        g.0 += 1;
        self.cv.notify_all();
        while !g.1 {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits until `n` threads have arrived (done with their setup), without releasing them.
    pub fn wait_arrived(&self, n: usize) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while g.0 < n {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub fn release(&self) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        g.1 = true;
        self.cv.notify_all();
    }

    pub fn release_when_arrived(&self, n: usize) {
        self.wait_arrived(n);
        self.release();
    }
}

/// The most operation kinds a workload may declare (dbench's op set fits).
pub const MAX_KINDS: usize = 24;

/// Shared between the engine and whoever drives it (Python's progress bar and
/// Ctrl-C handler): a stop flag and read-only progress published by the coordinator.
#[derive(Default)]
pub struct Control {
    stop: AtomicBool,
    state: AtomicU8,
    phase_start_ns: AtomicU64,
    warmup_ns: AtomicU64,
    duration_ns: AtomicU64,
    ops: AtomicU64,
    bytes: AtomicU64,
    work_total: AtomicU64,
    hold: StartHold,
}

/// A hold at the start of a phase's measured work, for a caller that must line up with others
/// first (each rank of an MPI job waits at a barrier). Armed before the phase, it stops the
/// phase's first `run_threads` once every worker is set up (files open, buffers filled) and
/// before the clock starts, until `release_start`. Opening files and the like then happen before
/// the barrier, and the ranks start their measured work together when it releases them.
#[derive(Default)]
struct StartHold {
    armed: AtomicBool,
    holding: AtomicBool,
    go: Mutex<bool>,
    cv: Condvar,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    Idle = 0,
    Preparing = 1,
    WarmingUp = 2,
    Measuring = 3,
}

#[derive(Clone, Debug)]
pub struct Progress {
    pub state: &'static str,
    /// Seconds since the phase started (warm-up included).
    pub elapsed_s: f64,
    pub warmup_s: f64,
    /// Measured duration to come, or 0 for a fixed amount of work.
    pub duration_s: f64,
    /// Operations and bytes measured so far (warm-up excluded).
    pub ops: u64,
    pub bytes: u64,
    /// Operations the phase will do in all, when known in advance (else 0).
    pub work_total: u64,
}

impl Control {
    pub fn new() -> Self {
        Self::default()
    }
    /// Ask the running phase to stop; it returns within about a second, marked interrupted.
    pub fn request_stop(&self) {
        self.stop.store(true, SeqCst);
    }
    pub fn stop_requested(&self) -> bool {
        self.stop.load(Relaxed)
    }
    /// Clear a previous stop so the session can run another phase.
    pub fn reset(&self) {
        self.stop.store(false, SeqCst);
    }
    pub fn stop_flag(&self) -> &AtomicBool {
        &self.stop
    }
    pub fn set_state(&self, s: RunState) {
        self.state.store(s as u8, Relaxed);
    }
    pub fn begin(&self, state: RunState, warmup_ns: u64, duration_ns: u64, work_total: u64) {
        self.phase_start_ns.store(now_ns(), Relaxed);
        self.warmup_ns.store(warmup_ns, Relaxed);
        self.duration_ns.store(duration_ns, Relaxed);
        self.work_total.store(work_total, Relaxed);
        self.ops.store(0, Relaxed);
        self.bytes.store(0, Relaxed);
        self.set_state(state);
    }
    pub fn publish(&self, ops: u64, bytes: u64) {
        self.ops.store(ops, Relaxed);
        self.bytes.store(bytes, Relaxed);
    }
    /// Arm the start hold for the next phase (see `StartHold`).
    pub fn arm_start_hold(&self) {
        *self.hold.go.lock().unwrap_or_else(|p| p.into_inner()) = false;
        self.hold.armed.store(true, SeqCst);
    }
    /// Disarm it: a phase that never reached measured work leaves it armed otherwise.
    pub fn disarm_start_hold(&self) {
        self.hold.armed.store(false, SeqCst);
    }
    /// True while the phase waits at the start hold, its workers ready.
    pub fn holding(&self) -> bool {
        self.hold.holding.load(SeqCst)
    }
    /// Let a held phase start (or one about to be held pass straight through).
    pub fn release_start(&self) {
        *self.hold.go.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.hold.cv.notify_all();
    }
    /// Called by the coordinator once the workers are ready: waits for `release_start` if the
    /// hold is armed (once: it disarms itself), or for a stop request.
    fn wait_at_start_hold(&self) {
        let h = &self.hold;
        if !h.armed.swap(false, SeqCst) {
            return;
        }
        let mut go = h.go.lock().unwrap_or_else(|p| p.into_inner());
        h.holding.store(true, SeqCst);
        while !*go && !self.stop_requested() {
            go = h.cv.wait_timeout(go, std::time::Duration::from_millis(50)).unwrap_or_else(|p| p.into_inner()).0;
        }
        *go = false;
        h.holding.store(false, SeqCst);
    }
    pub fn progress(&self) -> Progress {
        let state = match self.state.load(Relaxed) {
            1 => "preparing",
            2 => "warmup",
            3 => "measuring",
            _ => "idle",
        };
        let start = self.phase_start_ns.load(Relaxed);
        Progress {
            state,
            elapsed_s: if start == 0 { 0.0 } else { now_ns().saturating_sub(start) as f64 / 1e9 },
            warmup_s: self.warmup_ns.load(Relaxed) as f64 / 1e9,
            duration_s: self.duration_ns.load(Relaxed) as f64 / 1e9,
            ops: self.ops.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            work_total: self.work_total.load(Relaxed),
        }
    }
}

/// When a phase measures: `warmup_ns` of unmeasured load first, then either
/// `duration_ns` of measurement or (None) until the workers run out of work.
#[derive(Clone, Copy, Debug)]
pub struct PhaseTiming {
    pub warmup_ns: u64,
    pub duration_ns: Option<u64>,
    pub interval_ns: u64,
}

#[repr(align(128))]
struct ThreadCounters {
    ops: [AtomicU64; MAX_KINDS],
    bytes: [AtomicU64; MAX_KINDS],
    /// Summed latency (ns) of the operations counted in `ops`, per kind (steady state on latency).
    lat_ns: [AtomicU64; MAX_KINDS],
    /// Units of work counted with `Recorder::count_unit` (fileset: transactions).
    units: AtomicU64,
    finished: AtomicBool,
    /// When the worker restarted its measurement (Recorder::restart_measure; 0: never).
    restart_ns: AtomicU64,
}

impl ThreadCounters {
    fn new() -> Self {
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
    stop: &'a AtomicBool,
    shared: &'a ThreadCounters,
    hists: Vec<LatHist>,
    ops: [u64; MAX_KINDS],
    bytes: [u64; MAX_KINDS],
    lat_ns: [u64; MAX_KINDS],
    units: u64,
    last_end_ns: u64,
    /// Latency per sample interval, when the member asked for it (GroupMember::interval_lat).
    interval_lat: Option<IntervalLatRecorder<MAX_KINDS>>,
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

    /// Record one operation that started at `t0` and ended at `t1`. Operations
    /// that started during warm-up are not measured.
    #[inline(always)]
    pub fn record(&mut self, kind: usize, bytes: u64, t0: u64, t1: u64) {
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
struct Sampler<'k> {
    kinds: &'k [&'static str],
    measure_start: u64,
    prev_t: u64,
    prev_ops: Vec<u64>,
    prev_bytes: Vec<u64>,
    prev_units: u64,
    intervals: Vec<Interval>,
}

impl<'k> Sampler<'k> {
    fn new(kinds: &'k [&'static str], measure_start: u64) -> Self {
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

    fn push(&mut self, t: u64, ops: &[u64], bytes: &[u64], units: u64) {
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

fn sum_units(all: &[ThreadCounters]) -> u64 {
    all.iter().map(|c| c.units.load(Relaxed)).sum()
}

fn sum_counters(all: &[ThreadCounters], nk: usize) -> (Vec<u64>, Vec<u64>) {
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

/// Run `nthreads` workers of `work` together, measure them, and build the phase report.
///
/// `setup(tid)` runs in each worker thread before the common start (allocate
/// buffers, open rings): its cost is outside the measured window. If any setup
/// fails, no worker runs and the first error is returned.
///
/// `kinds` names the operation kinds (indices into it are what workers pass to
/// `Recorder::record`); `sigfig` sets histogram precision; `work_total` is the
/// expected number of operations for progress (0 when unknown). Each worker
/// returns its own result `T` (workload counters), handed back in thread order.
#[allow(clippy::too_many_arguments)]
pub fn run_threads<S, T, Setup, F>(
    phase: &str,
    nthreads: usize,
    timing: PhaseTiming,
    ctl: &Control,
    kinds: &[&'static str],
    sigfig: u8,
    work_total: u64,
    setup: Setup,
    work: F,
) -> Result<(PhaseReport, Vec<T>)>
where
    T: Send,
    Setup: Fn(usize) -> Result<S> + Sync,
    F: Fn(&mut S, &mut Recorder) -> Result<T> + Sync,
{
    let one = [GroupMember::new(nthreads, timing.warmup_ns, timing.duration_ns)];
    run_group(phase, &one, timing.interval_ns, ctl, kinds, sigfig, work_total, setup, work)
        .map(|(report, _, results)| (report, results))
}

/// One member (a job) of a group phase: its worker threads, its own warm-up and its own measured
/// duration (None: until its workers run out of work).
#[derive(Clone, Copy, Debug)]
pub struct GroupMember {
    pub threads: usize,
    pub warmup_ns: u64,
    pub duration_ns: Option<u64>,
    /// Its workers start this long after the phase's start (fio's startdelay) ...
    pub start_delay_ns: u64,
    /// ... and not before every worker of this member (an index) is done (fio's wait_for).
    pub wait_for: Option<usize>,
    /// Whom the end of each of its workers stops (fio's exitall with exit_what).
    pub exit: Exit,
    /// Its reporting group (fio's groupid: a new one at each stonewall or new_group), for Exit::Group.
    pub report_group: u32,
    /// Stop when its rate is steady (fio's steadystate), judged per worker or per reporting group.
    pub steady: Option<Steady>,
    /// Keep the latency of its operations per sample interval (`Interval::lat`: fio's latency logs).
    pub interval_lat: bool,
}

impl GroupMember {
    /// A member that starts with the phase and stops no one.
    pub fn new(threads: usize, warmup_ns: u64, duration_ns: Option<u64>) -> GroupMember {
        GroupMember {
            threads,
            warmup_ns,
            duration_ns,
            start_delay_ns: 0,
            wait_for: None,
            exit: Exit::None,
            report_group: 0,
            steady: None,
            interval_lat: false,
        }
    }
}

/// fio's steady-state detection (steadystate.c): every `interval_ns` the coordinator takes the
/// I/O rate (operations or bytes per second of the kinds in `kinds_mask`) of a unit since the last
/// check (with `lat`, their mean latency: the latency summed over those operations over their
/// count); after `ramp_ns` (and one interval more) it keeps the last `dur_ns / interval_ns` of them.
/// Once the window is full, each check computes the criterion over it: the least-squares slope of
/// the values against their index (`slope`), or the largest distance of a value from their mean;
/// with `pct`, as a percentage of the mean. Below `limit` (the slope's absolute value), the unit is
/// steady and its workers stop. A unit is one worker (fio: one clone), or with `group` every worker
/// of the members of the reporting group (fio's group_reporting).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Steady {
    pub bw: bool,
    /// Judge the mean latency of the operations completed since the last check (fio's `lat` and
    /// `lat_slope`: the clat mean over the check interval, in ns) instead of a rate.
    pub lat: bool,
    pub slope: bool,
    pub pct: bool,
    pub limit: f64,
    pub dur_ns: u64,
    pub ramp_ns: u64,
    pub interval_ns: u64,
    pub group: bool,
    pub kinds_mask: u32,
}

/// One unit's steady-state bookkeeping, kept by the coordinator (never on a worker's path).
struct SteadyUnit {
    spec: Steady,
    threads: Vec<usize>,
    members: Vec<usize>,
    next: u64,
    prev: Option<(u64, u64, u64)>,
    ramp_end: Option<u64>,
    window: std::collections::VecDeque<f64>,
    attained: bool,
}

impl SteadyUnit {
    fn new(spec: Steady, threads: Vec<usize>, members: Vec<usize>) -> SteadyUnit {
        let n = (spec.dur_ns / spec.interval_ns.max(1)) as usize;
        SteadyUnit {
            spec,
            threads,
            members,
            next: 0,
            prev: None,
            ramp_end: None,
            window: std::collections::VecDeque::with_capacity(n),
            attained: false,
        }
    }

    /// One check, when its time has come: true when the unit has just become steady.
    fn check(&mut self, now: u64, counters: &[ThreadCounters], started_at: &[AtomicU64], nk: usize) -> bool {
        // The unit's clock starts when its first member starts (fio: the job's epoch).
        let start = self.members.iter().map(|&m| started_at[m].load(SeqCst)).filter(|&t| t != 0).min();
        let Some(start) = start else { return false };
        if self.next == 0 {
            // fio begins recording one check interval after the ramp time (at once without one).
            let extra = if self.spec.ramp_ns > 0 { self.spec.interval_ns } else { 0 };
            self.next = start + self.spec.interval_ns;
            self.ramp_end = Some(start + self.spec.ramp_ns + extra);
        }
        if now < self.next {
            return false;
        }
        self.next = now + self.spec.interval_ns;
        let (mut ops, mut bytes, mut lat) = (0u64, 0u64, 0u64);
        for &t in &self.threads {
            for k in 0..nk {
                if self.spec.kinds_mask & (1 << k) != 0 {
                    // Read without a lock: an operation being recorded right now may count in
                    // this check's count and the next check's sum (one operation in thousands).
                    lat = lat.wrapping_add(counters[t].lat_ns[k].load(Relaxed));
                    ops += counters[t].ops[k].load(Relaxed);
                    bytes += counters[t].bytes[k].load(Relaxed);
                }
            }
        }
        let value = if self.spec.bw { bytes } else { ops };
        let prev = self.prev.replace((now, value, lat));
        let Some((t0, v0, l0)) = prev else { return false };
        if now < self.ramp_end.unwrap_or(0) || now <= t0 {
            return false;
        }
        let n = (self.spec.dur_ns / self.spec.interval_ns.max(1)) as usize;
        if self.window.len() == n {
            self.window.pop_front();
        }
        if self.spec.lat {
            // fio: the clat sum over the samples since the last check, over their count (0 without any).
            let n_ops = value - v0;
            self.window.push_back(lat.wrapping_sub(l0).checked_div(n_ops).map_or(0.0, |m| m as f64));
        } else {
            // Per second (fio scales by the check's actual length the same way).
            self.window.push_back((value - v0) as f64 * 1e9 / (now - t0) as f64);
        }
        if self.window.len() < n || n < 2 {
            return false;
        }
        if self.criterion() < self.spec.limit {
            self.attained = true;
            return true;
        }
        false
    }

    /// The criterion over a full window (fio's steadystate_slope / steadystate_deviation).
    fn criterion(&self) -> f64 {
        let n = self.window.len() as f64;
        let mean = self.window.iter().sum::<f64>() / n;
        let value = if self.spec.slope {
            let sum_x = n * (n - 1.0) / 2.0;
            let sum_x_sq = (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
            let sum_y: f64 = self.window.iter().sum();
            let sum_xy: f64 = self.window.iter().enumerate().map(|(i, y)| i as f64 * y).sum();
            ((sum_xy - sum_x * sum_y / n) / (sum_x_sq - sum_x * sum_x / n)).abs()
        } else {
            self.window.iter().map(|y| (y - mean).abs()).fold(0.0, f64::max)
        };
        if self.spec.pct {
            if mean > 0.0 {
                100.0 * value / mean
            } else {
                f64::INFINITY
            }
        } else {
            value
        }
    }
}

/// What the end of a member's worker stops in its phase, as fio's exitall does when a job (a
/// clone) of it ends: nothing; the members of its reporting group; every member that has started
/// (exit_what=stonewall); or every member, started or not (exit_what=all).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    None,
    Group,
    Stonewall,
    All,
}

/// What one member of a group phase did, from its own threads' counters and histograms: its
/// report (ops, totals, latencies and interval samples, the samples on the phase's clock), and
/// when it ran: from the first of its workers starting work (after its warm-up) to the end of its
/// last measured operation, in seconds from the phase's measured start.
#[derive(Clone, Debug)]
pub struct MemberReport {
    pub report: PhaseReport,
    pub start_s: f64,
    pub end_s: f64,
}

/// Run several heterogeneous members together in one measured phase, as fio runs the jobs of one
/// group: every thread of every member is set up first, then all are released at once (one start
/// gate), each member measures on its own warm-up and deadline, and the phase ends when the last
/// has finished. Thread ids are global: member m owns the `members[m].threads` ids after those of
/// the members before it. Workers record into their own counters as with `run_threads` (nothing is
/// shared per operation); each member's report is merged from its threads after the phase. The
/// phase report covers every member, from the earliest member's measured start. With one member
/// this is `run_threads`, and no member reports are made.
#[allow(clippy::too_many_arguments)]
pub fn run_group<S, T, Setup, F>(
    phase: &str,
    members: &[GroupMember],
    interval_ns: u64,
    ctl: &Control,
    kinds: &[&'static str],
    sigfig: u8,
    work_total: u64,
    setup: Setup,
    work: F,
) -> Result<(PhaseReport, Vec<MemberReport>, Vec<T>)>
where
    T: Send,
    Setup: Fn(usize) -> Result<S> + Sync,
    F: Fn(&mut S, &mut Recorder) -> Result<T> + Sync,
{
    assert!(kinds.len() <= MAX_KINDS, "too many op kinds");
    assert!(!members.is_empty(), "a phase has at least one member");
    let nk = kinds.len();
    // Member of each thread, and each member's range of thread ids.
    let mut member_of = Vec::new();
    let mut ranges = Vec::with_capacity(members.len());
    for (m, g) in members.iter().enumerate() {
        ranges.push(member_of.len()..member_of.len() + g.threads);
        member_of.extend(std::iter::repeat_n(m, g.threads));
    }
    let nthreads = member_of.len();
    let grouped = members.len() > 1;
    let warmup_ns = members.iter().map(|g| g.warmup_ns).min().unwrap_or(0);
    // Progress: the longest duration, or none (fixed work) when some member has a fixed amount.
    let duration_ns =
        members.iter().map(|g| g.duration_ns).collect::<Option<Vec<u64>>>().map(|d| d.into_iter().max().unwrap_or(0));
    let counters: Vec<ThreadCounters> = (0..nthreads).map(|_| ThreadCounters::new()).collect();
    let gate = StartGate::new();
    let start_at = AtomicU64::new(0);
    let finished = AtomicUsize::new(0);
    // Workers watch their own `halts` flag, not the caller's flag: the coordinator copies a
    // requested stop into every one, a worker that fails sets every one so the others do not run
    // on to the deadline, and a member's exit (fio's exitall) sets those it stops.
    let halts: Vec<AtomicBool> = (0..nthreads).map(|_| AtomicBool::new(false)).collect();
    let halt_all = |halts: &[AtomicBool]| {
        for h in halts {
            h.store(true, SeqCst);
        }
    };
    // Per member: workers done, the latest end of their work, whether it has started, when (its
    // own start: the phase's, later by its start delay or the end of the member it waits for).
    let done_threads: Vec<AtomicUsize> = members.iter().map(|_| AtomicUsize::new(0)).collect();
    let done_at: Vec<AtomicU64> = members.iter().map(|_| AtomicU64::new(0)).collect();
    let started_at: Vec<AtomicU64> = members.iter().map(|_| AtomicU64::new(0)).collect();
    let mut steady_units: Vec<SteadyUnit> = Vec::new();
    for (m, g) in members.iter().enumerate() {
        let Some(spec) = g.steady else { continue };
        if spec.group {
            if let Some(u) = steady_units
                .iter_mut()
                .find(|u| u.spec.group && u.members.iter().any(|&o| members[o].report_group == g.report_group))
            {
                u.threads.extend(ranges[m].clone());
                u.members.push(m);
                continue;
            }
            steady_units.push(SteadyUnit::new(spec, ranges[m].clone().collect(), vec![m]));
        } else {
            for t in ranges[m].clone() {
                steady_units.push(SteadyUnit::new(spec, vec![t], vec![m]));
            }
        }
    }
    let setup_failed = AtomicBool::new(false);
    // Saturating: a duration too long to add to the clock means "no deadline", never a deadline that
    // wrapped round to the past (which measured one operation and called the phase done).
    let deadline_of = |start: u64, g: &GroupMember| match g.duration_ns {
        Some(d) => start.saturating_add(g.warmup_ns).saturating_add(d),
        None => u64::MAX,
    };
    ctl.begin(
        if warmup_ns > 0 { RunState::WarmingUp } else { RunState::Measuring },
        warmup_ns,
        duration_ns.unwrap_or(0),
        work_total,
    );

    // The coordinator sleeps between polls; each worker wakes it when it finishes, so that the
    // phase returns as soon as the work is done, not at the next poll (up to 50 ms later: a grid
    // of many short phases, or one short run, paid it in wall time).
    let coordinator = std::thread::current();
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(nthreads);
        let mut spawn_err: Option<(usize, std::io::Error)> = None;
        for tid in 0..nthreads {
            let mi = member_of[tid];
            let member = &members[mi];
            let (counters, gate, start_at, finished, work, setup, halts, setup_failed, coordinator, deadline_of) = (
                &counters,
                &gate,
                &start_at,
                &finished,
                &work,
                &setup,
                &halts[..],
                &setup_failed,
                &coordinator,
                &deadline_of,
            );
            let (done_threads, done_at, started_at, halt_all, ranges) =
                (&done_threads, &done_at, &started_at, &halt_all, &ranges);
            let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
                let shared = &counters[tid];
                let hists = (0..nk).map(|_| LatHist::new(sigfig)).collect();
                let state = setup(tid);
                if state.is_err() {
                    setup_failed.store(true, SeqCst);
                }
                gate.arrive_and_wait();
                let halt = &halts[tid];
                let start = member_start(start_at.load(SeqCst), member, members, halt, done_threads, done_at);
                if let Some(t) = start {
                    started_at[mi].store(t, SeqCst);
                }
                let begun = start.is_some();
                let start = start.unwrap_or(0);
                let interval_lat = member.interval_lat.then(|| {
                    let expected = duration_ns.map_or(64, |d| (d / interval_ns.max(1)) as usize + 2);
                    IntervalLatRecorder::new(start_at.load(SeqCst).saturating_add(warmup_ns), interval_ns, expected)
                });
                let mut rec = Recorder {
                    tid,
                    measure_start_ns: start.saturating_add(member.warmup_ns),
                    deadline_ns: deadline_of(start, member),
                    stop: halt,
                    shared,
                    hists,
                    ops: [0; MAX_KINDS],
                    bytes: [0; MAX_KINDS],
                    lat_ns: [0; MAX_KINDS],
                    units: 0,
                    last_end_ns: 0,
                    interval_lat,
                };
                let work_start = now_ns();
                let out: Result<Option<T>> = match state {
                    // Stopped before it started (a stop, another member's exit): no work.
                    Ok(_) if !begun => Ok(None),
                    Ok(mut st) if !setup_failed.load(SeqCst) => work(&mut st, &mut rec).map(Some),
                    Ok(_) => Ok(None),
                    Err(e) => Err(e),
                };
                let work_end = now_ns();
                if out.is_err() {
                    halt_all(halts);
                }
                done_at[mi].fetch_max(work_end, SeqCst);
                done_threads[mi].fetch_add(1, SeqCst);
                // fio's exitall: the end of this worker (a clone of the job) stops others; a worker
                // stopped before it started never ran, so it stops no one.
                for (k, g) in members.iter().enumerate().filter(|_| begun) {
                    let stop = match member.exit {
                        Exit::None => false,
                        Exit::Group => g.report_group == member.report_group,
                        Exit::Stonewall => started_at[k].load(SeqCst) != 0,
                        Exit::All => true,
                    };
                    if stop {
                        for h in &halts[ranges[k].clone()] {
                            h.store(true, SeqCst);
                        }
                    }
                }
                shared.finished.store(true, SeqCst);
                finished.fetch_add(1, SeqCst);
                coordinator.unpark();
                let cells = rec.interval_lat.take().map(IntervalLatRecorder::<MAX_KINDS>::finish).unwrap_or_default();
                (out, rec.hists, rec.last_end_ns, work_start, work_end, cells)
            });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // The system refused a thread: the ones started skip their work and the
                    // phase fails with the reason, rather than panicking or waiting for ever.
                    setup_failed.store(true, SeqCst);
                    halt_all(halts);
                    spawn_err = Some((tid, e));
                    break;
                }
            }
        }
        let started = handles.len();

        // Coordinator: release the workers together, then sample. With no warm-up the
        // measurement starts at the release, so the CPU snapshot (getrusage and /proc/stat,
        // tens of microseconds of work that also stirs the caches) is taken before it, once
        // every worker has finished its setup: taken after, it ran beside the first
        // operations and slowed a short phase's start (iozone's first cells ran up to a
        // third slower than the same cells run later).
        gate.wait_arrived(started);
        ctl.wait_at_start_hold();
        let cpu_at_release = (warmup_ns == 0).then(cpu::snapshot);
        let start = now_ns();
        start_at.store(start, SeqCst);
        // A member with no start delay and nothing to wait for starts with the phase: it counts as
        // started (fio's exit_what=stonewall stops it) from the release, not from the moment its
        // thread first runs, which on a busy machine can come after a short member has finished.
        for (m, g) in members.iter().enumerate() {
            if g.start_delay_ns == 0 && g.wait_for.is_none() {
                started_at[m].store(start, SeqCst);
            }
        }
        gate.release();
        let mut measure_start = start.saturating_add(warmup_ns);
        // A worker that restarted its measurement (Recorder::restart_measure): the latest restart.
        let restarted = || counters.iter().map(|c| c.restart_ns.load(SeqCst)).max().unwrap_or(0);
        let all_done = || finished.load(SeqCst) == started;
        // Poll often enough for a lively progress bar and a prompt stop.
        let tick = 50_000_000u64.min(interval_ns.max(1));
        let watch_stop = || {
            if ctl.stop_requested() {
                halt_all(&halts[..]);
            }
        };
        while !all_done() && now_ns() < measure_start {
            watch_stop();
            park_until_ns((now_ns() + tick).min(measure_start));
        }
        ctl.set_state(RunState::Measuring);
        let mut cpu0 = cpu_at_release.unwrap_or_else(cpu::snapshot);
        let mut sampler = Sampler::new(kinds, measure_start);
        // Each member's own samples, on the phase's clock (group phases only).
        let mut member_samplers: Vec<Sampler> =
            if grouped { members.iter().map(|_| Sampler::new(kinds, measure_start)).collect() } else { Vec::new() };
        let mut next = measure_start + interval_ns;
        while !all_done() {
            watch_stop();
            let r = restarted();
            if r > measure_start {
                // The phase's window starts again where the worker restarted its measurement.
                measure_start = r;
                cpu0 = cpu::snapshot();
                sampler = Sampler::new(kinds, r);
                for ms in member_samplers.iter_mut() {
                    *ms = Sampler::new(kinds, r);
                }
                next = r + interval_ns;
            }
            let now = now_ns();
            for u in steady_units.iter_mut().filter(|u| !u.attained) {
                if u.check(now, &counters, &started_at, nk) {
                    for &t in &u.threads {
                        halts[t].store(true, SeqCst);
                    }
                }
            }
            if now >= next {
                let (ops, bytes) = sum_counters(&counters, nk);
                sampler.push(next, &ops, &bytes, sum_units(&counters));
                for (ms, r) in member_samplers.iter_mut().zip(&ranges) {
                    let (ops, bytes) = sum_counters(&counters[r.clone()], nk);
                    ms.push(next, &ops, &bytes, 0);
                }
                ctl.publish(ops.iter().sum(), bytes.iter().sum());
                next += interval_ns;
                continue;
            }
            if tick < interval_ns {
                let (ops, bytes) = sum_counters(&counters, nk);
                ctl.publish(ops.iter().sum(), bytes.iter().sum());
            }
            park_until_ns((now + tick).min(next));
        }

        let mut results = Vec::with_capacity(nthreads);
        let mut merged: Vec<LatHist> = (0..nk).map(|_| LatHist::new(sigfig)).collect();
        let mut member_hists: Vec<Vec<LatHist>> = if grouped {
            members.iter().map(|_| (0..nk).map(|_| LatHist::new(sigfig)).collect()).collect()
        } else {
            Vec::new()
        };
        // Per member: (first work start, last measured end, last worker end).
        let mut member_times = vec![(u64::MAX, 0u64, 0u64); members.len()];
        let mut last_end = 0u64;
        let mut first_err: Option<EngineError> = None;
        // Latency per interval: every worker's cells, and each member's own (group phases).
        let mut cells: Vec<LatCell> = Vec::new();
        let mut member_cells: Vec<Vec<LatCell>> = members.iter().map(|_| Vec::new()).collect();
        for (tid, h) in handles.into_iter().enumerate() {
            let (out, hists, end, work_start, work_end, worker_cells) = h.join().expect("worker thread panicked");
            if grouped {
                member_cells[member_of[tid]].extend_from_slice(&worker_cells);
            }
            cells.extend(worker_cells);
            for (m, h) in merged.iter_mut().zip(hists.iter()) {
                m.merge(h);
            }
            if grouped {
                for (m, h) in member_hists[member_of[tid]].iter_mut().zip(hists.iter()) {
                    m.merge(h);
                }
            }
            let t = &mut member_times[member_of[tid]];
            *t = (t.0.min(work_start), t.1.max(end), t.2.max(work_end));
            last_end = last_end.max(end);
            match out {
                Ok(Some(v)) => results.push(v),
                Ok(None) => {}
                Err(e) => {
                    if first_err.is_none() {
                        first_err = Some(e)
                    }
                }
            }
        }
        let r = restarted();
        if r > measure_start {
            // Restarted after the last poll: its samples so far are of the forgotten measurement.
            measure_start = r;
            sampler = Sampler::new(kinds, r);
        }
        let end = if last_end > measure_start { last_end } else { now_ns().max(measure_start) };
        let cpu1 = cpu::snapshot();
        let (ops, bytes) = sum_counters(&counters, nk);
        let units = sum_units(&counters);
        if end > sampler.prev_t || ops != sampler.prev_ops || units != sampler.prev_units {
            sampler.push(end.max(sampler.prev_t), &ops, &bytes, units);
        }
        ctl.publish(ops.iter().sum(), bytes.iter().sum());
        ctl.set_state(RunState::Idle);
        if let Some((tid, e)) = spawn_err {
            return Err(EngineError::io(
                format!(
                    "starting thread {} of {} (the system refused a new thread: a task or pids limit, or a \
                     memory cgroup limit such as a page_cache_limit too small for this many threads)",
                    tid + 1,
                    nthreads
                ),
                e,
            ));
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        let mut report = build_report(
            phase,
            kinds,
            nthreads,
            warmup_ns,
            measure_start,
            end,
            &ops,
            &bytes,
            &merged,
            sampler.intervals,
        );
        attach(&mut report.intervals, kinds, &cells);
        report.interrupted = ctl.stop_requested();
        report.window_mono_ns = [measure_start, end];
        if units == 0 {
            // The workload counts no units of its own (or none were measured): no such series.
            for iv in &mut report.intervals {
                iv.units = None;
            }
        }
        report.cpu = cpu::usage(&cpu0, &cpu1);
        let steady_members = |m: usize| steady_units.iter().filter(|u| u.members.contains(&m)).collect::<Vec<_>>();
        if !steady_units.is_empty() {
            report
                .counters
                .insert("steadystate_attained".into(), steady_units.iter().filter(|u| u.attained).count() as u64);
            report.counters.insert("steadystate_units".into(), steady_units.len() as u64);
        }
        let mut member_reports = Vec::with_capacity(if grouped { members.len() } else { 0 });
        if grouped {
            for (m, ((g, r), mut ms)) in members.iter().zip(&ranges).zip(member_samplers).enumerate() {
                let (first_work, m_last, m_done) = member_times[m];
                // Its own start (a member stopped before it started: an empty window at its end).
                let m_start = match started_at[m].load(SeqCst) {
                    0 => m_done.max(measure_start),
                    t => t.saturating_add(g.warmup_ns),
                };
                // Nothing measured (a member stopped before its warm-up ended): its window ends when its workers did.
                let m_end = if m_last > m_start { m_last } else { m_done.max(m_start) };
                let (ops, bytes) = sum_counters(&counters[r.clone()], nk);
                if m_end > ms.prev_t || ops != ms.prev_ops {
                    ms.push(m_end.max(ms.prev_t), &ops, &bytes, 0);
                }
                let mut rep = build_report(
                    phase,
                    kinds,
                    g.threads,
                    g.warmup_ns,
                    m_start,
                    m_end,
                    &ops,
                    &bytes,
                    &member_hists[m],
                    ms.intervals,
                );
                for iv in &mut rep.intervals {
                    iv.units = None;
                }
                attach(&mut rep.intervals, kinds, &member_cells[m]);
                rep.interrupted = report.interrupted;
                rep.window_mono_ns = [m_start, m_end];
                let units = steady_members(m);
                if !units.is_empty() {
                    rep.counters
                        .insert("steadystate_attained".into(), units.iter().filter(|u| u.attained).count() as u64);
                    rep.counters.insert("steadystate_units".into(), units.len() as u64);
                }
                let rel = |t: u64| t.saturating_sub(measure_start) as f64 / 1e9;
                member_reports.push(MemberReport {
                    report: rep,
                    start_s: rel(first_work.max(m_start).min(m_end)),
                    end_s: rel(m_end),
                });
            }
        }
        drop(merged);
        drop(member_hists);
        release_freed_memory();
        Ok((report, member_reports, results))
    })
}

/// When a member's worker starts its work: the phase's start, later by the member's start delay,
/// and not before every worker of the member it waits for is done (then at the latest end of
/// theirs). None: the member was stopped before it started. Polls every millisecond: once per
/// worker per phase, never on the measured path.
fn member_start(
    phase_start: u64,
    member: &GroupMember,
    members: &[GroupMember],
    halt: &AtomicBool,
    done_threads: &[AtomicUsize],
    done_at: &[AtomicU64],
) -> Option<u64> {
    let mut at = phase_start.saturating_add(member.start_delay_ns);
    if member.start_delay_ns == 0 && member.wait_for.is_none() {
        return Some(phase_start);
    }
    loop {
        if halt.load(SeqCst) {
            return None;
        }
        let waited = match member.wait_for {
            Some(w) if done_threads[w].load(SeqCst) < members[w].threads => false,
            Some(w) => {
                at = at.max(done_at[w].load(SeqCst));
                true
            }
            None => true,
        };
        let now = now_ns();
        if waited && now >= at {
            return Some(at);
        }
        park_until_ns(if waited { at.min(now + 1_000_000) } else { now + 1_000_000 });
    }
}

/// A phase report from summed counters and merged histograms over the window [measure_start, end].
#[allow(clippy::too_many_arguments)]
fn build_report(
    phase: &str,
    kinds: &[&'static str],
    threads: usize,
    warmup_ns: u64,
    measure_start: u64,
    end: u64,
    ops: &[u64],
    bytes: &[u64],
    hists: &[LatHist],
    intervals: Vec<Interval>,
) -> PhaseReport {
    let elapsed_s = end.saturating_sub(measure_start) as f64 / 1e9;
    let per_s = |x: u64| if elapsed_s > 0.0 { x as f64 / elapsed_s } else { 0.0 };
    let mut report = PhaseReport::new(phase);
    report.threads = threads;
    report.warmup_s = warmup_ns as f64 / 1e9;
    report.elapsed_s = elapsed_s;
    for (k, name) in kinds.iter().enumerate() {
        if ops[k] == 0 {
            continue;
        }
        report.ops.insert(
            name.to_string(),
            OpStats {
                count: ops[k],
                bytes: bytes[k],
                ops_per_s: per_s(ops[k]),
                bytes_per_s: per_s(bytes[k]),
                lat: hists[k].summary(),
            },
        );
    }
    let (tops, tbytes) = (ops.iter().sum(), bytes.iter().sum());
    report.total = Totals { ops: tops, bytes: tbytes, ops_per_s: per_s(tops), bytes_per_s: per_s(tbytes) };
    report.intervals = intervals;
    report
}

/// Hands the memory the workers freed (their histograms, buffers and malloc
/// arenas: with 128 clients, tens of MB) back to the system, so that what runs
/// after the phase does not stack on top of it. glibc keeps freed memory of
/// its per-thread arenas otherwise.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; 0 = keep no extra pad.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod steady_tests {
    use super::*;

    fn unit(slope: bool, pct: bool, values: &[f64]) -> SteadyUnit {
        let spec = Steady {
            bw: false,
            lat: false,
            slope,
            pct,
            limit: 0.0,
            dur_ns: values.len() as u64,
            ramp_ns: 0,
            interval_ns: 1,
            group: false,
            kinds_mask: 1,
        };
        let mut u = SteadyUnit::new(spec, vec![0], vec![0]);
        u.window.extend(values.iter().copied());
        u
    }

    /// Hand-checked: [100, 102, 98, 100] has mean 100 and largest distance 2 (2 %); the
    /// least-squares slope of [1, 2, 3, 4] over x = 0..3 is 1, which is 40 % of their mean 2.5.
    #[test]
    fn steady_criteria_are_fios() {
        assert_eq!(unit(false, false, &[100.0, 102.0, 98.0, 100.0]).criterion(), 2.0);
        assert_eq!(unit(false, true, &[100.0, 102.0, 98.0, 100.0]).criterion(), 2.0);
        assert!((unit(true, false, &[1.0, 2.0, 3.0, 4.0]).criterion() - 1.0).abs() < 1e-12);
        assert!((unit(true, true, &[1.0, 2.0, 3.0, 4.0]).criterion() - 40.0).abs() < 1e-9);
        // A falling series: the slope's absolute value (fio compares |slope|).
        assert!((unit(true, false, &[8.0, 6.0, 4.0, 2.0]).criterion() - 2.0).abs() < 1e-12);
    }
}
