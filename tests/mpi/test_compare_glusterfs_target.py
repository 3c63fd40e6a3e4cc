"""`fsmeter compare --target glusterfs`: brick filesystems compared on a GlusterFS volume of
namespace hosts from the command line, without writing a campaign file.

The end-to-end test is root only; skipped with the reason without root, loop devices, Open MPI,
mpi4py or GlusterFS. The input errors need none of it.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest
from mpi_env import MPI_ENV


def _mpi4py() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def _fsm(*args, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **MPI_ENV},
        timeout=timeout,
    )


def _gluster_processes() -> set:
    out = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            name, state = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()[0]
            if name.startswith("gluster") and state not in ("Z", "X"):
                out.add(int(pid))
    return out


@pytest.mark.root
@pytest.mark.skipif(
    shutil.which("mpirun") is None or not _mpi4py(),
    reason="needs Open MPI (mpirun) and mpi4py: run `make build` as root",
)
@pytest.mark.skipif(
    shutil.which("glusterd") is None or shutil.which("glusterfs") is None,
    reason="needs GlusterFS: Debian packages glusterfs-server and glusterfs-client",
)
def test_compare_brick_filesystems_on_a_two_host_volume(scratch, tmp_path):
    from fsmeter.provision.nshosts import namespaces

    db = tmp_path / "r.sqlite"
    before, before_ns = _gluster_processes(), set(namespaces())
    r = _fsm(
        "compare",
        "--target",
        "glusterfs",
        "--workloads",
        "seq-write",
        "--volume-option",
        "performance.write-behind=off",
        "--trials",
        2,
        "--quick-scale",
        0.3,
        "--size",
        "512M",
        "--db",
        db,
        "--report",
        tmp_path / "r.html",
        "-q",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    out = " ".join(r.stdout.split())
    # the matrix: the default brick filesystems as its columns, the workload as its row
    assert "which filesystem is fastest here" in out and "seq-write" in out
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT c.factors, t.status, e.target_kind, e.fs, e.extra FROM cells c JOIN trials t ON "
        "t.cell_id = c.id JOIN environment e ON e.trial_id = t.id ORDER BY c.idx, t.number"
    ).fetchall()
    assert [(json.loads(fa)["filesystem"], st, kind, fs) for fa, st, kind, fs, _ in rows] == [
        ("xfs", "ok", "glusterfs", "xfs"),
        ("xfs", "ok", "glusterfs", "xfs"),
        ("ext4", "ok", "glusterfs", "ext4"),
        ("ext4", "ok", "glusterfs", "ext4"),
    ]
    for _, _, _, fs, extra in rows:
        ex = json.loads(extra)
        assert ex["mpi"]["layout"] == {"h1": [0], "h2": [1]}  # one rank per host by default
        g = ex["mount"]["gluster"]
        assert g["servers"] == {"h2": "10.199.0.2"} and g["volume_type"] == "distribute"
        assert [b["fs"] for b in g["bricks"]] == [fs]
        assert g["volume_options"].get("performance.write-behind") == "off"
    assert (tmp_path / "r.html").is_file()
    assert set(namespaces()) - before_ns == set()
    assert _gluster_processes() - before == set()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--hosts", "3"], "--hosts applies to --target glusterfs only: add --target glusterfs or leave it out"),
        (["--volume-option", "a=b"], "--volume-option applies to --target glusterfs only"),
        (["--target", "nfs"], "--target nfs: use glusterfs (a volume on namespace hosts) or loop"),
        (["--target", "glusterfs", "--dir", "."], "--target glusterfs and --dir exclude each other"),
        (["--target", "glusterfs", "--kernel", "6.1"], "--target glusterfs and --kernel exclude each other"),
    ],
)
def test_compare_glusterfs_options_refused_in_one_line(args, message, tmp_path):
    r = _fsm("compare", *args, "--db", tmp_path / "r.sqlite", timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith(f"fsmeter: error: {message}"), r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "r.sqlite").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the option checks after the root check need root")
@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--volume-option", "performance.write-behind"],
            "--volume-option 'performance.write-behind': write KEY=VALUE",
        ),
        (["--volume-type", "stripe"], "--volume-type stripe: use distribute or replicate"),
    ],
)
def test_compare_glusterfs_bad_volume_settings_refused(args, message, tmp_path):
    if shutil.which("glusterd") is None or shutil.which("mpirun") is None:
        pytest.skip("needs GlusterFS and Open MPI, checked before the settings")
    r = _fsm("compare", "--target", "glusterfs", *args, "--db", tmp_path / "r.sqlite", timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith(f"fsmeter: error: {message}"), r.stderr
    assert not (tmp_path / "r.sqlite").exists()
