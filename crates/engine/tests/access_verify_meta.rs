//! fio's verify=meta with verify_pattern in the access family (verify_pattern_meta): the layout and
//! every write put a header at the start of each verify block and the pattern in the rest; reads
//! and the verify phase check both, naming the block, the byte and the header field.

use std::os::unix::fs::FileExt;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

const PATTERN: [u8; 4] = [0xaa, 0x55, 0x5a, 0xa5];

fn session(dir: &std::path::Path, read_pct: u32, random_pct: u32, extra: Value) -> Result<Session, String> {
    let mut workload = json!({
        "family": "access", "file_size": 1 << 20, "file_names": ["m"], "alignment": 4096,
        "entries": [{"size": 4096, "weight": 100, "read_pct": read_pct, "random_pct": random_pct}],
        "total_bytes": 1 << 20, "verify_pattern": PATTERN, "verify_pattern_meta": true, "verify_block": 512,
        "reuse_files": true,
    });
    for (k, v) in extra.as_object().unwrap() {
        workload[k] = v.clone();
    }
    let job =
        json!({"dir": dir, "threads": 1, "seed": 5, "backend": "psync", "interval_s": 0.05, "workload": workload});
    Session::from_json(&job.to_string()).map_err(|e| e.to_string())
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

#[test]
fn every_block_holds_a_header_and_the_pattern_and_changes_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 0, 100, json!({})).unwrap();
    run(&mut s, "prepare");
    run(&mut s, "run");
    let path = dir.path().join("m");
    let data = std::fs::read(&path).unwrap();
    assert_eq!(data.len(), 1 << 20);
    for (i, b) in data.chunks(512).enumerate() {
        assert_eq!(&b[..4], b"FSMV", "block {i}");
        assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), i as u64 * 512, "block {i}: its offset");
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 512);
        assert!(b[80..].chunks(4).all(|c| c == PATTERN), "block {i}: the pattern after the header");
    }
    let v = run(&mut s, "verify");
    assert_eq!(v["counters"]["verify_mismatches"], 0);
    assert_eq!(v["counters"]["verify_blocks_checked"], 2048, "one per 512-byte block");
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.write_at(&[0x00], 777_728 + 300).unwrap(); // a pattern byte: byte 300 of block 1519
    f.write_at(&[0xFF], 41_472 + 16).unwrap(); // the offset field of block 81
    let v = run(&mut s, "verify");
    assert_eq!(v["counters"]["verify_mismatches"], 2);
    let got = found(&v);
    assert_eq!(got, vec![(41_472, 41_488, "offset".to_string()), (777_728, 778_028, "pattern".to_string())]);
    // A sequential read run checks each block of each read: the same two blocks.
    let mut r = session(dir.path(), 100, 0, json!({})).unwrap();
    let rr = run(&mut r, "run");
    assert_eq!(rr["counters"]["verify_blocks_checked"], 2048);
    assert_eq!(found(&rr), got);
}

fn found(v: &Value) -> Vec<(u64, u64, String)> {
    let mut out: Vec<(u64, u64, String)> = v["extra"]["verify"]["mismatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["offset"].as_u64().unwrap(),
                m["first_diff_offset"].as_u64().unwrap(),
                m["field"].as_str().unwrap().into(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn written_unchecked_there_is_no_verify_phase() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 0, 0, json!({"verify_pattern_check": false})).unwrap();
    run(&mut s, "prepare");
    let v = run(&mut s, "run");
    assert_eq!(v["counters"]["verify_mismatches"], 0);
    assert!(s.run_phase("verify", &Control::new()).is_err(), "nothing to verify with verify_pattern_check = false");
    let data = std::fs::read(dir.path().join("m")).unwrap();
    assert_eq!(&data[512 * 7..512 * 7 + 4], b"FSMV");
}

#[test]
fn blocks_that_cannot_hold_a_header_or_the_grid_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = session(dir.path(), 0, 0, json!({"verify_block": 64})).err().expect("refused");
    assert!(e.contains("verify_block") && e.contains("at least 88"), "{e}");
    let e = session(dir.path(), 0, 0, json!({"verify_block": 8192})).err().expect("refused");
    assert!(e.contains("must divide alignment (4096 bytes)"), "{e}");
    let e = session(dir.path(), 0, 0, json!({"verify_pattern": []})).err().expect("refused");
    assert!(e.contains("verify_pattern_meta") && e.contains("needs verify_pattern"), "{e}");
}

#[test]
fn verify_backlog_reads_back_every_write_beside_the_pattern() {
    // fio's t/jobs t0006: a random read/write mix with verify=meta, a verify_pattern and
    // verify_backlog; the mix moves total_bytes, then each write is read back and checked once.
    let dir = tempfile::tempdir().unwrap();
    let extra = json!({"verify_backlog": 16, "verify_fatal": true, "reuse_files": false});
    let mut s = session(dir.path(), 50, 100, extra).unwrap();
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let (reads, writes) = (count(&r, "read"), count(&r, "write"));
    assert!(writes > 16 && writes < 256, "{writes} writes");
    assert_eq!(reads, 256, "the mix's reads and every write read back: 1 MiB of reads");
    assert_eq!(r["counters"]["verify_backlog_reads"], writes);
    assert_eq!(r["counters"]["verify_mismatches"], 0);
    assert_eq!(r["counters"]["verify_blocks_checked"], reads * 8, "eight 512-byte blocks a read");
    // Without a checked pattern (or verify) there is nothing for the backlog to check.
    let e = session(dir.path(), 50, 100, json!({"verify_backlog": 16, "verify_pattern_check": false}))
        .err()
        .expect("refused");
    assert!(e.contains("verify_backlog") && e.contains("checked verify_pattern"), "{e}");
}

fn count(r: &Value, kind: &str) -> u64 {
    r["ops"][kind]["count"].as_u64().unwrap_or(0)
}
