//! The fileset family: PostMark 1.5 (faithful) and filemark (PostMark made
//! multi-threaded, time-based and with biases in 1% steps).
//!
//! PostMark keeps a table of 2 x `files` slots. `create` fills `files` of them,
//! each transaction reads or appends one live file, then creates or deletes one,
//! and `delete` removes what is left in slot order. fsmeter draws its random
//! numbers from the same generator (MT19937 as PostMark 1.5x seeds it:
//! `sgenrand`, the 1999 reference code) in the same order, so for one thread
//! and the same parameters and seed it creates, reads, appends and deletes
//! exactly the files PostMark does:
//!
//! 1. `sgenrand(seed)`, then the source buffer (2 x size_high bytes of
//!    `32 + RND(95)`);
//! 2. per create: a free slot (no draw), the location (`RND(total weight)`, only
//!    with more than one location), the subdirectory (`RND(n)`, only when n > 1),
//!    the size (`low + RND(high - low)`, no draw when high = low);
//! 3. per transaction: unless bias read is -1, `RND(10) < bias_read` picks read
//!    over append, then a live slot (`RND(2 x files)` until one is in use), and
//!    for an append below size_high `RND(high - size) + 1` bytes; unless bias
//!    create is -1, `RND(10) < bias_create` picks create over delete (a delete
//!    draws a live slot the same way).
//!
//! `RND(x)` is `genrand() % x`, and 0 without a draw when x <= 0. Files are named
//! as PostMark names them: the running number of the create, under `s<k>/`
//! when subdirectories > 1, under the drawn location.
//!
//! Threads (filemark): each thread owns `files / threads` of the files, its own
//! 2 x share slot table, its own generator (thread 0 seeded with `seed` itself,
//! so one thread is PostMark) and a share of the transactions. Nothing is shared
//! on the hot path: no lock, no contention but the filesystem's own (all threads
//! work in the same directories). Names stay unique: thread t of T names its
//! n-th file `(n - 1) * T + t + 1`.
//!
//! Memory: 12 bytes per slot (size, name number, directory index), 24 per file;
//! names are built into a per-thread buffer when needed.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde::Deserialize;

use crate::backend::BackendKind;
use crate::error::{EngineError, Result};
use crate::job::{secs_to_ns, Job};
use crate::measure::{now_ns, run_threads, Control, PhaseTiming, Recorder};
use crate::report::PhaseReport;
use crate::workload::Workload;

/// MT19937, the 1999/10/28 reference code PostMark 1.5x embeds (`sgenrand`
/// seeding with Knuth's 69069 generator; not the 2002 `init_genrand`).
/// Debian's amd64 build keeps `unsigned long` at 64 bits, but every value stays
/// below 2^32, so 32-bit arithmetic gives the same numbers.
#[derive(Clone)]
pub struct Mt1999 {
    mt: [u32; 624],
    mti: usize,
}

impl Mt1999 {
    const N: usize = 624;
    const M: usize = 397;

    /// `sgenrand(seed)`.
    pub fn new(seed: u32) -> Self {
        let mut mt = [0u32; 624];
        let mut s = seed;
        for v in mt.iter_mut() {
            *v = s & 0xffff_0000;
            s = s.wrapping_mul(69069).wrapping_add(1);
            *v |= (s & 0xffff_0000) >> 16;
            s = s.wrapping_mul(69069).wrapping_add(1);
        }
        Mt1999 { mt, mti: Self::N }
    }

    /// `genrand()`.
    #[inline]
    pub fn genrand(&mut self) -> u32 {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        const MAG: [u32; 2] = [0, 0x9908_b0df];
        if self.mti >= Self::N {
            let mt = &mut self.mt;
            for kk in 0..Self::N - Self::M {
                let y = (mt[kk] & UPPER) | (mt[kk + 1] & LOWER);
                mt[kk] = mt[kk + Self::M] ^ (y >> 1) ^ MAG[(y & 1) as usize];
            }
            for kk in Self::N - Self::M..Self::N - 1 {
                let y = (mt[kk] & UPPER) | (mt[kk + 1] & LOWER);
                mt[kk] = mt[kk + Self::M - Self::N] ^ (y >> 1) ^ MAG[(y & 1) as usize];
            }
            let y = (mt[Self::N - 1] & UPPER) | (mt[0] & LOWER);
            mt[Self::N - 1] = mt[Self::M - 1] ^ (y >> 1) ^ MAG[(y & 1) as usize];
            self.mti = 0;
        }
        let mut y = self.mt[self.mti];
        self.mti += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// PostMark's `RND(x)`: `genrand() % x`, or 0 without drawing when x is 0.
    #[inline]
    pub fn rnd(&mut self, x: u32) -> u32 {
        if x > 0 {
            self.genrand() % x
        } else {
            0
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FilesetMode {
    /// Biases on PostMark's 0..10 scale (`RND(10) < bias`).
    Postmark,
    /// Biases in percent (`RND(100) < bias`).
    Filemark,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Location {
    /// A directory, relative to the job's `dir` (created when missing) or absolute (must exist).
    pub path: String,
    #[serde(default = "one_u32")]
    pub weight: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesetSpec {
    #[serde(default = "default_mode")]
    pub mode: FilesetMode,
    /// PostMark's `set number`: files created by the create phase (all threads).
    #[serde(default = "default_files")]
    pub files: u64,
    /// PostMark's `set transactions`, per transactions phase (all threads); None: time-based only.
    #[serde(default)]
    pub transactions: Option<u64>,
    /// Measured seconds per transactions phase (filemark); with `transactions`, whichever ends first.
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// Unmeasured transactions before each transactions phase's measured window.
    #[serde(default)]
    pub warmup_s: f64,
    #[serde(default = "default_low")]
    pub size_low: u32,
    #[serde(default = "default_high")]
    pub size_high: u32,
    #[serde(default = "default_block")]
    pub read_block: u32,
    #[serde(default = "default_block")]
    pub write_block: u32,
    /// Used when > 1: files go to `s0` .. `s<n-1>` of each location.
    #[serde(default)]
    pub subdirectories: u32,
    /// PostMark's `set location` list; empty: the job's `dir`.
    #[serde(default)]
    pub locations: Vec<Location>,
    /// Chance of read over append: 0..10 (postmark) or 0..100 (filemark); -1 disables reads and appends.
    #[serde(default = "default_bias")]
    pub bias_read: i32,
    /// Chance of create over delete, same scale; -1 disables creates and deletes.
    #[serde(default = "default_bias")]
    pub bias_create: i32,
    /// stdio-like buffered I/O (a user-space buffer of the file system's block size) or plain read/write.
    #[serde(default = "default_true")]
    pub buffering: bool,
}

fn one_u32() -> u32 {
    1
}
fn default_mode() -> FilesetMode {
    FilesetMode::Postmark
}
fn default_files() -> u64 {
    500
}
fn default_low() -> u32 {
    500
}
fn default_high() -> u32 {
    10000
}
fn default_block() -> u32 {
    512
}
fn default_bias() -> i32 {
    5
}
fn default_true() -> bool {
    true
}

/// Each thread owns at most this many files (slots are indexed with u32).
const MAX_FILES_PER_THREAD: u64 = 1 << 30;

impl FilesetSpec {
    pub fn bias_scale(&self) -> i32 {
        match self.mode {
            FilesetMode::Postmark => 10,
            FilesetMode::Filemark => 100,
        }
    }

    pub fn validate(&self, job: &Job) -> Result<()> {
        if self.files == 0 {
            return Err(EngineError::invalid("files", "must be >= 1"));
        }
        if self.files < job.threads as u64 {
            return Err(EngineError::invalid("files", format!("{} files cannot be shared by {} threads: use files >= threads", self.files, job.threads)));
        }
        if self.files / job.threads as u64 >= MAX_FILES_PER_THREAD {
            return Err(EngineError::invalid("files", format!("at most {} files per thread", MAX_FILES_PER_THREAD - 1)));
        }
        if self.size_low == 0 {
            return Err(EngineError::invalid("size_low", "must be >= 1 byte"));
        }
        if self.size_high < self.size_low {
            return Err(EngineError::invalid("size_high", format!("must be >= size_low ({} bytes)", self.size_low)));
        }
        if self.size_high > 1 << 30 {
            return Err(EngineError::invalid("size_high", "must be <= 1 GiB"));
        }
        if self.read_block == 0 || self.read_block > 1 << 30 {
            return Err(EngineError::invalid("read_block", "must be between 1 byte and 1 GiB"));
        }
        if self.write_block == 0 || self.write_block > 1 << 30 {
            return Err(EngineError::invalid("write_block", "must be between 1 byte and 1 GiB"));
        }
        let scale = self.bias_scale();
        for (name, v) in [("bias_read", self.bias_read), ("bias_create", self.bias_create)] {
            if v < -1 || v > scale {
                return Err(EngineError::invalid(name, format!("must be -1 (disabled) or 0..{scale} in {:?} mode", self.mode).to_lowercase()));
            }
        }
        if self.subdirectories > 1_000_000 {
            return Err(EngineError::invalid("subdirectories", "must be <= 1000000"));
        }
        let mut total_weight = 0u64;
        for (i, l) in self.locations.iter().enumerate() {
            if l.path.is_empty() || l.path.as_bytes().contains(&0) {
                return Err(EngineError::invalid(format!("locations[{i}].path"), "must be a non-empty directory path"));
            }
            if l.weight == 0 {
                return Err(EngineError::invalid(format!("locations[{i}].weight"), "must be >= 1"));
            }
            total_weight += l.weight as u64;
        }
        if total_weight > 1_000_000 {
            return Err(EngineError::invalid("locations", "the weights must add up to <= 1000000"));
        }
        if self.locations.len() > u16::MAX as usize {
            return Err(EngineError::invalid("locations", "at most 65535 locations"));
        }
        if (self.locations.len().max(1) as u64) * (self.subdirectories.max(1) as u64) > u32::MAX as u64 {
            return Err(EngineError::invalid("subdirectories", "too many directories (locations x subdirectories)"));
        }
        secs_to_ns("warmup_s", self.warmup_s)?;
        if let Some(d) = self.duration_s {
            if secs_to_ns("duration_s", d)? == 0 {
                return Err(EngineError::invalid("duration_s", "must be > 0"));
            }
        }
        if self.transactions.is_none() && self.duration_s.is_none() {
            return Err(EngineError::invalid("transactions", "give transactions or duration_s (or both: whichever ends first)"));
        }
        if job.backend != BackendKind::Psync {
            return Err(EngineError::invalid("backend", "the fileset family issues plain system calls (open, read, write, unlink): use backend=psync"));
        }
        Ok(())
    }
}

/// One slot of a thread's file table. `size == 0`: free (PostMark's convention).
#[derive(Clone, Copy, Default)]
struct Slot {
    size: u32,
    /// The thread's running create number (PostMark's `files_created` at the create).
    num: u32,
    /// location index x max(subdirectories, 1) + subdirectory index.
    dir: u32,
}

/// Per-thread cumulative counts since the last create phase.
#[derive(Clone, Copy, Default, Debug)]
struct Counts {
    created_alone: u64,
    created_mixed: u64,
    read: u64,
    appended: u64,
    deleted_alone: u64,
    deleted_mixed: u64,
    bytes_read: u64,
    bytes_written: u64,
    transactions: u64,
    transactions_measured: u64,
    out_of_files: u64,
}

impl Counts {
    fn sub(&self, o: &Counts) -> Counts {
        Counts {
            created_alone: self.created_alone - o.created_alone,
            created_mixed: self.created_mixed - o.created_mixed,
            read: self.read - o.read,
            appended: self.appended - o.appended,
            deleted_alone: self.deleted_alone - o.deleted_alone,
            deleted_mixed: self.deleted_mixed - o.deleted_mixed,
            bytes_read: self.bytes_read - o.bytes_read,
            bytes_written: self.bytes_written - o.bytes_written,
            transactions: self.transactions - o.transactions,
            transactions_measured: self.transactions_measured - o.transactions_measured,
            out_of_files: self.out_of_files - o.out_of_files,
        }
    }
    fn add(&mut self, o: &Counts) {
        self.created_alone += o.created_alone;
        self.created_mixed += o.created_mixed;
        self.read += o.read;
        self.appended += o.appended;
        self.deleted_alone += o.deleted_alone;
        self.deleted_mixed += o.deleted_mixed;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.transactions += o.transactions;
        self.transactions_measured += o.transactions_measured;
        self.out_of_files += o.out_of_files;
    }
    fn put(&self, r: &mut PhaseReport) {
        let c = &mut r.counters;
        c.insert("files_created_alone".into(), self.created_alone);
        c.insert("files_created_mixed".into(), self.created_mixed);
        c.insert("files_read".into(), self.read);
        c.insert("files_appended".into(), self.appended);
        c.insert("files_deleted_alone".into(), self.deleted_alone);
        c.insert("files_deleted_mixed".into(), self.deleted_mixed);
        c.insert("bytes_read".into(), self.bytes_read);
        c.insert("bytes_written".into(), self.bytes_written);
        c.insert("transactions".into(), self.transactions);
        c.insert("transactions_measured".into(), self.transactions_measured);
    }
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "files_created": self.created_alone + self.created_mixed,
            "files_created_alone": self.created_alone,
            "files_created_mixed": self.created_mixed,
            "files_read": self.read,
            "files_appended": self.appended,
            "files_deleted": self.deleted_alone + self.deleted_mixed,
            "files_deleted_alone": self.deleted_alone,
            "files_deleted_mixed": self.deleted_mixed,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "transactions": self.transactions,
        })
    }
}

const KINDS: &[&str] = &["create", "read", "append", "delete"];
const CREATE: usize = 0;
const READ: usize = 1;
const APPEND: usize = 2;
const DELETE: usize = 3;

/// What a worker needs to know of the spec, copied so the hot loop reads plain fields.
#[derive(Clone, Copy)]
struct Params {
    low: u32,
    high: u32,
    rbs: usize,
    wbs: usize,
    subdirs: u32,
    bias_read: i32,
    bias_create: i32,
    scale: u32,
    buffering: bool,
    /// The stdio buffer size (st_blksize of the directory, as glibc takes it).
    stdio_buf: usize,
    nthreads: u64,
}

/// The directories files live in: one fd per location while a phase runs; names are relative to it.
///
/// The fds are opened at the start of every phase and closed at its end (outside the timed
/// window): between phases the caller may unmount and mount the filesystem again to empty its
/// caches, which an open directory would make fail with EBUSY.
struct Dirs {
    /// Open only during a phase (empty between phases).
    fds: Vec<RawFd>,
    paths: Vec<PathBuf>,
    /// Locations fsmeter made (removed by delete/cleanup when empty).
    made: Vec<bool>,
    /// PostMark's weighted location index (only with more than one location).
    index: Vec<u16>,
    subdirs: u32,
}

impl Dirs {
    /// Opens every location (again, after a remount: the paths now lead to the new mount).
    fn open_fds(&mut self) -> Result<()> {
        if !self.fds.is_empty() {
            return Ok(());
        }
        for p in &self.paths {
            match open_dir(p) {
                Ok(fd) => self.fds.push(fd),
                Err(e) => {
                    self.close_fds();
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn close_fds(&mut self) {
        for fd in self.fds.drain(..) {
            // SAFETY: we own the fds.
            unsafe { libc::close(fd) };
        }
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        self.close_fds();
    }
}

/// One thread's share of the fileset: its generator, file table and buffers.
struct Worker {
    tid: u64,
    /// PostMark's `simultaneous` for this thread.
    share: usize,
    rng: Mt1999,
    table: Vec<Slot>,
    /// PostMark's `file_allocated`.
    allocated: usize,
    /// Every slot below this is in use (so a scan for a free slot may start here).
    min_free: usize,
    live: u64,
    /// PostMark's `files_created`: the running create number, names the files.
    num: u32,
    source: Vec<u8>,
    read_buf: Vec<u8>,
    sbuf: Vec<u8>,
    sfill: usize,
    path: [u8; 64],
    c: Counts,
}

impl Worker {
    fn empty(tid: usize) -> Self {
        Worker {
            tid: tid as u64,
            share: 0,
            rng: Mt1999::new(0),
            table: Vec::new(),
            allocated: 0,
            min_free: 0,
            live: 0,
            num: 0,
            source: Vec::new(),
            read_buf: Vec::new(),
            sbuf: Vec::new(),
            sfill: 0,
            path: [0; 64],
            c: Counts::default(),
        }
    }

    /// PostMark's `cli_run` start: seed, fill the source buffer, empty table.
    fn reset(&mut self, p: &Params, share: usize, seed: u32) {
        self.share = share;
        self.rng = Mt1999::new(seed);
        let n = (p.high as usize) << 1;
        self.source.clear();
        self.source.reserve_exact(n);
        for _ in 0..n {
            self.source.push(32 + self.rng.rnd(95) as u8);
        }
        self.read_buf = vec![0u8; p.rbs];
        self.sbuf = vec![0u8; p.stdio_buf];
        self.sfill = 0;
        self.table = vec![Slot::default(); share << 1];
        self.table.shrink_to_fit();
        self.allocated = 0;
        self.min_free = 0;
        self.live = 0;
        self.num = 0;
        self.c = Counts::default();
    }

    /// PostMark's `find_free_file`, with a scan that starts at the first slot that
    /// can be free (the same slot as PostMark's scan from 0).
    #[inline]
    fn find_free(&mut self) -> Option<usize> {
        let n = self.table.len();
        if self.allocated < n && self.table[self.allocated].size == 0 {
            let s = self.allocated;
            self.allocated += 1;
            return Some(s);
        }
        let start = self.min_free;
        match self.table[start..].iter().position(|s| s.size == 0) {
            Some(off) => {
                let i = start + off;
                self.min_free = i + 1;
                self.allocated = i + 1;
                Some(i)
            }
            None => {
                self.min_free = n;
                None
            }
        }
    }

    /// PostMark's `find_used_file`: draw slots until one is in use.
    #[inline]
    fn find_used(&mut self) -> Option<usize> {
        if self.live == 0 {
            return None; // PostMark would spin forever; it never gets here.
        }
        let n = self.table.len() as u32;
        loop {
            let i = self.rng.rnd(n) as usize;
            if self.table[i].size != 0 {
                return Some(i);
            }
        }
    }

    /// Builds the slot's name relative to its location into `self.path` (NUL-terminated).
    #[inline]
    fn build_name(&mut self, p: &Params, slot: Slot) -> usize {
        let mut len = 0;
        if p.subdirs > 1 {
            self.path[0] = b's';
            len = 1 + put_u64(&mut self.path[1..], (slot.dir % p.subdirs) as u64);
            self.path[len] = b'/';
            len += 1;
        }
        let name = (slot.num as u64 - 1) * p.nthreads + self.tid + 1;
        len += put_u64(&mut self.path[len..], name);
        self.path[len] = 0;
        len
    }

    #[inline]
    fn open_slot(&mut self, p: &Params, dirs: &Dirs, slot: Slot, flags: i32) -> Result<RawFd> {
        self.build_name(p, slot);
        let dfd = dirs.fds[(slot.dir / p.subdirs.max(1)) as usize];
        // SAFETY: path is NUL-terminated; dfd is an open directory.
        let fd = unsafe { libc::openat(dfd, self.path.as_ptr() as *const libc::c_char, flags | libc::O_CLOEXEC, 0o644) };
        if fd < 0 {
            return Err(self.os_err("open", dirs, slot));
        }
        Ok(fd)
    }

    fn os_err(&self, what: &str, dirs: &Dirs, slot: Slot) -> EngineError {
        let err = std::io::Error::last_os_error();
        EngineError::io(format!("{what} {}", self.display_path(dirs, slot)), err)
    }

    /// The full path of the name last built (for error messages only).
    fn display_path(&self, dirs: &Dirs, slot: Slot) -> String {
        let end = self.path.iter().position(|&b| b == 0).unwrap_or(0);
        let loc = (slot.dir / dirs.subdirs.max(1)) as usize;
        let base = dirs.paths.get(loc).map(|p| p.display().to_string()).unwrap_or_default();
        format!("{base}/{}", String::from_utf8_lossy(&self.path[..end]))
    }

    /// PostMark's `create_file`: slot, name (location, subdirectory), size, then write it.
    /// Returns the bytes written, or None when the table is full.
    #[inline]
    fn create(&mut self, p: &Params, dirs: &Dirs) -> Result<Option<u64>> {
        let Some(i) = self.find_free() else { return Ok(None) };
        let loc = if dirs.index.len() > 1 { dirs.index[self.rng.rnd(dirs.index.len() as u32) as usize] as u32 } else { 0 };
        let sub = if p.subdirs > 1 { self.rng.rnd(p.subdirs) } else { 0 };
        self.num = self.num.checked_add(1).ok_or_else(|| EngineError::invalid("files", "more than 2^32 creates in one thread"))?;
        let size = p.low + self.rng.rnd(p.high - p.low);
        let slot = Slot { size, num: self.num, dir: loc * p.subdirs.max(1) + sub };
        self.table[i] = slot;
        self.live += 1;
        let flags = if p.buffering { libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC } else { libc::O_RDWR | libc::O_CREAT };
        let fd = self.open_slot(p, dirs, slot, flags)?;
        self.write_blocks(p, fd, size as usize).map_err(|e| self.io_ctx(e, "write", dirs, slot))?;
        self.c.bytes_written += size as u64;
        Ok(Some(size as u64))
    }

    /// PostMark's `delete_file`.
    #[inline]
    fn delete(&mut self, p: &Params, dirs: &Dirs, i: usize) -> Result<bool> {
        let slot = self.table[i];
        if slot.size == 0 {
            return Ok(false);
        }
        self.build_name(p, slot);
        let dfd = dirs.fds[(slot.dir / p.subdirs.max(1)) as usize];
        // SAFETY: path is NUL-terminated; dfd is an open directory.
        if unsafe { libc::unlinkat(dfd, self.path.as_ptr() as *const libc::c_char, 0) } != 0 {
            return Err(self.os_err("unlink", dirs, slot));
        }
        self.table[i].size = 0;
        self.live -= 1;
        if i < self.min_free {
            self.min_free = i;
        }
        Ok(true)
    }

    /// PostMark's `read_file`: the whole file in read-block requests.
    #[inline]
    fn read(&mut self, p: &Params, dirs: &Dirs, i: usize) -> Result<u64> {
        let slot = self.table[i];
        let fd = self.open_slot(p, dirs, slot, libc::O_RDONLY)?;
        let res = self.read_blocks(p, fd, slot.size as usize);
        // SAFETY: we own fd.
        unsafe { libc::close(fd) };
        res.map_err(|e| self.io_ctx(e, "read", dirs, slot))?;
        self.c.bytes_read += slot.size as u64;
        self.c.read += 1;
        Ok(slot.size as u64)
    }

    /// PostMark's `append_file`: below size_high, append RND(high - size) + 1 bytes.
    #[inline]
    fn append(&mut self, p: &Params, dirs: &Dirs, i: usize) -> Result<Option<u64>> {
        let slot = self.table[i];
        if slot.size >= p.high {
            return Ok(None);
        }
        let flags = if p.buffering { libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND } else { libc::O_RDWR | libc::O_APPEND };
        let fd = self.open_slot(p, dirs, slot, flags)?;
        let block = self.rng.rnd(p.high - slot.size) + 1;
        self.write_blocks(p, fd, block as usize).map_err(|e| self.io_ctx(e, "append to", dirs, slot))?;
        self.table[i].size += block;
        self.c.bytes_written += block as u64;
        self.c.appended += 1;
        Ok(Some(block as u64))
    }

    fn io_ctx(&self, e: std::io::Error, what: &str, dirs: &Dirs, slot: Slot) -> EngineError {
        EngineError::io(format!("{what} {}", self.display_path(dirs, slot)), e)
    }

    /// `write_blocks` / `fwrite_blocks`: `size` bytes of the source buffer in
    /// write-block pieces, then close. Buffered: through the stdio-like buffer.
    #[inline]
    fn write_blocks(&mut self, p: &Params, fd: RawFd, size: usize) -> std::io::Result<()> {
        let res: std::io::Result<()> = (|| {
            let mut off = 0;
            let mut i = size;
            while i >= p.wbs {
                self.out(p, fd, off, p.wbs)?;
                i -= p.wbs;
                off += p.wbs;
            }
            if i > 0 {
                self.out(p, fd, off, i)?;
            }
            if p.buffering && self.sfill > 0 {
                let n = self.sfill;
                self.sfill = 0;
                write_all(fd, &self.sbuf[..n])?;
            }
            Ok(())
        })();
        self.sfill = 0;
        // SAFETY: we own fd.
        let rc = unsafe { libc::close(fd) };
        res?;
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// One fwrite()/write() of source[off..off+len]. The buffered path follows
    /// glibc's `_IO_new_file_xsputn`: fill the buffer; when data is left over,
    /// flush it, write whole buffer-sized blocks directly, buffer the rest.
    #[inline]
    fn out(&mut self, p: &Params, fd: RawFd, off: usize, len: usize) -> std::io::Result<()> {
        if !p.buffering {
            return write_all(fd, &self.source[off..off + len]);
        }
        let cap = self.sbuf.len();
        let n = (cap - self.sfill).min(len);
        self.sbuf[self.sfill..self.sfill + n].copy_from_slice(&self.source[off..off + n]);
        self.sfill += n;
        let rest = len - n;
        if rest > 0 {
            write_all(fd, &self.sbuf[..self.sfill])?;
            self.sfill = 0;
            let direct = rest - rest % cap;
            let s = off + n;
            if direct > 0 {
                write_all(fd, &self.source[s..s + direct])?;
            }
            let tail = rest - direct;
            self.sbuf[..tail].copy_from_slice(&self.source[s + direct..s + direct + tail]);
            self.sfill = tail;
        }
        Ok(())
    }

    /// `read_file`'s loop: read-block pieces, then the remainder. Buffered: glibc's
    /// `_IO_file_xsgetn` (refill the buffer with one read of its size; requests of
    /// a buffer or more go straight to the caller's memory in whole blocks).
    #[inline]
    fn read_blocks(&mut self, p: &Params, fd: RawFd, size: usize) -> std::io::Result<()> {
        let mut i = size;
        if !p.buffering {
            while i >= p.rbs {
                read_some(fd, &mut self.read_buf[..p.rbs])?;
                i -= p.rbs;
            }
            if i > 0 {
                read_some(fd, &mut self.read_buf[..i])?;
            }
            return Ok(());
        }
        let cap = self.sbuf.len();
        let (mut pos, mut end) = (0usize, 0usize);
        let mut fread = |want_total: usize, sbuf: &mut [u8], dst: &mut [u8]| -> std::io::Result<()> {
            let mut want = want_total;
            let mut d = 0;
            while want > 0 {
                let have = end - pos;
                if want <= have {
                    dst[d..d + want].copy_from_slice(&sbuf[pos..pos + want]);
                    pos += want;
                    return Ok(());
                }
                if have > 0 {
                    dst[d..d + have].copy_from_slice(&sbuf[pos..end]);
                    d += have;
                    want -= have;
                    pos = end;
                }
                if want < cap {
                    let n = read_some(fd, sbuf)?;
                    if n == 0 {
                        return Ok(()); // EOF
                    }
                    pos = 0;
                    end = n;
                } else {
                    let count = if cap >= 128 { want - want % cap } else { want };
                    let n = read_some(fd, &mut dst[d..d + count])?;
                    if n == 0 {
                        return Ok(());
                    }
                    d += n;
                    want -= n;
                }
            }
            Ok(())
        };
        let rbs = p.rbs;
        while i >= rbs {
            fread(rbs, &mut self.sbuf, &mut self.read_buf[..rbs])?;
            i -= rbs;
        }
        if i > 0 {
            fread(i, &mut self.sbuf, &mut self.read_buf[..i])?;
        }
        Ok(())
    }
}

fn write_all(fd: RawFd, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::write(fd, buf.as_ptr() as *const libc::c_void, buf.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::WriteZero, "write returned 0"));
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

fn read_some(fd: RawFd, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Decimal digits of v into out; returns their count.
#[inline]
fn put_u64(out: &mut [u8], mut v: u64) -> usize {
    let mut tmp = [0u8; 20];
    let mut n = 0;
    loop {
        tmp[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for k in 0..n {
        out[k] = tmp[n - 1 - k];
    }
    n
}

/// Thread t's seed: thread 0 takes the job's seed itself (so one thread is PostMark).
fn thread_seed(seed: u64, tid: usize) -> u32 {
    if tid == 0 {
        return seed as u32;
    }
    let mut z = seed ^ (tid as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as u32
}

/// `total` split over threads, the remainder to the first ones.
fn share_of(total: u64, nthreads: usize, tid: usize) -> u64 {
    let n = nthreads as u64;
    total / n + ((tid as u64) < total % n) as u64
}

pub struct Fileset {
    spec: FilesetSpec,
    params: Params,
    workers: Vec<Mutex<Worker>>,
    dirs: Option<Dirs>,
    /// The create phase ran and the fileset has not been deleted since (it may be out of files).
    created: bool,
}

fn cpath(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| EngineError::invalid("dir", format!("{} contains a NUL byte", p.display())))
}

fn open_dir(p: &Path) -> Result<RawFd> {
    let c = cpath(p)?;
    // SAFETY: c is a valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(EngineError::last_os(format!("open directory {}", p.display())));
    }
    Ok(fd)
}

impl Fileset {
    pub fn new(job: &Job, spec: FilesetSpec) -> Result<Fileset> {
        spec.validate(job)?;
        let params = Params {
            low: spec.size_low,
            high: spec.size_high,
            rbs: spec.read_block as usize,
            wbs: spec.write_block as usize,
            subdirs: spec.subdirectories,
            bias_read: spec.bias_read,
            bias_create: spec.bias_create,
            scale: spec.bias_scale() as u32,
            buffering: spec.buffering,
            stdio_buf: 4096,
            nthreads: job.threads as u64,
        };
        let workers = (0..job.threads).map(|t| Mutex::new(Worker::empty(t))).collect();
        Ok(Fileset { spec, params, workers, dirs: None, created: false })
    }

    fn lock(&self, tid: usize) -> MutexGuard<'_, Worker> {
        self.workers[tid].lock().unwrap_or_else(|p| p.into_inner())
    }

    fn totals(&self) -> Counts {
        let mut c = Counts::default();
        for t in 0..self.workers.len() {
            c.add(&self.lock(t).c);
        }
        c
    }

    fn live(&self) -> u64 {
        (0..self.workers.len()).map(|t| self.lock(t).live).sum()
    }

    /// Opens (creating where needed) the locations and their subdirectories.
    fn setup_dirs(&mut self, job: &Job) -> Result<()> {
        if let Some(dirs) = self.dirs.as_mut() {
            return dirs.open_fds();
        }
        let mut dirs = Dirs { fds: Vec::new(), paths: Vec::new(), made: Vec::new(), index: Vec::new(), subdirs: self.spec.subdirectories };
        if self.spec.locations.is_empty() {
            dirs.paths.push(job.dir.clone());
            dirs.made.push(false);
        }
        for l in &self.spec.locations {
            let p = Path::new(&l.path);
            let full = if p.is_absolute() { p.to_path_buf() } else { job.dir.join(p) };
            let made = if full.is_dir() {
                false
            } else if p.is_absolute() {
                return Err(EngineError::invalid("locations", format!("{} is not an existing directory", full.display())));
            } else {
                std::fs::create_dir_all(&full).map_err(|e| EngineError::io(format!("mkdir {}", full.display()), e))?;
                true
            };
            dirs.paths.push(full);
            dirs.made.push(made);
        }
        if self.spec.locations.len() > 1 {
            for (i, l) in self.spec.locations.iter().enumerate() {
                dirs.index.extend(std::iter::repeat(i as u16).take(l.weight as usize));
            }
        }
        dirs.open_fds()?;
        // glibc sizes a FILE's buffer by st_blksize.
        // SAFETY: fstat fills the struct we pass.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(dirs.fds[0], &mut st) } == 0 && st.st_blksize > 0 {
            self.params.stdio_buf = (st.st_blksize as usize).clamp(512, 1 << 20);
        }
        self.dirs = Some(dirs);
        Ok(())
    }

    fn make_subdirs(&self) -> Result<()> {
        let dirs = self.dirs.as_ref().expect("dirs set up");
        if self.spec.subdirectories <= 1 {
            return Ok(());
        }
        for (fd, path) in dirs.fds.iter().zip(&dirs.paths) {
            for k in 0..self.spec.subdirectories {
                let name = CString::new(format!("s{k}")).unwrap();
                // SAFETY: name is a C string, fd an open directory.
                if unsafe { libc::mkdirat(*fd, name.as_ptr(), 0o700) } != 0 {
                    let e = std::io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(EngineError::io(format!("mkdir {}/s{k}", path.display()), e));
                    }
                }
            }
        }
        Ok(())
    }

    /// Removes the subdirectories and the locations fsmeter made (when empty), and closes them.
    fn remove_dirs(&mut self) -> Result<()> {
        let Some(dirs) = self.dirs.take() else { return Ok(()) };
        if self.spec.subdirectories > 1 {
            for (fd, path) in dirs.fds.iter().zip(&dirs.paths) {
                for k in 0..self.spec.subdirectories {
                    let name = CString::new(format!("s{k}")).unwrap();
                    // SAFETY: as above.
                    if unsafe { libc::unlinkat(*fd, name.as_ptr(), libc::AT_REMOVEDIR) } != 0 {
                        let e = std::io::Error::last_os_error();
                        if e.raw_os_error() != Some(libc::ENOENT) {
                            return Err(EngineError::io(format!("rmdir {}/s{k}", path.display()), e));
                        }
                    }
                }
            }
        }
        let made: Vec<PathBuf> = dirs.paths.iter().zip(&dirs.made).filter(|(_, &m)| m).map(|(p, _)| p.clone()).collect();
        drop(dirs);
        for p in made {
            let _ = std::fs::remove_dir(&p);
        }
        Ok(())
    }

    fn create(&mut self, job: &Job, ctl: &Control) -> Result<PhaseReport> {
        if self.live() > 0 {
            return Err(EngineError::invalid("phase", "the fileset exists already: run delete or cleanup before create"));
        }
        self.setup_dirs(job)?;
        self.make_subdirs()?;
        let nthreads = job.threads;
        let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
        let p = self.params;
        let this = &*self;
        let dirs = this.dirs.as_ref().expect("dirs set up");
        let (mut report, _) = run_threads(
            "create",
            nthreads,
            timing,
            ctl,
            KINDS,
            3,
            this.spec.files,
            |tid| {
                let mut w = this.lock(tid);
                w.reset(&p, share_of(this.spec.files, nthreads, tid) as usize, thread_seed(job.seed, tid));
                Ok(w)
            },
            |w, rec| {
                for _ in 0..w.share {
                    if rec.interrupted() {
                        break;
                    }
                    let t0 = now_ns();
                    if let Some(bytes) = w.create(&p, dirs)? {
                        w.c.created_alone += 1;
                        rec.record(CREATE, bytes, t0, now_ns());
                    }
                }
                Ok(())
            },
        )?;
        self.created = true;
        self.finish(&mut report, Counts::default(), job);
        Ok(report)
    }

    fn transactions(&mut self, job: &Job, ctl: &Control) -> Result<PhaseReport> {
        if self.dirs.is_none() || !self.created {
            return Err(EngineError::invalid("phase", "no fileset: run the create phase before transactions"));
        }
        self.dirs.as_mut().expect("checked").open_fds()?;
        let before = self.totals();
        let nthreads = job.threads;
        let timing = PhaseTiming {
            warmup_ns: secs_to_ns("warmup_s", self.spec.warmup_s)?,
            duration_ns: self.spec.duration_s.map(|d| (d * 1e9) as u64),
            interval_ns: job.interval_ns(),
        };
        let p = self.params;
        let this = &*self;
        let dirs = this.dirs.as_ref().expect("dirs set up");
        let work_total = if this.spec.duration_s.is_none() { this.spec.transactions.unwrap_or(0) } else { 0 };
        let (mut report, _) = run_threads(
            "transactions",
            nthreads,
            timing,
            ctl,
            KINDS,
            3,
            work_total,
            |tid| Ok(this.lock(tid)),
            |w, rec| {
                let quota = this.spec.transactions.map(|t| share_of(t, nthreads, rec.tid)).unwrap_or(u64::MAX);
                transaction_loop(w, rec, &p, dirs, quota)
            },
        )?;
        let delta = self.totals().sub(&before);
        if delta.out_of_files > 0 {
            report.warnings.push(format!(
                "out of files in {} thread(s): the transactions deleted every file before the end (PostMark stops there too): \
                 use more files, fewer transactions or a higher bias_create",
                delta.out_of_files
            ));
        }
        self.finish(&mut report, before, job);
        Ok(report)
    }

    fn delete(&mut self, job: &Job, ctl: &Control) -> Result<PhaseReport> {
        if self.dirs.is_none() {
            return Err(EngineError::invalid("phase", "no fileset: run the create phase before delete"));
        }
        self.dirs.as_mut().expect("checked").open_fds()?;
        let before = self.totals();
        let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
        let p = self.params;
        let this = &*self;
        let dirs = this.dirs.as_ref().expect("dirs set up");
        let (mut report, _) = run_threads(
            "delete",
            job.threads,
            timing,
            ctl,
            KINDS,
            3,
            this.live(),
            |tid| Ok(this.lock(tid)),
            |w, rec| {
                for i in 0..w.table.len() {
                    if rec.interrupted() {
                        break;
                    }
                    let t0 = now_ns();
                    if w.delete(&p, dirs, i)? {
                        w.c.deleted_alone += 1;
                        rec.record(DELETE, 0, t0, now_ns());
                    }
                }
                Ok(())
            },
        )?;
        if !report.interrupted && self.live() == 0 {
            self.created = false;
            self.release_tables();
            self.remove_dirs()?;
        }
        self.finish(&mut report, before, job);
        Ok(report)
    }

    /// Frees the file tables (the counts stay for the report).
    fn release_tables(&self) {
        for t in 0..self.workers.len() {
            let mut w = self.lock(t);
            w.table = Vec::new();
        }
    }

    /// Removes whatever files are left (no timing), then the directories fsmeter made.
    fn cleanup(&mut self, _job: &Job) -> Result<PhaseReport> {
        let mut removed = 0u64;
        let mut report = PhaseReport::new("cleanup");
        if let Some(dirs) = self.dirs.as_mut() {
            if let Err(e) = dirs.open_fds() {
                match &e {
                    // The locations are gone (removed, or the filesystem is no longer there): so are the files.
                    EngineError::Io { source, .. } if source.raw_os_error() == Some(libc::ENOENT) => {
                        report.warnings.push(format!("cleanup: {e}: nothing left to remove there"));
                        self.dirs = None;
                    }
                    _ => return Err(e),
                }
            }
        }
        if let Some(dirs) = self.dirs.as_ref() {
            let p = self.params;
            for t in 0..self.workers.len() {
                let mut w = self.lock(t);
                for i in 0..w.table.len() {
                    match w.delete(&p, dirs, i) {
                        Ok(true) => removed += 1,
                        Ok(false) => {}
                        Err(EngineError::Io { source, .. }) if source.raw_os_error() == Some(libc::ENOENT) => {
                            w.table[i].size = 0;
                            w.live -= 1;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        self.created = false;
        self.release_tables();
        self.remove_dirs()?;
        report.counters.insert("files_removed".into(), removed);
        Ok(report)
    }

    /// Counters (this phase's), rates over the measured window, and the running totals.
    fn finish(&self, report: &mut PhaseReport, before: Counts, job: &Job) {
        let total = self.totals();
        let d = total.sub(&before);
        d.put(report);
        report.counters.insert("elapsed_us".into(), (report.elapsed_s * 1e6).round() as u64);
        let el = report.elapsed_s;
        let rate = |x: u64| if el > 0.0 { x as f64 / el } else { 0.0 };
        let op = |k: &str| report.ops.get(k).map(|o| (o.count, o.bytes)).unwrap_or((0, 0));
        let (created, wb_c) = op("create");
        let (read, rb) = op("read");
        let (appended, wb_a) = op("append");
        let (deleted, _) = op("delete");
        report.extra = serde_json::json!({
            "mode": match self.spec.mode { FilesetMode::Postmark => "postmark", FilesetMode::Filemark => "filemark" },
            "rates": {
                "transactions_per_s": rate(d.transactions_measured),
                "files_created_per_s": rate(created),
                "files_read_per_s": rate(read),
                "files_appended_per_s": rate(appended),
                "files_deleted_per_s": rate(deleted),
                "bytes_read_per_s": rate(rb),
                "bytes_written_per_s": rate(wb_c + wb_a),
            },
            "run_totals": total.json(),
            "files_live": self.live(),
            "threads": job.threads,
            "stdio_buffer_bytes": if self.spec.buffering { self.params.stdio_buf } else { 0 },
        });
    }
}

/// The transactions of one thread, until its quota, the deadline, a stop, or no file is left.
fn transaction_loop(w: &mut Worker, rec: &mut Recorder, p: &Params, dirs: &Dirs, quota: u64) -> Result<()> {
    let mut done = 0u64;
    while done < quota {
        if w.live == 0 {
            w.c.out_of_files += 1;
            break;
        }
        let t_start = now_ns();
        if rec.should_stop(t_start) {
            break;
        }
        let mut t0 = t_start;
        if p.bias_read != -1 {
            let read = (w.rng.rnd(p.scale) as i64) < p.bias_read as i64;
            let slot = w.find_used().expect("a live file");
            if read {
                let bytes = w.read(p, dirs, slot)?;
                let t1 = now_ns();
                rec.record(READ, bytes, t0, t1);
                t0 = t1;
            } else if let Some(bytes) = w.append(p, dirs, slot)? {
                let t1 = now_ns();
                rec.record(APPEND, bytes, t0, t1);
                t0 = t1;
            }
        }
        if p.bias_create != -1 {
            if (w.rng.rnd(p.scale) as i64) < p.bias_create as i64 {
                if let Some(bytes) = w.create(p, dirs)? {
                    w.c.created_mixed += 1;
                    rec.record(CREATE, bytes, t0, now_ns());
                }
            } else if let Some(slot) = w.find_used() {
                if w.delete(p, dirs, slot)? {
                    w.c.deleted_mixed += 1;
                    rec.record(DELETE, 0, t0, now_ns());
                }
            }
        }
        done += 1;
        w.c.transactions += 1;
        rec.count_unit(t_start);
        if rec.measuring(t_start) {
            w.c.transactions_measured += 1;
        }
    }
    Ok(())
}

impl Workload for Fileset {
    fn phases(&self) -> &'static [&'static str] {
        &["create", "transactions", "delete", "cleanup"]
    }

    fn run_phase(&mut self, phase: &str, job: &Job, ctl: &Control) -> Result<PhaseReport> {
        let out = match phase {
            "create" => self.create(job, ctl),
            "transactions" => self.transactions(job, ctl),
            "delete" => self.delete(job, ctl),
            "cleanup" => self.cleanup(job),
            _ => unreachable!("checked by Session"),
        };
        // Nothing of the filesystem stays open between phases, so that it can be remounted.
        if let Some(dirs) = self.dirs.as_mut() {
            dirs.close_fds();
        }
        out
    }
}

impl Drop for Fileset {
    fn drop(&mut self) {
        // Leave the files (Python runs cleanup unless asked to keep them); just close the fds.
        self.dirs.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by the reference C code (PostMark 1.53's genrand/sgenrand).
    #[test]
    fn mt1999_matches_the_reference_code() {
        let cases: &[(u32, [(usize, u32); 8])] = &[
            (42, [(0, 4179544424), (1, 615236124), (2, 4165290828), (3, 3119652344), (4, 1623863471), (623, 1304686307), (624, 299826205), (699, 2696806688)]),
            (1, [(0, 3556162021), (1, 4012392791), (2, 221657543), (3, 586320575), (4, 3355844478), (623, 2524562135), (624, 2383753642), (699, 3708494968)]),
            (7, [(0, 22671274), (1, 109824311), (2, 1824471040), (3, 3737574225), (4, 423047516), (623, 3006350221), (624, 492961104), (699, 2805311339)]),
            (123456789, [(0, 2363614702), (1, 2507124434), (2, 646205460), (3, 1158682820), (4, 1964210241), (623, 378076533), (624, 1189515199), (699, 1386885185)]),
        ];
        for (seed, expect) in cases {
            let mut r = Mt1999::new(*seed);
            let got: Vec<u32> = (0..700).map(|_| r.genrand()).collect();
            for (i, v) in expect {
                assert_eq!(got[*i], *v, "seed {seed} draw {i}");
            }
        }
    }

    #[test]
    fn rnd_of_zero_draws_nothing() {
        let mut a = Mt1999::new(42);
        let mut b = Mt1999::new(42);
        assert_eq!(a.rnd(0), 0);
        assert_eq!(a.genrand(), b.genrand());
    }

    #[test]
    fn names_are_decimal() {
        let mut buf = [0u8; 24];
        let n = put_u64(&mut buf, 0);
        assert_eq!(&buf[..n], b"0");
        let n = put_u64(&mut buf, 18446744073709551615);
        assert_eq!(&buf[..n], b"18446744073709551615");
    }

    #[test]
    fn free_slot_search_matches_postmark() {
        // PostMark's find_free_file, literally, against the hinted version.
        fn reference(table: &[u32], allocated: &mut usize) -> Option<usize> {
            if *allocated < table.len() && table[*allocated] == 0 {
                *allocated += 1;
                return Some(*allocated - 1);
            }
            for i in 0..table.len() {
                if table[i] == 0 {
                    *allocated = i + 1;
                    return Some(i);
                }
            }
            None
        }
        let mut w = Worker::empty(0);
        w.table = vec![Slot::default(); 64];
        let mut ref_table = vec![0u32; 64];
        let mut ref_alloc = 0usize;
        let mut rng = Mt1999::new(3);
        for _ in 0..20_000 {
            if rng.rnd(2) == 0 {
                let a = w.find_free();
                let b = reference(&ref_table, &mut ref_alloc);
                assert_eq!(a, b);
                if let Some(i) = a {
                    w.table[i].size = 1;
                    ref_table[i] = 1;
                    w.live += 1;
                }
            } else {
                let i = rng.rnd(64) as usize;
                if w.table[i].size != 0 {
                    w.table[i].size = 0;
                    w.live -= 1;
                    w.min_free = w.min_free.min(i);
                    ref_table[i] = 0;
                }
            }
        }
    }
}
