//! The macro family: real tools (cp, tar, rm) run as child processes and timed,
//! `sync` included, as Lourdas (2009) timed them with `time`.
//!
//! Each phase (`cp`, `untar`, `rm`) first readies its source files outside the
//! measured window (read them whole so they are cached, or evict them with
//! `posix_fadvise(DONTNEED)`), then starts the tool with `fork`/`exec`, waits
//! for it with `wait4` (whose rusage covers the child and every descendant it
//! reaped, e.g. the `bzip2` behind `tar xjf`), then runs the sync tool the same
//! way. Real time is the monotonic clock from just before the spawn to the
//! reaping of the sync child; user and sys are the two children's rusage. The
//! target's block device counters (`/sys/block/<dev>/stat`) are read right
//! before the tool starts and right after the sync.
//!
//! The child runs in its own process group; a stop request (Ctrl-C) sends it
//! SIGTERM, then SIGKILL two seconds later, and the phase returns marked
//! interrupted. A tool that exits non-zero fails the phase with the tail of its
//! stderr. Python builds every argv (fsmeter/families/macro.py); the engine
//! runs exactly what it is given and checks the result (the copy has the
//! source's size, the tree exists after untar and is gone after rm).

mod verify;

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::json;

use crate::error::{EngineError, Result};
use crate::measure::{now_ns, run_threads, Control, PhaseTiming};
use crate::nofollow;
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::verify::Checksum;
use crate::workload::family::Workload;

const KINDS: &[&str] = &["cp", "untar", "rm", "sync"];
const SYNC: usize = 3;
const PHASES: &[&str] = &["cp", "untar", "rm", "cleanup"];
/// Seconds between SIGTERM and SIGKILL when a stop is requested.
const KILL_GRACE_NS: u64 = 2_000_000_000;

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SourceCache {
    /// Read every source file whole before the tool starts: it reads from the page cache.
    #[default]
    Warm,
    /// Evict the source files from the page cache before the tool starts.
    Cold,
    /// Leave the page cache as it is.
    Keep,
}

/// One timed operation: the tool's argv and what it works on.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The tool and its arguments, run in the job directory.
    pub argv: Vec<String>,
    /// Files the tool reads (made warm or cold before it starts).
    #[serde(default)]
    pub sources: Vec<PathBuf>,
    /// Bytes the operation handles (cp: the file; untar and rm: the tree's file bytes), for MB/s.
    #[serde(default)]
    pub bytes: u64,
    /// Files the operation handles (counted in the report).
    #[serde(default)]
    pub files: u64,
    /// Checked afterwards: cp's copy (same size as the first source), untar's tree root
    /// (must exist), rm's tree root (must be gone).
    #[serde(default)]
    pub check: Option<PathBuf>,
    /// A directory made (outside the timing) before the tool starts, e.g. where tar extracts.
    #[serde(default)]
    pub mkdir: Option<PathBuf>,
    /// With verify, untar's content check: `tar --compare` of the archive against the tree.
    #[serde(default)]
    pub compare: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MacroSpec {
    #[serde(default)]
    pub cp: Option<Step>,
    #[serde(default)]
    pub untar: Option<Step>,
    #[serde(default)]
    pub rm: Option<Step>,
    /// The sync child run after every tool, inside the timing (empty: no sync).
    #[serde(default)]
    pub sync: Vec<String>,
    #[serde(default)]
    pub source_cache: SourceCache,
    /// The target's block device counters (`/sys/class/block/<dev>/stat`), if it has one.
    #[serde(default)]
    pub block_stat: Option<PathBuf>,
    /// What the cleanup phase removes: paths inside the job directory only.
    #[serde(default)]
    pub cleanup: Vec<PathBuf>,
    /// Notes from sizing (e.g. a copy shrunk to fit), repeated in every phase's warnings.
    #[serde(default)]
    pub notes: Vec<String>,
    /// How much of a failing tool's stderr to keep.
    #[serde(default = "default_tail")]
    pub stderr_tail_bytes: usize,
    /// Check what cp and untar wrote against their sources after each phase, outside the
    /// timing (macro_tools/verify.rs); the algorithm names cp's reported checksums.
    #[serde(default)]
    pub verify: Option<Checksum>,
}

fn default_tail() -> usize {
    2000
}

impl MacroSpec {
    fn step(&self, phase: &str) -> Option<&Step> {
        match phase {
            "cp" => self.cp.as_ref(),
            "untar" => self.untar.as_ref(),
            "rm" => self.rm.as_ref(),
            _ => None,
        }
    }

    pub fn validate(&self, job: &Settings) -> Result<()> {
        for (name, step) in [("cp", &self.cp), ("untar", &self.untar), ("rm", &self.rm)] {
            if let Some(s) = step {
                if s.argv.is_empty() || s.argv[0].is_empty() {
                    return Err(EngineError::invalid(format!("{name}.argv"), "give the tool and its arguments"));
                }
                if let Some(d) = &s.mkdir {
                    if !inside(&job.dir, d) {
                        return Err(EngineError::invalid(format!("{name}.mkdir"), "must be inside the job directory"));
                    }
                }
            }
        }
        if self.verify.is_some() {
            if let Some(cp) = &self.cp {
                if cp.sources.is_empty() || cp.check.is_none() {
                    return Err(EngineError::invalid(
                        "cp",
                        "with verify, cp needs its source (sources) and its copy (check)",
                    ));
                }
            }
            if let Some(u) = &self.untar {
                if u.compare.is_empty() || u.check.is_none() {
                    return Err(EngineError::invalid(
                        "untar.compare",
                        "with verify, untar needs the tar --compare command and its tree (check)",
                    ));
                }
            }
        }
        if self.sync.first().is_some_and(|s| s.is_empty()) {
            return Err(EngineError::invalid("sync", "give the sync tool and its arguments, or [] for none"));
        }
        for p in &self.cleanup {
            if !inside(&job.dir, p) {
                return Err(EngineError::invalid(
                    "cleanup",
                    format!("{} is not inside the job directory {}", p.display(), job.dir.display()),
                ));
            }
        }
        Ok(())
    }
}

/// True when `p` is a path strictly below `dir` (lexically: no `..`).
fn inside(dir: &Path, p: &Path) -> bool {
    p.starts_with(dir) && p != dir && !p.components().any(|c| matches!(c, std::path::Component::ParentDir))
}

pub struct MacroTools {
    spec: MacroSpec,
    /// Real seconds of every phase this session has run: the trial's total.
    session_real_s: f64,
    /// The sizing notes go into the first phase's warnings only.
    notes_given: bool,
}

impl MacroTools {
    pub fn new(job: &Settings, spec: MacroSpec) -> Result<Self> {
        spec.validate(job)?;
        Ok(MacroTools { spec, session_real_s: 0.0, notes_given: false })
    }
}

/// A finished child: wall time and the rusage `wait4` returned.
#[derive(Clone, Debug, Default)]
pub struct ChildRun {
    pub t0_ns: u64,
    pub t1_ns: u64,
    pub user_s: f64,
    pub sys_s: f64,
    pub maxrss_kb: i64,
    /// Exit code, or None when a signal ended it.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stderr_tail: String,
    /// A stop request ended it.
    pub stopped: bool,
}

impl ChildRun {
    pub fn real_s(&self) -> f64 {
        self.t1_ns.saturating_sub(self.t0_ns) as f64 / 1e9
    }
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }
    fn status_text(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            _ => "unknown status".into(),
        }
    }
}

fn tv_s(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

/// Keep the last `cap` bytes of what `r` produces.
fn read_tail(mut r: impl Read, cap: usize) -> String {
    let mut tail: Vec<u8> = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > 2 * cap.max(1) {
                    tail.drain(..tail.len() - cap);
                }
            }
        }
    }
    if tail.len() > cap {
        tail.drain(..tail.len() - cap);
    }
    String::from_utf8_lossy(&tail).trim().to_string()
}

/// Run `argv` in `cwd` as a child in its own process group and time it: wall
/// time from just before the spawn to its exit, user/sys from `wait4`.
/// A stop request on `ctl` terminates it (SIGTERM, then SIGKILL).
pub fn run_child(argv: &[String], cwd: &Path, ctl: &Control, tail_bytes: usize) -> Result<ChildRun> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).current_dir(cwd).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    cmd.process_group(0);
    let t0 = now_ns();
    let mut child = cmd.spawn().map_err(|e| EngineError::io(format!("cannot start `{}`", show(argv)), e))?;
    let pid = child.id() as libc::pid_t;
    let stderr = child.stderr.take().expect("stderr is piped");
    // Held while reaping and while signalling, so a signal never reaches a reused pid.
    let reaped = Mutex::new(false);
    let exited = AtomicBool::new(false);
    let stopped = AtomicBool::new(false);
    let mut run = std::thread::scope(|s| {
        let tail = s.spawn(move || read_tail(stderr, tail_bytes));
        s.spawn(|| {
            let mut term_at: Option<u64> = None;
            while !exited.load(SeqCst) {
                if ctl.stop_requested() {
                    let now = now_ns();
                    let sig = match term_at {
                        None => {
                            term_at = Some(now);
                            Some(libc::SIGTERM)
                        }
                        Some(t) if now - t > KILL_GRACE_NS => Some(libc::SIGKILL),
                        _ => None,
                    };
                    if let Some(sig) = sig {
                        let g = reaped.lock().unwrap_or_else(|p| p.into_inner());
                        if !*g {
                            stopped.store(true, SeqCst);
                            // SAFETY: the child is not reaped (lock held), so -pid is its group.
                            unsafe { libc::kill(-pid, sig) };
                        }
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        // Wait for the exit without reaping, note the time, then reap with wait4 for the rusage.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: waitid fills `info`; WNOWAIT leaves the child a zombie.
            let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
            if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
        let t1 = now_ns();
        let mut status: libc::c_int = 0;
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        {
            let mut g = reaped.lock().unwrap_or_else(|p| p.into_inner());
            // SAFETY: reaps our own child; fills status and rusage.
            let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
            *g = true;
            if r != pid {
                exited.store(true, SeqCst);
                return Err(EngineError::last_os(format!("wait4 for `{}`", argv[0])));
            }
        }
        exited.store(true, SeqCst);
        let st = std::process::ExitStatus::from_raw(status);
        Ok(ChildRun {
            t0_ns: t0,
            t1_ns: t1,
            user_s: tv_s(ru.ru_utime),
            sys_s: tv_s(ru.ru_stime),
            maxrss_kb: ru.ru_maxrss,
            code: st.code(),
            signal: st.signal(),
            stderr_tail: tail.join().unwrap_or_default(),
            stopped: false,
        })
    })?;
    run.stopped = stopped.load(SeqCst);
    drop(child); // already reaped: dropping a std Child never waits
    Ok(run)
}

/// Fields of /sys/block/<dev>/stat (Documentation/block/stat.rst), the ones we report.
const STAT_FIELDS: &[(&str, usize)] = &[
    ("read_ios", 0),
    ("read_sectors", 2),
    ("read_ticks_ms", 3),
    ("write_ios", 4),
    ("write_sectors", 6),
    ("write_ticks_ms", 7),
    ("io_ticks_ms", 9),
    ("discard_ios", 11),
    ("discard_sectors", 13),
    ("flush_ios", 15),
];

pub fn read_block_stat(path: &Path) -> Result<Vec<u64>> {
    let text = std::fs::read_to_string(path).map_err(|e| EngineError::io(format!("read {}", path.display()), e))?;
    Ok(text.split_whitespace().map(|v| v.parse().unwrap_or(0)).collect())
}

/// Ready the sources: read them whole (warm) or evict them (cold).
fn prepare_sources(files: &[PathBuf], mode: SourceCache) -> Result<()> {
    for f in files {
        let file = std::fs::File::open(f).map_err(|e| EngineError::io(format!("open source {}", f.display()), e))?;
        match mode {
            SourceCache::Keep => {}
            SourceCache::Warm => {
                let mut buf = vec![0u8; 1 << 20];
                let mut r = &file;
                loop {
                    match r.read(&mut buf) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e) => return Err(EngineError::io(format!("read source {}", f.display()), e)),
                    }
                }
            }
            SourceCache::Cold => {
                use std::os::fd::AsRawFd;
                // SAFETY: advisory call on an fd we own.
                unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            }
        }
    }
    Ok(())
}

/// An argv as one short line for messages.
fn show(argv: &[String]) -> String {
    let s = argv.join(" ");
    if s.chars().count() > 160 {
        format!("{}...", s.chars().take(157).collect::<String>())
    } else {
        s
    }
}

/// A failed child as an error: its status and the tail of its stderr, on one line.
fn child_failed(phase: &str, argv: &[String], r: &ChildRun) -> EngineError {
    let tail = r.stderr_tail.split_whitespace().collect::<Vec<_>>().join(" ");
    EngineError::io(
        format!("phase {phase}: `{}` failed ({})", show(argv), r.status_text()),
        std::io::Error::other(if tail.is_empty() { "no stderr output".to_string() } else { format!("stderr: {tail}") }),
    )
}

struct Outcome {
    tool: ChildRun,
    sync: Option<ChildRun>,
}

fn child_json(argv: &[String], r: &ChildRun) -> serde_json::Value {
    json!({
        "argv": argv,
        "real_s": r.real_s(),
        "user_s": r.user_s,
        "sys_s": r.sys_s,
        "maxrss_kb": r.maxrss_kb,
        "exit_code": r.code,
        "signal": r.signal,
        "stderr_tail": r.stderr_tail,
    })
}

impl MacroTools {
    fn run_step(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        let step = self
            .spec
            .step(phase)
            .ok_or_else(|| EngineError::invalid("phases", format!("phase {phase} is not configured in this job")))?;
        let kind = KINDS.iter().position(|k| *k == phase).expect("phase is a kind");
        let tail = self.spec.stderr_tail_bytes;
        let stat_before: Mutex<Option<Vec<u64>>> = Mutex::new(None);
        let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
        let (mut report, mut outs) = run_threads(
            phase,
            1,
            timing,
            ctl,
            KINDS,
            3,
            if self.spec.sync.is_empty() { 1 } else { 2 },
            |_| {
                // The tools open their outputs with their own flags: a link planted under the name
                // cp writes or untar extracts into would send the writes through it. The name is
                // checked here, untimed, and refused as every family refuses one.
                let written = if phase == "rm" { None } else { step.check.as_ref() };
                if let Some(p) = written.into_iter().chain(step.mkdir.as_ref()).find(|p| nofollow::is_link(p)) {
                    return Err(nofollow::link_error(p));
                }
                if let Some(d) = &step.mkdir {
                    std::fs::create_dir(d).map_err(|e| {
                        EngineError::io(
                            format!("mkdir {} (left by an earlier run? run the cleanup phase)", d.display()),
                            e,
                        )
                    })?;
                }
                prepare_sources(&step.sources, self.spec.source_cache)
            },
            |_, rec| {
                if let Some(p) = &self.spec.block_stat {
                    *stat_before.lock().unwrap() = Some(read_block_stat(p)?);
                }
                let tool = run_child(&step.argv, &job.dir, ctl, tail)?;
                if tool.stopped || rec.interrupted() {
                    return Ok(Outcome { tool, sync: None });
                }
                if !tool.ok() {
                    return Err(child_failed(phase, &step.argv, &tool));
                }
                rec.record(kind, step.bytes, tool.t0_ns, tool.t1_ns);
                let sync = if self.spec.sync.is_empty() {
                    None
                } else {
                    let s = run_child(&self.spec.sync, &job.dir, ctl, tail)?;
                    if !s.ok() && !s.stopped {
                        return Err(child_failed(phase, &self.spec.sync, &s));
                    }
                    if !s.stopped {
                        rec.record(SYNC, 0, s.t0_ns, s.t1_ns);
                    }
                    Some(s)
                };
                Ok(Outcome { tool, sync })
            },
        )?;
        let out = outs.pop().expect("one worker");
        // One operation per phase: interval samples would be zeros then a spike, which no
        // throughput statistic can use. Report the phase as the single interval it is.
        if report.intervals.len() > 1 {
            let mut one = report.intervals.pop().expect("non-empty");
            for iv in report.intervals.drain(..) {
                one.ops += iv.ops;
                one.bytes += iv.bytes;
                for (k, n) in iv.ops_by_kind {
                    *one.ops_by_kind.entry(k).or_insert(0) += n;
                }
            }
            one.dur_s = one.t_s;
            report.intervals.push(one);
        }
        let stopped = out.tool.stopped || out.sync.as_ref().is_some_and(|s| s.stopped) || ctl.stop_requested();
        report.interrupted |= stopped;
        let (mut real, mut user, mut sys) = (out.tool.real_s(), out.tool.user_s, out.tool.sys_s);
        if let Some(s) = &out.sync {
            // One window: from the tool's spawn to the sync's exit (as `time (tool; sync)` counts it).
            real = s.t1_ns.saturating_sub(out.tool.t0_ns) as f64 / 1e9;
            user += s.user_s;
            sys += s.sys_s;
        }
        let mut device = serde_json::Map::new();
        if let (Some(p), Some(before)) = (&self.spec.block_stat, stat_before.lock().unwrap().take()) {
            let after = read_block_stat(p)?;
            device.insert("stat_path".into(), json!(p));
            for (name, i) in STAT_FIELDS {
                if let (Some(a), Some(b)) = (after.get(*i), before.get(*i)) {
                    let d = a.saturating_sub(*b);
                    device.insert((*name).into(), json!(d));
                    report.counters.insert(format!("dev_{name}"), d);
                }
            }
        }
        if !stopped {
            if let Err(msg) = check_result(phase, step) {
                return Err(EngineError::io(
                    format!("phase {phase}: `{}`", show(&step.argv)),
                    std::io::Error::other(msg),
                ));
            }
        }
        if !stopped {
            self.session_real_s += real;
        }
        report.counters.insert("files".into(), step.files);
        report.counters.insert("bytes".into(), step.bytes);
        report.extra = json!({
            "real_s": real,
            "session_real_s": self.session_real_s,
            "user_s": user,
            "sys_s": sys,
            "MB_per_s": if real > 0.0 { step.bytes as f64 / 1e6 / real } else { 0.0 },
            "bytes": step.bytes,
            "files": step.files,
            "tool": child_json(&step.argv, &out.tool),
            "sync": out.sync.as_ref().map(|s| child_json(&self.spec.sync, s)),
            "source_cache": format!("{:?}", self.spec.source_cache).to_lowercase(),
            "device": serde_json::Value::Object(device),
        });
        if let (Some(algo), false) = (self.spec.verify, stopped) {
            let check = match phase {
                "cp" => Some(verify::compare_copy(&step.sources[0], step.check.as_ref().expect("validated"), algo)?),
                "untar" => Some(verify::compare_tree(
                    &step.compare,
                    &job.dir,
                    step.check.as_ref().expect("validated"),
                    algo,
                    step.files,
                )?),
                _ => None,
            };
            if let Some(c) = check {
                c.merge_into(&mut report);
            }
        }
        if !self.notes_given {
            report.warnings.extend(self.spec.notes.iter().cloned());
            self.notes_given = true;
        }
        Ok(report)
    }

    fn cleanup(&self, job: &Settings) -> Result<PhaseReport> {
        let mut report = PhaseReport::new("cleanup");
        let mut removed = 0u64;
        for p in &self.spec.cleanup {
            debug_assert!(inside(&job.dir, p));
            let r = match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
                Ok(_) => std::fs::remove_file(p),
                Err(_) => continue,
            };
            r.map_err(|e| EngineError::io(format!("remove {}", p.display()), e))?;
            removed += 1;
        }
        report.counters.insert("removed".into(), removed);
        Ok(report)
    }
}

/// Did the tool do its job? cp: the copy has the source's size; untar: the tree
/// root exists; rm: it is gone.
fn check_result(phase: &str, step: &Step) -> std::result::Result<(), String> {
    let Some(path) = &step.check else { return Ok(()) };
    match phase {
        "cp" => {
            let dst = std::fs::metadata(path).map_err(|e| format!("the copy {} is missing: {e}", path.display()))?;
            if let Some(src) = step.sources.first() {
                let want = std::fs::metadata(src).map(|m| m.len()).unwrap_or(dst.len());
                if dst.len() != want {
                    return Err(format!("the copy {} has {} bytes, the source {want}", path.display(), dst.len()));
                }
            }
            Ok(())
        }
        "untar" if !path.is_dir() => Err(format!("the extracted tree {} is missing", path.display())),
        "rm" if std::fs::symlink_metadata(path).is_ok() => Err(format!("{} still exists after rm", path.display())),
        _ => Ok(()),
    }
}

impl Workload for MacroTools {
    fn phases(&self) -> &'static [&'static str] {
        PHASES
    }

    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        match phase {
            "cleanup" => self.cleanup(job),
            _ => self.run_step(phase, job, ctl),
        }
    }
}
