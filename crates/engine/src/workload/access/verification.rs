//! Verification in the access workload: each write's blocks filled and recorded, reads checked as
//! they complete (verify, verify_pattern, fio's verify_backlog reads), and the verify phase that
//! re-reads the files after the run.

use std::path::Path;

use super::backlog::{Backlog, Piece};
use super::gen::GenOp;
use super::worker::{RunState, SlotMeta};
use super::workload::{Access, READ};
use crate::backend::buffer::AlignedBuf;
use crate::backend::{IoBackend, IoReq};
use crate::error::{EngineError, Result};
use crate::measure::{now_ns, run_threads, Control, PhaseTiming, Recorder};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::verify::content::{byte_mismatch, ContentCheck};
use crate::verify::meta_pattern::{MetaFault, MetaPattern};
use crate::verify::{self};

impl Access {
    /// Queue a verify_backlog read of the written request `p` on `slot`, issued at `t0` (not
    /// counted against the byte quota, which counts the mix's requests).
    #[inline]
    pub(super) fn launch_backlog<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        slot: usize,
        p: Piece,
        t0: u64,
    ) -> Result<()> {
        let req = IoReq { file: p.file, offset: p.offset, len: p.len, write: false, ioprio: self.spec.ioprio.thread };
        let op = GenOp { req, entry: 0, random: false, trim: false, sync: 0 };
        st.slots[slot] = SlotMeta { t0, op: Some(op), generation: p.generation, backlog: true };
        if let Some(l) = st.issue_log.as_mut() {
            l.push(t0, super::issuelog::Action::Read, req.file, req.offset, req.len);
        }
        st.backend.queue(slot, req, st.bufs[slot].as_ptr())
    }

    /// At the end of a thread's writes, fio reads back the logged writes no batch has read yet
    /// (its final verify pass); after a deadline or a stop it does not, and neither is done here.
    #[cold]
    pub(super) fn backlog_rest<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        exact: bool,
        job: &Settings,
    ) -> Result<()> {
        let spec = &self.spec;
        let qd = st.slots.len();
        let mut inflight = 0usize;
        loop {
            while inflight < qd && !rec.should_stop(now_ns()) {
                let Some(p) = st.backlog.as_mut().and_then(Backlog::take_left) else { break };
                let slot = (0..qd).find(|&s| st.slots[s].op.is_none()).expect("a free slot");
                self.launch_backlog(st, slot, p, now_ns())?;
                inflight += 1;
            }
            if inflight == 0 {
                return Ok(());
            }
            st.completed.clear();
            let completed = &mut st.completed;
            st.backend.reap(1, |slot, res| completed.push((slot, res)))?;
            let t1 = now_ns();
            for i in 0..st.completed.len() {
                let (slot, res) = st.completed[i];
                let meta = st.slots[slot];
                let op = meta.op.expect("completion for an idle slot");
                if res < 0 {
                    return Err(self.io_failure(op.req, -res as i32, job));
                }
                rec.record(READ, res as u64, meta.t0, t1);
                self.verify_completion(st, slot, op.req, meta, res as usize, exact);
                if spec.checks_pattern() {
                    self.check_pattern(st, slot, op.req, res as usize, job, "run");
                }
                st.slots[slot].op = None;
                inflight -= 1;
                if self.fatal_now(st) {
                    st.backlog = None; // the rest is not read back
                }
            }
        }
    }

    /// verify_fatal and a corrupt block already found (by a checksum or a checked pattern): the
    /// thread stops, and reads back nothing more.
    #[inline]
    pub(super) fn fatal_now<B: IoBackend>(&self, st: &RunState<B>) -> bool {
        self.spec.verify_fatal
            && (st.verify.as_ref().is_some_and(|c| c.mismatches > 0) || st.pattern_check.mismatches > 0)
    }

    /// With verify_pattern, after a read: its bytes against the pattern (one request counted as checked).
    #[inline]
    pub(super) fn check_pattern<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        slot: usize,
        req: IoReq,
        moved: usize,
        job: &Settings,
        phase: &str,
    ) {
        let data = &st.bufs[slot].as_slice()[..moved.min(req.len as usize)];
        if let Some(m) = &self.meta {
            st.pattern_check.checked += data.len().div_ceil(m.block()) as u64;
            if m.check(data, req.offset).is_some() {
                let path = self.path(&job.dir, req.file);
                note_meta(&mut st.pattern_check, m, &path, req.offset, data, None, phase);
            }
            return;
        }
        st.pattern_check.checked += 1;
        if let Some(first) = pattern_mismatch(data, &self.pattern_tile, self.spec.verify_pattern.len(), req.offset) {
            let path = self.path(&job.dir, req.file);
            note_pattern(&mut st.pattern_check, &path, req.offset, data, &self.spec.verify_pattern, first, phase);
        }
    }

    pub(super) fn pattern_notes(&self, what: &str) -> serde_json::Value {
        serde_json::json!({
            "pattern_bytes": self.spec.verify_pattern.len(),
            "checked": what,
            "why": if self.meta.is_some() {
                "every block of verify_block bytes must start with its header (magic, length, its offset, the \
                 header's crc32c) and hold the verify_pattern byte for its offset after it (fio's verify=meta \
                 with verify_pattern); blocks_checked counts those blocks"
            } else {
                "every byte read must be the verify_pattern byte for its offset (fio's verify=pattern); \
                 blocks_checked counts the requests (or 1 MiB reads) compared"
            },
        })
    }

    /// The verify phase with verify_pattern: re-read every file and compare each byte with the pattern.
    fn verify_pattern_phase(&self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        const CHUNK: u64 = 1 << 20;
        let (start, end) = if self.spec.shared_file {
            (self.spec.run_base(), self.spec.run_base() + self.spec.file_size)
        } else {
            (0, self.file_len())
        };
        let nfiles = self.spec.file_count as usize;
        let nthreads = job.threads.min(nfiles).max(1);
        let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
        let work = (end - start).div_ceil(CHUNK) * nfiles as u64;
        let (mut report, found) = run_threads(
            "verify",
            nthreads,
            timing,
            ctl,
            &["read"],
            3,
            work,
            |_| Ok((AlignedBuf::new(CHUNK as usize, 4096), ContentCheck::new(None))),
            |(buf, found), rec| {
                for i in (rec.tid..nfiles).step_by(nthreads) {
                    let path = self.path(&job.dir, i as u32);
                    let file = crate::nofollow::open_read(&path)?;
                    let mut off = start;
                    while off < end && !rec.interrupted() {
                        let len = CHUNK.min(end - off) as usize;
                        let data = &mut buf.as_mut_slice()[..len];
                        let mut got = 0usize;
                        while got < len {
                            let t0 = now_ns();
                            let n = std::os::unix::fs::FileExt::read_at(&file, &mut data[got..], off + got as u64)
                                .map_err(|e| EngineError::io(format!("verify: reading {}", path.display()), e))?;
                            rec.record(0, n as u64, t0, now_ns());
                            if n == 0 {
                                break;
                            }
                            got += n;
                        }
                        if let Some(m) = &self.meta {
                            found.checked += len.div_ceil(m.block()) as u64;
                            // A file that ends early: its first missing block counts as a block of zeros.
                            let missing = (got < len && got.is_multiple_of(m.block())).then(|| MetaFault {
                                block_offset: off + got as u64,
                                first: 0,
                                field: "magic (the file ends before this block)",
                            });
                            if m.check(&data[..got], off).is_some() || missing.is_some() {
                                note_meta(found, m, &path, off, &data[..got], missing, "verify");
                            }
                            off += len as u64;
                            continue;
                        }
                        found.checked += 1;
                        let n = self.spec.verify_pattern.len();
                        // A short file: the bytes it lacks count as zeros.
                        let mismatch = pattern_mismatch(&data[..got], &self.pattern_tile, n, off)
                            .or_else(|| (got < len).then_some(got));
                        if let Some(first) = mismatch {
                            data[got..].fill(0);
                            note_pattern(found, &path, off, data, &self.spec.verify_pattern, first, "verify");
                        }
                        off += len as u64;
                    }
                }
                Ok(std::mem::replace(found, ContentCheck::new(None)))
            },
        )?;
        let mut all = ContentCheck::new(None);
        for f in found {
            all.absorb(f);
        }
        all.notes = self.pattern_notes("every byte of the files, re-read after the run");
        all.merge_into(&mut report);
        Ok(report)
    }

    /// With verify: before a write is queued, fill its buffer with verified blocks
    /// under a new write number (returned). Reads need nothing.
    #[inline]
    pub(super) fn fill_write<B: IoBackend>(&self, st: &mut RunState<B>, slot: usize, req: IoReq, gen_base: u64) -> u64 {
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

    /// With verify, after a request completes: a write is recorded in the last-writes table
    /// (what the blocks should now hold); a read is checked against it when reads
    /// cannot race writes (`exact`).
    #[inline]
    pub(super) fn verify_completion<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        slot: usize,
        req: IoReq,
        meta: SlotMeta,
        moved: usize,
        exact: bool,
    ) {
        let Some(ch) = st.verify.as_mut() else {
            // A checked verify_pattern with verify_backlog: a completed write joins the backlog; every
            // read, the backlog's too, is checked against the pattern where reads complete.
            if let Some(b) = st.backlog.as_mut().filter(|_| req.write) {
                b.written(Piece { file: req.file, offset: req.offset, len: req.len, generation: meta.generation });
            }
            return;
        };
        if req.write {
            if let Some(l) = &self.last_writes {
                l.record(req.file, req.offset, req.len as u64, ch.thread, meta.generation);
            }
            if let Some(b) = st.backlog.as_mut() {
                b.written(Piece { file: req.file, offset: req.offset, len: req.len, generation: meta.generation });
            }
        } else if meta.backlog {
            // Always checked, as fio checks its backlog reads: against the write the block should
            // hold when no other write can race it, else for the block's own consistency.
            ch.backlog_reads += 1;
            let n = moved.min(req.len as usize);
            let last_writes = self.last_writes.as_ref().filter(|_| exact);
            if st.racy {
                // A write of another request may have been under way: read the range again (not timed,
                // not counted) while it fails, waiting a little longer each time (50 us doubling, about
                // 6 ms in all: a writer may be off its CPU mid-copy), and judge by the last read. Once the
                // thread has kept its share of real mismatches it does not wait for more.
                let (algo, block) = (ch.algo, ch.block);
                let clean = |d: &[u8]| {
                    d.chunks(block)
                        .enumerate()
                        .all(|(i, b)| verify::check_block(b, req.offset + (i * block) as u64, algo).is_ok())
                };
                let tries = if ch.mismatches < verify::KEEP_MISMATCHES as u64 { 7 } else { 0 };
                if let Some(fds) = &st.trim_fds {
                    for t in 0..tries {
                        if clean(&st.bufs[slot].as_slice()[..n]) {
                            break;
                        }
                        std::thread::sleep(std::time::Duration::from_micros(50 << t));
                        let buf = st.bufs[slot].as_mut_slice()[..n].as_mut_ptr();
                        // SAFETY: the slot's buffer holds at least n bytes and no request is in flight on it.
                        // A short or failed re-read leaves the earlier bytes, which are then judged.
                        let _ = unsafe { crate::sys::pread(fds[req.file as usize], buf.cast(), n, req.offset as i64) };
                    }
                }
            }
            let data = &st.bufs[slot].as_slice()[..n];
            ch.check(data, req.file, req.offset, |o| last_writes.and_then(|l| l.expected(req.file, o)));
            if moved < req.len as usize {
                let b = ch.block as u64;
                let first_missing = req.offset + (moved as u64).div_ceil(b) * b;
                for o in (first_missing..req.offset + req.len as u64).step_by(b as usize) {
                    ch.blocks_checked += 1;
                    ch.note(req.file, verify::check_block(&[], o, ch.algo).expect_err("an empty block fails"));
                }
            }
        } else if exact {
            let data = &st.bufs[slot].as_slice()[..moved.min(req.len as usize)];
            let last_writes = self.last_writes.as_ref();
            ch.check(data, req.file, req.offset, |o| last_writes.and_then(|l| l.expected(req.file, o)));
        }
    }

    /// The `verify` phase: re-read every block of every file and check it (against
    /// the write it should hold, when that is known exactly).
    pub(super) fn verify_phase(&self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        super::regions::check_verify_grid(&self.spec.thread_regions, self.spec.verify_block())?;
        if !self.spec.verify_pattern.is_empty() {
            if !self.spec.verify_pattern_check {
                return Err(EngineError::invalid(
                    "verify_pattern_check",
                    "is false: the pattern is written unchecked, so there is no verify phase",
                ));
            }
            return self.verify_pattern_phase(job, ctl);
        }
        let Some(algo) = self.spec.verify else {
            return Err(EngineError::invalid(
                "verify",
                "the verify phase needs verify = \"crc32c\", \"xxh3\" or \"sha256\" in the spec",
            ));
        };
        // A shared file: only the region this process's run phase worked on (other processes check theirs).
        let (reread_start, reread_end) = if self.spec.shared_file {
            (self.spec.run_base(), self.spec.run_base() + self.spec.file_size)
        } else {
            (0, self.file_len())
        };
        let files: Vec<verify::RereadFile> = (0..self.spec.file_count)
            .map(|i| verify::RereadFile { path: self.path(&job.dir, i), start: reread_start, len: reread_end })
            .collect();
        verify::reread(
            job,
            ctl,
            &files,
            algo,
            self.spec.verify_block(),
            self.last_writes.as_ref(),
            self.verify_exact(job),
            self.verify_notes(job),
        )
    }
}

/// Where `data`, read at file offset `offset`, first differs from the pattern of `n` bytes whose
/// repetition `tile` is (a whole number of patterns): byte `o` of a file holds `pattern[o % n]`.
/// Compared a tile at a time (memcmp), the differing byte found only when there is one.
#[inline]
fn pattern_mismatch(data: &[u8], tile: &[u8], n: usize, offset: u64) -> Option<usize> {
    let mut phase = (offset % n as u64) as usize;
    let mut i = 0;
    while i < data.len() {
        let take = (tile.len() - phase).min(data.len() - i);
        if data[i..i + take] != tile[phase..phase + take] {
            return (0..take).find(|&k| data[i + k] != tile[phase + k]).map(|k| i + k);
        }
        i += take;
        phase = 0;
    }
    None
}

/// One pattern mismatch into `found`, described by its bytes (cold: a corrupt read).
#[cold]
fn note_pattern(
    found: &mut ContentCheck,
    path: &Path,
    offset: u64,
    data: &[u8],
    pattern: &[u8],
    first: usize,
    phase: &str,
) {
    let n = pattern.len();
    let expected: Vec<u8> = (0..data.len()).map(|k| pattern[((offset + k as u64) % n as u64) as usize]).collect();
    found.note(byte_mismatch(&path.display().to_string(), offset, data.len(), phase, &expected, data, first));
}

/// The blocks of `data` (read at `offset`) failing verify_pattern_meta's check into `found`, and
/// `missing`: the first block of a file that ends early (cold: a corrupt read).
#[cold]
fn note_meta(
    found: &mut ContentCheck,
    m: &MetaPattern,
    path: &Path,
    offset: u64,
    data: &[u8],
    missing: Option<MetaFault>,
    phase: &str,
) {
    let name = path.display().to_string();
    for f in m.faults(data, offset).into_iter().chain(missing) {
        let at = ((f.block_offset - offset) as usize).min(data.len());
        let block = &data[at..(at + m.block()).min(data.len())];
        found.note(m.describe(&name, block, &f, phase));
    }
}
