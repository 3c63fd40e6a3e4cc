//! The access options fio job files need from the engine: trims (hole punches), trim-then-write,
//! buffer patterns and skewed random distributions, through the Session API on a temp dir.

use std::os::unix::fs::MetadataExt;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn session(dir: &std::path::Path, workload: Value) -> Result<Session, String> {
    let job =
        json!({"dir": dir, "threads": 1, "seed": 5, "backend": "psync", "interval_s": 0.05, "workload": workload});
    Session::from_json(&job.to_string()).map_err(|e| e.to_string())
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

fn count(r: &Value, kind: &str) -> u64 {
    r["ops"][kind]["count"].as_u64().unwrap_or(0)
}

const MIB: u64 = 1 << 20;

#[test]
fn sequential_trims_punch_holes_over_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(
        dir.path(),
        json!({
            "family": "access", "file_size": MIB, "file_names": ["t"],
            "entries": [{"size": 4096, "weight": 100, "read_pct": 0, "random_pct": 0, "trim_pct": 100}],
            "total_bytes": MIB,
        }),
    )
    .unwrap();
    run(&mut s, "prepare");
    let path = dir.path().join("t");
    let before = std::fs::metadata(&path).unwrap();
    assert!(before.blocks() * 512 >= MIB, "laid out: {} blocks", before.blocks());
    let r = run(&mut s, "run");
    assert_eq!(count(&r, "trim"), 256);
    assert_eq!(r["ops"]["trim"]["bytes"], MIB);
    assert_eq!(count(&r, "read") + count(&r, "write"), 0);
    assert_eq!(r["total"]["ops"], 256, "trims are I/Os of their own direction, in the total as fio counts them");
    assert_eq!(r["extra"]["mix"][0]["trims"], 256);
    let after = std::fs::metadata(&path).unwrap();
    assert_eq!(after.len(), MIB, "the file keeps its size");
    assert_eq!(after.blocks(), 0, "every block punched");
    assert!(std::fs::read(&path).unwrap().iter().all(|&b| b == 0));
}

#[test]
fn trim_then_write_writes_each_trimmed_range_with_the_buffer_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(
        dir.path(),
        json!({
            "family": "access", "file_size": MIB, "file_names": ["tw"], "trim_then_write": true,
            "buffer_pattern": [0xde, 0xad, 0xbe, 0xef],
            "entries": [{"size": 8192, "weight": 100, "read_pct": 0, "random_pct": 100, "trim_pct": 100}],
            "total_bytes": 2 * MIB,
        }),
    )
    .unwrap();
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    // fio's trimwrite: as many writes as trims, each on the range just trimmed.
    assert_eq!(count(&r, "trim"), 128);
    assert_eq!(count(&r, "write"), 128);
    // Every byte of the file is the pattern: the layout carried it, and each trimmed range was
    // written again with it (the pattern restarts at every request and layout chunk: 4 bytes
    // divide both). No hole is left.
    let path = dir.path().join("tw");
    assert!(std::fs::metadata(&path).unwrap().blocks() * 512 >= MIB, "a trimmed range was not written back");
    let data = std::fs::read(&path).unwrap();
    let want = |o: usize| [0xde, 0xad, 0xbe, 0xef][o % 4];
    let holes = data.iter().enumerate().filter(|(o, b)| **b != want(*o)).count();
    assert_eq!(holes, 0, "{holes} bytes are not the pattern");
}

#[test]
fn trim_then_write_does_not_stop_between_a_trim_and_its_write() {
    // 3 KiB pairs against a byte total of 170 pairs and 2 KiB: the 171st trim reaches it (170 pairs
    // are 1,044,480 bytes). fio writes the range of that trim too; so must the engine.
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(
        dir.path(),
        json!({
            "family": "access", "file_size": MIB, "file_names": ["tw"], "trim_then_write": true,
            "entries": [{"size": 3072, "weight": 100, "read_pct": 0, "random_pct": 100, "trim_pct": 100}],
            "total_bytes": 170 * 6144 + 2048,
        }),
    )
    .unwrap();
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    assert_eq!(count(&r, "trim"), 171);
    assert_eq!(count(&r, "write"), 171, "the last trim's range is written");
    assert_eq!(r["ops"]["write"]["bytes"], 171 * 3072);
}

#[test]
fn a_mix_counts_reads_writes_and_trims_apart() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(
        dir.path(),
        json!({
            "family": "access", "file_size": 4 * MIB,
            "entries": [{"size": 4096, "weight": 100, "read_pct": 50, "random_pct": 100, "trim_pct": 25}],
            "total_bytes": 8 * MIB,
        }),
    )
    .unwrap();
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let (rd, wr, tr) = (count(&r, "read"), count(&r, "write"), count(&r, "trim"));
    assert_eq!(rd + wr + tr, 2048);
    // 50/25/25 of 2048: 3 sigma of a binomial share over 2048 draws is about 3%.
    assert!((rd as f64 / 2048.0 - 0.5).abs() < 0.035, "reads {rd}");
    assert!((tr as f64 / 2048.0 - 0.25).abs() < 0.03, "trims {tr}");
    let m = &r["extra"]["mix"][0];
    assert_eq!((m["reads"].as_u64(), m["writes"].as_u64(), m["trims"].as_u64()), (Some(rd), Some(wr), Some(tr)));
}

#[test]
fn a_skewed_distribution_runs_and_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    for dist in ["zipf:1.2", "pareto:0.2", "normal:5:0.3"] {
        let mut s = session(
            dir.path(),
            json!({
                "family": "access", "file_size": 4 * MIB, "alignment": 4096, "random_distribution": dist,
                "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 100}],
                "total_bytes": 4 * MIB,
            }),
        )
        .unwrap();
        run(&mut s, "prepare");
        let r = run(&mut s, "run");
        assert_eq!(count(&r, "read"), 1024, "{dist}");
        assert_eq!(r["extra"]["random_distribution"], dist);
        run(&mut s, "cleanup");
    }
}

#[test]
fn what_cannot_be_combined_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let base = |extra: Value| {
        let mut w = json!({"family": "access", "file_size": MIB, "total_bytes": MIB,
            "entries": [{"size": 4096, "weight": 100, "read_pct": 50, "random_pct": 100}]});
        for (k, v) in extra.as_object().unwrap() {
            w[k] = v.clone();
        }
        w
    };
    let cases = [
        (json!({"random_distribution": "zipf:1"}), "random_distribution:"),
        // zones whose access shares do not add up to 100
        (json!({"random_distribution": "zoned:60/10:50/90"}), "random_distribution:"),
        (json!({"random_distribution": "zipf:1.2", "random_map": true, "alignment": 4096}), "random_map:"),
        (
            json!({"entries": [{"size": 4096, "weight": 100, "read_pct": 80, "random_pct": 0, "trim_pct": 30}]}),
            "entries[0].trim_pct:",
        ),
        (
            json!({"verify": "crc32c", "entries": [{"size": 4096, "weight": 100, "read_pct": 0, "random_pct": 0, "trim_pct": 50}]}),
            "verify:",
        ),
        (json!({"trim_then_write": true}), "trim_then_write:"),
    ];
    for (extra, field) in cases {
        let err = session(dir.path(), base(extra.clone())).err().unwrap_or_default();
        assert!(err.contains(field), "{extra}: {err}");
    }
}

#[test]
fn trims_between_queued_requests_keep_the_quota_under_io_uring() {
    // Trims are punched by the worker between the requests it queues: with 8 requests in flight the
    // phase still ends on its byte quota, every request counted once.
    let dir = tempfile::tempdir().unwrap();
    let job = json!({"dir": dir.path(), "threads": 1, "seed": 5, "backend": "io_uring", "interval_s": 0.05, "workload": {
        "family": "access", "file_size": 4 * MIB, "queue_depth": 8, "alignment": 4096,
        "entries": [{"size": 4096, "weight": 100, "read_pct": 40, "random_pct": 100, "trim_pct": 30}],
        "total_bytes": 8 * MIB,
    }});
    let mut s = Session::from_json(&job.to_string()).unwrap();
    run(&mut s, "prepare");
    let r = run(&mut s, "run");
    let (rd, wr, tr) = (count(&r, "read"), count(&r, "write"), count(&r, "trim"));
    // The quota is reached when the 2048th request is issued; the ones already in flight complete too.
    assert!((2048..2048 + 8).contains(&(rd + wr + tr)), "{rd} + {wr} + {tr}");
    assert!(tr > 400 && rd > 600 && wr > 400, "{rd} {wr} {tr}");
}
