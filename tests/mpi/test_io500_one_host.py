"""`fsmeter io500` on one host: two real MPI ranks, IO500's twelve phases on a scaled-down suite (a
0.5 s stonewall, small ior and mdtest counts), the result stored and reported.

Skipped, with the reason, where Open MPI or mpi4py is missing (`make build` as root installs both).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from fsmeter.mpi.io500 import PHASES, expected_find
from mpi_env import MPI_ENV as ROOT_MPI_ENV
from mpi_env import MPIRUN, have_mpi4py

pytestmark = pytest.mark.skipif(
    MPIRUN is None or not have_mpi4py(), reason="needs Open MPI (mpirun) and mpi4py: run `make build` as root"
)

#: as root, and more ranks than CPUs
MPI_ENV = {**ROOT_MPI_ENV, "OMPI_MCA_rmaps_base_oversubscribe": "1"}
#: A suite that fits seconds: the stonewall may or may not cut the write phases; the counts add up either way.
#: mdtest-hard makes L0F1010 first, whose name holds "01": find has a match however early the stonewall falls.
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
    "300",
    "--mdtest-hard-files",
    "1010",
]


def mpirun(n: int, *args, timeout: int = 120) -> subprocess.CompletedProcess:
    cmd = [MPIRUN, "--oversubscribe", "-n", str(n), sys.executable, "-m", "fsmeter", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **MPI_ENV}, timeout=timeout)


def check_suite(doc: dict, ranks: int) -> None:
    """What every run of the suite must hold: every phase present and scored, counts adding up over
    the ranks, reads reading what the writes wrote, find matching what the tree holds."""
    assert list(doc["phases"]) == [n for n, _, _ in PHASES]
    ph = doc["phases"]
    for name, rep in ph.items():
        assert rep["io500"]["score"] > 0, name
        assert len(rep["mpi"]["per_rank"]) == ranks, name
        assert rep["total"]["ops"] == sum(x["ops"] for x in rep["mpi"]["per_rank"]), name
    # write phases: worn out, so every rank did as many as the busiest
    for name in ("ior-easy-write", "ior-hard-write", "mdtest-easy-write", "mdtest-hard-write"):
        per = {x["ops"] for x in ph[name]["mpi"]["per_rank"]}
        assert len(per) == 1, (name, per)
    easy_t = ph["ior-easy-write"]["mpi"]["per_rank"][0]["ops"]
    hard_t = ph["ior-hard-write"]["mpi"]["per_rank"][0]["ops"]
    assert ph["ior-easy-read"]["total"]["ops"] == ranks * easy_t
    assert ph["ior-easy-read"]["total"]["bytes"] == ranks * easy_t * (256 << 10)
    assert ph["ior-hard-read"]["total"]["bytes"] == ranks * hard_t * 47008
    assert ph["ior-hard-write"]["total"]["bytes"] == ranks * hard_t * 47008
    me = ph["mdtest-easy-write"]["mpi"]["per_rank"][0]["ops"]
    mh = ph["mdtest-hard-write"]["mpi"]["per_rank"][0]["ops"]
    assert ph["mdtest-easy-stat"]["total"]["ops"] == ph["mdtest-easy-delete"]["total"]["ops"] == ranks * me
    for name in ("mdtest-hard-stat", "mdtest-hard-read", "mdtest-hard-delete"):
        assert ph[name]["total"]["ops"] == ranks * mh, name
    assert ph["mdtest-hard-read"]["total"]["bytes"] == ranks * mh * 3901
    # find: every entry of the data tree stat'ed once over the ranks; the matches are mdtest-hard's "01" files
    found = ph["find"]["counters"]["found"]
    assert found == expected_find(ranks, 1010, mh) == doc["find_expected"]
    assert found > 0
    entries = (1 + ranks) + (1 + 1) + (1 + 2 * ranks + ranks * me) + (1 + 1 + ranks * mh)
    assert ph["find"]["counters"]["entries"] == entries
    s = doc["score"]
    assert s["total"] == pytest.approx((s["bandwidth_GiB_per_s"] * s["metadata_kIOPS"]) ** 0.5)


def test_two_ranks_small_suite_scores_stores_and_cleans_up(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    out, db = tmp_path / "out.json", tmp_path / "s.sqlite"
    r = mpirun(2, "io500", "--dir", d, *SMALL, "--json", out, "--db", db)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    check_suite(doc, 2)
    assert doc["mpi"]["ranks"] == 2
    assert "SCORE" in r.stdout and r.stdout.count("mdtest-hard-delete") >= 1
    assert os.listdir(d) == []  # the suite removed everything it made
    con = sqlite3.connect(db)
    rows = dict(con.execute("SELECT phase_key || '.' || name, value FROM metrics").fetchall())
    assert rows["io500.score"] == pytest.approx(doc["score"]["total"])
    assert rows["find.score"] == pytest.approx(doc["phases"]["find"]["io500"]["score"])
    assert con.execute("SELECT count(*) FROM phases").fetchone()[0] == 12
    rep = subprocess.run(
        [sys.executable, "-m", "fsmeter", "report", "--db", str(db)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
    )
    assert rep.returncode == 0, rep.stderr
    assert "io500" in rep.stdout


def test_leftover_data_folder_is_refused_in_one_line(tmp_path):
    d = tmp_path / "d"
    (d / "io500-data").mkdir(parents=True)
    r = mpirun(2, "io500", "--dir", d, *SMALL, "--no-store")
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("fsmeter: error:")]
    assert len(lines) == 1 and "io500-data is already there" in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert os.listdir(d) == ["io500-data"]  # left alone


def test_bounds_that_could_fill_the_filesystem_are_refused_before_any_write(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    r = mpirun(2, "io500", "--dir", d, "--ior-easy-block", "1024T", "--no-store")
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("fsmeter: error:")]
    assert len(lines) == 1 and "more than the" in lines[0] and "GiB free under --dir" in lines[0], r.stderr
    assert os.listdir(d) == []  # refused before making anything


@pytest.mark.parametrize("name", ["io500-data", "io500-timestamp"])
def test_a_link_planted_under_a_name_the_suite_makes_is_refused(tmp_path, name):
    """A symbolic link in --dir named like the suite's data folder or timestamp file is never followed: the run
    stops with one error line before any phase, and the link's target outside keeps its bytes."""
    work, away, target = tmp_path / "work", tmp_path / "away", tmp_path / "outside"
    work.mkdir()
    away.mkdir()
    target.write_bytes(b"7 bytes")
    os.symlink(away if name == "io500-data" else target, work / name)
    env = {**os.environ, **MPI_ENV, "COLUMNS": "200"}
    args = ["io500", "--dir", work, "--ranks", "1", "--db", tmp_path / "r.sqlite", *SMALL]
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert len([ln for ln in r.stderr.splitlines() if ln.startswith("fsmeter: error:")]) == 1, r.stderr
    assert name in r.stderr
    assert list(away.iterdir()) == [] and target.read_bytes() == b"7 bytes"
    assert sorted(p.name for p in work.iterdir()) == [name] and (work / name).is_symlink()
