//! End-to-end tests of the iozone workload through the Session API on a temp dir.
//!
//! One test function on purpose: it checks the bytes the process moved through read(2)/write(2)
//! (/proc/self/io), which other tests running in parallel threads would disturb.

use std::path::Path;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn job(dir: &Path, workload: Value) -> String {
    json!({"dir": dir, "interval_s": 0.05, "workload": workload}).to_string()
}

fn io_counters() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/self/io").unwrap();
    let get = |k: &str| text.lines().find_map(|l| l.strip_prefix(k)).unwrap().trim().parse::<u64>().unwrap();
    (get("rchar:"), get("wchar:"))
}

fn err_of(dir: &Path, workload: Value) -> String {
    match Session::from_json(&job(dir, workload)) {
        Ok(_) => panic!("accepted a bad job"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn iozone_grid_moves_exactly_iozones_bytes_and_rejects_bad_cells() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cells = [[65536u64, 4096u64], [131072, 16384], [65536, 65536], [40960, 12288]];
    let w = json!({"family": "iozone", "cells": cells, "tests": [0, 1, 2, 3, 4, 5, 6, 7, 8], "purge": true,
                   "mix_threads": 2});
    let mut s = Session::from_json(&job(dir, w)).unwrap();
    assert_eq!(s.phases(), &["grid", "cleanup"]);
    let (r0, w0) = io_counters();
    let rep = serde_json::to_value(s.run_phase("grid", &Control::new()).unwrap()).unwrap();
    let (r1, w1) = io_counters();

    // Whole records only, as iozone: a 40 KiB file of 12 KiB records is 3 records (36 KiB).
    let file_bytes: u64 = cells.iter().map(|c| c[0] / c[1] * c[1]).sum();
    let recs: u64 = cells.iter().map(|c| c[0] / c[1]).sum();
    let reclens: u64 = cells.iter().map(|c| c[1]).sum();
    let ops = &rep["ops"];
    for kind in [
        "write",
        "rewrite",
        "read",
        "reread",
        "random_read",
        "random_write",
        "bkwd_read",
        "record_rewrite",
        "stride_read",
        "fwrite",
        "frewrite",
        "fread",
        "freread",
    ] {
        assert_eq!(ops[kind]["count"], recs, "{kind} count");
        assert_eq!(ops[kind]["bytes"], file_bytes, "{kind} bytes");
    }
    assert!(ops.get("mix").is_none(), "mix is not in the per-op tables");
    assert_eq!(rep["counters"]["cells"], 4);
    assert_eq!(rep["counters"]["cells_failed"], 0);
    let out = rep["extra"]["cells"].as_array().unwrap();
    assert_eq!(out.len(), 4);
    for (c, want) in out.iter().zip(cells) {
        assert_eq!(c["file_size"], want[0]);
        assert_eq!(c["record_size"], want[1]);
        assert_eq!(c["status"], "ok");
        let res = c["results"].as_object().unwrap();
        assert_eq!(res.len(), 14, "every column has a value");
        let n = want[0] / want[1];
        assert_eq!(res["write"]["bytes"], n * want[1]);
        assert_eq!(res["write"]["ops"], n);
        // The mix: one reader and one writer, each through every record.
        assert_eq!(res["mix"]["bytes"], 2 * n * want[1]);
        for v in res.values() {
            assert!(v["KB_per_s"].as_f64().unwrap() > 0.0 && v["time_s"].as_f64().unwrap() > 0.0);
            let kb = v["bytes"].as_f64().unwrap() / 1024.0 / v["time_s"].as_f64().unwrap();
            assert!((kb - v["KB_per_s"].as_f64().unwrap()).abs() <= 1e-6 * kb);
        }
    }
    // What the kernel saw. Writes: write + rewrite, random write, record rewrite, fwrite + refwrite,
    // the mix's writer = 7 x the data. Reads: read + reread, random read, backward, stride,
    // fread + refread, the mix's reader = 8 x the data, plus the read test's priming record per
    // pass (iozone reads one record before each timed pass) and this test's /proc reads.
    assert_eq!(w1 - w0, 7 * file_bytes);
    let reads = r1 - r0;
    let want_reads = 8 * file_bytes + 2 * reclens;
    assert!(reads >= want_reads && reads < want_reads + 4096, "read {reads} bytes, want {want_reads} (+ /proc)");
    // The file is removed after each cell, as iozone does.
    assert!(!dir.join("iozone.tmp").exists());
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0);

    // fsync and close inside the timing, O_DIRECT off, a subset of tests: still whole records.
    let w = json!({"family": "iozone", "cells": [[32768, 8192]], "tests": [0, 4, 6], "fsync": true, "close": true});
    let mut s = Session::from_json(&job(dir, w)).unwrap();
    let rep = serde_json::to_value(s.run_phase("grid", &Control::new()).unwrap()).unwrap();
    assert_eq!(rep["extra"]["columns"], json!(["write", "rewrite", "record_rewrite", "fwrite", "frewrite"]));
    assert_eq!(rep["ops"]["fwrite"]["bytes"], 32768);
    assert!(rep["ops"].get("read").is_none());
    // By default, as iozone without -Q, only passes are timed: every record counted, no latency.
    for kind in ["write", "rewrite", "record_rewrite", "fwrite", "frewrite"] {
        assert_eq!(rep["ops"][kind]["count"], 4, "{kind} count");
        assert_eq!(rep["ops"][kind]["lat"]["count"], 0, "{kind}: no per-record latency without latency = true");
    }

    // latency = true (iozone -Q): one latency sample per record, the same pass figures.
    let w = json!({"family": "iozone", "cells": [[32768, 8192], [65536, 4096]], "tests": [0, 1], "latency": true});
    let mut s = Session::from_json(&job(dir, w)).unwrap();
    let rep = serde_json::to_value(s.run_phase("grid", &Control::new()).unwrap()).unwrap();
    for kind in ["write", "rewrite", "read", "reread"] {
        assert_eq!(rep["ops"][kind]["count"], 4 + 16, "{kind} count");
        assert_eq!(rep["ops"][kind]["lat"]["count"], 4 + 16, "{kind}: a latency per record");
        assert!(rep["ops"][kind]["lat"]["max_ns"].as_u64().unwrap() > 0);
    }
    for c in rep["extra"]["cells"].as_array().unwrap() {
        assert!(c["results"]["read"]["KB_per_s"].as_f64().unwrap() > 0.0);
    }

    // Bad cells and tests name the parameter.
    let e = err_of(dir, json!({"family": "iozone", "cells": [[4096, 8192]]}));
    assert!(e.starts_with("cells[0]:") && e.contains("larger than the file"), "{e}");
    let e = err_of(dir, json!({"family": "iozone", "cells": [[65536, 4096], [8192, 1000]], "direct": true}));
    assert!(e.starts_with("cells[1]:") && e.contains("multiple of 512"), "{e}");
    let e = err_of(dir, json!({"family": "iozone", "cells": [[65536, 4096]], "tests": [1]}));
    assert!(e.starts_with("tests:") && e.contains("include test 0"), "{e}");
    let e = err_of(dir, json!({"family": "iozone", "cells": [[65536, 4096]], "tests": [9]}));
    assert!(e.starts_with("tests:"), "{e}");
    let e = err_of(dir, json!({"family": "iozone", "cells": []}));
    assert!(e.starts_with("cells:"), "{e}");
    let e = err_of(dir, json!({"family": "iozone", "cells": [[65536, 4096]], "purge": true, "cache_size": 1000}));
    assert!(e.starts_with("cache_size:"), "{e}");
}
