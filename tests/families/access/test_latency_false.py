"""latency = false (fio's gtod_reduce): the access family's requests counted, not timed, with the clock
read once per batch; the counts stay exact, the deadline holds, and no latency is reported as measured."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fsmeter.families.access import AccessParams


def run(tmp_path, *sets):
    out = tmp_path / "out.json"
    args = [sys.executable, "-m", "fsmeter", "run", "rand-read-4k", "--dir", str(tmp_path), "-q", "--json", str(out)]
    for s in ("file_size=1M", "latency=false", *sets):
        args += ["--set", s]
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def test_a_byte_quota_is_counted_exactly_and_no_latency_is_measured(tmp_path):
    doc = run(tmp_path, "warmup_s=0", "total_bytes=8M", "duration_s=none")
    run_ = doc["phases"]["run"]
    read = run_["ops"]["read"]
    assert (read["count"], read["bytes"]) == (2048, 8 << 20)
    assert read["lat"]["count"] == 0, "a latency where none was measured"
    assert run_["elapsed_s"] > 0
    assert doc["metrics"]["run.ops_per_s"]["value"] == pytest.approx(2048 / run_["elapsed_s"], rel=1e-12)
    assert "run.read_p99_us" not in doc["metrics"], "a latency metric of an untimed run"


def test_the_deadline_and_the_warm_up_hold_with_the_clock_read_per_batch(tmp_path):
    doc = run(tmp_path, "warmup_s=0.3", "duration_s=1")
    run_ = doc["phases"]["run"]
    # The clock is read at least every 64 requests and about every 100 us: the phase ends within
    # a few milliseconds of its second, not a batch of slow requests later.
    assert 1.0 <= run_["elapsed_s"] < 1.05, run_["elapsed_s"]
    samples = sum(i["ops"] for i in run_["intervals"])
    assert run_["total"]["ops"] > 1000 and samples == run_["total"]["ops"]


@pytest.mark.parametrize(
    "extra,field",
    [
        ({"interval_lat": True}, "interval_lat"),
        ({"latency_target": {"target_ns": 1_000_000, "window_ns": 1_000_000_000}}, "latency_target"),
    ],
)
def test_what_reads_each_latency_is_refused_in_one_line(extra, field):
    with pytest.raises(ValueError) as exc:
        AccessParams(entries=[{"size": 4096, "weight": 1, "read_pct": 100, "random_pct": 100}], latency=False, **extra)
    msg = str(exc.value)
    assert f"{field}: needs every request's latency" in msg, msg
