//! One subrun: N tasks start together at a barrier, each runs its own order
//! of the same job list, the subrun ends when the last task finishes.
//!
//! Tasks are processes by default (AIM7 forks). Forking from fsmeter's
//! process is forking from a multi-threaded one (the Python interpreter), so
//! a child may only do what is safe there: everything a task needs (its job
//! order, names, buffers, scratch memory, program argv arrays, its result
//! slot in a shared mapping) is made before the fork, and the child then runs
//! the jobs with raw system calls only — no allocation, no lock, no Python —
//! and leaves with _exit. The grandchildren of the process jobs only call
//! chdir/execve/_exit. Tasks may also be threads of fsmeter's process.

use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Barrier;

use serde::Serialize;

use super::catalog::{info, JobId, CATALOG};
use super::jobs::{count_signal, Task};
use super::sys::JobErr;
use crate::error::{EngineError, Result};
use crate::measure::{now_ns, Control};

pub const NJOBS: usize = JobId::FunCal15 as usize + 1;
const _: () = assert!(CATALOG.len() == NJOBS);

/// Per job type, what one task did.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct JobStat {
    pub runs: u64,
    pub ns: u64,
    pub max_ns: u64,
    pub units: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

/// A task's results, written by the task into memory shared with the parent.
#[repr(C)]
pub struct Slot {
    pub ready: AtomicU64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub jobs_done: u64,
    /// Index of the failed job + 1 (0: none), its errno, and the step's name.
    pub err_job: u64,
    pub err_errno: i64,
    /// The step's name, copied (a pointer would not be valid in another process).
    pub err_step: [u8; 32],
    pub err_step_len: usize,
    pub stats: [JobStat; NJOBS],
    /// With verify: blocks read and compared, those that differed, and the first one
    /// (job + 1, 0: none; its file offset, file code, first differing byte, kind, 16 bytes from there).
    pub verify_checked: u64,
    pub verify_bad: u64,
    pub verify_first_job: u64,
    pub verify_first_offset: u64,
    pub verify_first_file: u64,
    pub verify_first_byte: u64,
    pub verify_first_kind: u64,
    pub verify_first_found: [u8; 16],
    pub verify_first_expected: [u8; 16],
}

/// The shared mapping: a stop word, then one slot per task.
struct Shared {
    base: *mut u8,
    len: usize,
    tasks: usize,
}

// SAFETY: the mapping outlives every task (threads are scoped, processes are reaped
// before it is unmapped) and each task writes only its own slot.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

fn shared_len(tasks: usize) -> usize {
    64 + tasks * std::mem::size_of::<Slot>()
}

impl Shared {
    /// The slots in a memfd (so a task program can map them too), zero-filled.
    fn new(tasks: usize) -> Result<(Shared, i32)> {
        let len = shared_len(tasks);
        // SAFETY: creating, sizing and mapping a memfd we own.
        unsafe {
            let fd = libc::memfd_create(c"fsmeter-mix".as_ptr(), libc::MFD_CLOEXEC);
            if fd < 0 {
                return Err(EngineError::last_os("creating the task result slots"));
            }
            if crate::sys::ftruncate(fd, len as libc::off_t) != 0 {
                let e = EngineError::last_os("sizing the task result slots");
                crate::sys::close(fd);
                return Err(e);
            }
            let s = Shared::map(fd, tasks).inspect_err(|_| {
                crate::sys::close(fd);
            })?;
            Ok((s, fd))
        }
    }

    fn map(fd: i32, tasks: usize) -> Result<Shared> {
        let len = shared_len(tasks);
        // SAFETY: mapping a memfd of at least `len` bytes.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
        };
        if p == libc::MAP_FAILED {
            return Err(EngineError::last_os("mapping the task result slots"));
        }
        Ok(Shared { base: p as *mut u8, len, tasks })
    }
    fn stop(&self) -> &AtomicU64 {
        // SAFETY: the first 8 bytes of the mapping, aligned, zero-initialised.
        unsafe { &*(self.base as *const AtomicU64) }
    }
    #[allow(clippy::mut_from_ref)]
    fn slot(&self, i: usize) -> &mut Slot {
        assert!(i < self.tasks);
        // SAFETY: in bounds; all-zero bytes are a valid Slot; one writer per slot.
        unsafe { &mut *(self.base.add(64 + i * std::mem::size_of::<Slot>()) as *mut Slot) }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: unmapping what `new` mapped.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

/// Run a task's job list into its slot; no allocation (see the module comment).
fn run_task(task: &mut Task, order: &[JobId], slot: &mut Slot, stop: &AtomicU64) -> bool {
    slot.start_ns = now_ns();
    for &id in order {
        if stop.load(Relaxed) != 0 {
            break;
        }
        let t0 = now_ns();
        let r = task.run(id);
        let t1 = now_ns();
        if task.verify {
            slot.verify_checked = task.checks.checked;
            slot.verify_bad = task.checks.bad;
            if let (Some(f), 0) = (task.checks.first, slot.verify_first_job) {
                slot.verify_first_job = id as u64 + 1;
                slot.verify_first_offset = f.offset;
                slot.verify_first_file = f.file as u64;
                slot.verify_first_byte = f.byte as u64;
                slot.verify_first_kind = f.kind as u64;
                slot.verify_first_found = f.found;
                slot.verify_first_expected = f.expected;
            }
        }
        match r {
            Ok(done) => {
                let s = &mut slot.stats[id as usize];
                let dt = t1 - t0;
                s.runs += 1;
                s.ns += dt;
                s.max_ns = s.max_ns.max(dt);
                s.units += done.units;
                s.bytes_read += done.bytes_read;
                s.bytes_written += done.bytes_written;
                slot.jobs_done += 1;
            }
            Err(JobErr { step, errno }) => {
                slot.err_job = id as u64 + 1;
                slot.err_errno = errno as i64;
                let k = step.len().min(32);
                slot.err_step[..k].copy_from_slice(&step.as_bytes()[..k]);
                slot.err_step_len = k;
                slot.end_ns = now_ns();
                return false;
            }
        }
    }
    slot.end_ns = now_ns();
    true
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskMode {
    /// Each task is the small task program (fork + exec), as AIM7's tasks are small processes.
    Process,
    /// Each task is a fork of fsmeter's own process (no exec): its fork and exec
    /// jobs then copy fsmeter's page tables and cost more than AIM7's.
    Fork,
    /// Each task is a thread of fsmeter's process.
    Thread,
}

/// Per job type over all tasks of a subrun.
#[derive(Clone, Debug, Serialize)]
pub struct JobSummary {
    pub class: &'static str,
    pub runs: u64,
    pub total_s: f64,
    pub mean_ms: f64,
    pub max_ms: f64,
    pub units: u64,
    pub unit: &'static str,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SubrunResult {
    pub tasks: usize,
    pub jobs_per_task: u64,
    pub file_kib: u64,
    /// From the barrier's release to the last task's end.
    pub real_time_s: f64,
    /// re-aim: jobs per task / real time x 60 x tasks.
    pub jpm: f64,
    pub jpm_per_task: f64,
    /// re-aim's job timing index: 100 x (1 - coefficient of variation of the task times).
    pub jti: f64,
    pub task_time_min_s: f64,
    pub task_time_max_s: f64,
    pub task_time_stddev_s: f64,
    /// First and last task start relative to the barrier's release (never negative).
    pub task_start_min_s: f64,
    pub task_start_max_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    /// Peak over samples of the tasks' summed RSS and PSS (process mode), or of
    /// fsmeter's own RSS (thread mode, where PSS equals RSS).
    pub tasks_rss_max_bytes: u64,
    pub tasks_pss_max_bytes: u64,
    pub disk_kib_per_s: f64,
    pub jobs: std::collections::BTreeMap<&'static str, JobSummary>,
    pub interrupted: bool,
    /// CLOCK_MONOTONIC of the barrier's release and of the last task's end: under MPI the
    /// ranks' subruns are placed on one clock with these (the IOR rule for the merged JPM).
    pub release_mono_ns: u64,
    pub end_mono_ns: u64,
    /// With verify: blocks the disk jobs read and compared, those that differed, the first few.
    pub verify_blocks_checked: u64,
    pub verify_mismatches: u64,
    pub verify_first: Vec<serde_json::Value>,
}

fn children_cpu() -> (f64, f64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

fn self_cpu() -> (f64, f64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

/// (RSS, PSS) in bytes of a process, from /proc/PID/smaps_rollup.
pub fn rss_pss(pid: i32) -> Option<(u64, u64)> {
    let path = if pid == 0 { "/proc/self/smaps_rollup".to_string() } else { format!("/proc/{pid}/smaps_rollup") };
    let text = std::fs::read_to_string(path).ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
    };
    Some((field("Rss:")?, field("Pss:")?))
}

/// Install signal_test's counting SIGUSR2 handler. A task process installs
/// it for itself; in thread mode it is installed once for fsmeter's process
/// and left there (restoring it while another session's tasks raise the
/// signal would kill the process).
fn install_signal_handler() {
    // SAFETY: the handler only bumps an atomic; sigaction is async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = count_signal as extern "C" fn(libc::c_int) as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = libc::SA_RESTART;
        libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut());
    }
}

static THREAD_HANDLER: std::sync::Once = std::sync::Once::new();

fn job_error(slot: &Slot, task: usize) -> EngineError {
    let job = CATALOG.get(slot.err_job.saturating_sub(1) as usize).map(|j| j.name).unwrap_or("?");
    let step = String::from_utf8_lossy(&slot.err_step[..slot.err_step_len.min(32)]).into_owned();
    let mut msg = format!("mix job {job} failed in task {task} at {step}");
    if job.starts_with("disk_dio") && slot.err_errno == libc::EINVAL as i64 {
        msg.push_str(
            " (this filesystem refuses 1 KiB O_DIRECT transfers: leave the disk_dio_* jobs out of the workfile)",
        );
    }
    EngineError::io(msg, std::io::Error::from_raw_os_error(slot.err_errno as i32))
}

/// Run one subrun of `n` tasks with the given orders. `tasks` holds the
/// tasks' state for the fork and thread modes (the task program builds its own).
#[allow(clippy::too_many_arguments)] // the subrun's inputs, each used once, from the one caller
pub fn subrun(
    tasks: &mut [Task],
    n: usize,
    orders: &[Vec<JobId>],
    mode: TaskMode,
    helper: Option<HelperArgs>,
    file_kib: u64,
    ctl: &Control,
) -> Result<SubrunResult> {
    if mode != TaskMode::Process && tasks.len() != n {
        return Err(EngineError::invalid("tasks", "internal: one task state per task"));
    }
    let (shared, memfd) = Shared::new(n)?;
    let sr = Subrun { shared: &shared, memfd, n, orders, mode, ctl };
    let ran = match mode {
        TaskMode::Thread => sr.run_threads(tasks),
        TaskMode::Process | TaskMode::Fork => sr.run_processes(tasks, helper),
    };
    unsafe { crate::sys::close(memfd) };
    Ok(summarise(&sr, file_kib, &ran?))
}

/// One subrun's fixed inputs: the shared page (and its memfd, for the task program), the tasks'
/// number and orders, how they run, and the phase's control.
struct Subrun<'a> {
    shared: &'a Shared,
    memfd: i32,
    n: usize,
    orders: &'a [Vec<JobId>],
    mode: TaskMode,
    ctl: &'a Control,
}

/// What running a subrun's tasks measured, for the summary.
struct Ran {
    /// The clock when the tasks were released.
    t0: u64,
    /// User and system CPU seconds of the tasks (this process's threads, or the children).
    cpu: (f64, f64),
    rss_max: u64,
    pss_max: u64,
    interrupted: bool,
}

impl Subrun<'_> {
    /// Thread mode: one thread per task. Ready: a barrier of the tasks and this thread. Go: closing
    /// the write end of a pipe wakes every task blocked reading it, after t0 is taken.
    fn run_threads(&self, tasks: &mut [Task]) -> Result<Ran> {
        let (shared, n) = (self.shared, self.n);
        let barrier = Barrier::new(n + 1);
        let mut go = [0i32; 2];
        if unsafe { libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(EngineError::last_os("creating the subrun barrier pipe"));
        }
        let go_r = go[0];
        THREAD_HANDLER.call_once(install_signal_handler);
        let failed = AtomicU64::new(0);
        let finished = AtomicU64::new(0);
        let cpu0 = self_cpu();
        let mut start = 0;
        let (mut rss_max, mut pss_max) = (0u64, 0u64);
        std::thread::scope(|s| {
            for (i, task) in tasks.iter_mut().enumerate() {
                let (barrier, failed, finished, order) = (&barrier, &failed, &finished, &self.orders[i]);
                std::thread::Builder::new()
                    .stack_size(256 << 10)
                    .spawn_scoped(s, move || {
                        barrier.wait();
                        let mut b = [0u8; 1];
                        while unsafe { crate::sys::read(go_r, b.as_mut_ptr() as *mut libc::c_void, 1) } < 0
                            && super::sys::errno() == libc::EINTR
                        {}
                        if !run_task(task, order, shared.slot(i), shared.stop()) {
                            failed.fetch_add(1, Relaxed);
                            shared.stop().store(1, Relaxed);
                        }
                        finished.fetch_add(1, Release);
                    })
                    .expect("spawning a task thread");
            }
            barrier.wait();
            start = now_ns();
            unsafe { crate::sys::close(go[1]) };
            // Sample memory and watch for a stop while the tasks run.
            while finished.load(Acquire) < n as u64 {
                if self.ctl.stop_requested() {
                    shared.stop().store(1, Relaxed);
                }
                if let Some((rr, pp)) = rss_pss(0) {
                    rss_max = rss_max.max(rr);
                    pss_max = pss_max.max(pp);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        unsafe { crate::sys::close(go_r) };
        let interrupted = self.ctl.stop_requested();
        if let Some(i) = (0..n).find(|&i| shared.slot(i).err_job != 0) {
            return Err(job_error(shared.slot(i), i));
        }
        let cpu1 = self_cpu();
        Ok(Ran { t0: start, cpu: (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1), rss_max, pss_max, interrupted })
    }

    /// Fork and process modes: one child per task (process mode: the child execs the task
    /// program). Ready: every child writes a byte to a pipe; go: closing another releases them.
    fn run_processes(&self, tasks: &mut [Task], helper: Option<HelperArgs>) -> Result<Ran> {
        let n = self.n;
        let mut ready = [0i32; 2];
        let mut go = [0i32; 2];
        unsafe {
            if libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) != 0
                || libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) != 0
            {
                return Err(EngineError::last_os("creating the subrun barrier pipes"));
            }
        }
        let helper = helper.map(|mut h| {
            h.ready_fd = ready[1];
            h.go_fd = go[0];
            h
        });
        let (pids, cpu0) = self.fork_tasks(tasks, helper.as_ref(), ready, go)?;
        unsafe { crate::sys::close(ready[1]) };
        // Barrier: every task has said it is ready, then closing `go` releases them all.
        let mut got = 0;
        let mut b = [0u8; 64];
        while got < n {
            let r = unsafe { crate::sys::read(ready[0], b.as_mut_ptr() as *mut libc::c_void, b.len()) };
            if r <= 0 {
                break;
            }
            got += r as usize;
        }
        unsafe { crate::sys::close(ready[0]) };
        let t0 = now_ns();
        unsafe { crate::sys::close(go[1]) };
        let (failed, rss_max, pss_max) = self.reap(&pids);
        let interrupted = self.ctl.stop_requested();
        if let Some(i) = failed {
            let slot = self.shared.slot(i);
            if slot.err_job != 0 {
                return Err(job_error(slot, i));
            }
            let what = if self.mode == TaskMode::Process && got < n {
                format!(
                    "mix task {i}: the task program {} did not start",
                    helper.as_ref().map(|h| h.program.as_str()).unwrap_or("?")
                )
            } else {
                format!("mix task {i} died before finishing its jobs")
            };
            return Err(EngineError::io(what, std::io::Error::from_raw_os_error(libc::ECHILD)));
        }
        let cpu1 = children_cpu();
        Ok(Ran { t0, cpu: (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1), rss_max, pss_max, interrupted })
    }

    /// Forks the tasks; returns their pids and the children's CPU times just before the first fork.
    /// Everything a child needs (the task program's argument vectors and environment) is built
    /// before it: between fork and exec a child makes only async-signal-safe calls.
    fn fork_tasks(
        &self,
        tasks: &mut [Task],
        helper: Option<&HelperArgs>,
        ready: [i32; 2],
        go: [i32; 2],
    ) -> Result<(Vec<i32>, (f64, f64))> {
        let (n, memfd) = (self.n, self.memfd);
        let argvs: Vec<(std::ffi::CString, std::ffi::CString)> = match (self.mode, helper) {
            (TaskMode::Process, Some(h)) => (0..n)
                .map(|i| {
                    let json = h.task_json(i, n, &self.orders[i], memfd);
                    (
                        std::ffi::CString::new(h.program.as_str()).unwrap_or_default(),
                        std::ffi::CString::new(json).unwrap_or_default(),
                    )
                })
                .collect(),
            (TaskMode::Process, None) => {
                return Err(EngineError::invalid("task_program", "task_mode process needs the task program"))
            }
            _ => Vec::new(),
        };
        let env: Vec<std::ffi::CString> =
            ["PATH=/usr/bin:/bin", "LC_ALL=C"].iter().map(|s| std::ffi::CString::new(*s).unwrap()).collect();
        let envp = [env[0].as_ptr(), env[1].as_ptr(), std::ptr::null()];
        let argv_ptrs: Vec<[*const std::os::raw::c_char; 3]> =
            argvs.iter().map(|(p, j)| [p.as_ptr(), j.as_ptr(), std::ptr::null()]).collect();
        let cpu0 = children_cpu();
        let mut pids = Vec::with_capacity(n);
        for i in 0..n {
            let slot = self.shared.slot(i) as *mut Slot;
            let stop = self.shared.stop() as *const AtomicU64;
            // SAFETY: see the module comment; the child runs only `child_main`.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                let e = EngineError::last_os(format!("forking task {i}"));
                kill_all(&pids);
                return Err(e);
            }
            if pid == 0 {
                if self.mode == TaskMode::Process {
                    // Only async-signal-safe calls: keep the three descriptors open across exec, exec.
                    unsafe {
                        libc::fcntl(memfd, libc::F_SETFD, 0);
                        libc::fcntl(ready[1], libc::F_SETFD, 0);
                        libc::fcntl(go[0], libc::F_SETFD, 0);
                        libc::execve(argv_ptrs[i][0], argv_ptrs[i].as_ptr(), envp.as_ptr());
                        libc::_exit(126);
                    }
                }
                unsafe { child_main(&mut tasks[i], &self.orders[i], &mut *slot, &*stop, ready, go) };
            }
            pids.push(pid);
        }
        Ok((pids, cpu0))
    }

    /// Waits for every task, sampling their memory and passing on a stop (killing them 5 s after
    /// one if they have not ended). Returns the first task that failed, and the peak RSS and PSS.
    fn reap(&self, pids: &[i32]) -> (Option<usize>, u64, u64) {
        let shared = self.shared;
        let (mut r, mut p) = (0u64, 0u64);
        let mut live: Vec<i32> = pids.to_vec();
        let mut failed: Option<usize> = None;
        let mut last_sample = 0;
        let mut stop_at = 0;
        while !live.is_empty() {
            let mut k = 0;
            while k < live.len() {
                let mut status = 0;
                let w = unsafe { libc::waitpid(live[k], &mut status, libc::WNOHANG) };
                if w == live[k] {
                    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
                    if !ok && failed.is_none() {
                        failed = pids.iter().position(|&x| x == live[k]);
                        shared.stop().store(1, Relaxed);
                    }
                    live.swap_remove(k);
                } else {
                    k += 1;
                }
            }
            let now = now_ns();
            if self.ctl.stop_requested() {
                shared.stop().store(1, Relaxed);
                if stop_at == 0 {
                    stop_at = now;
                } else if now - stop_at > 5_000_000_000 {
                    kill_all(&live);
                }
            }
            if now - last_sample > 200_000_000 {
                last_sample = now;
                let (mut rs, mut ps) = (0, 0);
                for &pid in &live {
                    if let Some((a, b)) = rss_pss(pid) {
                        rs += a;
                        ps += b;
                    }
                }
                r = r.max(rs);
                p = p.max(ps);
            }
            if !live.is_empty() {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        (failed, r, p)
    }
}

fn kill_all(pids: &[i32]) {
    for &pid in pids {
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            let mut st = 0;
            libc::waitpid(pid, &mut st, 0);
        }
    }
}

/// The body of a task process. Never returns.
unsafe fn child_main(
    task: &mut Task,
    order: &[JobId],
    slot: &mut Slot,
    stop: &AtomicU64,
    ready: [i32; 2],
    go: [i32; 2],
) -> ! {
    install_signal_handler();
    crate::sys::close(ready[0]);
    crate::sys::close(go[1]);
    let one = [1u8];
    crate::sys::write(ready[1], one.as_ptr() as *const libc::c_void, 1);
    crate::sys::close(ready[1]);
    let mut b = [0u8; 1];
    while crate::sys::read(go[0], b.as_mut_ptr() as *mut libc::c_void, 1) < 0 && super::sys::errno() == libc::EINTR {}
    crate::sys::close(go[0]);
    let ok =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_task(task, order, slot, stop))).unwrap_or(false);
    libc::_exit(if ok { 0 } else { 1 })
}

/// The subrun's result: per-task times, per-job statistics, JPM and the Jobs/Task Index.
fn summarise(sr: &Subrun, file_kib: u64, ran: &Ran) -> SubrunResult {
    let (shared, n, orders, t0) = (sr.shared, sr.n, sr.orders, ran.t0);
    let mut times = Vec::with_capacity(n);
    let starts: Vec<f64> = (0..n).map(|i| (shared.slot(i).start_ns as f64 - t0 as f64) / 1e9).collect();
    let mut end = t0;
    let mut jobs = std::collections::BTreeMap::new();
    let mut disk_units = 0u64;
    for i in 0..n {
        let s = shared.slot(i);
        end = end.max(s.end_ns);
        times.push(s.end_ns.saturating_sub(t0) as f64 / 1e9);
        for (k, st) in s.stats.iter().enumerate() {
            if st.runs == 0 {
                continue;
            }
            let inf = &CATALOG[k];
            let e = jobs.entry(inf.name).or_insert(JobSummary {
                class: inf.class.name(),
                runs: 0,
                total_s: 0.0,
                mean_ms: 0.0,
                max_ms: 0.0,
                units: 0,
                unit: inf.unit,
                bytes_read: 0,
                bytes_written: 0,
            });
            e.runs += st.runs;
            e.total_s += st.ns as f64 / 1e9;
            e.max_ms = e.max_ms.max(st.max_ns as f64 / 1e6);
            e.units += st.units;
            e.bytes_read += st.bytes_read;
            e.bytes_written += st.bytes_written;
            if info(inf.id).class == super::catalog::Class::Disk {
                disk_units += st.units;
            }
        }
    }
    for e in jobs.values_mut() {
        e.mean_ms = e.total_s * 1e3 / e.runs as f64;
    }
    let real = (end - t0) as f64 / 1e9;
    let jobs_per_task = orders.first().map(|o| o.len() as u64).unwrap_or(0);
    let per_task = if real > 0.0 { jobs_per_task as f64 / real * 60.0 } else { 0.0 };
    let mean = times.iter().sum::<f64>() / n as f64;
    let sd = (times.iter().map(|t| (t - mean) * (t - mean)).sum::<f64>() / n as f64).sqrt();
    let cov = if mean > 0.0 { sd / mean } else { 0.0 };
    SubrunResult {
        tasks: n,
        jobs_per_task,
        file_kib,
        real_time_s: real,
        jpm: per_task * n as f64,
        jpm_per_task: per_task,
        jti: if n == 1 {
            100.0
        } else if cov > 1.0 {
            0.0
        } else {
            (1.0 - cov) * 100.0
        },
        task_time_min_s: times.iter().cloned().fold(f64::INFINITY, f64::min),
        task_time_max_s: times.iter().cloned().fold(0.0, f64::max),
        task_time_stddev_s: sd,
        task_start_min_s: starts.iter().cloned().fold(f64::INFINITY, f64::min),
        task_start_max_s: starts.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        user_s: ran.cpu.0,
        sys_s: ran.cpu.1,
        tasks_rss_max_bytes: ran.rss_max,
        tasks_pss_max_bytes: ran.pss_max,
        disk_kib_per_s: if real > 0.0 { disk_units as f64 / real } else { 0.0 },
        jobs,
        interrupted: ran.interrupted,
        release_mono_ns: t0,
        end_mono_ns: end,
        verify_blocks_checked: (0..n).map(|i| shared.slot(i).verify_checked).sum(),
        verify_mismatches: (0..n).map(|i| shared.slot(i).verify_bad).sum(),
        verify_first: (0..n)
            .filter_map(|i| first_bad(i, shared.slot(i)))
            .take(crate::verify::KEEP_MISMATCHES)
            .collect(),
    }
}

/// A task's first bad block as a mismatch report (offsets are within the job's file).
fn first_bad(task: usize, s: &Slot) -> Option<serde_json::Value> {
    if s.verify_first_job == 0 {
        return None;
    }
    let job = CATALOG.get(s.verify_first_job as usize - 1).map(|j| j.name).unwrap_or("?");
    let file = super::jobs::CHECKED_FILES.get(s.verify_first_file as usize).copied().unwrap_or("?");
    let hex = |b: &[u8]| crate::verify::header::hex(b);
    let at = (s.verify_first_byte as usize).min(super::jobs::BLOCK - 16);
    Some(serde_json::json!({
        "file": format!("task {task}, job {job}: {file}"), "offset": s.verify_first_offset, "len": super::jobs::BLOCK,
        "kind": crate::verify::content::KINDS.get(s.verify_first_kind as usize).copied().unwrap_or("bad_data"),
        "phase": "subruns", "first_diff": s.verify_first_byte, "first_diff_offset": s.verify_first_offset + s.verify_first_byte,
        "window_start": at, "found_bytes": hex(&s.verify_first_found), "expected_bytes": hex(&s.verify_first_expected),
    }))
}

/// What the task program needs besides its index and order.
#[derive(Clone, Debug)]
pub struct HelperArgs {
    pub program: String,
    pub dir: std::path::PathBuf,
    pub fakeh: std::path::PathBuf,
    pub file_kib: u64,
    pub sync: super::jobs::SyncMode,
    pub exec_path: String,
    /// Task seeds by index.
    pub seeds: Vec<u64>,
    pub ready_fd: i32,
    pub go_fd: i32,
    /// Verify the disk jobs' reads (jobs::Task::verify).
    pub verify: bool,
}

#[derive(Serialize, serde::Deserialize)]
struct TaskArgs {
    dir: std::path::PathBuf,
    fakeh: std::path::PathBuf,
    file_kib: u64,
    sync: super::jobs::SyncMode,
    exec_path: String,
    seed: u64,
    index: usize,
    tasks: usize,
    order: Vec<u8>,
    slots_fd: i32,
    ready_fd: i32,
    go_fd: i32,
    #[serde(default)]
    verify: bool,
}

impl HelperArgs {
    fn task_json(&self, i: usize, n: usize, order: &[JobId], memfd: i32) -> String {
        serde_json::to_string(&TaskArgs {
            dir: self.dir.clone(),
            fakeh: self.fakeh.clone(),
            file_kib: self.file_kib,
            sync: self.sync,
            exec_path: self.exec_path.clone(),
            seed: self.seeds[i],
            index: i,
            tasks: n,
            order: order.iter().map(|&j| j as u8).collect(),
            slots_fd: memfd,
            ready_fd: self.ready_fd,
            go_fd: self.go_fd,
            verify: self.verify,
        })
        .unwrap_or_default()
    }
}

/// The task program's body: map the slots, build the task, barrier, run.
pub fn helper_main(arg: &str) -> Result<i32> {
    let a: TaskArgs = serde_json::from_str(arg).map_err(|e| EngineError::invalid("task", e.to_string()))?;
    let shared = Shared::map(a.slots_fd, a.tasks)?;
    let progs = super::jobs::Programs::new(&a.exec_path);
    let fakeh = super::fakeh::Fakeh::create(&a.fakeh)?;
    let order: Vec<JobId> = a.order.iter().filter_map(|&k| CATALOG.get(k as usize).map(|j| j.id)).collect();
    use std::os::unix::ffi::OsStrExt;
    let mut task = Task::new(a.index, a.dir.as_os_str().as_bytes(), a.file_kib, a.sync, a.seed, &progs, &fakeh);
    task.verify = a.verify;
    let slot = shared.slot(a.index) as *mut Slot;
    // SAFETY: this process owns slot `index`; the descriptors were passed by the engine.
    unsafe { child_main(&mut task, &order, &mut *slot, shared.stop(), [-1, a.ready_fd], [a.go_fd, -1]) }
}
