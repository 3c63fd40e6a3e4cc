//! The start hold: an armed `Control` stops a phase after its workers' setup and before the
//! clock starts, until `release_start` (an MPI rank waits at a barrier there).

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};

use fsmeter_engine::measure::{now_ns, run_threads, PhaseTiming};
use fsmeter_engine::Control;

const KINDS: &[&str] = &["op"];

fn timing() -> PhaseTiming {
    PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: 1_000_000_000 }
}

/// One phase of `n` recorded operations per thread; returns the report's window start (ns) and the
/// time each thread's setup finished.
fn phase(ctl: &Control, threads: usize, setups_done: &[AtomicU64], first_op_at: &AtomicU64) -> u64 {
    let (report, _) = run_threads(
        "run",
        threads,
        timing(),
        ctl,
        KINDS,
        3,
        0,
        |tid| {
            setups_done[tid].store(now_ns(), SeqCst);
            Ok(())
        },
        |_st, rec| {
            for _ in 0..10 {
                let t0 = now_ns();
                let _ = first_op_at.compare_exchange(0, t0, SeqCst, SeqCst);
                rec.record(0, 0, t0, now_ns());
            }
            Ok(())
        },
    )
    .expect("phase runs");
    assert_eq!(report.ops["op"].count, 10 * threads as u64);
    report.window_mono_ns[0]
}

/// Waits until the phase running on another thread is held. The 120 s limit only turns a hang
/// into a failure; reaching the hold takes milliseconds even on a loaded machine.
fn wait_for_hold(ctl: &Control) {
    let t = Instant::now();
    while !ctl.holding() {
        assert!(t.elapsed() < Duration::from_secs(120), "the phase never reached the hold");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn an_armed_hold_waits_for_release_after_setup_and_before_the_first_operation() {
    let ctl = Control::new();
    let setups: Vec<AtomicU64> = (0..2).map(|_| AtomicU64::new(0)).collect();
    let first_op = AtomicU64::new(0);
    ctl.arm_start_hold();
    let released_at = AtomicU64::new(0);
    let start = std::thread::scope(|s| {
        let h = s.spawn(|| phase(&ctl, 2, &setups, &first_op));
        wait_for_hold(&ctl);
        // Held: both workers are set up and no operation has run, however long it waits.
        std::thread::sleep(Duration::from_millis(100));
        assert!(setups.iter().all(|t| t.load(SeqCst) > 0), "a worker was not set up at the hold");
        assert_eq!(first_op.load(SeqCst), 0, "an operation ran while held");
        released_at.store(now_ns(), SeqCst);
        ctl.release_start();
        h.join().unwrap()
    });
    assert!(!ctl.holding());
    let rel = released_at.load(SeqCst);
    assert!(start >= rel, "the measured window began before the release");
    assert!(first_op.load(SeqCst) >= rel);
    // The hold disarms itself: the next phase runs straight through, never entering the hold
    // (if it did, it is released here so that the test fails instead of hanging).
    first_op.store(0, SeqCst);
    let held = std::thread::scope(|s| {
        let h = s.spawn(|| phase(&ctl, 1, &setups[..1], &first_op));
        let mut held = false;
        while !h.is_finished() {
            if ctl.holding() {
                held = true;
                ctl.release_start();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        h.join().unwrap();
        held
    });
    assert!(!held, "the second phase waited at a hold nobody armed");
    assert!(!ctl.holding());
}

#[test]
fn a_stop_request_ends_the_hold() {
    let ctl = Control::new();
    ctl.arm_start_hold();
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            run_threads(
                "run",
                1,
                timing(),
                &ctl,
                KINDS,
                3,
                0,
                |_| Ok(()),
                |_st: &mut (), rec| {
                    while !rec.should_stop(now_ns()) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Ok(())
                },
            )
        });
        wait_for_hold(&ctl);
        ctl.request_stop();
        let (report, _) = h.join().unwrap().expect("a stopped phase still reports");
        assert!(report.interrupted);
    });
}

#[test]
fn a_release_before_the_hold_lets_the_phase_pass_and_disarm_clears_it() {
    let ctl = Control::new();
    let setups: Vec<AtomicU64> = (0..1).map(|_| AtomicU64::new(0)).collect();
    let first_op = AtomicU64::new(0);
    ctl.arm_start_hold();
    ctl.release_start();
    phase(&ctl, 1, &setups, &first_op);
    ctl.arm_start_hold();
    ctl.disarm_start_hold();
    first_op.store(0, SeqCst);
    phase(&ctl, 1, &setups, &first_op);
    assert!(!ctl.holding());
}
