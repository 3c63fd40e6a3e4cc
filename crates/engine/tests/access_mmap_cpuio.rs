//! The mmap and libpmem backends (fio's ioengine=mmap and libpmem) and fio's cpuio engine in the
//! access family: bytes written through a mapping are the file's bytes afterwards, reads through it
//! see the file's bytes, libpmem on a file not on persistent memory says so, and a cpuio job burns
//! about its share of one CPU.

use std::os::unix::fs::FileExt;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

const PATTERN: [u8; 4] = [0xde, 0xad, 0xbe, 0xef];

fn session(dir: &std::path::Path, backend: &str, threads: usize, workload: Value) -> Result<Session, String> {
    let job = json!({"dir": dir, "threads": threads, "seed": 9, "backend": backend, "interval_s": 0.05,
                     "workload": workload});
    Session::from_json(&job.to_string()).map_err(|e| e.to_string())
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

fn writer(extra: Value) -> Value {
    let mut w = json!({
        "family": "access", "file_size": 1 << 20, "file_names": ["m"], "alignment": 4096,
        "entries": [{"size": 4096, "weight": 100, "read_pct": 0, "random_pct": 100}],
        "total_bytes": 1 << 20, "random_map": true, "buffer_pattern": PATTERN,
    });
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    w
}

#[test]
fn writes_through_the_mapping_are_the_files_bytes_and_fsync_is_an_msync() {
    let dir = tempfile::tempdir().unwrap();
    // Laid out with pseudo-random bytes (plain writes), then written through the mapping.
    let mut layout = writer(json!({}));
    layout["buffer_pattern"] = json!([]);
    run(&mut session(dir.path(), "psync", 1, layout).unwrap(), "prepare");
    let path = dir.path().join("m");
    assert!(!std::fs::read(&path).unwrap().chunks(4).all(|c| c == PATTERN));
    let mut s = session(dir.path(), "mmap", 1, writer(json!({"fsync_end": true}))).unwrap();
    let r = run(&mut s, "run");
    assert_eq!(r["ops"]["write"]["count"], 256);
    assert_eq!(r["ops"]["write"]["bytes"], 1 << 20);
    assert_eq!(r["ops"]["fsync"]["count"], 1, "end_fsync is one msync of the file's mapping");
    assert_eq!(r["extra"]["mmap"]["backend"], "mmap");
    assert_eq!(r["extra"]["mmap"]["advice"], "MADV_RANDOM");
    assert_eq!(r["extra"]["backend"], "mmap");
    // Read back with plain reads, after the engine unmapped: every block of the random map was written.
    let data = std::fs::read(&path).unwrap();
    assert_eq!(data.len(), 1 << 20);
    assert!(data.chunks(4).all(|c| c == PATTERN), "the file does not hold what was written through the mapping");
    run(&mut s, "cleanup");
}

#[test]
fn reads_through_the_mapping_see_the_files_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let workload = json!({
        "family": "access", "file_size": 1 << 20, "file_names": ["p"], "alignment": 4096,
        "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 0}],
        "total_bytes": 1 << 20, "verify_pattern": PATTERN,
    });
    let mut s = session(dir.path(), "psync", 1, workload.clone()).unwrap();
    run(&mut s, "prepare");
    // One byte changed behind the engine's back: a read through the mapping must meet it.
    std::fs::OpenOptions::new().write(true).open(dir.path().join("p")).unwrap().write_at(&[0x00], 500_001).unwrap();
    let mut m = session(dir.path(), "mmap", 1, workload).unwrap();
    let r = run(&mut m, "run");
    assert_eq!(r["ops"]["read"]["count"], 256);
    assert_eq!(r["counters"]["verify_blocks_checked"], 256);
    assert_eq!(r["counters"]["verify_mismatches"], 1);
    assert_eq!(r["extra"]["verify"]["mismatches"][0]["first_diff_offset"], 500_001);
    assert_eq!(r["extra"]["mmap"]["writable"], false, "a read-only mix maps read-only");
    assert_eq!(r["extra"]["mmap"]["advice"], "MADV_SEQUENTIAL");
}

#[test]
fn direct_msyncs_each_write_and_libpmem_refuses_a_file_not_on_dax() {
    let dir = tempfile::tempdir().unwrap();
    let mut layout = writer(json!({}));
    layout["buffer_pattern"] = json!([]);
    run(&mut session(dir.path(), "psync", 1, layout).unwrap(), "prepare");
    let mut s = session(dir.path(), "mmap", 1, writer(json!({"direct": true}))).unwrap();
    let r = run(&mut s, "run");
    assert_eq!(r["ops"]["write"]["bytes"], 1 << 20);
    let x = &r["extra"]["mmap"];
    assert_eq!(x["backend"], "mmap");
    assert_eq!(x["dax"], false);
    assert!(x["direct"].as_str().unwrap().contains("MADV_DONTNEED"), "{x}");
    let data = std::fs::read(dir.path().join("m")).unwrap();
    assert!(data.chunks(4).all(|c| c == PATTERN));
    // A temporary directory is not on DAX persistent memory: fio's libpmem engine stops there, and so
    // does fsmeter's, naming the file, before any write.
    let before = std::fs::read(dir.path().join("m")).unwrap();
    let mut s = session(dir.path(), "libpmem", 1, writer(json!({"direct": true}))).unwrap();
    let e = s.run_phase("run", &Control::new()).expect_err("refused").to_string();
    assert!(e.contains("not on DAX persistent memory") && e.contains("ioengine=mmap"), "{e}");
    assert_eq!(std::fs::read(dir.path().join("m")).unwrap(), before);
}

#[test]
fn the_mmap_backends_refuse_what_they_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    // direct msyncs whole pages: fio's mmap engine wants page-sized requests then, and so does fsmeter.
    let mut w = writer(json!({"direct": true, "alignment": 512}));
    w["entries"][0]["size"] = json!(512);
    w["random_map"] = json!(false);
    let e = session(dir.path(), "mmap", 1, w).err().expect("refused");
    assert!(e.contains("entries[0].size") && e.contains("4096"), "{e}");
    let e = session(dir.path(), "libpmem", 1, writer(json!({"queue_depth": 4}))).err().expect("refused");
    assert!(e.contains("queue_depth"), "{e}");
}

fn cpu_job(load: u32, mode: &str) -> Value {
    json!({
        "family": "access", "file_size": 4096, "fio_engine": "cpuio", "cpu_load": load, "cpu_mode": mode,
        "cpu_chunk_us": 20_000, "duration_s": 1.0,
        "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 0}],
    })
}

fn pct(r: &Value, key: &str) -> f64 {
    r["extra"]["cpuio"][key].as_f64().unwrap()
}

#[test]
fn cpuio_burns_about_its_share_of_a_cpu_and_moves_no_data() {
    let dir = tempfile::tempdir().unwrap();
    for mode in ["noop", "qsort"] {
        let mut s = session(dir.path(), "psync", 1, cpu_job(50, mode)).unwrap();
        let p = run(&mut s, "prepare");
        assert!(p["ops"].as_object().unwrap().is_empty(), "no files are laid out");
        let r = run(&mut s, "run");
        assert_eq!(r["total"]["ops"], 0, "{mode}: no I/O");
        assert_eq!(r["total"]["bytes"], 0);
        assert!(r["ops"]["cpu"]["count"].as_u64().unwrap() > 0);
        // cpuload=50: bursts half of the time; bounds derived from the setting (half to one and a half times it).
        // The CPU the thread got in them is at most that (less when other work competes for the CPUs).
        let burst = pct(&r, "burst_pct_of_wall_per_thread");
        let cpu = pct(&r, "cpu_pct_of_one_cpu_per_thread");
        assert!((25.0..=75.0).contains(&burst), "{mode}: cpuload=50 burst {burst:.1}% of the time");
        assert!(cpu > 0.0 && cpu <= burst * 1.05 + 1.0, "{mode}: {cpu:.1}% of one CPU in bursts of {burst:.1}%");
        assert!(r["counters"]["cpu_ns"].as_u64().unwrap() > 0);
        run(&mut s, "cleanup");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "cpuio made no files");
}

#[test]
fn cpuio_with_exit_on_io_done_stops_when_its_groups_io_jobs_are_done() {
    let dir = tempfile::tempdir().unwrap();
    let mut burner = cpu_job(20, "noop");
    burner["duration_s"] = json!(600.0);
    burner["cpu_exit_on_io_done"] = json!(true);
    burner.as_object_mut().unwrap().remove("family");
    let reader = json!({
        "file_size": 1 << 20, "file_prefix": "r", "total_bytes": 1 << 20,
        "entries": [{"size": 65536, "weight": 100, "read_pct": 100, "random_pct": 0}],
    });
    let jobs = json!([
        {"name": "burn", "workload": burner},
        {"name": "reader", "workload": reader},
    ]);
    let job = json!({"dir": dir.path(), "interval_s": 0.05, "workload": {"family": "access_group", "jobs": jobs}});
    let mut s = Session::from_json(&job.to_string()).unwrap();
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let burn = &r["jobs"]["burn"];
    assert_eq!(r["jobs"]["reader"]["total"]["bytes"], 1 << 20);
    assert_eq!(burn["total"]["bytes"], 0);
    assert_eq!(burn["extra"]["fio_engine"], "cpuio");
    // Its runtime is ten minutes; it ended with the reader instead.
    assert!(r["elapsed_s"].as_f64().unwrap() < 600.0);
    run(&mut s, "cleanup");
}
