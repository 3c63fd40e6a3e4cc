//! What writes carry (`content`: fio's dedupe and compression options, refill, zero, scramble) and
//! untorn writes (`atomic`), through the Session API on a temp dir: the files written are read back
//! and their 4 KiB blocks counted and compressed.

use std::collections::HashSet;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

const KIB4: u64 = 4096;

fn session(dir: &std::path::Path, backend: &str, threads: usize, workload: Value) -> Session {
    let job = json!({"dir": dir, "threads": threads, "seed": 11, "backend": backend, "interval_s": 0.5,
                     "workload": workload});
    Session::from_json(&job.to_string()).expect("valid job")
}

fn writes(extra: Value) -> Value {
    let mut w = json!({"family": "access", "file_prefix": "c", "file_size": 4u64 << 20, "alignment": KIB4,
                       "total_bytes": 4u64 << 20, "queue_depth": 4,
                       "entries": [{"size": KIB4, "weight": 100, "read_pct": 0, "random_pct": 0}]});
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    w
}

fn run(s: &mut Session) -> Value {
    let c = Control::new();
    s.run_phase("prepare", &c).expect("prepare");
    serde_json::to_value(s.run_phase("run", &c).expect("run")).unwrap()
}

fn distinct_blocks(path: &std::path::Path) -> (usize, usize) {
    let data = std::fs::read(path).unwrap();
    let set: HashSet<&[u8]> = data.chunks(KIB4 as usize).collect();
    (data.len() / KIB4 as usize, set.len())
}

/// Binomial bound: |x - n p| within 5 standard deviations.
fn within(x: usize, n: usize, p: f64) -> bool {
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    (x as f64 - n as f64 * p).abs() <= 5.0 * sd + 1.0
}

#[test]
fn dedupe_pct_leaves_that_share_of_blocks_duplicated() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), "io_uring", 1, writes(json!({"content": {"dedupe_pct": 25, "compress_chunk": 0}})));
    let r = run(&mut s);
    assert_eq!(r["ops"]["write"]["count"], 1024);
    assert_eq!(r["extra"]["content"]["dedupe_pct"], 25);
    let (n, d) = distinct_blocks(&dir.path().join("c.0"));
    assert_eq!(n, 1024);
    assert!(within(d, n, 0.75), "{d} distinct of {n}");
}

#[test]
fn compress_pct_sets_the_share_of_zeros_in_every_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), "io_uring", 2, writes(json!({"content": {"compress_pct": 75}})));
    run(&mut s);
    let data = std::fs::read(dir.path().join("c.0")).unwrap();
    let zeros = data.iter().filter(|&&b| b == 0).count() as f64 / data.len() as f64;
    // 384 of each 512 bytes are zeros, and 1/256 of the random rest by chance.
    assert!((zeros - (0.75 + 0.25 / 256.0)).abs() < 0.002, "{zeros}");
    for chunk in data.chunks(512) {
        assert!(chunk[128..].iter().all(|&b| b == 0));
    }
}

#[test]
fn refill_makes_every_block_new_and_zero_makes_them_zero() {
    let dir = tempfile::tempdir().unwrap();
    // Without content, a slot's buffer is written again and again: 4 slots, 4 distinct blocks.
    let mut s = session(dir.path(), "io_uring", 1, writes(json!({})));
    run(&mut s);
    assert_eq!(distinct_blocks(&dir.path().join("c.0")).1, 4);
    let mut s = session(dir.path(), "io_uring", 1, writes(json!({"content": {"refill": true}})));
    run(&mut s);
    assert_eq!(distinct_blocks(&dir.path().join("c.0")), (1024, 1024));
    let mut s = session(dir.path(), "io_uring", 1, writes(json!({"content": {"zero": true}})));
    run(&mut s);
    assert!(std::fs::read(dir.path().join("c.0")).unwrap().iter().all(|&b| b == 0));
}

#[test]
fn content_with_verification_or_atomic_without_direct_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let job = |w: Value| {
        json!({"dir": dir.path(), "threads": 1, "seed": 1, "backend": "io_uring", "workload": w}).to_string()
    };
    let err = Session::from_json(&job(writes(json!({"content": {"dedupe_pct": 5}, "verify": "crc32c"}))))
        .err()
        .expect("refused")
        .to_string();
    assert!(err.starts_with("content:") && err.contains("verify"), "{err}");
    let err = Session::from_json(&job(writes(json!({"atomic": true})))).err().expect("refused").to_string();
    assert!(err.starts_with("atomic:") && err.contains("direct"), "{err}");
    let err =
        Session::from_json(&job(writes(json!({"content": {"compress_pct": 100}})))).err().expect("refused").to_string();
    assert!(err.starts_with("content:") && err.contains("0 to 99"), "{err}");
}

#[test]
fn atomic_stops_at_the_start_where_the_filesystem_has_no_unit() {
    // A temp dir: tmpfs or another filesystem; on one that reports a unit the run goes through.
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), "io_uring", 1, writes(json!({"atomic": true, "direct": true})));
    let c = Control::new();
    s.run_phase("prepare", &c).expect("prepare");
    match s.run_phase("run", &c) {
        Ok(r) => {
            let r = serde_json::to_value(r).unwrap();
            assert_eq!(r["extra"]["atomic"], true);
            assert_eq!(r["ops"]["write"]["count"], 1024);
        }
        Err(e) => {
            let e = e.to_string();
            assert!(e.starts_with("atomic:") && e.contains("atomic write unit"), "{e}");
        }
    }
}
