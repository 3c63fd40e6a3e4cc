//! The crash family's `check` phase: read the durability ledger as of the cut,
//! then every block the ledger knows, and report what was promised and lost.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use serde::Deserialize;

use super::spec::CrashSpec;
use crate::error::{EngineError, Result};
use crate::measure::now_ns;
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::verify::{check_block, Checksum};

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

/// Every counter the check reports, zero when nothing happened.
const COUNTERS: [&str; 17] = [
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
];

/// Whether a check's counters show a promise broken (anything lost beyond fsync) or a block of
/// garbage: the run's ledger is then evidence.
pub(super) fn broke_promises(counters: &BTreeMap<String, u64>) -> bool {
    counters.iter().any(|(k, &n)| n > 0 && (k.ends_with("_beyond_fsync") || k == "blocks_garbage"))
}

struct Tally {
    counters: BTreeMap<&'static str, u64>,
    findings: Vec<serde_json::Value>,
    max_findings: usize,
}

impl Tally {
    fn new(max_findings: usize) -> Self {
        Tally { counters: COUNTERS.iter().map(|&k| (k, 0)).collect(), findings: Vec::new(), max_findings }
    }

    fn add(&mut self, k: &'static str, n: u64) {
        *self.counters.entry(k).or_insert(0) += n;
    }

    /// Keeps a finding while fewer than `max_findings` are kept (the counters count them all).
    fn finding(&mut self, make: impl FnOnce() -> serde_json::Value) {
        if self.findings.len() < self.max_findings {
            self.findings.push(make());
        }
    }
}

fn is_zero(buf: &[u8]) -> bool {
    buf.iter().all(|&b| b == 0)
}

pub(super) fn check_phase(spec: &CrashSpec, algo: Checksum, job: &Settings) -> Result<PhaseReport> {
    let t_start = now_ns();
    let promises = read_ledger(&spec.ledger, spec.cut_ns)?;
    let mut t = Tally::new(spec.max_findings);
    check_entries(&promises, &job.dir, &mut t);
    let mut buf = vec![0u8; spec.block_size as usize];
    for (name, facts) in &promises.files {
        let file = FileCheck {
            name,
            facts,
            entry_promised: promises.entries.contains(name),
            path: job.dir.join(name),
            block_size: spec.block_size,
            algo,
        };
        file.check(&mut buf, &mut t)?;
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

/// Directory entries: every promised name must exist.
fn check_entries(promises: &Promises, dir: &Path, t: &mut Tally) {
    t.add("entries_promised", promises.entries.len() as u64);
    for name in &promises.entries {
        if std::fs::symlink_metadata(dir.join(name)).is_err() {
            t.add("entries_lost_beyond_fsync", 1);
            t.finding(|| serde_json::json!({"kind": "entry_lost", "path": name}));
        }
    }
}

/// One file the ledger knows, checked block by block against what was promised for it.
struct FileCheck<'a> {
    name: &'a str,
    facts: &'a FileFacts,
    /// Its directory entry was made durable (POSIX: fsync of a file does not promise its entry).
    entry_promised: bool,
    path: std::path::PathBuf,
    block_size: u64,
    algo: Checksum,
}

impl FileCheck<'_> {
    fn check(&self, buf: &mut [u8], t: &mut Tally) -> Result<()> {
        let (facts, bsize) = (self.facts, self.block_size);
        t.add("files_known", 1);
        let promised_blocks = facts.promised.iter().filter(|&&g| g > 0).count() as u64;
        let promised_len = facts.promised.iter().rposition(|&g| g > 0).map(|i| i as u64 + 1).unwrap_or(0);
        let data_promised = promised_blocks > 0;
        if data_promised {
            t.add("files_promised", 1);
            t.add("blocks_promised", promised_blocks);
        }
        // A missing file breaks a promise only once its name was durable too; a file that is there
        // must hold its data.
        let file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if data_promised && self.entry_promised {
                    t.add("files_lost_beyond_fsync", 1);
                    t.add("blocks_lost_beyond_fsync", promised_blocks);
                    t.add("bytes_lost_beyond_fsync", promised_blocks * bsize);
                    t.finding(|| {
                        serde_json::json!({"kind": "file_lost", "path": self.name,
                            "promised_blocks": promised_blocks})
                    });
                } else {
                    t.add("files_missing_unpromised", 1);
                }
                return Ok(());
            }
            Err(e) => return Err(EngineError::io(format!("open {}", self.path.display()), e)),
        };
        let size = file.metadata().map_err(|e| EngineError::io(format!("stat {}", self.path.display()), e))?.len();
        let nblocks = size.div_ceil(bsize);
        if size < promised_len * bsize {
            if data_promised {
                t.add("files_truncated_beyond_fsync", 1);
                t.finding(|| {
                    serde_json::json!({"kind": "truncated", "path": self.name,
                        "size_bytes": size, "promised_bytes": promised_len * bsize})
                });
            } else {
                t.add("files_short_unpromised", 1);
            }
        }
        let mut trailing_zero_blocks = 0u64;
        for b in 0..nblocks.max(promised_len) {
            let off = b * bsize;
            let in_file = b < nblocks;
            if in_file {
                self.read_block(&file, buf, off)?;
                t.add("blocks_read", 1);
            }
            // Past the end, a partial block reads as zeros beyond EOF: judged as read.
            let zero = !in_file || is_zero(buf);
            if in_file {
                trailing_zero_blocks = if zero { trailing_zero_blocks + 1 } else { 0 };
            }
            let want = if data_promised { facts.promised.get(b as usize).copied().unwrap_or(0) } else { 0 };
            self.judge_block(buf, off, zero, in_file, want, t);
        }
        if trailing_zero_blocks > 0 {
            t.add("files_zero_tail", 1);
        }
        Ok(())
    }

    /// The block at `off` into `buf`, zero-filled past what the file holds.
    fn read_block(&self, file: &std::fs::File, buf: &mut [u8], off: u64) -> Result<()> {
        use std::os::unix::fs::FileExt;
        buf.fill(0);
        let mut got = 0usize;
        while got < buf.len() {
            match file.read_at(&mut buf[got..], off + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return Err(EngineError::io(format!("read {} at {off}", self.path.display()), e)),
            }
        }
        Ok(())
    }

    /// One block against its promise: `want` is the promised generation (0: none promised).
    fn judge_block(&self, buf: &[u8], off: u64, zero: bool, in_file: bool, want: u64, t: &mut Tally) {
        let verdict = if zero { Err(None) } else { check_block(buf, off, self.algo).map_err(Some) };
        let good = matches!(&verdict, Ok(h) if h.seed == self.facts.seed && h.thread == self.facts.tid);
        if !good && !zero {
            t.add("blocks_garbage", 1);
        }
        if want == 0 {
            if zero && in_file {
                t.add("blocks_zero_unpromised", 1);
            }
            return;
        }
        match &verdict {
            Ok(h) if good && h.generation >= want => {
                t.add("blocks_intact", 1);
                if h.generation > want {
                    t.add("blocks_newer_than_promised", 1);
                }
            }
            _ => {
                t.add("blocks_lost_beyond_fsync", 1);
                t.add("bytes_lost_beyond_fsync", self.block_size);
                t.finding(|| {
                    let (why, found, mismatch) = match &verdict {
                        Ok(h) => {
                            (if good { "stale generation" } else { "another file's block" }, Some(h.to_json()), None)
                        }
                        Err(Some(m)) => ("header mismatch", None, Some(m.to_json())),
                        Err(None) => (if in_file { "zeros" } else { "beyond end of file" }, None, None),
                    };
                    serde_json::json!({"kind": "block_lost", "path": self.name,
                        "offset": off, "promised_generation": want, "why": why,
                        "found": found, "mismatch": mismatch})
                });
            }
        }
    }
}
