//! Data verification for the replay family (`verify = "pattern"`).
//!
//! dbench writes at any offset and size (not whole blocks), so there is no room
//! for fsmeter's block headers. Instead every byte a client writes is a pure
//! function of the client's key and the byte's offset in its file (`pattern_byte`),
//! and each client keeps, per load-file path, the byte ranges written since the
//! file was created or truncated. A read is checked on the bytes that overlap
//! those ranges; bytes never written (a file made before the run, a hole) are
//! not checked. The ranges follow the file through Rename (of files and of
//! directories), and are dropped by Unlink, Deltree and a truncating NTCreateX.
//! Rewrites put the same bytes at the same offsets, so a stale block (an old
//! write that was lost) cannot be told from the new one here; data at the wrong
//! offset, zeros, torn or short writes and damaged bytes are found.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::verify::content::{byte_mismatch, ContentCheck};
use crate::verify::payload::{payload_word, splitmix};

/// The written ranges of one file: sorted, disjoint, [start, end).
pub(super) type Ranges = Vec<(u64, u64)>;

/// Path bytes (as interned in the load file) -> path id, for renames of directories.
pub(super) type PathIds = Arc<HashMap<Vec<u8>, u32>>;

/// The key of one client's data: its seed and its number.
pub(super) fn client_key(seed: u64, client: usize) -> u64 {
    splitmix(seed ^ splitmix(client as u64 + 1))
}

/// Word `w` (bytes 8w .. 8w+8 of a file) of the client with `key`: the verified blocks' payload
/// word (a table look-up and two XORs, as cheap as a copy, where a hash per word cost a third of
/// dbench's speed), here indexed by the word's place in the file.
#[inline(always)]
fn word(key: u64, w: u64) -> u64 {
    payload_word(key, w as usize)
}

#[inline]
pub(super) fn pattern_byte(key: u64, offset: u64) -> u8 {
    word(key, offset >> 3).to_le_bytes()[(offset & 7) as usize]
}

/// Fill `buf` with the bytes that belong at [offset, offset + buf.len()).
pub(super) fn fill(buf: &mut [u8], key: u64, offset: u64) {
    // The bytes before the first whole word, then whole words, then the rest.
    let head = (((8 - (offset & 7)) & 7) as usize).min(buf.len());
    for (k, b) in buf[..head].iter_mut().enumerate() {
        *b = pattern_byte(key, offset + k as u64);
    }
    let first = (offset + head as u64) >> 3;
    let body = &mut buf[head..];
    let words = body.len() / 8;
    for (k, w) in body.chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&word(key, first + k as u64).to_le_bytes());
    }
    let done = head + words * 8;
    for (k, b) in buf.iter_mut().enumerate().skip(done) {
        *b = pattern_byte(key, offset + k as u64);
    }
}

/// One client's written ranges, by path id.
pub(super) struct Written {
    pub(super) key: u64,
    pub(super) ranges: Vec<Ranges>,
    pub(super) ids: PathIds,
    pub(super) check: ContentCheck,
    /// The expected bytes of a read are made here and compared in bulk.
    scratch: Vec<u8>,
}

impl Written {
    pub(super) fn new(key: u64, paths: usize, ids: PathIds, max_io: usize) -> Written {
        Written {
            key,
            ranges: vec![Vec::new(); paths],
            ids,
            check: ContentCheck::new(None),
            scratch: vec![0u8; max_io.max(4096)],
        }
    }

    /// Record [start, end) of `id` as written (merging with neighbours).
    pub(super) fn record(&mut self, id: u32, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let r = &mut self.ranges[id as usize];
        // The first range that ends at or after `start` (may touch or overlap).
        let i = r.partition_point(|&(_, e)| e < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        while j < r.len() && r[j].0 <= end {
            s = s.min(r[j].0);
            e = e.max(r[j].1);
            j += 1;
        }
        r.splice(i..j, std::iter::once((s, e)));
    }

    pub(super) fn forget(&mut self, id: u32) {
        self.ranges[id as usize].clear();
    }

    fn each_below(&self, dir: &[u8], mut f: impl FnMut(u32, &[u8])) {
        let mut prefix = dir.to_vec();
        prefix.push(b'/');
        for (p, &id) in self.ids.iter() {
            if p.starts_with(&prefix) {
                f(id, &p[prefix.len()..]);
            }
        }
    }

    /// Deltree: every file below `dir` is gone.
    pub(super) fn forget_below(&mut self, dir: &[u8]) {
        let mut ids = Vec::new();
        self.each_below(dir, |id, _| ids.push(id));
        for id in ids {
            self.forget(id);
        }
    }

    /// Rename `from` to `to` (a file, or a directory and everything below it).
    pub(super) fn rename(&mut self, from: u32, to: u32, from_path: &[u8], to_path: &[u8]) {
        let moved = std::mem::take(&mut self.ranges[from as usize]);
        self.ranges[to as usize] = moved;
        let mut pairs = Vec::new();
        self.each_below(from_path, |id, rest| {
            let mut dst = to_path.to_vec();
            dst.push(b'/');
            dst.extend_from_slice(rest);
            pairs.push((id, dst));
        });
        for (id, dst) in pairs {
            let r = std::mem::take(&mut self.ranges[id as usize]);
            if let Some(&to_id) = self.ids.get(&dst) {
                self.ranges[to_id as usize] = r;
            }
            // A name the load file never uses again: nothing will read it.
        }
    }

    /// Check `data`, read from `offset` of path `id` (its name for messages), on the written bytes.
    #[inline]
    pub(super) fn check_read(
        &mut self,
        id: u32,
        offset: u64,
        data: &[u8],
        name: impl Fn() -> String,
        phase: &'static str,
    ) {
        let end = offset + data.len() as u64;
        let mut i = self.ranges[id as usize].partition_point(|&(_, e)| e <= offset);
        while let Some(&(rs, re)) = self.ranges[id as usize].get(i).filter(|r| r.0 < end) {
            let (s, e) = (rs.max(offset), re.min(end));
            self.check.checked += 1;
            let got = &data[(s - offset) as usize..(e - offset) as usize];
            let mut at = 0usize;
            while at < got.len() {
                let n = (got.len() - at).min(self.scratch.len());
                fill(&mut self.scratch[..n], self.key, s + at as u64);
                if self.scratch[..n] != got[at..at + n] {
                    let first = at + (0..n).position(|k| self.scratch[k] != got[at + k]).unwrap_or(0);
                    self.note(name(), s, got, first, phase);
                    break;
                }
                at += n;
            }
            i += 1;
        }
    }

    #[cold]
    fn note(&mut self, file: String, start: u64, got: &[u8], first: usize, phase: &'static str) {
        let mut exp = vec![0u8; got.len()];
        fill(&mut exp, self.key, start);
        let m: Value = byte_mismatch(&file, start, got.len(), phase, &exp, got, first);
        self.check.note(m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(paths: &[&[u8]]) -> Written {
        let ids: HashMap<Vec<u8>, u32> = paths.iter().enumerate().map(|(i, p)| (p.to_vec(), i as u32)).collect();
        Written::new(7, paths.len(), Arc::new(ids), 64)
    }

    #[test]
    fn ranges_merge() {
        let mut x = w(&[b"/a"]);
        for (s, e) in [(10, 20), (30, 40), (20, 25), (5, 8), (39, 50), (0, 1)] {
            x.record(0, s, e);
        }
        assert_eq!(x.ranges[0], vec![(0, 1), (5, 8), (10, 25), (30, 50)]);
        x.record(0, 0, 100);
        assert_eq!(x.ranges[0], vec![(0, 100)]);
    }

    #[test]
    fn fill_agrees_with_the_byte_function() {
        for (off, len) in [(13u64, 77usize), (0, 8), (5, 2), (8191, 20_000), (3, 0)] {
            let mut b = vec![0u8; len];
            fill(&mut b, 99, off);
            for (k, &v) in b.iter().enumerate() {
                assert_eq!(v, pattern_byte(99, off + k as u64), "{off} {len} {k}");
            }
        }
        // Not a repeating 8 KiB pattern, and another client's bytes differ.
        let (mut a, mut b) = (vec![0u8; 16384], vec![0u8; 8192]);
        fill(&mut a, 99, 0);
        assert_ne!(a[..8192], a[8192..]);
        fill(&mut b, 100, 0);
        assert_ne!(a[..8192], b[..]);
    }

    #[test]
    fn reads_are_checked_on_written_bytes_only_and_follow_renames() {
        let mut x = w(&[b"/d", b"/d/f", b"/e", b"/e/f"]);
        x.record(1, 100, 200);
        let mut data = vec![0u8; 300];
        fill(&mut data[100..200], x.key, 100);
        x.check_read(1, 0, &data, || "f".into(), "run");
        assert_eq!(x.check.mismatches, 0, "bytes outside the written range are not checked");
        data[150] ^= 1;
        x.check_read(1, 0, &data, || "f".into(), "run");
        assert_eq!(x.check.mismatches, 1);
        assert_eq!(x.check.kept[0]["first_diff_offset"], 150);
        // the directory moves, and the file's ranges with it
        x.rename(0, 2, b"/d", b"/e");
        assert!(x.ranges[1].is_empty());
        assert_eq!(x.ranges[3], vec![(100, 200)]);
        x.forget_below(b"/e");
        assert!(x.ranges[3].is_empty());
    }
}
