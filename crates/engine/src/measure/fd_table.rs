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
//! `own_fd_table` gives the calling thread a private copy of the process's table
//! (`unshare(CLONE_FILES)`): the same descriptors, open on the same files, which the thread's calls
//! then look up without a reference. What the thread opens afterwards is in its table only, and
//! closing a descriptor there leaves the other threads' copy open. So a family calls it first thing
//! in its worker's setup, and only when that worker opens, uses and closes its own descriptors: none
//! of them may be handed to another thread (its result, shared state) or outlive the worker's phase.
//! When the thread ends, the kernel closes whatever its table still holds.
//! Threads the worker starts afterwards share its table, as a program's threads share theirs.

/// Give the calling thread a file-descriptor table of its own (see the module's notes); true when
/// it has one. Should the kernel refuse (a seccomp filter, say), the thread keeps the process's
/// table: the calls are the same, only each lookup costs a reference more.
pub fn own_fd_table() -> bool {
    // SAFETY: unshare(CLONE_FILES) touches only the calling thread's descriptor table.
    unsafe { libc::unshare(libc::CLONE_FILES) == 0 }
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
        // ... with it, the descriptor lives in the thread's table only, and is closed when it ends;
        // a descriptor the process had before is open in both, and closing the thread's copy leaves
        // the process's open.
        let before = fresh_file();
        assert!(before >= 0);
        let (own, own_file, saw_before, closed_before) = std::thread::spawn(move || {
            assert!(own_fd_table(), "unshare(CLONE_FILES) refused");
            let fd = fresh_file();
            let saw = is_open(before);
            // SAFETY: the thread's copy of the process's descriptor.
            let closed = unsafe { crate::sys::close(before) } == 0;
            (fd, file_of(fd), saw, closed)
        })
        .join()
        .unwrap();
        assert!(own >= 0 && own_file.is_some());
        assert!(saw_before && closed_before, "the thread's copy holds what the process had open");
        assert!(is_open(before), "closing the thread's copy closed the process's descriptor");
        assert_ne!(file_of(own), own_file, "the thread's descriptor leaked into the process's table");
        // SAFETY: ours, opened above.
        unsafe { crate::sys::close(before) };
    }
}
