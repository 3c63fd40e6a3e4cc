//! Values and situations that came from hostile input: a duration past the clock, and a cleanup after a
//! prepare that failed part-way.

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn job(dir: &std::path::Path, workload: Value) -> String {
    json!({"dir": dir, "threads": 1, "seed": 5, "backend": "psync", "interval_s": 0.05, "workload": workload})
        .to_string()
}

fn access(extra: Value) -> Value {
    let mut w = json!({"family": "access", "file_count": 1, "file_size": 65536,
                       "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 0}],
                       "duration_s": 1.0});
    w.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    w
}

#[test]
fn a_duration_past_the_limit_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    for (field, secs) in [("duration_s", 1e30), ("duration_s", 1.85e10), ("warmup_s", 1e7 + 1.0)] {
        let err = Session::from_json(&job(dir.path(), access(json!({ field: secs })))).err().expect("refused");
        assert!(err.to_string().starts_with(field), "{err}");
    }
    assert!(Session::from_json(&job(dir.path(), access(json!({"duration_s": 1e7})))).is_ok());
}

#[test]
fn cleanup_after_a_failed_prepare_removes_only_what_it_made() {
    let dir = tempfile::tempdir().unwrap();
    // File 3's name is taken by a directory, so prepare stops there; a file under a later name is
    // someone else's and must survive the cleanup.
    std::fs::create_dir(dir.path().join("fsmeter.access.3")).unwrap();
    std::fs::write(dir.path().join("fsmeter.access.7"), b"not fsmeter's").unwrap();
    let mut s = Session::from_json(&job(dir.path(), access(json!({"file_count": 1_000_000, "file_size": 4096}))))
        .expect("valid job");
    assert!(s.run_phase("prepare", &Control::new()).is_err());
    let r = serde_json::to_value(s.run_phase("cleanup", &Control::new()).expect("cleanup runs")).unwrap();
    assert_eq!(r["counters"]["files_removed"], 3);
    assert_eq!(r["counters"]["names_tried"], 3);
    let mut left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    assert_eq!(left, ["fsmeter.access.3", "fsmeter.access.7"]);
}

#[test]
fn a_stop_pending_before_cleanup_does_not_skip_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::from_json(&job(dir.path(), access(json!({"file_count": 5})))).expect("valid job");
    s.run_phase("prepare", &Control::new()).expect("prepare runs");
    let ctl = Control::new();
    // A stop pending before cleanup starts (the run was interrupted) does not skip the cleanup.
    ctl.request_stop();
    let r = serde_json::to_value(s.run_phase("cleanup", &ctl).expect("cleanup runs")).unwrap();
    assert_eq!(r["counters"]["files_removed"], 5);
    assert_eq!(r["interrupted"], false);
}

#[test]
fn a_deadline_past_the_clock_saturates_instead_of_wrapping() {
    use fsmeter_engine::measure::{now_ns, run_threads, PhaseTiming};
    // start + warm-up + duration overflows u64: wrapped, the deadline lay in the past and the phase
    // stopped after its first operation. Saturated, the worker runs until it stops on its own.
    let timing = PhaseTiming { warmup_ns: u64::MAX / 2, duration_ns: Some(u64::MAX / 2), interval_ns: 50_000_000 };
    let (_report, done) = run_threads(
        "run",
        1,
        timing,
        &Control::new(),
        &["op"],
        2,
        0,
        |_| Ok(()),
        |_, rec| {
            let mut n = 0u64;
            while n < 1000 {
                let t0 = now_ns();
                if rec.should_stop(t0) {
                    break;
                }
                rec.record(0, 0, t0, now_ns());
                n += 1;
            }
            Ok(n)
        },
    )
    .expect("phase runs");
    assert_eq!(done, vec![1000]);
}
