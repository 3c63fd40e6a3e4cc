//! The access workload's files: the prepare phase's layout (plain, verified, or empty files for
//! fio's fill_device), and the run phase's files opened, with O_DIRECT and atomic writes probed on
//! them and reported.

use std::os::fd::RawFd;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use super::fd::{fd_len, open, FdGuard, FilesGuard};
use super::gen::lcm;
use super::spec::FioEngine;
use super::workload::{Access, BUF_ALIGN, FSYNC, KINDS, LAYOUT_CHUNK, NOT_DATA, WRITE};
use crate::backend::buffer::AlignedBuf;
use crate::backend::dio::{self, DioAlign};
use crate::backend::mmap;
use crate::backend::pattern::fill_pattern;
use crate::backend::BackendKind;
use crate::error::{EngineError, Result};
use crate::measure::{now_ns, run_threads, Control, PhaseTiming, Recorder};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::verify::{self, Checker};

/// The most files a thread opens again for itself (`Access::own_files`); past it the threads share the
/// phase's descriptors, so that many files times many threads cannot run out of descriptors.
const OWN_FDS_MAX: usize = 256;

impl Access {
    pub(super) fn prepare(&self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        let spec = &self.spec;
        if spec.fio_engine == FioEngine::Cpuio || job.backend == BackendKind::Null {
            // No files: cpuio burns CPU; the null backend does no I/O at all, so nothing is laid
            // out, as fio's null engine creates no file (t0011's 100 GiB jobs run on any disk).
            return Ok(PhaseReport::new("prepare"));
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
                            crate::nofollow::create_dirs(&job.dir, parent)?;
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
                crate::nofollow::create_dirs(&job.dir, parent)?;
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

    /// The flags the run phase opens its files with.
    fn run_flags(&self, job: &Settings) -> i32 {
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
        flags | spec.open_sync.flags()
    }

    /// Thread `tid`'s own descriptors of the run phase's files, opened again as `open_files` opened
    /// them (None for thread 0, which uses the phase's, and past `OWN_FDS_MAX` files), in the
    /// thread's own descriptor table (`measure::own_fd_table`). As fio's jobs each open their
    /// files: each open file has its own read-ahead state and position, as each of fio's jobs has.
    pub(super) fn own_files(&self, job: &Settings, tid: usize, shared: &FilesGuard) -> Result<Option<FilesGuard>> {
        if !Self::opens_own_files(job, tid, shared) {
            return Ok(None);
        }
        let flags = self.run_flags(job);
        let mut files = FilesGuard(Vec::with_capacity(shared.0.len()));
        for i in 0..shared.0.len() as u32 {
            files.0.push(open(&self.path(&job.dir, i), flags)?);
        }
        Ok(Some(files))
    }

    /// Whether `own_files` opens thread `tid`'s own descriptors (else it uses the phase's).
    pub(super) fn opens_own_files(job: &Settings, tid: usize, shared: &FilesGuard) -> bool {
        !(tid == 0 || shared.0.is_empty() || shared.0.len() > OWN_FDS_MAX || job.backend == BackendKind::Null)
    }

    fn open_files(&self, job: &Settings) -> Result<(FilesGuard, Option<DirectIo>)> {
        let spec = &self.spec;
        let flags = self.run_flags(job);
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
        if self.spec.fio_engine.per_name()
            || self.spec.fio_engine == FioEngine::Cpuio
            || job.backend == BackendKind::Null
        {
            // The file and directory engines work on names, not open files; cpuio and the null
            // backend on none.
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

/// The files of a `run` phase, open, and what was found about O_DIRECT on them.
pub(super) struct RunFiles {
    pub(super) files: FilesGuard,
    pub(super) direct: Option<DirectIo>,
    pub(super) share_align: u64,
    pub(super) cached_before: Option<u64>,
}

/// What was found about O_DIRECT on the files of a `run` phase.
pub(super) struct DirectIo {
    pub(super) align: DioAlign,
    /// Some request is not a multiple of `align` (only with allow_unaligned_direct).
    pub(super) unaligned: bool,
}
