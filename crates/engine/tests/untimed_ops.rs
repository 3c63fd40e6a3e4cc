//! A phase run with histogram precision 0 counts its operations without timing each one
//! (`Recorder::stamp` reads no clock): counts and bytes are kept, latencies are not, and the
//! phase's time still covers its work.

use std::time::Duration;

use fsmeter_engine::measure::{run_threads, PhaseTiming};
use fsmeter_engine::Control;

const KINDS: &[&str] = &["op", "other"];

fn timing() -> PhaseTiming {
    PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: 1_000_000_000 }
}

/// 2 threads of 1,000 operations of 8 bytes each, the last operation sleeping 30 ms.
fn phase(sigfig: u8) -> fsmeter_engine::report::PhaseReport {
    let ctl = Control::new();
    let (report, _) = run_threads(
        "run",
        2,
        timing(),
        &ctl,
        KINDS,
        sigfig,
        0,
        |_| Ok(()),
        |_st, rec| {
            for i in 0..1000 {
                let t0 = rec.stamp();
                if i == 999 {
                    std::thread::sleep(Duration::from_millis(30));
                }
                rec.record(0, 8, t0, rec.stamp());
            }
            Ok(())
        },
    )
    .expect("phase runs");
    report
}

#[test]
fn an_untimed_phase_counts_operations_and_keeps_no_latency() {
    let r = phase(0);
    let op = &r.ops["op"];
    assert_eq!(op.count, 2000);
    assert_eq!(r.total.bytes, 16_000);
    assert_eq!(op.lat.count, 0, "no latency kept for operations counted without a clock");
    assert!(r.elapsed_s >= 0.03, "the phase's time covers its work: {} s", r.elapsed_s);
    assert!(r.elapsed_s < 30.0);
}

#[test]
fn a_timed_phase_keeps_a_latency_for_every_operation() {
    let r = phase(3);
    let op = &r.ops["op"];
    assert_eq!(op.count, 2000);
    assert_eq!(op.lat.count, 2000);
    assert!(op.lat.max_ns >= 30_000_000, "the sleeping operation's latency: {} ns", op.lat.max_ns);
    assert!(r.elapsed_s >= 0.03);
}
