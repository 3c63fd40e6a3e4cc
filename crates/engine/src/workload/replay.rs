//! The replay family (dbench 4): replay a dbench load file (client.txt format)
//! against the filesystem, one client per thread, the way dbench's `fileio`
//! backend turns each line into system calls.
//!
//! Phases: `setup` creates `clients/clientN` for every client, `run` replays
//! the file in a loop (warm-up, then a time- or pass-bounded measured window),
//! `cleanup` removes what the clients left under `clients/`.
//!
//! The load file is parsed once, in `Replay::new`, into a compact table of
//! operations (paths interned once, handles mapped to dense indices) shared by
//! every client; each client only owns its open-file table and a few buffers.
//!
//! Semantics follow dbench 4.0 (child.c, fileio.c); the references in the
//! comments name the function there.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::backend::BackendKind;
use crate::error::{EngineError, Result};
use crate::job::{secs_to_ns, Job};
use crate::measure::{now_ns, run_threads, Control, PhaseTiming, Recorder};
use crate::report::PhaseReport;
use crate::workload::Workload;

pub const DEFAULT_LOADFILE: &str = "/usr/share/dbench/client.txt";

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaySpec {
    /// The dbench load file (client.txt format).
    #[serde(default = "default_loadfile")]
    pub loadfile: PathBuf,
    /// Measured seconds (dbench -t) ...
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// ... and/or stop every client after this many passes of the file.
    #[serde(default)]
    pub passes: Option<u64>,
    /// Unmeasured seconds first. Default as dbench: duration_s / 5 in whole
    /// seconds (integer division, as dbench's `timelimit / 5`); 0 without duration_s.
    #[serde(default)]
    pub warmup_s: Option<f64>,
    /// Simulate Samba's case-insensitive name lookup (dbench's resolve_name):
    /// when stat fails, scan the parent directory. false = dbench --no-resolve.
    #[serde(default = "yes")]
    pub resolve_names: bool,
}

fn default_loadfile() -> PathBuf {
    PathBuf::from(DEFAULT_LOADFILE)
}
fn yes() -> bool {
    true
}

impl ReplaySpec {
    pub fn validate(&self, job: &Job) -> Result<()> {
        if job.backend != BackendKind::Psync {
            return Err(EngineError::invalid(
                "backend",
                "replay issues dbench's system calls directly (open, pread, pwrite, stat, ...): use backend=psync",
            ));
        }
        if let Some(d) = self.duration_s {
            if secs_to_ns("duration_s", d)? == 0 {
                return Err(EngineError::invalid("duration_s", "must be > 0"));
            }
        }
        if self.passes == Some(0) {
            return Err(EngineError::invalid("passes", "must be >= 1"));
        }
        if self.duration_s.is_none() && self.passes.is_none() {
            return Err(EngineError::invalid("duration_s", "give duration_s or passes (or both: whichever comes first)"));
        }
        if let Some(w) = self.warmup_s {
            secs_to_ns("warmup_s", w)?;
        }
        Ok(())
    }

    /// dbench: `options.warmup = options.timelimit / 5` (ints).
    pub fn warmup_ns(&self) -> u64 {
        match (self.warmup_s, self.duration_s) {
            (Some(w), _) => (w * 1e9) as u64,
            (None, Some(d)) => ((d as u64) / 5) * 1_000_000_000,
            (None, None) => 0,
        }
    }
}

/// Operation kinds, named and ordered as dbench's latency table (dbench.c op_names).
pub const KINDS: &[&str] = &[
    "NTCreateX", "Close", "Rename", "Unlink", "Deltree", "Rmdir", "Mkdir", "Qpathinfo", "Qfileinfo", "Qfsinfo",
    "Sfileinfo", "Find", "WriteX", "ReadX", "LockX", "UnlockX", "Flush",
];
const NTCREATEX: u8 = 0;
const CLOSE: u8 = 1;
const RENAME: u8 = 2;
const UNLINK: u8 = 3;
const DELTREE: u8 = 4;
const RMDIR: u8 = 5;
const MKDIR: u8 = 6;
const QPATHINFO: u8 = 7;
const QFILEINFO: u8 = 8;
const QFSINFO: u8 = 9;
const SFILEINFO: u8 = 10;
const FIND: u8 = 11;
const WRITEX: u8 = 12;
const READX: u8 = 13;
const LOCKX: u8 = 14;
const UNLOCKX: u8 = 15;
const FLUSH: u8 = 16;
/// dbench's Sleep: not an operation on the filesystem, so not measured.
const SLEEP: u8 = 17;
const NKINDS: usize = 17;

/// Stands for "client1" inside interned paths; replaced by each client's name.
const CLIENT_MARK: u8 = 0x01;
const NONE: u32 = u32::MAX;

/// dbench's NTCreateX create dispositions and options (dbench.h).
const FILE_CREATE: u32 = 2;
const FILE_OVERWRITE: u32 = 4;
const FILE_OVERWRITE_IF: u32 = 5;
const FILE_DIRECTORY_FILE: u32 = 0x1;

/// One load-file line, 28 bytes (client.txt has 458k of them). `a`, `b`, `c`
/// by kind: NTCreateX (options, disposition, -), ReadX/WriteX (offset, size,
/// ret_size), LockX/UnlockX (offset, size, -), FIND_FIRST (level, maxcnt, -),
/// Rename (-, -, second path), Sleep (usec, -, -). Offsets fit 32 bits as in
/// dbench, which reads them into an int.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub line: u32,
    pub kind: u8,
    pub expect_ok: bool,
    pub status: u16,
    pub path: u32,
    pub handle: u32,
    pub a: u32,
    pub b: u32,
    pub c: u32,
}

impl Op {
    #[inline]
    pub fn path2(&self) -> u32 {
        if self.kind == RENAME {
            self.c
        } else {
            NONE
        }
    }
}

/// A parsed load file: shared read-only by every client.
#[derive(Debug)]
pub struct LoadFile {
    pub source: PathBuf,
    pub ops: Vec<Op>,
    /// Interned paths (each starting with '/', "client1" replaced by CLIENT_MARK).
    path_data: Vec<u8>,
    path_ends: Vec<u32>,
    pub statuses: Vec<String>,
    /// Distinct handle numbers of the file, by dense index.
    pub handles: Vec<i64>,
    pub max_io: u32,
    /// Requested ReadX and WriteX bytes of one pass (what one pass moves).
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl LoadFile {
    pub fn path(&self, id: u32) -> &[u8] {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.path_ends[i - 1] as usize };
        &self.path_data[start..self.path_ends[i] as usize]
    }

    pub fn path_count(&self) -> usize {
        self.path_ends.len()
    }

    /// Parse a load file as dbench's child_run does, but strictly: a line dbench
    /// would skip or misread (unknown operation, missing or non-numeric field,
    /// bad status) is an error naming the file and line.
    pub fn open(path: &Path) -> Result<LoadFile> {
        let f = std::fs::File::open(path).map_err(|e| {
            EngineError::invalid("loadfile", format!("cannot open {}: {e}", path.display()))
        })?;
        Self::parse(path, BufReader::with_capacity(1 << 16, f))
    }

    pub fn parse(source: &Path, mut r: impl BufRead) -> Result<LoadFile> {
        let mut p = Parser {
            lf: LoadFile {
                source: source.to_path_buf(),
                ops: Vec::new(),
                path_data: Vec::new(),
                path_ends: Vec::new(),
                statuses: Vec::new(),
                handles: Vec::new(),
                max_io: 0,
                read_bytes: 0,
                write_bytes: 0,
            },
            paths: HashMap::new(),
            statuses: HashMap::new(),
            handles: HashMap::new(),
        };
        let mut raw = Vec::with_capacity(1024);
        let mut line_no = 0u32;
        loop {
            raw.clear();
            let n = r.read_until(b'\n', &mut raw).map_err(|e| EngineError::io(format!("reading {}", source.display()), e))?;
            if n == 0 {
                break;
            }
            line_no += 1;
            p.line(&raw, line_no).map_err(|what| {
                EngineError::invalid("loadfile", format!("{} line {line_no}: {what}", source.display()))
            })?;
        }
        if p.lf.ops.is_empty() {
            return Err(EngineError::invalid("loadfile", format!("{} holds no operations", source.display())));
        }
        p.lf.ops.shrink_to_fit();
        p.lf.path_data.shrink_to_fit();
        Ok(p.lf)
    }
}

struct Parser {
    lf: LoadFile,
    paths: HashMap<Vec<u8>, u32>,
    statuses: HashMap<String, u16>,
    handles: HashMap<i64, u32>,
}

/// dbench's next_token(): space-separated, double quotes group (and are dropped).
fn tokens(line: &[u8], out: &mut Vec<Vec<u8>>) {
    out.clear();
    let mut i = 0;
    while i < line.len() && out.len() < 19 {
        while i < line.len() && line[i] == b' ' {
            i += 1;
        }
        if i >= line.len() {
            break;
        }
        let mut tok = Vec::new();
        let mut quoted = false;
        while i < line.len() && (quoted || line[i] != b' ') {
            if line[i] == b'"' {
                quoted = !quoted;
            } else {
                tok.push(line[i]);
            }
            i += 1;
        }
        i += 1;
        out.push(tok);
    }
}

/// strtol(s, NULL, 0), but the whole token must be a number.
fn parse_int(tok: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(tok).ok()?;
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if s.len() > 1 && s.starts_with('0') {
        i64::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}

fn show(tok: &[u8]) -> String {
    String::from_utf8_lossy(tok).into_owned()
}

impl Parser {
    fn line(&mut self, raw: &[u8], line_no: u32) -> std::result::Result<(), String> {
        // dbench strips the newline (we also strip a CR), turns '\' into '/' and
        // " /" into " " (so only quoted paths keep their leading '/').
        let mut end = raw.len();
        while end > 0 && (raw[end - 1] == b'\n' || raw[end - 1] == b'\r') {
            end -= 1;
        }
        let mut line: Vec<u8> = raw[..end].iter().map(|&b| if b == b'\\' { b'/' } else { b }).collect();
        if line.windows(2).any(|w| w == b" /") {
            let mut out = Vec::with_capacity(line.len());
            let mut i = 0;
            while i < line.len() {
                if line[i] == b' ' && line.get(i + 1) == Some(&b'/') {
                    out.push(b' ');
                    i += 2;
                } else {
                    out.push(line[i]);
                    i += 1;
                }
            }
            line = out;
        }
        let mut toks = Vec::new();
        tokens(&line, &mut toks);
        if toks.len() < 2 || toks[0].first() == Some(&b'#') {
            return Ok(());
        }
        if toks[0].starts_with(b"SMB") {
            return Err("this is a dbench 1 load file (SMB... operations); dbench 4 load files are needed".into());
        }
        // A leading number is a timestamp (dbench paces to it only with no -R);
        // fsmeter replays as fast as possible and ignores it.
        if toks[0].first().is_some_and(|c| c.is_ascii_digit()) {
            toks.remove(0);
            if toks.len() < 2 {
                return Err("a timestamp with no operation after it".into());
            }
        }
        let status_tok = toks.last().unwrap().clone();
        let st = String::from_utf8_lossy(&status_tok).into_owned();
        let expect_ok = if st.starts_with("NT_STATUS_") {
            st == "NT_STATUS_OK"
        } else if let Some(h) = st.strip_prefix("0x") {
            u64::from_str_radix(h, 16).map_err(|_| format!("status {st:?} is not a hex number"))? == 0
        } else if st == "SUCCESS" {
            true
        } else if st == "ERROR" {
            false
        } else {
            return Err(format!(
                "the last field must be the expected status (NT_STATUS_..., 0x..., SUCCESS or ERROR), got {st:?}"
            ));
        };
        let status = match self.statuses.get(&st) {
            Some(&i) => i,
            None => {
                let i = self.lf.statuses.len() as u16;
                self.lf.statuses.push(st.clone());
                self.statuses.insert(st.clone(), i);
                i
            }
        };
        let name = show(&toks[0]);
        let (kind, nargs) = match name.as_str() {
            "NTCreateX" => (NTCREATEX, 4),
            "Close" => (CLOSE, 1),
            "Rename" => (RENAME, 2),
            "Unlink" => (UNLINK, 2),
            "Deltree" => (DELTREE, 1),
            "Rmdir" => (RMDIR, 1),
            "Mkdir" => (MKDIR, 1),
            "QUERY_PATH_INFORMATION" => (QPATHINFO, 2),
            "QUERY_FILE_INFORMATION" => (QFILEINFO, 2),
            "QUERY_FS_INFORMATION" => (QFSINFO, 1),
            "SET_FILE_INFORMATION" => (SFILEINFO, 2),
            "FIND_FIRST" => (FIND, 4),
            "WriteX" => (WRITEX, 4),
            "ReadX" => (READX, 4),
            "LockX" => (LOCKX, 3),
            "UnlockX" => (UNLOCKX, 3),
            "Flush" => (FLUSH, 1),
            "Sleep" => (SLEEP, 1),
            _ => return Err(format!("unknown operation {name:?}")),
        };
        // Fields between the operation and the status.
        let have = toks.len() - 2;
        if have < nargs {
            return Err(format!("{name} needs {nargs} field(s) before the status, found {have}"));
        }
        let args = &toks[1..toks.len() - 1];
        let num = |i: usize, what: &str, max: i64| -> std::result::Result<i64, String> {
            let v = parse_int(&args[i]).ok_or_else(|| format!("{name}: {what} {:?} is not a number", show(&args[i])))?;
            if v < 0 || v > max {
                return Err(format!("{name}: {what} {v} is out of range (0..={max})"));
            }
            Ok(v)
        };
        let mut op = Op { line: line_no, kind, expect_ok, status, path: NONE, handle: NONE, a: 0, b: 0, c: 0 };
        let u32max = u32::MAX as i64;
        match kind {
            NTCREATEX => {
                op.path = self.path(&args[0], &name)?;
                op.a = num(1, "create options", u32max)? as u32;
                op.b = num(2, "create disposition", u32max)? as u32;
                op.handle = self.handle(num(3, "handle", i32::MAX as i64)?);
            }
            CLOSE | FLUSH => op.handle = self.handle(num(0, "handle", i32::MAX as i64)?),
            QFILEINFO | SFILEINFO => {
                op.handle = self.handle(num(0, "handle", i32::MAX as i64)?);
                op.a = num(1, "level", u32max)? as u32;
            }
            RENAME => {
                op.path = self.path(&args[0], &name)?;
                op.c = self.path(&args[1], &name)?;
            }
            UNLINK | DELTREE | RMDIR | MKDIR | QPATHINFO => op.path = self.path(&args[0], &name)?,
            QFSINFO => op.a = num(0, "level", u32max)? as u32,
            FIND => {
                op.path = self.path(&args[0], &name)?;
                op.a = num(1, "level", u32max)? as u32;
                op.b = num(2, "maxcnt", u32max)? as u32;
            }
            WRITEX | READX => {
                op.handle = self.handle(num(0, "handle", i32::MAX as i64)?);
                op.a = num(1, "offset", i32::MAX as i64)? as u32;
                op.b = num(2, "size", 1 << 30)? as u32;
                op.c = num(3, "returned size", 1 << 30)? as u32;
                self.lf.max_io = self.lf.max_io.max(op.b);
                if kind == READX {
                    self.lf.read_bytes += op.b as u64;
                } else {
                    self.lf.write_bytes += op.b as u64;
                }
            }
            LOCKX | UNLOCKX => {
                op.handle = self.handle(num(0, "handle", i32::MAX as i64)?);
                op.a = num(1, "offset", u32max)? as u32;
                op.b = num(2, "size", u32max)? as u32;
            }
            SLEEP => op.a = num(0, "microseconds", u32max)? as u32,
            _ => unreachable!(),
        }
        self.lf.ops.push(op);
        Ok(())
    }

    fn path(&mut self, tok: &[u8], name: &str) -> std::result::Result<u32, String> {
        if tok.first() != Some(&b'/') {
            return Err(format!("{name}: {:?} is not a quoted path like \"\\clients\\client1\\file\"", show(tok)));
        }
        if tok.contains(&0) || tok.contains(&CLIENT_MARK) {
            return Err(format!("{name}: the path holds a control byte"));
        }
        // Every "client1" becomes the client's own name (dbench all_string_sub).
        let mut key = Vec::with_capacity(tok.len());
        let mut i = 0;
        while i < tok.len() {
            if tok[i..].starts_with(b"client1") {
                key.push(CLIENT_MARK);
                i += 7;
            } else {
                key.push(tok[i]);
                i += 1;
            }
        }
        if let Some(&id) = self.paths.get(&key) {
            return Ok(id);
        }
        let id = self.lf.path_ends.len() as u32;
        self.lf.path_data.extend_from_slice(&key);
        self.lf.path_ends.push(self.lf.path_data.len() as u32);
        self.paths.insert(key, id);
        Ok(id)
    }

    fn handle(&mut self, h: i64) -> u32 {
        *self.handles.entry(h).or_insert_with(|| {
            self.lf.handles.push(h);
            (self.lf.handles.len() - 1) as u32
        })
    }
}

pub struct Replay {
    spec: ReplaySpec,
    load: Arc<LoadFile>,
    /// A zeroed buffer every client writes from (dbench writes calloc'ed buffers).
    zeros: Vec<u8>,
}

impl Replay {
    pub fn new(job: &Job, spec: ReplaySpec) -> Result<Replay> {
        spec.validate(job)?;
        if !spec.loadfile.is_file() {
            return Err(EngineError::invalid(
                "loadfile",
                format!("{} does not exist: install Debian package dbench or give loadfile=PATH", spec.loadfile.display()),
            ));
        }
        let load = Arc::new(LoadFile::open(&spec.loadfile)?);
        let zeros = vec![0u8; load.max_io.max(1) as usize];
        Ok(Replay { spec, load, zeros })
    }

    pub fn load_file(&self) -> &Arc<LoadFile> {
        &self.load
    }

    fn clients_dir(job: &Job) -> PathBuf {
        job.dir.join("clients")
    }

    fn setup(&self, job: &Job) -> Result<PhaseReport> {
        let base = Self::clients_dir(job);
        mkdir_ok(&base)?;
        for id in 0..job.threads {
            mkdir_ok(&base.join(format!("client{id}")))?;
        }
        let mut report = PhaseReport::new("setup");
        report.threads = job.threads;
        report.counters.insert("clients".into(), job.threads as u64);
        Ok(report)
    }

    fn run(&self, job: &Job, ctl: &Control) -> Result<PhaseReport> {
        let spec = &self.spec;
        let lf: &LoadFile = &self.load;
        let timing = PhaseTiming {
            warmup_ns: spec.warmup_ns(),
            duration_ns: spec.duration_s.map(|d| (d * 1e9) as u64),
            interval_ns: job.interval_ns(),
        };
        let work_total = match (spec.passes, spec.duration_s) {
            (Some(p), None) => p * lf.ops.iter().filter(|o| o.kind != SLEEP).count() as u64 * job.threads as u64,
            _ => 0,
        };
        let base = job.dir.as_os_str().as_bytes().to_vec();
        let (mut report, results) = run_threads(
            "run",
            job.threads,
            timing,
            ctl,
            KINDS,
            2,
            work_total,
            |tid| Ok(Client::new(tid, &base, lf, &self.zeros, spec.resolve_names)),
            |c, rec| c.replay(rec, spec.passes),
        )?;
        let mut mismatches = [0u64; NKINDS];
        let mut samples: Vec<String> = Vec::new();
        let (mut passes, mut reused, mut short) = (0u64, 0u64, 0u64);
        for r in &results {
            for k in 0..NKINDS {
                mismatches[k] += r.mismatches[k];
            }
            passes += r.passes;
            reused += r.handles_reused;
            short += r.short_reads;
            samples.extend(r.samples.iter().cloned());
        }
        for (k, &n) in mismatches.iter().enumerate() {
            if n > 0 {
                report.counters.insert(format!("mismatch.{}", KINDS[k]), n);
                let first: Vec<&String> = samples.iter().filter(|s| s.starts_with(&format!("{} ", KINDS[k]))).take(3).collect();
                report.warnings.push(format!(
                    "{}: {n} result(s) differed from the status the load file expects (first: {})",
                    KINDS[k],
                    first.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; ")
                ));
            }
        }
        report.counters.insert("mismatches".into(), mismatches.iter().sum());
        report.counters.insert("passes_completed".into(), passes);
        report.counters.insert("clients".into(), job.threads as u64);
        if short > 0 {
            report.counters.insert("short_reads".into(), short);
        }
        if reused > 0 {
            report.counters.insert("handles_reopened".into(), reused);
            report.warnings.push(format!("{reused} NTCreateX reused a handle that was still open; the old file was closed"));
        }
        // dbench's figure: requested ReadX + WriteX bytes / time, in 10^6 bytes/s.
        let mb_per_s = if report.elapsed_s > 0.0 { report.total.bytes as f64 / report.elapsed_s / 1e6 } else { 0.0 };
        report.extra = serde_json::json!({
            "loadfile": lf.source.display().to_string(),
            "lines_parsed": lf.ops.len(),
            "distinct_paths": lf.path_count(),
            "distinct_handles": lf.handles.len(),
            "pass_read_bytes": lf.read_bytes,
            "pass_write_bytes": lf.write_bytes,
            "mb_per_s": mb_per_s,
            "resolve_names": self.spec.resolve_names,
        });
        Ok(report)
    }

    fn cleanup(&self, job: &Job) -> Result<PhaseReport> {
        let base = Self::clients_dir(job);
        let mut removed = 0u64;
        for id in 0..job.threads {
            let d = base.join(format!("client{id}"));
            match std::fs::remove_dir_all(&d) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(EngineError::io(format!("removing {}", d.display()), e)),
            }
        }
        // Like dbench's nb_cleanup: remove clients/ only when nothing else is left in it.
        let _ = std::fs::remove_dir(&base);
        let mut report = PhaseReport::new("cleanup");
        report.counters.insert("client_dirs_removed".into(), removed);
        Ok(report)
    }
}

impl Workload for Replay {
    fn phases(&self) -> &'static [&'static str] {
        &["setup", "run", "cleanup"]
    }

    fn run_phase(&mut self, phase: &str, job: &Job, ctl: &Control) -> Result<PhaseReport> {
        match phase {
            "setup" => self.setup(job),
            "run" => self.run(job, ctl),
            "cleanup" => self.cleanup(job),
            _ => unreachable!("checked by Session"),
        }
    }
}

fn mkdir_ok(p: &Path) -> Result<()> {
    match std::fs::create_dir(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && p.is_dir() => Ok(()),
        Err(e) => Err(EngineError::io(format!("creating {}", p.display()), e)),
    }
}

/// What one client hands back after the run.
struct ClientResult {
    mismatches: [u64; NKINDS],
    samples: Vec<String>,
    passes: u64,
    handles_reused: u64,
    short_reads: u64,
}

/// A recorded mismatch, kept as numbers on the hot path and formatted at the end.
#[derive(Clone, Copy)]
struct Sample {
    op: u32,
    errno: i32,
}

const MAX_SAMPLES: usize = 8;
const DENTS_BUF: usize = 32 * 1024;

/// One dbench client: its name, its open-file table and reusable buffers.
struct Client<'a> {
    id: usize,
    lf: &'a LoadFile,
    zeros: &'a [u8],
    resolve: bool,
    cname: Vec<u8>,
    base: Vec<u8>,
    /// base + NUL, for statvfs.
    base_c: Vec<u8>,
    /// Index of the operation being run (for mismatch samples).
    cur: u32,
    p1: Vec<u8>,
    p2: Vec<u8>,
    /// Per dense handle: the open fd (-1: closed) and the path it was opened by.
    fds: Vec<RawFd>,
    names: Vec<u32>,
    rbuf: Vec<u8>,
    dents: Vec<Vec<u8>>,
    mismatches: [u64; NKINDS],
    samples: Vec<Sample>,
    handles_reused: u64,
    short_reads: u64,
}

impl<'a> Client<'a> {
    fn new(id: usize, base: &[u8], lf: &'a LoadFile, zeros: &'a [u8], resolve: bool) -> Client<'a> {
        Client {
            id,
            lf,
            zeros,
            resolve,
            cname: format!("client{id}").into_bytes(),
            base: base.to_vec(),
            base_c: base.iter().copied().chain([0]).collect(),
            cur: 0,
            p1: Vec::with_capacity(4096),
            p2: Vec::with_capacity(4096),
            fds: vec![-1; lf.handles.len()],
            names: vec![NONE; lf.handles.len()],
            rbuf: vec![0u8; lf.max_io.max(1) as usize],
            dents: vec![vec![0u8; DENTS_BUF]],
            mismatches: [0; NKINDS],
            samples: Vec::with_capacity(MAX_SAMPLES),
            handles_reused: 0,
            short_reads: 0,
        }
    }

    /// The hot loop: replay the file from the top, again and again, until the
    /// deadline, the pass limit, or a stop.
    fn replay(&mut self, rec: &mut Recorder, passes: Option<u64>) -> Result<ClientResult> {
        let lf = self.lf;
        let mut done = 0u64;
        let mut now = now_ns();
        let outcome = 'outer: loop {
            for (i, op) in lf.ops.iter().enumerate() {
                self.cur = i as u32;
                if rec.should_stop(now) {
                    break 'outer Ok(());
                }
                if op.path != NONE {
                    build(&mut self.p1, &self.base, lf.path(op.path), &self.cname);
                }
                if op.path2() != NONE {
                    build(&mut self.p2, &self.base, lf.path(op.path2()), &self.cname);
                }
                let t0 = now_ns();
                let bytes = match self.exec(op) {
                    Ok(b) => b,
                    Err(e) => break 'outer Err(e),
                };
                now = now_ns();
                if op.kind != SLEEP {
                    rec.record(op.kind as usize, bytes, t0, now);
                }
            }
            done += 1;
            if passes.is_some_and(|p| done >= p) {
                break Ok(());
            }
        };
        self.close_all();
        outcome?;
        let samples = self.samples.iter().map(|s| self.describe(s)).collect();
        Ok(ClientResult {
            mismatches: self.mismatches,
            samples,
            passes: done,
            handles_reused: self.handles_reused,
            short_reads: self.short_reads,
        })
    }

    fn close_all(&mut self) {
        for fd in self.fds.iter_mut() {
            if *fd >= 0 {
                // SAFETY: the client owns its fds.
                unsafe { libc::close(*fd) };
                *fd = -1;
            }
        }
    }

    fn describe(&self, s: &Sample) -> String {
        let op = &self.lf.ops[s.op as usize];
        let mut path = Vec::new();
        if op.path != NONE {
            build(&mut path, b"", self.lf.path(op.path), &self.cname);
            path.pop();
            path.remove(0);
        } else if op.handle != NONE {
            path = format!("handle {}", self.lf.handles[op.handle as usize]).into_bytes();
        }
        let got = if s.errno == 0 {
            "succeeded".to_string()
        } else if s.errno < 0 {
            format!("returned {} bytes", -s.errno)
        } else {
            std::io::Error::from_raw_os_error(s.errno).to_string()
        };
        format!(
            "{} line {} {}: expected {}, {got}",
            KINDS[op.kind as usize],
            op.line,
            String::from_utf8_lossy(&path),
            self.lf.statuses[op.status as usize]
        )
    }

    #[inline]
    fn mismatch(&mut self, op: &Op, errno: i32) {
        self.mismatches[op.kind as usize] += 1;
        // Distinct lines only: the same line mismatching on every pass says nothing new.
        if self.samples.len() < MAX_SAMPLES && !self.samples.iter().any(|s| s.op == self.cur) {
            self.samples.push(Sample { op: self.cur, errno });
        }
    }

    /// A failure dbench treats as fatal for the client (it exits, and dbench with it).
    fn fatal(&self, op: &Op, what: &str, err: std::io::Error) -> EngineError {
        // Paths relative to the job's directory, as the load file names them.
        let p = |b: &[u8]| String::from_utf8_lossy(&b[self.base.len() + 1..b.len().saturating_sub(1)]).into_owned();
        let mut ctx = format!("{} line {}: client{} {} ", self.lf.source.display(), op.line, self.id, KINDS[op.kind as usize]);
        if op.path != NONE {
            ctx.push_str(&p(&self.p1));
            ctx.push(' ');
        }
        if op.path2() != NONE {
            ctx.push_str(&p(&self.p2));
            ctx.push(' ');
        }
        ctx.push_str(what);
        EngineError::io(ctx, err)
    }

    fn fd_of(&self, op: &Op) -> Result<RawFd> {
        let fd = self.fds[op.handle as usize];
        if fd < 0 {
            // dbench's find_handle(): "handle %d was not found" and exit(1).
            return Err(self.fatal(
                op,
                &format!("uses handle {}, which is not open (its NTCreateX failed or never ran)", self.lf.handles[op.handle as usize]),
                std::io::Error::from_raw_os_error(libc::EBADF),
            ));
        }
        Ok(fd)
    }

    /// One load-file operation as dbench's fileio.c does it. Returns the bytes
    /// it counts toward MB/s (dbench's `child->bytes`: the requested size).
    #[inline]
    fn exec(&mut self, op: &Op) -> Result<u64> {
        match op.kind {
            NTCREATEX => {
                // nb_createx
                let p = cptr(&self.p1);
                self.resolve_name(true);
                let mut flags = libc::O_RDWR;
                let disp = op.b;
                if disp == FILE_CREATE {
                    flags |= libc::O_CREAT;
                }
                if disp == FILE_OVERWRITE || disp == FILE_OVERWRITE_IF {
                    flags |= libc::O_CREAT | libc::O_TRUNC;
                }
                if op.a & FILE_DIRECTORY_FILE != 0 {
                    // SAFETY: p is NUL-terminated.
                    unsafe { libc::mkdir(p, 0o700) };
                    flags = libc::O_RDONLY | libc::O_DIRECTORY;
                }
                // SAFETY: p is NUL-terminated.
                let mut fd = unsafe { libc::open(p, flags | libc::O_CLOEXEC, 0o600) };
                if fd < 0 && errno() == libc::EISDIR {
                    fd = unsafe { libc::open(p, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC, 0o600) };
                }
                if fd < 0 {
                    if op.expect_ok {
                        let e = errno();
                        self.mismatch(op, e);
                    }
                    return Ok(0);
                }
                if !op.expect_ok {
                    self.mismatch(op, 0);
                    unsafe { libc::close(fd) };
                    return Ok(0);
                }
                let h = op.handle as usize;
                if self.fds[h] >= 0 {
                    self.handles_reused += 1;
                    unsafe { libc::close(self.fds[h]) };
                }
                self.fds[h] = fd;
                self.names[h] = op.path;
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                // SAFETY: fd is open, st is a valid out-pointer.
                unsafe { libc::fstat(fd, &mut st) };
                Ok(0)
            }
            CLOSE => {
                let fd = self.fd_of(op)?;
                unsafe { libc::close(fd) };
                self.fds[op.handle as usize] = -1;
                self.names[op.handle as usize] = NONE;
                Ok(0)
            }
            RENAME => {
                self.resolve_name(true);
                self.resolve_name(false);
                // SAFETY: both NUL-terminated.
                let r = unsafe { libc::rename(cptr(&self.p1), cptr(&self.p2)) };
                self.check_fatal(op, r)?;
                Ok(0)
            }
            UNLINK => {
                self.resolve_name(true);
                let r = unsafe { libc::unlink(cptr(&self.p1)) };
                self.check_fatal(op, r)?;
                Ok(0)
            }
            RMDIR => {
                self.resolve_name(true);
                let r = unsafe { libc::rmdir(cptr(&self.p1)) };
                self.check_fatal(op, r)?;
                Ok(0)
            }
            MKDIR => {
                // nb_mkdir ignores the result and the expected status.
                self.resolve_name(true);
                unsafe { libc::mkdir(cptr(&self.p1), 0o777) };
                Ok(0)
            }
            DELTREE => {
                // nb_deltree: unlink every non-directory below, recursively; directories stay.
                let fd = opendir(cptr(&self.p1));
                if fd >= 0 {
                    self.deltree(fd, 0);
                }
                Ok(0)
            }
            QPATHINFO => {
                let found = self.resolve_name(true);
                if found != op.expect_ok {
                    let e = if found { 0 } else { libc::ENOENT };
                    self.mismatch(op, e);
                }
                Ok(0)
            }
            QFILEINFO => {
                let fd = self.fd_of(op)?;
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                unsafe { libc::fstat(fd, &mut st) };
                Ok(0)
            }
            QFSINFO => {
                // statvfs(child->directory): the base directory.
                let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
                unsafe { libc::statvfs(cptr(&self.base_c), &mut st) };
                Ok(0)
            }
            SFILEINFO => {
                // fstat, then utime(name, atime - 10, mtime - 12).
                let fd = self.fd_of(op)?;
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                unsafe { libc::fstat(fd, &mut st) };
                let name = self.names[op.handle as usize];
                build(&mut self.p2, &self.base, self.lf.path(name), &self.cname);
                let tm = libc::utimbuf { actime: st.st_atime - 10, modtime: st.st_mtime - 12 };
                unsafe { libc::utime(cptr(&self.p2), &tm) };
                Ok(0)
            }
            FIND => {
                // nb_findfirst: resolve, then with a wildcard list up to maxcnt entries of the parent.
                self.resolve_name(true);
                let name_has_wild = self.p1.iter().any(|c| b"<>*?\"".contains(c));
                if !name_has_wild {
                    return Ok(0);
                }
                let Some(slash) = self.p1.iter().rposition(|&c| c == b'/') else { return Ok(0) };
                self.p1[slash] = 0;
                let fd = opendir(cptr(&self.p1));
                self.p1[slash] = b'/';
                if fd < 0 {
                    return Ok(0);
                }
                let mut left = op.b as u64;
                let buf = &mut self.dents[0];
                while left > 0 {
                    let n = getdents(fd, buf);
                    if n <= 0 {
                        break;
                    }
                    let mut off = 0usize;
                    while off < n as usize && left > 0 {
                        off += dirent_reclen(buf, off);
                        left -= 1;
                    }
                }
                unsafe { libc::close(fd) };
                Ok(0)
            }
            WRITEX => {
                let fd = self.fd_of(op)?;
                let size = op.b as usize;
                // SAFETY: zeros holds max_io >= size bytes.
                let r = unsafe { libc::pwrite(fd, self.zeros.as_ptr() as *const libc::c_void, size, op.a as libc::off_t) };
                if r < 0 {
                    return Err(self.fatal(op, "write failed", std::io::Error::last_os_error()));
                }
                if r as u64 != op.c as u64 {
                    return Err(self.fatal(
                        op,
                        &format!("wrote {r} bytes, the load file expects {}", op.c),
                        std::io::Error::from_raw_os_error(libc::EIO),
                    ));
                }
                Ok(size as u64)
            }
            READX => {
                let fd = self.fd_of(op)?;
                let size = op.b as usize;
                // SAFETY: rbuf holds max_io >= size bytes.
                let r = unsafe { libc::pread(fd, self.rbuf.as_mut_ptr() as *mut libc::c_void, size, op.a as libc::off_t) };
                if r != op.c as isize {
                    // dbench prints "read failed" and goes on.
                    self.short_reads += 1;
                    let e = if r < 0 { errno() } else { -(r as i32) };
                    self.mismatch(op, e);
                }
                Ok(size as u64)
            }
            LOCKX | UNLOCKX => {
                let fd = self.fd_of(op)?;
                let mut lock: libc::flock = unsafe { std::mem::zeroed() };
                lock.l_type = if op.kind == LOCKX { libc::F_WRLCK } else { libc::F_UNLCK } as libc::c_short;
                lock.l_whence = libc::SEEK_SET as libc::c_short;
                lock.l_start = op.a as libc::off_t;
                lock.l_len = op.b as libc::off_t;
                unsafe { libc::fcntl(fd, libc::F_SETLKW, &lock) };
                Ok(0)
            }
            FLUSH => {
                let fd = self.fd_of(op)?;
                unsafe { libc::fsync(fd) };
                Ok(0)
            }
            SLEEP => {
                unsafe { libc::usleep(op.a as libc::c_uint) };
                Ok(0)
            }
            _ => unreachable!("kinds are checked when parsing"),
        }
    }

    /// dbench: Rename, Unlink and Rmdir whose outcome differs from the expected
    /// status fail the client (`failed()` -> exit(1)), and dbench stops.
    fn check_fatal(&mut self, op: &Op, r: libc::c_int) -> Result<()> {
        let ok = r == 0;
        if ok == op.expect_ok {
            return Ok(());
        }
        let e = if ok { 0 } else { errno() };
        self.mismatch(op, e);
        let status = &self.lf.statuses[op.status as usize];
        Err(if ok {
            self.fatal(
                op,
                &format!("succeeded, but the load file expects {status}"),
                std::io::Error::other("dbench counts this as a failed client and stops"),
            )
        } else {
            self.fatal(op, &format!("failed, but the load file expects {status}"), std::io::Error::from_raw_os_error(e))
        })
    }

    /// dbench's resolve_name(): stat the name; if that fails, scan the parent
    /// directory for a case-insensitive match (Samba's pvfs_resolve_name).
    /// Returns whether stat found it. `first`: p1, else p2.
    fn resolve_name(&mut self, first: bool) -> bool {
        let buf = if first { &mut self.p1 } else { &mut self.p2 };
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: buf is NUL-terminated.
        if unsafe { libc::stat(cptr(buf), &mut st) } == 0 {
            return true;
        }
        if !self.resolve {
            return false;
        }
        let Some(slash) = buf.iter().rposition(|&c| c == b'/') else { return false };
        buf[slash] = 0;
        let fd = opendir(cptr(buf));
        buf[slash] = b'/';
        if fd < 0 {
            return false;
        }
        let want = &buf[slash + 1..buf.len() - 1];
        let dents = &mut self.dents[0];
        'scan: loop {
            let n = getdents(fd, dents);
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            while off < n as usize {
                let name = dirent_name(dents, off);
                if name.eq_ignore_ascii_case(want) {
                    break 'scan;
                }
                off += dirent_reclen(dents, off);
            }
        }
        unsafe { libc::close(fd) };
        false
    }

    /// Recursive part of nb_deltree on an open directory (closed here).
    fn deltree(&mut self, fd: RawFd, depth: usize) {
        if self.dents.len() <= depth + 1 {
            self.dents.push(vec![0u8; DENTS_BUF]);
        }
        let mut buf = std::mem::take(&mut self.dents[depth + 1]);
        loop {
            let n = getdents(fd, &mut buf);
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            while off < n as usize {
                let reclen = dirent_reclen(&buf, off);
                let name = dirent_name(&buf, off);
                if name != b"." && name != b".." {
                    // The name is NUL-terminated inside the record.
                    let cname = unsafe { buf.as_ptr().add(off + 19) } as *const libc::c_char;
                    let mut st: libc::stat = unsafe { std::mem::zeroed() };
                    if unsafe { libc::fstatat(fd, cname, &mut st, 0) } == 0 {
                        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
                            let sub = unsafe { libc::openat(fd, cname, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
                            if sub >= 0 {
                                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                                unsafe { libc::fstat(sub, &mut st) }; // as opendir does
                                self.deltree(sub, depth + 1);
                            }
                        } else {
                            unsafe { libc::unlinkat(fd, cname, 0) };
                        }
                    }
                }
                off += reclen;
            }
        }
        self.dents[depth + 1] = buf;
        unsafe { libc::close(fd) };
    }
}

/// base + path (with CLIENT_MARK -> client name) + NUL, into a reused buffer.
#[inline]
fn build(buf: &mut Vec<u8>, base: &[u8], path: &[u8], cname: &[u8]) {
    buf.clear();
    buf.extend_from_slice(base);
    let mut first = true;
    for seg in path.split(|&b| b == CLIENT_MARK) {
        if !first {
            buf.extend_from_slice(cname);
        }
        first = false;
        buf.extend_from_slice(seg);
    }
    buf.push(0);
}

#[inline]
fn cptr(b: &[u8]) -> *const libc::c_char {
    debug_assert_eq!(b.last(), Some(&0));
    b.as_ptr() as *const libc::c_char
}

#[inline]
fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// glibc's opendir() without its allocation: openat(O_DIRECTORY|O_NONBLOCK) then
/// fstat (glibc sizes its buffer from st_blksize), so the filesystem sees what
/// dbench's opendir/readdir make it do.
fn opendir(path: *const libc::c_char) -> RawFd {
    // SAFETY: path is NUL-terminated.
    let fd = unsafe { libc::open(path, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NONBLOCK) };
    if fd >= 0 {
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        unsafe { libc::fstat(fd, &mut st) };
    }
    fd
}

fn getdents(fd: RawFd, buf: &mut [u8]) -> isize {
    // SAFETY: buf is writable for its length.
    unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) as isize }
}

/// struct linux_dirent64 { u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
#[inline]
fn dirent_reclen(buf: &[u8], off: usize) -> usize {
    u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize
}

#[inline]
fn dirent_name(buf: &[u8], off: usize) -> &[u8] {
    let reclen = dirent_reclen(buf, off);
    let raw = &buf[off + 19..off + reclen];
    let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
    &raw[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> std::result::Result<LoadFile, String> {
        LoadFile::parse(Path::new("t.txt"), text.as_bytes()).map_err(|e| e.to_string())
    }

    #[test]
    fn tokens_follow_dbench_next_token() {
        let lf = parse("Rename \"\\clients\\client1\\a b\" \"\\clients\\client1\\c\" NT_STATUS_OK\n").unwrap();
        let op = lf.ops[0];
        assert_eq!(lf.path(op.path), b"/clients/\x01/a b");
        assert_eq!(lf.path(op.path2()), b"/clients/\x01/c");
    }

    #[test]
    fn ops_stay_compact() {
        assert_eq!(std::mem::size_of::<Op>(), 28);
    }

    #[test]
    fn numbers_parse_like_strtol_base_0() {
        assert_eq!(parse_int(b"0x40"), Some(64));
        assert_eq!(parse_int(b"010"), Some(8));
        assert_eq!(parse_int(b"16385"), Some(16385));
        assert_eq!(parse_int(b"0"), Some(0));
        assert_eq!(parse_int(b"12ab"), None);
    }

    #[test]
    fn comments_blank_lines_and_timestamps_are_skipped() {
        let lf = parse("# comment\n\nx\n0.125 Close 5 NT_STATUS_OK\n").unwrap();
        assert_eq!(lf.ops.len(), 1);
        assert_eq!(lf.ops[0].line, 4);
        assert_eq!(lf.ops[0].kind, CLOSE);
    }

    #[test]
    fn every_client1_is_marked_and_rebuilt() {
        let lf = parse("Unlink \"\\clients\\client1\\client1.txt\" 0x6 NT_STATUS_OK\n").unwrap();
        let mut b = Vec::new();
        build(&mut b, b"/d", lf.path(lf.ops[0].path), b"client7");
        assert_eq!(b, b"/d/clients/client7/client7.txt\0");
    }

    #[test]
    fn expected_status_decides_ok() {
        let lf = parse("Close 1 NT_STATUS_OK\nClose 1 0x0\nClose 1 0xc0000034\nClose 1 NT_STATUS_NO_SUCH_FILE\nClose 1 SUCCESS\n").unwrap();
        let ok: Vec<bool> = lf.ops.iter().map(|o| o.expect_ok).collect();
        assert_eq!(ok, [true, true, false, false, true]);
    }
}
