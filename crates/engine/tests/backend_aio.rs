//! The libaio backend (the kernel's native AIO) against the contract every backend keeps: what is
//! queued is submitted and reaped, each completion on its own slot with its bytes or its errno, and
//! the data lands where the request said.

use std::io::Write;
use std::os::fd::AsRawFd;

use fsmeter_engine::backend::aio::AioBackend;
use fsmeter_engine::backend::{IoBackend, IoReq};

fn req(offset: u64, len: u32, write: bool) -> IoReq {
    IoReq { file: 0, offset, len, write, ioprio: 0 }
}

fn temp_file(bytes: &[u8]) -> std::fs::File {
    let mut f = tempfile::tempfile().expect("temp file");
    f.write_all(bytes).expect("write");
    f
}

#[test]
fn reads_land_in_their_slots_at_depth_four() {
    let data: Vec<u8> = (0..64 * 1024u32).map(|i| (i / 4096) as u8).collect();
    let f = temp_file(&data);
    let mut be = AioBackend::new(vec![f.as_raw_fd()], 4).expect("io_setup");
    let mut bufs = vec![vec![0u8; 4096]; 4];
    for (slot, block) in [(0usize, 3u64), (1, 0), (2, 15), (3, 7)] {
        be.queue(slot, req(block * 4096, 4096, false), bufs[slot].as_mut_ptr()).expect("queue");
    }
    let mut done = Vec::new();
    let n = be.reap(4, |slot, res| done.push((slot, res))).expect("reap");
    assert_eq!(n, 4);
    done.sort();
    assert_eq!(done, vec![(0, 4096), (1, 4096), (2, 4096), (3, 4096)]);
    for (slot, block) in [(0usize, 3u8), (1, 0), (2, 15), (3, 7)] {
        assert!(bufs[slot].iter().all(|&b| b == block), "slot {slot}");
    }
}

#[test]
fn writes_reach_the_file_and_a_short_read_says_so() {
    let f = temp_file(&[0u8; 8192]);
    let mut be = AioBackend::new(vec![f.as_raw_fd()], 2).expect("io_setup");
    let mut w = vec![0xA5u8; 4096];
    be.queue(0, req(4096, 4096, true), w.as_mut_ptr()).expect("queue");
    let mut got = Vec::new();
    assert_eq!(be.reap(1, |s, r| got.push((s, r))).expect("reap"), 1);
    assert_eq!(got, vec![(0, 4096)]);
    // A read that crosses the end of the 8 KiB file moves what is there.
    let mut r = vec![0u8; 8192];
    be.queue(1, req(4096, 8192, false), r.as_mut_ptr()).expect("queue");
    got.clear();
    be.reap(1, |s, res| got.push((s, res))).expect("reap");
    assert_eq!(got, vec![(1, 4096)]);
    assert!(r[..4096].iter().all(|&b| b == 0xA5));
}

#[test]
fn a_request_the_kernel_refuses_completes_with_its_errno() {
    // A descriptor that is not open: io_submit refuses the iocb (EBADF), and the request after it still runs.
    let f = temp_file(&[7u8; 4096]);
    let mut be = AioBackend::new(vec![-1, f.as_raw_fd()], 2).expect("io_setup");
    let mut a = vec![0u8; 4096];
    let mut b = vec![0u8; 4096];
    be.queue(0, req(0, 4096, false), a.as_mut_ptr()).expect("queue");
    be.queue(1, IoReq { file: 1, ..req(0, 4096, false) }, b.as_mut_ptr()).expect("queue");
    let mut got = Vec::new();
    assert_eq!(be.reap(2, |s, r| got.push((s, r))).expect("reap"), 2);
    got.sort();
    assert_eq!(got, vec![(0, -(libc::EBADF as i64)), (1, 4096)]);
    assert!(b.iter().all(|&x| x == 7));
}

#[test]
fn reap_without_a_minimum_returns_what_is_done() {
    let f = temp_file(&[1u8; 4096]);
    let mut be = AioBackend::new(vec![f.as_raw_fd()], 1).expect("io_setup");
    let mut buf = vec![0u8; 4096];
    be.queue(0, req(0, 4096, false), buf.as_mut_ptr()).expect("queue");
    let mut got = Vec::new();
    // A buffered read is done inside io_submit, so it is there without waiting.
    let n = be.reap(0, |s, r| got.push((s, r))).expect("reap");
    assert_eq!((n, got), (1, vec![(0, 4096)]));
    assert_eq!(be.reap(0, |_, _| panic!("nothing is in flight")).expect("reap"), 0);
}
