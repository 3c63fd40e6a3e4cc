//! The IO500 suite's own operations: IOR's transfers in its segmented file
//! layout (the ior-easy and ior-hard phases) and a find over a tree (the find
//! phase). The suite's metadata phases are the tree family's.
//!
//! **IOR layout.** One process of `ranks` writes, in a file of its own or in
//! one shared by all, `segments` blocks of `block` bytes, each in `transfer`
//! requests. Transfer k (counted from 0) of process `rank` is request
//! j = k mod (block / transfer) of segment s = k / (block / transfer), at
//! offset s x ranks x block + rank x block + j x transfer: with one rank and a
//! huge block, a file written from 0 to its end (ior-easy); with block equal to
//! the transfer and many segments, the processes' transfers interleaved in one
//! file (ior-hard). `write` creates the file if needed (never truncating it:
//! other processes write it too), writes transfers `[from, to)` of `ops_range`
//! in order until they are done or a stop request (the stonewall), then, with
//! `fsync`, fsyncs the file inside the measured time (IOR -e). `read` reads the
//! transfers of `read_rank` (IOR -C: another process's, so that it does not
//! read its own cache), each of them in full.
//!
//! **Find.** Walks the `roots` (relative to the job's directory) depth first
//! and stats each entry (fstatat, not following links); an entry counts as
//! found when it is a regular file, `size` bytes long, modified after
//! `newer_than_ns` and its name holds `name_contains` (IO500's
//! `-newer TIMESTAMP -size 3901c -name *01*`). Several processes split the
//! work without talking: every one lists every directory, and each entry is
//! stat'ed and counted by the one process (and thread) `share` names for it, a
//! hash of its path modulo the number of workers. The walk reuses one path
//! buffer; opendir's stream is the only allocation, one per directory.

use std::ffi::CStr;

use serde::Deserialize;

use crate::error::{EngineError, Result};
use crate::measure::{now_ns, run_threads, Control, PhaseTiming, Recorder};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::workload::family::Workload;

const KINDS: &[&str] = &["write", "read", "fsync", "stat"];
const WRITE: usize = 0;
const READ: usize = 1;
const FSYNC: usize = 2;
const STAT: usize = 3;
/// Linux PATH_MAX, NUL included.
const PATH_MAX: usize = 4096;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Io500Spec {
    /// The IOR file, relative to the job's directory.
    #[serde(default)]
    pub file: String,
    #[serde(default = "one")]
    pub transfer: u64,
    #[serde(default = "one")]
    pub block: u64,
    #[serde(default = "one")]
    pub segments: u64,
    #[serde(default = "one")]
    pub ranks: u64,
    #[serde(default)]
    pub rank: u64,
    /// Whose transfers `read` reads (IOR -C); None: this process's own.
    #[serde(default)]
    pub read_rank: Option<u64>,
    #[serde(default)]
    pub fsync: bool,
    /// The transfers a phase does, `[from, to)`; None: all of them.
    #[serde(default)]
    pub ops_range: Option<[u64; 2]>,
    /// Find: where to walk, relative to the job's directory.
    #[serde(default)]
    pub roots: Vec<String>,
    /// Find: only entries modified after this (ns since the epoch; find -newer).
    #[serde(default)]
    pub newer_than_ns: i64,
    /// Find: only regular files of this many bytes (find -size Nc).
    #[serde(default)]
    pub size: u64,
    /// Find: only names holding this (find -name *TEXT*).
    #[serde(default)]
    pub name_contains: String,
    /// Find: this process's share of the entries, `[index, of]`.
    #[serde(default = "whole")]
    pub share: [u64; 2],
}

fn one() -> u64 {
    1
}
fn whole() -> [u64; 2] {
    [0, 1]
}

impl Io500Spec {
    fn per_block(&self) -> u64 {
        self.block / self.transfer
    }

    /// Transfers of one process.
    pub fn transfers(&self) -> u64 {
        self.segments.saturating_mul(self.per_block())
    }

    /// Offset of transfer k of process `rank`.
    #[inline]
    pub fn offset(&self, rank: u64, k: u64) -> u64 {
        let (s, j) = (k / self.per_block(), k % self.per_block());
        s * self.ranks * self.block + rank * self.block + j * self.transfer
    }

    fn range(&self) -> (u64, u64) {
        match self.ops_range {
            Some([a, b]) => (a, b),
            None => (0, self.transfers()),
        }
    }

    pub fn validate(&self) -> Result<()> {
        if self.transfer == 0 || self.transfer > (64 << 20) {
            return Err(EngineError::invalid("transfer", "must be between 1 byte and 64 MiB"));
        }
        if self.block == 0 || !self.block.is_multiple_of(self.transfer) {
            return Err(EngineError::invalid("block", "must be a multiple of transfer (IOR's -b and -t)"));
        }
        if self.ranks == 0 || self.rank >= self.ranks || self.read_rank.is_some_and(|r| r >= self.ranks) {
            return Err(EngineError::invalid("rank", "rank and read_rank must be below ranks"));
        }
        // The last byte of the last segment must fit an off_t.
        let end = self.segments.checked_mul(self.ranks).and_then(|n| n.checked_mul(self.block));
        if self.segments == 0 || end.is_none_or(|e| e > i64::MAX as u64) {
            return Err(EngineError::invalid("segments", "segments x ranks x block must be between 1 and 2^63 bytes"));
        }
        if let Some([a, b]) = self.ops_range {
            if a > b || b > self.transfers() {
                return Err(EngineError::invalid(
                    "ops_range",
                    format!("[{a}, {b}] is not a range of the {} transfers", self.transfers()),
                ));
            }
        }
        if self.share[1] == 0 || self.share[0] >= self.share[1] {
            return Err(EngineError::invalid("share", "[index, of] needs index < of"));
        }
        let bad = |s: &str| s.is_empty() || s.starts_with('/') || s.split('/').any(|c| c == "..") || s.contains('\0');
        if !self.file.is_empty() && bad(self.file.as_str()) {
            return Err(EngineError::invalid("file", "must be a relative path inside the directory, without '..'"));
        }
        if self.roots.iter().any(|r| bad(r.as_str())) {
            return Err(EngineError::invalid(
                "roots",
                "each must be a relative path inside the directory, without '..'",
            ));
        }
        if self.name_contains.contains('/') || self.name_contains.contains('\0') {
            return Err(EngineError::invalid("name_contains", "must not contain '/' or a NUL byte"));
        }
        Ok(())
    }
}

pub struct Io500 {
    spec: Io500Spec,
}

impl Io500 {
    pub fn new(_job: &Settings, spec: Io500Spec) -> Result<Io500> {
        spec.validate()?;
        Ok(Io500 { spec })
    }

    fn cpath(&self, job: &Settings) -> Result<std::ffi::CString> {
        let p = job.dir.join(&self.spec.file);
        std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
            .map_err(|_| EngineError::invalid("file", "must not contain a NUL byte"))
    }

    fn ior(&self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        let spec = &self.spec;
        if spec.file.is_empty() {
            return Err(EngineError::invalid("file", format!("the {phase} phase needs the IOR file's name")));
        }
        let write = phase == "write";
        let path = self.cpath(job)?;
        let flags =
            if write { libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC } else { libc::O_RDONLY | libc::O_CLOEXEC };
        // SAFETY: NUL-terminated path.
        let fd = unsafe { crate::nofollow::open(path.as_ptr(), flags, 0o644) };
        if fd < 0 {
            return Err(EngineError::last_os(format!("open {}", path.to_string_lossy())));
        }
        let (from, to) = spec.range();
        let whose = if write { spec.rank } else { spec.read_rank.unwrap_or(spec.rank) };
        let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
        let size = spec.transfer as usize;
        let res = run_threads(
            phase,
            1,
            timing,
            ctl,
            KINDS,
            3,
            to - from,
            |_| {
                // Bytes that do not compress or deduplicate, different for each process.
                let mut x = job.seed ^ (spec.rank + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let buf: Vec<u8> = (0..size)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                Ok(buf)
            },
            |buf, rec| {
                let mut done = 0u64;
                for k in from..to {
                    if rec.interrupted() {
                        break;
                    }
                    let off = spec.offset(whose, k) as libc::off_t;
                    let t0 = now_ns();
                    // SAFETY: buf holds `size` bytes.
                    let n = unsafe {
                        if write {
                            crate::sys::pwrite(fd, buf.as_ptr() as *const libc::c_void, size, off)
                        } else {
                            crate::sys::pread(fd, buf.as_mut_ptr() as *mut libc::c_void, size, off)
                        }
                    };
                    let t1 = now_ns();
                    if n < 0 {
                        return Err(EngineError::last_os(format!("{phase} {} at {off}", path.to_string_lossy())));
                    }
                    if n as usize != size {
                        let why = if write {
                            "a short write"
                        } else {
                            "the file is shorter than the transfers written: run the write phase first, with as \
                             many transfers"
                        };
                        return Err(EngineError::io(
                            format!("{phase} {} at {off}: {n} of {size} bytes ({why})", path.to_string_lossy()),
                            std::io::Error::from_raw_os_error(libc::EIO),
                        ));
                    }
                    rec.record(if write { WRITE } else { READ }, size as u64, t0, t1);
                    done += 1;
                }
                if write && spec.fsync {
                    let t0 = now_ns();
                    // SAFETY: fd is open.
                    if unsafe { crate::sys::fsync(fd) } != 0 {
                        return Err(EngineError::last_os(format!("fsync {}", path.to_string_lossy())));
                    }
                    rec.record(FSYNC, 0, t0, now_ns());
                }
                Ok(done)
            },
        );
        // SAFETY: we own fd; close reports delayed write errors on some filesystems (NFS).
        let closed = unsafe { crate::sys::close(fd) };
        let (mut report, done) = res?;
        if closed != 0 {
            return Err(EngineError::last_os(format!("close {}", path.to_string_lossy())));
        }
        report.totals_without(&["fsync"]);
        let done: u64 = done.iter().sum();
        report.counters.insert("transfers".into(), done);
        report.extra = serde_json::json!({
            "file": spec.file,
            "transfer": spec.transfer,
            "block": spec.block,
            "segments": spec.segments,
            "ranks": spec.ranks,
            "rank": spec.rank,
            "data_of_rank": whose,
            "ops_range": [from, to],
            "transfers_done": done,
        });
        Ok(report)
    }

    fn find(&self, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        let spec = &self.spec;
        let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
        let workers = spec.share[1] * job.threads as u64;
        let (mut report, found) = run_threads(
            "find",
            job.threads,
            timing,
            ctl,
            KINDS,
            3,
            0,
            |tid| {
                let mut path = Vec::with_capacity(PATH_MAX + 1);
                path.extend_from_slice(job.dir.as_os_str().as_encoded_bytes());
                Ok((path, spec.share[0] * job.threads as u64 + tid as u64))
            },
            |(path, me), rec| {
                let mut w = Walk { spec, me: *me, workers, found: 0, entries: 0, dirs: 0 };
                let base = path.len();
                for root in &spec.roots {
                    path.truncate(base);
                    path.push(b'/');
                    path.extend_from_slice(root.as_bytes());
                    w.dir(path, rec)?;
                }
                Ok([w.found, w.entries, w.dirs])
            },
        )?;
        let sum = |i: usize| found.iter().map(|f| f[i]).sum::<u64>();
        report.counters.insert("found".into(), sum(0));
        report.counters.insert("entries".into(), sum(1));
        report.counters.insert("directories_listed".into(), sum(2));
        report.extra = serde_json::json!({
            "roots": spec.roots,
            "newer_than_ns": spec.newer_than_ns,
            "size": spec.size,
            "name_contains": spec.name_contains,
            "share": spec.share,
        });
        Ok(report)
    }

    fn cleanup(&self, job: &Settings) -> Result<PhaseReport> {
        let mut report = PhaseReport::new("cleanup");
        if !self.spec.file.is_empty() {
            let p = job.dir.join(&self.spec.file);
            match std::fs::remove_file(&p) {
                Ok(()) => {
                    report.counters.insert("files".into(), 1);
                }
                // Another process of a shared file removed it first.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(EngineError::io(format!("unlink {}", p.display()), e)),
            }
        }
        Ok(report)
    }
}

/// One worker's find: its share of the entries and what it found.
struct Walk<'a> {
    spec: &'a Io500Spec,
    me: u64,
    workers: u64,
    found: u64,
    entries: u64,
    dirs: u64,
}

/// FNV-1a of a path: which worker stats the entry.
#[inline]
fn fnv(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Closes a directory stream whatever happens.
struct DirGuard(*mut libc::DIR);

impl Drop for DirGuard {
    fn drop(&mut self) {
        // SAFETY: opened by opendir, closed once.
        unsafe { libc::closedir(self.0) };
    }
}

impl Walk<'_> {
    /// Lists the directory at `path` (no NUL), stats this worker's entries and
    /// descends into every subdirectory.
    fn dir(&mut self, path: &mut Vec<u8>, rec: &mut Recorder) -> Result<()> {
        if path.len() >= PATH_MAX {
            return Err(EngineError::io(
                format!("find: {} is longer than PATH_MAX", String::from_utf8_lossy(path)),
                std::io::Error::from_raw_os_error(libc::ENAMETOOLONG),
            ));
        }
        path.push(0);
        // SAFETY: NUL-terminated path.
        let d = unsafe { libc::opendir(path.as_ptr() as *const libc::c_char) };
        path.pop();
        if d.is_null() {
            return Err(EngineError::last_os(format!("find: opendir {}", String::from_utf8_lossy(path))));
        }
        let _guard = DirGuard(d);
        self.dirs += 1;
        // SAFETY: d is an open stream.
        let dfd = unsafe { libc::dirfd(d) };
        let len = path.len();
        loop {
            if rec.interrupted() {
                return Ok(());
            }
            // SAFETY: d is open; the entry stays valid until the next readdir on it.
            let ent = unsafe { libc::readdir64(d) };
            if ent.is_null() {
                break;
            }
            // SAFETY: d_name is NUL-terminated within the entry.
            let (name, dtype) = unsafe { (CStr::from_ptr((*ent).d_name.as_ptr()), (*ent).d_type) };
            let nb = name.to_bytes();
            if nb == b"." || nb == b".." {
                continue;
            }
            path.push(b'/');
            path.extend_from_slice(nb);
            let mine = fnv(path) % self.workers == self.me;
            let mut is_dir = dtype == libc::DT_DIR;
            if mine || dtype == libc::DT_UNKNOWN {
                // SAFETY: zeroed stat is a valid out-buffer.
                let mut sb: libc::stat64 = unsafe { std::mem::zeroed() };
                let t0 = now_ns();
                // SAFETY: dfd is open; name is NUL-terminated.
                let r = unsafe { libc::fstatat64(dfd, name.as_ptr(), &mut sb, libc::AT_SYMLINK_NOFOLLOW) };
                let t1 = now_ns();
                if r != 0 {
                    let e = std::io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::ENOENT) {
                        return Err(EngineError::io(format!("find: stat {}", String::from_utf8_lossy(path)), e));
                    }
                    // Removed since the listing: not an entry any more.
                    path.truncate(len);
                    continue;
                }
                is_dir = sb.st_mode & libc::S_IFMT == libc::S_IFDIR;
                if mine {
                    rec.record(STAT, 0, t0, t1);
                    self.entries += 1;
                    let mtime = sb.st_mtime as i128 * 1_000_000_000 + sb.st_mtime_nsec as i128;
                    if sb.st_mode & libc::S_IFMT == libc::S_IFREG
                        && sb.st_size as u64 == self.spec.size
                        && mtime > self.spec.newer_than_ns as i128
                        && contains(nb, self.spec.name_contains.as_bytes())
                    {
                        self.found += 1;
                    }
                }
            }
            if is_dir {
                self.dir(path, rec)?;
            }
            path.truncate(len);
        }
        Ok(())
    }
}

#[inline]
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

impl Workload for Io500 {
    fn phases(&self) -> &'static [&'static str] {
        &["write", "read", "find", "cleanup"]
    }

    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        match phase {
            "write" | "read" => self.ior(phase, job, ctl),
            "find" => self.find(job, ctl),
            "cleanup" => self.cleanup(job),
            _ => {
                Err(EngineError::invalid("phase", format!("{phase}: the io500 phases are write, read, find, cleanup")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ior(ranks: u64, rank: u64, transfer: u64, block: u64, segments: u64) -> Io500Spec {
        serde_json::from_value(serde_json::json!({
            "file": "f", "transfer": transfer, "block": block, "segments": segments, "ranks": ranks, "rank": rank,
        }))
        .unwrap()
    }

    #[test]
    fn hard_layout_interleaves_the_ranks_transfers() {
        // ior-hard: block = transfer, segment s of rank r at (s * ranks + r) * transfer.
        let s = ior(3, 1, 47008, 47008, 10);
        assert_eq!(s.transfers(), 10);
        assert_eq!(s.offset(1, 0), 47008);
        assert_eq!(s.offset(1, 1), 4 * 47008);
        assert_eq!(s.offset(2, 2), 8 * 47008);
    }

    #[test]
    fn easy_layout_is_one_run_per_file() {
        let s = ior(1, 0, 2 << 20, 8 << 20, 1);
        assert_eq!(s.transfers(), 4);
        let offs: Vec<u64> = (0..4).map(|k| s.offset(0, k)).collect();
        assert_eq!(offs, [0, 2 << 20, 4 << 20, 6 << 20]);
    }

    #[test]
    fn every_byte_of_a_shared_file_has_one_writer() {
        // Segments x ranks transfers tile [0, segments * ranks * block) exactly once.
        let (ranks, t, b, segs) = (3u64, 5u64, 10u64, 4u64);
        let mut owner = vec![u64::MAX; (segs * ranks * b) as usize];
        for r in 0..ranks {
            let s = ior(ranks, r, t, b, segs);
            for k in 0..s.transfers() {
                let o = s.offset(r, k) as usize;
                for x in &mut owner[o..o + t as usize] {
                    assert_eq!(*x, u64::MAX);
                    *x = r;
                }
            }
        }
        assert!(owner.iter().all(|&x| x != u64::MAX));
    }

    #[test]
    fn bad_specs_are_refused_by_field() {
        let field = |s: Io500Spec| match s.validate() {
            Err(EngineError::InvalidJob { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(ior(2, 0, 3, 10, 1)), "block");
        assert_eq!(field(ior(2, 2, 5, 10, 1)), "rank");
        assert_eq!(field(ior(2, 0, 5, 10, 0)), "segments");
        assert_eq!(field(Io500Spec { file: "../x".into(), ..ior(1, 0, 1, 1, 1) }), "file");
        assert_eq!(field(Io500Spec { ops_range: Some([2, 1]), ..ior(1, 0, 1, 1, 1) }), "ops_range");
    }

    #[test]
    fn substring_match() {
        assert!(contains(b"file.mdtest.0.L0F101", b"01"));
        assert!(!contains(b"L0F10", b"01"));
        assert!(contains(b"x", b""));
    }
}
