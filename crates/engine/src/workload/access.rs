//! The access family (pgmeter / Iometer / fio class): a weighted mix of request
//! sizes, each with its own read and random percentages, over files laid out
//! before measuring.
//!
//! Phases: `prepare` lays the files out (timed, reported as writes), `run`
//! measures the mix, `cleanup` removes the files.
//!
//! Sequential requests of thread t walk its own 1/T share of the data set (the
//! files seen as one concatenated space), wrapping at the end of the share, so
//! one thread reading `total_bytes` = the data set reads every byte once.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::backend::buffer::AlignedBuf;
use crate::backend::dio::{self, DioAlign};
use crate::backend::fault::{FaultBackend, FaultSpec, Injected};
use crate::backend::null::NullBackend;
use crate::backend::psync::PsyncBackend;
use crate::backend::uring::UringBackend;
use crate::backend::{BackendKind, FileTable, IoBackend, IoReq};
use crate::error::{EngineError, Result};
use crate::job::{secs_to_ns, Job};
use crate::measure::{now_ns, run_threads, Control, PhaseTiming, Recorder};
use crate::report::PhaseReport;
use crate::verify::{self, Checker, Checksum, Ledger};
use crate::workload::Workload;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AccessEntry {
    /// Request size in bytes.
    pub size: u32,
    /// Share of requests, in percent (entries are normalised to their sum).
    pub weight: f64,
    pub read_pct: f64,
    pub random_pct: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessSpec {
    pub entries: Vec<AccessEntry>,
    /// Offsets of requests are multiples of this.
    #[serde(default = "default_alignment")]
    pub alignment: u64,
    #[serde(default = "default_one")]
    pub file_count: u32,
    pub file_size: u64,
    /// Requests in flight per thread (io_uring; psync is 1).
    #[serde(default = "default_one")]
    pub queue_depth: u32,
    /// O_DIRECT: bypass the page cache.
    #[serde(default)]
    pub direct: bool,
    /// fsync the file after every N writes (0: never).
    #[serde(default)]
    pub fsync_every: u64,
    /// fsync every file at the end of the run, inside the measured time.
    #[serde(default)]
    pub fsync_end: bool,
    #[serde(default)]
    pub warmup_s: f64,
    /// Stop after this many measured seconds ...
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// ... or after this many measured bytes, whichever comes first.
    #[serde(default)]
    pub total_bytes: Option<u64>,
    #[serde(default = "default_prefix")]
    pub file_prefix: String,
    /// Keep files that already exist with the right size instead of rewriting them.
    #[serde(default)]
    pub reuse_files: bool,
    /// fio job files: explicit file names (relative to `dir`), one per file, instead of `<prefix>.<i>`.
    #[serde(default)]
    pub file_names: Vec<String>,
    /// fio's `offset`: every request lands in [offset, offset + file_size) of its file.
    #[serde(default)]
    pub offset: u64,
    /// fio's per-job files: thread t works only on its own file_count / threads files.
    #[serde(default)]
    pub thread_files: bool,
    /// fio's random map: random requests visit each request-sized block of the thread's files once per
    /// pass (without replacement). One request size only, offsets aligned to it.
    #[serde(default)]
    pub random_map: bool,
    /// With `direct`, run requests the filesystem cannot do directly (not
    /// multiples of its O_DIRECT alignment) instead of refusing them; the kernel
    /// may then serve them through the page cache, and the report says so.
    #[serde(default)]
    pub allow_unaligned_direct: bool,
    /// Verify data (docs/verify.md): every block written carries a header and a
    /// checksum of this kind, reads check them, the `verify` phase re-reads everything.
    #[serde(default)]
    pub verify: Option<Checksum>,
    /// Bytes per verified block (one header each); 0: the smallest request size.
    #[serde(default)]
    pub verify_block: u32,
    /// Testing verification: make chosen writes torn, short, lost or misdirected (psync only).
    #[serde(default)]
    pub fault: Option<FaultSpec>,
}

fn default_alignment() -> u64 {
    512
}
fn default_one<T: From<u8>>() -> T {
    T::from(1u8)
}
fn default_prefix() -> String {
    "fsmeter.access".to_string()
}

const KINDS: &[&str] = &["read", "write", "fsync"];
const READ: usize = 0;
const WRITE: usize = 1;
const FSYNC: usize = 2;
/// Op kinds that move no data: counted apart, left out of the headline totals.
const NOT_DATA: &[&str] = &["fsync"];
/// Alignment of every request buffer (AlignedBuf): enough for O_DIRECT on any Linux filesystem here.
const BUF_ALIGN: u64 = 4096;
/// Layout writes in 1 MiB requests.
const LAYOUT_CHUNK: u64 = 1 << 20;

impl AccessSpec {
    pub fn validate(&self, job: &Job) -> Result<()> {

        if self.entries.is_empty() {
            return Err(EngineError::invalid("entries", "at least one {size, weight, read_pct, random_pct} entry is needed"));
        }
        for (i, e) in self.entries.iter().enumerate() {
            let f = |name: &str| format!("entries[{i}].{name}");
            if e.size == 0 {
                return Err(EngineError::invalid(f("size"), "must be > 0 bytes"));
            }
            if e.size as u64 > self.file_size {
                return Err(EngineError::invalid(f("size"), format!("{} bytes is larger than file_size ({} bytes)", e.size, self.file_size)));
            }
            if !(e.weight >= 0.0 && e.weight.is_finite()) {
                return Err(EngineError::invalid(f("weight"), "must be a percentage >= 0"));
            }
            for (name, v) in [("read_pct", e.read_pct), ("random_pct", e.random_pct)] {
                if !(0.0..=100.0).contains(&v) {
                    return Err(EngineError::invalid(f(name), "must be between 0 and 100"));
                }
            }
        }
        if self.entries.iter().map(|e| e.weight).sum::<f64>() <= 0.0 {
            return Err(EngineError::invalid("entries", "the weights must add up to more than 0"));
        }
        if self.alignment == 0 {
            return Err(EngineError::invalid("alignment", "must be >= 1 byte"));
        }
        if self.file_count == 0 {
            return Err(EngineError::invalid("file_count", "must be >= 1"));
        }
        if self.queue_depth == 0 || self.queue_depth > 4096 {
            return Err(EngineError::invalid("queue_depth", "must be between 1 and 4096"));
        }
        if self.queue_depth > 1 && job.backend == BackendKind::Psync {
            return Err(EngineError::invalid("queue_depth", "psync keeps one request in flight per thread; use backend=io_uring for queue_depth > 1"));
        }
        secs_to_ns("warmup_s", self.warmup_s)?;
        if let Some(d) = self.duration_s {
            if secs_to_ns("duration_s", d)? == 0 {
                return Err(EngineError::invalid("duration_s", "must be > 0"));
            }
        }
        if self.duration_s.is_none() && self.total_bytes.is_none() {
            return Err(EngineError::invalid("duration_s", "give duration_s or total_bytes (or both: whichever comes first)"));
        }
        if self.total_bytes == Some(0) {
            return Err(EngineError::invalid("total_bytes", "must be > 0"));
        }
        if self.direct && !self.allow_unaligned_direct {
            // No device does O_DIRECT below 512 bytes; the filesystem's own figure is checked at open.
            self.check_direct_alignment(&DioAlign { offset: 512, mem: 512, source: "the smallest device sector" })?;
        }
        if self.file_prefix.is_empty() || self.file_prefix.contains('/') {
            return Err(EngineError::invalid("file_prefix", "must be a plain file name prefix without '/'"));
        }
        self.validate_fio_layout(job)
    }

    /// The fields fio job files need: explicit names, a region offset, per-thread files.
    fn validate_fio_layout(&self, job: &Job) -> Result<()> {
        if !self.file_names.is_empty() {
            if self.file_names.len() != self.file_count as usize {
                return Err(EngineError::invalid("file_names", format!("{} names for file_count = {}", self.file_names.len(), self.file_count)));
            }
            for n in &self.file_names {
                if n.is_empty() || n.starts_with('/') || n.split('/').any(|c| c == ".." || c.is_empty()) {
                    return Err(EngineError::invalid("file_names", format!("{n:?}: give a relative path inside dir, without '..'")));
                }
            }
        }
        if self.offset % self.alignment != 0 {
            return Err(EngineError::invalid("offset", format!("{} is not a multiple of alignment ({})", self.offset, self.alignment)));
        }
        if self.random_map {
            let size = self.entries[0].size as u64;
            if self.entries.iter().any(|e| e.size as u64 != size) || self.alignment != size {
                return Err(EngineError::invalid("random_map", "needs one request size and alignment equal to it"));
            }
        }
        if self.thread_files && self.file_count as usize % job.threads != 0 {
            return Err(EngineError::invalid("thread_files", format!("file_count ({}) must be a multiple of threads ({})", self.file_count, job.threads)));
        }
        if let Some(f) = &self.fault {
            f.validate()?;
            if job.backend != BackendKind::Psync {
                return Err(EngineError::invalid("fault", "fault injection wraps the psync backend: use backend = \"psync\""));
            }
        }
        self.validate_verify(job)
    }

    /// Bytes per verified block: `verify_block`, or the smallest request size.
    pub fn verify_block(&self) -> u64 {
        match self.verify_block {
            0 => self.entries.iter().map(|e| e.size as u64).min().unwrap_or(4096),
            b => b as u64,
        }
    }

    /// With verify, every request covers whole blocks of a fixed grid (one header each).
    fn validate_verify(&self, job: &Job) -> Result<()> {
        if self.verify.is_none() {
            return Ok(());
        }
        let b = self.verify_block();
        if b < verify::MIN_BLOCK as u64 {
            return Err(EngineError::invalid("verify_block", format!("{b} bytes: a verified block holds an {}-byte header and data: use >= {} bytes", verify::HEADER_LEN, verify::MIN_BLOCK)));
        }
        for (i, e) in self.entries.iter().enumerate() {
            if e.size as u64 % b != 0 {
                return Err(EngineError::invalid(format!("entries[{i}].size"), format!("{} bytes: with verify, every request size must be a multiple of the verify block ({b} bytes)", e.size)));
            }
        }
        for (name, v) in [("alignment", self.alignment), ("file_size", self.file_size), ("offset", self.offset)] {
            if v % b != 0 {
                return Err(EngineError::invalid(name, format!("{v} bytes: with verify, it must be a multiple of the verify block ({b} bytes) so every request covers whole blocks: set {name} = a multiple of {b}")));
            }
        }
        if job.backend == BackendKind::Null {
            return Err(EngineError::invalid("verify", "the null backend moves no data, so there is nothing to verify: use backend = psync or io_uring"));
        }
        if self.reuse_files {
            return Err(EngineError::invalid("reuse_files", "cannot be combined with verify: the files must be laid out with verification headers"));
        }
        Ok(())
    }

    /// O_DIRECT is direct only for requests whose length and file offset are
    /// multiples of the filesystem's alignment: every size, and `alignment` when
    /// some requests are random (sequential offsets are sums of sizes from a
    /// share start aligned to the same figure, see `AccessGen::with_share_align`).
    pub fn check_direct_alignment(&self, a: &DioAlign) -> Result<()> {
        let al = a.offset;
        let fix = |what: &str| {
            format!(
                "O_DIRECT on this filesystem is direct only for {what} in multiples of {al} bytes ({}); smaller or \
                 unaligned requests may be served through the page cache: use multiples of {al} (the *-4k workloads), \
                 direct=false, or allow_unaligned_direct=true to measure them anyway",
                a.source
            )
        };
        for (i, e) in self.entries.iter().enumerate() {
            if e.size as u64 % al != 0 {
                return Err(EngineError::invalid(format!("entries[{i}].size"), format!("{} bytes: {}", e.size, fix("request sizes"))));
            }
        }
        if self.entries.iter().any(|e| e.random_pct > 0.0) && self.alignment % al != 0 {
            return Err(EngineError::invalid("alignment", format!("{} bytes: {}", self.alignment, fix("random offsets"))));
        }
        Ok(())
    }

    fn max_size(&self) -> usize {
        self.entries.iter().map(|e| e.size as usize).max().unwrap_or(0)
    }
}

/// Lemire's multiply-shift: a uniform integer in [0, n) without division.
#[inline(always)]
fn below(x: u64, n: u64) -> u64 {
    ((x as u128 * n as u128) >> 64) as u64
}

/// Scales a percentage to a threshold on a 32-bit draw.
fn pct_threshold(pct: f64) -> u64 {
    ((pct / 100.0) * (1u64 << 32) as f64).round() as u64
}

/// One generated request: where it goes, which mix entry it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenOp {
    pub req: IoReq,
    pub entry: usize,
    pub random: bool,
}

/// Generates the request sequence of one thread. Pure: no system calls, so the
/// sequence for a seed is testable and reproducible.
pub struct AccessGen {
    rng: Xoshiro256PlusPlus,
    cum: Vec<u64>,
    sizes: Vec<u32>,
    read_thr: Vec<u64>,
    rand_thr: Vec<u64>,
    file_count: u64,
    file_size: u64,
    align: u64,
    /// First file of this thread's random draws (thread_files), and the region offset inside files.
    file_lo: u64,
    base: u64,
    perm: Option<BlockPerm>,
    seq_lo: u64,
    seq_hi: u64,
    seq_pos: u64,
}

impl AccessGen {
    pub fn new(spec: &AccessSpec, seed: u64, tid: usize, nthreads: usize) -> Self {
        Self::with_share_align(spec, seed, tid, nthreads, spec.alignment)
    }

    /// As `new`, with each thread's sequential share starting at a multiple of
    /// `share_align` (a multiple of `alignment`; O_DIRECT asks for the filesystem's figure).
    pub fn with_share_align(spec: &AccessSpec, seed: u64, tid: usize, nthreads: usize, share_align: u64) -> Self {
        let total_w: f64 = spec.entries.iter().map(|e| e.weight).sum();
        let mut acc = 0.0;
        let mut cum: Vec<u64> = spec
            .entries
            .iter()
            .map(|e| {
                acc += e.weight;
                pct_threshold(100.0 * acc / total_w)
            })
            .collect();
        *cum.last_mut().unwrap() = 1u64 << 32;
        let total = spec.file_count as u64 * spec.file_size;
        let share_align = share_align.max(1);
        let share = (total / nthreads as u64) / share_align * share_align;
        let per_thread = spec.file_count as u64 / nthreads as u64;
        let (lo, hi) = if spec.thread_files {
            (tid as u64 * per_thread * spec.file_size, (tid as u64 + 1) * per_thread * spec.file_size)
        } else if share >= spec.max_size() as u64 && share > 0 {
            let lo = tid as u64 * share;
            (lo, if tid + 1 == nthreads { total } else { lo + share })
        } else {
            (0, total)
        };
        // Per-thread streams: the seed mixed with the thread id (SplitMix64 finaliser).
        let mut z = seed ^ (tid as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        AccessGen {
            rng: Xoshiro256PlusPlus::seed_from_u64(z ^ (z >> 31)),
            cum,
            sizes: spec.entries.iter().map(|e| e.size).collect(),
            read_thr: spec.entries.iter().map(|e| pct_threshold(e.read_pct)).collect(),
            rand_thr: spec.entries.iter().map(|e| pct_threshold(e.random_pct)).collect(),
            file_count: if spec.thread_files { per_thread } else { spec.file_count as u64 },
            file_size: spec.file_size,
            align: spec.alignment,
            file_lo: if spec.thread_files { tid as u64 * per_thread } else { 0 },
            base: spec.offset,
            perm: spec.random_map.then(|| {
                let files = if spec.thread_files { per_thread } else { spec.file_count as u64 };
                BlockPerm::new(files * (spec.file_size / spec.alignment), z)
            }),
            seq_lo: lo,
            seq_hi: hi,
            seq_pos: lo,
        }
    }

    /// A draw that decides a yes/no with probability thr / 2^32; no draw is
    /// spent when the answer is fixed (0% or 100%), which keeps the common
    /// single-entry specs cheap without changing what they generate.
    #[inline(always)]
    fn chance(&mut self, thr: u64) -> bool {
        match thr {
            0 => false,
            t if t >= 1 << 32 => true,
            t => (self.rng.next_u32() as u64) < t,
        }
    }

    #[inline]
    pub fn next_op(&mut self) -> GenOp {
        let mut entry = 0;
        if self.cum.len() > 1 {
            let r = self.rng.next_u32() as u64;
            while r >= self.cum[entry] {
                entry += 1;
            }
        }
        let len = self.sizes[entry];
        let write = !self.chance(self.read_thr[entry]);
        let random = self.chance(self.rand_thr[entry]);
        let (file, offset) = if random && self.perm.is_some() {
            let per_file = self.file_size / self.align;
            let b = self.perm.as_mut().map_or(0, |p| p.next());
            (self.file_lo + b / per_file, (b % per_file) * self.align)
        } else if random {
            let file = if self.file_count > 1 { below(self.rng.next_u64(), self.file_count) } else { 0 };
            let slots = (self.file_size - len as u64) / self.align + 1;
            (self.file_lo + file, below(self.rng.next_u64(), slots) * self.align)
        } else {
            self.next_sequential(len as u64)
        };
        GenOp { req: IoReq { file: file as u32, offset: offset + self.base, len, write }, entry, random }
    }

    #[inline]
    fn next_sequential(&mut self, len: u64) -> (u64, u64) {
        let fs = self.file_size;
        for _ in 0..4 {
            if self.seq_pos + len > self.seq_hi {
                self.seq_pos = self.seq_lo;
            }
            let (file, off) = (self.seq_pos / fs, self.seq_pos % fs);
            if off + len <= fs {
                self.seq_pos += len;
                return (file, off);
            }
            self.seq_pos = (file + 1) * fs;
        }
        // A share too small for this request size: restart at its first file.
        let file = (self.seq_lo / fs).min(self.file_lo + self.file_count - 1);
        self.seq_pos = file * fs + len;
        (file, 0)
    }
}

/// A permutation of [0, n) without memory: a full-period LCG modulo the next power of two (c odd,
/// a = 1 mod 4: Hull-Dobell), its state scrambled by a bijection of that range (xorshift, odd multiply),
/// values >= n skipped (cycle walking, < 2 steps on average). Each pass of 2^k steps yields every block
/// once; the next pass continues the cycle. fio's random map gives the same coverage with a bitmap.
pub struct BlockPerm {
    n: u64,
    mask: u64,
    shift: u32,
    state: u64,
    c: u64,
    mul: u64,
}

impl BlockPerm {
    pub fn new(n: u64, seed: u64) -> Self {
        let n = n.max(1);
        let bits = 64 - (n - 1).leading_zeros().min(63);
        let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        BlockPerm { n, mask, shift: (bits / 2).max(1), state: seed & mask, c: (seed >> 17) | 1, mul: (seed >> 7) | 1 }
    }

    #[inline]
    pub fn next(&mut self) -> u64 {
        loop {
            self.state = self.state.wrapping_mul(0x5851_F42D_4C95_7F2D).wrapping_add(self.c) & self.mask;
            let mut x = self.state;
            x ^= x >> self.shift;
            x = x.wrapping_mul(self.mul) & self.mask;
            x ^= x >> self.shift;
            if x < self.n {
                return x;
            }
        }
    }
}

pub struct Access {
    spec: AccessSpec,
    /// With verify: which write each block should hold (laid out by `prepare`, updated by `run`).
    ledger: Option<Ledger>,
    /// Run phases started so far: the high bits of write numbers, so a rerun writes new ones.
    runs: u64,
}

/// Per-thread state of the `run` phase, built before the common start.
struct RunState<B: IoBackend> {
    backend: B,
    bufs: Vec<AlignedBuf>,
    gen: AccessGen,
    slots: Vec<SlotMeta>,
    completed: Vec<(usize, i64)>,
    /// Per mix entry: reads, writes, random, sequential (measured requests only).
    mix: Vec<[u64; 4]>,
    verify: Option<Checker>,
    /// Writes issued by this thread in this phase (with verify: the write numbers).
    writes: u64,
}

#[derive(Clone, Copy, Default)]
struct SlotMeta {
    t0: u64,
    op: Option<GenOp>,
    /// With verify, the write number of a write in flight.
    generation: u64,
}

impl Access {
    pub fn new(job: &Job, spec: AccessSpec) -> Result<Access> {
        spec.validate(job)?;
        Ok(Access { spec, ledger: None, runs: 0 })
    }

    /// Reads can be checked against the write each block should hold only when no
    /// two writes (or a read and a write) of one block can be in flight at once:
    /// one request at a time per thread, and threads on their own blocks.
    fn verify_exact(&self, job: &Job) -> bool {
        (job.threads == 1 || self.spec.thread_files) && self.spec.queue_depth == 1
    }

    fn verify_notes(&self, job: &Job) -> serde_json::Value {
        let exact = self.verify_exact(job);
        serde_json::json!({
            "exact": exact,
            "reads_checked_during_run": exact,
            "why": if exact {
                "every block is checked against the write that should be there (a lost write shows as stale)"
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

    /// Bytes each file holds: the region plus fio's offset before it.
    fn file_len(&self) -> u64 {
        self.spec.offset + self.spec.file_size
    }

    fn prepare(&self, job: &Job, ctl: &Control) -> Result<PhaseReport> {
        let spec = &self.spec;
        let nthreads = job.threads.min(spec.file_count as usize).max(1);
        let chunks_per_file = self.file_len().div_ceil(LAYOUT_CHUNK);
        let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
        let (mut report, skipped) = run_threads(
            "prepare",
            nthreads,
            timing,
            ctl,
            KINDS,
            3,
            chunks_per_file * spec.file_count as u64,
            |tid| {
                let checker = spec.verify.map(|a| Checker::new(a, spec.verify_block() as usize, job.seed, tid as u32, "prepare"));
                Ok((AlignedBuf::random(LAYOUT_CHUNK as usize, 4096, job.seed ^ tid as u64), checker))
            },
            |(buf, checker), rec| {
                let mut skipped = 0u64;
                for i in (rec.tid as u32..spec.file_count).step_by(nthreads) {
                    if rec.interrupted() {
                        break;
                    }
                    let path = self.path(&job.dir, i);
                    if spec.reuse_files && std::fs::metadata(&path).map(|m| m.len() == self.file_len()).unwrap_or(false) {
                        skipped += 1;
                        continue;
                    }
                    if !spec.file_names.is_empty() {
                        // fio creates the directories its file names need.
                        if let Some(parent) = path.parent() {
                            std::fs::create_dir_all(parent).map_err(|e| EngineError::io(format!("creating {}", parent.display()), e))?;
                        }
                    }
                    let fd = open(&path, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC)?;
                    let _close = FdGuard(fd);
                    if let Some(ch) = checker.as_mut() {
                        self.lay_out_verified(fd, i, &path, buf, ch, rec)?;
                        continue;
                    }
                    let mut off = 0u64;
                    while off < self.file_len() && !rec.interrupted() {
                        let len = LAYOUT_CHUNK.min(self.file_len() - off) as usize;
                        let t0 = now_ns();
                        // SAFETY: buf holds LAYOUT_CHUNK >= len bytes.
                        let n = unsafe { libc::pwrite(fd, buf.as_ptr() as *const libc::c_void, len, off as libc::off_t) };
                        if n < 0 {
                            return Err(EngineError::last_os(format!("laying out {}", path.display())));
                        }
                        rec.record(WRITE, n as u64, t0, now_ns());
                        off += n as u64;
                    }
                    let t0 = now_ns();
                    // SAFETY: fd is open.
                    if unsafe { libc::fsync(fd) } != 0 {
                        return Err(EngineError::last_os(format!("fsync {}", path.display())));
                    }
                    rec.record(FSYNC, 0, t0, now_ns());
                }
                Ok((skipped, checker.take()))
            },
        )?;
        report.totals_without(NOT_DATA);
        report.counters.insert("files".into(), spec.file_count as u64);
        report.counters.insert("files_reused".into(), skipped.iter().map(|s| s.0).sum());
        if spec.verify.is_some() {
            verify::merge_into(&mut report, skipped.iter().filter_map(|s| s.1.as_ref()), |f| self.path(&job.dir, f).display().to_string(), self.verify_notes(job));
        }
        Ok(report)
    }

    /// Lay one file out with verified blocks (write number 0), recording them in the ledger.
    fn lay_out_verified(&self, fd: RawFd, file: u32, path: &Path, buf: &AlignedBuf, ch: &mut Checker, rec: &mut Recorder) -> Result<()> {
        let b = ch.block as u64;
        let chunk = (LAYOUT_CHUNK / b).max(1) * b;
        let buf = if (buf.len() as u64) < chunk { &AlignedBuf::new(chunk as usize, 4096) } else { buf };
        let mut off = 0u64;
        while off < self.file_len() && !rec.interrupted() {
            let len = chunk.min(self.file_len() - off) as usize;
            let data = &mut buf.as_mut_slice()[..len];
            ch.fill(data, off, 0);
            let mut done = 0usize;
            while done < len {
                let t0 = now_ns();
                // SAFETY: data holds len bytes.
                let n = unsafe { libc::pwrite(fd, data[done..].as_ptr() as *const libc::c_void, len - done, (off + done as u64) as libc::off_t) };
                if n <= 0 {
                    return Err(EngineError::last_os(format!("laying out {}", path.display())));
                }
                rec.record(WRITE, n as u64, t0, now_ns());
                done += n as usize;
            }
            if let Some(l) = &self.ledger {
                l.record(file, off, len as u64, ch.thread, 0);
            }
            off += len as u64;
        }
        let t0 = now_ns();
        // SAFETY: fd is open.
        if unsafe { libc::fsync(fd) } != 0 {
            return Err(EngineError::last_os(format!("fsync {}", path.display())));
        }
        rec.record(FSYNC, 0, t0, now_ns());
        Ok(())
    }

    fn open_files(&self, job: &Job) -> Result<(FilesGuard, Option<DirectIo>)> {
        let spec = &self.spec;
        let mut flags = libc::O_RDWR;
        if spec.direct {
            flags |= libc::O_DIRECT;
        }
        let mut files = FilesGuard(Vec::with_capacity(spec.file_count as usize));
        let mut direct = None;
        for i in 0..spec.file_count {
            let path = self.path(&job.dir, i);
            let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if len < self.file_len() {
                return Err(EngineError::invalid(
                    "file_size",
                    format!("{} holds {len} bytes, fewer than offset + file_size ({}): run the prepare phase first", path.display(), self.file_len()),
                ));
            }
            let fd = open(&path, flags).map_err(|e| match e {
                EngineError::Io { source, .. } if source.raw_os_error() == Some(libc::EINVAL) && spec.direct => EngineError::invalid(
                    "direct",
                    format!("the filesystem under {} does not support O_DIRECT: use direct=false", job.dir.display()),
                ),
                e => e,
            })?;
            files.0.push(fd);
            if spec.direct && i == 0 {
                direct = Some(self.direct_io(fd, &job.dir)?);
            }
        }
        Ok((files, direct))
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
        files.0.iter().map(|&fd| dio::resident_pages(fd, self.file_len()).ok()).sum()
    }

    fn run(&self, job: &Job, ctl: &Control) -> Result<PhaseReport> {
        let (files, direct) = self.open_files(job)?;
        let spec = &self.spec;
        let share_align = match &direct {
            Some(d) if !d.unaligned => lcm(spec.alignment, d.align.offset),
            _ => spec.alignment,
        };
        let cached_before = direct.as_ref().and_then(|_| self.cached_pages(&files));
        let fault_log = std::sync::Mutex::new(Vec::<Injected>::new());
        let mut report = match job.backend {
            BackendKind::Psync if spec.fault.is_some() => {
                let fs = spec.fault.clone().expect("checked");
                self.run_with(job, ctl, &files, share_align, |f, _| Ok(FaultBackend::new(f, fs.clone(), &fault_log)))
            }
            BackendKind::Psync => self.run_with(job, ctl, &files, share_align, |f, _| Ok(PsyncBackend::new(f))),
            BackendKind::IoUring => self.run_with(job, ctl, &files, share_align, |f, bufs| {
                let ptrs: Vec<(*mut u8, usize)> = bufs.iter().map(|b| (b.as_ptr(), b.len())).collect();
                UringBackend::new(f, self.spec.queue_depth as usize, &ptrs)
            }),
            BackendKind::Null => self.run_with(job, ctl, &files, share_align, |_, _| Ok(NullBackend::new(self.spec.queue_depth as usize))),
        }?;
        report.totals_without(NOT_DATA);
        if let Some(f) = &spec.fault {
            let log = fault_log.into_inner().unwrap_or_default();
            report.counters.insert("faults_injected".into(), log.len() as u64);
            report.extra["faults_injected"] = serde_json::json!({
                "kind": format!("{:?}", f.kind),
                "writes": log.iter().map(|i| serde_json::json!({"file": i.file, "offset": i.offset, "len": i.len})).collect::<Vec<_>>(),
            });
        }
        report.extra["direct_io"] = match direct {
            None => serde_json::Value::Null,
            Some(d) => {
                // Pages that entered the page cache during the phase: O_DIRECT that
                // really bypassed it adds none, a buffered fallback (btrfs) does.
                let added = match (cached_before, self.cached_pages(&files)) {
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
        Ok(report)
    }

    fn run_with<B, Mk>(&self, job: &Job, ctl: &Control, files: &FilesGuard, share_align: u64, make: Mk) -> Result<PhaseReport>
    where
        B: IoBackend,
        Mk: Fn(FileTable, &[AlignedBuf]) -> Result<B> + Sync,
    {
        let spec = &self.spec;
        let qd = spec.queue_depth as usize;
        let nthreads = job.threads;
        let timing = PhaseTiming {
            warmup_ns: secs_to_ns("warmup_s", spec.warmup_s)?,
            duration_ns: spec.duration_s.map(|d| (d * 1e9) as u64),
            interval_ns: job.interval_ns(),
        };
        let quota = |tid: usize| {
            spec.total_bytes.map(|t| {
                let base = t / nthreads as u64;
                if tid == 0 {
                    base + t % nthreads as u64
                } else {
                    base
                }
            })
        };
        let (mut report, mixes) = run_threads(
            "run",
            nthreads,
            timing,
            ctl,
            KINDS,
            3,
            0,
            |tid| {
                let max = spec.max_size();
                let bufs: Vec<AlignedBuf> =
                    (0..qd).map(|s| AlignedBuf::random(max, 4096, job.seed ^ ((tid * qd + s) as u64) << 8)).collect();
                let backend = make(files.0.clone(), &bufs)?;
                Ok(RunState {
                    backend,
                    bufs,
                    gen: AccessGen::with_share_align(spec, job.seed, tid, nthreads, share_align),
                    slots: vec![SlotMeta::default(); qd],
                    completed: Vec::with_capacity(qd),
                    mix: vec![[0; 4]; spec.entries.len()],
                    verify: spec.verify.map(|a| Checker::new(a, spec.verify_block() as usize, job.seed, tid as u32, "run")),
                    writes: 0,
                })
            },
            // Two copies of the hot loop: without verify it has no verification code at all.
            |st, rec| {
                let mix = if st.verify.is_some() {
                    self.worker::<B, true>(st, rec, quota(rec.tid), job)?
                } else {
                    self.worker::<B, false>(st, rec, quota(rec.tid), job)?
                };
                Ok((mix, st.verify.take()))
            },
        )?;
        if spec.verify.is_some() {
            verify::merge_into(&mut report, mixes.iter().filter_map(|m| m.1.as_ref()), |f| self.path(&job.dir, f).display().to_string(), self.verify_notes(job));
        }
        let mixes: Vec<Vec<[u64; 4]>> = mixes.into_iter().map(|m| m.0).collect();
        let mut mix = vec![[0u64; 4]; spec.entries.len()];
        for m in &mixes {
            for (a, b) in mix.iter_mut().zip(m) {
                for k in 0..4 {
                    a[k] += b[k];
                }
            }
        }
        let verify_extra = report.extra.get("verify").cloned();
        report.extra = serde_json::json!({
            "mix": spec.entries.iter().zip(&mix).map(|(e, m)| serde_json::json!({
                "size": e.size, "weight": e.weight, "read_pct": e.read_pct, "random_pct": e.random_pct,
                "reads": m[0], "writes": m[1], "random": m[2], "sequential": m[3],
            })).collect::<Vec<_>>(),
            "backend": job.backend.name(),
            "queue_depth": qd,
            "direct": spec.direct,
        });
        if let Some(v) = verify_extra {
            report.extra["verify"] = v;
        }
        Ok(report)
    }

    /// The hot loop: keep `queue_depth` requests in flight until the deadline,
    /// the byte quota, or a stop; then drain.
    fn worker<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        quota: Option<u64>,
        job: &Job,
    ) -> Result<Vec<[u64; 4]>> {
        let spec = &self.spec;
        let exact = VERIFY && self.verify_exact(job);
        let gen_base = self.runs << 40;
        let mut issued_bytes = 0u64;
        let mut inflight = 0usize;
        let mut writes_since_fsync = 0u64;
        let mut stopping = false;
        for slot in 0..st.slots.len() {
            let op = st.gen.next_op();
            let t0 = now_ns();
            if rec.measuring(t0) {
                issued_bytes += op.req.len as u64;
            }
            let generation = if VERIFY { self.fill_write(st, slot, op.req, gen_base) } else { 0 };
            st.slots[slot] = SlotMeta { t0, op: Some(op), generation };
            st.backend.queue(slot, op.req, st.bufs[slot].as_ptr())?;
            inflight += 1;
            if quota.is_some_and(|q| issued_bytes >= q) {
                stopping = true;
                break;
            }
        }
        while inflight > 0 {
            st.completed.clear();
            let completed = &mut st.completed;
            st.backend.reap(1, |slot, res| completed.push((slot, res)))?;
            let t1 = now_ns();
            for i in 0..st.completed.len() {
                let (slot, res) = st.completed[i];
                let meta = st.slots[slot];
                let op = meta.op.expect("completion for an idle slot");
                if res < 0 {
                    return Err(io_failure(op.req, -res as i32, spec.direct));
                }
                let kind = if op.req.write { WRITE } else { READ };
                rec.record(kind, res as u64, meta.t0, t1);
                if VERIFY {
                    self.verify_completion(st, slot, op.req, meta.generation, res as usize, exact);
                }
                if meta.t0 >= rec.measure_start_ns {
                    let m = &mut st.mix[op.entry];
                    m[if op.req.write { 1 } else { 0 }] += 1;
                    m[if op.random { 2 } else { 3 }] += 1;
                }
                let mut synced = false;
                if op.req.write && spec.fsync_every > 0 {
                    writes_since_fsync += 1;
                    if writes_since_fsync >= spec.fsync_every {
                        writes_since_fsync = 0;
                        synced = true;
                        let t0 = now_ns();
                        st.backend.fsync(op.req.file)?;
                        rec.record(FSYNC, 0, t0, now_ns());
                    }
                }
                if !stopping {
                    stopping = rec.should_stop(t1) || quota.is_some_and(|q| issued_bytes >= q);
                }
                if stopping {
                    st.slots[slot].op = None;
                    inflight -= 1;
                    continue;
                }
                // The completion time doubles as the next request's issue time: one
                // clock read less per request; the latency then also covers the few
                // nanoseconds of bookkeeping in between (never less than the truth).
                let op = st.gen.next_op();
                let t0 = if st.completed.len() == 1 && !synced { t1 } else { now_ns() };
                if rec.measuring(t0) {
                    issued_bytes += op.req.len as u64;
                }
                let generation = if VERIFY { self.fill_write(st, slot, op.req, gen_base) } else { 0 };
                st.slots[slot] = SlotMeta { t0, op: Some(op), generation };
                st.backend.queue(slot, op.req, st.bufs[slot].as_ptr())?;
            }
        }
        if spec.fsync_end && !rec.interrupted() {
            for f in 0..spec.file_count {
                let t0 = now_ns();
                st.backend.fsync(f)?;
                rec.record(FSYNC, 0, t0, now_ns());
            }
        }
        Ok(std::mem::take(&mut st.mix))
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

    /// With verify, after a request completes: a write is recorded in the ledger
    /// (what the blocks should now hold); a read is checked against it when reads
    /// cannot race writes (`exact`).
    #[inline]
    fn verify_completion<B: IoBackend>(&self, st: &mut RunState<B>, slot: usize, req: IoReq, generation: u64, moved: usize, exact: bool) {
        let Some(ch) = st.verify.as_mut() else { return };
        if req.write {
            if let Some(l) = &self.ledger {
                l.record(req.file, req.offset, req.len as u64, ch.thread, generation);
            }
        } else if exact {
            let data = &st.bufs[slot].as_slice()[..moved.min(req.len as usize)];
            let ledger = self.ledger.as_ref();
            ch.check(data, req.file, req.offset, |o| ledger.and_then(|l| l.expected(req.file, o)));
        }
    }

    /// The `verify` phase: re-read every block of every file and check it (against
    /// the write it should hold, when that is known exactly).
    fn verify_phase(&self, job: &Job, ctl: &Control) -> Result<PhaseReport> {
        let Some(algo) = self.spec.verify else {
            return Err(EngineError::invalid("verify", "the verify phase needs verify = \"crc32c\", \"xxh3\" or \"sha256\" in the spec"));
        };
        let files: Vec<verify::RereadFile> =
            (0..self.spec.file_count).map(|i| verify::RereadFile { path: self.path(&job.dir, i), len: self.file_len() }).collect();
        verify::reread(job, ctl, &files, algo, self.spec.verify_block(), self.ledger.as_ref(), self.verify_exact(job), self.verify_notes(job))
    }

    fn cleanup(&self, job: &Job) -> Result<PhaseReport> {
        let mut removed = 0;
        for i in 0..self.spec.file_count {
            match std::fs::remove_file(self.path(&job.dir, i)) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(EngineError::io(format!("removing {}", self.path(&job.dir, i).display()), e)),
            }
        }
        let mut report = PhaseReport::new("cleanup");
        report.counters.insert("files_removed".into(), removed);
        Ok(report)
    }
}

impl Workload for Access {
    fn phases(&self) -> &'static [&'static str] {
        &["prepare", "run", "verify", "cleanup"]
    }

    fn run_phase(&mut self, phase: &str, job: &Job, ctl: &Control) -> Result<PhaseReport> {
        if self.spec.verify.is_some() && (phase == "prepare" || (phase == "run" && self.ledger.is_none())) {
            // A fresh ledger for a fresh layout (or a run on files laid out elsewhere:
            // then blocks are checked for their own consistency only, until written).
            self.ledger = Some(Ledger::new(self.spec.file_count as usize, self.file_len(), self.spec.verify_block()));
        }
        match phase {
            "prepare" => self.prepare(job, ctl),
            "run" => {
                self.runs += 1;
                self.run(job, ctl)
            }
            "verify" => self.verify_phase(job, ctl),
            "cleanup" => self.cleanup(job),
            _ => unreachable!("checked by Session"),
        }
    }
}

fn io_failure(req: IoReq, errno: i32, direct: bool) -> EngineError {
    let what = if req.write { "write" } else { "read" };
    let mut ctx = format!("{what} of {} bytes at offset {} of file {}", req.len, req.offset, req.file);
    if errno == libc::EINVAL && direct {
        ctx.push_str(" (O_DIRECT: sizes, offsets and alignment must be multiples of the device's logical block size)");
    }
    EngineError::io(ctx, std::io::Error::from_raw_os_error(errno))
}

pub(crate) fn open(path: &Path, flags: i32) -> Result<RawFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| EngineError::invalid("dir", format!("{} contains a NUL byte", path.display())))?;
    // SAFETY: c is a valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o644) };
    if fd < 0 {
        return Err(EngineError::last_os(format!("open {}", path.display())));
    }
    Ok(fd)
}

/// What was found about O_DIRECT on the files of a `run` phase.
struct DirectIo {
    align: DioAlign,
    /// Some request is not a multiple of `align` (only with allow_unaligned_direct).
    unaligned: bool,
}

fn lcm(a: u64, b: u64) -> u64 {
    let (mut x, mut y) = (a.max(1), b.max(1));
    while y != 0 {
        (x, y) = (y, x % y);
    }
    a.max(1) / x * b.max(1)
}

struct FdGuard(RawFd);
impl Drop for FdGuard {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.0) };
    }
}

struct FilesGuard(Vec<RawFd>);
impl Drop for FilesGuard {
    fn drop(&mut self) {
        for &fd in &self.0 {
            // SAFETY: we own the fds.
            unsafe { libc::close(fd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(entries: Vec<AccessEntry>, file_count: u32, file_size: u64) -> AccessSpec {
        AccessSpec {
            entries,
            alignment: 512,
            file_count,
            file_size,
            queue_depth: 1,
            direct: false,
            fsync_every: 0,
            fsync_end: false,
            warmup_s: 0.0,
            duration_s: Some(1.0),
            total_bytes: None,
            file_prefix: default_prefix(),
            reuse_files: false,
            file_names: vec![],
            offset: 0,
            thread_files: false,
            random_map: false,
            allow_unaligned_direct: false,
            verify: None,
            verify_block: 0,
            fault: None,
        }
    }

    fn e(size: u32, weight: f64, read_pct: f64, random_pct: f64) -> AccessEntry {
        AccessEntry { size, weight, read_pct, random_pct }
    }

    #[test]
    fn random_offsets_stay_inside_and_aligned() {
        let s = spec(vec![e(4096, 50.0, 50.0, 100.0), e(65536, 50.0, 50.0, 100.0)], 3, 1 << 20);
        let mut g = AccessGen::new(&s, 7, 0, 1);
        for _ in 0..200_000 {
            let op = g.next_op();
            assert!(op.random);
            assert!(op.req.file < 3);
            assert_eq!(op.req.offset % 512, 0, "offset {} not aligned", op.req.offset);
            assert!(op.req.offset + op.req.len as u64 <= 1 << 20, "{:?} runs past the file", op.req);
        }
    }

    #[test]
    fn same_seed_same_sequence_other_seed_other_sequence() {
        let s = spec(vec![e(4096, 60.0, 80.0, 50.0), e(512, 40.0, 20.0, 100.0)], 2, 1 << 20);
        let a: Vec<GenOp> = { let mut g = AccessGen::new(&s, 42, 0, 1); (0..1000).map(|_| g.next_op()).collect() };
        let b: Vec<GenOp> = { let mut g = AccessGen::new(&s, 42, 0, 1); (0..1000).map(|_| g.next_op()).collect() };
        let c: Vec<GenOp> = { let mut g = AccessGen::new(&s, 43, 0, 1); (0..1000).map(|_| g.next_op()).collect() };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn sequential_single_thread_covers_every_byte_once_per_pass() {
        let s = spec(vec![e(8192, 100.0, 100.0, 0.0)], 2, 64 * 1024);
        let mut g = AccessGen::new(&s, 1, 0, 1);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..16 {
            let op = g.next_op();
            assert!(!op.req.write && !op.random);
            assert!(seen.insert((op.req.file, op.req.offset)), "{:?} repeated within one pass", op.req);
        }
        assert_eq!(seen.len(), 16);
        // The 17th request wraps to the start.
        assert_eq!(g.next_op().req.offset, 0);
    }

    #[test]
    fn sequential_threads_get_disjoint_shares() {
        let s = spec(vec![e(4096, 100.0, 100.0, 0.0)], 1, 1 << 20);
        let mut a = AccessGen::new(&s, 1, 0, 2);
        let mut b = AccessGen::new(&s, 1, 1, 2);
        for _ in 0..128 {
            assert!(a.next_op().req.offset < 1 << 19);
            assert!(b.next_op().req.offset >= 1 << 19);
        }
    }

    fn dio(offset: u64) -> DioAlign {
        DioAlign { offset, mem: offset, source: "test" }
    }

    #[test]
    fn direct_alignment_names_the_parameter_that_does_not_fit() {
        // Iometer's file-server mix: 512 B requests at 512 B offsets.
        let mut s = spec(vec![e(4096, 60.0, 80.0, 100.0), e(512, 10.0, 80.0, 100.0)], 1, 1 << 20);
        assert!(s.check_direct_alignment(&dio(512)).is_ok());
        let err = s.check_direct_alignment(&dio(4096)).unwrap_err().to_string();
        assert!(err.starts_with("entries[1].size: 512 bytes:"), "{err}");
        assert!(err.contains("multiples of 4096") && err.contains("test"), "{err}");
        // Sizes fit but random offsets are 512-aligned: `alignment` is named.
        s.entries[1].size = 8192;
        let err = s.check_direct_alignment(&dio(4096)).unwrap_err().to_string();
        assert!(err.starts_with("alignment: 512 bytes:"), "{err}");
        s.alignment = 4096;
        assert!(s.check_direct_alignment(&dio(4096)).is_ok());
        // Purely sequential requests do not use `alignment`: their offsets are sums of sizes.
        let seq = spec(vec![e(65536, 100.0, 100.0, 0.0)], 1, 1 << 20);
        assert!(seq.check_direct_alignment(&dio(4096)).is_ok());
    }

    #[test]
    fn sequential_shares_start_on_the_direct_alignment() {
        // 3 threads over 3 MiB + 1536 B: a 512-aligned share starts thread 1 at 1 MiB + 512.
        let s = spec(vec![e(4096, 100.0, 100.0, 0.0)], 1, (3 << 20) + 1536);
        let plain = AccessGen::new(&s, 1, 1, 3).next_op().req.offset;
        assert_ne!(plain % 4096, 0);
        for tid in 0..3 {
            let mut g = AccessGen::with_share_align(&s, 1, tid, 3, lcm(512, 4096));
            for _ in 0..1000 {
                assert_eq!(g.next_op().req.offset % 4096, 0);
            }
        }
        assert_eq!(lcm(512, 4096), 4096);
        assert_eq!(lcm(3000, 4096), 1_536_000);
    }

    #[test]
    fn thread_files_and_offset_keep_each_thread_in_its_own_region() {
        // fio's per-job files: 2 threads x 2 files each, a 64 KiB region after a 16 KiB offset.
        let mut s = spec(vec![e(4096, 50.0, 50.0, 50.0)], 4, 64 * 1024);
        s.thread_files = true;
        s.offset = 16 * 1024;
        for tid in 0..2u32 {
            let mut g = AccessGen::new(&s, 3, tid as usize, 2);
            for _ in 0..10_000 {
                let op = g.next_op();
                assert!(op.req.file / 2 == tid, "thread {tid} touched file {}", op.req.file);
                assert!(op.req.offset >= 16 * 1024 && op.req.offset + 4096 <= 80 * 1024, "{:?}", op.req);
            }
        }
    }

    #[test]
    fn random_map_visits_every_block_once_per_pass() {
        for n in [1u64, 2, 3, 1000, 4096, 5000] {
            let mut p = BlockPerm::new(n, 0xDEAD_BEEF);
            for _pass in 0..2 {
                let mut seen = vec![false; n as usize];
                for _ in 0..n {
                    let b = p.next() as usize;
                    assert!(!seen[b], "block {b} of {n} twice in one pass");
                    seen[b] = true;
                }
            }
        }
        // Through the generator: 2 threads x 2 files of 16 blocks each, every block of a thread's files once.
        let mut s = spec(vec![e(4096, 100.0, 100.0, 100.0)], 4, 64 * 1024);
        s.alignment = 4096;
        s.thread_files = true;
        s.random_map = true;
        for tid in 0..2usize {
            let mut g = AccessGen::new(&s, 5, tid, 2);
            let mut seen = std::collections::HashSet::new();
            for _ in 0..32 {
                let op = g.next_op();
                assert!(seen.insert((op.req.file, op.req.offset)), "{:?} twice", op.req);
                assert_eq!(op.req.file as usize / 2, tid);
            }
        }
    }

    #[test]
    fn weights_and_read_fraction_follow_the_spec() {
        // 3 sigma of a binomial proportion over n = 400k draws is < 0.25%.
        let s = spec(vec![e(512, 10.0, 80.0, 100.0), e(4096, 60.0, 80.0, 100.0), e(65536, 30.0, 80.0, 100.0)], 1, 1 << 20);
        let mut g = AccessGen::new(&s, 9, 0, 1);
        let n = 400_000;
        let mut counts = [0u64; 3];
        let mut reads = 0u64;
        for _ in 0..n {
            let op = g.next_op();
            counts[op.entry] += 1;
            reads += !op.req.write as u64;
        }
        for (c, w) in counts.iter().zip([0.10, 0.60, 0.30]) {
            assert!((*c as f64 / n as f64 - w).abs() < 0.005, "{counts:?}");
        }
        assert!((reads as f64 / n as f64 - 0.80).abs() < 0.005);
    }
}
