//! fio's latency target (latency_target, latency_window, latency_percentile, latency_run) through
//! the Session API, at the extremes where the depth found does not depend on the machine: a target
//! no request can meet (1 ns) and one every request meets (an hour). With latency_window 0 every
//! completion batch closes a window, so the number of windows is set by the algorithm alone.

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

const KIB4: u64 = 4096;

fn session(dir: &std::path::Path, lat: Value, total_bytes: u64, qd: u32) -> Session {
    let job = json!({"dir": dir, "threads": 1, "seed": 3, "backend": "io_uring", "interval_s": 0.05,
        "workload": {"family": "access", "file_prefix": "lt", "file_size": 1u64 << 20, "alignment": KIB4,
                     "queue_depth": qd, "total_bytes": total_bytes, "warmup_s": 0.0,
                     "entries": [{"size": KIB4, "weight": 100, "read_pct": 100, "random_pct": 100}],
                     "latency_target": lat}});
    Session::from_json(&job.to_string()).expect("valid job")
}

fn run(s: &mut Session) -> Value {
    let c = Control::new();
    s.run_phase("prepare", &c).expect("prepare");
    serde_json::to_value(s.run_phase("run", &c).expect("run")).unwrap()
}

fn reads(r: &Value) -> u64 {
    r["ops"]["read"]["count"].as_u64().unwrap_or(0)
}

const HOUR_NS: u64 = 3_600_000_000_000;

#[test]
fn a_target_every_request_meets_climbs_to_iodepth_and_reports_only_the_final_window() {
    let dir = tempfile::tempdir().unwrap();
    // 64 MiB to read: far more than the search needs (1, 2, 4, 8, 16, then a final window at 16).
    let mut s = session(dir.path(), json!({"target_ns": HOUR_NS, "window_ns": 0, "percentile": 99.9}), 64 << 20, 16);
    let r = run(&mut s);
    let lt = &r["extra"]["latency_target"];
    assert_eq!(lt["depth"], 16, "{lt}");
    assert_eq!(r["counters"]["latency_depth"], 16);
    assert_eq!(lt["search_ended_job"], true, "{lt}");
    assert_eq!(lt["stats_reset"], true);
    assert_eq!(lt["late_requests"], 0);
    // The statistics were reset after a quiesce; the final window is one completion batch at depth
    // 16 (re-issued) and then the 16 in flight drained: at most 32 reads, never the 16384 asked for.
    let n = reads(&r);
    assert!((1..=32).contains(&n), "{n} reads reported: not the final window only");
}

#[test]
fn a_target_no_request_meets_keeps_depth_1_until_the_size_is_done() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), json!({"target_ns": 1, "window_ns": 0, "percentile": 99.9}), 256 * KIB4, 16);
    let r = run(&mut s);
    let lt = &r["extra"]["latency_target"];
    assert_eq!(lt["depth"], 1, "{lt}");
    assert_eq!(lt["search_ended_job"], false);
    assert_eq!(lt["stats_reset"], false);
    // Every request was late and the job did all of its size, all of it reported.
    assert_eq!(reads(&r), 256);
    assert_eq!(lt["late_requests"], 256);
    assert!(r["warnings"].as_array().unwrap().iter().all(|w| !w.as_str().unwrap().contains("latency_target")));
}

#[test]
fn percentile_100_ends_the_job_at_the_first_late_request_at_depth_1() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), json!({"target_ns": 1, "window_ns": 1_000_000_000}), 256 * KIB4, 16);
    let r = run(&mut s);
    let lt = &r["extra"]["latency_target"];
    assert_eq!(lt["percentile"], 100.0);
    assert_eq!(lt["depth"], 1);
    assert_eq!(reads(&r), 1, "the job goes on after a late request at depth 1 with percentile 100");
    assert!(lt["ended_over_target_ns"].as_u64().unwrap() > 1);
    let w = r["warnings"].as_array().unwrap();
    assert!(w.iter().any(|w| w.as_str().unwrap().contains("over latency_target")), "{w:?}");
}

#[test]
fn latency_run_climbs_to_iodepth_and_runs_until_the_size_is_done() {
    let dir = tempfile::tempdir().unwrap();
    let lat = json!({"target_ns": HOUR_NS, "window_ns": 0, "percentile": 99.9, "run": true});
    let mut s = session(dir.path(), lat, 1024 * KIB4, 8);
    let r = run(&mut s);
    let lt = &r["extra"]["latency_target"];
    assert_eq!(lt["depth"], 8, "{lt}");
    assert_eq!(lt["stats_reset"], false);
    assert_eq!(lt["search_ended_job"], false);
    assert_eq!(reads(&r), 1024, "latency_run stops at the job's size, all of it reported");
}

#[test]
fn a_latency_target_needs_one_thread_and_no_rate() {
    let dir = tempfile::tempdir().unwrap();
    let base = |threads: usize, extra: Value| {
        let mut w = json!({"family": "access", "file_prefix": "lt", "file_size": 1u64 << 20, "alignment": KIB4,
                           "queue_depth": 4, "total_bytes": 1u64 << 20,
                           "entries": [{"size": KIB4, "weight": 100, "read_pct": 100, "random_pct": 100}],
                           "latency_target": {"target_ns": 1000}});
        for (k, v) in extra.as_object().unwrap() {
            w[k] = v.clone();
        }
        json!({"dir": dir.path(), "threads": threads, "seed": 1, "backend": "io_uring", "workload": w}).to_string()
    };
    let err = Session::from_json(&base(2, json!({}))).err().expect("refused").to_string();
    assert!(err.contains("latency_target") && err.contains("threads"), "{err}");
    let err =
        Session::from_json(&base(1, json!({"pace": {"rate_iops": [100, 0]}}))).err().expect("refused").to_string();
    assert!(err.contains("latency_target") && err.contains("rate"), "{err}");
    let err =
        Session::from_json(&base(1, json!({"latency_target": {"target_ns": 0}}))).err().expect("refused").to_string();
    assert!(err.contains("target_ns"), "{err}");
}
