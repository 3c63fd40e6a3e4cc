//! fio's I/O log in the access family: write_iolog (`iolog_out`: every request issued, in fio's
//! version 3 lines) and read_iolog (`replay`: the requests of a log, in order, at their times).

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn session(dir: &std::path::Path, backend: &str, extra: Value) -> Session {
    let mut workload = json!({
        "family": "access", "file_size": 64 << 10, "file_names": ["a"], "alignment": 4096,
        "entries": [{"size": 4096, "weight": 100, "read_pct": 0, "random_pct": 100}],
        "total_bytes": 64 << 10, "random_map": true,
    });
    for (k, v) in extra.as_object().unwrap() {
        workload[k] = v.clone();
    }
    let job =
        json!({"dir": dir, "threads": 1, "seed": 5, "backend": backend, "interval_s": 0.05, "workload": workload});
    Session::from_json(&job.to_string()).expect("a valid job")
}

fn run(s: &mut Session) -> Value {
    s.run_phase("prepare", &Control::new()).expect("prepare runs");
    serde_json::to_value(s.run_phase("run", &Control::new()).expect("run runs")).unwrap()
}

fn count(r: &Value, kind: &str) -> u64 {
    r["ops"][kind]["count"].as_u64().unwrap_or(0)
}

/// The log's request lines: (time us, file, action, offset, length).
fn requests(text: &str) -> Vec<(u64, String, String, u64, u64)> {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("fio version 3 iolog"));
    lines
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .filter(|p| p.len() == 5)
        .map(|p| (p[0].parse().unwrap(), p[1].into(), p[2].into(), p[3].parse().unwrap(), p[4].parse().unwrap()))
        .collect()
}

#[test]
fn every_issued_request_and_sync_is_logged_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("w.log");
    let mut s = session(
        dir.path(),
        "psync",
        json!({"fsync_every": 4, "iolog_out": {"path": log.to_str().unwrap(), "names": ["a"]}}),
    );
    let r = run(&mut s);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("fio version 3 iolog\n0 a add\n0 a open\n"), "{text}");
    assert!(text.trim_end().ends_with(" a close"), "{text}");
    let reqs = requests(&text);
    let writes: Vec<_> = reqs.iter().filter(|r| r.2 == "write").collect();
    assert_eq!(writes.len() as u64, count(&r, "write"));
    assert_eq!(writes.len(), 16);
    let mut offsets: Vec<u64> = writes.iter().map(|w| w.3).collect();
    offsets.sort();
    assert_eq!(offsets, (0..16).map(|i| i * 4096).collect::<Vec<_>>(), "the random map: each block once");
    assert_eq!(reqs.iter().filter(|r| r.2 == "sync").count(), 4, "a sync after every fourth write");
    assert!(reqs.windows(2).all(|w| w[0].0 <= w[1].0), "in issue order");
    assert_eq!(r["counters"]["iolog_lines"], 20);
}

#[test]
fn a_log_is_replayed_in_order_with_its_syncs_and_trims() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("again.log");
    // write, read, fsync, trim, fdatasync: as fast as they go.
    let ops =
        json!([[0, 0, 1, 8192, 4096], [0, 0, 0, 8192, 4096], [0, 0, 3, 0, 0], [0, 0, 2, 0, 4096], [0, 0, 4, 0, 0]]);
    let mut s = session(
        dir.path(),
        "psync",
        json!({"random_map": false, "replay": {"ops": ops, "timed": false},
               "iolog_out": {"path": log.to_str().unwrap(), "names": ["a"]}}),
    );
    let r = run(&mut s);
    assert_eq!((count(&r, "write"), count(&r, "read"), count(&r, "trim"), count(&r, "fsync")), (1, 1, 1, 2));
    let again: Vec<(String, u64, u64)> =
        requests(&std::fs::read_to_string(&log).unwrap()).into_iter().map(|r| (r.2, r.3, r.4)).collect();
    let want = [("write", 8192, 4096), ("read", 8192, 4096), ("sync", 0, 0), ("trim", 0, 4096), ("datasync", 0, 0)];
    assert_eq!(again, want.map(|(a, o, l)| (a.to_string(), o, l)));
}

#[test]
fn a_timed_replay_waits_for_each_requests_time() {
    let dir = tempfile::tempdir().unwrap();
    let ops = json!([[0, 0, 0, 0, 4096], [30_000_000, 0, 0, 4096, 4096], [30_000_000, 0, 1, 0, 4096]]);
    for (depth, backend) in [(1, "psync"), (4, "io_uring")] {
        let mut s = session(
            dir.path(),
            backend,
            json!({"random_map": false, "queue_depth": depth, "replay": {"ops": ops.clone(), "timed": true}}),
        );
        let t0 = std::time::Instant::now();
        let r = run(&mut s);
        assert_eq!((count(&r, "read"), count(&r, "write")), (2, 1));
        assert!(t0.elapsed().as_millis() >= 30, "the second request waits 30 ms");
    }
}

#[test]
fn a_replay_that_does_not_fit_the_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let job = |ops: Value, extra: Value| {
        let mut w = json!({
            "family": "access", "file_size": 64 << 10, "file_names": ["a"], "alignment": 512,
            "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 0}],
            "total_bytes": 1 << 20, "replay": {"ops": ops},
        });
        for (k, v) in extra.as_object().unwrap() {
            w[k] = v.clone();
        }
        let j = json!({"dir": dir.path(), "threads": 1, "seed": 5, "backend": "psync", "workload": w});
        Session::from_json(&j.to_string()).err().expect("refused").to_string()
    };
    let e = job(json!([[0, 0, 0, 65536, 4096]]), json!({}));
    assert!(e.contains("replay.ops") && e.contains("request 0"), "{e}");
    let e = job(json!([[0, 0, 0, 100, 512]]), json!({"direct": true}));
    assert!(e.contains("O_DIRECT needs multiples of 512"), "{e}");
    let e = job(json!([[0, 0, 0, 0, 512]]), json!({"verify": "crc32c"}));
    assert!(e.contains("replay") && e.contains("cannot be combined with verify"), "{e}");
}
