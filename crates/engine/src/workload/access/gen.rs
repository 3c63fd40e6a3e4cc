//! The request generator: which entry, read or write, random or sequential, where. Pure (no
//! system calls), so the sequence for a seed is testable and reproducible.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::blockmap::{BlockMap, BlockPerm};
use super::dirmap::DirMap;
use super::dist::{mix64, Dist, Skew};
use super::shape::{parse_sequence, SequenceWalk, Walk, ZoneIndex, ZoneSplit};
use super::spec::AccessSpec;
use crate::backend::IoReq;

/// Lemire's multiply-shift: a uniform integer in [0, n) without division.
#[inline(always)]
fn below(x: u64, n: u64) -> u64 {
    ((x as u128 * n as u128) >> 64) as u64
}

/// Scales a percentage to a threshold on a 32-bit draw.
fn pct_threshold(pct: f64) -> u64 {
    ((pct / 100.0) * (1u64 << 32) as f64).round() as u64
}

/// One generated request: where it goes, which mix entry it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenOp {
    pub req: IoReq,
    pub entry: usize,
    pub random: bool,
    /// A trim: a hole punched over the request's range (`req.write` is false).
    pub trim: bool,
    /// A replayed sync (fio's read_iolog): 1 fsync, 2 fdatasync of `req.file` (0: not a sync).
    pub sync: u8,
}

/// Generates the request sequence of one thread. Pure: no system calls, so the
/// sequence for a seed is testable and reproducible.
pub struct AccessGen {
    rng: Xoshiro256PlusPlus,
    cum: Vec<u64>,
    sizes: Vec<u32>,
    read_thr: Vec<u64>,
    rand_thr: Vec<u64>,
    /// Per entry: the chance that a request which is not a read is a trim.
    trim_thr: Vec<u64>,
    /// fio's trimwrite: the write that follows the last trim.
    then_write: Option<GenOp>,
    trim_then_write: bool,
    /// A skewed random distribution (None: uniform).
    skew: Option<Skew>,
    /// fio's zoned distributions: where a random request of each direction lands.
    zones: Option<ZoneIndex>,
    /// fio's sequence distribution: the blocks random requests visit, in order.
    sequence: Option<SequenceWalk>,
    /// Strided zones or an offset modifier: the thread's walk through its one file.
    walk: Option<Walk>,
    file_count: u64,
    file_size: u64,
    align: u64,
    /// First file of this thread's random draws (thread_files), and the region offset inside files.
    file_lo: u64,
    base: u64,
    perm: Option<BlockPerm>,
    /// fio's random map with several request sizes: the blocks (of `align` bytes) already done this pass.
    sized: Option<BlockMap>,
    /// fio's random map with per-direction block sizes (random_map_block): each direction's units, the stop rule.
    dir_map: Option<DirMap>,
    seq_lo: u64,
    seq_hi: u64,
    /// The sequential position of each direction (read, write, trim); only the first is used
    /// unless `seq_dirs` (fio's last_pos per direction, spec.seq_per_direction).
    seq_pos: [u64; 3],
    seq_dirs: bool,
    /// fio's offset_increment: sequential requests per pass (0: none) and those done in this one.
    pass_ios: u64,
    pass_done: u64,
    /// fio's sprandom: the offsets come from its plan, and the sequence can end.
    spr: Option<Box<(super::sprandom::Sprandom, BlockPerm)>>,
    ended: bool,
    /// fio's number_ios: the requests this thread may draw (0: no limit), and those drawn.
    max_ios: u64,
    drawn: u64,
    /// fio's read_iolog: the requests come from the log.
    replay: Option<Box<super::replay::Replay>>,
    /// One entry, always random, always a read or always a write, uniform over the files with
    /// replacement and nothing else in force: what `next_op` draws without looking at the rest.
    uniform: Option<Uniform>,
}

/// The fast case of `next_op`: the request size, the slots it may start at in a file, the direction.
#[derive(Clone, Copy, Debug)]
struct Uniform {
    len: u32,
    slots: u64,
    write: bool,
}

impl AccessGen {
    pub fn new(spec: &AccessSpec, seed: u64, tid: usize, nthreads: usize) -> Self {
        Self::with_share_align(spec, seed, tid, nthreads, spec.alignment)
    }

    /// As `new`, with each thread's sequential share starting at a multiple of
    /// `share_align` (a multiple of `alignment`; O_DIRECT asks for the filesystem's figure).
    pub fn with_share_align(spec: &AccessSpec, seed: u64, tid: usize, nthreads: usize, share_align: u64) -> Self {
        // fio's offset_increment: the thread walks its own whole region of the shared file (regions.rs).
        let own;
        let (spec, whole, pass_ios) = match spec.thread_regions.get(tid) {
            Some(r) => {
                let mut s = spec.clone();
                s.thread_regions = Vec::new();
                (s.offset, s.run_offset, s.file_size) = (r.start, None, r.len);
                own = s;
                (&own, true, r.pass_ios)
            }
            None => (spec, false, 0),
        };
        let total_w: f64 = spec.entries.iter().map(|e| e.weight).sum();
        let mut acc = 0.0;
        let mut cum: Vec<u64> = spec
            .entries
            .iter()
            .map(|e| {
                acc += e.weight;
                pct_threshold(100.0 * acc / total_w)
            })
            .collect();
        *cum.last_mut().unwrap() = 1u64 << 32;
        let total = spec.file_count as u64 * spec.file_size;
        let share_align = share_align.max(1);
        let share = (total / nthreads as u64) / share_align * share_align;
        let per_thread = spec.file_count as u64 / nthreads as u64;
        let (lo, hi) = if whole {
            (0, total)
        } else if spec.thread_files {
            (tid as u64 * per_thread * spec.file_size, (tid as u64 + 1) * per_thread * spec.file_size)
        } else if share >= spec.max_size() as u64 && share > 0 {
            let lo = tid as u64 * share;
            (lo, if tid + 1 == nthreads { total } else { lo + share })
        } else {
            (0, total)
        };
        // Per-thread streams: the seed mixed with the thread id (SplitMix64 finaliser).
        let mut z = seed ^ (tid as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let mut gen = AccessGen {
            rng: Xoshiro256PlusPlus::seed_from_u64(z ^ (z >> 31)),
            cum,
            sizes: spec.entries.iter().map(|e| e.size).collect(),
            read_thr: spec.entries.iter().map(|e| pct_threshold(e.read_pct)).collect(),
            rand_thr: spec.entries.iter().map(|e| pct_threshold(e.random_pct)).collect(),
            trim_thr: spec
                .entries
                .iter()
                .map(|e| if e.trim_pct <= 0.0 { 0 } else { pct_threshold(100.0 * e.trim_pct / (100.0 - e.read_pct)) })
                .collect(),
            then_write: None,
            trim_then_write: spec.trim_then_write,
            // One key for every thread: threads share the hot set, as fio's jobs on one file do.
            skew: spec.distribution().ok().and_then(|d| {
                Skew::new(d, spec.file_size / spec.alignment, spec.random_scramble, mix64(seed ^ 0x5EED))
            }),
            zones: match spec.distribution() {
                Ok(Dist::Zoned) => ZoneSplit::parse(&spec.random_distribution).ok().map(|z| {
                    // fio's last_block: the file less what the smallest request needs beyond one alignment unit.
                    let min = spec.entries.iter().map(|e| e.size as u64).min().unwrap_or(0);
                    let lastb =
                        (spec.file_size - min.saturating_sub(spec.alignment).min(spec.file_size)) / spec.alignment;
                    ZoneIndex::new(&z, lastb, spec.alignment)
                }),
                _ => None,
            },
            sequence: match spec.distribution() {
                Ok(Dist::Sequence) => parse_sequence(&spec.random_distribution)
                    .ok()
                    .map(|b| SequenceWalk::new(b, spec.random_sequence_stride)),
                _ => None,
            },
            walk: spec.walks_one_file().then(|| {
                let zones = (spec.zone_size > 0).then(|| (spec.zone_size, spec.zone_range(), spec.zone_skip));
                let min = spec.entries.iter().map(|e| e.size as u64).min().unwrap_or(0);
                Walk::new(spec.file_size, spec.seq_add, zones, spec.alignment, min)
            }),
            file_count: if spec.thread_files { per_thread } else { spec.file_count as u64 },
            file_size: spec.file_size,
            align: spec.alignment,
            file_lo: if spec.thread_files { tid as u64 * per_thread } else { 0 },
            base: spec.run_base(),
            perm: (spec.random_map && !spec.sized_map() && spec.random_map_block == 0).then(|| {
                let files = if spec.thread_files { per_thread } else { spec.file_count as u64 };
                BlockPerm::new(files * (spec.file_size / spec.alignment), z)
            }),
            sized: (spec.random_map && (spec.sized_map() || spec.random_map_block > 0)).then(|| {
                let files = if spec.thread_files { per_thread } else { spec.file_count as u64 };
                BlockMap::new(files * (spec.file_size / spec.alignment))
            }),
            dir_map: (spec.random_map && spec.random_map_block > 0).then(|| {
                let dirs: Vec<bool> = spec.entries.iter().map(|e| e.read_pct == 0.0).collect();
                let weights: Vec<f64> = spec.entries.iter().map(|e| e.weight).collect();
                let sizes: Vec<u32> = spec.entries.iter().map(|e| e.size).collect();
                DirMap::new(&dirs, &weights, &sizes, spec.file_size, spec.total_bytes.is_some())
            }),
            seq_lo: lo,
            seq_hi: hi,
            seq_pos: [lo; 3],
            seq_dirs: spec.seq_per_direction,
            pass_ios,
            pass_done: 0,
            spr: spec.sprandom.as_ref().map(|s| {
                let seed = mix64(z ^ 0x5350);
                let spr = super::sprandom::Sprandom::new(s, spec.file_size, spec.alignment, seed);
                Box::new((spr, BlockPerm::new(spec.file_size / spec.alignment, seed)))
            }),
            ended: false,
            max_ios: spec.max_ios,
            drawn: 0,
            replay: spec.replay.as_ref().map(|r| Box::new(super::replay::Replay::new(r))),
            uniform: None,
        };
        gen.uniform = gen.uniform_case();
        gen
    }

    /// `Uniform` when the general draw below reduces to it: one entry whose direction and randomness
    /// are fixed (so `chance` draws nothing), no trims, and none of the distributions, maps, walks,
    /// logs or limits that `next_op` consults before its uniform branch. The same draws in the same
    /// order, so the same sequence for a seed (tested).
    fn uniform_case(&self) -> Option<Uniform> {
        let fixed = |t: u64| t == 0 || t >= 1 << 32;
        let plain = self.sizes.len() == 1
            && fixed(self.read_thr[0])
            && self.rand_thr[0] >= 1 << 32
            && self.trim_thr[0] == 0
            && self.skew.is_none()
            && self.zones.is_none()
            && self.sequence.is_none()
            && self.walk.is_none()
            && self.perm.is_none()
            && self.sized.is_none()
            && self.dir_map.is_none()
            && self.spr.is_none()
            && self.replay.is_none()
            && self.max_ios == 0
            && self.file_size >= self.sizes[0] as u64
            && self.align > 0;
        plain.then(|| Uniform { len: self.sizes[0], slots: self.slots(self.sizes[0]), write: self.read_thr[0] == 0 })
    }

    /// A file of the thread's range, uniformly; no draw with one file.
    #[inline(always)]
    fn draw_file(&mut self) -> u64 {
        if self.file_count > 1 {
            below(self.rng.next_u64(), self.file_count)
        } else {
            0
        }
    }

    /// The aligned offsets a request of `len` bytes may start at in a file (at least one).
    #[inline(always)]
    fn slots(&self, len: u32) -> u64 {
        (self.file_size - len as u64) / self.align + 1
    }

    /// A draw that decides a yes/no with probability thr / 2^32; no draw is
    /// spent when the answer is fixed (0% or 100%), which keeps the common
    /// single-entry specs cheap without changing what they generate.
    #[inline(always)]
    fn chance(&mut self, thr: u64) -> bool {
        match thr {
            0 => false,
            t if t >= 1 << 32 => true,
            t => (self.rng.next_u32() as u64) < t,
        }
    }

    #[inline(always)]
    fn draw_entry(&mut self) -> usize {
        let mut entry = 0;
        if self.cum.len() > 1 {
            let r = self.rng.next_u32() as u64;
            while r >= self.cum[entry] {
                entry += 1;
            }
        }
        entry
    }

    /// fio's random map with several sizes (io_u.c): a block drawn uniformly, or the next free one after it
    /// (wrapping) when it was done this pass; a size that fits before the file's end (the drawn entry or the
    /// first later one that fits, else a new draw); the request then ends at the first block already done.
    /// A full map starts the next pass. -> (file, offset, len, entry).
    #[inline]
    fn map_draw(&mut self, entry: usize) -> (u64, u64, u32, usize) {
        let per_file = (self.file_size / self.align).max(1);
        let map = self.sized.as_mut().expect("checked");
        if map.full() {
            map.reset();
        }
        let mut b = below(self.rng.next_u64(), map.blocks());
        if map.is_set(b) {
            b = map.next_free(b).unwrap_or(b);
        }
        let room = (per_file - b % per_file) * self.align;
        // No size fits (a last block far smaller than every size): the smallest size.
        let entry = self
            .fitting_entry(entry, room, false)
            .unwrap_or_else(|| (0..self.sizes.len()).min_by_key(|&k| self.sizes[k]).unwrap_or(0));
        let len = self.sizes[entry] as u64;
        let map = self.sized.as_mut().expect("checked");
        let done = map.set_run(b, len.div_ceil(self.align)).max(1);
        (b / per_file, (b % per_file) * self.align, (len.min(done * self.align)) as u32, entry)
    }

    /// The thread's offsets have ended, and the last `next_op` is not a request: fio's random map with
    /// per-direction block sizes hit its stop rule (dirmap.rs), or fio's sprandom plan ran out (sprandom.rs).
    #[inline(always)]
    pub fn ended(&self) -> bool {
        self.ended || self.dir_map.as_ref().is_some_and(DirMap::ended)
    }

    /// A trim of fio's trimwrite was drawn and the write of its range is still to come: the two
    /// are one step, so a byte quota reached by the trim does not end the thread before its write.
    #[inline]
    pub fn write_pending(&self) -> bool {
        self.then_write.is_some()
    }

    /// fio's sprandom per-region counts, when the job has it.
    pub fn sprandom(&self) -> Option<&super::sprandom::Sprandom> {
        self.spr.as_deref().map(|(s, _)| s)
    }

    #[inline]
    fn next_sprandom(&mut self) -> GenOp {
        let len = self.sizes[0];
        let (spr, perm) = &mut **self.spr.as_mut().expect("checked");
        let b = spr.next(|| perm.next());
        self.ended = b.is_none();
        GenOp {
            req: IoReq {
                file: self.file_lo as u32,
                offset: b.unwrap_or(0) * self.align + self.base,
                len,
                write: true,
                ioprio: 0,
            },
            entry: 0,
            random: true,
            trim: false,
            sync: 0,
        }
    }

    /// fio's read_iolog: the thread's start (the log's time zero).
    pub fn replay_start(&mut self, now_ns: u64) {
        if let Some(r) = self.replay.as_mut() {
            r.start(now_ns);
        }
    }

    /// fio's read_iolog: when the request last drawn is due (0: now, or not a replay).
    #[inline(always)]
    pub fn replay_due(&self) -> u64 {
        self.replay.as_ref().map_or(0, |r| r.due())
    }

    #[inline]
    pub fn next_op(&mut self) -> GenOp {
        if let Some(u) = self.uniform {
            let file = self.draw_file();
            let offset = below(self.rng.next_u64(), u.slots) * self.align + self.base;
            let req = IoReq { file: (self.file_lo + file) as u32, offset, len: u.len, write: u.write, ioprio: 0 };
            return GenOp { req, entry: 0, random: true, trim: false, sync: 0 };
        }
        if let Some(r) = self.replay.as_mut() {
            use super::replay::{DATASYNC, SYNC, TRIM, WRITE};
            let Some([file, action, offset, len]) = r.next() else {
                self.ended = true; // the log is done
                let req = IoReq { file: 0, offset: 0, len: 0, write: false, ioprio: 0 };
                return GenOp { req, entry: 0, random: false, trim: false, sync: 0 };
            };
            let sync = match action {
                SYNC => 1,
                DATASYNC => 2,
                _ => 0,
            };
            let len = if sync == 0 { len as u32 } else { 0 };
            let req = IoReq { file: file as u32, offset, len, write: action == WRITE, ioprio: 0 };
            return GenOp { req, entry: 0, random: false, trim: action == TRIM, sync };
        }
        if self.max_ios > 0 {
            self.drawn += 1;
            if self.drawn > self.max_ios {
                self.ended = true; // fio's number_ios: the thread has issued its requests
            }
        }
        if let Some(w) = self.then_write.take() {
            return w;
        }
        if self.spr.is_some() {
            return self.next_sprandom();
        }
        let mut entry = self.draw_entry();
        let mut len = self.sizes[entry];
        let write = !self.chance(self.read_thr[entry]);
        let trim = write && self.chance(self.trim_thr[entry]);
        let random = self.chance(self.rand_thr[entry]);
        let dir = if trim { 2 } else { write as usize };
        if self.pass_ios > 0 && !random {
            // fio's next loop starts the region again from its start.
            if self.pass_done == self.pass_ios {
                self.pass_done = 0;
                self.seq_pos = [self.seq_lo; 3];
                if let Some(w) = self.walk.as_mut() {
                    w.restart();
                }
            }
            self.pass_done += 1;
        }
        let (file, offset) = if let Some(w) = self.walk.as_mut() {
            // One file per thread (checked): fio's strided zones and offset modifier.
            let off = if random { w.next_rand(len as u64, &mut self.rng) } else { None };
            (self.file_lo, off.unwrap_or_else(|| w.next_seq(len as u64)))
        } else if let (true, Some(z)) = (random, self.zones.as_ref()) {
            // `z` borrows self.zones, so `draw_file` and `slots` (which take all of self) cannot be called here.
            let file = if self.file_count > 1 { below(self.rng.next_u64(), self.file_count) } else { 0 };
            let slots = (self.file_size - len as u64) / self.align + 1;
            (self.file_lo + file, z.block(dir, &mut self.rng).min(slots - 1) * self.align)
        } else if let (true, Some(q)) = (random, self.sequence.as_mut()) {
            let slots = (self.file_size - len as u64) / self.align + 1; // `q` borrows self: no `slots`
            (self.file_lo, q.next(dir, slots) * self.align)
        } else if random && self.skew.is_some() {
            let file = self.draw_file();
            // `if let` would hold the borrow of self.skew across the draws from self.rng below.
            #[allow(clippy::unnecessary_unwrap)]
            let skew = self.skew.as_ref().expect("checked");
            let mut b = skew.block(skew.rank(&mut self.rng), self.file_lo + file);
            // A block too near the end for this request size folds back inside the file.
            let slots = self.slots(len);
            while b >= slots {
                b -= slots;
            }
            (self.file_lo + file, b * self.align)
        } else if let (true, Some(dm)) = (random, self.dir_map.as_mut()) {
            let map = self.sized.as_mut().expect("a dir map has a block map");
            match dm.draw(map, &mut self.rng, entry, write, &self.sizes, self.file_size) {
                Some((off, l, e)) => {
                    (len, entry) = (l, e);
                    (self.file_lo, off)
                }
                // The stop rule ended the thread (ended()): the caller issues nothing more.
                None if dm.ended() => {
                    len = 0;
                    (self.file_lo, 0)
                }
                // A time-based run's pass ended: fio drops this request and draws the next one afresh (once:
                // the map is empty now, so the next draw always lands).
                None => return self.next_op(),
            }
        } else if random && self.sized.is_some() {
            let (file, off, l, e) = self.map_draw(entry);
            (len, entry) = (l, e);
            (self.file_lo + file, off)
        } else if random && self.perm.is_some() {
            let per_file = self.file_size / self.align;
            let b = self.perm.as_mut().map_or(0, |p| p.next());
            (self.file_lo + b / per_file, (b % per_file) * self.align)
        } else if random {
            let file = self.draw_file();
            let slots = self.slots(len);
            (self.file_lo + file, below(self.rng.next_u64(), slots) * self.align)
        } else {
            let d = if self.seq_dirs { dir } else { 0 };
            if self.sizes.len() > 1 {
                (len, entry) = self.seq_fit(entry, len, d);
            }
            self.next_sequential(len as u64, d)
        };
        let op = GenOp {
            req: IoReq { file: file as u32, offset: offset + self.base, len, write: write && !trim, ioprio: 0 },
            entry,
            random,
            trim,
            sync: 0,
        };
        if trim && self.trim_then_write {
            self.then_write = Some(GenOp { req: IoReq { write: true, ..op.req }, trim: false, ..op });
        }
        op
    }

    /// fio's sequential walk with several sizes (get_next_buflen's io_u_fits): a size that would run
    /// past the end of the file or of the thread's share gives way to the first later size of the same
    /// direction that fits, else to a new draw, as for the random map; so the walk ends exactly at the
    /// end, as fio's does. When no size fits, the walk starts again as with one size.
    #[inline]
    fn seq_fit(&mut self, entry: usize, len: u32, d: usize) -> (u32, usize) {
        let fs = self.file_size;
        let pos = self.seq_pos[d];
        if pos >= self.seq_hi {
            return (len, entry);
        }
        let room = self.seq_hi.min((pos / fs + 1) * fs) - pos;
        if len as u64 <= room {
            return (len, entry);
        }
        self.fitting_entry(entry, room, true).map_or((len, entry), |k| (self.sizes[k], k))
    }

    /// fio's choice of a size that fits in `room` bytes (get_next_buflen with io_u_fits): the drawn
    /// entry or the first later one that fits, else a new draw, up to 64 draws; then the smallest that
    /// fits. With `same_dir`, only entries of the drawn entry's direction count. None: no size fits.
    #[inline]
    fn fitting_entry(&mut self, entry: usize, room: u64, same_dir: bool) -> Option<usize> {
        let class = same_dir.then(|| (self.read_thr[entry], self.trim_thr[entry], self.rand_thr[entry]));
        let fits = |g: &Self, k: usize| {
            g.sizes[k] as u64 <= room && class.is_none_or(|c| (g.read_thr[k], g.trim_thr[k], g.rand_thr[k]) == c)
        };
        let mut e = entry;
        for _ in 0..64 {
            if let Some(k) = (e..self.sizes.len()).find(|&k| fits(self, k)) {
                return Some(k);
            }
            e = self.draw_entry();
        }
        (0..self.sizes.len()).filter(|&k| fits(self, k)).min_by_key(|&k| self.sizes[k])
    }

    #[inline]
    fn next_sequential(&mut self, len: u64, d: usize) -> (u64, u64) {
        let fs = self.file_size;
        for _ in 0..4 {
            if self.seq_pos[d] + len > self.seq_hi {
                self.seq_pos[d] = self.seq_lo;
            }
            let (file, off) = (self.seq_pos[d] / fs, self.seq_pos[d] % fs);
            if off + len <= fs {
                self.seq_pos[d] += len;
                return (file, off);
            }
            self.seq_pos[d] = (file + 1) * fs;
        }
        // A share too small for this request size: restart at its first file.
        let file = (self.seq_lo / fs).min(self.file_lo + self.file_count - 1);
        self.seq_pos[d] = file * fs + len;
        (file, 0)
    }
}

pub(super) fn lcm(a: u64, b: u64) -> u64 {
    let (mut x, mut y) = (a.max(1), b.max(1));
    while y != 0 {
        (x, y) = (y, x % y);
    }
    a.max(1) / x * b.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::access::spec::tests::{e, spec};
    use crate::workload::access::ThreadRegion;

    /// fio's offset_increment: three threads on one 1 MiB file, 16 KiB writes every 128 KiB (rw=write:112k) from
    /// 120 KiB + t * 256 KiB: each thread stays in its region, starts it again after `pass_ios` writes (fio's
    /// next loop), and where a write would run past the region's end (fio's pass ends there).
    #[test]
    fn each_thread_walks_its_own_region() {
        let mut s = spec(vec![e(16384, 100.0, 0.0, 0.0)], 1, 1 << 20);
        s.seq_add = 112 << 10;
        s.thread_regions = (0..3u64)
            .map(|t| {
                let start = (120 << 10) + t * (256 << 10);
                ThreadRegion { start, len: (1 << 20) - start, bytes: 0, pass_ios: if t == 0 { 3 } else { 0 } }
            })
            .collect();
        let offs = |tid: usize, n: usize| {
            let mut g = AccessGen::new(&s, 1, tid, 3);
            (0..n).map(|_| g.next_op().req.offset >> 10).collect::<Vec<_>>()
        };
        // Thread 0: its pass of 3 writes, then the same 3 again.
        assert_eq!(offs(0, 6), vec![120, 248, 376, 120, 248, 376]);
        // Thread 2 (from 632 KiB, 392 KiB long): 3 writes fit (the 4th would end past 1024 KiB), then its start again.
        assert_eq!(offs(2, 5), vec![632, 760, 888, 632, 760]);
        // Thread 1 (from 376 KiB): 5 writes fit before the file's end.
        assert_eq!(offs(1, 6), vec![376, 504, 632, 760, 888, 376]);
    }

    /// The uniform case (`Uniform`) draws what the general path draws: for plain random reads and
    /// writes over one or several files, per-thread files, a region offset and several threads, the
    /// same requests with the fast case on and off; and a mix, a skew or a map is not taken for it.
    #[test]
    fn the_uniform_case_draws_what_the_general_path_draws() {
        let mut cases = [
            spec(vec![e(4096, 100.0, 100.0, 100.0)], 1, 1 << 30),
            spec(vec![e(4096, 100.0, 0.0, 100.0)], 1, 1 << 30),
            spec(vec![e(65536, 100.0, 100.0, 100.0)], 5, 3 << 20),
            spec(vec![e(4096, 100.0, 0.0, 100.0)], 8, 1 << 20),
            spec(vec![e(4096, 100.0, 100.0, 100.0)], 1, 4096),
        ];
        cases[3].thread_files = true;
        cases[2].offset = 8192;
        for (k, s) in cases.iter().enumerate() {
            for (tid, n) in [(0, 1), (1, 4), (3, 4)] {
                let mut fast = AccessGen::new(s, 42, tid, n);
                let mut general = AccessGen::new(s, 42, tid, n);
                assert!(fast.uniform.is_some(), "case {k} is a uniform case");
                general.uniform = None;
                for i in 0..20_000 {
                    assert_eq!(fast.next_op(), general.next_op(), "case {k}, thread {tid} of {n}, request {i}");
                }
            }
        }
        let mut skewed = spec(vec![e(4096, 100.0, 100.0, 100.0)], 1, 1 << 20);
        skewed.random_distribution = "zipf:1.2".into();
        let mut mapped = spec(vec![e(4096, 100.0, 100.0, 100.0)], 1, 1 << 20);
        mapped.random_map = true;
        let others = [
            spec(vec![e(4096, 100.0, 50.0, 100.0)], 1, 1 << 20),
            spec(vec![e(4096, 100.0, 100.0, 50.0)], 1, 1 << 20),
            spec(vec![e(4096, 50.0, 100.0, 100.0), e(8192, 50.0, 100.0, 100.0)], 1, 1 << 20),
            skewed,
            mapped,
        ];
        for (k, s) in others.iter().enumerate() {
            assert!(AccessGen::new(s, 42, 0, 1).uniform.is_none(), "other case {k} is not uniform");
        }
    }

    #[test]
    fn random_offsets_stay_inside_and_aligned() {
        let s = spec(vec![e(4096, 50.0, 50.0, 100.0), e(65536, 50.0, 50.0, 100.0)], 3, 1 << 20);
        let mut g = AccessGen::new(&s, 7, 0, 1);
        for _ in 0..200_000 {
            let op = g.next_op();
            assert!(op.random);
            assert!(op.req.file < 3);
            assert_eq!(op.req.offset % 512, 0, "offset {} not aligned", op.req.offset);
            assert!(op.req.offset + op.req.len as u64 <= 1 << 20, "{:?} runs past the file", op.req);
        }
    }

    #[test]
    fn same_seed_same_sequence_other_seed_other_sequence() {
        let s = spec(vec![e(4096, 60.0, 80.0, 50.0), e(512, 40.0, 20.0, 100.0)], 2, 1 << 20);
        let a: Vec<GenOp> = {
            let mut g = AccessGen::new(&s, 42, 0, 1);
            (0..1000).map(|_| g.next_op()).collect()
        };
        let b: Vec<GenOp> = {
            let mut g = AccessGen::new(&s, 42, 0, 1);
            (0..1000).map(|_| g.next_op()).collect()
        };
        let c: Vec<GenOp> = {
            let mut g = AccessGen::new(&s, 43, 0, 1);
            (0..1000).map(|_| g.next_op()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn sequential_single_thread_covers_every_byte_once_per_pass() {
        let s = spec(vec![e(8192, 100.0, 100.0, 0.0)], 2, 64 * 1024);
        let mut g = AccessGen::new(&s, 1, 0, 1);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..16 {
            let op = g.next_op();
            assert!(!op.req.write && !op.random);
            assert!(seen.insert((op.req.file, op.req.offset)), "{:?} repeated within one pass", op.req);
        }
        assert_eq!(seen.len(), 16);
        // The 17th request wraps to the start.
        assert_eq!(g.next_op().req.offset, 0);
    }

    /// fio's rw=rw (fio 3.33's write_iolog of size=1m, bs=64k: reads at 0, 64k, 128k, writes at 0, 64k, ...):
    /// each direction walks from the region's start on its own; without seq_per_direction they share one walk.
    #[test]
    fn a_sequential_mix_walks_each_direction_on_its_own() {
        let mut s = spec(vec![e(65536, 100.0, 50.0, 0.0)], 1, 1 << 20);
        let walk = |s: &AccessSpec| {
            let mut g = AccessGen::new(s, 3, 0, 1);
            let (mut reads, mut writes) = (vec![], vec![]);
            for _ in 0..16 {
                let op = g.next_op();
                if op.req.write { &mut writes } else { &mut reads }.push(op.req.offset);
            }
            (reads, writes)
        };
        let (reads, writes) = walk(&s);
        assert!(!reads.is_empty() && !writes.is_empty());
        let from_start = |v: &Vec<u64>| v.iter().enumerate().all(|(i, &o)| o == i as u64 * 65536);
        assert!(!from_start(&reads) || !from_start(&writes), "one shared walk");
        s.seq_per_direction = true;
        let (reads, writes) = walk(&s);
        assert!(from_start(&reads) && from_start(&writes), "{reads:?} {writes:?}");
    }

    #[test]
    fn sequential_threads_get_disjoint_shares() {
        let s = spec(vec![e(4096, 100.0, 100.0, 0.0)], 1, 1 << 20);
        let mut a = AccessGen::new(&s, 1, 0, 2);
        let mut b = AccessGen::new(&s, 1, 1, 2);
        for _ in 0..128 {
            assert!(a.next_op().req.offset < 1 << 19);
            assert!(b.next_op().req.offset >= 1 << 19);
        }
    }

    #[test]
    fn sequential_shares_start_on_the_direct_alignment() {
        // 3 threads over 3 MiB + 1536 B: a 512-aligned share starts thread 1 at 1 MiB + 512.
        let s = spec(vec![e(4096, 100.0, 100.0, 0.0)], 1, (3 << 20) + 1536);
        let plain = AccessGen::new(&s, 1, 1, 3).next_op().req.offset;
        assert_ne!(plain % 4096, 0);
        for tid in 0..3 {
            let mut g = AccessGen::with_share_align(&s, 1, tid, 3, lcm(512, 4096));
            for _ in 0..1000 {
                assert_eq!(g.next_op().req.offset % 4096, 0);
            }
        }
        assert_eq!(lcm(512, 4096), 4096);
        assert_eq!(lcm(3000, 4096), 1_536_000);
    }

    #[test]
    fn thread_files_and_offset_keep_each_thread_in_its_own_region() {
        // fio's per-job files: 2 threads x 2 files each, a 64 KiB region after a 16 KiB offset.
        let mut s = spec(vec![e(4096, 50.0, 50.0, 50.0)], 4, 64 * 1024);
        s.thread_files = true;
        s.offset = 16 * 1024;
        for tid in 0..2u32 {
            let mut g = AccessGen::new(&s, 3, tid as usize, 2);
            for _ in 0..10_000 {
                let op = g.next_op();
                assert!(op.req.file / 2 == tid, "thread {tid} touched file {}", op.req.file);
                assert!(op.req.offset >= 16 * 1024 && op.req.offset + 4096 <= 80 * 1024, "{:?}", op.req);
            }
        }
    }

    #[test]
    fn a_shared_file_run_works_on_the_run_offset_region() {
        // IOR -C: laid out at [64 KiB, 128 KiB), run on the neighbour's [128 KiB, 192 KiB).
        let mut s = spec(vec![e(4096, 50.0, 50.0, 50.0)], 1, 64 * 1024);
        s.shared_file = true;
        s.offset = 64 * 1024;
        s.run_offset = Some(128 * 1024);
        let mut g = AccessGen::new(&s, 3, 0, 1);
        for _ in 0..10_000 {
            let op = g.next_op();
            assert!(op.req.offset >= 128 * 1024 && op.req.offset + 4096 <= 192 * 1024, "{:?}", op.req);
        }
    }

    #[test]
    fn random_map_visits_every_block_once_per_pass() {
        for n in [1u64, 2, 3, 1000, 4096, 5000] {
            let mut p = BlockPerm::new(n, 0xDEAD_BEEF);
            for _pass in 0..2 {
                let mut seen = vec![false; n as usize];
                for _ in 0..n {
                    let b = p.next() as usize;
                    assert!(!seen[b], "block {b} of {n} twice in one pass");
                    seen[b] = true;
                }
            }
        }
        // Through the generator: 2 threads x 2 files of 16 blocks each, every block of a thread's files once.
        let mut s = spec(vec![e(4096, 100.0, 100.0, 100.0)], 4, 64 * 1024);
        s.alignment = 4096;
        s.thread_files = true;
        s.random_map = true;
        for tid in 0..2usize {
            let mut g = AccessGen::new(&s, 5, tid, 2);
            let mut seen = std::collections::HashSet::new();
            for _ in 0..32 {
                let op = g.next_op();
                assert!(seen.insert((op.req.file, op.req.offset)), "{:?} twice", op.req);
                assert_eq!(op.req.file as usize / 2, tid);
            }
        }
    }

    #[test]
    fn several_sizes_with_a_random_map_cover_each_block_once_per_pass() {
        // fio's random map over 512-byte blocks with a bssplit: requests are shortened at blocks already done, so
        // one pass moves exactly the files' bytes, each block once, and needs more requests than the sizes' mean
        // says (fio: 11,133 + 2,827 I/Os, not 5,900, for 64 MiB of iometer-file-access-server).
        let mut s =
            spec(vec![e(512, 10.0, 80.0, 100.0), e(4096, 60.0, 80.0, 100.0), e(65536, 30.0, 80.0, 100.0)], 2, 1 << 20);
        s.alignment = 512;
        s.random_map = true;
        let mut g = AccessGen::new(&s, 11, 0, 1);
        let blocks = 2 * (1 << 20) / 512;
        let mut seen = vec![false; blocks];
        let (mut bytes, mut n, mut short) = (0u64, 0u64, 0u64);
        while bytes < 2 << 20 {
            let op = g.next_op();
            assert_eq!(op.req.offset % 512, 0);
            assert!(op.req.offset + op.req.len as u64 <= 1 << 20, "{:?} runs past its file", op.req);
            assert!(op.req.len as usize <= [512, 4096, 65536][op.entry]);
            short += (op.req.len != [512, 4096, 65536][op.entry]) as u64;
            for b in 0..op.req.len as u64 / 512 {
                let i = (op.req.file as u64 * (1 << 20) + op.req.offset) / 512 + b;
                assert!(!seen[i as usize], "block {i} twice in one pass");
                seen[i as usize] = true;
            }
            bytes += op.req.len as u64;
            n += 1;
        }
        assert_eq!(bytes, 2 << 20);
        assert!(seen.iter().all(|&x| x));
        // The sizes' mean is 22,170 bytes: 95 requests if none were shortened.
        assert!(short > 0 && n > 95, "{n} requests, {short} shortened");
        // The next pass starts over.
        let op = g.next_op();
        assert!(op.req.len > 0);
    }

    #[test]
    fn weights_and_read_fraction_follow_the_spec() {
        // 3 sigma of a binomial proportion over n = 400k draws is < 0.25%.
        let s =
            spec(vec![e(512, 10.0, 80.0, 100.0), e(4096, 60.0, 80.0, 100.0), e(65536, 30.0, 80.0, 100.0)], 1, 1 << 20);
        let mut g = AccessGen::new(&s, 9, 0, 1);
        let n = 400_000;
        let mut counts = [0u64; 3];
        let mut reads = 0u64;
        for _ in 0..n {
            let op = g.next_op();
            counts[op.entry] += 1;
            reads += !op.req.write as u64;
        }
        for (c, w) in counts.iter().zip([0.10, 0.60, 0.30]) {
            assert!((*c as f64 / n as f64 - w).abs() < 0.005, "{counts:?}");
        }
        assert!((reads as f64 / n as f64 - 0.80).abs() < 0.005);
    }
}
