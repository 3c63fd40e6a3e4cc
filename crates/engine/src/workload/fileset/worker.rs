//! One thread's share of the fileset: its generator, file table, PostMark's file operations
//! and their data verification steps. Its block loops (plain or stdio-like) are in buffered.rs.

use std::os::fd::RawFd;

use super::counts::Counts;
use super::dirs::Dirs;
use super::io::read_some;
use super::rng::Mt1999;
use super::verify::FileVerify;
use crate::error::{EngineError, Result};

/// One slot of a thread's file table. `size == 0`: free (PostMark's convention).
#[derive(Clone, Copy, Default)]
pub(super) struct Slot {
    pub(super) size: u32,
    /// The thread's running create number (PostMark's `files_created` at the create).
    pub(super) num: u32,
    /// location index x max(subdirectories, 1) + subdirectory index.
    pub(super) dir: u32,
}

/// What a worker needs to know of the spec, copied so the hot loop reads plain fields.
#[derive(Clone, Copy)]
pub(super) struct Params {
    pub(super) low: u32,
    pub(super) high: u32,
    pub(super) rbs: usize,
    pub(super) wbs: usize,
    pub(super) subdirs: u32,
    pub(super) bias_read: i32,
    pub(super) bias_create: i32,
    pub(super) scale: u32,
    pub(super) buffering: bool,
    /// The stdio buffer size (st_blksize of the directory, as glibc takes it).
    pub(super) stdio_buf: usize,
    pub(super) nthreads: u64,
    /// Data verification: the checksum, the verify block, the job's seed (headers' `seed`).
    pub(super) verify: Option<crate::verify::Checksum>,
    pub(super) vblock: usize,
    pub(super) seed: u64,
}

/// One thread's share of the fileset: its generator, file table and buffers.
pub(super) struct Worker {
    pub(super) tid: u64,
    /// PostMark's `simultaneous` for this thread.
    pub(super) share: usize,
    pub(super) rng: Mt1999,
    pub(super) table: Vec<Slot>,
    /// PostMark's `file_allocated`.
    pub(super) allocated: usize,
    /// Every slot below this is in use (so a scan for a free slot may start here).
    pub(super) min_free: usize,
    pub(super) live: u64,
    /// PostMark's `files_created`: the running create number, names the files.
    pub(super) num: u32,
    pub(super) source: Vec<u8>,
    pub(super) read_buf: Vec<u8>,
    pub(super) sbuf: Vec<u8>,
    pub(super) sfill: usize,
    pub(super) path: [u8; 64],
    pub(super) c: Counts,
    /// Data verification state (None: verify off).
    pub(super) v: Option<Box<FileVerify>>,
}

impl Worker {
    pub(super) fn empty(tid: usize) -> Self {
        Worker {
            tid: tid as u64,
            share: 0,
            rng: Mt1999::new(0),
            table: Vec::new(),
            allocated: 0,
            min_free: 0,
            live: 0,
            num: 0,
            source: Vec::new(),
            read_buf: Vec::new(),
            sbuf: Vec::new(),
            sfill: 0,
            path: [0; 64],
            c: Counts::default(),
            v: None,
        }
    }

    /// PostMark's `cli_run` start: seed, fill the source buffer, empty table.
    pub(super) fn reset(&mut self, p: &Params, share: usize, seed: u32) {
        self.share = share;
        self.rng = Mt1999::new(seed);
        let n = (p.high as usize) << 1;
        self.source.clear();
        self.source.reserve_exact(n);
        for _ in 0..n {
            self.source.push(32 + self.rng.rnd(95) as u8);
        }
        self.read_buf = vec![0u8; p.rbs];
        self.sbuf = vec![0u8; p.stdio_buf];
        self.sfill = 0;
        self.table = vec![Slot::default(); share << 1];
        self.table.shrink_to_fit();
        self.allocated = 0;
        self.min_free = 0;
        self.live = 0;
        self.num = 0;
        self.c = Counts::default();
        self.v =
            p.verify.map(|algo| Box::new(FileVerify::new(algo, p.vblock, p.seed, self.tid as u32, p.high as usize)));
    }

    /// PostMark's `find_free_file`, with a scan that starts at the first slot that
    /// can be free (the same slot as PostMark's scan from 0).
    #[inline]
    pub(super) fn find_free(&mut self) -> Option<usize> {
        let n = self.table.len();
        if self.allocated < n && self.table[self.allocated].size == 0 {
            let s = self.allocated;
            self.allocated += 1;
            return Some(s);
        }
        let start = self.min_free;
        match self.table[start..].iter().position(|s| s.size == 0) {
            Some(off) => {
                let i = start + off;
                self.min_free = i + 1;
                self.allocated = i + 1;
                Some(i)
            }
            None => {
                self.min_free = n;
                None
            }
        }
    }

    /// PostMark's `find_used_file`: draw slots until one is in use.
    #[inline]
    pub(super) fn find_used(&mut self) -> Option<usize> {
        if self.live == 0 {
            return None; // PostMark would spin forever; it never gets here.
        }
        let n = self.table.len() as u32;
        loop {
            let i = self.rng.rnd(n) as usize;
            if self.table[i].size != 0 {
                return Some(i);
            }
        }
    }

    /// Builds the slot's name relative to its location into `self.path` (NUL-terminated).
    #[inline]
    pub(super) fn build_name(&mut self, p: &Params, slot: Slot) -> usize {
        let mut len = 0;
        if p.subdirs > 1 {
            self.path[0] = b's';
            len = 1 + put_u64(&mut self.path[1..], (slot.dir % p.subdirs) as u64);
            self.path[len] = b'/';
            len += 1;
        }
        let name = (slot.num as u64 - 1) * p.nthreads + self.tid + 1;
        len += put_u64(&mut self.path[len..], name);
        self.path[len] = 0;
        len
    }

    #[inline]
    pub(super) fn open_slot(&mut self, p: &Params, dirs: &Dirs, slot: Slot, flags: i32) -> Result<RawFd> {
        self.build_name(p, slot);
        let dfd = dirs.fds[(slot.dir / p.subdirs.max(1)) as usize];
        // SAFETY: path is NUL-terminated; dfd is an open directory.
        let fd = unsafe {
            crate::nofollow::openat(dfd, self.path.as_ptr() as *const libc::c_char, flags | libc::O_CLOEXEC, 0o644)
        };
        if fd < 0 {
            return Err(self.os_err("open", dirs, slot));
        }
        Ok(fd)
    }

    pub(super) fn os_err(&self, what: &str, dirs: &Dirs, slot: Slot) -> EngineError {
        let err = std::io::Error::last_os_error();
        EngineError::io(format!("{what} {}", self.display_path(dirs, slot)), err)
    }

    /// The full path of the name last built (for error messages only).
    pub(super) fn display_path(&self, dirs: &Dirs, slot: Slot) -> String {
        let end = self.path.iter().position(|&b| b == 0).unwrap_or(0);
        let loc = (slot.dir / dirs.subdirs.max(1)) as usize;
        let base = dirs.paths.get(loc).map(|p| p.display().to_string()).unwrap_or_default();
        format!("{base}/{}", String::from_utf8_lossy(&self.path[..end]))
    }

    /// PostMark's `create_file`: slot, name (location, subdirectory), size, then write it.
    /// Returns the bytes written, or None when the table is full.
    #[inline]
    pub(super) fn create(&mut self, p: &Params, dirs: &Dirs) -> Result<Option<u64>> {
        let Some(i) = self.find_free() else { return Ok(None) };
        let loc =
            if dirs.index.len() > 1 { dirs.index[self.rng.rnd(dirs.index.len() as u32) as usize] as u32 } else { 0 };
        let sub = if p.subdirs > 1 { self.rng.rnd(p.subdirs) } else { 0 };
        self.num = self
            .num
            .checked_add(1)
            .ok_or_else(|| EngineError::invalid("files", "more than 2^32 creates in one thread"))?;
        let size = p.low + self.rng.rnd(p.high - p.low);
        let slot = Slot { size, num: self.num, dir: loc * p.subdirs.max(1) + sub };
        self.table[i] = slot;
        self.live += 1;
        let flags =
            if p.buffering { libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC } else { libc::O_RDWR | libc::O_CREAT };
        let fd = self.open_slot(p, dirs, slot, flags)?;
        let base = if self.v.is_some() { self.verify_write(p, slot, 0, size as usize) } else { 0 };
        self.write_blocks(p, fd, size as usize, base).map_err(|e| self.io_ctx(e, "write", dirs, slot))?;
        self.c.bytes_written += size as u64;
        Ok(Some(size as u64))
    }

    /// PostMark's `delete_file`.
    #[inline]
    pub(super) fn delete(&mut self, p: &Params, dirs: &Dirs, i: usize) -> Result<bool> {
        let slot = self.table[i];
        if slot.size == 0 {
            return Ok(false);
        }
        self.build_name(p, slot);
        let dfd = dirs.fds[(slot.dir / p.subdirs.max(1)) as usize];
        // SAFETY: path is NUL-terminated; dfd is an open directory.
        if unsafe { crate::sys::unlinkat(dfd, self.path.as_ptr() as *const libc::c_char, 0) } != 0 {
            return Err(self.os_err("unlink", dirs, slot));
        }
        self.table[i].size = 0;
        self.live -= 1;
        if i < self.min_free {
            self.min_free = i;
        }
        Ok(true)
    }

    /// PostMark's `read_file`: the whole file in read-block requests.
    #[inline]
    pub(super) fn read(&mut self, p: &Params, dirs: &Dirs, i: usize) -> Result<u64> {
        let slot = self.table[i];
        let fd = self.open_slot(p, dirs, slot, libc::O_RDONLY)?;
        let res = self.read_blocks(p, fd, slot.size as usize);
        // SAFETY: we own fd.
        unsafe { crate::sys::close(fd) };
        let got = res.map_err(|e| self.io_ctx(e, "read", dirs, slot))?;
        if self.v.is_some() {
            self.verify_read(p, dirs, slot, got);
        }
        self.c.bytes_read += slot.size as u64;
        self.c.read += 1;
        Ok(slot.size as u64)
    }

    /// PostMark's `append_file`: below size_high, append RND(high - size) + 1 bytes.
    #[inline]
    pub(super) fn append(&mut self, p: &Params, dirs: &Dirs, i: usize) -> Result<Option<u64>> {
        let slot = self.table[i];
        if slot.size >= p.high {
            return Ok(None);
        }
        let flags =
            if p.buffering { libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND } else { libc::O_RDWR | libc::O_APPEND };
        let fd = self.open_slot(p, dirs, slot, flags)?;
        let block = self.rng.rnd(p.high - slot.size) + 1;
        let base = if self.v.is_some() { self.verify_write(p, slot, slot.size as u64, block as usize) } else { 0 };
        self.write_blocks(p, fd, block as usize, base).map_err(|e| self.io_ctx(e, "append to", dirs, slot))?;
        self.table[i].size += block;
        self.c.bytes_written += block as u64;
        self.c.appended += 1;
        Ok(Some(block as u64))
    }

    pub(super) fn io_ctx(&self, e: std::io::Error, what: &str, dirs: &Dirs, slot: Slot) -> EngineError {
        EngineError::io(format!("{what} {}", self.display_path(dirs, slot)), e)
    }
}

// ---- data verification (verify.rs has the file image and its check) ----------------------

impl Worker {
    /// The file's number: its PostMark name (unique over the threads); the write number of its blocks.
    #[inline]
    pub(super) fn file_number(&self, p: &Params, slot: Slot) -> u64 {
        (slot.num as u64 - 1) * p.nthreads + self.tid + 1
    }

    /// Before a write of `n` bytes at `fo` of `slot`: the image to copy from, and where in it.
    #[inline]
    pub(super) fn verify_write(&mut self, p: &Params, slot: Slot, fo: u64, n: usize) -> usize {
        let file = self.file_number(p, slot);
        match self.v.as_mut() {
            Some(v) => v.prepare_write(fo, n, file),
            None => 0,
        }
    }

    /// After the whole of `slot` was read (`got` bytes into the verify buffer; its
    /// name still built in `self.path`): check it, and keep its path if it failed.
    pub(super) fn verify_read(&mut self, p: &Params, dirs: &Dirs, slot: Slot, got: usize) {
        let file = self.file_number(p, slot);
        let Some(v) = self.v.as_mut() else { return };
        let kept = v.checker.kept.len();
        v.check_file(got, slot.size as u64, file);
        if v.checker.kept.len() > kept {
            let path = self.display_path(dirs, slot);
            if let Some(v) = self.v.as_mut() {
                v.paths.push((file as u32, path));
            }
        }
    }

    /// The verify phase's re-read of one live file (plain reads of up to 1 MiB); returns the bytes read.
    pub(super) fn reread(&mut self, p: &Params, dirs: &Dirs, i: usize) -> crate::error::Result<u64> {
        let slot = self.table[i];
        let fd = self.open_slot(p, dirs, slot, libc::O_RDONLY)?;
        let size = slot.size as usize;
        let mut got = 0usize;
        let res: std::io::Result<()> = (|| {
            let v = self.v.as_mut().expect("verify is on");
            while got < size {
                let want = (size - got).min(1 << 20);
                let n = read_some(fd, &mut v.rimg[got..got + want])?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            Ok(())
        })();
        // SAFETY: we own fd.
        unsafe { crate::sys::close(fd) };
        res.map_err(|e| self.io_ctx(e, "verify: read", dirs, slot))?;
        self.verify_read(p, dirs, slot, got);
        Ok(got as u64)
    }
}

/// Decimal digits of v into out; returns their count.
#[inline]
pub(super) fn put_u64(out: &mut [u8], mut v: u64) -> usize {
    let mut tmp = [0u8; 20];
    let mut n = 0;
    loop {
        tmp[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for k in 0..n {
        out[k] = tmp[n - 1 - k];
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_decimal() {
        let mut buf = [0u8; 24];
        let n = put_u64(&mut buf, 0);
        assert_eq!(&buf[..n], b"0");
        let n = put_u64(&mut buf, 18446744073709551615);
        assert_eq!(&buf[..n], b"18446744073709551615");
    }

    #[test]
    fn free_slot_search_matches_postmark() {
        // PostMark's find_free_file, literally, against the hinted version.
        fn reference(table: &[u32], allocated: &mut usize) -> Option<usize> {
            if *allocated < table.len() && table[*allocated] == 0 {
                *allocated += 1;
                return Some(*allocated - 1);
            }
            let i = table.iter().position(|&t| t == 0)?;
            *allocated = i + 1;
            Some(i)
        }
        let mut w = Worker::empty(0);
        w.table = vec![Slot::default(); 64];
        let mut ref_table = vec![0u32; 64];
        let mut ref_alloc = 0usize;
        let mut rng = Mt1999::new(3);
        for _ in 0..20_000 {
            if rng.rnd(2) == 0 {
                let a = w.find_free();
                let b = reference(&ref_table, &mut ref_alloc);
                assert_eq!(a, b);
                if let Some(i) = a {
                    w.table[i].size = 1;
                    ref_table[i] = 1;
                    w.live += 1;
                }
            } else {
                let i = rng.rnd(64) as usize;
                if w.table[i].size != 0 {
                    w.table[i].size = 0;
                    w.live -= 1;
                    w.min_free = w.min_free.min(i);
                    ref_table[i] = 0;
                }
            }
        }
    }
}
