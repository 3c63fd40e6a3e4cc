//! The files of one tree in fdtree's order, one at a time, for a loop that makes its system call
//! itself.
//!
//! A walk that hands each file to a callback makes the callback's call three frames down, and on a
//! machine that clears the CPU's return predictions on the way back from the kernel every return
//! through those frames mispredicts (measured on the development machine: a stat of a cached file
//! 1.4 us with the `syscall` instruction in the loop, 2.0 us from a called function). `FileWalk`
//! turns the walk inside out: `next` sets the path to the next file and returns before the loop
//! makes its call, so nothing returns across it. The measured file phases loop over it;
//! `walk_files` (the verify phase's, with a callback) is built on it, so the order is kept in one
//! place.

use super::{PathBuf8, TreeSpec};

/// One directory on the way down: its path's length, its depth, the next file and the next
/// subdirectory to visit (fdtree counts both down to 1; 0: none left).
#[derive(Clone, Copy)]
struct Frame {
    len: usize,
    depth: u32,
    next_file: u64,
    next_sub: u64,
}

/// A walk over one tree's files (its root: the path the walk starts from), in `walk`'s order: at
/// each directory its files `L<l>F<n>` for n from the count down to 1, then each subdirectory
/// `L<l>D<n>` in the same order, depth first.
pub(super) struct FileWalk {
    stack: Vec<Frame>,
    /// The root's path length, to which the path returns at the walk's end.
    root: usize,
    /// Files still to give before the range's end.
    left: u64,
    levels: u32,
    dirs: u64,
    files: u64,
    prefix: Vec<u8>,
}

impl FileWalk {
    /// Room for the deepest walk, allocated here (before a phase's clock), never in `next`.
    pub(super) fn new(spec: &TreeSpec) -> FileWalk {
        FileWalk {
            stack: Vec::with_capacity(spec.levels as usize + 1),
            root: 0,
            left: 0,
            levels: spec.levels,
            dirs: spec.dirs_per_level as u64,
            files: spec.files_per_dir as u64,
            prefix: spec.file_prefix.as_bytes().to_vec(),
        }
    }

    fn frame(&self, len: usize, depth: u32) -> Frame {
        Frame { len, depth, next_file: self.files, next_sub: if depth < self.levels { self.dirs } else { 0 } }
    }

    /// Start at the tree whose root is `path`, to give its files numbered `[from, to)` in the
    /// walk's order (from 0); the files before `from` are skipped without being touched.
    pub(super) fn start(&mut self, path: &mut PathBuf8, (from, to): (u64, u64)) {
        self.stack.clear();
        self.root = path.0.len();
        let root = self.frame(self.root, 0);
        self.stack.push(root);
        self.left = u64::MAX;
        for _ in 0..if from < to { from } else { 0 } {
            if !self.next(path) {
                break;
            }
        }
        self.left = to.saturating_sub(from);
    }

    /// Set `path` to the next file's path; false at the range's end or the tree's, with the path
    /// the root's again.
    #[inline]
    pub(super) fn next(&mut self, path: &mut PathBuf8) -> bool {
        if self.left == 0 {
            path.0.truncate(self.root);
            return false;
        }
        loop {
            let Some(top) = self.stack.last_mut() else { return false };
            path.0.truncate(top.len);
            let level = (self.levels - top.depth) as u64;
            if top.next_file > 0 {
                let n = top.next_file;
                top.next_file -= 1;
                path.push_name(&self.prefix, level, b'F', n);
                self.left -= 1;
                return true;
            }
            if top.next_sub > 0 {
                let n = top.next_sub;
                top.next_sub -= 1;
                let depth = top.depth + 1;
                path.push_name(b"", level, b'D', n);
                let below = self.frame(path.0.len(), depth);
                self.stack.push(below); // within the capacity: depth <= levels
                continue;
            }
            self.stack.pop();
        }
    }

    /// End the walk early: the path is the root's again.
    pub(super) fn stop(&mut self, path: &mut PathBuf8) {
        path.0.truncate(self.root);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(levels: u32, dirs: u32, files: u32, prefix: &str) -> TreeSpec {
        let doc = serde_json::json!({
            "levels": levels, "dirs_per_level": dirs, "files_per_dir": files, "file_prefix": prefix,
        });
        serde_json::from_value(doc).expect("a tree spec")
    }

    /// The same files in the same order as `walk` visits them, for shapes from a lone root to deep
    /// trees, and every [from, to) a thread may take.
    #[test]
    fn the_walk_gives_the_walks_file_order() {
        for (levels, dirs, files) in [(0, 0, 3), (0, 4, 2), (1, 2, 0), (1, 3, 2), (3, 2, 3), (2, 10, 11), (4, 1, 1)] {
            let s = spec(levels, dirs, files, "x_");
            let mut p = PathBuf8::new(std::path::Path::new("/t"), 0);
            let root_path = p.display();
            let mut expected = Vec::new();
            super::super::walk(&mut p, &s, true, &mut |v, p| {
                if v == super::super::Visit::File {
                    expected.push(p.display());
                }
                Ok(true)
            })
            .unwrap();
            let all = s.files_per_tree().unwrap();
            assert_eq!(expected.len() as u64, all, "{levels} {dirs} {files}");
            let mut w = FileWalk::new(&s);
            for (from, to) in [(0, all), (0, all.min(1)), (all.min(1), all), (all / 2, all), (all, all)] {
                w.start(&mut p, (from, to));
                let mut got = Vec::new();
                while w.next(&mut p) {
                    got.push(p.display());
                }
                assert_eq!(got, expected[from as usize..to as usize], "{levels} {dirs} {files}: [{from}, {to})");
                assert_eq!(p.display(), root_path, "the path is the root's again");
            }
            // Stopped early, the path is the root's again too.
            w.start(&mut p, (0, all));
            if w.next(&mut p) {
                w.stop(&mut p);
            }
            assert_eq!(p.display(), root_path);
        }
    }
}
