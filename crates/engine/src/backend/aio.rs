//! The libaio backend: the kernel's native asynchronous I/O (io_setup, io_submit, io_getevents), the
//! interface fio's libaio engine drives, through the raw system calls (no libaio library needed).
//!
//! Its behaviour is the kernel's, not io_uring's: a buffered request is done inside io_submit (the
//! caller's thread copies the data, as a pread would), and only O_DIRECT requests are queued to the
//! device and complete later. So buffered libaio costs a pread plus two system calls per request,
//! where io_uring may hand a buffered request it cannot finish at once to a kernel worker thread.
//!
//! One iocb per slot, made once; `queue` fills the slot's iocb and notes it, `reap` submits what is
//! noted and waits for completions: nothing is allocated per request.

use std::os::fd::RawFd;

use super::{FileTable, IoBackend, IoReq, SyncKind};
use crate::error::{EngineError, Result};

/// The kernel's `struct iocb` (include/uapi/linux/aio_abi.h), little-endian layout.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Iocb {
    aio_data: u64,
    aio_key: u32,
    aio_rw_flags: i32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

/// The kernel's `struct io_event`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;
/// aio_reqprio holds the request's I/O priority.
const IOCB_FLAG_IOPRIO: u32 = 1 << 1;

#[cfg(not(target_endian = "little"))]
compile_error!("the iocb layout here is the little-endian one");

pub struct AioBackend {
    ctx: libc::c_ulong,
    files: FileTable,
    iocbs: Vec<Iocb>,
    /// The iocbs queued and not yet submitted, in order (pointers into `iocbs`).
    pending: Vec<*mut Iocb>,
    /// How many of `pending` were submitted already (a partial io_submit).
    submitted: usize,
    events: Vec<IoEvent>,
    /// Requests submitted and not yet reaped.
    in_flight: usize,
    /// RWF_* flags of every write.
    write_flags: i32,
}

impl AioBackend {
    pub fn new(files: FileTable, depth: usize) -> Result<Self> {
        let depth = depth.max(1);
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the context id into `ctx`, which outlives the call.
        let rc = unsafe { libc::syscall(libc::SYS_io_setup, depth as libc::c_long, &mut ctx as *mut libc::c_ulong) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            let hint = if e.raw_os_error() == Some(libc::EAGAIN) {
                " (the machine's fs.aio-max-nr is used up: raise it with sysctl, lower iodepth or numjobs, or use ioengine=io_uring)"
            } else {
                ""
            };
            return Err(EngineError::io(format!("io_setup for {depth} requests{hint}"), e));
        }
        Ok(AioBackend {
            ctx,
            files,
            iocbs: vec![Iocb::default(); depth],
            pending: Vec::with_capacity(depth),
            submitted: 0,
            events: vec![IoEvent::default(); depth],
            in_flight: 0,
            write_flags: 0,
        })
    }

    /// Submit what is pending. A request the kernel refuses at submission (io_submit fails on it)
    /// completes at once with that error, as it would have from the device.
    fn submit<F: FnMut(usize, i64)>(&mut self, done: &mut F) -> Result<usize> {
        let mut refused = 0;
        while self.submitted < self.pending.len() {
            let rest = &mut self.pending[self.submitted..];
            // SAFETY: every pointer is into self.iocbs, whose buffers live until reaped.
            let rc =
                unsafe { libc::syscall(libc::SYS_io_submit, self.ctx, rest.len() as libc::c_long, rest.as_mut_ptr()) };
            if rc > 0 {
                self.submitted += rc as usize;
                self.in_flight += rc as usize;
                continue;
            }
            let err = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            match err {
                libc::EINTR => continue,
                // The kernel's queue is full: completions first, the caller comes back.
                libc::EAGAIN if self.in_flight > 0 => break,
                _ => {
                    // SAFETY: the pointer is into self.iocbs.
                    let slot = unsafe { (*self.pending[self.submitted]).aio_data } as usize;
                    done(slot, -(err as i64));
                    self.submitted += 1;
                    refused += 1;
                }
            }
        }
        if self.submitted == self.pending.len() {
            self.pending.clear();
            self.submitted = 0;
        }
        Ok(refused)
    }
}

impl Drop for AioBackend {
    fn drop(&mut self) {
        // io_destroy waits for requests in flight, so no buffer is written after the worker frees it.
        // SAFETY: ctx came from io_setup.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}

impl IoBackend for AioBackend {
    #[inline]
    fn queue(&mut self, slot: usize, req: IoReq, buf: *mut u8) -> Result<()> {
        let fd: RawFd = self.files[req.file as usize];
        let cb = &mut self.iocbs[slot];
        *cb = Iocb {
            aio_data: slot as u64,
            aio_rw_flags: if req.write { self.write_flags } else { 0 },
            aio_lio_opcode: if req.write { IOCB_CMD_PWRITE } else { IOCB_CMD_PREAD },
            aio_reqprio: req.ioprio as i16,
            aio_fildes: fd as u32,
            aio_buf: buf as u64,
            aio_nbytes: req.len as u64,
            aio_offset: req.offset as i64,
            aio_flags: if req.ioprio != 0 { IOCB_FLAG_IOPRIO } else { 0 },
            ..Iocb::default()
        };
        let p: *mut Iocb = cb;
        self.pending.push(p);
        Ok(())
    }

    #[inline]
    fn reap<F: FnMut(usize, i64)>(&mut self, min: usize, mut done: F) -> Result<usize> {
        let mut n = self.submit(&mut done)?;
        while n < min && self.in_flight > 0 {
            let want = (min - n).min(self.in_flight);
            // SAFETY: events has room for `len` entries; a null timeout waits.
            let got = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    want as libc::c_long,
                    self.events.len() as libc::c_long,
                    self.events.as_mut_ptr(),
                    std::ptr::null_mut::<libc::timespec>(),
                )
            };
            if got < 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(EngineError::io("io_getevents", e));
            }
            for ev in &self.events[..got as usize] {
                done(ev.data as usize, ev.res);
            }
            self.in_flight -= got as usize;
            n += got as usize;
            if !self.pending.is_empty() {
                n += self.submit(&mut done)?;
            }
        }
        if min == 0 && self.in_flight > 0 {
            // Whatever has completed already, without waiting.
            let mut zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: as above; a zero timeout returns at once.
            let got = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    0 as libc::c_long,
                    self.events.len() as libc::c_long,
                    self.events.as_mut_ptr(),
                    &mut zero as *mut libc::timespec,
                )
            };
            if got > 0 {
                for ev in &self.events[..got as usize] {
                    done(ev.data as usize, ev.res);
                }
                self.in_flight -= got as usize;
                n += got as usize;
            }
        }
        Ok(n)
    }

    fn set_write_flags(&mut self, flags: i32) -> Result<()> {
        self.write_flags = flags;
        Ok(())
    }

    fn fsync(&mut self, file: u32) -> Result<()> {
        // Synchronously, as fio's libaio engine does its syncs.
        super::sync_fd(self.files[file as usize], SyncKind::Full)
    }

    fn sync(&mut self, file: u32, kind: SyncKind) -> Result<()> {
        super::sync_fd(self.files[file as usize], kind)
    }
}
