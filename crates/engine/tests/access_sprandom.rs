//! fio's sprandom through the access family's request generator: every request is a write of the
//! job's block size, inside the file and aligned to the block, the generator ends where the plan
//! ends, and the spec refuses what sprandom cannot take. The plan's own counts are tested in
//! sprandom.rs.

use fsmeter_engine::backend::BackendKind;
use fsmeter_engine::settings::Settings;
use fsmeter_engine::workload::access::{AccessGen, AccessSpec};
use serde_json::{json, Value};

const MIB: u64 = 1 << 20;

fn spec(v: Value) -> AccessSpec {
    serde_json::from_value(v).expect("spec parses")
}

fn settings() -> Settings {
    Settings { dir: std::env::temp_dir(), threads: 1, seed: 5, backend: BackendKind::Psync, interval_s: 1.0 }
}

fn base(extra: Value) -> Value {
    let mut v = json!({
        "entries": [{"size": 4096, "weight": 100, "read_pct": 0.0, "random_pct": 100.0}],
        "alignment": 4096, "file_count": 1, "file_size": 4 * MIB, "total_bytes": 8 * MIB,
        "sprandom": {"over_provisioning": 0.15, "regions": 10}
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

#[test]
fn requests_are_aligned_writes_inside_the_file_until_the_plan_ends() {
    let s = spec(base(json!({})));
    s.validate(&settings()).expect("valid");
    let mut g = AccessGen::new(&s, 7, 0, 1);
    let mut n = 0u64;
    let mut seen = std::collections::HashSet::new();
    while n < 10_000 {
        let op = g.next_op();
        if g.ended() {
            break;
        }
        assert!(op.req.write && !op.trim && op.random, "{op:?}");
        assert_eq!(op.req.len, 4096);
        assert_eq!(op.req.offset % 4096, 0, "{op:?}");
        assert!(op.req.offset + 4096 <= 4 * MIB, "{op:?}");
        seen.insert(op.req.offset);
        n += 1;
    }
    let st = g.sprandom().expect("sprandom").stats().clone();
    let fresh: u64 = st.writes.iter().zip(&st.replays).map(|(w, r)| w - r).sum();
    // 4 MiB + 15%: 4823450 bytes aligned to 4096 = 1177 blocks; 10 regions of 117 writes, and the
    // region past the last; it ends there or when the file's 1024 blocks have all had their fresh write.
    assert_eq!(st.writes.iter().sum::<u64>(), n);
    assert!(n == 11 * 117 || fresh == 1024, "{n} writes, {fresh} fresh");
    assert_eq!(seen.len() as u64, fresh, "fresh writes go to distinct blocks; rewrites to blocks written before");
    assert!(g.ended());
}

#[test]
fn the_spec_refuses_what_sprandom_cannot_take() {
    for (extra, what) in [
        (json!({"file_count": 2}), "one file"),
        (json!({"entries": [{"size": 4096, "weight": 100, "read_pct": 50.0, "random_pct": 100.0}]}), "random writes"),
        (json!({"alignment": 512}), "alignment"),
        (json!({"random_map": true}), "random_map"),
        (json!({"sprandom": {"over_provisioning": 0.15, "regions": 10, "cache_size": MIB}}), "cache_size"),
    ] {
        let e = spec(base(extra)).validate(&settings()).expect_err(what).to_string();
        assert!(e.contains(what), "{e}");
    }
}
