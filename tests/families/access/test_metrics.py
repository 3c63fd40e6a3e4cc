"""The access family's headline counts data operations, as fio's IOPS do: fsync is counted apart."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def test_fsync_after_every_write_does_not_double_the_headline(tmp_path):
    out = tmp_path / "out.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsmeter",
            "run",
            "rand-write-4k",
            "--dir",
            str(tmp_path),
            "-q",
            "--set",
            "file_size=1M",
            "--set",
            "fsync_every=1",
            "--set",
            "warmup_s=0",
            "--set",
            "total_bytes=512K",
            "--set",
            "duration_s=none",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    run = doc["phases"]["run"]
    writes, fsyncs = run["ops"]["write"]["count"], run["ops"]["fsync"]["count"]
    assert writes == 128 and fsyncs == writes
    data_ops = writes + run["ops"].get("read", {}).get("count", 0)
    assert doc["metrics"]["run.ops_per_s"]["value"] == pytest.approx(data_ops / run["elapsed_s"], rel=1e-12)
    assert run["total"]["ops"] == data_ops
    # fsync has its own rate and latency.
    assert doc["metrics"]["run.fsync_per_s"]["value"] == pytest.approx(fsyncs / run["elapsed_s"], rel=1e-12)
    assert doc["metrics"]["run.fsync_p99_us"]["value"] > 0
