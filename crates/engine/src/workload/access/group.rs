//! A group of access jobs measured together, as fio runs the jobs of one group (no `stonewall`
//! between them): every job has its own spec (mix, sizes, files, random map, byte total or
//! duration), its own threads, seed and backend; all their threads start at one gate and the phase
//! ends when the last job is done. Each job counts into its own threads' counters, merged after the
//! phase, so the hot loop is the access family's own, unchanged.
//!
//! Run control, as fio's: a job may start late (`start_delay_s`, fio's startdelay) or when every
//! thread of an earlier job is done (`wait_for`), and the end of each of its threads may stop the
//! jobs of its reporting group, every started job, or every job (`exit`: fio's exitall with
//! exit_what). Jobs with a flow weight of one flow id share its counter (fio's flow).
//!
//! Phases: `prepare` lays every job's files out (one job after the other, as fio sets its jobs up
//! before the group starts), `run` measures them together, `verify` re-reads the files of jobs with
//! `verify`, `cleanup` removes every job's files.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use serde::Deserialize;

use super::cpuio::CpuState;
use super::fileops::NameState;
use super::layout::RunFiles;
use super::pace::FlowShared;
use super::worker::RunState;
use super::workload::{BufStats, KINDS, NOT_DATA};
use super::{Access, AccessSpec, FioEngine};
use crate::backend::aio::AioBackend;
use crate::backend::mmap::MmapBackend;
use crate::backend::null::NullBackend;
use crate::backend::psync::PsyncBackend;
use crate::backend::uring::UringBackend;
use crate::backend::BackendKind;
use crate::error::{EngineError, Result};
use crate::measure::duration::secs_to_ns;
use crate::measure::{run_group, Control, Exit, GroupMember, Recorder};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::verify::Checker;
use crate::workload::family::Workload;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupJob {
    /// The job's name: its key in the phase report's `jobs`.
    pub name: String,
    #[serde(default = "one")]
    pub threads: usize,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default = "default_backend")]
    pub backend: BackendKind,
    pub workload: AccessSpec,
    /// Seconds after the group's start before the job starts (fio's startdelay).
    #[serde(default)]
    pub start_delay_s: f64,
    /// The name of an earlier job of the group: this one starts when every thread of that one is
    /// done (fio's wait_for).
    #[serde(default)]
    pub wait_for: Option<String>,
    /// What the end of each of the job's threads stops (fio's exitall and exit_what).
    #[serde(default)]
    pub exit: ExitWhat,
    /// The job's reporting group (fio's new_group): the jobs exit = "group" stops.
    #[serde(default)]
    pub report_group: u32,
}

/// fio's exitall with its exit_what: when a thread of the job ends, stop nothing (no exitall),
/// the jobs of its reporting group, every job that has started, or every job.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ExitWhat {
    #[default]
    None,
    Group,
    Stonewall,
    All,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessGroupSpec {
    pub jobs: Vec<GroupJob>,
}

fn one() -> usize {
    1
}
fn default_seed() -> u64 {
    42
}
fn default_backend() -> BackendKind {
    BackendKind::Psync
}

struct Member {
    name: String,
    settings: Settings,
    access: Access,
    start_delay_ns: u64,
    wait_for: Option<usize>,
    exit: Exit,
    report_group: u32,
}

/// What one thread returns: its mix counts per entry, and its verification checker.
type ThreadMix = (Vec<[u64; 5]>, Option<Checker>);

pub struct AccessGroup {
    members: Vec<Member>,
}

/// One thread's run state, whichever backend its job uses. One per thread, made before the start:
/// boxing the large variants would add an indirection to every request for no saving.
#[allow(clippy::large_enum_variant)]
enum AnyState {
    Psync(RunState<PsyncBackend>),
    Uring(RunState<UringBackend>),
    Aio(RunState<AioBackend>),
    Null(RunState<NullBackend>),
    Mmap(RunState<MmapBackend>),
    /// fio's file and directory engines: names, no backend.
    Names(NameState),
    /// fio's cpuio engine: no files.
    Cpu(CpuState),
}

impl AccessGroup {
    /// Each job checked as an access workload of its own, on the group's directory and interval.
    pub fn new(job: &Settings, spec: AccessGroupSpec) -> Result<AccessGroup> {
        if spec.jobs.is_empty() {
            return Err(EngineError::invalid("jobs", "give at least one job"));
        }
        let mut members: Vec<Member> = Vec::with_capacity(spec.jobs.len());
        let njobs = spec.jobs.len();
        for (i, j) in spec.jobs.into_iter().enumerate() {
            let at = |what: &str| format!("jobs[{i}].{what}");
            if j.workload.latency_target.is_some() && njobs > 1 {
                return Err(EngineError::invalid(
                    at("workload.latency_target"),
                    "a latency target runs one job alone (its final window restarts the measurement): put the job in a group of its own",
                ));
            }
            if j.name.is_empty() || members.iter().any(|m| m.name == j.name) {
                return Err(EngineError::invalid(
                    at("name"),
                    format!("{:?}: give every job its own, non-empty name", j.name),
                ));
            }
            if j.workload.fault.is_some() {
                return Err(EngineError::invalid(
                    at("workload.fault"),
                    "fault injection runs one job at a time: use the access family",
                ));
            }
            let settings = Settings {
                dir: job.dir.clone(),
                threads: j.threads,
                seed: j.seed,
                backend: j.backend,
                interval_s: job.interval_s,
            };
            settings.validate().map_err(|e| prefixed(e, &at("")))?;
            let start_delay_ns = secs_to_ns(&at("start_delay_s"), j.start_delay_s)?;
            let wait_for = match &j.wait_for {
                None => None,
                Some(w) => Some(members.iter().position(|m| &m.name == w).ok_or_else(|| {
                    EngineError::invalid(
                        at("wait_for"),
                        format!("{w:?} is not an earlier job of the group: name a job before this one"),
                    )
                })?),
            };
            let exit = match j.exit {
                ExitWhat::None => Exit::None,
                ExitWhat::Group => Exit::Group,
                ExitWhat::Stonewall => Exit::Stonewall,
                ExitWhat::All => Exit::All,
            };
            let access = Access::new(&settings, j.workload).map_err(|e| prefixed(e, &at("workload.")))?;
            members.push(Member {
                name: j.name,
                settings,
                access,
                start_delay_ns,
                wait_for,
                exit,
                report_group: j.report_group,
            });
        }
        Ok(AccessGroup { members })
    }

    /// Every job's phase in turn (prepare, verify, cleanup), as one report: the sums, and each job's own.
    fn each(&mut self, phase: &str, ctl: &Control) -> Result<PhaseReport> {
        let mut report = PhaseReport::new(phase);
        for m in &mut self.members {
            if phase == "verify" && !m.access.spec().verifies() {
                continue;
            }
            let r = m.access.run_phase(phase, &m.settings, ctl)?;
            add_into(&mut report, &r);
            report.jobs.insert(m.name.clone(), serde_json::to_value(&r).unwrap_or_default());
            if r.interrupted {
                break;
            }
        }
        Ok(report)
    }

    fn run(&mut self, ctl: &Control) -> Result<PhaseReport> {
        // fio's flow: the jobs naming one flow id share one counter, fresh for each run.
        let mut flows: std::collections::HashMap<u32, std::sync::Arc<FlowShared>> = Default::default();
        for m in &mut self.members {
            m.access.before_phase("run");
            let pace = &m.access.spec().pace;
            if pace.flow > 0 {
                let shared = flows.entry(pace.flow_id).or_default().clone();
                m.access.set_flow(shared);
            }
        }
        let files: Vec<RunFiles> =
            self.members.iter().map(|m| m.access.open_run(&m.settings)).collect::<Result<_>>()?;
        let stats: Vec<BufStats> = self.members.iter().map(|_| BufStats::default()).collect();
        let mut members = Vec::with_capacity(self.members.len());
        // Thread id -> (job, its thread number within the job).
        let mut local = Vec::new();
        for (j, m) in self.members.iter().enumerate() {
            let t = m.access.run_timing(&m.settings)?;
            members.push(GroupMember {
                threads: m.settings.threads,
                warmup_ns: t.warmup_ns,
                duration_ns: t.duration_ns,
                start_delay_ns: m.start_delay_ns,
                wait_for: m.wait_for,
                exit: m.exit,
                report_group: m.report_group,
                steady: m.access.steady()?,
                interval_lat: m.access.spec().interval_lat,
            });
            local.extend((0..m.settings.threads).map(|lt| (j, lt)));
        }
        let interval_ns = self.members[0].settings.interval_ns();
        // fio's exit_on_io_done: the threads of the group's I/O jobs still running (each counts itself out at its end).
        let is_cpu = |m: &Member| m.access.spec().fio_engine == FioEngine::Cpuio;
        let io_left = AtomicUsize::new(self.members.iter().filter(|m| !is_cpu(m)).map(|m| m.settings.threads).sum());
        let io_left = &io_left;
        let this = &self.members;
        let (files_ref, stats_ref, local_ref) = (&files, &stats, &local);
        let (mut report, member_reports, results) = run_group(
            "run",
            &members,
            interval_ns,
            ctl,
            KINDS,
            // Requests untimed only when no job of the group times them (one precision per phase).
            self.members.iter().map(|m| m.access.spec().sigfig()).max().unwrap_or(3),
            0,
            |tid| {
                let (j, lt) = local_ref[tid];
                let (m, rf, bs) = (&this[j], &files_ref[j], &stats_ref[j]);
                let (a, s, qd) = (&m.access, &m.settings, m.access.spec().queue_depth as usize);
                if a.spec().fio_engine.per_name() {
                    return Ok((j, lt, AnyState::Names(a.name_state(s, lt)?)));
                }
                if a.spec().fio_engine == FioEngine::Cpuio {
                    return Ok((j, lt, AnyState::Cpu(a.cpu_state(s, lt)?)));
                }
                let st = match s.backend {
                    BackendKind::Psync => AnyState::Psync(a.run_state(
                        s,
                        lt,
                        rf.share_align,
                        &rf.files,
                        &|f, _| Ok(PsyncBackend::new(f)),
                        bs,
                    )?),
                    BackendKind::IoUring => AnyState::Uring(a.run_state(
                        s,
                        lt,
                        rf.share_align,
                        &rf.files,
                        &|f, bufs| {
                            let ptrs: Vec<(*mut u8, usize)> = bufs.iter().map(|b| (b.as_ptr(), b.len())).collect();
                            UringBackend::new(f, qd, &ptrs)
                        },
                        bs,
                    )?),
                    BackendKind::Libaio => AnyState::Aio(a.run_state(
                        s,
                        lt,
                        rf.share_align,
                        &rf.files,
                        &|f, _| AioBackend::new(f, qd),
                        bs,
                    )?),
                    BackendKind::Null => AnyState::Null(a.run_state(
                        s,
                        lt,
                        rf.share_align,
                        &rf.files,
                        &|_, _| Ok(NullBackend::new(qd)),
                        bs,
                    )?),
                    BackendKind::Mmap | BackendKind::Libpmem => {
                        let opts = a.mmap_options(s);
                        AnyState::Mmap(a.run_state(
                            s,
                            lt,
                            rf.share_align,
                            &rf.files,
                            &|f, _| MmapBackend::new(f, opts),
                            bs,
                        )?)
                    }
                };
                Ok((j, lt, st))
            },
            |(j, lt, st), rec: &mut Recorder| {
                let m = &this[*j];
                let quota = m.access.quota(&m.settings, *lt);
                let out = match st {
                    AnyState::Psync(st) => m.access.run_work(st, rec, quota, &m.settings),
                    AnyState::Uring(st) => m.access.run_work(st, rec, quota, &m.settings),
                    AnyState::Aio(st) => m.access.run_work(st, rec, quota, &m.settings),
                    AnyState::Null(st) => m.access.run_work(st, rec, quota, &m.settings),
                    AnyState::Mmap(st) => m.access.run_work(st, rec, quota, &m.settings),
                    AnyState::Names(st) => m.access.name_work(st, rec, &m.settings),
                    AnyState::Cpu(st) => m.access.cpu_work(st, rec, Some(io_left)).map(|()| (Vec::new(), None)),
                };
                if !matches!(st, AnyState::Cpu(_)) {
                    io_left.fetch_sub(1, Relaxed);
                }
                out.map(|r| (*j, r)).map_err(|e| in_job(e, &m.name))
            },
        )?;
        let mut per_job: Vec<Vec<ThreadMix>> = self.members.iter().map(|_| Vec::new()).collect();
        for (j, r) in results {
            per_job[j].push(r);
        }
        report.totals_without(NOT_DATA);
        let mut order = Vec::with_capacity(self.members.len());
        for ((((m, mr), mixes), bs), rf) in self.members.iter().zip(member_reports).zip(per_job).zip(&stats).zip(files)
        {
            let mut r = mr.report;
            if m.access.spec().fio_engine == FioEngine::Cpuio {
                r.totals_without(NOT_DATA);
                m.access.finish_cpu(&mut r);
            } else {
                m.access.finish_run(&m.settings, &mut r, mixes, bs);
                r.totals_without(NOT_DATA);
            }
            m.access.note_mmap(&m.settings, &mut r, &rf.files);
            m.access.finish_direct(&mut r, rf);
            report.warnings.extend(r.warnings.iter().map(|w| format!("{}: {w}", m.name)));
            for (k, v) in &r.counters {
                *report.counters.entry(k.clone()).or_insert(0) += v;
            }
            let mut v = serde_json::to_value(&r).unwrap_or_default();
            v["start_s"] = serde_json::json!(mr.start_s);
            v["end_s"] = serde_json::json!(mr.end_s);
            v["name"] = serde_json::json!(m.name);
            report.jobs.insert(m.name.clone(), v);
            order.push(m.name.clone());
        }
        report.extra = serde_json::json!({ "group": order });
        Ok(report)
    }
}

impl Workload for AccessGroup {
    fn phases(&self) -> &'static [&'static str] {
        &["prepare", "run", "verify", "cleanup"]
    }

    fn run_phase(&mut self, phase: &str, _job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        match phase {
            "run" => self.run(ctl),
            "verify" if self.members.iter().all(|m| !m.access.spec().verifies()) => Err(EngineError::invalid(
                "verify",
                "the verify phase needs a job with verify = \"crc32c\", \"xxh3\" or \"sha256\"",
            )),
            _ => self.each(phase, ctl),
        }
    }
}

/// A job's failed system call, naming the job (the phase runs several).
#[cold]
fn in_job(e: EngineError, name: &str) -> EngineError {
    match e {
        EngineError::Io { context, source } => EngineError::io(format!("job {name}: {context}"), source),
        e => e,
    }
}

/// A job's error, naming the job's field in the group spec.
fn prefixed(e: EngineError, at: &str) -> EngineError {
    match e {
        EngineError::InvalidJob { field, message } => EngineError::invalid(format!("{at}{field}"), message),
        e => e,
    }
}

/// Sums one job's report of a phase run job after job into the group's: counts, bytes, time.
fn add_into(total: &mut PhaseReport, r: &PhaseReport) {
    total.threads = total.threads.max(r.threads);
    total.elapsed_s += r.elapsed_s;
    total.interrupted |= r.interrupted;
    for (k, o) in &r.ops {
        let t = total.ops.entry(k.clone()).or_default();
        t.count += o.count;
        t.bytes += o.bytes;
    }
    for (k, v) in &r.counters {
        *total.counters.entry(k.clone()).or_insert(0) += v;
    }
    total.warnings.extend(r.warnings.iter().cloned());
    total.total.ops += r.total.ops;
    total.total.bytes += r.total.bytes;
    let per_s = |x: u64| if total.elapsed_s > 0.0 { x as f64 / total.elapsed_s } else { 0.0 };
    total.total.ops_per_s = per_s(total.total.ops);
    total.total.bytes_per_s = per_s(total.total.bytes);
}
