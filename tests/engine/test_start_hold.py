"""EngineSession.run_phase(at_start=...): the hold an MPI rank's start barrier goes into. The
callback runs once the phase is set up and before its measured work, which waits for it."""

from __future__ import annotations

import time

import pytest
from fsmeter.engine import EngineSession
from fsmeter.spec import build_job, load_workload, parse_set

SETS = ["file_size=4M", "total_bytes=4M", "record_size=64k", "duration_s=none", "warmup_s=0"]


def _session(tmp_path, workload="seq-write"):
    job = build_job(load_workload(workload), tmp_path, parse_set(SETS))
    return EngineSession(job.engine_json(), for_merge=True)


def test_measured_work_starts_after_at_start_returns(tmp_path):
    s = _session(tmp_path)
    s.run_phase("prepare")
    seen = []

    def at_start():
        p = s._s.progress()  # held: nothing measured yet, however long this takes
        time.sleep(0.2)
        seen.append((p["ops"], time.monotonic_ns()))

    rep = s.run_phase("run", at_start=at_start)
    assert len(seen) == 1 and seen[0][0] == 0
    assert rep["window_mono_ns"][0] >= seen[0][1]  # the window opened after the callback returned
    assert rep["total"]["bytes"] == 4 << 20
    s.run_phase("cleanup")


def test_a_phase_run_without_at_start_is_not_held(tmp_path):
    s = _session(tmp_path)
    s.run_phase("prepare")
    rep = s.run_phase("run")  # would wait for ever if the hold were armed by default
    assert rep["total"]["bytes"] == 4 << 20 and not s._s.holding()
    s.run_phase("cleanup")


def test_an_error_in_at_start_stops_the_phase_and_is_raised(tmp_path):
    s = _session(tmp_path)
    s.run_phase("prepare")

    def at_start():
        raise RuntimeError("the barrier failed")

    with pytest.raises(RuntimeError, match="the barrier failed"):
        s.run_phase("run", at_start=at_start)
    assert s._s.stop_requested()
    s.reset_stop()
    s.run_phase("cleanup")
