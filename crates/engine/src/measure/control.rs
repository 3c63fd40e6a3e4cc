//! What a phase shares with whoever drives it (the Python side's progress bar and Ctrl-C, an MPI
//! rank's barrier): the stop flag, the progress the coordinator publishes, the start hold, and the
//! start gate that releases a phase's workers together.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::*};
use std::sync::{Condvar, Mutex};

use super::clock::now_ns;

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
    pub(super) fn wait_at_start_hold(&self) {
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
