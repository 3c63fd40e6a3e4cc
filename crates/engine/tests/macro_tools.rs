//! The macro family: child accounting (wait4 rusage, descendants included), a failing tool
//! with its stderr tail, the result checks, cleanup confined to the job directory.

use std::path::Path;

use fsmeter_engine::workload::macro_tools::run_child;
use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn session(dir: &Path, workload: Value) -> Result<Session, String> {
    let job = json!({"dir": dir, "interval_s": 0.05, "workload": workload});
    Session::from_json(&job.to_string()).map_err(|e| e.to_string())
}

fn argv(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A shell loop that burns CPU until the process has used `secs` of CPU time (user + sys).
fn burn(secs: f64) -> String {
    format!("python3 -c 'import time\nt = time.process_time()\nwhile time.process_time() - t < {secs}: pass'")
}

#[test]
fn wait4_counts_the_childs_cpu_and_its_descendants() {
    let dir = tempfile::tempdir().unwrap();
    let ctl = Control::new();
    // The CPU is burnt by a grandchild: wait4's rusage must include it (RUSAGE_BOTH of the child).
    let r = run_child(&argv(&["sh", "-c", &format!("{}; true", burn(0.3))]), dir.path(), &ctl, 500).unwrap();
    assert!(r.ok(), "{:?}", r);
    let cpu = r.user_s + r.sys_s;
    assert!(cpu >= 0.29, "user {} + sys {} should cover the grandchild's 0.3 s of CPU", r.user_s, r.sys_s);
    // One thread at a time: wall time cannot be shorter than the CPU time it used.
    assert!(r.real_s() + 0.02 >= cpu, "real {} < cpu {}", r.real_s(), cpu);
    // A sleeping child uses almost no CPU, but its wall time covers the sleep.
    let s = run_child(&argv(&["sleep", "0.2"]), dir.path(), &ctl, 500).unwrap();
    assert!(s.ok() && s.real_s() >= 0.2);
    assert!(s.user_s + s.sys_s < s.real_s());
}

#[test]
fn a_failing_tool_fails_the_phase_with_its_stderr_tail() {
    let dir = tempfile::tempdir().unwrap();
    let script = "head -c 5000 /dev/zero | tr '\\0' x >&2; echo >&2; echo the-last-words >&2; exit 3";
    let mut s = session(
        dir.path(),
        json!({"family": "macro", "stderr_tail_bytes": 200,
        "cp": {"argv": ["sh", "-c", script], "bytes": 1}}),
    )
    .unwrap();
    let err = s.run_phase("cp", &Control::new()).unwrap_err().to_string();
    assert!(err.contains("exit status 3"), "{err}");
    assert!(err.contains("the-last-words"), "{err}");
    assert!(err.len() < 600, "only the tail of stderr is kept: {err}");
    // A missing tool is an error naming it, not a panic.
    let mut s = session(dir.path(), json!({"family": "macro", "cp": {"argv": ["/no/such/tool"]}})).unwrap();
    let err = s.run_phase("cp", &Control::new()).unwrap_err().to_string();
    assert!(err.contains("/no/such/tool"), "{err}");
}

#[test]
fn phases_report_real_user_sys_and_check_their_results() {
    let dir = tempfile::tempdir().unwrap();
    let src_dir = tempfile::tempdir().unwrap();
    let src = src_dir.path().join("big.bin");
    std::fs::write(&src, vec![7u8; 1 << 20]).unwrap();
    let dst = dir.path().join("copy.bin");
    let tree = dir.path().join("tree");
    let wl = json!({"family": "macro", "source_cache": "cold",
        "cp": {"argv": ["cp", src, dst], "sources": [src], "bytes": 1 << 20, "files": 1, "check": dst},
        "untar": {"argv": ["sh", "-c", "mkdir -p tree/a/b && echo x > tree/a/b/f"], "bytes": 2, "files": 1,
                  "check": tree},
        "rm": {"argv": ["rm", "-rf", tree], "check": tree},
        "sync": ["sync", "-f", dir.path()],
        "cleanup": [dst, tree]});
    let mut s = session(dir.path(), wl).unwrap();
    let mut total = 0.0;
    for ph in ["cp", "untar", "rm"] {
        let r = serde_json::to_value(s.run_phase(ph, &Control::new()).unwrap()).unwrap();
        let x = &r["extra"];
        let real = x["real_s"].as_f64().unwrap();
        // real spans tool + sync: at least each of them.
        assert!(real >= x["tool"]["real_s"].as_f64().unwrap() && real >= x["sync"]["real_s"].as_f64().unwrap());
        let user = x["user_s"].as_f64().unwrap();
        let tool_user = x["tool"]["user_s"].as_f64().unwrap();
        let sync_user = x["sync"]["user_s"].as_f64().unwrap();
        assert!((user - tool_user - sync_user).abs() < 1e-9);
        assert_eq!(r["ops"][ph]["count"], 1);
        assert_eq!(r["ops"]["sync"]["count"], 1);
        total += real;
        assert!((x["session_real_s"].as_f64().unwrap() - total).abs() < 1e-9);
    }
    assert_eq!(std::fs::metadata(&dst).unwrap().len(), 1 << 20);
    assert!(!tree.exists());
    s.run_phase("cleanup", &Control::new()).unwrap();
    assert!(!dst.exists());
    assert!(src.exists(), "cleanup never touches the source");

    // A "cp" that writes a short copy is caught.
    let mut s = session(
        dir.path(),
        json!({"family": "macro",
        "cp": {"argv": ["sh", "-c", format!("head -c 100 {} > {}", src.display(), dst.display())],
               "sources": [src], "check": dst}}),
    )
    .unwrap();
    let err = s.run_phase("cp", &Control::new()).unwrap_err().to_string();
    assert!(err.contains("has 100 bytes"), "{err}");
    // untar that extracts nothing is caught too.
    let mut s = session(
        dir.path(),
        json!({"family": "macro",
        "untar": {"argv": ["true"], "check": dir.path().join("nothing")}}),
    )
    .unwrap();
    assert!(s.run_phase("untar", &Control::new()).unwrap_err().to_string().contains("missing"));
}

#[test]
fn cleanup_outside_the_job_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let err = session(dir.path(), json!({"family": "macro", "cleanup": ["/etc/passwd"]})).err().unwrap();
    assert!(err.starts_with("cleanup:"), "{err}");
    let sneaky = dir.path().join("..").join("x");
    assert!(session(dir.path(), json!({"family": "macro", "cleanup": [sneaky]})).is_err());
    let err = session(dir.path(), json!({"family": "macro", "cp": {"argv": []}})).err().unwrap();
    assert!(err.starts_with("cp.argv:"), "{err}");
}

#[test]
fn a_stop_request_ends_the_child_and_marks_the_phase_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), json!({"family": "macro", "cp": {"argv": ["sleep", "30"]}})).unwrap();
    let ctl = std::sync::Arc::new(Control::new());
    let c2 = ctl.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        c2.request_stop();
    });
    let t0 = std::time::Instant::now();
    let r = s.run_phase("cp", &ctl).unwrap();
    stopper.join().unwrap();
    assert!(r.interrupted);
    // `sleep 30` left to itself lasts 30 s: ending sooner means it was stopped (how much sooner
    // after the request depends on the machine's load, so that is not asserted).
    assert!(t0.elapsed().as_secs_f64() < 30.0, "the child was not stopped");
}
