//! The drive's state over time, and the service of each request.
//!
//! Requests are served one at a time (one actuator). A request that reaches the media costs the
//! controller's overhead, then the positioning (seek to the cylinder, or a head switch, plus the
//! write settle for writes), then the rotational wait until its first sector passes under the head
//! (the platter's angle is `t / revolution` mod 1, a function of time alone), then the media
//! transfer, track by track (each further track: a head switch or a one-cylinder seek, and the wait
//! for its first block, which the skew places just after the switch). The host's transfer overlaps
//! the media's; a request ends no sooner than its bytes cross the interface.
//!
//! The buffer (Ruemmler and Wilkes, section "Caching"; DiskSim's segments):
//!
//! - after a read from the media the drive goes on reading ahead into the read's segment, up to
//!   `read_ahead_sectors` past the last block asked for, while no other request needs the head;
//!   a read found in a segment is a hit (overhead + interface transfer); a read that begins in the
//!   segment being filled (or that the read-ahead will reach before its limit) waits only until the
//!   read-ahead reaches its end ("immediate transfer of a partial hit"), and the read-ahead goes on
//!   past it, so a sequential stream of small reads runs at the media rate, also when its requests
//!   reach a reordering queue out of order. Where the profile says so (DiskSim's "read-ahead on
//!   idle hit"), a read that reaches the end of a stopped read-ahead starts it again. A read that
//!   begins in a segment and runs past it reads only the rest from the media. Segments are
//!   replaced least recently used first.
//! - with the write cache on, a write completes once in the buffer (overhead + interface transfer)
//!   while the dirty data fits in `write_cache_sectors`, without waiting for the actuator (a destage
//!   under way goes on: DiskSim's fast writes); otherwise it first waits for destaging. The
//!   drive destages while idle (once its read-ahead is done), a segment's worth at a time, oldest
//!   first (or nearest first with a reordering queue); a destage, once begun, is finished before the
//!   next request that needs the actuator. A cache flush (the host's FLUSH CACHE: a loop device's fsync) completes when
//!   every dirty block is on the media. With the write cache off a write completes on the media.
//! - a read of blocks that are dirty in the write cache is a hit.
//!
//! Not modelled: spare sectors and defects, zero-latency (out-of-order) track reads, the
//! difference between seeks inward and outward, thermal recalibration, bus arbitration and
//! disconnection, and the drive's adaptive segmentation.

use std::collections::VecDeque;

use crate::geometry::{Geometry, Place, Track, SECTOR_BYTES};
use crate::seek::SeekCurve;
use crate::spec::{bad, DriveSpec, Policy, SpecError};

const MS: f64 = 1e6;
/// A rotational wait this close to a whole revolution (ns) is taken for no wait: the head arrived
/// at its sector, give or take the nanosecond the completion times are rounded up to.
const ARRIVAL_SLACK_NS: f64 = 2.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    /// FLUSH CACHE: every dirty block to the media.
    Flush,
    /// Discard (punch hole): these drives know no TRIM; answered at once, the range forgotten.
    Discard,
    /// Write zeroes: a media write of the range (WRITE SAME) whose data crosses the interface once.
    WriteZeroes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub op: Op,
    /// First logical block.
    pub lbn: u64,
    /// Blocks (512 bytes each).
    pub sectors: u64,
}

/// How one request was served; every time is absolute (ns).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Service {
    /// When the drive took it up (after the requests before it, and a destage it had begun).
    pub start: u64,
    /// When it completes: the reply's due time.
    pub end: u64,
    pub overhead_ns: f64,
    pub seek_ns: f64,
    pub rotation_ns: f64,
    pub transfer_ns: f64,
    /// Time spent destaging the write cache on its behalf (a flush, or a write waiting for room).
    pub destage_ns: f64,
    /// Time the drive spent reading ahead while it waited for this request (it was idle since its
    /// last request, but the read-ahead went on): media work a sequential stream's next request
    /// collects as a buffer hit. Service times plus these are the time the media was busy.
    pub readahead_ns: f64,
    /// Served from the buffer (a read hit, or a write taken into the write cache).
    pub hit: bool,
}

/// The compiled drive: geometry, seek curve and every time in nanoseconds.
#[derive(Debug, Clone)]
pub struct Drive {
    pub name: String,
    pub geometry: Geometry,
    pub seek: SeekCurve,
    /// One revolution, ns.
    pub rev_ns: f64,
    pub settle_ns: f64,
    pub head_switch_ns: f64,
    pub read_hit_ns: f64,
    pub read_miss_ns: f64,
    pub write_hit_ns: f64,
    pub write_miss_ns: f64,
    /// Interface time per byte, ns.
    pub bus_ns_per_byte: f64,
    pub segments: usize,
    pub segment_sectors: u64,
    pub read_ahead_sectors: u64,
    pub read_ahead_on_hit: bool,
    pub write_cache: bool,
    pub write_cache_sectors: u64,
    pub policy: Policy,
    pub queue_depth: usize,
}

impl Drive {
    pub fn new(spec: &DriveSpec) -> Result<Drive, SpecError> {
        spec.check()?;
        let geometry = Geometry::new(spec)?;
        let seek = SeekCurve::new(&spec.seek, geometry.cylinders)?;
        if spec.cache.segment_sectors as u64 > geometry.capacity {
            return bad("cache.segment_sectors: a segment larger than the disk");
        }
        let o = &spec.overhead;
        Ok(Drive {
            name: spec.name.clone(),
            rev_ns: 60.0e9 / spec.rpm,
            settle_ns: spec.write_settle_ms * MS,
            head_switch_ns: spec.head_switch_ms * MS,
            read_hit_ns: o.read_hit_ms * MS,
            read_miss_ns: o.read_miss_ms * MS,
            write_hit_ns: o.write_hit_ms * MS,
            write_miss_ns: o.write_miss_ms * MS,
            bus_ns_per_byte: 1e3 / spec.bus_mb_s,
            segments: spec.cache.segments as usize,
            segment_sectors: spec.cache.segment_sectors as u64,
            read_ahead_sectors: spec.cache.read_ahead_sectors as u64,
            read_ahead_on_hit: spec.cache.read_ahead_on_hit,
            write_cache: spec.cache.write_cache,
            write_cache_sectors: spec.cache.write_cache_sectors as u64,
            policy: spec.queue.policy,
            queue_depth: spec.queue.depth as usize,
            geometry,
            seek,
        })
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.geometry.capacity * SECTOR_BYTES
    }

    fn seek_ns(&self, from: u32, to: u32) -> f64 {
        self.seek.ms(from.abs_diff(to)) * MS
    }

    /// Rotational wait at time `t` until `place`'s block begins under the head, ns.
    fn rotation_wait(&self, t: f64, place: &Place) -> f64 {
        let now = (t / self.rev_ns).fract();
        let mut frac = self.geometry.angle(place) - now;
        if frac < 0.0 {
            frac += 1.0;
        }
        let wait = frac * self.rev_ns;
        if wait > self.rev_ns - ARRIVAL_SLACK_NS {
            0.0
        } else {
            wait
        }
    }

    /// Move the head from `from` at time `t` to the start of `lbn`'s block: (arrival time at the
    /// block's start, positioning ns, rotational ns, the track).
    fn reposition(&self, from: Track, t: f64, lbn: u64, write: bool) -> (f64, f64, f64, Track) {
        let place = self.geometry.place(lbn);
        let to = place.track;
        let mut pos = if to.cylinder != from.cylinder {
            self.seek_ns(from.cylinder, to.cylinder)
        } else if to.surface != from.surface {
            self.head_switch_ns
        } else {
            0.0
        };
        if write && pos > 0.0 {
            pos += self.settle_ns;
        }
        let rot = self.rotation_wait(t + pos, &place);
        (t + pos + rot, pos, rot, to)
    }

    fn sector_ns(&self, place: &Place) -> f64 {
        self.rev_ns / self.geometry.zones[place.zone].spt as f64
    }

    /// Position on `lbn` from `from` at `t` and transfer `n` blocks to or from the media.
    fn access(&self, from: Track, t: f64, lbn: u64, n: u64, write: bool) -> Access {
        let mut a = Access { end: t, seek_ns: 0.0, rotation_ns: 0.0, transfer_ns: 0.0, track: from };
        let (mut at, end) = (lbn, lbn + n);
        while at < end {
            let (t0, pos, rot, track) = self.reposition(a.track, a.end, at, write);
            let place = self.geometry.place(at);
            let k = (self.geometry.left_on_track(&place) as u64).min(end - at);
            let xfer = k as f64 * self.sector_ns(&place);
            a.seek_ns += pos;
            a.rotation_ns += rot;
            a.transfer_ns += xfer;
            a.end = t0 + xfer;
            a.track = track;
            at += k;
        }
        a
    }

    /// The sustained media rate of a read streaming one cylinder's blocks from `lbn`, bytes per
    /// second: its sectors over the time from the start of its first block to the start of the next
    /// cylinder's first block (every head switch of the cylinder and the cylinder switch included,
    /// as a maker's "sustained" rate counts them).
    pub fn streaming_rate(&self, lbn: u64) -> f64 {
        let place = self.geometry.place(lbn);
        let spt = self.geometry.zones[place.zone].spt as u64;
        let n = (spt * self.geometry.surfaces as u64).min(self.geometry.capacity - lbn);
        // Start already on the block (no initial wait), stream the cylinder and the next block.
        let t0 = 1e12 + self.geometry.angle(&place) * self.rev_ns;
        let (end, next) = if lbn + n < self.geometry.capacity {
            let a = self.access(place.track, t0, lbn, n + 1, false);
            (a.end - self.sector_ns(&self.geometry.place(lbn + n)), n)
        } else {
            (self.access(place.track, t0, lbn, n, false).end, n)
        };
        next as f64 * SECTOR_BYTES as f64 / ((end - t0) / 1e9)
    }
}

struct Access {
    end: f64,
    seek_ns: f64,
    rotation_ns: f64,
    transfer_ns: f64,
    track: Track,
}

/// A segment of the read buffer: blocks [start, end) are in it.
#[derive(Debug, Clone, Copy)]
struct Segment {
    start: u64,
    end: u64,
    used: u64,
    valid: bool,
}

/// The read-ahead under way: the head streams `next..limit` into segment `seg`, reaching the start
/// of block `next` at time `t`.
#[derive(Debug, Clone, Copy)]
struct Prefetch {
    seg: usize,
    next: u64,
    t: f64,
    limit: u64,
    track: Track,
}

/// A dirty range of the write cache.
#[derive(Debug, Clone, Copy)]
struct Extent {
    start: u64,
    end: u64,
}

/// The drive and its state.
pub struct Model {
    pub drive: Drive,
    /// The actuator is committed until then (a request, or a destage once begun).
    busy_until: f64,
    /// The controller and interface are free from then: the end of the last request served. A write
    /// the cache takes waits for them only, not for the actuator (its destage goes on meanwhile).
    bus_free: f64,
    /// The time the drive was busy (a request in service, or the actuator destaging), ns, and the
    /// end of the busy time counted so far (intervals are counted once where they overlap).
    busy_ns: f64,
    busy_mark: f64,
    track: Track,
    segments: Vec<Segment>,
    prefetch: Option<Prefetch>,
    /// The segment the last read-ahead filled.
    read_ahead_seg: Option<usize>,
    dirty: VecDeque<Extent>,
    dirty_sectors: u64,
    /// The write cache as set now (the drive's default until changed).
    pub write_cache: bool,
    clock: u64,
}

impl Model {
    pub fn new(drive: Drive) -> Model {
        let segments = vec![Segment { start: 0, end: 0, used: 0, valid: false }; drive.segments];
        Model {
            write_cache: drive.write_cache,
            drive,
            busy_until: 0.0,
            bus_free: 0.0,
            busy_ns: 0.0,
            busy_mark: 0.0,
            track: Track { cylinder: 0, surface: 0 },
            segments,
            prefetch: None,
            read_ahead_seg: None,
            dirty: VecDeque::new(),
            dirty_sectors: 0,
            clock: 0,
        }
    }

    /// The time the drive has been busy since it started, ns: serving a request (a cached write's
    /// interface transfer included) or writing its cache back, each instant counted once. The
    /// read-ahead is not counted: most of it is speculative (after a random read the heads read on
    /// until the next request), so a sequential stream's busy time is undercounted by the media
    /// work its read-ahead did between its requests.
    pub fn busy_ns(&self) -> u64 {
        self.busy_ns.round() as u64
    }

    /// Count [from, to] as busy time (the part not counted yet).
    fn count_busy(&mut self, from: f64, to: f64) {
        let from = from.max(self.busy_mark);
        if to > from {
            self.busy_ns += to - from;
            self.busy_mark = to;
        }
    }

    /// Blocks dirty in the write cache.
    pub fn dirty_sectors(&self) -> u64 {
        self.dirty_sectors
    }

    /// Where the head is.
    pub fn head(&self) -> Track {
        self.track
    }

    /// Advance the read-ahead `p` to time `until` (or its limit): blocks read, track switches made.
    fn stream(&self, p: &mut Prefetch, until: f64) {
        while p.next < p.limit && p.t < until {
            let place = self.drive.geometry.place(p.next);
            let left = (self.drive.geometry.left_on_track(&place) as u64).min(p.limit - p.next);
            let sect = self.drive.sector_ns(&place);
            let avail = ((until - p.t) / sect).floor();
            if avail < left as f64 {
                let k = avail.max(0.0) as u64;
                p.next += k;
                p.t += k as f64 * sect;
                return;
            }
            p.next += left;
            p.t += left as f64 * sect;
            p.track = place.track;
            if p.next < p.limit && p.next < self.drive.geometry.capacity {
                let (t0, _, _, track) = self.drive.reposition(p.track, p.t, p.next, false);
                p.t = t0;
                p.track = track;
            } else if p.next >= self.drive.geometry.capacity {
                p.limit = p.next;
            }
        }
    }

    /// When the read-ahead `p` will have read every block before `target` (ns).
    fn reached_at(&self, p: &Prefetch, target: u64) -> f64 {
        if target <= p.next {
            return 0.0; // already in the segment
        }
        let mut q = *p;
        q.limit = target.min(q.limit);
        self.stream(&mut q, f64::INFINITY);
        q.t
    }

    /// Apply the read-ahead's progress to its segment, up to time `t`.
    fn prefetch_to(&mut self, t: f64) {
        if let Some(mut p) = self.prefetch {
            self.stream(&mut p, t);
            let seg_sectors = self.drive.segment_sectors;
            let s = &mut self.segments[p.seg];
            s.end = p.next;
            s.start = s.start.max(s.end.saturating_sub(seg_sectors));
            self.track = p.track;
            self.prefetch = if p.next < p.limit { Some(p) } else { None };
            if self.prefetch.is_none() {
                // done: the head rests where the read-ahead ended, free from then on
                self.busy_until = self.busy_until.max(p.t);
            }
        }
    }

    /// Stop the read-ahead at time `t` (the head is needed elsewhere).
    fn stop_prefetch(&mut self, t: f64) {
        self.prefetch_to(t);
        self.prefetch = None;
    }

    /// What the idle drive does until time `t`: read ahead, then destage.
    fn idle_until(&mut self, t: f64) {
        loop {
            if let Some(p) = self.prefetch {
                let done = self.reached_at(&p, p.limit);
                if done >= t {
                    self.prefetch_to(t);
                    return;
                }
                self.prefetch_to(done);
                self.busy_until = self.busy_until.max(done);
            }
            // Idle only when there is time left before t (completions are whole nanoseconds).
            if self.dirty.is_empty() || self.busy_until + ARRIVAL_SLACK_NS >= t {
                return;
            }
            // not before the last request's data is in (a cached write taken during a destage)
            let start = self.busy_until.max(self.bus_free);
            self.destage_one(start);
        }
    }

    /// Write one piece of dirty data (a segment's worth at most) to the media, from time `t`.
    /// Returns the ns it took.
    fn destage_one(&mut self, t: f64) -> f64 {
        let i = match self.drive.policy {
            Policy::Fifo => 0,
            Policy::Satf => {
                let mut best = (f64::INFINITY, 0);
                for (i, e) in self.dirty.iter().enumerate().take(self.drive.queue_depth.max(1)) {
                    let (t0, ..) = self.drive.reposition(self.track, t, e.start, true);
                    if t0 < best.0 {
                        best = (t0, i);
                    }
                }
                best.1
            }
        };
        let e = self.dirty[i];
        let n = (e.end - e.start).min(self.drive.segment_sectors.max(1));
        let a = self.drive.access(self.track, t, e.start, n, true);
        self.track = a.track;
        if e.start + n >= e.end {
            self.dirty.remove(i);
        } else {
            self.dirty[i].start += n;
        }
        self.dirty_sectors -= n;
        self.busy_until = a.end;
        self.count_busy(t, a.end);
        a.end - t
    }

    fn add_dirty(&mut self, start: u64, end: u64) {
        // Overlaps are taken out of the older extents first (the new data supersedes them), then the
        // new extent joins one it continues ("combine sequential writes").
        self.forget_dirty(start, end);
        if let Some(last) = self.dirty.back_mut() {
            if last.end == start {
                last.end = end;
                self.dirty_sectors += end - start;
                return;
            }
        }
        self.dirty.push_back(Extent { start, end });
        self.dirty_sectors += end - start;
    }

    fn forget_dirty(&mut self, start: u64, end: u64) {
        let mut kept = VecDeque::with_capacity(self.dirty.len() + 1);
        for e in self.dirty.drain(..) {
            if e.end <= start || e.start >= end {
                kept.push_back(e);
                continue;
            }
            if e.start < start {
                kept.push_back(Extent { start: e.start, end: start });
            }
            if e.end > end {
                kept.push_back(Extent { start: end, end: e.end });
            }
        }
        self.dirty = kept;
        self.dirty_sectors = self.dirty.iter().map(|e| e.end - e.start).sum();
    }

    fn in_dirty(&self, start: u64, end: u64) -> bool {
        // Whole range covered by dirty extents (they do not overlap each other).
        let mut covered = 0;
        for e in &self.dirty {
            let (a, b) = (e.start.max(start), e.end.min(end));
            if a < b {
                covered += b - a;
            }
        }
        covered == end - start
    }

    fn invalidate_segments(&mut self, start: u64, end: u64) {
        for (i, s) in self.segments.iter_mut().enumerate() {
            if s.valid && s.start < end && start < s.end {
                s.valid = false;
                if self.prefetch.is_some_and(|p| p.seg == i) {
                    self.prefetch = None;
                }
            }
        }
    }

    fn lru_segment(&mut self) -> usize {
        let i = self
            .segments
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| if s.valid { s.used } else { 0 })
            .map(|(i, _)| i)
            .unwrap_or(0);
        if self.prefetch.is_some_and(|p| p.seg == i) {
            self.prefetch = None;
        }
        i
    }

    fn bus_ns(&self, sectors: u64) -> f64 {
        (sectors * SECTOR_BYTES) as f64 * self.drive.bus_ns_per_byte
    }

    /// How a read of [start, end) would be found: Some((segment, true)) when it is a full hit, or the
    /// read-ahead's segment (false) when it begins inside what the read-ahead has read or will read
    /// before its limit: the drive waits for the read-ahead rather than abort it.
    fn read_hit(&self, start: u64, end: u64) -> Option<(usize, bool)> {
        for (i, s) in self.segments.iter().enumerate() {
            if s.valid && s.start <= start && end <= s.end {
                return Some((i, true));
            }
        }
        if let Some(p) = self.prefetch {
            let s = &self.segments[p.seg];
            if s.valid && s.start <= start && start <= p.limit {
                return Some((p.seg, false));
            }
        }
        None
    }

    /// Serve `req`, arrived at `arrival` (ns), once the drive is free; returns how.
    pub fn serve(&mut self, req: Request, arrival: u64) -> Service {
        let cap = self.drive.geometry.capacity;
        let start_lbn = req.lbn.min(cap);
        let end_lbn = (req.lbn + req.sectors).min(cap);
        let n = end_lbn - start_lbn;
        // A write the cache takes needs the controller and the interface, not the actuator: it does
        // not wait for a destage under way (DiskSim's fast writes; a drive reconnects for the data
        // while its heads write back older data). Everything else waits for the actuator too.
        let cached_write =
            matches!(req.op, Op::Write | Op::WriteZeroes) && self.write_cache && n <= self.drive.write_cache_sectors;
        let mut s = (arrival as f64).max(self.bus_free);
        if !cached_write {
            s = s.max(self.busy_until);
        }
        let readahead_ns = match self.prefetch {
            Some(p) if s > self.busy_until => (self.reached_at(&p, p.limit).min(s) - self.busy_until.max(p.t)).max(0.0),
            _ => 0.0,
        };
        self.idle_until(s);
        if !cached_write {
            s = s.max(self.busy_until);
        }
        let mut svc = Service { start: s.ceil() as u64, readahead_ns, ..Service::default() };
        self.clock += 1;
        let end = match req.op {
            Op::Read if n == 0 => s + self.drive.read_hit_ns,
            Op::Read => self.serve_read(start_lbn, end_lbn, s, &mut svc),
            Op::Write | Op::WriteZeroes => {
                let bus_sectors = if req.op == Op::Write { n } else { n.min(1) };
                self.serve_write(start_lbn, end_lbn, bus_sectors, s, &mut svc)
            }
            Op::Flush => {
                self.stop_prefetch(s);
                let mut t = s;
                while !self.dirty.is_empty() {
                    t += self.destage_one(t);
                }
                svc.destage_ns = t - s;
                t
            }
            Op::Discard => {
                self.invalidate_segments(start_lbn, end_lbn);
                self.forget_dirty(start_lbn, end_lbn);
                s
            }
        };
        svc.end = end.ceil() as u64;
        // After a cached write that found the actuator idle too: its data cannot be written back before
        // it has arrived. One that came during a destage leaves the actuator's time alone (the next
        // destage follows the one under way, on the sectors under the head).
        if !cached_write || self.busy_until <= s {
            self.busy_until = self.busy_until.max(svc.end as f64);
        }
        self.bus_free = svc.end as f64;
        self.count_busy(s, svc.end as f64);
        svc
    }

    fn serve_read(&mut self, start: u64, end: u64, s: f64, svc: &mut Service) -> f64 {
        let n = end - start;
        let bus = self.bus_ns(n);
        if self.write_cache && !self.dirty.is_empty() && self.in_dirty(start, end) {
            svc.hit = true;
            svc.overhead_ns = self.drive.read_hit_ns;
            svc.transfer_ns = bus;
            return s + self.drive.read_hit_ns + bus;
        }
        match self.read_hit(start, end) {
            Some((seg, true)) => {
                svc.hit = true;
                svc.overhead_ns = self.drive.read_hit_ns;
                svc.transfer_ns = bus;
                self.segments[seg].used = self.clock;
                let cap = self.drive.geometry.capacity;
                if let Some(p) = self.prefetch.as_mut() {
                    if p.seg == seg {
                        p.limit = p.limit.max((end + self.drive.read_ahead_sectors).min(cap));
                    }
                } else if self.drive.read_ahead_on_hit
                    && self.read_ahead_seg == Some(seg)
                    && end == self.segments[seg].end
                    && end < cap
                {
                    // the stream caught up with a stopped read-ahead: read ahead again from its end
                    let (t0, _, _, track) = self.drive.reposition(self.track, s, end, false);
                    let limit = (end + self.drive.read_ahead_sectors).min(cap);
                    self.prefetch = Some(Prefetch { seg, next: end, t: t0, limit, track });
                }
                s + self.drive.read_hit_ns + bus
            }
            Some((seg, false)) => {
                // The read-ahead is filling this segment: wait until it has read our last block.
                let cap = self.drive.geometry.capacity;
                if let Some(p) = self.prefetch.as_mut() {
                    p.limit = p.limit.max((end + self.drive.read_ahead_sectors).min(cap));
                }
                let p = self.prefetch.expect("a partial hit is on the read-ahead's segment");
                let ready = self.reached_at(&p, end);
                svc.hit = true;
                svc.overhead_ns = self.drive.read_hit_ns;
                svc.transfer_ns = (ready - s).max(0.0);
                self.segments[seg].used = self.clock;
                // the last block still has to cross the interface
                (s + self.drive.read_hit_ns + bus).max(ready + self.bus_ns(1))
            }
            None => {
                self.stop_prefetch(s);
                // A read that begins in a segment takes that part from the buffer and only the rest
                // from the media (a partial hit on data the read-ahead left there).
                let from = self
                    .segments
                    .iter()
                    .filter(|g| g.valid && g.start <= start && start < g.end)
                    .map(|g| g.end)
                    .max()
                    .unwrap_or(start);
                let t = s + self.drive.read_miss_ns;
                let a = self.drive.access(self.track, t, from, end - from, false);
                self.track = a.track;
                svc.overhead_ns = self.drive.read_miss_ns;
                svc.seek_ns = a.seek_ns;
                svc.rotation_ns = a.rotation_ns;
                svc.transfer_ns = a.transfer_ns;
                let done = a.end.max(s + self.drive.read_miss_ns + bus);
                if self.drive.segments > 0 {
                    let seg = self.lru_segment();
                    self.segments[seg] = Segment {
                        start: end.saturating_sub(self.drive.segment_sectors).max(start),
                        end,
                        used: self.clock,
                        valid: true,
                    };
                    let limit = (end + self.drive.read_ahead_sectors).min(self.drive.geometry.capacity);
                    if limit > end {
                        let mut p = Prefetch { seg, next: end, t: a.end, limit, track: a.track };
                        // the head goes on to the next track if the read ended at a track's end
                        let last = self.drive.geometry.place(end - 1);
                        if self.drive.geometry.left_on_track(&last) == 1 {
                            let (t0, _, _, track) = self.drive.reposition(a.track, a.end, end, false);
                            p.t = t0;
                            p.track = track;
                        }
                        self.prefetch = Some(p);
                        self.read_ahead_seg = Some(seg);
                    }
                }
                // the actuator is free once the media transfer is done; the read-ahead is preemptible
                self.busy_until = self.busy_until.max(a.end);
                done
            }
        }
    }

    fn serve_write(&mut self, start: u64, end: u64, bus_sectors: u64, s: f64, svc: &mut Service) -> f64 {
        let n = end - start;
        let bus = self.bus_ns(bus_sectors);
        self.stop_prefetch(s);
        self.invalidate_segments(start, end);
        if self.write_cache && n <= self.drive.write_cache_sectors {
            let mut t = s;
            // room first: overlapping dirty data is replaced, not added
            self.forget_dirty(start, end);
            while self.dirty_sectors + n > self.drive.write_cache_sectors && !self.dirty.is_empty() {
                // Room is made by the actuator once it is free: the next destage begins then, and the
                // data it writes back no longer counts against the cache (as for every destage under
                // way); it goes on behind this write.
                t = t.max(self.busy_until);
                self.destage_one(t);
            }
            // (a destage under way when the cache still had room goes on; this write does not wait)
            svc.destage_ns = t - s;
            self.add_dirty(start, end);
            svc.hit = true;
            svc.overhead_ns = self.drive.write_hit_ns;
            svc.transfer_ns = bus;
            return t + self.drive.write_hit_ns + bus;
        }
        // write-through: older dirty copies of these blocks are superseded
        self.forget_dirty(start, end);
        let t = s + self.drive.write_miss_ns;
        let a = self.drive.access(self.track, t, start, n, true);
        self.track = a.track;
        svc.overhead_ns = self.drive.write_miss_ns;
        svc.seek_ns = a.seek_ns;
        svc.rotation_ns = a.rotation_ns;
        svc.transfer_ns = a.transfer_ns;
        a.end.max(t + bus)
    }

    /// Which of the queued requests (in arrival order; the drive sees the first `queue_depth`) the
    /// drive takes up next at time `t`: the first (FIFO), or the one whose media access would begin
    /// soonest (SATF; buffer hits and cached writes first, ties to the older).
    pub fn pick(&self, queue: &[Request], t: u64) -> usize {
        if self.drive.policy == Policy::Fifo || queue.len() < 2 {
            return 0;
        }
        let t = (t as f64).max(self.busy_until);
        let mut best = (f64::INFINITY, 0);
        for (i, r) in queue.iter().enumerate().take(self.drive.queue_depth) {
            let cost = match r.op {
                Op::Flush | Op::Discard => 0.0,
                Op::Write | Op::WriteZeroes if self.write_cache && r.sectors <= self.drive.write_cache_sectors => 0.0,
                Op::Read if self.read_hit(r.lbn, r.lbn + r.sectors).is_some() => 0.0,
                _ => {
                    let lbn = r.lbn.min(self.drive.geometry.capacity.saturating_sub(1));
                    let (t0, ..) = self.drive.reposition(self.track, t, lbn, r.op != Op::Read);
                    t0 - t
                }
            };
            if cost < best.0 {
                best = (cost, i);
            }
        }
        best.1
    }
}
