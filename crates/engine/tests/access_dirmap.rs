//! fio's random map with per-direction block sizes (random_map_block) through the Session API: a thread ends
//! where fio's map ends it, before its byte total, with every request one unit of its direction's map.

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

const MIB: u64 = 1 << 20;
const K64: u64 = 64 << 10;

fn workload(extra: Value) -> Value {
    // fio's cmdprio-bssplit mix on 4 MiB: reads 64 KiB (40%) or 1 MiB (60%), writes 1 MiB, half and half.
    let mut w = json!({
        "family": "access", "file_size": 4 * MIB, "file_names": ["m"], "total_bytes": 4 * MIB,
        "alignment": K64, "random_map": true, "random_map_block": K64,
        "entries": [
            {"size": K64, "weight": 20, "read_pct": 100, "random_pct": 100},
            {"size": MIB, "weight": 30, "read_pct": 100, "random_pct": 100},
            {"size": MIB, "weight": 50, "read_pct": 0, "random_pct": 100},
        ],
    });
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    w
}

fn session(dir: &std::path::Path, seed: u64, workload: Value) -> Result<Session, String> {
    let job = json!({"dir": dir, "threads": 1, "seed": seed, "backend": "psync", "interval_s": 0.05,
        "workload": workload});
    Session::from_json(&job.to_string()).map_err(|e| e.to_string())
}

fn ops(r: &Value, kind: &str) -> (u64, u64) {
    (r["ops"][kind]["bytes"].as_u64().unwrap_or(0), r["ops"][kind]["count"].as_u64().unwrap_or(0))
}

#[test]
fn threads_end_where_fios_map_ends_them() {
    // On 4 MiB the writes have 4 slots (bits 0..3 of a 64-bit map); a write whose slot and every later one are
    // taken finds its next free bit at 4 or beyond, 4 MiB or more into the file: the job ends there. Over 30
    // seeds some jobs must end before their 4 MiB, and every write is one whole 1 MiB unit.
    let dir = tempfile::tempdir().unwrap();
    let mut early = 0;
    for seed in 0..30 {
        let mut s = session(dir.path(), seed, workload(json!({}))).unwrap();
        let control = Control::new();
        s.run_phase("prepare", &control).unwrap();
        let r = serde_json::to_value(s.run_phase("run", &control).unwrap()).unwrap();
        let ((rb, _), (wb, wn)) = (ops(&r, "read"), ops(&r, "write"));
        assert_eq!(wb, wn * MIB, "seed {seed}: a write is never shortened");
        assert!(wn <= 4, "seed {seed}: {wn} writes on 4 slots");
        assert_eq!(rb % K64, 0);
        assert!(rb + wb <= 5 * MIB, "seed {seed}: {rb} + {wb}");
        early += (rb + wb < 4 * MIB) as u32;
    }
    assert!(early > 0, "no job ended before its bytes");
}

#[test]
fn what_the_per_direction_map_needs_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        json!({"random_map": false}),
        json!({"alignment": 4096}),
        json!({"entries": [{"size": MIB, "weight": 100, "read_pct": 50, "random_pct": 100}]}),
        json!({"entries": [{"size": MIB, "weight": 100, "read_pct": 0, "random_pct": 50}]}),
        json!({"entries": [{"size": 96 << 10, "weight": 100, "read_pct": 0, "random_pct": 100},
                           {"size": 128 << 10, "weight": 100, "read_pct": 0, "random_pct": 100}]}),
        json!({"file_names": ["a", "b"], "file_count": 2}),
    ];
    for extra in cases {
        let err = session(dir.path(), 1, workload(extra.clone())).err().unwrap_or_default();
        assert!(err.contains("random_map_block"), "{extra}: {err}");
    }
    assert!(session(dir.path(), 1, workload(json!({}))).is_ok());
}
