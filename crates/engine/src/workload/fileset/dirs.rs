//! The directories the files live in: the locations, opened per phase.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::{EngineError, Result};

/// The directories files live in: one fd per location while a phase runs; names are relative to it.
///
/// The fds are opened at the start of every phase and closed at its end (outside the timed
/// window): between phases the caller may unmount and mount the filesystem again to empty its
/// caches, which an open directory would make fail with EBUSY.
/// Each worker keeps a copy of them in its own descriptor table (`measure::own_fd_table`), which it
/// closes when its state drops, on its own thread, before the phase returns.
pub(super) struct Dirs {
    /// Open only during a phase (empty between phases).
    pub(super) fds: Vec<RawFd>,
    pub(super) paths: Vec<PathBuf>,
    /// Locations fsmeter made (removed by delete/cleanup when empty).
    pub(super) made: Vec<bool>,
    /// PostMark's weighted location index (only with more than one location).
    pub(super) index: Vec<u16>,
    pub(super) subdirs: u32,
}

impl Dirs {
    /// Opens every location (again, after a remount: the paths now lead to the new mount).
    pub(super) fn open_fds(&mut self) -> Result<()> {
        if !self.fds.is_empty() {
            return Ok(());
        }
        for p in &self.paths {
            match open_dir(p) {
                Ok(fd) => self.fds.push(fd),
                Err(e) => {
                    self.close_fds();
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    pub(super) fn close_fds(&mut self) {
        for fd in self.fds.drain(..) {
            // SAFETY: we own the fds.
            unsafe { crate::sys::close(fd) };
        }
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        self.close_fds();
    }
}

pub(super) fn cpath(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| EngineError::invalid("dir", format!("{} contains a NUL byte", p.display())))
}

pub(super) fn open_dir(p: &Path) -> Result<RawFd> {
    let c = cpath(p)?;
    // SAFETY: c is a valid C string.
    let fd = unsafe { crate::sys::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC, 0) };
    if fd < 0 {
        return Err(EngineError::last_os(format!("open directory {}", p.display())));
    }
    Ok(fd)
}
