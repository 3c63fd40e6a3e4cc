//! What written requests carry, when a job asks for fio's buffer contents: compressible buffers
//! (`buffer_compress_percentage`, `buffer_compress_chunk`), deduplicable ones (`dedupe_percentage`,
//! `dedupe_mode`, `dedupe_working_set_percentage`, `dedupe_global`), new bytes for every write
//! (`refill_buffers`), all-zero writes, or fio's per-sector stamps (`scramble_buffers`).
//!
//! The definitions are fio's (its `fill_io_buffer` and dedupe working set, read in fio 3.x):
//!
//! - A write's buffer is filled chunk by chunk; a chunk is `min(smallest write, compress_chunk)` bytes
//!   (the smallest write alone when compress_chunk is 0), the last one shorter. Each chunk takes the
//!   next seed of a seed stream: its first `chunk x (100 - compress_pct) / 100` bytes are random
//!   bytes from that seed, the rest zeros (or the buffer pattern, from the start of that part).
//! - A thread has its own seed stream (`cur`). Before each write, with dedupe_pct p (1..99), a draw
//!   from 1 to 100 at most p makes the write a copy: in `repeat` mode, its chunks come from the stream
//!   position saved after the last unique write (`prev`; so a copy holds the bytes of the unique
//!   write that follows it, fio's bookkeeping), in `working_set` mode from a uniformly drawn entry of
//!   the working set, whose entry i is the stream position of the i-th unique write of this thread
//!   (or, with `global`, of the threads of the file in turn, `max(entries / threads, 1)` entries each,
//!   starting with this one). With p = 100 every chunk of every write has the stream's first seed.
//!   A unique write advances the stream and saves its end as `prev`.
//! - Before the run, a job that writes fills each of its `iodepth` buffers once (the largest request
//!   each) through the same draws: the run's first unique write is not at the stream's start, and the
//!   working set's first entries are never written as unique writes (fio's init-time fill).
//!
//! A seed stream is counter-based: the seed at position n of thread g is a mix of (content seed, g, n),
//! so a copy's or working-set entry's bytes are regenerated from two numbers: nothing is kept per write,
//! nothing is allocated per write, and the threads never talk to each other.

use serde::{Deserialize, Serialize};

use super::pattern::fill_pattern;
use crate::verify::payload::splitmix;

/// How a copy picks the bytes it repeats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DedupeMode {
    /// The bytes of the last unique write's successor (fio's `repeat`).
    #[default]
    Repeat,
    /// A uniformly drawn entry of the working set (fio's `working_set`).
    WorkingSet,
}

fn default_chunk() -> u32 {
    512
}

/// A job's write contents (None in the access spec: the buffers as filled at the start).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ContentSpec {
    /// New bytes for every write (fio's refill_buffers; implied by compress_pct and dedupe_pct).
    #[serde(default)]
    pub refill: bool,
    /// Stamp each 512-byte sector of a write with its offset and the time (fio's scramble_buffers).
    #[serde(default)]
    pub scramble: bool,
    /// Every write all zeros (fio's buffer_compress_percentage=100 without a pattern).
    #[serde(default)]
    pub zero: bool,
    /// Percent of each chunk that is zeros (or the pattern): 0 to 99.
    #[serde(default)]
    pub compress_pct: u32,
    /// Bytes per random/fixed chunk (0: the smallest write).
    #[serde(default = "default_chunk")]
    pub compress_chunk: u32,
    /// Percent of writes that are copies: 0 to 100.
    #[serde(default)]
    pub dedupe_pct: u32,
    #[serde(default)]
    pub dedupe_mode: DedupeMode,
    /// Entries of the working set (fio: size x dedupe_working_set_percentage / 100 / smallest write).
    #[serde(default)]
    pub working_set: u64,
    /// The working set spans the threads of every job of the file (fio's dedupe_global).
    #[serde(default)]
    pub global: bool,
    /// The seed of every thread's stream (None: the job's seed); jobs sharing a working set share it.
    #[serde(default)]
    pub seed: Option<u64>,
    /// This job's first thread's number among the file's threads (from 0) ...
    #[serde(default)]
    pub thread_base: u32,
    /// ... and the file's thread count (0: this job's).
    #[serde(default)]
    pub threads_total: u32,
}

impl ContentSpec {
    /// Whether every write gets its bytes from the seed streams (chunks).
    pub fn chunked(&self) -> bool {
        self.compress_pct > 0 || self.dedupe_pct > 0
    }

    /// The spec's own limits: what is wrong, for the field `content`.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.compress_pct > 99 {
            return Err(format!("compress_pct {} must be 0 to 99 (100: zero)", self.compress_pct));
        }
        if self.dedupe_pct > 100 {
            return Err(format!("dedupe_pct {} must be 0 to 100", self.dedupe_pct));
        }
        if self.dedupe_pct > 0 && self.dedupe_mode == DedupeMode::WorkingSet && self.working_set == 0 {
            return Err("dedupe_mode working_set needs working_set >= 1 entries".into());
        }
        if self.working_set > 1 << 32 {
            return Err("working_set: at most 2^32 entries".into());
        }
        if self.zero && (self.chunked() || self.scramble) {
            return Err("zero cannot be combined with compress_pct, dedupe_pct or scramble".into());
        }
        Ok(())
    }
}

/// The seed at position `n` of the stream `key`.
#[inline(always)]
fn seed_at(key: u64, n: u64) -> u64 {
    splitmix(key ^ splitmix(n.wrapping_mul(0xD6E8_FEB8_6659_FD93)))
}

/// The key of thread `g`'s stream.
fn stream_key(seed: u64, g: u64) -> u64 {
    splitmix(seed ^ 0xC0A7_E275_0000_0000 ^ splitmix(g))
}

/// Random bytes from `seed`: a splitmix sequence, 8 bytes a step (incompressible).
#[inline]
pub fn fill_random(buf: &mut [u8], seed: u64) {
    let mut x = seed;
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        c.copy_from_slice(&splitmix(x).to_le_bytes());
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let n = rest.len();
        rest.copy_from_slice(&splitmix(x).to_le_bytes()[..n]);
    }
}

/// One chunk: `len x (100 - pct) / 100` random bytes from `seed`, then zeros, or the start of
/// `pattern` (the buffer pattern already repeated over a whole chunk: one copy, not a loop per byte).
#[inline]
fn fill_chunk(buf: &mut [u8], seed: u64, pct: u32, pattern: &[u8]) {
    let random = (buf.len() as u64 * (100 - pct as u64) / 100) as usize;
    let (r, fixed) = buf.split_at_mut(random);
    fill_random(r, seed);
    if pattern.is_empty() {
        fixed.fill(0);
    } else {
        fixed.copy_from_slice(&pattern[..fixed.len()]);
    }
}

/// Where a write's chunks come from.
#[derive(Clone, Copy)]
enum Source {
    Own,
    At(u64, u64),
}

/// One thread's content maker, built before the start; `fill` is per write and allocates nothing.
pub struct ContentGen {
    spec: ContentSpec,
    /// Chunk bytes (min of the smallest write and compress_chunk, non-zero).
    min_write: usize,
    key: u64,
    cur: u64,
    prev: u64,
    /// fio's dedupe draw and working-set index streams.
    draw: u64,
    pick: u64,
    /// Keys and first entries of the working set, by thread (global) or this thread's alone.
    seed: u64,
    me: u64,
    threads: u64,
    advance: u64,
    per_thread: u64,
    /// The buffer pattern repeated over `min_write` bytes, the longest chunk (empty: zeros).
    pattern: Vec<u8>,
}

impl ContentGen {
    /// Thread `tid` of a job with `threads` threads and seed `job_seed`, whose smallest write is
    /// `min_write` bytes; `pattern` fills the compressible part (empty: zeros). `primed` is (buffers,
    /// bytes each) of fio's fill before the run: (iodepth, largest request) for a job that writes.
    pub fn new(
        spec: &ContentSpec,
        job_seed: u64,
        tid: usize,
        threads: usize,
        min_write: u32,
        pattern: &[u8],
        primed: (usize, usize),
    ) -> Self {
        let seed = spec.seed.unwrap_or(job_seed);
        let total = if spec.threads_total == 0 { threads as u64 } else { spec.threads_total as u64 };
        let me = spec.thread_base as u64 + tid as u64;
        let min_write = min_write.max(1) as u64;
        let chunk = if spec.compress_chunk == 0 { min_write } else { min_write.min(spec.compress_chunk as u64) };
        let key = stream_key(seed, me);
        let mut g = ContentGen {
            spec: spec.clone(),
            min_write: min_write as usize,
            key,
            cur: 0,
            prev: 0,
            draw: splitmix(key ^ 0xDED0),
            pick: splitmix(key ^ 0x5E7),
            seed,
            me,
            threads: total.max(1),
            // fio: the stream advances this many seeds per smallest write (its chunks).
            advance: min_write / chunk,
            per_thread: (spec.working_set / total.max(1)).max(1),
            pattern: {
                let mut p = vec![0u8; if pattern.is_empty() { 0 } else { min_write as usize }];
                fill_pattern(&mut p, pattern);
                p
            },
        };
        g.prime(primed.0, primed.1);
        g
    }

    /// A uniform draw in [0, n) from stream `s` (multiply-high).
    #[inline]
    fn below(s: &mut u64, n: u64) -> u64 {
        *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        ((splitmix(*s) as u128 * n as u128) >> 64) as u64
    }

    /// Working-set entry `i`: its stream and position.
    #[inline]
    fn entry(&self, i: u64) -> (u64, u64) {
        if !self.spec.global {
            return (self.key, i * self.advance);
        }
        let g = (self.me + i / self.per_thread) % self.threads;
        let key = if g == self.me { self.key } else { stream_key(self.seed, g) };
        (key, (i % self.per_thread) * self.advance)
    }

    /// The bytes of a write at `offset`, issued at `now_ns`, into `buf` (its length).
    #[inline]
    pub fn fill(&mut self, buf: &mut [u8], offset: u64, now_ns: u64) {
        let s = &self.spec;
        if s.chunked() {
            self.fill_chunks(buf);
        } else if s.zero {
            buf.fill(0);
        } else if s.refill {
            if self.pattern.is_empty() {
                let seed = seed_at(self.key, self.cur);
                self.cur += 1;
                fill_random(buf, seed);
            } // a pattern stays in the buffer (a read's bytes are replaced before a write)
        } else if s.scramble {
            scramble(buf, offset, now_ns);
        }
    }

    /// fio fills each of a job's `iodepth` buffers once before the run (a write job's), through the same
    /// draws and streams: the first unique write of the run is not the stream's first. Only the state
    /// moves here; no byte is made.
    fn prime(&mut self, buffers: usize, len: usize) {
        for _ in 0..buffers {
            if self.spec.chunked() {
                self.chunks(len, None);
            } else if self.spec.refill && self.pattern.is_empty() {
                self.cur += 1;
            }
        }
    }

    fn fill_chunks(&mut self, buf: &mut [u8]) {
        self.chunks(buf.len(), Some(buf));
    }

    /// The chunks of one buffer of `len` bytes, written into `buf` when given.
    fn chunks(&mut self, len: usize, mut buf: Option<&mut [u8]>) {
        let pct = self.spec.dedupe_pct;
        let mut src = Source::Own;
        if pct == 100 {
            self.prev = self.cur;
        } else if pct > 0 && Self::below(&mut self.draw, 100) < pct as u64 {
            src = match self.spec.dedupe_mode {
                DedupeMode::Repeat => Source::At(self.key, self.prev),
                DedupeMode::WorkingSet => {
                    let i = Self::below(&mut self.pick, self.spec.working_set);
                    let (k, n) = self.entry(i);
                    Source::At(k, n)
                }
            };
        }
        let chunk = self.spec.compress_chunk as usize;
        let mut min_write = self.min_write;
        let mut pos = 0;
        while pos < len {
            let left = len - pos;
            min_write = min_write.min(left);
            let this = if chunk == 0 { min_write } else { min_write.min(chunk) };
            let seed = match &mut src {
                Source::Own => {
                    self.cur += 1;
                    seed_at(self.key, self.cur - 1)
                }
                Source::At(k, n) => {
                    *n += 1;
                    seed_at(*k, *n - 1)
                }
            };
            if let Some(b) = buf.as_deref_mut() {
                fill_chunk(&mut b[pos..pos + this], seed, self.spec.compress_pct, &self.pattern);
            }
            pos += this;
            if pct == 100 {
                self.cur = self.prev;
            } else if matches!(src, Source::Own) {
                self.prev = self.cur;
            }
        }
    }
}

/// fio's scramble: in each 512-byte sector, the sector's file offset at one of its first eight
/// 8-byte-aligned cache lines (chosen from the time and the offset), and the time (seconds,
/// nanoseconds) in the last 16 bytes of its first 64.
#[inline]
fn scramble(buf: &mut [u8], offset: u64, now_ns: u64) {
    let (sec, nsec) = (now_ns / 1_000_000_000, now_ns % 1_000_000_000);
    let line = (((nsec ^ offset) & 7) << 6) as usize;
    let mut off = offset;
    for sector in buf.chunks_exact_mut(512) {
        sector[line..line + 8].copy_from_slice(&off.to_ne_bytes());
        sector[48..56].copy_from_slice(&sec.to_ne_bytes());
        sector[56..64].copy_from_slice(&nsec.to_ne_bytes());
        off += 512;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn spec() -> ContentSpec {
        ContentSpec {
            refill: true,
            scramble: false,
            zero: false,
            compress_pct: 0,
            compress_chunk: 512,
            dedupe_pct: 0,
            dedupe_mode: DedupeMode::Repeat,
            working_set: 0,
            global: false,
            seed: None,
            thread_base: 0,
            threads_total: 0,
        }
    }

    fn blocks(g: &mut ContentGen, n: usize, bs: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let mut b = vec![0u8; bs];
                g.fill(&mut b, (i * bs) as u64, 0);
                b
            })
            .collect()
    }

    #[test]
    fn repeat_mode_makes_the_asked_share_of_writes_copies() {
        // 20,000 writes at p = 0.3: distinct = unique writes (+1 for a copy after the last one):
        // binomial sd sqrt(n p (1 - p)) = 65; 5 sd.
        let s = ContentSpec { dedupe_pct: 30, ..spec() };
        let mut g = ContentGen::new(&s, 7, 0, 1, 4096, &[], (0, 0));
        let b = blocks(&mut g, 20_000, 4096);
        let distinct = b.iter().collect::<HashSet<_>>().len() as f64;
        assert!((distinct - 14_000.0).abs() < 5.0 * 65.0, "{distinct}");
        // A copy is the bytes of the unique write after it (fio's prev state).
        for w in b.windows(2) {
            if w[0] == w[1] {
                return;
            }
        }
        panic!("no copy next to its original");
    }

    #[test]
    fn the_fill_before_the_run_moves_the_streams_as_fio_does() {
        // Without copies, 3 buffers of 8 KiB in 512-byte chunks use 48 seeds before the first write.
        let s = ContentSpec { compress_pct: 50, ..spec() };
        let mut primed = ContentGen::new(&s, 7, 0, 1, 4096, &[], (3, 8192));
        let mut fresh = ContentGen::new(&s, 7, 0, 1, 4096, &[], (0, 0));
        assert_eq!(primed.cur, 48);
        let _ = blocks(&mut fresh, 6, 4096); // 6 x 4 KiB = 48 chunks of 512 bytes
        assert_eq!(blocks(&mut primed, 1, 4096), blocks(&mut fresh, 1, 4096));
    }

    #[test]
    fn hundred_percent_writes_one_block_over_and_over() {
        let s = ContentSpec { dedupe_pct: 100, ..spec() };
        let mut g = ContentGen::new(&s, 7, 0, 1, 4096, &[], (0, 0));
        let b = blocks(&mut g, 50, 8192);
        assert!(b.iter().all(|x| x == &b[0]));
        assert_eq!(b[0][..512], b[0][512..1024], "every chunk from the stream's first seed");
    }

    #[test]
    fn working_set_copies_come_from_the_first_unique_writes() {
        // 100 entries; 4,000 writes at p = 0.5: every copy equals one of the first 100 unique writes.
        let s = ContentSpec { dedupe_pct: 50, dedupe_mode: DedupeMode::WorkingSet, working_set: 100, ..spec() };
        let mut g = ContentGen::new(&s, 9, 0, 1, 4096, &[], (0, 0));
        let b = blocks(&mut g, 4000, 4096);
        let mut seen: Vec<&Vec<u8>> = vec![];
        let mut firsts = HashSet::new();
        for x in &b {
            if !seen.contains(&x) {
                seen.push(x);
                if firsts.len() < 100 {
                    firsts.insert(x.clone());
                }
            }
        }
        let distinct = seen.len() as f64;
        // Unique writes ~ 2000 (sd 32); copies fall in the working set, which unique writes also cover.
        assert!((distinct - 2000.0).abs() < 5.0 * 32.0, "{distinct}");
        let copies = b.len() - seen.len();
        assert!(copies > 1800);
    }

    #[test]
    fn global_working_sets_span_the_threads() {
        // Two threads of one file, 20 entries each: 10 of their own stream, then 10 of the other's.
        let s = ContentSpec {
            dedupe_pct: 100,
            dedupe_mode: DedupeMode::WorkingSet,
            working_set: 20,
            global: true,
            seed: Some(3),
            threads_total: 2,
            ..spec()
        };
        let a = ContentGen::new(&s, 1, 0, 2, 4096, &[], (0, 0));
        let b = ContentGen::new(&s, 1, 1, 2, 4096, &[], (0, 0));
        assert_eq!(a.entry(0), (a.key, 0));
        assert_eq!(a.entry(10), (b.key, 0));
        assert_eq!(b.entry(10), (a.key, 0));
        assert_eq!(a.entry(13), (b.key, 3 * 8), "4 KiB writes in 512-byte chunks: 8 seeds each");
    }

    #[test]
    fn compressible_chunks_are_random_then_zeros() {
        let s = ContentSpec { compress_pct: 75, ..spec() };
        let mut g = ContentGen::new(&s, 5, 0, 1, 4096, &[], (0, 0));
        let b = &blocks(&mut g, 1, 4096)[0];
        for c in b.chunks(512) {
            assert!(c[128..].iter().all(|&x| x == 0));
            assert!(c[..128].iter().filter(|&&x| x == 0).count() < 8);
        }
        let p = ContentSpec { compress_pct: 50, compress_chunk: 0, ..spec() };
        let mut g = ContentGen::new(&p, 5, 0, 1, 4096, b"ab", (0, 0));
        let b = &blocks(&mut g, 1, 4096)[0];
        assert_eq!(&b[2048..2052], b"abab", "one chunk of the smallest write, the pattern from its fixed part");
        // A pattern whose length divides no chunk: every chunk's fixed part starts it afresh, whole.
        let q = ContentSpec { compress_pct: 50, compress_chunk: 512, ..spec() };
        let mut g = ContentGen::new(&q, 5, 0, 1, 4096, b"xyz", (0, 0));
        let b = &blocks(&mut g, 1, 4096)[0];
        let want: Vec<u8> = b"xyz".iter().copied().cycle().take(256).collect();
        for c in b.chunks(512) {
            assert_eq!(&c[256..], &want[..]);
        }
    }

    #[test]
    fn scramble_stamps_every_sector() {
        let mut b = vec![0u8; 1024];
        scramble(&mut b, 4096, 1_000_000_003);
        let line = (((3u64 ^ 4096) & 7) << 6) as usize;
        assert_eq!(b[line..line + 8], 4096u64.to_ne_bytes());
        assert_eq!(b[512 + line..512 + line + 8], 4608u64.to_ne_bytes());
        assert_eq!(b[48..56], 1u64.to_ne_bytes());
    }
}
