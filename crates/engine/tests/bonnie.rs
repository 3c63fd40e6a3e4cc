//! End-to-end tests of the bonnie workload through the Session API on a temp dir:
//! byte counts, the file's size and contents, the seek count and its write-backs,
//! bonnie++'s file tests, bad input.

use std::path::Path;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn session(dir: &Path, workload: Value) -> Result<Session, String> {
    let job = json!({"dir": dir, "threads": 1, "interval_s": 0.05, "seed": 7, "workload": workload});
    Session::from_json(&job.to_string()).map_err(|e| e.to_string())
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).unwrap_or_else(|e| panic!("{phase}: {e}"))).unwrap()
}

fn ops(r: &Value, kind: &str) -> u64 {
    r["ops"][kind]["count"].as_u64().unwrap_or(0)
}

const CHUNK: u64 = 8192;

#[test]
fn io_phases_move_the_right_bytes_and_leave_the_file_of_size() {
    for char_io in ["stdio", "syscall"] {
        let dir = tempfile::tempdir().unwrap();
        let size = 64 * CHUNK;
        let char_size = 5 * CHUNK + 100;
        let mut s = session(
            dir.path(),
            json!({"family": "bonnie", "size": size, "chunk": CHUNK, "char_io": char_io, "char_io_size": char_size,
                   "seeks": 123, "seek_procs": 3, "fsync": true}),
        )
        .unwrap();
        let data = dir.path().join("Bonnie.data");

        let p = run(&mut s, "putc_write");
        assert_eq!(p["total"]["bytes"], char_size, "{char_io}");
        assert_eq!(ops(&p, "putc"), 6, "one record per chunk of putc calls, the last one partial");
        assert_eq!(ops(&p, "close"), 1, "the flush/fsync/close is inside the phase");
        assert_eq!(std::fs::metadata(&data).unwrap().len(), char_size);
        let bytes = std::fs::read(&data).unwrap();
        assert!(
            bytes.chunks(CHUNK as usize).all(|c| c.iter().enumerate().all(|(i, &b)| b == (i & 0x7f) as u8)),
            "Bonnie writes i & 0x7f"
        );
        assert!(p["cpu"]["process_pct"].as_f64().unwrap() >= 0.0);
        if char_io == "stdio" {
            assert!(p["extra"]["stdio_buffer_bytes"].as_u64().unwrap() >= 512);
        }

        let w = run(&mut s, "block_write");
        assert_eq!(w["total"]["bytes"], size);
        assert_eq!(ops(&w, "write"), 64);
        assert_eq!(std::fs::metadata(&data).unwrap().len(), size, "block write recreates the file at size");
        let before = std::fs::read(&data).unwrap();

        let r = run(&mut s, "rewrite");
        assert_eq!(ops(&r, "rewrite"), 64);
        assert_eq!(r["total"]["bytes"], size);
        let after = std::fs::read(&data).unwrap();
        assert_eq!(after.len() as u64, size, "rewrite keeps the size");
        let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count();
        assert_eq!(changed, 64, "rewrite dirties exactly one byte per chunk");

        let g = run(&mut s, "getc_read");
        assert_eq!(g["total"]["bytes"], char_size);
        let sum: u64 = after[..char_size as usize].iter().map(|&b| b as u64).sum();
        assert_eq!(g["counters"]["byte_sum"], sum, "getc saw every byte of the file");

        let b = run(&mut s, "block_read");
        assert_eq!(b["total"]["bytes"], size);
        assert_eq!(ops(&b, "read"), 64);

        let k = run(&mut s, "seeks");
        assert_eq!(ops(&k, "seek"), 123);
        assert_eq!(k["counters"]["seeks"], 123);
        assert_eq!(k["counters"]["writebacks"], 13, "tickets 0, 10, ..., 120 write back");
        assert_eq!(ops(&k, "close"), 3, "each seeker closes its own descriptor");
        let per: u64 = k["extra"]["seeks_per_thread"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(per, 123);
        let seeked = std::fs::read(&data).unwrap();
        let diff = after.iter().zip(&seeked).filter(|(a, b)| a != b).count();
        assert!((1..=13).contains(&diff), "write-backs dirty one byte each ({diff})");
        assert_eq!(seeked.len() as u64, size);

        let c = run(&mut s, "cleanup");
        assert_eq!(c["counters"]["data_files"], 1);
        assert!(!data.exists());
    }
}

#[test]
fn whole_file_per_char_is_bonnie_1x() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), json!({"family": "bonnie", "size": 16 * CHUNK, "seeks": 40})).unwrap();
    let p = run(&mut s, "putc_write");
    assert_eq!(p["total"]["bytes"], 16 * CHUNK, "no char_io_size: the whole file");
    assert_eq!(p["extra"]["fsync"], false);
    run(&mut s, "block_write");
    let k = run(&mut s, "seeks");
    assert_eq!(k["counters"]["writebacks"], 4);
    assert_eq!(k["threads"], 3, "Bonnie 1.x: 3 seekers");
}

#[test]
fn size_rule_warns_when_the_file_fits_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), json!({"family": "bonnie", "size": 4 * CHUNK})).unwrap();
    let w = run(&mut s, "block_write");
    let warnings = w["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|x| x.as_str().unwrap().contains("twice the memory")), "{warnings:?}");
    assert_eq!(w["extra"]["size_rule"]["size_rule_ok"], false);
}

#[test]
fn phases_out_of_order_say_what_to_run_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), json!({"family": "bonnie", "size": 4 * CHUNK, "files": 4})).unwrap();
    let e = s.run_phase("block_read", &Control::new()).unwrap_err().to_string();
    assert!(e.contains("block_write"), "{e}");
    let e = s.run_phase("seq_stat", &Control::new()).unwrap_err().to_string();
    assert!(e.contains("seq_create"), "{e}");
}

fn count_files(p: &Path) -> usize {
    std::fs::read_dir(p)
        .map(|d| d.map(|e| e.unwrap()).map(|e| if e.path().is_dir() { count_files(&e.path()) } else { 1 }).sum())
        .unwrap_or(0)
}

#[test]
fn file_tests_create_stat_delete_every_file() {
    for dirs in [1u32, 4] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = session(
            dir.path(),
            json!({"family": "bonnie", "size": 0, "files": 300, "file_max_size": 3000, "file_min_size": 100,
                   "file_dirs": dirs, "file_chunk": 1024}),
        )
        .unwrap();
        let top = dir.path().join("Bonnie.files");
        let c = run(&mut s, "seq_create");
        assert_eq!(ops(&c, "create"), 300);
        assert_eq!(ops(&c, "sync"), 1, "create ends with a sync inside its time");
        assert_eq!(count_files(&top), 300);
        let bytes = c["counters"]["bytes"].as_u64().unwrap();
        assert!((300 * 100..=300 * 3000).contains(&bytes));
        if dirs > 1 {
            assert!(top.join("00003").is_dir());
        }
        let st = run(&mut s, "seq_stat");
        assert_eq!(ops(&st, "stat"), 300);
        assert_eq!(st["counters"]["bytes"], bytes, "stat reads back every file's data");
        let d = run(&mut s, "seq_del");
        assert_eq!(ops(&d, "delete"), 300);
        assert!(!top.exists(), "delete removes the directories");

        let c = run(&mut s, "ran_create");
        assert_eq!(ops(&c, "create"), 300);
        let st = run(&mut s, "ran_stat");
        assert_eq!(ops(&st, "stat"), 300);
        let d = run(&mut s, "ran_del");
        assert_eq!(ops(&d, "delete"), 300);
        assert!(!top.exists());
    }
}

#[test]
fn cleanup_removes_an_interrupted_file_set() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), json!({"family": "bonnie", "size": 0, "files": 50, "file_dirs": 2})).unwrap();
    run(&mut s, "seq_create");
    let c = run(&mut s, "cleanup");
    assert_eq!(c["counters"]["files"], 50);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn bad_input_names_the_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let bad = |w: Value| session(dir.path(), w).err().expect("rejected");
    assert!(bad(json!({"family": "bonnie", "size": 4096, "chunk": 8192})).starts_with("size:"));
    assert!(bad(json!({"family": "bonnie", "size": 10000, "chunk": 1000, "direct": true})).starts_with("chunk:"));
    assert!(bad(json!({"family": "bonnie", "size": 8193})).starts_with("size:"));
    assert!(bad(json!({"family": "bonnie", "size": 0, "files": 0})).starts_with("size:"));
    assert!(bad(json!({"family": "bonnie", "size": 8192, "seek_procs": 0})).starts_with("seek_procs:"));
    assert!(bad(json!({"family": "bonnie", "size": 8192, "char_io_size": 16384})).starts_with("char_io_size:"));
    assert!(bad(json!({"family": "bonnie", "size": 0, "files": 5, "file_min_size": 9, "file_max_size": 1}))
        .starts_with("file_min_size:"));
    assert!(
        bad(json!({"family": "bonnie", "size": 8192, "char_io": "fancy"})).contains("stdio"),
        "serde lists the allowed values"
    );
}
