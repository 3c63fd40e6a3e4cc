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
