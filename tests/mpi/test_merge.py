"""The aggregation of MPI ranks (fsmeter.mpi.merge), without MPI: IOR's rate definition fed the
same per-rank timings, exact HDR histogram merging, intervals on a common clock."""

from __future__ import annotations

import json
import math
import os

import pytest
from fsmeter.mpi.merge import merge_lat, merge_phase, value_at_quantile


def _report(ops, bytes_, start_ns, end_ns, lat=None, intervals=None, kind="write"):
    lat = lat or {
        "count": ops,
        "min_ns": 1000,
        "mean_ns": 1000.0,
        "stdev_ns": 0.0,
        "p50_ns": 1000,
        "p90_ns": 1000,
        "p99_ns": 1000,
        "p999_ns": 1000,
        "p9999_ns": 1000,
        "max_ns": 1000,
        "buckets": [[1023, ops]],
        "hdr": [[1000, ops]],
    }
    el = (end_ns - start_ns) / 1e9
    return {
        "phase": "run",
        "interrupted": False,
        "threads": 1,
        "warmup_s": 0.0,
        "elapsed_s": el,
        "total": {"ops": ops, "bytes": bytes_, "ops_per_s": ops / el, "bytes_per_s": bytes_ / el},
        "ops": {kind: {"count": ops, "bytes": bytes_, "ops_per_s": ops / el, "bytes_per_s": bytes_ / el, "lat": lat}},
        "intervals": intervals
        if intervals is not None
        else [{"t_s": el, "dur_s": el, "ops": ops, "bytes": bytes_, "ops_by_kind": {kind: ops}}],
        "cpu": {"user_s": 0.1, "sys_s": 0.2, "process_pct": 30.0, "sys_idle_pct": 50.0},
        "counters": {"files": ops},
        "extra": None,
        "warnings": [],
        "window_mono_ns": [start_ns, end_ns],
    }


def _ior_reduce(timers):
    """IOR's ReduceIterResults, restated: start timers reduced with MIN, stop timers with MAX over
    ranks; bandwidth = aggregate bytes / (max stop - min start)."""
    start = min(t["start"] for t in timers)
    stop = max(t["stop"] for t in timers)
    return sum(t["bytes"] for t in timers) / (stop - start), stop - start


def test_rate_is_iors_definition_on_the_same_per_rank_timings():
    # Four ranks, each with its own barrier release on its own monotonic clock (the clocks of
    # different processes/hosts differ by arbitrary offsets), and its window after that release.
    MiB = 1 << 20
    timers = [  # seconds after the common barrier: start, stop, bytes
        {"start": 0.001, "stop": 2.000, "bytes": 512 * MiB},
        {"start": 0.003, "stop": 2.500, "bytes": 512 * MiB},
        {"start": 0.000, "stop": 1.750, "bytes": 512 * MiB},
        {"start": 0.010, "stop": 3.010, "bytes": 512 * MiB},
    ]
    offsets = [5_000_000_000, 17_123_456_789, 9, 123_000_000_000]  # each rank's clock at the barrier
    parts = []
    for r, (t, off) in enumerate(zip(timers, offsets)):
        rep = _report(t["bytes"] // MiB, t["bytes"], off + round(t["start"] * 1e9), off + round(t["stop"] * 1e9))
        parts.append({"rank": r, "host": "h", "barrier_mono_ns": off, "returned_mono_ns": 0, "report": rep})
    merged = merge_phase(parts, interval_s=1.0)
    bw, span = _ior_reduce(timers)
    assert merged["elapsed_s"] == pytest.approx(span, rel=1e-9)
    assert merged["total"]["bytes_per_s"] == pytest.approx(bw, rel=1e-9)
    assert merged["total"]["bytes"] == 2048 * MiB
    # per rank: its own bytes over its own window; min/mean/max of those; first/last done
    own = [t["bytes"] / (t["stop"] - t["start"]) for t in timers]
    m = merged["mpi"]
    assert m["rank_bytes_per_s"]["min"] == pytest.approx(min(own))
    assert m["rank_bytes_per_s"]["max"] == pytest.approx(max(own))
    assert m["rank_bytes_per_s"]["mean"] == pytest.approx(sum(own) / 4)
    assert m["first_done_s"] == pytest.approx(1.75) and m["last_done_s"] == pytest.approx(3.01)
    assert m["ranks"] == 4 and [x["rank"] for x in m["per_rank"]] == [0, 1, 2, 3]
    # not the sum of per-rank rates (what a naive aggregation would give)
    assert merged["total"]["bytes_per_s"] < sum(own)
    assert merged["counters"]["files"] == 2048
    assert merged["cpu"]["user_s"] == pytest.approx(0.4) and merged["cpu"]["sys_idle_pct"] == pytest.approx(50.0)


def _lat(hdr, mean, stdev, mn, mx):
    count = sum(c for _, c in hdr)
    return {
        "count": count,
        "min_ns": mn,
        "mean_ns": mean,
        "stdev_ns": stdev,
        "max_ns": mx,
        "p50_ns": 0,
        "p90_ns": 0,
        "p99_ns": 0,
        "p999_ns": 0,
        "p9999_ns": 0,
        "buckets": [],
        "hdr": hdr,
    }


def test_histograms_merge_exactly_hand_checked():
    # rank A: 8 fast ops, rank B: 2 slow ops. Merged 10 ops: p50 = the 5th smallest (ceil(0.5*10) = 5),
    # which is fast; p90 = the 9th, slow. Averaging the ranks' p50s would give (100+5000)/2 = 2550.
    a = _lat([[100, 6], [120, 2]], mean=105.0, stdev=8.0, mn=99, mx=120)
    b = _lat([[5000, 1], [6000, 1]], mean=5500.0, stdev=500.0, mn=4990, mx=5990)
    m = merge_lat([a, b])
    assert m["hdr"] == [[100, 6], [120, 2], [5000, 1], [6000, 1]]
    assert m["count"] == 10
    assert m["p50_ns"] == 100
    assert m["p90_ns"] == 5000  # 9th of 10
    assert m["p99_ns"] == 5990  # the 10th: bucket 6000 capped at the exact max
    assert m["min_ns"] == 99 and m["max_ns"] == 5990
    assert m["mean_ns"] == pytest.approx((105 * 8 + 5500 * 2) / 10)
    # pooled variance: within + between
    var = (8 * (8.0**2 + (105 - m["mean_ns"]) ** 2) + 2 * (500.0**2 + (5500 - m["mean_ns"]) ** 2)) / 10
    assert m["stdev_ns"] == pytest.approx(math.sqrt(var))
    # same buckets in both ranks add up
    m2 = merge_lat([_lat([[100, 1], [200, 3]], 175, 1, 90, 200), _lat([[200, 2], [300, 4]], 266, 1, 190, 300)])
    assert m2["hdr"] == [[100, 1], [200, 5], [300, 4]]
    assert m2["p50_ns"] == 200 and m2["p90_ns"] == 300


def test_quantile_rule_edges():
    assert value_at_quantile([[7, 1]], 0.5) == 7
    assert value_at_quantile([[1, 999], [2, 1]], 0.999) == 1  # ceil(0.999*1000) = 999
    assert value_at_quantile([[1, 999], [2, 1]], 0.9999) == 2
    assert value_at_quantile([], 0.5) == 0


def test_merge_refuses_reports_without_hdr_buckets():
    a = _lat([[100, 2]], 100, 0, 100, 100)
    a["hdr"] = []
    with pytest.raises(ValueError, match="hdr"):
        merge_lat([a])


def test_intervals_summed_on_a_common_clock():
    # rank 0 starts at 0.0 s, rank 1 at 0.2 s after the barrier (different clock offsets): 1 s samples.
    iv0 = [
        {"t_s": 1.0, "dur_s": 1.0, "ops": 10, "bytes": 100, "ops_by_kind": {"write": 10}},
        {"t_s": 2.0, "dur_s": 1.0, "ops": 20, "bytes": 200, "ops_by_kind": {"write": 20}},
    ]
    iv1 = [
        {"t_s": 1.0, "dur_s": 1.0, "ops": 1, "bytes": 10, "ops_by_kind": {"write": 1}},
        {"t_s": 1.5, "dur_s": 0.5, "ops": 2, "bytes": 20, "ops_by_kind": {"write": 2}},
    ]
    p0 = {
        "rank": 0,
        "host": "a",
        "barrier_mono_ns": 1000,
        "returned_mono_ns": 0,
        "report": _report(30, 300, 1000, 1000 + 2_000_000_000, intervals=iv0),
    }
    p1 = {
        "rank": 1,
        "host": "b",
        "barrier_mono_ns": 50_000,
        "returned_mono_ns": 0,
        "report": _report(3, 30, 50_000 + 200_000_000, 50_000 + 1_700_000_000, intervals=iv1),
    }
    m = merge_phase([p1, p0], interval_s=1.0)
    assert m["elapsed_s"] == pytest.approx(2.0)
    ivs = m["intervals"]
    assert [iv["ops"] for iv in ivs] == [11, 22]  # rank 1's samples: midpoints 0.7 s and 1.45 s
    assert sum(iv["bytes"] for iv in ivs) == m["total"]["bytes"] == 330
    assert ivs[-1]["t_s"] == pytest.approx(2.0)
    assert m["mpi"]["hosts"] == ["a", "b"]


def test_one_rank_merge_reproduces_the_engines_percentiles(tmp_path):
    """The merge reads percentiles with the hdrhistogram crate's rule: on one rank's report it must give
    back exactly what the engine computed itself."""
    from fsmeter.engine import EngineSession
    from fsmeter.spec import build_job, load_workload

    job = build_job(
        load_workload("fdtree-quick"), tmp_path, {"levels": 1, "dirs_per_level": 3, "files_per_dir": 40, "threads": 2}
    )
    s = EngineSession(job.engine_json(), for_merge=True)
    for ph in ("mkdir", "create"):
        rep = s.run_phase(ph)
    assert rep["window_mono_ns"][1] > rep["window_mono_ns"][0] > 0
    part = {"rank": 0, "host": "h", "barrier_mono_ns": rep["window_mono_ns"][0], "returned_mono_ns": 0, "report": rep}
    merged = merge_phase([part], interval_s=job.settings.interval_s)
    for kind, op in rep["ops"].items():
        mine = merged["ops"][kind]["lat"]
        assert sum(c for _, c in op["lat"]["hdr"]) == op["count"]
        for key in ("p50_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns", "min_ns", "max_ns", "count"):
            assert mine[key] == op["lat"][key], (kind, key)
        assert mine["buckets"] == op["lat"]["buckets"]
    assert merged["total"]["ops"] == rep["total"]["ops"]
    assert merged["elapsed_s"] == pytest.approx(rep["elapsed_s"], rel=1e-6)
    # two identical ranks: twice the counts, the same percentiles
    twice = merge_phase([part, {**part, "rank": 1}], interval_s=1.0)
    k = next(iter(rep["ops"]))
    assert twice["ops"][k]["count"] == 2 * rep["ops"][k]["count"]
    assert twice["ops"][k]["lat"]["p99_ns"] == rep["ops"][k]["lat"]["p99_ns"]
    # single-process sessions leave the merge fields out of their reports
    (tmp_path / "single").mkdir()
    s2 = EngineSession(
        build_job(load_workload("fdtree-quick"), tmp_path / "single", {"levels": 0, "files_per_dir": 2}).engine_json()
    )
    r2 = s2.run_phase("mkdir")
    assert "window_mono_ns" not in r2 and all("hdr" not in o["lat"] for o in r2["ops"].values())
    json.dumps(merged)


def test_stonewall_option_values():
    from fsmeter.errors import UserError
    from fsmeter.mpi.options import parse_stonewall

    assert parse_stonewall(None) is None and parse_stonewall("first-done") == "first-done"
    assert parse_stonewall("2.5") == 2.5
    for bad in ("0", "-1", "soon"):
        with pytest.raises(UserError, match="--stonewall"):
            parse_stonewall(bad)


def test_run_without_mpirun_refuses_stonewall(tmp_path):
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", "run", "fdtree-quick", "--dir", str(tmp_path), "--stonewall", "first-done"],
        capture_output=True,
        text=True,
        env={k: v for k, v in __import__("os").environ.items() if not k.startswith(("OMPI_", "PMI"))},
    )
    assert r.returncode == 2 and "under mpirun only" in r.stderr


def test_campaign_trial_fails_with_the_failing_ranks_message(tmp_path):
    """The runner's side of a rank failure, with a stand-in for mpirun that fails as an aborted job does:
    the trial and the cell are recorded failed, with the rank, host and error."""
    import sqlite3
    import subprocess
    import sys
    import textwrap

    fake = tmp_path / "fake-mpirun"
    fake.write_text(
        "#!/bin/sh\necho 'fsmeter: error: rank 1 of 2 on nodeB: phase create: No space left on device "
        "(os error 28); aborting all 2 ranks' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    work = tmp_path / "w"
    work.mkdir()
    f = tmp_path / "c.toml"
    f.write_text(
        textwrap.dedent(f"""\
        name = "fail"
        min_phase_s = 0
        [factors]
        ranks = [2]
        [[workloads]]
        name = "fdtree-quick"
        [repetitions]
        policy = "fixed"
        n = 1
        [mpi]
        mpirun = "{fake}"
        [target]
        kind = "dir"
        path = "{work}"
        """)
    )
    db = tmp_path / "r.sqlite"
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", "campaign", "run", str(f), "--db", str(db), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1, r.stderr  # its one cell failed: a campaign with no cell done exits 1
    assert "every cell failed" in r.stderr
    con = sqlite3.connect(db)
    ((status, cause),) = con.execute("SELECT status, cause FROM trials").fetchall()
    assert status == "failed"
    assert cause.startswith("mpirun -n 2 exited with 1: rank 1 of 2 on nodeB: phase create: No space left")
    ((cstatus,),) = con.execute("SELECT status FROM cells").fetchall()
    assert cstatus == "failed"
    assert os.listdir(work) == []


def test_campaign_mpi_section_errors():
    from fsmeter.campaign import parse_campaign, plan
    from fsmeter.errors import UserError

    base = 'name = "x"\n[[workloads]]\nname = "fdtree-quick"\n'
    with pytest.raises(UserError, match=r"c.toml:4: factors: ranks: levels are numbers of MPI ranks"):
        parse_campaign(base + "[factors]\nranks = [0, 2]\n", "c.toml")
    with pytest.raises(UserError, match=r"mpi\.stonewall: stonewall 'soon'"):
        parse_campaign(base + '[mpi]\nstonewall = "soon"\n', "c.toml")
    bonnie = base.replace("fdtree-quick", "bonnie-quick")
    with pytest.raises(UserError, match=r"mpi\.stonewall: workload bonnie-quick \(bonnie family\) cannot be stopped"):
        plan(parse_campaign(bonnie + '[mpi]\nstonewall = "first-done"\n[target]\nkind = "dir"\npath = "/tmp"\n'))
    with pytest.raises(UserError, match=r"mpi\.hosts: unknown field; allowed are ranks, mpirun, hostfile"):
        parse_campaign(base + '[mpi]\nhosts = "a"\n', "c.toml")


def test_iozone_grid_is_summed_per_cell_as_iozone_t_does():
    from fsmeter.mpi.merge import iozone_extra

    def grid(kb_write, kb_read, status="ok"):
        res = {"write": {"KB_per_s": kb_write, "ops_per_s": kb_write / 4, "time_s": 1.0, "ops": 10, "bytes": 40960}}
        if kb_read is not None:
            res["read"] = {"KB_per_s": kb_read, "ops_per_s": kb_read / 4, "time_s": 2.0, "ops": 10, "bytes": 40960}
        return {
            "columns": ["write", "read"],
            "cells": [{"file_size": 65536, "record_size": 4096, "status": status, "results": res}],
        }

    m = iozone_extra([grid(100.0, 300.0), grid(50.0, None, status="interrupted")])
    cell = m["cells"][0]
    assert cell["results"]["write"]["KB_per_s"] == 150.0 and cell["results"]["write"]["ops"] == 20
    assert (cell["results"]["write"]["rank_KB_per_s_min"], cell["results"]["write"]["rank_KB_per_s_max"]) == (50, 100)
    assert "read" not in cell["results"], "a test one rank did not finish is left out, not half-summed"
    assert cell["status"] == "interrupted" and m["merge"]["results_left_out"] == 1
    # the family's metrics read the merged figures
    from fsmeter.families.iozone import _cell_value

    assert _cell_value("write", 65536, 4096, "KB_per_s")({"extra": m}) == 150.0


def test_mix_jobs_per_minute_over_the_common_window():
    from fsmeter.mpi.merge import mix_extra

    def sub(tasks, rel_start_s, rel_end_s, barrier, jpm):
        return {
            "tasks": tasks,
            "jobs_per_task": 30,
            "real_time_s": rel_end_s - rel_start_s,
            "jpm": jpm,
            "jpm_per_task": jpm / tasks,
            "task_time_min_s": 1.0,
            "task_time_max_s": 2.0,
            "user_s": 1.0,
            "sys_s": 0.5,
            "tasks_rss_max_bytes": 10,
            "tasks_pss_max_bytes": 5,
            "disk_kib_per_s": 7.0,
            "interrupted": False,
            "release_mono_ns": barrier + int(rel_start_s * 1e9),
            "end_mono_ns": barrier + int(rel_end_s * 1e9),
            "jobs": {
                "disk_rr": {
                    "class": "disk",
                    "runs": 3 * tasks,
                    "total_s": 1.5,
                    "mean_ms": 0.0,
                    "max_ms": 9.0,
                    "units": 4,
                    "unit": "KiB",
                    "bytes_read": 100,
                    "bytes_written": 0,
                }
            },
        }

    # two ranks with unrelated monotonic clocks; rank 1 starts its 2-task subrun later and ends last
    b0, b1 = 10**12, 5 * 10**12
    parts = [
        {
            "rank": 0,
            "barrier_mono_ns": b0,
            "report": {"extra": {"subruns": [sub(1, 0.0, 1.0, b0, 1800.0), sub(2, 1.0, 3.0, b0, 1800.0)]}},
        },
        {
            "rank": 1,
            "barrier_mono_ns": b1,
            "report": {
                "extra": {
                    "subruns": [
                        sub(1, 0.0, 1.5, b1, 1200.0),
                        sub(2, 1.5, 4.0, b1, 1440.0),
                        sub(4, 4.0, 5.0, b1, 7200.0),
                    ]
                }
            },
        },
    ]
    m = mix_extra(parts, crossover_jpm_per_task=600.0)
    one, two = m["subruns"]
    # all ranks' jobs over (latest end - earliest start): 1 task: 2 x 30 jobs over 1.5 s
    assert one["jpm"] == pytest.approx(60 / 1.5 * 60) and one["real_time_s"] == pytest.approx(1.5)
    assert two["jpm"] == pytest.approx(120 / 3.0 * 60) and two["tasks_total"] == 4
    assert two["jpm_per_task"] == pytest.approx(two["jpm"] / 4)
    assert (two["rank_jpm_min"], two["rank_jpm_max"]) == (1440.0, 1800.0)
    assert two["jobs"]["disk_rr"]["runs"] == 12 and two["jobs"]["disk_rr"]["mean_ms"] == pytest.approx(1e3 * 3 / 12)
    # a tie keeps the first, as the engine does; per task of all ranks: 1200 at 1 task, 600 at 2
    assert m["peak_jpm"] == pytest.approx(2400.0) and m["peak_tasks"] == 1
    assert m["crossover_tasks"] == 2
    assert len(m["subruns"]) == 2, "4 tasks: only rank 1 ran it"
    assert mix_extra(parts, crossover_jpm_per_task=500.0)["crossover_tasks"] is None


def test_macro_phase_lasts_as_long_as_the_slowest_rank():
    from fsmeter.mpi.merge import macro_extra

    def x(real, bytes_):
        return {
            "real_s": real,
            "session_real_s": real + 1,
            "user_s": 0.5,
            "sys_s": 1.0,
            "bytes": bytes_,
            "files": 1,
            "MB_per_s": bytes_ / 1e6 / real,
            "tool": {"argv": ["cp"]},
        }

    m = macro_extra([x(2.0, 10**8), x(4.0, 10**8)])
    assert m["real_s"] == 4.0 and m["MB_per_s"] == pytest.approx(2e8 / 1e6 / 4.0)
    assert (m["user_s"], m["sys_s"], m["files"], m["rank_real_s_min"]) == (1.0, 2.0, 2, 2.0)
    assert m["session_real_s"] == 5.0 and m["tool"] == {"argv": ["cp"]}


def test_tree_extra_lines_up_every_ranks_trees():
    """Per-tree counts and ranges over all ranks, in rank order; a rank whose trees were whole (it
    sent no range) counts as visiting all of each of its trees' files."""
    from fsmeter.mpi.merge import tree_extra

    whole = {"trees": 2, "files_per_tree": 50, "files_by_tree": [50, 50]}
    part = {"trees": 2, "files_per_tree": 50, "files_by_tree": [20, 31], "file_range": [[0, 20], [0, 31]]}
    out = tree_extra([whole, part])
    assert out["trees"] == 4
    assert out["files_by_tree"] == [50, 50, 20, 31]
    assert out["file_range"] == [[0, 50], [0, 50], [0, 20], [0, 31]]
    assert "file_range" not in tree_extra([whole, whole])


def test_ranks_that_did_not_all_hold_at_the_start_are_flagged():
    def parts(held):
        return [
            {
                "rank": r,
                "host": "h",
                "barrier_mono_ns": 0,
                "returned_mono_ns": 0,
                "held": h,
                "report": _report(10, 10 << 20, 1_000_000, 101_000_000),
            }
            for r, h in enumerate(held)
        ]

    both = merge_phase(parts([True, True]), interval_s=1.0)
    assert [x["held_start"] for x in both["mpi"]["per_rank"]] == [True, True]
    assert not any("held at the phase's start" in w for w in both["warnings"])
    neither = merge_phase(parts([False, False]), interval_s=1.0)
    assert not any("held at the phase's start" in w for w in neither["warnings"])
    mixed = merge_phase(parts([True, False]), interval_s=1.0)
    assert [x["held_start"] for x in mixed["mpi"]["per_rank"]] == [True, False]
    assert any(w.startswith("ranks [0] held at the phase's start") for w in mixed["warnings"])
