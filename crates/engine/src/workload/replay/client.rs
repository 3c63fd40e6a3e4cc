//! One dbench client: runs the load file's operations as dbench's fileio backend does.

use std::os::fd::RawFd;

use super::ops::*;
use super::parse::LoadFile;
use super::sys::*;
use super::written::{fill, Written};
use crate::error::{EngineError, Result};
use crate::measure::{now_ns, Recorder};

/// What one client hands back after the run.
pub(super) struct ClientResult {
    pub(super) mismatches: [u64; NKINDS],
    pub(super) samples: Vec<String>,
    pub(super) passes: u64,
    pub(super) handles_reused: u64,
    pub(super) short_reads: u64,
    /// With verify: what this client wrote where, and what its reads found.
    pub(super) written: Option<Written>,
}

/// A recorded mismatch, kept as numbers on the hot path and formatted at the end.
#[derive(Clone, Copy)]
pub(super) struct Sample {
    pub(super) op: u32,
    pub(super) errno: i32,
}

pub(super) const MAX_SAMPLES: usize = 8;
pub(super) const DENTS_BUF: usize = 32 * 1024;

/// One dbench client: its name, its open-file table and reusable buffers.
pub(super) struct Client<'a> {
    pub(super) id: usize,
    pub(super) lf: &'a LoadFile,
    pub(super) zeros: &'a [u8],
    pub(super) resolve: bool,
    pub(super) cname: Vec<u8>,
    pub(super) base: Vec<u8>,
    /// The job's directory (O_PATH): every name the load file gives is resolved below it
    /// (openat2 RESOLVE_BENEATH, or the *at call on a parent opened that way), so that
    /// neither a ".." nor a symbolic link planted in the directory leads a client out of it.
    pub(super) dirfd: RawFd,
    /// base + NUL, for statvfs.
    pub(super) base_c: Vec<u8>,
    /// Index of the operation being run (for mismatch samples).
    pub(super) cur: u32,
    pub(super) p1: Vec<u8>,
    pub(super) p2: Vec<u8>,
    /// Per dense handle: the open fd (-1: closed) and the path it was opened by.
    pub(super) fds: Vec<RawFd>,
    pub(super) names: Vec<u32>,
    pub(super) rbuf: Vec<u8>,
    pub(super) dents: Vec<Vec<u8>>,
    pub(super) mismatches: [u64; NKINDS],
    pub(super) samples: Vec<Sample>,
    pub(super) handles_reused: u64,
    pub(super) short_reads: u64,
    /// With verify: the written ranges, and the buffer writes are filled in.
    pub(super) written: Option<Written>,
    pub(super) wbuf: Vec<u8>,
}

impl<'a> Client<'a> {
    pub(super) fn new(
        id: usize,
        base: &[u8],
        lf: &'a LoadFile,
        zeros: &'a [u8],
        resolve: bool,
        written: Option<Written>,
    ) -> Result<Client<'a>> {
        let wbuf = if written.is_some() { vec![0u8; lf.max_io.max(1) as usize] } else { Vec::new() };
        let base_c: Vec<u8> = base.iter().copied().chain([0]).collect();
        // SAFETY: base_c is NUL-terminated.
        let dirfd = unsafe { crate::sys::open(cptr(&base_c), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0) };
        if dirfd < 0 {
            return Err(EngineError::io(
                format!("opening {}", String::from_utf8_lossy(base)),
                std::io::Error::last_os_error(),
            ));
        }
        // Every name is resolved with openat2 (Linux 5.6): say so once rather than fail every operation.
        let probe = open_beneath(dirfd, c".".as_ptr(), libc::O_PATH | libc::O_DIRECTORY, 0);
        if probe < 0 {
            let e = std::io::Error::last_os_error();
            unsafe { crate::sys::close(dirfd) };
            return Err(EngineError::io("replay resolves every name below dir with openat2 (Linux 5.6 or later)", e));
        }
        unsafe { crate::sys::close(probe) };
        Ok(Client {
            id,
            lf,
            zeros,
            resolve,
            cname: format!("client{id}").into_bytes(),
            base: base.to_vec(),
            base_c,
            dirfd,
            cur: 0,
            p1: Vec::with_capacity(4096),
            p2: Vec::with_capacity(4096),
            fds: vec![-1; lf.handles.len()],
            names: vec![NONE; lf.handles.len()],
            rbuf: vec![0u8; lf.max_io.max(1) as usize],
            dents: vec![vec![0u8; DENTS_BUF]],
            mismatches: [0; NKINDS],
            samples: Vec::with_capacity(MAX_SAMPLES),
            handles_reused: 0,
            short_reads: 0,
            written,
            wbuf,
        })
    }

    /// The part of a built path (base + "/" + name + NUL) below the job's directory.
    #[inline]
    pub(super) fn rel(&self, buf: &[u8]) -> *const libc::c_char {
        debug_assert!(buf.len() > self.base.len() && buf.last() == Some(&0));
        // SAFETY: build() puts base, then the load file's name (which starts with '/'), then NUL.
        unsafe { buf.as_ptr().add(self.base.len() + 1) as *const libc::c_char }
    }

    /// The directory holding a built path's last name, opened (O_PATH) below the job's directory,
    /// and where that name starts in the buffer. The fd is the job's own one for a name directly
    /// in it (not to be closed: see `done_with`); negative (errno set) when the directory cannot
    /// be reached from inside.
    #[inline]
    pub(super) fn parent(&mut self, first: bool) -> (RawFd, usize) {
        let (base_len, dirfd) = (self.base.len(), self.dirfd);
        let buf = if first { &mut self.p1 } else { &mut self.p2 };
        let slash = buf.iter().rposition(|&c| c == b'/').unwrap_or(0);
        if slash <= base_len {
            return (dirfd, base_len + 1);
        }
        // Cut the buffer at the slash for the call (no copy), then restore it.
        buf[slash] = 0;
        // SAFETY: base + '/' + the parent's name, NUL-terminated at the slash.
        let fd = open_beneath(
            dirfd,
            unsafe { buf.as_ptr().add(base_len + 1) } as *const libc::c_char,
            libc::O_PATH | libc::O_DIRECTORY,
            0,
        );
        buf[slash] = b'/';
        (fd, slash + 1)
    }

    /// Close a parent from `parent`, keeping errno as the operation left it.
    #[inline]
    pub(super) fn done_with(&self, fd: RawFd) {
        if fd >= 0 && fd != self.dirfd {
            let e = errno();
            // SAFETY: fd came from parent() and is ours.
            unsafe { crate::sys::close(fd) };
            set_errno(e);
        }
    }

    /// The hot loop: replay the file from the top, again and again, until the
    /// deadline, the pass limit, or a stop.
    pub(super) fn replay(&mut self, rec: &mut Recorder, passes: Option<u64>) -> Result<ClientResult> {
        let lf = self.lf;
        let mut done = 0u64;
        let mut now = now_ns();
        let outcome = 'outer: loop {
            for (i, op) in lf.ops.iter().enumerate() {
                self.cur = i as u32;
                if rec.should_stop(now) {
                    break 'outer Ok(());
                }
                if op.path != NONE {
                    build(&mut self.p1, &self.base, lf.path(op.path), &self.cname);
                }
                if op.path2() != NONE {
                    build(&mut self.p2, &self.base, lf.path(op.path2()), &self.cname);
                }
                let t0 = now_ns();
                let bytes = match self.exec(op) {
                    Ok(b) => b,
                    Err(e) => break 'outer Err(e),
                };
                now = now_ns();
                if op.kind != SLEEP {
                    rec.record(op.kind as usize, bytes, t0, now);
                }
            }
            done += 1;
            if passes.is_some_and(|p| done >= p) {
                break Ok(());
            }
        };
        self.close_all();
        outcome?;
        let samples = self.samples.iter().map(|s| self.describe(s)).collect();
        Ok(ClientResult {
            mismatches: self.mismatches,
            samples,
            passes: done,
            handles_reused: self.handles_reused,
            short_reads: self.short_reads,
            written: self.written.take(),
        })
    }

    pub(super) fn close_all(&mut self) {
        for fd in self.fds.iter_mut() {
            if *fd >= 0 {
                // SAFETY: the client owns its fds.
                unsafe { crate::sys::close(*fd) };
                *fd = -1;
            }
        }
    }

    pub(super) fn describe(&self, s: &Sample) -> String {
        let op = &self.lf.ops[s.op as usize];
        let mut path = Vec::new();
        if op.path != NONE {
            build(&mut path, b"", self.lf.path(op.path), &self.cname);
            path.pop();
            path.remove(0);
        } else if op.handle != NONE {
            path = format!("handle {}", self.lf.handles[op.handle as usize]).into_bytes();
        }
        let got = if s.errno == 0 {
            "succeeded".to_string()
        } else if s.errno < 0 {
            format!("returned {} bytes", -s.errno)
        } else {
            std::io::Error::from_raw_os_error(s.errno).to_string()
        };
        format!(
            "{} line {} {}: expected {}, {got}",
            KINDS[op.kind as usize],
            op.line,
            String::from_utf8_lossy(&path),
            self.lf.statuses[op.status as usize]
        )
    }

    #[inline]
    pub(super) fn mismatch(&mut self, op: &Op, errno: i32) {
        self.mismatches[op.kind as usize] += 1;
        // Distinct lines only: the same line mismatching on every pass says nothing new.
        if self.samples.len() < MAX_SAMPLES && !self.samples.iter().any(|s| s.op == self.cur) {
            self.samples.push(Sample { op: self.cur, errno });
        }
    }

    /// A failure dbench treats as fatal for the client (it exits, and dbench with it).
    pub(super) fn fatal(&self, op: &Op, what: &str, err: std::io::Error) -> EngineError {
        // Paths relative to the job's directory, as the load file names them.
        let p = |b: &[u8]| String::from_utf8_lossy(&b[self.base.len() + 1..b.len().saturating_sub(1)]).into_owned();
        let mut ctx =
            format!("{} line {}: client{} {} ", self.lf.source.display(), op.line, self.id, KINDS[op.kind as usize]);
        if op.path != NONE {
            ctx.push_str(&p(&self.p1));
            ctx.push(' ');
        }
        if op.path2() != NONE {
            ctx.push_str(&p(&self.p2));
            ctx.push(' ');
        }
        ctx.push_str(what);
        EngineError::io(ctx, err)
    }

    pub(super) fn fd_of(&self, op: &Op) -> Result<RawFd> {
        let fd = self.fds[op.handle as usize];
        if fd < 0 {
            // dbench's find_handle(): "handle %d was not found" and exit(1).
            return Err(self.fatal(
                op,
                &format!(
                    "uses handle {}, which is not open (its NTCreateX failed or never ran)",
                    self.lf.handles[op.handle as usize]
                ),
                std::io::Error::from_raw_os_error(libc::EBADF),
            ));
        }
        Ok(fd)
    }

    /// One load-file operation as dbench's fileio.c does it. Returns the bytes
    /// it counts toward MB/s (dbench's `child->bytes`: the requested size).
    #[inline]
    pub(super) fn exec(&mut self, op: &Op) -> Result<u64> {
        match op.kind {
            NTCREATEX => self.nt_createx(op),
            CLOSE => {
                let fd = self.fd_of(op)?;
                unsafe { crate::sys::close(fd) };
                self.fds[op.handle as usize] = -1;
                self.names[op.handle as usize] = NONE;
                Ok(0)
            }
            RENAME => self.rename(op),
            UNLINK => {
                self.resolve_name(true);
                let r = self.at_parent(|dir, name| unsafe { crate::sys::unlinkat(dir, name, 0) });
                self.check_fatal(op, r)?;
                if let (Some(w), 0) = (self.written.as_mut(), r) {
                    w.forget(op.path);
                }
                Ok(0)
            }
            RMDIR => {
                self.resolve_name(true);
                let r = self.at_parent(|dir, name| unsafe { crate::sys::unlinkat(dir, name, libc::AT_REMOVEDIR) });
                self.check_fatal(op, r)?;
                Ok(0)
            }
            MKDIR => {
                // nb_mkdir ignores the result and the expected status.
                self.resolve_name(true);
                self.at_parent(|dir, name| unsafe { crate::sys::mkdirat(dir, name, 0o777) });
                Ok(0)
            }
            DELTREE => {
                // nb_deltree: unlink every non-directory below, recursively; directories stay.
                let fd = opendir(self.dirfd, self.rel(&self.p1));
                if fd >= 0 {
                    self.deltree(fd, 0);
                    if let Some(w) = self.written.as_mut() {
                        w.forget_below(self.lf.path(op.path));
                    }
                }
                Ok(0)
            }
            QPATHINFO => {
                let found = self.resolve_name(true);
                if found != op.expect_ok {
                    let e = if found { 0 } else { libc::ENOENT };
                    self.mismatch(op, e);
                }
                Ok(0)
            }
            QFILEINFO => {
                let fd = self.fd_of(op)?;
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                unsafe { crate::sys::fstat(fd, &mut st) };
                Ok(0)
            }
            QFSINFO => {
                // statvfs(child->directory): the base directory.
                let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
                unsafe { libc::statvfs(cptr(&self.base_c), &mut st) };
                Ok(0)
            }
            SFILEINFO => self.set_file_info(op),
            FIND => self.find_first(op),
            WRITEX => self.write_x(op),
            READX => self.read_x(op),
            LOCKX | UNLOCKX => {
                let fd = self.fd_of(op)?;
                let mut lock: libc::flock = unsafe { std::mem::zeroed() };
                lock.l_type = if op.kind == LOCKX { libc::F_WRLCK } else { libc::F_UNLCK } as libc::c_short;
                lock.l_whence = libc::SEEK_SET as libc::c_short;
                lock.l_start = op.a as libc::off_t;
                lock.l_len = op.b as libc::off_t;
                unsafe { libc::fcntl(fd, libc::F_SETLKW, &lock) };
                Ok(0)
            }
            FLUSH => {
                let fd = self.fd_of(op)?;
                unsafe { crate::sys::fsync(fd) };
                Ok(0)
            }
            SLEEP => {
                unsafe { libc::usleep(op.a as libc::c_uint) };
                Ok(0)
            }
            _ => unreachable!("kinds are checked when parsing"),
        }
    }

    /// nb_createx: open (or create, truncate, mkdir) and keep the handle.
    #[inline]
    fn nt_createx(&mut self, op: &Op) -> Result<u64> {
        let p = self.rel(&self.p1);
        self.resolve_name(true);
        let mut flags = libc::O_RDWR;
        let disp = op.b;
        if disp == FILE_CREATE {
            flags |= libc::O_CREAT;
        }
        if disp == FILE_OVERWRITE || disp == FILE_OVERWRITE_IF {
            flags |= libc::O_CREAT | libc::O_TRUNC;
        }
        if op.a & FILE_DIRECTORY_FILE != 0 {
            let (dir, name) = self.parent(true);
            if dir >= 0 {
                // SAFETY: the name is NUL-terminated inside p1.
                unsafe { crate::sys::mkdirat(dir, self.p1.as_ptr().add(name) as *const libc::c_char, 0o700) };
                self.done_with(dir);
            }
            flags = libc::O_RDONLY | libc::O_DIRECTORY;
        }
        let mut fd = open_beneath(self.dirfd, p, flags, 0o600);
        if fd < 0 && errno() == libc::EISDIR {
            fd = open_beneath(self.dirfd, p, libc::O_RDONLY | libc::O_DIRECTORY, 0);
        }
        if fd < 0 {
            if op.expect_ok {
                let e = errno();
                self.mismatch(op, e);
            }
            return Ok(0);
        }
        if !op.expect_ok {
            self.mismatch(op, 0);
            unsafe { crate::sys::close(fd) };
            return Ok(0);
        }
        if flags & libc::O_TRUNC != 0 {
            if let Some(w) = self.written.as_mut() {
                w.forget(op.path);
            }
        }
        let h = op.handle as usize;
        if self.fds[h] >= 0 {
            self.handles_reused += 1;
            unsafe { crate::sys::close(self.fds[h]) };
        }
        self.fds[h] = fd;
        self.names[h] = op.path;
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fd is open, st is a valid out-pointer.
        unsafe { crate::sys::fstat(fd, &mut st) };
        Ok(0)
    }

    /// nb_rename: renameat between the two names' directories.
    #[inline]
    fn rename(&mut self, op: &Op) -> Result<u64> {
        self.resolve_name(true);
        self.resolve_name(false);
        let (d1, n1) = self.parent(true);
        let (d2, n2) = if d1 >= 0 { self.parent(false) } else { (-1, 0) };
        let r = if d2 >= 0 {
            // SAFETY: both names are NUL-terminated inside p1 and p2.
            unsafe {
                crate::sys::renameat(d1, self.p1.as_ptr().add(n1) as *const _, d2, self.p2.as_ptr().add(n2) as *const _)
            }
        } else {
            -1
        };
        self.done_with(d2);
        self.done_with(d1);
        self.check_fatal(op, r)?;
        if let (Some(w), 0) = (self.written.as_mut(), r) {
            w.rename(op.path, op.path2(), self.lf.path(op.path), self.lf.path(op.path2()));
        }
        Ok(0)
    }

    /// nb_sfileinfo: fstat, then utime(name, atime - 10, mtime - 12).
    #[inline]
    fn set_file_info(&mut self, op: &Op) -> Result<u64> {
        let fd = self.fd_of(op)?;
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        unsafe { crate::sys::fstat(fd, &mut st) };
        let name = self.names[op.handle as usize];
        build(&mut self.p2, &self.base, self.lf.path(name), &self.cname);
        // utime(name, ...) as dbench, on the name's directory opened below the job's one,
        // without following a symbolic link in the last place either.
        let tm = [
            libc::timespec { tv_sec: st.st_atime - 10, tv_nsec: 0 },
            libc::timespec { tv_sec: st.st_mtime - 12, tv_nsec: 0 },
        ];
        let (dir, at) = self.parent(false);
        if dir >= 0 {
            // SAFETY: the name is NUL-terminated inside p2; tm holds two timespecs.
            unsafe {
                libc::utimensat(dir, self.p2.as_ptr().add(at) as *const _, tm.as_ptr(), libc::AT_SYMLINK_NOFOLLOW)
            };
            self.done_with(dir);
        }
        Ok(0)
    }

    /// nb_findfirst: resolve, then with a wildcard list up to maxcnt entries of the parent.
    #[inline]
    fn find_first(&mut self, op: &Op) -> Result<u64> {
        self.resolve_name(true);
        let name_has_wild = self.p1.iter().any(|c| b"<>*?\"".contains(c));
        if !name_has_wild {
            return Ok(0);
        }
        let Some(slash) = self.p1.iter().rposition(|&c| c == b'/') else { return Ok(0) };
        self.p1[slash] = 0;
        let fd = if slash > self.base.len() {
            opendir(self.dirfd, self.rel(&self.p1))
        } else {
            opendir(self.dirfd, c".".as_ptr())
        };
        self.p1[slash] = b'/';
        if fd < 0 {
            return Ok(0);
        }
        let mut left = op.b as u64;
        let buf = &mut self.dents[0];
        while left > 0 {
            let n = getdents(fd, buf);
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            while off < n as usize && left > 0 {
                off += dirent_reclen(buf, off);
                left -= 1;
            }
        }
        unsafe { crate::sys::close(fd) };
        Ok(0)
    }

    /// nb_writex: pwrite of the requested size; a short write is fatal, as in dbench.
    #[inline]
    fn write_x(&mut self, op: &Op) -> Result<u64> {
        let fd = self.fd_of(op)?;
        let size = op.b as usize;
        let src = match self.written.as_ref() {
            Some(w) => {
                fill(&mut self.wbuf[..size], w.key, op.a as u64);
                self.wbuf.as_ptr()
            }
            None => self.zeros.as_ptr(),
        };
        // SAFETY: zeros and wbuf hold max_io >= size bytes.
        let r = unsafe { crate::sys::pwrite(fd, src as *const libc::c_void, size, op.a as libc::off_t) };
        if r < 0 {
            return Err(self.fatal(op, "write failed", std::io::Error::last_os_error()));
        }
        if let Some(w) = self.written.as_mut() {
            w.record(self.names[op.handle as usize], op.a as u64, op.a as u64 + r as u64);
        }
        if r as u64 != op.c as u64 {
            return Err(self.fatal(
                op,
                &format!("wrote {r} bytes, the load file expects {}", op.c),
                std::io::Error::from_raw_os_error(libc::EIO),
            ));
        }
        Ok(size as u64)
    }

    /// nb_readx: pread of the requested size; a short read is counted, as in dbench.
    #[inline]
    fn read_x(&mut self, op: &Op) -> Result<u64> {
        let fd = self.fd_of(op)?;
        let size = op.b as usize;
        // SAFETY: rbuf holds max_io >= size bytes.
        let r =
            unsafe { crate::sys::pread(fd, self.rbuf.as_mut_ptr() as *mut libc::c_void, size, op.a as libc::off_t) };
        if let (Some(w), true) = (self.written.as_mut(), r > 0) {
            let (lf, base, cname, id) = (self.lf, &self.base, &self.cname, self.names[op.handle as usize]);
            w.check_read(id, op.a as u64, &self.rbuf[..r as usize], || path_of(base, lf, id, cname), "run");
        }
        if r != op.c as isize {
            // dbench prints "read failed" and goes on.
            self.short_reads += 1;
            let e = if r < 0 { errno() } else { -(r as i32) };
            self.mismatch(op, e);
        }
        Ok(size as u64)
    }

    /// `call(dir, name)` on the directory holding p1's last name (opened below the job's
    /// directory) and that name; -1 with errno set when the directory cannot be reached.
    #[inline]
    pub(super) fn at_parent(&mut self, call: impl FnOnce(RawFd, *const libc::c_char) -> libc::c_int) -> libc::c_int {
        let (dir, at) = self.parent(true);
        if dir < 0 {
            return -1;
        }
        // SAFETY: the name is NUL-terminated inside p1.
        let r = call(dir, unsafe { self.p1.as_ptr().add(at) } as *const libc::c_char);
        self.done_with(dir);
        r
    }

    /// dbench: Rename, Unlink and Rmdir whose outcome differs from the expected
    /// status fail the client (`failed()` -> exit(1)), and dbench stops.
    pub(super) fn check_fatal(&mut self, op: &Op, r: libc::c_int) -> Result<()> {
        let ok = r == 0;
        if ok == op.expect_ok {
            return Ok(());
        }
        let e = if ok { 0 } else { errno() };
        self.mismatch(op, e);
        let status = &self.lf.statuses[op.status as usize];
        Err(if ok {
            self.fatal(
                op,
                &format!("succeeded, but the load file expects {status}"),
                std::io::Error::other("dbench counts this as a failed client and stops"),
            )
        } else {
            self.fatal(op, &format!("failed, but the load file expects {status}"), std::io::Error::from_raw_os_error(e))
        })
    }

    /// dbench's resolve_name(): stat the name; if that fails, scan the parent
    /// directory for a case-insensitive match (Samba's pvfs_resolve_name).
    /// Returns whether stat found it. `first`: p1, else p2.
    pub(super) fn resolve_name(&mut self, first: bool) -> bool {
        let buf = if first { &mut self.p1 } else { &mut self.p2 };
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: buf is NUL-terminated.
        if unsafe { crate::sys::stat(cptr(buf), &mut st) } == 0 {
            return true;
        }
        if !self.resolve {
            return false;
        }
        let Some(slash) = buf.iter().rposition(|&c| c == b'/') else { return false };
        let base_len = self.base.len();
        buf[slash] = 0;
        let fd = if slash > base_len {
            // SAFETY: below base + '/', NUL-terminated at the slash.
            opendir(self.dirfd, unsafe { buf.as_ptr().add(base_len + 1) } as *const libc::c_char)
        } else {
            opendir(self.dirfd, c".".as_ptr())
        };
        buf[slash] = b'/';
        if fd < 0 {
            return false;
        }
        let want = &buf[slash + 1..buf.len() - 1];
        let dents = &mut self.dents[0];
        'scan: loop {
            let n = getdents(fd, dents);
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            while off < n as usize {
                let name = dirent_name(dents, off);
                if name.eq_ignore_ascii_case(want) {
                    break 'scan;
                }
                off += dirent_reclen(dents, off);
            }
        }
        unsafe { crate::sys::close(fd) };
        false
    }

    /// Recursive part of nb_deltree on an open directory (closed here).
    pub(super) fn deltree(&mut self, fd: RawFd, depth: usize) {
        if self.dents.len() <= depth + 1 {
            self.dents.push(vec![0u8; DENTS_BUF]);
        }
        let mut buf = std::mem::take(&mut self.dents[depth + 1]);
        loop {
            let n = getdents(fd, &mut buf);
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            while off < n as usize {
                let reclen = dirent_reclen(&buf, off);
                let name = dirent_name(&buf, off);
                if name != b"." && name != b".." {
                    // The name is NUL-terminated inside the record.
                    let cname = unsafe { buf.as_ptr().add(off + 19) } as *const libc::c_char;
                    let mut st: libc::stat = unsafe { std::mem::zeroed() };
                    // Never through a symbolic link: a link is removed, not what it points at.
                    if unsafe { crate::sys::fstatat(fd, cname, &mut st, libc::AT_SYMLINK_NOFOLLOW) } == 0 {
                        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
                            let sub = unsafe {
                                crate::sys::openat(
                                    fd,
                                    cname,
                                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                                    0,
                                )
                            };
                            if sub >= 0 {
                                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                                unsafe { crate::sys::fstat(sub, &mut st) }; // as opendir does
                                self.deltree(sub, depth + 1);
                            }
                        } else {
                            unsafe { crate::sys::unlinkat(fd, cname, 0) };
                        }
                    }
                }
                off += reclen;
            }
        }
        self.dents[depth + 1] = buf;
        unsafe { crate::sys::close(fd) };
    }
}

impl Drop for Client<'_> {
    fn drop(&mut self) {
        // SAFETY: the client owns its directory fd.
        unsafe { crate::sys::close(self.dirfd) };
    }
}

/// A client's file as a printable path (for mismatch reports).
#[cold]
pub(super) fn path_of(base: &[u8], lf: &LoadFile, id: u32, cname: &[u8]) -> String {
    let mut b = Vec::new();
    build(&mut b, base, lf.path(id), cname);
    b.pop();
    String::from_utf8_lossy(&b).into_owned()
}

/// base + path (with CLIENT_MARK -> client name) + NUL, into a reused buffer.
#[inline]
pub(super) fn build(buf: &mut Vec<u8>, base: &[u8], path: &[u8], cname: &[u8]) {
    buf.clear();
    buf.extend_from_slice(base);
    let mut first = true;
    for seg in path.split(|&b| b == CLIENT_MARK) {
        if !first {
            buf.extend_from_slice(cname);
        }
        first = false;
        buf.extend_from_slice(seg);
    }
    buf.push(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client1_is_marked_and_rebuilt() {
        let lf = LoadFile::parse(
            std::path::Path::new("t.txt"),
            "Unlink \"\\clients\\client1\\client1.txt\" 0x6 NT_STATUS_OK\n".as_bytes(),
        )
        .unwrap();
        let mut b = Vec::new();
        build(&mut b, b"/d", lf.path(lf.ops[0].path), b"client7");
        assert_eq!(b, b"/d/clients/client7/client7.txt\0");
    }
}
