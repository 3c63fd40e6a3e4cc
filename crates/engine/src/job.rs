//! The job spec, deserialised from the JSON that Python validated first
//! (python/fsmeter/spec.py mirrors these types). The engine re-checks what it
//! relies on, so it is safe to drive from Rust alone.
//!
//! In JSON the settings every family shares (`crate::settings`) sit beside
//! `workload`, the family's own spec; `JobFields` is that flat form.

use std::path::PathBuf;

use serde::Deserialize;

use crate::backend::BackendKind;
use crate::error::{EngineError, Result};
use crate::settings::Settings;
use crate::workload::WorkloadSpec;

#[derive(Clone, Debug, Deserialize)]
#[serde(from = "JobFields")]
pub struct Job {
    pub settings: Settings,
    pub workload: WorkloadSpec,
}

/// A job as its JSON spells it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JobFields {
    /// The directory the workload's files live in (must exist).
    pub dir: PathBuf,
    #[serde(default = "one")]
    pub threads: usize,
    /// The same seed gives the same sequence of operations.
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default = "default_backend")]
    pub backend: BackendKind,
    /// Interval between throughput samples.
    #[serde(default = "default_interval")]
    pub interval_s: f64,
    pub workload: WorkloadSpec,
}

impl From<JobFields> for Job {
    fn from(f: JobFields) -> Job {
        let JobFields { dir, threads, seed, backend, interval_s, workload } = f;
        Job { settings: Settings { dir, threads, seed, backend, interval_s }, workload }
    }
}

fn one() -> usize {
    1
}
fn default_seed() -> u64 {
    42
}
fn default_backend() -> BackendKind {
    BackendKind::Psync
}
fn default_interval() -> f64 {
    1.0
}

impl Job {
    pub fn from_json(text: &str) -> Result<Job> {
        let job: Job = serde_json::from_str(text).map_err(|e| EngineError::invalid("job", e.to_string()))?;
        job.validate()?;
        Ok(job)
    }

    pub fn validate(&self) -> Result<()> {
        self.settings.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(extra: &str) -> Result<Job> {
        let dir = serde_json::to_string(&std::env::temp_dir()).unwrap();
        Job::from_json(&format!(
            r#"{{"dir": {dir}, {extra} "workload": {{"family": "tree", "levels": 1, "dirs_per_level": 1, "files_per_dir": 1}}}}"#
        ))
    }

    #[test]
    fn flat_json_fills_the_settings_with_their_defaults() {
        let j = job("").unwrap();
        let s = &j.settings;
        assert_eq!(
            (s.dir.as_path(), s.threads, s.seed, s.backend, s.interval_s),
            (std::env::temp_dir().as_path(), 1, 42, BackendKind::Psync, 1.0)
        );
        assert!(matches!(j.workload, WorkloadSpec::Tree(_)));
        let j = job(r#""threads": 3, "seed": 7, "backend": "null", "interval_s": 0.5,"#).unwrap();
        let s = &j.settings;
        assert_eq!((s.threads, s.seed, s.backend, s.interval_s), (3, 7, BackendKind::Null, 0.5));
    }

    #[test]
    fn unknown_fields_and_bad_settings_are_refused_by_name() {
        let e = job(r#""thread": 2,"#).unwrap_err().to_string();
        assert!(e.contains("unknown field `thread`"), "{e}");
        let e = job(r#""threads": 0,"#).unwrap_err().to_string();
        assert!(e.starts_with("threads:"), "{e}");
    }
}
