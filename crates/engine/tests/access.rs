//! End-to-end tests of the access workload through the Session API on a temp dir.

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn session(dir: &std::path::Path, backend: &str, threads: usize, workload: Value) -> Session {
    let job = json!({"dir": dir, "threads": threads, "seed": 5, "backend": backend, "interval_s": 0.05, "workload": workload});
    Session::from_json(&job.to_string()).expect("valid job")
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

#[test]
fn sequential_read_pass_reads_exactly_the_files_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let size = 4 << 20;
    let mut s = session(
        dir.path(),
        "psync",
        1,
        json!({
            "family": "access", "file_count": 2, "file_size": size,
            "entries": [{"size": 65536, "weight": 100, "read_pct": 100, "random_pct": 0}],
            "total_bytes": 2 * size,
        }),
    );
    let prep = run(&mut s, "prepare");
    assert_eq!(prep["ops"]["write"]["bytes"], 2 * size);
    let r = run(&mut s, "run");
    assert_eq!(r["ops"]["read"]["bytes"], 2 * size);
    assert_eq!(r["ops"]["read"]["count"], 2 * size / 65536);
    assert!(r["ops"].get("write").is_none());
    run(&mut s, "cleanup");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn intervals_add_up_to_totals_and_histograms_to_counts() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(
        dir.path(),
        "psync",
        2,
        json!({
            "family": "access", "file_count": 2, "file_size": 1 << 20,
            "entries": [{"size": 4096, "weight": 70, "read_pct": 70, "random_pct": 100},
                        {"size": 512, "weight": 30, "read_pct": 50, "random_pct": 0}],
            "warmup_s": 0.1, "duration_s": 0.4, "fsync_every": 64,
        }),
    );
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let intervals = r["intervals"].as_array().unwrap();
    assert!(intervals.len() >= 7, "expected ~8 samples of 50 ms, got {}", intervals.len());
    let sum_ops: u64 = intervals.iter().map(|i| i["ops"].as_u64().unwrap()).sum();
    let sum_bytes: u64 = intervals.iter().map(|i| i["bytes"].as_u64().unwrap()).sum();
    assert_eq!(sum_ops, r["total"]["ops"].as_u64().unwrap());
    assert_eq!(sum_bytes, r["total"]["bytes"].as_u64().unwrap());
    let mut total = 0;
    for (kind, op) in r["ops"].as_object().unwrap() {
        let count = op["count"].as_u64().unwrap();
        let buckets: u64 = op["lat"]["buckets"].as_array().unwrap().iter().map(|b| b[1].as_u64().unwrap()).sum();
        assert_eq!(buckets, count);
        assert_eq!(op["lat"]["count"].as_u64().unwrap(), count);
        if kind != "fsync" {
            total += count;
        }
    }
    assert_eq!(total, r["total"]["ops"].as_u64().unwrap());
    assert!(r["ops"]["fsync"]["count"].as_u64().unwrap() > 0);
    // It ran for its whole duration; how much longer depends on the machine's load (no upper bound).
    let el = r["elapsed_s"].as_f64().unwrap();
    assert!(el >= 0.4, "elapsed {el}");
    // The mix as executed: counted reads + writes equal the measured data ops.
    let mixed: u64 = r["extra"]["mix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["reads"].as_u64().unwrap() + m["writes"].as_u64().unwrap())
        .sum();
    assert_eq!(mixed, r["ops"]["read"]["count"].as_u64().unwrap() + r["ops"]["write"]["count"].as_u64().unwrap());
}

/// fio counts fsync apart from the I/Os; so does the access headline: with an
/// fsync after every write, ops/s is reads + writes per second, not ~2x that.
#[test]
fn fsync_is_counted_apart_from_data_operations() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(
        dir.path(),
        "psync",
        1,
        json!({
            "family": "access", "file_size": 1 << 20, "fsync_every": 1,
            "entries": [{"size": 4096, "weight": 100, "read_pct": 50, "random_pct": 100}],
            "total_bytes": 1 << 20,
        }),
    );
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let count = |k: &str| r["ops"][k]["count"].as_u64().unwrap();
    let (reads, writes, fsyncs) = (count("read"), count("write"), count("fsync"));
    assert_eq!(fsyncs, writes, "one fsync per write");
    assert_eq!(r["total"]["ops"].as_u64().unwrap(), reads + writes);
    let el = r["elapsed_s"].as_f64().unwrap();
    let ops_per_s = r["total"]["ops_per_s"].as_f64().unwrap();
    assert!((ops_per_s - (reads + writes) as f64 / el).abs() < 1e-6 * ops_per_s, "{ops_per_s}");
    // fsync keeps its own count, rate and latency.
    assert!((r["ops"]["fsync"]["ops_per_s"].as_f64().unwrap() - fsyncs as f64 / el).abs() < 1e-6 * ops_per_s);
    assert!(r["ops"]["fsync"]["lat"]["p99_ns"].as_u64().unwrap() > 0);
    // Intervals count data operations too (they add up to the headline), fsync by kind.
    let iv = r["intervals"].as_array().unwrap();
    assert_eq!(iv.iter().map(|i| i["ops"].as_u64().unwrap()).sum::<u64>(), reads + writes);
    assert_eq!(iv.iter().map(|i| i["ops_by_kind"]["fsync"].as_u64().unwrap_or(0)).sum::<u64>(), fsyncs);
}

/// On a filesystem that reports its O_DIRECT alignment, aligned requests are
/// direct and the report says so; a buffered run records no direct-I/O facts.
#[test]
fn direct_run_records_its_alignment_and_no_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let spec = |direct: bool| {
        json!({
            "family": "access", "file_size": 1 << 20, "direct": direct, "alignment": 4096,
            "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 100}],
            "total_bytes": 256 << 10,
        })
    };
    let mut s = session(dir.path(), "psync", 1, spec(true));
    run(&mut s, "prepare");
    let r = match s.run_phase("run", &Control::new()) {
        Ok(r) => serde_json::to_value(r).unwrap(),
        Err(e) if e.to_string().contains("does not support O_DIRECT") => return, // e.g. an old tmpfs
        Err(e) => panic!("{e}"),
    };
    let d = &r["extra"]["direct_io"];
    assert_eq!(d["buffered_fallback_possible"], false, "{d}");
    assert_eq!(d["unaligned_requests"], false);
    assert!(d["offset_align"].as_u64().unwrap() >= 512);
    assert!(r["warnings"].as_array().unwrap().is_empty());
    let mut b = session(dir.path(), "psync", 1, spec(false));
    let r = run(&mut b, "run");
    assert!(r["extra"]["direct_io"].is_null());
}

#[test]
fn direct_misalignment_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let job = json!({"dir": dir.path(), "workload": {
        "family": "access", "file_size": 1 << 20, "direct": true, "duration_s": 1,
        "entries": [{"size": 1000, "weight": 100, "read_pct": 100, "random_pct": 100}]}});
    let err = Session::from_json(&job.to_string()).err().expect("rejected").to_string();
    assert!(err.contains("entries[0].size") && err.contains("O_DIRECT"), "{err}");
}

#[test]
fn psync_refuses_queue_depth() {
    let dir = tempfile::tempdir().unwrap();
    let job = json!({"dir": dir.path(), "backend": "psync", "workload": {
        "family": "access", "file_size": 1 << 20, "queue_depth": 8, "duration_s": 1,
        "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 100}]}});
    let err = Session::from_json(&job.to_string()).err().expect("rejected").to_string();
    assert!(err.starts_with("queue_depth:") && err.contains("io_uring"), "{err}");
}

#[test]
fn io_uring_with_queue_depth_moves_the_quota() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(
        dir.path(),
        "io_uring",
        1,
        json!({
            "family": "access", "file_size": 2 << 20, "queue_depth": 16,
            "entries": [{"size": 4096, "weight": 100, "read_pct": 50, "random_pct": 100}],
            "total_bytes": 4 << 20,
        }),
    );
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    // Up to queue_depth - 1 requests may already be in flight when the quota is reached.
    let bytes = r["total"]["bytes"].as_u64().unwrap();
    assert!((4 << 20..(4 << 20) + 16 * 4096).contains(&bytes), "{bytes}");
}

#[test]
fn stop_request_ends_a_long_run_before_its_deadline_marked_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(
        dir.path(),
        "null",
        2,
        json!({
            "family": "access", "file_size": 1 << 20, "queue_depth": 4, "duration_s": 60,
            "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 100}],
        }),
    );
    run(&mut s, "prepare");
    let ctl = std::sync::Arc::new(Control::new());
    let c2 = ctl.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        c2.request_stop();
    });
    let r = s.run_phase("run", &ctl).unwrap();
    t.join().unwrap();
    assert!(r.interrupted);
    // The 60 s deadline did not end it: the stop did (how soon after it depends on the load).
    assert!(r.elapsed_s < 60.0, "ran {} s", r.elapsed_s);
    assert!(r.total.ops > 0);
}

#[test]
fn unknown_phase_names_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(
        dir.path(),
        "null",
        1,
        json!({
        "family": "access", "file_size": 1 << 20, "duration_s": 1,
        "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 100}]}),
    );
    let err = s.run_phase("bogus", &Control::new()).err().unwrap().to_string();
    assert!(err.contains("prepare, run, verify, cleanup"), "{err}");
}

/// The open files (descriptions) of `file` among the descriptors of every thread of this process:
/// the workers' tables are their own (`measure::own_fd_table`), and a copy of a descriptor in
/// another table is the same open file (kcmp tells).
fn open_files_of(file: &std::path::Path) -> usize {
    let mut seen: Vec<(i32, i32)> = Vec::new();
    let mut distinct = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().filter_map(|e| e.ok()) {
        let Ok(tid) = task.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(fds) = std::fs::read_dir(task.path().join("fd")) else { continue };
        for e in fds.filter_map(|e| e.ok()) {
            if std::fs::read_link(e.path()).ok().as_deref() != Some(file) {
                continue;
            }
            let Ok(fd) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
            // 0: the same open file; an error: a thread or descriptor gone since it was listed
            // (a worker ending), which is left out. kcmp itself refused fails the test.
            let mut gone = false;
            let mut same = false;
            for &(t, f) in &seen {
                // SAFETY: kcmp only compares two tasks' descriptors.
                match unsafe {
                    libc::syscall(libc::SYS_kcmp, tid, t, 0 /* KCMP_FILE */, fd, f)
                } {
                    0 => same = true,
                    -1 => match std::io::Error::last_os_error().raw_os_error() {
                        Some(libc::ESRCH) | Some(libc::EBADF) => gone = true,
                        _ => panic!("kcmp: {}: this test needs it", std::io::Error::last_os_error()),
                    },
                    _ => {}
                }
            }
            if gone {
                continue;
            }
            if !same {
                distinct += 1;
            }
            seen.push((tid, fd));
        }
    }
    distinct
}

/// The most open files of `file` the process held at once while `phase` of `s` ran.
fn most_open_during(s: &mut Session, phase: &str, file: &std::path::Path) -> usize {
    let file = file.canonicalize().unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            let mut most = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(open_files_of(&file));
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            most
        });
        run(s, phase);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        watcher.join().unwrap()
    })
}

#[test]
fn each_thread_reads_through_its_own_open_file() {
    // Threads sharing one open file contend on its reference count in every call; as fio's jobs,
    // each thread opens the files itself. (Other tests' files are in other directories.)
    for threads in [1, 3] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = session(
            dir.path(),
            "psync",
            threads,
            json!({
                "family": "access", "file_count": 1, "file_size": 1 << 20,
                "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 100}],
                "warmup_s": 0, "duration_s": 0.5,
            }),
        );
        run(&mut s, "prepare");
        let file = dir.path().join("fsmeter.access.0");
        assert_eq!(most_open_during(&mut s, "run", &file), threads, "threads={threads}");
        run(&mut s, "cleanup");
        assert!(!file.exists());
    }
}
