//! fio's cpuio engine (`fio_engine = "cpuio"`): no I/O, each thread burns `cpu_load` percent of one
//! CPU for the job's duration, as fio's does: a burst of work, then a sleep `burst * (100 - load) /
//! load` long, over and over. The burst is `cpu_chunk_us` of spinning on the clock (`cpu_mode =
//! "noop"`, fio's default) or one round of sorts of 256 Ki 32-bit integers (`"qsort"`: fio's four
//! sorts, ascending, descending, by byte, descending; the burst is then as long as the sorts took).
//! With `cpu_exit_on_io_done` (fio's exit_on_io_done) the job stops once the I/O jobs of its group
//! are done.
//!
//! Each burst is counted as one `cpu` operation (its latency: the burst's length), left out of the
//! data totals; the job's threads' CPU time (CLOCK_THREAD_CPUTIME_ID) is in the report's counters
//! (`cpu_ns`) and `extra.cpuio`, with the share of one CPU each thread used.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use serde::{Deserialize, Serialize};

use super::pace::sleep_until;
use super::workload::{Access, CpuUsed, CPU, KINDS, NOT_DATA};
use crate::error::Result;
use crate::measure::{now_ns, run_group, Control, GroupMember, Recorder};
use crate::report::PhaseReport;
use crate::settings::Settings;

/// Integers sorted per qsort burst (fio's 256 Ki).
const QSORT_INTS: usize = 256 << 10;

/// What a cpuio burst does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuMode {
    /// Spin on the clock for `cpu_chunk_us`.
    #[default]
    Noop,
    /// Sort 256 Ki integers four ways.
    Qsort,
}

/// One cpuio thread's state: its integers to sort (qsort), made before the common start.
pub(in crate::workload::access) struct CpuState {
    data: Vec<i32>,
}

/// This thread's CPU time so far (CLOCK_THREAD_CPUTIME_ID), in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime fills the struct we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Access {
    pub(in crate::workload::access) fn cpu_state(&self, job: &Settings, tid: usize) -> Result<CpuState> {
        // Pinned (fio's cpus_allowed and friends) before the thread's data is made, as the I/O jobs' threads.
        if self.spec.place.is_set() {
            self.spec.place.apply(tid)?;
        }
        let data = if self.spec.cpu_mode == CpuMode::Qsort {
            // Pseudo-random integers (xorshift), filled once: the sorts reorder them each burst.
            let mut x = job.seed ^ (tid as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            (0..QSORT_INTS)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as i32
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(CpuState { data })
    }

    /// One burst of work; returns when it ended.
    #[inline]
    fn burst(&self, st: &mut CpuState, t0: u64, rec: &Recorder) -> u64 {
        match self.spec.cpu_mode {
            CpuMode::Noop => {
                let until = t0 + self.spec.cpu_chunk_us * 1000;
                loop {
                    let t = now_ns();
                    if t >= until || rec.interrupted() {
                        return t;
                    }
                    std::hint::spin_loop();
                }
            }
            CpuMode::Qsort => {
                let d = &mut st.data;
                d.sort_unstable();
                d.sort_unstable_by(|a, b| b.cmp(a));
                // SAFETY: the integers' bytes, viewed as bytes, inside the vector.
                let bytes = unsafe { std::slice::from_raw_parts_mut(d.as_mut_ptr() as *mut u8, d.len() * 4) };
                bytes.sort_unstable();
                d.sort_unstable_by(|a, b| b.cmp(a));
                now_ns()
            }
        }
    }

    /// A cpuio thread's run: bursts and sleeps until the deadline, a stop, or (with
    /// `cpu_exit_on_io_done`) until `io_left`, the group's I/O threads still running, is 0.
    pub(in crate::workload::access) fn cpu_work(
        &self,
        st: &mut CpuState,
        rec: &mut Recorder,
        io_left: Option<&AtomicUsize>,
    ) -> Result<()> {
        let load = self.spec.cpu_load.clamp(1, 100) as u64;
        let cpu0 = thread_cpu_ns();
        let (mut bursts, mut burst_ns) = (0u64, 0u64);
        loop {
            let t0 = now_ns();
            if rec.should_stop(t0) {
                break;
            }
            if self.spec.cpu_exit_on_io_done && io_left.is_none_or(|n| n.load(Relaxed) == 0) {
                break;
            }
            let t1 = self.burst(st, t0, rec);
            rec.record(CPU, 0, t0, t1);
            bursts += 1;
            burst_ns += t1 - t0;
            let sleep = (t1 - t0) * (100 - load) / load;
            if sleep > 0 && !sleep_until(t1 + sleep, rec) {
                break;
            }
        }
        let used = thread_cpu_ns().saturating_sub(cpu0);
        let mut c = self.cpu_used.lock().unwrap_or_else(|e| e.into_inner());
        c.cpu_ns += used;
        c.bursts += bursts;
        c.burst_ns += burst_ns;
        c.threads += 1;
        Ok(())
    }

    /// The run phase of a cpuio job alone.
    pub(in crate::workload::access) fn run_cpu(&self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        *self.cpu_used.lock().unwrap_or_else(|e| e.into_inner()) = CpuUsed::default();
        let t = self.run_timing(job)?;
        let member = GroupMember::new(job.threads, t.warmup_ns, t.duration_ns);
        let (mut report, _, _) = run_group(
            "run",
            &[member],
            t.interval_ns,
            ctl,
            KINDS,
            self.spec.sigfig(),
            0,
            |tid| self.cpu_state(job, tid),
            |st, rec| self.cpu_work(st, rec, None),
        )?;
        report.totals_without(NOT_DATA);
        self.finish_cpu(&mut report);
        Ok(report)
    }

    /// The job's CPU use into its report: `counters.cpu_ns` and `extra.cpuio`.
    pub(in crate::workload::access) fn finish_cpu(&self, report: &mut PhaseReport) {
        let c = std::mem::take(&mut *self.cpu_used.lock().unwrap_or_else(|e| e.into_inner()));
        let ns = c.cpu_ns;
        report.counters.insert("cpu_ns".into(), ns);
        report.counters.insert("cpu_bursts".into(), c.bursts);
        let threads = c.threads;
        let wall = report.elapsed_s.max(1e-9) * threads.max(1) as f64;
        report.extra = serde_json::json!({
            "fio_engine": "cpuio",
            "cpuio": {
                "cpu_load_pct": self.spec.cpu_load,
                "cpu_mode": self.spec.cpu_mode,
                "cpu_chunk_us": self.spec.cpu_chunk_us,
                "exit_on_io_done": self.spec.cpu_exit_on_io_done,
                "threads": threads,
                "cpu_s": ns as f64 / 1e9,
                "cpu_pct_of_one_cpu_per_thread": 100.0 * ns as f64 / 1e9 / wall,
                "burst_pct_of_wall_per_thread": 100.0 * c.burst_ns as f64 / 1e9 / wall,
                "why": "burst_pct is the share of the time each thread spent in its bursts (what cpuload sets); \
                        cpu_pct the CPU it got meanwhile: lower when other work competed for the CPUs",
            },
        });
    }
}
