//! fio's offset shapes beyond a skewed distribution, with fio's meanings:
//!
//! - zoned distributions (`zoned:ACCESS/SIZE%:...` and `zoned_abs:ACCESS/BYTES:...`, one list per
//!   direction after commas): a random request picks a zone by its share of the accesses, then a
//!   block uniformly inside it;
//! - the `sequence:B0,B1,...` distribution: random requests visit those blocks in that order, over
//!   and over, or (`random_sequence_stride`) in groups that move on by the sequence's length;
//! - strided zones (fio's `zonemode=strided`): `zone_size` bytes are transferred inside a zone of
//!   `zone_range` bytes, then the next zone starts `zone_range + zone_skip` bytes further on,
//!   back at the start of the file once past its end;
//! - the sequential offset modifier (fio's `rw=read:-8k`): after each request the next one starts
//!   that many bytes further (negative: back), wrapping at the ends of the file.
//!
//! A sequential request that would run past the end of the file starts the walk again at the
//! beginning (the first zone), as fio 3.33 does (checked against its I/O log).
//!
//! Everything a draw needs is built with the generator; a draw is a table lookup and one or two
//! random numbers, with no allocation.

use rand_core::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Lemire's multiply-shift: a uniform integer in [0, n).
#[inline(always)]
fn below(x: u64, n: u64) -> u64 {
    ((x as u128 * n as u128) >> 64) as u64
}

/// At most this many blocks in a `sequence:` distribution.
pub const SEQUENCE_MAX: usize = 65_536;

/// One zone of a zoned distribution: its share of the accesses in percent, and its size (percent of
/// the file for `zoned`, bytes for `zoned_abs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    pub access_pct: u32,
    pub size: u64,
}

/// A zoned distribution as written: zones for reads, writes and trims (an empty list: uniform over
/// the file for that direction).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneSplit {
    pub absolute: bool,
    pub dirs: [Vec<Zone>; 3],
}

impl ZoneSplit {
    /// fio's syntax: one list for every direction, or `READS,WRITES` (trims as writes), or
    /// `READS,WRITES,TRIMS`. In a list, entries `ACCESS/SIZE` separated by ':'; for `zoned` a
    /// missing (or 0) size shares what the others leave of 100% equally; the access shares add up
    /// to 100. `zoned_abs` sizes are plain byte counts here (the Python side converts 10G and such).
    pub fn parse(s: &str) -> Result<ZoneSplit, String> {
        let s = s.trim();
        let (absolute, body) = if let Some(b) = s.strip_prefix("zoned_abs:") {
            (true, b)
        } else if let Some(b) = s.strip_prefix("zoned:") {
            (false, b)
        } else {
            return Err(format!("{s:?}: write zoned:ACCESS%/SIZE%:... or zoned_abs:ACCESS%/BYTES:..."));
        };
        let lists: Vec<&str> = body.split(',').collect();
        if lists.len() > 3 {
            return Err(format!("{s:?}: at most three lists (reads, writes, trims) separated by ','"));
        }
        let mut dirs: [Vec<Zone>; 3] = [vec![], vec![], vec![]];
        for (d, zones) in dirs.iter_mut().enumerate() {
            *zones = parse_zone_list(lists[d.min(lists.len() - 1)], absolute, s)?;
        }
        if dirs.iter().all(|z| z.is_empty()) {
            return Err(format!("{s:?}: give at least one zone, ACCESS%/SIZE"));
        }
        Ok(ZoneSplit { absolute, dirs })
    }

    /// Bytes the zones of `zoned_abs` cover in their largest direction (0 for `zoned`).
    pub fn abs_bytes(&self) -> u64 {
        if !self.absolute {
            return 0;
        }
        self.dirs.iter().map(|z| z.iter().map(|z| z.size).sum::<u64>()).max().unwrap_or(0)
    }
}

fn parse_zone_list(list: &str, absolute: bool, s: &str) -> Result<Vec<Zone>, String> {
    let mut zones: Vec<(u32, Option<u64>)> = vec![];
    for item in list.split(':') {
        let item = item.trim();
        if item.is_empty() {
            break; // fio stops reading a list at an empty entry
        }
        let (a, size) = match item.split_once('/') {
            Some((a, z)) => (a.trim(), Some(z.trim())),
            None => (item, None),
        };
        let access = a
            .parse::<u32>()
            .ok()
            .filter(|v| *v <= 100)
            .ok_or_else(|| format!("{s:?}: {a:?} is not a whole percentage (0 to 100) of the accesses"))?;
        let size = match size {
            Some(z) if !z.is_empty() => {
                let v = z.parse::<u64>().map_err(|_| {
                    format!("{s:?}: {z:?} is not {}", if absolute { "a number of bytes" } else { "a whole percentage" })
                })?;
                match (absolute, v) {
                    (true, _) => Some(v),
                    (false, 0) => None, // fio reads 0 as "not given"
                    (false, v) => Some(v.min(100)),
                }
            }
            _ if absolute => return Err(format!("{s:?}: zoned_abs gives every zone a size: ACCESS%/BYTES")),
            _ => None,
        };
        zones.push((access, size));
    }
    if zones.is_empty() {
        return Ok(vec![]);
    }
    let access: u32 = zones.iter().map(|z| z.0).sum();
    if access != 100 {
        return Err(format!("{s:?}: the access percentages of a list add up to {access}, not 100"));
    }
    let given: u64 = zones.iter().filter_map(|z| z.1).sum();
    let missing = zones.iter().filter(|z| z.1.is_none()).count() as u64;
    if !absolute && given > 100 {
        return Err(format!("{s:?}: the size percentages of a list add up to {given}, more than 100"));
    }
    let share = if missing > 0 && !absolute { (100 - given) / missing } else { 0 };
    Ok(zones.into_iter().map(|(a, z)| Zone { access_pct: a, size: z.unwrap_or(share) }).collect())
}

/// A zoned distribution bound to a file: for each direction, the zone (first block, blocks) of each
/// of the 100 access percents.
#[derive(Clone, Debug)]
pub struct ZoneIndex {
    table: Vec<[(u64, u64); 100]>,
}

impl ZoneIndex {
    /// `lastb`: the blocks a random request may start on (fio's last_block: the file less the part
    /// of the smallest request beyond one alignment unit, in `align` units).
    pub fn new(split: &ZoneSplit, lastb: u64, align: u64) -> ZoneIndex {
        let align = align.max(1);
        let mut table = vec![[(0u64, lastb); 100]; 3];
        for (d, zones) in split.dirs.iter().enumerate() {
            let (mut aprev, mut sprev) = (0usize, 0u64);
            for z in zones {
                let send = sprev + z.size;
                let (start, n) = if split.absolute {
                    (sprev / align, send / align - sprev / align)
                } else {
                    (sprev * lastb / 100, lastb * z.size / 100)
                };
                let end = (aprev + z.access_pct as usize).min(100);
                for slot in &mut table[d][aprev..end] {
                    *slot = (start, n);
                }
                aprev = end;
                sprev = send;
            }
        }
        ZoneIndex { table }
    }

    /// A block for a request of direction `dir` (0 read, 1 write, 2 trim).
    #[inline]
    pub fn block(&self, dir: usize, rng: &mut Xoshiro256PlusPlus) -> u64 {
        let (start, n) = self.table[dir][below(rng.next_u64(), 100) as usize];
        start + if n > 1 { below(rng.next_u64(), n) } else { 0 }
    }
}

/// `sequence:B0,B1,...`: the block indices, in order.
pub fn parse_sequence(s: &str) -> Result<Vec<u64>, String> {
    let s = s.trim();
    let body = s.strip_prefix("sequence:").ok_or_else(|| format!("{s:?}: write sequence:B0,B1,..."))?;
    let mut out = vec![];
    for t in body.split(',') {
        let t = t.trim();
        if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit()) {
            return Err(format!("{s:?}: {t:?} is not a block number (0, 1, 2 ...)"));
        }
        out.push(t.parse::<u64>().map_err(|_| format!("{s:?}: {t:?} is too large a block number"))?);
        if out.len() > SEQUENCE_MAX {
            return Err(format!("{s:?}: at most {SEQUENCE_MAX} blocks"));
        }
    }
    Ok(out)
}

/// A thread's walk through a `sequence:` distribution, counted per direction as fio counts issues.
#[derive(Clone, Debug)]
pub struct SequenceWalk {
    blocks: Vec<u64>,
    stride: bool,
    issued: [u64; 3],
}

impl SequenceWalk {
    pub fn new(blocks: Vec<u64>, stride: bool) -> SequenceWalk {
        SequenceWalk { blocks, stride, issued: [0; 3] }
    }

    /// The next block of direction `dir`; below `slots` (a block past them starts the walk again:
    /// fio ends the job there, and a fio job file's byte count stops before it).
    #[inline]
    pub fn next(&mut self, dir: usize, slots: u64) -> u64 {
        let n = self.blocks.len() as u64;
        let c = self.issued[dir];
        let base = self.blocks[(c % n) as usize];
        let b = if self.stride { c / n * n + base } else { base };
        self.issued[dir] = c + 1;
        if b < slots {
            return b;
        }
        self.issued[dir] = 1;
        self.blocks[0].min(slots.saturating_sub(1))
    }
}

/// A thread's sequential walk through one file region of `size` bytes with fio's zones or offset
/// modifier (relative offsets; the generator adds the region's start).
#[derive(Clone, Debug)]
pub struct Walk {
    size: u64,
    /// fio's `rw=...:N` on a sequential pattern: bytes added after each request (0: none).
    add: i64,
    /// Strided zones: (zone_size, zone_range, zone_skip), or None.
    zones: Option<(u64, u64, u64)>,
    /// Where the current zone starts, bytes transferred in it, where the last request ended.
    zone_start: u64,
    zone_bytes: u64,
    last_end: u64,
    /// Random requests inside a zone: the blocks of `align` bytes they may start on.
    zone_blocks: u64,
    align: u64,
}

impl Walk {
    pub fn new(size: u64, add: i64, zones: Option<(u64, u64, u64)>, align: u64, min_len: u64) -> Walk {
        let align = align.max(1);
        let zone_blocks = zones.map_or(0, |(_, range, _)| range.saturating_sub(min_len.saturating_sub(align)) / align);
        Walk { size, add, zones, zone_start: 0, zone_bytes: 0, last_end: 0, zone_blocks, align }
    }

    /// fio moves to the next zone before choosing each request's offset.
    #[inline]
    fn enter_zone(&mut self) {
        if let Some((zsize, range, skip)) = self.zones {
            if self.zone_bytes >= zsize {
                self.zone_bytes = 0;
                self.zone_start += range + skip;
                if self.zone_start >= self.size {
                    self.zone_start = 0;
                }
                self.last_end = self.zone_start;
            }
            if self.last_end >= self.zone_start + range {
                self.last_end = self.zone_start;
            }
        }
    }

    /// Back to the start of the file (its first zone), as a new pass of fio's.
    pub fn restart(&mut self) {
        self.zone_start = 0;
        self.zone_bytes = 0;
        self.last_end = 0;
    }

    /// The offset of the next sequential request of `len` bytes.
    #[inline]
    pub fn next_seq(&mut self, len: u64) -> u64 {
        self.enter_zone();
        let mut pos = self.last_end;
        if pos != 0 && self.add != 0 {
            let p = pos as i128 + self.add as i128;
            pos = if p < 0 || p >= self.size as i128 {
                // Past either end: holes start again at the beginning, a backwards walk at the end.
                if self.add > 0 {
                    0
                } else {
                    (self.size as i128 + self.add as i128).max(0) as u64
                }
            } else {
                p as u64
            };
        }
        if pos + len > self.size {
            // A request that would not fit: fio starts the file again (its first zone, from scratch).
            pos = 0;
            self.zone_start = 0;
            self.zone_bytes = 0;
        }
        self.last_end = pos + len;
        self.zone_bytes += len;
        pos
    }

    /// The offset of the next random request inside the current zone (without zones: None).
    #[inline]
    pub fn next_rand(&mut self, len: u64, rng: &mut Xoshiro256PlusPlus) -> Option<u64> {
        self.zones?;
        self.enter_zone();
        let b = if self.zone_blocks > 1 { below(rng.next_u64(), self.zone_blocks) } else { 0 };
        let mut pos = self.zone_start + b * self.align;
        if pos + len > self.size {
            pos = (self.size - len) / self.align * self.align;
        }
        self.zone_bytes += len;
        Some(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoned_lists_follow_fios_rules() {
        let z = ZoneSplit::parse("zoned:50/5:30/15:20/").unwrap();
        let want = vec![
            Zone { access_pct: 50, size: 5 },
            Zone { access_pct: 30, size: 15 },
            Zone { access_pct: 20, size: 80 },
        ];
        assert!(!z.absolute);
        assert_eq!(z.dirs, [want.clone(), want.clone(), want.clone()]);
        // Two lists: reads, then writes and trims.
        let z = ZoneSplit::parse("zoned:50/5:30/15:20/,50/10:50/90").unwrap();
        assert_eq!(z.dirs[0], want);
        assert_eq!(z.dirs[1], vec![Zone { access_pct: 50, size: 10 }, Zone { access_pct: 50, size: 90 }]);
        assert_eq!(z.dirs[2], z.dirs[1]);
        // Two sizes missing share the rest equally (integer percent, as fio).
        let z = ZoneSplit::parse("zoned:60/10:20:20").unwrap();
        assert_eq!(z.dirs[0].iter().map(|z| z.size).collect::<Vec<_>>(), vec![10, 45, 45]);
        let z = ZoneSplit::parse("zoned_abs:60/4096:40/8192").unwrap();
        assert!(z.absolute);
        assert_eq!(z.abs_bytes(), 12288);
        for bad in [
            "zoned:50/5:30/15",
            "zoned:50/60:50/60",
            "zoned:x/5:100/",
            "zoned_abs:50/1k:50/",
            "zoned:",
            "zoned:1,2,3,4",
        ] {
            assert!(ZoneSplit::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn the_zone_index_is_fios_table() {
        // 1000 blocks; 50% of the accesses on blocks [0, 50), 30% on [50, 200), 20% on [200, 1000).
        let z = ZoneSplit::parse("zoned:50/5:30/15:20/").unwrap();
        let idx = ZoneIndex::new(&z, 1000, 4096);
        assert_eq!(idx.table[0][0], (0, 50));
        assert_eq!(idx.table[0][49], (0, 50));
        assert_eq!(idx.table[0][50], (50, 150));
        assert_eq!(idx.table[0][79], (50, 150));
        assert_eq!(idx.table[0][80], (200, 800));
        assert_eq!(idx.table[0][99], (200, 800));
        let a = ZoneSplit::parse("zoned_abs:60/40960:40/81920").unwrap();
        let idx = ZoneIndex::new(&a, 1000, 4096);
        assert_eq!(idx.table[1][0], (0, 10));
        assert_eq!(idx.table[1][60], (10, 20));
    }

    #[test]
    fn sequences_repeat_or_stride() {
        assert_eq!(parse_sequence("sequence:2,0,1").unwrap(), vec![2, 0, 1]);
        for bad in ["sequence:", "sequence:1,-2", "sequence:a", "sequence:1,,2", "zoned:1"] {
            assert!(parse_sequence(bad).is_err(), "{bad} accepted");
        }
        let mut w = SequenceWalk::new(vec![2, 0, 1], false);
        assert_eq!((0..6).map(|_| w.next(0, 12)).collect::<Vec<_>>(), vec![2, 0, 1, 2, 0, 1]);
        let mut w = SequenceWalk::new(vec![2, 0, 1], true);
        assert_eq!((0..6).map(|_| w.next(0, 12)).collect::<Vec<_>>(), vec![2, 0, 1, 5, 3, 4]);
        // Directions count apart.
        assert_eq!(w.next(1, 12), 2);
    }
}
