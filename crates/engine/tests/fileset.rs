//! End-to-end tests of the fileset (PostMark / filemark) workload through the Session API.

use std::collections::BTreeMap;
use std::path::Path;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn session(dir: &Path, threads: usize, seed: u64, workload: Value) -> Session {
    let job = json!({"dir": dir, "threads": threads, "seed": seed, "interval_s": 0.05, "workload": workload});
    Session::from_json(&job.to_string()).expect("valid job")
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

fn counters(r: &Value) -> BTreeMap<String, u64> {
    r["counters"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.as_str() != "elapsed_us")
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect()
}

/// Every regular file under `dir`, recursively.
fn files_under(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            n += files_under(&e.path());
        } else {
            n += 1;
        }
    }
    n
}

fn postmark(extra: Value) -> Value {
    let mut w = json!({"family": "fileset", "files": 500, "transactions": 500});
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    w
}

/// The three phases; returns their counters summed over phases, like PostMark's report.
fn full_run(dir: &Path, threads: usize, seed: u64, w: Value) -> (BTreeMap<String, u64>, Vec<Value>) {
    let mut s = session(dir, threads, seed, w);
    let reps: Vec<Value> = ["create", "transactions", "delete"].iter().map(|p| run(&mut s, p)).collect();
    let mut sum = BTreeMap::new();
    for r in &reps {
        for (k, v) in counters(r) {
            *sum.entry(k).or_insert(0) += v;
        }
    }
    (sum, reps)
}

#[test]
fn postmark_defaults_give_postmark_counts() {
    // Debian's postmark 1.53 with `set location D`, `run`: 764 created (500 alone,
    // 264 mixed), 243 read, 257 appended, 764 deleted (528 alone, 236 mixed).
    let dir = tempfile::tempdir().unwrap();
    let (c, _) = full_run(dir.path(), 1, 42, postmark(json!({})));
    assert_eq!(c["files_created_alone"], 500);
    assert_eq!(c["files_created_mixed"], 264);
    assert_eq!(c["files_read"], 243);
    assert_eq!(c["files_appended"], 257);
    assert_eq!(c["files_deleted_alone"], 528);
    assert_eq!(c["files_deleted_mixed"], 236);
    assert_eq!(c["transactions"], 500);
}

fn bytes_under(dir: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let m = e.metadata().unwrap();
        n += if m.is_dir() { bytes_under(&e.path()) } else { m.len() };
    }
    n
}

#[test]
fn files_are_really_created_and_deleted_and_counts_add_up() {
    for buffering in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let w = postmark(json!({"files": 300, "transactions": 2000, "subdirectories": 7, "buffering": buffering,
                                 "size_low": 100, "size_high": 20000, "read_block": 4096, "write_block": 1000}));
        let mut s = session(dir.path(), 1, 9, w);
        let c = run(&mut s, "create");
        assert_eq!(c["counters"]["files_created_alone"], 300);
        assert_eq!(files_under(dir.path()), 300, "buffering={buffering}");
        assert_eq!(bytes_under(dir.path()), c["counters"]["bytes_written"].as_u64().unwrap());
        assert_eq!(c["ops"]["create"]["count"], 300);
        // The files sit in s0..s6 only.
        let subdirs: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert_eq!(subdirs.len(), 7);
        assert!(subdirs.iter().all(|n| n.starts_with('s')));

        let t = run(&mut s, "transactions");
        let tc = counters(&t);
        assert_eq!(tc["transactions"], 2000);
        let live = 300 + tc["files_created_mixed"] - tc["files_deleted_mixed"];
        assert_eq!(t["extra"]["files_live"], live);
        assert_eq!(files_under(dir.path()) as u64, live);
        // Every transaction reads or appends (unless the file is full) and creates or deletes.
        assert!(tc["files_read"] + tc["files_appended"] <= 2000);
        assert_eq!(tc["files_created_mixed"] + tc["files_deleted_mixed"], 2000);
        assert_eq!(t["ops"]["read"]["count"], tc["files_read"]);
        assert_eq!(t["ops"]["read"]["bytes"], tc["bytes_read"]);
        // Bytes on disk: what create wrote plus what transactions wrote, less the deleted files.
        assert!(bytes_under(dir.path()) <= c["counters"]["bytes_written"].as_u64().unwrap() + tc["bytes_written"]);

        let d = run(&mut s, "delete");
        assert_eq!(d["counters"]["files_deleted_alone"], live);
        assert_eq!(d["extra"]["files_live"], 0);
        let total = &d["extra"]["run_totals"];
        assert_eq!(total["files_created"], total["files_deleted"]);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "delete leaves the directory empty");
        run(&mut s, "cleanup");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

#[test]
fn one_thread_same_seed_same_counters_other_seed_other_counters() {
    let w =
        postmark(json!({"files": 200, "transactions": 3000, "subdirectories": 3, "bias_read": 3, "bias_create": 6}));
    let a = full_run(tempfile::tempdir().unwrap().path(), 1, 77, w.clone()).0;
    let b = full_run(tempfile::tempdir().unwrap().path(), 1, 77, w.clone()).0;
    let c = full_run(tempfile::tempdir().unwrap().path(), 1, 78, w).0;
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn disabled_biases_skip_their_half_of_each_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (c, _) = full_run(dir.path(), 1, 42, postmark(json!({"bias_read": -1})));
    assert_eq!(c["files_read"] + c["files_appended"], 0);
    assert_eq!(c["files_created_mixed"] + c["files_deleted_mixed"], 500);
    let (c, _) = full_run(dir.path(), 1, 42, postmark(json!({"bias_create": -1})));
    assert_eq!(c["files_created_mixed"] + c["files_deleted_mixed"], 0);
    assert_eq!(c["files_deleted_alone"], 500);
}

#[test]
fn weighted_locations_get_files_and_are_removed_when_made_by_fsmeter() {
    let dir = tempfile::tempdir().unwrap();
    let w = postmark(json!({"files": 400, "transactions": 100,
        "locations": [{"path": "a", "weight": 1}, {"path": "b", "weight": 3}]}));
    let mut s = session(dir.path(), 1, 42, w);
    run(&mut s, "create");
    let a = files_under(&dir.path().join("a"));
    let b = files_under(&dir.path().join("b"));
    assert_eq!(a + b, 400);
    assert!(b > 2 * a, "weights 1:3 gave {a}:{b}");
    run(&mut s, "transactions");
    run(&mut s, "delete");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn out_of_files_stops_early_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 1, 42, postmark(json!({"files": 20, "transactions": 5000, "bias_create": 0})));
    run(&mut s, "create");
    let t = run(&mut s, "transactions");
    assert!(t["counters"]["transactions"].as_u64().unwrap() < 5000);
    assert_eq!(t["extra"]["files_live"], 0);
    assert!(t["warnings"][0].as_str().unwrap().contains("out of files"));
    // Another transactions phase (filemark runs several) finds no file and says so again.
    let t2 = run(&mut s, "transactions");
    assert_eq!(t2["counters"]["transactions"], 0);
    assert!(t2["warnings"][0].as_str().unwrap().contains("out of files"));
    run(&mut s, "delete");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn filemark_threads_timed_phases_and_cleanup_without_delete() {
    let dir = tempfile::tempdir().unwrap();
    let w = json!({"family": "fileset", "mode": "filemark", "files": 1000, "duration_s": 0.3, "warmup_s": 0.1,
                   "bias_read": 75, "bias_create": 50, "subdirectories": 10, "size_low": 512, "size_high": 10000});
    let mut s = session(dir.path(), 2, 42, w);
    let c = run(&mut s, "create");
    assert_eq!(c["counters"]["files_created_alone"], 1000);
    assert_eq!(c["threads"], 2);
    assert_eq!(files_under(dir.path()), 1000);
    let mut live = 1000u64;
    for _ in 0..3 {
        let t = run(&mut s, "transactions");
        let tc = counters(&t);
        assert!(tc["transactions_measured"] > 0 && tc["transactions_measured"] <= tc["transactions"]);
        assert!(t["extra"]["rates"]["transactions_per_s"].as_f64().unwrap() > 0.0);
        live = live + tc["files_created_mixed"] - tc["files_deleted_mixed"];
        assert_eq!(t["extra"]["files_live"], live);
        assert_eq!(files_under(dir.path()) as u64, live);
    }
    let r = run(&mut s, "cleanup");
    assert_eq!(r["counters"]["files_removed"], live);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn two_threads_split_the_work_and_names_do_not_collide() {
    let dir = tempfile::tempdir().unwrap();
    let (c, reps) = full_run(dir.path(), 2, 5, postmark(json!({"files": 501, "transactions": 1001})));
    assert_eq!(c["files_created_alone"], 501);
    assert_eq!(c["transactions"], 1001);
    assert_eq!(
        c["files_created_alone"] + c["files_created_mixed"],
        c["files_deleted_alone"] + c["files_deleted_mixed"]
    );
    assert_eq!(reps[2]["extra"]["files_live"], 0);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn bad_specs_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    for (w, field) in [
        (json!({"family": "fileset", "bias_read": 11}), "bias_read"),
        (json!({"family": "fileset", "mode": "filemark", "bias_create": 101, "duration_s": 1}), "bias_create"),
        (json!({"family": "fileset", "size_low": 100, "size_high": 50}), "size_high"),
        (json!({"family": "fileset", "files": 0}), "files"),
        (json!({"family": "fileset", "transactions": null}), "transactions"),
    ] {
        let job = json!({"dir": dir.path(), "workload": w});
        let err = Session::from_json(&job.to_string()).err().expect("rejected").to_string();
        assert!(err.starts_with(field), "{err}");
    }
}

/// Open file descriptors of this process that lead into `dir` (directories included).
/// Descriptors into `dir` in every thread's table (the workers' tables are their own, and a
/// worker that has ended may not have released its table yet).
fn fds_under(dir: &Path) -> usize {
    let dir = dir.canonicalize().unwrap();
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_dir(t.ok()?.path().join("fd")).ok())
        .flatten()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.starts_with(&dir))
        .count()
}

#[test]
fn nothing_stays_open_between_phases_so_the_filesystem_can_be_remounted() {
    // A campaign unmounts and mounts the filesystem before every cold-cache transactions phase:
    // an fd left open into it (a location directory) makes the unmount fail with EBUSY.
    let dir = tempfile::tempdir().unwrap();
    let w =
        postmark(json!({"subdirectories": 3, "locations": [{"path": "a", "weight": 1}, {"path": "b", "weight": 1}]}));
    let mut s = session(dir.path(), 2, 42, w);
    for phase in ["create", "transactions", "transactions", "delete"] {
        run(&mut s, phase);
        assert_eq!(fds_under(dir.path()), 0, "after {phase}");
    }
    // The locations were reopened after each phase: every file was found and removed.
    assert_eq!(files_under(dir.path()), 0);
    // Across a stand-in for a remount: the location directory is replaced by a new one under the same
    // name, holding the same files. The next phase must work in the new one.
    let mut s =
        session(dir.path(), 1, 7, postmark(json!({"subdirectories": 2, "locations": [{"path": "a", "weight": 1}]})));
    run(&mut s, "create");
    let (old, new) = (dir.path().join("a"), dir.path().join("a.new"));
    std::fs::create_dir(&new).unwrap();
    for e in std::fs::read_dir(&old).unwrap() {
        let e = e.unwrap();
        std::fs::rename(e.path(), new.join(e.file_name())).unwrap();
    }
    std::fs::remove_dir(&old).unwrap();
    std::fs::rename(&new, &old).unwrap();
    let t = run(&mut s, "transactions");
    assert_eq!(t["counters"]["transactions"], 500);
    let r = run(&mut s, "delete");
    assert_eq!(r["extra"]["files_live"], 0);
    assert!(!old.exists(), "the location fsmeter made is removed with the fileset");
}

#[test]
fn transactions_intervals_carry_the_transactions_they_counted() {
    // The headline is transactions/s: its per-interval series (for a batch-means CI) needs the
    // transactions of each interval, which the operation counts cannot give (a transaction is one
    // or two operations).
    let dir = tempfile::tempdir().unwrap();
    let w = json!({"family": "fileset", "mode": "filemark", "files": 400, "transactions": null, "duration_s": 0.4,
                   "warmup_s": 0.1, "bias_read": 50, "bias_create": 50});
    let mut s = session(dir.path(), 2, 42, w);
    let c = run(&mut s, "create");
    assert!(c["intervals"].as_array().unwrap().iter().all(|iv| iv.get("units").is_none()));
    let t = run(&mut s, "transactions");
    let ivs = t["intervals"].as_array().unwrap();
    assert!(ivs.len() >= 2);
    let units: u64 = ivs.iter().map(|iv| iv["units"].as_u64().expect("units in every interval")).sum();
    assert_eq!(units, t["counters"]["transactions_measured"].as_u64().unwrap());
    assert!(units > 0 && units < t["counters"]["transactions"].as_u64().unwrap()); // warm-up left out
    run(&mut s, "cleanup");
}

#[test]
fn a_relative_location_climbing_out_of_dir_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("w");
    std::fs::create_dir(&work).unwrap();
    for bad in ["../out", "a/../../out"] {
        let job = json!({"dir": &work, "threads": 1, "interval_s": 0.05,
                         "workload": postmark(json!({"locations": [{"path": bad, "weight": 1}]}))});
        let e = Session::from_json(&job.to_string()).err().expect("refused").to_string();
        assert!(e.starts_with("locations[0].path: ") && e.contains("climbs out of dir"), "{e}");
    }
    assert!(!tmp.path().join("out").exists());
}
