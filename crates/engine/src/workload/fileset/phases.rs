//! The fileset workload: its phases (create, transactions, delete, cleanup) and their reports.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use super::counts::{Counts, APPEND, CREATE, DELETE, KINDS, READ};
use super::dirs::Dirs;
use super::spec::{FilesetMode, FilesetSpec};
use super::threads::{share_of, thread_seed};
use super::worker::{Params, Worker};
use crate::error::{EngineError, Result};
use crate::measure::duration::secs_to_ns;
use crate::measure::{now_ns, own_fd_table, run_threads, Control, PhaseTiming, Recorder};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::workload::family::Workload;

pub struct Fileset {
    spec: FilesetSpec,
    params: Params,
    workers: Vec<Mutex<Worker>>,
    dirs: Option<Dirs>,
    /// The create phase ran and the fileset has not been deleted since (it may be out of files).
    created: bool,
}

impl Fileset {
    pub fn new(job: &Settings, spec: FilesetSpec) -> Result<Fileset> {
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
            verify: spec.verify,
            vblock: spec.verify_block_bytes() as usize,
            seed: job.seed,
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
    fn setup_dirs(&mut self, job: &Settings) -> Result<()> {
        if let Some(dirs) = self.dirs.as_mut() {
            return dirs.open_fds();
        }
        let mut dirs = Dirs {
            fds: Vec::new(),
            paths: Vec::new(),
            made: Vec::new(),
            index: Vec::new(),
            subdirs: self.spec.subdirectories,
        };
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
                return Err(EngineError::invalid(
                    "locations",
                    format!("{} is not an existing directory", full.display()),
                ));
            } else {
                crate::nofollow::create_dirs(&job.dir, &full)?;
                true
            };
            dirs.paths.push(full);
            dirs.made.push(made);
        }
        if self.spec.locations.len() > 1 {
            for (i, l) in self.spec.locations.iter().enumerate() {
                dirs.index.extend(std::iter::repeat_n(i as u16, l.weight as usize));
            }
        }
        dirs.open_fds()?;
        // glibc sizes a FILE's buffer by st_blksize.
        // SAFETY: fstat fills the struct we pass.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { crate::sys::fstat(dirs.fds[0], &mut st) } == 0 && st.st_blksize > 0 {
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
                crate::nofollow::mkdirat(*fd, &name, 0o700, &path.join(format!("s{k}")))?;
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
                    if unsafe { crate::sys::unlinkat(*fd, name.as_ptr(), libc::AT_REMOVEDIR) } != 0 {
                        let e = std::io::Error::last_os_error();
                        if e.raw_os_error() != Some(libc::ENOENT) {
                            return Err(EngineError::io(format!("rmdir {}/s{k}", path.display()), e));
                        }
                    }
                }
            }
        }
        let made: Vec<PathBuf> =
            dirs.paths.iter().zip(&dirs.made).filter(|(_, &m)| m).map(|(p, _)| p.clone()).collect();
        drop(dirs);
        for p in made {
            let _ = std::fs::remove_dir(&p);
        }
        Ok(())
    }

    fn create(&mut self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        if self.live() > 0 {
            return Err(EngineError::invalid(
                "phase",
                "the fileset exists already: run delete or cleanup before create",
            ));
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
                let table = own_fd_table(&dirs.fds);
                let mut w = this.lock(tid);
                w.reset(&p, share_of(this.spec.files, nthreads, tid) as usize, thread_seed(job.seed, tid));
                Ok((w, table))
            },
            |(w, _), rec| {
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
        self.merge_verify(&mut report);
        Ok(report)
    }

    fn transactions(&mut self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        if self.dirs.is_none() || !self.created {
            return Err(EngineError::invalid("phase", "no fileset: run the create phase before transactions"));
        }
        self.dirs.as_mut().expect("checked").open_fds()?;
        let before = self.totals();
        self.start_verify("transactions");
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
            |tid| Ok((this.lock(tid), own_fd_table(&dirs.fds))),
            |(w, _), rec| {
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
        self.merge_verify(&mut report);
        Ok(report)
    }

    /// The verify phase: every thread re-reads each of its live files and checks it (docs/verify.md).
    fn verify(&mut self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        if self.spec.verify.is_none() {
            return Err(EngineError::invalid(
                "verify",
                "the verify phase needs verify = \"crc32c\", \"xxh3\" or \"sha256\" in the spec",
            ));
        }
        if self.dirs.is_none() || !self.created {
            return Err(EngineError::invalid("phase", "no fileset: run the create phase before verify"));
        }
        self.dirs.as_mut().expect("checked").open_fds()?;
        let before = self.totals();
        self.start_verify("verify");
        let mut report = self.each_slot("verify", job, ctl, |w, p, dirs, i, rec| {
            if w.table[i].size == 0 {
                return Ok(());
            }
            let t0 = now_ns();
            let bytes = w.reread(p, dirs, i)?;
            rec.record(READ, bytes, t0, now_ns());
            Ok(())
        })?;
        self.finish(&mut report, before, job);
        self.merge_verify(&mut report);
        Ok(report)
    }

    /// A fixed-work phase in which every thread visits each slot of its file table once, in
    /// order, with `visit` (verify and delete), stopping early when asked to.
    fn each_slot<F>(&self, phase: &'static str, job: &Settings, ctl: &Control, visit: F) -> Result<PhaseReport>
    where
        F: Fn(&mut Worker, &Params, &Dirs, usize, &mut Recorder) -> Result<()> + Sync,
    {
        let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
        let p = self.params;
        let dirs = self.dirs.as_ref().expect("dirs set up");
        let (report, _) = run_threads(
            phase,
            job.threads,
            timing,
            ctl,
            KINDS,
            3,
            self.live(),
            |tid| Ok((self.lock(tid), own_fd_table(&dirs.fds))),
            |(w, _), rec| {
                for i in 0..w.table.len() {
                    if rec.interrupted() {
                        break;
                    }
                    visit(w, &p, dirs, i, rec)?;
                }
                Ok(())
            },
        )?;
        Ok(report)
    }

    /// Verification counters start again for `phase` in every thread.
    fn start_verify(&self, phase: &'static str) {
        for t in 0..self.workers.len() {
            if let Some(v) = self.lock(t).v.as_mut() {
                v.start_phase(phase);
            }
        }
    }

    /// The threads' verification counters and kept mismatches into `report` (nothing without verify).
    fn merge_verify(&self, report: &mut PhaseReport) {
        if self.spec.verify.is_none() {
            return;
        }
        let guards: Vec<_> = (0..self.workers.len()).map(|t| self.lock(t)).collect();
        let paths: std::collections::HashMap<u32, &str> = guards
            .iter()
            .filter_map(|w| w.v.as_ref())
            .flat_map(|v| v.paths.iter().map(|(f, p)| (*f, p.as_str())))
            .collect();
        let notes = serde_json::json!({
            "exact": true,
            "block_bytes": self.params.vblock,
            "file_index": "the file's number (its name)",
            "tail": "a file's last partial block is compared byte for byte with the block that would be there",
        });
        crate::verify::merge_into(
            report,
            guards.iter().filter_map(|w| w.v.as_ref().map(|v| &v.checker)),
            |f| paths.get(&f).map(|p| p.to_string()).unwrap_or_else(|| format!("file {f}")),
            notes,
        );
    }

    fn delete(&mut self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        if self.dirs.is_none() {
            return Err(EngineError::invalid("phase", "no fileset: run the create phase before delete"));
        }
        self.dirs.as_mut().expect("checked").open_fds()?;
        let before = self.totals();
        let mut report = self.each_slot("delete", job, ctl, |w, p, dirs, i, rec| {
            let t0 = now_ns();
            if w.delete(p, dirs, i)? {
                w.c.deleted_alone += 1;
                rec.record(DELETE, 0, t0, now_ns());
            }
            Ok(())
        })?;
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
    fn cleanup(&mut self, _job: &Settings) -> Result<PhaseReport> {
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
    fn finish(&self, report: &mut PhaseReport, before: Counts, job: &Settings) {
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
        &["create", "transactions", "verify", "delete", "cleanup"]
    }

    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        let out = match phase {
            "create" => self.create(job, ctl),
            "transactions" => self.transactions(job, ctl),
            "verify" => self.verify(job, ctl),
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
