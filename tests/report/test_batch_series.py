"""A configuration with a single trial gets a batch-means CI of its headline's own interval series
(bytes for dbench's MB/s, transactions for PostMark's tx/s), never the CI of the interval ops/s
applied to another metric; a headline with no such series says that no CI is available."""

from __future__ import annotations

import random

import pytest
from fsmeter.report.data import build_view, fmt_ci, verdicts
from fsmeter.stats.batch import batch_means_ci
from fsmeter.store import open_store
from report_synth import environment, phase_report

N = 40  # interval samples of 0.5 s (the synthetic job's interval_s)


def _report(rng: random.Random, units: bool) -> dict:
    """Steady operations per interval; bytes and transactions that swing by +-40% around their mean."""
    rep = phase_report(100.0, {"ReadX": (0.5, 1e5), "WriteX": (0.5, 1e5)}, rng, elapsed_s=N * 0.5, n_int=N)
    for iv in rep["intervals"]:
        iv["ops"] = 1000 + rng.randint(-5, 5)
        iv["bytes"] = int(4_000_000 * rng.uniform(0.6, 1.4))
        if units:
            iv["units"] = int(400 * rng.uniform(0.6, 1.4))
    return rep


def _store(path, family: str, headline: str, unit: str, units: bool = True) -> tuple:
    rng = random.Random(11)
    store = open_store(path)
    cid = store.create_campaign("s", "name = 's'\nmin_phase_s = 1\n", [("w", {"filesystem": "ext4"})])
    cell = store.cells(cid)[0]["id"]
    rep = _report(rng, units)
    store.record_trial(
        cell,
        1,
        status="ok",
        started="2024-01-01T00:00:00Z",
        phases=[{"key": "run", "engine_phase": "run", "report": rep}],
        metrics=[
            {"phase": "run", "name": headline, "unit": unit, "higher_is_better": True, "value": 4.0, "headline": True}
        ],
        environment=environment("ext4", family, {}),
    )
    store.set_cell_status(cell, "done", stop_reason="fixed-n")
    store.set_campaign_status(cid, "done")
    store.close()
    return cid, rep


def _series_pct(rep: dict, quantity) -> float:
    return batch_means_ci(
        [quantity(iv) / iv["dur_s"] for iv in rep["intervals"]], interval_s=0.5, min_duration_s=1
    ).ci.half_width_pct


@pytest.mark.parametrize(
    "family, headline, unit, quantity",
    [
        ("replay", "MB_per_s", "MB/s", lambda iv: iv["bytes"] / 1e6),
        ("fileset", "transactions_per_s", "tx/s", lambda iv: iv["units"]),
    ],
)
def test_single_trial_ci_is_of_the_headlines_own_series(tmp_path, family, headline, unit, quantity):
    cid, rep = _store(tmp_path / "s.sqlite", family, headline, unit)
    c = build_view(tmp_path / "s.sqlite", str(cid)).workloads[0].headline.configs[0]
    own = _series_pct(rep, quantity)
    ops = _series_pct(rep, lambda iv: iv["ops"])
    assert own > 5 * ops  # the two series really differ: the old code reported the ops one
    assert c.batch_pct == pytest.approx(own)
    assert "1 trial, batch means" in fmt_ci(c)


def test_a_headline_without_an_interval_series_says_no_ci(tmp_path):
    # A fileset trial recorded before transactions were sampled per interval: no series for tx/s.
    cid, _ = _store(tmp_path / "s.sqlite", "fileset", "transactions_per_s", "tx/s", units=False)
    view = build_view(tmp_path / "s.sqlite", str(cid))
    c = view.workloads[0].headline.configs[0]
    assert c.batch_pct is None and "no CI" in fmt_ci(c)
    assert any("no CI available" in n for n in verdicts(view)[0]["notes"])
    # A metric the family does not sample per interval at all.
    cid, _ = _store(tmp_path / "t.sqlite", "replay", "max_latency_ms", "ms")
    c = build_view(tmp_path / "t.sqlite", str(cid)).workloads[0].headline.configs[0]
    assert c.batch_pct is None and "not sampled per interval" in c.batch_note


@pytest.mark.parametrize(
    "workload, sets",
    [
        ("seq-read", {"file_size": "8M", "warmup_s": 0.05, "duration_s": 0.4}),
        ("fdtree-quick", {"levels": 1, "dirs_per_level": 3, "files_per_dir": 20, "file_blocks": 1}),
        ("postmark", {"files": 200, "transactions": 2000}),
        (
            "filemark-small",
            {"files": 300, "warmup_s": 0.05, "duration_s": 0.3, "transaction_phases": 2, "subdirectories": 2},
        ),
        ("dbench-quick", {"duration_s": 0.5, "warmup_s": 0.1}),
        ("bonnie-quick", {"size": "4M", "char_io_size": "256K", "seeks": 250, "files": 64}),
    ],
)
def test_every_series_adds_up_to_its_metric(tmp_path, workload, sets):
    """A family's per-interval quantity of a metric, summed over a real run and divided by the
    measured time, is exactly the metric: the series is the metric's own."""
    from fsmeter.phases import run_job
    from fsmeter.spec import build_job, load_workload
    from rich.console import Console

    job = build_job(load_workload(workload), tmp_path, {**sets, "interval_s": 0.05})
    doc = run_job(job, Console(quiet=True), show_progress=False, cache="keep", min_phase_s=1)
    series = job.workload.family.series
    checked = 0
    for key, m in doc["metrics"].items():
        phase, name = key.split(".", 1)
        if name not in series:
            continue
        rep = doc["phases"][phase]
        vals = [series[name](iv) for iv in rep["intervals"]]
        if all(v is None for v in vals):
            # No series in this phase: the engine drops `units` when none finished (a busy machine can
            # finish no transaction in a 0.3 s phase), and the metric is then zero.
            assert m["value"] == 0, key
            continue
        total = sum(vals)
        assert total / rep["elapsed_s"] == pytest.approx(m["value"], rel=1e-9), key
        checked += 1
    assert checked >= 1
