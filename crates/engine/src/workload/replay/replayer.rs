//! The replay workload: its phases (setup, run, cleanup) and their reports.

use std::path::{Path, PathBuf};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use super::client::Client;
use super::ops::*;
use super::parse::LoadFile;
use super::spec::ReplaySpec;
use crate::error::{EngineError, Result};
use crate::job::Job;
use crate::measure::{run_threads, Control, PhaseTiming};
use crate::report::PhaseReport;
use crate::workload::Workload;

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
