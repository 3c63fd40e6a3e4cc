//! The access workload's run phase around its threads: the backend each thread gets, the thread's
//! state made before the common start, what it hands back at its end, and the phase report made
//! from it all. The per-thread loop itself is `worker.rs`.

use std::sync::atomic::Ordering::Relaxed;

use super::backlog::Backlog;
use super::errors::ErrorCounts;
use super::fd::FilesGuard;
use super::gen::AccessGen;
use super::iolog::{write_logs, IoLogBuf};
use super::issuelog::{write_iolog, IssueBuf};
use super::lattarget::LatProbe;
use super::pace::{FlowState, Pacer};
use super::prio::{set_thread_ioprio, CmdPrioState};
use super::spec::FioEngine;
use super::worker::{RunState, SlotMeta};
use super::workload::{Access, BufStats, KINDS, NOT_DATA};
use crate::backend::aio::AioBackend;
use crate::backend::buffer::{huge_region, AlignedBuf, BufferMemory, HUGETLB_PAGE};
use crate::backend::content::ContentGen;
use crate::backend::fault::{FaultBackend, Injected};
use crate::backend::mmap::{self, MmapBackend, MmapOptions, Persist};
use crate::backend::null::NullBackend;
use crate::backend::pattern::fill_pattern;
use crate::backend::psync::PsyncBackend;
use crate::backend::uring::UringBackend;
use crate::backend::{BackendKind, FileTable, IoBackend};
use crate::error::{EngineError, Result};
use crate::measure::duration::secs_to_ns;
use crate::measure::{own_fd_table, run_group, Control, GroupMember, PhaseTiming, Recorder};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::verify::content::ContentCheck;
use crate::verify::{self, Checker};

impl Access {
    pub(super) fn run(&self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        if self.spec.fio_engine.per_name() {
            return self.run_names(job, ctl);
        }
        if self.spec.fio_engine == FioEngine::Cpuio {
            return self.run_cpu(job, ctl);
        }
        let rf = self.open_run(job)?;
        let (files, share_align) = (&rf.files, rf.share_align);
        let spec = &self.spec;
        let fault_log = std::sync::Mutex::new(Vec::<Injected>::new());
        let mut report = match job.backend {
            BackendKind::Psync if spec.fault.is_some() => {
                let fs = spec.fault.clone().expect("checked");
                self.run_with(job, ctl, files, share_align, |f, _| Ok(FaultBackend::new(f, fs.clone(), &fault_log)))
            }
            BackendKind::Psync => self.run_with(job, ctl, files, share_align, |f, _| Ok(PsyncBackend::new(f))),
            BackendKind::IoUring => self.run_with(job, ctl, files, share_align, |f, bufs| {
                let ptrs: Vec<(*mut u8, usize)> = bufs.iter().map(|b| (b.as_ptr(), b.len())).collect();
                UringBackend::new(f, self.spec.queue_depth as usize, &ptrs)
            }),
            BackendKind::Libaio => {
                self.run_with(job, ctl, files, share_align, |f, _| AioBackend::new(f, self.spec.queue_depth as usize))
            }
            BackendKind::Null => {
                self.run_with(job, ctl, files, share_align, |_, _| Ok(NullBackend::new(self.spec.queue_depth as usize)))
            }
            BackendKind::Mmap | BackendKind::Libpmem => {
                let opts = self.mmap_options(job);
                self.run_with(job, ctl, files, share_align, |f, _| MmapBackend::new(f, opts))
            }
        }?;
        report.totals_without(NOT_DATA);
        self.note_mmap(job, &mut report, files);
        if let Some(f) = &spec.fault {
            let log = fault_log.into_inner().unwrap_or_default();
            report.counters.insert("faults_injected".into(), log.len() as u64);
            report.extra["faults_injected"] = serde_json::json!({
                "kind": format!("{:?}", f.kind),
                "writes": log.iter().map(|i| serde_json::json!({"file": i.file, "offset": i.offset, "len": i.len})).collect::<Vec<_>>(),
            });
        }
        self.finish_direct(&mut report, rf);
        Ok(report)
    }

    /// How the mmap backends map this job's files (backend/mmap.rs): writable unless the mix only reads,
    /// advised random or sequential as the mix is, fio's direct, and libpmem's persistence (cache flushes;
    /// its files were proven on DAX persistent memory when they were opened).
    pub(super) fn mmap_options(&self, job: &Settings) -> MmapOptions {
        let spec = &self.spec;
        MmapOptions {
            writable: !spec.entries.iter().all(|e| e.read_pct >= 100.0) || spec.fio_engine.one_call(),
            random: spec.entries.iter().any(|e| e.random_pct > 0.0),
            direct: spec.direct,
            persist: match job.backend {
                BackendKind::Libpmem => Persist::CacheFlush,
                _ => Persist::No,
            },
        }
    }

    /// With an mmap backend: how the files were mapped and writes made durable (`extra.mmap`), and for
    /// libpmem on a file not on persistent memory, a warning saying so.
    pub(super) fn note_mmap(&self, job: &Settings, report: &mut PhaseReport, files: &FilesGuard) {
        if !job.backend.maps() {
            return;
        }
        let o = self.mmap_options(job);
        let dax = files.0.first().is_some_and(|&fd| mmap::is_dax(fd));
        let persist = match o.persist {
            Persist::No => "none: the page cache writes the mapped pages back",
            Persist::CacheFlush => "each write's CPU cache lines flushed and fenced before it completes",
        };
        report.extra["mmap"] = serde_json::json!({
            "backend": job.backend.name(),
            "mapped": "each file whole, MAP_SHARED, once per thread before the phase",
            "advice": if o.random { "MADV_RANDOM" } else { "MADV_SEQUENTIAL" },
            "writable": o.writable,
            "dax": dax,
            "persist": persist,
            "direct": if o.direct { "msync(MS_SYNC) and MADV_DONTNEED of each request's pages" } else { "no" },
        });
    }

    fn run_with<B, Mk>(
        &self,
        job: &Settings,
        ctl: &Control,
        files: &FilesGuard,
        share_align: u64,
        make: Mk,
    ) -> Result<PhaseReport>
    where
        B: IoBackend,
        Mk: Fn(FileTable, &[AlignedBuf]) -> Result<B> + Sync,
    {
        let bufs = BufStats::default();
        let t = self.run_timing(job)?;
        let mut member = GroupMember::new(job.threads, t.warmup_ns, t.duration_ns);
        member.steady = self.steady()?;
        member.interval_lat = self.spec.interval_lat;
        let (mut report, _, mixes) = run_group(
            "run",
            &[member],
            t.interval_ns,
            ctl,
            KINDS,
            self.spec.sigfig(),
            0,
            |tid| self.run_state(job, tid, share_align, files, &make, &bufs),
            // Two copies of the hot loop: without verify it has no verification code at all.
            |st, rec| self.run_work(st, rec, self.quota(job, rec.tid), job),
        )?;
        self.finish_run(job, &mut report, mixes, &bufs);
        Ok(report)
    }

    /// When the run phase measures: its warm-up, then its duration (None: until its bytes are done).
    pub(super) fn run_timing(&self, job: &Settings) -> Result<PhaseTiming> {
        let spec = &self.spec;
        Ok(PhaseTiming {
            warmup_ns: secs_to_ns("warmup_s", spec.warmup_s)?,
            duration_ns: spec.duration_s.map(|d| (d * 1e9) as u64),
            interval_ns: job.interval_ns(),
        })
    }

    /// The measured bytes thread `tid` (of `job.threads`) does, when the spec has a byte total.
    pub(super) fn quota(&self, job: &Settings, tid: usize) -> Option<u64> {
        let nthreads = job.threads as u64;
        if let Some(r) = self.spec.thread_regions.get(tid) {
            return self.spec.total_bytes.map(|_| r.bytes); // fio's offset_increment: each clone its own bytes
        }
        self.spec.total_bytes.map(|t| if tid == 0 { t / nthreads + t % nthreads } else { t / nthreads })
    }

    /// Thread `tid`'s state for the run phase, made before the common start: its request buffers,
    /// its backend on the open files, its request generator.
    pub(super) fn run_state<B, Mk>(
        &self,
        job: &Settings,
        tid: usize,
        share_align: u64,
        files: &FilesGuard,
        make: &Mk,
        stats: &BufStats,
    ) -> Result<RunState<B>>
    where
        B: IoBackend,
        Mk: Fn(FileTable, &[AlignedBuf]) -> Result<B>,
    {
        let spec = &self.spec;
        // A descriptor table of the thread's own, before its ring or any file of its own is opened:
        // it keeps the phase's descriptors only where the thread uses them (`own_files`).
        let table = own_fd_table(if Self::opens_own_files(job, tid, files) { &[] } else { &files.0 });
        // Pinned, and the memory policy set, before the buffers are allocated (fio does it as its job starts).
        if spec.place.is_set() {
            spec.place.apply(tid)?;
        }
        let qd = spec.queue_depth as usize;
        let max = spec.max_size();
        let seed = |s: usize| job.seed ^ ((tid * qd + s) as u64) << 8;
        let (bufs, info) = AlignedBuf::set(qd, max, 4096, spec.buffer_memory, seed)
            .map_err(|e| buffer_error(spec.buffer_memory, qd, max, e))?;
        stats.buf_bytes.fetch_add((qd * max) as u64, Relaxed);
        stats.mapped_bytes.fetch_add(info.mapped, Relaxed);
        match info.huge {
            Some(h) => {
                stats.huge_bytes.fetch_add(h, Relaxed);
            }
            None => stats.huge_unknown.store(true, Relaxed),
        }
        for b in &bufs {
            fill_pattern(b.as_mut_slice(), spec.write_pattern());
        }
        if spec.ioprio.has_cmd() && matches!(job.backend, BackendKind::Psync | BackendKind::Mmap | BackendKind::Libpmem)
        {
            return Err(EngineError::invalid(
                "ioprio.cmd",
                "per-request priorities need backend io_uring or libaio (psync's pread and pwrite, and copies to a \
                 mapping, carry none): use ioprio.thread, or backend=io_uring",
            ));
        }
        // The thread's own priority, before the start (fio sets it as its job starts).
        if spec.ioprio.thread != 0 && job.backend != BackendKind::Null {
            set_thread_ioprio(spec.ioprio.thread)?;
        }
        let own = self.own_files(job, tid, files)?;
        let fds = own.as_ref().unwrap_or(files).0.clone();
        let mut backend = make(fds.clone(), &bufs)?;
        if spec.atomic {
            backend.set_write_flags(libc::RWF_ATOMIC)?;
        }
        Ok(RunState {
            backend,
            bufs,
            gen: AccessGen::with_share_align(spec, job.seed, tid, job.threads, share_align),
            slots: vec![SlotMeta::default(); qd],
            completed: Vec::with_capacity(qd),
            mix: vec![[0; 5]; spec.entries.len()],
            trim_fds: (job.backend != BackendKind::Null).then_some(fds),
            _own_fds: own,
            _table: table,
            dirty: vec![(0, 0); qd],
            verify: spec.verify.map(|a| {
                let mut c = Checker::new(a, spec.verify_block() as usize, job.seed, tid as u32, "run");
                c.dump = spec.verify_dump;
                c
            }),
            // With a checksum method or a checked verify_pattern (whose reads check every byte).
            backlog: ((spec.verify.is_some() || spec.checks_pattern()) && spec.verify_backlog > 0)
                .then(|| Backlog::new(spec.verify_backlog, spec.verify_backlog_batch, qd)),
            racy: !((job.threads == 1 || spec.thread_files) && qd == 1),
            pattern_check: ContentCheck::new(None),
            writes: 0,
            donor: match spec.fio_engine {
                FioEngine::E4defrag if job.backend != BackendKind::Null => Some(self.open_donor(job)?),
                _ => None,
            },
            errors: ErrorCounts::default(),
            pacer: spec.pace.paces().then(|| Pacer::new(&spec.pace, spec.min_sizes(), seed(qd))),
            deferred: std::collections::VecDeque::with_capacity(qd),
            // Its weight joins the flow in the setup, before any thread of the group starts (fio adds a
            // job's weight when it sets the job up).
            flow: (spec.pace.flow > 0).then(|| {
                let mut f = FlowState::new(self.flow.clone(), spec.pace.flow, spec.pace.flow_sleep_us);
                f.join();
                f
            }),
            content: spec.content.as_ref().map(|c| {
                let [_, w] = spec.min_sizes();
                let min_write = if w == 0 { spec.entries.iter().map(|e| e.size).min().unwrap_or(1) } else { w as u32 };
                // fio fills its iodepth buffers (the largest request each) before a writing job starts.
                let primed = if w == 0 && !spec.trim_then_write { (0, 0) } else { (qd, max) };
                ContentGen::new(c, job.seed, tid, job.threads, min_write, spec.write_pattern(), primed)
            }),
            cmdprio: spec.ioprio.has_cmd().then(|| CmdPrioState::new(&spec.ioprio, seed(qd + 1) ^ 0x70_72_69_6f)),
            io_log: spec.io_log.as_ref().map(|l| IoLogBuf::new(l.max_records)),
            issue_log: spec.iolog_out.as_ref().map(|l| IssueBuf::new(l.max_records)),
            lat: spec.latency_target.as_ref().map(|l| LatProbe::new(l, qd as u32, 0)),
            overlap_holds: 0,
        })
    }

    /// One thread's run: the hot loop, in one of two copies (without verify or a backlog it has no
    /// verification code at all). Returns its mix counts and its checker.
    pub(super) fn run_work<B: IoBackend>(
        &self,
        st: &mut RunState<B>,
        rec: &mut Recorder,
        quota: Option<u64>,
        job: &Settings,
    ) -> Result<(Vec<[u64; 5]>, Option<Checker>)> {
        let mix = if st.verify.is_some() || st.backlog.is_some() {
            self.worker::<B, true>(st, rec, quota, job)?
        } else {
            self.worker::<B, false>(st, rec, quota, job)?
        };
        if let Some(c) = &st.cmdprio {
            self.cmdprio_chosen.fetch_add(c.chosen, Relaxed);
        }
        self.overlap_holds.fetch_add(st.overlap_holds, Relaxed);
        if let Some(b) = st.backlog.as_ref().filter(|_| st.verify.is_none()) {
            self.pattern_backlog_reads.fetch_add(b.reads, Relaxed);
        }
        if let Some(l) = st.issue_log.as_mut() {
            self.iolog_dropped.fetch_add(l.dropped, Relaxed);
            self.issue_logged.lock().unwrap_or_else(|e| e.into_inner()).push(l.take());
        }
        if let Some(l) = st.io_log.as_mut() {
            self.io_log_dropped.fetch_add(l.dropped, Relaxed);
            self.io_logged.lock().unwrap_or_else(|e| e.into_inner()).push(l.take());
        }
        if let Some(p) = st.lat.take() {
            // Once per thread and phase, not per request.
            self.lat_found.lock().unwrap_or_else(|e| e.into_inner()).push(p);
        }
        if let Some(spr) = st.gen.sprandom() {
            // Once per thread and phase, not per request.
            *self.spr_found.lock().unwrap_or_else(|e| e.into_inner()) = Some(spr.summary());
        }
        if st.errors.total > 0 || st.errors.full > 0 {
            // Once per thread and phase, not per request.
            self.errors_found.lock().unwrap_or_else(|e| e.into_inner()).absorb(&st.errors);
        }
        if !self.spec.verify_pattern.is_empty() {
            // Once per thread and phase, not per request.
            let found = std::mem::replace(&mut st.pattern_check, ContentCheck::new(None));
            let mut all = self.pattern_found.lock().unwrap_or_else(|e| e.into_inner());
            match all.as_mut() {
                Some(a) => a.absorb(found),
                None => *all = Some(found),
            }
        }
        Ok((mix, st.verify.take()))
    }

    /// The run report's details from what the threads returned: verification, the mix as executed,
    /// the backend and the buffers.
    pub(super) fn finish_run(
        &self,
        job: &Settings,
        report: &mut PhaseReport,
        mixes: Vec<(Vec<[u64; 5]>, Option<Checker>)>,
        stats: &BufStats,
    ) {
        let spec = &self.spec;
        if spec.verify.is_some() {
            verify::merge_into(
                report,
                mixes.iter().filter_map(|m| m.1.as_ref()),
                |f| self.path(&job.dir, f).display().to_string(),
                self.verify_notes(job),
            );
        }
        let mixes: Vec<Vec<[u64; 5]>> = mixes.into_iter().map(|m| m.0).collect();
        let mut mix = vec![[0u64; 5]; spec.entries.len()];
        for m in &mixes {
            for (a, b) in mix.iter_mut().zip(m) {
                for k in 0..5 {
                    a[k] += b[k];
                }
            }
        }
        if !spec.verify_pattern.is_empty() {
            let found = self.pattern_found.lock().unwrap_or_else(|e| e.into_inner()).take();
            let mut found = found.unwrap_or_else(|| ContentCheck::new(None));
            found.notes = self.pattern_notes("reads of the run phase");
            found.merge_into(report);
            if spec.verify.is_none() && spec.verify_backlog > 0 {
                let n = self.pattern_backlog_reads.swap(0, Relaxed);
                report.counters.insert("verify_backlog_reads".into(), n);
            }
        }
        if spec.serialize_overlap {
            report.counters.insert("serialize_overlap_holds".into(), self.overlap_holds.swap(0, Relaxed));
        }
        let verify_extra = report.extra.get("verify").cloned();
        report.extra = serde_json::json!({
            "mix": spec.entries.iter().zip(&mix).map(|(e, m)| serde_json::json!({
                "size": e.size, "weight": e.weight, "read_pct": e.read_pct, "random_pct": e.random_pct, "trim_pct": e.trim_pct,
                "reads": m[0], "writes": m[1], "random": m[2], "sequential": m[3], "trims": m[4],
            })).collect::<Vec<_>>(),
            "random_distribution": spec.random_distribution,
            "random_scramble": spec.random_scramble,
            "content": spec.content,
            "atomic": spec.atomic,
            "trim_then_write": spec.trim_then_write,
            "buffer_pattern_bytes": spec.buffer_pattern.len(),
            "verify_pattern_bytes": spec.verify_pattern.len(),
            "fio_engine": spec.fio_engine.name(),
            "stat_type": spec.stat_type,
            "backend": job.backend.name(),
            "queue_depth": spec.queue_depth,
            "direct": spec.direct,
            "buffer_memory": {
                "kind": spec.buffer_memory,
                "bytes": stats.buf_bytes.load(Relaxed),
                "mapped_bytes": stats.mapped_bytes.load(Relaxed),
                "huge_bytes": (!stats.huge_unknown.load(Relaxed)).then(|| stats.huge_bytes.load(Relaxed)),
            },
        });
        if let Some(v) = verify_extra {
            report.extra["verify"] = v;
        }
        if let Some(l) = &spec.latency_target {
            let found = std::mem::take(&mut *self.lat_found.lock().unwrap_or_else(|e| e.into_inner()));
            if let Some(p) = found.first() {
                report.counters.insert("latency_depth".into(), p.depth as u64);
                report.extra["latency_target"] = serde_json::json!({
                    "target_ns": l.target_ns,
                    "window_ns": l.window_ns,
                    "percentile": l.percentile,
                    "run": l.run,
                    "depth": p.depth,
                    "iodepth": spec.queue_depth,
                    "windows_judged": p.windows,
                    "late_requests": p.late,
                    "final_window": p.end_run,
                    "stats_reset": p.reset_at > 0,
                    "search_ended_job": p.done,
                    "ended_over_target_ns": (p.fatal_ns > 0).then_some(p.fatal_ns),
                });
                if p.fatal_ns > 0 {
                    report.warnings.push(format!(
                        "a request took {} ns at queue depth 1, over latency_target ({} ns) with latency_percentile 100: the job \
                         ended there, as fio ends it (ETIMEDOUT, max latency exceeded)",
                        p.fatal_ns, l.target_ns
                    ));
                }
            }
        }
        if spec.continue_on.is_set() || spec.fill {
            let found = std::mem::take(&mut *self.errors_found.lock().unwrap_or_else(|e| e.into_inner()));
            report.counters.insert("errors".into(), found.total);
            report.extra["errors"] = found.to_json(|f| self.path(&job.dir, f).display().to_string());
            if spec.fill {
                report.counters.insert("filled".into(), found.full);
            }
        }
        if spec.place.is_set() {
            report.extra["place"] = serde_json::to_value(&spec.place).unwrap_or_default();
        }
        if spec.ioprio != Default::default() {
            report.extra["ioprio"] = serde_json::to_value(&spec.ioprio).unwrap_or_default();
        }
        if spec.ioprio.has_cmd() {
            report.counters.insert("cmdprio_ios".into(), self.cmdprio_chosen.swap(0, Relaxed));
        }
        if let Some(l) = &spec.iolog_out {
            // After the phase: merged in issue order and written off the measured window.
            let recs = std::mem::take(&mut *self.issue_logged.lock().unwrap_or_else(|e| e.into_inner()));
            match write_iolog(l, recs, 0) {
                Ok(n) => {
                    report.counters.insert("iolog_lines".into(), n);
                }
                Err(e) => report.warnings.push(format!("the I/O log (write_iolog) was not written: {e}")),
            }
            let dropped = self.iolog_dropped.swap(0, Relaxed);
            if dropped > 0 {
                report.counters.insert("iolog_dropped".into(), dropped);
                report.warnings.push(format!(
                    "the I/O log (write_iolog) lacks {dropped} requests: past {} per thread",
                    l.max_records
                ));
            }
        }
        if let Some(l) = &spec.io_log {
            // After the phase: merged and written off the measured window.
            let recs = std::mem::take(&mut *self.io_logged.lock().unwrap_or_else(|e| e.into_inner()));
            match write_logs(l, recs) {
                Ok(n) => {
                    report.counters.insert("io_log_lines".into(), n);
                }
                Err(e) => report.warnings.push(format!("the per-I/O log was not written: {e}")),
            }
            let dropped = self.io_log_dropped.swap(0, Relaxed);
            if dropped > 0 {
                report.counters.insert("io_log_dropped".into(), dropped);
                report.warnings.push(format!(
                    "the per-I/O log holds {} requests per thread at most: {dropped} were not logged (set \
                     log_avg_msec for one averaged line per interval instead)",
                    l.max_records
                ));
            }
        }
        if let Some(spr) = self.spr_found.lock().unwrap_or_else(|e| e.into_inner()).take() {
            report.extra["sprandom"] = spr;
        }
        if spec.pace.is_active() {
            report.extra["pace"] = serde_json::to_value(&spec.pace).unwrap_or_default();
            let missed = std::mem::take(&mut *self.rate_missed.lock().unwrap_or_else(|e| e.into_inner()));
            if !missed.is_empty() {
                report.counters.insert("rate_min_missed".into(), missed.len() as u64);
                report.warnings.extend(missed);
            }
        }
    }
}

/// A thread's huge-page buffers that could not be had, as a parameter error saying what to do.
fn buffer_error(mem: BufferMemory, count: usize, len: usize, e: std::io::Error) -> EngineError {
    let what = match mem {
        BufferMemory::Hugetlb => {
            let pages = huge_region(count, len, HUGETLB_PAGE) / HUGETLB_PAGE;
            format!(
                "could not map {pages} hugetlb page(s) of 2 MiB per thread for {count} buffer(s) of {len} bytes ({e}): \
                 reserve them first (`sysctl vm.nr_hugepages=N`, N counting every thread and process; \
                 /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages says how many are free), or use \
                 buffer_memory=thp or heap"
            )
        }
        _ => format!(
            "could not map {} bytes of transparent-huge-page buffers per thread ({e}); use buffer_memory=heap",
            count * len.next_multiple_of(4096)
        ),
    };
    EngineError::invalid("buffer_memory", what)
}
