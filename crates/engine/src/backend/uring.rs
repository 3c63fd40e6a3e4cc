//! The io_uring backend: `depth` requests in flight per thread. Files are
//! registered with the ring when the kernel allows it (fixed files skip the
//! per-request fd lookup), and so are the buffers when the files are O_DIRECT
//! (fixed buffers skip pinning pages on every request), falling back to plain
//! requests when it does not.

use io_uring::{opcode, squeue, types, IoUring};

use super::{FileTable, IoBackend, IoReq, SyncKind};
use crate::error::{EngineError, Result};

pub struct UringBackend {
    ring: IoUring,
    files: FileTable,
    fixed_files: bool,
    fixed_bufs: bool,
    unsubmitted: usize,
    /// RWF_* flags of every write.
    write_flags: i32,
}

impl UringBackend {
    /// `bufs[i]` is the buffer of slot i (address, length); slots and buffers match.
    pub fn new(files: FileTable, depth: usize, bufs: &[(*mut u8, usize)]) -> Result<Self> {
        let entries = depth.next_power_of_two().max(2) as u32;
        // As fio's io_uring engine sets its ring up: one issuer (this thread) whose completions' task work
        // runs when it waits (no interrupt to run it at once); older kernels refuse the flags, then plain.
        let ring = IoUring::builder()
            .setup_coop_taskrun()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(entries)
            .or_else(|_| IoUring::builder().setup_coop_taskrun().build(entries))
            .or_else(|_| IoUring::new(entries))
            .map_err(|e| {
                EngineError::io(
                "io_uring setup (is io_uring disabled? see /proc/sys/kernel/io_uring_disabled, or use backend=psync)",
                e,
            )
            })?;
        let fixed_files = ring.submitter().register_files(&files).is_ok();
        let iovecs: Vec<libc::iovec> =
            bufs.iter().map(|&(p, l)| libc::iovec { iov_base: p as *mut libc::c_void, iov_len: l }).collect();
        // SAFETY: the buffers outlive the ring (the worker owns both and drops the ring first).
        // Registered buffers only for O_DIRECT files: they spare pinning the pages of each request, but a
        // buffered request then copies through the kernel's page-by-page bvec path, slower than a plain
        // user copy (fio registers none by default).
        let direct = !files.is_empty()
            && files.iter().all(|&fd| {
                // SAFETY: F_GETFL on an open descriptor reads its flags.
                let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
                fl >= 0 && fl & libc::O_DIRECT != 0
            });
        let fixed_bufs =
            direct && bufs.len() <= u16::MAX as usize && unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        Ok(UringBackend { ring, files, fixed_files, fixed_bufs, unsubmitted: 0, write_flags: 0 })
    }

    #[inline(always)]
    fn entry(&self, slot: usize, req: IoReq, buf: *mut u8) -> squeue::Entry {
        macro_rules! build {
            ($fd:expr) => {
                match (req.write, self.fixed_bufs) {
                    (false, true) => opcode::ReadFixed::new($fd, buf, req.len, slot as u16)
                        .offset(req.offset)
                        .ioprio(req.ioprio)
                        .build(),
                    (true, true) => opcode::WriteFixed::new($fd, buf, req.len, slot as u16)
                        .offset(req.offset)
                        .ioprio(req.ioprio)
                        .rw_flags(self.write_flags)
                        .build(),
                    (false, false) => {
                        opcode::Read::new($fd, buf, req.len).offset(req.offset).ioprio(req.ioprio).build()
                    }
                    (true, false) => opcode::Write::new($fd, buf, req.len)
                        .offset(req.offset)
                        .ioprio(req.ioprio)
                        .rw_flags(self.write_flags)
                        .build(),
                }
            };
        }
        let e = if self.fixed_files {
            build!(types::Fixed(req.file))
        } else {
            build!(types::Fd(self.files[req.file as usize]))
        };
        e.user_data(slot as u64)
    }

    fn submit(&mut self, want: usize) -> Result<()> {
        loop {
            match self.ring.submit_and_wait(want) {
                Ok(_) => {
                    self.unsubmitted = 0;
                    return Ok(());
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                // Completion queue full: reap first, the caller comes back.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => return Ok(()),
                Err(e) => return Err(EngineError::io("io_uring submit", e)),
            }
        }
    }
}

impl IoBackend for UringBackend {
    #[inline]
    fn queue(&mut self, slot: usize, req: IoReq, buf: *mut u8) -> Result<()> {
        let e = self.entry(slot, req, buf);
        // SAFETY: the buffer stays valid until the completion for `slot` is reaped.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            self.submit(0)?;
        }
        self.unsubmitted += 1;
        Ok(())
    }

    #[inline]
    fn reap<F: FnMut(usize, i64)>(&mut self, min: usize, mut done: F) -> Result<usize> {
        let mut n = 0;
        let mut want = min;
        loop {
            if self.unsubmitted > 0 || want > 0 {
                self.submit(want)?;
            }
            for cqe in self.ring.completion() {
                done(cqe.user_data() as usize, cqe.result() as i64);
                n += 1;
            }
            if n >= min {
                return Ok(n);
            }
            want = min - n;
        }
    }

    fn set_write_flags(&mut self, flags: i32) -> Result<()> {
        self.write_flags = flags;
        if flags & libc::RWF_ATOMIC != 0 {
            // A registered buffer reaches the kernel as one segment per page; an untorn write must be one
            // segment (stx_atomic_write_segments_max is 1 on files), which a plain write's buffer is.
            self.fixed_bufs = false;
        }
        Ok(())
    }

    fn fsync(&mut self, file: u32) -> Result<()> {
        super::sync_fd(self.files[file as usize], SyncKind::Full)
    }

    fn sync(&mut self, file: u32, kind: SyncKind) -> Result<()> {
        super::sync_fd(self.files[file as usize], kind)
    }
}
