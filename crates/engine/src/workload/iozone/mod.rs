//! The iozone family: iozone's tests over a grid of cells (file size x record
//! size), as `iozone -a` runs them.
//!
//! Python works out the cells with iozone's own rules (python/fsmeter/families/
//! iozone_grid.py) and hands them over in run order; the engine checks each one
//! and runs, per cell, the selected tests in iozone's order on one file
//! (`dir/file_name`), removed at the end of the cell as iozone does.
//!
//! Phases: `grid` (measured: every cell, every test) and `cleanup` (removes
//! the file an interrupted run may have left). A cell whose filesystem fills
//! up (ENOSPC, EDQUOT, EFBIG) is marked failed in the report and the grid goes
//! on with the next cell.

mod grid;
pub mod nine_tests;
pub mod stdio;
pub mod verify;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;

use serde::Deserialize;
use serde_json::Value;

use crate::backend::BackendKind;
use crate::error::{EngineError, Result};
use crate::measure::Control;
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::workload::family::Workload;

/// iozone's largest record (MAXBUFFERSIZE).
pub const MAX_RECORD: u64 = 16 << 20;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IozoneSpec {
    /// The cells in run order: [file size, record size] in bytes.
    pub cells: Vec<[u64; 2]>,
    /// iozone test numbers (-i): 0 write/rewrite .. 8 random mix.
    #[serde(default = "default_tests")]
    pub tests: Vec<u8>,
    /// fsync inside the timing (-e).
    #[serde(default)]
    pub fsync: bool,
    /// close inside the timing (-c).
    #[serde(default)]
    pub close: bool,
    /// O_DIRECT (-I).
    #[serde(default)]
    pub direct: bool,
    /// Read a separate buffer before every record to evict the processor cache (-p).
    #[serde(default)]
    pub purge: bool,
    /// Processor cache size for the purge (-S), bytes, a power of two.
    #[serde(default = "default_cache_size")]
    pub cache_size: u64,
    /// Cache line size for the purge (-L), bytes.
    #[serde(default = "default_cache_line")]
    pub cache_line: u64,
    /// Stride read distance in records (-j).
    #[serde(default = "default_stride")]
    pub stride: u64,
    /// Threads of the random mix (test 8): even ones read, odd ones write.
    #[serde(default = "default_mix_threads")]
    pub mix_threads: usize,
    #[serde(default = "default_file_name")]
    pub file_name: String,
    /// The grid as the user asked for it (Python's parameters: ranges, crossover, -O ...). The
    /// engine does not use it; it travels with the recorded job so reports and exports can
    /// rebuild iozone's tables.
    #[serde(default)]
    pub params: Option<Value>,
    /// Data verification (docs/verify.md): one header per record.
    #[serde(default)]
    pub verify: Option<crate::verify::Checksum>,
    /// Time every record into the latency histograms (iozone -Q); off, only each pass is timed.
    #[serde(default)]
    pub latency: bool,
}

fn default_tests() -> Vec<u8> {
    (0..=7).collect()
}
fn default_cache_size() -> u64 {
    1 << 20
}
fn default_cache_line() -> u64 {
    32
}
fn default_stride() -> u64 {
    17
}
fn default_mix_threads() -> usize {
    2
}
fn default_file_name() -> String {
    "iozone.tmp".into()
}

impl IozoneSpec {
    pub fn validate(&self, job: &Settings) -> Result<()> {
        if self.cells.is_empty() {
            return Err(EngineError::invalid("cells", "no cell to run: give at least one file size and record size"));
        }
        for (i, &[file, rec]) in self.cells.iter().enumerate() {
            if rec == 0 || rec > MAX_RECORD {
                return Err(EngineError::invalid(
                    format!("cells[{i}]"),
                    format!("record size {rec} bytes: must be between 1 byte and 16 MiB (iozone's largest)"),
                ));
            }
            if rec > file {
                return Err(EngineError::invalid(
                    format!("cells[{i}]"),
                    format!("record size {rec} bytes is larger than the file ({file} bytes): use a record size <= file size"),
                ));
            }
            if rec > u32::MAX as u64 || file / rec > u32::MAX as u64 {
                return Err(EngineError::invalid(
                    format!("cells[{i}]"),
                    "more than 2^32 records in one file: use larger records",
                ));
            }
            if let Some(algo) = self.verify.filter(|a| rec < a.min_block() as u64) {
                return Err(EngineError::invalid(format!("cells[{i}]"), format!("record size {rec} bytes: with verify, each record holds a {}-byte header and data: use records >= {} bytes", algo.header_len(), algo.min_block())));
            }
            if self.direct && rec % 512 != 0 {
                return Err(EngineError::invalid(
                    format!("cells[{i}]"),
                    format!("record size {rec} bytes is not a multiple of 512, which O_DIRECT needs: use a multiple of 512, or direct=false"),
                ));
            }
        }
        let mut seen = [false; 9];
        for &t in &self.tests {
            if t > 8 {
                return Err(EngineError::invalid("tests", format!("test {t} does not exist: iozone's tests are 0..8")));
            }
            if std::mem::replace(&mut seen[t as usize], true) {
                return Err(EngineError::invalid("tests", format!("test {t} is listed twice")));
            }
        }
        if self.tests.is_empty() {
            return Err(EngineError::invalid("tests", "no test selected: give iozone test numbers 0..8"));
        }
        if !seen[0] && [1, 2, 3, 5, 7, 8].iter().any(|&t| seen[t]) {
            return Err(EngineError::invalid(
                "tests",
                "tests 1, 2, 3, 5, 7 and 8 read the file test 0 (write) makes: include test 0",
            ));
        }
        if self.purge
            && (!self.cache_size.is_power_of_two()
                || self.cache_line == 0
                || self.cache_line > self.cache_size
                || self.cache_size > (1 << 30))
        {
            return Err(EngineError::invalid("cache_size", "the purge needs a power-of-two cache size up to 1 GiB and a cache line between 1 byte and the cache size"));
        }
        if self.stride == 0 {
            return Err(EngineError::invalid("stride", "must be >= 1 record"));
        }
        if self.mix_threads == 0 || self.mix_threads > 256 {
            return Err(EngineError::invalid("mix_threads", "must be between 1 and 256"));
        }
        if self.file_name.is_empty() || self.file_name.contains('/') || self.file_name == "." || self.file_name == ".."
        {
            return Err(EngineError::invalid("file_name", "must be a plain file name without '/'"));
        }
        if job.threads != 1 {
            return Err(EngineError::invalid(
                "threads",
                "the iozone grid runs one stream (test 8 has its own mix_threads): use threads=1",
            ));
        }
        if job.backend != BackendKind::Psync {
            return Err(EngineError::invalid(
                "backend",
                "the iozone family makes its own system calls: use backend=psync",
            ));
        }
        Ok(())
    }

    fn max_record(&self) -> usize {
        self.cells.iter().map(|c| c[1]).max().unwrap_or(0) as usize
    }

    fn max_records(&self) -> usize {
        self.cells.iter().map(|c| c[0] / c[1]).max().unwrap_or(0) as usize
    }

    fn has(&self, t: u8) -> bool {
        self.tests.contains(&t)
    }

    /// Timed records of all cells (progress), test 8 excluded.
    fn work_total(&self) -> u64 {
        let passes: u64 = self.tests.iter().filter(|&&t| t != 8).map(|&t| nine_tests::columns(t).len() as u64).sum();
        self.cells.iter().map(|c| c[0] / c[1] * passes).sum()
    }
}

pub struct Iozone {
    spec: IozoneSpec,
    path: CString,
}

impl Iozone {
    pub fn new(job: &Settings, spec: IozoneSpec) -> Result<Self> {
        spec.validate(job)?;
        let p = job.dir.join(&spec.file_name);
        let path =
            CString::new(p.as_os_str().as_bytes()).map_err(|_| EngineError::invalid("dir", "contains a NUL byte"))?;
        Ok(Iozone { spec, path })
    }
}

const PHASES: &[&str] = &["grid", "cleanup"];

/// Errors that fail one cell and let the grid go on: the filesystem is full.
fn fills_up(errno: i32) -> bool {
    errno == libc::ENOSPC || errno == libc::EDQUOT || errno == libc::EFBIG
}

impl Workload for Iozone {
    fn phases(&self) -> &'static [&'static str] {
        PHASES
    }

    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        if phase == "cleanup" {
            let mut report = PhaseReport::new(phase);
            // SAFETY: NUL-terminated path.
            let removed = unsafe { crate::sys::unlink(self.path.as_ptr()) } == 0;
            report.counters.insert("files_removed".into(), removed as u64);
            return Ok(report);
        }
        grid::run(&self.spec, self.path.as_c_str(), phase, job, ctl)
    }
}
