"""`mpirun -n N fsmeter run` and campaigns sweeping ranks, with 2 to 4 real MPI ranks (Open MPI).

Skipped, with the reason, where Open MPI or mpi4py is missing (`make build` as root installs both).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from mpi_env import MPI_ENV as ROOT_MPI_ENV
from mpi_env import MPIRUN, have_mpi4py

pytestmark = pytest.mark.skipif(
    MPIRUN is None or not have_mpi4py(), reason="needs Open MPI (mpirun) and mpi4py: run `make build` as root"
)

#: as root, and more ranks than CPUs
MPI_ENV = {**ROOT_MPI_ENV, "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def mpirun(n: int, *args, timeout: int = 180) -> subprocess.CompletedProcess:
    cmd = [MPIRUN, "--oversubscribe", "-n", str(n), sys.executable, "-m", "fsmeter", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **MPI_ENV}, timeout=timeout)


def fsm(*args, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **MPI_ENV},
        timeout=timeout,
    )


SMALL_TREE = ["--set", "levels=1", "--set", "dirs_per_level=4", "--set", "files_per_dir=30"]


def test_four_ranks_tree_one_merged_result(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "out.json"
    r = mpirun(4, "run", "fdtree-quick", "--dir", d, *SMALL_TREE, "--json", out, "-q", "--min-phase-s", "0")
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    files = (1 + 4) * 30  # one tree per rank: 5 directories x 30 files
    assert doc["mpi"]["ranks"] == 4 and doc["mpi"]["layout"] == {socket.gethostname(): [0, 1, 2, 3]}
    create = doc["phases"]["create"]
    assert create["total"]["ops"] == 4 * files
    assert create["ops"]["create"]["lat"]["count"] == 4 * files
    assert sum(c for _, c in create["ops"]["create"]["lat"]["buckets"]) == 4 * files
    assert "hdr" not in create["ops"]["create"]["lat"]  # used for the merge, not kept
    assert all(x["held_start"] for x in create["mpi"]["per_rank"])
    m = create["mpi"]
    assert len(m["per_rank"]) == 4 and all(x["ops"] == files for x in m["per_rank"])
    # the rate is the IOR definition: the total over (latest end - earliest start)
    span = max(x["end_s"] for x in m["per_rank"]) - min(x["start_s"] for x in m["per_rank"])
    assert create["elapsed_s"] == pytest.approx(span)
    assert create["total"]["ops_per_s"] == pytest.approx(4 * files / span)
    assert sum(iv["ops"] for iv in create["intervals"]) == 4 * files
    assert doc["metrics"]["create.files_per_s"]["value"] == pytest.approx(create["total"]["ops_per_s"])
    # one table, printed by rank 0 only, with the per-rank spread under it
    assert r.stdout.count("fdtree-quick / create") == 1
    assert "4 ranks on 1 host" in r.stdout and "imbalance" in r.stdout
    assert os.listdir(d) == []  # every rank removed its files and its folder


def test_two_ranks_seq_write_bytes_add_up(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "out.json"
    r = mpirun(
        2,
        "run",
        "seq-write",
        "--dir",
        d,
        "--set",
        "file_size=8M",
        "--set",
        "duration_s=0.3",
        "--set",
        "warmup_s=0",
        "--set",
        "interval_s=0.1",
        "--json",
        out,
        "-q",
        "--min-phase-s",
        "0",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    run = doc["phases"]["run"]
    per = run["mpi"]["per_rank"]
    assert [x["rank"] for x in per] == [0, 1]
    assert run["total"]["bytes"] == sum(x["bytes"] for x in per) > 0
    assert run["total"]["bytes_per_s"] == pytest.approx(run["total"]["bytes"] / run["elapsed_s"])
    assert doc["job"]["seed"] == 42 and doc["mpi"]["seeds"] == "42 + rank"
    # every rank set its phase up, then met the others at the start barrier: the measured work
    # began at that release, in every phase the engine's harness measures
    for ph in ("prepare", "run"):
        assert all(x["held_start"] for x in doc["phases"][ph]["mpi"]["per_rank"]), ph
        assert all(x["start_s"] >= 0 for x in doc["phases"][ph]["mpi"]["per_rank"]), ph
    assert not any("held at the phase's start" in w for w in run["warnings"])


def test_failing_rank_aborts_every_rank_with_rank_and_host(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    # rank 1 cannot build its tree: a plain file sits where its tree's root directory goes
    (d / "rank-00001").mkdir()
    (d / "rank-00001" / "tree-0").write_text("in the way")
    r = mpirun(2, "run", "fdtree-quick", "--dir", d, *SMALL_TREE, "-q", timeout=120)
    assert r.returncode != 0
    line = next(ln for ln in r.stderr.splitlines() if ln.startswith("fsmeter: error:"))
    assert f"rank 1 of 2 on {socket.gethostname()}" in line and "aborting all 2 ranks" in line
    assert "Traceback" not in r.stderr


def test_input_error_is_one_line_from_rank_0(tmp_path):
    r = mpirun(2, "run", "fdtree-quick", "--dir", tmp_path, "--set", "levels=-1", "-q")
    assert r.returncode == 2
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("fsmeter: error:")]
    assert len(errors) == 1 and "levels" in errors[0] and "every rank" in errors[0]


def test_stonewall_first_done_stops_the_others(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "out.json"
    # The same fixed work in every rank (16 MiB of 4 KiB writes): the first to finish stops the other,
    # each counts what it completed, so the total is at most the full work, and the stop is no interruption.
    r = mpirun(
        2,
        "run",
        "seq-write",
        "--dir",
        d,
        "--set",
        "file_size=16M",
        "--set",
        "total_bytes=16M",
        "--set",
        "duration_s=none",
        "--set",
        "warmup_s=0",
        "--set",
        "record_size=4K",
        "--stonewall",
        "first-done",
        "--json",
        out,
        "-q",
        "--min-phase-s",
        "0",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    run = doc["phases"]["run"]
    assert run["mpi"]["stonewall"]["mode"] == "first-done"
    assert run["mpi"]["stonewall"]["first_rank"] in (0, 1)
    assert 0 < run["total"]["bytes"] <= 2 * 16 * 2**20
    assert not doc["interrupted"] and not run["interrupted"]


def test_stonewall_refused_where_later_phases_need_everything(tmp_path):
    r = mpirun(2, "run", "bonnie-quick", "--dir", tmp_path, "--stonewall", "first-done", "-q")
    assert r.returncode == 2
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("fsmeter: error:")]
    assert len(errors) == 1 and "the bonnie family cannot be stopped early" in errors[0]


def tree_phases(doc: dict) -> dict:
    """Per phase of a merged tree run: (ops, files per tree, file ranges)."""
    return {
        k: (p["total"]["ops"], p["extra"].get("files_by_tree"), p["extra"].get("file_range"))
        for k, p in doc["phases"].items()
    }


def test_tree_create_stonewall_wearout_is_mdtests(tmp_path):
    """mdtest -W: after a timed stonewall in create, every tree (2 ranks x 2 threads) goes on to the
    fullest tree's count of files; stat, verify and remove then visit that many files per tree, and
    the files the wear-out wrote verify with their own numbers."""
    doc = run_two_ranks(
        tmp_path, "fdtree-quick", ["threads=2", "verify=crc32c"], ["--stonewall", "0.02", "--stonewall-wearout"]
    )
    create = doc["phases"]["create"]
    per_tree = create["extra"]["files_per_tree"]
    wear = create["mpi"]["stonewall"]["wearout"]
    target = wear["target_files_per_tree"]
    assert wear["files_at_stonewall"]["max"] == target < per_tree, "the stonewall stopped the trees early"
    assert wear["files_at_stonewall"]["min"] <= target
    ph = tree_phases(doc)
    assert ph["create"] == (4 * target, [target] * 4, None)
    assert create["ops"]["create"]["lat"]["count"] == 4 * target
    assert sum(iv["ops"] for iv in create["intervals"]) == 4 * target
    assert ph["stat"] == ph["remove"] == (4 * target, [target] * 4, [[0, target]] * 4)
    verify = doc["phases"]["verify"]
    assert verify["counters"]["files"] == 4 * target and verify["counters"]["verify_mismatches"] == 0
    assert ph["rmdir"][0] == ph["mkdir"][0]
    assert not doc["interrupted"] and not create["interrupted"]
    assert os.listdir(tmp_path / "d") == []


def test_tree_create_stonewall_without_wearout_visits_what_each_tree_has(tmp_path):
    doc = run_two_ranks(tmp_path, "fdtree-quick", ["threads=2"], ["--stonewall", "first-done"])
    create = doc["phases"]["create"]
    per_tree = create["extra"]["files_per_tree"]
    have = create["extra"]["files_by_tree"]
    files = create["mpi"]["stonewall"]["files"]["files_at_stonewall"]
    assert len(have) == 4 and max(have) == per_tree and files == {"min": min(have), "max": per_tree, "sum": sum(have)}
    assert create["total"]["ops"] == sum(have)
    ph = tree_phases(doc)
    for phase in ("stat", "remove"):
        ops, by_tree, ranges = ph[phase]
        assert ops == sum(have) and by_tree == have, phase
        if ranges is not None:  # present when a tree stopped early: the files each tree has, from the first
            assert ranges == [[0, n] for n in have], phase
    assert os.listdir(tmp_path / "d") == []


def test_campaign_sweeps_ranks_and_records_the_layout(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    f = tmp_path / "c.toml"
    f.write_text(
        textwrap.dedent(f"""\
        name = "scale"
        min_phase_s = 0
        [factors]
        ranks = [1, 2]
        [[workloads]]
        name = "fdtree-quick"
        params = {{ levels = 1, dirs_per_level = 3, files_per_dir = 20 }}
        [repetitions]
        policy = "fixed"
        n = 1
        [mpi]
        timeout_s = 120
        [target]
        kind = "dir"
        path = "{work}"
        """)
    )
    db = tmp_path / "r.sqlite"
    r = fsm("campaign", "run", f, "--db", db, "-q")
    assert r.returncode == 0, r.stdout + r.stderr
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT c.factors, t.status, e.extra FROM cells c JOIN trials t ON t.cell_id = c.id "
        "JOIN environment e ON e.trial_id = t.id ORDER BY c.idx"
    ).fetchall()
    assert [json.loads(fa)["ranks"] for fa, _, _ in rows] == [1, 2]
    assert all(st == "ok" for _, st, _ in rows)
    layouts = [json.loads(ex)["mpi"] for _, _, ex in rows]
    assert [x["ranks"] for x in layouts] == [1, 2]
    assert layouts[1]["layout"] == {socket.gethostname(): [0, 1]} and "--oversubscribe" in layouts[1]["command"]
    creates = con.execute(
        "SELECT m.value FROM metrics m JOIN trials t ON m.trial_id = t.id JOIN cells c ON "
        "t.cell_id = c.id WHERE m.name = 'files_per_s' AND m.phase_key = 'create' ORDER BY c.idx"
    )
    assert all(v > 0 for (v,) in creates)
    assert os.listdir(work) == []
    show = fsm("campaign", "show", "1", "--db", db)
    assert show.returncode == 0, show.stderr
    assert "aggregate rate against MPI ranks" in show.stdout and "speedup" in show.stdout
    rep = fsm("report", "--db", db, "-o", tmp_path / "r.html")
    assert rep.returncode == 0, rep.stderr
    html = (tmp_path / "r.html").read_text()
    assert "per-rank imbalance against MPI ranks" in html and "aggregate rate against MPI ranks" in html


def test_a_stuck_rank_is_timed_out_not_waited_for_forever(tmp_path):
    # rank 1 is "stuck" (sleeps far past the timeout) before a barrier; rank 0 gives up after 1 s,
    # names itself, where it waited and why, and MPI_Abort ends rank 1 too.
    script = tmp_path / "stuck.py"
    script.write_text(
        textwrap.dedent("""\
        import time
        from fsmeter.mpi.comm import World
        w = World(timeout_s=1.0)
        if w.rank == 1:
            time.sleep(120)
        w.barrier("before phase create")
        """)
    )
    cmd = [MPIRUN, "--oversubscribe", "-n", "2", sys.executable, str(script)]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **MPI_ENV}, timeout=90)
    assert r.returncode != 0
    line = next(ln for ln in r.stderr.splitlines() if ln.startswith("fsmeter: error:"))
    assert "rank 0 of 2" in line and "waited 1 s before phase create" in line and "aborting all 2 ranks" in line


def run_two_ranks(tmp_path, workload: str, sets: list, more: tuple = ()) -> dict:
    """`mpirun -n 2 fsmeter run WORKLOAD --set ... MORE` in a fresh folder; the merged result."""
    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "out.json"
    args = [a for s in sets for a in ("--set", s)]
    r = mpirun(2, "run", workload, "--dir", d, *args, *more, "--json", out, "-q", "--min-phase-s", "0")
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize(
    "workload,sets,phase",
    [
        ("postmark-quick", ["files=200", "transactions=600"], "create"),
        ("dbench-quick", ["duration_s=1", "warmup_s=0", "threads=1"], "run"),
    ],
)
def test_other_families_run_in_every_rank(tmp_path, workload, sets, phase):
    doc = run_two_ranks(tmp_path, workload, sets)
    rep = doc["phases"][phase]
    per = rep["mpi"]["per_rank"]
    assert len(per) == 2 and all(x["ops"] > 0 for x in per)
    assert rep["total"]["ops"] == sum(x["ops"] for x in per)
    if workload == "postmark-quick":  # every rank creates its own 200 files; rates from the merge
        assert rep["total"]["ops"] == 400
        assert rep["extra"]["rates"]["files_created_per_s"] == pytest.approx(400 / rep["elapsed_s"])
        assert doc["metrics"]["create.files_created_per_s"]["value"] == pytest.approx(400 / rep["elapsed_s"])
        tx = doc["phases"]["transactions"]
        assert tx["extra"]["rates"]["transactions_per_s"] == pytest.approx(
            tx["counters"]["transactions_measured"] / tx["elapsed_s"]
        )
        assert not any("rank 0's own figures" in w for w in rep["warnings"])


def test_stonewall_seconds_stops_every_rank_at_that_time(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "out.json"
    # a million PostMark transactions per rank on 200 small files take far longer than 0.5 s: the time
    # stonewall ends the phase on both ranks, each counting the transactions it completed.
    r = mpirun(
        2,
        "run",
        "postmark-quick",
        "--dir",
        d,
        "--set",
        "files=200",
        "--set",
        "transactions=1000000",
        "--stonewall",
        "0.5",
        "--json",
        out,
        "-q",
        "--min-phase-s",
        "0",
    )
    assert r.returncode == 0, r.stderr
    tx = json.loads(out.read_text())["phases"]["transactions"]
    assert tx["mpi"]["stonewall"] == {"mode": "time", "stonewall_s": 0.5}
    assert 0 < tx["counters"]["transactions_measured"] < 2_000_000
    assert all(x["ops"] > 0 for x in tx["mpi"]["per_rank"]) and not tx["interrupted"]
    assert tx["extra"]["rates"]["transactions_per_s"] == pytest.approx(
        tx["counters"]["transactions_measured"] / tx["elapsed_s"]
    )


def _headers(path, offsets):
    """(offset, write number, seed) of the verification headers at these offsets of a file."""
    import struct

    data = path.read_bytes()
    return [struct.unpack_from("<QQQ", data, o + 16) for o in offsets]


def test_shared_file_regions_and_reorder_shift(tmp_path):
    """IOR's shared file: one file, rank r on [r * file_size, + file_size); --reorder-shift 1 (IOR -C)
    makes each rank's measured phase work on its neighbour's region. The verification headers on disk
    say which rank wrote each region."""
    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "out.json"
    region = 4 << 20
    common = [
        "--set",
        f"file_size={region}",
        "--set",
        f"total_bytes={region}",
        "--set",
        "duration_s=none",
        "--set",
        "warmup_s=0",
        "--set",
        "verify=crc32c",
        "--json",
        out,
        "-q",
        "--min-phase-s",
        "0",
    ]
    r = mpirun(2, "run", "seq-write", "--dir", d, "--shared-file", "--keep-files", *common)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert os.listdir(d) == ["fsmeter.access.0"], "one file in --dir, no rank folders"
    f = d / "fsmeter.access.0"
    assert f.stat().st_size == 2 * region
    assert doc["phases"]["run"]["total"]["bytes"] == 2 * region
    assert doc["mpi"]["files"]["kind"] == "shared file" and doc["mpi"]["files"]["reorder_shift"] == 0
    # own regions: rank 0 (seed 42) wrote region 0, rank 1 (seed 43) region 1, both in the run (write number > 0)
    (o0, g0, s0), (o1, g1, s1) = _headers(f, [65536, region + 65536])
    assert (o0, s0, o1, s1) == (65536, 42, region + 65536, 43) and g0 > 0 and g1 > 0
    assert doc["phases"]["verify"]["counters"]["verify_blocks_checked"] == 2 * region // 65536
    assert "one shared set" in r.stdout

    r = mpirun(2, "run", "seq-write", "--dir", d, "--shared-file", "--reorder-shift", "1", *common)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["mpi"]["files"]["reorder_shift"] == 1
    assert doc["phases"]["verify"]["counters"]["verify_mismatches"] == 0
    assert os.listdir(d) == [], "every rank removed the shared file (the last one found it gone)"

    r = mpirun(2, "run", "seq-write", "--dir", d, "--shared-file", "--reorder-shift", "1", "--keep-files", *common)
    assert r.returncode == 0, r.stderr
    (_, _, s0), (_, _, s1) = _headers(f, [65536, region + 65536])
    assert (s0, s1) == (43, 42), "shifted: rank 1 wrote region 0 and rank 0 region 1"

    # on one host, "node" is a whole turn: said, not silently the same as no shift
    r = mpirun(
        2,
        "run",
        "seq-read",
        "--dir",
        d,
        "--shared-file",
        "--reorder-shift",
        "node",
        "--set",
        f"file_size={region}",
        "--set",
        "duration_s=0.2",
        "--set",
        "warmup_s=0",
        "-q",
        "--min-phase-s",
        "0",
    )
    assert r.returncode == 0, r.stderr
    assert "whole turn" in r.stdout and "each rank runs on its own region" in r.stdout


def test_shared_file_input_errors(tmp_path):
    r = mpirun(2, "run", "fdtree-quick", "--dir", tmp_path, "--shared-file", "-q")
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("fsmeter: error:")]
    assert r.returncode == 2 and len(errors) == 1 and "--shared-file" in errors[0] and "access" in errors[0]
    r = mpirun(2, "run", "seq-write", "--dir", tmp_path, "--reorder-shift", "1", "-q")
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("fsmeter: error:")]
    assert r.returncode == 2 and "needs --shared-file" in errors[0]
    r = mpirun(2, "run", "seq-write", "--dir", tmp_path, "--shared-file", "--reorder-shift", "-3", "-q")
    assert r.returncode == 2 and "--reorder-shift '-3'" in r.stderr
    r = fsm("run", "seq-write", "--dir", tmp_path, "--shared-file")
    assert r.returncode == 2 and "under mpirun only" in r.stderr
    assert os.listdir(tmp_path) == []


def test_campaign_mpi_shared_file_settings_and_command(tmp_path):
    from fsmeter.campaign import MpiModel
    from fsmeter.mpi.launch import mpirun_command
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="reorder_shift: needs shared_file"):
        MpiModel(reorder_shift="1")
    with pytest.raises(ValidationError, match="reorder_shift"):
        MpiModel(shared_file=True, reorder_shift="sideways")
    m = MpiModel(shared_file=True, reorder_shift=1)
    cmd = mpirun_command(m, 2, "seq-write", tmp_path, {}, tmp_path / "o.json", "fadvise", 0)
    assert cmd[cmd.index("--reorder-shift") + 1] == "1" and "--shared-file" in cmd


@pytest.mark.parametrize(
    "workload,sets",
    [
        ("iozone-quick", ["max_file_size=512K"]),
        ("aim7-quick", []),
        ("macro-quick", ["cp_size=8M", "tree_files=200", "tree_dirs=10"]),
    ],
)
def test_family_details_are_merged_not_rank_0s(tmp_path, workload, sets):
    """The metrics iozone, mix and macro read from their details come from every rank (each family's
    rule is unit-tested in test_mpi_merge); here: real ranks, and the figures add up."""
    doc = run_two_ranks(tmp_path, workload, sets)
    for key, rep in doc["phases"].items():
        assert not any("rank 0's own" in w for w in rep["warnings"])
        if key == "prepare":
            continue
        x = rep["extra"]
        assert x["merge"]["ranks"] == 2, key
        if workload == "iozone-quick":
            c = x["cells"][0]["results"]["write"]
            assert c["KB_per_s"] == pytest.approx(c["rank_KB_per_s_min"] + c["rank_KB_per_s_max"])
            assert c["bytes"] == 2 * x["cells"][0]["file_size"]
            assert doc["metrics"]["grid.write_KB_per_s_gmean"]["value"] > 0
        elif workload == "aim7-quick":
            assert [s["tasks_total"] for s in x["subruns"]] == [2, 4]
            s = x["subruns"][-1]
            assert s["jpm"] == pytest.approx(2 * 2 * s["jobs_per_task"] / s["real_time_s"] * 60)
            assert doc["metrics"]["subruns.jpm_at_2"]["value"] == pytest.approx(s["jpm"])
        else:
            assert rep["counters"]["bytes"] == x["bytes"]
            assert x["real_s"] == x["rank_real_s_max"] >= x["rank_real_s_min"]
            if key == "cp":
                assert x["bytes"] == 2 * (8 << 20)
                assert doc["metrics"]["cp.MB_per_s"]["value"] == pytest.approx(x["bytes"] / 1e6 / x["real_s"])


@pytest.mark.parametrize("workload,size", [("rand-write-4k", 4096), ("seq-write", 65536)])
def test_stonewall_wearout_brings_every_rank_to_the_busiest_count(tmp_path, workload, size):
    """IO500's rule (IOR -O stoneWallingWearOut=1): after the stonewall every rank goes on until it has
    done as many requests as the busiest; the merged phase counts all of it, histograms and intervals
    included, and records the counts at the stonewall."""
    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "out.json"
    r = mpirun(
        2,
        "run",
        workload,
        "--dir",
        d,
        "--stonewall",
        "0.2",
        "--stonewall-wearout",
        "--set",
        "file_size=64M",
        "--set",
        "duration_s=none",
        "--set",
        "total_bytes=4G",
        "--set",
        "warmup_s=0",
        "--json",
        out,
        "-q",
        "--min-phase-s",
        "0",
    )
    assert r.returncode == 0, r.stderr
    run = json.loads(out.read_text())["phases"]["run"]
    wear = run["mpi"]["stonewall"]["wearout"]
    target = wear["target_ops_per_rank"]
    assert wear["ops_at_stonewall"]["max"] == target < (4 << 30) // size, "the stonewall stopped the ranks early"
    assert [x["ops"] for x in run["mpi"]["per_rank"]] == [target, target]
    assert run["total"]["ops"] == 2 * target == run["ops"]["write"]["lat"]["count"]
    assert sum(iv["ops"] for iv in run["intervals"]) == 2 * target
    assert not run["interrupted"]


@pytest.mark.parametrize(
    "args,what",
    [
        (["seq-write", "--stonewall-wearout"], "needs --stonewall"),
        (["bonnie-quick", "--stonewall", "first-done", "--stonewall-wearout"], "stopped early"),
        (["postmark-quick", "--stonewall", "first-done", "--stonewall-wearout"], "cannot go on after a stonewall"),
        (["seq-write", "--stonewall", "1", "--stonewall-wearout", "--set", "verify=crc32c"], "not with verify"),
    ],
)
def test_stonewall_wearout_input_errors(tmp_path, args, what):
    r = mpirun(2, "run", args[0], "--dir", tmp_path, *args[1:], "-q")
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("fsmeter: error:")]
    assert r.returncode == 2 and len(errors) == 1 and what in errors[0], r.stderr


def test_campaign_mpi_wearout_setting(tmp_path):
    from fsmeter.campaign import MpiModel
    from fsmeter.mpi.launch import mpirun_command
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="stonewall_wearout: needs stonewall"):
        MpiModel(stonewall_wearout=True)
    cmd = mpirun_command(
        MpiModel(stonewall="5", stonewall_wearout=True), 2, "seq-write", tmp_path, {}, tmp_path / "o.json", "fadvise", 0
    )
    assert "--stonewall-wearout" in cmd and cmd[cmd.index("--stonewall") + 1] == "5"
