"""fio's latency_target, latency_window, latency_percentile and latency_run in job files: how they map onto the
access workload's depth search, what is refused, and the depth found against fio's own at the extremes where it
does not depend on the machine (a target no request meets: depth 1; one every request meets: the iodepth)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from bench_module import load_bench
from fsmeter.errors import UserError
from fsmeter.interop.fio.job import map_job
from fsmeter.interop.fio_export import fio_job
from fsmeter.interop.fio_jobfile import parse_jobfile
from fsmeter_cli import fsm


def one(text: str):
    (j,) = parse_jobfile(text, "t.fio", {}, {}).jobs
    return map_job("t.fio", j, 0)


BASE = "[j]\nrw=randread\nbs=4k\nioengine=io_uring\niodepth=16\nsize=1m\n"


def test_the_example_maps_target_and_window_in_microseconds():
    m = one(BASE + "latency_target=500000\nlatency_window=5000000\nlatency_percentile=99.9\n")
    assert m.params["latency_target"] == {
        "target_ns": 500_000_000,
        "window_ns": 5_000_000_000,
        "percentile": 99.9,
        "run": False,
    }
    assert m.params["queue_depth"] == 16
    assert any("only that window is reported" in n for n in m.notes)


def test_units_default_percentile_and_latency_run():
    m = one(BASE + "latency_target=10ms\nlatency_window=2s\nlatency_run=1\n")
    assert m.params["latency_target"] == {"target_ns": 10_000_000, "window_ns": 2_000_000_000, "run": True}
    assert any("latency_run" in n for n in m.notes)


def test_window_without_a_target_does_nothing_and_says_so():
    m = one(BASE + "latency_window=1s\nlatency_percentile=50\n")
    assert "latency_target" not in m.params
    assert any("without a latency_target" in n for n in m.notes)


@pytest.mark.parametrize(
    "extra,line,pattern",
    [
        ("latency_target=1000\nlatency_percentile=101\n", 8, r"latency_percentile=101: give a percentage"),
        ("latency_target=1000\nlatency_percentile=x\n", 8, r"latency_percentile=x: give a percentage"),
        ("latency_target=1000\nnumjobs=2\n", 8, r"numjobs=2: numjobs=2 with latency_target is not supported"),
        ("latency_target=1000\nrate_iops=100\n", 8, r"rate_iops=100: with latency_target is not supported"),
        ("latency_target=1000\nloops=2\n", 8, r"loops=2: with latency_target is not supported .*each loop"),
        ("latency_target=soon\n", 7, r"latency_target=soon: 'soon' is not a time"),
    ],
)
def test_what_cannot_be_honoured_is_refused_naming_the_line(extra, line, pattern):
    with pytest.raises(UserError, match=pattern) as exc:
        one(BASE + extra)
    assert f"line {line}:" in exc.value.message and "\n" not in exc.value.message


# -- against fio ----------------------------------------------------------------------------------------------------
FIOS = [f for f in ("/usr/bin/fio", "/tmp/fiobench-fio/fio", shutil.which("fio")) if f and Path(f).is_file()]


def _job(target: str, pct: str, size: str, extra: str = "") -> str:
    return (
        f"[lt]\nrw=randread\nbs=4k\ndirect=1\nioengine=io_uring\niodepth=8\nsize={size}\nfilename=lt.dat\n"
        f"latency_target={target}\nlatency_window=20ms\nlatency_percentile={pct}\n{extra}"
    )


def _fio(tmp_path: Path, text: str) -> dict:
    d = tmp_path / "fio"
    d.mkdir(exist_ok=True)
    (d / "j.fio").write_text(text)
    r = subprocess.run([FIOS[0], "j.fio", "--output-format=json"], cwd=d, capture_output=True, text=True, timeout=120)
    out = r.stdout
    return json.loads(out[out.index("{") :])["jobs"][0]


def _fsmeter(tmp_path: Path, text: str) -> dict:
    d = tmp_path / "fsm"
    d.mkdir(exist_ok=True)
    (tmp_path / "j.fio").write_text(text)
    out = tmp_path / "out.json"
    r = fsm(
        "run",
        tmp_path / "j.fio",
        "--dir",
        d,
        "-q",
        "--json",
        out,
        "--cache",
        "keep",
        "--min-phase-s",
        "0",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())["phases"]["lt:run"]


@pytest.mark.skipif(not FIOS, reason="fio is not installed")
def test_a_target_every_request_meets_finds_the_iodepth_as_fio_does(tmp_path):
    # 10 s per request: nothing is late. The job would run 30 s; both end it once the depth stops changing.
    text = _job("10s", "99", "16m", "time_based=1\nruntime=30\n")
    f = _fio(tmp_path, text)
    r = _fsmeter(tmp_path, text)
    lt = r["extra"]["latency_target"]
    assert f["latency_depth"] == 8 == lt["depth"]
    assert lt["search_ended_job"] and lt["stats_reset"]
    # Both report the final window only: far fewer reads than 30 s at this depth would do, and fsmeter's
    # measured time is that window, not the run.
    assert f["read"]["runtime"] < 30_000 and r["elapsed_s"] < 30
    # fsmeter's fio-format export carries fio's fields for it.
    j = fio_job("lt", 0, {}, [r], False)
    assert (
        j["latency_depth"],
        j["latency_target"],
        j["latency_target_ns"],
        j["latency_window"],
        j["latency_window_us"],
        j["latency_percentile"],
        j["error"],
    ) == (8, 10**10, 10**10, 20_000, 20_000, 99.0, 0)
    assert (f["latency_target"], f["latency_window"]) == (10**10, 20_000)


@pytest.mark.skipif(not FIOS, reason="fio is not installed")
def test_a_target_no_request_meets_stays_at_depth_1_and_does_the_size_as_fio_does(tmp_path):
    # 1 us: no O_DIRECT read is that fast; at 99% the job goes on at depth 1 until its size is done.
    text = _job("1", "99", "1m")
    f = _fio(tmp_path, text)
    r = _fsmeter(tmp_path, text)
    assert f["latency_depth"] == 1 == r["extra"]["latency_target"]["depth"]
    assert f["read"]["total_ios"] == 256 == r["ops"]["read"]["count"]


@pytest.mark.skipif(not FIOS, reason="fio is not installed")
def test_percentile_100_ends_at_the_first_late_request_as_fio_does(tmp_path):
    text = _job("1", "100", "1m")
    f = _fio(tmp_path, text)
    r = _fsmeter(tmp_path, text)
    assert f["error"] == 110  # ETIMEDOUT
    assert f["read"]["total_ios"] == 1 == r["ops"]["read"]["count"]
    assert r["extra"]["latency_target"]["ended_over_target_ns"] > 1000
    assert any("over latency_target" in w for w in r["warnings"])
    assert fio_job("lt", 0, {}, [r], False)["error"] == 110


def test_a_latency_target_job_beside_others_is_refused_naming_its_line(tmp_path):
    from fsmeter.interop.fio.load import map_jobfile

    f = tmp_path / "two.fio"
    f.write_text("[global]\nrw=randread\nsize=1m\n[a]\nlatency_target=1000\n[b]\n")
    with pytest.raises(UserError, match=r"line 4: job a: latency_target in a job that runs at the same time") as e:
        map_jobfile(f, tmp_path)
    assert "stonewall" in e.value.message
    f.write_text("[global]\nrw=randread\nsize=1m\n[a]\nlatency_target=1000\n[b]\nstonewall\n")
    assert len(map_jobfile(f, tmp_path)) == 2


# -- the examples bench's verdict ----------------------------------------------------------------------------------
def _bench():
    return load_bench("fio_examples.py", "fio_examples_lat")


def _docs(depth: int, reset: bool, fio_depth: int, fio_reads: int) -> tuple:
    doc = {
        "jobs": {
            "device": {
                "job": {
                    "workload": {
                        "entries": [{"size": 4096, "weight": 100, "read_pct": 100, "random_pct": 100}],
                        "total_bytes": 1 << 26,
                    }
                },
                "phase": "device",
            }
        },
        "phases": {
            "device:run": {
                "ops": {"read": {"bytes": 4096 * 300, "count": 300}},
                "extra": {"latency_target": {"depth": depth, "stats_reset": reset}},
            }
        },
    }
    fio = {
        "jobs": [
            {
                "jobname": "device",
                "groupid": 0,
                "error": 0,
                "latency_target": 500000000,
                "latency_depth": fio_depth,
                "read": {"io_bytes": 4096 * fio_reads, "total_ios": fio_reads, "bw_bytes": 1},
                "write": {"io_bytes": 0, "total_ios": 0},
                "trim": {"io_bytes": 0, "total_ios": 0},
            }
        ]
    }
    return doc, fio


def test_the_bench_compares_the_depth_found_when_both_report_a_final_window_only():
    fe = _bench()
    doc, fio = _docs(8, True, 8, 500)
    verdict, lines = fe.compare(doc, {"entries": fe.fio_entries(fio)}, {})
    assert verdict == "same work", lines
    assert "depth same fsmeter 8 fio 8" in lines[0]
    doc, fio = _docs(8, True, 4, 500)
    assert fe.compare(doc, {"entries": fe.fio_entries(fio)}, {})[0] == "different work"


def test_the_bench_compares_the_work_and_the_depth_when_the_size_ended_the_search():
    fe = _bench()
    doc, fio = _docs(1, False, 1, 300)
    doc["jobs"]["device"]["job"]["workload"]["total_bytes"] = 4096 * 300
    verdict, lines = fe.compare(doc, {"entries": fe.fio_entries(fio)}, {})
    assert verdict == "same work" and "(latency_depth fsmeter 1 fio 1)" in lines[0], lines
    doc, fio = _docs(1, False, 2, 300)
    doc["jobs"]["device"]["job"]["workload"]["total_bytes"] = 4096 * 300
    assert fe.compare(doc, {"entries": fe.fio_entries(fio)}, {})[0] == "different work"
