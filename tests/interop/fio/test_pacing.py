"""fio's rate, flow-of-time and job-control options in job files: rate / rate_iops / rate_min / rate_process /
rate_cycle and thinktime (each thread paced on the monotonic clock), startdelay, wait_for, exitall with exit_what,
and fio's bandwidth/IOPS logs of jobs that run at the same time as others. No timing thresholds: each bound is
one the pacing schedule sets (a paced thread is never ahead of it), or an order of events."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fsmeter.errors import UserError
from fsmeter.interop.fio.job import map_job
from fsmeter.interop.fio.load import fio_workloads, map_jobfile
from fsmeter.interop.fio.mapped import MappedGroup
from fsmeter.interop.fio_jobfile import parse_jobfile
from fsmeter_cli import fsm


def one(text: str):
    (j,) = parse_jobfile(text, "t.fio", {}, {}).jobs
    return map_job("t.fio", j, 0)


def refused(text: str, pattern: str) -> str:
    with pytest.raises(UserError, match=pattern) as exc:
        one(text)
    assert "\n" not in exc.value.message
    return exc.value.message


def run_file(tmp_path: Path, text: str) -> tuple:
    f = tmp_path / "jobs.fio"
    f.write_text(text)
    d = tmp_path / "d"
    d.mkdir(exist_ok=True)
    out = tmp_path / "out.json"
    r = fsm("run", f, "--dir", d, "-q", "--json", out, "--cache", "keep", "--min-phase-s", "0", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text()), r.stdout


# -- mapping --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "opts,pace",
    [
        ("rate=1m,500k", {"rate_bytes_per_s": [1 << 20, 500 << 10]}),
        ("rate=,500k", {"rate_bytes_per_s": [0, 500 << 10]}),  # fio: only writes limited
        ("rate=500k,", {"rate_bytes_per_s": [500 << 10, 0]}),  # only reads
        ("rate=300,300,300", {"rate_bytes_per_s": [300, 300]}),  # a trim value, with no trims: nothing to pace
        ("rate_iops=1000", {"rate_iops": [1000, 1000]}),  # one value: every direction, as bs=
        ("rate_iops=50\nrate_process=poisson", {"rate_iops": [50, 50], "rate_process": "poisson"}),
        ("ratemin=1024\nratecycle=500", {"rate_min_bytes_per_s": [1024, 1024], "rate_cycle_ms": 500}),
        ("rate_iops_min=10,", {"rate_min_iops": [10, 0]}),
        ("thinktime=2000", {"thinktime_us": 2000}),  # microseconds unless a unit is given
        (
            "thinktime=2ms\nthinktime_spin=500\nthinktime_blocks=4",
            {"thinktime_us": 2000, "thinktime_spin_us": 500, "thinktime_blocks": 4},
        ),
    ],
)
def test_rate_and_thinktime_map_onto_the_pace_of_each_thread(opts, pace):
    m = one(f"[a]\nrw=randrw\nsize=1m\n{opts}\n")
    assert m.params["pace"] == pace


def test_no_rate_no_pace():
    assert "pace" not in one("[a]\nrw=read\nsize=1m\n").params


@pytest.mark.parametrize(
    "opts,pattern",
    [
        ("rate_process=bursty", r"line 4: rate_process=bursty: use linear or poisson"),
        ("rate_process=poisson", r"line 4: rate_process=poisson: poisson paces a rate: give rate= or rate_iops="),
        ("rate=1m,2m,3m,4m", r"line 4: rate=1m,2m,3m,4m: give one value, or READ,WRITE"),
        ("rate=fast", r"line 4: rate=fast: "),
        ("rate=100\nrate_process=poisson", r"line 4: rate=100: 100 B/s is less than one 4096-byte request per second"),
        ("thinktime=10\nthinktime_spin=20", r"line 5: thinktime_spin=20: more than thinktime \(10 us\)"),
        ("startdelay=1-5", r"line 4: startdelay=1-5: a random start delay \(a range\) is not supported"),
        ("exitall\nexit_what=some", r"line 5: exit_what=some: use group, stonewall or all"),
        ("rate_ignore_thinktime=1", r"line 4: option rate_ignore_thinktime is not supported by fsmeter yet"),
    ],
)
def test_bad_values_stop_with_one_line_naming_it(opts, pattern):
    refused(f"[a]\nrw=read\nsize=1m\n{opts}\n", pattern)


def test_a_rate_on_trims_is_refused():
    refused("[a]\nrw=randtrim\nsize=1m\nrate=1m\n", r"line 4: rate=1m: pacing trims is not supported by fsmeter")


def test_wait_for_startdelay_and_exitall_in_a_group(tmp_path):
    f = tmp_path / "w.fio"
    f.write_text(
        "[global]\nsize=1m\nexitall\n[writers]\nrw=write\nnumjobs=2\n[readers]\nnew_group\n"
        "wait_for=writers\nrw=read\n[late]\nstartdelay=1\nexit_what=all\nrw=read\n[next]\nstonewall\n"
        "wait_for=readers\nrw=read\n"
    )
    jobs = map_jobfile(f)
    by = {j.name: j for j in jobs}
    # One stonewall group for the first three: readers waits for writers there; next waits for a job of an
    # earlier group, which is done before its group starts (a note).
    assert [j.group for j in jobs] == [0, 0, 0, 1]
    assert by["readers"].wait_for == "writers" and by["next"].wait_for is None
    assert any("earlier group" in n for n in by["next"].notes)
    assert by["late"].start_delay_s == 1.0
    # fio's reporting groups: a new one at new_group and at stonewall.
    assert [j.report_group for j in jobs] == [0, 1, 1, 2]
    # exitall (from [global]) holds for every job: exit_what defaults to group.
    assert [j.exit_what for j in jobs] == ["group", "group", "all", "group"]
    (d, g), _ = fio_workloads(str(f), tmp_path)
    assert isinstance(g, MappedGroup)
    spec = d.family.params(**d.params).engine_spec()
    assert [(j["name"], j["wait_for"], j["start_delay_s"], j["exit"], j["report_group"]) for j in spec["jobs"]] == [
        ("writers", None, 0.0, "group", 0),
        ("readers", "writers", 0.0, "group", 1),
        ("late", None, 1.0, "all", 1),
    ]


def test_without_exitall_exit_what_does_nothing(tmp_path):
    f = tmp_path / "n.fio"
    f.write_text("[a]\nsize=1m\nexit_what=all\n[b]\nsize=1m\n")
    assert [j.exit_what for j in map_jobfile(f)] == ["none", "none"]


def test_wait_for_names_an_earlier_job(tmp_path):
    f = tmp_path / "bad.fio"
    f.write_text("[a]\nsize=1m\nwait_for=b\n[b]\nsize=1m\n")
    with pytest.raises(UserError, match=r"line 3: wait_for=b: no job named b before this one") as exc:
        map_jobfile(f)
    assert "\n" not in exc.value.message


# -- runs -----------------------------------------------------------------------------------------------------------
def test_rate_iops_caps_each_clone_at_its_schedule(tmp_path):
    """rate_iops=100 for 1 s, two clones: the schedule holds requests at 0, 10, ..., 990 ms per clone, so at most
    200 reads in all; a late request goes at once (catch-up), so a working schedule is never far below it."""
    doc, _ = run_file(
        tmp_path, "[r]\nioengine=null\nrw=randread\nsize=1m\nnumjobs=2\ntime_based\nruntime=1\nrate_iops=100\n"
    )
    run = doc["phases"]["r:run"]
    n = run["ops"]["read"]["count"]
    assert 100 <= n <= 200, n
    assert run["extra"]["pace"]["rate_iops"] == [100, 100]


def test_poisson_rate_does_the_work_of_the_job(tmp_path):
    """A fixed amount of work at a poisson rate: every request of it, exactly (the gaps' shape is checked on the
    schedule itself, in the engine's tests)."""
    doc, _ = run_file(tmp_path, "[p]\nioengine=null\nrw=randread\nsize=256k\nrate_iops=2000\nrate_process=poisson\n")
    run = doc["phases"]["p:run"]
    assert run["ops"]["read"]["count"] == 64
    assert run["extra"]["pace"]["rate_process"] == "poisson"
    # 63 gaps of mean 0.5 ms: the run cannot be shorter than the sum of its gaps, which is > 0.
    assert run["elapsed_s"] > 0


def test_linear_byte_rate_is_never_ahead_of_its_schedule(tmp_path):
    """rate=400k of 4 KiB reads, 32 requests: the last one is due 31 x 10 ms after the start, so the phase lasts at
    least 0.31 s, and does its 32 reads."""
    doc, _ = run_file(tmp_path, "[l]\nioengine=null\nrw=read\nbs=4k\nsize=128k\nrate=400k\n")
    run = doc["phases"]["l:run"]
    assert run["ops"]["read"]["count"] == 32
    assert run["elapsed_s"] >= 0.31


def test_wait_for_orders_the_jobs_of_a_group(tmp_path):
    doc, out = run_file(
        tmp_path,
        "[global]\nsize=1m\n[writers]\nrw=write\nnumjobs=2\n[readers]\nnew_group\nwait_for=writers\nrw=randread\n",
    )
    jobs = doc["phases"]["group0:run"]["jobs"]
    assert jobs["readers"]["start_s"] >= jobs["writers"]["end_s"]
    assert jobs["writers"]["ops"]["write"]["count"] == 512 and jobs["readers"]["ops"]["read"]["count"] == 256


def test_exitall_ends_the_group_when_the_short_job_ends(tmp_path):
    """A short job and a 30 s time-based one in one group, with exitall: the short job's end stops the long one."""
    doc, _ = run_file(
        tmp_path,
        "[global]\nioengine=null\nexitall\n[short]\nrw=read\nsize=256k\n"
        "[long]\nrw=randread\nsize=1m\ntime_based\nruntime=30\n",
    )
    jobs = doc["phases"]["group0:run"]["jobs"]
    assert jobs["short"]["ops"]["read"]["count"] == 64
    assert jobs["long"]["elapsed_s"] < 30
    assert not doc.get("interrupted")


def test_exit_what_all_skips_the_later_groups(tmp_path):
    doc, out = run_file(
        tmp_path, "[global]\nsize=256k\nexitall\n[first]\nexit_what=all\nrw=read\n[second]\nstonewall\nrw=write\n"
    )
    assert [k for k in doc["phases"] if k.endswith(":run")] == ["first:run"]
    assert doc["exit_all"] == {"after": "first", "not_run": ["second"]}


def test_logs_of_jobs_that_run_together_in_fios_format(tmp_path):
    """Each job of a group writes its own logs, from its own samples, in fio's format; the IOPS lines add up to the
    job's own I/Os and carry only its direction."""
    doc, out = run_file(
        tmp_path,
        "[global]\nsize=4m\nbs=4k\ntime_based\nruntime=1\nlog_avg_msec=200\n"
        "[rd]\nrw=read\nwrite_iops_log=rd\n[wr]\nrw=write\nwrite_bw_log=wr\n"
        "write_iops_log=wr\n",
    )
    jobs = doc["phases"]["group0:run"]["jobs"]
    for name, ddir, kind in (("rd", "0", "read"), ("wr", "1", "write")):
        rows = [
            ln.split(", ") for ln in (tmp_path / f"{name}_iops.{1 if name == 'rd' else 2}.log").read_text().splitlines()
        ]
        assert len(rows) >= 3 and all(len(x) == 5 and x[2:] == [ddir, "0", "0"] for x in rows), rows
        times = [int(x[0]) for x in rows]
        assert times == sorted(times)
        ivs = [iv for iv in jobs[name]["intervals"] if iv["dur_s"] > 0 and iv["t_s"] > jobs[name]["start_s"]]
        done = sum(int(x[1]) * iv["dur_s"] for x, iv in zip(rows, ivs))
        assert done == pytest.approx(jobs[name]["ops"][kind]["count"], abs=len(rows)), name
    assert (tmp_path / "wr_bw.2.log").exists()


def test_group_logs_need_one_log_avg_msec(tmp_path):
    f = tmp_path / "l.fio"
    f.write_text(
        "[global]\nsize=1m\n[a]\nrw=read\nwrite_iops_log=a\nlog_avg_msec=100\n[b]\nrw=write\n"
        "write_iops_log=b\nlog_avg_msec=200\n"
    )
    d = tmp_path / "d"
    d.mkdir()
    r = fsm("run", f, "--dir", d, "-q", "--cache", "keep", cwd=tmp_path)
    assert r.returncode == 2 and "give them one log_avg_msec" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_flow_maps_with_or_without_a_rate():
    m = one("[a]\nrw=read\nsize=1m\nflow=8\nflow_id=2\nflow_sleep=1000\nflow_watermark=5\n")
    assert m.params["pace"] == {"flow": 8, "flow_id": 2, "flow_sleep_us": 1000}
    m = one("[a]\nrw=read\nsize=1m\nrate_iops=1000\nflow=1\n")
    assert m.params["pace"] == {"rate_iops": [1000, 1000], "flow": 1}
    assert any("then waits for its time by the job's rate" in n for n in m.notes)
    refused("[a]\nrw=read\nsize=1m\nflow=1001\n", r"line 4: flow=1001: must be between 0 and 1000")


def test_fios_t0011_flow_beside_a_rate_runs_and_lays_out_nothing(tmp_path):
    """fio's t/jobs/t0011 at 2 s instead of 10: 100 GiB jobs on the null engine (fio creates no file for
    it, nor does fsmeter now), a weight-1 job at 1000 IOPS beside a weight-8 one. fio 3.33 here, at 3 s:
    3,001 and 25,232 requests; run-fio-tests.py passes the first job at 950 to 1050 IOPS and a ratio of
    6 to 10. Asserted here: the bounds the rate and the flow set (never ahead of either), and fio's
    ratio."""
    job = (
        "[global]\nbs=4k\nioengine=null\nsize=100g\nruntime=2\nflow_id=1\n"
        "[flow1]\nflow=1\nrate_iops=1000\n[flow2]\nflow=8\n"
    )
    doc, _ = run_file(tmp_path, job)
    jobs = doc["phases"]["group0:run"]["jobs"]
    n1, n2 = jobs["flow1"]["ops"]["read"]["count"], jobs["flow2"]["ops"]["read"]["count"]
    # The flow counts from 1, the light job's last pass is of a request due after the end (never issued), and a
    # job not ahead passes one more: at most 8 x (n1 + 2) + 1.
    assert n1 <= 2001 and n2 <= 8 * (n1 + 2) + 1
    assert 6 <= n2 / n1 <= 10
    assert list((tmp_path / "d").iterdir()) == []  # nothing laid out


def test_flow_keeps_two_jobs_in_the_ratio_of_their_weights(tmp_path):
    """flow.fio's shape: a writer of weight 1 and a reader of weight 8 in one group. The writer does 100 writes,
    then (exitall) stops the time-based reader; each of its writes passed only while its share of the flow was at
    most 1/9, so the reader had by then done at least 8 x 99 reads (the flow counts from 1)."""
    doc, _ = run_file(
        tmp_path,
        "[global]\nioengine=null\nexitall\nbs=4k\n[w]\nrw=write\nsize=400k\nflow=1\n"
        "[r]\nrw=randread\nsize=1m\nnorandommap\ntime_based\nruntime=30\nflow=8\n",
    )
    jobs = doc["phases"]["group0:run"]["jobs"]
    assert jobs["w"]["ops"]["write"]["count"] == 100
    assert jobs["r"]["ops"]["read"]["count"] >= 8 * 99 - 1
    assert jobs["r"]["elapsed_s"] < 30


def test_steadystate_options_map_as_fio_reads_them():
    m = one("[a]\nrw=read\nsize=1m\ngroup_reporting\nss=bw_slope:1%\nss_dur=30s\nss_ramp=10s\n")
    assert m.params["steadystate"] == {
        "criterion": "bw_slope",
        "limit": 1.0,
        "pct": True,
        "dur_s": 30.0,
        "interval_s": 1.0,
        "ramp_s": 10.0,
        "group": True,
    }
    m = one("[a]\nrw=read\nsize=1m\nsteadystate=iops:2\nsteadystate_duration=1m\nsteadystate_check_interval=10s\n")
    assert m.params["steadystate"] == {
        "criterion": "iops",
        "limit": 2.0,
        "pct": False,
        "dur_s": 60.0,
        "interval_s": 10.0,
        "ramp_s": 0.0,
        "group": False,
    }
    # fio's default criterion when only the duration is given; and no duration: no steady state (a note).
    assert one("[a]\nrw=read\nsize=1m\nss_dur=5\n").params["steadystate"]["criterion"] == "iops_slope"
    m = one("[a]\nrw=read\nsize=1m\nss=iops:10%\n")
    assert "steadystate" not in m.params and any("without steadystate_duration" in n for n in m.notes)
    assert (
        one("[a]\nrw=read\nsize=1m\nss=lat_slope:0.1%\nss_dur=10\n").params["steadystate"]["criterion"] == "lat_slope"
    )
    refused("[a]\nrw=read\nsize=1m\nss=iops\nss_dur=10\n", r"line 4: ss=iops: write CRITERION:LIMIT")
    refused("[a]\nrw=read\nsize=1m\nss=iops:5%\nss_dur=1\n", r"line 5: ss_dur=1: the window holds fewer than two")


def test_a_steady_job_stops_before_its_runtime(tmp_path):
    """Paced at 2000 IOPS, each 100 ms sample holds ~200 reads: steady within 50 % of the mean once 0.5 s of
    samples are in, long before the 30 s runtime."""
    doc, _ = run_file(
        tmp_path,
        "[s]\nioengine=null\nrw=randread\nsize=1m\ntime_based\nruntime=30\n"
        "rate_iops=2000\nss=iops:50%\nss_dur=500ms\nss_interval=100ms\n",
    )
    run = doc["phases"]["s:run"]
    assert run["elapsed_s"] < 30
    assert run["counters"]["steadystate_attained"] == 1


# -- where the threads run --------------------------------------------------------------------------------------------
def test_cpu_and_numa_placement_map_and_refuse_what_this_machine_lacks():
    cpu = min(os.sched_getaffinity(0))
    m = one(f"[a]\nrw=read\nsize=1m\ncpus_allowed={cpu}\ncpus_allowed_policy=split\n")
    assert m.params["place"] == {"cpus": [cpu], "split": True}
    assert one(f"[a]\nrw=read\nsize=1m\ncpumask={1 << cpu}\n").params["place"] == {"cpus": [cpu]}
    refused(
        "[a]\nrw=read\nsize=1m\ncpus_allowed=4095\n",
        r"line 4: cpus_allowed=4095: CPU 4095 is not one this "
        r"process may run on",
    )
    refused(
        "[a]\nrw=read\nsize=1m\nnuma_cpu_nodes=4000\n",
        r"line 4: numa_cpu_nodes=4000: NUMA node 4000 does not "
        r"exist on this machine",
    )
    refused(
        "[a]\nrw=read\nsize=1m\nnuma_mem_policy=interleave:0,4000\n",
        r"line 4: numa_mem_policy=interleave:0,4000: "
        r"NUMA node 4000 does not exist on this machine .* cannot be honoured",
    )
    refused("[a]\nrw=read\nsize=1m\nnuma_mem_policy=prefer\n", r"line 4: numa_mem_policy=prefer: prefer needs nodes")
    refused(f"[a]\nrw=read\nsize=1m\ncpus_allowed={cpu}\ncpumask=1\n", r"line 5: cpumask=1: give one of")


def test_pinned_threads_and_a_memory_policy_run(tmp_path):
    cpu = min(os.sched_getaffinity(0))
    policy = "numa_mem_policy=bind:0\n" if Path("/sys/devices/system/node/node0").is_dir() else ""
    doc, _ = run_file(tmp_path, f"[p]\nioengine=null\nrw=read\nsize=256k\nnumjobs=2\ncpus_allowed={cpu}\n{policy}")
    run = doc["phases"]["p:run"]
    assert run["ops"]["read"]["count"] == 128
    assert run["extra"]["place"]["cpus"] == [cpu]
    if policy:
        assert run["extra"]["place"]["mem_policy"] == {"mode": "bind", "nodes": [0]}
