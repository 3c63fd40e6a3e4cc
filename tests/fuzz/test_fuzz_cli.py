"""The command-line fuzz's oracle (tests/helpers/fuzz_cli.py, run by scripts/fuzz_surfaces.py): each outcome it
reports is reached by an input known to cause it, so a clean table means what it says."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fuzz_cli import Case, run_case
from repo_paths import ROOT
from store_sample import fill


@pytest.fixture
def env():
    return {**os.environ, "PYTHONPATH": str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "sample.sqlite"
    fill(path)[0].close()
    return path


def outcome(case, tmp_path, env) -> Case:
    return run_case(case, tmp_path, env)


def test_a_clean_refusal_is_an_error_and_a_usage_error_too(tmp_path, env):
    c = outcome(Case("t", "no workload", ["run"], invalid="missing argument"), tmp_path, env)
    assert c.outcome == "error" and "Missing argument" in c.detail


def test_exit_0_for_an_input_known_invalid_is_acted_on(tmp_path, env):
    c = outcome(Case("t", "list", ["list"], invalid="pretend it is invalid"), tmp_path, env)
    assert c.outcome == "acted-on" and "exit 0" in c.detail


def test_a_file_written_outside_what_was_named_is_an_escape(tmp_path, env, store):
    def setup(work):
        (work / "s.sqlite").write_bytes(store.read_bytes())

    args = ["export", "1", "--db", "{work}/s.sqlite", "-o", "{work}/e.csv"]
    assert outcome(Case("t", "named", args, setup=setup, allowed=("e.csv",)), tmp_path, env).outcome == "ran"
    c = outcome(Case("t", "not named", args, setup=setup), tmp_path, env)
    assert c.outcome == "escape" and "e.csv" in c.detail
    c = outcome(
        Case("t", "input changed", args, setup=setup, allowed=("e.csv",), watch=("e.csv",), files={"e.csv": b"mine\n"}),
        tmp_path,
        env,
    )
    assert c.outcome == "escape" and "only reads changed: e.csv" in c.detail


def test_a_stand_in_started_for_an_invalid_input_is_acted_on(tmp_path, env):
    args = [
        "io500",
        "--dir",
        "{work}/d",
        "--no-store",
        "--no-wait",
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
    ]
    c = outcome(Case("t", "io500", args, stand_ins=("mpirun",), invalid="pretend"), tmp_path, env)
    assert c.outcome == "acted-on" and "started mpirun" in c.detail
    c = outcome(Case("t", "io500", args, stand_ins=("mpirun",)), tmp_path, env)
    assert c.outcome == "error" and "mpirun" in c.detail  # the stand-in's exit 1, said in one line


def test_no_exit_in_time_is_a_hang_and_everything_it_started_is_stopped(tmp_path, env):
    args = [
        "run",
        "seq-read",
        "--dir",
        "{work}/d",
        "-q",
        "--no-wait",
        "--set",
        "duration_s=600",
        "--set",
        "file_size=1M",
    ]
    c = outcome(Case("t", "a long run", args, timeout=8), tmp_path, env)
    assert c.outcome == "hang"
    left = subprocess.run(["pgrep", "-f", "duration_s=600"], capture_output=True, text=True).stdout.split()
    assert left == [], left
    assert list(tmp_path.iterdir()) == []  # the case's folder is removed


def test_the_script_prints_its_table_and_exits_0_on_a_small_clean_sample(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "fuzz_surfaces.py"),
            "--count",
            "12",
            "--surfaces",
            "usage,compare-runs",
            "--keep",
            str(tmp_path / "keep"),
            "--seed",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    last = [ln for ln in r.stdout.splitlines() if ln.startswith("all")][0].split()
    assert last[1:9] != ["0"] * 8 and last[3:9] == ["0"] * 6  # errors and runs; no defect of any kind
