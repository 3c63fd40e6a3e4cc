"""bench/fio_examples.py's verdicts on canned fio and fsmeter results: group_reporting merges, clones, the
direction split and bssplit count tolerances, time-based rates, fio's own outcome per file, the summary."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from bench_module import load_bench

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fe():
    return load_bench("fio_examples.py", "fio_examples_bench")


def entry(size=4096, weight=100.0, read_pct=100.0, random_pct=0.0):
    return {"size": size, "weight": weight, "read_pct": read_pct, "random_pct": random_pct}


def fsm_doc(jobs: dict, phase="group0", timed=()) -> dict:
    """An fsmeter result: jobs {name: (entries, {"read": (bytes, count), ...})} measured in one group phase."""
    doc = {"jobs": {}, "phases": {f"{phase}:run": {"jobs": {}}}}
    for name, (entries, ops) in jobs.items():
        doc["jobs"][name] = {
            "job": {"workload": {"entries": entries, "total_bytes": None if name in timed else 1}},
            "phase": phase,
        }
        doc["phases"][f"{phase}:run"]["jobs"][name] = {
            "ops": {d: {"bytes": b, "count": n} for d, (b, n) in ops.items()},
            "total": {"bytes": sum(b for b, _ in ops.values())},
            "elapsed_s": 2.0,
        }
    return doc


def fio_job(name, groupid, read=(0, 0), write=(0, 0), bw=0):
    return {
        "jobname": name,
        "groupid": groupid,
        "error": 0,
        "read": {"io_bytes": read[0], "total_ios": read[1], "bw_bytes": bw},
        "write": {"io_bytes": write[0], "total_ios": write[1], "bw_bytes": 0},
        "trim": {"io_bytes": 0, "total_ios": 0},
    }


def test_group_reporting_compares_the_group_fio_merged(fe):
    # exitwhat.fio's second group: three concurrent jobs, group_reporting: fio has one entry, named slow2.
    doc = fsm_doc(
        {
            "slow2": ([entry(read_pct=0)], {"write": (65536, 16)}),
            "fast2": ([entry(read_pct=50, random_pct=100)], {"read": (12288, 3), "write": (12288, 3)}),
            "runsnever": ([entry(read_pct=50, random_pct=100)], {"read": (12288, 3), "write": (12288, 3)}),
        }
    )
    fio = {"entries": fe.fio_entries({"jobs": [fio_job("slow2", 2, read=(24576, 6), write=(90112, 22))]})}
    groups = {"slow2": (2, True), "fast2": (2, True), "runsnever": (2, True)}
    verdict, lines = fe.compare(doc, fio, groups)
    assert verdict == "same work", lines
    assert lines == [
        "slow2 (group_reporting: slow2, fast2, runsnever): same fsmeter {'read': [24576, 6], "
        "'write': [90112, 22]} fio {'read': [24576, 6], 'write': [90112, 22]}"
    ]
    # Job by job, two of the jobs are missing from fio's output and the third has the group's figures.
    verdict, lines = fe.compare(doc, fio, {})
    assert verdict == "different work"
    assert "fast2: not in fio's output" in lines


def test_clones_without_group_reporting_are_added_up(fe):
    doc = fsm_doc({"r": ([entry()], {"read": (2 * 65536, 32)})})
    fio = {"entries": fe.fio_entries({"jobs": [fio_job("r", 0, read=(65536, 16)), fio_job("r", 0, read=(65536, 16))]})}
    assert fe.compare(doc, fio, {"r": (0, False)})[0] == "same work"
    fio = {"entries": fe.fio_entries({"jobs": [fio_job("r", 0, read=(65536, 16))]})}
    assert fe.compare(doc, fio, {"r": (0, False)})[0] == "different work"


def test_a_random_mix_may_split_its_directions_within_the_binomial_slack(fe):
    # 10,000 4 KiB requests, 80% reads: slack max(5% of 10,000, 3 sqrt(10,000 * 0.8 * 0.2)) = 500.
    mix = [entry(read_pct=80.0, random_pct=100.0)]
    fio = {"entries": fe.fio_entries({"jobs": [fio_job("m", 0, read=(8000 * 4096, 8000), write=(2000 * 4096, 2000))]})}
    near = fsm_doc({"m": (mix, {"read": (7600 * 4096, 7600), "write": (2400 * 4096, 2400)})})
    far = fsm_doc({"m": (mix, {"read": (7400 * 4096, 7400), "write": (2600 * 4096, 2600)})})
    assert fe.compare(near, fio)[0] == "same work"
    assert fe.compare(far, fio)[0] == "different work"
    # A sequential mix (fio's rw=rw) draws its directions too: fio's t0032, 20 requests of 128 KiB, 12 reads
    # and 8 writes under fio 3.33, 10 and 10 under fsmeter; slack max(1, 3 sqrt(20 * 0.5 * 0.5)) = 6.7.
    seqmix = [entry(131072, read_pct=50.0)]
    fio2 = {"entries": fe.fio_entries({"jobs": [fio_job("m", 0, read=(12 * 131072, 12), write=(8 * 131072, 8))]})}
    assert fe.compare(fsm_doc({"m": (seqmix, {"read": (10 * 131072, 10), "write": (10 * 131072, 10)})}), fio2)[0] == (
        "same work"
    )
    assert fe.compare(fsm_doc({"m": (seqmix, {"read": (2 * 131072, 2), "write": (18 * 131072, 18)})}), fio2)[0] == (
        "different work"
    )
    # A sequential job with one size must match exactly.
    seq = fsm_doc({"m": ([entry()], {"read": (7999 * 4096, 7999)})})
    fio1 = {"entries": fe.fio_entries({"jobs": [fio_job("m", 0, read=(8000 * 4096, 8000))]})}
    assert fe.compare(seq, fio1)[0] == "different work"


def test_count_slack_of_drawn_sizes_by_hand(fe):
    # 512 and 4096 bytes, equal weights: mean 2304, sd 1792, cv 0.7778; n = 10,000:
    # 3 * sqrt(2) * 0.7778 * 100 = 330.0 (more than 2% of n, 200).
    cv = fe.size_cv([entry(512, 50), entry(4096, 50)])
    assert cv == pytest.approx(1792 / 2304)
    assert fe.count_slack(10_000, cv) == pytest.approx(3 * math.sqrt(2) * 1792 / 2304 * 100)
    assert fe.count_slack(10_000, 0.0) == pytest.approx(200)


def test_bssplit_counts_of_the_same_bytes_differ_within_their_spread(fe):
    # jesd219.fio scaled: 256 MiB in 12 sizes, rwmixread 40: fio 13,540 + 20,477 I/Os, fsmeter 13,903 + 20,891
    # (2.3% more, inside three standard deviations of the difference of two runs: 3.4%).
    sizes = [
        (512, 4),
        (1024, 1),
        (1536, 1),
        (2048, 1),
        (2560, 1),
        (3072, 1),
        (3584, 1),
        (4096, 67),
        (8192, 10),
        (16384, 7),
        (32768, 3),
        (65536, 3),
    ]
    es = [entry(s, w, read_pct=40.0, random_pct=100.0) for s, w in sizes]
    doc = fsm_doc({"JESD219": (es, {"read": (106774528, 13903), "write": (161768448, 20891)})})
    fio = {
        "entries": fe.fio_entries({"jobs": [fio_job("JESD219", 0, read=(105550848, 13540), write=(162924544, 20477))]})
    }
    assert fe.compare(doc, fio)[0] == "same work"
    # The same totals with every request one size: then the counts must match.
    one = [entry(8192, read_pct=40.0, random_pct=100.0)]
    doc1 = fsm_doc({"JESD219": (one, {"read": (106774528, 13903), "write": (161768448, 20891)})})
    assert fe.compare(doc1, fio)[0] == "different work"


def test_time_based_jobs_report_a_bandwidth_ratio_not_a_verdict(fe):
    doc = fsm_doc({"t": ([entry()], {"read": (400 << 20, 102400)})}, timed=("t",))
    fio = {"entries": fe.fio_entries({"jobs": [fio_job("t", 0, read=(200 << 20, 51200), bw=100 << 20)]})}
    verdict, lines = fe.compare(doc, fio)
    assert verdict == "time-based: compared rates not work"
    assert lines == ["t: time-based, fsmeter/fio bandwidth 2.00 (200.0 vs 100.0 MiB/s)"]


def test_a_job_fio_names_after_its_section_is_matched_by_position(fe):
    doc = fsm_doc({"fio-rand-RW": ([entry()], {"read": (65536, 16)})})
    fio = {"entries": fe.fio_entries({"jobs": [fio_job("file1", 0, read=(65536, 16))]})}
    verdict, lines = fe.compare(doc, fio)
    assert verdict == "same work" and lines[0].startswith("fio-rand-RW (fio names it file1): same")


def test_file_engines_compare_fio_latency_samples_with_fsmeter_calls(fe):
    doc = fsm_doc({"a": ([entry()], {"create": (0, 10)}), "b": ([entry()], {"create": (0, 10)})})
    for j in doc["jobs"].values():
        j["job"]["workload"]["fio_engine"] = "filecreate"
    job = fio_job("a", 0)
    job["read"]["clat_ns"] = {"N": 20}
    fio = {"entries": fe.fio_entries({"jobs": [job]})}
    verdict, lines = fe.compare(doc, fio, {"a": (0, True), "b": (0, True)})
    assert verdict == "same work" and lines == ["a (group_reporting: a, b): same fsmeter 20 create fio 20"]


def test_fio_copy_runs_offload_inline_only_on_a_fio_that_hangs_with_it(fe):
    text = "[j]\nioengine=cpp_null\nio_submit_mode=offload\n"
    old, notes = fe.fio_copy(text, (3, 33))
    assert "io_submit_mode=inline" in old and "ioengine=null" in old and "3.42" in notes[0]
    new, notes = fe.fio_copy(text, (3, 42))
    assert "io_submit_mode=offload" in new and not notes


def test_fio_outcome_and_error_lines(fe):
    why = "exit 1: fio: engine dircreate not loadable; fio: failed to load engine"
    assert fe.fio_outcome("fails", why) == "lacks the engine dircreate"
    assert fe.fio_outcome("ran", "") == "runs"
    assert fe.fio_outcome("hangs", "no answer in 60 s") == "hangs"
    assert (
        fe.fio_error("starting\nfio: pid=1, err=2/file:filesetup.c:1, func=open, error=No such file\n", None)
        == "fio: pid=1, err=2/file:filesetup.c:1, func=open, error=No such file"
    )
    assert fe.fio_error("", {"jobs": [{"jobname": "x", "error": 5}]}).startswith("job x: error 5")
    # A warning fio prints is not why a job failed: the failed job's errno comes first.
    assert (
        fe.fio_error(
            "fio: time_based requires a runtime/timeout setting\n",
            {"jobs": [{"jobname": "a", "error": 0}, {"jobname": "b", "error": 16}]},
        )
        == "job b: error 16 (Device or resource busy); fio: time_based requires a runtime/timeout setting"
    )


def test_files_a_tmpfs_cannot_run_are_given_the_filesystem_that_can(fe):
    assert fe.real_fs("[a]\nioengine=e4defrag\ndonorname=d\n")[0] == "ext4"
    assert fe.real_fs("[a]\nrw=randwrite\natomic=1\ndirect=1\n")[0] == "xfs"
    assert fe.real_fs("[a]\nioengine=psync\natomic=0\n") is None
    assert fe.real_fs("# ioengine=e4defrag in a comment\n[a]\nrw=read\n") is None
    assert fe.REMOTE.search("[r]\nhostname=239.0.0.0\n") and not fe.REMOTE.search("hostname=localhost\n")


def test_summary_separates_fsmeter_gaps_from_files_fio_cannot_run_here(fe):
    results = {
        "a.fio": {"fsmeter": "ran", "why": "", "fio_here": {"status": "runs"}, "fio": "same work"},
        "b.fio": {
            "fsmeter": "refused",
            "why": "b.fio line 3: ioengine=net: not supported",
            "fio_here": {"status": "runs"},
        },
        "c.fio": {"fsmeter": "refused", "why": "c.fio line 2: ioengine=rbd", "fio_here": {"status": "fails"}},
        "d.fio": {
            "fsmeter": "ran",
            "why": "",
            "fio_here": {"status": "lacks the engine dircreate"},
            "fio": "fio here lacks the engine dircreate",
        },
    }
    lines = fe.summary(results)
    assert lines[1] == "4 files; fio runs 2 here; fsmeter runs 2; of the 2, fsmeter runs 1 and refuses 1:"
    assert lines[2] == "  b.fio: refused: b.fio line 3: ioengine=net: not supported"
    assert "1 fails" in lines[3] and "1 lacks the engine" in lines[3]
    assert lines[4] == "fsmeter runs, fio here does not: d.fio (lacks the engine dircreate)"


def test_a_timed_out_run_also_kills_what_left_its_session(fe, tmp_path):
    # fio 3.42's vsock jobs start sessions of their own: the group kill misses them and they hold the pipes.
    marker = str(tmp_path / "job.fio")
    script = f"setsid {fe.sys.executable} -c 'import time; time.sleep(300)' {marker} & sleep 300"
    with pytest.raises(fe.subprocess.TimeoutExpired):
        fe._run(["sh", "-c", script], 1, marker)
    left = [d for d in Path("/proc").iterdir() if d.name.isdigit() and _runs(d, marker)]
    assert left == [], "the escaped process was killed"


def _runs(d: Path, marker: str) -> bool:
    try:
        return marker.encode() in (d / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False


def test_a_file_striped_across_its_clones_keeps_its_shape_when_scaled(fe, tmp_path):
    # cross-stripe-verify.fio's stripes: 30 clones 124g apart, 120g each, after 120k. A 64 MiB increment would put
    # clone 29 past the 64 MiB file (fio: "you need to specify valid offset="); the stripes shrink in proportion.
    text = "[global]\nbs=16k\noffset_increment=124g\nio_size=120g\noffset=120k\n[w]\nnumjobs=30\n"
    scaled, _, _ = fe.scale(text, tmp_path)
    opts = dict(line.split("=", 1) for line in scaled.splitlines() if "=" in line)
    inc, io = int(opts["offset_increment"]), int(opts["io_size"])
    assert inc == 2 << 20 and 120 * 1024 + 29 * inc < fe.SCALE_BYTES, "30 stripes fit in the file"
    assert io == 1920 << 10 and 0 <= inc * 120 // 124 - io < 64 << 10, "io_size in proportion, down to 64 KiB"
    assert opts["offset"] == "120k"
    # A file whose clones already fit is left as it is.
    small = "[global]\nbs=4k\noffset_increment=1m\nsize=1m\n[w]\nnumjobs=4\n"
    assert fe.scale(small, tmp_path)[0] == small
