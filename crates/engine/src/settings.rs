//! The settings every workload family runs with: the directory, the worker
//! threads, the seed, the I/O backend and the sampling interval. The job spec
//! (job.rs) reads them from JSON beside the workload's own spec; a
//! family sees only these and its spec.

use std::path::PathBuf;

use crate::backend::BackendKind;
use crate::error::{EngineError, Result};

#[derive(Clone, Debug)]
pub struct Settings {
    /// The directory the workload's files live in (must exist).
    pub dir: PathBuf,
    pub threads: usize,
    /// The same seed gives the same sequence of operations.
    pub seed: u64,
    pub backend: BackendKind,
    /// Interval between throughput samples.
    pub interval_s: f64,
}

impl Settings {
    pub fn validate(&self) -> Result<()> {
        if self.threads == 0 || self.threads > 4096 {
            return Err(EngineError::invalid("threads", "must be between 1 and 4096"));
        }
        if !(self.interval_s > 0.0 && self.interval_s <= 3600.0) {
            return Err(EngineError::invalid("interval_s", "must be > 0 and <= 3600"));
        }
        if !self.dir.is_dir() {
            return Err(EngineError::invalid("dir", format!("{} is not an existing directory", self.dir.display())));
        }
        Ok(())
    }

    pub fn interval_ns(&self) -> u64 {
        (self.interval_s * 1e9) as u64
    }
}
