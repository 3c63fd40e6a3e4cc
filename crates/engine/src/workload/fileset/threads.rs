//! How filemark shares the work between threads: each its own seed, files and transactions.

/// Thread t's seed: thread 0 takes the job's seed itself (so one thread is PostMark).
pub(super) fn thread_seed(seed: u64, tid: usize) -> u32 {
    if tid == 0 {
        return seed as u32;
    }
    let mut z = seed ^ (tid as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as u32
}

/// `total` split over threads, the remainder to the first ones.
pub(super) fn share_of(total: u64, nthreads: usize, tid: usize) -> u64 {
    let n = nthreads as u64;
    total / n + ((tid as u64) < total % n) as u64
}
