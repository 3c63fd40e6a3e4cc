//! The crash family: a write-heavy load that records what fsync promised (the durability ledger),
//! and a check that compares a crashed copy of the filesystem with those promises.
//!
//! `write` phase: each thread owns `dir/crash-t<tid>/` and grows up to `files_per_thread` files
//! of at most `file_size`, writing `write_size` at a time: appends, or (with `overwrite_pct`)
//! in-place overwrites of blocks already written. Every `block_size` block carries a verification
//! header (crate::verify) with its offset, a generation (the thread's write sequence number, so a
//! newer write of a block always has a larger one), the thread and a per-file seed. After
//! `dirty_bytes` written, the thread syncs: fsync/fdatasync of each file it dirtied, then fsync
//! of its directory when it created files since the last one. Each sync that returned is a line
//! of the ledger (JSON lines, written to `ledger` at the end of the phase):
//!
//! ```text
//! {"op":"fsync"|"fdatasync","tid":0,"t0_ns":..,"t_ns":..,"file":"crash-t0/f000003","writes":[[block,nblocks,gen],..]}
//! {"op":"dirsync","tid":0,"t0_ns":..,"t_ns":..,"dir":"crash-t0","names":["f000003",..]}
//! {"op":"create","tid":0,"t_ns":..,"file":"crash-t0/f000003","seed":..}
//! ```
//! `t_ns` is CLOCK_MONOTONIC when the call returned: from then on the data (for a data sync,
//! the listed writes, i.e. every write to that file since its previous sync) or the directory
//! entries (for a dirsync) are durable by POSIX's promise.
//!
//! `check` phase (run on the crashed copy, mounted): the promises are the ledger lines with
//! `t_ns < cut_ns` (all of them when `cut_ns` is unset). Every block of every file the ledger
//! knows is read and checked. A promised block is intact when its header is valid, for this
//! offset and file, with a generation at least the promised one (a later, unpromised write may
//! have landed too). Anything else of a promised block (missing file or entry, short file,
//! zeros, another generation, garbage) is data lost beyond what fsync promised: a finding.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fmt::Write as _;
use std::io::{BufRead, Write as _};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Deserialize;

use crate::error::{EngineError, Result};
use crate::settings::Settings;
use crate::measure::{now_ns, run_threads, Control, PhaseTiming};
use crate::report::PhaseReport;
use crate::verify::{check_block, fill_block, Checksum, HEADER_LEN};
use crate::workload::family::Workload;

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SyncCall {
    Fsync,
    Fdatasync,
    /// Alternate: fsync at one sync point, fdatasync at the next.
    Mixed,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashSpec {
    /// How long the write phase runs.
    #[serde(default = "default_runtime")]
    pub runtime_s: f64,
    #[serde(default = "default_files")]
    pub files_per_thread: u32,
    /// Largest size a file grows to (then only overwrites).
    #[serde(default = "default_file_size")]
    pub file_size: u64,
    /// The verified unit: each block starts with a header.
    #[serde(default = "default_block")]
    pub block_size: u64,
    /// Bytes per write(2) (a multiple of block_size).
    #[serde(default = "default_write_size")]
    pub write_size: u64,
    /// The dirty set: bytes a thread writes between two sync points.
    #[serde(default = "default_dirty")]
    pub dirty_bytes: u64,
    /// Percent of writes that overwrite written blocks in place instead of appending.
    #[serde(default = "default_overwrite")]
    pub overwrite_pct: u32,
    #[serde(default = "default_sync")]
    pub sync: SyncCall,
    #[serde(default = "default_checksum")]
    pub checksum: String,
    /// Where the write phase writes the ledger and the check phase reads it (outside the
    /// filesystem under test, or the crash would take it too).
    pub ledger: PathBuf,
    /// The crash instant (CLOCK_MONOTONIC ns) for `check`: promises made before it are checked.
    #[serde(default)]
    pub cut_ns: Option<u64>,
    /// Findings listed in the check report (all are counted).
    #[serde(default = "default_max_findings")]
    pub max_findings: usize,
}

fn default_runtime() -> f64 {
    10.0
}
fn default_files() -> u32 {
    16
}
fn default_file_size() -> u64 {
    4 << 20
}
fn default_block() -> u64 {
    4096
}
fn default_write_size() -> u64 {
    16 << 10
}
fn default_dirty() -> u64 {
    1 << 20
}
fn default_overwrite() -> u32 {
    25
}
fn default_sync() -> SyncCall {
    SyncCall::Mixed
}
fn default_checksum() -> String {
    "crc32c".into()
}
fn default_max_findings() -> usize {
    50
}

const KINDS: &[&str] = &["write", "fsync", "fdatasync", "dirsync", "create"];
const K_WRITE: usize = 0;
const K_FSYNC: usize = 1;
const K_FDATASYNC: usize = 2;
const K_DIRSYNC: usize = 3;
const K_CREATE: usize = 4;

pub fn parse_checksum(name: &str) -> Result<Checksum> {
    match name {
        "crc32c" => Ok(Checksum::Crc32c),
        "xxh3" => Ok(Checksum::Xxh3),
        "sha256" => Ok(Checksum::Sha256),
        _ => Err(EngineError::invalid("checksum", format!("{name:?}: use crc32c, xxh3 or sha256"))),
    }
}

/// The seed written into every block of file `idx` of thread `tid`: tells one file's blocks
/// from another's (a block of another file at the same offset is garbage here, not data).
pub fn file_seed(job_seed: u64, tid: u32, idx: u32) -> u64 {
    let mut z = job_seed ^ ((tid as u64) << 32 | idx as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub fn thread_dir(tid: u32) -> String {
    format!("crash-t{tid}")
}

pub fn file_name(idx: u32) -> String {
    format!("f{idx:06}")
}

impl CrashSpec {
    fn validate(&self, job: &Settings) -> Result<Checksum> {
        let algo = parse_checksum(&self.checksum)?;
        if !(self.runtime_s > 0.0) {
            return Err(EngineError::invalid("runtime_s", "must be > 0"));
        }
        if self.files_per_thread == 0 {
            return Err(EngineError::invalid("files_per_thread", "must be >= 1"));
        }
        if self.block_size < HEADER_LEN as u64 * 2 || self.block_size % 512 != 0 {
            return Err(EngineError::invalid(
                "block_size",
                format!("must be a multiple of 512 and at least {} bytes", HEADER_LEN * 2),
            ));
        }
        if self.write_size == 0 || self.write_size % self.block_size != 0 {
            return Err(EngineError::invalid("write_size", "must be a multiple of block_size"));
        }
        if self.file_size < self.write_size {
            return Err(EngineError::invalid("file_size", "must be at least write_size"));
        }
        if self.dirty_bytes < self.write_size {
            return Err(EngineError::invalid("dirty_bytes", "must be at least write_size"));
        }
        if self.overwrite_pct > 100 {
            return Err(EngineError::invalid("overwrite_pct", "must be 0..100"));
        }
        if job.threads == 0 {
            return Err(EngineError::invalid("threads", "must be >= 1"));
        }
        Ok(algo)
    }
}

pub struct Crash {
    spec: CrashSpec,
    algo: Checksum,
}

impl Crash {
    pub fn new(job: &Settings, spec: CrashSpec) -> Result<Self> {
        let algo = spec.validate(job)?;
        Ok(Crash { spec, algo })
    }
}

impl Workload for Crash {
    fn phases(&self) -> &'static [&'static str] {
        &["write", "check", "cleanup"]
    }

    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        match phase {
            "write" => write_phase(&self.spec, self.algo, job, ctl),
            "check" => check_phase(&self.spec, self.algo, job),
            "cleanup" => cleanup_phase(job),
            _ => Err(EngineError::UnknownPhase { phase: phase.into(), known: self.phases().to_vec() }),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// write

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

fn write_phase(spec: &CrashSpec, algo: Checksum, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
    let timing = PhaseTiming {
        warmup_ns: 0,
        duration_ns: Some((spec.runtime_s * 1e9) as u64),
        interval_ns: (job.interval_s * 1e9) as u64,
    };
    let max_blocks = spec.file_size / spec.block_size;
    let wblocks = spec.write_size / spec.block_size;
    let setup = |tid: usize| -> Result<WriterState> {
        let tid = tid as u32;
        let dir = job.dir.join(thread_dir(tid));
        if dir.exists() {
            // The ledger must describe every file there: a leftover of an earlier run would not be in it.
            return Err(EngineError::invalid(
                "dir",
                format!("{} already holds {} from an earlier run: remove it or use an empty directory", job.dir.display(), thread_dir(tid)),
            ));
        }
        std::fs::create_dir(&dir).map_err(|e| EngineError::io(format!("mkdir {}", dir.display()), e))?;
        // The thread directories are made durable before the clock starts: their entries are
        // the first promise of the ledger.
        fsync_path(&dir, "directory")?;
        fsync_path(&job.dir, "directory")?;
        let cdir = CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: open(2) of a directory path we own.
        let dir_fd = unsafe { crate::sys::open(cdir.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC, 0) };
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
            if (st.files.len() as u32) < spec.files_per_thread && (growing == 0 || st.rng.next_u32() % 8 == 0) {
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
                fill_block(&mut st.buf[i * bs..(i + 1) * bs], off, gen + i as u64, st.tid, seed, algo);
            }
            let t0 = now_ns();
            // SAFETY: pwrite from our buffer to an fd we own.
            let n = unsafe {
                crate::sys::pwrite(fd, st.buf.as_ptr().cast(), st.buf.len(), (first * spec.block_size) as libc::off_t)
            };
            let t1 = now_ns();
            if n != st.buf.len() as isize {
                let err = if n < 0 { std::io::Error::last_os_error() } else { std::io::Error::other("short write") };
                return Err(EngineError::io(format!("pwrite {}/{}", st.dir.display(), file_name(st.files[slot].idx)), err));
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
    let mut out = std::fs::File::create(&spec.ledger)
        .map_err(|e| EngineError::io(format!("create ledger {}", spec.ledger.display()), e))?;
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
    st.path.extend_from_slice(b"/f");
    let mut digits = [b'0'; 6];
    let mut v = idx;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
    st.path.extend_from_slice(&digits);
    st.path.push(0);
    let t0 = now_ns();
    // SAFETY: NUL-terminated path in our buffer.
    let fd = unsafe {
        crate::sys::open(st.path.as_ptr().cast(), libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC, 0o644)
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
        thread_dir(st.tid),
        file_name(idx)
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
        let rc = unsafe { if data_only { crate::sys::fdatasync(fd) } else { crate::sys::fsync(fd) } };
        let t1 = now_ns();
        if rc != 0 {
            return Err(EngineError::last_os(format!("{name} {}/{}", st.dir.display(), file_name(st.files[slot].idx))));
        }
        rec.record(kind, 0, t0, t1);
        let _ = write!(
            st.ledger,
            r#"{{"op":"{name}","tid":{},"t0_ns":{t0},"t_ns":{t1},"file":"{}/{}","writes":["#,
            st.tid,
            thread_dir(st.tid),
            file_name(st.files[slot].idx)
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
            thread_dir(st.tid)
        );
        for (i, idx) in st.created_since_dirsync.iter().enumerate() {
            let _ = write!(st.ledger, "{}\"{}\"", if i > 0 { "," } else { "" }, file_name(*idx));
        }
        st.ledger.push_str("]}\n");
        st.created_since_dirsync.clear();
    }
    Ok(())
}

/// Removes what the write phase made (the thread directories and their files) and nothing else;
/// the ledger stays: it is the record of the run.
fn cleanup_phase(job: &Settings) -> Result<PhaseReport> {
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
            let ours = name.to_str().is_some_and(|n| n.len() == 7 && n.starts_with('f') && n[1..].bytes().all(|b| b.is_ascii_digit()));
            if ours {
                std::fs::remove_file(e.path()).map_err(|err| EngineError::io(format!("remove {}", e.path().display()), err))?;
                removed += 1;
            }
        }
        std::fs::remove_dir(&dir).map_err(|e| EngineError::io(format!("rmdir {} (not ours left in it?)", dir.display()), e))?;
    }
    let mut report = PhaseReport::new("cleanup");
    report.counters.insert("files_removed".into(), removed);
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// check

#[derive(Deserialize)]
struct LedgerLine {
    op: String,
    #[serde(default)]
    t_ns: u64,
    #[serde(default)]
    file: String,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    writes: Vec<[u64; 3]>,
    #[serde(default)]
    dir: String,
    #[serde(default)]
    names: Vec<String>,
}

#[derive(Default)]
struct FileFacts {
    tid: u32,
    seed: u64,
    created: bool,
    /// Promised generation of each block (0: nothing promised).
    promised: Vec<u64>,
}

/// Everything the ledger says, as of `cut_ns`: the files it knows, the promised generation of
/// each block, and the directory entries made durable.
pub struct Promises {
    files: BTreeMap<String, FileFacts>,
    entries: std::collections::BTreeSet<String>,
    pub lines: u64,
    pub lines_promised: u64,
}

pub fn read_ledger(path: &Path, cut_ns: Option<u64>) -> Result<Promises> {
    let f = std::fs::File::open(path).map_err(|e| EngineError::io(format!("open ledger {}", path.display()), e))?;
    let mut p = Promises { files: BTreeMap::new(), entries: Default::default(), lines: 0, lines_promised: 0 };
    for (n, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| EngineError::io("read ledger", e))?;
        if line.trim().is_empty() {
            continue;
        }
        let l: LedgerLine = serde_json::from_str(&line)
            .map_err(|e| EngineError::invalid("ledger", format!("{}: line {}: {e}", path.display(), n + 1)))?;
        p.lines += 1;
        let tid_of = |file: &str| -> u32 {
            file.strip_prefix("crash-t").and_then(|r| r.split('/').next()).and_then(|t| t.parse().ok()).unwrap_or(0)
        };
        if l.op == "create" {
            let e = p.files.entry(l.file.clone()).or_default();
            e.created = true;
            e.seed = l.seed;
            e.tid = tid_of(&l.file);
            continue;
        }
        let promised = cut_ns.is_none_or(|c| l.t_ns < c);
        if !promised {
            continue;
        }
        p.lines_promised += 1;
        match l.op.as_str() {
            "fsync" | "fdatasync" => {
                let e = p.files.entry(l.file.clone()).or_default();
                for [first, n, gen] in l.writes {
                    let end = (first + n) as usize;
                    if e.promised.len() < end {
                        e.promised.resize(end, 0);
                    }
                    for i in 0..n {
                        let b = &mut e.promised[(first + i) as usize];
                        *b = (*b).max(gen + i);
                    }
                }
            }
            "dirsync" => {
                for name in l.names {
                    let full = if l.dir.is_empty() { name } else { format!("{}/{}", l.dir, name) };
                    p.entries.insert(full);
                }
            }
            other => {
                return Err(EngineError::invalid("ledger", format!("line {}: unknown op {other:?}", n + 1)));
            }
        }
    }
    Ok(p)
}

#[derive(Default)]
struct Tally {
    counters: BTreeMap<&'static str, u64>,
    findings: Vec<serde_json::Value>,
}

impl Tally {
    fn add(&mut self, k: &'static str, n: u64) {
        *self.counters.entry(k).or_insert(0) += n;
    }
}

fn is_zero(buf: &[u8]) -> bool {
    buf.iter().all(|&b| b == 0)
}

fn check_phase(spec: &CrashSpec, algo: Checksum, job: &Settings) -> Result<PhaseReport> {
    let t_start = now_ns();
    let promises = read_ledger(&spec.ledger, spec.cut_ns)?;
    let bs = spec.block_size as usize;
    let mut t = Tally::default();
    for k in [
        "files_known",
        "files_promised",
        "files_lost_beyond_fsync",
        "files_truncated_beyond_fsync",
        "files_missing_unpromised",
        "files_short_unpromised",
        "files_zero_tail",
        "blocks_promised",
        "blocks_intact",
        "blocks_newer_than_promised",
        "blocks_lost_beyond_fsync",
        "bytes_lost_beyond_fsync",
        "blocks_zero_unpromised",
        "blocks_garbage",
        "blocks_read",
        "entries_promised",
        "entries_lost_beyond_fsync",
    ] {
        t.add(k, 0);
    }
    t.add("entries_promised", promises.entries.len() as u64);
    // Directory entries: every promised name must exist.
    for name in &promises.entries {
        if std::fs::symlink_metadata(job.dir.join(name)).is_err() {
            t.add("entries_lost_beyond_fsync", 1);
            if t.findings.len() < spec.max_findings {
                t.findings.push(serde_json::json!({"kind": "entry_lost", "path": name}));
            }
        }
    }
    let mut buf = vec![0u8; bs];
    for (name, facts) in &promises.files {
        t.add("files_known", 1);
        let promised_blocks = facts.promised.iter().filter(|&&g| g > 0).count() as u64;
        let promised_len = facts.promised.iter().rposition(|&g| g > 0).map(|i| i as u64 + 1).unwrap_or(0);
        // A missing file breaks a promise only once its name was durable too (POSIX: fsync of a
        // file does not promise its directory entry); a file that is there must hold its data.
        let entry_promised = promises.entries.contains(name);
        let data_promised = promised_blocks > 0;
        if data_promised {
            t.add("files_promised", 1);
            t.add("blocks_promised", promised_blocks);
        }
        let path = job.dir.join(name);
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if data_promised && entry_promised {
                    t.add("files_lost_beyond_fsync", 1);
                    t.add("blocks_lost_beyond_fsync", promised_blocks);
                    t.add("bytes_lost_beyond_fsync", promised_blocks * spec.block_size);
                    if t.findings.len() < spec.max_findings {
                        t.findings.push(serde_json::json!({"kind": "file_lost", "path": name,
                            "promised_blocks": promised_blocks}));
                    }
                } else {
                    t.add("files_missing_unpromised", 1);
                }
                continue;
            }
            Err(e) => return Err(EngineError::io(format!("open {}", path.display()), e)),
        };
        let size = file.metadata().map_err(|e| EngineError::io(format!("stat {}", path.display()), e))?.len();
        let nblocks = size.div_ceil(spec.block_size);
        if size < promised_len * spec.block_size {
            if data_promised {
                t.add("files_truncated_beyond_fsync", 1);
                if t.findings.len() < spec.max_findings {
                    t.findings.push(serde_json::json!({"kind": "truncated", "path": name,
                        "size_bytes": size, "promised_bytes": promised_len * spec.block_size}));
                }
            } else {
                t.add("files_short_unpromised", 1);
            }
        }
        let mut zero_tail = false;
        let mut trailing_zero_blocks = 0u64;
        for b in 0..nblocks.max(promised_len) {
            let off = b * spec.block_size;
            let want = facts.promised.get(b as usize).copied().unwrap_or(0);
            let in_file = b < nblocks;
            let mut got = 0usize;
            if in_file {
                buf.fill(0);
                use std::os::unix::fs::FileExt;
                while got < bs {
                    match file.read_at(&mut buf[got..], off + got as u64) {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(e) => return Err(EngineError::io(format!("read {} at {off}", path.display()), e)),
                    }
                }
                t.add("blocks_read", 1);
            }
            // Past the end, a partial block reads as zeros beyond EOF: judged as read.
            let zero = !in_file || is_zero(&buf);
            let verdict = if zero { Err(None) } else { check_block(&buf, off, algo).map_err(Some) };
            let good = match &verdict {
                Ok(h) => h.seed == facts.seed && h.thread == facts.tid,
                Err(_) => false,
            };
            if in_file {
                trailing_zero_blocks = if zero { trailing_zero_blocks + 1 } else { 0 };
            }
            if !good && !zero {
                t.add("blocks_garbage", 1);
            }
            if want > 0 && data_promised {
                let found_gen = match &verdict {
                    Ok(h) if good => Some(h.generation),
                    _ => None,
                };
                match found_gen {
                    Some(g) if g >= want => {
                        t.add("blocks_intact", 1);
                        if g > want {
                            t.add("blocks_newer_than_promised", 1);
                        }
                    }
                    _ => {
                        t.add("blocks_lost_beyond_fsync", 1);
                        t.add("bytes_lost_beyond_fsync", spec.block_size);
                        if t.findings.len() < spec.max_findings {
                            let (why, found, mismatch) = match &verdict {
                                Ok(h) => (if good { "stale generation" } else { "another file's block" }, Some(h.to_json()), None),
                                Err(Some(m)) => ("header mismatch", None, Some(m.to_json())),
                                Err(None) => (if in_file { "zeros" } else { "beyond end of file" }, None, None),
                            };
                            t.findings.push(serde_json::json!({"kind": "block_lost", "path": name,
                                "offset": off, "promised_generation": want, "why": why,
                                "found": found, "mismatch": mismatch}));
                        }
                    }
                }
            } else if zero && in_file {
                t.add("blocks_zero_unpromised", 1);
            }
        }
        if trailing_zero_blocks > 0 {
            zero_tail = true;
        }
        if zero_tail {
            t.add("files_zero_tail", 1);
        }
    }
    let mut report = PhaseReport::new("check");
    report.threads = 1;
    report.elapsed_s = (now_ns() - t_start) as f64 / 1e9;
    for (k, v) in t.counters {
        report.counters.insert(k.to_string(), v);
    }
    report.counters.insert("ledger_lines".into(), promises.lines);
    report.counters.insert("ledger_lines_promised".into(), promises.lines_promised);
    report.extra = serde_json::json!({ "cut_ns": spec.cut_ns, "findings": t.findings });
    Ok(report)
}
