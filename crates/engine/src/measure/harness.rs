//! The timed multi-thread harness every workload runs its phases in.
//!
//! Workers own their histograms and counters (no lock, no allocation per operation: `recorder.rs`).
//! The calling thread coordinates: it releases the workers together, samples their counters every
//! interval, watches for a stop and for steady state (`steady.rs`), and builds the phase report
//! from what the workers hand back.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::thread::{Scope, ScopedJoinHandle, Thread};

use super::clock::{now_ns, park_until_ns};
use super::control::{Control, RunState, StartGate};
use super::cpu::{self, CpuSnapshot};
use super::hist::LatHist;
use super::interval_lat::{attach, IntervalLatRecorder, LatCell};
use super::recorder::{sum_counters, sum_units, Recorder, Sampler, ThreadCounters, MAX_KINDS};
use super::steady::{check_units, Steady, SteadyUnit};
use crate::error::{EngineError, Result};
use crate::report::{Interval, OpStats, PhaseReport, Totals};

/// When a phase measures: `warmup_ns` of unmeasured load first, then either
/// `duration_ns` of measurement or (None) until the workers run out of work.
#[derive(Clone, Copy, Debug)]
pub struct PhaseTiming {
    pub warmup_ns: u64,
    pub duration_ns: Option<u64>,
    pub interval_ns: u64,
}

/// Run `nthreads` workers of `work` together, measure them, and build the phase report.
///
/// `setup(tid)` runs in each worker thread before the common start (allocate
/// buffers, open rings): its cost is outside the measured window. If any setup
/// fails, no worker runs and the first error is returned.
///
/// `kinds` names the operation kinds (indices into it are what workers pass to
/// `Recorder::record`); `sigfig` sets histogram precision (0: the operations are counted, not
/// timed one by one, see `Recorder::stamp`; only for phases of fixed work); `work_total` is the
/// expected number of operations for progress (0 when unknown). Each worker
/// returns its own result `T` (workload counters), handed back in thread order.
#[allow(clippy::too_many_arguments)] // the harness's interface every family calls (HACKING.md, Adding a family)
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
#[allow(clippy::too_many_arguments)] // run_threads' interface, with the members in place of the timing
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
    let sh = Shared::new(members, kinds.len(), sigfig, interval_ns);
    let mut steady = steady_units(members, &sh.ranges);
    ctl.begin(
        if sh.warmup_ns > 0 { RunState::WarmingUp } else { RunState::Measuring },
        sh.warmup_ns,
        sh.duration_ns.unwrap_or(0),
        work_total,
    );
    // The coordinator sleeps between polls; each worker wakes it when it finishes, so that the
    // phase returns as soon as the work is done, not at the next poll (up to 50 ms later: a grid
    // of many short phases, or one short run, paid it in wall time).
    let coordinator = std::thread::current();
    std::thread::scope(|scope| {
        let (handles, spawn_err) = spawn_workers(scope, &sh, &setup, &work, &coordinator);
        let mut window = coordinate(&sh, ctl, kinds, handles.len(), &mut steady);
        let joined = join_workers(&sh, handles);
        let r = sh.restarted();
        if r > window.measure_start {
            // Restarted after the last poll: its samples so far are of the forgotten measurement.
            window.measure_start = r;
            window.sampler = Sampler::new(kinds, r);
        }
        let measure_start = window.measure_start;
        let end = if joined.last_end > measure_start { joined.last_end } else { now_ns().max(measure_start) };
        let cpu1 = cpu::snapshot();
        let (ops, bytes) = sum_counters(&sh.counters, sh.nk);
        let units = sum_units(&sh.counters);
        let sampler = &mut window.sampler;
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
                    sh.member_of.len()
                ),
                e,
            ));
        }
        let Joined { results, merged, member_hists, member_times, first_err, cells, member_cells, .. } = joined;
        if let Some(e) = first_err {
            return Err(e);
        }
        let mut report = build_report(
            phase,
            kinds,
            sh.member_of.len(),
            sh.warmup_ns,
            measure_start,
            end,
            &ops,
            &bytes,
            &merged,
            window.sampler.intervals,
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
        report.cpu = cpu::usage(&window.cpu0, &cpu1);
        if !steady.is_empty() {
            report.counters.insert("steadystate_attained".into(), steady.iter().filter(|u| u.attained).count() as u64);
            report.counters.insert("steadystate_units".into(), steady.len() as u64);
        }
        let member_reports = if sh.grouped {
            let times = MemberTimes { measure_start, interrupted: report.interrupted, times: &member_times };
            member_reports(&sh, phase, kinds, &times, window.member_samplers, &member_hists, &member_cells, &steady)
        } else {
            Vec::new()
        };
        drop(merged);
        drop(member_hists);
        release_freed_memory();
        Ok((report, member_reports, results))
    })
}

/// What the threads of a group phase share: each thread's counters and halt flag, the start gate,
/// and per member its workers done, the latest end of their work and when it started.
struct Shared<'m> {
    members: &'m [GroupMember],
    /// The member of each thread, and each member's range of thread ids.
    member_of: Vec<usize>,
    ranges: Vec<Range<usize>>,
    grouped: bool,
    nk: usize,
    /// The histograms' precision (at least 1), and whether operations are timed one by one
    /// (`run_threads` with sigfig 0: counted only, see `Recorder::stamp`).
    sigfig: u8,
    timed: bool,
    interval_ns: u64,
    /// The earliest member's warm-up; the longest duration, or none (fixed work) when some member
    /// has a fixed amount (for the progress bar).
    warmup_ns: u64,
    duration_ns: Option<u64>,
    counters: Vec<ThreadCounters>,
    gate: StartGate,
    start_at: AtomicU64,
    finished: AtomicUsize,
    /// Workers watch their own `halts` flag, not the caller's flag: the coordinator copies a
    /// requested stop into every one, a worker that fails sets every one so the others do not run
    /// on to the deadline, and a member's exit (fio's exitall) sets those it stops.
    halts: Vec<AtomicBool>,
    /// Per member: workers done, the latest end of their work, when it started (its own start: the
    /// phase's, later by its start delay or the end of the member it waits for; 0: not yet).
    done_threads: Vec<AtomicUsize>,
    done_at: Vec<AtomicU64>,
    started_at: Vec<AtomicU64>,
    setup_failed: AtomicBool,
}

impl<'m> Shared<'m> {
    fn new(members: &'m [GroupMember], nk: usize, sigfig: u8, interval_ns: u64) -> Shared<'m> {
        let mut member_of = Vec::new();
        let mut ranges = Vec::with_capacity(members.len());
        for (m, g) in members.iter().enumerate() {
            ranges.push(member_of.len()..member_of.len() + g.threads);
            member_of.extend(std::iter::repeat_n(m, g.threads));
        }
        let nthreads = member_of.len();
        let duration_ns = members
            .iter()
            .map(|g| g.duration_ns)
            .collect::<Option<Vec<u64>>>()
            .map(|d| d.into_iter().max().unwrap_or(0));
        Shared {
            members,
            member_of,
            ranges,
            grouped: members.len() > 1,
            nk,
            sigfig: sigfig.max(1),
            timed: sigfig > 0,
            interval_ns,
            warmup_ns: members.iter().map(|g| g.warmup_ns).min().unwrap_or(0),
            duration_ns,
            counters: (0..nthreads).map(|_| ThreadCounters::new()).collect(),
            gate: StartGate::new(),
            start_at: AtomicU64::new(0),
            finished: AtomicUsize::new(0),
            halts: (0..nthreads).map(|_| AtomicBool::new(false)).collect(),
            done_threads: members.iter().map(|_| AtomicUsize::new(0)).collect(),
            done_at: members.iter().map(|_| AtomicU64::new(0)).collect(),
            started_at: members.iter().map(|_| AtomicU64::new(0)).collect(),
            setup_failed: AtomicBool::new(false),
        }
    }

    fn halt_all(&self) {
        for h in &self.halts {
            h.store(true, SeqCst);
        }
    }

    /// A worker that restarted its measurement (Recorder::restart_measure): the latest restart.
    fn restarted(&self) -> u64 {
        self.counters.iter().map(|c| c.restart_ns.load(SeqCst)).max().unwrap_or(0)
    }

    /// fio's exitall: the end of a worker of `member` (a clone of the job) stops others.
    fn exit(&self, member: &GroupMember) {
        for (k, g) in self.members.iter().enumerate() {
            let stop = match member.exit {
                Exit::None => false,
                Exit::Group => g.report_group == member.report_group,
                Exit::Stonewall => self.started_at[k].load(SeqCst) != 0,
                Exit::All => true,
            };
            if stop {
                for h in &self.halts[self.ranges[k].clone()] {
                    h.store(true, SeqCst);
                }
            }
        }
    }
}

/// Saturating: a duration too long to add to the clock means "no deadline", never a deadline that
/// wrapped round to the past (which measured one operation and called the phase done).
fn deadline_of(start: u64, g: &GroupMember) -> u64 {
    match g.duration_ns {
        Some(d) => start.saturating_add(g.warmup_ns).saturating_add(d),
        None => u64::MAX,
    }
}

/// What a worker thread hands back: its result (None: it did no work), its histograms, the end of
/// its last measured operation, when its work started and ended, and its latency cells.
struct WorkerEnd<T> {
    out: Result<Option<T>>,
    hists: Vec<LatHist>,
    last_end: u64,
    work_start: u64,
    work_end: u64,
    cells: Vec<LatCell>,
}

type Spawned<'scope, T> = (Vec<ScopedJoinHandle<'scope, WorkerEnd<T>>>, Option<(usize, std::io::Error)>);

/// Start every worker thread. When the system refuses a thread, the ones started skip their work
/// and the phase fails with the reason (returned with its thread id), rather than panicking or
/// waiting for ever.
fn spawn_workers<'scope, 'env, S, T, Setup, F>(
    scope: &'scope Scope<'scope, 'env>,
    sh: &'env Shared<'env>,
    setup: &'env Setup,
    work: &'env F,
    coordinator: &'env Thread,
) -> Spawned<'scope, T>
where
    T: Send + 'scope,
    Setup: Fn(usize) -> Result<S> + Sync,
    F: Fn(&mut S, &mut Recorder) -> Result<T> + Sync,
{
    let nthreads = sh.member_of.len();
    let mut handles = Vec::with_capacity(nthreads);
    for tid in 0..nthreads {
        let spawned =
            std::thread::Builder::new().spawn_scoped(scope, move || run_worker(sh, tid, setup, work, coordinator));
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                sh.setup_failed.store(true, SeqCst);
                sh.halt_all();
                return (handles, Some((tid, e)));
            }
        }
    }
    (handles, None)
}

/// One worker thread: its setup, the common start, its member's start (delay, wait_for), its work
/// on its own Recorder, and at its end the exits it triggers and the coordinator woken.
fn run_worker<S, T, Setup, F>(sh: &Shared, tid: usize, setup: &Setup, work: &F, coordinator: &Thread) -> WorkerEnd<T>
where
    Setup: Fn(usize) -> Result<S>,
    F: Fn(&mut S, &mut Recorder) -> Result<T>,
{
    let mi = sh.member_of[tid];
    let member = &sh.members[mi];
    let shared = &sh.counters[tid];
    let hists = (0..sh.nk).map(|_| LatHist::new(sh.sigfig)).collect();
    let state = setup(tid);
    if state.is_err() {
        sh.setup_failed.store(true, SeqCst);
    }
    sh.gate.arrive_and_wait();
    let halt = &sh.halts[tid];
    let start = member_start(sh.start_at.load(SeqCst), member, sh.members, halt, &sh.done_threads, &sh.done_at);
    if let Some(t) = start {
        sh.started_at[mi].store(t, SeqCst);
    }
    let begun = start.is_some();
    let start = start.unwrap_or(0);
    let interval_lat = member.interval_lat.then(|| {
        let expected = sh.duration_ns.map_or(64, |d| (d / sh.interval_ns.max(1)) as usize + 2);
        IntervalLatRecorder::new(sh.start_at.load(SeqCst).saturating_add(sh.warmup_ns), sh.interval_ns, expected)
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
        timed: sh.timed,
    };
    let work_start = now_ns();
    let out: Result<Option<T>> = match state {
        // Stopped before it started (a stop, another member's exit): no work.
        Ok(_) if !begun => Ok(None),
        Ok(mut st) if !sh.setup_failed.load(SeqCst) => work(&mut st, &mut rec).map(Some),
        Ok(_) => Ok(None),
        Err(e) => Err(e),
    };
    let work_end = now_ns();
    if out.is_err() {
        sh.halt_all();
    }
    sh.done_at[mi].fetch_max(work_end, SeqCst);
    sh.done_threads[mi].fetch_add(1, SeqCst);
    // A worker stopped before it started never ran, so it stops no one.
    if begun {
        sh.exit(member);
    }
    shared.finished.store(true, SeqCst);
    sh.finished.fetch_add(1, SeqCst);
    coordinator.unpark();
    let cells = rec.interval_lat.take().map(IntervalLatRecorder::<MAX_KINDS>::finish).unwrap_or_default();
    // Operations counted without a time each: the worker's work ended when its last one did.
    let last_end = if rec.timed { rec.last_end_ns } else { rec.last_end_ns.max(work_end) };
    WorkerEnd { out, hists: rec.hists, last_end, work_start, work_end, cells }
}

/// The phase's measured window as the coordinator kept it: its start (moved by a worker that
/// restarted its measurement), the CPU snapshot there, and the samples of the phase and of each
/// member (group phases only).
struct Window<'k> {
    measure_start: u64,
    cpu0: CpuSnapshot,
    sampler: Sampler<'k>,
    member_samplers: Vec<Sampler<'k>>,
}

/// The coordinator: release the `started` workers together, then until they are all done watch
/// for a stop, judge steady state and take a sample every interval (publishing progress).
fn coordinate<'k>(
    sh: &Shared,
    ctl: &Control,
    kinds: &'k [&'static str],
    started: usize,
    steady: &mut [SteadyUnit],
) -> Window<'k> {
    let (start, cpu_at_release) = release(sh, ctl, started);
    let interval_ns = sh.interval_ns;
    let mut measure_start = start.saturating_add(sh.warmup_ns);
    let all_done = || sh.finished.load(SeqCst) == started;
    // Poll often enough for a lively progress bar and a prompt stop.
    let tick = 50_000_000u64.min(interval_ns.max(1));
    let watch_stop = || {
        if ctl.stop_requested() {
            sh.halt_all();
        }
    };
    while !all_done() && now_ns() < measure_start {
        watch_stop();
        park_until_ns((now_ns() + tick).min(measure_start));
    }
    ctl.set_state(RunState::Measuring);
    let mut cpu0 = cpu_at_release.unwrap_or_else(cpu::snapshot);
    let mut sampler = Sampler::new(kinds, measure_start);
    let mut member_samplers: Vec<Sampler> =
        if sh.grouped { sh.members.iter().map(|_| Sampler::new(kinds, measure_start)).collect() } else { Vec::new() };
    let mut next = measure_start + interval_ns;
    while !all_done() {
        watch_stop();
        let r = sh.restarted();
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
        check_units(steady, now, &sh.counters, &sh.started_at, sh.nk, &sh.halts);
        if now >= next {
            let (ops, bytes) = sum_counters(&sh.counters, sh.nk);
            sampler.push(next, &ops, &bytes, sum_units(&sh.counters));
            for (ms, r) in member_samplers.iter_mut().zip(&sh.ranges) {
                let (ops, bytes) = sum_counters(&sh.counters[r.clone()], sh.nk);
                ms.push(next, &ops, &bytes, 0);
            }
            ctl.publish(ops.iter().sum(), bytes.iter().sum());
            next += interval_ns;
            continue;
        }
        if tick < interval_ns {
            let (ops, bytes) = sum_counters(&sh.counters, sh.nk);
            ctl.publish(ops.iter().sum(), bytes.iter().sum());
        }
        park_until_ns((now + tick).min(next));
    }
    Window { measure_start, cpu0, sampler, member_samplers }
}

/// Release the workers together once the `started` ones are set up (and the start hold, if armed,
/// lets go): the phase's start, and with no warm-up the CPU snapshot taken just before it.
fn release(sh: &Shared, ctl: &Control, started: usize) -> (u64, Option<CpuSnapshot>) {
    // With no warm-up the measurement starts at the release, so the CPU snapshot (getrusage and
    // /proc/stat, tens of microseconds of work that also stirs the caches) is taken before it, once
    // every worker has finished its setup: taken after, it ran beside the first operations and
    // slowed a short phase's start (iozone's first cells ran up to a third slower than the same
    // cells run later).
    sh.gate.wait_arrived(started);
    ctl.wait_at_start_hold();
    let cpu_at_release = (sh.warmup_ns == 0).then(cpu::snapshot);
    let start = now_ns();
    sh.start_at.store(start, SeqCst);
    // A member with no start delay and nothing to wait for starts with the phase: it counts as
    // started (fio's exit_what=stonewall stops it) from the release, not from the moment its
    // thread first runs, which on a busy machine can come after a short member has finished.
    for (m, g) in sh.members.iter().enumerate() {
        if g.start_delay_ns == 0 && g.wait_for.is_none() {
            sh.started_at[m].store(start, SeqCst);
        }
    }
    sh.gate.release();
    (start, cpu_at_release)
}

/// What the workers handed back, merged: the results in thread order, the phase's and each member's
/// histograms and latency cells, per member (first work start, last measured end, last worker end),
/// the end of the last measured operation, and the first error.
struct Joined<T> {
    results: Vec<T>,
    merged: Vec<LatHist>,
    member_hists: Vec<Vec<LatHist>>,
    member_times: Vec<(u64, u64, u64)>,
    last_end: u64,
    first_err: Option<EngineError>,
    cells: Vec<LatCell>,
    member_cells: Vec<Vec<LatCell>>,
}

fn join_workers<T>(sh: &Shared, handles: Vec<ScopedJoinHandle<'_, WorkerEnd<T>>>) -> Joined<T> {
    let (nk, sigfig, members, grouped) = (sh.nk, sh.sigfig, sh.members, sh.grouped);
    let mut j = Joined {
        results: Vec::with_capacity(sh.member_of.len()),
        merged: (0..nk).map(|_| LatHist::new(sigfig)).collect(),
        member_hists: if grouped {
            members.iter().map(|_| (0..nk).map(|_| LatHist::new(sigfig)).collect()).collect()
        } else {
            Vec::new()
        },
        member_times: vec![(u64::MAX, 0u64, 0u64); members.len()],
        last_end: 0,
        first_err: None,
        cells: Vec::new(),
        member_cells: members.iter().map(|_| Vec::new()).collect(),
    };
    for (tid, h) in handles.into_iter().enumerate() {
        let w = h.join().expect("worker thread panicked");
        let m = sh.member_of[tid];
        if grouped {
            j.member_cells[m].extend_from_slice(&w.cells);
        }
        j.cells.extend(w.cells);
        for (a, b) in j.merged.iter_mut().zip(w.hists.iter()) {
            a.merge(b);
        }
        if grouped {
            for (a, b) in j.member_hists[m].iter_mut().zip(w.hists.iter()) {
                a.merge(b);
            }
        }
        let t = &mut j.member_times[m];
        *t = (t.0.min(w.work_start), t.1.max(w.last_end), t.2.max(w.work_end));
        j.last_end = j.last_end.max(w.last_end);
        match w.out {
            Ok(Some(v)) => j.results.push(v),
            Ok(None) => {}
            Err(e) => {
                if j.first_err.is_none() {
                    j.first_err = Some(e)
                }
            }
        }
    }
    j
}

/// When each member ran, for its report: the phase's measured start, whether the phase was
/// interrupted, and per member (first work start, last measured end, last worker end).
struct MemberTimes<'a> {
    measure_start: u64,
    interrupted: bool,
    times: &'a [(u64, u64, u64)],
}

/// Each member's own report (group phases), from its threads' counters, histograms and samples.
#[allow(clippy::too_many_arguments)] // each is one part of what the workers handed back
fn member_reports(
    sh: &Shared,
    phase: &str,
    kinds: &[&'static str],
    times: &MemberTimes,
    member_samplers: Vec<Sampler>,
    member_hists: &[Vec<LatHist>],
    member_cells: &[Vec<LatCell>],
    steady: &[SteadyUnit],
) -> Vec<MemberReport> {
    let measure_start = times.measure_start;
    let mut out = Vec::with_capacity(sh.members.len());
    for (m, ((g, r), mut ms)) in sh.members.iter().zip(&sh.ranges).zip(member_samplers).enumerate() {
        let (first_work, m_last, m_done) = times.times[m];
        // Its own start (a member stopped before it started: an empty window at its end).
        let m_start = match sh.started_at[m].load(SeqCst) {
            0 => m_done.max(measure_start),
            t => t.saturating_add(g.warmup_ns),
        };
        // Nothing measured (a member stopped before its warm-up ended): its window ends when its workers did.
        let m_end = if m_last > m_start { m_last } else { m_done.max(m_start) };
        let (ops, bytes) = sum_counters(&sh.counters[r.clone()], sh.nk);
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
        rep.interrupted = times.interrupted;
        rep.window_mono_ns = [m_start, m_end];
        let units: Vec<&SteadyUnit> = steady.iter().filter(|u| u.members.contains(&m)).collect();
        if !units.is_empty() {
            rep.counters.insert("steadystate_attained".into(), units.iter().filter(|u| u.attained).count() as u64);
            rep.counters.insert("steadystate_units".into(), units.len() as u64);
        }
        let rel = |t: u64| t.saturating_sub(measure_start) as f64 / 1e9;
        out.push(MemberReport { report: rep, start_s: rel(first_work.max(m_start).min(m_end)), end_s: rel(m_end) })
    }
    out
}

/// The units a phase's members are judged in: one per worker, or one per reporting group whose
/// members judge the group's rate (fio's group_reporting). `ranges`: each member's thread ids.
fn steady_units(members: &[GroupMember], ranges: &[Range<usize>]) -> Vec<SteadyUnit> {
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
    steady_units
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
#[allow(clippy::too_many_arguments)] // the parts of a report the workers handed back, each used once
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
