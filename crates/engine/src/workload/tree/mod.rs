//! The tree family (fdtree, with an mdtest-like stat phase): build a regular
//! directory tree, fill it with files, stat them, then take it all down.
//!
//! Each thread owns one tree, `dir/tree-<tid>`, the level-0 directory (as
//! mdtest gives each task a unique directory). Under a directory of level
//! l < `levels` are `dirs_per_level` subdirectories `d0`, `d1`, ...; every
//! directory holds `files_per_dir` files `f0`, `f1`, ... of `file_blocks` x
//! 4 KiB. Directories per tree = sum over i = 0..=levels of dirs_per_level^i.
//!
//! The tree is never stored: every phase walks it depth-first by index, with
//! the path built into one reused buffer, so a tree of millions of entries
//! costs a few KiB of memory. Phases: `mkdir` (parents first), `create`,
//! `stat`, `remove`, `rmdir` (deepest first), and `cleanup`, which removes
//! whatever of the tree is left (after an interrupted run) and nothing else.

mod file_walk;
mod verify;

use std::path::Path;

use serde::Deserialize;

use crate::error::{EngineError, Result};
use crate::measure::{now_ns, own_fd_table, run_threads, Control, PhaseTiming, Recorder};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::workload::family::Workload;

/// fdtree's unit of file size: `dd bs=4096 count=S`.
pub const BLOCK: u64 = 4096;
/// Linux PATH_MAX, NUL included.
const PATH_MAX: usize = 4096;
/// The longest `file_prefix`: a name must stay under NAME_MAX (255) with fdtree's part.
const MAX_PREFIX: usize = 200;
/// Phases shorter than this get a warning in the report.
const SHORT_PHASE_S: f64 = 1.0;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeSpec {
    /// Depth below the root: 0 is the root directory alone.
    #[serde(default = "default_levels")]
    pub levels: u32,
    #[serde(default = "default_ten")]
    pub dirs_per_level: u32,
    #[serde(default = "default_ten")]
    pub files_per_dir: u32,
    /// File size in 4 KiB blocks.
    #[serde(default = "default_ten")]
    pub file_blocks: u64,
    /// File size in bytes, instead of `file_blocks` (mdtest -w: IO500's
    /// mdtest-hard writes 3901 bytes a file).
    #[serde(default)]
    pub file_bytes: Option<u64>,
    /// Bytes per write(2) call when creating a file (fdtree's dd: bs=4096).
    #[serde(default = "default_write_size")]
    pub write_size: u64,
    /// fsync each file before closing it, inside the create time (fdtree does not).
    #[serde(default)]
    pub fsync: bool,
    /// Data verification (docs/verify.md): every 4 KiB block of every file carries a header.
    #[serde(default)]
    pub verify: Option<crate::verify::Checksum>,
    /// Per tree (thread), the files the file phases (create, stat, verify,
    /// remove) visit: numbers `[from, to)` in the walk's order, counted from 0.
    /// None: every file. Set under MPI after a stonewall: the create phase's
    /// wear-out goes on from where a tree stopped, and the later phases visit
    /// only the files that exist (mdtest -W).
    #[serde(default)]
    pub file_range: Option<Vec<[u64; 2]>>,
    /// Put before every file's name (fdtree: none). The name's length sets
    /// the size of its directory entry, so how many entries share a block
    /// and how far a lookup scans: to match another tool's names (mdtest's
    /// `file.mdtest.<rank>.<n>`), match their length.
    #[serde(default)]
    pub file_prefix: String,
}

fn default_levels() -> u32 {
    4
}
fn default_ten<T: From<u8>>() -> T {
    T::from(10u8)
}
fn default_write_size() -> u64 {
    BLOCK
}

const KINDS: &[&str] = &["mkdir", "create", "stat", "unlink", "rmdir", "read"];
const MKDIR: usize = 0;
const CREATE: usize = 1;
const STAT: usize = 2;
const UNLINK: usize = 3;
const RMDIR: usize = 4;
const READ: usize = 5;

impl TreeSpec {
    /// Directories in one tree, root included; None on overflow.
    pub fn dirs_per_tree(&self) -> Option<u64> {
        let d = self.dirs_per_level as u64;
        let mut total = 0u64;
        let mut level = 1u64;
        for _ in 0..=self.levels {
            total = total.checked_add(level)?;
            level = level.checked_mul(d)?;
        }
        Some(total)
    }

    pub fn files_per_tree(&self) -> Option<u64> {
        self.dirs_per_tree()?.checked_mul(self.files_per_dir as u64)
    }

    pub fn file_size(&self) -> u64 {
        self.file_bytes.unwrap_or(self.file_blocks * BLOCK)
    }

    pub fn validate(&self, job: &Settings) -> Result<()> {
        if self.dirs_per_level == 0 {
            return Err(EngineError::invalid("dirs_per_level", "must be >= 1"));
        }
        // A billion directories is beyond any run that could finish; overflow is nonsense.
        let dirs = self.dirs_per_tree().filter(|&n| n <= 1_000_000_000).ok_or_else(|| {
            EngineError::invalid(
                "levels",
                "the tree would have over a billion directories: use fewer levels or dirs_per_level",
            )
        })?;
        if dirs.checked_mul(self.files_per_dir as u64).is_none_or(|n| n > 10_000_000_000) {
            return Err(EngineError::invalid("files_per_dir", "the tree would have over ten billion files: use fewer"));
        }
        if self.file_blocks > (1 << 28) {
            return Err(EngineError::invalid("file_blocks", "must be <= 268435456 (1 TiB files)"));
        }
        if self.file_bytes.is_some_and(|b| b > (1 << 40)) {
            return Err(EngineError::invalid("file_bytes", "must be <= 1099511627776 (1 TiB files)"));
        }
        if self.file_bytes.is_some() && self.verify.is_some() {
            return Err(EngineError::invalid(
                "file_bytes",
                "not with verify (verified files are whole 4 KiB blocks): use file_blocks",
            ));
        }
        if self.write_size == 0 || self.write_size > (64 << 20) {
            return Err(EngineError::invalid("write_size", "must be between 1 byte and 64 MiB"));
        }
        if self.verify.is_some() && (self.file_size() == 0 || self.files_per_dir == 0) {
            return Err(EngineError::invalid(
                "verify",
                "the files are empty (file_blocks or files_per_dir is 0): there is no data to verify",
            ));
        }
        if self.file_prefix.len() > MAX_PREFIX || self.file_prefix.bytes().any(|b| b == b'/' || b == 0) {
            return Err(EngineError::invalid(
                "file_prefix",
                format!("must be at most {MAX_PREFIX} bytes without '/' or NUL (it is put before each file's name)"),
            ));
        }
        if let Some(r) = &self.file_range {
            let files = dirs * self.files_per_dir as u64;
            if r.len() != job.threads {
                return Err(EngineError::invalid(
                    "file_range",
                    format!("has {} ranges for {} trees (threads): give one per tree", r.len(), job.threads),
                ));
            }
            if let Some([a, b]) = r.iter().find(|[a, b]| a > b || *b > files) {
                return Err(EngineError::invalid(
                    "file_range",
                    format!("[{a}, {b}] is not a range of the tree's {files} files: use 0 <= from <= to <= {files}"),
                ));
            }
        }
        let longest = self.longest_path(&job.dir, job.threads);
        if longest >= PATH_MAX {
            return Err(EngineError::invalid(
                "levels",
                format!("the deepest file path would be {longest} bytes, over Linux's PATH_MAX ({PATH_MAX}): use fewer levels or a shorter --dir"),
            ));
        }
        Ok(())
    }

    /// The files of tree `tid` that the file phases visit, `[from, to)` in walk order.
    pub fn files_of(&self, tid: usize) -> (u64, u64) {
        match &self.file_range {
            Some(r) => (r[tid][0], r[tid][1]),
            None => (0, self.files_per_tree().expect("validated")),
        }
    }

    /// Files the file phases visit, over all `threads` trees.
    fn files_visited(&self, threads: usize) -> u64 {
        (0..threads).map(|t| self.files_of(t)).map(|(a, b)| b - a).sum()
    }

    /// An upper bound on the length of a file path (without its NUL); exact
    /// when the level numbers all have as many digits as `levels`.
    fn longest_path(&self, dir: &Path, threads: usize) -> usize {
        let digits = |n: u64| n.max(1).ilog10() as usize + 1;
        let lv = digits(self.levels as u64);
        dir.as_os_str().len()
            + "/tree-".len()
            + digits(threads.saturating_sub(1) as u64)
            + self.levels as usize * ("/LD".len() + lv + digits(self.dirs_per_level as u64))
            + "/LF".len()
            + self.file_prefix.len()
            + lv
            + digits((self.files_per_dir as u64).max(1))
    }
}

/// A path under construction: bytes without NUL, grown and truncated in place.
struct PathBuf8(Vec<u8>);

impl PathBuf8 {
    fn new(base: &Path, tid: usize) -> PathBuf8 {
        let mut v = Vec::with_capacity(PATH_MAX + 1);
        v.extend_from_slice(base.as_os_str().as_encoded_bytes());
        v.extend_from_slice(b"/tree-");
        push_u64(&mut v, tid as u64);
        PathBuf8(v)
    }

    /// Appends `/<prefix>L<level><tag><n>`, fdtree's name for a file (tag F)
    /// or directory (tag D), after `prefix` (files only; empty as in fdtree).
    #[inline]
    fn push_name(&mut self, prefix: &[u8], level: u64, tag: u8, n: u64) {
        self.0.push(b'/');
        self.0.extend_from_slice(prefix);
        self.0.push(b'L');
        push_u64(&mut self.0, level);
        self.0.push(tag);
        push_u64(&mut self.0, n);
    }

    /// Call `f` with a NUL-terminated pointer to the path.
    #[inline]
    fn with_c<R>(&mut self, f: impl FnOnce(*const libc::c_char) -> R) -> R {
        self.0.push(0);
        let r = f(self.0.as_ptr() as *const libc::c_char);
        self.0.pop();
        r
    }

    fn display(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

/// Decimal digits of `n` appended without allocating (capacity is reserved up front).
#[inline]
fn push_u64(v: &mut Vec<u8>, mut n: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    v.extend_from_slice(&tmp[i..]);
}

/// What the walk asks for: make a directory, touch one of its files, or remove
/// a directory (after everything under it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Visit {
    Mkdir,
    File,
    Rmdir,
}

/// Walks one tree in fdtree's order. `cb` returns Ok(false) to stop early.
///
/// As fdtree.bash 1.0.2 does it: the root is made first; at each directory its
/// files come first, then all its subdirectories are made, then the walk
/// recurses into each; subdirectories are removed together after their
/// subtrees, the root last. Names are fdtree's, counting down: at level
/// l = levels - depth, files `L<l>F<n>` and subdirectories `L<l>D<n>`, n from
/// the count down to 1. `files` false skips file visits entirely.
fn walk(
    path: &mut PathBuf8,
    spec: &TreeSpec,
    files: bool,
    cb: &mut dyn FnMut(Visit, &mut PathBuf8) -> Result<bool>,
) -> Result<bool> {
    Ok(cb(Visit::Mkdir, path)? && walk_below(path, spec, 0, files, cb)? && cb(Visit::Rmdir, path)?)
}

/// Walks the files numbered `[from, to)` (in the walk's order, from 0) of one
/// tree, skipping directories and the files before `from` without touching
/// them. `cb` returns Ok(false) to stop early.
fn walk_files(
    path: &mut PathBuf8,
    spec: &TreeSpec,
    range: (u64, u64),
    cb: &mut dyn FnMut(&mut PathBuf8) -> Result<bool>,
) -> Result<()> {
    let mut w = file_walk::FileWalk::new(spec);
    w.start(path, range);
    while w.next(path) {
        if !cb(path)? {
            w.stop(path);
            break;
        }
    }
    Ok(())
}

fn walk_below(
    path: &mut PathBuf8,
    spec: &TreeSpec,
    depth: u32,
    files: bool,
    cb: &mut dyn FnMut(Visit, &mut PathBuf8) -> Result<bool>,
) -> Result<bool> {
    let len = path.0.len();
    let level = (spec.levels - depth) as u64;
    // Visit `L<level><tag><n>` for n = count..=1 with `f`; false stops the walk.
    let each =
        |path: &mut PathBuf8, tag: u8, count: u64, f: &mut dyn FnMut(&mut PathBuf8) -> Result<bool>| -> Result<bool> {
            let prefix = if tag == b'F' { spec.file_prefix.as_bytes() } else { b"" };
            for n in (1..=count).rev() {
                path.push_name(prefix, level, tag, n);
                let go = f(path)?;
                path.0.truncate(len);
                if !go {
                    return Ok(false);
                }
            }
            Ok(true)
        };
    if files && !each(path, b'F', spec.files_per_dir as u64, &mut |p| cb(Visit::File, p))? {
        return Ok(false);
    }
    if depth < spec.levels {
        let d = spec.dirs_per_level as u64;
        return Ok(each(path, b'D', d, &mut |p| cb(Visit::Mkdir, p))?
            && each(path, b'D', d, &mut |p| walk_below(p, spec, depth + 1, files, cb))?
            && each(path, b'D', d, &mut |p| cb(Visit::Rmdir, p))?);
    }
    Ok(true)
}

/// What a measured file phase does to each file.
#[derive(Clone, Copy)]
enum FileOp {
    Create,
    Stat,
    Read,
    Remove,
}

/// One file of a measured file phase, timed and counted. Inline in the walk's loop, so that its
/// system calls are made there and no frame returns across them (file_walk.rs says why).
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the loop's state, lent for one file
fn file_op(
    op: FileOp,
    p: &mut PathBuf8,
    rec: &mut Recorder,
    done: &mut Done,
    zeros: &mut [u8],
    tv: Option<&mut verify::TreeVerify>,
    spec: &TreeSpec,
    size: u64,
) -> Result<()> {
    match op {
        FileOp::Create => {
            let t0 = now_ns();
            match tv {
                Some(v) => v.create_file(p, size, spec.write_size, spec.fsync)?,
                None => create_file(p, size, zeros, spec.fsync)?,
            }
            rec.record(CREATE, size, t0, now_ns());
            done.bytes += size;
        }
        FileOp::Stat => {
            // SAFETY: zeroed stat is a valid out-buffer.
            let mut sb: libc::stat = unsafe { std::mem::zeroed() };
            let t0 = now_ns();
            // SAFETY: NUL-terminated path, valid out-pointer.
            let r = p.with_c(|c| unsafe { crate::sys::stat(c, &mut sb) });
            let t1 = now_ns();
            if r != 0 {
                return Err(os_err("stat", p));
            }
            rec.record(STAT, 0, t0, t1);
            if sb.st_size as u64 != size {
                return Err(EngineError::io(
                    format!("stat {}: {} bytes where create wrote {size}", p.display(), sb.st_size),
                    std::io::Error::from_raw_os_error(libc::EIO),
                ));
            }
        }
        FileOp::Read => {
            let t0 = now_ns();
            read_file(p, size, zeros)?;
            rec.record(READ, size, t0, now_ns());
            done.bytes += size;
        }
        FileOp::Remove => {
            let t0 = now_ns();
            // SAFETY: NUL-terminated path.
            let r = p.with_c(|c| unsafe { crate::sys::unlink(c) });
            let t1 = now_ns();
            if r != 0 {
                return Err(os_err("unlink", p));
            }
            rec.record(UNLINK, 0, t0, t1);
        }
    }
    done.files += 1;
    Ok(())
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn os_err(what: &str, path: &PathBuf8) -> EngineError {
    let e = std::io::Error::last_os_error();
    let mut ctx = format!("{what} {}", path.display());
    if e.raw_os_error() == Some(libc::EEXIST) {
        ctx.push_str(" (left by an earlier run? run the cleanup phase, or use an empty --dir)");
    } else if e.raw_os_error() == Some(libc::ENOENT) && what != "mkdir" {
        ctx.push_str(" (run the phases in order: mkdir, create, stat, remove, rmdir)");
    }
    EngineError::io(ctx, e)
}

/// Per-thread state: the path buffer and a zero buffer for file contents.
struct TreeState {
    tid: usize,
    path: PathBuf8,
    /// The file phases' walk (its stack allocated in setup).
    walk: file_walk::FileWalk,
    zeros: Vec<u8>,
    /// With verify, in the create phase: files are written with verified blocks.
    v: Option<Box<verify::TreeVerify>>,
}

/// What one thread did in a phase.
#[derive(Default)]
struct Done {
    dirs: u64,
    files: u64,
    bytes: u64,
}

pub struct Tree {
    spec: TreeSpec,
}

impl Tree {
    pub fn new(job: &Settings, spec: TreeSpec) -> Result<Tree> {
        spec.validate(job)?;
        Ok(Tree { spec })
    }

    pub fn spec(&self) -> &TreeSpec {
        &self.spec
    }

    fn measured_phase(&self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        let spec = &self.spec;
        let nthreads = job.threads;
        let dirs = spec.dirs_per_tree().expect("validated");
        let with_files = !matches!(phase, "mkdir" | "rmdir");
        let expected = if with_files { spec.files_visited(nthreads) } else { dirs * nthreads as u64 };
        let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
        let size = spec.file_size();
        let zeros_len = if matches!(phase, "create" | "read") { spec.write_size.min(size.max(1)) as usize } else { 0 };
        let (report, done) = run_threads(
            phase,
            nthreads,
            timing,
            ctl,
            KINDS,
            3,
            expected,
            // Every descriptor the worker uses it opens and closes within one call, in a table of its own.
            |tid| {
                own_fd_table(&[]);
                let v = spec.verify.filter(|_| phase == "create").map(|a| {
                    let mut v = Box::new(verify::TreeVerify::new(a, job.seed, tid, spec.write_size, "create"));
                    v.file = spec.files_of(tid).0; // the write number of a file is its number in the walk
                    v
                });
                let zeros_len = if v.is_some() { 0 } else { zeros_len };
                Ok(TreeState {
                    tid,
                    path: PathBuf8::new(&job.dir, tid),
                    walk: file_walk::FileWalk::new(spec),
                    zeros: vec![0u8; zeros_len],
                    v,
                })
            },
            |st, rec| {
                let mut done = Done::default();
                let zeros = &mut st.zeros;
                let mut tv = st.v.as_deref_mut();
                let mut cb = |v: Visit, p: &mut PathBuf8| -> Result<bool> {
                    if rec.interrupted() {
                        return Ok(false);
                    }
                    match (phase, v) {
                        ("mkdir", Visit::Mkdir) => {
                            let t0 = now_ns();
                            // SAFETY: the pointer is a NUL-terminated path.
                            let r = p.with_c(|c| unsafe { crate::sys::mkdir(c, 0o755) });
                            let t1 = now_ns();
                            if r != 0 {
                                return Err(os_err("mkdir", p));
                            }
                            rec.record(MKDIR, 0, t0, t1);
                            done.dirs += 1;
                        }
                        ("rmdir", Visit::Rmdir) => {
                            let t0 = now_ns();
                            // SAFETY: as above.
                            let r = p.with_c(|c| unsafe { crate::sys::rmdir(c) });
                            let t1 = now_ns();
                            if r != 0 {
                                return Err(os_err("rmdir", p));
                            }
                            rec.record(RMDIR, 0, t0, t1);
                            done.dirs += 1;
                        }
                        _ => {}
                    }
                    Ok(true)
                };
                if with_files {
                    // The files one by one, each call made here in the loop (file_walk.rs says why).
                    let (walk, p) = (&mut st.walk, &mut st.path);
                    let op = match phase {
                        "create" => FileOp::Create,
                        "stat" => FileOp::Stat,
                        "read" => FileOp::Read,
                        _ => FileOp::Remove,
                    };
                    walk.start(p, spec.files_of(st.tid));
                    while walk.next(p) {
                        if rec.interrupted() {
                            walk.stop(p);
                            break;
                        }
                        file_op(op, p, rec, &mut done, zeros, tv.as_deref_mut(), spec, size)?;
                    }
                } else {
                    walk(&mut st.path, spec, false, &mut cb)?;
                }
                Ok((done, st.v.take()))
            },
        )?;
        Ok(self.phase_report(report, phase, nthreads, done))
    }

    /// A measured phase's counters and details, with the verification's findings.
    fn phase_report(
        &self,
        mut report: PhaseReport,
        phase: &str,
        nthreads: usize,
        done: Vec<(Done, Option<Box<verify::TreeVerify>>)>,
    ) -> PhaseReport {
        let spec = &self.spec;
        let size = spec.file_size();
        let with_files = !matches!(phase, "mkdir" | "rmdir");
        let (done, vs): (Vec<Done>, Vec<_>) = done.into_iter().unzip();
        let dirs_done: u64 = done.iter().map(|d| d.dirs).sum();
        let files_done: u64 = done.iter().map(|d| d.files).sum();
        let bytes_done: u64 = done.iter().map(|d| d.bytes).sum();
        match phase {
            "mkdir" | "rmdir" => {
                report.counters.insert("directories".into(), dirs_done);
            }
            "create" | "read" => {
                report.counters.insert("files".into(), files_done);
                report.counters.insert("bytes".into(), bytes_done);
            }
            _ => {
                report.counters.insert("files".into(), files_done);
            }
        }
        report.extra = serde_json::json!({
            "trees": nthreads,
            "levels": spec.levels,
            "dirs_per_level": spec.dirs_per_level,
            "files_per_dir": spec.files_per_dir,
            "file_size_bytes": size,
            "directories_per_tree": spec.dirs_per_tree().expect("validated"),
            "files_per_tree": spec.files_per_tree().expect("validated"),
        });
        if with_files {
            // Per tree: what an MPI stonewall's wear-out and the later phases go on from.
            report.extra["files_by_tree"] = done.iter().map(|d| d.files).collect::<Vec<u64>>().into();
            if let Some(r) = &spec.file_range {
                report.extra["file_range"] = serde_json::json!(r);
            }
        }
        let vs: Vec<&verify::TreeVerify> = vs.iter().flatten().map(|b| &**b).collect();
        if !vs.is_empty() {
            verify::merge(&mut report, &vs);
        }
        if !report.interrupted && report.elapsed_s < SHORT_PHASE_S {
            report.warnings.push(format!(
                "{phase} took {:.3} s, under {SHORT_PHASE_S} s: its rate is dominated by timer and start-up noise; \
                 use a larger tree (levels, dirs_per_level, files_per_dir)",
                report.elapsed_s
            ));
        }
        report
    }

    /// Removes what is left of each thread's tree, walking the same names the
    /// phases create; anything else in the directory is left alone.
    fn cleanup(&self, job: &Settings) -> Result<PhaseReport> {
        let spec = &self.spec;
        let mut removed = Done::default();
        let mut leftovers: Vec<String> = Vec::new();
        for tid in 0..job.threads {
            let mut path = PathBuf8::new(&job.dir, tid);
            // SAFETY: zeroed stat is a valid out-buffer; NUL-terminated path.
            let mut sb: libc::stat = unsafe { std::mem::zeroed() };
            if path.with_c(|c| unsafe { libc::lstat(c, &mut sb) }) != 0 {
                continue;
            }
            let mut cb = |v: Visit, p: &mut PathBuf8| -> Result<bool> {
                let (r, what) = match v {
                    // SAFETY: NUL-terminated path.
                    Visit::File => (p.with_c(|c| unsafe { crate::sys::unlink(c) }), "unlink"),
                    Visit::Rmdir => (p.with_c(|c| unsafe { crate::sys::rmdir(c) }), "rmdir"),
                    Visit::Mkdir => return Ok(true),
                };
                if r == 0 {
                    if v == Visit::File {
                        removed.files += 1;
                    } else {
                        removed.dirs += 1;
                    }
                } else {
                    match errno() {
                        libc::ENOENT => {}
                        libc::ENOTEMPTY | libc::EEXIST if leftovers.len() < 5 => {
                            leftovers.push(p.display());
                        }
                        libc::ENOTEMPTY | libc::EEXIST => {}
                        _ => return Err(os_err(what, p)),
                    }
                }
                Ok(true)
            };
            walk(&mut path, spec, spec.files_per_dir > 0, &mut cb)?;
        }
        let mut report = PhaseReport::new("cleanup");
        report.counters.insert("directories".into(), removed.dirs);
        report.counters.insert("files".into(), removed.files);
        if !leftovers.is_empty() {
            report.warnings.push(format!(
                "left in place because they hold files fsmeter did not create: {}",
                leftovers.join(", ")
            ));
        }
        Ok(report)
    }
}

/// open + write `size` bytes of zeros in `zeros.len()` chunks (+ fsync) + close: one fdtree `dd`.
#[inline(always)]
fn create_file(p: &mut PathBuf8, size: u64, zeros: &[u8], fsync: bool) -> Result<()> {
    // SAFETY: NUL-terminated path.
    let fd = p.with_c(|c| unsafe {
        crate::nofollow::open(c, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC, 0o644)
    });
    if fd < 0 {
        return Err(os_err("create", p));
    }
    let mut left = size;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        // SAFETY: zeros holds at least n bytes.
        let w = unsafe { crate::sys::write(fd, zeros.as_ptr() as *const libc::c_void, n) };
        if w <= 0 {
            let err = os_err("write", p);
            // SAFETY: we own fd.
            unsafe { crate::sys::close(fd) };
            return Err(err);
        }
        left -= w as u64;
    }
    finish_file(fd, p, fsync)
}

/// open + read `size` bytes in `buf.len()` chunks + close (mdtest -e); a file shorter than
/// `size` is an error.
#[inline(always)]
fn read_file(p: &mut PathBuf8, size: u64, buf: &mut [u8]) -> Result<()> {
    // SAFETY: NUL-terminated path.
    let fd = p.with_c(|c| unsafe { crate::nofollow::open(c, libc::O_RDONLY | libc::O_CLOEXEC, 0) });
    if fd < 0 {
        return Err(os_err("open", p));
    }
    let mut left = size;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        // SAFETY: buf holds at least n bytes.
        let r = unsafe { crate::sys::read(fd, buf.as_mut_ptr() as *mut libc::c_void, n) };
        if r <= 0 {
            let err = if r == 0 {
                EngineError::io(
                    format!("read {}: {} bytes short of the {size} create wrote", p.display(), left),
                    std::io::Error::from_raw_os_error(libc::EIO),
                )
            } else {
                os_err("read", p)
            };
            // SAFETY: we own fd.
            unsafe { crate::sys::close(fd) };
            return Err(err);
        }
        left -= r as u64;
    }
    // SAFETY: we own fd.
    if unsafe { crate::sys::close(fd) } != 0 {
        return Err(os_err("close", p));
    }
    Ok(())
}

/// The end of one fdtree `dd`: fsync if asked, then close, each failure named with the path.
#[inline(always)]
fn finish_file(fd: libc::c_int, p: &PathBuf8, fsync: bool) -> Result<()> {
    // SAFETY: the caller owns fd and hands it over.
    if fsync && unsafe { crate::sys::fsync(fd) } != 0 {
        let err = os_err("fsync", p);
        unsafe { crate::sys::close(fd) };
        return Err(err);
    }
    // SAFETY: we own fd; close reports delayed write errors on some filesystems (NFS).
    if unsafe { crate::sys::close(fd) } != 0 {
        return Err(os_err("close", p));
    }
    Ok(())
}

impl Workload for Tree {
    fn phases(&self) -> &'static [&'static str] {
        &["mkdir", "create", "stat", "read", "verify", "remove", "rmdir", "cleanup"]
    }

    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        match phase {
            "cleanup" => self.cleanup(job),
            "verify" => match self.spec.verify {
                Some(algo) => verify::verify_phase(&self.spec, algo, job, ctl),
                None => Err(EngineError::invalid(
                    "verify",
                    "the verify phase needs verify = \"crc32c\", \"xxh3\" or \"sha256\" in the spec",
                )),
            },
            _ => self.measured_phase(phase, job, ctl),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(levels: u32, d: u32, f: u32) -> TreeSpec {
        TreeSpec {
            levels,
            dirs_per_level: d,
            files_per_dir: f,
            file_blocks: 1,
            file_bytes: None,
            write_size: BLOCK,
            fsync: false,
            verify: None,
            file_range: None,
            file_prefix: String::new(),
        }
    }

    #[test]
    fn default_tree_has_11111_directories() {
        let s = spec(4, 10, 10);
        assert_eq!(s.dirs_per_tree(), Some(11_111));
        assert_eq!(s.files_per_tree(), Some(111_110));
        assert_eq!(spec(0, 7, 3).dirs_per_tree(), Some(1));
        assert_eq!(spec(5, 1, 3).dirs_per_tree(), Some(6));
        assert_eq!(spec(60, 10, 1).dirs_per_tree(), None);
    }

    #[test]
    fn walk_follows_fdtree_order_and_names() {
        let s = spec(2, 2, 1);
        let mut path = PathBuf8::new(Path::new("/x"), 3);
        let mut seen = Vec::new();
        walk(&mut path, &s, true, &mut |v, p| {
            seen.push((v, p.display().trim_start_matches("/x/tree-3").to_string()));
            Ok(true)
        })
        .unwrap();
        let of =
            |kind: Visit| -> Vec<&str> { seen.iter().filter(|(v, _)| *v == kind).map(|(_, p)| p.as_str()).collect() };
        // Siblings are made together before the walk descends, and removed together after.
        assert_eq!(of(Visit::Mkdir), ["", "/L2D2", "/L2D1", "/L2D2/L1D2", "/L2D2/L1D1", "/L2D1/L1D2", "/L2D1/L1D1"]);
        assert_eq!(of(Visit::Rmdir), ["/L2D2/L1D2", "/L2D2/L1D1", "/L2D1/L1D2", "/L2D1/L1D1", "/L2D2", "/L2D1", ""]);
        assert_eq!(
            of(Visit::File),
            [
                "/L2F1",
                "/L2D2/L1F1",
                "/L2D2/L1D2/L0F1",
                "/L2D2/L1D1/L0F1",
                "/L2D1/L1F1",
                "/L2D1/L1D2/L0F1",
                "/L2D1/L1D1/L0F1"
            ]
        );
    }

    #[test]
    fn stopping_early_stops_the_whole_walk() {
        let s = spec(3, 3, 2);
        let mut path = PathBuf8::new(Path::new("/x"), 0);
        let mut n = 0;
        let done = walk(&mut path, &s, true, &mut |_, _| {
            n += 1;
            Ok(n < 10)
        })
        .unwrap();
        assert!(!done);
        assert_eq!(n, 10);
    }

    #[test]
    fn longest_path_bounds_every_path() {
        let s = spec(3, 12, 100);
        // The longest names are at the top: L3D12/L2D12/L1D12/L0F100, bounded by L3D12 x 3 + L3F100.
        assert_eq!(s.longest_path(Path::new("/ab"), 1), "/ab/tree-0/L3D12/L3D12/L3D12/L3F100".len());
        assert!(s.longest_path(Path::new("/ab"), 1) >= "/ab/tree-0/L3D12/L2D12/L1D12/L0F100".len());
        let p = TreeSpec { file_prefix: "file.mdtest".into(), ..s };
        assert_eq!(p.longest_path(Path::new("/ab"), 1), "/ab/tree-0/L3D12/L3D12/L3D12/file.mdtestL3F100".len());
    }
}
