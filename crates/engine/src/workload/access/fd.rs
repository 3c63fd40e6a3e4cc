//! The access workload's file descriptors: opening a file (retrying a create another host raced),
//! and the guards that close what was opened, whatever way a phase ends.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::error::{EngineError, Result};

/// The length of an open file (fstat), None when it cannot be told.
pub(super) fn fd_len(fd: RawFd) -> Option<u64> {
    // SAFETY: fstat on an open fd into a zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { crate::sys::fstat(fd, &mut st) } == 0).then_some(st.st_size as u64)
}

pub(crate) fn open(path: &Path, flags: i32) -> Result<RawFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| EngineError::invalid("dir", format!("{} contains a NUL byte", path.display())))?;
    let want = flags | libc::O_CLOEXEC;
    // A network filesystem's client (GlusterFS over FUSE) can fail an O_CREAT without O_EXCL with
    // EEXIST when another host created the same file at that moment: the file is there, so open it
    // as it is (and create it again should it vanish in between), for a few rounds.
    let mut f = want;
    for _ in 0..8 {
        // SAFETY: c is a valid C string.
        let fd = unsafe { crate::nofollow::open(c.as_ptr(), f, 0o644) };
        if fd >= 0 {
            return Ok(fd);
        }
        match open_retry_flags(want, f, std::io::Error::last_os_error().raw_os_error()) {
            Some(next) => f = next,
            None => break,
        }
    }
    Err(EngineError::last_os(format!("open {}", path.display())))
}

/// The flags of the next try after an open with `tried` (asked for: `want`) failed with `err`,
/// or None when the error stands. Only a plain O_CREAT (no O_EXCL) is retried: after EEXIST
/// without it, after ENOENT with it again.
fn open_retry_flags(want: i32, tried: i32, err: Option<i32>) -> Option<i32> {
    if want & (libc::O_CREAT | libc::O_EXCL) != libc::O_CREAT {
        return None;
    }
    match (tried & libc::O_CREAT != 0, err) {
        (true, Some(libc::EEXIST)) => Some(want & !libc::O_CREAT),
        (false, Some(libc::ENOENT)) => Some(want),
        _ => None,
    }
}

pub(super) struct FdGuard(pub(super) RawFd);
impl Drop for FdGuard {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { crate::sys::close(self.0) };
    }
}

pub(super) struct FilesGuard(pub(super) Vec<RawFd>);
impl Drop for FilesGuard {
    fn drop(&mut self) {
        for &fd in &self.0 {
            // SAFETY: we own the fds.
            unsafe { crate::sys::close(fd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::open_retry_flags;
    use libc::{EEXIST, ENOENT, O_CREAT, O_EXCL, O_TRUNC, O_WRONLY};

    #[test]
    fn a_lost_create_race_opens_the_file_and_a_vanished_file_is_created_again() {
        let want = O_WRONLY | O_CREAT | O_TRUNC;
        assert_eq!(open_retry_flags(want, want, Some(EEXIST)), Some(O_WRONLY | O_TRUNC));
        assert_eq!(open_retry_flags(want, O_WRONLY | O_TRUNC, Some(ENOENT)), Some(want));
        assert_eq!(open_retry_flags(want, want, Some(libc::EACCES)), None);
        // O_EXCL means the caller wants EEXIST; a plain open has nothing to retry.
        assert_eq!(open_retry_flags(want | O_EXCL, want | O_EXCL, Some(EEXIST)), None);
        assert_eq!(open_retry_flags(O_WRONLY, O_WRONLY, Some(ENOENT)), None);
    }
}
