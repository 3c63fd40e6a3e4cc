"""The depth-1 loop (one request at a time, nothing to pace, hold or log) against the general loop:
the same requests for a seed, counted the same way. serialize_overlap at depth 1 changes nothing the
filesystem sees (no other request is ever in flight) but sends the thread through the general loop."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run(tmp_path, name, *sets):
    out = tmp_path / f"{name}.json"
    d = tmp_path / name
    d.mkdir()
    args = [sys.executable, "-m", "fsmeter", "run", "fileserver", "--dir", str(d), "-q", "--json", str(out)]
    base = ("file_size=4M", "warmup_s=0", "total_bytes=16M", "duration_s=none", "seed=7", "fsync_every=5")
    for s in (*base, *sets):
        args += ["--set", s]
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())["phases"]["run"]


@pytest.mark.parametrize("latency", ["true", "false"])
def test_the_depth1_loop_makes_and_counts_the_general_loops_requests(tmp_path, latency):
    fast = run(tmp_path, "fast", f"latency={latency}")
    general = run(tmp_path, "general", f"latency={latency}", "serialize_overlap=true")
    assert fast["extra"]["mix"] == general["extra"]["mix"], "a different mix of requests for one seed"
    for op in ("read", "write", "fsync"):
        a, b = fast["ops"][op], general["ops"][op]
        assert (a["count"], a["bytes"]) == (b["count"], b["bytes"]), op
        assert (a["lat"]["count"] > 0) == (latency == "true"), op
    assert fast["total"]["bytes"] >= 16 << 20
