//! Data verification end to end through the Session API: verified round trips,
//! corruption made behind the engine's back (between phases and in the middle of
//! a run) caught at its exact offset, and torn, short, lost and misdirected
//! writes from the fault-injecting backend.

use std::os::unix::fs::FileExt;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn session(dir: &std::path::Path, threads: usize, workload: Value) -> Session {
    let job = json!({"dir": dir, "threads": threads, "seed": 11, "backend": "psync", "interval_s": 0.05, "workload": workload});
    Session::from_json(&job.to_string()).expect("valid job")
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

fn access(verify: &str, read_pct: u32, extra: Value) -> Value {
    let mut w = json!({
        "family": "access", "file_count": 2, "file_size": 1 << 20, "alignment": 4096,
        "entries": [{"size": 4096, "weight": 100, "read_pct": read_pct, "random_pct": 100}],
        "total_bytes": 8 << 20, "verify": verify,
    });
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    w
}

fn mismatches(r: &Value) -> u64 {
    r["counters"]["verify_mismatches"].as_u64().expect("verify counters in the report")
}

#[test]
fn verified_runs_check_every_block_and_find_nothing_wrong() {
    for algo in ["crc32c", "xxh3", "sha256"] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = session(dir.path(), 1, access(algo, 50, json!({})));
        let p = run(&mut s, "prepare");
        assert_eq!(p["counters"]["verify_blocks_written"], 2 * 256);
        let r = run(&mut s, "run");
        assert_eq!(mismatches(&r), 0, "{algo}: {}", r["extra"]["verify"]);
        let reads = r["ops"]["read"]["count"].as_u64().unwrap();
        let writes = r["ops"]["write"]["count"].as_u64().unwrap();
        assert_eq!(r["counters"]["verify_blocks_checked"], reads, "one thread: every read is checked");
        assert_eq!(r["counters"]["verify_blocks_written"], writes);
        assert_eq!(r["extra"]["verify"]["algo"], algo);
        let v = run(&mut s, "verify");
        assert_eq!(mismatches(&v), 0, "{algo}: {}", v["extra"]["verify"]);
        assert_eq!(v["counters"]["verify_blocks_checked"], 2 * 256, "the verify phase reads every block");
        assert_eq!(v["ops"]["read"]["bytes"], 2 << 20);
        // Files on disk really carry headers.
        let f = std::fs::read(dir.path().join("fsmeter.access.1")).unwrap();
        assert_eq!(&f[4096 * 7..4096 * 7 + 4], b"FSMV");
        assert_eq!(u64::from_le_bytes(f[4096 * 7 + 16..4096 * 7 + 24].try_into().unwrap()), 4096 * 7);
    }
}

#[test]
fn several_threads_and_multi_block_requests_verify_clean() {
    let dir = tempfile::tempdir().unwrap();
    let w = json!({
        "family": "access", "file_count": 2, "file_size": 1 << 20, "alignment": 4096,
        "entries": [{"size": 4096, "weight": 50, "read_pct": 50, "random_pct": 100},
                    {"size": 65536, "weight": 50, "read_pct": 50, "random_pct": 0}],
        "total_bytes": 8 << 20, "verify": "crc32c",
    });
    let mut s = session(dir.path(), 3, w);
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert_eq!(mismatches(&r), 0);
    assert_eq!(r["extra"]["verify"]["notes"]["exact"], false);
    assert_eq!(r["counters"]["verify_blocks_checked"], 0, "shared blocks: reads are not checked during the run");
    let v = run(&mut s, "verify");
    assert_eq!(mismatches(&v), 0, "{}", v["extra"]["verify"]);
    assert_eq!(v["counters"]["verify_blocks_checked"], 2 * 256);
}

#[test]
fn a_byte_changed_between_phases_is_caught_at_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 1, access("xxh3", 50, json!({})));
    run(&mut s, "prepare");
    run(&mut s, "run");
    let at: u64 = 37 * 4096 + 1234;
    let f = std::fs::OpenOptions::new().read(true).write(true).open(dir.path().join("fsmeter.access.1")).unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x20], at).unwrap();
    let v = run(&mut s, "verify");
    assert_eq!(mismatches(&v), 1);
    let m = &v["extra"]["verify"]["mismatches"][0];
    assert_eq!(m["kind"], "bad_checksum");
    assert_eq!(m["offset"], 37 * 4096);
    assert_eq!(m["first_diff_offset"], at);
    assert_eq!(m["first_diff"], 1234);
    assert!(m["file"].as_str().unwrap().ends_with("fsmeter.access.1"), "{m}");
    assert_eq!(m["phase"], "verify");
    assert_eq!(m["found"]["offset"], 37 * 4096);
    assert!(v["warnings"][0].as_str().unwrap().contains("1 corrupt block"), "{}", v["warnings"]);
    // A damaged header byte (the offset field) is pointed at too.
    let at2: u64 = 100 * 4096 + 17;
    f.read_exact_at(&mut b, at2).unwrap();
    f.write_all_at(&[b[0] ^ 0x01], at2).unwrap();
    let v = run(&mut s, "verify");
    assert_eq!(mismatches(&v), 2);
    let m = &v["extra"]["verify"]["mismatches"][1];
    assert_eq!((m["kind"].as_str().unwrap(), m["offset"].as_u64().unwrap()), ("bad_header", 100 * 4096));
    assert_eq!(m["first_diff_offset"], at2);
}

#[test]
fn a_byte_changed_during_a_run_is_caught_by_its_reads() {
    let dir = tempfile::tempdir().unwrap();
    // Reads only, so nothing the run writes can repair the damage; many passes over 512 blocks.
    let mut s = session(dir.path(), 1, access("crc32c", 100, json!({"total_bytes": 4096u64 * 300_000})));
    run(&mut s, "prepare");
    let at: u64 = 200 * 4096 + 999;
    let path = dir.path().join("fsmeter.access.0");
    let ctl = Control::new();
    let r = std::thread::scope(|sc| {
        let ctl = &ctl;
        sc.spawn(move || {
            while ctl.progress().ops < 1000 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
            let mut b = [0u8; 1];
            f.read_exact_at(&mut b, at).unwrap();
            f.write_all_at(&[!b[0]], at).unwrap();
        });
        serde_json::to_value(s.run_phase("run", ctl).unwrap()).unwrap()
    });
    assert!(mismatches(&r) >= 1, "the damaged block is read many times after the change: {}", r["extra"]["verify"]);
    for m in r["extra"]["verify"]["mismatches"].as_array().unwrap() {
        assert_eq!((m["offset"].as_u64(), m["first_diff_offset"].as_u64()), (Some(200 * 4096), Some(at)), "{m}");
        assert_eq!(m["phase"], "run");
    }
    let v = run(&mut s, "verify");
    assert_eq!(mismatches(&v), 1);
    assert_eq!(v["extra"]["verify"]["mismatches"][0]["first_diff_offset"], at);
}

/// 20 random writes to distinct blocks (random_map), the 11th faulty.
fn faulty(kind: &str, keep: u32) -> (tempfile::TempDir, Value, Value) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 1, access("xxh3", 0, json!({
        "file_count": 1, "random_map": true, "total_bytes": 20 * 4096,
        "fault": {"kind": kind, "after": 10, "count": 1, "keep_bytes": keep},
    })));
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert_eq!(r["counters"]["faults_injected"], 1);
    let v = run(&mut s, "verify");
    (dir, r, v)
}

fn injected_offset(r: &Value) -> u64 {
    r["extra"]["faults_injected"]["writes"][0]["offset"].as_u64().unwrap()
}

#[test]
fn a_torn_write_is_caught_where_it_tore() {
    let (_d, r, v) = faulty("torn_write", 1000);
    assert_eq!(mismatches(&v), 1, "{}", v["extra"]["verify"]);
    let m = &v["extra"]["verify"]["mismatches"][0];
    assert_eq!(m["offset"], injected_offset(&r));
    assert_eq!(m["kind"], "bad_checksum", "new header, old tail");
    let d = m["first_diff"].as_u64().unwrap();
    assert!((1000..1008).contains(&d), "first difference at the tear: {d}");
    assert_eq!(m["found"]["generation"], m["expected"]["generation"]);
}

#[test]
fn a_short_write_leaves_the_old_tail_and_is_caught() {
    let (_d, r, v) = faulty("short_write", 2048);
    assert_eq!(r["ops"]["write"]["bytes"], 19 * 4096 + 2048, "the engine counts what the backend reported");
    assert_eq!(mismatches(&v), 1);
    let m = &v["extra"]["verify"]["mismatches"][0];
    assert_eq!(m["offset"], injected_offset(&r));
    assert!((2048..2056).contains(&m["first_diff"].as_u64().unwrap()), "{m}");
}

#[test]
fn a_lost_write_is_stale() {
    let (_d, r, v) = faulty("lost_write", 0);
    assert_eq!(mismatches(&v), 1);
    let m = &v["extra"]["verify"]["mismatches"][0];
    assert_eq!(m["offset"], injected_offset(&r));
    assert_eq!(m["kind"], "stale");
    assert_eq!(m["found"]["generation"], 0, "the laid-out block is still there");
    assert_eq!(m["first_diff"], 24, "the generation field");
}

#[test]
fn a_misdirected_write_is_stale_where_it_belonged_and_misplaced_where_it_landed() {
    let (_d, r, v) = faulty("misdirected_write", 0);
    let at = injected_offset(&r);
    let ms = v["extra"]["verify"]["mismatches"].as_array().unwrap();
    assert!(ms.iter().any(|m| m["offset"] == at && m["kind"] == "stale"), "{ms:?}");
    if at + 2 * 4096 <= 1 << 20 {
        // Unless a later write of the run went to the next block (random_map: at most once).
        let later = ms.iter().find(|m| m["offset"] == at + 4096);
        if let Some(m) = later {
            assert_eq!(m["kind"], "wrong_offset");
            assert_eq!(m["found"]["offset"], at);
        }
    }
}

#[test]
fn verify_settings_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let job = |w: Value| json!({"dir": dir.path(), "workload": w}).to_string();
    let mut w = access("crc32c", 50, json!({}));
    w["alignment"] = json!(512);
    let e = Session::from_json(&job(w)).err().unwrap().to_string();
    assert!(e.starts_with("alignment: 512 bytes: with verify"), "{e}");
    let mut w = access("md5", 50, json!({}));
    let e = Session::from_json(&job(w.clone())).err().unwrap().to_string();
    assert!(e.contains("md5"), "{e}");
    w["verify"] = Value::Null;
    let mut s = Session::from_json(&job(w)).unwrap();
    let e = s.run_phase("verify", &Control::new()).err().unwrap().to_string();
    assert!(e.starts_with("verify: the verify phase needs verify"), "{e}");
}

fn bonnie(dir: &std::path::Path, seek_procs: usize, char_io: &str) -> Session {
    session(dir, 1, json!({
        "family": "bonnie", "size": 1 << 20, "chunk": 8192, "char_io": char_io, "char_io_size": 64 * 1024,
        "seeks": 400, "seek_procs": seek_procs, "verify": "crc32c",
    }))
}

const BONNIE_IO: &[&str] = &["putc_write", "block_write", "rewrite", "getc_read", "block_read", "seeks", "verify"];

#[test]
fn bonnie_verifies_every_io_phase() {
    for char_io in ["stdio", "syscall"] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = bonnie(dir.path(), 1, char_io);
        for phase in BONNIE_IO {
            let r = run(&mut s, phase);
            assert_eq!(mismatches(&r), 0, "{phase}: {}", r["extra"]["verify"]);
            let c = &r["counters"];
            match *phase {
                "putc_write" => assert_eq!(c["verify_blocks_written"], 8),
                "block_write" => assert_eq!(c["verify_blocks_written"], 128),
                "rewrite" => assert_eq!((c["verify_blocks_checked"].as_u64(), c["verify_blocks_written"].as_u64()), (Some(128), Some(128))),
                "getc_read" => assert_eq!(c["verify_blocks_checked"], 8),
                "block_read" | "verify" => assert_eq!(c["verify_blocks_checked"], 128),
                "seeks" => {
                    assert_eq!(c["verify_blocks_checked"], 400);
                    assert_eq!(c["verify_blocks_written"], 40);
                }
                _ => {}
            }
        }
    }
}

#[test]
fn bonnie_catches_a_changed_byte_in_the_next_reading_phase() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = bonnie(dir.path(), 3, "stdio");
    for phase in ["block_write", "rewrite"] {
        run(&mut s, phase);
    }
    let at: u64 = 5 * 8192 + 4000;
    let f = std::fs::OpenOptions::new().read(true).write(true).open(dir.path().join("Bonnie.data")).unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x80], at).unwrap();
    let r = run(&mut s, "block_read");
    assert_eq!(mismatches(&r), 1);
    assert_eq!(r["extra"]["verify"]["mismatches"][0]["first_diff_offset"], at);
    assert_eq!(r["extra"]["verify"]["mismatches"][0]["phase"], "block_read");
    // Three seekers: their reads are not checked, write-backs still carry headers.
    let r = run(&mut s, "seeks");
    assert_eq!(r["counters"]["verify_blocks_checked"], 0);
    let v = run(&mut s, "verify");
    assert_eq!(v["extra"]["verify"]["notes"]["exact"], false);
    // The damaged chunk may have been written back by a seeker (which repairs it) or not.
    assert!(mismatches(&v) <= 1);
    if mismatches(&v) == 1 {
        assert_eq!(v["extra"]["verify"]["mismatches"][0]["first_diff_offset"], at);
    }
}

#[test]
fn iozone_grid_writes_headers_and_checks_every_read_and_each_cell_at_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 1, json!({
        "family": "iozone", "cells": [[65536, 4096], [131072, 8192]], "tests": [0, 1, 2, 3, 4, 5, 6, 7, 8],
        "verify": "xxh3",
    }));
    let r = run(&mut s, "grid");
    assert_eq!(mismatches(&r), 0, "{}", r["extra"]["verify"]);
    // Per cell of n records: writes 0: 2n, 2: n, 4: n, 6: 2n (test 8's writers fill their own);
    // checked reads 1: 2n, 2: n, 3: n, 5: n, 7: 2n, and the end-of-cell re-read n.
    let n = 16 + 16;
    assert_eq!(r["counters"]["verify_blocks_written"], 6 * n);
    assert_eq!(r["counters"]["verify_blocks_checked"], 8 * n);
    assert!(r["extra"]["verify"]["notes"]["cells_corrupt"] == 0);
    let e = Session::from_json(&json!({"dir": dir.path(), "workload": {"family": "iozone", "cells": [[4096, 64]], "verify": "crc32c"}}).to_string())
        .err().unwrap().to_string();
    assert!(e.contains("record size 64 bytes: with verify"), "{e}");
}
