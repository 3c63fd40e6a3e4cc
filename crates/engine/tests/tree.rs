//! End-to-end tests of the tree (fdtree) workload through the Session API on a temp dir.

use std::path::Path;

use fsmeter_engine::{Control, Session};
use serde_json::{json, Value};

fn session(dir: &Path, threads: usize, workload: Value) -> Session {
    let job = json!({"dir": dir, "threads": threads, "interval_s": 0.05, "workload": workload});
    Session::from_json(&job.to_string()).expect("valid job")
}

fn run(s: &mut Session, phase: &str) -> Value {
    serde_json::to_value(s.run_phase(phase, &Control::new()).expect("phase runs")).unwrap()
}

fn tree(levels: u32, d: u32, f: u32, blocks: u64) -> Value {
    json!({"family": "tree", "levels": levels, "dirs_per_level": d, "files_per_dir": f, "file_blocks": blocks})
}

/// sum over i = 0..=L of D^i, written out the slow way.
fn expected_dirs(levels: u32, d: u64) -> u64 {
    (0..=levels).map(|i| d.pow(i)).sum()
}

/// (directories, files and their sizes) under `root`, root itself included.
fn census(root: &Path) -> (u64, Vec<u64>) {
    let mut dirs = 1;
    let mut sizes = Vec::new();
    for e in std::fs::read_dir(root).unwrap() {
        let e = e.unwrap();
        let md = e.metadata().unwrap();
        if md.is_dir() {
            let (d, s) = census(&e.path());
            dirs += d;
            sizes.extend(s);
        } else {
            sizes.push(md.len());
        }
    }
    (dirs, sizes)
}

fn count(r: &Value, key: &str) -> u64 {
    r["counters"][key].as_u64().unwrap_or_else(|| panic!("no counter {key} in {}", r["counters"]))
}

#[test]
fn counts_follow_the_formula_and_the_disk_agrees() {
    for (levels, d, f) in [(0, 5, 3), (1, 4, 2), (2, 3, 4), (3, 2, 1), (5, 1, 2), (2, 6, 0)] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = session(dir.path(), 1, tree(levels, d, f, 2));
        let dirs = expected_dirs(levels, d as u64);
        let files = dirs * f as u64;

        let mk = run(&mut s, "mkdir");
        assert_eq!(count(&mk, "directories"), dirs, "L={levels} D={d}");
        assert_eq!(mk["ops"]["mkdir"]["count"], dirs);
        let cr = run(&mut s, "create");
        assert_eq!(count(&cr, "files"), files);
        assert_eq!(count(&cr, "bytes"), files * 2 * 4096);
        assert_eq!(cr["total"]["ops"], files);

        let (on_disk_dirs, sizes) = census(&dir.path().join("tree-0"));
        assert_eq!(on_disk_dirs, dirs, "L={levels} D={d}");
        assert_eq!(sizes.len() as u64, files);
        assert!(sizes.iter().all(|&n| n == 8192), "file sizes {sizes:?}");

        let st = run(&mut s, "stat");
        assert_eq!(count(&st, "files"), files);
        assert_eq!(st["ops"]["stat"]["count"].as_u64().unwrap_or(0), files);

        let rm = run(&mut s, "remove");
        assert_eq!(count(&rm, "files"), files);
        let (_, sizes) = census(&dir.path().join("tree-0"));
        assert!(sizes.is_empty(), "files left after remove");
        let rd = run(&mut s, "rmdir");
        assert_eq!(count(&rd, "directories"), dirs);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the directory is not empty after rmdir");
    }
}

#[test]
fn the_default_tree_is_the_fdtree_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 1, json!({"family": "tree", "files_per_dir": 0}));
    let mk = run(&mut s, "mkdir");
    assert_eq!(count(&mk, "directories"), 11_111);
    assert_eq!(mk["extra"]["files_per_tree"], 0);
    let rd = run(&mut s, "rmdir");
    assert_eq!(count(&rd, "directories"), 11_111);
}

#[test]
fn threads_each_build_their_own_subtree() {
    let dir = tempfile::tempdir().unwrap();
    let threads = 3;
    let mut s = session(dir.path(), threads, tree(2, 3, 2, 1));
    let dirs = expected_dirs(2, 3);
    let mk = run(&mut s, "mkdir");
    assert_eq!(count(&mk, "directories"), dirs * threads as u64);
    assert_eq!(mk["threads"], threads);
    let cr = run(&mut s, "create");
    assert_eq!(count(&cr, "files"), dirs * 2 * threads as u64);
    let mut names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["tree-0", "tree-1", "tree-2"]);
    for n in &names {
        let (d, sizes) = census(&dir.path().join(n));
        assert_eq!(d, dirs, "{n}");
        assert_eq!(sizes.len() as u64, dirs * 2, "{n}");
    }
    let st = run(&mut s, "stat");
    assert_eq!(count(&st, "files"), dirs * 2 * threads as u64);
    run(&mut s, "remove");
    run(&mut s, "rmdir");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn short_phases_carry_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 1, tree(1, 2, 1, 1));
    let mk = run(&mut s, "mkdir");
    let w = mk["warnings"].as_array().unwrap();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].as_str().unwrap().contains("under 1 s"), "{w:?}");
    run(&mut s, "cleanup");
}

#[test]
fn cleanup_removes_an_interrupted_tree_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), b"mine").unwrap();
    let mut s = session(dir.path(), 2, tree(2, 3, 3, 1));
    run(&mut s, "mkdir");
    run(&mut s, "create");
    // As if interrupted half-way through remove: some files gone, all directories there.
    std::fs::remove_file(dir.path().join("tree-0/L2D2/L1F2")).unwrap();
    std::fs::write(dir.path().join("tree-1/L2D3/not-ours"), b"x").unwrap();
    let c = run(&mut s, "cleanup");
    assert_eq!(count(&c, "files"), 2 * 13 * 3 - 1);
    let mut left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    // tree-1 stays (with L2D3) because of the foreign file; tree-0 is gone.
    assert_eq!(left, ["keep.txt", "tree-1"]);
    assert!(dir.path().join("tree-1/L2D3/not-ours").exists());
    assert!(!dir.path().join("tree-1/L2D1").exists());
    assert_eq!(c["warnings"].as_array().unwrap().len(), 1);
}

#[test]
fn phases_out_of_order_and_leftovers_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), 1, tree(1, 2, 1, 1));
    let e = s.run_phase("create", &Control::new()).unwrap_err().to_string();
    assert!(e.contains("run the phases in order"), "{e}");
    run(&mut s, "mkdir");
    let e = s.run_phase("mkdir", &Control::new()).unwrap_err().to_string();
    assert!(e.contains("earlier run") && e.contains("File exists"), "{e}");
    run(&mut s, "cleanup");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn bad_specs_name_the_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let job = |w: Value| json!({"dir": dir.path(), "workload": w}).to_string();
    let err = |w: Value| Session::from_json(&job(w)).err().expect("rejected").to_string();
    assert!(err(json!({"family": "tree", "dirs_per_level": 0})).starts_with("dirs_per_level:"));
    assert!(err(json!({"family": "tree", "levels": 40})).starts_with("levels:"));
    assert!(err(json!({"family": "tree", "levels": 2000, "dirs_per_level": 1})).contains("PATH_MAX"));
    assert!(err(json!({"family": "tree", "write_size": 0})).starts_with("write_size:"));
    assert!(err(json!({"family": "tree", "file_prefix": "a/b"})).starts_with("file_prefix:"));
    assert!(err(json!({"family": "tree", "file_prefix": "x".repeat(201)})).starts_with("file_prefix:"));
    let neg = err(json!({"family": "tree", "levels": -1}));
    assert!(neg.contains("invalid value: integer `-1`"), "{neg}");
}

#[test]
fn write_size_and_fsync_do_not_change_what_lands_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = tree(1, 2, 2, 5);
    w["write_size"] = json!(6000);
    w["fsync"] = json!(true);
    let mut s = session(dir.path(), 1, w);
    run(&mut s, "mkdir");
    let cr = run(&mut s, "create");
    assert_eq!(cr["ops"]["create"]["bytes"], 6 * 5 * 4096);
    let (_, sizes) = census(&dir.path().join("tree-0"));
    assert_eq!(sizes, vec![5 * 4096; 6]);
    let f = std::fs::read(dir.path().join("tree-0/L1D1/L0F1")).unwrap();
    assert!(f.iter().all(|&b| b == 0));
    run(&mut s, "cleanup");
}

/// The phases of one tree spec with `file_range` (what MPI's stonewall and wear-out set).
fn ranged(range: Value) -> Value {
    json!({"family": "tree", "levels": 2, "dirs_per_level": 3, "files_per_dir": 2, "file_blocks": 1,
           "verify": "crc32c", "file_range": range})
}

fn files_on_disk(root: &Path) -> usize {
    census(root).1.len()
}

#[test]
fn file_range_goes_on_from_a_stopped_create_and_bounds_the_later_phases() {
    // 13 directories x 2 files = 26 files per tree; two trees.
    let dir = tempfile::tempdir().unwrap();
    let mut first = session(dir.path(), 2, ranged(json!([[0, 5], [0, 9]])));
    run(&mut first, "mkdir");
    let c1 = run(&mut first, "create");
    assert_eq!(c1["extra"]["files_by_tree"], json!([5, 9]));
    assert_eq!(count(&c1, "files"), 14);
    assert_eq!((files_on_disk(&dir.path().join("tree-0")), files_on_disk(&dir.path().join("tree-1"))), (5, 9));

    // The wear-out: each tree goes on from where it stopped to 12 files.
    let mut more = session(dir.path(), 2, ranged(json!([[5, 12], [9, 12]])));
    let c2 = run(&mut more, "create");
    assert_eq!(c2["extra"]["files_by_tree"], json!([7, 3]));
    assert_eq!(c2["total"]["ops"], 10);
    assert_eq!((files_on_disk(&dir.path().join("tree-0")), files_on_disk(&dir.path().join("tree-1"))), (12, 12));

    // The later phases visit those 12 files per tree; the continuation's files carry the right
    // write numbers (verify finds no mismatch), and the rest of the tree was never made.
    let mut rest = session(dir.path(), 2, ranged(json!([[0, 12], [0, 12]])));
    let st = run(&mut rest, "stat");
    assert_eq!(count(&st, "files"), 24);
    let v = run(&mut rest, "verify");
    assert_eq!(count(&v, "files"), 24);
    assert_eq!(v["counters"]["verify_mismatches"], 0, "{}", v["counters"]);
    assert_eq!(v["counters"]["verify_blocks_checked"], 24);
    let rm = run(&mut rest, "remove");
    assert_eq!(count(&rm, "files"), 24);
    let rd = run(&mut rest, "rmdir");
    assert_eq!(count(&rd, "directories"), 26);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the directory is not empty after rmdir");

    // Files are numbered by their place in the walk, not by the visit: a range from 1 checks the
    // second and third files as numbers 2 and 3 (numbering from the visit would find 2 mismatches).
    let mut a = session(dir.path(), 1, ranged(json!([[0, 3]])));
    run(&mut a, "mkdir");
    run(&mut a, "create");
    let mut later = session(dir.path(), 1, ranged(json!([[1, 3]])));
    let v = run(&mut later, "verify");
    assert_eq!((count(&v, "files"), v["counters"]["verify_mismatches"].as_u64()), (2, Some(0)), "{}", v["counters"]);
    run(&mut a, "cleanup");
}

#[test]
fn a_bad_file_range_names_the_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let job =
        |threads: usize, r: Value| json!({"dir": dir.path(), "threads": threads, "workload": ranged(r)}).to_string();
    let err = |threads, r| Session::from_json(&job(threads, r)).err().expect("rejected").to_string();
    let e = err(2, json!([[0, 3]]));
    assert!(e.starts_with("file_range:") && e.contains("1 ranges for 2 trees"), "{e}");
    let e = err(1, json!([[0, 27]]));
    assert!(e.starts_with("file_range:") && e.contains("26 files"), "{e}");
    let e = err(1, json!([[4, 3]]));
    assert!(e.starts_with("file_range:"), "{e}");
}

#[test]
fn file_prefix_goes_before_every_file_name_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let w = json!({"family": "tree", "levels": 1, "dirs_per_level": 2, "files_per_dir": 2, "file_blocks": 1,
                   "file_prefix": "file.mdtest"});
    let mut s = session(dir.path(), 1, w);
    for ph in ["mkdir", "create", "stat"] {
        run(&mut s, ph);
    }
    let mut names: Vec<String> = Vec::new();
    for e in walkdir(&dir.path().join("tree-0")) {
        names.push(e.strip_prefix(dir.path().join("tree-0")).unwrap().display().to_string());
    }
    names.sort();
    assert_eq!(
        names,
        [
            "L1D1",
            "L1D1/file.mdtestL0F1",
            "L1D1/file.mdtestL0F2",
            "L1D2",
            "L1D2/file.mdtestL0F1",
            "L1D2/file.mdtestL0F2",
            "file.mdtestL1F1",
            "file.mdtestL1F2"
        ]
    );
    for ph in ["remove", "rmdir"] {
        run(&mut s, ph);
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Every path under `root`, directories included.
fn walkdir(root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        }
        out.push(p);
    }
    out
}
