"""Per-direction block sizes under fio's random map (bssplit=READLIST,WRITELIST whose smallest sizes differ): fio
keeps one map of the job's smallest blocks, each direction draws and marks blocks in units of its own smallest size,
and the job ends the first time a draw's next free block lies past the file. So a 1 MiB write takes one block of a
64 KiB map, is never shortened, and the job often ends before its bytes are done, at a point that depends on the
draws. fsmeter keeps the same map and stop: compared here with fio itself over seeds, not run by run."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest
from fsmeter.interop.fio.job import map_job
from fsmeter.interop.fio_jobfile import parse_jobfile
from fsmeter_cli import fsm

MiB = 1 << 20
SEEDS = 40
FILE = 8 * MiB
JOB = "size=8m\nrw=randrw\nbssplit=64k/40:1024k/60,1024k/100\n"
# The spread of one job's figures, measured over 300 seeds of fio 3.33 (randrepeat=0, randseed=1..300) on this
# job: total 7.11 MiB mean, 1.91 MiB standard deviation; reads 4.93 (2.37) I/Os, writes 4.76 (1.60); 38% of the
# jobs end before their 8 MiB. fsmeter over 200 seeds: total 7.14 (1.80), reads 5.17 (2.76), writes 4.67 (1.47),
# 39% early. Two means of SEEDS jobs each differ by 3 standard errors of their difference, sqrt(2 / SEEDS) sd,
# in 0.3% of comparisons of the same law (normal approximation of a mean of 40): that is the tolerance.
SD = {"total": 1.91 * MiB, "reads": 2.37, "writes": 1.60, "early": math.sqrt(0.38 * 0.62)}


def _job_file(fio: bool) -> str:
    text = "[global]\n" + JOB + ("randrepeat=0\nfilename=data\n" if fio else "")
    # fio up to 3.34 with randrepeat=1 (its default) seeds its offsets by the job's number alone, whatever randseed says;
    # randrepeat=0 with randseed=N seeds every draw from N.
    return text + "".join(f"[s{i}]\nstonewall\nrandseed={i + 1}\n" for i in range(SEEDS))


def _stats(rows: list) -> dict:
    n = len(rows)
    return {
        "total": sum(r[0] + r[2] for r in rows) / n,
        "reads": sum(r[1] for r in rows) / n,
        "writes": sum(r[3] for r in rows) / n,
        "early": sum(r[0] + r[2] < FILE for r in rows) / n,
    }


def _fsmeter_rows(tmp_path: Path) -> list:
    f = tmp_path / "m.fio"
    f.write_text(_job_file(False))
    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "m.json"
    r = fsm("run", f, "--dir", d, "-q", "--json", out, "--cache", "keep", "--min-phase-s", "0", timeout=600)
    assert r.returncode == 0, r.stderr
    phases = json.loads(out.read_text())["phases"]
    rows = []
    for i in range(SEEDS):
        ops = phases[f"s{i}:run"]["ops"]
        rd, wr = ops.get("read", {}), ops.get("write", {})
        rows.append((rd.get("bytes", 0), rd.get("count", 0), wr.get("bytes", 0), wr.get("count", 0)))
    return rows


def _fio_rows(tmp_path: Path) -> list:
    f = tmp_path / "f.fio"
    f.write_text(_job_file(True))
    d = tmp_path / "fio"
    d.mkdir()
    r = subprocess.run(["fio", "--output-format=json", str(f)], capture_output=True, text=True, cwd=d, timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout[r.stdout.find("{") :])
    return [
        (j["read"]["io_bytes"], j["read"]["total_ios"], j["write"]["io_bytes"], j["write"]["total_ios"])
        for j in doc["jobs"]
    ]


def test_the_job_maps_onto_fios_map_with_a_note():
    (j,) = parse_jobfile("[j]\n" + JOB, "t.fio", {}).jobs
    m = map_job("t.fio", j, 0)
    assert m.params["random_map"] and m.params["random_map_block"] == 64 << 10 and m.params["alignment"] == 64 << 10
    assert [(e["size"], e["read_pct"]) for e in m.params["entries"]] == [(64 << 10, 100), (MiB, 100), (MiB, 0)]
    assert any(n.startswith("per-direction block sizes under fio's random map") for n in m.notes)


def test_the_note_prints_when_the_job_runs(tmp_path):
    f = tmp_path / "one.fio"
    f.write_text("[one]\n" + JOB)
    d = tmp_path / "d"
    d.mkdir()
    r = fsm("run", f, "--dir", d, "--cache", "keep", "--min-phase-s", "0")
    assert r.returncode == 0, r.stderr
    assert "note: one: per-direction block sizes under fio's random map" in " ".join(r.stdout.split())


def test_loops_with_the_per_direction_map_is_refused_naming_the_line(tmp_path):
    f = tmp_path / "loops.fio"
    f.write_text("[l]\n" + JOB + "loops=2\n")
    r = fsm("run", f, "--dir", tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("fsmeter: error: ") and "line 5" in r.stderr and "loops" in r.stderr
    assert "Traceback" not in r.stderr


def test_time_based_runs_only_with_randrepeat_0(tmp_path):
    # fio reseeds at each pass of a time-based job with randrepeat=1, so it repeats one pass; fsmeter draws each
    # pass afresh, as fio with randrepeat=0 does: over 1 s on 8 MiB, fio 3.33 did 8,867 reads and 7,257 writes
    # (0.82 writes per read: each pass ends on a write that is dropped).
    f = tmp_path / "tb.fio"
    f.write_text("[tb]\n" + JOB + "time_based\nruntime=1s\n")
    r = fsm("run", f, "--dir", tmp_path)
    assert r.returncode == 2 and "line 5" in r.stderr and "randrepeat=0" in r.stderr, r.stderr
    (j,) = parse_jobfile("[tb]\n" + JOB + "time_based\nruntime=1s\nrandrepeat=0\n", "t.fio", {}).jobs
    m = map_job("t.fio", j, 0)
    assert m.params["random_map_block"] == 64 << 10 and m.params["total_bytes"] is None


@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_totals_and_split_over_seeds_are_fios(tmp_path):
    fs, fio = _fsmeter_rows(tmp_path), _fio_rows(tmp_path)
    assert len(fs) == len(fio) == SEEDS
    for rows in (fs, fio):
        # A write is one block of the map, never shortened: whole 1 MiB writes; reads in 64 KiB steps.
        assert all(r[2] == r[3] * MiB for r in rows), rows
        assert all(r[0] % (64 << 10) == 0 and r[0] + r[2] <= FILE + MiB for r in rows), rows
    a, b = _stats(fs), _stats(fio)
    assert b["early"] > 0.2, "fio's stop rule should end some jobs early on this file"
    for k, sd in SD.items():
        tol = 3 * sd * math.sqrt(2 / SEEDS)
        assert abs(a[k] - b[k]) <= tol, f"{k}: fsmeter {a[k]:.3f} fio {b[k]:.3f} (allowed {tol:.3f}); {a} {b}"
