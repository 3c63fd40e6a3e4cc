//! The daemon's queue under the daemon's scheduling: a SCHED_FIFO receiver that wakes often and
//! preempts a lower-priority SCHED_FIFO sender on the same CPU, halfway through its sends.
//!
//! With std's mpsc channel this stops for good: the receiver, woken while the sender has
//! reserved a slot but not written it, spins for that slot at the higher priority on the only CPU
//! the sender may run on (rust-lang/rust#112723; the daemon stopped serving for 17 minutes this
//! way). fsmeter's queue makes the receiver sleep on the lock instead, so the sender finishes.
//! Needs root (SCHED_FIFO) and two CPUs (the test's own thread watches from the other one);
//! without them it says why and passes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fsmeter_diskmodel::queue::queue;

const VALUES: u64 = 300_000;

fn pin_to_cpu0() -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU 0 is added, then set for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0
    }
}

fn fifo(priority: libc::c_int) -> bool {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: sets the calling thread's policy from a parameter we own.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

#[test]
fn a_higher_priority_receiver_on_the_senders_cpu_does_not_stop_it() {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    if cpus < 2 {
        eprintln!("skipped: needs two CPUs, this process has {cpus}");
        return;
    }
    // Probe the privilege on a thread of its own (the test's thread stays normal).
    if !std::thread::spawn(|| fifo(1)).join().unwrap() {
        eprintln!("skipped: SCHED_FIFO not permitted (needs root)");
        return;
    }
    let (tx, rx) = queue::<u64>();
    let received = Arc::new(AtomicU64::new(0));
    let sent = Arc::new(AtomicU64::new(0));
    let r = received.clone();
    let receiver = std::thread::spawn(move || {
        assert!(pin_to_cpu0() && fifo(11));
        let mut next = 0u64;
        while next < VALUES {
            // Wake every 20 us, as the drive thread does before its replies, and take what is queued.
            std::thread::sleep(Duration::from_micros(20));
            while let Some(v) = rx.try_recv() {
                assert_eq!(v, next, "values out of order");
                next += 1;
            }
            r.store(next, Ordering::Relaxed);
        }
    });
    let s = sent.clone();
    let sender = std::thread::spawn(move || {
        assert!(pin_to_cpu0() && fifo(10));
        for v in 0..VALUES {
            tx.send(v).unwrap();
            if v % 1024 == 0 {
                s.store(v, Ordering::Relaxed);
            }
        }
    });
    // Watched from this (normal, unpinned) thread: the two real-time threads share CPU 0.
    let start = Instant::now();
    while received.load(Ordering::Relaxed) < VALUES {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "stopped: {} of {VALUES} sent, {} received after 30 s (the receiver spins on the sender's CPU)",
            sent.load(Ordering::Relaxed),
            received.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    sender.join().unwrap();
    receiver.join().unwrap();
}
