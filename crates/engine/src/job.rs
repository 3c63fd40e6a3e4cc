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
use crate::workload::access::AccessSpec;

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

/// One variant per workload family; `family` in JSON selects it.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "family", rename_all = "snake_case")]
pub enum WorkloadSpec {
    Access(AccessSpec),
    Replay(crate::workload::replay::ReplaySpec),
    Fileset(crate::workload::fileset::FilesetSpec),
    Tree(crate::workload::tree::TreeSpec),
    Iozone(crate::workload::iozone::IozoneSpec),
    Mix(crate::workload::mix::MixSpec),
    Bonnie(crate::workload::bonnie::BonnieSpec),
    Macro(crate::workload::macro_tools::MacroSpec),
    Crash(crate::workload::crash::CrashSpec),
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
