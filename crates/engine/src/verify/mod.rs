//! Data verification: every block a verifying workload writes carries a
//! header (magic, offset, length, writer thread, seed, write number) and a
//! checksum of its payload; reads check them. `header` holds the format,
//! `payload` the bytes after the header and the filling of whole blocks,
//! `check` the check of a block read back and what a mismatch reports;
//! docs/verify.md describes the layout for users.
//!
//! Around it, what a workload needs: a `LastWrites` table (which write each block of the
//! data set should hold, one atomic word per block, so any thread can record a
//! write without a lock) and a per-thread `Checker` (fills blocks before writes,
//! checks them after reads, counts, and keeps the first mismatches in full).
//! Nothing here allocates on the normal path; a mismatch is cold and may.

pub mod check;
pub mod content;
pub mod header;
pub mod meta_pattern;
pub mod payload;

use std::sync::atomic::{AtomicU64, Ordering};

pub use check::{check_block, check_block_expect, check_prefix, Mismatch, MismatchKind};
pub use header::{BlockHeader, Checksum, CHECKSUM_LEN, HEADER_LEN, MAX_HEADER_LEN, MIN_BLOCK};
pub use payload::{fill_block, fill_block_planned, fill_blocks, Crc32cPlan};

use crate::report::PhaseReport;

/// Mismatches kept in full per thread and phase (all are counted).
pub const KEEP_MISMATCHES: usize = 16;

/// The write each block of a data set should hold: (thread, generation), per
/// file and block. 8 bytes per block. Entry 0 means "no write recorded".
pub struct LastWrites {
    entries: Vec<AtomicU64>,
    blocks_per_file: u64,
    block: u64,
}

impl LastWrites {
    pub fn new(files: usize, file_len: u64, block: u64) -> LastWrites {
        let blocks_per_file = file_len / block;
        let n = files as u64 * blocks_per_file;
        LastWrites { entries: (0..n).map(|_| AtomicU64::new(0)).collect(), blocks_per_file, block }
    }

    pub fn block(&self) -> u64 {
        self.block
    }

    /// Bytes per file the table covers.
    pub fn len_bytes(&self) -> u64 {
        self.blocks_per_file * self.block
    }

    #[inline]
    fn index(&self, file: u32, offset: u64) -> Option<usize> {
        let b = offset / self.block;
        (b < self.blocks_per_file).then(|| (file as u64 * self.blocks_per_file + b) as usize)
    }

    /// Record that `thread` wrote write number `generation` over [offset, offset + len) of `file`.
    #[inline]
    pub fn record(&self, file: u32, offset: u64, len: u64, thread: u32, generation: u64) {
        let v = ((generation << 16) | (thread as u64 & 0xFFFF)) + 1;
        let mut o = offset;
        while o < offset + len {
            if let Some(i) = self.index(file, o) {
                self.entries[i].store(v, Ordering::Relaxed);
            }
            o += self.block;
        }
    }

    /// The write the block at `offset` of `file` should hold, if one was recorded.
    #[inline]
    pub fn expected(&self, file: u32, offset: u64) -> Option<(u32, u64)> {
        let v = self.entries[self.index(file, offset)?].load(Ordering::Relaxed);
        (v != 0).then(|| (((v - 1) & 0xFFFF) as u32, (v - 1) >> 16))
    }
}

/// A mismatch with where it was found.
#[derive(Clone, Debug)]
pub struct FileMismatch {
    pub file: u32,
    pub phase: &'static str,
    pub mismatch: Mismatch,
}

/// One thread's verification state for a phase.
pub struct Checker {
    pub algo: Checksum,
    /// Verify block size: requests carry one header per block (change it with `set_block`).
    pub block: usize,
    /// crc32c of written blocks from tables instead of a pass over the data (see `Crc32cPlan`).
    plan: Option<Crc32cPlan>,
    pub seed: u64,
    pub thread: u32,
    pub phase: &'static str,
    pub blocks_written: u64,
    pub blocks_checked: u64,
    pub mismatches: u64,
    /// Reads of written blocks made during the run to check them (fio's verify_backlog).
    pub backlog_reads: u64,
    pub kept: Vec<FileMismatch>,
    /// Keep the bytes of the first corrupt blocks, for `merge_into` to write out (fio's verify_dump).
    pub dump: bool,
    /// (file, offset, the block as read) of the first corrupt blocks, with `dump`.
    pub dumped: Vec<(u32, u64, Vec<u8>, Option<BlockHeader>)>,
}

impl Checker {
    pub fn new(algo: Checksum, block: usize, seed: u64, thread: u32, phase: &'static str) -> Checker {
        Checker {
            algo,
            block,
            plan: Crc32cPlan::for_checksum(algo, block),
            seed,
            thread,
            phase,
            blocks_written: 0,
            blocks_checked: 0,
            mismatches: 0,
            backlog_reads: 0,
            kept: Vec::with_capacity(KEEP_MISMATCHES),
            dump: false,
            dumped: Vec::new(),
        }
    }

    /// A new block size (tables are rebuilt: call it outside timed work).
    pub fn set_block(&mut self, block: usize) {
        if block != self.block {
            self.block = block;
            self.plan = Crc32cPlan::for_checksum(self.algo, block);
        }
    }

    /// Fill `buf` (a whole number of blocks) for a write at `offset`, as write number `generation`.
    #[inline]
    pub fn fill(&mut self, buf: &mut [u8], offset: u64, generation: u64) {
        match &self.plan {
            Some(p) => {
                for (i, b) in buf.chunks_mut(self.block).enumerate() {
                    let off = offset + (i * self.block) as u64;
                    if b.len() == self.block {
                        fill_block_planned(b, off, generation, self.thread, self.seed, p);
                    } else {
                        fill_block(b, off, generation, self.thread, self.seed, self.algo);
                    }
                }
            }
            None => fill_blocks(buf, self.block, offset, generation, self.thread, self.seed, self.algo),
        }
        self.blocks_written += buf.len().div_ceil(self.block) as u64;
    }

    /// Check `buf` read from `offset` of `file`, block by block; `expect(offset)`
    /// gives the write a block should hold when it is known. Returns the
    /// number of bad blocks.
    #[inline]
    pub fn check<E: Fn(u64) -> Option<(u32, u64)>>(&mut self, buf: &[u8], file: u32, offset: u64, expect: E) -> u64 {
        let mut bad = 0;
        for (i, b) in buf.chunks(self.block).enumerate() {
            let off = offset + (i * self.block) as u64;
            self.blocks_checked += 1;
            if let Err(m) = check_block_expect(b, off, self.algo, expect(off)) {
                bad += 1;
                if self.dump && self.dumped.len() < KEEP_MISMATCHES {
                    self.dumped.push((file, off, b.to_vec(), m.expected));
                }
                self.note(file, m);
            }
        }
        bad
    }

    #[cold]
    pub fn note(&mut self, file: u32, m: Mismatch) {
        self.mismatches += 1;
        if self.kept.len() < KEEP_MISMATCHES {
            self.kept.push(FileMismatch { file, phase: self.phase, mismatch: m });
        }
    }
}

/// Merge the threads' checkers into `report`: counters `verify_blocks_written`,
/// `verify_blocks_checked`, `verify_mismatches`; `extra.verify` with the kept
/// mismatches (file named by `path(file)`), and a warning when any block failed.
pub fn merge_into<'a, I, P>(report: &mut PhaseReport, checkers: I, path: P, notes: serde_json::Value)
where
    I: IntoIterator<Item = &'a Checker>,
    P: Fn(u32) -> String,
{
    let (mut w, mut c, mut m, mut backlog) = (0, 0, 0, 0);
    let mut kept: Vec<&FileMismatch> = vec![];
    let mut dumps: Vec<serde_json::Value> = vec![];
    let mut algo = None;
    let mut block = 0;
    for ch in checkers {
        w += ch.blocks_written;
        c += ch.blocks_checked;
        m += ch.mismatches;
        backlog += ch.backlog_reads;
        for (file, offset, found, expected) in &ch.dumped {
            dumps.push(dump_block(&path(*file), *offset, found, expected.as_ref()));
        }
        kept.extend(ch.kept.iter());
        algo = Some(ch.algo);
        block = ch.block;
    }
    kept.sort_by_key(|f| (f.file, f.mismatch.offset));
    kept.truncate(KEEP_MISMATCHES);
    report.counters.insert("verify_blocks_written".into(), w);
    report.counters.insert("verify_blocks_checked".into(), c);
    report.counters.insert("verify_mismatches".into(), m);
    if backlog > 0 {
        report.counters.insert("verify_backlog_reads".into(), backlog);
    }
    if let Some(first) = kept.first() {
        report.warnings.push(format!(
            "verify: {m} corrupt block(s); first in {}: {}",
            path(first.file),
            first.mismatch
        ));
    }
    if !report.extra.is_object() {
        report.extra = serde_json::json!({});
    }
    report.extra["verify"] = serde_json::json!({
        "algo": algo.map(|a| a.name()),
        "block_bytes": block,
        "blocks_written": w,
        "blocks_checked": c,
        "mismatches_total": m,
        "mismatches": kept.iter().map(|f| {
            let mut j = f.mismatch.to_json();
            j["file"] = serde_json::json!(path(f.file));
            j["file_index"] = serde_json::json!(f.file);
            j["phase"] = serde_json::json!(f.phase);
            j
        }).collect::<Vec<_>>(),
        "notes": notes,
    });
    if !dumps.is_empty() {
        report.extra["verify"]["dumps"] = serde_json::Value::Array(dumps);
    }
}

/// fio's verify_dump: a corrupt block as read, and as it should be when the header expected is
/// known, written beside its data file as `<file>.<offset>.received` and `<file>.<offset>.expected`
/// (fio writes them to its working directory). Returns what was written, or why not.
#[cold]
fn dump_block(path: &str, offset: u64, found: &[u8], expected: Option<&BlockHeader>) -> serde_json::Value {
    let received = format!("{path}.{offset}.received");
    let mut out = serde_json::json!({"offset": offset, "file": path});
    out["received"] = match std::fs::write(&received, found) {
        Ok(()) => serde_json::json!(received),
        Err(e) => serde_json::json!(format!("not written: {received}: {e}")),
    };
    if let Some(h) = expected.filter(|h| found.len() >= h.algo.min_block()) {
        let mut exp = vec![0u8; found.len()];
        fill_block(&mut exp, offset, h.generation, h.thread, h.seed, h.algo);
        let name = format!("{path}.{offset}.expected");
        out["expected"] = match std::fs::write(&name, &exp) {
            Ok(()) => serde_json::json!(name),
            Err(e) => serde_json::json!(format!("not written: {name}: {e}")),
        };
    }
    out
}

/// A data file a `reread` checks: its path and how many bytes should be there.
pub struct RereadFile {
    pub path: std::path::PathBuf,
    /// The first byte to re-read (0 but for a region of a shared file).
    pub start: u64,
    /// The end of what to re-read (bytes from the file's start).
    pub len: u64,
}

/// The `verify` phase of any family: re-read every block of `files` (split over
/// up to `threads` threads by file) and check it, against the write the last-writes table
/// says it should hold when `exact`, else for its own consistency. A file that
/// is shorter than it should be has every missing block reported (`short`).
/// Reported as reads; counters and mismatches as `merge_into` puts them.
#[allow(clippy::too_many_arguments)] // what a reread needs of the family, which differs per family
pub fn reread(
    job: &crate::settings::Settings,
    ctl: &crate::measure::Control,
    files: &[RereadFile],
    algo: Checksum,
    block: u64,
    last_writes: Option<&LastWrites>,
    exact: bool,
    notes: serde_json::Value,
) -> crate::error::Result<PhaseReport> {
    use crate::backend::buffer::AlignedBuf;
    use crate::error::EngineError;
    use crate::measure::{now_ns, run_threads, PhaseTiming};
    const KINDS: &[&str] = &["read"];
    let chunk = ((1u64 << 20) / block).max(1) * block;
    let nthreads = job.threads.min(files.len()).max(1);
    let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
    let work: u64 = files.iter().map(|f| (f.len - f.start).div_ceil(chunk)).sum();
    let (mut report, checkers) = run_threads(
        "verify",
        nthreads,
        timing,
        ctl,
        KINDS,
        3,
        work,
        |tid| {
            Ok((
                AlignedBuf::new(chunk as usize, 4096),
                Checker::new(algo, block as usize, job.seed, tid as u32, "verify"),
            ))
        },
        |(buf, ch), rec| {
            for i in (rec.tid..files.len()).step_by(nthreads) {
                let f = &files[i];
                let file = crate::nofollow::open_read(&f.path)?;
                let mut off = f.start;
                while off < f.len && !rec.interrupted() {
                    let len = chunk.min(f.len - off) as usize;
                    let data = &mut buf.as_mut_slice()[..len];
                    let mut got = 0usize;
                    while got < len {
                        let t0 = now_ns();
                        let n = std::os::unix::fs::FileExt::read_at(&file, &mut data[got..], off + got as u64)
                            .map_err(|e| EngineError::io(format!("verify: reading {}", f.path.display()), e))?;
                        rec.record(0, n as u64, t0, now_ns());
                        if n == 0 {
                            break;
                        }
                        got += n;
                    }
                    let fi = i as u32;
                    ch.check(&data[..got], fi, off, |o| {
                        if exact {
                            last_writes.and_then(|l| l.expected(fi, o))
                        } else {
                            None
                        }
                    });
                    if got < len {
                        let first_missing = off + (got as u64).div_ceil(block) * block;
                        for o in (first_missing..f.len).step_by(block as usize) {
                            ch.blocks_checked += 1;
                            ch.note(fi, check_block(&[], o, algo).expect_err("an empty block fails"));
                        }
                        break;
                    }
                    off += len as u64;
                }
            }
            Ok(std::mem::replace(ch, Checker::new(algo, block as usize, job.seed, 0, "verify")))
        },
    )?;
    merge_into(&mut report, checkers.iter(), |f| files[f as usize].path.display().to_string(), notes);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_writes_records_and_answers_per_block() {
        let l = LastWrites::new(2, 16 * 4096, 4096);
        assert_eq!(l.expected(1, 4096), None);
        l.record(1, 4096, 3 * 4096, 7, 99);
        assert_eq!(l.expected(1, 4096), Some((7, 99)));
        assert_eq!(l.expected(1, 3 * 4096), Some((7, 99)));
        assert_eq!(l.expected(1, 4 * 4096), None);
        assert_eq!(l.expected(0, 4096), None);
        l.record(0, 0, 4096, 0, 0);
        assert_eq!(l.expected(0, 0), Some((0, 0)), "a layout write (generation 0) is a recorded write");
        assert_eq!(l.expected(0, 16 * 4096), None, "past the end");
    }

    #[test]
    fn checker_counts_and_keeps_mismatches() {
        let mut c = Checker::new(Checksum::Xxh3, 4096, 1, 0, "run");
        let mut b = vec![0u8; 3 * 4096];
        c.fill(&mut b, 8192, 4);
        assert_eq!(c.blocks_written, 3);
        assert_eq!(c.check(&b, 0, 8192, |_| Some((0, 4))), 0);
        b[4096 + 100] ^= 0xFF;
        assert_eq!(c.check(&b, 0, 8192, |_| None), 1);
        assert_eq!((c.blocks_checked, c.mismatches), (6, 1));
        let m = &c.kept[0].mismatch;
        assert_eq!(m.offset, 8192 + 4096);
        assert_eq!(m.first_diff, Some(100));
        let mut r = PhaseReport::new("run");
        merge_into(&mut r, [&c], |f| format!("file{f}"), serde_json::Value::Null);
        assert_eq!(r.counters["verify_mismatches"], 1);
        assert_eq!(r.extra["verify"]["mismatches"][0]["first_diff_offset"], 8192 + 4096 + 100);
        assert_eq!(r.extra["verify"]["mismatches"][0]["file"], "file0");
        assert!(r.warnings[0].contains("file0"), "{:?}", r.warnings);
    }
}
