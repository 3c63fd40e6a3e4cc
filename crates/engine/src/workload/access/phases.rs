//! The access workload: its phases (prepare, run, cleanup), the per-thread I/O loop and its files.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use super::backlog::{Backlog, Piece};
use super::errors::{ErrorCounts, OnError};
use super::gen::{lcm, AccessGen, GenOp};
use super::iolog::{write_logs, IoLogBuf, IoRecord};
use super::lattarget::{LatProbe, Step};
use super::pace::{sleep_until, FlowShared, FlowState, Go, Pacer};
use super::prio::{set_thread_ioprio, CmdPrioState};
use super::spec::{AccessSpec, FioEngine};
use crate::backend::buffer::{huge_region, AlignedBuf, BufferMemory, HUGETLB_PAGE};
use crate::backend::content::ContentGen;
use crate::backend::dio::{self, DioAlign};
use crate::backend::fault::{FaultBackend, Injected};
use crate::backend::mmap::{self, MmapBackend, MmapOptions, Persist};
use crate::backend::null::NullBackend;
use crate::backend::psync::PsyncBackend;
use crate::backend::uring::UringBackend;
use crate::backend::{BackendKind, FileTable, IoBackend, IoReq};
use crate::error::{EngineError, Result};
use crate::measure::duration::secs_to_ns;
use crate::measure::{now_ns, run_group, run_threads, Control, GroupMember, PhaseTiming, Recorder};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::verify::content::{byte_mismatch, ContentCheck};
use crate::verify::meta_pattern::{MetaFault, MetaPattern};
use crate::verify::{self, Checker, LastWrites};
use crate::workload::family::Workload;

#[path = "cpuio.rs"]
mod cpuio;
#[path = "fileops.rs"]
mod fileops;
pub use cpuio::CpuMode;
pub(super) use cpuio::CpuState;
use cpuio::CpuUsed;
pub(super) use fileops::NameState;
use fileops::{one_call_failure, Donor};

pub(super) const KINDS: &[&str] = &["read", "write", "fsync", "trim", "create", "stat", "delete", "cpu"];
const READ: usize = 0;
const WRITE: usize = 1;
const FSYNC: usize = 2;
/// A hole punched over a request's range (fallocate PUNCH_HOLE | KEEP_SIZE): fio's trim on a file.
const TRIM: usize = 3;
/// fio's file and directory engines (fileops.rs): a file or directory created, stat'ed, removed.
const CREATE: usize = 4;
const STAT: usize = 5;
const DELETE: usize = 6;
/// fio's cpuio engine (cpuio.rs): one burst of CPU work.
const CPU: usize = 7;
/// Op kinds that move no data: counted apart, left out of the headline totals.
pub(super) const NOT_DATA: &[&str] = &["fsync", "cpu"];
/// Alignment of every request buffer (AlignedBuf): enough for O_DIRECT on any Linux filesystem here.
const BUF_ALIGN: u64 = 4096;
/// Layout writes in 1 MiB requests.
const LAYOUT_CHUNK: u64 = 1 << 20;

pub struct Access {
    spec: AccessSpec,
    /// With verify: which write each block should hold (laid out by `prepare`, updated by `run`).
    last_writes: Option<LastWrites>,
    /// Run phases started so far: the high bits of write numbers, so a rerun writes new ones.
    runs: u64,
    /// Whether this session's prepare started, and one past the highest file number it reached: cleanup
    /// removes only those names (a prepare stopped by ENOSPC at file 256 of 100,000,000 left 256 files,
    /// and cleanup had tried to unlink every possible name).
    prepared: AtomicBool,
    created: AtomicU32,
    /// With verify_pattern: the pattern repeated to at least 4 KiB (whole patterns), compared with
    /// reads, and what the run phase's threads found (each adds its own once, at its end).
    pattern_tile: Vec<u8>,
    /// With verify_pattern_meta: the header every block starts with, and its check.
    meta: Option<MetaPattern>,
    pattern_found: Mutex<Option<ContentCheck>>,
    /// Measured requests of the last run that got a priority of their own (cmdprio): each thread
    /// adds its count once, at its end.
    cmdprio_chosen: AtomicU64,
    /// With a per-I/O log: each thread's records (handed over once, at its end) and those dropped.
    io_logged: Mutex<Vec<Vec<IoRecord>>>,
    io_log_dropped: AtomicU64,
    /// The e4defrag engine created its donor file (cleanup removes it then).
    donor_made: AtomicBool,
    /// Threads of the last run that stopped because a minimum rate was missed (rate_min): what
    /// each saw, pushed once per thread when it ends, never per request.
    rate_missed: std::sync::Mutex<Vec<String>>,
    /// fio's sprandom: what the plan did (sprandom.rs), set once per thread when it ends.
    spr_found: std::sync::Mutex<Option<serde_json::Value>>,
    /// fio's flow: the counter this job's threads share with the jobs of its flow id (a group sets it).
    flow: std::sync::Arc<FlowShared>,
    /// fio's cpuio engine: CPU nanoseconds, bursts and threads of the last run, added once per thread at its end.
    cpu_used: Mutex<CpuUsed>,
    /// The failed requests the run's threads went on after (continue_on) or ended at (fill): each
    /// thread adds its own once, at its end.
    errors_found: Mutex<ErrorCounts>,
    /// With a latency target: each thread's search as it ended (pushed once, at its end).
    lat_found: Mutex<Vec<LatProbe>>,
}

/// Per-thread state of the `run` phase, built before the common start.
pub(super) struct RunState<B: IoBackend> {
    backend: B,
    bufs: Vec<AlignedBuf>,
    gen: AccessGen,
    slots: Vec<SlotMeta>,
    completed: Vec<(usize, i64)>,
    /// Per mix entry: reads, writes, random, sequential, trims (measured requests only).
    mix: Vec<[u64; 5]>,
    /// The files, for trims (done here, not through the backend); None: the null backend.
    trim_fds: Option<FileTable>,
    /// With a buffer pattern: slots whose buffer a read overwrote (refilled before their next write).
    refill: Vec<bool>,
    verify: Option<Checker>,
    /// With verify_backlog: the written requests not yet read back.
    backlog: Option<Backlog>,
    /// Another request may write a block while a backlog read reads it (several threads on shared
    /// blocks, or queue_depth > 1): a backlog read that fails its check is read again before it counts.
    racy: bool,
    /// With verify_pattern: the reads checked and the mismatches found.
    pattern_check: ContentCheck,
    /// Writes issued by this thread in this phase (with verify: the write numbers).
    writes: u64,
    /// The e4defrag engine's donor file.
    donor: Option<Donor>,
    /// With a rate or thinktime: the schedule, and the slots whose request waits for its time
    /// (slot, quiesce first), in the order drawn; capacity queue_depth, made before the start.
    pacer: Option<Pacer>,
    deferred: std::collections::VecDeque<(usize, Wait)>,
    /// With fio's flow: this thread's place in its flow.
    flow: Option<FlowState>,
    /// Failed requests gone on after (continue_on) or ended at (fill): counted here, made before the start.
    errors: ErrorCounts,
    /// With fio's buffer contents: what each write carries (filled before the write is timed).
    content: Option<ContentGen>,
    /// With per-request priorities (cmdprio): the rules, their draws and the count.
    cmdprio: Option<CmdPrioState>,
    /// With a per-I/O log: this thread's records, allocated before the start.
    io_log: Option<IoLogBuf>,
    /// With fio's latency_target: the search for the queue depth (lattarget.rs).
    lat: Option<LatProbe>,
}

/// A measured request's per-I/O log record (fio's direction: 0 read, 1 write, 2 trim).
#[inline(always)]
fn io_record(op: &GenOp, kind: usize, t0: u64, t1: u64, measure_start: u64) -> IoRecord {
    IoRecord {
        t_ns: t1.saturating_sub(measure_start),
        lat_ns: t1.saturating_sub(t0),
        offset: op.req.offset,
        len: op.req.len,
        ddir: match kind {
            READ => 0,
            WRITE => 1,
            _ => 2,
        },
        ioprio: op.req.ioprio,
    }
}

/// What a deferred request waits for once nothing is in flight.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Its due time.
    Due,
    /// A thinktime stall, then its due time.
    Think,
    /// Its turn in the flow.
    Flow,
}

/// What pacing made of a request just drawn.
enum Paced {
    /// Issue it, at this time.
    Go(u64),
    /// It waits in `RunState::deferred` for its time.
    Deferred,
    /// The thread is to stop (a stop was asked for, or the request would start after the deadline).
    Stop,
}

#[derive(Clone, Copy, Default)]
struct SlotMeta {
    t0: u64,
    op: Option<GenOp>,
    /// With verify, the write number of a write in flight (of the write a backlog read checks).
    generation: u64,
    /// A read of verify_backlog (not the mix's: not counted in it, always checked).
    backlog: bool,
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
    fn verify_exact(&self, job: &Settings) -> bool {
        (job.threads == 1 || self.spec.thread_files) && self.spec.queue_depth == 1 && self.spec.verify_write_sequence
    }

    fn verify_notes(&self, job: &Settings) -> serde_json::Value {
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

    fn path(&self, dir: &Path, i: u32) -> PathBuf {
        match self.spec.file_names.get(i as usize) {
            Some(name) => dir.join(name),
            None => dir.join(format!("{}.{i}", self.spec.file_prefix)),
        }
    }

    /// Bytes each file holds: the region plus fio's offset before it (with a shared file, up to
    /// the end of the later of this process's two regions; other processes fill the rest).
    fn file_len(&self) -> u64 {
        self.spec.offset.max(self.spec.run_base()) + self.spec.file_size
    }

    /// What prepare writes: the whole file from 0, or only this process's region of a shared file.
    fn layout_range(&self) -> (u64, u64) {
        let end = self.spec.offset + self.spec.file_size;
        if self.spec.shared_file {
            (self.spec.offset, end)
        } else {
            (0, end)
        }
    }

    fn prepare(&self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        let spec = &self.spec;
        if spec.fio_engine == FioEngine::Cpuio {
            return Ok(PhaseReport::new("prepare")); // no files
        }
        if spec.fio_engine.per_name() && (spec.fio_engine.dirs() || !spec.fio_engine.needs_layout()) {
            return self.prepare_names(job);
        }
        if spec.fill {
            return self.prepare_fill(job);
        }
        let nthreads = job.threads.min(spec.file_count as usize).max(1);
        let (start, end) = self.layout_range();
        let chunks_per_file = (end - start).div_ceil(LAYOUT_CHUNK);
        // A shared file is neither truncated nor checked for reuse: other processes write it too.
        let mut open_flags = if spec.shared_file {
            libc::O_WRONLY | libc::O_CREAT
        } else {
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC
        };
        if spec.direct_layout {
            open_flags |= libc::O_DIRECT;
        }
        let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
        self.prepared.store(true, Relaxed);
        let (mut report, skipped) = run_threads(
            "prepare",
            nthreads,
            timing,
            ctl,
            KINDS,
            3,
            chunks_per_file * spec.file_count as u64,
            |tid| {
                let checker =
                    spec.verify.map(|a| Checker::new(a, spec.verify_block() as usize, job.seed, tid as u32, "prepare"));
                let buf = AlignedBuf::random(LAYOUT_CHUNK as usize, 4096, job.seed ^ tid as u64);
                fill_pattern(buf.as_mut_slice(), spec.write_pattern());
                Ok((buf, checker))
            },
            |(buf, checker), rec| {
                let mut skipped = 0u64;
                let mut cached = 0u64;
                for i in (rec.tid as u32..spec.file_count).step_by(nthreads) {
                    if rec.interrupted() {
                        break;
                    }
                    let path = self.path(&job.dir, i);
                    if spec.reuse_files && std::fs::metadata(&path).map(|m| m.len() == self.file_len()).unwrap_or(false)
                    {
                        self.created.fetch_max(i + 1, Relaxed); // laid out before, and reused: the workload's
                        skipped += 1;
                        continue;
                    }
                    if !spec.file_names.is_empty() {
                        // fio creates the directories its file names need.
                        if let Some(parent) = path.parent() {
                            std::fs::create_dir_all(parent)
                                .map_err(|e| EngineError::io(format!("creating {}", parent.display()), e))?;
                        }
                    }
                    let fd = open(&path, open_flags).map_err(|e| match e {
                        EngineError::Io { ref source, .. }
                            if spec.direct_layout && source.raw_os_error() == Some(libc::EINVAL) =>
                        {
                            EngineError::invalid(
                                "direct_layout",
                                format!(
                                    "the filesystem under {} does not support O_DIRECT: use direct_layout=false",
                                    job.dir.display()
                                ),
                            )
                        }
                        e => e,
                    })?;
                    let _close = FdGuard(fd);
                    self.created.fetch_max(i + 1, Relaxed); // per file, not per operation
                    if spec.direct_layout {
                        let a = dio::dio_align(fd);
                        if start % a.offset != 0 || end % a.offset != 0 || a.mem > BUF_ALIGN {
                            return Err(EngineError::invalid(
                                "direct_layout",
                                format!(
                                    "O_DIRECT writes under {} need offsets and lengths in multiples of {} bytes ({}); the layout covers \
                                     [{start}, {end}): make file_size and offset multiples of it, or use direct_layout=false",
                                    job.dir.display(), a.offset, a.source
                                ),
                            ));
                        }
                    }
                    if let Some(ch) = checker.as_mut() {
                        self.lay_out_verified(fd, i, &path, buf, ch, rec)?;
                        cached += layout_cached_pages(&path, start, end);
                        continue;
                    }
                    let mut off = start;
                    while off < end && !rec.interrupted() {
                        let len = LAYOUT_CHUNK.min(end - off) as usize;
                        if let Some(m) = &self.meta {
                            m.stamp(&mut buf.as_mut_slice()[..len], off, 0, rec.tid as u32);
                        }
                        let t0 = now_ns();
                        // SAFETY: buf holds LAYOUT_CHUNK >= len bytes.
                        let n = unsafe {
                            crate::sys::pwrite(fd, buf.as_ptr() as *const libc::c_void, len, off as libc::off_t)
                        };
                        if n < 0 {
                            return Err(EngineError::last_os(format!("laying out {}", path.display())));
                        }
                        rec.record(WRITE, n as u64, t0, now_ns());
                        off += n as u64;
                    }
                    let t0 = now_ns();
                    // SAFETY: fd is open.
                    if unsafe { crate::sys::fsync(fd) } != 0 {
                        return Err(EngineError::last_os(format!("fsync {}", path.display())));
                    }
                    rec.record(FSYNC, 0, t0, now_ns());
                    // What the layout left in the page cache (none when it was written O_DIRECT).
                    cached += layout_cached_pages(&path, start, end);
                }
                Ok((skipped, checker.take(), cached))
            },
        )?;
        report.totals_without(NOT_DATA);
        report.counters.insert("files".into(), spec.file_count as u64);
        report.counters.insert("files_reused".into(), skipped.iter().map(|s| s.0).sum());
        report.counters.insert("layout_cached_pages".into(), skipped.iter().map(|s| s.2).sum());
        report.counters.insert("direct_layout".into(), spec.direct_layout as u64);
        if spec.verify.is_some() {
            verify::merge_into(
                &mut report,
                skipped.iter().filter_map(|s| s.1.as_ref()),
                |f| self.path(&job.dir, f).display().to_string(),
                self.verify_notes(job),
            );
        }
        Ok(report)
    }

    /// fio's fill_device: the files are created empty (the run writes them until the filesystem is full).
    fn prepare_fill(&self, job: &Settings) -> Result<PhaseReport> {
        self.prepared.store(true, Relaxed);
        for i in 0..self.spec.file_count {
            let path = self.path(&job.dir, i);
            if let Some(parent) = path.parent().filter(|_| !self.spec.file_names.is_empty()) {
                std::fs::create_dir_all(parent)
                    .map_err(|e| EngineError::io(format!("creating {}", parent.display()), e))?;
            }
            let fd = open(&path, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC)?;
            drop(FdGuard(fd));
            self.created.fetch_max(i + 1, Relaxed);
        }
        let mut report = PhaseReport::new("prepare");
        report.counters.insert("files".into(), self.spec.file_count as u64);
        Ok(report)
    }

    /// Lay one file out with verified blocks (write number 0), recording them in the last-writes table.
    fn lay_out_verified(
        &self,
        fd: RawFd,
        file: u32,
        path: &Path,
        buf: &AlignedBuf,
        ch: &mut Checker,
        rec: &mut Recorder,
    ) -> Result<()> {
        let b = ch.block as u64;
        let chunk = (LAYOUT_CHUNK / b).max(1) * b;
        let buf = if (buf.len() as u64) < chunk { &AlignedBuf::new(chunk as usize, 4096) } else { buf };
        let (mut off, end) = self.layout_range();
        while off < end && !rec.interrupted() {
            let len = chunk.min(end - off) as usize;
            let data = &mut buf.as_mut_slice()[..len];
            ch.fill(data, off, 0);
            let mut done = 0usize;
            while done < len {
                let t0 = now_ns();
                // SAFETY: data holds len bytes.
                let n = unsafe {
                    crate::sys::pwrite(
                        fd,
                        data[done..].as_ptr() as *const libc::c_void,
                        len - done,
                        (off + done as u64) as libc::off_t,
                    )
                };
                if n <= 0 {
                    return Err(EngineError::last_os(format!("laying out {}", path.display())));
                }
                rec.record(WRITE, n as u64, t0, now_ns());
                done += n as usize;
            }
            if let Some(l) = &self.last_writes {
                l.record(file, off, len as u64, ch.thread, 0);
            }
            off += len as u64;
        }
        let t0 = now_ns();
        // SAFETY: fd is open.
        if unsafe { crate::sys::fsync(fd) } != 0 {
            return Err(EngineError::last_os(format!("fsync {}", path.display())));
        }
        rec.record(FSYNC, 0, t0, now_ns());
        Ok(())
    }

    fn open_files(&self, job: &Settings) -> Result<(FilesGuard, Option<DirectIo>)> {
        let spec = &self.spec;
        // Read-only for a mix without writes, as fio and IOR open for reading: files on a
        // read-only mount, or without write permission, can then be read.
        // (fio's one-call engines change the file on reads too: falloc's reads are fallocate KEEP_SIZE.)
        let read_only = spec.entries.iter().all(|e| e.read_pct >= 100.0) && !spec.fio_engine.one_call();
        let mut flags = if read_only { libc::O_RDONLY } else { libc::O_RDWR };
        // The mmap backends' direct is an msync and a page drop per request, not O_DIRECT.
        if spec.direct && !job.backend.maps() {
            flags |= libc::O_DIRECT;
        }
        let mut files = FilesGuard(Vec::with_capacity(spec.file_count as usize));
        let mut direct = None;
        for i in 0..spec.file_count {
            let path = self.path(&job.dir, i);
            let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if len < self.file_len() && !spec.fill {
                return Err(EngineError::invalid(
                    "file_size",
                    format!(
                        "{} holds {len} bytes, fewer than offset + file_size ({}): run the prepare phase first",
                        path.display(),
                        self.file_len()
                    ),
                ));
            }
            let fd = open(&path, flags).map_err(|e| match e {
                EngineError::Io { source, .. } if source.raw_os_error() == Some(libc::EINVAL) && spec.direct => {
                    EngineError::invalid(
                        "direct",
                        format!(
                            "the filesystem under {} does not support O_DIRECT: use direct=false",
                            job.dir.display()
                        ),
                    )
                }
                e => e,
            })?;
            files.0.push(fd);
            if spec.atomic && job.backend != BackendKind::Null {
                self.check_atomic(fd, &path)?;
            }
            if job.backend == BackendKind::Libpmem && !mmap::is_dax(fd) {
                // fio's libpmem engine stops here too ("does not point to persistent memory").
                return Err(EngineError::invalid(
                    "backend",
                    format!(
                        "libpmem: {} is not on DAX persistent memory (statx reports no STATX_ATTR_DAX), and \
                         fio's libpmem engine refuses such a file too: put the files on a filesystem mounted \
                         with dax, or use ioengine=mmap (with fsync= for durable writes)",
                        path.display()
                    ),
                ));
            }
            if spec.direct && !job.backend.maps() && i == 0 {
                direct = Some(self.direct_io(fd, &job.dir)?);
            }
        }
        Ok((files, direct))
    }

    /// fio's atomic=1 on one file: the filesystem must report an untorn-write unit (statx
    /// STATX_WRITE_ATOMIC), every write size must be a power of two inside it, and every write offset a
    /// multiple of its size, as RWF_ATOMIC requires.
    fn check_atomic(&self, fd: RawFd, path: &Path) -> Result<()> {
        let spec = &self.spec;
        let (lo, hi) = dio::atomic_unit(fd);
        let fs = dio::fs_name(fd);
        if hi == 0 {
            return Err(EngineError::invalid(
                "atomic",
                format!(
                    "{} is on {fs}, which reports no atomic write unit (statx STATX_WRITE_ATOMIC: unit 0 bytes): \
                     untorn writes (RWF_ATOMIC) need a filesystem that has one (xfs on Linux 6.16+, or a device \
                     with atomic writes): run on one, or drop atomic",
                    path.display()
                ),
            ));
        }
        for e in spec.entries.iter().filter(|e| e.read_pct + e.trim_pct < 100.0 || spec.trim_then_write) {
            let w = e.size as u64;
            let why = if !w.is_power_of_two() || w < lo as u64 || w > hi as u64 {
                format!("the atomic write unit of {} ({fs}) is {lo} to {hi} bytes, powers of two", path.display())
            } else if !spec.offset.is_multiple_of(w)
                || spec.seq_add % w as i64 != 0
                || (e.random_pct > 0.0 && !spec.alignment.is_multiple_of(w))
            {
                "an untorn write must start at a multiple of its size: make offset and blockalign multiples of it"
                    .to_string()
            } else {
                continue;
            };
            return Err(EngineError::invalid("atomic", format!("{w}-byte writes: {why}")));
        }
        Ok(())
    }

    /// The filesystem's O_DIRECT alignment, checked against the spec: refused
    /// (naming the parameter) unless `allow_unaligned_direct`, then recorded.
    fn direct_io(&self, fd: RawFd, dir: &Path) -> Result<DirectIo> {
        let align = dio::dio_align(fd);
        if align.mem > BUF_ALIGN {
            return Err(EngineError::invalid(
                "direct",
                format!("O_DIRECT under {} needs buffers aligned to {} bytes ({}), more than fsmeter's {BUF_ALIGN}: use direct=false", dir.display(), align.mem, align.source),
            ));
        }
        let unaligned = match self.spec.check_direct_alignment(&align) {
            Ok(()) => false,
            Err(_) if self.spec.allow_unaligned_direct => true,
            Err(e) => return Err(e),
        };
        Ok(DirectIo { align, unaligned })
    }

    /// Pages of the data files in the page cache (None when mincore is unavailable).
    fn cached_pages(&self, files: &FilesGuard) -> Option<u64> {
        files
            .0
            .iter()
            .map(|&fd| {
                // A file being filled is as long as what was written so far.
                let len = if self.spec.fill { fd_len(fd)? } else { self.file_len() };
                dio::resident_pages(fd, len).ok()
            })
            .sum()
    }

    /// The run phase's files, opened, with what O_DIRECT on them needs: the alignment of each
    /// thread's share, and the pages of the files in the page cache before the phase.
    pub(super) fn open_run(&self, job: &Settings) -> Result<RunFiles> {
        if self.spec.fio_engine.per_name() || self.spec.fio_engine == FioEngine::Cpuio {
            // The file and directory engines work on names, not open files; cpuio on none.
            let files = FilesGuard(Vec::new());
            return Ok(RunFiles { files, direct: None, share_align: self.spec.alignment, cached_before: None });
        }
        let (files, direct) = self.open_files(job)?;
        let share_align = match &direct {
            Some(d) if !d.unaligned => lcm(self.spec.alignment, d.align.offset),
            _ => self.spec.alignment,
        };
        let cached_before = direct.as_ref().and_then(|_| self.cached_pages(&files));
        Ok(RunFiles { files, direct, share_align, cached_before })
    }

    fn run(&self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        if self.spec.fio_engine.per_name() {
            return self.run_names(job, ctl);
        }
        if self.spec.fio_engine == FioEngine::Cpuio {
            return self.run_cpu(job, ctl);
        }
        let rf = self.open_run(job)?;
        let (files, share_align) = (&rf.files, rf.share_align);
        let spec = &self.spec;
        let fault_log = std::sync::Mutex::new(Vec::<Injected>::new());
        let mut report = match job.backend {
            BackendKind::Psync if spec.fault.is_some() => {
                let fs = spec.fault.clone().expect("checked");
                self.run_with(job, ctl, files, share_align, |f, _| Ok(FaultBackend::new(f, fs.clone(), &fault_log)))
            }
            BackendKind::Psync => self.run_with(job, ctl, files, share_align, |f, _| Ok(PsyncBackend::new(f))),
            BackendKind::IoUring => self.run_with(job, ctl, files, share_align, |f, bufs| {
                let ptrs: Vec<(*mut u8, usize)> = bufs.iter().map(|b| (b.as_ptr(), b.len())).collect();
                UringBackend::new(f, self.spec.queue_depth as usize, &ptrs)
            }),
            BackendKind::Null => {
                self.run_with(job, ctl, files, share_align, |_, _| Ok(NullBackend::new(self.spec.queue_depth as usize)))
            }
            BackendKind::Mmap | BackendKind::Libpmem => {
                let opts = self.mmap_options(job);
                self.run_with(job, ctl, files, share_align, |f, _| MmapBackend::new(f, opts))
            }
        }?;
        report.totals_without(NOT_DATA);
        self.note_mmap(job, &mut report, files);
        if let Some(f) = &spec.fault {
            let log = fault_log.into_inner().unwrap_or_default();
            report.counters.insert("faults_injected".into(), log.len() as u64);
            report.extra["faults_injected"] = serde_json::json!({
                "kind": format!("{:?}", f.kind),
                "writes": log.iter().map(|i| serde_json::json!({"file": i.file, "offset": i.offset, "len": i.len})).collect::<Vec<_>>(),
            });
        }
        self.finish_direct(&mut report, rf);
        Ok(report)
    }

    /// How the mmap backends map this job's files (backend/mmap.rs): writable unless the mix only reads,
    /// advised random or sequential as the mix is, fio's direct, and libpmem's persistence (cache flushes;
    /// its files were proven on DAX persistent memory when they were opened).
    pub(super) fn mmap_options(&self, job: &Settings) -> MmapOptions {
        let spec = &self.spec;
        MmapOptions {
            writable: !spec.entries.iter().all(|e| e.read_pct >= 100.0) || spec.fio_engine.one_call(),
            random: spec.entries.iter().any(|e| e.random_pct > 0.0),
            direct: spec.direct,
            persist: match job.backend {
                BackendKind::Libpmem => Persist::CacheFlush,
                _ => Persist::No,
            },
        }
    }

    /// With an mmap backend: how the files were mapped and writes made durable (`extra.mmap`), and for
    /// libpmem on a file not on persistent memory, a warning saying so.
    pub(super) fn note_mmap(&self, job: &Settings, report: &mut PhaseReport, files: &FilesGuard) {
        if !job.backend.maps() {
            return;
        }
        let o = self.mmap_options(job);
        let dax = files.0.first().is_some_and(|&fd| mmap::is_dax(fd));
        let persist = match o.persist {
            Persist::No => "none: the page cache writes the mapped pages back",
            Persist::CacheFlush => "each write's CPU cache lines flushed and fenced before it completes",
        };
        report.extra["mmap"] = serde_json::json!({
            "backend": job.backend.name(),
            "mapped": "each file whole, MAP_SHARED, once per thread before the phase",
            "advice": if o.random { "MADV_RANDOM" } else { "MADV_SEQUENTIAL" },
            "writable": o.writable,
            "dax": dax,
            "persist": persist,
            "direct": if o.direct { "msync(MS_SYNC) and MADV_DONTNEED of each request's pages" } else { "no" },
        });
    }

    /// Whether O_DIRECT was really direct, into the report (`extra.direct_io`, and a warning when not).
    pub(super) fn finish_direct(&self, report: &mut PhaseReport, rf: RunFiles) {
        report.extra["direct_io"] = match rf.direct {
            None => serde_json::Value::Null,
            Some(d) => {
                // Pages that entered the page cache during the phase: O_DIRECT that
                // really bypassed it adds none, a buffered fallback (btrfs) does.
                let added = match (rf.cached_before, self.cached_pages(&rf.files)) {
                    (Some(b), Some(a)) => Some(a.saturating_sub(b)),
                    _ => None,
                };
                let fallback = d.unaligned || added.is_some_and(|n| n > 0);
                if fallback {
                    report.warnings.push(format!(
                        "O_DIRECT was not entirely direct: {}; the kernel may have served requests through the page cache",
                        if d.unaligned {
                            format!("requests are not multiples of the filesystem's {} bytes ({})", d.align.offset, d.align.source)
                        } else {
                            format!("{} page(s) of the data files entered the page cache during the phase", added.unwrap_or(0))
                        }
                    ));
                }
                serde_json::json!({
                    "offset_align": d.align.offset,
                    "mem_align": d.align.mem,
                    "align_source": d.align.source,
                    "unaligned_requests": d.unaligned,
                    "page_cache_pages_added": added,
                    "buffered_fallback_possible": fallback,
                })
            }
        };
    }

    fn run_with<B, Mk>(
        &self,
        job: &Settings,
        ctl: &Control,
        files: &FilesGuard,
        share_align: u64,
        make: Mk,
    ) -> Result<PhaseReport>
    where
        B: IoBackend,
        Mk: Fn(FileTable, &[AlignedBuf]) -> Result<B> + Sync,
    {
        let bufs = BufStats::default();
        let t = self.run_timing(job)?;
        let mut member = GroupMember::new(job.threads, t.warmup_ns, t.duration_ns);
        member.steady = self.steady()?;
        member.interval_lat = self.spec.interval_lat;
        let (mut report, _, mixes) = run_group(
            "run",
            &[member],
            t.interval_ns,
            ctl,
            KINDS,
            3,
            0,
            |tid| self.run_state(job, tid, share_align, files, &make, &bufs),
            // Two copies of the hot loop: without verify it has no verification code at all.
            |st, rec| self.run_work(st, rec, self.quota(job, rec.tid), job),
        )?;
        self.finish_run(job, &mut report, mixes, &bufs);
        Ok(report)
    }

    /// When the run phase measures: its warm-up, then its duration (None: until its bytes are done).
    pub(super) fn run_timing(&self, job: &Settings) -> Result<PhaseTiming> {
        let spec = &self.spec;
        Ok(PhaseTiming {
            warmup_ns: secs_to_ns("warmup_s", spec.warmup_s)?,
            duration_ns: spec.duration_s.map(|d| (d * 1e9) as u64),
            interval_ns: job.interval_ns(),
        })
    }

    /// The measured bytes thread `tid` (of `job.threads`) does, when the spec has a byte total.
    pub(super) fn quota(&self, job: &Settings, tid: usize) -> Option<u64> {
        let nthreads = job.threads as u64;
        if let Some(r) = self.spec.thread_regions.get(tid) {
            return self.spec.total_bytes.map(|_| r.bytes); // fio's offset_increment: each clone its own bytes
        }
        self.spec.total_bytes.map(|t| if tid == 0 { t / nthreads + t % nthreads } else { t / nthreads })
    }

    /// Thread `tid`'s state for the run phase, made before the common start: its request buffers,
    /// its backend on the open files, its request generator.
    pub(super) fn run_state<B, Mk>(
        &self,
        job: &Settings,
        tid: usize,
        share_align: u64,
        files: &FilesGuard,
        make: &Mk,
        stats: &BufStats,
    ) -> Result<RunState<B>>
    where
        B: IoBackend,
        Mk: Fn(FileTable, &[AlignedBuf]) -> Result<B>,
    {
        let spec = &self.spec;
        // Pinned, and the memory policy set, before the buffers are allocated (fio does it as its job starts).
        if spec.place.is_set() {
            spec.place.apply(tid)?;
        }
        let qd = spec.queue_depth as usize;
        let max = spec.max_size();
        let seed = |s: usize| job.seed ^ ((tid * qd + s) as u64) << 8;
        let (bufs, info) = AlignedBuf::set(qd, max, 4096, spec.buffer_memory, seed)
            .map_err(|e| buffer_error(spec.buffer_memory, qd, max, e))?;
        stats.buf_bytes.fetch_add((qd * max) as u64, Relaxed);
        stats.mapped_bytes.fetch_add(info.mapped, Relaxed);
        match info.huge {
            Some(h) => {
                stats.huge_bytes.fetch_add(h, Relaxed);
            }
            None => stats.huge_unknown.store(true, Relaxed),
        }
        for b in &bufs {
            fill_pattern(b.as_mut_slice(), spec.write_pattern());
        }
        if spec.ioprio.has_cmd() && matches!(job.backend, BackendKind::Psync | BackendKind::Mmap | BackendKind::Libpmem)
        {
            return Err(EngineError::invalid(
                "ioprio.cmd",
                "per-request priorities need backend io_uring (psync's pread and pwrite, and copies to a \
                 mapping, carry none): use ioprio.thread, or backend=io_uring",
            ));
        }
        // The thread's own priority, before the start (fio sets it as its job starts).
        if spec.ioprio.thread != 0 && job.backend != BackendKind::Null {
            set_thread_ioprio(spec.ioprio.thread)?;
        }
        let mut backend = make(files.0.clone(), &bufs)?;
        if spec.atomic {
            backend.set_write_flags(libc::RWF_ATOMIC)?;
        }
        Ok(RunState {
            backend,
            bufs,
            gen: AccessGen::with_share_align(spec, job.seed, tid, job.threads, share_align),
            slots: vec![SlotMeta::default(); qd],
            completed: Vec::with_capacity(qd),
            mix: vec![[0; 5]; spec.entries.len()],
            trim_fds: (job.backend != BackendKind::Null).then(|| files.0.clone()),
            refill: vec![false; qd],
            verify: spec.verify.map(|a| {
                let mut c = Checker::new(a, spec.verify_block() as usize, job.seed, tid as u32, "run");
                c.dump = spec.verify_dump;
                c
            }),
            backlog: (spec.verify.is_some() && spec.verify_backlog > 0)
                .then(|| Backlog::new(spec.verify_backlog, spec.verify_backlog_batch, qd)),
            racy: !((job.threads == 1 || spec.thread_files) && qd == 1),
            pattern_check: ContentCheck::new(None),
            writes: 0,
            donor: match spec.fio_engine {
                FioEngine::E4defrag if job.backend != BackendKind::Null => Some(self.open_donor(job)?),
                _ => None,
            },
            errors: ErrorCounts::default(),
            pacer: spec.pace.paces().then(|| Pacer::new(&spec.pace, spec.min_sizes(), seed(qd))),
            deferred: std::collections::VecDeque::with_capacity(qd),
            // Its weight joins the flow in the setup, before any thread of the group starts (fio adds a
            // job's weight when it sets the job up).
            flow: (spec.pace.flow > 0).then(|| {
                let mut f = FlowState::new(self.flow.clone(), spec.pace.flow, spec.pace.flow_sleep_us);
                f.join();
                f
            }),
            content: spec.content.as_ref().map(|c| {
                let [_, w] = spec.min_sizes();
                let min_write = if w == 0 { spec.entries.iter().map(|e| e.size).min().unwrap_or(1) } else { w as u32 };
                // fio fills its iodepth buffers (the largest request each) before a writing job starts.
                let primed = if w == 0 && !spec.trim_then_write { (0, 0) } else { (qd, max) };
                ContentGen::new(c, job.seed, tid, job.threads, min_write, spec.write_pattern(), primed)
            }),
            cmdprio: spec.ioprio.has_cmd().then(|| CmdPrioState::new(&spec.ioprio, seed(qd + 1) ^ 0x70_72_69_6f)),
            io_log: spec.io_log.as_ref().map(|l| IoLogBuf::new(l.max_records)),
            lat: spec.latency_target.as_ref().map(|l| LatProbe::new(l, qd as u32, 0)),
        })
    }

    /// One thread's run: the hot loop, in one of two copies (without verify it has no verification
    /// code at all). Returns its mix counts and its checker.
    pub(super) fn run_work<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        quota: Option<u64>,
        job: &Settings,
    ) -> Result<(Vec<[u64; 5]>, Option<Checker>)> {
        let mix = if st.verify.is_some() {
            self.worker::<B, true>(st, rec, quota, job)?
        } else {
            self.worker::<B, false>(st, rec, quota, job)?
        };
        if let Some(c) = &st.cmdprio {
            self.cmdprio_chosen.fetch_add(c.chosen, Relaxed);
        }
        if let Some(l) = st.io_log.as_mut() {
            self.io_log_dropped.fetch_add(l.dropped, Relaxed);
            self.io_logged.lock().unwrap_or_else(|e| e.into_inner()).push(l.take());
        }
        if let Some(p) = st.lat.take() {
            // Once per thread and phase, not per request.
            self.lat_found.lock().unwrap_or_else(|e| e.into_inner()).push(p);
        }
        if let Some(spr) = st.gen.sprandom() {
            // Once per thread and phase, not per request.
            *self.spr_found.lock().unwrap_or_else(|e| e.into_inner()) = Some(spr.summary());
        }
        if st.errors.total > 0 || st.errors.full > 0 {
            // Once per thread and phase, not per request.
            self.errors_found.lock().unwrap_or_else(|e| e.into_inner()).absorb(&st.errors);
        }
        if !self.spec.verify_pattern.is_empty() {
            // Once per thread and phase, not per request.
            let found = std::mem::replace(&mut st.pattern_check, ContentCheck::new(None));
            let mut all = self.pattern_found.lock().unwrap_or_else(|e| e.into_inner());
            match all.as_mut() {
                Some(a) => a.absorb(found),
                None => *all = Some(found),
            }
        }
        Ok((mix, st.verify.take()))
    }

    /// The run report's details from what the threads returned: verification, the mix as executed,
    /// the backend and the buffers.
    pub(super) fn finish_run(
        &self,
        job: &Settings,
        report: &mut PhaseReport,
        mixes: Vec<(Vec<[u64; 5]>, Option<Checker>)>,
        stats: &BufStats,
    ) {
        let spec = &self.spec;
        if spec.verify.is_some() {
            verify::merge_into(
                report,
                mixes.iter().filter_map(|m| m.1.as_ref()),
                |f| self.path(&job.dir, f).display().to_string(),
                self.verify_notes(job),
            );
        }
        let mixes: Vec<Vec<[u64; 5]>> = mixes.into_iter().map(|m| m.0).collect();
        let mut mix = vec![[0u64; 5]; spec.entries.len()];
        for m in &mixes {
            for (a, b) in mix.iter_mut().zip(m) {
                for k in 0..5 {
                    a[k] += b[k];
                }
            }
        }
        if !spec.verify_pattern.is_empty() {
            let found = self.pattern_found.lock().unwrap_or_else(|e| e.into_inner()).take();
            let mut found = found.unwrap_or_else(|| ContentCheck::new(None));
            found.notes = self.pattern_notes("reads of the run phase");
            found.merge_into(report);
        }
        let verify_extra = report.extra.get("verify").cloned();
        report.extra = serde_json::json!({
            "mix": spec.entries.iter().zip(&mix).map(|(e, m)| serde_json::json!({
                "size": e.size, "weight": e.weight, "read_pct": e.read_pct, "random_pct": e.random_pct, "trim_pct": e.trim_pct,
                "reads": m[0], "writes": m[1], "random": m[2], "sequential": m[3], "trims": m[4],
            })).collect::<Vec<_>>(),
            "random_distribution": spec.random_distribution,
            "random_scramble": spec.random_scramble,
            "content": spec.content,
            "atomic": spec.atomic,
            "trim_then_write": spec.trim_then_write,
            "buffer_pattern_bytes": spec.buffer_pattern.len(),
            "verify_pattern_bytes": spec.verify_pattern.len(),
            "fio_engine": spec.fio_engine.name(),
            "stat_type": spec.stat_type,
            "backend": job.backend.name(),
            "queue_depth": spec.queue_depth,
            "direct": spec.direct,
            "buffer_memory": {
                "kind": spec.buffer_memory,
                "bytes": stats.buf_bytes.load(Relaxed),
                "mapped_bytes": stats.mapped_bytes.load(Relaxed),
                "huge_bytes": (!stats.huge_unknown.load(Relaxed)).then(|| stats.huge_bytes.load(Relaxed)),
            },
        });
        if let Some(v) = verify_extra {
            report.extra["verify"] = v;
        }
        if let Some(l) = &spec.latency_target {
            let found = std::mem::take(&mut *self.lat_found.lock().unwrap_or_else(|e| e.into_inner()));
            if let Some(p) = found.first() {
                report.counters.insert("latency_depth".into(), p.depth as u64);
                report.extra["latency_target"] = serde_json::json!({
                    "target_ns": l.target_ns,
                    "window_ns": l.window_ns,
                    "percentile": l.percentile,
                    "run": l.run,
                    "depth": p.depth,
                    "iodepth": spec.queue_depth,
                    "windows_judged": p.windows,
                    "late_requests": p.late,
                    "final_window": p.end_run,
                    "stats_reset": p.reset_at > 0,
                    "search_ended_job": p.done,
                    "ended_over_target_ns": (p.fatal_ns > 0).then_some(p.fatal_ns),
                });
                if p.fatal_ns > 0 {
                    report.warnings.push(format!(
                        "a request took {} ns at queue depth 1, over latency_target ({} ns) with latency_percentile 100: the job \
                         ended there, as fio ends it (ETIMEDOUT, max latency exceeded)",
                        p.fatal_ns, l.target_ns
                    ));
                }
            }
        }
        if spec.continue_on.is_set() || spec.fill {
            let found = std::mem::take(&mut *self.errors_found.lock().unwrap_or_else(|e| e.into_inner()));
            report.counters.insert("errors".into(), found.total);
            report.extra["errors"] = found.to_json(|f| self.path(&job.dir, f).display().to_string());
            if spec.fill {
                report.counters.insert("filled".into(), found.full);
            }
        }
        if spec.place.is_set() {
            report.extra["place"] = serde_json::to_value(&spec.place).unwrap_or_default();
        }
        if spec.ioprio != Default::default() {
            report.extra["ioprio"] = serde_json::to_value(&spec.ioprio).unwrap_or_default();
        }
        if spec.ioprio.has_cmd() {
            report.counters.insert("cmdprio_ios".into(), self.cmdprio_chosen.swap(0, Relaxed));
        }
        if let Some(l) = &spec.io_log {
            // After the phase: merged and written off the measured window.
            let recs = std::mem::take(&mut *self.io_logged.lock().unwrap_or_else(|e| e.into_inner()));
            match write_logs(l, recs) {
                Ok(n) => {
                    report.counters.insert("io_log_lines".into(), n);
                }
                Err(e) => report.warnings.push(format!("the per-I/O log was not written: {e}")),
            }
            let dropped = self.io_log_dropped.swap(0, Relaxed);
            if dropped > 0 {
                report.counters.insert("io_log_dropped".into(), dropped);
                report.warnings.push(format!(
                    "the per-I/O log holds {} requests per thread at most: {dropped} were not logged (set \
                     log_avg_msec for one averaged line per interval instead)",
                    l.max_records
                ));
            }
        }
        if let Some(spr) = self.spr_found.lock().unwrap_or_else(|e| e.into_inner()).take() {
            report.extra["sprandom"] = spr;
        }
        if spec.pace.is_active() {
            report.extra["pace"] = serde_json::to_value(&spec.pace).unwrap_or_default();
            let missed = std::mem::take(&mut *self.rate_missed.lock().unwrap_or_else(|e| e.into_inner()));
            if !missed.is_empty() {
                report.counters.insert("rate_min_missed".into(), missed.len() as u64);
                report.warnings.extend(missed);
            }
        }
    }

    /// The hot loop: keep `queue_depth` requests in flight until the deadline,
    /// the byte quota, or a stop; then drain.
    fn worker<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        quota: Option<u64>,
        job: &Settings,
    ) -> Result<Vec<[u64; 5]>> {
        if let Some(p) = st.pacer.as_mut() {
            p.start(now_ns());
        }
        let out = self.worker_loop::<B, VERIFY>(st, rec, quota, job);
        if let Some(f) = st.flow.as_mut() {
            f.leave();
        }
        out
    }

    /// The worker's loop proper (the thread leaves its flow after it).
    fn worker_loop<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        quota: Option<u64>,
        job: &Settings,
    ) -> Result<Vec<[u64; 5]>> {
        let spec = &self.spec;
        let exact = VERIFY && self.verify_exact(job);
        let gen_base = self.runs << 40;
        let mut issued_bytes = 0u64;
        let mut inflight = 0usize;
        let mut writes_since_fsync = 0u64;
        let mut stopping = false;
        // With a latency target the depth starts at 1 (fio's lat_target_init at the job's start) and
        // moves between windows; during a warm-up nothing is judged, and its end starts the search again.
        let mut ramp_pending = false;
        let first = match st.lat.as_mut() {
            Some(p) => {
                let now = now_ns();
                p.init(now);
                ramp_pending = !rec.measuring(now);
                p.depth as usize
            }
            None => st.slots.len(),
        };
        for slot in 0..first {
            let Some((op, _)) = self.next_io(st, rec, quota, &mut issued_bytes, job)? else {
                stopping = true;
                break;
            };
            let t0 = now_ns();
            match self.pace(st, slot, op, t0, inflight, rec, &mut issued_bytes) {
                Paced::Go(t0) => {
                    self.launch::<B, VERIFY>(st, slot, op, t0, rec, Some(&mut issued_bytes), gen_base)?;
                    inflight += 1;
                }
                Paced::Deferred => {}
                Paced::Stop => {
                    stopping = true;
                    break;
                }
            }
            if quota.is_some_and(|q| issued_bytes >= q) {
                stopping = true;
                break;
            }
        }
        while inflight > 0 || !st.deferred.is_empty() {
            if inflight == 0 {
                // Only paced requests are left, each waiting for its time with nothing in flight.
                let Some((slot, wait)) = st.deferred.pop_front() else { break };
                let meta = st.slots[slot];
                st.slots[slot].op = None;
                let op = meta.op.expect("a deferred slot holds its request");
                // Requests drawn before a byte quota was reached still go (their bytes are counted);
                // a stop, the deadline or a missed minimum rate drops them.
                let halted = rec.should_stop(now_ns()) || st.pacer.as_ref().is_some_and(|p| p.missed.is_some());
                let ready = !halted
                    && match wait {
                        Wait::Due => sleep_until(meta.t0, rec),
                        Wait::Think => st.pacer.as_ref().is_some_and(|p| p.think(rec)) && sleep_until(meta.t0, rec),
                        Wait::Flow => st.flow.as_mut().is_some_and(|f| f.wait_and_pass(rec)),
                    };
                if !ready {
                    stopping = true;
                    for (s, _) in st.deferred.drain(..) {
                        st.slots[s].op = None;
                    }
                    continue;
                }
                self.launch::<B, VERIFY>(st, slot, op, now_ns(), rec, None, gen_base)?;
                inflight += 1;
                continue;
            }
            st.completed.clear();
            let completed = &mut st.completed;
            st.backend.reap(1, |slot, res| completed.push((slot, res)))?;
            let t1 = now_ns();
            let batch = st.completed.len();
            for i in 0..batch {
                let (slot, res) = st.completed[i];
                let meta = st.slots[slot];
                let op = meta.op.expect("completion for an idle slot");
                let mut synced = false;
                let short_fill = spec.fill && res >= 0 && (res as u64) < op.req.len as u64;
                if res < 0 || short_fill {
                    // A failed request: gone on after (counted, not measured), the end of a fill, or the end
                    // of the run. A short write while filling: fio writes its rest, which then fails.
                    let errno = if res < 0 { -res as i32 } else { libc::ENOSPC };
                    let dir = op.req.write as usize;
                    match st.errors.note(&spec.continue_on, spec.fill, dir, errno, &op.req) {
                        OnError::Go => {}
                        OnError::Full => {
                            stopping = true;
                            if short_fill {
                                st.errors.full_short = 1;
                            }
                        }
                        OnError::Fatal => return Err(self.io_failure(op.req, errno, job)),
                    }
                } else {
                    self.completed_ok::<B, VERIFY>(
                        st,
                        slot,
                        op,
                        meta,
                        res,
                        t1,
                        rec,
                        exact,
                        job,
                        &mut stopping,
                        &mut synced,
                        &mut writes_since_fsync,
                    )?;
                }
                if !stopping {
                    stopping = rec.should_stop(t1) || quota.is_some_and(|q| issued_bytes >= q);
                }
                if stopping {
                    st.slots[slot].op = None;
                    inflight -= 1;
                    continue;
                }
                if let Some(p) = &st.lat {
                    // The depth in force caps the requests in flight (this slot's still counted);
                    // a quiesce issues nothing until all are back.
                    if p.holding() || inflight > p.depth as usize {
                        st.slots[slot].op = None;
                        inflight -= 1;
                        continue;
                    }
                }
                if VERIFY {
                    // fio's verify_backlog: a due read of a logged write goes before the mix's next request.
                    if let Some(p) = st.backlog.as_mut().and_then(Backlog::next_read) {
                        let t0 = if st.completed.len() == 1 && !synced { t1 } else { now_ns() };
                        self.launch_backlog(st, slot, p, t0)?;
                        continue;
                    }
                }
                // The completion time doubles as the next request's issue time: one
                // clock read less per request; the latency then also covers the few
                // nanoseconds of bookkeeping in between (never less than the truth).
                let Some((op, trimmed)) = self.next_io(st, rec, quota, &mut issued_bytes, job)? else {
                    stopping = true;
                    st.slots[slot].op = None;
                    inflight -= 1;
                    continue;
                };
                let t0 = if st.completed.len() == 1 && !synced && !trimmed { t1 } else { now_ns() };
                // In the kernel besides this slot: the in-flight slots less this batch's unprocessed ones.
                let others = inflight - (batch - i);
                match self.pace(st, slot, op, t0, others, rec, &mut issued_bytes) {
                    Paced::Go(t0) => {
                        self.launch::<B, VERIFY>(st, slot, op, t0, rec, Some(&mut issued_bytes), gen_base)?
                    }
                    Paced::Deferred => inflight -= 1,
                    Paced::Stop => {
                        stopping = true;
                        st.slots[slot].op = None;
                        inflight -= 1;
                    }
                }
            }
            if st.lat.is_some() && !stopping {
                stopping = self.lat_step::<B, VERIFY>(
                    st,
                    rec,
                    quota,
                    &mut issued_bytes,
                    &mut inflight,
                    &mut ramp_pending,
                    job,
                    gen_base,
                )?;
            }
        }
        self.worker_end::<B, VERIFY>(st, rec, exact, job)
    }

    /// A request that completed: measured, verified, counted in the mix and the pace, and the fsync
    /// fio's `fsync` asks for after it.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn completed_ok<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        slot: usize,
        op: GenOp,
        meta: SlotMeta,
        res: i64,
        t1: u64,
        rec: &mut Recorder,
        exact: bool,
        job: &Settings,
        stopping: &mut bool,
        synced: &mut bool,
        writes_since_fsync: &mut u64,
    ) -> Result<()> {
        let spec = &self.spec;
        let kind = if op.req.write { WRITE } else { READ };
        rec.record(kind, res as u64, meta.t0, t1);
        if let Some(p) = st.lat.as_mut() {
            // fio's account_io_completion: each completion over the target counts against the window.
            if p.completed(t1.saturating_sub(meta.t0), t1) == Step::Fatal {
                *stopping = true;
            }
        }
        if let Some(l) = st.io_log.as_mut().filter(|_| meta.t0 >= rec.measure_start_ns) {
            l.push(io_record(&op, kind, meta.t0, t1, rec.measure_start_ns));
        }
        if VERIFY {
            self.verify_completion(st, slot, op.req, meta, res as usize, exact);
            if spec.verify_fatal && st.verify.as_ref().is_some_and(|c| c.mismatches > 0) {
                *stopping = true;
            }
        }
        if !op.req.write && !spec.verify_pattern.is_empty() && spec.verify_pattern_check {
            self.check_pattern(st, slot, op.req, res as usize, job, "run");
        }
        if !op.req.write && !spec.write_pattern().is_empty() {
            st.refill[slot] = true;
        }
        if meta.t0 >= rec.measure_start_ns && !meta.backlog {
            let m = &mut st.mix[op.entry];
            m[if op.req.write { 1 } else { 0 }] += 1;
            m[if op.random { 2 } else { 3 }] += 1;
        }
        if let Some(p) = st.pacer.as_mut().filter(|_| !meta.backlog) {
            if p.completed(op.req.write as usize, res as u64, t1) {
                *stopping = true;
            }
        }
        if op.req.write && spec.fsync_every > 0 {
            *writes_since_fsync += 1;
            if *writes_since_fsync >= spec.fsync_every {
                *writes_since_fsync = 0;
                *synced = true;
                let t0 = now_ns();
                st.backend.fsync(op.req.file)?;
                rec.record(FSYNC, 0, t0, now_ns());
            }
        }
        Ok(())
    }

    /// With a latency target, after each completion batch (one clock read): the warm-up's end, a
    /// quiesce finished (and the statistics reset before the final window), the window judged, and
    /// requests issued up to the depth in force. True: the thread is to stop issuing (the search
    /// ended, or the byte quota or deadline was reached).
    #[allow(clippy::too_many_arguments)]
    fn lat_step<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        quota: Option<u64>,
        issued_bytes: &mut u64,
        inflight: &mut usize,
        ramp_pending: &mut bool,
        job: &Settings,
        gen_base: u64,
    ) -> Result<bool> {
        let p = st.lat.as_mut().expect("a latency target");
        let now = now_ns();
        if *ramp_pending {
            if !rec.measuring(now) {
                // fio judges no window during its ramp.
                return Ok(false);
            }
            *ramp_pending = false;
            p.ramp_done(now);
        }
        if !p.holding() && p.started() {
            match p.check(now) {
                Step::Go | Step::Quiesce | Step::Fatal => {}
                Step::Done => return Ok(true),
            }
        }
        if p.holding() {
            if *inflight > 0 {
                return Ok(false);
            }
            if p.quiesced(now) {
                rec.restart_measure(now);
            }
        }
        let depth = p.depth as usize;
        while *inflight < depth {
            if rec.should_stop(now_ns()) {
                return Ok(true);
            }
            let Some(slot) = st.slots.iter().position(|m| m.op.is_none()) else { break };
            let Some((op, _)) = self.next_io(st, rec, quota, issued_bytes, job)? else { return Ok(true) };
            self.launch::<B, VERIFY>(st, slot, op, now_ns(), rec, Some(issued_bytes), gen_base)?;
            *inflight += 1;
            if quota.is_some_and(|q| *issued_bytes >= q) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The end of a thread's loop: a missed minimum rate reported, fio's end_fsync.
    fn worker_end<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        exact: bool,
        job: &Settings,
    ) -> Result<Vec<[u64; 5]>> {
        let spec = &self.spec;
        if let Some((d, got, min, bytes)) = st.pacer.as_ref().and_then(|p| p.missed) {
            let (unit, opt) = if bytes { ("B/s", "rate_min") } else { ("IOPS", "rate_iops_min") };
            let dir = if d == 0 { "read" } else { "write" };
            self.rate_missed.lock().unwrap_or_else(|e| e.into_inner()).push(format!(
                "thread {}: {opt} not met for {dir}s: {got} {unit} over a rate cycle, the minimum is {min} {unit}; the thread stopped (fio ends the job with an error)",
                rec.tid
            ));
        }
        if spec.fsync_end && !rec.interrupted() {
            for f in 0..spec.file_count {
                let t0 = now_ns();
                st.backend.fsync(f)?;
                rec.record(FSYNC, 0, t0, now_ns());
            }
        }
        let fatal = spec.verify_fatal && st.verify.as_ref().is_some_and(|c| c.mismatches > 0);
        if VERIFY && st.backlog.is_some() && !fatal {
            self.backlog_rest(st, rec, exact, job)?;
        }
        Ok(std::mem::take(&mut st.mix))
    }

    /// With pacing: may the request just drawn for `slot` go now? `others`: requests in the kernel
    /// besides this slot. A request not yet due waits asleep when nothing else is in flight (its
    /// issue time is then the wake-up), else it is deferred until everything in flight is done, as
    /// fio's inline submission quiesces before it sleeps; thinktime always quiesces first.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn pace<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        slot: usize,
        op: GenOp,
        t0: u64,
        others: usize,
        rec: &Recorder,
        issued_bytes: &mut u64,
    ) -> Paced {
        if let Some(f) = st.flow.as_mut() {
            // fio's flow (never with a rate or thinktime: the spec refuses them together).
            if !f.ahead() {
                f.pass();
                return Paced::Go(t0);
            }
            if others == 0 && st.deferred.is_empty() {
                return if f.wait_and_pass(rec) { Paced::Go(now_ns()) } else { Paced::Stop };
            }
            st.slots[slot] = SlotMeta { t0: 0, op: Some(op), generation: 0, backlog: false };
            st.deferred.push_back((slot, Wait::Flow));
            if rec.measuring(t0) {
                *issued_bytes += op.req.len as u64;
            }
            return Paced::Deferred;
        }
        let Some(p) = st.pacer.as_mut() else { return Paced::Go(t0) };
        let (due, quiesce) = match p.book(op.req.write as usize, op.req.len as u64, t0) {
            Go::Now => return Paced::Go(t0),
            Go::At { due, quiesce } => (due, quiesce),
        };
        if others > 0 || !st.deferred.is_empty() {
            st.slots[slot] = SlotMeta { t0: due, op: Some(op), generation: 0, backlog: false };
            st.deferred.push_back((slot, if quiesce { Wait::Think } else { Wait::Due }));
            // Counted now, so a byte quota stops the drawing of requests it would not issue.
            if rec.measuring(t0) {
                *issued_bytes += op.req.len as u64;
            }
            return Paced::Deferred;
        }
        if (quiesce && !p.think(rec)) || !sleep_until(due, rec) {
            return Paced::Stop;
        }
        Paced::Go(now_ns())
    }

    /// Queue `op` on `slot`, issued at `t0`; its bytes counted into `issued_bytes` (None: counted
    /// when it was deferred).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn launch<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        slot: usize,
        op: GenOp,
        t0: u64,
        rec: &Recorder,
        issued_bytes: Option<&mut u64>,
        gen_base: u64,
    ) -> Result<()> {
        if let Some(n) = issued_bytes {
            if rec.measuring(t0) {
                *n += op.req.len as u64;
            }
        }
        let mut op = op;
        // Every request carries the thread's priority (fio sets it on each io_uring request), unless
        // a cmdprio rule gives it its own.
        op.req.ioprio = self.spec.ioprio.thread;
        if let Some(c) = st.cmdprio.as_mut() {
            if let Some(p) = c.pick(op.req.write, op.req.len) {
                op.req.ioprio = p;
                if rec.measuring(t0) {
                    c.chosen += 1;
                }
            }
        }
        let generation = if VERIFY { self.fill_write(st, slot, op.req, gen_base) } else { 0 };
        self.refill_pattern(st, slot, op.req.write);
        if let Some(m) = self.meta.as_ref().filter(|_| op.req.write) {
            if !VERIFY {
                st.writes += 1;
            }
            m.stamp(&mut st.bufs[slot].as_mut_slice()[..op.req.len as usize], op.req.offset, st.writes, rec.tid as u32);
        }
        let mut t0 = t0;
        if op.req.write {
            if let Some(c) = st.content.as_mut() {
                // fio fills a write's buffer before it issues it: the fill is not in the request's time.
                c.fill(&mut st.bufs[slot].as_mut_slice()[..op.req.len as usize], op.req.offset, t0);
                t0 = t0.max(now_ns());
            }
        }
        st.slots[slot] = SlotMeta { t0, op: Some(op), generation, backlog: false };
        st.backend.queue(slot, op.req, st.bufs[slot].as_ptr())
    }

    /// Queue a verify_backlog read of the written request `p` on `slot`, issued at `t0` (not
    /// counted against the byte quota, which counts the mix's requests).
    #[inline]
    fn launch_backlog<B: IoBackend>(&self, st: &mut RunState<B>, slot: usize, p: Piece, t0: u64) -> Result<()> {
        let req = IoReq { file: p.file, offset: p.offset, len: p.len, write: false, ioprio: self.spec.ioprio.thread };
        let op = GenOp { req, entry: 0, random: false, trim: false };
        st.slots[slot] = SlotMeta { t0, op: Some(op), generation: p.generation, backlog: true };
        st.backend.queue(slot, req, st.bufs[slot].as_ptr())
    }

    /// At the end of a thread's writes, fio reads back the logged writes no batch has read yet
    /// (its final verify pass); after a deadline or a stop it does not, and neither is done here.
    #[cold]
    fn backlog_rest<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        exact: bool,
        job: &Settings,
    ) -> Result<()> {
        let spec = &self.spec;
        let qd = st.slots.len();
        let mut inflight = 0usize;
        loop {
            while inflight < qd && !rec.should_stop(now_ns()) {
                let Some(p) = st.backlog.as_mut().and_then(Backlog::take_left) else { break };
                let slot = (0..qd).find(|&s| st.slots[s].op.is_none()).expect("a free slot");
                self.launch_backlog(st, slot, p, now_ns())?;
                inflight += 1;
            }
            if inflight == 0 {
                return Ok(());
            }
            st.completed.clear();
            let completed = &mut st.completed;
            st.backend.reap(1, |slot, res| completed.push((slot, res)))?;
            let t1 = now_ns();
            for i in 0..st.completed.len() {
                let (slot, res) = st.completed[i];
                let meta = st.slots[slot];
                let op = meta.op.expect("completion for an idle slot");
                if res < 0 {
                    return Err(self.io_failure(op.req, -res as i32, job));
                }
                rec.record(READ, res as u64, meta.t0, t1);
                self.verify_completion(st, slot, op.req, meta, res as usize, exact);
                st.slots[slot].op = None;
                inflight -= 1;
                if spec.verify_fatal && st.verify.as_ref().is_some_and(|c| c.mismatches > 0) {
                    st.backlog = None; // the rest is not read back
                }
            }
        }
    }

    /// The next request for the backend (and whether trims came first). Trims are done here, one
    /// fallocate each, timed and counted as their own kind: a hole punch moves no data through a
    /// buffer, and keeping it out of the backends keeps their contract (read, write, fsync) as it is.
    /// With queue_depth > 1 a trim therefore waits for nothing and nothing waits for it but this
    /// thread. None: the phase ended (deadline, byte quota or stop) during trims.
    #[inline]
    fn next_io<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        quota: Option<u64>,
        issued: &mut u64,
        job: &Settings,
    ) -> Result<Option<(GenOp, bool)>> {
        let mut trimmed = false;
        // fio's one-call engines (falloc, ftruncate, e4defrag: fileops.rs) do every request here.
        let one_call = self.spec.fio_engine.one_call();
        loop {
            let op = st.gen.next_op();
            if st.gen.ended() {
                return Ok(None); // fio's per-direction random map stopped, or sprandom's plan is done
            }
            if !op.trim && !one_call {
                return Ok(Some((op, trimmed)));
            }
            trimmed = true;
            let t0 = now_ns();
            if rec.measuring(t0) {
                *issued += op.req.len as u64;
            }
            let kind = if op.trim {
                TRIM
            } else if op.req.write {
                WRITE
            } else {
                READ
            };
            let mut bytes = op.req.len as u64;
            let mut failed = false;
            if let Some(fds) = &st.trim_fds {
                let fd = fds[op.req.file as usize];
                let done = if one_call {
                    self.one_call(fd, &op, kind, st.donor.as_ref()).map(|n| bytes = n)
                } else {
                    punch_hole(fd, op.req.offset, op.req.len as u64)
                };
                if let Err(e) = done {
                    // fio's continue_on_error: a trim's error is a write error, as in fio.
                    let dir = match kind {
                        READ => 0,
                        WRITE => 1,
                        _ => 2,
                    };
                    let errno = e.raw_os_error().unwrap_or(libc::EIO);
                    match st.errors.note(&self.spec.continue_on, self.spec.fill, dir, errno, &op.req) {
                        OnError::Go => failed = true,
                        OnError::Full => return Ok(None),
                        OnError::Fatal if one_call => return Err(one_call_failure(self.spec.fio_engine, &op, e, job)),
                        OnError::Fatal => return Err(trim_failure(op.req, e, job)),
                    }
                }
            }
            let t1 = now_ns();
            if failed {
                // Counted, not measured; the thread goes on with its next request.
                if rec.should_stop(t1) || quota.is_some_and(|q| *issued >= q) {
                    return Ok(None);
                }
                continue;
            }
            rec.record(kind, bytes, t0, t1);
            if let Some(l) = st.io_log.as_mut().filter(|_| t0 >= rec.measure_start_ns) {
                l.push(io_record(&op, kind, t0, t1, rec.measure_start_ns));
            }
            if t0 >= rec.measure_start_ns {
                let m = &mut st.mix[op.entry];
                m[match kind {
                    READ => 0,
                    WRITE => 1,
                    _ => 4,
                }] += 1;
                m[if op.random { 2 } else { 3 }] += 1;
            }
            if rec.should_stop(t1) || quota.is_some_and(|q| *issued >= q) {
                return Ok(None);
            }
        }
    }

    /// With a buffer pattern: a write on a slot whose buffer a read overwrote gets the pattern back.
    #[inline]
    fn refill_pattern<B: IoBackend>(&self, st: &mut RunState<B>, slot: usize, write: bool) {
        if write && st.refill[slot] {
            st.refill[slot] = false;
            fill_pattern(st.bufs[slot].as_mut_slice(), self.spec.write_pattern());
        }
    }

    /// With verify_pattern, after a read: its bytes against the pattern (one request counted as checked).
    #[inline]
    fn check_pattern<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        slot: usize,
        req: IoReq,
        moved: usize,
        job: &Settings,
        phase: &str,
    ) {
        let data = &st.bufs[slot].as_slice()[..moved.min(req.len as usize)];
        if let Some(m) = &self.meta {
            st.pattern_check.checked += data.len().div_ceil(m.block()) as u64;
            if m.check(data, req.offset).is_some() {
                let path = self.path(&job.dir, req.file);
                note_meta(&mut st.pattern_check, m, &path, req.offset, data, None, phase);
            }
            return;
        }
        st.pattern_check.checked += 1;
        if let Some(first) = pattern_mismatch(data, &self.pattern_tile, self.spec.verify_pattern.len(), req.offset) {
            let path = self.path(&job.dir, req.file);
            note_pattern(&mut st.pattern_check, &path, req.offset, data, &self.spec.verify_pattern, first, phase);
        }
    }

    fn pattern_notes(&self, what: &str) -> serde_json::Value {
        serde_json::json!({
            "pattern_bytes": self.spec.verify_pattern.len(),
            "checked": what,
            "why": if self.meta.is_some() {
                "every block of verify_block bytes must start with its header (magic, length, its offset, the \
                 header's crc32c) and hold the verify_pattern byte for its offset after it (fio's verify=meta \
                 with verify_pattern); blocks_checked counts those blocks"
            } else {
                "every byte read must be the verify_pattern byte for its offset (fio's verify=pattern); \
                 blocks_checked counts the requests (or 1 MiB reads) compared"
            },
        })
    }

    /// The verify phase with verify_pattern: re-read every file and compare each byte with the pattern.
    fn verify_pattern_phase(&self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        const CHUNK: u64 = 1 << 20;
        let (start, end) = if self.spec.shared_file {
            (self.spec.run_base(), self.spec.run_base() + self.spec.file_size)
        } else {
            (0, self.file_len())
        };
        let nfiles = self.spec.file_count as usize;
        let nthreads = job.threads.min(nfiles).max(1);
        let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
        let work = (end - start).div_ceil(CHUNK) * nfiles as u64;
        let (mut report, found) = run_threads(
            "verify",
            nthreads,
            timing,
            ctl,
            &["read"],
            3,
            work,
            |_| Ok((AlignedBuf::new(CHUNK as usize, 4096), ContentCheck::new(None))),
            |(buf, found), rec| {
                for i in (rec.tid..nfiles).step_by(nthreads) {
                    let path = self.path(&job.dir, i as u32);
                    let file = std::fs::File::open(&path)
                        .map_err(|e| EngineError::io(format!("verify: opening {}", path.display()), e))?;
                    let mut off = start;
                    while off < end && !rec.interrupted() {
                        let len = CHUNK.min(end - off) as usize;
                        let data = &mut buf.as_mut_slice()[..len];
                        let mut got = 0usize;
                        while got < len {
                            let t0 = now_ns();
                            let n = std::os::unix::fs::FileExt::read_at(&file, &mut data[got..], off + got as u64)
                                .map_err(|e| EngineError::io(format!("verify: reading {}", path.display()), e))?;
                            rec.record(0, n as u64, t0, now_ns());
                            if n == 0 {
                                break;
                            }
                            got += n;
                        }
                        if let Some(m) = &self.meta {
                            found.checked += len.div_ceil(m.block()) as u64;
                            // A file that ends early: its first missing block counts as a block of zeros.
                            let missing = (got < len && got.is_multiple_of(m.block())).then(|| MetaFault {
                                block_offset: off + got as u64,
                                first: 0,
                                field: "magic (the file ends before this block)",
                            });
                            if m.check(&data[..got], off).is_some() || missing.is_some() {
                                note_meta(found, m, &path, off, &data[..got], missing, "verify");
                            }
                            off += len as u64;
                            continue;
                        }
                        found.checked += 1;
                        let n = self.spec.verify_pattern.len();
                        // A short file: the bytes it lacks count as zeros.
                        let mismatch = pattern_mismatch(&data[..got], &self.pattern_tile, n, off)
                            .or_else(|| (got < len).then_some(got));
                        if let Some(first) = mismatch {
                            data[got..].fill(0);
                            note_pattern(found, &path, off, data, &self.spec.verify_pattern, first, "verify");
                        }
                        off += len as u64;
                    }
                }
                Ok(std::mem::replace(found, ContentCheck::new(None)))
            },
        )?;
        let mut all = ContentCheck::new(None);
        for f in found {
            all.absorb(f);
        }
        all.notes = self.pattern_notes("every byte of the files, re-read after the run");
        all.merge_into(&mut report);
        Ok(report)
    }

    /// With verify: before a write is queued, fill its buffer with verified blocks
    /// under a new write number (returned). Reads need nothing.
    #[inline]
    fn fill_write<B: IoBackend>(&self, st: &mut RunState<B>, slot: usize, req: IoReq, gen_base: u64) -> u64 {
        if !req.write {
            return 0;
        }
        st.writes += 1;
        let generation = gen_base | st.writes;
        if let Some(ch) = st.verify.as_mut() {
            ch.fill(&mut st.bufs[slot].as_mut_slice()[..req.len as usize], req.offset, generation);
        }
        generation
    }

    /// With verify, after a request completes: a write is recorded in the last-writes table
    /// (what the blocks should now hold); a read is checked against it when reads
    /// cannot race writes (`exact`).
    #[inline]
    fn verify_completion<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        slot: usize,
        req: IoReq,
        meta: SlotMeta,
        moved: usize,
        exact: bool,
    ) {
        let Some(ch) = st.verify.as_mut() else { return };
        if req.write {
            if let Some(l) = &self.last_writes {
                l.record(req.file, req.offset, req.len as u64, ch.thread, meta.generation);
            }
            if let Some(b) = st.backlog.as_mut() {
                b.written(Piece { file: req.file, offset: req.offset, len: req.len, generation: meta.generation });
            }
        } else if meta.backlog {
            // Always checked, as fio checks its backlog reads: against the write the block should
            // hold when no other write can race it, else for the block's own consistency.
            ch.backlog_reads += 1;
            let n = moved.min(req.len as usize);
            let last_writes = self.last_writes.as_ref().filter(|_| exact);
            if st.racy {
                // A write of another request may have been under way: read the range again (not timed,
                // not counted) while it fails, waiting a little longer each time (50 us doubling, about
                // 6 ms in all: a writer may be off its CPU mid-copy), and judge by the last read. Once the
                // thread has kept its share of real mismatches it does not wait for more.
                let (algo, block) = (ch.algo, ch.block);
                let clean = |d: &[u8]| {
                    d.chunks(block)
                        .enumerate()
                        .all(|(i, b)| verify::check_block(b, req.offset + (i * block) as u64, algo).is_ok())
                };
                let tries = if ch.mismatches < verify::KEEP_MISMATCHES as u64 { 7 } else { 0 };
                if let Some(fds) = &st.trim_fds {
                    for t in 0..tries {
                        if clean(&st.bufs[slot].as_slice()[..n]) {
                            break;
                        }
                        std::thread::sleep(std::time::Duration::from_micros(50 << t));
                        let buf = st.bufs[slot].as_mut_slice()[..n].as_mut_ptr();
                        // SAFETY: the slot's buffer holds at least n bytes and no request is in flight on it.
                        // A short or failed re-read leaves the earlier bytes, which are then judged.
                        let _ = unsafe { crate::sys::pread(fds[req.file as usize], buf.cast(), n, req.offset as i64) };
                    }
                }
            }
            let data = &st.bufs[slot].as_slice()[..n];
            ch.check(data, req.file, req.offset, |o| last_writes.and_then(|l| l.expected(req.file, o)));
            if moved < req.len as usize {
                let b = ch.block as u64;
                let first_missing = req.offset + (moved as u64).div_ceil(b) * b;
                for o in (first_missing..req.offset + req.len as u64).step_by(b as usize) {
                    ch.blocks_checked += 1;
                    ch.note(req.file, verify::check_block(&[], o, ch.algo).expect_err("an empty block fails"));
                }
            }
        } else if exact {
            let data = &st.bufs[slot].as_slice()[..moved.min(req.len as usize)];
            let last_writes = self.last_writes.as_ref();
            ch.check(data, req.file, req.offset, |o| last_writes.and_then(|l| l.expected(req.file, o)));
        }
    }

    /// The `verify` phase: re-read every block of every file and check it (against
    /// the write it should hold, when that is known exactly).
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

    fn verify_phase(&self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        super::regions::check_verify_grid(&self.spec.thread_regions, self.spec.verify_block())?;
        if !self.spec.verify_pattern.is_empty() {
            if !self.spec.verify_pattern_check {
                return Err(EngineError::invalid(
                    "verify_pattern_check",
                    "is false: the pattern is written unchecked, so there is no verify phase",
                ));
            }
            return self.verify_pattern_phase(job, ctl);
        }
        let Some(algo) = self.spec.verify else {
            return Err(EngineError::invalid(
                "verify",
                "the verify phase needs verify = \"crc32c\", \"xxh3\" or \"sha256\" in the spec",
            ));
        };
        // A shared file: only the region this process's run phase worked on (other processes check theirs).
        let (reread_start, reread_end) = if self.spec.shared_file {
            (self.spec.run_base(), self.spec.run_base() + self.spec.file_size)
        } else {
            (0, self.file_len())
        };
        let files: Vec<verify::RereadFile> = (0..self.spec.file_count)
            .map(|i| verify::RereadFile { path: self.path(&job.dir, i), start: reread_start, len: reread_end })
            .collect();
        verify::reread(
            job,
            ctl,
            &files,
            algo,
            self.spec.verify_block(),
            self.last_writes.as_ref(),
            self.verify_exact(job),
            self.verify_notes(job),
        )
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

/// The length of an open file (fstat), None when it cannot be told.
fn fd_len(fd: RawFd) -> Option<u64> {
    // SAFETY: fstat on an open fd into a zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some(st.st_size as u64)
}

impl Access {
    /// A request's error that stops the run: its direction, length, offset and file, and the errno.
    #[cold]
    fn io_failure(&self, req: IoReq, errno: i32, job: &Settings) -> EngineError {
        io_failure(req, errno, self.spec.direct, &self.path(&job.dir, req.file))
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

/// Where `data`, read at file offset `offset`, first differs from the pattern of `n` bytes whose
/// repetition `tile` is (a whole number of patterns): byte `o` of a file holds `pattern[o % n]`.
/// Compared a tile at a time (memcmp), the differing byte found only when there is one.
#[inline]
fn pattern_mismatch(data: &[u8], tile: &[u8], n: usize, offset: u64) -> Option<usize> {
    let mut phase = (offset % n as u64) as usize;
    let mut i = 0;
    while i < data.len() {
        let take = (tile.len() - phase).min(data.len() - i);
        if data[i..i + take] != tile[phase..phase + take] {
            return (0..take).find(|&k| data[i + k] != tile[phase + k]).map(|k| i + k);
        }
        i += take;
        phase = 0;
    }
    None
}

/// One pattern mismatch into `found`, described by its bytes (cold: a corrupt read).
#[cold]
fn note_pattern(
    found: &mut ContentCheck,
    path: &Path,
    offset: u64,
    data: &[u8],
    pattern: &[u8],
    first: usize,
    phase: &str,
) {
    let n = pattern.len();
    let expected: Vec<u8> = (0..data.len()).map(|k| pattern[((offset + k as u64) % n as u64) as usize]).collect();
    found.note(byte_mismatch(&path.display().to_string(), offset, data.len(), phase, &expected, data, first));
}

/// The blocks of `data` (read at `offset`) failing verify_pattern_meta's check into `found`, and
/// `missing`: the first block of a file that ends early (cold: a corrupt read).
#[cold]
fn note_meta(
    found: &mut ContentCheck,
    m: &MetaPattern,
    path: &Path,
    offset: u64,
    data: &[u8],
    missing: Option<MetaFault>,
    phase: &str,
) {
    let name = path.display().to_string();
    for f in m.faults(data, offset).into_iter().chain(missing) {
        let at = ((f.block_offset - offset) as usize).min(data.len());
        let block = &data[at..(at + m.block()).min(data.len())];
        found.note(m.describe(&name, block, &f, phase));
    }
}

/// fio's buffer_pattern: the pattern repeated from the start of the buffer (nothing when empty).
fn fill_pattern(buf: &mut [u8], pattern: &[u8]) {
    if pattern.is_empty() {
        return;
    }
    for chunk in buf.chunks_mut(pattern.len()) {
        chunk.copy_from_slice(&pattern[..chunk.len()]);
    }
}

/// A trim on a file: punch a hole over [offset, offset + len), keeping the file's size.
#[inline]
fn punch_hole(fd: RawFd, offset: u64, len: u64) -> std::io::Result<()> {
    use rustix::fs::{fallocate, FallocateFlags};
    // SAFETY: fd is open for the whole phase (FilesGuard).
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    fallocate(fd, FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE, offset, len).map_err(std::io::Error::from)
}

#[cold]
fn trim_failure(req: IoReq, e: std::io::Error, job: &Settings) -> EngineError {
    if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
        return EngineError::invalid(
            "trim_pct",
            format!(
                "the filesystem under {} cannot punch holes (fallocate PUNCH_HOLE), which is how fsmeter trims a file: \
                 use a filesystem that can (ext4, xfs, btrfs, tmpfs), or no trims",
                job.dir.display()
            ),
        );
    }
    EngineError::io(format!("trim (hole punch) of {} bytes at offset {} of file {}", req.len, req.offset, req.file), e)
}

/// Pages of the region [start, end) a layout just wrote that are still in the page cache (mincore
/// needs a mapping, and a mapping a readable descriptor: the layout's is write-only). 0 when it
/// cannot be told.
fn layout_cached_pages(path: &Path, start: u64, end: u64) -> u64 {
    match open(path, libc::O_RDONLY) {
        Ok(fd) => {
            let _close = FdGuard(fd);
            dio::resident_pages_in(fd, start, end).unwrap_or(0)
        }
        Err(_) => 0,
    }
}

pub(crate) fn open(path: &Path, flags: i32) -> Result<RawFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| EngineError::invalid("dir", format!("{} contains a NUL byte", path.display())))?;
    let want = flags | libc::O_CLOEXEC;
    // A network filesystem's client (GlusterFS over FUSE) can fail an O_CREAT without O_EXCL with
    // EEXIST when another host created the same file at that moment: the file is there, so open it
    // as it is (and create it again should it vanish in between), for a few rounds.
    let mut f = want;
    for _ in 0..8 {
        // SAFETY: c is a valid C string.
        let fd = unsafe { crate::sys::open(c.as_ptr(), f, 0o644) };
        if fd >= 0 {
            return Ok(fd);
        }
        match open_retry_flags(want, f, std::io::Error::last_os_error().raw_os_error()) {
            Some(next) => f = next,
            None => break,
        }
    }
    Err(EngineError::last_os(format!("open {}", path.display())))
}

/// The flags of the next try after an open with `tried` (asked for: `want`) failed with `err`,
/// or None when the error stands. Only a plain O_CREAT (no O_EXCL) is retried: after EEXIST
/// without it, after ENOENT with it again.
fn open_retry_flags(want: i32, tried: i32, err: Option<i32>) -> Option<i32> {
    if want & (libc::O_CREAT | libc::O_EXCL) != libc::O_CREAT {
        return None;
    }
    match (tried & libc::O_CREAT != 0, err) {
        (true, Some(libc::EEXIST)) => Some(want & !libc::O_CREAT),
        (false, Some(libc::ENOENT)) => Some(want),
        _ => None,
    }
}

/// The files of a `run` phase, open, and what was found about O_DIRECT on them.
pub(super) struct RunFiles {
    pub(super) files: FilesGuard,
    direct: Option<DirectIo>,
    pub(super) share_align: u64,
    cached_before: Option<u64>,
}

/// What the run phase's threads got for their request buffers (summed at setup, not per operation).
#[derive(Default)]
pub(super) struct BufStats {
    buf_bytes: AtomicU64,
    mapped_bytes: AtomicU64,
    huge_bytes: AtomicU64,
    huge_unknown: AtomicBool,
}

/// What was found about O_DIRECT on the files of a `run` phase.
struct DirectIo {
    align: DioAlign,
    /// Some request is not a multiple of `align` (only with allow_unaligned_direct).
    unaligned: bool,
}

struct FdGuard(RawFd);
impl Drop for FdGuard {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { crate::sys::close(self.0) };
    }
}

pub(super) struct FilesGuard(pub(super) Vec<RawFd>);
impl Drop for FilesGuard {
    fn drop(&mut self) {
        for &fd in &self.0 {
            // SAFETY: we own the fds.
            unsafe { crate::sys::close(fd) };
        }
    }
}

/// A thread's huge-page buffers that could not be had, as a parameter error saying what to do.
fn buffer_error(mem: BufferMemory, count: usize, len: usize, e: std::io::Error) -> EngineError {
    let what = match mem {
        BufferMemory::Hugetlb => {
            let pages = huge_region(count, len, HUGETLB_PAGE) / HUGETLB_PAGE;
            format!(
                "could not map {pages} hugetlb page(s) of 2 MiB per thread for {count} buffer(s) of {len} bytes ({e}): \
                 reserve them first (`sysctl vm.nr_hugepages=N`, N counting every thread and process; \
                 /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages says how many are free), or use \
                 buffer_memory=thp or heap"
            )
        }
        _ => format!(
            "could not map {} bytes of transparent-huge-page buffers per thread ({e}); use buffer_memory=heap",
            count * len.next_multiple_of(4096)
        ),
    };
    EngineError::invalid("buffer_memory", what)
}

#[cfg(test)]
mod tests {
    use super::open_retry_flags;
    use libc::{EEXIST, ENOENT, O_CREAT, O_EXCL, O_TRUNC, O_WRONLY};

    #[test]
    fn a_lost_create_race_opens_the_file_and_a_vanished_file_is_created_again() {
        let want = O_WRONLY | O_CREAT | O_TRUNC;
        assert_eq!(open_retry_flags(want, want, Some(EEXIST)), Some(O_WRONLY | O_TRUNC));
        assert_eq!(open_retry_flags(want, O_WRONLY | O_TRUNC, Some(ENOENT)), Some(want));
        assert_eq!(open_retry_flags(want, want, Some(libc::EACCES)), None);
        // O_EXCL means the caller wants EEXIST; a plain open has nothing to retry.
        assert_eq!(open_retry_flags(want | O_EXCL, want | O_EXCL, Some(EEXIST)), None);
        assert_eq!(open_retry_flags(O_WRONLY, O_WRONLY, Some(ENOENT)), None);
    }
}
