//! The psync backend: pread/pwrite, one request at a time (like fio's psync).

use super::{FileTable, IoBackend, IoReq, SyncKind};
use crate::error::Result;

pub struct PsyncBackend {
    files: FileTable,
    pending: Option<(usize, IoReq, *mut u8)>,
    /// RWF_* flags of every write (then pwritev2 instead of pwrite).
    write_flags: i32,
}

impl PsyncBackend {
    pub fn new(files: FileTable) -> Self {
        PsyncBackend { files, pending: None, write_flags: 0 }
    }
}

impl IoBackend for PsyncBackend {
    #[inline]
    fn queue(&mut self, slot: usize, req: IoReq, buf: *mut u8) -> Result<()> {
        debug_assert!(self.pending.is_none(), "psync has depth 1");
        self.pending = Some((slot, req, buf));
        Ok(())
    }

    #[inline]
    fn reap<F: FnMut(usize, i64)>(&mut self, _min: usize, mut done: F) -> Result<usize> {
        let Some((slot, req, buf)) = self.pending.take() else { return Ok(0) };
        let fd = self.files[req.file as usize];
        // SAFETY: buf points at a live buffer of at least req.len bytes owned by the caller.
        let r = unsafe {
            if req.write && self.write_flags != 0 {
                let iov = libc::iovec { iov_base: buf as *mut libc::c_void, iov_len: req.len as usize };
                // The raw system call: the offset as (low, high) halves, as the kernel takes it.
                libc::syscall(
                    libc::SYS_pwritev2,
                    fd,
                    &iov as *const libc::iovec,
                    1,
                    req.offset as libc::c_long,
                    0 as libc::c_long,
                    self.write_flags,
                ) as isize
            } else if req.write {
                crate::sys::pwrite(fd, buf as *const libc::c_void, req.len as usize, req.offset as libc::off_t)
            } else {
                crate::sys::pread(fd, buf as *mut libc::c_void, req.len as usize, req.offset as libc::off_t)
            }
        };
        let res = if r < 0 {
            -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) as i64)
        } else {
            r as i64
        };
        done(slot, res);
        Ok(1)
    }

    fn set_write_flags(&mut self, flags: i32) -> Result<()> {
        self.write_flags = flags;
        Ok(())
    }

    fn fsync(&mut self, file: u32) -> Result<()> {
        super::sync_fd(self.files[file as usize], SyncKind::Full)
    }

    fn sync(&mut self, file: u32, kind: SyncKind) -> Result<()> {
        super::sync_fd(self.files[file as usize], kind)
    }
}
