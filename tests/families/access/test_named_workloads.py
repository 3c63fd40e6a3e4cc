"""The access family's named workloads: `fsmeter list` names them, their mixes are the documented tables,
and the engine runs each request kind in its share (seeded, so the same seed gives the same counts)."""

from __future__ import annotations

import math
import subprocess
import sys

from fsmeter.engine import EngineSession
from fsmeter.spec import build_job, list_workloads, load_workload, parse_set

NAMED_ACCESS = {
    "seq-read",
    "seq-write",
    "fileserver",
    "webserver",
    "oltp-8k",
    "workstation",
    "rand-read-4k",
    "rand-write-4k",
}


def fsmeter(*args, check=False):
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)], capture_output=True, text=True, check=check
    )


def test_list_names_every_access_workload():
    out = fsmeter("list", check=True).stdout
    for name in NAMED_ACCESS:
        assert name in out


def test_named_access_workloads_match_the_tables():
    # The table of docs/access.md: fileserver 80% reads, webserver 100%, oltp-8k 67%, workstation 80% reads 80% random.
    expect = {
        "fileserver": (80, 100, 8),
        "webserver": (100, 100, 10),
        "oltp-8k": (67, 100, 1),
        "workstation": (80, 80, 1),
    }
    for name, (read, rnd, n) in expect.items():
        p = load_workload(name).params
        assert len(p["entries"]) == n
        assert all(e["read_pct"] == read and e["random_pct"] == rnd for e in p["entries"])
        assert math.isclose(sum(e["weight"] for e in p["entries"]), 100)
    assert {d.name for d in list_workloads()} >= NAMED_ACCESS


def test_fileserver_mix_as_counted_by_the_engine(tmp_path):
    """Size and read/write fractions within 5 binomial standard errors of the spec (seeded, so stable)."""
    job = build_job(
        load_workload("fileserver"),
        tmp_path,
        parse_set(["backend=null", "file_size=1M", "warmup_s=0", "duration_s=none", "total_bytes=2G"]),
    )
    s = EngineSession(job.engine_json())
    s.run_phase("prepare")
    rep = s.run_phase("run")
    mix = rep["extra"]["mix"]
    n = sum(m["reads"] + m["writes"] for m in mix)
    assert n == rep["total"]["ops"]
    assert n > 50_000
    total_w = sum(m["weight"] for m in mix)
    for m in mix:
        p = m["weight"] / total_w
        got = (m["reads"] + m["writes"]) / n
        assert abs(got - p) < 5 * math.sqrt(p * (1 - p) / n), (m, got)
    reads = sum(m["reads"] for m in mix)
    assert abs(reads / n - 0.80) < 5 * math.sqrt(0.8 * 0.2 / n)
    assert all(m["sequential"] == 0 for m in mix)


def test_same_seed_same_counts_other_seed_differs(tmp_path):
    def counts(seed):
        job = build_job(
            load_workload("fileserver"),
            tmp_path,
            parse_set(
                ["backend=null", "file_size=1M", "warmup_s=0", "duration_s=none", "total_bytes=64M", f"seed={seed}"]
            ),
        )
        s = EngineSession(job.engine_json())
        s.run_phase("prepare")
        return [(m["reads"], m["writes"]) for m in s.run_phase("run")["extra"]["mix"]]

    assert counts(7) == counts(7)
    assert counts(7) != counts(8)
