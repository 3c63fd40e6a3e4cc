//! I/O backends: one small contract (queue requests on slots, reap completions),
//! one file per implementation, chosen once per phase and monomorphised into the
//! worker loop so the hot path has no dynamic dispatch.
//!
//! A slot is an in-flight request and owns one buffer; a backend's depth is how
//! many slots it can have in flight (1 for the synchronous ones).

pub mod aio;
pub mod buffer;
pub mod content;
pub mod dio;
pub mod fault;
pub mod mmap;
pub mod null;
pub mod pattern;
pub mod psync;
pub mod uring;

use std::os::fd::RawFd;

use serde::Deserialize;

use crate::error::Result;

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// pread/pwrite, one request at a time per thread.
    Psync,
    /// io_uring with `queue_depth` requests in flight per thread.
    IoUring,
    /// The kernel's native AIO (io_submit) with `queue_depth` requests in flight per thread (fio's libaio).
    Libaio,
    /// No system call at all: completes every request at once. For testing the harness.
    Null,
    /// Each file mapped once per thread; a request is a memcpy to or from the mapping (fio's mmap).
    Mmap,
    /// The mmap backend with every write made durable before it completes (fio's libpmem).
    Libpmem,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Psync => "psync",
            BackendKind::IoUring => "io_uring",
            BackendKind::Libaio => "libaio",
            BackendKind::Null => "null",
            BackendKind::Mmap => "mmap",
            BackendKind::Libpmem => "libpmem",
        }
    }

    /// The backends that map the files (mmap.rs): one request at a time, O_DIRECT means msync.
    pub fn maps(self) -> bool {
        matches!(self, BackendKind::Mmap | BackendKind::Libpmem)
    }
}

/// One data transfer. `file` indexes the backend's file table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoReq {
    pub file: u32,
    pub offset: u64,
    pub len: u32,
    pub write: bool,
    /// The request's own I/O priority (io_uring's sqe.ioprio; 0: the thread's). Only io_uring
    /// carries it: the synchronous backends have no per-request priority.
    pub ioprio: u16,
}

/// Which sync a backend does on a file: fsync, fdatasync, or sync_file_range with these
/// SYNC_FILE_RANGE_* flags over the whole file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncKind {
    Full,
    Data,
    Range(u32),
}

/// `kind` on the descriptor `fd` (the synchronous backends' sync).
pub fn sync_fd(fd: RawFd, kind: SyncKind) -> Result<()> {
    // SAFETY: the caller's descriptor is open; any fd number is memory-safe for these calls.
    let (rc, what) = unsafe {
        match kind {
            SyncKind::Full => (crate::sys::fsync(fd), "fsync"),
            SyncKind::Data => (crate::sys::fdatasync(fd), "fdatasync"),
            SyncKind::Range(flags) => (libc::sync_file_range(fd, 0, 0, flags), "sync_file_range"),
        }
    };
    if rc != 0 {
        return Err(crate::error::EngineError::last_os(what));
    }
    Ok(())
}

pub trait IoBackend {
    /// Queue `req` on `slot`, reading into / writing from `buf` (valid until reaped).
    fn queue(&mut self, slot: usize, req: IoReq, buf: *mut u8) -> Result<()>;
    /// Submit what is queued, wait for at least `min` completions, and call
    /// `done(slot, result)` for each: bytes moved, or a negative errno.
    fn reap<F: FnMut(usize, i64)>(&mut self, min: usize, done: F) -> Result<usize>;
    /// Flush file `file` to stable storage (fsync).
    fn fsync(&mut self, file: u32) -> Result<()>;
    /// fio's other syncs (fdatasync=, sync_file_range=); a backend without them does its fsync.
    fn sync(&mut self, file: u32, kind: SyncKind) -> Result<()> {
        let _ = kind;
        self.fsync(file)
    }
    /// Issue every write with these RWF_* flags (RWF_ATOMIC); backends that cannot refuse.
    fn set_write_flags(&mut self, flags: i32) -> Result<()> {
        if flags == 0 {
            return Ok(());
        }
        Err(crate::error::EngineError::invalid(
            "atomic",
            "this backend cannot issue untorn writes: use psync or io_uring",
        ))
    }
}

/// The file descriptors a backend works on, indexed by `IoReq::file`.
pub type FileTable = Vec<RawFd>;
