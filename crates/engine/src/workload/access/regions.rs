//! fio's `offset_increment`: the clones of one job share a file, and clone t works on its own
//! region of it, from `offset + t * offset_increment`, for the region's length (fio's `size`, or the
//! rest of the file), doing its own bytes. The fio mapping computes each clone's region and bytes
//! as fio does (filesetup.c `get_start_offset`, io_u.c: a pass ends at the region's end); the
//! engine walks each thread over its own region.

use serde::{Deserialize, Serialize};

use super::spec::AccessSpec;
use crate::backend::dio::DioAlign;
use crate::error::{EngineError, Result};
use crate::settings::Settings;

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ThreadRegion {
    /// Where the thread's region of the file starts, in bytes.
    pub start: u64,
    /// The region's length in bytes: every request of the thread lands inside it.
    pub len: u64,
    /// The measured bytes this thread does (its byte quota, instead of its share of total_bytes).
    pub bytes: u64,
    /// Sequential requests per pass: after this many the walk starts again at the region's start, as
    /// each of fio's loops does. 0: only where a request would not fit before the region's end.
    #[serde(default)]
    pub pass_ios: u64,
}

impl ThreadRegion {
    /// The spec as thread `self` sees it: one file whose region is this one.
    pub fn own_spec(&self, spec: &AccessSpec) -> AccessSpec {
        let mut own = spec.clone();
        own.thread_regions = Vec::new();
        own.offset = self.start;
        own.run_offset = None;
        own.file_size = self.len;
        own
    }
}

/// The regions fit the spec: one per thread, inside the laid-out file, aligned, with bytes to do.
pub fn validate(spec: &AccessSpec, job: &Settings) -> Result<()> {
    let regions = &spec.thread_regions;
    if regions.is_empty() {
        return Ok(());
    }
    let bad = |m: String| Err(EngineError::invalid("thread_regions", m));
    if regions.len() != job.threads {
        return bad(format!("{} regions for {} threads: give one per thread", regions.len(), job.threads));
    }
    if spec.file_count != 1 || spec.thread_files || spec.shared_file || spec.run_offset.is_some() {
        return bad("the threads share one file: use file_count = 1 without thread_files, shared_file or \
                    run_offset"
            .into());
    }
    if spec.zone_size > 0 || spec.random_distribution.trim() != "random" {
        return bad("cannot be combined with zones or a random_distribution other than random (planned)".into());
    }
    let end = spec.offset + spec.file_size;
    let max = spec.max_size() as u64;
    for (t, r) in regions.iter().enumerate() {
        if r.start + r.len > end {
            return bad(format!(
                "thread {t}: [{}, {}) runs past the file's {end} bytes (offset + file_size)",
                r.start,
                r.start + r.len
            ));
        }
        if r.len < max {
            return bad(format!("thread {t}: {} bytes, less than the largest request ({max} bytes)", r.len));
        }
        if !r.start.is_multiple_of(spec.alignment) && !sequential(spec) {
            return bad(format!("thread {t}: start {} is not a multiple of alignment ({})", r.start, spec.alignment));
        }
        if r.bytes == 0 && spec.duration_s.is_none() {
            return bad(format!("thread {t}: bytes must be > 0 without duration_s"));
        }
    }
    let sum: u64 = regions.iter().map(|r| r.bytes).sum();
    if spec.total_bytes.is_some_and(|t| t != sum) {
        return bad(format!(
            "the threads' bytes add up to {sum}, total_bytes is {}: make them equal",
            spec.total_bytes.unwrap_or(0)
        ));
    }
    Ok(())
}

/// Thread regions of purely sequential requests: random offsets (and so `alignment`) play no part, and the
/// regions may start anywhere (fio's offset=120k with 16 KiB requests).
pub fn sequential(spec: &AccessSpec) -> bool {
    !spec.thread_regions.is_empty() && spec.entries.iter().all(|e| e.random_pct == 0.0)
}

/// With verify, thread regions off the verify block grid: allowed when every request is a sequential write
/// and reads only re-read written requests (verify_backlog), which carry their own headers; the layout's
/// blocks they cut across are never read (the verify phase refuses to run, `check_verify_phase`).
pub fn off_grid(spec: &AccessSpec) -> bool {
    sequential(spec) && spec.verify_backlog > 0 && spec.entries.iter().all(|e| e.read_pct == 0.0 && e.trim_pct == 0.0)
}

/// The verify phase re-reads every block of the grid from the file's start: thread regions off that grid would
/// have cut the laid-out blocks, so it does not run on them.
pub fn check_verify_phase(spec: &AccessSpec) -> Result<()> {
    let b = spec.verify_block();
    match spec.thread_regions.iter().find(|r| !r.start.is_multiple_of(b)) {
        Some(r) => Err(EngineError::invalid(
            "thread_regions",
            format!(
                "a region starts at {} bytes, off the {b}-byte verify blocks the verify phase re-reads: make every                  start a multiple of {b}, or drop the verify phase (verify_backlog re-reads the written requests)",
                r.start
            ),
        )),
        None => Ok(()),
    }
}

/// O_DIRECT: every region starts at a multiple of the filesystem's alignment.
pub fn check_direct(spec: &AccessSpec, a: &DioAlign) -> Result<()> {
    match spec.thread_regions.iter().find(|r| !r.start.is_multiple_of(a.offset)) {
        Some(r) => Err(EngineError::invalid(
            "thread_regions",
            format!(
                "a region starts at {} bytes: O_DIRECT on this filesystem needs multiples of {} bytes ({})",
                r.start, a.offset, a.source
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::access::spec::tests::{e, spec};
    use crate::workload::access::AccessGen;

    /// Three threads on one 1 MiB file, 16 KiB writes every 128 KiB (rw=write:112k) from 120 KiB + t * 256 KiB:
    /// each thread stays in its region, starts it again after `pass_ios` writes, and wraps at its end.
    #[test]
    fn each_thread_walks_its_own_region() {
        let mut s = spec(vec![e(16384, 100.0, 0.0, 0.0)], 1, 1 << 20);
        s.seq_add = 112 << 10;
        s.thread_regions = (0..3u64)
            .map(|t| {
                let start = (120 << 10) + t * (256 << 10);
                ThreadRegion { start, len: (1 << 20) - start, bytes: 0, pass_ios: if t == 0 { 3 } else { 0 } }
            })
            .collect();
        let offs = |tid: usize, n: usize| {
            let mut g = AccessGen::new(&s, 1, tid, 3);
            (0..n).map(|_| g.next_op().req.offset >> 10).collect::<Vec<_>>()
        };
        // Thread 0: its pass of 3 writes, then the same 3 again.
        assert_eq!(offs(0, 6), vec![120, 248, 376, 120, 248, 376]);
        // Thread 2 (from 632 KiB, 392 KiB long): 3 writes fit (the 4th would end past 1024 KiB), then its start again.
        assert_eq!(offs(2, 5), vec![632, 760, 888, 632, 760]);
        // Thread 1 (from 376 KiB): 5 writes fit before the file's end.
        assert_eq!(offs(1, 6), vec![376, 504, 632, 760, 888, 376]);
    }
}
