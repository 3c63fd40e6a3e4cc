//! End-to-end tests of the replay (dbench) workload through the Session API on a temp dir.

use std::path::Path;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn job(dir: &Path, threads: usize, workload: Value) -> String {
    json!({"dir": dir, "threads": threads, "interval_s": 0.05, "workload": workload}).to_string()
}

fn session(dir: &Path, threads: usize, workload: Value) -> Session {
    Session::from_json(&job(dir, threads, workload)).expect("valid job")
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

fn loadfile(dir: &Path, text: &str) -> std::path::PathBuf {
    let p = dir.join("load.txt");
    std::fs::write(&p, text).unwrap();
    p
}

fn parse_error(text: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let lf = loadfile(tmp.path(), text);
    let work = tmp.path().join("w");
    std::fs::create_dir(&work).unwrap();
    match Session::from_json(&job(&work, 1, json!({"family": "replay", "loadfile": lf, "passes": 1}))) {
        Ok(_) => panic!("{text:?} parsed"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn malformed_lines_are_errors_naming_the_file_and_line() {
    let good = "Deltree \"\\clients\\client1\" NT_STATUS_OK\n# a comment\n";
    for (bad, what) in [
        ("ReadX 5 0 NT_STATUS_OK\n", "needs 4 field(s)"),
        ("ReadX 5 zero 10 10 NT_STATUS_OK\n", "offset \"zero\" is not a number"),
        ("Frobnicate 1 NT_STATUS_OK\n", "unknown operation \"Frobnicate\""),
        ("Close 5 OK\n", "expected status"),
        ("Unlink clients 0x6 NT_STATUS_OK\n", "not a quoted path"),
        ("WriteX 5 -1 10 10 NT_STATUS_OK\n", "out of range"),
    ] {
        let msg = parse_error(&format!("{good}{bad}"));
        assert!(msg.contains("load.txt line 3:"), "{bad:?} gave {msg:?}");
        assert!(msg.contains(what), "{bad:?} gave {msg:?}");
        assert!(msg.starts_with("loadfile: "), "{msg}");
    }
    assert!(parse_error("# nothing\n").contains("holds no operations"));
}

#[test]
fn missing_loadfile_says_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let e = Session::from_json(&job(
        tmp.path(),
        1,
        json!({"family": "replay", "loadfile": "/nonexistent/client.txt", "passes": 1}),
    ))
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("install Debian package dbench or give loadfile=PATH"), "{e}");
}

const SMALL: &str = r#"Deltree "\clients\client1" NT_STATUS_OK
Mkdir "\clients" NT_STATUS_OK
NTCreateX "\clients\client1\dir" 0x1 0x2 100 NT_STATUS_OK
Close 100 NT_STATUS_OK
NTCreateX "\clients\client1\dir\a.txt" 0x40 0x5 7 NT_STATUS_OK
WriteX 7 0 65536 65536 NT_STATUS_OK
WriteX 7 65536 1000 1000 NT_STATUS_OK
ReadX 7 0 4096 4096 NT_STATUS_OK
ReadX 7 60000 8192 6536 NT_STATUS_OK
QUERY_FILE_INFORMATION 7 1004 NT_STATUS_OK
SET_FILE_INFORMATION 7 1004 NT_STATUS_OK
LockX 7 10 1 NT_STATUS_OK
UnlockX 7 10 1 NT_STATUS_OK
Flush 7 NT_STATUS_OK
Close 7 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\dir\a.txt" 1004 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\dir\nothere" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
NTCreateX "\clients\client1\dir\nothere" 0x40 0x1 8 NT_STATUS_OBJECT_NAME_NOT_FOUND
QUERY_FS_INFORMATION 1 NT_STATUS_OK
FIND_FIRST "\clients\client1\dir\*" 260 1366 1 NT_STATUS_OK
Rename "\clients\client1\dir\a.txt" "\clients\client1\dir\b.txt" NT_STATUS_OK
Unlink "\clients\client1\dir\a.txt" 0x6 NT_STATUS_OBJECT_NAME_NOT_FOUND
NTCreateX "\clients\client1\dir\sub" 0x1 0x2 9 NT_STATUS_OK
Close 9 NT_STATUS_OK
NTCreateX "\clients\client1\dir\sub\c.txt" 0x40 0x2 10 NT_STATUS_OK
Close 10 NT_STATUS_OK
"#;

#[test]
fn small_load_file_replays_with_exact_counts_per_client() {
    let tmp = tempfile::tempdir().unwrap();
    let lf = loadfile(tmp.path(), SMALL);
    let work = tmp.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let passes = 3u64;
    let clients = 2u64;
    let mut s = session(&work, clients as usize, json!({"family": "replay", "loadfile": lf, "passes": passes}));
    assert_eq!(s.phases(), ["setup", "run", "verify", "cleanup"]);
    run(&mut s, "setup");
    assert!(work.join("clients/client0").is_dir() && work.join("clients/client1").is_dir());
    let r = run(&mut s, "run");
    let n = passes * clients;
    let count = |k: &str| r["ops"][k]["count"].as_u64().unwrap_or(0);
    for (k, per_pass) in [
        ("Deltree", 1),
        ("Mkdir", 1),
        ("NTCreateX", 5),
        ("Close", 4),
        ("WriteX", 2),
        ("ReadX", 2),
        ("Qfileinfo", 1),
        ("Sfileinfo", 1),
        ("LockX", 1),
        ("UnlockX", 1),
        ("Flush", 1),
        ("Qpathinfo", 2),
        ("Qfsinfo", 1),
        ("Find", 1),
        ("Rename", 1),
        ("Unlink", 1),
    ] {
        assert_eq!(count(k), per_pass * n, "{k}");
    }
    // dbench counts the requested sizes of ReadX and WriteX (the second read
    // returns only 6536 bytes, as the load file says), nothing else.
    assert_eq!(r["ops"]["WriteX"]["bytes"], json!((65536 + 1000) * n));
    assert_eq!(r["ops"]["ReadX"]["bytes"], json!((4096 + 8192) * n));
    assert_eq!(r["total"]["bytes"], json!((65536 + 1000 + 4096 + 8192) * n));
    assert_eq!(r["counters"]["passes_completed"], json!(n));
    assert_eq!(r["counters"]["mismatches"], json!(0), "{:?}", r["warnings"]);
    // Each client works under its own name; "client1" in the file is a placeholder.
    for c in ["client0", "client1"] {
        let d = work.join("clients").join(c).join("dir");
        assert_eq!(std::fs::metadata(d.join("b.txt")).unwrap().len(), 66536);
        assert!(!d.join("a.txt").exists());
        assert!(d.join("sub/c.txt").exists());
    }
    let c = run(&mut s, "cleanup");
    assert_eq!(c["counters"]["client_dirs_removed"], json!(2));
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
}

#[test]
fn deltree_removes_files_recursively_and_keeps_directories_as_dbench() {
    let tmp = tempfile::tempdir().unwrap();
    let lf = loadfile(tmp.path(), "Deltree \"\\clients\\client1\" NT_STATUS_OK\n");
    let work = tmp.path().join("w");
    let base = work.join("clients/client0");
    std::fs::create_dir_all(base.join("x/y")).unwrap();
    for f in ["f1", "x/f2", "x/y/f3"] {
        std::fs::write(base.join(f), b"data").unwrap();
    }
    let mut s = session(&work, 1, json!({"family": "replay", "loadfile": lf, "passes": 1}));
    let r = run(&mut s, "run");
    assert_eq!(r["ops"]["Deltree"]["count"], json!(1));
    assert!(!base.join("f1").exists() && !base.join("x/f2").exists() && !base.join("x/y/f3").exists());
    // dbench 4.0's nb_deltree unlinks files only; the directories stay.
    assert!(base.join("x/y").is_dir());
}

#[test]
fn rename_unlink_rmdir_mismatch_fails_the_run_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("w");
    std::fs::create_dir(&work).unwrap();
    for (text, needle) in [
        ("Rename \"\\clients\\client1\\none\" \"\\clients\\client1\\b\" NT_STATUS_OK\n", "failed, but the load file expects NT_STATUS_OK"),
        ("Unlink \"\\clients\\client1\\none\" 0x6 NT_STATUS_OK\n", "failed, but the load file expects NT_STATUS_OK"),
        ("Mkdir \"\\clients\\client1\\d\" NT_STATUS_OK\nRmdir \"\\clients\\client1\\d\" NT_STATUS_OBJECT_NAME_NOT_FOUND\n",
         "succeeded, but the load file expects NT_STATUS_OBJECT_NAME_NOT_FOUND"),
    ] {
        let lf = loadfile(tmp.path(), &format!("# x\n{text}"));
        let mut s = session(&work, 1, json!({"family": "replay", "loadfile": lf, "passes": 1}));
        run(&mut s, "setup");
        let line = text.lines().count() + 1;
        let e = s.run_phase("run", &Control::new()).expect_err("mismatch is fatal").to_string();
        assert!(e.contains(&format!("load.txt line {line}: client0")), "{e}");
        assert!(e.contains(needle), "{e}");
        run(&mut s, "cleanup");
    }
}

#[test]
fn open_mismatch_is_counted_and_reported_not_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let lf = loadfile(
        tmp.path(),
        "NTCreateX \"\\clients\\client1\\missing\" 0x40 0x1 5 NT_STATUS_OK\n\
         QUERY_PATH_INFORMATION \"\\clients\\client1\" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND\n",
    );
    let work = tmp.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let mut s = session(&work, 1, json!({"family": "replay", "loadfile": lf, "passes": 2}));
    run(&mut s, "setup");
    let r = run(&mut s, "run");
    assert_eq!(r["counters"]["mismatch.NTCreateX"], json!(2));
    assert_eq!(r["counters"]["mismatch.Qpathinfo"], json!(2));
    let w = r["warnings"].as_array().unwrap();
    assert!(
        w.iter()
            .any(|w| w.as_str().unwrap().contains("NTCreateX: 2 result(s)") && w.as_str().unwrap().contains("line 1")),
        "{w:?}"
    );
}

#[test]
fn unknown_handle_is_fatal_as_in_dbench() {
    let tmp = tempfile::tempdir().unwrap();
    let lf = loadfile(tmp.path(), "ReadX 77 0 10 10 NT_STATUS_OK\n");
    let work = tmp.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let mut s = session(&work, 1, json!({"family": "replay", "loadfile": lf, "passes": 1}));
    let e = s.run_phase("run", &Control::new()).err().unwrap().to_string();
    assert!(e.contains("line 1") && e.contains("handle 77"), "{e}");
}

#[test]
fn timed_run_loops_and_warmup_defaults_to_a_fifth_in_whole_seconds() {
    let tmp = tempfile::tempdir().unwrap();
    let lf = loadfile(tmp.path(), SMALL);
    let work = tmp.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let mut s = session(&work, 2, json!({"family": "replay", "loadfile": lf, "duration_s": 0.3}));
    run(&mut s, "setup");
    let r = run(&mut s, "run");
    assert_eq!(r["warmup_s"], json!(0.0)); // 0.3 s / 5 in whole seconds
    assert!(r["counters"]["passes_completed"].as_u64().unwrap() > 2);
    run(&mut s, "cleanup");
}

#[test]
fn verify_checks_reads_and_rereads_what_each_client_kept() {
    use std::os::unix::fs::FileExt;

    let tmp = tempfile::tempdir().unwrap();
    let lf = loadfile(tmp.path(), SMALL);
    let work = tmp.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let mut s = session(&work, 2, json!({"family": "replay", "loadfile": lf, "passes": 3, "verify": true}));
    run(&mut s, "setup");
    let r = run(&mut s, "run");
    assert_eq!(r["counters"]["verify_mismatches"], 0, "{}", r["extra"]["verify"]);
    // two reads per pass, each meeting one written range: 2 x 3 passes x 2 clients
    assert_eq!(r["counters"]["verify_blocks_checked"], 12);
    assert_eq!(r["extra"]["verify"]["algo"], "pattern");
    assert_eq!(r["counters"]["mismatches"], 0, "{:?}", r["warnings"]);
    // The data is the pattern, not dbench's zeros, and the rename kept its ranges: b.txt is checked.
    let b = work.join("clients/client1/dir/b.txt");
    let data = std::fs::read(&b).unwrap();
    assert_eq!(data.len(), 66536);
    assert!(data.iter().filter(|&&x| x == 0).count() < 1000);
    let v = run(&mut s, "verify");
    assert_eq!(v["counters"]["verify_mismatches"], 0, "{}", v["extra"]["verify"]);
    assert_eq!(
        (v["counters"]["files_checked"].as_u64(), v["counters"]["bytes_checked"].as_u64()),
        (Some(2), Some(2 * 66536))
    );
    // A byte damaged behind the engine's back is found at its offset, in that client's file only.
    let f = std::fs::OpenOptions::new().write(true).open(&b).unwrap();
    f.write_at(&[data[12345] ^ 0x40], 12345).unwrap();
    let v = run(&mut s, "verify");
    assert_eq!(v["counters"]["verify_mismatches"], 1);
    let m = &v["extra"]["verify"]["mismatches"][0];
    assert_eq!(m["first_diff_offset"], 12345);
    assert_eq!(m["kind"], "bad_data");
    assert!(m["file"].as_str().unwrap().ends_with("clients/client1/dir/b.txt"), "{m}");
    // Cut short: the missing bytes are reported.
    f.set_len(50000).unwrap();
    let v = run(&mut s, "verify");
    let kinds: Vec<&str> =
        v["extra"]["verify"]["mismatches"].as_array().unwrap().iter().map(|m| m["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"short"), "{kinds:?}");
    run(&mut s, "cleanup");
}

#[test]
fn symbolic_links_planted_in_the_directory_do_not_lead_a_client_out() {
    // Outside the job's directory: a sentinel tree that a client must never touch.
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(outside.join("sub")).unwrap();
    std::fs::write(outside.join("keep.txt"), b"precious").unwrap();
    std::fs::write(outside.join("sub").join("keep2.txt"), b"precious").unwrap();
    let work = tmp.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let lf = loadfile(
        tmp.path(),
        r#"Deltree "\clients\client1\tree" NT_STATUS_OK
Deltree "\clients\client1\link" NT_STATUS_OK
NTCreateX "\clients\client1\link\planted.txt" 0x40 0x5 7 NT_STATUS_OK
Mkdir "\clients\client1\link\planted_dir" NT_STATUS_OK
Unlink "\clients\client1\link\keep.txt" 0x6 NT_STATUS_NO_SUCH_FILE
Rename "\clients\client1\link\sub" "\clients\client1\stolen" NT_STATUS_OBJECT_PATH_NOT_FOUND
"#,
    );
    let mut s = session(&work, 1, json!({"family": "replay", "loadfile": lf, "passes": 1, "resolve_names": false}));
    run(&mut s, "setup");
    let client = work.join("clients").join("client0");
    // A link straight to the outside, and a tree of the client's own holding one.
    std::os::unix::fs::symlink(&outside, client.join("link")).unwrap();
    std::fs::create_dir(client.join("tree")).unwrap();
    std::os::unix::fs::symlink(&outside, client.join("tree").join("inner")).unwrap();
    let r = run(&mut s, "run");
    // Each reach through the link fails inside (the open is counted as a mismatch); Unlink and
    // Rename expect exactly that failure, so the run goes on to the end.
    assert_eq!(r["counters"]["passes_completed"], 1, "{r}");
    assert_eq!(std::fs::read(outside.join("keep.txt")).unwrap(), b"precious");
    assert_eq!(std::fs::read(outside.join("sub").join("keep2.txt")).unwrap(), b"precious");
    assert!(!outside.join("planted.txt").exists() && !outside.join("planted_dir").exists());
    assert!(!client.join("tree").join("inner").exists(), "Deltree removes the link itself");
    assert!(outside.exists());
}
