//! PostMark's block loops (`write_blocks`, `read_file`'s loop) over plain write()/read(),
//! or through a buffer that does what glibc's stdio does (PostMark's `buffering true`).

use std::os::fd::RawFd;

use super::io::{read_some, write_all};
use super::worker::{Params, Worker};

impl Worker {
    /// `write_blocks` / `fwrite_blocks`: `size` bytes of the source buffer in
    /// write-block pieces, then close. Buffered: through the stdio-like buffer.
    /// With verify the bytes come from the file's image (from index `base`), else from
    /// PostMark's source buffer (`base` 0).
    #[inline]
    pub(super) fn write_blocks(&mut self, p: &Params, fd: RawFd, size: usize, base: usize) -> std::io::Result<()> {
        let res: std::io::Result<()> = (|| {
            let mut off = base;
            let mut i = size;
            while i >= p.wbs {
                self.out(p, fd, off, p.wbs)?;
                i -= p.wbs;
                off += p.wbs;
            }
            if i > 0 {
                self.out(p, fd, off, i)?;
            }
            if p.buffering && self.sfill > 0 {
                let n = self.sfill;
                self.sfill = 0;
                write_all(fd, &self.sbuf[..n])?;
            }
            Ok(())
        })();
        self.sfill = 0;
        // SAFETY: we own fd.
        let rc = unsafe { crate::sys::close(fd) };
        res?;
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// One fwrite()/write() of source[off..off+len]. The buffered path follows
    /// glibc's `_IO_new_file_xsputn`: fill the buffer; when data is left over,
    /// flush it, write whole buffer-sized blocks directly, buffer the rest.
    #[inline]
    fn out(&mut self, p: &Params, fd: RawFd, off: usize, len: usize) -> std::io::Result<()> {
        let src: &[u8] = match &self.v {
            Some(v) => &v.img,
            None => &self.source,
        };
        if !p.buffering {
            return write_all(fd, &src[off..off + len]);
        }
        let cap = self.sbuf.len();
        let n = (cap - self.sfill).min(len);
        self.sbuf[self.sfill..self.sfill + n].copy_from_slice(&src[off..off + n]);
        self.sfill += n;
        let rest = len - n;
        if rest > 0 {
            write_all(fd, &self.sbuf[..self.sfill])?;
            self.sfill = 0;
            let direct = rest - rest % cap;
            let s = off + n;
            if direct > 0 {
                write_all(fd, &src[s..s + direct])?;
            }
            let tail = rest - direct;
            self.sbuf[..tail].copy_from_slice(&src[s + direct..s + direct + tail]);
            self.sfill = tail;
        }
        Ok(())
    }

    /// `read_file`'s loop: read-block pieces, then the remainder. Buffered: glibc's
    /// `_IO_file_xsgetn` (refill the buffer with one read of its size; requests of
    /// a buffer or more go straight to the caller's memory in whole blocks).
    /// Every piece lands in the read buffer, as in PostMark; with verify, the pieces
    /// land one after the other in the verify buffer instead, and the bytes
    /// delivered are returned (0 without verify).
    #[inline]
    pub(super) fn read_blocks(&mut self, p: &Params, fd: RawFd, size: usize) -> std::io::Result<usize> {
        let (dst, keep): (&mut [u8], bool) = match self.v.as_mut() {
            Some(v) => (&mut v.rimg[..], true),
            None => (&mut self.read_buf[..], false),
        };
        let mut at = 0usize;
        let mut i = size;
        if !p.buffering {
            while i >= p.rbs {
                let n = read_some(fd, &mut dst[at..at + p.rbs])?;
                if keep {
                    at += n;
                }
                i -= p.rbs;
            }
            if i > 0 {
                let n = read_some(fd, &mut dst[at..at + i])?;
                if keep {
                    at += n;
                }
            }
            return Ok(at);
        }
        let cap = self.sbuf.len();
        let (mut pos, mut end) = (0usize, 0usize);
        // Returns the bytes delivered (fewer at EOF).
        let mut fread = |want_total: usize, sbuf: &mut [u8], dst: &mut [u8]| -> std::io::Result<usize> {
            let mut want = want_total;
            let mut d = 0;
            while want > 0 {
                let have = end - pos;
                if want <= have {
                    dst[d..d + want].copy_from_slice(&sbuf[pos..pos + want]);
                    pos += want;
                    return Ok(d + want);
                }
                if have > 0 {
                    dst[d..d + have].copy_from_slice(&sbuf[pos..end]);
                    d += have;
                    want -= have;
                    pos = end;
                }
                if want < cap {
                    let n = read_some(fd, sbuf)?;
                    if n == 0 {
                        return Ok(d); // EOF
                    }
                    pos = 0;
                    end = n;
                } else {
                    let count = if cap >= 128 { want - want % cap } else { want };
                    let n = read_some(fd, &mut dst[d..d + count])?;
                    if n == 0 {
                        return Ok(d);
                    }
                    d += n;
                    want -= n;
                }
            }
            Ok(d)
        };
        let rbs = p.rbs;
        while i >= rbs {
            let n = fread(rbs, &mut self.sbuf, &mut dst[at..at + rbs])?;
            if keep {
                at += n;
            }
            i -= rbs;
        }
        if i > 0 {
            let n = fread(i, &mut self.sbuf, &mut dst[at..at + i])?;
            if keep {
                at += n;
            }
        }
        Ok(at)
    }
}
