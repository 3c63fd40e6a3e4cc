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
    // Reads only, so nothing the run writes can repair the damage. The run has no end of its own:
    // it is stopped once it has read 20,000 more random blocks after the change (the damaged one of
    // 512 is among them but for a chance of e^-39), however fast or slow the machine is.
    let mut s = session(dir.path(), 1, access("crc32c", 100, json!({"total_bytes": 4096u64 << 40})));
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
            let changed_at = ctl.progress().ops;
            loop {
                let p = ctl.progress();
                if p.ops >= changed_at + 20_000 || p.state == "idle" {
                    break; // idle: the run ended on its own, which the assertions below report
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            ctl.request_stop();
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
    let mut s = session(
        dir.path(),
        1,
        access(
            "xxh3",
            0,
            json!({
                "file_count": 1, "random_map": true, "total_bytes": 20 * 4096,
                "fault": {"kind": kind, "after": 10, "count": 1, "keep_bytes": keep},
            }),
        ),
    );
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
    // sha512's header is 112 bytes: a 100-byte block (room for an 80-byte header) is too small for it.
    let mut w = access("sha512", 50, json!({}));
    w["verify_block"] = json!(100);
    let e = Session::from_json(&job(w.clone())).err().unwrap().to_string();
    assert!(
        e.starts_with(
            "verify_block: 100 bytes: a block verified with sha512 holds a 112-byte header and data: use >= 120"
        ),
        "{e}"
    );
    w["verify"] = Value::Null;
    let mut s = Session::from_json(&job(w)).unwrap();
    let e = s.run_phase("verify", &Control::new()).err().unwrap().to_string();
    assert!(e.starts_with("verify: the verify phase needs verify"), "{e}");
}

fn bonnie(dir: &std::path::Path, seek_procs: usize, char_io: &str) -> Session {
    session(
        dir,
        1,
        json!({
            "family": "bonnie", "size": 1 << 20, "chunk": 8192, "char_io": char_io, "char_io_size": 64 * 1024,
            "seeks": 400, "seek_procs": seek_procs, "verify": "crc32c",
        }),
    )
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
                "rewrite" => assert_eq!(
                    (c["verify_blocks_checked"].as_u64(), c["verify_blocks_written"].as_u64()),
                    (Some(128), Some(128))
                ),
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
    let mut s = session(
        dir.path(),
        1,
        json!({
            "family": "iozone", "cells": [[65536, 4096], [131072, 8192]], "tests": [0, 1, 2, 3, 4, 5, 6, 7, 8],
            "verify": "xxh3",
        }),
    );
    let r = run(&mut s, "grid");
    assert_eq!(mismatches(&r), 0, "{}", r["extra"]["verify"]);
    // Per cell of n records: writes 0: 2n, 2: n, 4: n, 6: 2n (test 8's writers fill their own);
    // checked reads 1: 2n, 2: n, 3: n, 5: n, 7: 2n, and the end-of-cell re-read n.
    let n = 16 + 16;
    assert_eq!(r["counters"]["verify_blocks_written"], 6 * n);
    assert_eq!(r["counters"]["verify_blocks_checked"], 8 * n);
    assert!(r["extra"]["verify"]["notes"]["cells_corrupt"] == 0);
    let e = Session::from_json(
        &json!({"dir": dir.path(), "workload": {"family": "iozone", "cells": [[4096, 64]], "verify": "crc32c"}})
            .to_string(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("record size 64 bytes: with verify"), "{e}");
}

fn fileset(verify: &str, buffering: bool, extra: Value) -> Value {
    let mut w = json!({
        "family": "fileset", "files": 12, "transactions": 200, "size_low": 200, "size_high": 3000,
        "write_block": 512, "read_block": 700, "buffering": buffering, "verify": verify,
    });
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    w
}

/// Verify blocks of the fileset's files now on disk (a partial tail is a block).
fn fileset_blocks(dir: &std::path::Path, block: u64) -> (u64, u64) {
    let (mut blocks, mut bytes) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap() {
        let len = e.unwrap().metadata().unwrap().len();
        blocks += len.div_ceil(block);
        bytes += len;
    }
    (blocks, bytes)
}

#[test]
fn fileset_verifies_creates_appends_and_reads_clean() {
    for (algo, buffering, threads) in [("crc32c", true, 2), ("xxh3", false, 1), ("sha256", true, 1)] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = session(dir.path(), threads, fileset(algo, buffering, json!({})));
        let c = run(&mut s, "create");
        assert_eq!(mismatches(&c), 0);
        assert!(c["counters"]["verify_blocks_written"].as_u64().unwrap() >= 12);
        let t = run(&mut s, "transactions");
        assert_eq!(mismatches(&t), 0, "{algo} {buffering}: {}", t["extra"]["verify"]);
        assert!(t["ops"]["read"]["count"].as_u64().unwrap() > 0 && t["ops"]["append"]["count"].as_u64().unwrap() > 0);
        assert!(t["counters"]["verify_blocks_checked"].as_u64().unwrap() > 0, "reads are checked");
        let (blocks, bytes) = fileset_blocks(dir.path(), 512);
        let v = run(&mut s, "verify");
        assert_eq!(mismatches(&v), 0, "{algo}: {}", v["extra"]["verify"]);
        assert_eq!(
            v["counters"]["verify_blocks_checked"], blocks,
            "the verify phase checks every block of every live file"
        );
        assert_eq!(v["ops"]["read"]["bytes"], bytes);
        assert_eq!(v["extra"]["verify"]["algo"], algo);
        // File n was made by thread (n - 1) % threads: its blocks carry that thread and n as write number.
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let e = e.unwrap();
            let n: u64 = e.file_name().to_str().unwrap().parse().unwrap();
            let f = std::fs::read(e.path()).unwrap();
            assert_eq!(&f[..4], b"FSMV");
            assert_eq!(u32::from_le_bytes(f[12..16].try_into().unwrap()) as u64, (n - 1) % threads as u64);
            assert_eq!(u64::from_le_bytes(f[24..32].try_into().unwrap()), n, "write number = file number");
        }
        run(&mut s, "delete");
    }
}

#[test]
fn fileset_catches_changed_bytes_at_their_offsets_in_reads_and_the_verify_phase() {
    let dir = tempfile::tempdir().unwrap();
    // Reads only (no appends, creates or deletes): the files stay as created.
    let w = fileset(
        "crc32c",
        true,
        json!({"files": 6, "transactions": 60, "size_low": 1500, "bias_read": 10, "bias_create": -1}),
    );
    let mut s = session(dir.path(), 1, w);
    run(&mut s, "create");
    let poke = |name: &str, off: u64| {
        let f = std::fs::OpenOptions::new().read(true).write(true).open(dir.path().join(name)).unwrap();
        let mut b = [0u8; 1];
        f.read_at(&mut b, off).unwrap();
        f.write_at(&[b[0] ^ 0x20], off).unwrap();
    };
    poke("1", 700); // inside the second (whole) block
    let len2 = std::fs::metadata(dir.path().join("2")).unwrap().len();
    assert_ne!(len2 % 512, 0, "file 2 ends with a partial block (seed 11)");
    poke("2", len2 - 1); // the last byte of the partial tail
    let f3 = std::fs::OpenOptions::new().write(true).open(dir.path().join("3")).unwrap();
    f3.set_len(1100).unwrap(); // cut in its third block
    let t = run(&mut s, "transactions");
    assert!(mismatches(&t) >= 3, "{}", t["extra"]["verify"]);
    let v = run(&mut s, "verify");
    let found: Vec<(String, String, u64, Value)> = v["extra"]["verify"]["mismatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["file"].as_str().unwrap().rsplit('/').next().unwrap().to_string(),
                m["kind"].as_str().unwrap().to_string(),
                m["offset"].as_u64().unwrap(),
                m["first_diff_offset"].clone(),
            )
        })
        .collect();
    assert_eq!(found[0], ("1".into(), "bad_checksum".into(), 512, json!(700)), "{found:?}");
    assert_eq!(found[1], ("2".into(), "bad_checksum".into(), len2 / 512 * 512, json!(len2 - 1)), "{found:?}");
    assert_eq!((found[2].0.as_str(), found[2].1.as_str(), found[2].2), ("3", "short", 1024), "{found:?}");
    assert!(mismatches(&v) >= 3);
    assert!(v["warnings"][0].as_str().unwrap().contains("corrupt block"), "{}", v["warnings"]);
    // The reads of the transactions phase saw the same damage, where it is.
    let offs: Vec<Value> =
        t["extra"]["verify"]["mismatches"].as_array().unwrap().iter().map(|m| m["first_diff_offset"].clone()).collect();
    assert!(offs.contains(&json!(700)) && offs.contains(&json!(len2 - 1)), "{offs:?}");
}

#[test]
fn fileset_verify_settings_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let job = json!({"dir": dir.path(), "threads": 1, "seed": 1, "backend": "psync",
                     "workload": fileset("crc32c", true, json!({"write_block": 64}))});
    let e = Session::from_json(&job.to_string()).err().expect("a 64-byte verify block is refused").to_string();
    assert!(e.contains("write_block") && e.contains("88"), "{e}");
    let mut s = session(
        dir.path(),
        1,
        fileset("off", true, json!({}))
            .as_object()
            .map(|o| {
                let mut o = o.clone();
                o.remove("verify");
                Value::Object(o)
            })
            .unwrap(),
    );
    run(&mut s, "create");
    assert!(s.run_phase("verify", &Control::new()).is_err(), "no verify phase without verify");
    run(&mut s, "cleanup");
}

fn tree(verify: &str, write_size: u64) -> Value {
    json!({"family": "tree", "levels": 1, "dirs_per_level": 2, "files_per_dir": 2, "file_blocks": 3,
           "write_size": write_size, "verify": verify})
}

#[test]
fn tree_files_carry_verified_blocks_and_the_verify_phase_checks_them() {
    for (algo, ws, threads) in [("crc32c", 4096u64, 2usize), ("xxh3", 3000, 1), ("sha256", 65536, 1)] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = session(dir.path(), threads, tree(algo, ws));
        run(&mut s, "mkdir");
        let c = run(&mut s, "create");
        assert_eq!(mismatches(&c), 0);
        // 3 directories x 2 files x 3 blocks per tree; a 3000-byte request refills the blocks it touches.
        let per_tree = 3 * 2 * 3;
        assert!(
            c["counters"]["verify_blocks_written"].as_u64().unwrap() >= per_tree * threads as u64,
            "{}",
            c["counters"]
        );
        let v = run(&mut s, "verify");
        assert_eq!(mismatches(&v), 0, "{algo} {ws}: {}", v["extra"]["verify"]);
        assert_eq!(v["counters"]["verify_blocks_checked"], per_tree * threads as u64);
        assert_eq!(v["ops"]["read"]["bytes"], per_tree * threads as u64 * 4096);
        let f = std::fs::read(dir.path().join("tree-0/L1F2")).unwrap();
        assert_eq!(&f[4096..4100], b"FSMV");
        assert_eq!(
            u64::from_le_bytes(f[4096 + 24..4096 + 32].try_into().unwrap()),
            1,
            "the first file of the walk is number 1"
        );
        run(&mut s, "remove");
        run(&mut s, "rmdir");
    }
}

#[test]
fn tree_verify_catches_a_changed_byte_at_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 1, tree("crc32c", 4096));
    run(&mut s, "mkdir");
    run(&mut s, "create");
    let path = dir.path().join("tree-0/L1D1/L0F1");
    let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
    f.write_at(&[0xA5], 2 * 4096 + 999).unwrap();
    let v = run(&mut s, "verify");
    assert_eq!(mismatches(&v), 1, "{}", v["extra"]["verify"]);
    let m = &v["extra"]["verify"]["mismatches"][0];
    assert_eq!(m["file"], path.display().to_string());
    assert_eq!(
        (m["kind"].as_str(), m["offset"].as_u64(), m["first_diff_offset"].as_u64()),
        (Some("bad_checksum"), Some(8192), Some(8192 + 999))
    );
    assert!(v["warnings"][0].as_str().unwrap().contains("L0F1"), "{}", v["warnings"]);
    // A truncated file: its missing blocks are short.
    f.set_len(4096).unwrap();
    let v = run(&mut s, "verify");
    let kinds: Vec<(&str, u64)> = v["extra"]["verify"]["mismatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["kind"].as_str().unwrap(), m["offset"].as_u64().unwrap()))
        .collect();
    assert_eq!(kinds, [("short", 4096), ("short", 8192)]);
    run(&mut s, "cleanup");
    let off = json!({"family": "tree", "levels": 1, "dirs_per_level": 2, "files_per_dir": 2, "file_blocks": 3});
    let mut s = session(dir.path(), 1, off);
    assert!(s.run_phase("verify", &Control::new()).is_err(), "no verify phase without verify");
}

/// Two processes sharing one file as IOR does (each its own region), the second run shifted so that
/// each writes the other's region (IOR -C): prepare keeps the other region, the run and verify
/// phases work on the shifted one, and the headers on disk say who wrote what.
#[test]
fn shared_file_regions_and_the_shifted_run() {
    let dir = tempfile::tempdir().unwrap();
    let region = 1u64 << 20;
    let shared = |me: u64, other: u64, seed: u64| {
        let w = access(
            "crc32c",
            0,
            json!({"file_count": 1, "shared_file": true, "offset": me * region,
                                           "run_offset": other * region, "total_bytes": region,
                                           "entries": [{"size": 4096, "weight": 100, "read_pct": 0, "random_pct": 0}]}),
        );
        let job = json!({"dir": dir.path(), "threads": 1, "seed": seed, "backend": "psync", "interval_s": 0.05, "workload": w});
        Session::from_json(&job.to_string()).expect("valid job")
    };
    let (mut a, mut b) = (shared(0, 1, 100), shared(1, 0, 101));
    run(&mut a, "prepare");
    run(&mut b, "prepare");
    let f = dir.path().join("fsmeter.access.0");
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 2 * region, "b's prepare kept a's region and added its own");
    let seed_at = |off: u64| {
        let d = std::fs::read(&f).unwrap();
        let o = off as usize;
        assert_eq!(&d[o..o + 4], b"FSMV", "a header at {off}");
        assert_eq!(u64::from_le_bytes(d[o + 16..o + 24].try_into().unwrap()), off);
        (
            u64::from_le_bytes(d[o + 32..o + 40].try_into().unwrap()),
            u64::from_le_bytes(d[o + 24..o + 32].try_into().unwrap()),
        )
    };
    assert_eq!(seed_at(4096), (100, 0), "a laid out region 0");
    assert_eq!(seed_at(region + 4096), (101, 0), "b laid out region 1");
    let (ra, rb) = (run(&mut a, "run"), run(&mut b, "run"));
    assert_eq!(ra["ops"]["write"]["bytes"], region);
    assert_eq!(rb["ops"]["write"]["bytes"], region);
    assert_eq!(seed_at(region + 4096).0, 100, "a's run wrote b's region");
    assert!(seed_at(region + 4096).1 >= 1, "with a run's write number");
    assert_eq!(seed_at(4096).0, 101, "b's run wrote a's region");
    let (va, vb) = (run(&mut a, "verify"), run(&mut b, "verify"));
    for v in [&va, &vb] {
        assert_eq!(mismatches(v), 0, "{}", v["extra"]["verify"]);
        assert_eq!(v["counters"]["verify_blocks_checked"], region / 4096, "each re-reads the region it ran on, only");
    }
    // Damage the region a ran on: a's verify phase finds it, at its offset in the shared file.
    let file = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
    file.write_at(&[0xEE], region + 3 * 4096 + 100).unwrap();
    let va = run(&mut a, "verify");
    assert_eq!(mismatches(&va), 1);
    assert_eq!(
        va["extra"]["verify"]["mismatches"][0]["first_diff_offset"],
        region + 3 * 4096 + 100,
        "{}",
        va["extra"]["verify"]
    );
    assert_eq!(mismatches(&run(&mut b, "verify")), 0, "b's region is untouched");
    // A run offset without a shared file is refused, naming the field.
    let w = access("crc32c", 0, json!({"run_offset": region}));
    let job = json!({"dir": dir.path(), "threads": 1, "seed": 1, "backend": "psync", "workload": w});
    let err = Session::from_json(&job.to_string()).err().expect("refused").to_string();
    assert!(err.contains("run_offset"), "{err}");
}
