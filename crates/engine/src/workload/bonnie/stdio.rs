//! A stdio-like buffered stream for the per-char phases: Bonnie 1.x calls
//! putc/getc once per byte, so what it measures is a function call into the
//! C library per byte plus a write(2)/read(2) of a whole buffer when it fills
//! or empties. These are that: one out-of-line call per byte (never inlined
//! into the loop, never turned into a memcpy of the block) into a buffer of
//! st_blksize bytes, the size glibc gives a FILE on a regular file.

/// Buffer size glibc would use: st_blksize of the open file, BUFSIZ (8192) if unknown.
pub fn stdio_buffer_size(fd: i32) -> usize {
    // SAFETY: zeroed stat is a valid out-buffer.
    let mut sb: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open; sb is writable.
    if unsafe { crate::sys::fstat(fd, &mut sb) } == 0 && sb.st_blksize > 0 {
        sb.st_blksize as usize
    } else {
        8192
    }
}

pub struct Writer {
    fd: i32,
    buf: Vec<u8>,
    pos: usize,
}

impl Writer {
    pub fn new(fd: i32) -> Writer {
        Writer { fd, buf: vec![0u8; stdio_buffer_size(fd)], pos: 0 }
    }

    /// putc: store one byte; write the buffer out first when it is full.
    #[inline(never)]
    pub fn putc(&mut self, c: u8) -> std::io::Result<()> {
        if self.pos == self.buf.len() {
            self.flush()?;
        }
        // SAFETY: pos < buf.len() after the flush above.
        unsafe { *self.buf.get_unchecked_mut(self.pos) = c };
        self.pos += 1;
        Ok(())
    }

    /// fflush: write what is buffered (write(2) may be short: loop).
    #[inline(never)]
    pub fn flush(&mut self) -> std::io::Result<()> {
        let mut off = 0;
        while off < self.pos {
            // SAFETY: the range is inside buf.
            let n = unsafe {
                crate::sys::write(self.fd, self.buf.as_ptr().add(off) as *const libc::c_void, self.pos - off)
            };
            if n <= 0 {
                return Err(if n == 0 {
                    std::io::Error::from_raw_os_error(libc::EIO)
                } else {
                    std::io::Error::last_os_error()
                });
            }
            off += n as usize;
        }
        self.pos = 0;
        Ok(())
    }
}

pub struct Reader {
    fd: i32,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
}

impl Reader {
    pub fn new(fd: i32) -> Reader {
        Reader { fd, buf: vec![0u8; stdio_buffer_size(fd)], pos: 0, len: 0 }
    }

    /// getc: the next byte, refilling the buffer with one read(2) when it is
    /// empty; -1 at end of file.
    #[inline(never)]
    pub fn getc(&mut self) -> std::io::Result<i32> {
        if self.pos == self.len {
            // SAFETY: buf is writable for its length.
            let n = unsafe { crate::sys::read(self.fd, self.buf.as_mut_ptr() as *mut libc::c_void, self.buf.len()) };
            if n < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if n == 0 {
                return Ok(-1);
            }
            self.pos = 0;
            self.len = n as usize;
        }
        // SAFETY: pos < len <= buf.len().
        let c = unsafe { *self.buf.get_unchecked(self.pos) };
        self.pos += 1;
        Ok(c as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn putc_then_getc_round_trips_across_buffer_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let f = std::fs::File::create(&path).unwrap();
        let mut w = Writer::new(f.as_raw_fd());
        let n = w.buf.len() * 3 + 17;
        for i in 0..n {
            w.putc((i & 0x7f) as u8).unwrap();
        }
        w.flush().unwrap();
        drop(f);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), n as u64);
        let f = std::fs::File::open(&path).unwrap();
        let mut r = Reader::new(f.as_raw_fd());
        for i in 0..n {
            assert_eq!(r.getc().unwrap(), (i & 0x7f) as i32);
        }
        assert_eq!(r.getc().unwrap(), -1);
    }
}
