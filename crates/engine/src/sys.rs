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
//! A second cost is any wrapper's: a system call made from a function the
//! loop calls is followed by that function's `ret`, and on a machine whose
//! kernel or hypervisor clears the CPU's return predictions on the way back to
//! user space, that `ret` mispredicts every time. Measured on the development
//! machine (a C loop, one thread): getppid 116 ns with `syscall` inline, 162 ns
//! from a called function; a 1 MiB file written and read back in 1 KiB calls
//! on tmpfs, 1,155 us inline against 1,510 us through glibc. rustix inlines the
//! instruction into the caller, so the path calls (lseek, unlink, mkdir, stat,
//! rename, ...) go through here too, each made as the *at call the kernel
//! implements (unlink as unlinkat(AT_FDCWD, ...), stat as newfstatat).
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

/// lseek(2).
///
/// # Safety
/// `fd` must be open (any fd number is memory-safe; this mirrors libc's signature).
#[inline]
pub unsafe fn lseek(fd: RawFd, off: off_t, whence: c_int) -> off_t {
    use rustix::fs::SeekFrom;
    let to = match whence {
        libc::SEEK_SET => offset(off).map(SeekFrom::Start),
        libc::SEEK_CUR => Ok(SeekFrom::Current(off)),
        libc::SEEK_END => Ok(SeekFrom::End(off)),
        _ => Err(Errno::INVAL),
    };
    libc_ret(to.and_then(|to| borrow(fd).and_then(|fd| rustix::fs::seek(fd, to))).map(|p| p as isize)) as off_t
}

/// ftruncate(2).
///
/// # Safety
/// As [`lseek`].
#[inline]
pub unsafe fn ftruncate(fd: RawFd, len: off_t) -> c_int {
    libc_ret(offset(len).and_then(|len| borrow(fd).and_then(|fd| rustix::fs::ftruncate(fd, len))).map(unit)) as c_int
}

/// A directory fd, or the working directory for AT_FDCWD.
#[inline(always)]
fn dir(dirfd: RawFd) -> Result<BorrowedFd<'static>> {
    if dirfd == libc::AT_FDCWD {
        Ok(rustix::fs::CWD)
    } else {
        borrow(dirfd)
    }
}

/// unlinkat(2): a file, or with AT_REMOVEDIR an empty directory.
///
/// # Safety
/// `path` must be a NUL-terminated string; `dirfd` an open directory (or AT_FDCWD).
#[inline]
pub unsafe fn unlinkat(dirfd: RawFd, path: *const c_char, flags: c_int) -> c_int {
    let (path, flags) = (CStr::from_ptr(path), rustix::fs::AtFlags::from_bits_retain(flags as _));
    libc_ret(dir(dirfd).and_then(|d| rustix::fs::unlinkat(d, path, flags)).map(unit)) as c_int
}

/// unlink(2), made as unlinkat(AT_FDCWD, path, 0): the same work under the call's newer name.
///
/// # Safety
/// `path` must be a NUL-terminated string.
#[inline]
pub unsafe fn unlink(path: *const c_char) -> c_int {
    unlinkat(libc::AT_FDCWD, path, 0)
}

/// rmdir(2), made as unlinkat(AT_FDCWD, path, AT_REMOVEDIR).
///
/// # Safety
/// As [`unlink`].
#[inline]
pub unsafe fn rmdir(path: *const c_char) -> c_int {
    unlinkat(libc::AT_FDCWD, path, libc::AT_REMOVEDIR)
}

/// mkdirat(2).
///
/// # Safety
/// As [`unlinkat`].
#[inline]
pub unsafe fn mkdirat(dirfd: RawFd, path: *const c_char, mode: mode_t) -> c_int {
    let (path, mode) = (CStr::from_ptr(path), Mode::from_bits_retain(mode as _));
    libc_ret(dir(dirfd).and_then(|d| rustix::fs::mkdirat(d, path, mode)).map(unit)) as c_int
}

/// mkdir(2), made as mkdirat(AT_FDCWD, ...).
///
/// # Safety
/// As [`unlink`].
#[inline]
pub unsafe fn mkdir(path: *const c_char, mode: mode_t) -> c_int {
    mkdirat(libc::AT_FDCWD, path, mode)
}

/// renameat(2).
///
/// # Safety
/// Both paths must be NUL-terminated strings; both fds open directories (or AT_FDCWD).
#[inline]
pub unsafe fn renameat(olddirfd: RawFd, old: *const c_char, newdirfd: RawFd, new: *const c_char) -> c_int {
    let (old, new) = (CStr::from_ptr(old), CStr::from_ptr(new));
    libc_ret(dir(olddirfd).and_then(|a| dir(newdirfd).and_then(|b| rustix::fs::renameat(a, old, b, new))).map(unit))
        as c_int
}

/// creat(2), made as openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode), which is
/// what creat is.
///
/// # Safety
/// As [`unlink`].
#[inline]
pub unsafe fn creat(path: *const c_char, mode: mode_t) -> c_int {
    openat(libc::AT_FDCWD, path, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, mode)
}

/// The kernel's answer to a stat call, written into libc's `struct stat`.
#[inline(always)]
fn put_stat(s: rustix::fs::Stat, out: *mut libc::stat) -> isize {
    // SAFETY: the caller passed a pointer valid for writes of one `libc::stat`.
    let o = unsafe { &mut *out };
    o.st_dev = s.st_dev as _;
    o.st_ino = s.st_ino as _;
    o.st_nlink = s.st_nlink as _;
    o.st_mode = s.st_mode as _;
    o.st_uid = s.st_uid as _;
    o.st_gid = s.st_gid as _;
    o.st_rdev = s.st_rdev as _;
    o.st_size = s.st_size as _;
    o.st_blksize = s.st_blksize as _;
    o.st_blocks = s.st_blocks as _;
    o.st_atime = s.st_atime as _;
    o.st_atime_nsec = s.st_atime_nsec as _;
    o.st_mtime = s.st_mtime as _;
    o.st_mtime_nsec = s.st_mtime_nsec as _;
    o.st_ctime = s.st_ctime as _;
    o.st_ctime_nsec = s.st_ctime_nsec as _;
    0
}

/// fstatat(2) (newfstatat on 64-bit Linux).
///
/// # Safety
/// As [`unlinkat`], and `out` valid for writes of one `libc::stat`.
#[inline]
pub unsafe fn fstatat(dirfd: RawFd, path: *const c_char, out: *mut libc::stat, flags: c_int) -> c_int {
    let (path, flags) = (CStr::from_ptr(path), rustix::fs::AtFlags::from_bits_retain(flags as _));
    libc_ret(dir(dirfd).and_then(|d| rustix::fs::statat(d, path, flags)).map(|s| put_stat(s, out))) as c_int
}

/// stat(2), made as fstatat(AT_FDCWD, path, out, 0), as glibc makes it.
///
/// # Safety
/// As [`fstatat`].
#[inline]
pub unsafe fn stat(path: *const c_char, out: *mut libc::stat) -> c_int {
    fstatat(libc::AT_FDCWD, path, out, 0)
}

/// fstat(2).
///
/// # Safety
/// `out` must be valid for writes of one `libc::stat`.
#[inline]
pub unsafe fn fstat(fd: RawFd, out: *mut libc::stat) -> c_int {
    libc_ret(borrow(fd).and_then(rustix::fs::fstat).map(|s| put_stat(s, out))) as c_int
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HACKING.md's rule: the engine's calls on files go through this module. A new
    /// `libc::pread(` (say) elsewhere in the engine fails here, naming the file and line.
    #[test]
    fn no_libc_file_call_outside_this_module() {
        let calls = [
            "read",
            "write",
            "pread",
            "pwrite",
            "open",
            "openat",
            "close",
            "fsync",
            "fdatasync",
            "lseek",
            "ftruncate",
            "unlink",
            "unlinkat",
            "rmdir",
            "mkdir",
            "mkdirat",
            "creat",
            "renameat",
            "stat",
            "fstat",
            "fstatat",
        ];
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

    #[test]
    fn the_path_calls_do_what_libc_does() {
        let dir = tempfile::tempdir().unwrap();
        let c = |name: &str| std::ffi::CString::new(dir.path().join(name).as_os_str().as_encoded_bytes()).unwrap();
        let (d, f, g) = (c("d"), c("d/f"), c("d/g"));
        unsafe {
            assert_eq!(mkdir(d.as_ptr(), 0o700), 0);
            assert_eq!(mkdir(d.as_ptr(), 0o700), -1);
            assert_eq!(errno(), libc::EEXIST);
            let fd = creat(f.as_ptr(), 0o600);
            assert!(fd >= 0);
            let data = [7u8; 100];
            assert_eq!(write(fd, data.as_ptr().cast(), 100), 100);
            assert_eq!(lseek(fd, 10, libc::SEEK_SET), 10);
            assert_eq!(lseek(fd, 5, libc::SEEK_CUR), 15);
            assert_eq!(lseek(fd, -1, libc::SEEK_END), 99);
            assert_eq!(lseek(fd, -1, libc::SEEK_SET), -1);
            assert_eq!(errno(), libc::EINVAL);
            assert_eq!(ftruncate(fd, 40), 0);
            // stat, fstat and fstatat agree with libc's own fstat.
            let mut mine: libc::stat = std::mem::zeroed();
            let mut theirs: libc::stat = std::mem::zeroed();
            assert_eq!(libc::fstat(fd, &mut theirs), 0);
            assert_eq!(fstat(fd, &mut mine), 0);
            for st in [mine, {
                let mut s = std::mem::zeroed();
                assert_eq!(stat(f.as_ptr(), &mut s), 0);
                s
            }] {
                assert_eq!(
                    (st.st_size, st.st_ino, st.st_dev, st.st_mode),
                    (40, theirs.st_ino, theirs.st_dev, theirs.st_mode)
                );
                assert_eq!(
                    (st.st_nlink, st.st_blksize, st.st_blocks),
                    (theirs.st_nlink, theirs.st_blksize, theirs.st_blocks)
                );
                assert_eq!((st.st_mtime, st.st_mtime_nsec), (theirs.st_mtime, theirs.st_mtime_nsec));
            }
            let dfd = open(d.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY, 0);
            let name = std::ffi::CString::new("f").unwrap();
            let mut at: libc::stat = std::mem::zeroed();
            assert_eq!(fstatat(dfd, name.as_ptr(), &mut at, libc::AT_SYMLINK_NOFOLLOW), 0);
            assert_eq!(at.st_ino, theirs.st_ino);
            assert_eq!(fstat(-1, &mut at), -1);
            assert_eq!(errno(), libc::EBADF);
            // rename, unlink, rmdir, and their errors.
            assert_eq!(renameat(libc::AT_FDCWD, f.as_ptr(), dfd, std::ffi::CString::new("g").unwrap().as_ptr()), 0);
            assert_eq!(stat(f.as_ptr(), &mut at), -1);
            assert_eq!(errno(), libc::ENOENT);
            assert_eq!(rmdir(d.as_ptr()), -1);
            assert_eq!(errno(), libc::ENOTEMPTY);
            let sub = std::ffi::CString::new("s").unwrap();
            assert_eq!(mkdirat(dfd, sub.as_ptr(), 0o700), 0);
            assert_eq!(unlinkat(dfd, sub.as_ptr(), 0), -1);
            assert_eq!(errno(), libc::EISDIR);
            assert_eq!(unlinkat(dfd, sub.as_ptr(), libc::AT_REMOVEDIR), 0);
            assert_eq!(unlink(g.as_ptr()), 0);
            assert_eq!(unlink(g.as_ptr()), -1);
            assert_eq!(errno(), libc::ENOENT);
            assert_eq!(close(fd), 0);
            assert_eq!(close(dfd), 0);
            assert_eq!(rmdir(d.as_ptr()), 0);
        }
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
