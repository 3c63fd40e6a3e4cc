//! fio's ioengines that are not data transfer, run by the access workload as fio runs them: one
//! system call per I/O, timed as the I/O.
//!
//! - The file and directory engines (`filecreate`, `filestat`, `filedelete`, `dircreate`,
//!   `dirstat`, `dirdelete`) do one call per file name: open with O_CREAT (the descriptor is closed
//!   after the clock is read, as fio times only the open), stat/lstat/statx, unlink; mkdir, stat,
//!   rmdir. Each thread walks its own names (or, for the stat engines, every name) once per pass.
//!   They are counted as the kinds `create`, `stat` and `delete`.
//! - The one-call engines (`falloc`, `ftruncate`, `e4defrag`) take the request the generator draws,
//!   as fio does, and issue fallocate (reads: KEEP_SIZE, writes: mode 0, trims: PUNCH_HOLE |
//!   KEEP_SIZE), ftruncate to the write's offset, or EXT4_IOC_MOVE_EXT of the write's range to a
//!   donor file. They are counted as the request's direction, with its length.
//!
//! None of them allocates or locks per operation: the names are made into C strings before the
//! phase starts, and the calls take stack buffers.

use std::ffi::{CStr, CString};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use super::fd::{open, FdGuard};
use super::workload::{Access, BufStats, CREATE, DELETE, KINDS, NOT_DATA, READ, STAT, WRITE};
use crate::error::{EngineError, Result};
use crate::measure::{now_ns, own_fd_table, run_threads, Control, Recorder};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::verify::Checker;
use crate::workload::access::GenOp;
use crate::workload::access::{FioEngine, StatType};

/// One thread's names for a file or directory engine, and how many passes it makes (0: until the
/// phase's deadline).
pub(crate) struct NameState {
    names: Vec<CString>,
    passes: u64,
}

/// The e4defrag engine's donor file (one descriptor per thread, as fio opens one per job clone) and
/// its block size, which the ioctl counts in.
pub(super) struct Donor {
    fd: FdGuard,
    bsz: u64,
}

/// EXT4_IOC_MOVE_EXT's argument (linux/fs/ext4/ext4.h: struct move_extent).
#[repr(C)]
struct MoveExtent {
    reserved: u32,
    donor_fd: u32,
    orig_start: u64,
    donor_start: u64,
    len: u64,
    moved_len: u64,
}

/// _IOWR('f', 15, struct move_extent): 40 bytes of argument.
const EXT4_IOC_MOVE_EXT: u64 = (3 << 30) | ((std::mem::size_of::<MoveExtent>() as u64) << 16) | (0x66 << 8) | 15;

fn c_path(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| EngineError::invalid("dir", format!("{} contains a NUL byte", p.display())))
}

impl Access {
    /// The names of thread `tid`: its own share with `thread_files`, else every name.
    fn name_range(&self, job: &Settings, tid: usize) -> (u32, u32) {
        let n = self.spec.file_count;
        if self.spec.thread_files {
            let per = n / job.threads as u32;
            (tid as u32 * per, (tid as u32 + 1) * per)
        } else {
            (0, n)
        }
    }

    /// Prepare for a file or directory engine that does not start from laid-out files: the
    /// directories the names need (fio wants them to exist), and for dirstat and dirdelete, the
    /// directories themselves. filecreate and dircreate create nothing here: the run does.
    pub(super) fn prepare_names(&self, job: &Settings) -> Result<PhaseReport> {
        let spec = &self.spec;
        self.prepared.store(true, Relaxed);
        let mut made = 0u64;
        for i in 0..spec.file_count {
            let path = self.path(&job.dir, i);
            if let Some(parent) = path.parent() {
                crate::nofollow::create_dirs(&job.dir, parent)?;
            }
            if spec.fio_engine.needs_layout() && crate::nofollow::create_dir(&path)? {
                made += 1;
            }
            // The run creates (or works on) every name: cleanup removes what is left of them.
            self.created.fetch_max(i + 1, Relaxed);
        }
        let mut report = PhaseReport::new("prepare");
        report.counters.insert("files".into(), spec.file_count as u64);
        report.counters.insert("dirs_made".into(), made);
        Ok(report)
    }

    /// The run phase of a file or directory engine.
    pub(super) fn run_names(&self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        let (mut report, mixes) = run_threads(
            "run",
            job.threads,
            self.run_timing(job)?,
            ctl,
            KINDS,
            self.spec.sigfig(),
            0,
            |tid| self.name_state(job, tid),
            |st, rec| self.name_work(st, rec, job),
        )?;
        report.totals_without(NOT_DATA);
        self.finish_run(job, &mut report, mixes, &BufStats::default());
        Ok(report)
    }

    /// Thread `tid`'s names as C strings, and its passes: once for the engines that create or
    /// remove; for the stat engines, as many passes as the byte total holds (one per `loops`), or
    /// until the deadline when there is none.
    pub(crate) fn name_state(&self, job: &Settings, tid: usize) -> Result<NameState> {
        own_fd_table(&[]); // each file opened and closed by path within one call
        let (lo, hi) = self.name_range(job, tid);
        let names = (lo..hi).map(|i| c_path(&self.path(&job.dir, i))).collect::<Result<Vec<_>>>()?;
        let spec = &self.spec;
        let passes = if spec.fio_engine.once() {
            1
        } else {
            let pass = (names.len() as u64 * spec.file_size).max(1);
            self.quota(job, tid).map(|q| q.div_ceil(pass).max(1)).unwrap_or(0)
        };
        Ok(NameState { names, passes })
    }

    /// One thread's run of a file or directory engine: one timed call per name, pass after pass.
    pub(crate) fn name_work(
        &self,
        st: &mut NameState,
        rec: &mut Recorder,
        job: &Settings,
    ) -> Result<(Vec<[u64; 5]>, Option<Checker>)> {
        let e = self.spec.fio_engine;
        let stat = self.spec.stat_type;
        let kind = match e {
            FioEngine::Filecreate | FioEngine::Dircreate => CREATE,
            FioEngine::Filestat | FioEngine::Dirstat => STAT,
            _ => DELETE,
        };
        let mut pass = 0u64;
        'passes: while !st.names.is_empty() && (st.passes == 0 || pass < st.passes) {
            pass += 1;
            for c in &st.names {
                let t0 = now_ns();
                let r = name_call(e, stat, c);
                let t1 = now_ns();
                if r < 0 {
                    return Err(name_failure(e, c, std::io::Error::last_os_error(), job));
                }
                if e == FioEngine::Filecreate {
                    // SAFETY: r is the descriptor the open just returned; fio closes it outside the timing too.
                    unsafe { crate::sys::close(r) };
                }
                rec.record(kind, 0, t0, t1);
                if rec.should_stop(t1) {
                    break 'passes;
                }
            }
        }
        Ok((vec![[0; 5]; self.spec.entries.len()], None))
    }

    /// The e4defrag engine's donor file, opened (created if missing, as fio does) for one thread,
    /// and unless `donor_inplace`, allocated over the job's region before the phase starts.
    pub(super) fn open_donor(&self, job: &Settings) -> Result<Donor> {
        let path = job.dir.join(&self.spec.donor_name);
        let existed = path.exists();
        let fd = FdGuard(open(&path, libc::O_CREAT | libc::O_WRONLY)?);
        if !existed {
            self.donor_made.store(true, Relaxed);
        }
        if !self.spec.donor_inplace {
            // SAFETY: fd is open.
            let r = unsafe {
                libc::fallocate(fd.0, 0, self.spec.offset as libc::off_t, self.spec.file_size as libc::off_t)
            };
            if r != 0 {
                return Err(EngineError::last_os(format!("allocating the donor file {}", path.display())));
            }
        }
        // SAFETY: an all-zero stat is a valid value to be overwritten.
        let mut sb: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fd is open, sb is a valid stat buffer.
        if unsafe { crate::sys::fstat(fd.0, &mut sb) } != 0 {
            return Err(EngineError::last_os(format!("stat of the donor file {}", path.display())));
        }
        Ok(Donor { fd, bsz: (sb.st_blksize as u64).max(1) })
    }

    /// One request of a one-call engine on `fd`: the bytes it counts for (fio: the request's length;
    /// e4defrag: what the kernel moved, at most the length).
    #[inline]
    pub(super) fn one_call(&self, fd: RawFd, op: &GenOp, kind: usize, donor: Option<&Donor>) -> std::io::Result<u64> {
        let (off, len) = (op.req.offset, op.req.len as u64);
        match self.spec.fio_engine {
            FioEngine::Falloc => {
                let mode = match kind {
                    READ => libc::FALLOC_FL_KEEP_SIZE,
                    WRITE => 0,
                    _ => libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                };
                // SAFETY: fd is open for the whole phase.
                cvt(unsafe { libc::fallocate(fd, mode, off as libc::off_t, len as libc::off_t) })?;
                Ok(len)
            }
            FioEngine::Ftruncate => {
                // SAFETY: fd is open for the whole phase.
                cvt(unsafe { crate::sys::ftruncate(fd, off as libc::off_t) })?;
                Ok(len)
            }
            FioEngine::E4defrag => match donor {
                Some(d) => move_ext(fd, d, off, len, self.spec.donor_inplace),
                None => Ok(len), // the null backend
            },
            _ => Ok(len),
        }
    }

    /// What cleanup removes besides the names: the donor file, when the run created it.
    pub(super) fn remove_donor(&self, job: &Settings) -> Result<()> {
        if !self.donor_made.load(Relaxed) {
            return Ok(());
        }
        let path = job.dir.join(&self.spec.donor_name);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(EngineError::io(format!("removing {}", path.display()), e)),
        }
    }
}

/// The call of a file or directory engine on one name: a descriptor (filecreate) or 0, or -1 with
/// errno set.
#[inline]
fn name_call(e: FioEngine, stat: StatType, c: &CStr) -> i32 {
    let p = c.as_ptr();
    // SAFETY: p is a valid C string; the stat buffers are valid for the kernel to fill.
    unsafe {
        match e {
            FioEngine::Filecreate => crate::nofollow::open(p, libc::O_CREAT | libc::O_RDWR | libc::O_CLOEXEC, 0o600),
            FioEngine::Dircreate => crate::sys::mkdir(p, 0o700),
            FioEngine::Filestat | FioEngine::Dirstat => match stat {
                StatType::Stat => {
                    let mut sb: libc::stat = std::mem::zeroed();
                    crate::sys::stat(p, &mut sb)
                }
                StatType::Lstat => {
                    let mut sb: libc::stat = std::mem::zeroed();
                    libc::lstat(p, &mut sb)
                }
                StatType::Statx => {
                    let mut sx: libc::statx = std::mem::zeroed();
                    libc::statx(libc::AT_FDCWD, p, 0, libc::STATX_ALL, &mut sx)
                }
            },
            FioEngine::Filedelete => crate::sys::unlink(p),
            FioEngine::Dirdelete => crate::sys::rmdir(p),
            _ => 0,
        }
    }
}

#[cold]
fn name_failure(e: FioEngine, c: &CStr, err: std::io::Error, job: &Settings) -> EngineError {
    let what = match e {
        FioEngine::Filecreate => "open (O_CREAT)",
        FioEngine::Dircreate => "mkdir",
        FioEngine::Filestat | FioEngine::Dirstat => "stat",
        FioEngine::Filedelete => "unlink",
        _ => "rmdir",
    };
    let name = c.to_string_lossy();
    let hint = match err.raw_os_error() {
        Some(libc::EEXIST) => {
            ": it exists already (fio's dircreate fails on it too); remove it or use another directory"
        }
        Some(libc::ENOENT) if e.needs_layout() => {
            ": it is gone (removed by another job or an earlier run of the same names)"
        }
        _ => "",
    };
    EngineError::io(format!("{} {what} of {name} under {}{hint}", e.name(), job.dir.display()), err)
}

/// EXT4_IOC_MOVE_EXT of [off, off + len) of `fd` to the same blocks of the donor, as fio's e4defrag
/// engine issues it (with `inplace`, the donor's blocks are allocated first and the donor truncated
/// after). The bytes moved, at most `len`; nothing moved is EINVAL, as in fio (beyond the file's end).
#[inline]
fn move_ext(fd: RawFd, d: &Donor, off: u64, len: u64, inplace: bool) -> std::io::Result<u64> {
    if inplace {
        // SAFETY: the donor is open for the whole phase.
        cvt(unsafe { libc::fallocate(d.fd.0, 0, off as libc::off_t, len as libc::off_t) })?;
    }
    let orig_start = off / d.bsz;
    let mut me = MoveExtent {
        reserved: 0,
        donor_fd: d.fd.0 as u32,
        orig_start,
        donor_start: orig_start,
        len: (off + len).div_ceil(d.bsz) - orig_start,
        moved_len: 0,
    };
    // SAFETY: me is a valid move_extent the kernel reads and updates.
    let r = unsafe { libc::ioctl(fd, EXT4_IOC_MOVE_EXT as _, &mut me as *mut MoveExtent) };
    let err = (r < 0).then(std::io::Error::last_os_error);
    if inplace {
        // SAFETY: the donor is open.
        unsafe { crate::sys::ftruncate(d.fd.0, 0) };
    }
    if let Some(e) = err {
        return Err(e);
    }
    let moved = (me.moved_len * d.bsz).min(len);
    if moved == 0 {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok(moved)
}

#[inline]
fn cvt(r: i32) -> std::io::Result<()> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A one-call engine's failure, in one line: the filesystem that has no such call is named as a
/// parameter error (fio fails there too), anything else as the call that failed.
#[cold]
pub(super) fn one_call_failure(e: FioEngine, op: &GenOp, err: std::io::Error, job: &Settings) -> EngineError {
    let dir = job.dir.display();
    match (e, err.raw_os_error()) {
        (FioEngine::E4defrag, Some(libc::ENOTTY | libc::EOPNOTSUPP)) => EngineError::invalid(
            "fio_engine",
            format!(
                "e4defrag: the filesystem under {dir} has no EXT4_IOC_MOVE_EXT ({err}), ext4's online defragmentation, \
                 which fio's e4defrag engine issues: run the job on ext4"
            ),
        ),
        (FioEngine::Falloc, Some(libc::EOPNOTSUPP)) => EngineError::invalid(
            "fio_engine",
            format!("falloc: the filesystem under {dir} cannot fallocate this way ({err}): run the job on one that can (ext4, xfs, btrfs, tmpfs)"),
        ),
        _ => EngineError::io(
            format!("{} of {} bytes at offset {} of file {}", e.name(), op.req.len, op.req.offset, op.req.file),
            err,
        ),
    }
}
