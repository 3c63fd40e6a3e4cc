"""The wheel is the whole of fsmeter: built with `maturin build`, installed into a fresh venv and run
from outside the source tree, it carries the helper programs every family needs (fsmeter-mix-task for
the AIM7 mix, fsmeter-blocklog for the crash family, fsmeter-diskmodel for the disk-model target)
and runs them.

Slow: it builds the wheel (incremental when target/ is warm) and installs the dependencies into a new
venv (from pip's cache or the package registry).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from repo_paths import ROOT

HELPERS = ("fsmeter/_bin/fsmeter-mix-task", "fsmeter/_bin/fsmeter-blocklog", "fsmeter/_bin/fsmeter-diskmodel")

pytestmark = pytest.mark.slow


def _maturin() -> str:
    exe = Path(sys.executable).parent / "maturin"
    found = str(exe) if exe.is_file() else shutil.which("maturin")
    if not found:
        pytest.skip("maturin is not installed in this environment (make build installs it)")
    return found


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv folder, wheel path): a wheel of this tree installed into a venv of its own."""
    tmp = tmp_path_factory.mktemp("wheel")
    r = subprocess.run(
        [_maturin(), "build", "--release", "-o", str(tmp / "dist")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    (wheel,) = (tmp / "dist").glob("fsmeter-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=600)
    r = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return venv, wheel


def _env() -> dict:
    """The caller's environment without anything that points fsmeter at the source tree's programs."""
    env = {k: v for k, v in os.environ.items() if k not in ("FSMETER_MIX_TASK", "PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(Path(sys.executable).parent))
    )
    return env


def _site_packages(venv: Path) -> Path:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import fsmeter, os; print(os.path.dirname(fsmeter.__file__))"],
        capture_output=True,
        text=True,
        cwd=venv,
        env=_env(),
        check=True,
    )
    return Path(out.stdout.strip())


def test_the_wheel_carries_every_helper_program_executable(installed):
    venv, wheel = installed
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for h in HELPERS:
            assert h in names, sorted(n for n in names if "_bin" in n)
            assert (z.getinfo(h).external_attr >> 16) & 0o111, f"{h} is not executable in the wheel"
    pkg = _site_packages(venv)
    assert str(pkg).startswith(str(venv)), pkg  # the installed copy, not the source tree
    for h in HELPERS:
        assert os.access(pkg.parent / h, os.X_OK)


def test_aim7_disk_runs_its_task_program_from_the_installed_wheel(installed, tmp_path):
    venv, _ = installed
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "aim7.json"
    r = subprocess.run(
        [
            str(venv / "bin" / "fsmeter"),
            "run",
            "aim7-disk",
            "--dir",
            str(work),
            "-q",
            "--json",
            str(out),
            "--set",
            "tasks=1,2",
            "--set",
            "jobs_per_task=2",
            "--set",
            "pool_size=64K",
        ],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    job = doc["job"]["workload"]
    assert job["task_mode"] == "process"
    assert job["task_program"] == str(_site_packages(venv) / "_bin" / "fsmeter-mix-task")
    subs = doc["phases"]["subruns"]["extra"]["subruns"]
    assert [s["tasks"] for s in subs] == [1, 2] and all(s["jpm"] > 0 for s in subs)
    assert list(work.iterdir()) == []


def test_a_crash_cycle_runs_the_installed_blocklog(installed, root, scratch, tmp_path):
    venv, _ = installed
    out = tmp_path / "crash"
    r = subprocess.run(
        [
            str(venv / "bin" / "fsmeter"),
            "crash",
            "run",
            "crash-quick",
            "--out",
            str(out),
            "--db",
            str(tmp_path / "c.sqlite"),
            "--set",
            "campaign.crash_points=1",
        ],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["status"] == "done"
    (cell,) = doc["cells"]
    assert cell["status"] == "done", cell.get("cause")
    (point,) = cell["points"]
    assert point["check"]["counters"]["blocks_lost_beyond_fsync"] == 0
