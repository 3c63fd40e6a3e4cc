//! fio's offset shapes in the access family's request generator: zoned distributions, strided
//! zones, the sequential offset modifier and the sequence distribution, checked against fio's
//! definitions (io_u.c's offset rules) on the offsets the generator draws.

use fsmeter_engine::backend::BackendKind;
use fsmeter_engine::settings::Settings;
use fsmeter_engine::workload::access::{AccessGen, AccessSpec};
use serde_json::{json, Value};

const KIB: u64 = 1024;
const MIB: u64 = 1 << 20;

fn spec(v: Value) -> AccessSpec {
    serde_json::from_value(v).expect("spec parses")
}

fn settings(threads: usize) -> Settings {
    Settings { dir: std::env::temp_dir(), threads, seed: 5, backend: BackendKind::Psync, interval_s: 1.0 }
}

fn entry(size: u64, read_pct: f64, random_pct: f64) -> Value {
    json!({"size": size, "weight": 100, "read_pct": read_pct, "random_pct": random_pct})
}

/// Offsets of the first `n` requests of thread `tid` of `threads`.
fn offsets(s: &AccessSpec, n: usize, tid: usize, threads: usize) -> Vec<u64> {
    s.validate(&settings(threads)).expect("spec is valid");
    let mut g = AccessGen::new(s, 7, tid, threads);
    (0..n).map(|_| g.next_op().req.offset).collect()
}

/// |observed - expected| within 4 binomial standard deviations (a false alarm about once in 16,000
/// checks).
fn within_binomial(hits: u64, n: u64, p: f64, what: &str) {
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    let want = n as f64 * p;
    assert!(
        (hits as f64 - want).abs() <= 4.0 * sd.max(1.0),
        "{what}: {hits} of {n}, fio's share gives {want:.0} (sd {sd:.1})"
    );
}

#[test]
fn zoned_offsets_have_fios_shares_per_zone_and_direction() {
    // rand-zones.fio: 50% of the accesses on the first 5% of the file, 30% on the next 15%, 20% on the
    // other 80%. Writes get their own list: 50% on the first 10%, 50% on the other 90%.
    let file = 64 * MIB;
    let s = spec(json!({
        "entries": [entry(4096, 50.0, 100.0)], "file_size": file, "alignment": 4096, "duration_s": 1.0,
        "random_distribution": "zoned:50/5:30/15:20/80,50/10:50/90",
    }));
    s.validate(&settings(1)).unwrap();
    let mut g = AccessGen::new(&s, 11, 0, 1);
    let blocks = file / 4096; // fio's last_block: 16384 (one request size, equal to the alignment)
    let read_edges = [0, blocks * 5 / 100, blocks * 20 / 100, blocks];
    let write_edges = [0, blocks * 10 / 100, blocks];
    let (mut reads, mut writes) = ([0u64; 3], [0u64; 2]);
    let (mut nr, mut nw) = (0u64, 0u64);
    for _ in 0..200_000 {
        let op = g.next_op();
        let b = op.req.offset / 4096;
        assert_eq!(op.req.offset % 4096, 0);
        let (edges, counts, n): (&[u64], &mut [u64], &mut u64) =
            if op.req.write { (&write_edges, &mut writes, &mut nw) } else { (&read_edges, &mut reads, &mut nr) };
        let z = edges.windows(2).position(|w| b >= w[0] && b < w[1]).expect("inside the file");
        counts[z] += 1;
        *n += 1;
    }
    eprintln!("reads per zone {reads:?} of {nr}, writes per zone {writes:?} of {nw}");
    for (z, p) in [0.5, 0.3, 0.2].iter().enumerate() {
        within_binomial(reads[z], nr, *p, &format!("read zone {z}"));
    }
    for (z, p) in [0.5, 0.5].iter().enumerate() {
        within_binomial(writes[z], nw, *p, &format!("write zone {z}"));
    }
}

#[test]
fn zoned_offsets_are_uniform_inside_a_zone_and_zoned_abs_counts_bytes() {
    // zoned_abs: 60% on the first 1 MiB, 40% on the next 3 MiB of an 8 MiB file: nothing beyond 4 MiB.
    let s = spec(json!({
        "entries": [entry(4096, 100.0, 100.0)], "file_size": 8 * MIB, "alignment": 4096, "duration_s": 1.0,
        "random_distribution": format!("zoned_abs:60/{}:40/{}", MIB, 3 * MIB),
    }));
    let offs = offsets(&s, 100_000, 0, 1);
    assert!(offs.iter().all(|o| *o < 4 * MIB), "an offset beyond the zones");
    let first = offs.iter().filter(|o| **o < MIB).count() as u64;
    within_binomial(first, 100_000, 0.6, "first zone");
    // Inside the first zone (256 blocks) the blocks are uniform: its two halves get half each.
    let low = offs.iter().filter(|o| **o < MIB / 2).count() as u64;
    within_binomial(low, first, 0.5, "first half of the first zone");
    // Zones larger than the file are refused, as fio refuses them.
    let big = spec(json!({
        "entries": [entry(4096, 100.0, 100.0)], "file_size": MIB, "duration_s": 1.0,
        "random_distribution": "zoned_abs:50/1048576:50/4096",
    }));
    let err = big.validate(&settings(1)).unwrap_err().to_string();
    assert!(err.contains("random_distribution") && err.contains("more than the file"), "{err}");
}

#[test]
fn strided_zones_walk_fios_zones() {
    // disk-zone-profile.fio's pattern at small scale: 64 KiB reads, 256 KiB per zone, 1 MiB skipped,
    // in a 4 MiB file: zones start at 0, 1.25, 2.5 and 3.75 MiB, then the walk starts again at 0.
    let s = spec(json!({
        "entries": [entry(64 * KIB, 100.0, 0.0)], "file_size": 4 * MIB, "duration_s": 1.0,
        "zone_size": 256 * KIB, "zone_skip": MIB,
    }));
    let offs = offsets(&s, 20, 0, 1);
    let mut want = vec![];
    for zone in [0, 1280 * KIB, 2560 * KIB, 3840 * KIB, 0] {
        want.extend((0..4).map(|i| zone + i * 64 * KIB));
    }
    assert_eq!(offs, want);
    // zonesize > zonerange: the zone is read again until zonesize bytes are done (fio's "maintain zone").
    let s = spec(json!({
        "entries": [entry(64 * KIB, 100.0, 0.0)], "file_size": 4 * MIB, "duration_s": 1.0,
        "zone_size": 256 * KIB, "zone_range": 128 * KIB, "zone_skip": 0,
    }));
    assert_eq!(offsets(&s, 6, 0, 1), vec![0, 64 * KIB, 0, 64 * KIB, 128 * KIB, 192 * KIB]);
    // A zone the file cuts short: the request that would run past the end starts the file again, at
    // its first zone, with a fresh byte count (fio 3.33's I/O log: ... 3840k, 0, 256k, 512k, 768k, 1280k).
    let s = spec(json!({
        "entries": [entry(256 * KIB, 100.0, 0.0)], "file_size": 4 * MIB, "duration_s": 1.0,
        "zone_size": MIB, "zone_skip": 256 * KIB,
    }));
    let got: Vec<u64> = offsets(&s, 18, 0, 1).iter().map(|o| o / KIB).collect();
    assert_eq!(
        got,
        vec![0, 256, 512, 768, 1280, 1536, 1792, 2048, 2560, 2816, 3072, 3328, 3840, 0, 256, 512, 768, 1280]
    );
    // Random requests stay inside the current zone.
    let s = spec(json!({
        "entries": [entry(4096, 100.0, 100.0)], "file_size": 4 * MIB, "alignment": 4096, "duration_s": 1.0,
        "zone_size": 64 * KIB, "zone_skip": 960 * KIB,
    }));
    let offs = offsets(&s, 64, 0, 1);
    for (i, o) in offs.iter().enumerate() {
        let zone = (i as u64 / 16) * MIB;
        assert!(*o >= zone && *o + 4096 <= zone + 64 * KIB, "request {i} at {o} outside the zone at {zone}");
    }
    // Each of two threads sharing the file walks all of it, as each fio clone does.
    let s = spec(json!({
        "entries": [entry(64 * KIB, 100.0, 0.0)], "file_size": 4 * MIB, "duration_s": 1.0, "zone_size": 256 * KIB,
    }));
    assert_eq!(offsets(&s, 3, 1, 2), vec![0, 64 * KIB, 128 * KIB]);
}

#[test]
fn offset_modifiers_walk_backwards_and_leave_holes_as_fio() {
    // backwards-read.fio: 4 KiB reads, rw=read:-8k. fio reads block 0 first, then from the end of the file
    // less 8 KiB down by 4 KiB a request, back to 0, and round again.
    let file = 64 * KIB;
    let s = spec(json!({
        "entries": [entry(4096, 100.0, 0.0)], "file_size": file, "duration_s": 1.0, "seq_add": -8192,
    }));
    let offs = offsets(&s, 17, 0, 1);
    let mut want = vec![0];
    want.extend((0..15).map(|i| file - 8 * KIB - i * 4 * KIB));
    want.push(file - 8 * KIB);
    assert_eq!(offs, want);
    // cross-stripe-verify.fio's rw=write:112k with 16 KiB writes: one write every 128 KiB, then again from 0.
    let s = spec(json!({
        "entries": [entry(16 * KIB, 0.0, 0.0)], "file_size": 512 * KIB, "duration_s": 1.0, "seq_add": 112 * 1024,
    }));
    assert_eq!(offsets(&s, 6, 0, 1), vec![0, 128 * KIB, 256 * KIB, 384 * KIB, 0, 128 * KIB]);
    // rw=read:8k with 4 KiB reads in 38 KiB: 0, 12k, 24k; 36k would not fit, so 0 again (fio 3.33's log).
    let s = spec(json!({
        "entries": [entry(4096, 100.0, 0.0)], "file_size": 38 * KIB, "duration_s": 1.0, "seq_add": 8192,
    }));
    assert_eq!(offsets(&s, 5, 0, 1), vec![0, 12 * KIB, 24 * KIB, 0, 12 * KIB]);
    // Random entries and several files per thread are refused.
    let bad = spec(json!({
        "entries": [entry(4096, 100.0, 100.0)], "file_size": file, "duration_s": 1.0, "seq_add": 4096,
    }));
    assert!(bad.validate(&settings(1)).unwrap_err().to_string().contains("seq_add"));
    let bad = spec(json!({
        "entries": [entry(4096, 100.0, 0.0)], "file_size": file, "file_count": 2, "duration_s": 1.0, "seq_add": 4096,
    }));
    assert!(bad.validate(&settings(1)).unwrap_err().to_string().contains("one file"));
}

#[test]
fn the_sequence_distribution_visits_its_blocks_in_turn() {
    // sequence-distribution.fio: blocks 2, 0, 1 again and again; with the stride, 2, 0, 1, 5, 3, 4.
    let mk = |stride: bool| {
        spec(json!({
            "entries": [entry(4096, 100.0, 100.0)], "file_size": 48 * KIB, "alignment": 4096, "duration_s": 1.0,
            "random_distribution": "sequence:2,0,1", "random_sequence_stride": stride,
        }))
    };
    let blocks = |v: Vec<u64>| v.iter().map(|o| o / 4096).collect::<Vec<_>>();
    assert_eq!(blocks(offsets(&mk(false), 6, 0, 1)), vec![2, 0, 1, 2, 0, 1]);
    assert_eq!(blocks(offsets(&mk(true), 6, 0, 1)), vec![2, 0, 1, 5, 3, 4]);
    let bad = spec(json!({
        "entries": [entry(4096, 100.0, 100.0)], "file_size": 48 * KIB, "alignment": 4096, "duration_s": 1.0,
        "random_distribution": "sequence:2,12",
    }));
    let err = bad.validate(&settings(1)).unwrap_err().to_string();
    assert!(err.contains("block 12"), "{err}");
}
