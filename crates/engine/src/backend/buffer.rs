//! Page-aligned I/O buffers (O_DIRECT needs aligned memory), allocated before
//! the hot path and filled with incompressible bytes so compressing or
//! deduplicating filesystems see realistic data.
//!
//! A buffer's pages come from the heap (4 KiB pages wherever the kernel finds
//! them), or, on request, from huge pages: transparent ones (an anonymous
//! mapping advised with MADV_HUGEPAGE, which the kernel backs with 2 MiB pages
//! when it has them) or hugetlb ones (MAP_HUGETLB, from the pool reserved with
//! vm.nr_hugepages). An O_DIRECT request's buffer is handed to the device page
//! by page, so scattered 4 KiB pages can split one request into several where
//! physically contiguous memory does not (fio's `iomem=mmaphuge`).

use std::alloc::{alloc_zeroed, dealloc, Layout};

use serde::{Deserialize, Serialize};

/// Where the pages of a buffer come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BufferMemory {
    /// The heap: 4 KiB pages, as malloc gives them (fio's `iomem=malloc`, IOR).
    #[default]
    Heap,
    /// Transparent huge pages: 2 MiB-aligned anonymous memory advised MADV_HUGEPAGE.
    /// The kernel may still give 4 KiB pages; `huge_pages` says what it gave.
    Thp,
    /// hugetlb pages (MAP_HUGETLB) from the reserved pool; fails if the pool is short.
    Hugetlb,
}

impl BufferMemory {
    pub fn name(self) -> &'static str {
        match self {
            BufferMemory::Heap => "heap",
            BufferMemory::Thp => "thp",
            BufferMemory::Hugetlb => "hugetlb",
        }
    }
}

/// The size of a huge page here: 2 MiB on x86-64 and arm64 with 4 KiB pages.
pub const HUGE_PAGE: usize = 2 << 20;
const PAGE: usize = 4096;

enum Backing {
    Heap(Layout),
    /// An anonymous mapping of `len` bytes at `base`; the buffer starts at or after it, in a
    /// region of `region` bytes (whole huge pages).
    Map { base: *mut libc::c_void, len: usize, region: usize, hugetlb: bool },
}

pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
    backing: Backing,
}

// SAFETY: the buffer is plain memory owned by one AlignedBuf; moving it to
// another thread is fine, and shared access happens only through raw pointers
// the backends hand to the kernel.
unsafe impl Send for AlignedBuf {}
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    pub fn new(len: usize, align: usize) -> Self {
        let layout = Layout::from_size_align(len.max(1), align.max(8)).expect("valid buffer layout");
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory allocating an I/O buffer of {len} bytes");
        AlignedBuf { ptr, len: layout.size(), backing: Backing::Heap(layout) }
    }

    /// A zeroed buffer of `len` bytes from `mem`, aligned to `align` (huge-page buffers are
    /// aligned to HUGE_PAGE). Heap buffers cannot fail but for out of memory; huge-page ones
    /// return the mmap or madvise error.
    pub fn with_memory(len: usize, align: usize, mem: BufferMemory) -> std::io::Result<Self> {
        let len = len.max(1);
        assert!(align <= HUGE_PAGE, "buffer alignment {align} above a huge page");
        let rounded = len.div_ceil(HUGE_PAGE) * HUGE_PAGE;
        let (map_len, flags) = match mem {
            BufferMemory::Heap => return Ok(AlignedBuf::new(len, align)),
            // Room to start on a 2 MiB boundary with at least one page left on either side: those
            // pages become PROT_NONE guards, so the kernel cannot merge this mapping with a
            // neighbouring one, and smaps reports this buffer's huge pages alone.
            BufferMemory::Thp => (rounded + HUGE_PAGE + PAGE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS),
            // hugetlb mappings are huge-page aligned by the kernel.
            BufferMemory::Hugetlb => (rounded, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB),
        };
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let base = unsafe { libc::mmap(std::ptr::null_mut(), map_len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let start = match mem {
            BufferMemory::Thp => (base as usize + PAGE).next_multiple_of(HUGE_PAGE),
            _ => base as usize,
        };
        let buf = AlignedBuf { ptr: start as *mut u8, len, backing: Backing::Map { base, len: map_len, region: rounded, hugetlb: mem == BufferMemory::Hugetlb } };
        if mem == BufferMemory::Thp {
            let head = start - base as usize;
            let tail = base as usize + map_len - (start + rounded);
            // SAFETY: the ranges lie inside our mapping; nothing has touched them yet.
            let failed = unsafe {
                libc::mprotect(base, head, libc::PROT_NONE) != 0
                    || libc::mprotect((start + rounded) as *mut libc::c_void, tail, libc::PROT_NONE) != 0
                    || libc::madvise(start as *mut libc::c_void, rounded, libc::MADV_HUGEPAGE) != 0
            };
            if failed {
                return Err(std::io::Error::last_os_error()); // buf's Drop unmaps
            }
        }
        // Touch every page now, so that no page fault lands in a measured request (MAP_HUGETLB
        // reserves its pages at mmap, so a short pool fails above, not here).
        buf.as_mut_slice().fill(0);
        Ok(buf)
    }

    /// A buffer filled with pseudo-random bytes from `seed` (xorshift64*).
    pub fn random(len: usize, align: usize, seed: u64) -> Self {
        AlignedBuf::new(len, align).filled(seed)
    }

    /// `random` with pages from `mem`.
    pub fn random_with(len: usize, align: usize, seed: u64, mem: BufferMemory) -> std::io::Result<Self> {
        Ok(AlignedBuf::with_memory(len, align, mem)?.filled(seed))
    }

    /// (bytes on huge pages, bytes mapped) of the memory this buffer was given: a THP buffer's
    /// mapping is whole huge pages, and /proc/self/smaps says how many of its bytes the kernel
    /// backs with huge pages (AnonHugePages; guard pages keep the mapping apart from others); a
    /// hugetlb buffer's is huge throughout. Heap buffers count none (the allocator may sit on a
    /// huge page by chance, but fsmeter did not ask for one). None if smaps cannot be read.
    pub fn huge_pages(&self) -> Option<(u64, u64)> {
        match self.backing {
            Backing::Heap(_) => Some((0, self.len as u64)),
            Backing::Map { hugetlb: true, region, .. } => Some((region as u64, region as u64)),
            Backing::Map { region, .. } => {
                let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
                let anon_huge = smaps_field_kib(&smaps, self.ptr as usize, region, "AnonHugePages")?;
                Some(((anon_huge * 1024).min(region as u64), region as u64))
            }
        }
    }

    fn filled(self, seed: u64) -> Self {
        let mut x = seed | 1;
        let s = self.as_mut_slice();
        for chunk in s.chunks_mut(8) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let v = x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        self
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    #[allow(clippy::mut_from_ref)]
    pub fn as_mut_slice(&self) -> &mut [u8] {
        // SAFETY: ptr/len describe our allocation.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr/len describe our allocation.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        match self.backing {
            // SAFETY: allocated with this layout in `new`.
            Backing::Heap(layout) => unsafe { dealloc(self.ptr, layout) },
            // SAFETY: the mapping made in `with_memory`, unmapped once.
            Backing::Map { base, len, .. } => unsafe {
                libc::munmap(base, len);
            },
        }
    }
}

/// The sum of `field` (in kB) over the /proc/self/smaps entries of mappings that overlap
/// [start, start + len); None if there are none.
fn smaps_field_kib(smaps: &str, start: usize, len: usize, field: &str) -> Option<u64> {
    let end = start + len;
    let mut inside = false;
    let mut found = false;
    let mut sum = 0u64;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-').filter(|(a, _)| a.chars().all(|c| c.is_ascii_hexdigit()) && !a.is_empty()) {
            let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) else {
                inside = false;
                continue;
            };
            inside = a < end && start < b;
            continue;
        }
        if inside {
            if let Some(rest) = line.strip_prefix(field).and_then(|r| r.strip_prefix(':')) {
                if let Some(v) = rest.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()) {
                    sum += v;
                    found = true;
                }
            }
        }
    }
    found.then_some(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaps_sums_the_overlapping_mappings_only() {
        let smaps = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
KernelPageSize:        4 kB
AnonHugePages:      2048 kB
7f0000400000-7f0000600000 rw-p 00000000 00:00 0
Size:               2048 kB
AnonHugePages:         0 kB
7f0000600000-7f0000800000 rw-p 00000000 00:00 0
AnonHugePages:      2048 kB
";
        let a = 0x7f00_0000_0000usize;
        assert_eq!(smaps_field_kib(smaps, a, 0x40_0000, "AnonHugePages"), Some(2048));
        assert_eq!(smaps_field_kib(smaps, a + 0x40_0000, 0x40_0000, "AnonHugePages"), Some(2048));
        assert_eq!(smaps_field_kib(smaps, a, 0x80_0000, "AnonHugePages"), Some(4096));
        assert_eq!(smaps_field_kib(smaps, a, 1, "KernelPageSize"), Some(4));
        assert_eq!(smaps_field_kib(smaps, a + 0x100_0000, 1, "AnonHugePages"), None);
    }

    #[test]
    fn a_thp_buffer_starts_on_a_huge_page_and_holds_the_seeded_bytes() {
        let b = AlignedBuf::random_with(3 << 20, 4096, 7, BufferMemory::Thp).expect("an anonymous mapping");
        assert_eq!(b.as_ptr() as usize % HUGE_PAGE, 0);
        assert_eq!(b.len(), 3 << 20);
        assert_eq!(b.as_slice(), AlignedBuf::random(3 << 20, 4096, 7).as_slice());
        let (huge, mapped) = b.huge_pages().expect("smaps readable");
        assert_eq!(mapped, 4 << 20, "whole huge pages");
        assert!(huge <= mapped && huge % HUGE_PAGE as u64 == 0, "{huge}");
        // The kernel gives huge pages only when THP is not "never" and it has free 2 MiB blocks.
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
        if thp.contains("[never]") {
            assert_eq!(huge, 0);
        }
    }

    #[test]
    fn a_heap_buffer_counts_no_huge_bytes() {
        let b = AlignedBuf::with_memory(1 << 20, 4096, BufferMemory::Heap).unwrap();
        assert_eq!(b.huge_pages(), Some((0, 1 << 20)));
        assert_eq!(b.as_ptr() as usize % 4096, 0);
    }

    #[test]
    fn hugetlb_without_a_pool_is_an_error_not_a_crash() {
        let free: u64 = std::fs::read_to_string("/proc/meminfo")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("HugePages_Free:").and_then(|v| v.trim().parse().ok()))
            .unwrap_or(0);
        match AlignedBuf::with_memory(1 << 20, 4096, BufferMemory::Hugetlb) {
            Ok(b) => {
                assert!(free > 0, "a hugetlb buffer with no free huge pages");
                assert_eq!(b.huge_pages(), Some((2 << 20, 2 << 20)));
            }
            Err(e) => assert!(free == 0 || e.raw_os_error() == Some(libc::ENOMEM), "{e}"),
        }
    }
}
