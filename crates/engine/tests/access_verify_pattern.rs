//! fio's verify_pattern in the access family: the layout and every write carry the pattern, reads
//! and the verify phase check each byte against it, and a changed byte is reported at its offset.

use std::os::unix::fs::FileExt;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

const PATTERN: [u8; 4] = [0xaa, 0x55, 0x5a, 0xa5];

fn session(dir: &std::path::Path, read_pct: u32, size: u32, random_pct: u32) -> Result<Session, String> {
    let workload = json!({
        "family": "access", "file_size": 1 << 20, "file_names": ["p"], "alignment": size,
        "entries": [{"size": size, "weight": 100, "read_pct": read_pct, "random_pct": random_pct}],
        "total_bytes": 1 << 20, "verify_pattern": PATTERN,
    });
    let job =
        json!({"dir": dir, "threads": 1, "seed": 3, "backend": "psync", "interval_s": 0.05, "workload": workload});
    Session::from_json(&job.to_string()).map_err(|e| e.to_string())
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

#[test]
fn the_pattern_is_written_checked_and_a_changed_byte_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 0, 65536, 100).unwrap();
    run(&mut s, "prepare");
    run(&mut s, "run");
    let path = dir.path().join("p");
    let data = std::fs::read(&path).unwrap();
    assert_eq!(data.len(), 1 << 20);
    assert!(data.chunks(4).all(|c| c == PATTERN), "the file does not hold the pattern");
    let v = run(&mut s, "verify");
    assert_eq!(v["counters"]["verify_mismatches"], 0);
    assert_eq!(v["extra"]["verify"]["algo"], "pattern");
    // One byte changed behind the engine's back: the verify phase names its offset and bytes.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().write_at(&[0x00], 777_777).unwrap();
    let v = run(&mut s, "verify");
    assert_eq!(v["counters"]["verify_mismatches"], 1);
    let m = &v["extra"]["verify"]["mismatches"][0];
    assert_eq!(m["first_diff_offset"], 777_777);
    assert_eq!(m["phase"], "verify");
    // A sequential read run checks every read: 256 of 4 KiB over the file, exactly one holds the byte.
    let mut r = session(dir.path(), 100, 4096, 0).unwrap();
    let rr = run(&mut r, "run");
    assert_eq!(rr["counters"]["verify_blocks_checked"], 256);
    assert_eq!(rr["counters"]["verify_mismatches"], 1);
    let m = &rr["extra"]["verify"]["mismatches"][0];
    assert_eq!(m["first_diff_offset"], 777_777);
    assert_eq!(m["offset"], 777_777 / 4096 * 4096);
}

#[test]
fn a_pattern_that_does_not_divide_the_requests_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let workload = json!({
        "family": "access", "file_size": 1 << 20, "entries": [{"size": 4096, "weight": 100, "read_pct": 0, "random_pct": 0}],
        "total_bytes": 1 << 20, "verify_pattern": [1, 2, 3],
    });
    let job = json!({"dir": dir.path(), "threads": 1, "seed": 3, "backend": "psync", "interval_s": 0.05, "workload": workload});
    let err = Session::from_json(&job.to_string()).err().expect("refused").to_string();
    assert!(err.contains("verify_pattern") && err.contains("3 bytes must divide"), "{err}");
}
