//! The small tree disk_src searches: fsmeter's own stand-in for re-aim's
//! `fakeh` archive, with the same shape. Seven leaf directories at depths 1 to
//! 6, 40 names each (hard links to one empty file), and a `dirlist` naming 57
//! entries to stat and 43 new names to create and remove. Every task shares
//! the tree; the names a task creates end in its number, as re-aim's end in
//! the process id.

use std::fs;
use std::io::Write;
use std::os::raw::c_char;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::IntoRawFd;
use std::path::{Path, PathBuf};

use crate::error::{EngineError, Result};

/// Slots of each list (re-aim's MFILES); unused slots are shuffled too.
pub const MFILES: usize = 75;
pub const LEAF_DIRS: [&str; 7] = [
    "bin",
    "usr/guest",
    "usr/spool/mail/in",
    "usr/src/cmd/ls/old",
    "usr/proj/tools/pack/v2/src",
    "usr/doc/man/man1",
    "usr/local/lib/term/tab/x/y",
];
pub const ENTRIES_PER_DIR: usize = 40;
pub const STATS: usize = 57;
pub const CREATES: usize = 43;

pub struct Fakeh {
    pub root: PathBuf,
    pub root_fd: i32,
    stat_names: Vec<[u8; 64]>,
    creat_names: Vec<[u8; 64]>,
    /// Index into the lists, or u8::MAX for an empty slot.
    pub stat_slots: [u8; MFILES],
    pub creat_slots: [u8; MFILES],
}

fn fixed(s: &str) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[..s.len()].copy_from_slice(s.as_bytes());
    b
}

/// The names to stat (57) and the names to create (43), relative to the root.
pub fn lists() -> (Vec<String>, Vec<String>) {
    let mut stats = Vec::new();
    let mut creates = Vec::new();
    // Upper directories and the first file: 8 stats.
    for s in ["fake00", "bin", "usr", "usr/spool", "usr/src/cmd", "usr/proj/tools", "usr/doc/man", "usr/local/lib/term"]
    {
        stats.push(s.to_string());
    }
    for (d, dir) in LEAF_DIRS.iter().enumerate() {
        for i in 0..7 {
            stats.push(format!("{dir}/f{:02}", (i * 5 + d) % ENTRIES_PER_DIR));
        }
        for i in 0..6 {
            creates.push(format!("{dir}/new{i}."));
        }
    }
    creates.push("new0.".to_string());
    assert_eq!((stats.len(), creates.len()), (STATS, CREATES));
    (stats, creates)
}

impl Fakeh {
    /// Build the tree under `root` (if missing) and open it.
    pub fn create(root: &Path) -> Result<Fakeh> {
        let (stats, creates) = lists();
        if !root.join("dirlist").is_file() {
            let ctx = |e| EngineError::io(format!("creating the disk_src tree {}", root.display()), e);
            crate::nofollow::create_dirs(root.parent().unwrap_or(root), root)?;
            crate::nofollow::create(&root.join("fake00"))?;
            let mut list = String::new();
            for dir in LEAF_DIRS {
                crate::nofollow::create_dirs(root, &root.join(dir))?;
                for i in 0..ENTRIES_PER_DIR {
                    let p = root.join(dir).join(format!("f{i:02}"));
                    if !p.exists() {
                        fs::hard_link(root.join("fake00"), &p).map_err(ctx)?;
                    }
                    list.push_str(&format!("{dir}/f{i:02}\n"));
                }
            }
            for s in &stats {
                list.push_str(&format!("s {s}\n"));
            }
            for c in &creates {
                list.push_str(&format!("c {c}\n"));
            }
            let mut f = crate::nofollow::create(&root.join("dirlist.tmp"))?;
            f.write_all(list.as_bytes()).map_err(ctx)?;
            fs::rename(root.join("dirlist.tmp"), root.join("dirlist")).map_err(ctx)?;
        }
        let dir = fs::File::open(root).map_err(|e| EngineError::io(format!("opening {}", root.display()), e))?;
        let mut stat_slots = [u8::MAX; MFILES];
        let mut creat_slots = [u8::MAX; MFILES];
        for (i, slot) in stat_slots.iter_mut().enumerate().take(STATS) {
            *slot = i as u8;
        }
        for (i, slot) in creat_slots.iter_mut().enumerate().take(CREATES) {
            *slot = i as u8;
        }
        Ok(Fakeh {
            root: root.to_path_buf(),
            root_fd: dir.into_raw_fd(),
            stat_names: stats.iter().map(|s| fixed(s)).collect(),
            creat_names: creates.iter().map(|s| fixed(s)).collect(),
            stat_slots,
            creat_slots,
        })
    }

    pub fn stat_name(&self, k: usize) -> *const c_char {
        self.stat_names[k].as_ptr() as *const c_char
    }

    /// The k-th create name with the task's number appended, in `out`.
    pub fn creat_name(&self, k: usize, task: usize, out: &mut [u8; 96]) -> *const c_char {
        let base = &self.creat_names[k];
        let n = base.iter().position(|&b| b == 0).unwrap_or(64);
        out[..n].copy_from_slice(&base[..n]);
        let mut v = task % 100_000;
        for i in (0..5).rev() {
            out[n + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        out[n + 5] = 0;
        out.as_ptr() as *const c_char
    }

    pub fn path_len_ok(dir: &Path) -> bool {
        dir.as_os_str().as_bytes().len() < 800
    }
}

impl Drop for Fakeh {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours, opened in `create`.
        unsafe { crate::sys::close(self.root_fd) };
    }
}
