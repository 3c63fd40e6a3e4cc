//! fio's steady-state detection for the harness's coordinator: the units it judges (one worker, or
//! the workers of a reporting group) and their criteria over a window of samples.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};

use super::recorder::ThreadCounters;

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
pub(super) struct SteadyUnit {
    pub(super) spec: Steady,
    pub(super) threads: Vec<usize>,
    pub(super) members: Vec<usize>,
    pub(super) next: u64,
    pub(super) prev: Option<(u64, u64, u64)>,
    pub(super) ramp_end: Option<u64>,
    pub(super) window: std::collections::VecDeque<f64>,
    pub(super) attained: bool,
}

impl SteadyUnit {
    pub(super) fn new(spec: Steady, threads: Vec<usize>, members: Vec<usize>) -> SteadyUnit {
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
    pub(super) fn check(&mut self, now: u64, counters: &[ThreadCounters], started_at: &[AtomicU64], nk: usize) -> bool {
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

/// One check of every unit not yet steady: the workers of a unit that has just become steady are
/// halted.
pub(super) fn check_units(
    units: &mut [SteadyUnit],
    now: u64,
    counters: &[ThreadCounters],
    started_at: &[AtomicU64],
    nk: usize,
    halts: &[AtomicBool],
) {
    for u in units.iter_mut().filter(|u| !u.attained) {
        if u.check(now, counters, started_at, nk) {
            for &t in &u.threads {
                halts[t].store(true, SeqCst);
            }
        }
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
