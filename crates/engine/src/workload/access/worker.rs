//! The access workload's hot loop: each thread keeps `queue_depth` requests in flight until its
//! deadline, its byte quota or a stop, paced, measured and counted as it goes, then drains. Nothing
//! here allocates, locks or calls into Python per request; two copies of the loop are built, one
//! without any verification code (`VERIFY`).

use std::os::fd::RawFd;

use super::backlog::Backlog;
use super::errors::{ErrorCounts, OnError};
use super::fileops::{one_call_failure, Donor};
use super::gen::{AccessGen, GenOp};
use super::iolog::{IoLogBuf, IoRecord};
use super::issuelog::{Action, IssueBuf};
use super::lattarget::{LatProbe, Step};
use super::pace::{sleep_until, FlowState, Go, Pacer};
use super::prio::CmdPrioState;
use super::workload::{Access, FSYNC, READ, TRIM, WRITE};
use crate::backend::buffer::AlignedBuf;
use crate::backend::content::ContentGen;
use crate::backend::pattern::fill_pattern_range;
use crate::backend::{FileTable, IoBackend, IoReq, SyncKind};
use crate::error::{EngineError, Result};
use crate::measure::sparse_clock::SparseClock;
use crate::measure::{now_ns, OwnFdTable, Recorder};
use crate::settings::Settings;
use crate::verify::content::ContentCheck;
use crate::verify::Checker;

/// Per-thread state of the `run` phase, built before the common start.
pub(super) struct RunState<B: IoBackend> {
    pub(super) backend: B,
    pub(super) bufs: Vec<AlignedBuf>,
    pub(super) gen: AccessGen,
    pub(super) slots: Vec<SlotMeta>,
    pub(super) completed: Vec<(usize, i64)>,
    /// Per mix entry: reads, writes, random, sequential, trims (measured requests only).
    pub(super) mix: Vec<[u64; 5]>,
    /// The files, for trims (done here, not through the backend); None: the null backend.
    pub(super) trim_fds: Option<FileTable>,
    /// With a buffer pattern: per slot, the bytes `lo..hi` of its buffer that reads overwrote (none
    /// when lo == hi); a write refills the part of them it sends.
    pub(super) dirty: Vec<(usize, usize)>,
    pub(super) verify: Option<Checker>,
    /// With verify_backlog: the written requests not yet read back.
    pub(super) backlog: Option<Backlog>,
    /// Another request may write a block while a backlog read reads it (several threads on shared
    /// blocks, or queue_depth > 1): a backlog read that fails its check is read again before it counts.
    pub(super) racy: bool,
    /// With verify_pattern: the reads checked and the mismatches found.
    pub(super) pattern_check: ContentCheck,
    /// Writes issued by this thread in this phase (with verify: the write numbers).
    pub(super) writes: u64,
    /// The e4defrag engine's donor file.
    pub(super) donor: Option<Donor>,
    /// With a rate or thinktime: the schedule, and the slots whose request waits for its time
    /// (slot, quiesce first), in the order drawn; capacity queue_depth, made before the start.
    pub(super) pacer: Option<Pacer>,
    pub(super) deferred: std::collections::VecDeque<(usize, Wait)>,
    /// With fio's flow: this thread's place in its flow.
    pub(super) flow: Option<FlowState>,
    /// Failed requests gone on after (continue_on) or ended at (fill): counted here, made before the start.
    pub(super) errors: ErrorCounts,
    /// With fio's buffer contents: what each write carries (filled before the write is timed).
    pub(super) content: Option<ContentGen>,
    /// With per-request priorities (cmdprio): the rules, their draws and the count.
    pub(super) cmdprio: Option<CmdPrioState>,
    /// With a per-I/O log: this thread's records, allocated before the start.
    pub(super) io_log: Option<IoLogBuf>,
    /// With fio's write_iolog: every request this thread issues, allocated before the start.
    pub(super) issue_log: Option<IssueBuf>,
    /// With fio's latency_target: the search for the queue depth (lattarget.rs).
    pub(super) lat: Option<LatProbe>,
    /// With serialize_overlap: the requests held back (behind an overlap, or behind one held).
    pub(super) overlap_holds: u64,
    /// This thread's own descriptors of the files (`Access::own_files`), closed when the state is
    /// dropped, after the backend (fields drop in order); None: the phase's, shared.
    pub(super) _own_fds: Option<super::fd::FilesGuard>,
    /// The thread's own descriptor table (`measure::own_fd_table`): dropped last, it closes the
    /// thread's copies of the phase's descriptors it kept.
    pub(super) _table: OwnFdTable,
}

impl<B: IoBackend> RunState<B> {
    /// `op` waits on `slot` in `deferred` until `wait` is over (`at`: its due time, where it has one).
    /// Its bytes are counted now when it was drawn in the measured window, so that a byte quota stops
    /// the drawing of requests it would not issue.
    #[inline]
    fn defer(&mut self, slot: usize, op: GenOp, at: u64, wait: Wait, measured: bool, issued_bytes: &mut u64) {
        self.slots[slot] = SlotMeta { t0: at, op: Some(op), generation: 0, backlog: false };
        self.deferred.push_back((slot, wait));
        if measured {
            *issued_bytes += op.req.len as u64;
        }
    }
}

/// A measured request's per-I/O log record (fio's direction: 0 read, 1 write, 2 trim).
#[inline(always)]
fn io_record(op: &GenOp, kind: usize, t0: u64, t1: u64, measure_start: u64) -> IoRecord {
    IoRecord {
        t_ns: t1.saturating_sub(measure_start),
        lat_ns: t1.saturating_sub(t0),
        offset: op.req.offset,
        len: op.req.len,
        ddir: match kind {
            READ => 0,
            WRITE => 1,
            _ => 2,
        },
        ioprio: op.req.ioprio,
    }
}

/// What a deferred request waits for once nothing is in flight.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    /// Its due time.
    Due,
    /// A thinktime stall, then its due time.
    Think,
    /// Its turn in the flow.
    Flow,
    /// serialize_overlap: no request of the thread in flight that overlaps it (or one held before it).
    Overlap,
}

/// What pacing made of a request just drawn.
enum Paced {
    /// Issue it, at this time.
    Go(u64),
    /// It waits in `RunState::deferred` for its time.
    Deferred,
    /// The thread is to stop (a stop was asked for, or the request would start after the deadline).
    Stop,
}

#[derive(Clone, Copy, Default)]
pub(super) struct SlotMeta {
    pub(super) t0: u64,
    pub(super) op: Option<GenOp>,
    /// With verify, the write number of a write in flight (of the write a backlog read checks).
    pub(super) generation: u64,
    /// A read of verify_backlog (not the mix's: not counted in it, always checked).
    pub(super) backlog: bool,
}

impl Access {
    /// The hot loop: keep `queue_depth` requests in flight until the deadline,
    /// the byte quota, or a stop; then drain.
    pub(super) fn worker<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        quota: Option<u64>,
        job: &Settings,
    ) -> Result<Vec<[u64; 5]>> {
        if let Some(p) = st.pacer.as_mut() {
            p.start(now_ns());
        }
        if let Some(l) = st.issue_log.as_mut() {
            l.start(now_ns());
        }
        st.gen.replay_start(now_ns());
        let out = self.worker_loop::<B, VERIFY>(st, rec, quota, job);
        if let Some(f) = st.flow.as_mut() {
            f.leave();
        }
        out
    }

    /// The worker's loop proper (the thread leaves its flow after it).
    fn worker_loop<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        quota: Option<u64>,
        job: &Settings,
    ) -> Result<Vec<[u64; 5]>> {
        let spec = &self.spec;
        let exact = VERIFY && self.verify_exact(job);
        let gen_base = self.runs << 40;
        let mut issued_bytes = 0u64;
        let mut inflight = 0usize;
        let mut writes_since_fsync = 0u64;
        // latency = false (fio's gtod_reduce): the recorder counts requests without timing them, and
        // unless something needs each request's time (pacing, a flow, a latency target, the per-I/O
        // logs, a replay's timing, overlaps held, verify's backlog), the clock is read once per batch.
        let mut clock = SparseClock::new(
            !rec.timed()
                && !VERIFY
                && st.pacer.is_none()
                && st.flow.is_none()
                && st.lat.is_none()
                && st.io_log.is_none()
                && st.issue_log.is_none()
                && spec.replay.is_none()
                && !spec.serialize_overlap,
        );
        if !VERIFY && self.depth1_plain(st) {
            return self.depth1_loop(st, rec, quota, job, &mut clock);
        }
        // With a latency target the depth starts at 1 (fio's lat_target_init at the job's start) and
        // moves between windows; during a warm-up nothing is judged, and its end starts the search again.
        let mut ramp_pending = false;
        let first = match st.lat.as_mut() {
            Some(p) => {
                let now = now_ns();
                p.init(now);
                ramp_pending = !rec.measuring(now);
                p.depth as usize
            }
            None => st.slots.len(),
        };
        let mut stopping =
            self.start_slots::<B, VERIFY>(st, rec, quota, job, first, &mut issued_bytes, &mut inflight, gen_base)?;
        while inflight > 0 || !st.deferred.is_empty() {
            if inflight == 0 {
                // Only paced requests are left, each waiting for its time with nothing in flight.
                match self.launch_deferred::<B, VERIFY>(st, rec, gen_base)? {
                    None => break,
                    Some(true) => inflight += 1,
                    Some(false) => stopping = true,
                }
                continue;
            }
            st.completed.clear();
            let completed = &mut st.completed;
            let min = (spec.reap_min as usize).clamp(1, inflight);
            st.backend.reap(min, |slot, res| completed.push((slot, res)))?;
            let t1 = clock.now();
            let batch = st.completed.len();
            for i in 0..batch {
                let (slot, res) = st.completed[i];
                let meta = st.slots[slot];
                let op = meta.op.expect("completion for an idle slot");
                let mut synced = false;
                let short_fill = spec.fill && res >= 0 && (res as u64) < op.req.len as u64;
                if res < 0 || short_fill {
                    // A failed request: gone on after (counted, not measured), the end of a fill, or the end
                    // of the run. A short write while filling: fio writes its rest, which then fails.
                    let errno = if res < 0 { -res as i32 } else { libc::ENOSPC };
                    let dir = op.req.write as usize;
                    match st.errors.note(&spec.continue_on, spec.fill, dir, errno, &op.req) {
                        OnError::Go => {}
                        OnError::Full => {
                            stopping = true;
                            if short_fill {
                                st.errors.full_short = 1;
                            }
                        }
                        OnError::Fatal => return Err(self.io_failure(op.req, errno, job)),
                    }
                } else {
                    self.completed_ok::<B, VERIFY>(
                        st,
                        slot,
                        op,
                        meta,
                        res,
                        t1,
                        rec,
                        exact,
                        job,
                        &mut stopping,
                        &mut synced,
                        &mut writes_since_fsync,
                    )?;
                }
                if !stopping {
                    stopping = rec.should_stop(t1) || quota.is_some_and(|q| issued_bytes >= q);
                }
                if stopping {
                    st.slots[slot].op = None;
                    inflight -= 1;
                    continue;
                }
                if let Some(p) = &st.lat {
                    // The depth in force caps the requests in flight (this slot's still counted);
                    // a quiesce issues nothing until all are back.
                    if p.holding() || inflight > p.depth as usize {
                        st.slots[slot].op = None;
                        inflight -= 1;
                        continue;
                    }
                }
                if VERIFY {
                    // fio's verify_backlog: a due read of a logged write goes before the mix's next request.
                    if let Some(p) = st.backlog.as_mut().and_then(Backlog::next_read) {
                        let t0 = if st.completed.len() == 1 && !synced { t1 } else { now_ns() };
                        self.launch_backlog(st, slot, p, t0)?;
                        continue;
                    }
                }
                // The completion time doubles as the next request's issue time: one
                // clock read less per request; the latency then also covers the few
                // nanoseconds of bookkeeping in between (never less than the truth).
                let Some((op, trimmed)) = self.next_io(st, rec, quota, &mut issued_bytes, job)? else {
                    stopping = true;
                    st.slots[slot].op = None;
                    inflight -= 1;
                    continue;
                };
                let t0 =
                    if clock.is_sparse() || (st.completed.len() == 1 && !synced && !trimmed) { t1 } else { now_ns() };
                // In the kernel besides this slot: the in-flight slots less this batch's unprocessed ones.
                let others = inflight - (batch - i);
                match self.pace(st, slot, op, t0, others, rec, &mut issued_bytes) {
                    Paced::Go(t0)
                        if spec.serialize_overlap && self.hold_overlap(st, slot, op, t0, rec, &mut issued_bytes) =>
                    {
                        inflight -= 1
                    }
                    Paced::Go(t0) => {
                        self.launch::<B, VERIFY>(st, slot, op, t0, rec, Some(&mut issued_bytes), gen_base)?
                    }
                    Paced::Deferred => inflight -= 1,
                    Paced::Stop => {
                        stopping = true;
                        st.slots[slot].op = None;
                        inflight -= 1;
                    }
                }
            }
            if spec.serialize_overlap {
                inflight += self.release_overlaps::<B, VERIFY>(st, rec, gen_base)?;
            }
            if st.lat.is_some() && !stopping {
                stopping = self.lat_step::<B, VERIFY>(
                    st,
                    rec,
                    quota,
                    &mut issued_bytes,
                    &mut inflight,
                    &mut ramp_pending,
                    job,
                    gen_base,
                )?;
            }
        }
        self.worker_end::<B, VERIFY>(st, rec, exact, job)
    }

    /// The first requests of a thread's loop, on slots 0 to `first` (the queue depth, or a latency
    /// target's starting depth). True: the thread is to stop issuing already.
    #[inline]
    #[allow(clippy::too_many_arguments)] // the loop's own counters, which stay in its registers
    fn start_slots<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        quota: Option<u64>,
        job: &Settings,
        first: usize,
        issued_bytes: &mut u64,
        inflight: &mut usize,
        gen_base: u64,
    ) -> Result<bool> {
        for slot in 0..first {
            let Some((op, _)) = self.next_io(st, rec, quota, issued_bytes, job)? else {
                return Ok(true);
            };
            let t0 = now_ns();
            match self.pace(st, slot, op, t0, *inflight, rec, issued_bytes) {
                Paced::Go(t0)
                    if self.spec.serialize_overlap && self.hold_overlap(st, slot, op, t0, rec, issued_bytes) => {}
                Paced::Go(t0) => {
                    self.launch::<B, VERIFY>(st, slot, op, t0, rec, Some(&mut *issued_bytes), gen_base)?;
                    *inflight += 1;
                }
                Paced::Deferred => {}
                Paced::Stop => return Ok(true),
            }
            if quota.is_some_and(|q| *issued_bytes >= q) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// With nothing in flight, the first deferred request waits for its time (or its turn in the
    /// flow) and is launched: Some(true). Some(false): a stop, the deadline or a missed minimum rate
    /// dropped it and every other deferred one. None: nothing was deferred.
    #[inline]
    fn launch_deferred<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        gen_base: u64,
    ) -> Result<Option<bool>> {
        let Some((slot, wait)) = st.deferred.pop_front() else { return Ok(None) };
        let meta = st.slots[slot];
        st.slots[slot].op = None;
        let op = meta.op.expect("a deferred slot holds its request");
        // Requests drawn before a byte quota was reached still go (their bytes are counted);
        // a stop, the deadline or a missed minimum rate drops them.
        let halted = rec.should_stop(now_ns()) || st.pacer.as_ref().is_some_and(|p| p.missed.is_some());
        let ready = !halted
            && match wait {
                Wait::Due => sleep_until(meta.t0, rec),
                // Nothing is in flight, so nothing overlaps it.
                Wait::Overlap => true,
                Wait::Think => st.pacer.as_ref().is_some_and(|p| p.think(rec)) && sleep_until(meta.t0, rec),
                // Its turn in the flow, then its time by the job's rate or thinktime, if any
                // (nothing is in flight here, so a thinktime's quiescence holds).
                Wait::Flow => {
                    st.flow.as_mut().is_some_and(|f| f.wait_and_pass(rec))
                        && match st.pacer.as_mut() {
                            None => true,
                            Some(p) => match p.book(op.req.write as usize, op.req.len as u64, now_ns()) {
                                Go::Now => true,
                                Go::At { due, quiesce } => p.wait_for(due, quiesce, rec),
                            },
                        }
                }
            };
        if !ready {
            for (s, _) in st.deferred.drain(..) {
                st.slots[s].op = None;
            }
            return Ok(Some(false));
        }
        self.launch::<B, VERIFY>(st, slot, op, now_ns(), rec, None, gen_base)?;
        Ok(Some(true))
    }

    /// A request that completed: measured, verified, counted in the mix and the pace, and the fsync
    /// fio's `fsync` asks for after it.
    #[inline]
    #[allow(clippy::too_many_arguments)] // the loop's own state, borrowed per request on the hot path
    pub(super) fn completed_ok<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        slot: usize,
        op: GenOp,
        meta: SlotMeta,
        res: i64,
        t1: u64,
        rec: &mut Recorder,
        exact: bool,
        job: &Settings,
        stopping: &mut bool,
        synced: &mut bool,
        writes_since_fsync: &mut u64,
    ) -> Result<()> {
        let spec = &self.spec;
        let kind = if op.req.write { WRITE } else { READ };
        rec.record(kind, res as u64, meta.t0, t1);
        if let Some(p) = st.lat.as_mut() {
            // fio's account_io_completion: each completion over the target counts against the window.
            if p.completed(t1.saturating_sub(meta.t0), t1) == Step::Fatal {
                *stopping = true;
            }
        }
        if let Some(l) = st.io_log.as_mut().filter(|_| meta.t0 >= rec.measure_start_ns) {
            l.push(io_record(&op, kind, meta.t0, t1, rec.measure_start_ns));
        }
        if VERIFY {
            self.verify_completion(st, slot, op.req, meta, res as usize, exact);
        }
        if !op.req.write && spec.checks_pattern() {
            self.check_pattern(st, slot, op.req, res as usize, job, "run");
        }
        if self.fatal_now(st) {
            *stopping = true;
        }
        if !op.req.write && !spec.write_pattern().is_empty() {
            // The read's bytes lie over the pattern from the buffer's start (a superset when the
            // slot's dirty bytes started further in: refilling a pattern byte again costs nothing).
            let d = &mut st.dirty[slot];
            *d = (0, d.1.max(op.req.len as usize));
        }
        if meta.t0 >= rec.measure_start_ns && !meta.backlog {
            let m = &mut st.mix[op.entry];
            m[if op.req.write { 1 } else { 0 }] += 1;
            m[if op.random { 2 } else { 3 }] += 1;
        }
        if let Some(p) = st.pacer.as_mut().filter(|_| !meta.backlog) {
            if p.completed(op.req.write as usize, res as u64, t1) {
                *stopping = true;
            }
        }
        if op.req.write && spec.syncs_writes() {
            // fio counts the job's writes and syncs when the count is a multiple of fsync=, else of
            // fdatasync=, else of sync_file_range='s N: one sync at most per write.
            *writes_since_fsync += 1;
            let n = *writes_since_fsync;
            let due = |every: u64| every > 0 && n.is_multiple_of(every);
            let kind = if due(spec.fsync_every) {
                Some(SyncKind::Full)
            } else if due(spec.fdatasync_every) {
                Some(SyncKind::Data)
            } else if due(spec.sync_range_every) {
                Some(SyncKind::Range(spec.sync_range_flags))
            } else {
                None
            };
            if let Some(kind) = kind {
                *synced = true;
                let t0 = now_ns();
                if let Some(l) = st.issue_log.as_mut() {
                    let action = match kind {
                        SyncKind::Full => Action::Sync,
                        SyncKind::Data => Action::Datasync,
                        SyncKind::Range(_) => Action::SyncFileRange,
                    };
                    l.push(t0, action, op.req.file, 0, 0);
                }
                st.backend.sync(op.req.file, kind)?;
                rec.record(FSYNC, 0, t0, now_ns());
            }
        }
        Ok(())
    }

    /// With a latency target, after each completion batch (one clock read): the warm-up's end, a
    /// quiesce finished (and the statistics reset before the final window), the window judged, and
    /// requests issued up to the depth in force. True: the thread is to stop issuing (the search
    /// ended, or the byte quota or deadline was reached).
    #[allow(clippy::too_many_arguments)] // the loop's own counters, which stay in its registers
    fn lat_step<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        quota: Option<u64>,
        issued_bytes: &mut u64,
        inflight: &mut usize,
        ramp_pending: &mut bool,
        job: &Settings,
        gen_base: u64,
    ) -> Result<bool> {
        let p = st.lat.as_mut().expect("a latency target");
        let now = now_ns();
        if *ramp_pending {
            if !rec.measuring(now) {
                // fio judges no window during its ramp.
                return Ok(false);
            }
            *ramp_pending = false;
            p.ramp_done(now);
        }
        if !p.holding() && p.started() {
            match p.check(now) {
                Step::Go | Step::Quiesce | Step::Fatal => {}
                Step::Done => return Ok(true),
            }
        }
        if p.holding() {
            if *inflight > 0 {
                return Ok(false);
            }
            if p.quiesced(now) {
                rec.restart_measure(now);
            }
        }
        let depth = p.depth as usize;
        while *inflight < depth {
            if rec.should_stop(now_ns()) {
                return Ok(true);
            }
            let Some(slot) = st.slots.iter().position(|m| m.op.is_none()) else { break };
            let Some((op, _)) = self.next_io(st, rec, quota, issued_bytes, job)? else { return Ok(true) };
            self.launch::<B, VERIFY>(st, slot, op, now_ns(), rec, Some(issued_bytes), gen_base)?;
            *inflight += 1;
            if quota.is_some_and(|q| *issued_bytes >= q) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The end of a thread's loop: a missed minimum rate reported, fio's end_fsync.
    pub(super) fn worker_end<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        exact: bool,
        job: &Settings,
    ) -> Result<Vec<[u64; 5]>> {
        let spec = &self.spec;
        if let Some((d, got, min, bytes)) = st.pacer.as_ref().and_then(|p| p.missed) {
            let (unit, opt) = if bytes { ("B/s", "rate_min") } else { ("IOPS", "rate_iops_min") };
            let dir = if d == 0 { "read" } else { "write" };
            self.rate_missed.lock().unwrap_or_else(|e| e.into_inner()).push(format!(
                "thread {}: {opt} not met for {dir}s: {got} {unit} over a rate cycle, the minimum is {min} {unit}; the thread stopped (fio ends the job with an error)",
                rec.tid
            ));
        }
        if spec.fsync_end && !rec.interrupted() {
            for f in 0..spec.file_count {
                let t0 = now_ns();
                if let Some(l) = st.issue_log.as_mut() {
                    l.push(t0, Action::Sync, f, 0, 0);
                }
                st.backend.fsync(f)?;
                rec.record(FSYNC, 0, t0, now_ns());
            }
        }
        if VERIFY && st.backlog.is_some() && !self.fatal_now(st) {
            self.backlog_rest(st, rec, exact, job)?;
        }
        Ok(std::mem::take(&mut st.mix))
    }

    /// With pacing: may the request just drawn for `slot` go now? `others`: requests in the kernel
    /// besides this slot. A request not yet due waits asleep when nothing else is in flight (its
    /// issue time is then the wake-up), else it is deferred until everything in flight is done, as
    /// fio's inline submission quiesces before it sleeps; thinktime always quiesces first.
    #[inline]
    #[allow(clippy::too_many_arguments)] // the loop's own state, borrowed per request on the hot path
    fn pace<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        slot: usize,
        op: GenOp,
        t0: u64,
        others: usize,
        rec: &Recorder,
        issued_bytes: &mut u64,
    ) -> Paced {
        let mut t0 = t0;
        if let Some(f) = st.flow.as_mut() {
            // fio's flow first (fio checks it before it draws the next request); a rate or
            // thinktime of the same job then paces the requests the flow lets pass.
            if !f.ahead() {
                f.pass();
            } else if others == 0 && st.deferred.is_empty() {
                if !f.wait_and_pass(rec) {
                    return Paced::Stop;
                }
                t0 = now_ns();
            } else {
                st.defer(slot, op, 0, Wait::Flow, rec.measuring(t0), issued_bytes);
                return Paced::Deferred;
            }
        }
        let due = st.gen.replay_due();
        if due > t0 {
            // fio's read_iolog: a request waits for its time in the log, as a paced one does.
            if others > 0 || !st.deferred.is_empty() {
                st.defer(slot, op, due, Wait::Due, rec.measuring(t0), issued_bytes);
                return Paced::Deferred;
            }
            if !sleep_until(due, rec) {
                return Paced::Stop;
            }
            t0 = now_ns();
        }
        let Some(p) = st.pacer.as_mut() else { return Paced::Go(t0) };
        let (due, quiesce) = match p.book(op.req.write as usize, op.req.len as u64, t0) {
            Go::Now => return Paced::Go(t0),
            Go::At { due, quiesce } => (due, quiesce),
        };
        if others > 0 || !st.deferred.is_empty() {
            let wait = if quiesce { Wait::Think } else { Wait::Due };
            st.defer(slot, op, due, wait, rec.measuring(t0), issued_bytes);
            return Paced::Deferred;
        }
        if !p.wait_for(due, quiesce, rec) {
            return Paced::Stop;
        }
        Paced::Go(now_ns())
    }

    /// serialize_overlap: whether a request of this thread in flight (not `slot`, not one waiting in
    /// `deferred`) overlaps `req`'s bytes. Slots the current batch completed but has not yet handled
    /// count as in flight: a request may wait a batch longer than it must, never overlap.
    #[inline]
    fn overlaps_in_flight<B: IoBackend>(&self, st: &RunState<B>, slot: usize, req: &IoReq) -> bool {
        let (lo, hi) = (req.offset, req.offset + req.len as u64);
        st.slots.iter().enumerate().any(|(s, m)| {
            s != slot
                && m.op.is_some_and(|o| {
                    o.req.file == req.file && o.req.offset < hi && lo < o.req.offset + o.req.len as u64
                })
                && !st.deferred.iter().any(|&(d, _)| d == s)
        })
    }

    /// serialize_overlap, for a request cleared to go at `t0`: true when it must wait, held in
    /// `deferred` (behind any request held before it, so the thread's order is kept) with its bytes
    /// counted now, as a deferred request's are.
    #[inline]
    fn hold_overlap<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        slot: usize,
        op: GenOp,
        t0: u64,
        rec: &Recorder,
        issued_bytes: &mut u64,
    ) -> bool {
        if st.deferred.is_empty() && !self.overlaps_in_flight(st, slot, &op.req) {
            return false;
        }
        st.defer(slot, op, t0, Wait::Overlap, rec.measuring(t0), issued_bytes);
        st.overlap_holds += 1;
        true
    }

    /// serialize_overlap, after a batch of completions: the held requests at the front of
    /// `deferred` that overlap nothing in flight any more are issued, in order. Returns how many.
    #[inline]
    fn release_overlaps<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        rec: &Recorder,
        gen_base: u64,
    ) -> Result<usize> {
        let mut n = 0;
        while let Some(&(slot, Wait::Overlap)) = st.deferred.front() {
            let op = st.slots[slot].op.expect("a held slot holds its request");
            if self.overlaps_in_flight(st, slot, &op.req) {
                break;
            }
            st.deferred.pop_front();
            if rec.should_stop(now_ns()) {
                st.slots[slot].op = None;
                continue;
            }
            self.launch::<B, VERIFY>(st, slot, op, now_ns(), rec, None, gen_base)?;
            n += 1;
        }
        Ok(n)
    }

    /// Queue `op` on `slot`, issued at `t0`; its bytes counted into `issued_bytes` (None: counted
    /// when it was deferred).
    #[inline]
    #[allow(clippy::too_many_arguments)] // the loop's own state, borrowed per request on the hot path
    fn launch<B: IoBackend, const VERIFY: bool>(
        &self,
        st: &mut RunState<B>,
        slot: usize,
        op: GenOp,
        t0: u64,
        rec: &Recorder,
        issued_bytes: Option<&mut u64>,
        gen_base: u64,
    ) -> Result<()> {
        if let Some(n) = issued_bytes {
            if rec.measuring(t0) {
                *n += op.req.len as u64;
            }
        }
        let mut op = op;
        // Every request carries the thread's priority (fio sets it on each io_uring request), unless
        // a cmdprio rule gives it its own.
        op.req.ioprio = self.spec.ioprio.thread;
        if let Some(c) = st.cmdprio.as_mut() {
            if let Some(p) = c.pick(op.req.write, op.req.len) {
                op.req.ioprio = p;
                if rec.measuring(t0) {
                    c.chosen += 1;
                }
            }
        }
        let generation = if VERIFY { self.fill_write(st, slot, op.req, gen_base) } else { 0 };
        self.refill_pattern(st, slot, op.req.write, op.req.len as usize);
        if let Some(m) = self.meta.as_ref().filter(|_| op.req.write) {
            if !VERIFY {
                st.writes += 1;
            }
            m.stamp(&mut st.bufs[slot].as_mut_slice()[..op.req.len as usize], op.req.offset, st.writes, rec.tid as u32);
        }
        let mut t0 = t0;
        if op.req.write {
            if let Some(c) = st.content.as_mut() {
                // fio fills a write's buffer before it issues it: the fill is not in the request's time.
                c.fill(&mut st.bufs[slot].as_mut_slice()[..op.req.len as usize], op.req.offset, t0);
                t0 = t0.max(now_ns());
            }
        }
        st.slots[slot] = SlotMeta { t0, op: Some(op), generation, backlog: false };
        if let Some(l) = st.issue_log.as_mut() {
            let action = if op.req.write { Action::Write } else { Action::Read };
            l.push(t0, action, op.req.file, op.req.offset, op.req.len);
        }
        st.backend.queue(slot, op.req, st.bufs[slot].as_ptr())
    }

    /// The next request for the backend (and whether trims came first). Trims are done here, one
    /// fallocate each, timed and counted as their own kind: a hole punch moves no data through a
    /// buffer, and keeping it out of the backends keeps their contract (read, write, fsync) as it is.
    /// With queue_depth > 1 a trim therefore waits for nothing and nothing waits for it but this
    /// thread. None: the phase ended (deadline, byte quota or stop) during trims.
    #[inline]
    pub(super) fn next_io<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        quota: Option<u64>,
        issued: &mut u64,
        job: &Settings,
    ) -> Result<Option<(GenOp, bool)>> {
        let mut trimmed = false;
        // fio's one-call engines (falloc, ftruncate, e4defrag: fileops.rs) do every request here.
        let one_call = self.spec.fio_engine.one_call();
        loop {
            let op = st.gen.next_op();
            if st.gen.ended() {
                return Ok(None); // fio's per-direction random map stopped, or sprandom's plan is done
            }
            if op.sync != 0 {
                // fio's read_iolog: a logged sync, done here between the requests at its time.
                trimmed = true;
                if !self.replayed_sync(st, rec, &op)? {
                    return Ok(None);
                }
                continue;
            }
            if !op.trim && !one_call {
                return Ok(Some((op, trimmed)));
            }
            trimmed = true;
            let t0 = now_ns();
            if rec.measuring(t0) {
                *issued += op.req.len as u64;
            }
            if let Some(l) = st.issue_log.as_mut().filter(|_| op.trim) {
                l.push(t0, Action::Trim, op.req.file, op.req.offset, op.req.len);
            }
            let kind = if op.trim {
                TRIM
            } else if op.req.write {
                WRITE
            } else {
                READ
            };
            let mut bytes = op.req.len as u64;
            let mut failed = false;
            if let Some(fds) = &st.trim_fds {
                let fd = fds[op.req.file as usize];
                let done = if one_call {
                    self.one_call(fd, &op, kind, st.donor.as_ref()).map(|n| bytes = n)
                } else {
                    punch_hole(fd, op.req.offset, op.req.len as u64)
                };
                if let Err(e) = done {
                    // fio's continue_on_error: a trim's error is a write error, as in fio.
                    let dir = match kind {
                        READ => 0,
                        WRITE => 1,
                        _ => 2,
                    };
                    let errno = e.raw_os_error().unwrap_or(libc::EIO);
                    match st.errors.note(&self.spec.continue_on, self.spec.fill, dir, errno, &op.req) {
                        OnError::Go => failed = true,
                        OnError::Full => return Ok(None),
                        OnError::Fatal if one_call => return Err(one_call_failure(self.spec.fio_engine, &op, e, job)),
                        OnError::Fatal => return Err(trim_failure(op.req, e, job)),
                    }
                }
            }
            let t1 = now_ns();
            if failed {
                // Counted, not measured; the thread goes on with its next request.
                if rec.should_stop(t1) || quota.is_some_and(|q| *issued >= q) {
                    return Ok(None);
                }
                continue;
            }
            rec.record(kind, bytes, t0, t1);
            if let Some(l) = st.io_log.as_mut().filter(|_| t0 >= rec.measure_start_ns) {
                l.push(io_record(&op, kind, t0, t1, rec.measure_start_ns));
            }
            if t0 >= rec.measure_start_ns {
                let m = &mut st.mix[op.entry];
                m[match kind {
                    READ => 0,
                    WRITE => 1,
                    _ => 4,
                }] += 1;
                m[if op.random { 2 } else { 3 }] += 1;
            }
            // fio's trimwrite writes the range it just trimmed even when the trim reached the quota.
            if rec.should_stop(t1) || (quota.is_some_and(|q| *issued >= q) && !st.gen.write_pending()) {
                return Ok(None);
            }
        }
    }

    /// fio's read_iolog: a logged sync (fsync, or fdatasync) of its file, once it is due, timed as
    /// an fsync. False: a stop or the deadline came first.
    #[cold]
    fn replayed_sync<B: IoBackend>(&self, st: &mut RunState<B>, rec: &mut Recorder, op: &GenOp) -> Result<bool> {
        let due = st.gen.replay_due();
        if due > now_ns() && !sleep_until(due, rec) {
            return Ok(false);
        }
        let t0 = now_ns();
        let (kind, action) =
            if op.sync == 1 { (SyncKind::Full, Action::Sync) } else { (SyncKind::Data, Action::Datasync) };
        if let Some(l) = st.issue_log.as_mut() {
            l.push(t0, action, op.req.file, 0, 0);
        }
        st.backend.sync(op.req.file, kind)?;
        let t1 = now_ns();
        rec.record(FSYNC, 0, t0, t1);
        Ok(!rec.should_stop(t1))
    }

    /// With a buffer pattern: a write of `len` bytes on a slot whose buffer a read overwrote gets
    /// the pattern back in the part it sends.
    #[inline]
    fn refill_pattern<B: IoBackend>(&self, st: &mut RunState<B>, slot: usize, write: bool, len: usize) {
        let (lo, hi) = st.dirty[slot];
        if write && lo < hi && lo < len {
            let end = hi.min(len);
            fill_pattern_range(st.bufs[slot].as_mut_slice(), self.spec.write_pattern(), lo, end);
            st.dirty[slot] = if end >= hi { (0, 0) } else { (end, hi) };
        }
    }
}

/// A trim on a file: punch a hole over [offset, offset + len), keeping the file's size.
#[inline]
fn punch_hole(fd: RawFd, offset: u64, len: u64) -> std::io::Result<()> {
    use rustix::fs::{fallocate, FallocateFlags};
    // SAFETY: fd is open for the whole phase (FilesGuard).
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    fallocate(fd, FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE, offset, len).map_err(std::io::Error::from)
}

#[cold]
fn trim_failure(req: IoReq, e: std::io::Error, job: &Settings) -> EngineError {
    if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
        return EngineError::invalid(
            "trim_pct",
            format!(
                "the filesystem under {} cannot punch holes (fallocate PUNCH_HOLE), which is how fsmeter trims a file: \
                 use a filesystem that can (ext4, xfs, btrfs, tmpfs), or no trims",
                job.dir.display()
            ),
        );
    }
    EngineError::io(format!("trim (hole punch) of {} bytes at offset {} of file {}", req.len, req.offset, req.file), e)
}
