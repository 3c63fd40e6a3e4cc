//! fio's latency target (latency_target, latency_window, latency_percentile, latency_run): the
//! deepest queue depth, up to the job's iodepth, at which the share of requests completing within
//! the target stays at or above the percentile over a window.
//!
//! The search is fio's own (io_u.c of fio 3.x: lat_target_init, lat_target_check,
//! lat_target_success, __lat_target_failed, lat_target_failed, lat_new_cycle):
//! - the depth starts at 1, with a low bound 1 and a high bound the iodepth;
//! - a window ends once `window_ns` has passed since it began; it succeeds when
//!   100 * (completions - late) / completions >= percentile (no completion: 0/0, a failure);
//! - success: low = depth; the depth doubles while the high bound is still the iodepth, else it
//!   goes half way to the high bound (capped at the iodepth); three successes in a row one below
//!   the high bound raise the high bound by one;
//! - failure: high = depth; low drops by one when it equals the depth; the depth goes half way down
//!   to low, and the requests in flight are drained (quiesce) before the next window. A failure at
//!   depth 1 changes nothing and starts no new window (the one running goes on growing);
//! - with percentile 100 each late completion is a failure at once, and one at depth 1 ends the job
//!   (fio: ETIMEDOUT, "max latency exceeded");
//! - without latency_run, a success that leaves the depth where it was drains the requests in
//!   flight, resets the statistics and runs one more window at that depth, whose success ends the
//!   job: what is reported is that last window only. With latency_run the search never ends.
//!
//! The worker counts completions and late ones per request (two additions); the window is judged
//! once per completion batch, by one clock read the loop makes anyway.

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LatTargetSpec {
    /// A request's total latency (issue to completion) above this is late.
    pub target_ns: u64,
    /// How long each depth is tried before it is judged (0: judged at every completion batch).
    #[serde(default)]
    pub window_ns: u64,
    /// The share of a window's requests, in percent, that must be within the target.
    #[serde(default = "hundred")]
    pub percentile: f64,
    /// Keep adjusting the depth until the job's size or runtime ends (fio's latency_run).
    #[serde(default)]
    pub run: bool,
}

fn hundred() -> f64 {
    100.0
}

impl LatTargetSpec {
    pub fn validate(&self) -> Result<()> {
        if self.target_ns == 0 {
            return Err(EngineError::invalid("latency_target.target_ns", "must be > 0 (0 turns the target off)"));
        }
        if !(0.0..=100.0).contains(&self.percentile) {
            return Err(EngineError::invalid("latency_target.percentile", "must be between 0 and 100"));
        }
        Ok(())
    }
}

/// What the worker is to do after the probe saw a completion or judged a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Go on at `LatProbe::depth`.
    Go,
    /// Issue nothing until nothing is in flight, then call `LatProbe::quiesced`.
    Quiesce,
    /// The search is over: the job ends (after its requests in flight).
    Done,
    /// A late completion at depth 1 with percentile 100: the job ends with an error.
    Fatal,
}

/// One thread's search state (fio's td->latency_*).
#[derive(Clone, Debug)]
pub(crate) struct LatProbe {
    spec: LatTargetSpec,
    iodepth: u32,
    /// The depth in force (fio's latency_qd): what is reported as the depth found.
    pub depth: u32,
    high: u32,
    low: u32,
    stable: u32,
    /// The final window at the depth found is running (fio's latency_end_run).
    pub end_run: bool,
    window_start: u64,
    ios_at_start: u64,
    failed: u64,
    /// Completions since the start or the last reset of the statistics.
    ios: u64,
    /// A quiesce is under way; `reset`: the statistics are reset when it is done.
    quiescing: bool,
    reset: bool,
    /// Windows judged (successes and failures) and late completions seen, for the report.
    pub windows: u64,
    pub late: u64,
    /// When the statistics were reset for the final window (0: never).
    pub reset_at: u64,
    /// The latency of the late completion that ended the job at depth 1 with percentile 100 (0: none).
    pub fatal_ns: u64,
    /// The final window succeeded at the depth found: the search ended the job.
    pub done: bool,
}

impl LatProbe {
    pub fn new(spec: &LatTargetSpec, iodepth: u32, now: u64) -> LatProbe {
        let mut p = LatProbe {
            spec: spec.clone(),
            iodepth,
            depth: 1,
            high: iodepth,
            low: 1,
            stable: 0,
            end_run: false,
            window_start: now,
            ios_at_start: 0,
            failed: 0,
            ios: 0,
            quiescing: false,
            reset: false,
            windows: 0,
            late: 0,
            reset_at: 0,
            fatal_ns: 0,
            done: false,
        };
        p.init(now);
        p
    }

    /// fio's lat_target_init (also at the end of a ramp, through reset_all_stats).
    pub fn init(&mut self, now: u64) {
        self.end_run = false;
        self.depth = 1;
        self.high = self.iodepth;
        self.low = 1;
        self.window_start = now;
        self.ios_at_start = self.ios;
    }

    /// At the end of the warm-up (fio's ramp_time): the statistics are reset, and with them the search.
    pub fn ramp_done(&mut self, now: u64) {
        self.ios = 0;
        self.failed = 0;
        if !self.end_run {
            self.init(now);
        }
        self.new_cycle(now);
    }

    /// Something completed since the start or the last reset (fio judges no window before).
    #[inline(always)]
    pub fn started(&self) -> bool {
        self.ios > 0
    }

    /// Whether the worker may issue: nothing while a quiesce drains.
    #[inline(always)]
    pub fn holding(&self) -> bool {
        self.quiescing
    }

    /// One completed request of total latency `lat_ns`.
    #[inline(always)]
    pub fn completed(&mut self, lat_ns: u64, now: u64) -> Step {
        self.ios += 1;
        if lat_ns <= self.spec.target_ns {
            return Step::Go;
        }
        self.late += 1;
        if self.spec.percentile == 100.0 {
            if self.depth == 1 {
                self.fatal_ns = lat_ns;
                return Step::Fatal;
            }
            return self.failed_now(now);
        }
        self.failed += 1;
        Step::Go
    }

    /// After a completion batch (not during a warm-up, and only once something completed): judge
    /// the window if it is over (fio's lat_target_check). Never Fatal: a window failed at depth 1
    /// changes nothing.
    #[inline]
    pub fn check(&mut self, now: u64) -> Step {
        if self.quiescing || now.saturating_sub(self.window_start) < self.spec.window_ns {
            return Step::Go;
        }
        self.judge(now)
    }

    #[cold]
    fn judge(&mut self, now: u64) -> Step {
        let ios = self.ios - self.ios_at_start;
        // 0/0 is NaN, which is below every percentile: a failure, as in fio.
        let success = (ios as f64 - self.failed as f64) / ios as f64 * 100.0;
        self.windows += 1;
        if success >= self.spec.percentile {
            self.success(now)
        } else {
            self.failed_now(now)
        }
    }

    /// fio's lat_new_cycle.
    fn new_cycle(&mut self, now: u64) {
        self.window_start = now;
        self.ios_at_start = self.ios;
        self.failed = 0;
    }

    /// fio's __lat_target_failed.
    #[cold]
    fn failed_now(&mut self, _now: u64) -> Step {
        if self.depth == 1 {
            return Step::Go;
        }
        self.high = self.depth;
        if self.depth == self.low {
            self.low -= 1;
        }
        self.depth = (self.depth + self.low) / 2;
        self.stable = 0;
        // Drained before the next window (which starts when nothing is in flight).
        self.quiescing = true;
        Step::Quiesce
    }

    /// fio's lat_target_success.
    #[cold]
    fn success(&mut self, now: u64) -> Step {
        let before = self.depth;
        self.low = self.depth;
        if self.depth + 1 == self.high {
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        if self.high != self.iodepth {
            self.depth = (self.depth + self.high) / 2;
        } else {
            self.depth *= 2;
        }
        self.depth = self.depth.min(self.iodepth);
        if !self.spec.run && self.depth == before {
            if self.end_run {
                self.done = true;
                return Step::Done;
            }
            self.end_run = true;
            self.quiescing = true;
            self.reset = true;
            return Step::Quiesce;
        }
        self.new_cycle(now);
        Step::Go
    }

    /// Nothing is in flight any more after a quiesce: the next window starts. True when the
    /// statistics are to be reset now (the final window begins).
    #[cold]
    pub fn quiesced(&mut self, now: u64) -> bool {
        self.quiescing = false;
        let reset = std::mem::take(&mut self.reset);
        if reset {
            self.ios = 0;
            self.reset_at = now;
        }
        self.new_cycle(now);
        reset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(target_ns: u64, percentile: f64, run: bool) -> LatTargetSpec {
        LatTargetSpec { target_ns, window_ns: 10, percentile, run }
    }

    /// Runs windows of `n` completions of latency `lat(depth)` each, returning the depth of every
    /// window and how the search ended.
    fn drive(p: &mut LatProbe, lat: impl Fn(u32) -> u64, max_windows: usize) -> (Vec<u32>, Step) {
        let mut t = 0u64;
        let mut depths = vec![];
        for _ in 0..max_windows {
            depths.push(p.depth);
            let mut step = Step::Go;
            for _ in 0..4 {
                t += 1;
                step = p.completed(lat(p.depth), t);
                if step != Step::Go {
                    break;
                }
            }
            if step == Step::Fatal {
                return (depths, step);
            }
            if step == Step::Go {
                t += 10;
                step = p.check(t);
            }
            match step {
                Step::Quiesce => {
                    t += 1;
                    p.quiesced(t);
                }
                Step::Done | Step::Fatal => return (depths, step),
                Step::Go => {}
            }
        }
        (depths, Step::Go)
    }

    #[test]
    fn a_target_every_request_meets_doubles_to_the_iodepth_then_runs_one_final_window() {
        // Hand-traced from fio's lat_target_success with iodepth 128: 1, 2, 4, ... 128; the window
        // at 128 would double past the iodepth (capped: unchanged), so the statistics are reset and
        // one more window runs at 128, whose success ends the job.
        let mut p = LatProbe::new(&spec(1_000_000, 99.9, false), 128, 0);
        let (depths, end) = drive(&mut p, |_| 10, 100);
        assert_eq!(depths, vec![1, 2, 4, 8, 16, 32, 64, 128, 128]);
        assert_eq!(end, Step::Done);
        assert_eq!(p.depth, 128);
        assert!(p.end_run);
        assert!(p.reset_at > 0);
    }

    #[test]
    fn a_target_no_request_meets_keeps_depth_one_and_never_ends_the_job() {
        let mut p = LatProbe::new(&spec(5, 99.0, false), 64, 0);
        let (depths, end) = drive(&mut p, |_| 100, 20);
        assert!(depths.iter().all(|&d| d == 1));
        assert_eq!(end, Step::Go);
        assert_eq!(p.reset_at, 0);
    }

    #[test]
    fn percentile_100_fails_at_the_first_late_completion_and_ends_the_job_at_depth_1() {
        let mut p = LatProbe::new(&spec(5, 100.0, false), 64, 0);
        assert_eq!(p.completed(6, 1), Step::Fatal);
        // Within the target at depth 1: no failure.
        let mut q = LatProbe::new(&spec(5, 100.0, false), 64, 0);
        assert_eq!(q.completed(5, 1), Step::Go);
    }

    #[test]
    fn latency_grows_with_depth_the_search_bisects_to_the_deepest_depth_within_target() {
        // Latency = 10 * depth, target 100: depths up to 10 meet it. Hand trace (fio's rules):
        // 1 ok -> 2 ok -> 4 ok -> 8 ok -> 16 fails (high 16, depth (16+8)/2 = 12) -> 12 fails
        // (high 12, depth 10) -> 10 ok (low 10, depth 11) -> 11 fails (high 11, low 10, depth 10)
        // -> 10 ok: 10 + 1 == high, stable 1, depth (10+11)/2 = 10 unchanged: final window ->
        // 10 ok: stable 2, done.
        let mut p = LatProbe::new(&spec(100, 100.0, false), 32, 0);
        let (depths, end) = drive(&mut p, |d| 10 * d as u64, 100);
        assert_eq!(depths, vec![1, 2, 4, 8, 16, 12, 10, 11, 10, 10]);
        assert_eq!(end, Step::Done);
        assert_eq!(p.depth, 10);
    }

    #[test]
    fn latency_run_keeps_adjusting_and_never_ends() {
        let mut p = LatProbe::new(&spec(1_000_000, 99.9, true), 8, 0);
        let (depths, end) = drive(&mut p, |_| 10, 12);
        assert_eq!(&depths[..5], &[1, 2, 4, 8, 8]);
        assert!(depths[4..].iter().all(|&d| d == 8));
        assert_eq!(end, Step::Go);
        assert_eq!(p.reset_at, 0);
    }

    #[test]
    fn an_empty_window_is_a_failure() {
        let mut p = LatProbe::new(&spec(1_000_000, 50.0, false), 8, 0);
        p.completed(1, 1);
        assert_eq!(p.check(20), Step::Go); // 1 of 1 within: depth 2
        assert_eq!(p.depth, 2);
        assert_eq!(p.check(40), Step::Quiesce); // nothing completed in this window
        assert_eq!(p.depth, 1);
    }
}
