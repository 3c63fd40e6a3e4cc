//! fio's error handling for the access workload: `continue_on_error` with `ignore_error` (the errnos
//! of each class after which a thread counts the failed request and goes on with the next one), and
//! `fill_device` (ENOSPC or EDQUOT on a write ends the thread as the end of its work, not as an
//! error), decided as fio's `break_on_this_error` decides: the class first (EILSEQ is a verify error,
//! a read's error a read error, every other a write error), then its list.
//!
//! Each thread counts into its own table, made before the start (errno by direction), and merges it
//! once when it ends: nothing is allocated, locked or formatted per request, failed or not.

use serde::{Deserialize, Serialize};

use crate::backend::IoReq;

/// Errnos counted one by one; a larger one is counted in the last slot.
pub const ERRNO_SLOTS: usize = 160;
/// Failed requests a thread keeps the details of (fio's error_dump prints every one).
pub const DUMP_MAX: usize = 16;

/// The errnos, per class, after which a thread goes on (empty: every error of that class stops it).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ContinueOn {
    #[serde(default)]
    pub read: Vec<i32>,
    #[serde(default)]
    pub write: Vec<i32>,
    #[serde(default)]
    pub verify: Vec<i32>,
    /// Keep the details of the failed requests gone on after (fio's error_dump), up to DUMP_MAX a thread.
    #[serde(default)]
    pub dump: bool,
}

impl ContinueOn {
    pub fn is_set(&self) -> bool {
        !(self.read.is_empty() && self.write.is_empty() && self.verify.is_empty())
    }

    /// Whether a request of direction `dir` (0 read, 1 write, 2 trim) that failed with `errno` is gone on after.
    #[inline]
    pub fn tolerates(&self, dir: usize, errno: i32) -> bool {
        let list = if errno == libc::EILSEQ {
            &self.verify
        } else if dir == 0 {
            &self.read
        } else {
            &self.write
        };
        list.contains(&errno)
    }
}

/// What becomes of a failed request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnError {
    /// Counted; the thread goes on with its next request.
    Go,
    /// fill_device: the filesystem is full; the thread's work is done.
    Full,
    /// The run stops with this error.
    Fatal,
}

/// One failed request, as fio's error_dump prints it.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Failed {
    pub dir: &'static str,
    pub errno: i32,
    pub file: u32,
    pub offset: u64,
    pub len: u32,
}

const DIRS: [&str; 3] = ["read", "write", "trim"];

/// A thread's failed requests (made before the start), and then a phase's, merged.
pub struct ErrorCounts {
    counts: Box<[[u64; ERRNO_SLOTS]; 3]>,
    pub total: u64,
    pub first: Option<Failed>,
    pub dumped: Vec<Failed>,
    /// Failed requests gone on after that were not kept (beyond DUMP_MAX).
    pub not_dumped: u64,
    /// Threads that ended because the filesystem was full (fill_device).
    pub full: u64,
    /// Of those, the ones whose fill ended with a short write (fio counts it as an I/O, and then the
    /// write of its rest, which fails: two I/Os where a write that fails whole is one).
    pub full_short: u64,
}

impl Default for ErrorCounts {
    fn default() -> Self {
        ErrorCounts {
            counts: Box::new([[0; ERRNO_SLOTS]; 3]),
            total: 0,
            first: None,
            dumped: Vec::with_capacity(DUMP_MAX),
            not_dumped: 0,
            full: 0,
            full_short: 0,
        }
    }
}

impl ErrorCounts {
    /// Decide about a request of direction `dir` that failed with `errno`, and count it when it is gone on after.
    #[inline]
    pub fn note(&mut self, policy: &ContinueOn, fill: bool, dir: usize, errno: i32, req: &IoReq) -> OnError {
        if policy.tolerates(dir, errno) {
            self.counts[dir][(errno.max(0) as usize).min(ERRNO_SLOTS - 1)] += 1;
            self.total += 1;
            let f = Failed { dir: DIRS[dir], errno, file: req.file, offset: req.offset, len: req.len };
            if self.first.is_none() {
                self.first = Some(f);
            }
            if policy.dump && self.dumped.len() < DUMP_MAX {
                self.dumped.push(f); // within the capacity made before the start: no allocation
            } else if policy.dump {
                self.not_dumped += 1;
            }
            return OnError::Go;
        }
        if fill && dir == 1 && (errno == libc::ENOSPC || errno == libc::EDQUOT) {
            self.full = 1; // one thread (each counts into its own): the requests still in flight may meet it too
            return OnError::Full;
        }
        OnError::Fatal
    }

    /// Another thread's counts into these (once per thread, at its end). The first error kept is the
    /// one of the thread merged first.
    pub fn absorb(&mut self, o: &ErrorCounts) {
        for d in 0..3 {
            for (a, b) in self.counts[d].iter_mut().zip(o.counts[d].iter()) {
                *a += b;
            }
        }
        self.total += o.total;
        if self.first.is_none() {
            self.first = o.first;
        }
        for f in &o.dumped {
            if self.dumped.len() < DUMP_MAX * 4 {
                self.dumped.push(*f);
            } else {
                self.not_dumped += 1;
            }
        }
        self.not_dumped += o.not_dumped;
        self.full += o.full;
        self.full_short += o.full_short;
    }

    /// Empty the counts for another phase.
    pub fn clear(&mut self) {
        *self = ErrorCounts::default();
    }

    /// The report's `errors`: the total, the first (fio's total_err and first_error), the counts per
    /// direction and errno, and the failed requests kept (error_dump).
    pub fn to_json(&self, path: impl Fn(u32) -> String) -> serde_json::Value {
        let mut by = serde_json::Map::new();
        for (d, name) in DIRS.iter().enumerate() {
            let m: serde_json::Map<String, serde_json::Value> = self.counts[d]
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(e, &n)| (e.to_string(), serde_json::json!(n)))
                .collect();
            if !m.is_empty() {
                by.insert((*name).to_string(), serde_json::Value::Object(m));
            }
        }
        let failed = |f: &Failed| serde_json::json!({"dir": f.dir, "errno": f.errno, "file": path(f.file), "offset": f.offset, "len": f.len});
        serde_json::json!({
            "total": self.total,
            "first_error": self.first.map(|f| f.errno).unwrap_or(0),
            "first": self.first.as_ref().map(failed),
            "by_errno": by,
            "dumped": self.dumped.iter().map(failed).collect::<Vec<_>>(),
            "not_dumped": self.not_dumped,
            "filled": self.full,
            "filled_short_write": self.full_short,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_decides_then_the_list() {
        let p = ContinueOn { read: vec![libc::EIO], write: vec![libc::ENOSPC], verify: vec![], dump: false };
        assert!(p.tolerates(0, libc::EIO));
        assert!(!p.tolerates(1, libc::EIO)); // a write's EIO: not in the write list
        assert!(p.tolerates(1, libc::ENOSPC));
        assert!(p.tolerates(2, libc::ENOSPC)); // a trim is a write error, as in fio
        assert!(!p.tolerates(0, libc::EILSEQ)); // EILSEQ is a verify error whatever the direction
    }

    fn req(offset: u64) -> IoReq {
        IoReq { file: 0, offset, len: 4096, write: true, ioprio: 0 }
    }

    #[test]
    fn counted_per_direction_and_errno_and_fill_ends_without_counting() {
        let p = ContinueOn { write: vec![libc::EIO], dump: true, ..Default::default() };
        let mut c = ErrorCounts::default();
        assert_eq!(c.note(&p, true, 1, libc::EIO, &req(4096)), OnError::Go);
        assert_eq!(c.note(&p, true, 1, libc::EIO, &req(8192)), OnError::Go);
        assert_eq!(c.note(&p, true, 1, libc::ENOSPC, &req(12288)), OnError::Full);
        assert_eq!(c.note(&p, false, 1, libc::ENOSPC, &req(12288)), OnError::Fatal);
        assert_eq!(c.note(&p, true, 0, libc::EIO, &req(0)), OnError::Fatal);
        let j = c.to_json(|f| format!("f{f}"));
        assert_eq!(j["total"], 2);
        assert_eq!(j["first_error"], libc::EIO);
        assert_eq!(j["first"]["offset"], 4096);
        assert_eq!(j["by_errno"]["write"][libc::EIO.to_string()], 2);
        assert_eq!(j["dumped"].as_array().map(|a| a.len()), Some(2));
        assert_eq!(j["filled"], 1);
    }
}
