"""`fsmeter analyze DB --campaign` uses the trials the report uses: discarded warm-up trials and
failed or interrupted trials stay out of the summaries and the ANOVA (fsmeter.stats.kept)."""

from __future__ import annotations

import random

import pytest
from fsmeter.cli import main
from fsmeter.report.data import build_view
from fsmeter.store import open_store
from report_synth import environment, phase_report

KEPT = {"ext4": [100.0, 102.0, 104.0], "xfs": [90.0, 91.0, 95.0]}


def _metric(v: float) -> list:
    return [
        {"phase": "run", "name": "MiB_per_s", "unit": "MiB/s", "higher_is_better": True, "value": v, "headline": True}
    ]


def _store(path) -> int:
    rng = random.Random(3)
    store = open_store(path)
    cid = store.create_campaign("k", "name = 'k'\n", [("seq-read", {"filesystem": fs}) for fs in KEPT])
    for c, (fs, values) in zip(store.cells(cid), KEPT.items()):
        rec = lambda n, status, v, **kw: store.record_trial(  # noqa: E731
            c["id"],
            n,
            status=status,
            started="2024-01-01T00:00:00Z",
            metrics=_metric(v),
            phases=[{"key": "run", "engine_phase": "run", "report": phase_report(v, {"read": (1.0, 5e4)}, rng)}],
            environment=environment(fs, "access", {}),
            **kw,
        )
        rec(1, "ok", 5000.0, discarded=True)  # the warm-up trial, far off
        for n, v in enumerate(values, 2):
            rec(n, "ok", v)
        rec(5, "failed", 1.0, cause="EngineFailure: No space left on device")
        rec(6, "interrupted", 2.0, cause="interrupted (SIGINT)")
        store.set_cell_status(c["id"], "done", stop_reason="fixed-n")
    store.set_campaign_status(cid, "done")
    store.close()
    return cid


def test_analyze_leaves_out_what_the_report_leaves_out(tmp_path, capsys):
    db = tmp_path / "k.sqlite"
    cid = _store(db)
    with pytest.raises(SystemExit) as exc:
        main(["analyze", str(db), "--campaign", str(cid), "--response", "MiB_per_s", "--factors", "filesystem"])
    out = capsys.readouterr().out
    assert exc.value.code == 0, out
    assert "left out of the statistics: 2 discarded warm-up trial(s), 4 failed or interrupted trial(s)" in out
    rows: dict = {}
    for line in out.splitlines():  # the first table: per-cell summary (n, mean, ...)
        if line.split()[:1] in (["ext4"], ["xfs"]):
            rows.setdefault(line.split()[0], line.split())
    for fs, values in KEPT.items():
        n, mean = rows[fs][1], float(rows[fs][2].replace(",", ""))
        assert n == "3" and mean == pytest.approx(sum(values) / 3, abs=0.01)
    assert "3 replications" in out  # a balanced 2 x 3 design: the ANOVA saw the kept trials only
    # The same trials as the report's.
    view = build_view(db, str(cid))
    assert {c.label: c.values for c in view.workloads[0].headline.configs} == KEPT
