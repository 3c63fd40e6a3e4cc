//! fio's serialize_overlap in the access family: a thread holds back a request whose bytes overlap
//! one of its own in flight, with every request drawn after it, and still does all of its work.

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn run_job(dir: &std::path::Path, file_size: u64, random_pct: u32, serialize: bool) -> Value {
    let job = json!({"dir": dir, "threads": 1, "seed": 5, "backend": "io_uring", "interval_s": 0.05, "workload": {
        "family": "access", "file_size": file_size, "file_names": ["o"], "alignment": 4096, "queue_depth": 8,
        "entries": [{"size": 4096, "weight": 100, "read_pct": 50, "random_pct": random_pct}],
        "total_bytes": 1 << 20, "serialize_overlap": serialize,
    }});
    let mut s = Session::from_json(&job.to_string()).expect("a valid job");
    s.run_phase("prepare", &Control::new()).expect("prepare runs");
    serde_json::to_value(s.run_phase("run", &Control::new()).expect("run runs")).unwrap()
}

fn ios(r: &Value) -> u64 {
    ["read", "write"].iter().map(|k| r["ops"][k]["count"].as_u64().unwrap_or(0)).sum()
}

#[test]
fn overlapping_requests_wait_and_the_work_is_all_done() {
    // Eight requests in flight over four blocks: most draws overlap one in flight.
    let dir = tempfile::tempdir().unwrap();
    let r = run_job(dir.path(), 16 << 10, 100, true);
    assert_eq!(ios(&r), 256, "every request of the quota still goes");
    let held = r["counters"]["serialize_overlap_holds"].as_u64().expect("the holds are counted");
    assert!(held > 0, "four blocks, eight slots: requests must wait");
    // Without the option nothing is held, and nothing is counted.
    let r = run_job(dir.path(), 16 << 10, 100, false);
    assert_eq!(ios(&r), 256);
    assert!(r["counters"].get("serialize_overlap_holds").is_none());
}

#[test]
fn a_sequential_walk_never_overlaps_itself() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_job(dir.path(), 4 << 20, 0, true);
    assert_eq!(ios(&r), 256);
    assert_eq!(r["counters"]["serialize_overlap_holds"], 0, "consecutive requests do not overlap");
}

#[test]
fn a_latency_target_cannot_be_combined_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let job = json!({"dir": dir.path(), "threads": 1, "seed": 5, "backend": "io_uring", "interval_s": 0.05, "workload": {
        "family": "access", "file_size": 1 << 20, "file_names": ["o"], "queue_depth": 8,
        "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 100}],
        "duration_s": 1.0, "serialize_overlap": true,
        "latency_target": {"target_ns": 1_000_000, "window_ns": 100_000_000, "percentile": 100.0},
    }});
    let e = Session::from_json(&job.to_string()).err().expect("refused").to_string();
    assert!(e.contains("latency_target") && e.contains("serialize_overlap"), "{e}");
}
