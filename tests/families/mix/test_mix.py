"""The mix (AIM7 / re-aim) family: workfile parsing and bad inputs, a run with tasks 1,2
through `fsmeter run`, the job list agreeing with the engine, 64-task memory, and the charts."""

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from fsmeter import workfiles
from fsmeter.errors import UserError
from fsmeter.families.mix import MixParams, task_program
from repo_paths import ROOT


def fsmeter(*args):
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *args], capture_output=True, text=True, env=env, timeout=600
    )


def test_shipped_workfiles_have_reaims_weights():
    shared = workfiles.load("shared")
    assert len(shared.weights) == 53 and shared.total_hits == 780
    w = dict(shared.weights)
    assert (w["add_double"], w["disk_rr"], w["exec_test"], w["fork_test"], w["sync_disk_cp"]) == (30, 20, 20, 10, 10)
    disk = workfiles.load("disk")
    assert len(disk.weights) == 20 and set(h for _, h in disk.weights) == {20}
    assert all(j.startswith(("disk_", "sync_disk_")) for j, _ in disk.weights)


def test_parse_sizes_comments_and_colons():
    wf = workfiles.parse("# c\n\nFILESIZE: 10k\nPOOLSIZE 2M\n 5  disk_rr\n7 creat_clo\n", "wf")
    assert wf.weights == [("disk_rr", 5), ("creat_clo", 7)]
    assert (wf.file_kib, wf.pool_kib) == (10, 2048)


@pytest.mark.parametrize(
    "text, expect",
    [
        ("10 disk_rr\n5 disk_zz\n", "wf line 2: unknown job 'disk_zz'"),
        ("10 disk_aio_rr\n", "wf line 1: job 'disk_aio_rr' (libaio) is not implemented"),
        ("0 disk_rr\n", "wf line 1: job 'disk_rr' has 0 hits"),
        ("1 disk_rr\n2 disk_rr\n", "wf line 2: job 'disk_rr' already weighted on line 1"),
        ("1 disk_rr\nhello world\n", "wf line 2: 'hello world' is neither"),
        ("FILESIZE 10G\n1 disk_rr\n", "wf line 1"),
        ("# nothing\n", "wf: no '<hits> <job>' line"),
    ],
)
def test_bad_workfile_lines_are_named(text, expect):
    with pytest.raises(UserError, match=None) as e:
        workfiles.parse(text, "wf")
    assert expect in str(e.value)


def test_python_job_list_matches_the_engine(tmp_path):
    from fsmeter._engine import Session

    def session(names):
        job = {
            "dir": str(tmp_path),
            "workload": {
                "family": "mix",
                "tasks": [1],
                "task_mode": "thread",
                "weights": [{"job": n, "hits": 1} for n in names],
            },
        }
        return Session(json.dumps(job))

    session(workfiles.JOBS)  # every name Python accepts, the engine knows
    with pytest.raises(Exception, match="unknown job"):
        session(["not_a_job"])


@pytest.mark.parametrize(
    "value, expect",
    [("1,2,4,8", [1, 2, 4, 8]), ("peak", "peak"), ([2, 3], [2, 3]), ("crossover", "crossover"), (4, [4])],
)
def test_tasks_parameter_forms(value, expect):
    assert MixParams(tasks=value).tasks == expect


def test_search_goes_to_the_engine_as_a_search():
    spec = MixParams(tasks="peak", workfile="disk", task_mode="thread").engine_spec()
    assert spec["tasks"] == [] and spec["search"] == "peak"
    assert (spec["file_kib"], spec["pool_kib"]) == (10, 1024)
    assert len(spec["weights"]) == 20


def test_run_tasks_1_2_reports_jpm_per_subrun(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "out.json"
    r = fsmeter("run", "aim7-quick", "--dir", str(work), "-q", "--json", str(out), "--set", "tasks=1,2")
    assert r.returncode == 0, r.stderr
    assert "mix subruns" in r.stdout and "peak" in r.stdout
    doc = json.loads(out.read_text())
    rep = doc["phases"]["subruns"]
    subs = rep["extra"]["subruns"]
    assert [s["tasks"] for s in subs] == [1, 2]
    for s in subs:
        # re-aim's JPM: jobs per task / real time x 60 x tasks (aim7-quick: 20 jobs -> 53 after rounding up).
        assert s["jobs_per_task"] == 53
        assert s["jpm"] == pytest.approx(53 / s["real_time_s"] * 60 * s["tasks"])
        assert sum(j["runs"] for j in s["jobs"].values()) == 53 * s["tasks"]
        assert s["task_start_min_s"] >= 0
    peak = max(subs, key=lambda s: s["jpm"])
    m = doc["metrics"]
    assert next(iter(m)) == "subruns.peak_jpm"
    assert m["subruns.peak_jpm"]["value"] == pytest.approx(peak["jpm"])
    assert m["subruns.peak_tasks"]["value"] == peak["tasks"]
    assert m["subruns.jpm_at_2"]["value"] == pytest.approx(subs[1]["jpm"])
    assert list(work.iterdir()) == []  # cleanup removed dir/mix


@pytest.mark.parametrize(
    "setting, expect",
    [
        ("tasks=1,x", "tasks"),
        ("tasks=0", "tasks"),
        ("workfile=/nonexistent", "parameter workfile"),
        ("sync=sometimes", "sync"),
        ("file_size=1500", "file_size"),
        ("threads=4", "setting threads"),
    ],
)
def test_bad_parameters_are_one_line(tmp_path, setting, expect):
    r = fsmeter("run", "aim7-quick", "--dir", str(tmp_path), "-q", "--set", setting)
    assert r.returncode == 2, r.stdout + r.stderr
    assert expect in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_unknown_job_in_a_user_workfile_is_one_line(tmp_path):
    wf = tmp_path / "workfile.mine"
    wf.write_text("10 disk_rr\n10 disk_rrr\n")
    r = fsmeter("run", "aim7-quick", "--dir", str(tmp_path), "-q", "--set", f"workfile={wf}")
    assert r.returncode == 2
    assert (
        r.stderr.strip()
        == f"fsmeter: error: {wf} line 2: unknown job 'disk_rrr': see the mix family's job list in docs/mix.md (Jobs)"
    )


@pytest.mark.skipif(not task_program().is_file(), reason="task program not built (make build)")
def test_64_tasks_stay_under_300_MB(tmp_path):
    # 64 task processes, each creating and closing a file 3 x 1000 times: long enough to be sampled.
    wf = tmp_path / "wf"
    wf.write_text("1 creat_clo\n1 link_test\n")
    out = tmp_path / "out.json"
    r = fsmeter(
        "run",
        "aim7-quick",
        "--dir",
        str(tmp_path),
        "-q",
        "--json",
        str(out),
        "--set",
        f"workfile={wf}",
        "--set",
        "tasks=64",
        "--set",
        "jobs_per_task=4",
    )
    assert r.returncode == 0, r.stderr
    s = json.loads(out.read_text())["phases"]["subruns"]["extra"]["subruns"][0]
    assert s["tasks"] == 64
    assert 0 < s["tasks_rss_max_bytes"] < 300 * 2**20, s["tasks_rss_max_bytes"]


def test_jpm_charts_against_tasks_and_relative_to_a_baseline():
    from fsmeter.report.figures import PALETTE
    from fsmeter.report.figures import figure as _fig
    from fsmeter.report.mix import jpm_figures

    def cfg(label, v):
        return SimpleNamespace(label=label, values=[v, v], mean=v, ci=SimpleNamespace(half_width=1.0))

    def metric(n, a, b):
        cs = [cfg("ext4", a), cfg("xfs", b)]
        return SimpleNamespace(
            phase="subruns",
            name=f"jpm_at_{n}",
            configs=cs,
            config=lambda lab, cs=cs: next(c for c in cs if c.label == lab),
        )

    w = SimpleNamespace(
        workload="aim7-shared",
        metrics=[SimpleNamespace(phase="subruns", name="peak_jpm"), metric(1, 100.0, 150.0), metric(2, 200.0, 250.0)],
    )
    figs = jpm_figures(w, 0, _fig, PALETTE, baseline="xfs")
    assert [f["id"] for f in figs] == ["w0-mix-jpm", "w0-mix-rel"]
    assert figs[0]["data"][0]["x"] == [1, 2] and figs[0]["data"][0]["y"] == [100.0, 200.0]
    rel = {d["name"]: d["y"] for d in figs[1]["data"]}
    assert rel["xfs"] == [1.0, 1.0]
    assert rel["ext4"] == pytest.approx([100 / 150, 200 / 250])
    # Default baseline: the first configuration.
    assert "relative to ext4" in jpm_figures(w, 0, _fig, PALETTE)[1]["title"]


def test_verify_pattern_checks_the_disk_jobs_reads(tmp_path):
    out = tmp_path / "out.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsmeter",
            "run",
            "aim7-quick",
            "--dir",
            str(tmp_path),
            "-q",
            "--json",
            str(out),
            "--set",
            "workfile=disk",
            "--set",
            "verify=pattern",
            "--set",
            "tasks=1,2",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    sub = doc["phases"]["subruns"]
    assert doc["corrupt"] is None and "verified:" in r.stdout
    assert sub["counters"]["verify_mismatches"] == 0 and sub["counters"]["verify_blocks_checked"] > 100
    assert sub["extra"]["verify"]["algo"] == "pattern"
    bad = subprocess.run(
        [sys.executable, "-m", "fsmeter", "run", "aim7-quick", "--dir", str(tmp_path), "--set", "verify=sha256"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "verify" in bad.stderr and "pattern" in bad.stderr
