"""The one phase loop (fsmeter.phases.run_phases) every way of running a job goes through, the MPI
ranks' merged regime, and the family hooks the report and `fsmeter run` find through `Family`."""

from __future__ import annotations

import ast

import pytest
from fsmeter.families import FAMILIES, Phase, resolve
from fsmeter.mpi.merge import merge_regime
from fsmeter.phases import PhaseRun, judge, run_phases
from repo_paths import ROOT

PACKAGE = ROOT / "python" / "fsmeter"


class FakeSession:
    """An engine session whose phases return canned reports (or raise), and which notes the calls."""

    def __init__(self, reports: dict, engine_phases=("prepare", "run", "cleanup")):
        self.reports, self.engine_phases, self.calls = reports, list(engine_phases), []

    def phases(self):
        return self.engine_phases

    def run_phase(self, name, on_progress=None, **_):
        self.calls.append(name)
        rep = self.reports.get(name, {})
        if isinstance(rep, BaseException):
            raise rep
        if on_progress is not None:
            on_progress({"state": "done"})
        return {"phase": name, "ops": {}, **rep}


def no_progress(_phase):
    import contextlib

    return contextlib.nullcontext(lambda p: None)


PLAN = [Phase("prepare", measured=False), Phase("run", cold_cache=True), Phase("verify")]


def test_phases_run_in_order_with_cache_reset_and_cleanup():
    s = FakeSession({}, ("prepare", "run", "verify", "cleanup"))
    resets = []
    run = run_phases(
        PhaseRun(s), PLAN, no_progress, reset_cache=lambda ph: resets.append(ph.key) or "fadvise", annotate=True
    )
    assert s.calls == ["prepare", "run", "verify", "cleanup"]
    assert resets == ["run"] and run.resets == ["fadvise"]
    reps = run.reports()
    assert [reps[k]["cache_reset"] for k in ("prepare", "run", "verify")] == ["none", "fadvise", "none"]
    assert [reps[k]["measured"] for k in ("prepare", "run", "verify")] == [False, True, True]
    assert all("regime" in r for r in reps.values()) and not run.interrupted and run.cleaned


def test_an_interrupted_phase_stops_the_loop_and_if_complete_keeps_the_files():
    s = FakeSession({"run": {"interrupted": True}}, ("prepare", "run", "verify", "cleanup"))
    run = run_phases(PhaseRun(s), PLAN, no_progress, cleanup="if-complete")
    assert s.calls == ["prepare", "run"]  # no verify, no cleanup
    assert run.interrupted and [o.phase.key for o in run.phases] == ["prepare", "run"]
    s = FakeSession({"run": {"interrupted": True}}, ("prepare", "run", "verify", "cleanup"))
    run_phases(PhaseRun(s), PLAN, no_progress, cleanup="always")
    assert s.calls == ["prepare", "run", "cleanup"]


def test_an_error_keeps_what_was_measured_and_cleans_up_only_when_asked():
    for rule, cleaned in (("always", True), ("unless-raised", False), ("never", False)):
        s = FakeSession({"verify": RuntimeError("EIO")}, ("prepare", "run", "verify", "cleanup"))
        run = PhaseRun(s)
        with pytest.raises(RuntimeError):
            run_phases(run, PLAN, no_progress, cleanup=rule)
        assert [o.phase.key for o in run.phases] == ["prepare", "run"], rule
        assert (s.calls[-1] == "cleanup") is cleaned, rule


def test_a_stop_signal_marks_the_run_interrupted_and_propagates():
    s = FakeSession({"run": KeyboardInterrupt()})
    run = PhaseRun(s)
    with pytest.raises(KeyboardInterrupt):
        run_phases(run, PLAN, no_progress)
    assert run.interrupted and s.calls == ["prepare", "run", "cleanup"]


def test_quality_only_for_measured_phases_and_interrupted_ones_only_when_asked():
    reports = {"run": {"interrupted": True, "intervals": [], "elapsed_s": 2.0, "warmup_s": 0.0}}
    run = run_phases(PhaseRun(FakeSession(reports)), PLAN[:2], no_progress, quality=judge(min_phase_s=1))
    assert "quality" not in run.reports()["prepare"] and "quality" not in run.reports()["run"]
    run = run_phases(
        PhaseRun(FakeSession(reports)), PLAN[:2], no_progress, quality=judge(min_phase_s=1, interrupted=True)
    )
    assert run.reports()["run"]["quality"]["too_short"] is False


def test_merged_regime_of_ranks_on_two_hosts():
    """Hand-checked: host a has ranks 0 and 1 (each saw the host's device read 40 and 60 MiB: the
    wider window, 60, stands for the host), host b rank 2 (device 20 MiB). Engine reads 3 x 50 MiB =
    150 MiB; device 60 + 20 = 80 MiB; cache share 1 - 80/150 = 0.4667. Others' CPU: the busiest host."""
    mib = 1 << 20

    def part(rank, host, share, dev):
        return {
            "rank": rank,
            "host": host,
            "report": {
                "regime": {
                    "device": "/dev/loop9",
                    "cpus": 2,
                    "other_cpu_share": share,
                    "busy": share > 0.1,
                    "own_cpu_s": 1.0,
                    "read_bytes": 50 * mib,
                    "write_bytes": 0,
                    "process_read_bytes": 0,
                    "process_write_bytes": 0,
                    "device_read_bytes": dev * mib,
                    "device_write_bytes": 0,
                    "wall_s": 2.0,
                }
            },
        }

    reg = merge_regime([part(0, "a", 0.02, 40), part(1, "a", 0.05, 60), part(2, "b", 0.30, 20)])
    assert reg["read_bytes"] == 150 * mib and reg["device_read_bytes"] == 80 * mib
    assert reg["cache_read_share"] == pytest.approx(0.4667, abs=1e-4)
    assert reg["other_cpu_share"] == 0.30 and reg["busy"] is True
    assert reg["hosts"]["a"]["other_cpu_share"] == 0.05 and reg["own_cpu_s"] == 2.0
    reg = merge_regime(
        [
            part(0, "a", 0.02, 40),
            {
                "rank": 1,
                "host": "b",
                "report": {"regime": {"device": None, "read_bytes": 50 * mib, "device_read_bytes": None}},
            },
        ]
    )
    assert reg["device_read_bytes"] is None and reg["cache_read_share"] is None  # one host unknown: unknown


def test_every_family_hook_names_a_function():
    for name, fam in FAMILIES.items():
        for hook in (fam.charts, fam.run_summary):
            if hook is not None:
                assert callable(resolve(hook)), (name, hook)


def test_nothing_below_the_cli_imports_it():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "cli" or rel.name == "__main__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{rel}: {n}" for n in names if n == "fsmeter.cli" or n.startswith("fsmeter.cli.")]
    assert not offenders, offenders
