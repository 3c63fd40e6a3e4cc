//! The crash family through the Session API on a temp dir: the durability ledger (what was
//! synced, when) and the check that judges a filesystem against it.

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::Path;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn spec(ledger: &Path, extra: Value) -> Value {
    let mut w = json!({"family": "crash", "runtime_s": 0.4, "files_per_thread": 4, "file_size": 256 * 1024,
                       "block_size": 4096, "write_size": 8192, "dirty_bytes": 32 * 1024, "ledger": ledger});
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    w
}

fn run(dir: &Path, threads: usize, workload: Value, phase: &str) -> Value {
    let job = json!({"dir": dir, "threads": threads, "interval_s": 0.1, "seed": 7, "workload": workload});
    let mut s = Session::from_json(&job.to_string()).expect("valid job");
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

fn ledger_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn c(report: &Value, name: &str) -> u64 {
    report["counters"][name].as_u64().unwrap_or_else(|| panic!("counter {name} missing: {}", report["counters"]))
}

/// Written and checked without a crash: every promise holds.
fn write_then(threads: usize) -> (tempfile::TempDir, tempfile::TempDir, std::path::PathBuf, Value) {
    let data = tempfile::tempdir().unwrap();
    let side = tempfile::tempdir().unwrap();
    let ledger = side.path().join("ledger.jsonl");
    let w = run(data.path(), threads, spec(&ledger, json!({})), "write");
    (data, side, ledger, w)
}

#[test]
fn ledger_records_each_sync_with_its_writes_in_time_order() {
    let (data, _side, ledger, w) = write_then(2);
    let lines = ledger_lines(&ledger);
    assert_eq!(c(&w, "ledger_lines"), lines.len() as u64);
    let syncs: Vec<&Value> = lines.iter().filter(|l| l["op"] == "fsync" || l["op"] == "fdatasync").collect();
    assert!(syncs.len() >= 4, "expected several sync points in 0.4 s, got {}", syncs.len());
    // mixed: both calls appear, and each ledger line matches one measured call
    let n_fsync = lines.iter().filter(|l| l["op"] == "fsync").count() as u64;
    let n_fdatasync = lines.iter().filter(|l| l["op"] == "fdatasync").count() as u64;
    assert!(n_fsync > 0 && n_fdatasync > 0);
    assert_eq!(n_fsync, c(&w, "fsync_calls"));
    assert_eq!(n_fdatasync, c(&w, "fdatasync_calls"));
    // per thread: call start <= return and returns in order; per file: generations only grow
    let mut last_t: BTreeMap<u64, u64> = BTreeMap::new();
    let mut last_gen: BTreeMap<String, u64> = BTreeMap::new();
    for l in &lines {
        let tid = l["tid"].as_u64().unwrap();
        let t = l["t_ns"].as_u64().unwrap();
        if let Some(t0) = l["t0_ns"].as_u64() {
            assert!(t0 <= t);
        }
        assert!(t >= *last_t.get(&tid).unwrap_or(&0), "ledger of thread {tid} out of time order");
        last_t.insert(tid, t);
        let file = l["file"].as_str().unwrap_or("").to_string();
        for wr in l["writes"].as_array().into_iter().flatten() {
            let gen = wr[2].as_u64().unwrap();
            assert!(gen > *last_gen.get(&file).unwrap_or(&0), "{file}: generation {gen} not above the previous");
            last_gen.insert(file.clone(), gen + wr[1].as_u64().unwrap() - 1);
        }
    }
    // the synced writes add up to what the files hold: every block written was synced once at least
    let files: BTreeMap<String, u64> = lines
        .iter()
        .filter(|l| l["op"] == "create")
        .map(|l| {
            let f = l["file"].as_str().unwrap().to_string();
            let len = std::fs::metadata(data.path().join(&f)).unwrap().len();
            (f, len)
        })
        .collect();
    assert!(!files.is_empty());
    // every created name is made durable by a dirsync of its thread directory
    let dirsynced: Vec<String> = lines
        .iter()
        .filter(|l| l["op"] == "dirsync" && l["dir"] != "")
        .flat_map(|l| {
            let dir = l["dir"].as_str().unwrap().to_string();
            l["names"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |n| format!("{dir}/{}", n.as_str().unwrap()))
                .collect::<Vec<_>>()
        })
        .collect();
    for f in files.keys() {
        let synced_blocks: u64 = syncs
            .iter()
            .filter(|l| l["file"] == f.as_str())
            .map(|l| l["writes"].as_array().unwrap().len() as u64)
            .sum();
        if synced_blocks > 0 {
            assert!(dirsynced.contains(f), "{f} has synced data but its name was never dirsynced");
        }
    }
}

#[test]
fn check_without_crash_finds_every_promise_kept() {
    let (data, _side, ledger, _w) = write_then(2);
    let r = run(data.path(), 1, spec(&ledger, json!({})), "check");
    assert!(c(&r, "blocks_promised") > 0);
    assert_eq!(c(&r, "blocks_intact"), c(&r, "blocks_promised"));
    assert_eq!(c(&r, "blocks_lost_beyond_fsync"), 0);
    assert_eq!(c(&r, "files_lost_beyond_fsync"), 0);
    assert_eq!(c(&r, "entries_lost_beyond_fsync"), 0);
    assert_eq!(c(&r, "blocks_garbage"), 0);
}

/// The writer takes crc32c from tables when a block's payload fits one pattern lap, and from a
/// pass over the data otherwise, and the other checksums always from a pass: the check, which
/// always reads and computes, must find every block intact either way.
#[test]
fn every_checksum_and_block_size_is_written_as_the_check_reads_it() {
    for (checksum, block) in [("crc32c", 4096u64), ("crc32c", 16384), ("xxh3", 4096), ("sha256", 8192)] {
        let data = tempfile::tempdir().unwrap();
        let side = tempfile::tempdir().unwrap();
        let ledger = side.path().join("ledger.jsonl");
        let extra = json!({"checksum": checksum, "block_size": block, "write_size": 2 * block,
                           "file_size": 64 * block, "dirty_bytes": 8 * block});
        run(data.path(), 1, spec(&ledger, extra.clone()), "write");
        let r = run(data.path(), 1, spec(&ledger, extra), "check");
        assert!(c(&r, "blocks_promised") > 0, "{checksum}, {block} B");
        assert_eq!(c(&r, "blocks_intact"), c(&r, "blocks_promised"), "{checksum}, {block} B: {}", r["counters"]);
        assert_eq!(c(&r, "blocks_garbage"), 0, "{checksum}, {block} B");
    }
}

#[test]
fn check_names_the_exact_block_that_lost_synced_data() {
    let (data, _side, ledger, _w) = write_then(1);
    // the first synced write of the first synced file: zero its second block behind the engine's back
    let lines = ledger_lines(&ledger);
    let sync = lines.iter().find(|l| l["op"] == "fsync" && !l["writes"].as_array().unwrap().is_empty()).unwrap();
    let file = sync["file"].as_str().unwrap();
    let first_block = sync["writes"][0][0].as_u64().unwrap();
    let off = (first_block + 1) * 4096;
    let f = std::fs::OpenOptions::new().write(true).open(data.path().join(file)).unwrap();
    f.write_all_at(&[0xA5; 100], off + 200).unwrap();
    drop(f);
    let r = run(data.path(), 1, spec(&ledger, json!({})), "check");
    assert_eq!(c(&r, "blocks_lost_beyond_fsync"), 1);
    assert_eq!(c(&r, "bytes_lost_beyond_fsync"), 4096);
    let finding = &r["extra"]["findings"][0];
    assert_eq!(finding["path"], file);
    assert_eq!(finding["offset"], off);
    assert_eq!(finding["why"], "header mismatch");
    assert_eq!(finding["mismatch"]["first_diff"], 200);
}

#[test]
fn check_counts_a_lost_file_and_a_truncated_one() {
    let (data, _side, ledger, _w) = write_then(1);
    let lines = ledger_lines(&ledger);
    let mut synced: Vec<String> = lines
        .iter()
        .filter(|l| (l["op"] == "fsync" || l["op"] == "fdatasync") && !l["writes"].as_array().unwrap().is_empty())
        .map(|l| l["file"].as_str().unwrap().to_string())
        .collect();
    synced.sort();
    synced.dedup();
    assert!(synced.len() >= 2, "need two synced files, got {synced:?}");
    std::fs::remove_file(data.path().join(&synced[0])).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(data.path().join(&synced[1])).unwrap();
    f.set_len(4096).unwrap();
    drop(f);
    let r = run(data.path(), 1, spec(&ledger, json!({})), "check");
    assert_eq!(c(&r, "files_lost_beyond_fsync"), 1);
    assert_eq!(c(&r, "files_truncated_beyond_fsync"), 1);
    assert!(c(&r, "blocks_lost_beyond_fsync") > 1);
}

#[test]
fn a_cut_before_a_sync_returned_does_not_hold_its_data_to_the_promise() {
    let (data, _side, ledger, _w) = write_then(1);
    let lines = ledger_lines(&ledger);
    let first = lines.iter().find(|l| l["op"] == "fsync" || l["op"] == "fdatasync").unwrap();
    let t = first["t_ns"].as_u64().unwrap();
    // promises are the lines that returned strictly before the cut
    let at = run(data.path(), 1, spec(&ledger, json!({"cut_ns": t})), "check");
    let after = run(data.path(), 1, spec(&ledger, json!({"cut_ns": t + 1})), "check");
    assert_eq!(c(&at, "blocks_promised"), 0);
    let blocks: std::collections::BTreeSet<u64> = first["writes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| {
            let (b, n) = (w[0].as_u64().unwrap(), w[1].as_u64().unwrap());
            b..b + n
        })
        .collect();
    assert_eq!(c(&after, "blocks_promised"), blocks.len() as u64); // an overwrite promises its block once
                                                                   // throw all the data away: no finding for a cut before the first sync, a finding after it
    for l in lines.iter().filter(|l| l["op"] == "create") {
        std::fs::OpenOptions::new()
            .write(true)
            .open(data.path().join(l["file"].as_str().unwrap()))
            .unwrap()
            .set_len(0)
            .unwrap();
    }
    let at = run(data.path(), 1, spec(&ledger, json!({"cut_ns": t})), "check");
    let after = run(data.path(), 1, spec(&ledger, json!({"cut_ns": t + 1})), "check");
    assert_eq!(c(&at, "blocks_lost_beyond_fsync"), 0);
    assert!(c(&at, "files_short_unpromised") == 0 && c(&at, "files_truncated_beyond_fsync") == 0);
    assert_eq!(c(&after, "blocks_lost_beyond_fsync"), c(&after, "blocks_promised"));
    assert_eq!(c(&after, "files_truncated_beyond_fsync"), 1);
}

#[test]
fn bad_spec_is_refused_with_the_field_name() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, field) in [
        (json!({"write_size": 5000}), "write_size"),
        (json!({"checksum": "md5"}), "checksum"),
        (json!({"overwrite_pct": 101}), "overwrite_pct"),
        (json!({"dirty_bytes": 1024}), "dirty_bytes"),
    ] {
        let job = json!({"dir": dir.path(), "workload": spec(&dir.path().join("l"), extra)});
        let err = Session::from_json(&job.to_string()).err().expect("refused");
        assert!(err.to_string().starts_with(field), "{err}");
    }
}

#[test]
fn cleanup_removes_the_run_and_a_second_run_needs_an_empty_directory() {
    let (data, _side, ledger, _w) = write_then(2);
    let job = json!({"dir": data.path(), "threads": 2, "workload": spec(&ledger, json!({}))});
    let err = Session::from_json(&job.to_string()).unwrap().run_phase("write", &Control::new()).expect_err("refused");
    assert!(err.to_string().contains("already holds crash-t0"), "{err}");
    let r = run(data.path(), 2, spec(&ledger, json!({})), "cleanup");
    assert!(c(&r, "files_removed") > 0);
    assert_eq!(std::fs::read_dir(data.path()).unwrap().count(), 0);
    assert!(ledger.exists(), "the ledger is the record of the run: cleanup keeps it");
}

/// Write, (optionally damage a synced block), check and clean up in one session, as a campaign's
/// trial runs them, with a ledger fsmeter chose: (cleanup report, whether the ledger is left).
fn trial_with_temporary_ledger(damage: bool) -> (Value, bool) {
    let data = tempfile::tempdir().unwrap();
    let side = tempfile::tempdir().unwrap();
    let ledger = side.path().join("ledger.jsonl");
    let job = json!({"dir": data.path(), "threads": 1, "interval_s": 0.1, "seed": 7,
                     "workload": spec(&ledger, json!({"ledger_temporary": true}))});
    let mut s = Session::from_json(&job.to_string()).expect("valid job");
    let mut phase = |name: &str| serde_json::to_value(s.run_phase(name, &Control::new()).expect("runs")).unwrap();
    phase("write");
    if damage {
        let lines = ledger_lines(&ledger);
        let sync = lines.iter().find(|l| l["op"] == "fsync" && !l["writes"].as_array().unwrap().is_empty()).unwrap();
        let off = sync["writes"][0][0].as_u64().unwrap() * 4096;
        let f = std::fs::OpenOptions::new().write(true).open(data.path().join(sync["file"].as_str().unwrap())).unwrap();
        f.write_all_at(&[0xA5; 64], off + 300).unwrap();
    }
    let check = phase("check");
    assert_eq!(c(&check, "bytes_lost_beyond_fsync") > 0, damage);
    let cleanup = phase("cleanup");
    (cleanup, ledger.exists())
}

#[test]
fn a_temporary_ledger_goes_once_the_check_found_every_promise_kept() {
    let (cleanup, left) = trial_with_temporary_ledger(false);
    assert!(!left, "a temporary ledger of a clean check is removed");
    assert_eq!(c(&cleanup, "ledger_removed"), 1);
    assert!(cleanup["warnings"].as_array().unwrap().is_empty());
}

#[test]
fn a_temporary_ledger_with_broken_promises_stays_and_says_where() {
    let (cleanup, left) = trial_with_temporary_ledger(true);
    assert!(left, "a ledger the check found broken promises in is evidence");
    assert_eq!(c(&cleanup, "ledger_removed"), 0);
    let warning = cleanup["warnings"][0].as_str().unwrap();
    assert!(warning.contains("promises broken") && warning.contains("ledger.jsonl"), "{warning}");
}

#[test]
fn a_ledger_without_a_check_in_the_same_session_stays() {
    // `fsmeter crash run` checks a crashed copy in a session of its own: cleanup never guesses
    let (data, _side, ledger, _w) = write_then(1);
    let r = run(data.path(), 1, spec(&ledger, json!({"ledger_temporary": true})), "cleanup");
    assert_eq!(c(&r, "ledger_removed"), 0);
    assert!(ledger.exists());
}
