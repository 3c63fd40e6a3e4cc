//! The mix family (AIM Suite VII, as the open re-aim-7 runs it): N tasks
//! each run the same list of jobs, drawn from a workfile's weights, in their
//! own random order; a subrun ends when the last task finishes; N rises from
//! subrun to subrun by a schedule or by re-aim's search; the metric is jobs
//! per minute (JPM) and the headline its peak.
//!
//! Phases: `prepare` (the disk_src tree), `subruns` (the whole schedule, one
//! report with every subrun in `extra`), `cleanup` (removes `dir/mix`).
//! Files: catalog (job names and units), order (weights -> per-task lists),
//! jobs + compute (the job bodies), fakeh (the searched tree), driver (one
//! subrun), search (which N comes next).

pub mod catalog;
pub mod compute;
pub mod driver;
pub mod fakeh;
pub mod jobs;
pub mod order;
pub mod search;
pub mod sys;

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use serde::Deserialize;

use crate::error::{EngineError, Result};
use crate::measure::{Control, RunState};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::workload::family::Workload;

use catalog::JobId;
use driver::{SubrunResult, TaskMode};
use jobs::{Programs, SyncMode, Task};
use search::{Schedule, Search};

/// One workfile line: `hits job_name`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Weight {
    pub job: String,
    pub hits: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixSpec {
    /// The workfile's job weights.
    pub weights: Vec<Weight>,
    /// Verify the disk jobs' reads: every block read back is compared with the block written
    /// (re-aim's printable pattern; all blocks are alike, so a misplaced block is not found).
    #[serde(default)]
    pub verify: bool,
    /// Testing verification: flip this byte of tmpa.common after writing it (each subrun), as
    /// storage that damaged it would.
    #[serde(default)]
    pub fault_common_byte: Option<u64>,
    /// Jobs per task before rounding (re-aim -j, default 100).
    #[serde(default = "default_jobs")]
    pub jobs_per_task: u32,
    /// FILESIZE in KiB: disk-job file size when `pool_kib` is 0.
    #[serde(default = "default_file")]
    pub file_kib: u64,
    /// POOLSIZE in KiB: split over the tasks, file = file_kib + pool_kib / N.
    #[serde(default = "default_pool")]
    pub pool_kib: u64,
    /// The task counts to run, in order (empty: use `search`).
    #[serde(default)]
    pub tasks: Vec<usize>,
    /// re-aim's searches, when `tasks` is empty.
    #[serde(default)]
    pub search: Option<Search>,
    #[serde(default = "one")]
    pub start_tasks: usize,
    #[serde(default = "one")]
    pub increment: usize,
    /// re-aim's adaptive increment (on unless -t).
    #[serde(default = "yes")]
    pub adaptive_increment: bool,
    #[serde(default = "default_max_tasks")]
    pub max_tasks: usize,
    /// JPM per task at or below which the crossover is reached (re-aim: 10; -q: 60).
    #[serde(default = "default_crossover")]
    pub crossover_jpm_per_task: f64,
    #[serde(default = "default_sync")]
    pub sync: SyncMode,
    #[serde(default = "default_mode")]
    pub task_mode: TaskMode,
    /// The small program exec_test runs.
    #[serde(default = "default_exec")]
    pub exec_path: String,
    /// The task program (fsmeter-mix-task) that task_mode process execs per task.
    #[serde(default)]
    pub task_program: Option<String>,
}

fn default_jobs() -> u32 {
    100
}
fn default_file() -> u64 {
    10
}
fn default_pool() -> u64 {
    1024
}
fn one() -> usize {
    1
}
fn yes() -> bool {
    true
}
fn default_max_tasks() -> usize {
    1024
}
fn default_crossover() -> f64 {
    10.0
}
fn default_sync() -> SyncMode {
    SyncMode::Syscall
}
fn default_mode() -> TaskMode {
    TaskMode::Process
}
fn default_exec() -> String {
    "/bin/true".to_string()
}

impl MixSpec {
    /// The weights as job ids; an unknown name is an error naming it.
    pub fn job_weights(&self) -> Result<Vec<(JobId, u32)>> {
        if self.weights.is_empty() {
            return Err(EngineError::invalid("weights", "the workfile names no job"));
        }
        self.weights
            .iter()
            .map(|w| match catalog::lookup(&w.job) {
                Some(id) if w.hits > 0 => Ok((id, w.hits)),
                Some(_) => Err(EngineError::invalid("weights", format!("job {}: hits must be > 0", w.job))),
                None if catalog::NOT_IMPLEMENTED.contains(&w.job.as_str()) => Err(EngineError::invalid(
                    "weights",
                    format!("job {} (libaio) is not implemented by fsmeter: remove it", w.job),
                )),
                None => Err(EngineError::invalid(
                    "weights",
                    format!("unknown job {:?}: see the mix family's job list", w.job),
                )),
            })
            .collect()
    }

    fn validate(&self) -> Result<()> {
        self.job_weights()?;
        if self.jobs_per_task == 0 {
            return Err(EngineError::invalid("jobs_per_task", "must be >= 1"));
        }
        if self.file_kib == 0 && self.pool_kib == 0 {
            return Err(EngineError::invalid("file_kib", "file_kib and pool_kib cannot both be 0"));
        }
        if self.tasks.iter().any(|&n| n == 0 || n > 4096) {
            return Err(EngineError::invalid("tasks", "each task count must be between 1 and 4096"));
        }
        if self.tasks.is_empty() && self.search.is_none() {
            return Err(EngineError::invalid("tasks", "give a list of task counts or a search (peak, crossover)"));
        }
        if self.start_tasks == 0 || self.increment == 0 || self.max_tasks < self.start_tasks || self.max_tasks > 4096 {
            return Err(EngineError::invalid(
                "max_tasks",
                "need 1 <= start_tasks <= max_tasks <= 4096 and increment >= 1",
            ));
        }
        if self.task_mode == TaskMode::Process {
            match &self.task_program {
                Some(p) if std::path::Path::new(p).is_file() => {}
                Some(p) => {
                    return Err(EngineError::invalid(
                        "task_program",
                        format!("{p} does not exist: build it (make build) or use task_mode fork or thread"),
                    ))
                }
                None => {
                    return Err(EngineError::invalid(
                        "task_program",
                        "task_mode process needs the path of fsmeter-mix-task",
                    ))
                }
            }
        }
        if !std::path::Path::new(&self.exec_path).is_file() {
            return Err(EngineError::invalid("exec_path", format!("{} is not a file", self.exec_path)));
        }
        Ok(())
    }

    /// Disk-job file size in KiB for N tasks.
    pub fn file_kib_for(&self, tasks: usize) -> u64 {
        self.file_kib + self.pool_kib / tasks as u64
    }
}

pub struct Mix {
    spec: MixSpec,
    weights: Vec<(JobId, u32)>,
    root: PathBuf,
    progs: Programs,
    /// The disk_src tree has been built (its directory is opened per subrun
    /// only, so nothing of fsmeter's holds the filesystem between phases).
    prepared: bool,
}

impl Mix {
    pub fn new(job: &Settings, spec: MixSpec) -> Result<Mix> {
        spec.validate()?;
        let root = job.dir.join("mix");
        if !fakeh::Fakeh::path_len_ok(&root) {
            return Err(EngineError::invalid("dir", "path too long for the mix family (keep it under 800 bytes)"));
        }
        Ok(Mix { weights: spec.job_weights()?, progs: Programs::new(&spec.exec_path), spec, root, prepared: false })
    }

    fn prepare(&mut self) -> Result<PhaseReport> {
        crate::nofollow::create_dirs(self.root.parent().unwrap_or(&self.root), &self.root)?;
        fakeh::Fakeh::create(&self.root.join("fakeh"))?;
        self.prepared = true;
        let mut r = PhaseReport::new("prepare");
        r.counters.insert("fakeh_entries".into(), (fakeh::LEAF_DIRS.len() * fakeh::ENTRIES_PER_DIR) as u64);
        Ok(r)
    }

    /// The shared input of the copy and cached-read jobs: `kib` KiB of printable bytes, synced.
    fn write_common(&self, kib: u64) -> Result<()> {
        let path = self.root.join("tmpa.common");
        let ctx = |e| EngineError::io(format!("writing {}", path.display()), e);
        let mut f = crate::nofollow::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| crate::nofollow::error(&path, "writing", e))?;
        let block: Vec<u8> = (0..jobs::BLOCK).map(|j| b' ' + (j % 95) as u8).collect();
        for _ in 0..kib {
            f.write_all(&block).map_err(ctx)?;
        }
        if let Some(at) = self.spec.fault_common_byte.filter(|&at| at < kib * 1024) {
            use std::os::unix::fs::FileExt;
            let mut b = [0u8];
            f.read_exact_at(&mut b, at).map_err(ctx)?;
            f.write_all_at(&[b[0] ^ 0x20], at).map_err(ctx)?;
        }
        f.sync_all().map_err(ctx)?;
        Ok(())
    }

    fn one_subrun(&mut self, n: usize, job: &Settings, ctl: &Control) -> Result<SubrunResult> {
        let file_kib = self.spec.file_kib_for(n);
        self.write_common(file_kib)?;
        let fakeh = &fakeh::Fakeh::create(&self.root.join("fakeh"))?;
        let counts = order::per_task_counts(&self.weights, self.spec.jobs_per_task);
        let orders: Vec<Vec<JobId>> = (0..n)
            .map(|i| order::task_order(&counts, &mut order::Rng::new(order::task_seed(job.seed, n, i))))
            .collect();
        let dir = self.root.as_os_str().as_bytes();
        let seeds: Vec<u64> = (0..n).map(|i| order::task_seed(job.seed ^ 0x5EED, n, i)).collect();
        // A process-mode task builds its own state in the task program; the others run these.
        let local = if self.spec.task_mode == TaskMode::Process { 0 } else { n };
        let mut tasks: Vec<Task> = (0..local)
            .map(|i| {
                let mut t = Task::new(i, dir, file_kib, self.spec.sync, seeds[i], &self.progs, fakeh);
                t.verify = self.spec.verify;
                t
            })
            .collect();
        let helper = self.spec.task_program.as_ref().map(|p| driver::HelperArgs {
            program: p.clone(),
            dir: self.root.clone(),
            fakeh: fakeh.root.clone(),
            file_kib,
            sync: self.spec.sync,
            exec_path: self.spec.exec_path.clone(),
            seeds,
            ready_fd: -1,
            go_fd: -1,
            verify: self.spec.verify,
        });
        // re-aim syncs before each subrun, "to clean out the cache".
        unsafe { libc::sync() };
        driver::subrun(&mut tasks, n, &orders, self.spec.task_mode, helper, file_kib, ctl)
    }

    fn subruns(&mut self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        if !self.prepared {
            self.prepare()?;
        }
        let mut schedule = Schedule::new(&self.spec);
        ctl.begin(RunState::Measuring, 0, 0, schedule.known_total().unwrap_or(0) as u64);
        let mut results: Vec<SubrunResult> = Vec::new();
        let mut jobs_done = 0u64;
        let mut interrupted = false;
        let cpu0 = crate::measure::cpu::snapshot();
        while let Some(n) = schedule.next(results.last()) {
            let r = self.one_subrun(n, job, ctl)?;
            jobs_done += r.jobs.values().map(|j| j.runs).sum::<u64>();
            ctl.publish(results.len() as u64 + 1, 0);
            interrupted = r.interrupted;
            results.push(r);
            if interrupted {
                break;
            }
        }
        let cpu1 = crate::measure::cpu::snapshot();
        let mut rep = PhaseReport::new("subruns");
        rep.interrupted = interrupted;
        rep.threads = results.iter().map(|r| r.tasks).max().unwrap_or(0);
        rep.elapsed_s = results.iter().map(|r| r.real_time_s).sum();
        rep.total.ops = jobs_done;
        rep.total.bytes = results.iter().flat_map(|r| r.jobs.values()).map(|j| j.bytes_read + j.bytes_written).sum();
        if rep.elapsed_s > 0.0 {
            rep.total.ops_per_s = jobs_done as f64 / rep.elapsed_s;
            rep.total.bytes_per_s = rep.total.bytes as f64 / rep.elapsed_s;
        }
        rep.cpu = crate::measure::cpu::usage(&cpu0, &cpu1);
        let summary = search::summarise(&results, self.spec.crossover_jpm_per_task);
        rep.counters.insert("subruns".into(), results.len() as u64);
        rep.counters.insert("peak_tasks".into(), summary.peak_tasks as u64);
        if let Some(c) = summary.crossover_tasks {
            rep.counters.insert("crossover_tasks".into(), c as u64);
        }
        rep.extra = serde_json::json!({
            "peak_jpm": summary.peak_jpm,
            "peak_tasks": summary.peak_tasks,
            "crossover_tasks": summary.crossover_tasks,
            "crossover_jpm_per_task": self.spec.crossover_jpm_per_task,
            "stop_reason": schedule.stop_reason(),
            "task_mode": self.spec.task_mode,
            "sync": self.spec.sync,
            "jobs_per_task": results.first().map(|r| r.jobs_per_task),
            "tasks_rss_max_bytes": results.iter().map(|r| r.tasks_rss_max_bytes).max(),
            "tasks_pss_max_bytes": results.iter().map(|r| r.tasks_pss_max_bytes).max(),
            "subruns": results,
        });
        if self.spec.verify {
            let mut kept: Vec<serde_json::Value> =
                results.iter().flat_map(|r| r.verify_first.iter().cloned()).collect();
            kept.truncate(crate::verify::KEEP_MISMATCHES);
            let bad: u64 = results.iter().map(|r| r.verify_mismatches).sum();
            let checked: u64 = results.iter().map(|r| r.verify_blocks_checked).sum();
            rep.counters.insert("verify_blocks_checked".into(), checked);
            rep.counters.insert("verify_blocks_written".into(), 0);
            rep.counters.insert("verify_mismatches".into(), bad);
            rep.extra["verify"] = serde_json::json!({
                "algo": "pattern", "blocks_checked": checked, "mismatches_total": bad, "mismatches": kept,
                "notes": {"how": "every 1 KiB block (re-aim's block) a disk job reads back (its own file, or tmpa.common) is compared with the block AIM7 writes everywhere (a printable pattern)",
                          "not_found": "a block at the wrong offset or a stale block: all blocks are alike",
                          "first_per_task": "each task reports its first bad block only; all are counted"},
            });
        }
        if results.iter().any(|r| r.real_time_s < 1.0) {
            rep.warnings.push("a subrun lasted under 1 s: its JPM is noisy (raise jobs_per_task or file size)".into());
        }
        Ok(rep)
    }

    fn cleanup(&mut self) -> Result<PhaseReport> {
        self.prepared = false;
        if self.root.exists() {
            std::fs::remove_dir_all(&self.root)
                .map_err(|e| EngineError::io(format!("removing {}", self.root.display()), e))?;
        }
        Ok(PhaseReport::new("cleanup"))
    }
}

impl serde::Serialize for SyncMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            SyncMode::Shell => "shell",
            SyncMode::Syscall => "syscall",
            SyncMode::None => "none",
        })
    }
}

impl serde::Serialize for TaskMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            TaskMode::Process => "process",
            TaskMode::Fork => "fork",
            TaskMode::Thread => "thread",
        })
    }
}

impl Workload for Mix {
    fn phases(&self) -> &'static [&'static str] {
        &["prepare", "subruns", "cleanup"]
    }

    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        match phase {
            "prepare" => self.prepare(),
            "subruns" => self.subruns(job, ctl),
            _ => self.cleanup(),
        }
    }
}
