//! Data verification for the tree family (docs/verify.md, "tree").
//!
//! With `verify`, every 4 KiB block of every file (fdtree's unit: files are
//! whole blocks) is a verified block written by the thread that owns the tree,
//! with the file's number in the walk (1, 2, ... in fdtree's order, per tree)
//! as write number; `write_size` requests copy the bytes of the blocks they
//! cover. The `verify` phase walks each tree again and re-reads every file.

use super::{os_err, walk_files, PathBuf8, TreeSpec, BLOCK};
use crate::error::Result;
use crate::measure::{now_ns, own_fd_table, run_threads, Control, PhaseTiming};
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::verify::{check_block, merge_into, Checker, Checksum};

/// Bytes the verify phase reads per request.
const READ_CHUNK: usize = 1 << 20;

pub(super) struct TreeVerify {
    pub(super) checker: Checker,
    /// Image blocks covering the request being written.
    img: Vec<u8>,
    /// The running number of the file in the walk (the write number of its blocks).
    pub(super) file: u64,
    /// Paths of files with kept mismatches, by file number.
    paths: Vec<(u32, String)>,
}

impl TreeVerify {
    pub(super) fn new(algo: Checksum, seed: u64, tid: usize, write_size: u64, phase: &'static str) -> TreeVerify {
        TreeVerify {
            checker: Checker::new(algo, BLOCK as usize, seed, tid as u32, phase),
            img: vec![0u8; write_size as usize + 2 * BLOCK as usize],
            file: 0,
            paths: Vec::new(),
        }
    }

    /// One fdtree `dd` with verified blocks: open, `size` bytes in `write_size` requests (+ fsync), close.
    pub(super) fn create_file(&mut self, p: &mut PathBuf8, size: u64, write_size: u64, fsync: bool) -> Result<()> {
        self.file += 1;
        // SAFETY: NUL-terminated path.
        let fd = p.with_c(|c| unsafe {
            crate::nofollow::open(c, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC, 0o644)
        });
        if fd < 0 {
            return Err(os_err("create", p));
        }
        let mut off = 0u64;
        while off < size {
            let n = (size - off).min(write_size) as usize;
            let start = off / BLOCK * BLOCK;
            let end = (off + n as u64).div_ceil(BLOCK) * BLOCK;
            self.checker.fill(&mut self.img[..(end - start) as usize], start, self.file);
            let base = (off - start) as usize;
            // SAFETY: img holds base + n bytes.
            let w = unsafe { crate::sys::write(fd, self.img[base..].as_ptr() as *const libc::c_void, n) };
            if w <= 0 {
                let err = os_err("write", p);
                // SAFETY: we own fd.
                unsafe { crate::sys::close(fd) };
                return Err(err);
            }
            off += w as u64;
        }
        super::finish_file(fd, p, fsync)
    }

    /// Re-read the next file of the walk into `buf` and check every block; returns the bytes read.
    fn check_file(&mut self, p: &mut PathBuf8, size: u64, buf: &mut [u8]) -> Result<u64> {
        self.file += 1;
        let (file, id, thread) = (self.file, self.file as u32, self.checker.thread);
        let kept = self.checker.kept.len();
        // SAFETY: NUL-terminated path.
        let fd = p.with_c(|c| unsafe { crate::nofollow::open(c, libc::O_RDONLY | libc::O_CLOEXEC, 0) });
        if fd < 0 {
            return Err(os_err("verify: open", p));
        }
        let mut off = 0u64;
        let mut total = 0u64;
        while off < size {
            let len = (size - off).min(buf.len() as u64) as usize;
            let mut got = 0usize;
            while got < len {
                // SAFETY: buf[got..len] is valid for writes.
                let n = unsafe {
                    crate::sys::pread(
                        fd,
                        buf[got..].as_mut_ptr() as *mut libc::c_void,
                        len - got,
                        (off + got as u64) as i64,
                    )
                };
                if n < 0 {
                    let err = os_err("verify: read", p);
                    // SAFETY: we own fd.
                    unsafe { crate::sys::close(fd) };
                    return Err(err);
                }
                if n == 0 {
                    break;
                }
                got += n as usize;
            }
            total += got as u64;
            self.checker.check(&buf[..got], id, off, |_| Some((thread, file)));
            if got < len {
                // The file is short: every block from the first incomplete one is missing.
                let first_missing = off + (got as u64).div_ceil(BLOCK) * BLOCK;
                for o in (first_missing..size).step_by(BLOCK as usize) {
                    self.checker.blocks_checked += 1;
                    self.checker.note(id, check_block(&[], o, self.checker.algo).expect_err("an empty block fails"));
                }
                break;
            }
            off += len as u64;
        }
        // SAFETY: we own fd.
        unsafe { crate::sys::close(fd) };
        if self.checker.kept.len() > kept {
            self.paths.push((id, p.display()));
        }
        Ok(total)
    }
}

/// Merge the threads' verification into `report`; mismatches name the file (thread's tree and path).
pub(super) fn merge(report: &mut PhaseReport, vs: &[&TreeVerify]) {
    let paths: std::collections::HashMap<(u32, u32), &str> =
        vs.iter().flat_map(|v| v.paths.iter().map(move |(f, p)| ((v.checker.thread, *f), p.as_str()))).collect();
    // File numbers restart in each tree: a kept mismatch is named by the path its thread recorded.
    let mut per_thread: Vec<(u32, &Checker)> = vs.iter().map(|v| (v.checker.thread, &v.checker)).collect();
    per_thread.sort_by_key(|(t, _)| *t);
    let notes =
        serde_json::json!({"exact": true, "block_bytes": BLOCK, "file_index": "the file's number in its tree's walk"});
    // Every tree numbers its files from 1: kept mismatches get one index over all trees, naming its path.
    let mut renumbered: Vec<Checker> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (t, c) in per_thread {
        let mut copy = Checker::new(c.algo, c.block, c.seed, t, c.phase);
        copy.blocks_written = c.blocks_written;
        copy.blocks_checked = c.blocks_checked;
        copy.mismatches = c.mismatches;
        for k in &c.kept {
            let mut k = k.clone();
            names.push(
                paths.get(&(t, k.file)).map(|s| s.to_string()).unwrap_or_else(|| format!("tree-{t} file {}", k.file)),
            );
            k.file = names.len() as u32 - 1;
            copy.kept.push(k);
        }
        renumbered.push(copy);
    }
    merge_into(report, renumbered.iter(), |f| names.get(f as usize).cloned().unwrap_or_default(), notes);
}

/// The `verify` phase: each thread walks its tree and re-reads every file (reported as reads).
pub(super) fn verify_phase(spec: &TreeSpec, algo: Checksum, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
    const KINDS: &[&str] = &["read"];
    let size = spec.file_size();
    let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
    let buf_len = (size as usize).clamp(BLOCK as usize, READ_CHUNK);
    let (mut report, out) = run_threads(
        "verify",
        job.threads,
        timing,
        ctl,
        KINDS,
        3,
        spec.files_visited(job.threads),
        |tid| {
            own_fd_table(&[]); // each file opened and closed within one call
            let mut v = TreeVerify::new(algo, job.seed, tid, 0, "verify");
            v.file = spec.files_of(tid).0; // numbers continue from the first file visited
            Ok((PathBuf8::new(&job.dir, tid), vec![0u8; buf_len], v))
        },
        |(path, buf, v), rec| {
            let mut files_done = 0u64;
            let tid = v.checker.thread as usize;
            let mut cb = |p: &mut PathBuf8| -> Result<bool> {
                if rec.interrupted() {
                    return Ok(false);
                }
                let t0 = now_ns();
                let bytes = v.check_file(p, size, buf)?;
                rec.record(0, bytes, t0, now_ns());
                files_done += 1;
                Ok(true)
            };
            walk_files(path, spec, spec.files_of(tid), &mut cb)?;
            Ok((files_done, std::mem::replace(v, TreeVerify::new(algo, job.seed, tid, 0, "verify"))))
        },
    )?;
    report.counters.insert("files".into(), out.iter().map(|(f, _)| f).sum());
    let vs: Vec<&TreeVerify> = out.iter().map(|(_, v)| v).collect();
    merge(&mut report, &vs);
    Ok(report)
}
