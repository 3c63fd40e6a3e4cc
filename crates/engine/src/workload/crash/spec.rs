//! The crash family's spec (what Python sends), its check, and the names and
//! seeds of the files the write phase makes and the check phase reads.

use std::path::PathBuf;

use serde::Deserialize;

use crate::error::{EngineError, Result};
use crate::settings::Settings;
use crate::verify::{Checksum, HEADER_LEN};

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SyncCall {
    Fsync,
    Fdatasync,
    /// Alternate: fsync at one sync point, fdatasync at the next.
    Mixed,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashSpec {
    /// How long the write phase runs.
    #[serde(default = "default_runtime")]
    pub runtime_s: f64,
    #[serde(default = "default_files")]
    pub files_per_thread: u32,
    /// Largest size a file grows to (then only overwrites).
    #[serde(default = "default_file_size")]
    pub file_size: u64,
    /// The verified unit: each block starts with a header.
    #[serde(default = "default_block")]
    pub block_size: u64,
    /// Bytes per write(2) (a multiple of block_size).
    #[serde(default = "default_write_size")]
    pub write_size: u64,
    /// The dirty set: bytes a thread writes between two sync points.
    #[serde(default = "default_dirty")]
    pub dirty_bytes: u64,
    /// Percent of writes that overwrite written blocks in place instead of appending.
    #[serde(default = "default_overwrite")]
    pub overwrite_pct: u32,
    #[serde(default = "default_sync")]
    pub sync: SyncCall,
    #[serde(default = "default_checksum")]
    pub checksum: String,
    /// Where the write phase writes the ledger and the check phase reads it (outside the
    /// filesystem under test, or the crash would take it too).
    pub ledger: PathBuf,
    /// The ledger is a temporary file fsmeter chose (no `ledger` given): the cleanup phase removes
    /// it once a check found every promise kept; a ledger a check found broken promises in stays.
    #[serde(default)]
    pub ledger_temporary: bool,
    /// The crash instant (CLOCK_MONOTONIC ns) for `check`: promises made before it are checked.
    #[serde(default)]
    pub cut_ns: Option<u64>,
    /// Findings listed in the check report (all are counted).
    #[serde(default = "default_max_findings")]
    pub max_findings: usize,
}

fn default_runtime() -> f64 {
    10.0
}
fn default_files() -> u32 {
    16
}
fn default_file_size() -> u64 {
    4 << 20
}
fn default_block() -> u64 {
    4096
}
fn default_write_size() -> u64 {
    16 << 10
}
fn default_dirty() -> u64 {
    1 << 20
}
fn default_overwrite() -> u32 {
    25
}
fn default_sync() -> SyncCall {
    SyncCall::Mixed
}
fn default_checksum() -> String {
    "crc32c".into()
}
fn default_max_findings() -> usize {
    50
}

pub fn parse_checksum(name: &str) -> Result<Checksum> {
    match name {
        "crc32c" => Ok(Checksum::Crc32c),
        "xxh3" => Ok(Checksum::Xxh3),
        "sha256" => Ok(Checksum::Sha256),
        _ => Err(EngineError::invalid("checksum", format!("{name:?}: use crc32c, xxh3 or sha256"))),
    }
}

/// The seed written into every block of file `idx` of thread `tid`: tells one file's blocks
/// from another's (a block of another file at the same offset is garbage here, not data).
pub fn file_seed(job_seed: u64, tid: u32, idx: u32) -> u64 {
    let mut z = job_seed ^ ((tid as u64) << 32 | idx as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Thread `tid`'s directory name, written without allocating (the ledger's lines use it).
pub struct ThreadDir(pub u32);

impl std::fmt::Display for ThreadDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "crash-t{}", self.0)
    }
}

/// File `idx`'s name, written without allocating.
pub struct FileName(pub u32);

impl std::fmt::Display for FileName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "f{:06}", self.0)
    }
}

pub fn thread_dir(tid: u32) -> String {
    ThreadDir(tid).to_string()
}

pub fn file_name(idx: u32) -> String {
    FileName(idx).to_string()
}

impl CrashSpec {
    pub(super) fn validate(&self, job: &Settings) -> Result<Checksum> {
        let algo = parse_checksum(&self.checksum)?;
        // `!(x > 0.0)` and not `x <= 0.0`: NaN is refused too.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(self.runtime_s > 0.0) || crate::measure::duration::secs_to_ns("runtime_s", self.runtime_s).is_err() {
            return Err(EngineError::invalid("runtime_s", "must be > 0 and at most 10000000 s (about 116 days)"));
        }
        if self.files_per_thread == 0 {
            return Err(EngineError::invalid("files_per_thread", "must be >= 1"));
        }
        if self.block_size < HEADER_LEN as u64 * 2 || !self.block_size.is_multiple_of(512) {
            return Err(EngineError::invalid(
                "block_size",
                format!("must be a multiple of 512 and at least {} bytes", HEADER_LEN * 2),
            ));
        }
        if self.write_size == 0 || !self.write_size.is_multiple_of(self.block_size) {
            return Err(EngineError::invalid("write_size", "must be a multiple of block_size"));
        }
        if self.file_size < self.write_size {
            return Err(EngineError::invalid("file_size", "must be at least write_size"));
        }
        if self.dirty_bytes < self.write_size {
            return Err(EngineError::invalid("dirty_bytes", "must be at least write_size"));
        }
        if self.overwrite_pct > 100 {
            return Err(EngineError::invalid("overwrite_pct", "must be 0..100"));
        }
        if job.threads == 0 {
            return Err(EngineError::invalid("threads", "must be >= 1"));
        }
        Ok(algo)
    }
}
