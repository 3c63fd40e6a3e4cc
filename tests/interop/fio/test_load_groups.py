"""fio job files whose jobs run at the same time (no stonewall between them): one measured phase per group,
each job's own figures under it, reported as fio reports its groups. The same work as fio is checked for the
group job files in tests/data/fio by tests/interop/test_fio_jobfile.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fsmeter.errors import UserError
from fsmeter.interop.fio.load import fio_workloads, map_jobfile
from fsmeter.interop.fio.mapped import MappedGroup

MiB = 1 << 20


def fsm(*args, env=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        timeout=timeout,
    )


def run_file(tmp_path: Path, text: str, *extra) -> tuple:
    f = tmp_path / "jobs.fio"
    f.write_text(text)
    d = tmp_path / "d"
    d.mkdir(exist_ok=True)
    out = tmp_path / "out.json"
    r = fsm("run", f, "--dir", d, "-q", "--json", out, "--cache", "keep", "--min-phase-s", "0", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text()), r.stdout


def io(job: dict, kind: str) -> tuple:
    o = (job.get("ops") or {}).get(kind) or {}
    return o.get("bytes", 0), o.get("count", 0)


READER_WRITER = """[global]
size=4m
[reader]
rw=read
bs=64k
[writer]
rw=randwrite
bs=4k
numjobs=2
"""


def test_jobs_without_stonewall_form_one_group(tmp_path):
    f = tmp_path / "g.fio"
    f.write_text(
        READER_WRITER + "[after]\nstonewall\nrw=read\nsize=1m\n[beside]\nrw=write\nsize=1m\n[last]\n"
        "wait_for_previous\nrw=read\nsize=1m\n"
    )
    assert [(j.name, j.group) for j in map_jobfile(f)] == [
        ("reader", 0),
        ("writer", 0),
        ("after", 1),
        ("beside", 1),
        ("last", 2),
    ]
    items = [m for _, m in fio_workloads(str(f))]
    assert [type(m).__name__ for m in items] == ["MappedGroup", "MappedGroup", "MappedJob"]
    assert [j.name for j in items[0].jobs] == ["reader", "writer"] and items[0].name == "group0"
    # One job picked out of a group runs alone.
    ((d, m),) = fio_workloads(f"{f}:writer")
    assert not isinstance(m, MappedGroup) and d.family.name == "access"


def test_reader_and_writer_run_together_each_doing_its_own_work(tmp_path):
    doc, out = run_file(tmp_path, READER_WRITER)
    assert list(doc["phases"]) == ["group0:prepare", "group0:run"]
    ph = doc["phases"]["group0:run"]
    jobs = ph["jobs"]
    assert list(jobs) == ["reader", "writer"]
    # Per job and direction: what each asked for (the writer's two clones: 2 x 4 MiB in 4 KiB writes).
    assert (io(jobs["reader"], "read"), io(jobs["reader"], "write")) == ((4 * MiB, 64), (0, 0))
    assert (io(jobs["writer"], "write"), io(jobs["writer"], "read")) == ((8 * MiB, 2048), (0, 0))
    assert jobs["writer"]["threads"] == 2 and jobs["reader"]["threads"] == 1
    # The group total is the sum of its jobs, shaped as a phase has it.
    assert ph["total"]["bytes"] == 12 * MiB and ph["total"]["ops"] == 64 + 2048
    assert io(ph, "read") == (4 * MiB, 64) and io(ph, "write") == (8 * MiB, 2048)
    assert doc["jobs"]["writer"]["phase"] == "group0" and doc["jobs"]["writer"]["fio_line"] == 6
    assert doc["jobs"]["writer"]["job"]["threads"] == 2
    # The terminal shows each job, then the group's line as fio's "Run status group".
    assert "group0:run / reader (line 3" in out and "group0:run / writer (line 6" in out
    assert "group 0 (all jobs): READ: bw=" in out and "WRITE: bw=" in out
    # CPU is measured for the group (the process), not per job: no job claims a CPU figure of its own.
    assert "cpu" not in jobs["reader"] and "cpu" in ph
    assert out.count("CPU: fsmeter") == 1 and "; CPU: fsmeter" in out
    # Nothing left behind.
    assert list((tmp_path / "d").iterdir()) == []


def test_jobs_of_a_group_overlap_in_time(tmp_path):
    # Time-based: both run until the group's common deadline, however fast the machine (a 4 MiB cached read
    # may be over before a second thread is even scheduled).
    doc, _ = run_file(
        tmp_path,
        "[global]\nsize=1m\ntime_based\nruntime=300ms\n[reader]\nrw=randread\n[writer]\nrw=randwrite\nnumjobs=2\n",
    )
    jobs = doc["phases"]["group0:run"]["jobs"]
    r, w = jobs["reader"], jobs["writer"]
    assert r["start_s"] < w["end_s"] and w["start_s"] < r["end_s"], (r["start_s"], r["end_s"], w["start_s"], w["end_s"])
    # Each ran until its runtime, and the group as long as its longest job.
    assert min(r["end_s"], w["end_s"]) >= 0.3
    assert doc["phases"]["group0:run"]["elapsed_s"] >= max(r["end_s"], w["end_s"]) - 1e-6
    assert io(r, "write")[1] == 0 and io(w, "read")[1] == 0 and io(r, "read")[1] > 0 and io(w, "write")[1] > 0


def test_group_reporting_merges_the_jobs_of_a_group_into_one_table(tmp_path):
    doc, out = run_file(tmp_path, READER_WRITER.replace("[global]\n", "[global]\ngroup_reporting\n"))
    assert "(group 0: reader, writer, group_reporting)" in out
    assert "/ reader (line" not in out and "group 0 (all jobs)" not in out
    # The JSON keeps each job's own figures all the same.
    assert io(doc["phases"]["group0:run"]["jobs"]["reader"], "read") == (4 * MiB, 64)


def test_a_stonewall_between_groups_still_serialises_them(tmp_path):
    text = "[global]\nsize=2m\nbs=64k\n[w1]\nrw=write\n[r1]\nrw=read\n[w2]\nstonewall\nrw=write\n[r2]\nrw=randread\n"
    doc, _ = run_file(tmp_path, text)
    assert [k for k in doc["phases"] if k.endswith(":run")] == ["group0:run", "group1:run"]
    g0, g1 = doc["phases"]["group0:run"], doc["phases"]["group1:run"]
    assert list(g0["jobs"]) == ["w1", "r1"] and list(g1["jobs"]) == ["w2", "r2"]
    # Each group is a phase of its own, run after the one before: no job of one appears in the other.
    assert "w2" not in doc["phases"]["group0:prepare"]["jobs"] and "w1" not in doc["phases"]["group1:prepare"]["jobs"]
    for g, names in ((g0, ("w1", "r1")), (g1, ("w2", "r2"))):
        w, r = (g["jobs"][n] for n in names)
        assert io(w, "write") == (2 * MiB, 32) and io(r, "read") == (2 * MiB, 32)


def test_a_lone_job_has_the_same_shape(tmp_path):
    doc, _ = run_file(tmp_path, "[only]\nrw=write\nsize=1m\nbs=64k\n")
    ph = doc["phases"]["only:run"]
    j = ph["jobs"]["only"]
    assert io(j, "write") == (MiB, 16) and j["start_s"] == 0.0 and j["end_s"] == ph["elapsed_s"]


def test_set_reaches_every_job_of_a_group(tmp_path):
    doc, _ = run_file(tmp_path, READER_WRITER, "--set", "backend=null")
    for name in ("reader", "writer"):
        assert doc["jobs"][name]["job"]["backend"] == "null"
        assert doc["phases"]["group0:run"]["jobs"][name]["extra"]["backend"] == "null"


def test_errors_in_a_group_name_the_job_file_line(tmp_path):
    f = tmp_path / "bad.fio"
    f.write_text("[global]\nsize=1m\n[r]\nrw=read\n[w]\nrw=write\nzipf=8\n")
    with pytest.raises(UserError, match=r"line 7: option zipf is not supported"):
        map_jobfile(f)
    f.write_text("[r]\nsize=1m\nrw=read\n[w]\nsize=1m\nrw=write\nstonewall=maybe\n")
    with pytest.raises(UserError, match=r"line 7: stonewall=maybe"):
        map_jobfile(f)
    # A --set value that one job of the group cannot take names the job and its line.
    f.write_text(READER_WRITER)
    r = fsm("run", f, "--dir", tmp_path, "-q", "--set", "queue_depth=4")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "line 3: job reader:" in r.stderr and r.stderr.strip().count("\n") == 0, r.stderr
