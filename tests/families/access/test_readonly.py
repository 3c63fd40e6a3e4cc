"""A read-only access mix opens its files read-only (as fio and IOR do), so it can read files on a
read-only mount; a mix with writes is refused there with the system's reason, not a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SETS = [
    "--set",
    "file_size=4M",
    "--set",
    "total_bytes=4M",
    "--set",
    "record_size=64k",
    "--set",
    "duration_s=none",
    "--set",
    "warmup_s=0",
    "--set",
    "reuse_files=true",
]


def fsm(*args):
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def ro_view(root, tmp_path):
    """tmp_path/rw with the files, and tmp_path/ro: the same folder through a read-only bind mount."""
    rw, ro = tmp_path / "rw", tmp_path / "ro"
    rw.mkdir()
    ro.mkdir()
    subprocess.run(["mount", "--bind", str(rw), str(ro)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], check=True)
        yield rw, ro
    finally:
        subprocess.run(["umount", str(ro)], check=True)


def test_seq_read_reads_files_on_a_read_only_mount(ro_view, tmp_path):
    rw, ro = ro_view
    r = fsm("run", "seq-read", "--dir", rw, *SETS, "--keep-files", "-q", "--min-phase-s", "0")  # lays the file out
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out.json"
    r = fsm(
        "run",
        "seq-read",
        "--dir",
        ro,
        *SETS,
        "--keep-files",
        "--cache",
        "keep",
        "-q",
        "--min-phase-s",
        "0",
        "--json",
        out,
    )
    assert r.returncode == 0, r.stderr
    run = json.loads(out.read_text())["phases"]["run"]
    assert run["total"]["bytes"] == 4 << 20 and run["ops"]["read"]["count"] == 64


def test_a_mix_with_writes_is_refused_on_a_read_only_mount_with_the_reason(ro_view):
    rw, ro = ro_view
    r = fsm("run", "seq-write", "--dir", rw, *SETS, "--keep-files", "-q", "--min-phase-s", "0")
    assert r.returncode == 0, r.stderr
    r = fsm("run", "seq-write", "--dir", ro, *SETS, "--keep-files", "--cache", "keep", "-q", "--min-phase-s", "0")
    assert r.returncode != 0
    assert "Read-only file system" in r.stderr and "Traceback" not in r.stderr
