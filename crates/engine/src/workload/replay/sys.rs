//! The system calls a client makes that libc does not wrap the way dbench sees them.

use std::os::fd::RawFd;

#[inline]
pub(super) fn cptr(b: &[u8]) -> *const libc::c_char {
    debug_assert_eq!(b.last(), Some(&0));
    b.as_ptr() as *const libc::c_char
}

#[inline]
pub(super) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// glibc's opendir() without its allocation: openat(O_DIRECTORY|O_NONBLOCK) then
/// fstat (glibc sizes its buffer from st_blksize), so the filesystem sees what
/// dbench's opendir/readdir make it do. `path` is resolved below `dirfd` only.
pub(super) fn opendir(dirfd: RawFd, path: *const libc::c_char) -> RawFd {
    let fd = open_beneath(dirfd, path, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NONBLOCK, 0);
    if fd >= 0 {
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        unsafe { crate::sys::fstat(fd, &mut st) };
    }
    fd
}

pub(super) fn getdents(fd: RawFd, buf: &mut [u8]) -> isize {
    // SAFETY: buf is writable for its length.
    unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) as isize }
}

/// struct linux_dirent64 { u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
#[inline]
pub(super) fn dirent_reclen(buf: &[u8], off: usize) -> usize {
    u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize
}

#[inline]
pub(super) fn dirent_name(buf: &[u8], off: usize) -> &[u8] {
    let reclen = dirent_reclen(buf, off);
    let raw = &buf[off + 19..off + reclen];
    let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
    &raw[..end]
}

/// openat2(dirfd, path, RESOLVE_BENEATH): `path` is resolved below `dirfd` only; a "..", an
/// absolute name or a symbolic link that would lead out of it fails (EXDEV) instead. One system
/// call, as openat, so the file table of a client stays confined at no cost per operation.
#[inline]
pub(super) fn open_beneath(dirfd: RawFd, path: *const libc::c_char, flags: libc::c_int, mode: libc::mode_t) -> RawFd {
    // SAFETY: open_how is plain data.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    // The kernel refuses a mode without O_CREAT.
    how.mode = if flags & libc::O_CREAT != 0 { mode as u64 } else { 0 };
    how.resolve = libc::RESOLVE_BENEATH;
    // SAFETY: path is NUL-terminated, how lives across the call.
    unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dirfd,
            path,
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        ) as RawFd
    }
}

/// Set errno (so that a caller reading it after cleanup calls sees the failure it reports).
#[inline]
pub(super) fn set_errno(e: i32) {
    // SAFETY: errno is thread-local.
    unsafe { *libc::__errno_location() = e };
}
