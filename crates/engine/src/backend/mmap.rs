//! The mmap backend: each file mapped once (MAP_SHARED, the whole file) when the thread sets up,
//! and every request a memcpy between the mapping and the slot's buffer, as fio's mmap engine
//! does on a 64-bit machine. Nothing but the copy happens per request, unless asked:
//!
//! - `direct` (fio's direct=1 with ioengine=mmap): after each request, msync(MS_SYNC) of its
//!   pages and madvise(MADV_DONTNEED) over them, as fio does ("not really direct, but should
//!   drop the pages from the cache");
//! - `fsync`: msync(MS_SYNC) of the file's whole mapping (fio's sync of a mapped file);
//! - `persist` (fio's libpmem engine): every write is made durable before it completes: the
//!   written CPU cache lines are flushed and fenced, what libpmem does on DAX persistent memory
//!   (statx STATX_ATTR_DAX); the access family refuses a libpmem file that is not on DAX, as fio
//!   does.
//!
//! Mappings are advised as fio advises them when it maps a file: MADV_RANDOM for a random
//! pattern, MADV_SEQUENTIAL for a sequential one, then MADV_DONTNEED over the whole mapping
//! (no page of it is mapped into the process before the first request).

use std::os::fd::RawFd;

use super::{FileTable, IoBackend, IoReq};
use crate::error::{EngineError, Result};

/// statx attribute: the file is on DAX (direct access) persistent memory.
const STATX_ATTR_DAX: u64 = 0x0020_0000;

/// How writes are made durable before they complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persist {
    /// Not at all (fio's mmap engine): the page cache writes them back.
    No,
    /// CPU cache lines flushed and fenced (fio's libpmem engine on DAX persistent memory).
    CacheFlush,
}

/// How the backend maps and treats its files.
#[derive(Clone, Copy, Debug)]
pub struct MmapOptions {
    /// Map for writing too (the files were opened read-write).
    pub writable: bool,
    /// The access pattern is random (MADV_RANDOM), else sequential (MADV_SEQUENTIAL).
    pub random: bool,
    /// fio's direct=1: msync and MADV_DONTNEED each request's pages after it.
    pub direct: bool,
    pub persist: Persist,
}

struct Mapping {
    ptr: *mut u8,
    len: usize,
}

pub struct MmapBackend {
    maps: Vec<Mapping>,
    opts: MmapOptions,
    page: usize,
    pending: Option<(usize, IoReq, *mut u8)>,
}

// SAFETY: the mappings are owned by the backend and used by one thread at a time.
unsafe impl Send for MmapBackend {}

/// Whether the file is on DAX persistent memory (statx STATX_ATTR_DAX; false when not reported).
pub fn is_dax(fd: RawFd) -> bool {
    // SAFETY: statx fills the struct we pass; AT_EMPTY_PATH with "" stats fd itself.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::statx(fd, c"".as_ptr(), libc::AT_EMPTY_PATH, libc::STATX_BASIC_STATS, &mut stx) };
    r == 0 && stx.stx_attributes_mask & STATX_ATTR_DAX != 0 && stx.stx_attributes & STATX_ATTR_DAX != 0
}

impl MmapBackend {
    /// Maps every file of the table (its whole length), advised as fio advises it.
    pub fn new(files: FileTable, opts: MmapOptions) -> Result<Self> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let mut backend = MmapBackend { maps: Vec::with_capacity(files.len()), opts, page, pending: None };
        let prot = if opts.writable { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        for (i, &fd) in files.iter().enumerate() {
            // SAFETY: fstat on an open fd into a zeroed struct.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            if unsafe { crate::sys::fstat(fd, &mut st) } != 0 {
                return Err(EngineError::last_os(format!("mmap backend: fstat of file {i}")));
            }
            let len = st.st_size as usize;
            if len == 0 {
                return Err(EngineError::invalid("backend", format!("mmap: file {i} is empty, nothing to map")));
            }
            // SAFETY: a fresh shared mapping of an open file; unmapped in Drop.
            let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
            if ptr == libc::MAP_FAILED {
                let e = std::io::Error::last_os_error();
                let hint = if e.raw_os_error() == Some(libc::ENOMEM) {
                    format!(
                        " (each thread maps every file: {} files here; the kernel allows vm.max_map_count \
                         mappings per process: use fewer files or threads, or another backend)",
                        files.len()
                    )
                } else {
                    String::new()
                };
                return Err(EngineError::io(format!("mmap of file {i} ({len} bytes){hint}"), e));
            }
            backend.maps.push(Mapping { ptr: ptr as *mut u8, len });
            let advice = if opts.random { libc::MADV_RANDOM } else { libc::MADV_SEQUENTIAL };
            // SAFETY: advice over the mapping just made; errors only lose a hint.
            unsafe {
                libc::madvise(ptr, len, advice);
                libc::madvise(ptr, len, libc::MADV_DONTNEED);
            }
        }
        Ok(backend)
    }

    /// The pages holding [off, off + len) of mapping `m`: (page-aligned address, length).
    #[inline]
    fn pages(&self, m: &Mapping, off: usize, len: usize) -> (*mut libc::c_void, usize) {
        let start = off & !(self.page - 1);
        let end = (off + len).min(m.len);
        // SAFETY: start < m.len, inside the mapping.
        (unsafe { m.ptr.add(start) } as *mut libc::c_void, end - start)
    }

    #[inline]
    fn msync(&self, m: &Mapping, off: usize, len: usize) -> i64 {
        let (p, l) = self.pages(m, off, len);
        // SAFETY: a range of our own mapping.
        if unsafe { libc::msync(p, l, libc::MS_SYNC) } != 0 {
            return -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) as i64);
        }
        0
    }

    /// One request: the copy, then what the options ask for. Bytes moved, or a negative errno.
    #[inline]
    fn transfer(&self, req: IoReq, buf: *mut u8) -> i64 {
        let Some(m) = self.maps.get(req.file as usize) else { return -(libc::EBADF as i64) };
        let off = req.offset as usize;
        if off >= m.len {
            return 0; // at or past the end of the file, as pread reads nothing there
        }
        let len = (req.len as usize).min(m.len - off);
        if req.write && !self.opts.writable {
            return -(libc::EBADF as i64);
        }
        // SAFETY: [off, off + len) is inside the mapping; buf holds req.len >= len bytes; they do not overlap.
        unsafe {
            let at = m.ptr.add(off);
            if req.write {
                std::ptr::copy_nonoverlapping(buf as *const u8, at, len);
            } else {
                std::ptr::copy_nonoverlapping(at as *const u8, buf, len);
            }
        }
        if req.write {
            match self.opts.persist {
                Persist::No => {}
                // SAFETY: the range was just written, inside the mapping.
                Persist::CacheFlush => unsafe { flush_lines(m.ptr.add(off), len) },
            }
        }
        if self.opts.direct {
            let r = self.msync(m, off, len);
            if r < 0 {
                return r;
            }
            let (p, l) = self.pages(m, off, len);
            // SAFETY: a range of our own shared file mapping: its pages are dropped from the
            // process and read again from the file (the page cache) when touched.
            if unsafe { libc::madvise(p, l, libc::MADV_DONTNEED) } != 0 {
                return -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) as i64);
            }
        }
        len as i64
    }
}

/// Flush the CPU cache lines of [p, p + len) to memory and fence (persistence on DAX memory).
///
/// # Safety
/// The range must be mapped.
#[inline]
unsafe fn flush_lines(p: *mut u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_clflush, _mm_sfence};
        const LINE: usize = 64;
        let start = p as usize & !(LINE - 1);
        let end = p as usize + len;
        let mut a = start;
        while a < end {
            _mm_clflush(a as *const u8);
            a += LINE;
        }
        _mm_sfence();
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let page = 4096usize;
        let start = p as usize & !(page - 1);
        libc::msync(start as *mut libc::c_void, p as usize + len - start, libc::MS_SYNC);
    }
}

impl Drop for MmapBackend {
    fn drop(&mut self) {
        for m in &self.maps {
            // SAFETY: our own mappings, unmapped once.
            unsafe { libc::munmap(m.ptr as *mut libc::c_void, m.len) };
        }
    }
}

impl IoBackend for MmapBackend {
    #[inline]
    fn queue(&mut self, slot: usize, req: IoReq, buf: *mut u8) -> Result<()> {
        debug_assert!(self.pending.is_none(), "mmap has depth 1");
        self.pending = Some((slot, req, buf));
        Ok(())
    }

    #[inline]
    fn reap<F: FnMut(usize, i64)>(&mut self, _min: usize, mut done: F) -> Result<usize> {
        let Some((slot, req, buf)) = self.pending.take() else { return Ok(0) };
        done(slot, self.transfer(req, buf));
        Ok(1)
    }

    /// msync(MS_SYNC) of the file's whole mapping (fio's sync on a mapped file).
    fn fsync(&mut self, file: u32) -> Result<()> {
        let m = &self.maps[file as usize];
        // SAFETY: our own whole mapping.
        if unsafe { libc::msync(m.ptr as *mut libc::c_void, m.len, libc::MS_SYNC) } != 0 {
            return Err(EngineError::last_os("msync"));
        }
        if self.opts.persist == Persist::CacheFlush {
            // SAFETY: a fence has no preconditions.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                std::arch::x86_64::_mm_sfence()
            };
        }
        Ok(())
    }
}
