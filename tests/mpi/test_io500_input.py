"""`fsmeter io500` checks its options before it launches a rank or makes a filesystem: --ranks within what
this host can run, --size a size it can make, --dir under the rules of `fsmeter run`, --db a store that can
take the result, the space the writes may need. A stand-in mpirun on PATH records whether it was started."""

from __future__ import annotations

import os
import stat

import pytest
from fsmeter_cli import fsm

SMALL = [
    "--stonewall-s",
    "1",
    "--ior-easy-block",
    "4M",
    "--ior-hard-segments",
    "10",
    "--mdtest-easy-files",
    "10",
    "--mdtest-hard-files",
    "10",
    "--no-wait",
]


@pytest.fixture
def fake_mpirun(tmp_path, monkeypatch):
    """An mpirun first on PATH that only leaves a mark: the file it returns exists once it was started."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    mark = tmp_path / "mpirun-started"
    script = bindir / "mpirun"
    script.write_text(f"#!/bin/sh\ntouch '{mark}'\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return mark


def refused(r, *words):
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith("fsmeter: error: "), r.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--ranks", "1000000"], ["--ranks 1000000", "per CPU"]),
        (["--ranks", str(8 * len(os.sched_getaffinity(0)) + 1)], ["--ranks"]),
        (["--target", "loop", "--size", "0"], ["--size 0", "16 MiB"]),
        (["--target", "tmpfs", "--size", "9999999999999999999999G"], ["--size", "1 PiB"]),
        (["--target", "loop", "--size", "lots"], ["--size 'lots'"]),
        (["--target", "loop", "--fs", "nofs"], ["--fs nofs", "unknown filesystem"]),
        (["--target", "loop", "--mkfs-options", '"unclosed'], ["--mkfs-options"]),
        (["--target", "glusterfs", "--hosts", "1", "--ranks", "2"], ["at most --hosts"]),
        (["--ior-easy-block", "1P", "--ior-easy-transfer", "1M"], ["may write up to", "free under --dir"]),
    ],
)
def test_launcher_options_are_checked_before_mpirun(tmp_path, fake_mpirun, args, words):
    d = tmp_path / "d"
    d.mkdir()
    if "--target" not in args:
        args = [*args, "--dir", str(d)]
    base = [] if "--ior-easy-block" in args else SMALL[:-1]
    r = fsm("io500", *base, *args, "--no-wait", "--db", tmp_path / "s.sqlite", cwd=tmp_path)
    refused(r, *words)
    assert not fake_mpirun.exists() and list(d.iterdir()) == []


@pytest.mark.parametrize("where", ["/dev/shm", "/proc", "/sys/kernel"])
def test_dir_rules_are_those_of_run(tmp_path, fake_mpirun, where):
    refused(fsm("io500", "--dir", where, *SMALL, cwd=tmp_path), f"--dir {where}", "kernel interface")
    assert not fake_mpirun.exists()


def test_a_store_that_cannot_take_the_result_is_refused_before_the_suite(tmp_path, fake_mpirun):
    d = tmp_path / "d"
    d.mkdir()
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all\n" * 100)
    before = garbage.read_bytes()
    r = fsm("io500", "--dir", d, *SMALL, "--db", garbage, cwd=tmp_path)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 1 and len(lines) == 1 and "not a usable fsmeter results database" in lines[0]
    assert garbage.read_bytes() == before and not fake_mpirun.exists()
    r = fsm("io500", "--dir", d, *SMALL, "--db", tmp_path / "no" / "s.sqlite", cwd=tmp_path)
    refused(r, "--db", "does not exist")
    assert not fake_mpirun.exists()
