//! fio's `offset_increment`: the clones of one job share a file, and clone t works on its own
//! region of it, from `offset + t * offset_increment`, for the region's length (fio's `size`, or the
//! rest of the file), doing its own bytes. The fio mapping computes each clone's region and bytes
//! as fio does (filesetup.c `get_start_offset`, io_u.c: a pass ends at the region's end); the
//! engine walks each thread over its own region (`AccessGen`).

use serde::{Deserialize, Serialize};

use crate::backend::dio::DioAlign;
use crate::error::{EngineError, Result};

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

/// What the regions are checked against (from the spec and the job).
pub struct RegionCheck {
    pub threads: usize,
    /// One file shared by the threads (no per-thread files, no IOR shared file, no run_offset).
    pub one_file: bool,
    /// Neither zones nor a skewed distribution.
    pub plain: bool,
    /// Where the laid-out file ends (offset + file_size), and the largest request.
    pub end: u64,
    pub max_size: u64,
    pub alignment: u64,
    /// Purely sequential requests: the starts need not be multiples of `alignment`.
    pub sequential: bool,
    /// No duration: every thread needs bytes to do.
    pub needs_bytes: bool,
    pub total_bytes: Option<u64>,
}

/// The regions fit the spec: one per thread, inside the laid-out file, aligned, with bytes to do.
pub fn validate(regions: &[ThreadRegion], c: &RegionCheck) -> Result<()> {
    if regions.is_empty() {
        return Ok(());
    }
    let bad = |m: String| Err(EngineError::invalid("thread_regions", m));
    if regions.len() != c.threads {
        return bad(format!("{} regions for {} threads: give one per thread", regions.len(), c.threads));
    }
    if !c.one_file {
        return bad("the threads share one file: use file_count = 1 without thread_files, shared_file or \
                    run_offset"
            .into());
    }
    if !c.plain {
        return bad("cannot be combined with zones or a random_distribution other than random (planned)".into());
    }
    for (t, r) in regions.iter().enumerate() {
        if r.start + r.len > c.end {
            return bad(format!(
                "thread {t}: [{}, {}) runs past the file's {} bytes (offset + file_size)",
                r.start,
                r.start + r.len,
                c.end
            ));
        }
        if r.len < c.max_size {
            return bad(format!("thread {t}: {} bytes, less than the largest request ({} bytes)", r.len, c.max_size));
        }
        if !c.sequential && !r.start.is_multiple_of(c.alignment) {
            return bad(format!("thread {t}: start {} is not a multiple of alignment ({})", r.start, c.alignment));
        }
        if r.bytes == 0 && c.needs_bytes {
            return bad(format!("thread {t}: bytes must be > 0 without duration_s"));
        }
    }
    let sum: u64 = regions.iter().map(|r| r.bytes).sum();
    if let Some(t) = c.total_bytes.filter(|&t| t != sum) {
        return bad(format!("the threads' bytes add up to {sum}, total_bytes is {t}: make them equal"));
    }
    Ok(())
}

/// The verify phase re-reads every block of the grid from the file's start: thread regions off that grid
/// would have cut the laid-out blocks, so it does not run on them.
pub fn check_verify_grid(regions: &[ThreadRegion], block: u64) -> Result<()> {
    match regions.iter().find(|r| !r.start.is_multiple_of(block)) {
        Some(r) => Err(EngineError::invalid(
            "thread_regions",
            format!(
                "a region starts at {} bytes, off the {block}-byte verify blocks the verify phase re-reads: make \
                 every start a multiple of {block}, or drop the verify phase (verify_backlog re-reads the written \
                 requests)",
                r.start
            ),
        )),
        None => Ok(()),
    }
}

/// O_DIRECT: every region starts at a multiple of the filesystem's alignment.
pub fn check_direct(regions: &[ThreadRegion], a: &DioAlign) -> Result<()> {
    match regions.iter().find(|r| !r.start.is_multiple_of(a.offset)) {
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

    fn check() -> RegionCheck {
        RegionCheck {
            threads: 2,
            one_file: true,
            plain: true,
            end: 1 << 20,
            max_size: 4096,
            alignment: 4096,
            sequential: false,
            needs_bytes: true,
            total_bytes: Some(8192),
        }
    }

    fn r(start: u64, len: u64, bytes: u64) -> ThreadRegion {
        ThreadRegion { start, len, bytes, pass_ios: 0 }
    }

    #[test]
    fn regions_that_do_not_fit_the_spec_are_refused_by_name() {
        let ok = [r(0, 4096, 4096), r(4096, 4096, 4096)];
        validate(&ok, &check()).unwrap();
        let err = |regions: &[ThreadRegion], c: &RegionCheck| validate(regions, c).unwrap_err().to_string();
        assert!(err(&ok[..1], &check()).contains("1 regions for 2 threads"));
        assert!(err(&[r(0, 4096, 4096), r((1 << 20) - 2048, 4096, 4096)], &check()).contains("runs past the file"));
        assert!(err(&[r(0, 4096, 4096), r(2048, 4096, 4096)], &check()).contains("not a multiple of alignment"));
        // Sequential requests: a start off the alignment is fio's offset=120k with 16 KiB requests.
        validate(&[r(0, 4096, 4096), r(2048, 4096, 4096)], &RegionCheck { sequential: true, ..check() }).unwrap();
        assert!(err(&[r(0, 4096, 4096), r(4096, 4096, 8192)], &check()).contains("add up to 12288"));
        assert!(err(&ok, &RegionCheck { one_file: false, ..check() }).contains("share one file"));
    }
}
