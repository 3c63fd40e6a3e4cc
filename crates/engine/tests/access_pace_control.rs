//! Pacing (fio's rate, rate_iops, rate_process, thinktime) and the run control of a group's jobs
//! (startdelay, wait_for, exitall): through the Session API on a temp dir. No timing thresholds:
//! each check is a bound the schedule itself sets (a paced thread can never be ahead of it), or an
//! order of events.

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

const KIB4: u64 = 4096;

fn lone(dir: &std::path::Path, backend: &str, threads: usize, workload: Value) -> Session {
    let job = json!({"dir": dir, "threads": threads, "seed": 5, "backend": backend, "interval_s": 0.05,
                     "workload": workload});
    Session::from_json(&job.to_string()).expect("valid job")
}

fn group(dir: &std::path::Path, jobs: Value) -> Session {
    let job = json!({"dir": dir, "interval_s": 0.05, "workload": {"family": "access_group", "jobs": jobs}});
    Session::from_json(&job.to_string()).expect("valid job")
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

fn reads(prefix: &str, extra: Value) -> Value {
    let mut w = json!({"family": "access", "file_prefix": prefix, "file_size": 1u64 << 20, "alignment": KIB4,
                       "entries": [{"size": KIB4, "weight": 100, "read_pct": 100, "random_pct": 0}]});
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    w
}

fn member(w: &Value) -> Value {
    let mut w = w.clone();
    w.as_object_mut().unwrap().remove("family");
    w
}

fn count(r: &Value, kind: &str) -> u64 {
    r["ops"][kind]["count"].as_u64().unwrap_or(0)
}

/// rate_iops = 200 for 40 requests: request k is due k / 200 s after the thread starts, so the
/// last (k = 39) cannot start before 195 ms: the phase's elapsed time is at least that, whatever
/// the machine. And the work is exactly the 40 requests asked for.
#[test]
fn an_iops_rate_never_runs_ahead_of_its_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = lone(
        dir.path(),
        "null",
        1,
        reads(
            "p",
            json!({"total_bytes": 40 * KIB4, "duration_s": null, "warmup_s": 0.0,
                          "pace": {"rate_iops": [200, 0]}}),
        ),
    );
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert_eq!(count(&r, "read"), 40);
    let elapsed = r["elapsed_s"].as_f64().unwrap();
    assert!(elapsed >= 39.0 / 200.0, "elapsed {elapsed} s: ahead of the schedule");
    assert_eq!(r["extra"]["pace"]["rate_iops"], json!([200, 0]));
}

/// With several requests in flight, requests drawn before the byte quota was reached and waiting
/// for their time still go: the work is exactly what was asked for (fio's fixed-rate example).
#[test]
fn a_paced_queue_does_all_its_work() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = lone(
        dir.path(),
        "null",
        1,
        reads(
            "qd",
            json!({"total_bytes": 20 * KIB4, "duration_s": null, "warmup_s": 0.0, "queue_depth": 8,
                           "pace": {"rate_iops": [1000, 0]}}),
        ),
    );
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert_eq!(count(&r, "read"), 20);
    assert!(r["elapsed_s"].as_f64().unwrap() >= 0.019);
}

/// A byte rate, time-based: in 0.5 s at 400 KiB/s of 4 KiB requests (100 IOPS) the schedule holds
/// requests at 0, 10, ..., 490 ms: at most 50 (one more would be due at the deadline). Every thread
/// keeps the rate on its own (fio: every clone), so two threads do at most 100.
#[test]
fn a_byte_rate_caps_each_thread_at_its_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = lone(
        dir.path(),
        "null",
        2,
        reads("b", json!({"duration_s": 0.5, "warmup_s": 0.0, "pace": {"rate_bytes_per_s": [400 * 1024, 0]}})),
    );
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let n = count(&r, "read");
    assert!(n <= 2 * 50, "{n} reads: more than the schedule allows");
    // Late requests go at once (the thread catches up), so a paced thread does not fall far behind:
    // a generous floor that only a broken schedule misses.
    assert!(n >= 2 * 25, "{n} reads: far below the schedule");
}

/// rate_process = poisson does the work asked for (the shape of its gaps is checked on the
/// schedule itself, in pace.rs: exponential, mean 1 / IOPS); linear at 1000 IOPS cannot finish 120
/// requests in less than 119 ms.
#[test]
fn poisson_and_linear_pacing_do_the_work_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    for process in ["poisson", "linear"] {
        let pace = json!({"rate_iops": [1000, 0], "rate_process": process});
        let mut s = lone(
            dir.path(),
            "null",
            1,
            reads("q", json!({"total_bytes": 120 * KIB4, "duration_s": null, "warmup_s": 0.0, "pace": pace})),
        );
        run(&mut s, "prepare");
        let r = run(&mut s, "run");
        assert_eq!(count(&r, "read"), 120, "{process}");
        assert_eq!(r["extra"]["pace"]["rate_process"], process);
        if process == "linear" {
            let elapsed = r["elapsed_s"].as_f64().unwrap();
            assert!(elapsed >= 0.119, "linear: {elapsed} s for 120 requests at 1000 IOPS");
        }
    }
}

/// wait_for: the second job starts when every thread of the first is done; startdelay: the third
/// job starts no earlier than its delay.
#[test]
fn wait_for_and_startdelay_order_the_jobs_of_a_group() {
    let dir = tempfile::tempdir().unwrap();
    let a = reads("a", json!({"total_bytes": 1u64 << 20, "duration_s": null, "warmup_s": 0.0}));
    let b = reads("b", json!({"total_bytes": 1u64 << 20, "duration_s": null, "warmup_s": 0.0}));
    let c = reads("c", json!({"total_bytes": 1u64 << 20, "duration_s": null, "warmup_s": 0.0}));
    let mut s = group(
        dir.path(),
        json!([
            {"name": "first", "threads": 2, "workload": member(&a)},
            {"name": "second", "threads": 1, "workload": member(&b), "wait_for": "first"},
            {"name": "late", "threads": 1, "workload": member(&c), "start_delay_s": 0.2},
        ]),
    );
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let j = &r["jobs"];
    let f = |n: &str, k: &str| j[n][k].as_f64().unwrap();
    assert!(f("second", "start_s") >= f("first", "end_s"), "{}", j);
    assert!(f("late", "start_s") >= 0.2 - 1e-3, "{}", j);
    // Each still did its own work (1 MiB of 4 KiB reads; the first job's two threads share it).
    for n in ["first", "second", "late"] {
        assert_eq!(count(&j[n], "read"), 256, "{n}");
    }
}

/// A wait for a job that is not earlier in the group is refused, naming the field.
#[test]
fn wait_for_must_name_an_earlier_job() {
    let dir = tempfile::tempdir().unwrap();
    let a = reads("a", json!({"total_bytes": KIB4, "duration_s": null}));
    let job = json!({"dir": dir.path(), "workload": {"family": "access_group", "jobs": [
        {"name": "x", "workload": member(&a), "wait_for": "y"},
        {"name": "y", "workload": member(&a)},
    ]}});
    let err = Session::from_json(&job.to_string()).err().expect("rejected").to_string();
    assert!(err.contains("jobs[0].wait_for") && err.contains("earlier job"), "{err}");
}

/// exitall (exit = group): when the short job's thread ends, the long, time-based job of its
/// reporting group stops before its 30 s; a job of another reporting group runs on to its end.
#[test]
fn exitall_stops_the_jobs_of_the_reporting_group() {
    let dir = tempfile::tempdir().unwrap();
    let short = reads("s", json!({"total_bytes": 64 * KIB4, "duration_s": null, "warmup_s": 0.0}));
    let long = reads("l", json!({"duration_s": 30.0, "warmup_s": 0.0}));
    let other = reads("o", json!({"total_bytes": 128 * KIB4, "duration_s": null, "warmup_s": 0.0}));
    let mut s = group(
        dir.path(),
        json!([
            {"name": "short", "threads": 1, "backend": "null", "workload": member(&short), "exit": "group"},
            {"name": "long", "threads": 2, "backend": "null", "workload": member(&long), "exit": "group"},
            {"name": "other", "threads": 1, "workload": member(&other), "report_group": 1,
             "wait_for": "short"},
        ]),
    );
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let j = &r["jobs"];
    assert!(j["long"]["elapsed_s"].as_f64().unwrap() < 30.0, "{}", j["long"]);
    assert!(!r["interrupted"].as_bool().unwrap());
    // The job of the other reporting group was not stopped: all its bytes.
    assert_eq!(count(&j["other"], "read"), 128);
    assert_eq!(count(&j["short"], "read"), 64);
}

/// exit = all stops every job, even one still waiting to start (it then does nothing); exit =
/// stonewall stops only the jobs that have started.
#[test]
fn exit_all_stops_waiting_jobs_and_stonewall_spares_them() {
    let dir = tempfile::tempdir().unwrap();
    let short = reads("s", json!({"total_bytes": 16 * KIB4, "duration_s": null, "warmup_s": 0.0}));
    let long = reads("l", json!({"duration_s": 30.0, "warmup_s": 0.0}));
    let after = reads("w", json!({"total_bytes": 32 * KIB4, "duration_s": null, "warmup_s": 0.0}));
    for (exit, after_reads) in [("all", 0), ("stonewall", 32)] {
        let mut s = group(
            dir.path(),
            json!([
                {"name": "short", "threads": 1, "backend": "null", "workload": member(&short), "exit": exit},
                {"name": "long", "threads": 1, "backend": "null", "workload": member(&long), "report_group": 1},
                {"name": "after", "threads": 1, "workload": member(&after), "report_group": 2,
                 "wait_for": "long"},
            ]),
        );
        run(&mut s, "prepare");
        let r = run(&mut s, "run");
        let j = &r["jobs"];
        assert!(j["long"]["elapsed_s"].as_f64().unwrap() < 30.0, "{exit}: {}", j["long"]);
        assert_eq!(count(&j["after"], "read"), after_reads, "{exit}");
    }
}

/// fio's flow: a job of weight 1 beside one of weight 8 sharing a flow id. The light job does 200
/// requests and then (exitall) stops the heavy, time-based one. The light job passed each request
/// only while its share of the flow's count was at most 1/9, so by its 200th the heavy job had
/// passed at least 8 x 199 (the flow counts from 1): without the flow, two jobs issuing as fast as
/// they can on the null backend would be level.
#[test]
fn flow_weights_keep_the_ratio_of_the_jobs_requests() {
    let dir = tempfile::tempdir().unwrap();
    let light = reads(
        "fl",
        json!({"total_bytes": 200 * KIB4, "duration_s": null, "warmup_s": 0.0,
                                   "pace": {"flow": 1, "flow_id": 3}}),
    );
    let heavy = reads("fh", json!({"duration_s": 30.0, "warmup_s": 0.0, "pace": {"flow": 8, "flow_id": 3}}));
    let mut s = group(
        dir.path(),
        json!([
            {"name": "light", "backend": "null", "workload": member(&light), "exit": "group"},
            {"name": "heavy", "backend": "null", "workload": member(&heavy)},
        ]),
    );
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let j = &r["jobs"];
    assert_eq!(count(&j["light"], "read"), 200);
    let heavy_reads = count(&j["heavy"], "read");
    assert!(heavy_reads >= 8 * 199 - 1, "heavy did {heavy_reads} reads beside the light job's 200");
    assert!(j["heavy"]["elapsed_s"].as_f64().unwrap() < 30.0);
}

/// fio's t0011: a flow of weight 1 paced at 1000 IOPS beside one of weight 8, for 1 s. The rate
/// bounds the light job (never ahead of its schedule: at most 1000 in the second, and the first at
/// once), the flow the heavy one (never above 8 of 9 of the flow's count, which starts at 1 and
/// holds the light job's last pass, of a request due after the end and never issued; a job not
/// ahead passes one more: at most 8 x (light + 2) + 1); fio's
/// own criterion asks for a ratio between 6 and 10 (fio 3.33 here, 3 s: 3,001 and 25,232). The
/// light job keeps its place in the flow to the end of the phase: leaving it a request early would
/// let the heavy one run unbounded for that time.
#[test]
fn a_flow_weight_and_a_rate_in_one_job_both_hold() {
    let dir = tempfile::tempdir().unwrap();
    let light = reads(
        "fl",
        json!({"duration_s": 1.0, "warmup_s": 0.0, "pace": {"flow": 1, "flow_id": 1, "rate_iops": [1000, 0]}}),
    );
    let heavy = reads("fh", json!({"duration_s": 1.0, "warmup_s": 0.0, "pace": {"flow": 8, "flow_id": 1}}));
    let mut s = group(
        dir.path(),
        json!([
            {"name": "light", "backend": "null", "workload": member(&light)},
            {"name": "heavy", "backend": "null", "workload": member(&heavy)},
        ]),
    );
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let j = &r["jobs"];
    let (light, heavy) = (count(&j["light"], "read"), count(&j["heavy"], "read"));
    assert!(light <= 1001, "the 1000 IOPS job did {light} requests in 1 s");
    assert!(heavy <= 8 * (light + 2) + 1, "the weight-8 job did {heavy} beside {light}");
    let ratio = heavy as f64 / light as f64;
    assert!((6.0..=10.0).contains(&ratio), "ratio {ratio} ({heavy} / {light}), fio's criterion 6 to 10");
}

/// fio's steadystate: a job paced at 2000 IOPS is steady (each 50 ms sample ~100 requests), so
/// with iops:50% over 0.2 s of samples it stops long before its 30 s; the report says so.
#[test]
fn a_steady_job_stops_before_its_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let w = reads(
        "ss",
        json!({"duration_s": 30.0, "warmup_s": 0.0, "pace": {"rate_iops": [2000, 0]},
                              "steadystate": {"criterion": "iops", "limit": 50.0, "pct": true, "dur_s": 0.2,
                                              "interval_s": 0.05}}),
    );
    let mut s = lone(dir.path(), "null", 2, w);
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert!(r["elapsed_s"].as_f64().unwrap() < 30.0);
    assert_eq!(r["counters"]["steadystate_attained"], 2, "{}", r["counters"]); // each thread, its own
    assert_eq!(r["counters"]["steadystate_units"], 2);
    // With group (group_reporting) the two threads are one unit.
    let mut g = reads(
        "sg",
        json!({"duration_s": 30.0, "warmup_s": 0.0, "pace": {"rate_iops": [2000, 0]},
                                   "steadystate": {"criterion": "iops_slope", "limit": 1e9, "dur_s": 0.2,
                                                   "interval_s": 0.05, "group": true}}),
    );
    g["file_prefix"] = json!("sg");
    let mut s = lone(dir.path(), "null", 2, g);
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert_eq!(r["counters"]["steadystate_units"], 1);
    assert_eq!(r["counters"]["steadystate_attained"], 1);
}

/// A window shorter than two samples is refused, naming the field.
#[test]
fn a_steadystate_window_needs_two_samples() {
    let dir = tempfile::tempdir().unwrap();
    let job = json!({"dir": dir.path(), "backend": "null", "workload":
        reads("x", json!({"duration_s": 1.0, "steadystate": {"criterion": "bw", "limit": 1.0, "dur_s": 1.0}}))});
    let err = Session::from_json(&job.to_string()).err().expect("rejected").to_string();
    assert!(err.contains("steadystate.dur_s"), "{err}");
}
