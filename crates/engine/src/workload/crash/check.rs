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

pub(super) fn check_phase(spec: &CrashSpec, algo: Checksum, job: &Settings) -> Result<PhaseReport> {
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
                                Ok(h) => (
                                    if good { "stale generation" } else { "another file's block" },
                                    Some(h.to_json()),
                                    None,
                                ),
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
