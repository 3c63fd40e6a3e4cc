//! The image a disk model serves: the data of the modelled disk, kept in a file and read and written
//! with direct I/O, so that it dirties none of the host's page cache.
//!
//! The daemon is in the I/O path of the filesystem on the model: that filesystem's dirty pages reach
//! the modelled disk only through it. Buffered writes to the image would be throttled by the kernel's
//! dirty limits, which count those same pages of the filesystem above: with a small dirty limit (a
//! page-cache limit's, 20% of it) the daemon's writes waited on pages only it could clean, and its
//! replies stalled for up to 30 s. A process marked as an I/O flusher (prctl PR_SET_IO_FLUSHER) is
//! exempt, but that needs CAP_SYS_RESOURCE, which a container's root may lack; direct I/O needs
//! nothing. Requests not aligned to [`ALIGN`] are read, patched and written back whole blocks
//! (the daemon serves one request at a time, so nothing interleaves). Where the file refuses
//! direct I/O (tmpfs) or a block would reach past the image's end, the buffered file serves it.
//!
//! Or the image is kept in the daemon's memory ([`Image::memory`]): an anonymous mapping of the
//! image's size, reserved but not committed, so that only what is written takes memory (a page
//! never written reads as zeros without taking any). A write the drive's cache takes in a fraction
//! of a millisecond then costs a copy, not a write to the host's disk: the host's disk is not
//! always faster than the modelled drive's interface (a 512 KiB direct write to a virtual disk took
//! as long as the 300 MB/s SATA link the model times it at, and each hiccup made replies late).
//!
//! An image in memory can be committed at once ([`Image::populate`]): every page written before the
//! first request, and kept (a discard zeroes it in place instead of giving it back). A virtual
//! machine's first write to a page can cost far more than later ones: here, whose hypervisor takes
//! back the pages the guest frees (free page reporting), copying 640 KiB into new pages ran at
//! 0.9 GB/s (p99 2 ms a copy) against 12 GB/s into pages already written (p99 0.1 ms), and a
//! filesystem's first pass over the image (a copy's 1.9 GB into a new filesystem) made the drive's
//! replies late by 10-19 ms at p99: each slow copy held the replies queued behind it.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::{AsRawFd, RawFd};
use std::path::Path;

/// The block size of direct I/O: a multiple of any logical block size the host's file may have.
pub const ALIGN: u64 = 4096;

/// A buffer aligned for direct I/O, grown (rarely: to the largest request seen) and never shrunk: a
/// vector one block longer than needed, used from its first aligned byte.
struct Bounce {
    mem: Vec<u8>,
}

impl Bounce {
    fn new() -> Self {
        Bounce { mem: Vec::new() }
    }

    fn get(&mut self, len: usize) -> &mut [u8] {
        let align = ALIGN as usize;
        if self.mem.len() < len + align {
            self.mem = vec![0u8; (len + align).next_power_of_two()];
        }
        let at = self.mem.as_ptr().align_offset(align);
        &mut self.mem[at..at + len]
    }
}

/// The image: a file (direct I/O where the file takes it, the buffered file otherwise), or memory.
pub struct Image {
    buffered: Option<File>,
    direct: Option<File>,
    memory: Option<Memory>,
    size: u64,
    bounce: Bounce,
}

/// An anonymous private mapping of the image's size (MAP_NORESERVE): the image kept in memory.
struct Memory {
    ptr: *mut u8,
    len: usize,
    /// Every page committed (populate): a discard zeroes pages in place and keeps them.
    committed: bool,
}

impl Memory {
    fn new(len: usize) -> io::Result<Memory> {
        // SAFETY: a fresh anonymous mapping; the kernel picks the address.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len.max(1),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Memory { ptr: ptr as *mut u8, len, committed: false })
    }

    /// Write every page once, so that no request pays a page's first write.
    fn populate(&mut self) -> io::Result<()> {
        // SAFETY: the whole mapping, which we own; MADV_POPULATE_WRITE faults its pages in writable.
        let r = unsafe { libc::madvise(self.ptr as *mut libc::c_void, self.len.max(1), libc::MADV_POPULATE_WRITE) };
        if r != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINVAL) {
                return Err(e);
            }
            // A kernel before 5.14: write one byte of each page (a zero, which it already reads as).
            for at in (0..self.len).step_by(4096) {
                // SAFETY: `at` lies inside the mapping; a volatile write is not optimised away.
                unsafe { std::ptr::write_volatile(self.ptr.add(at), 0) };
            }
        }
        self.committed = true;
        Ok(())
    }

    fn slice(&mut self, offset: u64, len: usize) -> io::Result<&mut [u8]> {
        let end = offset.checked_add(len as u64).filter(|&e| e <= self.len as u64);
        if end.is_none() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: [offset, offset + len) lies inside the mapping, which lives as long as self.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.add(offset as usize), len) })
    }

    /// Zero `[offset, offset + len)`, giving whole pages back to the kernel (they read as zeros).
    fn zero(&mut self, offset: u64, len: u64) -> io::Result<()> {
        if self.committed {
            self.slice(offset, len as usize)?.fill(0);
            return Ok(());
        }
        let page = 4096u64;
        let (first, last) = (offset.div_ceil(page) * page, (offset + len) / page * page);
        if first < last {
            // SAFETY: whole pages inside the mapping; MADV_DONTNEED on a private anonymous
            // mapping makes them read as zeros.
            unsafe {
                libc::madvise(
                    self.ptr.add(first as usize) as *mut libc::c_void,
                    (last - first) as usize,
                    libc::MADV_DONTNEED,
                )
            };
            self.slice(offset, (first - offset) as usize)?.fill(0);
            self.slice(last, (offset + len - last) as usize)?.fill(0);
        } else {
            self.slice(offset, len as usize)?.fill(0);
        }
        Ok(())
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new(), unmapped once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len.max(1)) };
    }
}

// SAFETY: the mapping is owned by the Memory value and used by one thread at a time.
unsafe impl Send for Memory {}

impl Image {
    /// Open the image for reading and writing; direct I/O when its filesystem supports it.
    pub fn open(path: &Path) -> io::Result<Image> {
        let buffered = OpenOptions::new().read(true).write(true).open(path)?;
        let size = buffered.metadata()?.len();
        let direct = OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(path).ok();
        Ok(Image { buffered: Some(buffered), direct, memory: None, size, bounce: Bounce::new() })
    }

    /// An image of `size` bytes kept in memory, all zeros at first; only what is written takes memory
    /// (until [`Image::populate`] commits it all).
    pub fn memory(size: u64) -> io::Result<Image> {
        let len = usize::try_from(size).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        let memory = Some(Memory::new(len)?);
        Ok(Image { buffered: None, direct: None, memory, size, bounce: Bounce::new() })
    }

    /// Commit an image in memory: every page written now, and kept from then on (a discard zeroes
    /// pages in place), so that no request pays for a page's first write. Takes the image's size of
    /// memory. A file image is left as it is.
    pub fn populate(&mut self) -> io::Result<()> {
        match self.memory.as_mut() {
            Some(m) => m.populate(),
            None => Ok(()),
        }
    }

    /// Whether the image is kept in memory.
    pub fn in_memory(&self) -> bool {
        self.memory.is_some()
    }

    /// Discard or zero `[offset, offset + len)` (fallocate's punch-hole and zero-range `mode`s).
    pub fn zero_range(&mut self, offset: u64, len: u64, mode: i32) -> io::Result<()> {
        if let Some(m) = self.memory.as_mut() {
            let len = len.min(self.size.saturating_sub(offset));
            return m.zero(offset, len);
        }
        let fd = self.buffered.as_ref().map(|f| f.as_raw_fd()).expect("a file image");
        // SAFETY: fallocate on the fd we own, with the kernel's own mode and range.
        if unsafe { libc::fallocate(fd, mode, offset as i64, len as i64) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The image's length in bytes.
    pub fn len(&self) -> u64 {
        self.size
    }

    /// Whether the image is empty.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The buffered file's descriptor, or None for an image in memory.
    pub fn fd(&self) -> Option<RawFd> {
        self.buffered.as_ref().map(|f| f.as_raw_fd())
    }

    /// The whole blocks holding `[offset, offset + len)`, or None when the buffered file must serve it.
    fn span(&self, offset: u64, len: u64) -> Option<(u64, u64)> {
        let start = offset / ALIGN * ALIGN;
        let end = (offset + len).div_ceil(ALIGN) * ALIGN;
        (self.direct.is_some() && end <= self.size).then_some((start, end))
    }

    /// Read `buf.len()` bytes at `offset`.
    pub fn read_at(&mut self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if let Some(m) = self.memory.as_mut() {
            buf.copy_from_slice(m.slice(offset, buf.len())?);
            return Ok(());
        }
        let Some((start, end)) = self.span(offset, buf.len() as u64) else {
            return self.buffered.as_ref().expect("a file image").read_exact_at(buf, offset);
        };
        let file = self.direct.as_ref().expect("span() checked it");
        let block = self.bounce.get((end - start) as usize);
        file.read_exact_at(block, start)?;
        let at = (offset - start) as usize;
        buf.copy_from_slice(&block[at..at + buf.len()]);
        Ok(())
    }

    /// Write `data` at `offset`.
    pub fn write_at(&mut self, data: &[u8], offset: u64) -> io::Result<()> {
        if let Some(m) = self.memory.as_mut() {
            m.slice(offset, data.len())?.copy_from_slice(data);
            return Ok(());
        }
        let Some((start, end)) = self.span(offset, data.len() as u64) else {
            return self.buffered.as_ref().expect("a file image").write_all_at(data, offset);
        };
        let file = self.direct.as_ref().expect("span() checked it");
        let whole = start == offset && end == offset + data.len() as u64;
        let block = self.bounce.get((end - start) as usize);
        if !whole {
            file.read_exact_at(block, start)?; // the blocks' other bytes, to write back unchanged
        }
        let at = (offset - start) as usize;
        block[at..at + data.len()].copy_from_slice(data);
        file.write_all_at(block, start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(tag: &str, size: u64) -> (std::path::PathBuf, Image) {
        let dir = std::env::temp_dir().join(format!("fsmeter-image-test-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("disk.img");
        let f = File::create(&path).unwrap();
        f.set_len(size).unwrap();
        (path.clone(), Image::open(&path).unwrap())
    }

    #[test]
    fn unaligned_and_aligned_writes_read_back_and_leave_their_neighbours() {
        let (path, mut img) = image("rw", 64 << 10);
        let pattern: Vec<u8> = (0..16384u32).map(|i| (i % 251) as u8).collect();
        img.write_at(&pattern, 8192).unwrap(); // whole blocks
        img.write_at(&[7u8; 1000], 9000).unwrap(); // inside them, unaligned
        img.write_at(&[9u8; 512], 512).unwrap(); // a sector of the first block
        let mut back = vec![0u8; 16384];
        img.read_at(&mut back, 8192).unwrap();
        let mut want = pattern.clone();
        want[9000 - 8192..10000 - 8192].fill(7);
        assert_eq!(back, want);
        let mut first = vec![1u8; 1536];
        img.read_at(&mut first, 0).unwrap();
        assert_eq!(&first[..512], &[0u8; 512][..]);
        assert_eq!(&first[512..1024], &[9u8; 512][..]);
        assert_eq!(&first[1024..], &[0u8; 512][..]);
        // What a buffered reader of the file sees (the loop device's view is the daemon's own).
        let whole = std::fs::read(&path).unwrap();
        assert_eq!(&whole[8192..8192 + 16384], &want[..]);
        assert_eq!(whole.len(), 64 << 10); // nothing written past the end
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn an_image_in_memory_reads_back_what_was_written_and_zeros_elsewhere() {
        let mut img = Image::memory(1 << 30).unwrap(); // reserved, not committed
        assert!(img.in_memory() && img.len() == 1 << 30 && img.fd().is_none());
        let pattern: Vec<u8> = (0..20000u32).map(|i| (i % 251) as u8).collect();
        img.write_at(&pattern, (1 << 29) + 100).unwrap();
        let mut back = vec![0u8; 20000];
        img.read_at(&mut back, (1 << 29) + 100).unwrap();
        assert_eq!(back, pattern);
        let mut far = vec![1u8; 4096];
        img.read_at(&mut far, 1 << 20).unwrap();
        assert_eq!(far, vec![0u8; 4096]);
        // Zero a range cutting pages at both ends: whole pages go back, the edges are zeroed.
        img.zero_range((1 << 29) + 1000, 10000, libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE).unwrap();
        img.read_at(&mut back, (1 << 29) + 100).unwrap();
        let mut want = pattern.clone();
        want[900..10900].fill(0);
        assert_eq!(back, want);
        // Past the end: refused, not a crash.
        assert!(img.read_at(&mut far, (1 << 30) - 100).is_err());
        assert!(img.write_at(&far, 1 << 30).is_err());
    }

    /// How many of an image's pages in memory are resident (mincore), and how many pages it has.
    fn residency(img: &Image) -> (usize, usize) {
        let m = img.memory.as_ref().unwrap();
        // SAFETY: sysconf with a constant name.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let mut vec = vec![0u8; m.len.div_ceil(page)];
        // SAFETY: the mapping is page-aligned and `vec` has one byte per page.
        assert_eq!(unsafe { libc::mincore(m.ptr as *mut libc::c_void, m.len, vec.as_mut_ptr()) }, 0);
        (vec.iter().filter(|&&b| b & 1 == 1).count(), vec.len())
    }

    fn resident_pages(img: &Image) -> usize {
        residency(img).0
    }

    #[test]
    fn a_populated_image_in_memory_is_resident_and_stays_so_through_a_discard() {
        let size = 8u64 << 20;
        let mut img = Image::memory(size).unwrap();
        assert_eq!(resident_pages(&img), 0); // reserved, nothing committed
        img.populate().unwrap();
        let (resident, all) = residency(&img);
        assert_eq!(resident, all);
        let pattern: Vec<u8> = (0..3 * 4096u32).map(|i| (i % 251) as u8 + 1).collect();
        img.write_at(&pattern, 4096).unwrap();
        // A discard of whole pages zeroes them in place: still resident, reading zeros.
        img.zero_range(0, size, libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE).unwrap();
        assert_eq!(resident_pages(&img), all);
        let mut back = vec![1u8; pattern.len()];
        img.read_at(&mut back, 4096).unwrap();
        assert_eq!(back, vec![0u8; pattern.len()]);
        // Without populate, the same discard gives the pages back.
        let mut loose = Image::memory(size).unwrap();
        loose.write_at(&pattern, 4096).unwrap();
        assert!(resident_pages(&loose) >= 1); // 3 pages of 4 KiB (more with huge pages, fewer with 64 KiB)
        loose.zero_range(0, size, libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE).unwrap();
        assert_eq!(resident_pages(&loose), 0);
    }

    #[test]
    fn a_request_at_the_end_of_an_image_not_a_whole_block_long_stays_inside_it() {
        let (path, mut img) = image("tail", 8192 + 512);
        img.write_at(&[5u8; 512], 8192).unwrap();
        let mut back = [0u8; 512];
        img.read_at(&mut back, 8192).unwrap();
        assert_eq!(back, [5u8; 512]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 8192 + 512);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
