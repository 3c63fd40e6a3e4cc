//! A fully buffered stream over a file descriptor, moving data the way glibc's
//! stdio does for iozone's fwrite/fread tests (`setvbuf(stream, buf, _IOFBF,
//! reclen)`): a request no smaller than the buffer goes straight to the kernel
//! in whole buffer-sized blocks, smaller ones are gathered in the buffer and
//! written (or refilled) one buffer at a time.
//!
//! The buffer is allocated once by the caller; nothing here allocates.

use std::os::fd::RawFd;

pub struct Stream<'a> {
    fd: RawFd,
    /// The stream's file offset. The stream moves data with pread/pwrite at it, not read/write:
    /// in a multi-threaded process (fsmeter's) read(2) and write(2) also take the file-position
    /// lock on every call, which single-threaded iozone does not pay.
    pos: u64,
    buf: &'a mut [u8],
    /// Write mode: bytes gathered, not yet written.
    pending: usize,
    /// Read mode: the buffered bytes are buf[rpos..rend].
    rpos: usize,
    rend: usize,
}

/// A failed system call's errno.
pub type Errno = i32;

fn errno() -> Errno {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Repeats a read(2)/write(2)-like call until `len` bytes have moved: `call(done)`
/// moves the bytes from `done` on and returns what the system call returned. EINTR
/// is retried; a return of 0 fails with `at_zero` (ENOSPC for writes, EIO for an
/// early end of file: iozone exits on both). Inlined into each caller, so the loop
/// costs what the hand-written one did.
#[inline(always)]
pub fn transfer_all(len: usize, at_zero: Errno, mut call: impl FnMut(usize) -> isize) -> Result<(), Errno> {
    let mut done = 0usize;
    while done < len {
        let n = call(done);
        if n < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(at_zero);
        }
        done += n as usize;
    }
    Ok(())
}

/// read(2) until `out` is full; end of file before that is EIO (iozone exits on it).
pub fn read_all(fd: RawFd, out: &mut [u8]) -> Result<(), Errno> {
    let (ptr, len) = (out.as_mut_ptr(), out.len());
    // SAFETY: done < len, so the range is inside out, which is writable.
    transfer_all(len, libc::EIO, |done| unsafe { crate::sys::read(fd, ptr.add(done) as *mut libc::c_void, len - done) })
}

/// pwrite(2) all of `data` at `off` (a short write continues after what it wrote).
pub fn pwrite_all(fd: RawFd, data: &[u8], off: u64) -> Result<(), Errno> {
    // SAFETY: done < data.len(), so the range is inside data.
    transfer_all(data.len(), libc::ENOSPC, |done| unsafe {
        crate::sys::pwrite(
            fd,
            data.as_ptr().add(done) as *const libc::c_void,
            data.len() - done,
            (off + done as u64) as i64,
        )
    })
}

/// pread(2) all of `out` from `off`; end of file before that is EIO.
pub fn pread_all(fd: RawFd, out: &mut [u8], off: u64) -> Result<(), Errno> {
    let (ptr, len) = (out.as_mut_ptr(), out.len());
    // SAFETY: done < len, so the range is inside out, which is writable.
    transfer_all(len, libc::EIO, |done| unsafe {
        crate::sys::pread(fd, ptr.add(done) as *mut libc::c_void, len - done, (off + done as u64) as i64)
    })
}

impl<'a> Stream<'a> {
    pub fn new(fd: RawFd, buf: &'a mut [u8]) -> Self {
        Stream { fd, pos: 0, buf, pending: 0, rpos: 0, rend: 0 }
    }

    /// fwrite: fill the buffer; once it would overflow, flush it, write whole
    /// blocks directly and keep the remainder.
    #[inline(always)]
    pub fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        // iozone's case: nothing gathered and a request of one buffer's length, which stdio writes
        // straight to the kernel.
        if self.pending == 0 && data.len() == self.buf.len() {
            pwrite_all(self.fd, data, self.pos)?;
            self.pos += data.len() as u64;
            return Ok(());
        }
        self.write_slow(data)
    }

    #[inline(never)]
    fn write_slow(&mut self, mut data: &[u8]) -> Result<(), Errno> {
        let cap = self.buf.len();
        let room = cap - self.pending;
        if data.len() < room {
            self.buf[self.pending..self.pending + data.len()].copy_from_slice(data);
            self.pending += data.len();
            return Ok(());
        }
        if self.pending > 0 {
            self.buf[self.pending..].copy_from_slice(&data[..room]);
            self.pending = cap;
            data = &data[room..];
            self.flush()?;
        }
        let direct = data.len() - data.len() % cap;
        if direct > 0 {
            pwrite_all(self.fd, &data[..direct], self.pos)?;
            self.pos += direct as u64;
        }
        let rest = &data[direct..];
        self.buf[..rest.len()].copy_from_slice(rest);
        self.pending = rest.len();
        Ok(())
    }

    /// fflush of a write stream.
    pub fn flush(&mut self) -> Result<(), Errno> {
        if self.pending > 0 {
            let n = self.pending;
            self.pending = 0;
            pwrite_all(self.fd, &self.buf[..n], self.pos)?;
            self.pos += n as u64;
        }
        Ok(())
    }

    /// fread: serve from the buffer; requests of a buffer or more are read
    /// directly in whole blocks, the tail through one refill.
    #[inline(always)]
    pub fn read(&mut self, out: &mut [u8]) -> Result<(), Errno> {
        // iozone's case: the stream holds nothing and the request is one buffer's length, which
        // stdio passes straight to the kernel.
        if self.rend == self.rpos && out.len() == self.buf.len() {
            pread_all(self.fd, out, self.pos)?;
            self.pos += out.len() as u64;
            return Ok(());
        }
        self.read_slow(out)
    }

    #[inline(never)]
    fn read_slow(&mut self, out: &mut [u8]) -> Result<(), Errno> {
        let cap = self.buf.len();
        let mut done = 0;
        let have = self.rend - self.rpos;
        if have > 0 {
            let n = have.min(out.len());
            out[..n].copy_from_slice(&self.buf[self.rpos..self.rpos + n]);
            self.rpos += n;
            done = n;
        }
        let left = out.len() - done;
        let direct = left - left % cap;
        if direct > 0 {
            pread_all(self.fd, &mut out[done..done + direct], self.pos)?;
            self.pos += direct as u64;
            done += direct;
        }
        if done < out.len() {
            // SAFETY: the buffer is valid and writable.
            let n =
                unsafe { crate::sys::pread(self.fd, self.buf.as_mut_ptr() as *mut libc::c_void, cap, self.pos as i64) };
            if n < 0 {
                return Err(errno());
            }
            self.pos += n as u64;
            self.rpos = 0;
            self.rend = n as usize;
            let need = out.len() - done;
            if self.rend < need {
                return Err(libc::EIO);
            }
            out[done..].copy_from_slice(&self.buf[..need]);
            self.rpos = need;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn buffered_writes_and_reads_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let f = std::fs::File::create(&path).unwrap();
        let mut buf = vec![0u8; 8];
        let data: Vec<u8> = (0..100u8).collect();
        {
            let mut s = Stream::new(f.as_raw_fd(), &mut buf);
            s.write(&data[..3]).unwrap();
            s.write(&data[3..20]).unwrap();
            s.write(&data[20..100]).unwrap();
            s.flush().unwrap();
        }
        assert_eq!(std::fs::read(&path).unwrap(), data);
        let f = std::fs::File::open(&path).unwrap();
        let mut s = Stream::new(f.as_raw_fd(), &mut buf);
        let mut out = vec![0u8; 100];
        s.read(&mut out[..5]).unwrap();
        s.read(&mut out[5..30]).unwrap();
        s.read(&mut out[30..]).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn buffer_sized_requests_go_straight_through_only_when_nothing_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let f = std::fs::File::create(&path).unwrap();
        let mut buf = vec![0u8; 8];
        let data: Vec<u8> = (0..35u8).collect();
        {
            let mut s = Stream::new(f.as_raw_fd(), &mut buf);
            s.write(&data[..8]).unwrap(); // straight through
            assert_eq!(std::fs::metadata(&path).unwrap().len(), 8);
            s.write(&data[8..11]).unwrap(); // gathered
            s.write(&data[11..19]).unwrap(); // a buffer's length with 3 bytes held: in order
            s.write(&data[19..27]).unwrap();
            s.write(&data[27..35]).unwrap();
            s.flush().unwrap();
        }
        assert_eq!(std::fs::read(&path).unwrap(), data);
        let f = std::fs::File::open(&path).unwrap();
        let mut s = Stream::new(f.as_raw_fd(), &mut buf);
        let mut out = vec![0u8; 35];
        s.read(&mut out[..8]).unwrap(); // straight through
        s.read(&mut out[8..11]).unwrap(); // a refill, 5 bytes held after it
        s.read(&mut out[11..19]).unwrap(); // a buffer's length with bytes held: in order
        s.read(&mut out[19..27]).unwrap();
        s.read(&mut out[27..35]).unwrap();
        assert_eq!(out, data);
        let mut more = vec![0u8; 8];
        assert_eq!(s.read(&mut more), Err(libc::EIO)); // past the end of the file
    }
}
