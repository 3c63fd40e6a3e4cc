//! System-call helpers for code that runs in a forked task: no allocation, no
//! lock, errors as (step, errno) with a static step name.

use std::ffi::CStr;
use std::os::raw::c_char;

/// A failed step of a job: what was being done and the errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobErr {
    pub step: &'static str,
    pub errno: i32,
}

pub type JobResult<T> = Result<T, JobErr>;

pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Turn a negative syscall return into the step's error.
#[inline]
pub fn cvt(r: isize, step: &'static str) -> JobResult<isize> {
    if r < 0 {
        Err(JobErr { step, errno: errno() })
    } else {
        Ok(r)
    }
}

#[inline]
pub fn cvt_i(r: i32, step: &'static str) -> JobResult<i32> {
    cvt(r as isize, step).map(|v| v as i32)
}

/// Error for a transfer shorter than asked (re-aim treats it as a failure too).
pub fn short(step: &'static str) -> JobErr {
    JobErr { step, errno: libc::EIO }
}

pub fn close(fd: i32) {
    // SAFETY: fd is one this task opened; a failed close leaves nothing to undo.
    unsafe { crate::sys::close(fd) };
}

/// A NUL-terminated path in a fixed buffer: a directory prefix plus a name
/// rebuilt per use, so no job allocates.
pub struct CPath {
    buf: [u8; 1024],
    base: usize,
    len: usize,
}

impl CPath {
    /// `dir` must be shorter than ~900 bytes (checked when the spec is read).
    pub fn new(dir: &[u8]) -> CPath {
        let mut p = CPath { buf: [0; 1024], base: 0, len: 0 };
        let n = dir.len().min(900);
        p.buf[..n].copy_from_slice(&dir[..n]);
        p.buf[n] = b'/';
        p.base = n + 1;
        p.len = p.base;
        p.buf[p.len] = 0;
        p
    }
    /// `dir/<name>`.
    pub fn name(&mut self, name: &[u8]) -> *const c_char {
        self.len = self.base;
        self.push(name);
        self.ptr()
    }
    /// `dir/<prefix><a as 5 digits><b as 5 digits><suffix>`: re-aim's unique temporary names.
    pub fn temp(&mut self, prefix: &[u8], a: u64, b: u64, suffix: &[u8]) -> *const c_char {
        self.len = self.base;
        self.push(prefix);
        self.digits(a % 100_000, 5);
        self.digits(b % 100_000, 5);
        self.push(suffix);
        self.ptr()
    }
    fn push(&mut self, s: &[u8]) {
        let n = s.len().min(self.buf.len() - 1 - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s[..n]);
        self.len += n;
        self.buf[self.len] = 0;
    }
    fn digits(&mut self, mut v: u64, width: usize) {
        let mut tmp = [b'0'; 20];
        let mut i = width;
        while i > 0 {
            i -= 1;
            tmp[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        self.push(&tmp[..width]);
    }
    pub fn ptr(&self) -> *const c_char {
        self.buf.as_ptr() as *const c_char
    }
    pub fn as_cstr(&self) -> &CStr {
        // SAFETY: buf[len] is always 0 and no byte before it is (names come from fsmeter).
        unsafe { CStr::from_bytes_with_nul_unchecked(&self.buf[..=self.len]) }
    }
}

/// Fork, run `argv` (argv[0] is the full path) in `cwd`, wait (see `wait_ran`):
/// the helper of the exec, shell and sync jobs. The child only calls chdir, execve and
/// _exit, all async-signal-safe, so this is sound from any process.
///
/// # Safety
/// `argv` and `envp` point to NULL-terminated arrays of NUL-terminated strings and `cwd` is null or
/// a NUL-terminated string, all alive for the call (the child reads them after the fork).
pub unsafe fn spawn_wait(argv: *const *const c_char, envp: *const *const c_char, cwd: *const c_char) -> JobResult<()> {
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(JobErr { step: "fork", errno: errno() });
    }
    if pid == 0 {
        unsafe {
            if !cwd.is_null() {
                libc::chdir(cwd);
            }
            libc::execve(*argv, argv, envp);
            libc::_exit(127);
        }
    }
    wait_ran(pid, "child program")
}

/// Wait for a program the job ran: as re-aim, its exit status does not
/// matter, but it must have run: killed by a signal, or 127 (exec failed),
/// is an error of `step`.
pub fn wait_ran(pid: i32, step: &'static str) -> JobResult<()> {
    let status = wait_status(pid)?;
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) != 127 {
        Ok(())
    } else {
        Err(JobErr { step, errno: libc::ECHILD })
    }
}

fn wait_status(pid: i32) -> JobResult<i32> {
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Ok(status);
        }
        if r < 0 && errno() != libc::EINTR {
            return Err(JobErr { step: "waitpid", errno: errno() });
        }
    }
}

/// Wait for `pid`; an exit status other than 0 is an error of `step`.
pub fn wait_ok(pid: i32, step: &'static str) -> JobResult<()> {
    let status = wait_status(pid)?;
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(JobErr { step, errno: libc::ECHILD })
    }
}
