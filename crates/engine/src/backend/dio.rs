//! What O_DIRECT really needs on a file's filesystem, and whether the page
//! cache was used anyway.
//!
//! A filesystem may serve an O_DIRECT request it cannot do directly through the
//! page cache instead of failing it: btrfs does so for requests not aligned to
//! its sector size (4 KiB), so a 512-byte O_DIRECT read there is a buffered
//! read. The alignment is therefore taken from the kernel where it says
//! (statx STATX_DIOALIGN, Linux 6.1+; ext4, xfs, f2fs and block devices report
//! it), else from what the filesystem is known to need: btrfs its sector size
//! (statfs f_bsize), tmpfs 512 bytes (its O_DIRECT, Linux 6.6+, is its page
//! cache itself: it takes any size and offset, and there is no device to
//! bypass the cache for), others the logical block size of the device under
//! them, and without a device the filesystem's block size.

use std::os::fd::RawFd;

/// statx mask bit for stx_dio_mem_align / stx_dio_offset_align.
const STATX_DIOALIGN: u32 = 0x2000;
const BTRFS_SUPER_MAGIC: i64 = 0x9123_683E;
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// The alignment O_DIRECT needs on a file, and where that figure came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DioAlign {
    /// File offsets and request lengths must be multiples of this.
    pub offset: u64,
    /// Buffer addresses must be multiples of this.
    pub mem: u64,
    pub source: &'static str,
}

/// What is known about a file, gathered by `dio_align` (kept apart so the
/// choice can be tested without a filesystem).
#[derive(Clone, Copy, Debug, Default)]
pub struct FsFacts {
    /// statx STATX_DIOALIGN: (offset, mem), when the kernel reports it.
    pub statx: Option<(u64, u64)>,
    /// statfs f_type.
    pub fs_magic: i64,
    /// statfs f_bsize.
    pub block_size: u64,
    /// Logical block size of the block device holding the filesystem, if any.
    pub device_block: Option<u64>,
}

/// The alignment rule of the module comment, on gathered facts.
pub fn choose(f: &FsFacts) -> DioAlign {
    if let Some((offset, mem)) = f.statx {
        return DioAlign { offset, mem: mem.max(1), source: "statx STATX_DIOALIGN" };
    }
    let bs = f.block_size.max(512);
    if f.fs_magic == BTRFS_SUPER_MAGIC {
        return DioAlign { offset: bs, mem: bs, source: "btrfs sector size" };
    }
    if f.fs_magic == TMPFS_MAGIC {
        // 512: the smallest figure any device has, which the access family's checks start from.
        return DioAlign { offset: 512, mem: 512, source: "tmpfs: its O_DIRECT is its page cache, any size fits" };
    }
    match f.device_block {
        Some(b) if b >= 512 => DioAlign { offset: b, mem: b, source: "device logical block size" },
        _ => DioAlign { offset: bs, mem: bs, source: "filesystem block size" },
    }
}

/// Gathers the facts about an open file.
pub fn facts(fd: RawFd) -> FsFacts {
    let mut f = FsFacts::default();
    // SAFETY: statx and fstatfs fill the structs we pass; AT_EMPTY_PATH with "" stats fd itself.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::statx(fd, c"".as_ptr(), libc::AT_EMPTY_PATH, STATX_DIOALIGN, &mut stx) };
    if r == 0 && stx.stx_mask & STATX_DIOALIGN != 0 && stx.stx_dio_offset_align > 0 {
        f.statx = Some((stx.stx_dio_offset_align as u64, stx.stx_dio_mem_align as u64));
    }
    let mut sfs: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(fd, &mut sfs) } == 0 {
        f.fs_magic = sfs.f_type as i64;
        f.block_size = sfs.f_bsize as u64;
    }
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { crate::sys::fstat(fd, &mut st) } == 0 {
        let (maj, min) = (libc::major(st.st_dev), libc::minor(st.st_dev));
        // A partition has no queue/ of its own: its disk's is one level up.
        for rel in ["queue/logical_block_size", "../queue/logical_block_size"] {
            let p = format!("/sys/dev/block/{maj}:{min}/{rel}");
            if let Some(b) = std::fs::read_to_string(&p).ok().and_then(|s| s.trim().parse::<u64>().ok()) {
                f.device_block = Some(b);
                break;
            }
        }
    }
    f
}

/// The O_DIRECT alignment of an open file.
pub fn dio_align(fd: RawFd) -> DioAlign {
    choose(&facts(fd))
}

/// statx mask bit for the atomic write unit (Linux 6.11+).
const STATX_WRITE_ATOMIC: u32 = 0x1_0000;

/// The untorn-write unit of an open file: (stx_atomic_write_unit_min, stx_atomic_write_unit_max) in
/// bytes, from statx STATX_WRITE_ATOMIC; (0, 0) when the kernel or the filesystem reports none.
/// The struct is read by offset (0xa8, 0xac: the kernel's uapi layout), as the C library's may predate it.
pub fn atomic_unit(fd: RawFd) -> (u32, u32) {
    // 256 bytes: struct statx.
    let mut b = [0u64; 32];
    // SAFETY: statx fills at most sizeof(struct statx) = 256 bytes of `b`; AT_EMPTY_PATH stats fd itself.
    let r = unsafe {
        libc::syscall(libc::SYS_statx, fd, c"".as_ptr(), libc::AT_EMPTY_PATH, STATX_WRITE_ATOMIC, b.as_mut_ptr())
    };
    let mask = b[0] as u32;
    if r != 0 || mask & STATX_WRITE_ATOMIC == 0 {
        return (0, 0);
    }
    let w = b[0xa8 / 8];
    (w as u32, (w >> 32) as u32)
}

/// A filesystem's usual name, from its statfs magic (hex when unknown).
pub fn fs_name(fd: RawFd) -> String {
    let mut sfs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatfs fills the struct we pass.
    if unsafe { libc::fstatfs(fd, &mut sfs) } != 0 {
        return "an unknown filesystem".into();
    }
    match sfs.f_type as i64 {
        TMPFS_MAGIC => "tmpfs".into(),
        BTRFS_SUPER_MAGIC => "btrfs".into(),
        0xEF53 => "ext4".into(),
        0x5846_5342 => "xfs".into(),
        0xF2F5_2010 => "f2fs".into(),
        0x6969 => "nfs".into(),
        m => format!("the filesystem of type {m:#x}"),
    }
}

/// Pages of the first `len` bytes of an open file that are in the page cache
/// (mincore over a read-only shared mapping; nothing is read).
pub fn resident_pages(fd: RawFd, len: u64) -> std::io::Result<u64> {
    resident_pages_in(fd, 0, len)
}

/// Pages of [start, end) of the file in the page cache (pages that start inside the range).
pub fn resident_pages_in(fd: RawFd, start: u64, end: u64) -> std::io::Result<u64> {
    let len = end;
    if end <= start {
        return Ok(0);
    }
    // SAFETY: a read-only shared mapping we never touch, unmapped before returning.
    let addr = unsafe { libc::mmap(std::ptr::null_mut(), len as usize, libc::PROT_READ, libc::MAP_SHARED, fd, 0) };
    if addr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let mut vec = vec![0u8; len.div_ceil(page) as usize];
    let r = unsafe { libc::mincore(addr, len as usize, vec.as_mut_ptr()) };
    let err = std::io::Error::last_os_error();
    unsafe { libc::munmap(addr, len as usize) };
    if r != 0 {
        return Err(err);
    }
    Ok(vec[start.div_ceil(page) as usize..].iter().filter(|&&b| b & 1 != 0).count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_figure_wins_when_reported() {
        let f =
            FsFacts { statx: Some((512, 4)), fs_magic: BTRFS_SUPER_MAGIC, block_size: 4096, device_block: Some(4096) };
        assert_eq!(choose(&f), DioAlign { offset: 512, mem: 4, source: "statx STATX_DIOALIGN" });
    }

    #[test]
    fn btrfs_without_statx_needs_its_sector_size_not_the_devices_block() {
        let f = FsFacts { statx: None, fs_magic: BTRFS_SUPER_MAGIC, block_size: 4096, device_block: Some(512) };
        assert_eq!(choose(&f).offset, 4096);
        assert_eq!(choose(&f).source, "btrfs sector size");
    }

    #[test]
    fn tmpfs_takes_512_byte_requests_directly() {
        let f = FsFacts { statx: None, fs_magic: TMPFS_MAGIC, block_size: 4096, device_block: None };
        assert_eq!(choose(&f).offset, 512);
    }

    #[test]
    fn others_fall_back_to_the_device_then_the_block_size() {
        let ext4 = FsFacts { statx: None, fs_magic: 0xEF53, block_size: 4096, device_block: Some(512) };
        assert_eq!(choose(&ext4).offset, 512);
        let nodev = FsFacts { statx: None, fs_magic: 0x6969, block_size: 1 << 20, device_block: None };
        assert_eq!(choose(&nodev), DioAlign { offset: 1 << 20, mem: 1 << 20, source: "filesystem block size" });
    }
}
