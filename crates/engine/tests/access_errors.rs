//! fio's continue_on_error in the engine: a failed request of an errno the job goes on after is
//! counted (per direction and errno) and the thread goes on; any other stops the phase naming the
//! job, the request's offset and its file. The errors are made on purpose and deterministically:
//! O_DIRECT reads of 100 bytes, which no filesystem takes (EINVAL), with allow_unaligned_direct.

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

const EINVAL: i32 = 22;

fn group(dir: &std::path::Path, continue_on: Value) -> Session {
    let unaligned = json!({"file_prefix": "u", "file_size": 1 << 20, "total_bytes": 100 * 50, "alignment": 4096,
        "direct": true, "allow_unaligned_direct": true, "continue_on": continue_on,
        "entries": [{"size": 100, "weight": 100, "read_pct": 100, "random_pct": 0}]});
    let fine = json!({"file_prefix": "f", "file_size": 1 << 20, "total_bytes": 1 << 20, "alignment": 4096,
        "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 0}]});
    let job = json!({"dir": dir, "interval_s": 0.05, "workload": {"family": "access_group", "jobs": [
        {"name": "bad reads", "threads": 1, "workload": unaligned},
        {"name": "good reads", "threads": 1, "workload": fine},
    ]}});
    Session::from_json(&job.to_string()).expect("valid job")
}

/// Whether this filesystem takes O_DIRECT at all (tmpfs before Linux 6.6 does not): else nothing to test.
fn direct_ok(dir: &std::path::Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let p = dir.join("probe");
    std::fs::write(&p, [0u8; 4096]).unwrap();
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&p).is_ok()
}

#[test]
fn errors_the_job_goes_on_after_are_counted_and_the_job_does_its_requests() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_ok(dir.path()) {
        eprintln!("skipped: no O_DIRECT under {}", dir.path().display());
        return;
    }
    let mut s = group(dir.path(), json!({"read": [EINVAL], "dump": true}));
    s.run_phase("prepare", &Control::new()).expect("prepare");
    let r = serde_json::to_value(s.run_phase("run", &Control::new()).expect("the run goes on")).unwrap();
    let bad = &r["jobs"]["bad reads"];
    let errs = &bad["extra"]["errors"];
    // 50 requests of 100 bytes, each failed with EINVAL and gone on after: none measured, all counted.
    assert_eq!(errs["total"], 50);
    assert_eq!(errs["by_errno"]["read"][EINVAL.to_string()], 50);
    assert_eq!(errs["first_error"], EINVAL);
    assert_eq!(errs["first"]["offset"], 0);
    assert_eq!(errs["dumped"].as_array().map(|a| a.len()), Some(16));
    assert_eq!(errs["not_dumped"], 34);
    assert_eq!(bad["counters"]["errors"], 50);
    assert_eq!(bad["ops"]["read"]["count"].as_u64().unwrap_or(0), 0);
    // The job beside it is not touched.
    assert_eq!(r["jobs"]["good reads"]["ops"]["read"]["count"], 256);
}

#[test]
fn an_error_the_job_does_not_go_on_after_stops_the_phase_naming_the_job_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_ok(dir.path()) {
        eprintln!("skipped: no O_DIRECT under {}", dir.path().display());
        return;
    }
    // EIO is listed, EINVAL is not: the first read stops the run.
    let mut s = group(dir.path(), json!({"read": [5]}));
    s.run_phase("prepare", &Control::new()).expect("prepare");
    let e = s.run_phase("run", &Control::new()).expect_err("EINVAL stops the run").to_string();
    assert!(e.starts_with("job bad reads: read of 100 bytes at offset 0 of "), "{e}");
    assert!(e.contains("u.0") && e.contains("os error 22"), "{e}");
}
