//! fio's per-I/O latency log (write_lat_log without log_avg_msec): one line per measured request,
//! `time ms, latency ns, direction, block size, [offset,] priority`, as fio 3 writes its lines.
//!
//! Each thread of the run phase appends a fixed-size record per measured request to a buffer it
//! allocated and touched before the start (`max_records` records: no allocation and no page fault
//! per request, nothing shared). A request past a full buffer is counted, not logged
//! (`counters.io_log_dropped`). After the phase the threads' buffers are merged in completion
//! order and the lines written to each file of the spec (fio's _lat and _clat logs: fsmeter has
//! one latency per request, from its submission to its completion).

use std::io::Write;

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

fn default_max_records() -> u64 {
    1 << 20
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IoLogSpec {
    /// The files to write, each with every line.
    pub paths: Vec<String>,
    /// fio's log_offset: an offset column.
    #[serde(default)]
    pub offset: bool,
    /// fio's log_prio: the priority as 16-bit hex (else 1 for the real-time class, 0 otherwise).
    #[serde(default)]
    pub prio_hex: bool,
    /// Records each thread keeps at most (32 bytes each, allocated before the start).
    #[serde(default = "default_max_records")]
    pub max_records: u64,
}

impl IoLogSpec {
    pub fn validate(&self) -> Result<()> {
        if self.paths.is_empty() || self.paths.iter().any(|p| p.is_empty() || p.contains('\0')) {
            return Err(EngineError::invalid("io_log.paths", "give at least one file name"));
        }
        if self.max_records == 0 || self.max_records > 1 << 28 {
            return Err(EngineError::invalid("io_log.max_records", "between 1 and 2^28 records per thread"));
        }
        Ok(())
    }
}

/// One measured request: completion time since the job's measured start, latency, where.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoRecord {
    pub t_ns: u64,
    pub lat_ns: u64,
    pub offset: u64,
    pub len: u32,
    pub ddir: u8,
    pub ioprio: u16,
}

/// One thread's records.
pub struct IoLogBuf {
    recs: Vec<IoRecord>,
    pub dropped: u64,
}

impl IoLogBuf {
    /// Allocates and touches the whole buffer now (before the start).
    pub fn new(max_records: u64) -> Self {
        let cap = max_records as usize;
        let mut recs = vec![IoRecord::default(); cap];
        recs.clear();
        IoLogBuf { recs, dropped: 0 }
    }

    #[inline(always)]
    pub fn push(&mut self, r: IoRecord) {
        if self.recs.len() < self.recs.capacity() {
            self.recs.push(r);
        } else {
            self.dropped += 1;
        }
    }

    pub fn take(&mut self) -> Vec<IoRecord> {
        std::mem::take(&mut self.recs)
    }
}

/// fio 3's line for one request.
pub fn line(r: &IoRecord, offset: bool, prio_hex: bool, out: &mut String) {
    use std::fmt::Write as _;
    let _ = write!(out, "{}, {}, {}, {}", r.t_ns / 1_000_000, r.lat_ns, r.ddir, r.len);
    if offset {
        let _ = write!(out, ", {}", r.offset);
    }
    if prio_hex {
        let _ = write!(out, ", 0x{:04x}", r.ioprio);
    } else {
        let _ = write!(out, ", {}", u8::from(r.ioprio >> 13 == 1));
    }
    out.push('\n');
}

/// Merges the threads' records in completion order and writes every file of the spec.
pub fn write_logs(spec: &IoLogSpec, threads: Vec<Vec<IoRecord>>) -> Result<u64> {
    let mut all: Vec<IoRecord> = threads.into_iter().flatten().collect();
    all.sort_by_key(|r| r.t_ns);
    let mut text = String::with_capacity(all.len() * 32);
    for r in &all {
        line(r, spec.offset, spec.prio_hex, &mut text);
    }
    for p in &spec.paths {
        let mut f = crate::nofollow::create(std::path::Path::new(p))?;
        f.write_all(text.as_bytes()).map_err(|e| EngineError::io(format!("writing the I/O log {p}"), e))?;
    }
    Ok(all.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-checked against fio 3's flush_samples: "ms, value, ddir, bs[, offset], prio".
    #[test]
    fn lines_are_fios() {
        let r = IoRecord { t_ns: 2_500_000, lat_ns: 1234, offset: 8192, len: 4096, ddir: 1, ioprio: 1 << 13 | 3 };
        let mut s = String::new();
        line(&r, false, false, &mut s);
        line(&r, true, true, &mut s);
        line(&IoRecord { ioprio: 3 << 13, ..r }, false, false, &mut s);
        assert_eq!(s, "2, 1234, 1, 4096, 1\n2, 1234, 1, 4096, 8192, 0x2003\n2, 1234, 1, 4096, 0\n");
        let mut b = IoLogBuf::new(2);
        for _ in 0..3 {
            b.push(r);
        }
        assert_eq!((b.take().len(), b.dropped), (2, 1));
    }
}
