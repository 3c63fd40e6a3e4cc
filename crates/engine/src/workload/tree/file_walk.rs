//! The files of one tree in fdtree's order, one at a time, for a loop that makes its system call
//! itself.
//!
//! `walk_files` hands each file to a callback, and the callback makes the call: on a machine that
//! clears the CPU's return predictions on the way back from the kernel, every return through those
//! frames after the call mispredicts (measured on the development machine: a stat of a cached file
//! 1.4 us with the `syscall` instruction in the loop, 2.0 us from a called function). `FileWalk`
//! turns the walk inside out: `next` sets the path to the next file and returns before the loop
//! makes its call, so nothing returns across it.

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
            levels: spec.levels,
            dirs: spec.dirs_per_level as u64,
            files: spec.files_per_dir as u64,
            prefix: spec.file_prefix.as_bytes().to_vec(),
        }
    }

    fn frame(&self, len: usize, depth: u32) -> Frame {
        Frame { len, depth, next_file: self.files, next_sub: if depth < self.levels { self.dirs } else { 0 } }
    }

    /// Start at the tree whose root is `path`.
    pub(super) fn start(&mut self, path: &PathBuf8) {
        self.stack.clear();
        let root = self.frame(path.0.len(), 0);
        self.stack.push(root);
    }

    /// Set `path` to the next file's path; false when the tree has no file left (the path is then
    /// the root's again).
    #[inline]
    pub(super) fn next(&mut self, path: &mut PathBuf8) -> bool {
        loop {
            let Some(top) = self.stack.last_mut() else { return false };
            path.0.truncate(top.len);
            let level = (self.levels - top.depth) as u64;
            if top.next_file > 0 {
                let n = top.next_file;
                top.next_file -= 1;
                path.push_name(&self.prefix, level, b'F', n);
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

    /// Skip the first `n` files without touching them.
    pub(super) fn skip(&mut self, path: &mut PathBuf8, n: u64) {
        for _ in 0..n {
            if !self.next(path) {
                return;
            }
        }
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

    /// The same files in the same order as walk_files, for shapes from a lone root to deep trees,
    /// and every [from, to) a thread may take.
    #[test]
    fn the_walk_gives_walk_files_order() {
        for (levels, dirs, files) in [(0, 0, 3), (0, 4, 2), (1, 2, 0), (1, 3, 2), (3, 2, 3), (2, 10, 11), (4, 1, 1)] {
            let s = spec(levels, dirs, files, "x_");
            let root = std::path::Path::new("/t");
            let mut expected = Vec::new();
            let mut p = PathBuf8::new(root, 0);
            let all = s.files_per_tree().unwrap();
            super::super::walk_files(&mut p, &s, (0, all), &mut |p| {
                expected.push(p.display());
                Ok(true)
            })
            .unwrap();
            assert_eq!(expected.len() as u64, all, "{levels} {dirs} {files}");
            let root_path = p.display();
            let mut w = FileWalk::new(&s);
            let mut got = Vec::new();
            w.start(&p);
            while w.next(&mut p) {
                got.push(p.display());
            }
            assert_eq!(got, expected, "{levels} levels, {dirs} dirs, {files} files");
            assert_eq!(p.display(), root_path, "the path is the root's again");
            let root_len = p.0.len();
            for (from, to) in [(0, all.min(1)), (all.min(1), all), (all / 2, all), (all, all)] {
                p.0.truncate(root_len);
                w.start(&p);
                w.skip(&mut p, from);
                let mut some = Vec::new();
                for _ in from..to {
                    assert!(w.next(&mut p));
                    some.push(p.display());
                }
                assert_eq!(some, expected[from as usize..to as usize]);
            }
        }
    }
}
