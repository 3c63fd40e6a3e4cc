//! The fileset spec: PostMark's parameters and filemark's extensions, and their checks.

use serde::Deserialize;

use crate::backend::BackendKind;
use crate::error::{EngineError, Result};
use crate::measure::duration::secs_to_ns;
use crate::settings::Settings;

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FilesetMode {
    /// Biases on PostMark's 0..10 scale (`RND(10) < bias`).
    Postmark,
    /// Biases in percent (`RND(100) < bias`).
    Filemark,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Location {
    /// A directory, relative to the job's `dir` (created when missing) or absolute (must exist).
    pub path: String,
    #[serde(default = "one_u32")]
    pub weight: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesetSpec {
    #[serde(default = "default_mode")]
    pub mode: FilesetMode,
    /// PostMark's `set number`: files created by the create phase (all threads).
    #[serde(default = "default_files")]
    pub files: u64,
    /// PostMark's `set transactions`, per transactions phase (all threads); None: time-based only.
    #[serde(default)]
    pub transactions: Option<u64>,
    /// Measured seconds per transactions phase (filemark); with `transactions`, whichever ends first.
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// Unmeasured transactions before each transactions phase's measured window.
    #[serde(default)]
    pub warmup_s: f64,
    #[serde(default = "default_low")]
    pub size_low: u32,
    #[serde(default = "default_high")]
    pub size_high: u32,
    #[serde(default = "default_block")]
    pub read_block: u32,
    #[serde(default = "default_block")]
    pub write_block: u32,
    /// Used when > 1: files go to `s0` .. `s<n-1>` of each location.
    #[serde(default)]
    pub subdirectories: u32,
    /// PostMark's `set location` list; empty: the job's `dir`.
    #[serde(default)]
    pub locations: Vec<Location>,
    /// Chance of read over append: 0..10 (postmark) or 0..100 (filemark); -1 disables reads and appends.
    #[serde(default = "default_bias")]
    pub bias_read: i32,
    /// Chance of create over delete, same scale; -1 disables creates and deletes.
    #[serde(default = "default_bias")]
    pub bias_create: i32,
    /// stdio-like buffered I/O (a user-space buffer of the file system's block size) or plain read/write.
    #[serde(default = "default_true")]
    pub buffering: bool,
    /// Data verification (docs/verify.md): file contents carry a header per verify block, reads
    /// are checked, the verify phase re-reads every live file. None: PostMark's text bytes.
    #[serde(default)]
    pub verify: Option<crate::verify::Checksum>,
    /// Bytes per verified block (one header each); 0: write_block.
    #[serde(default)]
    pub verify_block: u32,
}

fn one_u32() -> u32 {
    1
}
fn default_mode() -> FilesetMode {
    FilesetMode::Postmark
}
fn default_files() -> u64 {
    500
}
fn default_low() -> u32 {
    500
}
fn default_high() -> u32 {
    10000
}
fn default_block() -> u32 {
    512
}
fn default_bias() -> i32 {
    5
}
fn default_true() -> bool {
    true
}

/// Each thread owns at most this many files (slots are indexed with u32).
const MAX_FILES_PER_THREAD: u64 = 1 << 30;

impl FilesetSpec {
    pub fn bias_scale(&self) -> i32 {
        match self.mode {
            FilesetMode::Postmark => 10,
            FilesetMode::Filemark => 100,
        }
    }

    /// The verify block: `verify_block`, or `write_block` when it is 0.
    pub fn verify_block_bytes(&self) -> u32 {
        if self.verify_block == 0 {
            self.write_block
        } else {
            self.verify_block
        }
    }

    pub fn validate(&self, job: &Settings) -> Result<()> {
        if self.files == 0 {
            return Err(EngineError::invalid("files", "must be >= 1"));
        }
        if self.files < job.threads as u64 {
            return Err(EngineError::invalid(
                "files",
                format!("{} files cannot be shared by {} threads: use files >= threads", self.files, job.threads),
            ));
        }
        if self.files / job.threads as u64 >= MAX_FILES_PER_THREAD {
            return Err(EngineError::invalid(
                "files",
                format!("at most {} files per thread", MAX_FILES_PER_THREAD - 1),
            ));
        }
        if self.size_low == 0 {
            return Err(EngineError::invalid("size_low", "must be >= 1 byte"));
        }
        if self.size_high < self.size_low {
            return Err(EngineError::invalid("size_high", format!("must be >= size_low ({} bytes)", self.size_low)));
        }
        if self.size_high > 1 << 30 {
            return Err(EngineError::invalid("size_high", "must be <= 1 GiB"));
        }
        if self.read_block == 0 || self.read_block > 1 << 30 {
            return Err(EngineError::invalid("read_block", "must be between 1 byte and 1 GiB"));
        }
        if self.write_block == 0 || self.write_block > 1 << 30 {
            return Err(EngineError::invalid("write_block", "must be between 1 byte and 1 GiB"));
        }
        let scale = self.bias_scale();
        for (name, v) in [("bias_read", self.bias_read), ("bias_create", self.bias_create)] {
            if v < -1 || v > scale {
                return Err(EngineError::invalid(
                    name,
                    format!("must be -1 (disabled) or 0..{scale} in {:?} mode", self.mode).to_lowercase(),
                ));
            }
        }
        if self.subdirectories > 1_000_000 {
            return Err(EngineError::invalid("subdirectories", "must be <= 1000000"));
        }
        let mut total_weight = 0u64;
        for (i, l) in self.locations.iter().enumerate() {
            if l.path.is_empty() || l.path.as_bytes().contains(&0) {
                return Err(EngineError::invalid(format!("locations[{i}].path"), "must be a non-empty directory path"));
            }
            // A relative location lives below dir: a ".." would climb out of it (absolute ones are named as such).
            if !l.path.starts_with('/') && l.path.split('/').any(|c| c == "..") {
                return Err(EngineError::invalid(
                    format!("locations[{i}].path"),
                    format!(
                        "{:?} climbs out of dir with '..': name a directory below dir, or an absolute path",
                        l.path
                    ),
                ));
            }
            if l.weight == 0 {
                return Err(EngineError::invalid(format!("locations[{i}].weight"), "must be >= 1"));
            }
            total_weight += l.weight as u64;
        }
        if total_weight > 1_000_000 {
            return Err(EngineError::invalid("locations", "the weights must add up to <= 1000000"));
        }
        if self.locations.len() > u16::MAX as usize {
            return Err(EngineError::invalid("locations", "at most 65535 locations"));
        }
        if (self.locations.len().max(1) as u64) * (self.subdirectories.max(1) as u64) > u32::MAX as u64 {
            return Err(EngineError::invalid("subdirectories", "too many directories (locations x subdirectories)"));
        }
        secs_to_ns("warmup_s", self.warmup_s)?;
        if let Some(d) = self.duration_s {
            if secs_to_ns("duration_s", d)? == 0 {
                return Err(EngineError::invalid("duration_s", "must be > 0"));
            }
        }
        if self.transactions.is_none() && self.duration_s.is_none() {
            return Err(EngineError::invalid(
                "transactions",
                "give transactions or duration_s (or both: whichever ends first)",
            ));
        }
        if let Some(algo) = self.verify {
            let b = self.verify_block_bytes();
            if (b as usize) < algo.min_block() || b > 1 << 30 {
                let field = if self.verify_block == 0 { "write_block" } else { "verify_block" };
                return Err(EngineError::invalid(
                    field,
                    format!("{b} bytes: with verify, each block holds a {}-byte header and data: use verify_block >= {} bytes (and <= 1 GiB)", algo.header_len(), algo.min_block()),
                ));
            }
        }
        if job.backend != BackendKind::Psync {
            return Err(EngineError::invalid(
                "backend",
                "the fileset family issues plain system calls (open, read, write, unlink): use backend=psync",
            ));
        }
        Ok(())
    }
}
