"""A run of a fio job file keeps its result small when a job names many files: the file engines' jobs name one
file per create (fio's filecreate example: 16 jobs of 31,250 names)."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def run(tmp_path, text: str) -> dict:
    d = tmp_path / "d"
    d.mkdir()
    f = tmp_path / "jobs.fio"
    f.write_text(text)
    out = tmp_path / "out.json"
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", "run", str(f), "--dir", str(d), "-q", "--json", str(out), "--cache", "keep"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def test_a_long_list_of_file_names_keeps_its_first_64_and_the_count(tmp_path):
    doc = run(tmp_path, "[global]\nnrfiles=100\nioengine=filecreate\nfilesize=4k\nopenfiles=1\n\n[t0]\n[t1]\n")
    for name in ("t0", "t1"):
        w = doc["jobs"][name]["job"]["workload"]
        assert w["file_names"] == [f"{name}.0.{i}" for i in range(64)] and w["file_names_total"] == 100
        assert w["file_count"] == 100
        run_jobs = doc["phases"]["group0:run"]["jobs"]
        assert run_jobs[name]["ops"]["create"]["count"] == 100, "every name was still created"
    inner = doc["job"]["workload"]["jobs"][0]["workload"]
    assert len(inner["file_names"]) == 64 and inner["file_names_total"] == 100


def test_a_short_list_of_file_names_is_kept_whole(tmp_path):
    doc = run(tmp_path, "[w]\nrw=write\nbs=4k\nsize=64k\nnrfiles=3\n")
    w = doc["jobs"]["w"]["job"]["workload"]
    assert w["file_names"] == ["w.0.0", "w.0.1", "w.0.2"] and "file_names_total" not in w
