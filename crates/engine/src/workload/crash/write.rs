//! The crash family's `write` phase: the load, and the durability ledger of
//! every sync that returned; and the `cleanup` phase that removes the files.

use std::ffi::CString;
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::spec::{file_name, file_seed, thread_dir, CrashSpec, FileName, SyncCall, ThreadDir};
use crate::error::{EngineError, Result};
use crate::measure::{now_ns, own_fd_table, run_threads, Control, PhaseTiming};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::verify::{fill_block, fill_block_planned, Checksum, Crc32cPlan};

const KINDS: &[&str] = &["write", "fsync", "fdatasync", "dirsync", "create"];
const K_WRITE: usize = 0;
const K_FSYNC: usize = 1;
const K_FDATASYNC: usize = 2;
const K_DIRSYNC: usize = 3;
const K_CREATE: usize = 4;

struct OpenFile {
    fd: i32,
    idx: u32,
    seed: u64,
    blocks: u64,
    dirty_from: usize, // index into `writes` of this file's first unsynced write, usize::MAX = clean
}

struct WriterState {
    tid: u32,
    dir_fd: i32,
    dir: PathBuf,
    rng: Xoshiro256PlusPlus,
    buf: Vec<u8>,
    files: Vec<OpenFile>,
    /// Unsynced writes: (file slot, first block, nblocks, first generation), in order.
    writes: Vec<(usize, u64, u64, u64)>,
    created_since_dirsync: Vec<u32>,
    gen: u64,
    dirty: u64,
    sync_points: u64,
    ledger: String,
    path: Vec<u8>,
}

impl Drop for WriterState {
    fn drop(&mut self) {
        for f in &self.files {
            // SAFETY: closing fds this state opened.
            unsafe { crate::sys::close(f.fd) };
        }
        if self.dir_fd >= 0 {
            unsafe { crate::sys::close(self.dir_fd) };
        }
    }
}

fn fsync_path(path: &Path, what: &str) -> Result<()> {
    let f = std::fs::File::open(path).map_err(|e| EngineError::io(format!("open {what} {}", path.display()), e))?;
    f.sync_all().map_err(|e| EngineError::io(format!("fsync {what} {}", path.display()), e))
}

pub(super) fn write_phase(spec: &CrashSpec, algo: Checksum, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
    let timing = PhaseTiming {
        warmup_ns: 0,
        duration_ns: Some((spec.runtime_s * 1e9) as u64),
        interval_ns: (job.interval_s * 1e9) as u64,
    };
    // With crc32c (the default) a block's checksum comes from tables made once here rather than
    // from a pass over the block: the same bytes, without reading back what was just filled.
    let plan = Crc32cPlan::for_checksum(algo, spec.block_size as usize);
    let max_blocks = spec.file_size / spec.block_size;
    let wblocks = spec.write_size / spec.block_size;
    let setup = |tid: usize| -> Result<WriterState> {
        // The writer opens its directory and files in a table of its own and closes them when its
        // state drops, on its thread, before the unmount that follows the phase.
        own_fd_table(&[]);
        let tid = tid as u32;
        let dir = job.dir.join(thread_dir(tid));
        if dir.exists() {
            // The ledger must describe every file there: a leftover of an earlier run would not be in it.
            return Err(EngineError::invalid(
                "dir",
                format!(
                    "{} already holds {} from an earlier run: remove it or use an empty directory",
                    job.dir.display(),
                    thread_dir(tid)
                ),
            ));
        }
        std::fs::create_dir(&dir).map_err(|e| EngineError::io(format!("mkdir {}", dir.display()), e))?;
        // The thread directories are made durable before the clock starts: their entries are
        // the first promise of the ledger.
        fsync_path(&dir, "directory")?;
        fsync_path(&job.dir, "directory")?;
        let cdir = CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: open(2) of a directory path we own.
        let dir_fd =
            unsafe { crate::sys::open(cdir.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC, 0) };
        if dir_fd < 0 {
            return Err(EngineError::last_os(format!("open {}", dir.display())));
        }
        let t = now_ns();
        let mut ledger = String::with_capacity(1 << 20);
        let _ = writeln!(
            ledger,
            r#"{{"op":"dirsync","tid":{tid},"t0_ns":{t},"t_ns":{t},"dir":"","names":["{}"]}}"#,
            thread_dir(tid)
        );
        let mut path = Vec::with_capacity(dir.as_os_str().len() + 16);
        path.extend_from_slice(dir.as_os_str().as_bytes());
        Ok(WriterState {
            tid,
            dir_fd,
            dir,
            rng: Xoshiro256PlusPlus::seed_from_u64(file_seed(job.seed, tid, u32::MAX)),
            buf: vec![0u8; spec.write_size as usize],
            files: Vec::with_capacity(spec.files_per_thread as usize),
            writes: Vec::with_capacity((spec.dirty_bytes / spec.write_size + 1) as usize),
            created_since_dirsync: Vec::with_capacity(spec.files_per_thread as usize),
            gen: 0,
            dirty: 0,
            sync_points: 0,
            ledger,
            path,
        })
    };
    let work = |st: &mut WriterState, rec: &mut crate::measure::Recorder| -> Result<()> {
        loop {
            let t = now_ns();
            if rec.should_stop(t) {
                return Ok(());
            }
            if st.dirty >= spec.dirty_bytes {
                sync_point(spec, st, rec)?;
                continue;
            }
            // Grow the file set while there is room: a new file every so often, not all at once,
            // so creates (and their directory entries) are spread over the run.
            let growing = st.files.iter().filter(|f| f.blocks + wblocks <= max_blocks).count();
            if (st.files.len() as u32) < spec.files_per_thread && (growing == 0 || st.rng.next_u32().is_multiple_of(8))
            {
                create_file(job, st, rec)?;
                continue;
            }
            let slot = (st.rng.next_u64() % st.files.len() as u64) as usize;
            let f = &st.files[slot];
            let overwrite = f.blocks >= wblocks
                && (f.blocks + wblocks > max_blocks || st.rng.next_u32() % 100 < spec.overwrite_pct);
            let first = if overwrite { st.rng.next_u64() % (f.blocks - wblocks + 1) } else { f.blocks };
            if !overwrite && f.blocks + wblocks > max_blocks {
                continue; // a full file picked with no room: pick again
            }
            let (fd, seed) = (f.fd, f.seed);
            let gen = st.gen + 1;
            let bs = spec.block_size as usize;
            for i in 0..wblocks as usize {
                let off = (first + i as u64) * spec.block_size;
                let block = &mut st.buf[i * bs..(i + 1) * bs];
                match &plan {
                    Some(plan) => fill_block_planned(block, off, gen + i as u64, st.tid, seed, plan),
                    None => fill_block(block, off, gen + i as u64, st.tid, seed, algo),
                }
            }
            let t0 = now_ns();
            // SAFETY: pwrite from our buffer to an fd we own.
            let n = unsafe {
                crate::sys::pwrite(fd, st.buf.as_ptr().cast(), st.buf.len(), (first * spec.block_size) as libc::off_t)
            };
            let t1 = now_ns();
            if n != st.buf.len() as isize {
                let err = if n < 0 { std::io::Error::last_os_error() } else { std::io::Error::other("short write") };
                return Err(EngineError::io(
                    format!("pwrite {}/{}", st.dir.display(), file_name(st.files[slot].idx)),
                    err,
                ));
            }
            rec.record(K_WRITE, spec.write_size, t0, t1);
            st.gen += wblocks;
            let f = &mut st.files[slot];
            if !overwrite {
                f.blocks += wblocks;
            }
            if f.dirty_from == usize::MAX {
                f.dirty_from = st.writes.len();
            }
            st.writes.push((slot, first, wblocks, gen));
            st.dirty += spec.write_size;
        }
    };
    let (mut report, states) = run_threads("write", job.threads, timing, ctl, KINDS, 3, 0, setup, |st, rec| {
        work(st, rec)?;
        Ok(std::mem::take(&mut st.ledger))
    })?;
    report.totals_without(&["fsync", "fdatasync", "dirsync", "create"]);
    let mut out = crate::nofollow::create(&spec.ledger)?;
    let mut lines = 0u64;
    for text in &states {
        out.write_all(text.as_bytes()).map_err(|e| EngineError::io("write ledger", e))?;
        lines += text.lines().count() as u64;
    }
    out.sync_all().map_err(|e| EngineError::io("fsync ledger", e))?;
    report.counters.insert("ledger_lines".into(), lines);
    for name in ["fsync", "fdatasync", "dirsync", "create"] {
        let n = report.ops.get(name).map(|o| o.count).unwrap_or(0);
        report.counters.insert(format!("{name}_calls"), n);
    }
    report.extra = serde_json::json!({ "ledger": spec.ledger, "checksum": spec.checksum });
    Ok(report)
}

fn create_file(job: &Settings, st: &mut WriterState, rec: &mut crate::measure::Recorder) -> Result<()> {
    let idx = st.files.len() as u32;
    st.path.truncate(st.dir.as_os_str().len());
    // The ledger's name for the file, so the two agree at any count of files.
    let _ = write!(st.path, "/{}\0", FileName(idx));
    let t0 = now_ns();
    // SAFETY: NUL-terminated path in our buffer.
    let fd = unsafe {
        crate::sys::open(
            st.path.as_ptr().cast(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
            0o644,
        )
    };
    let t1 = now_ns();
    if fd < 0 {
        return Err(EngineError::last_os(format!("create {}/{}", st.dir.display(), file_name(idx))));
    }
    rec.record(K_CREATE, 0, t0, t1);
    let seed = file_seed(job.seed, st.tid, idx);
    let _ = writeln!(
        st.ledger,
        r#"{{"op":"create","tid":{},"t_ns":{t1},"file":"{}/{}","seed":{seed}}}"#,
        st.tid,
        ThreadDir(st.tid),
        FileName(idx)
    );
    st.files.push(OpenFile { fd, idx, seed, blocks: 0, dirty_from: usize::MAX });
    st.created_since_dirsync.push(idx);
    Ok(())
}

fn sync_point(spec: &CrashSpec, st: &mut WriterState, rec: &mut crate::measure::Recorder) -> Result<()> {
    let data_only = match spec.sync {
        SyncCall::Fsync => false,
        SyncCall::Fdatasync => true,
        SyncCall::Mixed => st.sync_points % 2 == 1,
    };
    st.sync_points += 1;
    let (kind, name) = if data_only { (K_FDATASYNC, "fdatasync") } else { (K_FSYNC, "fsync") };
    for slot in 0..st.files.len() {
        let from = st.files[slot].dirty_from;
        if from == usize::MAX {
            continue;
        }
        let fd = st.files[slot].fd;
        let t0 = now_ns();
        // SAFETY: fd is ours.
        let rc = unsafe {
            if data_only {
                crate::sys::fdatasync(fd)
            } else {
                crate::sys::fsync(fd)
            }
        };
        let t1 = now_ns();
        if rc != 0 {
            return Err(EngineError::last_os(format!("{name} {}/{}", st.dir.display(), file_name(st.files[slot].idx))));
        }
        rec.record(kind, 0, t0, t1);
        let _ = write!(
            st.ledger,
            r#"{{"op":"{name}","tid":{},"t0_ns":{t0},"t_ns":{t1},"file":"{}/{}","writes":["#,
            st.tid,
            ThreadDir(st.tid),
            FileName(st.files[slot].idx)
        );
        let mut sep = "";
        for w in &st.writes[from..] {
            if w.0 == slot {
                let _ = write!(st.ledger, "{sep}[{},{},{}]", w.1, w.2, w.3);
                sep = ",";
            }
        }
        st.ledger.push_str("]}\n");
        st.files[slot].dirty_from = usize::MAX;
    }
    st.writes.clear();
    st.dirty = 0;
    if !st.created_since_dirsync.is_empty() {
        let t0 = now_ns();
        // SAFETY: dir_fd is ours.
        let rc = unsafe { crate::sys::fsync(st.dir_fd) };
        let t1 = now_ns();
        if rc != 0 {
            return Err(EngineError::last_os(format!("fsync directory {}", st.dir.display())));
        }
        rec.record(K_DIRSYNC, 0, t0, t1);
        let _ = write!(
            st.ledger,
            r#"{{"op":"dirsync","tid":{},"t0_ns":{t0},"t_ns":{t1},"dir":"{}","names":["#,
            st.tid,
            ThreadDir(st.tid)
        );
        for (i, idx) in st.created_since_dirsync.iter().enumerate() {
            let _ = write!(st.ledger, "{}\"{}\"", if i > 0 { "," } else { "" }, FileName(*idx));
        }
        st.ledger.push_str("]}\n");
        st.created_since_dirsync.clear();
    }
    Ok(())
}

/// Removes what the write phase made (the thread directories and their files) and nothing else;
/// the ledger stays: it is the record of the run.
pub(super) fn cleanup_phase(job: &Settings) -> Result<PhaseReport> {
    let mut removed = 0u64;
    for tid in 0..job.threads as u32 {
        let dir = job.dir.join(thread_dir(tid));
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(EngineError::io(format!("read {}", dir.display()), e)),
        };
        for e in entries {
            let e = e.map_err(|e| EngineError::io(format!("read {}", dir.display()), e))?;
            let name = e.file_name();
            let ours = name
                .to_str()
                .is_some_and(|n| n.len() == 7 && n.starts_with('f') && n[1..].bytes().all(|b| b.is_ascii_digit()));
            if ours {
                std::fs::remove_file(e.path())
                    .map_err(|err| EngineError::io(format!("remove {}", e.path().display()), err))?;
                removed += 1;
            }
        }
        std::fs::remove_dir(&dir)
            .map_err(|e| EngineError::io(format!("rmdir {} (not ours left in it?)", dir.display()), e))?;
    }
    let mut report = PhaseReport::new("cleanup");
    report.counters.insert("files_removed".into(), removed);
    Ok(report)
}
