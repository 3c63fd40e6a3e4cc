//! A fault-injecting wrapper around the psync backend, for testing data
//! verification: it makes chosen writes fail the way broken storage does
//! (torn, short, lost or misdirected) while the workload believes what the
//! backend returns. Selected by an access spec's `fault` field; never on by default.

use std::sync::Mutex;

use serde::Deserialize;

use super::psync::PsyncBackend;
use super::{FileTable, IoBackend, IoReq};
use crate::error::{EngineError, Result};

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Only the first `keep_bytes` reach the file; the full length is reported (a write torn by a power cut).
    TornWrite,
    /// Only the first `keep_bytes` reach the file, and that is what is reported (a short write).
    ShortWrite,
    /// Nothing reaches the file; the full length is reported (a lost write).
    LostWrite,
    /// The data lands `len` bytes further on (the next request-sized slot, if inside the file); success is reported.
    MisdirectedWrite,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    pub kind: FaultKind,
    /// Writes let through before the first fault.
    #[serde(default)]
    pub after: u64,
    /// Faults to inject (then every write goes through).
    #[serde(default = "one")]
    pub count: u64,
    /// Bytes that reach the file for torn and short writes.
    #[serde(default)]
    pub keep_bytes: u32,
}

fn one() -> u64 {
    1
}

impl FaultSpec {
    pub fn validate(&self) -> Result<()> {
        if self.count == 0 {
            return Err(EngineError::invalid("fault.count", "must be >= 1"));
        }
        Ok(())
    }
}

/// A fault that was injected: which write, where.
#[derive(Clone, Copy, Debug)]
pub struct Injected {
    pub file: u32,
    pub offset: u64,
    pub len: u32,
}

/// Wraps psync; each thread has its own, counting its own writes. Injected
/// faults are listed in `log` (a test backend: the lock is taken only on a fault).
pub struct FaultBackend<'a> {
    inner: PsyncBackend,
    files: FileTable,
    spec: FaultSpec,
    writes: u64,
    log: &'a Mutex<Vec<Injected>>,
    pending: Option<(usize, i64)>,
}

impl<'a> FaultBackend<'a> {
    pub fn new(files: FileTable, spec: FaultSpec, log: &'a Mutex<Vec<Injected>>) -> Self {
        FaultBackend { inner: PsyncBackend::new(files.clone()), files, spec, writes: 0, log, pending: None }
    }

    fn file_len(&self, fd: i32) -> u64 {
        // SAFETY: fstat on an open fd into a zeroed struct.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { crate::sys::fstat(fd, &mut st) } == 0 {
            st.st_size as u64
        } else {
            0
        }
    }

    /// Do the faulty version of `req`; returns what the backend reports.
    fn inject(&mut self, req: IoReq, buf: *mut u8) -> i64 {
        let fd = self.files[req.file as usize];
        let pwrite = |len: usize, off: u64| {
            // SAFETY: buf holds req.len >= len bytes.
            unsafe { crate::sys::pwrite(fd, buf as *const libc::c_void, len, off as libc::off_t) }
        };
        let keep = (self.spec.keep_bytes as usize).min(req.len as usize);
        let r = match self.spec.kind {
            FaultKind::TornWrite => pwrite(keep, req.offset).min(0) as i64 + req.len as i64,
            FaultKind::ShortWrite => pwrite(keep, req.offset) as i64,
            FaultKind::LostWrite => req.len as i64,
            FaultKind::MisdirectedWrite => {
                let to = req.offset + req.len as u64;
                if to + req.len as u64 <= self.file_len(fd) {
                    pwrite(req.len as usize, to);
                }
                req.len as i64
            }
        };
        if let Ok(mut log) = self.log.lock() {
            log.push(Injected { file: req.file, offset: req.offset, len: req.len });
        }
        r
    }
}

impl IoBackend for FaultBackend<'_> {
    fn queue(&mut self, slot: usize, req: IoReq, buf: *mut u8) -> Result<()> {
        if req.write {
            self.writes += 1;
            let n = self.writes - 1;
            if n >= self.spec.after && n < self.spec.after + self.spec.count {
                let r = self.inject(req, buf);
                self.pending = Some((slot, r));
                return Ok(());
            }
        }
        self.inner.queue(slot, req, buf)
    }

    fn reap<F: FnMut(usize, i64)>(&mut self, min: usize, mut done: F) -> Result<usize> {
        if let Some((slot, r)) = self.pending.take() {
            done(slot, r);
            return Ok(1);
        }
        self.inner.reap(min, done)
    }

    fn fsync(&mut self, file: u32) -> Result<()> {
        self.inner.fsync(file)
    }

    fn sync(&mut self, file: u32, kind: super::SyncKind) -> Result<()> {
        self.inner.sync(file, kind)
    }
}
