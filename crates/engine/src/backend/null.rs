//! The null backend: every request completes at once with its full length and no
//! system call, so the harness and workloads can be tested without a filesystem.

use super::{IoBackend, IoReq};
use crate::error::Result;

pub struct NullBackend {
    pending: Vec<(usize, u32)>,
}

impl NullBackend {
    pub fn new(depth: usize) -> Self {
        NullBackend { pending: Vec::with_capacity(depth) }
    }
}

impl IoBackend for NullBackend {
    #[inline]
    fn queue(&mut self, slot: usize, req: IoReq, _buf: *mut u8) -> Result<()> {
        self.pending.push((slot, req.len));
        Ok(())
    }
    #[inline]
    fn reap<F: FnMut(usize, i64)>(&mut self, _min: usize, mut done: F) -> Result<usize> {
        let n = self.pending.len();
        // Completions are handed back in FIFO order; `done` may queue new requests
        // only after reap returns, so draining first keeps the vector's capacity.
        for i in 0..n {
            let (slot, len) = self.pending[i];
            done(slot, len as i64);
        }
        self.pending.drain(..n);
        Ok(n)
    }
    fn fsync(&mut self, _file: u32) -> Result<()> {
        Ok(())
    }
    fn set_write_flags(&mut self, _flags: i32) -> Result<()> {
        Ok(()) // no I/O: nothing to tear
    }
}
