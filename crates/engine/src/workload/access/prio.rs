//! I/O priorities, as fio sets them (fio's prio/prioclass and its io_uring/libaio cmdprio options).
//!
//! A priority is the kernel's 16-bit ioprio value: class in bits 13-15 (1 real-time, 2 best-effort,
//! 3 idle), hint in bits 3-12, level in bits 0-2.
//!
//! - `thread`: the priority of every thread of the run phase, set with ioprio_set on the thread
//!   before the start (fio's prioclass and prio); requests without their own priority get it.
//! - `cmd`: per request, per direction (read, write), the rules of fio's cmdprio_percentage or
//!   cmdprio_bssplit: the rules for the request's size (`size` 0: any size) share a draw of a
//!   whole percent r in 0..100 (fio's rand_between(0, 99)); the first rule whose running sum of
//!   percentages exceeds r gives the request its priority (io_uring's `sqe.ioprio`). With r at or
//!   above their total, the request keeps the thread's priority, which every request carries
//!   otherwise (on io_uring too, as fio sets it on every request). The draws come from a generator of
//!   their own, so the offsets and sizes drawn are those of the same job without priorities.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

/// One cmdprio rule: `pct` percent of the requests of `size` bytes (0: every size) get `ioprio`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CmdPrio {
    #[serde(default)]
    pub size: u32,
    pub pct: u32,
    pub ioprio: u16,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PrioSpec {
    #[serde(default)]
    pub thread: u16,
    /// [read rules, write rules].
    #[serde(default)]
    pub cmd: [Vec<CmdPrio>; 2],
}

/// The ioprio classes the kernel knows (1 real-time, 2 best-effort, 3 idle) and their 8 levels.
fn check_value(field: &str, v: u16) -> Result<()> {
    let class = v >> 13;
    if class > 3 || (class == 0 && v != 0) {
        return Err(EngineError::invalid(
            field,
            format!("{v:#06x}: the class (bits 13-15) must be 1 (real-time), 2 (best-effort) or 3 (idle)"),
        ));
    }
    Ok(())
}

impl PrioSpec {
    pub fn has_cmd(&self) -> bool {
        self.cmd.iter().any(|r| !r.is_empty())
    }

    pub fn validate(&self) -> Result<()> {
        check_value("ioprio.thread", self.thread)?;
        for (d, rules) in self.cmd.iter().enumerate() {
            for (i, r) in rules.iter().enumerate() {
                check_value(&format!("ioprio.cmd[{d}][{i}].ioprio"), r.ioprio)?;
                if r.pct > 100 {
                    return Err(EngineError::invalid(format!("ioprio.cmd[{d}][{i}].pct"), "at most 100"));
                }
            }
            let mut sizes: Vec<u32> = rules.iter().map(|r| r.size).collect();
            sizes.sort_unstable();
            sizes.dedup();
            for s in sizes {
                let total: u32 = rules.iter().filter(|r| r.size == s).map(|r| r.pct).sum();
                if total > 100 {
                    return Err(EngineError::invalid(
                        format!("ioprio.cmd[{d}]"),
                        format!("the percentages for size {s} add up to {total}: at most 100"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Sets the calling thread's I/O priority (ioprio_set(IOPRIO_WHO_PROCESS, 0, value): 0 is the
/// calling thread).
pub fn set_thread_ioprio(value: u16) -> Result<()> {
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    // SAFETY: a plain system call on integers.
    let r =
        unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0 as libc::c_long, value as libc::c_long) };
    if r != 0 {
        return Err(EngineError::io(
            format!(
                "ioprio_set({value:#06x}: class {}, level {}) of a run thread (the real-time class needs root or \
                 CAP_SYS_NICE)",
                value >> 13,
                value & 7
            ),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// One thread's per-request priorities: its rules, its draws, and how many measured requests got
/// a priority of their own.
pub struct CmdPrioState {
    rules: [Vec<CmdPrio>; 2],
    rng: Xoshiro256PlusPlus,
    pub chosen: u64,
}

impl CmdPrioState {
    pub fn new(spec: &PrioSpec, seed: u64) -> Self {
        CmdPrioState { rules: spec.cmd.clone(), rng: Xoshiro256PlusPlus::seed_from_u64(seed), chosen: 0 }
    }

    /// The priority of a request of `len` bytes, when a rule gives it one (None: the thread's).
    #[inline]
    pub fn pick(&mut self, write: bool, len: u32) -> Option<u16> {
        let rules = &self.rules[write as usize];
        let total: u32 = rules.iter().filter(|r| r.size == 0 || r.size == len).map(|r| r.pct).sum();
        if total == 0 {
            return None;
        }
        // A whole percent in 0..100; the bias of the modulo is 2^-25 (fio draws it the same way).
        let r = self.rng.next_u32() % 100;
        if r >= total {
            return None;
        }
        let mut sum = 0;
        for rule in rules.iter().filter(|r| r.size == 0 || r.size == len) {
            sum += rule.pct;
            if r < sum {
                return Some(rule.ioprio);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(size: u32, pct: u32, class: u16, level: u16) -> CmdPrio {
        CmdPrio { size, pct, ioprio: class << 13 | level }
    }

    /// fio's cmdprio-bssplit.fio, advanced form: 25% of the 64 KiB reads get class 1 level 1, 75%
    /// class 3 level 2; 1 MiB reads and every write none. Over 40,000 draws each share is within
    /// 4 binomial standard deviations (25%: sd 0.22 points).
    #[test]
    fn bssplit_shares_follow_the_percentages() {
        let spec = PrioSpec {
            thread: 0,
            cmd: [vec![rule(65536, 25, 1, 1), rule(65536, 75, 3, 2), rule(1 << 20, 0, 1, 0)], vec![]],
        };
        spec.validate().unwrap();
        let mut st = CmdPrioState::new(&spec, 7);
        let n = 40_000;
        let (mut rt, mut idle) = (0, 0);
        for _ in 0..n {
            match st.pick(false, 65536) {
                Some(v) if v == (1 << 13 | 1) => rt += 1,
                Some(v) if v == (3 << 13 | 2) => idle += 1,
                v => panic!("unexpected {v:?}"),
            }
            assert_eq!(st.pick(false, 1 << 20), None);
            assert_eq!(st.pick(true, 1 << 20), None);
        }
        let share = rt as f64 / n as f64;
        assert!((share - 0.25).abs() < 4.0 * (0.25f64 * 0.75 / n as f64).sqrt(), "{share}");
        assert_eq!(rt + idle, n);
    }

    #[test]
    fn bad_classes_and_totals_are_refused() {
        let over = PrioSpec { thread: 0, cmd: [vec![rule(0, 60, 1, 0), rule(0, 50, 2, 0)], vec![]] };
        assert!(over.validate().unwrap_err().to_string().contains("add up to 110"));
        let class = PrioSpec { thread: 5 << 13, cmd: Default::default() };
        assert!(class.validate().unwrap_err().to_string().contains("ioprio.thread"));
    }
}
