"""The tree (fdtree) family through `fsmeter run`: counters, files left behind, one-line errors."""

import json
import os
import subprocess
import sys

import pytest
from fsmeter.families.tree import TreeParams
from fsmeter.spec import build_job, load_workload
from repo_paths import ROOT


def fsmeter(*args):
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_run_reports_every_phase_with_the_documented_counters(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "out.json"
    levels, d, f, blocks, threads = 2, 3, 4, 2, 2
    r = fsmeter(
        "run",
        "fdtree-quick",
        "--dir",
        str(work),
        "-q",
        "--json",
        str(out),
        "--set",
        f"levels={levels}",
        "--set",
        f"dirs_per_level={d}",
        "--set",
        f"files_per_dir={f}",
        "--set",
        f"file_blocks={blocks}",
        "--set",
        f"threads={threads}",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    dirs = (1 + d + d * d) * threads
    files = dirs * f
    ph = doc["phases"]
    assert list(ph) == ["mkdir", "create", "stat", "remove", "rmdir"]
    assert ph["mkdir"]["counters"] == {"directories": dirs}
    assert ph["create"]["counters"] == {"files": files, "bytes": files * blocks * 4096}
    assert ph["stat"]["counters"] == {"files": files}
    assert ph["remove"]["counters"] == {"files": files}
    assert ph["rmdir"]["counters"] == {"directories": dirs}
    assert ph["create"]["total"]["ops"] == files
    # A tree this small takes milliseconds: every phase says it is too short to trust.
    assert all(any("under 1 s" in w for w in p["warnings"]) for p in ph.values())
    m = doc["metrics"]
    assert next(iter(m)) == "create.files_per_s"
    assert m["create.KiB_per_s"]["value"] == pytest.approx(ph["create"]["total"]["bytes_per_s"] / 1024)
    assert list(work.iterdir()) == []


def test_stat_false_skips_the_stat_phase(tmp_path):
    out = tmp_path / "out.json"
    r = fsmeter(
        "run",
        "fdtree-quick",
        "--dir",
        str(tmp_path),
        "-q",
        "--json",
        str(out),
        "--set",
        "levels=1",
        "--set",
        "dirs_per_level=2",
        "--set",
        "stat=false",
    )
    assert r.returncode == 0, r.stderr
    assert list(json.loads(out.read_text())["phases"]) == ["mkdir", "create", "remove", "rmdir"]


@pytest.mark.parametrize(
    "setting, name",
    [
        ("levels=-1", "levels"),
        ("dirs_per_level=0", "dirs_per_level"),
        ("files_per_dir=-3", "files_per_dir"),
        ("levels=40", "levels"),
        ("fanout=3", "fanout"),
        ("file_prefix=a/b", "file_prefix"),
        ("file_prefix=" + "x" * 201, "file_prefix"),
    ],
)
def test_bad_parameter_is_one_line_naming_it(tmp_path, setting, name):
    r = fsmeter("run", "fdtree-quick", "--dir", str(tmp_path), "-q", "--set", setting)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fsmeter: error: "), r.stderr
    assert name in lines[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "name", ["fdtree-quick", "fdtree-shallow-small", "fdtree-shallow-medium", "fdtree-deep-small", "fdtree-deep-medium"]
)
def test_presets_fit_a_1gib_image(tmp_path, name):
    """Each preset fits a 1 GiB ext4 image: <= 600 MiB of data and fewer entries than its 65,536 inodes."""
    p = build_job(load_workload(name), tmp_path).params
    assert isinstance(p, TreeParams)
    assert p.files() * p.file_size() <= 600 << 20
    assert p.directories() + p.files() < 60_000
    assert p.file_blocks in (1, 1024)  # small = 4 KiB, medium = 4 MiB


def test_directory_count_is_the_fdtree_formula():
    assert TreeParams().directories() == 11_111
    assert TreeParams().files() == 111_110
    assert TreeParams(levels=0).directories() == 1
    assert TreeParams(levels=12, dirs_per_level=2).directories() == 2**13 - 1
