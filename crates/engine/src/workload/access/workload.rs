//! The access workload: its state between phases, its phases (prepare, run, verify, cleanup) and
//! what they share. The phases themselves are in `layout.rs` (prepare, and opening the run's
//! files), `run.rs` and `worker.rs` (the run phase and its per-thread loop), `verification.rs`
//! (reads checked and the verify phase), `fileops.rs` and `cpuio.rs` (fio's name, one-call and
//! cpuio engines).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use super::errors::ErrorCounts;
use super::iolog::IoRecord;
use super::lattarget::LatProbe;
use super::pace::FlowShared;
use super::spec::{AccessSpec, FioEngine};
use crate::backend::IoReq;
use crate::error::{EngineError, Result};
use crate::measure::Control;
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::verify::content::ContentCheck;
use crate::verify::meta_pattern::MetaPattern;
use crate::verify::LastWrites;
use crate::workload::family::Workload;

pub(super) const KINDS: &[&str] = &["read", "write", "fsync", "trim", "create", "stat", "delete", "cpu"];
pub(super) const READ: usize = 0;
pub(super) const WRITE: usize = 1;
pub(super) const FSYNC: usize = 2;
/// A hole punched over a request's range (fallocate PUNCH_HOLE | KEEP_SIZE): fio's trim on a file.
pub(super) const TRIM: usize = 3;
/// fio's file and directory engines (fileops.rs): a file or directory created, stat'ed, removed.
pub(super) const CREATE: usize = 4;
pub(super) const STAT: usize = 5;
pub(super) const DELETE: usize = 6;
/// fio's cpuio engine (cpuio.rs): one burst of CPU work.
pub(super) const CPU: usize = 7;
/// Op kinds that move no data: counted apart, left out of the headline totals.
pub(super) const NOT_DATA: &[&str] = &["fsync", "cpu"];
/// Alignment of every request buffer (AlignedBuf): enough for O_DIRECT on any Linux filesystem here.
pub(super) const BUF_ALIGN: u64 = 4096;
/// Layout writes in 1 MiB requests.
pub(super) const LAYOUT_CHUNK: u64 = 1 << 20;

pub struct Access {
    pub(super) spec: AccessSpec,
    /// With verify: which write each block should hold (laid out by `prepare`, updated by `run`).
    pub(super) last_writes: Option<LastWrites>,
    /// Run phases started so far: the high bits of write numbers, so a rerun writes new ones.
    pub(super) runs: u64,
    /// Whether this session's prepare started, and one past the highest file number it reached: cleanup
    /// removes only those names (a prepare stopped by ENOSPC at file 256 of 100,000,000 left 256 files,
    /// and cleanup had tried to unlink every possible name).
    pub(super) prepared: AtomicBool,
    pub(super) created: AtomicU32,
    /// With verify_pattern: the pattern repeated to at least 4 KiB (whole patterns), compared with
    /// reads, and what the run phase's threads found (each adds its own once, at its end).
    pub(super) pattern_tile: Vec<u8>,
    /// With verify_pattern_meta: the header every block starts with, and its check.
    pub(super) meta: Option<MetaPattern>,
    pub(super) pattern_found: Mutex<Option<ContentCheck>>,
    /// Measured requests of the last run that got a priority of their own (cmdprio): each thread
    /// adds its count once, at its end.
    pub(super) cmdprio_chosen: AtomicU64,
    /// With a per-I/O log: each thread's records (handed over once, at its end) and those dropped.
    pub(super) io_logged: Mutex<Vec<Vec<IoRecord>>>,
    pub(super) io_log_dropped: AtomicU64,
    /// fio's write_iolog: the threads' records after the run, and those past a full buffer.
    pub(super) issue_logged: Mutex<Vec<Vec<super::issuelog::Issued>>>,
    pub(super) iolog_dropped: AtomicU64,
    /// verify_backlog's reads with a checked verify_pattern (a checksum's are in its checker).
    pub(super) pattern_backlog_reads: AtomicU64,
    /// serialize_overlap's held requests, all threads.
    pub(super) overlap_holds: AtomicU64,
    /// The e4defrag engine created its donor file (cleanup removes it then).
    pub(super) donor_made: AtomicBool,
    /// Threads of the last run that stopped because a minimum rate was missed (rate_min): what
    /// each saw, pushed once per thread when it ends, never per request.
    pub(super) rate_missed: std::sync::Mutex<Vec<String>>,
    /// fio's sprandom: what the plan did (sprandom.rs), set once per thread when it ends.
    pub(super) spr_found: std::sync::Mutex<Option<serde_json::Value>>,
    /// fio's flow: the counter this job's threads share with the jobs of its flow id (a group sets it).
    pub(super) flow: std::sync::Arc<FlowShared>,
    /// fio's cpuio engine: CPU nanoseconds, bursts and threads of the last run, added once per thread at its end.
    pub(super) cpu_used: Mutex<CpuUsed>,
    /// The failed requests the run's threads went on after (continue_on) or ended at (fill): each
    /// thread adds its own once, at its end.
    pub(super) errors_found: Mutex<ErrorCounts>,
    /// With a latency target: each thread's search as it ended (pushed once, at its end).
    pub(super) lat_found: Mutex<Vec<LatProbe>>,
}

impl Access {
    pub fn new(job: &Settings, spec: AccessSpec) -> Result<Access> {
        spec.validate(job)?;
        let p = &spec.verify_pattern;
        let pattern_tile = if p.is_empty() { vec![] } else { p.repeat(4096usize.div_ceil(p.len())) };
        let meta = spec.verify_pattern_meta.then(|| MetaPattern::new(spec.verify_block() as usize, p, job.seed));
        Ok(Access {
            spec,
            last_writes: None,
            runs: 0,
            prepared: AtomicBool::new(false),
            created: AtomicU32::new(0),
            pattern_tile,
            meta,
            pattern_found: Mutex::new(None),
            cmdprio_chosen: AtomicU64::new(0),
            io_logged: Mutex::new(Vec::new()),
            io_log_dropped: AtomicU64::new(0),
            issue_logged: Mutex::new(Vec::new()),
            iolog_dropped: AtomicU64::new(0),
            pattern_backlog_reads: AtomicU64::new(0),
            overlap_holds: AtomicU64::new(0),
            donor_made: AtomicBool::new(false),
            rate_missed: std::sync::Mutex::new(Vec::new()),
            spr_found: std::sync::Mutex::new(None),
            flow: std::sync::Arc::new(FlowShared::default()),
            cpu_used: Mutex::new(CpuUsed::default()),
            errors_found: Mutex::new(ErrorCounts::default()),
            lat_found: Mutex::new(Vec::new()),
        })
    }

    /// Reads can be checked against the write each block should hold only when no
    /// two writes (or a read and a write) of one block can be in flight at once:
    /// one request at a time per thread, and threads on their own blocks.
    pub(super) fn verify_exact(&self, job: &Settings) -> bool {
        (job.threads == 1 || self.spec.thread_files) && self.spec.queue_depth == 1 && self.spec.verify_write_sequence
    }

    pub(super) fn verify_notes(&self, job: &Settings) -> serde_json::Value {
        let exact = self.verify_exact(job);
        serde_json::json!({
            "exact": exact,
            "reads_checked_during_run": exact,
            "why": if exact {
                "every block is checked against the write that should be there (a lost write shows as stale)"
            } else if !self.spec.verify_write_sequence {
                "verify_write_sequence is off: each block is checked for its own header and checksum, not for which write it holds; reads during the run are checked only when they re-read written requests (verify_backlog)"
            } else {
                "several threads (or queue_depth > 1) may write one block at once: reads during the run are not checked (a read may see a write in progress), and the verify phase checks each block's own header and checksum, not which write it holds"
            },
        })
    }

    pub(super) fn path(&self, dir: &Path, i: u32) -> PathBuf {
        match self.spec.file_names.get(i as usize) {
            Some(name) => dir.join(name),
            None => dir.join(format!("{}.{i}", self.spec.file_prefix)),
        }
    }

    /// Bytes each file holds: the region plus fio's offset before it (with a shared file, up to
    /// the end of the later of this process's two regions; other processes fill the rest).
    pub(super) fn file_len(&self) -> u64 {
        self.spec.offset.max(self.spec.run_base()) + self.spec.file_size
    }

    /// What prepare writes: the whole file from 0, or only this process's region of a shared file.
    pub(super) fn layout_range(&self) -> (u64, u64) {
        let end = self.spec.offset + self.spec.file_size;
        if self.spec.shared_file {
            (self.spec.offset, end)
        } else {
            (0, end)
        }
    }

    /// What a phase needs before it starts: with verify, a fresh last-writes table for a fresh
    /// layout (or a run on files laid out elsewhere: then blocks are checked for their own
    /// consistency only, until written); a run counts itself (the high bits of its write numbers).
    pub(super) fn before_phase(&mut self, phase: &str) {
        if self.spec.verify.is_some() && (phase == "prepare" || (phase == "run" && self.last_writes.is_none())) {
            self.last_writes =
                Some(LastWrites::new(self.spec.file_count as usize, self.file_len(), self.spec.verify_block()));
        }
        if phase == "run" {
            self.errors_found.get_mut().unwrap_or_else(|e| e.into_inner()).clear();
            self.runs += 1;
            *self.pattern_found.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    pub(super) fn spec(&self) -> &AccessSpec {
        &self.spec
    }

    /// fio's steadystate for the harness: the data kinds count (read, write, trim; not fsync).
    pub(super) fn steady(&self) -> Result<Option<crate::measure::Steady>> {
        let mask = (1 << READ) | (1 << WRITE) | (1 << TRIM);
        self.spec.steadystate.as_ref().map(|s| s.to_steady(mask)).transpose()
    }

    /// A group's jobs of one flow id share one flow counter (fio's flow).
    pub(super) fn set_flow(&mut self, shared: std::sync::Arc<FlowShared>) {
        self.flow = shared;
    }

    /// Remove the files this session's prepare made (every name of the spec when this session did not
    /// prepare: files laid out by an earlier run). A stop requested during cleanup ends it early; one
    /// already pending when it starts (the run was interrupted) does not, or nothing would be removed.
    fn cleanup(&self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        if self.spec.fio_engine == FioEngine::Cpuio {
            return Ok(PhaseReport::new("cleanup")); // no files
        }
        let mut removed = 0;
        let upto = if self.prepared.load(Relaxed) { self.created.load(Relaxed) } else { self.spec.file_count };
        let stop_pending = ctl.stop_requested();
        let mut interrupted = false;
        for i in 0..upto {
            if !stop_pending && ctl.stop_requested() {
                interrupted = true;
                break;
            }
            let path = self.path(&job.dir, i);
            let gone =
                if self.spec.fio_engine.dirs() { std::fs::remove_dir(&path) } else { std::fs::remove_file(&path) };
            match gone {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                // A directory that holds something is not only the workload's: left alone.
                Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => {}
                // A directory under a file's name is not one of the workload's files: left alone.
                Err(e) if e.raw_os_error() == Some(libc::EISDIR) => {}
                Err(e) => return Err(EngineError::io(format!("removing {}", self.path(&job.dir, i).display()), e)),
            }
        }
        self.remove_donor(job)?;
        let mut report = PhaseReport::new("cleanup");
        report.counters.insert("files_removed".into(), removed);
        report.counters.insert("names_tried".into(), upto as u64);
        report.interrupted = interrupted;
        Ok(report)
    }

    /// A request's error that stops the run: its direction, length, offset and file, and the errno.
    #[cold]
    pub(super) fn io_failure(&self, req: IoReq, errno: i32, job: &Settings) -> EngineError {
        io_failure(req, errno, self.spec.direct, &self.path(&job.dir, req.file))
    }
}

impl Workload for Access {
    fn phases(&self) -> &'static [&'static str] {
        &["prepare", "run", "verify", "cleanup"]
    }

    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        self.before_phase(phase);
        match phase {
            "prepare" => self.prepare(job, ctl),
            "run" => self.run(job, ctl),
            "verify" => self.verify_phase(job, ctl),
            "cleanup" => self.cleanup(job, ctl),
            _ => unreachable!("checked by Session"),
        }
    }
}

#[cold]
fn io_failure(req: IoReq, errno: i32, direct: bool, path: &Path) -> EngineError {
    let what = if req.write { "write" } else { "read" };
    let mut ctx = format!("{what} of {} bytes at offset {} of {}", req.len, req.offset, path.display());
    if errno == libc::EINVAL && direct {
        ctx.push_str(" (O_DIRECT: sizes, offsets and alignment must be multiples of the device's logical block size)");
    }
    EngineError::io(ctx, std::io::Error::from_raw_os_error(errno))
}

/// What the run phase's threads got for their request buffers (summed at setup, not per operation).
#[derive(Default)]
pub(super) struct BufStats {
    pub(super) buf_bytes: AtomicU64,
    pub(super) mapped_bytes: AtomicU64,
    pub(super) huge_bytes: AtomicU64,
    pub(super) huge_unknown: AtomicBool,
}

/// What a cpuio run's threads used (cpuio.rs), added once per thread at its end.
#[derive(Default)]
pub(super) struct CpuUsed {
    pub(super) cpu_ns: u64,
    pub(super) bursts: u64,
    pub(super) burst_ns: u64,
    pub(super) threads: u64,
}
