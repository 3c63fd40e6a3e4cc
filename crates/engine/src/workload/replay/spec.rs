//! The replay spec: which load file, how long, and its checks.

use std::path::PathBuf;

use serde::Deserialize;

use crate::backend::BackendKind;
use crate::error::{EngineError, Result};
use crate::measure::duration::secs_to_ns;
use crate::settings::Settings;

pub const DEFAULT_LOADFILE: &str = "/usr/share/dbench/client.txt";

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaySpec {
    /// The dbench load file (client.txt format).
    #[serde(default = "default_loadfile")]
    pub loadfile: PathBuf,
    /// Measured seconds (dbench -t) ...
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// ... and/or stop every client after this many passes of the file.
    #[serde(default)]
    pub passes: Option<u64>,
    /// Unmeasured seconds first. Default as dbench: duration_s / 5 in whole
    /// seconds (integer division, as dbench's `timelimit / 5`); 0 without duration_s.
    #[serde(default)]
    pub warmup_s: Option<f64>,
    /// Simulate Samba's case-insensitive name lookup (dbench's resolve_name):
    /// when stat fails, scan the parent directory. false = dbench --no-resolve.
    #[serde(default = "yes")]
    pub resolve_names: bool,
    /// Verify data (written.rs): clients write a pattern of (client, offset), reads check the
    /// bytes written since the file was created, and the `verify` phase re-reads them all.
    #[serde(default)]
    pub verify: bool,
}

fn default_loadfile() -> PathBuf {
    PathBuf::from(DEFAULT_LOADFILE)
}
fn yes() -> bool {
    true
}

impl ReplaySpec {
    pub fn validate(&self, job: &Settings) -> Result<()> {
        if job.backend != BackendKind::Psync {
            return Err(EngineError::invalid(
                "backend",
                "replay issues dbench's system calls directly (open, pread, pwrite, stat, ...): use backend=psync",
            ));
        }
        if let Some(d) = self.duration_s {
            if secs_to_ns("duration_s", d)? == 0 {
                return Err(EngineError::invalid("duration_s", "must be > 0"));
            }
        }
        if self.passes == Some(0) {
            return Err(EngineError::invalid("passes", "must be >= 1"));
        }
        if self.duration_s.is_none() && self.passes.is_none() {
            return Err(EngineError::invalid(
                "duration_s",
                "give duration_s or passes (or both: whichever comes first)",
            ));
        }
        if let Some(w) = self.warmup_s {
            secs_to_ns("warmup_s", w)?;
        }
        Ok(())
    }

    /// dbench: `options.warmup = options.timelimit / 5` (ints).
    pub fn warmup_ns(&self) -> u64 {
        match (self.warmup_s, self.duration_s) {
            (Some(w), _) => (w * 1e9) as u64,
            (None, Some(d)) => ((d as u64) / 5) * 1_000_000_000,
            (None, None) => 0,
        }
    }
}
