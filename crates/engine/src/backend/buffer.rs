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
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Where the pages of a buffer come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BufferMemory {
    /// The heap: 4 KiB pages, as malloc gives them (fio's `iomem=malloc`, IOR).
    #[default]
    Heap,
    /// Transparent huge pages: 2 MiB-aligned anonymous memory advised MADV_HUGEPAGE.
    /// The kernel may still give 4 KiB pages; `HugeInfo` says what it gave.
    Thp,
    /// hugetlb pages (MAP_HUGETLB) from the reserved pool; fails if the pool is short.
    Hugetlb,
}

/// The hugetlb page size fsmeter asks for (MAP_HUGE_2MB): the pool reserved with vm.nr_hugepages on
/// x86-64, and the one /sys/kernel/mm/hugepages/hugepages-2048kB counts.
pub const HUGETLB_PAGE: usize = 2 << 20;
const PAGE: usize = 4096;

/// The size of a transparent huge page (the PMD size): 2 MiB on x86-64.
fn thp_size() -> usize {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n.is_power_of_two() && n >= PAGE)
        .unwrap_or(2 << 20)
}

/// Bytes of whole `huge`-byte pages that hold `count` buffers of `len` bytes, each starting on a
/// 4 KiB page: the region `AlignedBuf::set` maps for them.
pub fn huge_region(count: usize, len: usize, huge: usize) -> usize {
    (len.max(1).next_multiple_of(PAGE) * count.max(1)).next_multiple_of(huge)
}

/// One anonymous mapping holding a set of buffers, unmapped with the last of them.
struct Mapping {
    base: *mut libc::c_void,
    len: usize,
    /// The buffers' region: whole huge pages from `start`.
    start: usize,
    region: usize,
    hugetlb: bool,
}

// SAFETY: plain memory, owned by the Mapping; see AlignedBuf.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `AlignedBuf::set`, unmapped once.
        let rc = unsafe { libc::munmap(self.base, self.len) };
        debug_assert_eq!(rc, 0, "munmap of an I/O buffer mapping");
    }
}

enum Backing {
    Heap(Layout),
    /// A slice of a mapping shared by a set of buffers.
    Shared(#[allow(dead_code)] Arc<Mapping>),
}

pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
    backing: Backing,
}

/// What a set of buffers got: bytes mapped for them, and how many of those are huge pages (None:
/// /proc/self/smaps could not tell).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HugeInfo {
    pub mapped: u64,
    pub huge: Option<u64>,
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

    /// `count` buffers of `len` bytes from `mem`, each aligned to `align` (at most a page) and
    /// filled from `seed(i)`. Heap buffers are allocated one by one. Huge-page buffers share one
    /// mapping, `count` x `len` (each rounded up to `align`) rounded up to whole huge pages, as fio
    /// maps one area of iodepth x the largest request per job; it is touched here, so no page
    /// fault lands in a measured request. Errors are mmap's, mprotect's or madvise's.
    pub fn set(
        count: usize,
        len: usize,
        align: usize,
        mem: BufferMemory,
        seed: impl Fn(usize) -> u64,
    ) -> std::io::Result<(Vec<AlignedBuf>, HugeInfo)> {
        let len = len.max(1);
        if mem == BufferMemory::Heap {
            let bufs: Vec<AlignedBuf> = (0..count).map(|i| AlignedBuf::new(len, align).filled(seed(i))).collect();
            return Ok((bufs, HugeInfo { mapped: (count * len) as u64, huge: Some(0) }));
        }
        assert!(align <= PAGE, "huge-page buffers are page-aligned; alignment {align} asked");
        let stride = len.next_multiple_of(PAGE);
        let huge = if mem == BufferMemory::Thp { thp_size() } else { HUGETLB_PAGE };
        let region = huge_region(count, len, huge);
        let (map_len, flags) = match mem {
            // Room to start on a huge-page boundary with at least one page left on either side:
            // those pages become PROT_NONE guards, so the kernel cannot merge this mapping with
            // a neighbouring one, and smaps reports this set's huge pages alone.
            BufferMemory::Thp => (region + huge + PAGE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS),
            // hugetlb mappings are aligned to their page size by the kernel.
            _ => (region, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB | libc::MAP_HUGE_2MB),
        };
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let base =
            unsafe { libc::mmap(std::ptr::null_mut(), map_len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let start =
            if mem == BufferMemory::Thp { (base as usize + PAGE).next_multiple_of(huge) } else { base as usize };
        let map = Arc::new(Mapping { base, len: map_len, start, region, hugetlb: mem == BufferMemory::Hugetlb });
        if mem == BufferMemory::Thp {
            let head = start - base as usize;
            let tail = base as usize + map_len - (start + region);
            // SAFETY: the ranges lie inside our mapping; nothing has touched them yet.
            unsafe {
                if libc::mprotect(base, head, libc::PROT_NONE) != 0
                    || libc::mprotect((start + region) as *mut libc::c_void, tail, libc::PROT_NONE) != 0
                {
                    return Err(std::io::Error::last_os_error()); // map's Drop unmaps
                }
                if libc::madvise(start as *mut libc::c_void, region, libc::MADV_HUGEPAGE) != 0 {
                    let e = std::io::Error::last_os_error();
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("madvise(MADV_HUGEPAGE): {e} (a kernel without transparent huge pages?)"),
                    ));
                }
            }
        }
        // Touch every page (MAP_HUGETLB reserves its pages at mmap, so a short pool fails above).
        // SAFETY: [start, start + region) lies inside the mapping.
        unsafe { std::ptr::write_bytes(start as *mut u8, 0, region) };
        let bufs = (0..count)
            .map(|i| {
                AlignedBuf { ptr: (start + i * stride) as *mut u8, len, backing: Backing::Shared(map.clone()) }
                    .filled(seed(i))
            })
            .collect();
        let info = HugeInfo { mapped: region as u64, huge: map.huge_bytes() };
        Ok((bufs, info))
    }

    /// A buffer filled with pseudo-random bytes from `seed` (xorshift64*).
    pub fn random(len: usize, align: usize, seed: u64) -> Self {
        AlignedBuf::new(len, align).filled(seed)
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
        if let Backing::Heap(layout) = self.backing {
            // SAFETY: allocated with this layout in `new`.
            unsafe { dealloc(self.ptr, layout) }
        } // a shared mapping goes with its last buffer
    }
}

impl Mapping {
    /// Bytes of the region on huge pages: hugetlb throughout; for THP what /proc/self/smaps
    /// says of the region's mapping (AnonHugePages; the guard pages keep it a mapping of its own).
    fn huge_bytes(&self) -> Option<u64> {
        if self.hugetlb {
            return Some(self.region as u64);
        }
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let kib = smaps_field_kib(&smaps, self.start, self.region, "AnonHugePages")?;
        Some((kib * 1024).min(self.region as u64))
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
        if let Some((a, b)) =
            first.split_once('-').filter(|(a, _)| a.chars().all(|c| c.is_ascii_hexdigit()) && !a.is_empty())
        {
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
    fn thp_buffers_share_one_mapping_of_whole_huge_pages_and_hold_the_seeded_bytes() {
        let (bufs, info) =
            AlignedBuf::set(3, 1 << 20, 4096, BufferMemory::Thp, |i| 7 + i as u64).expect("an anonymous mapping");
        let huge = thp_size();
        assert_eq!(bufs[0].as_ptr() as usize % huge, 0);
        for (i, b) in bufs.iter().enumerate() {
            assert_eq!(b.as_ptr() as usize, bufs[0].as_ptr() as usize + (i << 20), "one after the other");
            assert_eq!(b.len(), 1 << 20);
            assert_eq!(b.as_slice(), AlignedBuf::random(1 << 20, 4096, 7 + i as u64).as_slice());
        }
        assert_eq!(info.mapped, (3u64 << 20).next_multiple_of(huge as u64));
        let got = info.huge.expect("smaps readable");
        assert_eq!(got % huge as u64, 0, "whole huge pages: {got}");
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
        if thp.contains("[never]") {
            assert_eq!(got, 0);
        }
        drop(bufs); // the mapping goes with the last buffer (a double unmap would trip the debug assert)
    }

    #[test]
    fn a_buffer_set_outlives_all_but_its_last_buffer() {
        let (mut bufs, _) = AlignedBuf::set(2, 4096, 4096, BufferMemory::Thp, |_| 1).unwrap();
        let last = bufs.pop().unwrap();
        drop(bufs);
        last.as_mut_slice().fill(3); // still mapped
        assert!(last.as_slice().iter().all(|&b| b == 3));
    }

    #[test]
    fn heap_buffers_count_no_huge_pages() {
        let (bufs, info) = AlignedBuf::set(2, 1 << 20, 4096, BufferMemory::Heap, |i| 2 + 2 * i as u64).unwrap();
        assert_eq!(info, HugeInfo { mapped: 2 << 20, huge: Some(0) });
        assert!(bufs.iter().all(|b| (b.as_ptr() as usize).is_multiple_of(4096)));
        assert_ne!(bufs[0].as_slice(), bufs[1].as_slice(), "each buffer from its own seed");
    }

    #[test]
    fn hugetlb_buffers_are_huge_or_an_enomem_error_not_a_crash() {
        match AlignedBuf::set(2, 1 << 20, 4096, BufferMemory::Hugetlb, |_| 1) {
            Ok((bufs, info)) => {
                assert_eq!(info, HugeInfo { mapped: HUGETLB_PAGE as u64, huge: Some(HUGETLB_PAGE as u64) });
                assert_eq!(bufs[0].as_ptr() as usize % HUGETLB_PAGE, 0);
            }
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ENOMEM), "{e}"),
        }
    }
}
