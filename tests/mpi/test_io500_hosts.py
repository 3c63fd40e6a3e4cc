"""`fsmeter io500` across two namespace hosts (fsmeter.provision.nshosts): one rank per host on a shared
directory, and on a GlusterFS volume fsmeter provisions (`--target glusterfs`), every phase present,
counts adding up over the hosts, find matching what mdtest-hard made.

Root only; skipped with the reason without root, Open MPI, mpi4py (or GlusterFS, for its test).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from fsmeter.mpi.io500 import PHASES, expected_find
from mpi_env import MPI_ENV, MPIRUN, have_mpi4py

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="namespace hosts need root"),
    pytest.mark.skipif(
        MPIRUN is None or not have_mpi4py(), reason="needs Open MPI (mpirun) and mpi4py: run `make build` as root"
    ),
    pytest.mark.skipif(
        shutil.which("ip") is None or shutil.which("unshare") is None,
        reason="needs iproute2 (ip) and util-linux (unshare)",
    ),
]

SMALL = [
    "--stonewall-s",
    "0.5",
    "--ior-easy-transfer",
    "256K",
    "--ior-easy-block",
    "8M",
    "--ior-hard-segments",
    "200",
    "--mdtest-easy-files",
    "200",
    "--mdtest-hard-files",
    "1010",
]
#: mdtest-hard's files are made from L0F1010 down: L0F1010 and L0F1001 hold "01", so find has matches even
#: when the stonewall stops the ranks after a few files (as it does on a Gluster volume).


def check_across_hosts(doc: dict, hosts: dict) -> None:
    assert doc["mpi"]["layout"] == hosts
    assert list(doc["phases"]) == [n for n, _, _ in PHASES]
    ph = doc["phases"]
    for name, rep in ph.items():
        per = rep["mpi"]["per_rank"]
        assert [x["host"] for x in per] == ["h1", "h2"], name
        assert rep["total"]["ops"] == sum(x["ops"] for x in per) > 0, name
        assert rep["io500"]["score"] > 0, name
    for name in ("ior-easy-write", "ior-hard-write", "mdtest-easy-write", "mdtest-hard-write"):
        assert len({x["ops"] for x in ph[name]["mpi"]["per_rank"]}) == 1, name  # worn out to one count
    hard_t = ph["ior-hard-write"]["mpi"]["per_rank"][0]["ops"]
    assert ph["ior-hard-read"]["total"]["bytes"] == 2 * hard_t * 47008
    mh = ph["mdtest-hard-write"]["mpi"]["per_rank"][0]["ops"]
    assert ph["mdtest-hard-delete"]["total"]["ops"] == ph["mdtest-hard-read"]["total"]["ops"] == 2 * mh
    assert ph["find"]["counters"]["found"] == expected_find(2, 1010, mh) > 0
    # ior-easy's read is IOR's -C: one host further on, so each rank reads the other host's file
    assert doc["mpi"]["read_shift"] == 1
    s = doc["score"]
    assert s["total"] > 0
    assert s["total"] == pytest.approx((s["bandwidth_GiB_per_s"] * s["metadata_kIOPS"]) ** 0.5)


def test_suite_on_two_namespace_hosts_shared_directory(tmp_path):
    from fsmeter.provision.nshosts import NsHosts

    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "out.json"
    with NsHosts(2) as hosts:
        cmd = hosts.mpirun(
            2, [sys.executable, "-m", "fsmeter", "io500", "--dir", d, *SMALL, "--json", out, "--no-store"]
        )
        p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **MPI_ENV}, timeout=150)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    check_across_hosts(doc, {"h1": [0], "h2": [1]})
    assert "SCORE" in p.stdout
    assert os.listdir(d) == []


@pytest.mark.root
@pytest.mark.skipif(
    shutil.which("glusterd") is None or shutil.which("glusterfs") is None,
    reason="needs GlusterFS: Debian packages glusterfs-server and glusterfs-client",
)
def test_suite_on_a_provisioned_gluster_volume_is_stored(scratch, tmp_path):
    out, db = tmp_path / "out.json", tmp_path / "s.sqlite"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsmeter",
            "io500",
            "--target",
            "glusterfs",
            "--hosts",
            "2",
            "--ranks",
            "2",
            "--fs",
            "ext4",
            "--size",
            "256M",
            *SMALL,
            "--json",
            out,
            "--db",
            db,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **MPI_ENV},
        timeout=170,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    check_across_hosts(doc, {"h1": [0], "h2": [1]})
    import sqlite3

    con = sqlite3.connect(db)
    extra = json.loads(con.execute("SELECT extra FROM environment").fetchone()[0])
    assert extra["mount"]["gluster"]["volume_type"] == "distribute"
    assert con.execute("SELECT value FROM metrics WHERE phase_key = 'io500' AND name = 'score'").fetchone()[
        0
    ] == pytest.approx(doc["score"]["total"])
    with open("/proc/self/mounts") as f:
        assert not [ln for ln in f if os.path.realpath(scratch) in ln]
