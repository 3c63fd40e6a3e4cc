//! Builds the helper programs the Python package runs as separate processes and puts them
//! where the package looks for them (`python/fsmeter/_bin/`):
//!
//! - `fsmeter-mix-task` (crates/engine): one small process per task of the AIM7 mix family;
//! - `fsmeter-blocklog` (crates/blocklog): the FUSE daemon that records the crash family's disk;
//! - `fsmeter-diskmodel` (crates/diskmodel): the FUSE daemon that serves a disk image with a
//!   spinning disk's timing (the disk-model target).
//!
//! maturin builds one cargo artifact, this extension module, and cannot put a second kind of
//! artifact (an executable) into the same wheel. This script runs while that one cargo build runs,
//! before maturin collects `python/fsmeter`, so every way of building the package — `maturin build`,
//! `pip install .`, `pip install -e .` (and so `make build`) — ships the helpers built from the
//! same sources as the extension. pyproject.toml's `include` list names `_bin/*` for the wheel,
//! since the folder is not under version control.
//!
//! The nested cargo gets a target folder of its own: the outer build holds the lock of the
//! workspace's. `FSMETER_NO_HELPERS=1` skips it (a build of the extension alone).

use std::env;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const HELPERS: [(&str, &str); 3] = [
    ("fsmeter-engine", "fsmeter-mix-task"),
    ("fsmeter-blocklog", "fsmeter-blocklog"),
    ("fsmeter-diskmodel", "fsmeter-diskmodel"),
];

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.join("..").join("..");
    let bin_dir = root.join("python").join("fsmeter").join("_bin");
    for watched in [
        "crates/engine/src",
        "crates/engine/Cargo.toml",
        "crates/blocklog/src",
        "crates/blocklog/Cargo.toml",
        "crates/fusedisk/src",
        "crates/fusedisk/Cargo.toml",
        "crates/diskmodel/src",
        "crates/diskmodel/Cargo.toml",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    for (_, bin) in HELPERS {
        // a helper deleted from the package folder is built again
        println!("cargo:rerun-if-changed={}", bin_dir.join(bin).display());
    }
    println!("cargo:rerun-if-env-changed=FSMETER_NO_HELPERS");
    if env::var_os("FSMETER_NO_HELPERS").is_some_and(|v| v == "1") {
        return;
    }

    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // OUT_DIR = <target>/[<triple>/]<profile>/build/fsmeter-pyext-<hash>/out: keep the helpers' build next to
    // the profile's, shared by every build of this crate, so that it stays incremental.
    let target_dir =
        out_dir.ancestors().nth(3).map(|p| p.join("fsmeter-helpers")).unwrap_or_else(|| out_dir.join("helpers"));
    let triple = env::var("TARGET").expect("cargo sets TARGET");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());

    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--release")
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .arg("--target")
        .arg(&triple)
        .arg("--target-dir")
        .arg(&target_dir);
    for (package, bin) in HELPERS {
        cmd.arg("-p").arg(package).arg("--bin").arg(bin);
    }
    // the outer build's settings for this package only, never the nested build's
    for var in ["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET", "CARGO_PRIMARY_PACKAGE", "RUSTC_WORKSPACE_WRAPPER"] {
        cmd.env_remove(var);
    }
    let status = cmd.status().unwrap_or_else(|e| panic!("cannot run cargo to build the helper programs: {e}"));
    if !status.success() {
        panic!("building the helper programs ({}) failed: {status}", HELPERS.map(|(_, b)| b).join(", "));
    }

    fs::create_dir_all(&bin_dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", bin_dir.display()));
    for (_, bin) in HELPERS {
        let built = target_dir.join(&triple).join("release").join(bin);
        install(&built, &bin_dir.join(bin));
    }
}

/// Copy `from` to `to` through a temporary name, so that a running helper is never overwritten in place.
fn install(from: &Path, to: &Path) {
    let tmp = to.with_extension("tmp");
    fs::copy(from, &tmp).unwrap_or_else(|e| panic!("cannot copy {} to {}: {e}", from.display(), tmp.display()));
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("cannot make {} executable: {e}", tmp.display()));
    fs::rename(&tmp, to).unwrap_or_else(|e| panic!("cannot move {} to {}: {e}", tmp.display(), to.display()));
}
