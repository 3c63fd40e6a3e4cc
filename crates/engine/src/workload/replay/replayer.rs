//! The replay workload: its phases (setup, run, cleanup) and their reports.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::sync::Mutex;

use super::client::{path_of, Client};
use super::ops::*;
use super::parse::LoadFile;
use super::spec::ReplaySpec;
use super::written::{client_key, PathIds, Written};
use crate::error::{EngineError, Result};
use crate::measure::{run_threads, Control, PhaseTiming};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::verify::content::ContentCheck;
use crate::workload::family::Workload;

pub struct Replay {
    spec: ReplaySpec,
    load: Arc<LoadFile>,
    /// A zeroed buffer every client writes from (dbench writes calloc'ed buffers).
    zeros: Vec<u8>,
    /// With verify: path -> id (for renamed directories), and each client's written ranges after a run.
    path_ids: Option<PathIds>,
    written: Mutex<Vec<Written>>,
}

impl Replay {
    pub fn new(job: &Settings, spec: ReplaySpec) -> Result<Replay> {
        spec.validate(job)?;
        if !spec.loadfile.is_file() {
            return Err(EngineError::invalid(
                "loadfile",
                format!(
                    "{} does not exist: install Debian package dbench or give loadfile=PATH",
                    spec.loadfile.display()
                ),
            ));
        }
        let load = Arc::new(LoadFile::open(&spec.loadfile)?);
        let zeros = vec![0u8; load.max_io.max(1) as usize];
        let path_ids = spec.verify.then(|| {
            Arc::new(
                (0..load.path_count() as u32)
                    .map(|id| (load.path(id).to_vec(), id))
                    .collect::<std::collections::HashMap<_, _>>(),
            )
        });
        Ok(Replay { spec, load, zeros, path_ids, written: Mutex::new(Vec::new()) })
    }

    pub fn load_file(&self) -> &Arc<LoadFile> {
        &self.load
    }

    fn clients_dir(job: &Settings) -> PathBuf {
        job.dir.join("clients")
    }

    fn setup(&self, job: &Settings) -> Result<PhaseReport> {
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

    fn run(&self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
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
            |tid| {
                let w = self.path_ids.as_ref().map(|ids| {
                    Written::new(client_key(job.seed, tid), lf.path_count(), ids.clone(), lf.max_io as usize)
                });
                Client::new(tid, &base, lf, &self.zeros, spec.resolve_names, w)
            },
            |c, rec| c.replay(rec, spec.passes),
        )?;
        let mut results = results;
        let run_check = spec.verify.then(|| {
            let mut check = ContentCheck::new(None);
            let mut kept = Vec::new();
            for r in results.iter_mut() {
                if let Some(mut w) = r.written.take() {
                    check.absorb(std::mem::replace(&mut w.check, ContentCheck::new(None)));
                    kept.push(w);
                }
            }
            check.notes =
                verify_notes("the run's reads, on the bytes written since each file was created or truncated");
            *self.written.lock().unwrap_or_else(|p| p.into_inner()) = kept;
            check
        });
        let mut mismatches = [0u64; NKINDS];
        let mut samples: Vec<String> = Vec::new();
        let (mut passes, mut reused, mut short) = (0u64, 0u64, 0u64);
        for r in &results {
            for (m, n) in mismatches.iter_mut().zip(&r.mismatches) {
                *m += n;
            }
            passes += r.passes;
            reused += r.handles_reused;
            short += r.short_reads;
            samples.extend(r.samples.iter().cloned());
        }
        for (k, &n) in mismatches.iter().enumerate() {
            if n > 0 {
                report.counters.insert(format!("mismatch.{}", KINDS[k]), n);
                let first: Vec<&String> =
                    samples.iter().filter(|s| s.starts_with(&format!("{} ", KINDS[k]))).take(3).collect();
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
            report
                .warnings
                .push(format!("{reused} NTCreateX reused a handle that was still open; the old file was closed"));
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
        if let Some(c) = run_check {
            c.merge_into(&mut report);
        }
        Ok(report)
    }

    /// The `verify` phase: re-read every byte range each client wrote (and did not remove or
    /// truncate since), from storage where the pages can be dropped, and check it.
    fn verify_phase(&self, job: &Settings) -> Result<PhaseReport> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::FileExt;

        if !self.spec.verify {
            return Err(EngineError::invalid("verify", "the verify phase needs verify = true in the spec"));
        }
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        if written.is_empty() {
            return Err(EngineError::invalid("verify", "run the run phase first: there is nothing written to check"));
        }
        let lf: &LoadFile = &self.load;
        let base = job.dir.as_os_str().as_bytes().to_vec();
        let mut total = ContentCheck::new(None);
        let t0 = crate::measure::now_ns();
        let (mut files, mut bytes) = (0u64, 0u64);
        let mut buf = vec![0u8; 1 << 20];
        for (client, w) in written.iter_mut().enumerate() {
            let cname = format!("client{client}").into_bytes();
            w.check = ContentCheck::new(None);
            for id in 0..w.ranges.len() as u32 {
                if w.ranges[id as usize].is_empty() {
                    continue;
                }
                let name = path_of(&base, lf, id, &cname);
                let f = crate::nofollow::open_read(std::path::Path::new(&name))?;
                // SAFETY: advisory call on an fd we own.
                unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
                files += 1;
                for (s, e) in w.ranges[id as usize].clone() {
                    let mut off = s;
                    while off < e {
                        let want = ((e - off) as usize).min(buf.len());
                        let n = f
                            .read_at(&mut buf[..want], off)
                            .map_err(|er| EngineError::io(format!("verify: reading {name}"), er))?;
                        bytes += n as u64;
                        w.check_read(id, off, &buf[..n], || name.clone(), "verify");
                        if n < want {
                            // The file ends inside a written range: the rest is missing.
                            w.check.note(
                                serde_json::json!({"file": name, "offset": off + n as u64, "len": e - off - n as u64,
                                                            "kind": "short", "phase": "verify"}),
                            );
                            break;
                        }
                        off += n as u64;
                    }
                }
            }
            total.absorb(std::mem::replace(&mut w.check, ContentCheck::new(None)));
        }
        let mut report = PhaseReport::new("verify");
        report.threads = 1;
        report.elapsed_s = (crate::measure::now_ns() - t0) as f64 / 1e9;
        report.counters.insert("files_checked".into(), files);
        report.counters.insert("bytes_checked".into(), bytes);
        report.extra = serde_json::json!({});
        total.notes =
            verify_notes("every range each client wrote and kept, re-read after the run (pages dropped first)");
        total.merge_into(&mut report);
        Ok(report)
    }

    fn cleanup(&self, job: &Settings) -> Result<PhaseReport> {
        let base = Self::clients_dir(job);
        let mut removed = 0u64;
        if std::fs::symlink_metadata(&base).is_ok_and(|m| !m.is_dir()) {
            // Not what setup made (a link planted since): removing through it could reach outside.
            let mut report = PhaseReport::new("cleanup");
            report.counters.insert("client_dirs_removed".into(), 0);
            return Ok(report);
        }
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

fn verify_notes(what: &str) -> serde_json::Value {
    serde_json::json!({
        "checked": what,
        "how": "dbench writes at any offset and size, so there are no block headers: every byte a client writes is a function of the client and the byte's offset, and a check compares bytes; one checked block is one written range met by a read",
        "not_found": "a lost rewrite (the same bytes at the same offset as before)",
    })
}

impl Workload for Replay {
    fn phases(&self) -> &'static [&'static str] {
        &["setup", "run", "verify", "cleanup"]
    }

    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        match phase {
            "setup" => self.setup(job),
            "run" => self.run(job, ctl),
            "verify" => self.verify_phase(job),
            "cleanup" => self.cleanup(job),
            _ => unreachable!("checked by Session"),
        }
    }
}

fn mkdir_ok(p: &Path) -> Result<()> {
    match std::fs::create_dir(p) {
        Ok(()) => Ok(()),
        // A real directory only: a symbolic link there could lead the clients out of the job's directory.
        Err(e)
            if e.kind() == std::io::ErrorKind::AlreadyExists
                && std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) =>
        {
            Ok(())
        }
        Err(e) => Err(EngineError::io(format!("creating {}", p.display()), e)),
    }
}
