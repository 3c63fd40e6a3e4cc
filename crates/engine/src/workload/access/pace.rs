//! Pacing of a thread's requests: fio's `rate`, `rate_iops`, `rate_process`, `rate_min`,
//! `rate_iops_min`, `rate_cycle` and `thinktime`, all per thread (fio applies them to each clone
//! of a job) and per direction.
//!
//! Schedule (fio's `usec_for_io`): the clock starts when the thread starts its work (its epoch).
//! The first request of a direction is due at once; after each request the next one of that
//! direction is due at
//! - linear, a byte rate: (bytes of that direction issued so far) / rate after the epoch;
//! - linear, an I/O rate: (requests of that direction issued so far) / rate after the epoch;
//! - poisson: the previous due time plus an exponential gap of mean 1 / IOPS (IOPS: the I/O rate,
//!   or the byte rate over the direction's smallest request size, as fio takes it).
//!
//! A request that is late goes at once (the schedule is not moved: the thread catches up, as in
//! fio). A request due after the phase's deadline ends the thread's work.
//!
//! thinktime: after every `thinktime_blocks` requests the thread lets every request in flight
//! complete, then stalls `thinktime` (the first `thinktime_spin` of it spinning on the clock, the
//! rest asleep), as fio does.
//!
//! rate_min / rate_iops_min: after a 2 s settle period, every `rate_cycle` the rate each direction
//! achieved over the cycle (completed bytes or requests) is checked; below the minimum, the
//! thread stops (fio ends the job with an error), and the phase report says so.
//!
//! Also here: fio's flow (jobs kept in the ratio of their weights), steady state (the spec; the
//! harness judges it) and where a job's threads run (CPU affinity, NUMA memory policy).
//!
//! On a request's path nothing here allocates, locks or makes a system call but the clock and
//! the sleep (and, with a flow, relaxed loads and one atomic add on the flow's shared counter).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};
use crate::measure::{now_ns, Recorder};

/// How requests are spread in time under a rate (fio's `rate_process`).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RateProcess {
    #[default]
    Linear,
    Poisson,
}

/// A thread's pacing, per direction ([read, write]; 0: no limit for that direction).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PaceSpec {
    /// Bytes per second (fio's `rate`).
    #[serde(default)]
    pub rate_bytes_per_s: [u64; 2],
    /// Requests per second (fio's `rate_iops`); a byte rate of the same direction wins, as in fio.
    #[serde(default)]
    pub rate_iops: [u64; 2],
    #[serde(default)]
    pub rate_process: RateProcess,
    /// The least bytes per second a direction must keep (fio's `rate_min`) ...
    #[serde(default)]
    pub rate_min_bytes_per_s: [u64; 2],
    /// ... or requests per second (fio's `rate_iops_min`), averaged over `rate_cycle_ms`.
    #[serde(default)]
    pub rate_min_iops: [u64; 2],
    #[serde(default = "default_cycle")]
    pub rate_cycle_ms: u64,
    /// Microseconds of stall after every `thinktime_blocks` requests (fio's `thinktime`) ...
    #[serde(default)]
    pub thinktime_us: u64,
    /// ... the first of them spent spinning on the clock (fio's `thinktime_spin`).
    #[serde(default)]
    pub thinktime_spin_us: u64,
    #[serde(default = "default_blocks")]
    pub thinktime_blocks: u64,
    /// fio's `flow`: this job's weight among the jobs of its group sharing `flow_id` (0: none) ...
    #[serde(default)]
    pub flow: u32,
    #[serde(default)]
    pub flow_id: u32,
    /// ... and the stall, in microseconds, of a thread ahead of its share (fio's `flow_sleep`).
    #[serde(default)]
    pub flow_sleep_us: u64,
}

impl Default for PaceSpec {
    fn default() -> Self {
        PaceSpec {
            rate_bytes_per_s: [0; 2],
            rate_iops: [0; 2],
            rate_process: RateProcess::Linear,
            rate_min_bytes_per_s: [0; 2],
            rate_min_iops: [0; 2],
            rate_cycle_ms: default_cycle(),
            thinktime_us: 0,
            thinktime_spin_us: 0,
            thinktime_blocks: default_blocks(),
            flow: 0,
            flow_id: 0,
            flow_sleep_us: 0,
        }
    }
}

fn default_cycle() -> u64 {
    1000
}
fn default_blocks() -> u64 {
    1
}

/// fio's settle period before rate_min is first checked.
const MIN_RATE_SETTLE_NS: u64 = 2_000_000_000;
/// The longest single sleep: a stop request is seen within it.
const SLEEP_SLICE_NS: u64 = 20_000_000;

impl PaceSpec {
    /// Rates, minimum rates or thinktime: the thread keeps a `Pacer`.
    pub fn paces(&self) -> bool {
        self.rate_bytes_per_s.iter().chain(&self.rate_iops).any(|&r| r > 0)
            || self.rate_min_bytes_per_s.iter().chain(&self.rate_min_iops).any(|&r| r > 0)
            || self.thinktime_us > 0
    }

    /// Anything at all (a pace or a flow).
    pub fn is_active(&self) -> bool {
        self.paces() || self.flow > 0
    }

    pub fn validate(&self, min_size: [u64; 2]) -> Result<()> {
        if self.rate_cycle_ms == 0 {
            return Err(EngineError::invalid("pace.rate_cycle_ms", "must be >= 1 ms"));
        }
        if self.thinktime_blocks == 0 {
            return Err(EngineError::invalid("pace.thinktime_blocks", "must be >= 1"));
        }
        if self.thinktime_spin_us > self.thinktime_us {
            return Err(EngineError::invalid(
                "pace.thinktime_spin_us",
                format!("{} us is more than thinktime_us ({} us)", self.thinktime_spin_us, self.thinktime_us),
            ));
        }
        if self.rate_process == RateProcess::Poisson {
            for (&r, &min) in self.rate_bytes_per_s.iter().zip(&min_size) {
                if r > 0 && min > 0 && r < min {
                    return Err(EngineError::invalid(
                        "pace.rate_bytes_per_s",
                        format!("{r} B/s is less than one {min}-byte request per second: a Poisson process needs at least 1 IOPS"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Where a thread stands in its schedule. Made before the phase starts; `start` at the epoch.
pub struct Pacer {
    spec: PaceSpec,
    epoch: u64,
    /// Per direction: when its next request may be issued (ns, absolute).
    due: [u64; 2],
    issued_bytes: [u64; 2],
    issued_ios: [u64; 2],
    /// Poisson: the mean gap per direction (ns), and the generator of the gaps.
    mean_gap_ns: [f64; 2],
    rng: Xoshiro256PlusPlus,
    /// Requests since the last thinktime.
    since_think: u64,
    /// rate_min: completed bytes and requests per direction, and at the last check.
    done_bytes: [u64; 2],
    done_ios: [u64; 2],
    last_check: Option<(u64, [u64; 2], [u64; 2])>,
    /// Set when a minimum rate was missed: (direction, achieved per second, the minimum, in bytes?).
    pub missed: Option<(usize, u64, u64, bool)>,
}

/// What to do with the request just drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Go {
    /// Issue it now.
    Now,
    /// Issue it at this time (ns); `quiesce`: only once no request is in flight (thinktime).
    At { due: u64, quiesce: bool },
}

impl Pacer {
    /// `min_size`: the smallest request size of each direction (for a Poisson byte rate).
    pub fn new(spec: &PaceSpec, min_size: [u64; 2], seed: u64) -> Pacer {
        let mean_gap_ns: [f64; 2] = std::array::from_fn(|d| {
            let iops = match (spec.rate_bytes_per_s[d], min_size[d]) {
                (0, _) => spec.rate_iops[d] as f64,
                (_, 0) => 0.0,
                (r, m) => (r / m) as f64,
            };
            if iops > 0.0 {
                1e9 / iops
            } else {
                0.0
            }
        });
        Pacer {
            spec: spec.clone(),
            epoch: 0,
            due: [0; 2],
            issued_bytes: [0; 2],
            issued_ios: [0; 2],
            mean_gap_ns,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x0009_ACE0_FF10),
            since_think: 0,
            done_bytes: [0; 2],
            done_ios: [0; 2],
            last_check: None,
            missed: None,
        }
    }

    /// The thread starts its work now: the schedule's origin.
    pub fn start(&mut self, now: u64) {
        self.epoch = now;
        self.due = [now; 2];
    }

    fn limited(&self, d: usize) -> bool {
        self.spec.rate_bytes_per_s[d] > 0 || self.spec.rate_iops[d] > 0
    }

    /// A request of direction `d` (0 read, 1 write) and `len` bytes is to be issued: when may it
    /// go? Its issue is booked into the schedule (the next one's due time moves on).
    #[inline]
    pub fn book(&mut self, d: usize, len: u64, now: u64) -> Go {
        let mut due = 0;
        if self.limited(d) {
            due = self.due[d];
            self.issued_bytes[d] += len;
            self.issued_ios[d] += 1;
            self.due[d] = match self.spec.rate_process {
                RateProcess::Poisson => {
                    // fio: the gap is -ln(U) times the mean, U uniform in (0, 1].
                    let u = ((self.rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
                    self.due[d] + (-u.ln() * self.mean_gap_ns[d]) as u64
                }
                RateProcess::Linear if self.spec.rate_bytes_per_s[d] > 0 => {
                    self.epoch
                        + (self.issued_bytes[d] as u128 * 1_000_000_000 / self.spec.rate_bytes_per_s[d] as u128) as u64
                }
                RateProcess::Linear => {
                    self.epoch + (self.issued_ios[d] as u128 * 1_000_000_000 / self.spec.rate_iops[d] as u128) as u64
                }
            };
        }
        if self.spec.thinktime_us > 0 {
            if self.since_think >= self.spec.thinktime_blocks {
                self.since_think = 1;
                return Go::At { due, quiesce: true };
            }
            self.since_think += 1;
        }
        if due > now {
            Go::At { due, quiesce: false }
        } else {
            Go::Now
        }
    }

    /// A booked request's wait, with nothing in flight: the thinktime stall its booking asked for
    /// (`quiesce`), then its due time. False: a stop or the deadline came first.
    pub fn wait_for(&self, due: u64, quiesce: bool, rec: &Recorder) -> bool {
        (!quiesce || self.think(rec)) && sleep_until(due, rec)
    }

    /// A thinktime stall, from now (every request has completed): spin, then sleep. False: stop.
    pub fn think(&self, rec: &Recorder) -> bool {
        let start = now_ns();
        let spin_end = start.saturating_add(self.spec.thinktime_spin_us.saturating_mul(1000));
        while now_ns() < spin_end && !rec.interrupted() {
            std::hint::spin_loop();
        }
        sleep_until(start.saturating_add(self.spec.thinktime_us.saturating_mul(1000)), rec)
    }

    /// A request completed (`moved` bytes, direction `d`) at `t1`. True when a minimum rate was
    /// missed: the thread is to stop (`missed` says which).
    #[inline]
    pub fn completed(&mut self, d: usize, moved: u64, t1: u64) -> bool {
        let s = &self.spec;
        if s.rate_min_bytes_per_s == [0; 2] && s.rate_min_iops == [0; 2] {
            return false;
        }
        self.done_bytes[d] += moved;
        self.done_ios[d] += 1;
        if t1 < self.epoch + MIN_RATE_SETTLE_NS {
            return false;
        }
        let Some((at, bytes, ios)) = self.last_check else {
            self.last_check = Some((t1, self.done_bytes, self.done_ios));
            return false;
        };
        let spent_ms = (t1 - at) / 1_000_000;
        if spent_ms < s.rate_cycle_ms || spent_ms == 0 {
            return false;
        }
        for dd in 0..2 {
            if self.done_ios[dd] == 0 {
                continue; // fio checks only a direction that has done I/O
            }
            if s.rate_min_bytes_per_s[dd] > 0 {
                let got = (self.done_bytes[dd] - bytes[dd]) * 1000 / spent_ms;
                if got < s.rate_min_bytes_per_s[dd] {
                    self.missed = Some((dd, got, s.rate_min_bytes_per_s[dd], true));
                    return true;
                }
            } else if s.rate_min_iops[dd] > 0 {
                let got = (self.done_ios[dd] - ios[dd]) * 1000 / spent_ms;
                if got < s.rate_min_iops[dd] {
                    self.missed = Some((dd, got, s.rate_min_iops[dd], false));
                    return true;
                }
            }
        }
        self.last_check = Some((t1, self.done_bytes, self.done_ios));
        false
    }
}

/// Sleep until `due` (monotonic ns) in slices, so a stop is seen. False: the thread is to stop
/// (a stop was asked for, or `due` is past the phase's deadline: the request would start after it;
/// the thread then sleeps until the deadline, as fio's paced job sleeps to its next request's time
/// before it sees its runtime is up, so that it keeps its place in a flow, and its elapsed time
/// is the phase's, to the end).
pub fn sleep_until(due: u64, rec: &Recorder) -> bool {
    if due >= rec.deadline_ns {
        if rec.deadline_ns != u64::MAX && rec.deadline_ns > 0 {
            let _ = sleep_until(rec.deadline_ns - 1, rec);
        }
        return false;
    }
    loop {
        if rec.interrupted() {
            return false;
        }
        let now = now_ns();
        if now >= due {
            return true;
        }
        let until = due.min(now + SLEEP_SLICE_NS);
        let d = until - now;
        std::thread::sleep(std::time::Duration::from_nanos(d));
    }
}

/// What fio's steadystate judges: IOPS, bandwidth or the mean completion latency (ns), their
/// spread or their slope.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SteadyKind {
    Iops,
    IopsSlope,
    Bw,
    BwSlope,
    Lat,
    LatSlope,
}

/// fio's steadystate (ss), ss_dur, ss_ramp and ss_interval: stop the job (each thread, or with
/// `group` the threads of its reporting group together) once the criterion over the last `dur_s`
/// of samples is below `limit` (a percentage of their mean with `pct`). See measure::Steady.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SteadySpec {
    pub criterion: SteadyKind,
    pub limit: f64,
    #[serde(default)]
    pub pct: bool,
    pub dur_s: f64,
    #[serde(default)]
    pub ramp_s: f64,
    #[serde(default = "one_s")]
    pub interval_s: f64,
    #[serde(default)]
    pub group: bool,
}

/// The most samples a steady-state window keeps (the coordinator holds them).
const MAX_STEADY_SAMPLES: u64 = 100_000;

fn one_s() -> f64 {
    1.0
}

impl SteadySpec {
    /// Checked, for the harness: which kinds count (the access family's read, write and trim).
    pub fn to_steady(&self, kinds_mask: u32) -> Result<crate::measure::Steady> {
        use crate::measure::duration::secs_to_ns;
        if !(self.limit >= 0.0 && self.limit.is_finite()) {
            return Err(EngineError::invalid("steadystate.limit", "must be a number >= 0"));
        }
        let dur_ns = secs_to_ns("steadystate.dur_s", self.dur_s)?;
        let interval_ns = secs_to_ns("steadystate.interval_s", self.interval_s)?;
        if interval_ns > 0 && dur_ns / interval_ns > MAX_STEADY_SAMPLES {
            return Err(EngineError::invalid(
                "steadystate.dur_s",
                format!("more than {MAX_STEADY_SAMPLES} samples of interval_s in the window: make interval_s longer"),
            ));
        }
        if interval_ns == 0 || dur_ns / interval_ns < 2 {
            return Err(EngineError::invalid(
                "steadystate.dur_s",
                format!(
                    "{} s holds fewer than two samples of {} s: make dur_s at least twice interval_s",
                    self.dur_s, self.interval_s
                ),
            ));
        }
        Ok(crate::measure::Steady {
            bw: matches!(self.criterion, SteadyKind::Bw | SteadyKind::BwSlope),
            lat: matches!(self.criterion, SteadyKind::Lat | SteadyKind::LatSlope),
            slope: matches!(self.criterion, SteadyKind::IopsSlope | SteadyKind::BwSlope | SteadyKind::LatSlope),
            pct: self.pct,
            limit: self.limit,
            dur_ns,
            ramp_ns: secs_to_ns("steadystate.ramp_s", self.ramp_s)?,
            interval_ns,
            group: self.group,
            kinds_mask,
        })
    }
}

/// fio's `flow`: jobs sharing a flow id keep their request counts in the ratio of their weights.
/// One per flow id per phase, shared by the threads of every job of the group that names it.
/// Every thread adds its weight in its setup, before any thread of the phase starts (fio adds a
/// job's weight when it sets the job up), and takes its weight and its count back when it ends
/// (the others then run unconstrained by it), as fio's flow.c does.
#[derive(Debug)]
pub struct FlowShared {
    /// Requests passed by every thread of the flow, from 1 (fio's start value).
    counter: AtomicU64,
    total_weight: AtomicU64,
}

impl Default for FlowShared {
    fn default() -> Self {
        FlowShared { counter: AtomicU64::new(1), total_weight: AtomicU64::new(0) }
    }
}

/// A thread's place in its flow: its weight, its requests passed, and the stall when ahead.
pub struct FlowState {
    shared: Arc<FlowShared>,
    weight: u64,
    mine: u64,
    sleep_ns: u64,
    joined: bool,
}

impl Drop for FlowState {
    /// A thread that never ran its work (stopped before it started) leaves the flow all the same,
    /// or the others would keep waiting for its share.
    fn drop(&mut self) {
        self.leave();
    }
}

impl FlowState {
    pub fn new(shared: Arc<FlowShared>, weight: u32, sleep_us: u64) -> FlowState {
        FlowState { shared, weight: weight as u64, mine: 0, sleep_ns: sleep_us.saturating_mul(1000), joined: false }
    }

    /// The thread is set up: its weight joins the flow.
    pub fn join(&mut self) {
        if !self.joined {
            self.mine = 0;
            self.joined = true;
            self.shared.total_weight.fetch_add(self.weight, Relaxed);
        }
    }

    /// The thread ends: its weight and its count leave the flow.
    pub fn leave(&mut self) {
        if self.joined {
            self.joined = false;
            self.shared.counter.fetch_sub(self.mine, Relaxed);
            self.shared.total_weight.fetch_sub(self.weight, Relaxed);
            self.mine = 0;
        }
    }

    /// fio's test: this thread's share of the flow's requests is above its share of the weights.
    #[inline]
    pub fn ahead(&self) -> bool {
        let counter = self.shared.counter.load(Relaxed).max(1);
        let total = self.shared.total_weight.load(Relaxed).max(1);
        (self.mine as f64 / counter as f64) > (self.weight as f64 / total as f64)
    }

    /// A request passes: counted in the flow and for this thread.
    #[inline]
    pub fn pass(&mut self) {
        self.shared.counter.fetch_add(1, Relaxed);
        self.mine += 1;
    }

    /// Stall (flow_sleep at a time; without it, yield) until the thread is no longer ahead, then
    /// pass. False: the thread is to stop.
    pub fn wait_and_pass(&mut self, rec: &Recorder) -> bool {
        while self.ahead() {
            if rec.should_stop(now_ns()) {
                return false;
            }
            if self.sleep_ns > 0 {
                std::thread::sleep(std::time::Duration::from_nanos(self.sleep_ns.min(SLEEP_SLICE_NS)));
            } else {
                std::thread::yield_now();
            }
        }
        self.pass();
        true
    }
}

/// Where a job's threads run (fio's cpus_allowed / cpumask / numa_cpu_nodes with
/// cpus_allowed_policy) and where their buffers' memory comes from (fio's numa_mem_policy).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PlaceSpec {
    /// The CPUs the job's threads may run on (empty: any).
    #[serde(default)]
    pub cpus: Vec<u32>,
    /// Each thread on one CPU of the set, round robin (fio's cpus_allowed_policy=split).
    #[serde(default)]
    pub split: bool,
    #[serde(default)]
    pub mem_policy: Option<MemPolicy>,
}

/// A NUMA memory policy (set_mempolicy(2)) for a thread's allocations.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MemPolicy {
    pub mode: MemMode,
    #[serde(default)]
    pub nodes: Vec<u32>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MemMode {
    Default,
    Prefer,
    Bind,
    Interleave,
    Local,
}

impl PlaceSpec {
    pub fn is_set(&self) -> bool {
        !self.cpus.is_empty() || self.mem_policy.is_some()
    }

    pub fn validate(&self) -> Result<()> {
        if self.cpus.iter().any(|&c| c as usize >= libc::CPU_SETSIZE as usize) {
            return Err(EngineError::invalid("place.cpus", format!("CPUs are numbered below {}", libc::CPU_SETSIZE)));
        }
        if let Some(p) = &self.mem_policy {
            let needs = matches!(p.mode, MemMode::Prefer | MemMode::Bind | MemMode::Interleave);
            if needs == p.nodes.is_empty() || (p.mode == MemMode::Prefer && p.nodes.len() != 1) {
                return Err(EngineError::invalid(
                    "place.mem_policy.nodes",
                    "prefer takes one node, bind and interleave one or more, default and local none",
                ));
            }
            if p.nodes.iter().any(|&n| n >= 1024) {
                return Err(EngineError::invalid("place.mem_policy.nodes", "nodes are numbered below 1024"));
            }
        }
        Ok(())
    }

    /// Pin the calling thread (thread `tid` of its job) and set its memory policy: once, in the
    /// thread's setup, before its buffers are allocated.
    pub fn apply(&self, tid: usize) -> Result<()> {
        if !self.cpus.is_empty() {
            // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it (checked bound).
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            let chosen: &[u32] =
                if self.split { std::slice::from_ref(&self.cpus[tid % self.cpus.len()]) } else { &self.cpus };
            for &c in chosen {
                unsafe { libc::CPU_SET(c as usize, &mut set) };
            }
            // SAFETY: pid 0 is this thread; the set is a valid cpu_set_t of its size.
            if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
                return Err(EngineError::last_os(format!("sched_setaffinity to CPUs {chosen:?}")));
            }
        }
        if let Some(p) = &self.mem_policy {
            let mode = match p.mode {
                MemMode::Default => 0,
                MemMode::Prefer => 1,
                MemMode::Bind => 2,
                MemMode::Interleave => 3,
                MemMode::Local => 4,
            };
            let mut mask = [0u64; 16]; // 1024 nodes
            for &n in &p.nodes {
                mask[n as usize / 64] |= 1 << (n % 64);
            }
            let (ptr, maxnode) = if p.nodes.is_empty() { (std::ptr::null(), 0) } else { (mask.as_ptr(), 1024 + 1) };
            // SAFETY: the mask holds maxnode - 1 bits; set_mempolicy reads it only.
            let r = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, maxnode as libc::c_ulong) };
            if r != 0 {
                return Err(EngineError::last_os(format!("set_mempolicy {:?} on nodes {:?}", p.mode, p.nodes)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linear(bytes: [u64; 2], iops: [u64; 2]) -> PaceSpec {
        PaceSpec { rate_bytes_per_s: bytes, rate_iops: iops, ..PaceSpec::default() }
    }

    /// The schedule of a linear byte rate: request k of 4 KiB is due at k * 4096 / rate seconds.
    #[test]
    fn linear_byte_rate_books_each_request_at_its_share_of_the_rate() {
        let mut p = Pacer::new(&linear([1 << 20, 0], [0, 0]), [4096, 4096], 1);
        p.start(1_000);
        assert_eq!(p.book(0, 4096, 1_000), Go::Now);
        // The second is due 4096 / 1 MiB/s = 3.90625 ms after the epoch.
        assert_eq!(p.book(0, 4096, 1_000), Go::At { due: 1_000 + 3_906_250, quiesce: false });
        // Writes are not limited.
        assert_eq!(p.book(1, 4096, 1_000), Go::Now);
        // Late: the request goes at once, and the schedule is not moved (it catches up).
        assert_eq!(p.book(0, 4096, 100_000_000), Go::Now);
        assert_eq!(p.due[0], 1_000 + 3 * 3_906_250);
    }

    /// An I/O rate counts requests whatever their size (fio's rate_iops with bssplit).
    #[test]
    fn iops_rate_counts_requests() {
        let mut p = Pacer::new(&linear([0, 0], [0, 1000]), [512, 512], 1);
        p.start(0);
        for (k, len) in [512u64, 65536, 4096, 1 << 20].into_iter().enumerate() {
            let go = p.book(1, len, 0);
            let want = if k == 0 { Go::Now } else { Go::At { due: k as u64 * 1_000_000, quiesce: false } };
            assert_eq!(go, want, "request {k}");
        }
    }

    /// Poisson gaps: mean 1 / IOPS, and exponential (standard deviation equal to the mean; the
    /// share of gaps above the mean is e^-1). n = 200,000 gaps: the sample mean's standard error is
    /// mean / sqrt(n) = 0.22 % of it; 1 % is 4.5 standard errors.
    #[test]
    fn poisson_gaps_are_exponential_with_mean_one_over_iops() {
        let spec = PaceSpec { rate_iops: [50, 0], rate_process: RateProcess::Poisson, ..PaceSpec::default() };
        let mut p = Pacer::new(&spec, [4096, 4096], 7);
        p.start(0);
        let n = 200_000;
        let (mut sum, mut sum2, mut above) = (0.0f64, 0.0f64, 0usize);
        p.book(0, 4096, 0);
        for _ in 0..n {
            let due = p.due[0];
            p.book(0, 4096, 0);
            let gap = (p.due[0] - due) as f64;
            sum += gap;
            sum2 += gap * gap;
            if gap > 20e6 {
                above += 1;
            }
        }
        let mean = sum / n as f64;
        let sd = (sum2 / n as f64 - mean * mean).sqrt();
        assert!((mean / 20e6 - 1.0).abs() < 0.01, "mean gap {mean} ns, want 20 ms");
        assert!((sd / mean - 1.0).abs() < 0.02, "sd/mean {}", sd / mean);
        let share = above as f64 / n as f64;
        assert!((share - (-1.0f64).exp()).abs() < 0.005, "share above the mean {share}");
    }

    /// A Poisson byte rate uses the direction's smallest request: 400 KiB/s of 4 KiB is 100 IOPS.
    #[test]
    fn poisson_byte_rate_is_iops_of_the_smallest_request() {
        let spec =
            PaceSpec { rate_bytes_per_s: [400 << 10, 0], rate_process: RateProcess::Poisson, ..PaceSpec::default() };
        let p = Pacer::new(&spec, [4096, 0], 7);
        assert_eq!(p.mean_gap_ns[0], 1e7);
    }

    /// thinktime_blocks=3: every third request after the first waits for a quiesce.
    #[test]
    fn thinktime_every_n_blocks() {
        let spec = PaceSpec { thinktime_us: 100, thinktime_blocks: 3, ..PaceSpec::default() };
        let mut p = Pacer::new(&spec, [4096, 4096], 7);
        p.start(0);
        let q: Vec<bool> = (0..7).map(|_| matches!(p.book(0, 4096, 0), Go::At { quiesce: true, .. })).collect();
        assert_eq!(q, [false, false, false, true, false, false, true]);
    }

    /// rate_min: nothing in the first 2 s; then a cycle below the minimum stops the thread.
    #[test]
    fn rate_min_checks_each_cycle_after_settling() {
        let spec = PaceSpec { rate_min_bytes_per_s: [1 << 20, 0], ..PaceSpec::default() };
        let mut p = Pacer::new(&spec, [4096, 4096], 7);
        p.start(0);
        let s = 1_000_000_000u64;
        // 1 MiB in each of the first two seconds: nothing is checked yet.
        assert!(!p.completed(0, 1 << 20, s));
        assert!(!p.completed(0, 1 << 20, 2 * s)); // the first check point
        assert!(!p.completed(0, 2 << 20, 3 * s)); // 2 MiB/s over the cycle: kept
        assert!(!p.completed(0, 4096, 3 * s + s / 2)); // half a cycle: not checked
        assert!(p.completed(0, 4096, 4 * s)); // 8 KiB over the cycle: missed
        assert_eq!(p.missed, Some((0, 8192, 1 << 20, true)));
    }

    /// Two threads of weights 1 and 8 passing requests in turn as they may: the light one never
    /// gets more than its share plus one request.
    #[test]
    fn flow_keeps_the_ratio_of_the_weights() {
        let shared = Arc::new(FlowShared::default());
        let mut light = FlowState::new(shared.clone(), 1, 0);
        let mut heavy = FlowState::new(shared.clone(), 8, 0);
        light.join();
        heavy.join();
        for _ in 0..9000 {
            if !light.ahead() {
                light.pass();
            }
            if !heavy.ahead() {
                heavy.pass();
            }
        }
        // Every request of the light one passed only while its share was at most 1/9.
        assert!(light.mine <= (light.mine + heavy.mine + 1) / 9 + 2, "{} vs {}", light.mine, heavy.mine);
        assert!(light.mine >= 990 && heavy.mine >= 8000, "{} vs {}", light.mine, heavy.mine);
        light.leave();
        heavy.leave();
        assert_eq!(shared.counter.load(Relaxed), 1);
        assert_eq!(shared.total_weight.load(Relaxed), 0);
    }

    /// A thread pinned by its job's place runs on that one CPU afterwards (sched_getaffinity).
    #[test]
    fn place_pins_the_calling_thread() {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: zeroed sets, filled by the kernel.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::sched_getaffinity(0, size, &mut set) }, 0);
        let cpus: Vec<usize> =
            (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect();
        let last = *cpus.last().unwrap() as u32;
        std::thread::spawn(move || {
            let place = PlaceSpec { cpus: vec![last], split: false, mem_policy: None };
            place.validate().unwrap();
            place.apply(0).unwrap();
            let mut got: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            assert_eq!(unsafe { libc::sched_getaffinity(0, size, &mut got) }, 0);
            assert_eq!(unsafe { libc::CPU_COUNT(&got) }, 1);
            assert!(unsafe { libc::CPU_ISSET(last as usize, &got) });
        })
        .join()
        .unwrap();
        // A split set validates as any set.
        let split = PlaceSpec { cpus: vec![7, 9], split: true, mem_policy: None };
        assert!(split.validate().is_ok());
        let bad = PlaceSpec {
            cpus: vec![],
            split: false,
            mem_policy: Some(MemPolicy { mode: MemMode::Prefer, nodes: vec![0, 1] }),
        };
        assert!(bad.validate().unwrap_err().to_string().contains("prefer takes one node"));
    }
}
