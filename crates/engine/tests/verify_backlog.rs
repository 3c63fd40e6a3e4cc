//! fio's verify_backlog through the Session API: written requests read back and checked during
//! the run (counted as the run's reads, not as the mix's), the rest at the end of the writes but
//! not after a deadline, corruption caught while the job still writes, verify_fatal stopping the
//! thread there, and the checksums fio names verifying clean.

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn session(dir: &std::path::Path, threads: usize, workload: Value) -> Session {
    let job = json!({"dir": dir, "threads": threads, "seed": 5, "backend": "psync", "interval_s": 0.05, "workload": workload});
    Session::from_json(&job.to_string()).expect("valid job")
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

/// Random 4 KiB writes over one 1 MiB file, each block once per pass (random_map).
fn writer(extra: Value) -> Value {
    let mut w = json!({
        "family": "access", "file_count": 1, "file_size": 1 << 20, "alignment": 4096, "random_map": true,
        "entries": [{"size": 4096, "weight": 100, "read_pct": 0, "random_pct": 100}],
        "total_bytes": 64 * 4096, "verify": "crc32c",
    });
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    w
}

fn count(r: &Value, kind: &str) -> u64 {
    r["ops"][kind]["count"].as_u64().unwrap_or(0)
}

#[test]
fn every_write_is_read_back_in_the_run_as_a_read_outside_the_mix() {
    for (backlog, batch) in [(8, 0), (4, 2), (1, 0), (5, 0)] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = session(dir.path(), 1, writer(json!({"verify_backlog": backlog, "verify_backlog_batch": batch})));
        run(&mut s, "prepare");
        let r = run(&mut s, "run");
        assert_eq!(count(&r, "write"), 64);
        assert_eq!(count(&r, "read"), 64, "backlog {backlog}/{batch}: each write read back once");
        assert_eq!(r["ops"]["read"]["bytes"], 64 * 4096);
        assert_eq!(r["counters"]["verify_backlog_reads"], 64);
        assert_eq!(r["counters"]["verify_blocks_checked"], 64);
        assert_eq!(r["counters"]["verify_mismatches"], 0, "{}", r["extra"]["verify"]);
        let mix = &r["extra"]["mix"][0];
        assert_eq!((mix["reads"].as_u64(), mix["writes"].as_u64()), (Some(0), Some(64)), "the mix is the job's");
    }
}

#[test]
fn after_a_deadline_only_the_batches_due_during_the_writes_were_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(json!({"verify_backlog": 8}));
    w["total_bytes"] = Value::Null;
    w["duration_s"] = json!(0.3);
    let mut s = session(dir.path(), 1, w);
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let (reads, writes) = (count(&r, "read"), count(&r, "write"));
    assert!(writes > 16, "{writes} writes");
    // fio reads a batch of 8 whenever 8 writes wait and, stopped by its runtime, reads no more.
    assert!(reads <= writes && writes - reads < 16, "{reads} reads for {writes} writes");
    assert_eq!(r["counters"]["verify_mismatches"], 0);
}

fn torn(extra: Value) -> Value {
    let mut w = writer(extra);
    w["total_bytes"] = json!(20 * 4096);
    w["fault"] = json!({"kind": "torn_write", "after": 10, "count": 1, "keep_bytes": 1000});
    w
}

#[test]
fn a_torn_write_is_caught_by_the_backlog_while_the_job_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 1, torn(json!({"verify_backlog": 4})));
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert_eq!(r["counters"]["verify_mismatches"], 1, "{}", r["extra"]["verify"]);
    let m = &r["extra"]["verify"]["mismatches"][0];
    assert_eq!(m["offset"], r["extra"]["faults_injected"]["writes"][0]["offset"]);
    assert_eq!(m["kind"], "bad_checksum");
    assert_eq!(m["phase"], "run");
    assert_eq!(count(&r, "write"), 20, "without verify_fatal the job writes on");
    // Without the backlog a write-only run reads nothing, so it finds nothing.
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 1, torn(json!({})));
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert_eq!((count(&r, "read"), r["counters"]["verify_mismatches"].as_u64()), (0, Some(0)));
}

#[test]
fn verify_fatal_stops_the_thread_at_its_first_corrupt_block() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 1, torn(json!({"verify_backlog": 1, "verify_fatal": true})));
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert_eq!(r["counters"]["verify_mismatches"], 1);
    assert_eq!(count(&r, "write"), 11, "the 11th write tore, was read back at once, and the thread stopped");
    assert_eq!(count(&r, "read"), 11);
}

#[test]
fn fio_checksums_verify_clean_and_their_blocks_name_them() {
    for algo in ["md5", "sha1", "crc32", "crc16", "crc7", "crc64", "sha3_224", "sha3_256"] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = session(dir.path(), 1, writer(json!({"verify": algo, "verify_backlog": 16})));
        run(&mut s, "prepare");
        let r = run(&mut s, "run");
        assert_eq!(r["counters"]["verify_mismatches"], 0, "{algo}: {}", r["extra"]["verify"]);
        assert_eq!(r["counters"]["verify_backlog_reads"], 64);
        assert_eq!(r["extra"]["verify"]["algo"], algo);
        let v = run(&mut s, "verify");
        assert_eq!(v["counters"]["verify_mismatches"], 0, "{algo}");
        assert_eq!(v["counters"]["verify_blocks_checked"], 256);
    }
}

#[test]
fn backlog_settings_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let job = |w: Value| json!({"dir": dir.path(), "workload": w}).to_string();
    let mut w = writer(json!({"verify_backlog": 4}));
    w["verify"] = Value::Null;
    let e = Session::from_json(&job(w)).err().unwrap().to_string();
    assert!(e.starts_with("verify_backlog: needs verify"), "{e}");
    let e = Session::from_json(&job(writer(json!({"verify_backlog": (1u64 << 20) + 1})))).err().unwrap().to_string();
    assert!(e.starts_with("verify_backlog: at most"), "{e}");
}

#[test]
fn verify_dump_writes_the_corrupt_block_as_read_and_as_expected_beside_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 1, torn(json!({"verify_backlog": 4, "verify_dump": true})));
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let at = r["extra"]["faults_injected"]["writes"][0]["offset"].as_u64().unwrap();
    let (d,) = (&r["extra"]["verify"]["dumps"][0],);
    assert_eq!(d["offset"], at);
    let received = std::fs::read(d["received"].as_str().unwrap()).unwrap();
    let expected = std::fs::read(d["expected"].as_str().unwrap()).unwrap();
    let data = std::fs::read(dir.path().join("fsmeter.access.0")).unwrap();
    assert!(d["received"].as_str().unwrap().ends_with(&format!("fsmeter.access.0.{at}.received")));
    assert_eq!(received, data[at as usize..at as usize + 4096], "the block as it was read");
    assert_eq!(received[..1000], expected[..1000], "the torn write kept its first 1000 bytes");
    assert_ne!(received[1000..], expected[1000..]);
    assert_eq!(&expected[..4], b"FSMV");
}

#[test]
fn threads_writing_the_same_blocks_are_no_corruption() {
    // Four threads over 16 shared blocks: a backlog read often meets another thread's write of its block, in
    // flight or done. A block caught mid-write is read again before it counts; a block another thread rewrote
    // is a sound block. Neither is corruption.
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(json!({"verify_backlog": 1, "file_size": 16 * 4096, "random_map": false}));
    w["total_bytes"] = json!(4 * 400 * 4096);
    let mut s = session(dir.path(), 4, w);
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert_eq!(count(&r, "write"), 1600);
    assert_eq!(count(&r, "read"), 1600);
    assert_eq!(r["counters"]["verify_mismatches"], 0, "{}", r["extra"]["verify"]);
}
