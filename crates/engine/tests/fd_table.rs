//! A worker with a descriptor table of its own holds nothing of the process's once it is joined.
//! A binary of its own: no other test may fork or open while it counts (a forked child holds the
//! pipe for a moment too).

use fsmeter_engine::measure::own_fd_table;

fn pipe() -> (i32, i32) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into fds.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) }, 0);
    (fds[0], fds[1])
}

/// Whether the pipe's read end sees its end of file: no table anywhere holds the write end.
fn at_eof(read_end: i32) -> bool {
    let mut b = [0u8; 1];
    // SAFETY: one byte into b.
    unsafe { libc::read(read_end, b.as_mut_ptr().cast(), 1) == 0 }
}

/// The kernel wakes the joining thread before it releases the joined thread's table, so a copy of
/// the write end the worker held would still be open at the join now and then (more than half of
/// the joins on the development machine). With the copies left out, or closed by the worker, the
/// read end sees its end of file right after every join.
#[test]
fn no_copy_of_the_process_descriptors_outlives_the_join() {
    for keep in [false, true] {
        for _ in 0..500 {
            let (r, w) = pipe();
            std::thread::spawn(move || {
                let kept = if keep { vec![w] } else { Vec::new() };
                let table = own_fd_table(&kept);
                assert!(table.is_own(), "close_range(CLOSE_RANGE_UNSHARE) refused");
            })
            .join()
            .unwrap();
            // SAFETY: ours, opened above.
            unsafe { libc::close(w) };
            assert!(at_eof(r), "a worker's copy of a pipe outlived its join (keep = {keep})");
            // SAFETY: ours.
            unsafe { libc::close(r) };
        }
    }
}
