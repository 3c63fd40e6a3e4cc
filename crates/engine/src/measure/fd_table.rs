//! A worker's own file-descriptor table, as a single-threaded program has.
//!
//! Every system call on a file descriptor starts by looking it up (the kernel's `fdget`). When the
//! calling process's descriptor table has one user, the lookup takes no reference on the file; when
//! several threads share the table, as every thread of fsmeter's process does (Python's, the
//! harness's, the workers'), each lookup takes a reference and the call drops it at its end: two
//! atomic read-modify-writes per call. The programs fsmeter is compared with are single-threaded
//! (iozone; bonnie++, whose seekers are forked processes; fio, whose jobs are processes unless
//! `thread` is set) or, for the bare loops of bench/limits, built to match, so they never pay it.
//! Measured on the 2-core development machine, 4 KiB preads of a cached file on tmpfs from a process
//! with a second thread: 60 alternating passes each way in one process, the calls took 0.92-0.95
//! (median) of the time with a table of the thread's own as with the shared one.
//!
//! `own_fd_table` gives the calling thread a private table (`close_range` with
//! `CLOSE_RANGE_UNSHARE`) that holds only the standard streams and the descriptors the worker names
//! (a directory the main thread opened, say): the thread's calls then look them up without a
//! reference. Every other descriptor of the process is left out of the copy at once rather than
//! held until the thread ends, because the kernel wakes the thread that joins a worker before it
//! releases the worker's table (`exit_mm` comes before `exit_files`): a copy the worker kept would
//! hold its file open for a moment after the phase, long enough to make an unmount fail with EBUSY
//! or a pipe's reader miss its end of file (a C test on the development machine: 11,727 of 20,000
//! joins returned while a pipe's copy was still open). The descriptors kept are the worker's to
//! close in its own table: the returned `OwnFdTable` closes them when the worker's state drops, so
//! it is declared last in that state and dropped on the worker's thread. What the thread opens
//! afterwards is in its table only, so a family calls this first thing in its worker's setup, and
//! only when none of the worker's descriptors is handed to another thread (its result, shared
//! state). Threads the worker starts afterwards share its table, as a program's threads share theirs.

use std::os::fd::RawFd;

/// The calling thread's own descriptor table (see the module's notes); dropping it closes the
/// thread's copies of the descriptors it kept.
#[derive(Debug)]
pub struct OwnFdTable {
    kept: Vec<RawFd>,
    own: bool,
}

impl OwnFdTable {
    /// Whether the thread has a table of its own (false: the kernel refused, and the thread keeps
    /// the process's table: the calls are the same, each lookup costs a reference more).
    pub fn is_own(&self) -> bool {
        self.own
    }
}

impl Drop for OwnFdTable {
    fn drop(&mut self) {
        if self.own {
            for &fd in &self.kept {
                // SAFETY: the thread's own copy of a descriptor it kept; the process's stays open.
                unsafe { crate::sys::close(fd) };
            }
        }
    }
}

fn close_range(first: u32, last: u32, flags: u32) -> bool {
    // SAFETY: close_range touches only the calling thread's descriptor table (with
    // CLOSE_RANGE_UNSHARE, a copy of it the call makes first).
    unsafe { libc::syscall(libc::SYS_close_range, first, last, flags) == 0 }
}

/// Give the calling thread a descriptor table of its own holding the standard streams and `keep`
/// only (see the module's notes). Should the kernel refuse (older than 5.9, a seccomp filter), the
/// thread keeps the process's table and nothing is closed.
pub fn own_fd_table(keep: &[RawFd]) -> OwnFdTable {
    // A kept descriptor numbered 0-2 (the process started with a standard stream closed) is kept
    // anyway, and closed with the others when the table drops.
    let mut kept: Vec<RawFd> = keep.iter().copied().filter(|&fd| fd >= 0).collect();
    kept.sort_unstable();
    kept.dedup();
    // The last gap (above every kept descriptor) carries the unshare; it is never empty.
    let above = kept.last().map_or(3, |&fd| (fd as u32 + 1).max(3));
    if !close_range(above, u32::MAX, libc::CLOSE_RANGE_UNSHARE) {
        return OwnFdTable { kept: Vec::new(), own: false };
    }
    let mut next = 3u32;
    for &fd in kept.iter().filter(|&&fd| fd > 2) {
        if (fd as u32) > next {
            // In the thread's own table now: cannot fail but for a bad range, which this is not.
            close_range(next, fd as u32 - 1, 0);
        }
        next = fd as u32 + 1;
    }
    OwnFdTable { kept, own: true }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_open(fd: i32) -> bool {
        // SAFETY: F_GETFD on any number only reads the descriptor's flags.
        unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
    }

    /// The file a descriptor is open on, if it is open: (device, inode).
    fn file_of(fd: i32) -> Option<(u64, u64)> {
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat writes into st only.
        (unsafe { crate::sys::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
    }

    /// A file no other test opens: a memfd (an inode of its own).
    fn fresh_file() -> i32 {
        // SAFETY: a NUL-terminated name.
        unsafe { libc::memfd_create(c"fsmeter-fd-table-test".as_ptr(), libc::MFD_CLOEXEC) }
    }

    #[test]
    fn a_thread_with_its_own_table_keeps_what_it_opens_to_itself() {
        // Without the call, another thread sees what a thread opens...
        let (fd, file) = std::thread::spawn(|| {
            let fd = fresh_file();
            (fd, file_of(fd))
        })
        .join()
        .unwrap();
        assert!(fd >= 0 && file.is_some() && file_of(fd) == file, "a shared table: the descriptor is the process's");
        // SAFETY: ours, opened above.
        unsafe { crate::sys::close(fd) };
        // ... with it, the descriptor lives in the thread's table only: left open there, it is not
        // in the process's (the thread's table goes with the thread; the number is not closed here,
        // where it may be another test's).
        let (own, own_file) = std::thread::spawn(|| {
            let table = own_fd_table(&[]);
            assert!(table.is_own(), "close_range(CLOSE_RANGE_UNSHARE) refused");
            let fd = fresh_file();
            (fd, file_of(fd))
        })
        .join()
        .unwrap();
        assert!(own >= 0 && own_file.is_some());
        assert_ne!(file_of(own), own_file, "the thread's descriptor leaked into the process's table");
    }

    #[test]
    fn the_thread_holds_what_it_kept_and_nothing_else_of_the_process() {
        // One left below the kept descriptor and one above it, so both gaps are checked.
        let mut fds = [fresh_file(), fresh_file(), fresh_file()];
        fds.sort_unstable(); // other tests open and close in between
        let [below, kept, above] = fds;
        assert!(below >= 0 && kept > below && above > kept);
        let (saw_kept, saw_below, saw_above, after_drop) = std::thread::spawn(move || {
            let table = own_fd_table(&[kept, kept]);
            assert!(table.is_own());
            let seen = (is_open(kept), is_open(below), is_open(above));
            drop(table);
            (seen.0, seen.1, seen.2, is_open(kept))
        })
        .join()
        .unwrap();
        assert!(saw_kept, "a kept descriptor missing from the thread's table");
        assert!(!saw_below && !saw_above, "a descriptor not kept was copied into the thread's table");
        assert!(!after_drop, "dropping the table left the thread's copy open");
        assert!(is_open(kept) && is_open(below) && is_open(above), "the thread closed the process's descriptors");
        // SAFETY: ours, opened above.
        unsafe {
            crate::sys::close(below);
            crate::sys::close(kept);
            crate::sys::close(above);
        }
    }
}
