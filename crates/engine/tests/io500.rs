//! End-to-end tests of the IO500 suite's own operations (IOR's segmented layout, find) and of the
//! tree family's byte-sized files and read phase, which the suite's mdtest-hard uses.

use std::path::Path;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn session(dir: &Path, workload: Value) -> Session {
    let job = json!({"dir": dir, "threads": 1, "interval_s": 0.05, "workload": workload});
    Session::from_json(&job.to_string()).expect("valid job")
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

fn ior(ranks: u64, rank: u64, read_rank: u64) -> Value {
    json!({"family": "io500", "file": "shared", "transfer": 100, "block": 100, "segments": 5, "ranks": ranks,
           "rank": rank, "read_rank": read_rank, "fsync": true})
}

#[test]
fn interleaved_writers_fill_a_shared_file_and_read_each_others_transfers() {
    let dir = tempfile::tempdir().unwrap();
    for r in 0..3 {
        let w = run(&mut session(dir.path(), ior(3, r, r)), "write");
        assert_eq!(w["counters"]["transfers"], 5);
        assert_eq!(w["total"]["bytes"], 500);
        assert_eq!(w["ops"]["fsync"]["count"], 1);
        assert_eq!(w["total"]["ops"], 5, "fsync is not a data operation");
    }
    assert_eq!(std::fs::metadata(dir.path().join("shared")).unwrap().len(), 3 * 5 * 100);
    let rd = run(&mut session(dir.path(), ior(3, 0, 2)), "read");
    assert_eq!(rd["total"]["bytes"], 500);
    assert_eq!(rd["extra"]["data_of_rank"], 2);
    // a range: the wear-out's second run goes on where the first stopped
    let mut part = ior(3, 1, 1);
    part["ops_range"] = json!([3, 5]);
    assert_eq!(run(&mut session(dir.path(), part), "write")["counters"]["transfers"], 2);
}

#[test]
fn reading_more_transfers_than_were_written_fails_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = ior(1, 0, 0);
    w["ops_range"] = json!([0, 2]);
    run(&mut session(dir.path(), w), "write");
    let err = session(dir.path(), ior(1, 0, 0)).run_phase("read", &Control::new()).unwrap_err();
    assert!(err.to_string().contains("shorter than the transfers written"), "{err}");
}

#[test]
fn find_matches_by_size_name_and_time_and_the_shares_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("a/b")).unwrap();
    for (name, len) in [("x01", 7), ("y01", 8), ("a/z01", 7), ("a/b/w01", 7), ("a/b/w10", 7), ("a/q", 7)] {
        std::fs::write(data.join(name), vec![0u8; len]).unwrap();
    }
    let find = |share: [u64; 2], newer: i64| {
        json!({"family": "io500", "roots": ["data"], "size": 7, "name_contains": "01", "newer_than_ns": newer,
               "share": share})
    };
    let all = run(&mut session(dir.path(), find([0, 1], 0)), "find");
    assert_eq!(all["counters"]["found"], 3); // x01, a/z01, a/b/w01: 7 bytes with "01"
    assert_eq!(all["counters"]["entries"], 8); // 6 files and 2 directories
    let (mut found, mut entries) = (0, 0);
    for i in 0..3 {
        let r = run(&mut session(dir.path(), find([i, 3], 0)), "find");
        found += r["counters"]["found"].as_u64().unwrap();
        entries += r["counters"]["entries"].as_u64().unwrap();
    }
    assert_eq!((found, entries), (3, 8));
    let later = run(&mut session(dir.path(), find([0, 1], i64::MAX)), "find");
    assert_eq!(later["counters"]["found"], 0, "nothing is newer than the end of time");
}

#[test]
fn tree_files_of_any_byte_size_are_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let tree = json!({"family": "tree", "levels": 0, "files_per_dir": 4, "file_blocks": 0, "file_bytes": 3901});
    let mut s = session(dir.path(), tree);
    run(&mut s, "mkdir");
    let cr = run(&mut s, "create");
    assert_eq!(cr["counters"]["bytes"], 4 * 3901);
    assert_eq!(std::fs::metadata(dir.path().join("tree-0/L0F1")).unwrap().len(), 3901);
    run(&mut s, "stat");
    let rd = run(&mut s, "read");
    assert_eq!((rd["counters"]["files"].as_u64(), rd["counters"]["bytes"].as_u64()), (Some(4), Some(4 * 3901)));
    assert_eq!(rd["ops"]["read"]["count"], 4);
    std::fs::write(dir.path().join("tree-0/L0F2"), b"short").unwrap();
    let err = s.run_phase("read", &Control::new()).unwrap_err();
    assert!(err.to_string().contains("bytes short"), "{err}");
}
