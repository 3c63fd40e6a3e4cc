//! The iozone family's grid phase: every cell (file size x record size) in turn, its tests in
//! iozone's order, the untimed re-read check, the file removed at the end of the cell.

use std::ffi::CStr;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::{json, Map, Value};

use super::nine_tests::{self, Cell, Done, Fail, Opts, Purge, KINDS};
use super::{fills_up, verify, IozoneSpec};
use crate::backend::buffer::AlignedBuf;
use crate::error::{EngineError, Result};
use crate::measure::{own_fd_table, run_threads, Control, PhaseTiming, Recorder};
use crate::report::PhaseReport;
use crate::settings::Settings;

/// The one stream's buffers, made once for the whole grid.
struct State {
    buf: AlignedBuf,
    stdio: Vec<u8>,
    perm: Vec<u32>,
    purge: Option<Purge>,
    mix: Vec<AlignedBuf>,
    verify: Option<verify::CellVerify>,
}

impl State {
    fn new(spec: &IozoneSpec, seed: u64) -> Self {
        let maxrec = spec.max_record();
        State {
            buf: AlignedBuf::random(maxrec, 4096, seed),
            stdio: vec![0u8; maxrec],
            perm: Vec::with_capacity(spec.max_records()),
            purge: spec.purge.then(|| Purge::new(spec.cache_size as usize, spec.cache_line as usize)),
            mix: if spec.has(8) {
                (0..spec.mix_threads).map(|t| AlignedBuf::random(maxrec, 4096, seed ^ (t as u64 + 1))).collect()
            } else {
                Vec::new()
            },
            verify: spec.verify.map(|a| verify::CellVerify::new(a, seed)),
        }
    }

    /// iozone shuffles the records once per cell for its random tests.
    fn shuffle(&mut self, numrecs: u64, seed: u64) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        self.perm.clear();
        self.perm.extend(0..numrecs as u32);
        for i in (1..self.perm.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            self.perm.swap(i, j);
        }
    }
}

/// What the grid's stream returns: the cells' results, the cells that failed, the verifier.
type Grid = (Vec<Value>, u64, Option<verify::CellVerify>);

pub(super) fn run(spec: &IozoneSpec, path: &CStr, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
    let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
    let mut tests = spec.tests.clone();
    tests.sort_unstable();
    let grid = GridRun {
        spec,
        path,
        tests: &tests,
        opts: Opts { fsync: spec.fsync, close: spec.close, direct: spec.direct, stride: spec.stride },
        seed: job.seed,
    };
    let (mut report, out) = run_threads(
        phase,
        1,
        timing,
        ctl,
        KINDS,
        3,
        spec.work_total(),
        // The worker opens, uses and closes every descriptor itself (its mix threads share its table).
        |_| {
            own_fd_table(&[]);
            Ok(State::new(spec, job.seed))
        },
        |st, rec| grid.cells(st, rec),
    )?;
    let (cells, failed, verifier) = out.into_iter().next().unwrap_or_default();
    report.counters.insert("cells".into(), cells.len() as u64);
    report.counters.insert("cells_failed".into(), failed);
    if failed > 0 {
        report.warnings.push(format!(
            "{failed} cell(s) failed (the filesystem filled up); their results are missing, the other cells ran"
        ));
    }
    let columns: Vec<&str> = tests.iter().flat_map(|&t| nine_tests::columns(t).iter().map(|&c| KINDS[c])).collect();
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
    report.extra = json!({"tests": tests, "columns": columns, "cells": cells,
                          "fsync": spec.fsync, "close": spec.close, "direct": spec.direct, "purge": spec.purge});
    if let Some(x) = verify_extra {
        report.extra["verify"] = x;
    }
    Ok(report)
}

/// How a cell ended.
enum Ended {
    Ran,
    /// Asked to stop: the grid ends after this cell.
    Stopped,
    /// The filesystem filled up: the cell failed, the grid goes on.
    Failed(String),
}

struct GridRun<'a> {
    spec: &'a IozoneSpec,
    path: &'a CStr,
    /// The tests in iozone's order.
    tests: &'a [u8],
    opts: Opts,
    seed: u64,
}

impl GridRun<'_> {
    fn cells(&self, st: &mut State, rec: &mut Recorder) -> Result<Grid> {
        let mut cells_out = Vec::with_capacity(self.spec.cells.len());
        let mut failed = 0u64;
        for (ci, &[file, reclen]) in self.spec.cells.iter().enumerate() {
            let (results, ended) = self.cell(st, rec, ci, file, reclen)?;
            let status = match ended {
                Ended::Ran => "ok",
                Ended::Stopped => "interrupted",
                Ended::Failed(_) => "failed",
            };
            let mut c = json!({"file_size": file, "record_size": reclen, "file_kb": file / 1024, "record_kb": reclen / 1024,
                               "status": status, "results": Value::Object(results)});
            if let Ended::Failed(e) = &ended {
                failed += 1;
                c["error"] = Value::String(e.clone());
            }
            cells_out.push(c);
            if matches!(ended, Ended::Stopped) {
                break;
            }
        }
        Ok((cells_out, failed, st.verify.take()))
    }

    /// One cell: its tests, the re-read check, the file removed (as iozone does at the end of each).
    fn cell(
        &self,
        st: &mut State,
        rec: &mut Recorder,
        ci: usize,
        file: u64,
        reclen: u64,
    ) -> Result<(Map<String, Value>, Ended)> {
        let (spec, path) = (self.spec, self.path);
        let numrecs = file / reclen;
        st.shuffle(numrecs, self.seed.wrapping_add(ci as u64));
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
        let mut ended = Ended::Ran;
        for &t in self.tests {
            match run_test(t, &mut cell, &self.opts, &mut st.mix, rec) {
                Ok(d) => {
                    for &(col, secs) in &d.passes[..d.n] {
                        let streams = if col == nine_tests::MIX { spec.mix_threads as u64 } else { 1 };
                        results.insert(KINDS[col].to_string(), pass_result(numrecs * streams, reclen, secs));
                    }
                    if d.stopped {
                        ended = Ended::Stopped;
                        break;
                    }
                }
                Err(f) if fills_up(f.errno) => {
                    let e = std::io::Error::from_raw_os_error(f.errno);
                    ended = Ended::Failed(format!("test {t}: {} of {}: {e}", f.what, path.to_string_lossy()));
                    break;
                }
                Err(f) => return Err(self.fatal(t, file, reclen, &f)),
            }
        }
        if let Some(v) = st.verify.as_mut() {
            if matches!(ended, Ended::Ran) && spec.has(0) {
                // Untimed: every record of the file, checked before iozone removes it.
                v.reread(path, numrecs, &mut st.buf.as_mut_slice()[..reclen as usize]);
            }
        }
        // SAFETY: NUL-terminated path.
        unsafe { crate::sys::unlink(path.as_ptr()) };
        Ok((results, ended))
    }

    /// An error that ends the grid: the file removed, the cell and the call named.
    fn fatal(&self, t: u8, file: u64, reclen: u64, f: &Fail) -> EngineError {
        // SAFETY: NUL-terminated path.
        unsafe { crate::sys::unlink(self.path.as_ptr()) };
        let mut ctx = format!(
            "iozone cell {} KiB x {} KiB, test {t}: {} of {}",
            file / 1024,
            reclen / 1024,
            f.what,
            self.path.to_string_lossy()
        );
        if f.errno == libc::EINVAL && self.spec.direct {
            ctx.push_str(" (O_DIRECT: the record size must be a multiple of the device's logical block size, or use direct=false)");
        }
        EngineError::io(ctx, std::io::Error::from_raw_os_error(f.errno))
    }
}

/// One of iozone's tests (-i N) on the cell.
fn run_test(
    t: u8,
    cell: &mut Cell,
    opts: &Opts,
    mix: &mut [AlignedBuf],
    rec: &mut Recorder,
) -> std::result::Result<Done, Fail> {
    match t {
        0 => nine_tests::write_rewrite(cell, opts, rec),
        1 => nine_tests::read_reread(cell, opts, rec),
        2 => nine_tests::random_rw(cell, opts, rec),
        3 => nine_tests::backward_read(cell, opts, rec),
        4 => nine_tests::record_rewrite(cell, opts, rec),
        5 => nine_tests::stride_read(cell, opts, rec),
        6 => nine_tests::fwrite_refwrite(cell, opts, rec),
        7 => nine_tests::fread_refread(cell, opts, rec),
        _ => nine_tests::random_mix(cell, opts, mix, rec),
    }
}

/// One timed pass's column: KB/s and ops/s over its seconds, with its ops and bytes.
fn pass_result(ops: u64, reclen: u64, secs: f64) -> Value {
    let bytes = ops * reclen;
    let per_s = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
    json!({"KB_per_s": per_s(bytes) / 1024.0, "ops_per_s": per_s(ops), "time_s": secs, "ops": ops, "bytes": bytes})
}
