//! The system calls of the measured loops, made straight to the kernel.
//!
//! glibc makes every call that POSIX names a cancellation point (read, write,
//! pread, pwrite, open, openat, close, fsync, fdatasync) check whether the
//! process has more than one thread, and when it has, wraps the system call
//! in pthread's asynchronous-cancel enable and disable: two atomic
//! read-modify-writes and two calls per request. fsmeter's engine always runs
//! in a process of several threads (Python's, the harness's, the workers'),
//! while the C programs it is compared with (iozone, bonnie++, postmark, a bare
//! pread loop) are single-threaded and skip that path. The engine never
//! cancels a thread, so the bookkeeping buys it nothing.
//!
//! These functions make the same system calls through rustix's raw Linux
//! backend (inline `syscall`, no libc wrapper). Measured on the 2-core
//! development machine, 4 KiB preads of a cached 64 MiB file on tmpfs from a
//! process with a second thread: glibc 3.2-3.6 GB/s, these 3.6-4.1 GB/s; from
//! a single-threaded process glibc reached 3.6-4.1 GB/s. 64 KiB requests,
//! where the copy dominates, do not move.
//!
//! They keep libc's signatures and conventions (a negative return with
//! `errno` set), so a call site changes only its path, and the errors the
//! engine reports stay what they were.

use std::ffi::CStr;
use std::os::fd::{BorrowedFd, IntoRawFd, RawFd};

use libc::{c_char, c_int, c_void, mode_t, off_t};
use rustix::fs::{Mode, OFlags};
use rustix::io::{Errno, Result};

#[cold]
fn fail(e: Errno) -> isize {
    // SAFETY: errno is this thread's own variable.
    unsafe { *libc::__errno_location() = e.raw_os_error() };
    -1
}

/// A call's result the way libc returns it: the value, or -1 with errno set.
#[inline(always)]
fn libc_ret(r: Result<isize>) -> isize {
    match r {
        Ok(v) => v,
        Err(e) => fail(e),
    }
}

#[inline(always)]
fn unit(_: ()) -> isize {
    0
}

/// An fd the caller owns, lent for one call. A negative fd would be undefined for
/// `BorrowedFd`, so it is refused with EBADF, as the kernel refuses it.
#[inline(always)]
fn borrow(fd: RawFd) -> Result<BorrowedFd<'static>> {
    if fd < 0 {
        return Err(Errno::BADF);
    }
    // SAFETY: fd is open for the duration of the call (the caller owns it).
    Ok(unsafe { BorrowedFd::borrow_raw(fd) })
}

/// A file offset, refused with EINVAL when negative, as pread(2) and pwrite(2) refuse it.
#[inline(always)]
fn offset(off: off_t) -> Result<u64> {
    u64::try_from(off).map_err(|_| Errno::INVAL)
}

#[inline(always)]
fn raw_fd(fd: std::os::fd::OwnedFd) -> isize {
    fd.into_raw_fd() as isize
}

/// read(2).
///
/// # Safety
/// `buf` must be valid for writes of `n` bytes.
#[inline]
pub unsafe fn read(fd: RawFd, buf: *mut c_void, n: usize) -> isize {
    let buf = std::slice::from_raw_parts_mut(buf as *mut u8, n);
    libc_ret(borrow(fd).and_then(|fd| rustix::io::read(fd, buf)).map(|n| n as isize))
}

/// write(2).
///
/// # Safety
/// `buf` must be valid for reads of `n` bytes.
#[inline]
pub unsafe fn write(fd: RawFd, buf: *const c_void, n: usize) -> isize {
    let buf = std::slice::from_raw_parts(buf as *const u8, n);
    libc_ret(borrow(fd).and_then(|fd| rustix::io::write(fd, buf)).map(|n| n as isize))
}

/// pread(2).
///
/// # Safety
/// `buf` must be valid for writes of `n` bytes.
#[inline]
pub unsafe fn pread(fd: RawFd, buf: *mut c_void, n: usize, off: off_t) -> isize {
    let buf = std::slice::from_raw_parts_mut(buf as *mut u8, n);
    libc_ret((|| rustix::io::pread(borrow(fd)?, buf, offset(off)?))().map(|n| n as isize))
}

/// pwrite(2).
///
/// # Safety
/// `buf` must be valid for reads of `n` bytes.
#[inline]
pub unsafe fn pwrite(fd: RawFd, buf: *const c_void, n: usize, off: off_t) -> isize {
    let buf = std::slice::from_raw_parts(buf as *const u8, n);
    libc_ret((|| rustix::io::pwrite(borrow(fd)?, buf, offset(off)?))().map(|n| n as isize))
}

/// open(2) (as openat(AT_FDCWD, ...), which is what glibc makes too).
///
/// # Safety
/// `path` must be a NUL-terminated string.
#[inline]
pub unsafe fn open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    openat(libc::AT_FDCWD, path, flags, mode)
}

/// openat(2).
///
/// # Safety
/// `path` must be a NUL-terminated string; `dirfd` an open directory (or AT_FDCWD).
#[inline]
pub unsafe fn openat(dirfd: RawFd, path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    let (path, flags, mode) =
        (CStr::from_ptr(path), OFlags::from_bits_retain(flags as _), Mode::from_bits_retain(mode as _));
    let r = if dirfd == libc::AT_FDCWD {
        rustix::fs::openat(rustix::fs::CWD, path, flags, mode)
    } else {
        borrow(dirfd).and_then(|dir| rustix::fs::openat(dir, path, flags, mode))
    };
    libc_ret(r.map(raw_fd)) as c_int
}

/// close(2), reporting the kernel's error (EIO from a network filesystem, say): the
/// fd is gone either way, as with libc.
///
/// # Safety
/// The caller owns `fd` and never uses it after this.
#[inline]
pub unsafe fn close(fd: RawFd) -> c_int {
    libc_ret(borrow(fd).and_then(|_| rustix::io::try_close(fd)).map(unit)) as c_int
}

/// fsync(2).
///
/// # Safety
/// `fd` must be open (any fd number is memory-safe; this mirrors libc's signature).
#[inline]
pub unsafe fn fsync(fd: RawFd) -> c_int {
    libc_ret(borrow(fd).and_then(rustix::fs::fsync).map(unit)) as c_int
}

/// fdatasync(2).
///
/// # Safety
/// As [`fsync`].
#[inline]
pub unsafe fn fdatasync(fd: RawFd) -> c_int {
    libc_ret(borrow(fd).and_then(rustix::fs::fdatasync).map(unit)) as c_int
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HACKING.md's rule: the engine's cancellable calls go through this module. A new
    /// `libc::pread(` (say) elsewhere in the engine fails here, naming the file and line.
    #[test]
    fn no_cancellable_libc_call_outside_this_module() {
        let calls = ["read", "write", "pread", "pwrite", "open", "openat", "close", "fsync", "fdatasync"];
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut stack = vec![root.clone()];
        let mut found = Vec::new();
        let mut files = 0;
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                if path.extension().and_then(|e| e.to_str()) != Some("rs")
                    || path.ends_with("sys.rs") && path.parent() == Some(root.as_path())
                {
                    continue;
                }
                files += 1;
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    for c in calls {
                        if line.contains(&format!("libc::{c}(")) {
                            found.push(format!("{}:{}: libc::{c}", path.display(), n + 1));
                        }
                    }
                }
            }
        }
        assert!(files > 20, "the walk found only {files} source files");
        assert!(found.is_empty(), "use crate::sys instead of glibc's wrappers:\n{}", found.join("\n"));
    }

    fn errno() -> i32 {
        std::io::Error::last_os_error().raw_os_error().unwrap()
    }

    #[test]
    fn round_trip_and_libc_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = std::ffi::CString::new(dir.path().join("f").as_os_str().as_encoded_bytes()).unwrap();
        unsafe {
            let fd = open(p.as_ptr(), libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC, 0o640);
            assert!(fd >= 0);
            // The mode reached the kernel: no bit beyond 0o640 (the umask may clear some).
            let mut sb: libc::stat = std::mem::zeroed();
            assert_eq!(libc::fstat(fd, &mut sb), 0);
            assert_eq!(sb.st_mode & 0o7777 & !0o640, 0);
            assert_ne!(sb.st_mode & 0o400, 0);
            let data = *b"0123456789";
            assert_eq!(pwrite(fd, data.as_ptr().cast(), 10, 100), 10);
            assert_eq!(write(fd, data.as_ptr().cast(), 4), 4);
            let mut got = [0u8; 10];
            assert_eq!(pread(fd, got.as_mut_ptr().cast(), 10, 100), 10);
            assert_eq!(&got, b"0123456789");
            assert_eq!(libc::lseek(fd, 0, libc::SEEK_SET), 0);
            assert_eq!(read(fd, got.as_mut_ptr().cast(), 4), 4);
            assert_eq!(&got[..4], b"0123");
            assert_eq!(fsync(fd), 0);
            assert_eq!(fdatasync(fd), 0);
            assert_eq!(close(fd), 0);
            // Errors come back as libc's: -1 and errno.
            assert_eq!(open(p.as_ptr(), libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o640), -1);
            assert_eq!(errno(), libc::EEXIST);
            assert_eq!(close(fd), -1);
            assert_eq!(errno(), libc::EBADF);
            assert_eq!(pread(-1, got.as_mut_ptr().cast(), 1, 0), -1);
            assert_eq!(errno(), libc::EBADF);
            let ro = open(p.as_ptr(), libc::O_RDONLY, 0);
            assert_eq!(pwrite(ro, data.as_ptr().cast(), 1, 0), -1);
            assert_eq!(errno(), libc::EBADF);
            assert_eq!(pread(ro, got.as_mut_ptr().cast(), 1, -5), -1);
            assert_eq!(errno(), libc::EINVAL);
            // openat relative to a directory fd and to the working directory.
            let d = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
            let dfd = open(d.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY, 0);
            let name = std::ffi::CString::new("f").unwrap();
            let f2 = openat(dfd, name.as_ptr(), libc::O_RDONLY, 0);
            assert!(f2 >= 0);
            assert_eq!(pread(f2, got.as_mut_ptr().cast(), 10, 100), 10);
            let f3 = openat(libc::AT_FDCWD, p.as_ptr(), libc::O_RDONLY, 0);
            assert!(f3 >= 0);
            assert_eq!(openat(dfd, std::ffi::CString::new("missing").unwrap().as_ptr(), libc::O_RDONLY, 0), -1);
            assert_eq!(errno(), libc::ENOENT);
            for fd in [ro, dfd, f2, f3] {
                assert_eq!(close(fd), 0);
            }
        }
    }
}
