//! The mix family end to end: job accounting as re-aim defines it, the
//! subrun barrier, a small run with tasks 1 and 2, and bad workfiles.

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn job(dir: &std::path::Path, weights: Value, extra: Value) -> String {
    let mut w = json!({
        "family": "mix",
        "weights": weights,
        "jobs_per_task": 40,
        "file_kib": 16,
        "pool_kib": 0,
        "tasks": [1, 2],
        "sync": "none",
        "task_program": env!("CARGO_BIN_EXE_fsmeter-mix-task"),
    });
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    json!({"dir": dir, "seed": 7, "workload": w}).to_string()
}

fn run(text: &str) -> Value {
    let mut s = Session::from_json(text).expect("valid job");
    let ctl = Control::new();
    s.run_phase("prepare", &ctl).unwrap();
    let r = s.run_phase("subruns", &ctl).unwrap();
    let v = serde_json::to_value(&r).unwrap();
    s.run_phase("cleanup", &ctl).unwrap();
    v
}

fn weights(names: &[&str]) -> Value {
    Value::Array(names.iter().map(|n| json!({"job": n, "hits": 10})).collect())
}

const ALL_FS: &[&str] = &[
    "disk_rr",
    "disk_rw",
    "disk_rd",
    "disk_wrt",
    "disk_cp",
    "sync_disk_rw",
    "sync_disk_wrt",
    "sync_disk_cp",
    "sync_disk_update",
    "disk_brr",
    "disk_brw",
    "disk_brd",
    "disk_bwrt",
    "disk_bcp",
    "disk_src",
    "creat_clo",
    "link_test",
    "dir_rtns_1",
    "fork_test",
    "exec_test",
    "shell_rtns_1",
    "pipe_cpy",
    "stream_pipe",
    "dgram_pipe",
    "fifo_test",
    "tcp_test",
    "udp_test",
    "signal_test",
    "shared_memory",
    "add_int",
    "sieve",
    "page_test",
    "brk_test",
];

#[test]
fn accounting_follows_reaim_units_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let v = run(&job(dir.path(), weights(ALL_FS), json!({})));
    let subs = v["extra"]["subruns"].as_array().unwrap();
    assert_eq!(subs.len(), 2);
    for s in subs {
        let tasks = s["tasks"].as_u64().unwrap();
        // 33 jobs of equal weight, 40 per task: 40/33 = 1.2 rounds to 1 each.
        assert_eq!(s["jobs_per_task"], 33);
        let jobs = &s["jobs"];
        for name in ALL_FS {
            assert_eq!(jobs[name]["runs"].as_u64(), Some(tasks), "{name} runs once per task");
        }
        let kib = 16u64 * 1024;
        let per = |name: &str, field: &str| jobs[name][field].as_u64().unwrap() / tasks;
        // Random read: fill the file then read it: n KiB written, n KiB read, n units.
        assert_eq!(
            (per("disk_rr", "bytes_written"), per("disk_rr", "bytes_read"), per("disk_rr", "units")),
            (kib, kib, 16)
        );
        assert_eq!((per("disk_rw", "bytes_written"), per("disk_rw", "bytes_read")), (2 * kib, 0));
        assert_eq!((per("disk_cp", "bytes_read"), per("disk_cp", "bytes_written")), (kib, kib));
        // The O_SYNC write and copy jobs halve the block count; the update job does not.
        assert_eq!((per("sync_disk_wrt", "units"), per("sync_disk_wrt", "bytes_written")), (8, kib / 2));
        assert_eq!((per("sync_disk_rw", "units"), per("sync_disk_rw", "bytes_written")), (8, kib));
        assert_eq!(per("sync_disk_cp", "bytes_read"), kib / 2);
        assert_eq!((per("sync_disk_update", "units"), per("sync_disk_update", "bytes_read")), (16, kib / 2));
        assert_eq!(per("disk_brd", "bytes_read"), kib);
        // Directory search: 57 stats + 43 create/unlink; creat_clo 1000; link_test 7 + 63 links.
        assert_eq!(per("disk_src", "units"), 100);
        assert_eq!(per("creat_clo", "units"), 1000);
        assert_eq!(per("link_test", "units"), 70);
        assert_eq!(per("dir_rtns_1", "units"), 10_000);
        assert_eq!(per("fork_test", "units"), 100);
        assert_eq!(per("exec_test", "units"), 5);
        assert_eq!(per("signal_test", "units"), 1000);
        // 99 messages with sizes from re-aim's table.
        assert_eq!(per("pipe_cpy", "units"), 100);
        assert!(per("pipe_cpy", "bytes_written") > 0);
        assert_eq!(jobs["disk_rr"]["class"], "disk");
        assert_eq!(jobs["fork_test"]["class"], "process");
        // JPM is re-aim's: jobs per task / real time x 60 x tasks.
        let real = s["real_time_s"].as_f64().unwrap();
        let jpm = s["jpm"].as_f64().unwrap();
        assert!((jpm - 33.0 / real * 60.0 * tasks as f64).abs() < 1e-6 * jpm);
    }
    assert_eq!(v["total"]["ops"], 33 * 3);
    // Nothing is left behind but the tree and shared file, which cleanup removed.
    assert!(!dir.path().join("mix").exists());
}

#[test]
fn no_task_starts_before_the_barrier_and_the_subrun_waits_for_the_last() {
    for mode in ["process", "fork", "thread"] {
        let dir = tempfile::tempdir().unwrap();
        let v = run(&job(
            dir.path(),
            weights(&["creat_clo", "disk_rr", "fork_test"]),
            json!({"tasks": [4], "task_mode": mode}),
        ));
        let s = &v["extra"]["subruns"][0];
        assert!(s["task_start_min_s"].as_f64().unwrap() >= 0.0, "{mode}: a task started before the release");
        // The subrun's time is the slowest task's.
        assert_eq!(s["real_time_s"].as_f64().unwrap(), s["task_time_max_s"].as_f64().unwrap(), "{mode}");
        assert_eq!(s["jobs"]["creat_clo"]["runs"], 4 * 13);
    }
}

#[test]
fn each_task_has_its_own_order_and_a_seed_repeats_it() {
    use fsmeter_engine::workload::mix::catalog::lookup;
    use fsmeter_engine::workload::mix::order::{per_task_counts, task_order, task_seed, Rng};
    let w: Vec<_> = ["disk_rr", "disk_wrt", "creat_clo", "add_int"].iter().map(|n| (lookup(n).unwrap(), 10)).collect();
    let counts = per_task_counts(&w, 40);
    let o = |t| task_order(&counts, &mut Rng::new(task_seed(42, 2, t)));
    assert_eq!(o(0), o(0));
    assert_ne!(o(0), o(1));
}

#[test]
fn the_modes_do_the_same_jobs() {
    let runs = |mode: &str| {
        let dir = tempfile::tempdir().unwrap();
        let v = run(&job(
            dir.path(),
            weights(&["disk_rr", "creat_clo", "pipe_cpy", "add_int"]),
            json!({"tasks": [2], "task_mode": mode}),
        ));
        let jobs = v["extra"]["subruns"][0]["jobs"].clone();
        jobs.as_object()
            .unwrap()
            .iter()
            .map(|(k, j)| (k.clone(), j["runs"].clone(), j["units"].clone(), j["bytes_read"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(runs("process"), runs("fork"));
    assert_eq!(runs("process"), runs("thread"));
}

#[test]
fn a_missing_task_program_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let e = Session::from_json(&job(
        dir.path(),
        weights(&["disk_rr"]),
        json!({"task_program": "/nonexistent/fsmeter-mix-task"}),
    ))
    .err()
    .expect("rejected")
    .to_string();
    assert!(e.contains("task_program") && e.contains("does not exist"), "{e}");
}

#[test]
fn bad_workfiles_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let err = |w: Value| Session::from_json(&job(dir.path(), w, json!({}))).err().expect("rejected").to_string();
    assert!(err(json!([{"job": "disk_zz", "hits": 1}])).contains("unknown job \"disk_zz\""));
    assert!(err(json!([{"job": "disk_aio_rr", "hits": 1}])).contains("not implemented"));
    assert!(err(json!([{"job": "disk_rr", "hits": 0}])).contains("hits must be > 0"));
    assert!(err(json!([])).contains("names no job"));
}

#[test]
fn a_failing_job_fails_the_subrun_with_its_name() {
    // exec_test's program must at least start (as in re-aim, its exit status does not
    // matter): a file without execute permission cannot.
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("not-a-program");
    std::fs::write(&prog, "plain text").unwrap();
    let text = job(dir.path(), weights(&["exec_test", "creat_clo"]), json!({"tasks": [2], "exec_path": prog}));
    let mut s = Session::from_json(&text).unwrap();
    let ctl = Control::new();
    s.run_phase("prepare", &ctl).unwrap();
    let e = s.run_phase("subruns", &ctl).expect_err("exec of a non-program fails").to_string();
    assert!(e.contains("mix job exec_test failed in task"), "{e}");
    // A program that runs and exits 1 is fine.
    let text = job(dir.path(), weights(&["exec_test"]), json!({"tasks": [1], "exec_path": "/bin/false"}));
    let mut s = Session::from_json(&text).unwrap();
    s.run_phase("prepare", &ctl).unwrap();
    s.run_phase("subruns", &ctl).unwrap();
}

#[test]
fn verify_checks_every_block_read_back_and_finds_a_damaged_one() {
    let disk = ["disk_rr", "disk_rd", "disk_cp", "disk_brd", "sync_disk_update"];
    for mode in ["process", "thread"] {
        let dir = tempfile::tempdir().unwrap();
        let v = run(&job(dir.path(), weights(&disk), json!({"verify": true, "task_mode": mode})));
        assert_eq!(v["counters"]["verify_mismatches"], 0, "{mode}: {}", v["extra"]["verify"]);
        // per task, 16 KiB files in 1 KiB blocks: disk_rr 16 + disk_rd 16 + disk_cp 16 + disk_brd 16 + sync_disk_update 8
        // (n/2 random reads of a file of n = file/2 blocks... counted from the run, not assumed): at least 64 per task.
        let checked = v["counters"]["verify_blocks_checked"].as_u64().unwrap();
        assert!(checked >= 64 * 3, "{mode}: {checked} blocks checked over 1 + 2 tasks");
        assert_eq!(v["extra"]["verify"]["algo"], "pattern");
    }
    // tmpa.common damaged at byte 5000 (block 4, byte 904): disk_cp and disk_brd read it, in every task.
    let dir = tempfile::tempdir().unwrap();
    let v = run(&job(dir.path(), weights(&["disk_brd"]), json!({"verify": true, "fault_common_byte": 5000})));
    let bad = v["counters"]["verify_mismatches"].as_u64().unwrap();
    let runs: u64 =
        v["extra"]["subruns"].as_array().unwrap().iter().map(|s| s["jobs"]["disk_brd"]["runs"].as_u64().unwrap()).sum();
    assert_eq!(bad, runs, "one bad block per disk_brd run (1 task, then 2 tasks): {}", v["extra"]["verify"]);
    assert_eq!(v["extra"]["verify"]["mismatches"].as_array().unwrap().len(), 3, "each task keeps its first bad block");
    let m = &v["extra"]["verify"]["mismatches"][0];
    assert_eq!((m["offset"].as_u64(), m["first_diff_offset"].as_u64()), (Some(4096), Some(5000)), "{m}");
    assert!(
        m["file"].as_str().unwrap().contains("tmpa.common") && m["file"].as_str().unwrap().contains("disk_brd"),
        "{m}"
    );
    // Without verify the same damage goes unseen, as in re-aim.
    let v = run(&job(dir.path(), weights(&["disk_brd"]), json!({"fault_common_byte": 5000})));
    assert!(v["counters"].get("verify_mismatches").is_none());
}
