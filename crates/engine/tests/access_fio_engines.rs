//! fio's file, directory and one-call ioengines in the access workload (fio_engine): the calls each
//! makes, counted as fio counts them, and what they leave on disk, through the Session API.

use std::os::unix::fs::MetadataExt;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn session_t(dir: &std::path::Path, threads: usize, workload: Value) -> Result<Session, String> {
    let job = json!({"dir": dir, "threads": threads, "seed": 5, "backend": "psync", "interval_s": 0.05,
                     "workload": workload});
    Session::from_json(&job.to_string()).map_err(|e| e.to_string())
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

fn count(r: &Value, kind: &str) -> u64 {
    r["ops"][kind]["count"].as_u64().unwrap_or(0)
}

const MIB: u64 = 1 << 20;

/// fio's default names for a job `j` of `threads` clones with `per` files each.
fn names(threads: usize, per: usize) -> Vec<String> {
    (0..threads).flat_map(|c| (0..per).map(move |f| format!("d/j.{c}.{f}"))).collect()
}

fn names_workload(engine: &str, threads: usize, per: usize) -> Value {
    let n = names(threads, per);
    json!({
        "family": "access", "fio_engine": engine, "file_size": 4096, "file_count": n.len(), "file_names": n,
        "thread_files": true, "warmup_s": 0,
        "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 0}],
        "total_bytes": 4096 * (threads * per) as u64,
    })
}

#[test]
fn filecreate_creates_each_file_once_and_cleanup_removes_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session_t(dir.path(), 2, names_workload("filecreate", 2, 50)).unwrap();
    run(&mut s, "prepare");
    assert!(dir.path().join("d").is_dir(), "the names' directory is made");
    assert!(!dir.path().join("d/j.0.0").exists(), "prepare creates no file: the run does");
    let r = run(&mut s, "run");
    assert_eq!(count(&r, "create"), 100, "one create per file, as fio's filecreate counts its opens");
    assert_eq!(count(&r, "read") + count(&r, "write"), 0);
    assert_eq!(r["extra"]["fio_engine"], "filecreate");
    for n in names(2, 50) {
        let m = std::fs::metadata(dir.path().join(&n)).unwrap();
        assert!(m.is_file() && m.len() == 0, "{n}: created empty");
    }
    run(&mut s, "cleanup");
    assert_eq!(std::fs::read_dir(dir.path().join("d")).unwrap().count(), 0);
}

#[test]
fn filestat_stats_every_file_with_each_stat_type_and_filedelete_unlinks_them() {
    let dir = tempfile::tempdir().unwrap();
    for st in ["stat", "lstat", "statx"] {
        let mut w = names_workload("filestat", 1, 30);
        w["stat_type"] = json!(st);
        let mut s = session_t(dir.path(), 1, w).unwrap();
        run(&mut s, "prepare");
        assert_eq!(std::fs::metadata(dir.path().join("d/j.0.29")).unwrap().len(), 4096, "laid out");
        let r = run(&mut s, "run");
        assert_eq!(count(&r, "stat"), 30, "{st}");
        assert_eq!(r["extra"]["stat_type"], st);
        run(&mut s, "cleanup");
    }
    let mut s = session_t(dir.path(), 1, names_workload("filedelete", 1, 30)).unwrap();
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert_eq!(count(&r, "delete"), 30);
    assert_eq!(std::fs::read_dir(dir.path().join("d")).unwrap().count(), 0, "every file unlinked by the run");
}

#[test]
fn directory_engines_make_stat_and_remove_directories() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session_t(dir.path(), 2, names_workload("dircreate", 2, 5)).unwrap();
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert_eq!(count(&r, "create"), 10);
    assert!(dir.path().join("d/j.1.4").is_dir());
    run(&mut s, "cleanup");
    assert!(!dir.path().join("d/j.1.4").exists(), "cleanup removes the directories");

    let mut s = session_t(dir.path(), 2, names_workload("dirstat", 2, 5)).unwrap();
    run(&mut s, "prepare");
    assert!(dir.path().join("d/j.0.3").is_dir(), "dirstat's directories are made before the run");
    assert_eq!(count(&run(&mut s, "run"), "stat"), 10);
    run(&mut s, "cleanup");
    assert!(!dir.path().join("d/j.0.3").exists());

    let mut s = session_t(dir.path(), 1, names_workload("dirdelete", 1, 7)).unwrap();
    run(&mut s, "prepare");
    assert_eq!(count(&run(&mut s, "run"), "delete"), 7);
    assert!(!dir.path().join("d/j.0.6").exists(), "rmdir'ed by the run");
}

#[test]
fn a_name_engine_refuses_what_would_do_a_name_twice() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = names_workload("filecreate", 2, 5);
    w["thread_files"] = json!(false);
    let err = session_t(dir.path(), 2, w).err().expect("refused");
    assert!(err.contains("thread_files") && err.contains("several times"), "{err}");
    let mut w = names_workload("filedelete", 1, 5);
    w["duration_s"] = json!(1.0);
    let err = session_t(dir.path(), 1, w).err().expect("refused");
    assert!(err.contains("duration_s"), "{err}");
}

#[test]
fn filestat_with_a_duration_makes_passes_until_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = names_workload("filestat", 1, 3);
    w["total_bytes"] = Value::Null;
    w["duration_s"] = json!(0.2);
    let mut s = session_t(dir.path(), 1, w).unwrap();
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert!(count(&r, "stat") > 3, "several passes over 3 names in 0.2 s: {}", count(&r, "stat"));
}

fn data_workload(engine: &str, read_pct: f64, trim_pct: f64, random_pct: f64) -> Value {
    json!({
        "family": "access", "fio_engine": engine, "file_size": MIB, "file_names": ["f"], "warmup_s": 0,
        "entries": [{"size": 65536, "weight": 100, "read_pct": read_pct, "random_pct": random_pct, "trim_pct": trim_pct}],
        "total_bytes": MIB, "alignment": 65536,
    })
}

fn seek_hole(path: &std::path::Path, from: i64) -> i64 {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    // SAFETY: f is open.
    unsafe { libc::lseek(f.as_raw_fd(), from, libc::SEEK_HOLE) }
}

#[test]
fn falloc_trims_punch_holes_seen_with_seek_hole_and_writes_allocate_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let mut s = session_t(dir.path(), 1, data_workload("falloc", 0.0, 100.0, 0.0)).unwrap();
    run(&mut s, "prepare");
    assert_eq!(seek_hole(&path, 0), MIB as i64, "laid out whole: the only hole is at the end");
    let r = run(&mut s, "run");
    assert_eq!(count(&r, "trim"), 16, "1 MiB in 64 KiB punches");
    assert_eq!(r["ops"]["trim"]["bytes"], MIB);
    assert_eq!(seek_hole(&path, 0), 0, "punched from the start");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), MIB, "KEEP_SIZE");
    // Writes: fallocate mode 0 over each range, which allocates the blocks again (no data written).
    let mut s = session_t(dir.path(), 1, data_workload("falloc", 0.0, 0.0, 0.0)).unwrap();
    let r = run(&mut s, "run");
    assert_eq!(count(&r, "write"), 16);
    // Allocated (SEEK_HOLE may still call unwritten extents holes: they read as zeros).
    assert!(std::fs::metadata(&path).unwrap().blocks() * 512 >= MIB, "every range allocated");
    assert!(std::fs::read(&path).unwrap().iter().all(|&b| b == 0), "allocated, not written");
    // Reads: fallocate KEEP_SIZE, counted as reads.
    let mut s = session_t(dir.path(), 1, data_workload("falloc", 100.0, 0.0, 100.0)).unwrap();
    let r = run(&mut s, "run");
    assert_eq!(count(&r, "read"), 16);
    assert_eq!(r["extra"]["mix"][0]["reads"], 16);
}

#[test]
fn ftruncate_truncates_the_file_to_each_write_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let mut s = session_t(dir.path(), 1, data_workload("ftruncate", 0.0, 0.0, 0.0)).unwrap();
    run(&mut s, "prepare");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), MIB);
    let r = run(&mut s, "run");
    assert_eq!(count(&r, "write"), 16, "one truncate per request, counted as fio counts its writes");
    assert_eq!(r["ops"]["write"]["bytes"], MIB);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), MIB - 65536, "the last truncate is to the last offset");
    let err = session_t(dir.path(), 1, data_workload("ftruncate", 50.0, 0.0, 0.0)).err().expect("refused");
    assert!(err.contains("writes only"), "{err}");
}

#[test]
fn e4defrag_needs_a_donor_and_fails_in_one_line_where_the_ioctl_is_missing() {
    // A tmpfs: the temporary directory may be on the machine's own ext4, where the ioctl would move extents.
    if !std::path::Path::new("/dev/shm").is_dir() {
        return;
    }
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let err = session_t(dir.path(), 1, data_workload("e4defrag", 0.0, 0.0, 0.0)).err().expect("refused");
    assert!(err.contains("donor_name"), "{err}");
    let mut w = data_workload("e4defrag", 0.0, 0.0, 0.0);
    w["donor_name"] = json!("f.def");
    let mut s = session_t(dir.path(), 1, w).unwrap();
    run(&mut s, "prepare");
    let e = s.run_phase("run", &Control::new()).expect_err("tmpfs has no EXT4_IOC_MOVE_EXT").to_string();
    assert!(e.contains("fio_engine") && e.contains("EXT4_IOC_MOVE_EXT") && !e.contains('\n'), "{e}");
    assert!(dir.path().join("f.def").exists(), "the donor is created, as fio creates it");
    run(&mut s, "cleanup");
    assert!(!dir.path().join("f.def").exists(), "the donor the run created is removed");
}
