//! Page-aligned I/O buffers (O_DIRECT needs aligned memory), allocated before
//! the hot path and filled with incompressible bytes so compressing or
//! deduplicating filesystems see realistic data.

use std::alloc::{alloc_zeroed, dealloc, Layout};

pub struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
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
        AlignedBuf { ptr, layout }
    }

    /// A buffer filled with pseudo-random bytes from `seed` (xorshift64*).
    pub fn random(len: usize, align: usize, seed: u64) -> Self {
        let b = AlignedBuf::new(len, align);
        let mut x = seed | 1;
        let s = b.as_mut_slice();
        for chunk in s.chunks_mut(8) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let v = x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        b
    }

    pub fn len(&self) -> usize {
        self.layout.size()
    }
    pub fn is_empty(&self) -> bool {
        self.layout.size() == 0
    }
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    #[allow(clippy::mut_from_ref)]
    pub fn as_mut_slice(&self) -> &mut [u8] {
        // SAFETY: ptr/len describe our allocation.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr/len describe our allocation.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}
