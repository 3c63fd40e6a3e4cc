"""fio's latency logs (write_lat_log: _lat, _clat, _slat) with log_offset, log_prio and log_max_value, steady state
on latency, and I/O priorities (prio/prioclass per thread, cmdprio_percentage and cmdprio_bssplit per io_uring
request): the log lines read back by fio's own tools and checked against the run's JSON, the share of requests
given a priority against what the job file asks."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fsmeter.errors import UserError
from fsmeter.interop.fio.job import map_job
from fsmeter.interop.fio_jobfile import parse_jobfile
from fsmeter_cli import fsm

FIO2GNUPLOT = shutil.which("fio2gnuplot")


def one(text: str):
    (job,) = parse_jobfile(text, "t.fio", {}, {}).jobs
    return map_job("t.fio", job, 0, None, True)


def refused(text: str, pattern: str) -> str:
    with pytest.raises(UserError, match=pattern) as exc:
        one(text)
    assert "\n" not in exc.value.message
    return exc.value.message


def run_file(tmp_path: Path, text: str, name: str = "j.fio") -> dict:
    job = tmp_path / name
    job.write_text(text)
    r = fsm("run", job, "--dir", tmp_path, "-q", "--json", tmp_path / "out.json", "--cache", "keep", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return json.loads((tmp_path / "out.json").read_text())


def rows(path: Path) -> list:
    return [ln.split(", ") for ln in path.read_text().splitlines()]


def weighted_mean(lines: list, intervals: list, since_s: float, kind: str, ddir: str) -> float:
    """The mean latency the log's lines of one direction give, each weighted by the requests its interval holds
    (the log carries the interval's mean; the JSON its count). Lines and intervals pair in order: a last
    sliver of an interval (the phase's end, microseconds after the interval before it) has the same
    millisecond as that one, so the time alone cannot tell them apart."""
    mine = [x for x in lines if x[2] == ddir]
    held = [iv for iv in intervals if (iv.get("lat") or {}).get(kind, {}).get("count")]
    assert len(mine) == len(held)
    num = den = 0
    for x, iv in zip(mine, held, strict=True):
        assert int(x[0]) == int(round((iv["t_s"] - since_s) * 1000))
        n = iv["lat"][kind]["count"]
        num += int(x[1]) * n
        den += n
    return num / den


def test_lat_and_clat_logs_carry_each_intervals_mean_latency(tmp_path):
    doc = run_file(
        tmp_path, "[m]\nrw=randrw\nbs=4k\nsize=4m\ntime_based\nruntime=1\nwrite_lat_log=run\nlog_avg_msec=200\n"
    )
    rep = doc["phases"]["m:run"]
    lat, clat = rows(tmp_path / "run_lat.1.log"), rows(tmp_path / "run_clat.1.log")
    # A synchronous engine: no submission latency, an empty _slat log (fio's is empty too); total = completion.
    assert (tmp_path / "run_slat.1.log").read_text() == ""
    # A line per 200 ms interval and direction that completed requests (a busy machine may leave a worker
    # without the CPU for a whole interval, or end the phase with a sliver that did none).
    lines_due = sum(1 for iv in rep["intervals"] for kind in ("read", "write") if iv["lat"].get(kind, {}).get("count"))
    assert len(rep["intervals"]) >= 5  # 1 s of run in 200 ms intervals
    assert lat == clat and len(lat) == lines_due and {x[2] for x in lat} == {"0", "1"}
    assert all(len(x) == 5 and x[2] in ("0", "1") and x[3:] == ["0", "0"] for x in lat)
    # The lines' mean, weighted by each interval's requests, is the phase's mean latency (each line is rounded to
    # the nanosecond: within 1 ns).
    for ddir, kind in (("0", "read"), ("1", "write")):
        got = weighted_mean(lat, rep["intervals"], 0.0, kind, ddir)
        assert got == pytest.approx(rep["ops"][kind]["lat"]["mean_ns"], abs=1.0)
    # The intervals' latency counts add up to the phase's requests of each kind.
    for kind in ("read", "write"):
        assert (
            sum(iv["lat"][kind]["count"] for iv in rep["intervals"] if kind in iv["lat"]) == rep["ops"][kind]["count"]
        )
    # fio's own plotting tool reads the log: as many values as lines, and the same smallest and largest.
    if FIO2GNUPLOT is None:
        pytest.skip("fio2gnuplot is not installed (Debian package fio)")
    out = tmp_path / "g"
    out.mkdir()
    r = subprocess.run(
        [FIO2GNUPLOT, "-p", "run_clat.1.log", "-d", f"{out}/", "-t", "clat"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    stats = dict(ln.split("=") for ln in (out / "run_clat.1.global").read_text().splitlines())
    values = [int(x[1]) for x in clat]
    assert int(stats["values_count"]) == len(values)
    assert float(stats["min"]) == min(values) and float(stats["max"]) == max(values)


def test_log_offset_and_log_prio_columns_are_fios(tmp_path):
    """fio 3's flush_samples: time, value, direction, block size, [offset,] priority (log_prio: as hex); in
    averaged lines block size, offset and priority are 0, in fio and in fsmeter."""
    text = (
        "[z]\nrw=read\nbs=64k\nsize=4m\ntime_based\nruntime=1\nwrite_bw_log=z\nwrite_lat_log=z\nlog_offset=1\n"
        "log_prio=1\nlog_avg_msec=250\n"
    )
    run_file(tmp_path, text)
    mine = {k: rows(tmp_path / f"z_{k}.1.log") for k in ("bw", "lat", "clat")}
    for k, lines in mine.items():
        assert lines and all(len(x) == 6 and x[2:] == ["0", "0", "0", "0x0000"] for x in lines), k
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (Debian package fio)")
    fio_dir = tmp_path / "fio"
    fio_dir.mkdir()
    (fio_dir / "z.fio").write_text(text.replace("[z]\n", f"[z]\ndirectory={fio_dir}\n"))
    r = subprocess.run(["fio", "z.fio"], cwd=fio_dir, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for k, lines in mine.items():
        theirs = rows(fio_dir / f"z_{k}.1.log")
        assert {len(x) for x in theirs} == {6} and {tuple(x[2:]) for x in theirs} == {tuple(x[2:]) for x in lines}


def test_without_log_avg_msec_every_request_is_logged_as_fio_logs_it(tmp_path):
    """fio's default: one line per request, 'time ms, latency ns, direction, block size, offset, priority'
    (log_offset, log_prio): as many lines as requests, their mean the phase's mean latency, the offsets those of
    the job's blocks, and (io_uring, cmdprio_percentage) the requests given a priority marked in the last column,
    the others with the job's own (prioclass=3: idle)."""
    io_uring_or_skip(tmp_path)
    text = (
        "[p]\nioengine=io_uring\niodepth=4\nrw=randread\nbs=4k\nsize=4m\ncmdprio_percentage=20\n"
        "cmdprio_class=2\nprioclass=3\nwrite_lat_log=pl\nlog_offset=1\nlog_prio=1\n"
    )
    doc = run_file(tmp_path, text)
    run = doc["phases"]["p:run"]
    lines = rows(tmp_path / "pl_lat.1.log")
    assert lines == rows(tmp_path / "pl_clat.1.log") and len(lines) == run["ops"]["read"]["count"] == 1024
    assert run["counters"]["io_log_lines"] == 1024
    assert all(len(x) == 6 and x[2:4] == ["0", "4096"] for x in lines)
    assert sum(int(x[1]) for x in lines) / len(lines) == pytest.approx(run["ops"]["read"]["lat"]["mean_ns"])
    # A random map over 1024 blocks: every block once.
    assert sorted(int(x[4]) for x in lines) == [i * 4096 for i in range(1024)]
    assert sum(x[5] == f"0x{2 << 13:04x}" for x in lines) == run["counters"]["cmdprio_ios"]
    assert {x[5] for x in lines} == {"0x6000", "0x4000"}
    times = [int(x[0]) for x in lines]
    assert times == sorted(times)
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (Debian package fio)")
    fio_dir = tmp_path / "fio"
    fio_dir.mkdir()
    (fio_dir / "p.fio").write_text(text.replace("[p]\n", f"[p]\ndirectory={fio_dir}\n"))
    r = subprocess.run(["fio", "p.fio"], cwd=fio_dir, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    theirs = rows(fio_dir / "pl_lat.1.log")
    assert len(theirs) == 1024 and {len(x) for x in theirs} == {6}
    assert {x[5] for x in theirs} == {"0x6000", "0x4000"} and {tuple(x[2:4]) for x in theirs} == {("0", "4096")}


def test_log_max_value_logs_each_intervals_largest_latency(tmp_path):
    doc = run_file(
        tmp_path,
        "[w]\nrw=write\nbs=4k\nsize=4m\ntime_based\nruntime=1\nwrite_lat_log=w\n"
        "log_avg_msec=250\nlog_max_value=1\ndisable_slat=1\n",
    )
    rep = doc["phases"]["w:run"]
    assert not (tmp_path / "w_slat.1.log").exists()  # disable_slat: no _slat log, as in fio
    lines = rows(tmp_path / "w_lat.1.log")
    # One line per interval that completed writes, in order (a short last interval on a busy machine may share
    # its rounded millisecond with the one before, so the lines are matched in order, not by time).
    done = [iv for iv in rep["intervals"] if (iv.get("lat") or {}).get("write", {}).get("count")]
    assert lines and [int(x[0]) for x in lines] == [int(round(iv["t_s"] * 1000)) for iv in done]
    assert [int(x[1]) for x in lines] == [iv["lat"]["write"]["max_ns"] for iv in done]
    assert max(int(x[1]) for x in lines) == rep["ops"]["write"]["lat"]["max_ns"]


def test_each_job_of_a_group_logs_its_own_latency(tmp_path):
    doc = run_file(
        tmp_path,
        "[global]\nbs=4k\nsize=2m\nlog_avg_msec=100\nwrite_lat_log\n[r]\nrw=randread\n"
        "time_based\nruntime=1\n[w]\nrw=write\nloops=4\n",
    )
    jobs = doc["phases"]["group0:run"]["jobs"]
    for name, kind, ddir in (("r", "read", "0"), ("w", "write", "1")):
        lines = rows(tmp_path / f"{name}_lat.{1 if name == 'r' else 2}.log")
        assert {x[2] for x in lines} == {ddir}
        jr = jobs[name]
        got = weighted_mean(
            lines, [iv for iv in jr["intervals"] if iv["t_s"] > jr["start_s"]], jr["start_s"], kind, ddir
        )
        assert got == pytest.approx(jr["ops"][kind]["lat"]["mean_ns"], abs=1.0)


def test_latency_log_options_map_and_refuse_as_fio(tmp_path):
    m = one(
        "[a]\nrw=read\nsize=1m\nwrite_lat_log=p\nlog_window_value=both\nlog_offset=1\ndisable_lat=1\nlog_avg_msec=500\n"
    )
    assert m.params["interval_lat"] is True and "io_log" not in m.params
    assert m.logs == [("slat", "p_slat.{n}.log"), ("clat", "p_clat.{n}.log")]
    assert m.log_format == {"offset": True, "prio": False, "window": "both"}
    # Without log_avg_msec fio logs every request: so does the engine, its buffer sized for the job's 256 requests.
    m = one("[a]\nrw=read\nsize=1m\nwrite_lat_log=p\nlog_prio=1\n")
    assert m.params["io_log"] == {
        "paths": [os.path.abspath("p_lat.{n}.log"), os.path.abspath("p_clat.{n}.log")],
        "offset": False,
        "prio_hex": True,
        "max_records": 256 + 16,
    }
    assert not m.params["interval_lat"] and m.log_format["per_io"]
    refused(
        "[a]\nrw=read\nsize=1m\nwrite_lat_log\nlog_max_value=median\n",
        r"^t.fio line 5: log_max_value=median: "
        r"use avg, max or both",
    )
    assert "interval_lat" not in one("[a]\nrw=read\nsize=1m\nwrite_bw_log\n").params


def test_a_latency_steady_state_stops_the_job(tmp_path):
    """Paced at 2000 IOPS on the null engine, each 100 ms check's mean latency is within 1 ms of the window's mean
    at once: steady as soon as 0.5 s of checks are in, long before the 30 s runtime."""
    assert one("[a]\nrw=read\nsize=1m\nss=lat:5%\nss_dur=300\n").params["steadystate"]["criterion"] == "lat"
    doc = run_file(
        tmp_path,
        "[s]\nioengine=null\nrw=randread\nsize=1m\ntime_based\nruntime=30\nrate_iops=2000\n"
        "ss=lat:1000000\nss_dur=500ms\nss_interval=100ms\n",
    )
    run = doc["phases"]["s:run"]
    assert run["counters"]["steadystate_attained"] == 1
    assert run["elapsed_s"] < 30


# -- I/O priorities -------------------------------------------------------------------------------------------------
def test_priority_options_map_to_the_kernels_ioprio_values():
    # prioclass 2 (best-effort) level 7; prio alone is best-effort, as fio's ioprio_value has it.
    assert one("[a]\nrw=read\nsize=1m\nprioclass=2\nprio=7\n").params["ioprio"] == {"thread": 2 << 13 | 7}
    assert one("[a]\nrw=read\nsize=1m\nprio=3\n").params["ioprio"] == {"thread": 2 << 13 | 3}
    m = one("[a]\nrw=randread\nsize=1m\nioengine=libaio\nprioclass=3\ncmdprio_percentage=20\ncmdprio_class=1\n")
    assert m.params["ioprio"] == {
        "thread": 3 << 13,
        "cmd": [[{"size": 0, "pct": 20, "ioprio": 1 << 13}], [{"size": 0, "pct": 20, "ioprio": 1 << 13}]],
    }
    # fio's cmdprio-bssplit.fio: entries with their own class/level (and hint), and entries taking cmdprio_class.
    m = one(
        "[a]\nrw=randrw\nsize=4m\nioengine=io_uring\nbssplit=64k/40:1024k/60,1024k/100\n"
        "cmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/0\n"
    )
    assert m.params["ioprio"]["cmd"] == [
        [
            {"size": 65536, "pct": 25, "ioprio": 1 << 13 | 1},
            {"size": 65536, "pct": 75, "ioprio": 3 << 13 | 2},
            {"size": 1 << 20, "pct": 0, "ioprio": 1 << 13},
        ],
        [{"size": 1 << 20, "pct": 0, "ioprio": 1 << 13}],
    ]
    m = one(
        "[a]\nrw=randread\nsize=4m\nioengine=io_uring\nbssplit=1M/40:2M/60\n"
        "cmdprio_bssplit=1M/10/2/0/1:1M/90/2/0/0\ncmdprio_class=2\ncmdprio=5\n"
    )
    assert m.params["ioprio"]["cmd"][0] == [
        {"size": 1 << 20, "pct": 10, "ioprio": 2 << 13 | 1 << 3},
        {"size": 1 << 20, "pct": 90, "ioprio": 2 << 13},
    ]
    refused(
        "[a]\nrw=read\nsize=1m\ncmdprio_percentage=10\n",
        r"^t.fio line 4: cmdprio_percentage=10: an option of "
        r"fio's io_uring and libaio engines \(fio refuses it with ioengine=psync\): use ioengine=io_uring",
    )
    refused(
        "[a]\nrw=read\nsize=1m\nioengine=io_uring\ncmdprio_percentage=10\ncmdprio_bssplit=4k/10\n",
        r"line 5: cmdprio_percentage=10: cmdprio_percentage and cmdprio_bssplit exclude each other",
    )
    refused("[a]\nrw=read\nsize=1m\nprio=8\n", r"line 4: prio=8: must be between 0 and 7")
    refused(
        "[a]\nrw=read\nsize=1m\nioengine=io_uring\ncmdprio_bssplit=4k/60/1/0:4k/50/2/0\n",
        r"line 5: cmdprio_bssplit=.*add up to 110: at most 100",
    )


def io_uring_or_skip(tmp_path):
    doc_dir = tmp_path / "probe"
    doc_dir.mkdir()
    r = fsm(
        "run",
        "seq-read",
        "--dir",
        doc_dir,
        "-q",
        "--set",
        "backend=io_uring",
        "--set",
        "file_size=64k",
        "--set",
        "total_bytes=64k",
        "--cache",
        "keep",
    )
    if r.returncode != 0 and "io_uring" in r.stderr:
        pytest.skip(f"io_uring unavailable here: {r.stderr.strip()}")


def test_cmdprio_percentage_gives_that_share_of_the_requests_a_priority(tmp_path):
    """1024 random 4 KiB reads, 20% with best-effort level 0 (a class any user may set): the count of requests
    given the priority is within 4 binomial standard deviations of 20% (sd 12.8 requests)."""
    io_uring_or_skip(tmp_path)
    doc = run_file(
        tmp_path,
        "[p]\nioengine=io_uring\niodepth=4\nrw=randread\nbs=4k\nsize=4m\n"
        "cmdprio_percentage=20\ncmdprio_class=2\nprioclass=2\nprio=7\n",
    )
    run = doc["phases"]["p:run"]
    n = run["ops"]["read"]["count"]
    assert n == 1024
    sd = math.sqrt(n * 0.2 * 0.8)
    assert abs(run["counters"]["cmdprio_ios"] - 0.2 * n) < 4 * sd
    assert run["extra"]["ioprio"] == {
        "thread": 2 << 13 | 7,
        "cmd": [[{"size": 0, "pct": 20, "ioprio": 2 << 13}], [{"size": 0, "pct": 20, "ioprio": 2 << 13}]],
    }


def test_cmdprio_bssplit_gives_a_priority_to_the_sizes_it_names(tmp_path):
    """Reads of 4 KiB and 8 KiB, half each; every 4 KiB read gets a priority and no 8 KiB one: the count of
    requests with a priority is exactly the count of 4 KiB reads."""
    io_uring_or_skip(tmp_path)
    doc = run_file(
        tmp_path,
        "[b]\nioengine=io_uring\niodepth=2\nrw=randread\nbssplit=4k/50:8k/50\nsize=4m\n"
        "norandommap\ncmdprio_bssplit=4k/100:8k/0\ncmdprio_class=2\n",
    )
    run = doc["phases"]["b:run"]
    mix = {e["size"]: e["reads"] for e in run["extra"]["mix"]}
    assert mix[4096] > 0 and mix[8192] > 0
    assert run["counters"]["cmdprio_ios"] == mix[4096]
