//! Data verification for the fileset (docs/verify.md, "fileset").
//!
//! With `verify` set, a file's contents are not PostMark's text bytes but a
//! prefix of the file's *image*: verify blocks of `verify_block` bytes at
//! offsets 0, B, 2B, ..., each a verified block (header + payload + checksum)
//! whose writer fields are the owning thread and, as write number, the file's
//! number (its PostMark name). Every byte of a fileset file is written once
//! (a create writes the file, an append extends it), so the file number names
//! the write, and a block of another file found here is `stale`. A create or an
//! append of n bytes at offset o copies image bytes [o, o + n): the I/O pattern
//! (request sizes, stdio buffering, O_APPEND) is PostMark's. A file whose size
//! is not a multiple of B ends with the first bytes of the block that would
//! follow (its header still says B bytes); that tail is compared byte for byte
//! with the block regenerated from the fields the file should have.
//!
//! Reads check the whole file they read (each thread owns its files, so no
//! read races a writer); the verify phase re-reads every live file.

use crate::verify::{check_block, check_prefix, Checker, Checksum};

pub(super) struct FileVerify {
    pub(super) checker: Checker,
    pub(super) block: usize,
    /// Image blocks covering the write being made (a write copies from here).
    pub(super) img: Vec<u8>,
    /// The whole file as the last read got it.
    pub(super) rimg: Vec<u8>,
    /// A regenerated block, to check a file's tail.
    scratch: Vec<u8>,
    /// Paths of files with kept mismatches in this phase, by file number.
    pub(super) paths: Vec<(u32, String)>,
}

impl FileVerify {
    pub(super) fn new(algo: Checksum, block: usize, seed: u64, thread: u32, high: usize) -> FileVerify {
        FileVerify {
            checker: Checker::new(algo, block, seed, thread, "create"),
            block,
            img: vec![0u8; high + 2 * block],
            rimg: vec![0u8; high],
            scratch: vec![0u8; block],
            paths: Vec::new(),
        }
    }

    /// Counters and kept mismatches start again for `phase` (tables are kept).
    pub(super) fn start_phase(&mut self, phase: &'static str) {
        let c = &mut self.checker;
        c.phase = phase;
        c.blocks_written = 0;
        c.blocks_checked = 0;
        c.mismatches = 0;
        c.kept.clear();
        self.paths.clear();
    }

    /// Fill the image blocks covering a write of `n` bytes at file offset `fo` of
    /// file `file`; returns where in `img` the byte for `fo` is.
    #[inline]
    pub(super) fn prepare_write(&mut self, fo: u64, n: usize, file: u64) -> usize {
        let b = self.block as u64;
        let start = fo / b * b;
        let end = (fo + n as u64).div_ceil(b) * b;
        self.checker.fill(&mut self.img[..(end - start) as usize], start, file);
        (fo - start) as usize
    }

    /// Check the first `got` bytes of `rimg` (a whole file read back) against the
    /// `size` bytes file number `file` should hold. Returns the bad blocks.
    pub(super) fn check_file(&mut self, got: usize, size: u64, file: u64) -> u64 {
        let b = self.block as u64;
        let id = file as u32;
        let present = (got as u64).min(size);
        let full = size / b * b;
        let whole = present.min(full) / b * b;
        let thread = self.checker.thread;
        let mut bad = self.checker.check(&self.rimg[..whole as usize], id, 0, |_| Some((thread, file)));
        if present == size {
            if size > full {
                self.checker.blocks_checked += 1;
                let (seed, algo) = (self.checker.seed, self.checker.algo);
                if let Err(m) = check_prefix(
                    &self.rimg[full as usize..size as usize],
                    full,
                    self.block,
                    file,
                    thread,
                    seed,
                    algo,
                    &mut self.scratch,
                ) {
                    bad += 1;
                    self.checker.note(id, m);
                }
            }
        } else {
            // The file came back short: every block from the first incomplete one is missing.
            for o in (whole..size).step_by(self.block) {
                self.checker.blocks_checked += 1;
                bad += 1;
                self.checker.note(id, check_block(&[], o, self.checker.algo).expect_err("an empty block fails"));
            }
        }
        bad
    }
}
