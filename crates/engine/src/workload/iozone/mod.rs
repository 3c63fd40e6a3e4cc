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

pub mod nine_tests;
pub mod stdio;
pub mod verify;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::backend::buffer::AlignedBuf;
use crate::backend::BackendKind;
use crate::error::{EngineError, Result};
use crate::measure::{run_threads, Control, PhaseTiming};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::workload::family::Workload;
use nine_tests::{Cell, Opts, Purge, KINDS};

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

struct State {
    buf: AlignedBuf,
    stdio: Vec<u8>,
    perm: Vec<u32>,
    purge: Option<Purge>,
    mix: Vec<AlignedBuf>,
    verify: Option<verify::CellVerify>,
}

impl Workload for Iozone {
    fn phases(&self) -> &'static [&'static str] {
        PHASES
    }

    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        if phase == "cleanup" {
            let mut report = PhaseReport::new(phase);
            // SAFETY: NUL-terminated path.
            let removed = unsafe { libc::unlink(self.path.as_ptr()) } == 0;
            report.counters.insert("files_removed".into(), removed as u64);
            return Ok(report);
        }
        let spec = &self.spec;
        let path = self.path.as_c_str();
        let opts = Opts { fsync: spec.fsync, close: spec.close, direct: spec.direct, stride: spec.stride };
        let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
        let (maxrec, maxn) = (spec.max_record(), spec.max_records());
        let (mut report, out) = run_threads(
            phase,
            1,
            timing,
            ctl,
            KINDS,
            3,
            spec.work_total(),
            |_| {
                Ok(State {
                    buf: AlignedBuf::random(maxrec, 4096, job.seed),
                    stdio: vec![0u8; maxrec],
                    perm: Vec::with_capacity(maxn),
                    purge: spec.purge.then(|| Purge::new(spec.cache_size as usize, spec.cache_line as usize)),
                    mix: if spec.has(8) {
                        (0..spec.mix_threads)
                            .map(|t| AlignedBuf::random(maxrec, 4096, job.seed ^ (t as u64 + 1)))
                            .collect()
                    } else {
                        Vec::new()
                    },
                    verify: spec.verify.map(|a| verify::CellVerify::new(a, job.seed)),
                })
            },
            |st, rec| {
                let mut cells_out = Vec::with_capacity(spec.cells.len());
                let mut failed = 0u64;
                let mut stopped = false;
                let mut tests_sorted = spec.tests.clone();
                tests_sorted.sort_unstable();
                for (ci, &[file, reclen]) in spec.cells.iter().enumerate() {
                    let numrecs = file / reclen;
                    // iozone shuffles the records once per cell for its random tests.
                    let mut rng = Xoshiro256PlusPlus::seed_from_u64(job.seed.wrapping_add(ci as u64));
                    st.perm.clear();
                    st.perm.extend(0..numrecs as u32);
                    for i in (1..st.perm.len()).rev() {
                        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                        st.perm.swap(i, j);
                    }
                    if let Some(v) = st.verify.as_mut() {
                        v.start_cell(ci as u32, file, reclen);
                    }
                    let mut cell = Cell {
                        path,
                        rec: reclen as usize,
                        numrecs,
                        buf: st.buf.as_mut_slice(),
                        stdio: &mut st.stdio,
                        perm: &st.perm,
                        purge: st.purge.as_ref(),
                        fetch: st.purge.is_none(),
                        verify: st.verify.as_mut(),
                        latency: spec.latency,
                    };
                    let mut results = Map::new();
                    let mut error: Option<String> = None;
                    for &t in &tests_sorted {
                        let done = match t {
                            0 => nine_tests::write_rewrite(&mut cell, &opts, rec),
                            1 => nine_tests::read_reread(&mut cell, &opts, rec),
                            2 => nine_tests::random_rw(&mut cell, &opts, rec),
                            3 => nine_tests::backward_read(&mut cell, &opts, rec),
                            4 => nine_tests::record_rewrite(&mut cell, &opts, rec),
                            5 => nine_tests::stride_read(&mut cell, &opts, rec),
                            6 => nine_tests::fwrite_refwrite(&mut cell, &opts, rec),
                            7 => nine_tests::fread_refread(&mut cell, &opts, rec),
                            _ => nine_tests::random_mix(&mut cell, &opts, &mut st.mix, rec),
                        };
                        match done {
                            Ok(d) => {
                                for &(col, secs) in &d.passes[..d.n] {
                                    let streams = if col == nine_tests::MIX { spec.mix_threads as u64 } else { 1 };
                                    let (ops, bytes) = (numrecs * streams, numrecs * reclen * streams);
                                    let per_s = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
                                    results.insert(
                                        KINDS[col].to_string(),
                                        json!({"KB_per_s": per_s(bytes) / 1024.0, "ops_per_s": per_s(ops), "time_s": secs, "ops": ops, "bytes": bytes}),
                                    );
                                }
                                if d.stopped {
                                    stopped = true;
                                    break;
                                }
                            }
                            Err(f) if fills_up(f.errno) => {
                                let e = std::io::Error::from_raw_os_error(f.errno);
                                error = Some(format!("test {t}: {} of {}: {e}", f.what, path.to_string_lossy()));
                                break;
                            }
                            Err(f) => {
                                // SAFETY: NUL-terminated path.
                                unsafe { libc::unlink(path.as_ptr()) };
                                let mut ctx = format!(
                                    "iozone cell {} KiB x {} KiB, test {t}: {} of {}",
                                    file / 1024,
                                    reclen / 1024,
                                    f.what,
                                    path.to_string_lossy()
                                );
                                if f.errno == libc::EINVAL && spec.direct {
                                    ctx.push_str(" (O_DIRECT: the record size must be a multiple of the device's logical block size, or use direct=false)");
                                }
                                return Err(EngineError::io(ctx, std::io::Error::from_raw_os_error(f.errno)));
                            }
                        }
                    }
                    if let Some(v) = st.verify.as_mut() {
                        if error.is_none() && !stopped && spec.has(0) {
                            // Untimed: every record of the file, checked before iozone removes it.
                            v.reread(path, numrecs, &mut st.buf.as_mut_slice()[..reclen as usize]);
                        }
                    }
                    // iozone removes the file at the end of each cell.
                    // SAFETY: NUL-terminated path.
                    unsafe { libc::unlink(path.as_ptr()) };
                    let mut c = json!({"file_size": file, "record_size": reclen, "file_kb": file / 1024, "record_kb": reclen / 1024,
                                       "status": if error.is_some() { "failed" } else if stopped { "interrupted" } else { "ok" },
                                       "results": Value::Object(results)});
                    if let Some(e) = error {
                        failed += 1;
                        c["error"] = Value::String(e);
                    }
                    cells_out.push(c);
                    if stopped {
                        break;
                    }
                }
                Ok((cells_out, failed, st.verify.take()))
            },
        )?;
        let (cells, failed, verifier) = out.into_iter().next().unwrap_or_default();
        report.counters.insert("cells".into(), cells.len() as u64);
        report.counters.insert("cells_failed".into(), failed);
        if failed > 0 {
            report.warnings.push(format!(
                "{failed} cell(s) failed (the filesystem filled up); their results are missing, the other cells ran"
            ));
        }
        let mut tests_sorted = spec.tests.clone();
        tests_sorted.sort_unstable();
        let columns: Vec<&str> =
            tests_sorted.iter().flat_map(|&t| nine_tests::columns(t).iter().map(|&c| KINDS[c])).collect();
        let verify_extra = verifier.map(|v| {
            let name = |ci: u32| {
                let c = spec.cells.get(ci as usize).copied().unwrap_or([0, 0]);
                format!("{} (cell {ci}: {} KiB file, {} KiB records)", path.to_string_lossy(), c[0] / 1024, c[1] / 1024)
            };
            let notes = json!({"reread": "at the end of each cell, before the file is removed", "cells_corrupt": v.cells_corrupt,
                               "reads_checked": "all but test 8's (its readers may meet a write in progress)"});
            crate::verify::merge_into(&mut report, [&v.checker], name, notes);
            report.extra["verify"].clone()
        });
        report.extra = json!({"tests": tests_sorted, "columns": columns, "cells": cells,
                              "fsync": spec.fsync, "close": spec.close, "direct": spec.direct, "purge": spec.purge});
        if let Some(x) = verify_extra {
            report.extra["verify"] = x;
        }
        Ok(report)
    }
}
