//! The compute and memory jobs. They keep the shared mix's proportions: the
//! arithmetic jobs run re-aim's loop counts of 12 dependent operations of
//! their type; the others are kernels of the same kind sized from re-aim's
//! operation count (approximations: the README says how each differs).
//! Memory comes from a per-task arena made before the subrun; nothing here
//! calls the allocator.

use std::hint::black_box;

use super::catalog::{info, JobId, JobId::*};
use super::order::Rng;

/// Per-task scratch memory (a 1 Mi-entry sieve is the largest user).
pub struct Arena {
    pub bytes: Vec<u8>,
    pub ints: Vec<i32>,
    /// An anonymous mapping for brk_test/page_test (stands in for sbrk).
    map: *mut u8,
}

const ARENA_BYTES: usize = 1 << 20;
const MAP_BYTES: usize = 1 << 20;
const PAGE: usize = 4096;

// SAFETY: the mapping is owned by the arena and used by one task at a time.
unsafe impl Send for Arena {}

impl Arena {
    pub fn new() -> Arena {
        // SAFETY: a private anonymous mapping we own; checked below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                MAP_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        Arena {
            bytes: vec![0u8; ARENA_BYTES],
            ints: vec![0i32; 4096],
            map: if map == libc::MAP_FAILED { std::ptr::null_mut() } else { map as *mut u8 },
        }
    }
}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        if !self.map.is_null() {
            // SAFETY: unmapping the region mapped in `new`.
            unsafe { libc::munmap(self.map as *mut libc::c_void, MAP_BYTES) };
        }
    }
}

macro_rules! add_loop {
    ($t:ty, $a:expr, $b:expr, $n:expr) => {{
        let (mut i, mut i1, mut i2): ($t, $t, $t) = (0 as $t, black_box($a), black_box($b));
        for _ in 0..$n {
            i = i.wrapping_add(i1);
            i1 = i1.wrapping_add(i2);
            i1 = i1.wrapping_add(i2);
            i2 = i2.wrapping_add(i);
            i2 = i2.wrapping_add(i);
            i = i.wrapping_add(i1);
            i = i.wrapping_add(i1);
            i1 = i1.wrapping_add(i2);
            i1 = i1.wrapping_add(i2);
            i2 = i2.wrapping_add(i);
            i2 = i2.wrapping_add(i);
            i = i.wrapping_add(i1);
        }
        black_box((i, i1, i2));
    }};
}

macro_rules! fadd_loop {
    ($t:ty, $a:expr, $n:expr) => {{
        let (mut i, mut i1, mut i2): ($t, $t, $t) = (0.0, black_box($a), black_box(-$a));
        for _ in 0..$n {
            i += i1;
            i1 += i2;
            i1 += i2;
            i2 += i;
            i2 += i;
            i += i1;
            i += i1;
            i1 += i2;
            i1 += i2;
            i2 += i;
            i2 += i;
            i += i1;
        }
        black_box((i, i1, i2));
    }};
}

macro_rules! mul_loop {
    ($t:ty, $n:expr) => {{
        let (mut a, b): ($t, $t) = (black_box(1 as $t), black_box(1 as $t));
        for _ in 0..$n {
            a = a.wrapping_mul(b);
            a = a.wrapping_mul(b);
            a = a.wrapping_mul(b);
            a = a.wrapping_mul(b);
            a = a.wrapping_mul(b);
            a = a.wrapping_mul(b);
            a = a.wrapping_mul(b);
            a = a.wrapping_mul(b);
            a = a.wrapping_mul(b);
            a = a.wrapping_mul(b);
            a = a.wrapping_mul(b);
            a = black_box(a.wrapping_mul(b));
        }
        black_box(a);
    }};
}

macro_rules! fmul_loop {
    ($t:ty, $n:expr) => {{
        let (mut a, b, c): ($t, $t, $t) = (black_box(1.0), black_box(1.000001), black_box(0.999999));
        for _ in 0..$n {
            a *= b;
            a *= c;
            a *= b;
            a *= c;
            a *= b;
            a *= c;
            a *= b;
            a *= c;
            a *= b;
            a *= c;
            a *= b;
            a *= c;
        }
        black_box(a);
    }};
}

macro_rules! div_loop {
    ($t:ty, $n:expr) => {{
        let (mut a, b): ($t, $t) = (black_box(<$t>::MAX), black_box(1 as $t));
        for _ in 0..$n {
            a /= b;
            a /= b;
            a /= b;
            a /= b;
            a /= b;
            a /= b;
            a /= b;
            a /= b;
            a /= b;
            a /= b;
            a /= b;
            a = black_box(a / b);
        }
        black_box(a);
    }};
}

macro_rules! fdiv_loop {
    ($t:ty, $n:expr) => {{
        let (mut a, b, c): ($t, $t, $t) = (black_box(1.0), black_box(1.000001), black_box(0.999999));
        for _ in 0..$n {
            a /= b;
            a /= c;
            a /= b;
            a /= c;
            a /= b;
            a /= c;
            a /= b;
            a /= c;
            a /= b;
            a /= c;
            a /= b;
            a /= c;
        }
        black_box(a);
    }};
}

#[inline(never)]
fn call0() -> u32 {
    black_box(1)
}
#[inline(never)]
fn call1(a: u32) -> u32 {
    black_box(a)
}
#[inline(never)]
fn call2(a: u32, b: u32) -> u32 {
    black_box(a ^ b)
}
#[inline(never)]
#[allow(clippy::too_many_arguments)] // AIM7's call test: a call with 15 arguments is what it measures
fn call15(
    a: u32,
    b: u32,
    c: u32,
    d: u32,
    e: u32,
    f: u32,
    g: u32,
    h: u32,
    i: u32,
    j: u32,
    k: u32,
    l: u32,
    m: u32,
    n: u32,
    o: u32,
) -> u32 {
    black_box(a ^ b ^ c ^ d ^ e ^ f ^ g ^ h ^ i ^ j ^ k ^ l ^ m ^ n ^ o)
}

/// Descend `depth` frames and come back out from the bottom (jmp_test's shape).
#[inline(never)]
// `+ 0`: work after the call, so that the recursion is not written as a tail call.
#[allow(clippy::identity_op)]
fn descend(depth: u32) -> u32 {
    if black_box(depth) == 0 {
        return 1;
    }
    descend(depth - 1) + 0
}

/// Run one compute or memory job; returns its units (re-aim's factor).
pub fn run(id: JobId, a: &mut Arena, rng: &mut Rng, msg: &mut usize) -> u64 {
    let units = info(id).factor.unwrap_or(0);
    let n = units as usize;
    match id {
        AddDouble => fadd_loop!(f64, std::f64::consts::PI, n),
        AddFloat => fadd_loop!(f32, 3.5f32, n),
        AddInt => add_loop!(i32, 3, -3, n),
        AddLong => add_loop!(i64, 3, -3, n),
        AddShort => add_loop!(i16, 3, -3, n),
        MulDouble => fmul_loop!(f64, n),
        MulFloat => fmul_loop!(f32, n),
        MulInt => mul_loop!(i32, n),
        MulLong => mul_loop!(i64, n),
        MulShort => mul_loop!(i16, n),
        DivDouble => fdiv_loop!(f64, n),
        DivFloat => fdiv_loop!(f32, n),
        DivInt => div_loop!(i32, n),
        DivLong => div_loop!(i64, n),
        DivShort => div_loop!(i16, n),
        FunCal => {
            for _ in 0..n {
                call0();
            }
        }
        FunCal1 => {
            for i in 0..n {
                call1(i as u32);
            }
        }
        FunCal2 => {
            for i in 0..n {
                call2(i as u32, 7);
            }
        }
        FunCal15 => {
            for i in 0..n {
                let x = i as u32;
                call15(x, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14);
            }
        }
        JmpTest => {
            for _ in 0..n {
                black_box(descend(10));
            }
        }
        Sieve => sieve(a, n),
        SortRtns1 => sort_ints(a, rng, n),
        StringRtns => strings(a, n),
        TrigRtns => trig(n),
        NumRtns1 | Series1 => series(n),
        NewRaph => newton_raphson(n),
        MatrixRtns => matrix(n),
        ArrayRtns => gauss(n),
        MemRtns1 => free_list(a, rng, n),
        MemRtns2 => mem_blocks(a, n),
        RamCopy => ram_copy(a, n),
        MiscRtns1 => misc_ints(n),
        SharedMemory => shared_memory(a, msg, n),
        BrkTest | PageTest => break_pages(a, units, id == PageTest),
        _ => {}
    }
    units
}

/// Sieve of Eratosthenes over 1,000,000 numbers, `units` times.
fn sieve(a: &mut Arena, n: usize) {
    let b = &mut a.bytes[..1_000_000];
    for _ in 0..n {
        b.fill(1);
        let mut p = 2;
        while p * p < b.len() {
            if b[p] != 0 {
                let mut q = p * p;
                while q < b.len() {
                    b[q] = 0;
                    q += p;
                }
            }
            p += 1;
        }
        black_box(b.iter().filter(|&&x| x != 0).count());
    }
}

/// Sort 2,000 random integers, `units` times.
fn sort_ints(a: &mut Arena, rng: &mut Rng, n: usize) {
    let t = &mut a.ints[..2000];
    for _ in 0..n {
        for x in t.iter_mut() {
            *x = rng.next_u64() as i32;
        }
        t.sort_unstable();
        black_box(t[0]);
    }
}

/// Copy, compare, search and reverse short strings.
fn strings(a: &mut Arena, n: usize) {
    let (s, d) = a.bytes.split_at_mut(4096);
    for i in 0..n {
        let len = 64 + (i % 64);
        for (k, c) in s[..len].iter_mut().enumerate() {
            *c = b'a' + ((k + i) % 26) as u8;
        }
        d[..len].copy_from_slice(&s[..len]);
        black_box(s[..len] == d[..len]);
        black_box(d[..len].iter().position(|&c| c == b'z'));
        d[..len].reverse();
    }
}

fn trig(n: usize) {
    let mut acc = 0.0f64;
    for i in 0..n {
        let x = black_box(i as f64 * 0.001);
        acc += x.sin() + x.cos() + x.tan().atan();
    }
    black_box(acc);
}

/// Exponentials, logarithms, roots and powers; a series of 100 terms each.
fn series(n: usize) {
    let mut acc = 0.0f64;
    for i in 1..=n {
        let x = black_box(i as f64 / n as f64 + 0.5);
        for k in 1..100 {
            acc += x.powi(k % 7) / k as f64 + x.ln() + x.sqrt() + (-x).exp();
        }
    }
    black_box(acc);
}

/// Newton-Raphson to a root of x^3 - c.
fn newton_raphson(n: usize) {
    for i in 0..n {
        let c = black_box(2.0 + i as f64);
        let mut x = c;
        for _ in 0..50 {
            x -= (x * x * x - c) / (3.0 * x * x);
        }
        black_box(x);
    }
}

/// 4x4 transforms of 100 points, `units` times.
fn matrix(n: usize) {
    let m = black_box([[1.0f64, 0.1, 0.0, 2.0], [0.0, 1.0, 0.2, 1.0], [0.3, 0.0, 1.0, 0.5], [0.0, 0.0, 0.0, 1.0]]);
    let mut p = [1.0f64, 2.0, 3.0, 1.0];
    for _ in 0..n * 100 {
        let mut q = [0.0; 4];
        for r in 0..4 {
            q[r] = m[r][0] * p[0] + m[r][1] * p[1] + m[r][2] * p[2] + m[r][3] * p[3];
        }
        p = [q[0] * 1e-3, q[1] * 1e-3, q[2] * 1e-3, 1.0];
    }
    black_box(p);
}

/// Gaussian elimination of a 24x24 system, `units` times.
fn gauss(n: usize) {
    const N: usize = 24;
    let mut mat = [[0.0f64; N + 1]; N];
    for _ in 0..n {
        for (r, row) in mat.iter_mut().enumerate() {
            for (c, v) in row.iter_mut().enumerate() {
                *v = if r == c { 10.0 } else { ((r * 7 + c * 3) % 11) as f64 * 0.1 };
            }
        }
        for k in 0..N {
            // Row r minus a multiple of row k of the same matrix: indices, not iterators.
            #[allow(clippy::needless_range_loop)]
            for r in k + 1..N {
                let f = mat[r][k] / mat[k][k];
                for c in k..=N {
                    mat[r][c] -= f * mat[k][c];
                }
            }
        }
        black_box(mat[N - 1][N]);
    }
}

/// Allocate and free blocks of varied sizes from a first-fit free list in the arena.
fn free_list(a: &mut Arena, rng: &mut Rng, n: usize) {
    let pool = &mut a.ints[..];
    let mut top = 0usize;
    for i in 0..n {
        let sz = 1 + (rng.below(32) as usize);
        if top + sz > pool.len() || i % 8 == 7 {
            top = 0;
        }
        pool[top] = sz as i32;
        top += sz;
    }
    black_box(top);
}

/// Block fill, copy and compare of 4 KiB, `units` times.
fn mem_blocks(a: &mut Arena, n: usize) {
    let (s, d) = a.bytes.split_at_mut(PAGE);
    for i in 0..n {
        s.fill(i as u8);
        d[..PAGE].copy_from_slice(s);
        black_box(s == &d[..PAGE]);
    }
}

/// re-aim copies 25,020 small blocks (it reports memory-to-memory copies).
fn ram_copy(a: &mut Arena, n: usize) {
    let (s, d) = a.bytes.split_at_mut(ARENA_BYTES / 2);
    for i in 0..n {
        let size = [16usize, 64, 256, 1024][i % 4];
        let off = (i * 64) % (ARENA_BYTES / 2 - 1024);
        d[off..off + size].copy_from_slice(&s[off..off + size]);
    }
    black_box(d[0]);
}

/// Mixed integer loops: bit counts, table lookups, branches.
fn misc_ints(n: usize) {
    let mut acc = 0u64;
    for i in 0..n * 10_000 {
        acc = acc.wrapping_add((i as u64).count_ones() as u64 + if i % 3 == 0 { 1 } else { 2 });
    }
    black_box(acc);
}

/// Lock (an atomic flag, not a SysV semaphore), copy a message into a
/// shared page, unlock; message sizes as the pipe jobs use.
fn shared_memory(a: &mut Arena, msg: &mut usize, n: usize) {
    use std::sync::atomic::{AtomicBool, Ordering::*};
    let lock = AtomicBool::new(false);
    let (s, d) = a.bytes.split_at_mut(4096);
    for _ in 0..n {
        let size = [1usize, 3, 5, 7, 16, 32, 64, 512, 1024, 2048, 4096][*msg % 11];
        *msg += 1;
        while lock.compare_exchange(false, true, Acquire, Relaxed).is_err() {}
        d[..size].copy_from_slice(&s[..size]);
        lock.store(false, Release);
    }
    black_box(d[0]);
}

/// re-aim moves the program break (sbrk) down 16 pages and back up
/// a page at a time; page_test also dirties each page. sbrk would
/// fight the allocator, so a private mapping stands in: drop 16
/// pages (MADV_DONTNEED) and bring them back one by one (mprotect
/// for brk_test, a write per 128 bytes for page_test).
fn break_pages(a: &mut Arena, units: u64, dirty: bool) {
    if a.map.is_null() {
        return;
    }
    let loops = units / 16;
    for _ in 0..loops {
        // SAFETY: all addresses are inside the mapping made in Arena::new.
        unsafe {
            libc::madvise(a.map as *mut libc::c_void, 16 * PAGE, libc::MADV_DONTNEED);
            for p in 0..16 {
                let page = a.map.add(p * PAGE);
                if dirty {
                    let mut j = 0;
                    while j < PAGE {
                        std::ptr::write_volatile(page.add(j), b' ');
                        j += 128;
                    }
                } else {
                    libc::mprotect(page as *mut libc::c_void, PAGE, libc::PROT_READ | libc::PROT_WRITE);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::mix::catalog::Class;
    use crate::workload::mix::catalog::CATALOG;

    #[test]
    fn every_compute_job_runs_and_reports_its_factor() {
        let mut a = Arena::new();
        let mut rng = Rng::new(1);
        let mut msg = 0;
        for j in CATALOG.iter().filter(|j| j.class == Class::Compute) {
            if j.factor.unwrap() > 100_000 {
                continue; // the long arithmetic loops: same code path as the short ones
            }
            assert_eq!(run(j.id, &mut a, &mut rng, &mut msg), j.factor.unwrap(), "{}", j.name);
        }
    }
}
