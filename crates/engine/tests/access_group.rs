//! Several access jobs measured together in one phase (fio's jobs of one group): through the
//! Session API on a temp dir.

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn session(dir: &std::path::Path, jobs: Value) -> Session {
    let job = json!({"dir": dir, "interval_s": 0.05, "workload": {"family": "access_group", "jobs": jobs}});
    Session::from_json(&job.to_string()).expect("valid job")
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

fn access(prefix: &str, size: u32, read_pct: u32, random_pct: u32, file_size: u64, total: u64) -> Value {
    json!({"file_prefix": prefix, "file_size": file_size, "total_bytes": total, "alignment": size,
           "entries": [{"size": size, "weight": 100, "read_pct": read_pct, "random_pct": random_pct}]})
}

fn count(r: &Value, kind: &str, what: &str) -> u64 {
    r["ops"][kind][what].as_u64().unwrap_or(0)
}

#[test]
fn a_reader_and_a_writer_in_one_phase_each_do_their_own_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mb = 1u64 << 20;
    let mut s = session(
        dir.path(),
        json!([
            {"name": "reader", "threads": 1, "workload": access("r", 65536, 100, 0, 8 * mb, 8 * mb)},
            {"name": "writer", "threads": 2, "backend": "io_uring", "workload": {
                "file_prefix": "w", "file_size": 4 * mb, "total_bytes": 8 * mb, "alignment": 4096, "queue_depth": 4,
                "file_count": 2, "thread_files": true,
                "entries": [{"size": 4096, "weight": 100, "read_pct": 0, "random_pct": 100}]}},
        ]),
    );
    let prep = run(&mut s, "prepare");
    assert_eq!(prep["total"]["bytes"], 16 * mb, "both jobs' files are laid out");
    let r = run(&mut s, "run");
    let (reader, writer) = (&r["jobs"]["reader"], &r["jobs"]["writer"]);
    // Each job did exactly what it asked for, in its own direction, with its own request size.
    assert_eq!(
        (count(reader, "read", "bytes"), count(reader, "read", "count"), count(reader, "write", "count")),
        (8 * mb, 128, 0)
    );
    assert_eq!(
        (count(writer, "write", "bytes"), count(writer, "write", "count"), count(writer, "read", "count")),
        (8 * mb, 2048, 0)
    );
    assert_eq!(reader["threads"], 1);
    assert_eq!(writer["threads"], 2);
    assert_eq!(writer["extra"]["backend"], "io_uring");
    assert_eq!(reader["extra"]["backend"], "psync");
    // The group's totals are the sum of its jobs'.
    assert_eq!(r["total"]["bytes"], 16 * mb);
    assert_eq!(count(&r, "read", "count") + count(&r, "write", "count"), 128 + 2048);
    assert_eq!(r["threads"], 3);
    assert_eq!(r["extra"]["group"], json!(["reader", "writer"]));
    // Each job's window lies within the group's.
    for j in [reader, writer] {
        assert!(j["start_s"].as_f64().unwrap() <= j["end_s"].as_f64().unwrap());
        assert!(j["end_s"].as_f64().unwrap() <= r["elapsed_s"].as_f64().unwrap() + 1e-9);
    }
    // Each job's latencies are its own: histogram counts equal its operations.
    assert_eq!(reader["ops"]["read"]["lat"]["count"], 128);
    assert_eq!(writer["ops"]["write"]["lat"]["count"], 2048);
    // Each job's own interval samples add up to its totals.
    for j in [reader, writer] {
        let sum: u64 = j["intervals"].as_array().unwrap().iter().map(|i| i["ops"].as_u64().unwrap()).sum();
        assert_eq!(sum, j["total"]["ops"].as_u64().unwrap());
    }
    let sum: u64 = r["intervals"].as_array().unwrap().iter().map(|i| i["ops"].as_u64().unwrap()).sum();
    assert_eq!(sum, r["total"]["ops"].as_u64().unwrap());
    run(&mut s, "cleanup");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_time_based_job_and_a_fixed_one_each_end_on_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let mut timed = access("t", 4096, 100, 100, 1 << 20, 1 << 20);
    timed["total_bytes"] = Value::Null;
    timed["duration_s"] = json!(0.3);
    let mut s = session(
        dir.path(),
        json!([
            {"name": "timed", "workload": timed},
            {"name": "fixed", "workload": access("f", 4096, 0, 0, 1 << 20, 1 << 20)},
        ]),
    );
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let (t, f) = (&r["jobs"]["timed"], &r["jobs"]["fixed"]);
    assert_eq!(count(f, "write", "bytes"), 1 << 20);
    assert!(t["elapsed_s"].as_f64().unwrap() >= 0.3);
    assert!(count(t, "read", "count") > 0 && count(t, "write", "count") == 0);
    // The phase lasts as long as its longest job.
    assert!(r["elapsed_s"].as_f64().unwrap() >= t["end_s"].as_f64().unwrap() - 1e-9);
    assert!(r["elapsed_s"].as_f64().unwrap() >= f["end_s"].as_f64().unwrap() - 1e-9);
    run(&mut s, "cleanup");
}

#[test]
fn time_based_jobs_of_a_group_overlap_in_time() {
    // Both run until the common deadline, so each starts before the other ends whatever the machine's load
    // (a fixed amount of cached I/O may be over before a second thread is even scheduled).
    let dir = tempfile::tempdir().unwrap();
    let timed = |prefix: &str, read_pct: u32| {
        let mut a = access(prefix, 4096, read_pct, 100, 1 << 20, 1 << 20);
        a["total_bytes"] = Value::Null;
        a["duration_s"] = json!(0.3);
        a
    };
    let mut s = session(
        dir.path(),
        json!([
            {"name": "reader", "workload": timed("r", 100)},
            {"name": "writer", "threads": 2, "workload": timed("w", 0)},
        ]),
    );
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let span = |j: &Value| (j["start_s"].as_f64().unwrap(), j["end_s"].as_f64().unwrap());
    let ((rs, re), (ws, we)) = (span(&r["jobs"]["reader"]), span(&r["jobs"]["writer"]));
    assert!(rs < we && ws < re, "reader {rs}..{re}, writer {ws}..{we}");
    assert!(re >= 0.3 && we >= 0.3, "reader ends {re}, writer {we}");
    run(&mut s, "cleanup");
}

#[test]
fn a_bad_job_is_named_by_its_place_in_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let job = |jobs: Value| {
        let j = json!({"dir": dir.path(), "workload": {"family": "access_group", "jobs": jobs}});
        Session::from_json(&j.to_string()).err().expect("refused").to_string()
    };
    let good = access("a", 4096, 100, 0, 1 << 20, 1 << 20);
    let mut bad = good.clone();
    bad["entries"][0]["size"] = json!(0);
    let e = job(json!([{"name": "a", "workload": good}, {"name": "b", "workload": bad}]));
    assert!(e.contains("jobs[1].workload.entries[0].size"), "{e}");
    let e = job(json!([{"name": "a", "workload": good}, {"name": "a", "workload": good}]));
    assert!(e.contains("jobs[1].name"), "{e}");
    let e = job(json!([{"name": "a", "threads": 0, "workload": good}]));
    assert!(e.contains("jobs[0].threads"), "{e}");
}
