"""Report: too-short phases are flagged in the verdicts; a configuration with one trial gets a
batch-means CI from its interval samples instead of no CI at all."""

from __future__ import annotations

import random

from fsmeter.report.data import build_view, fmt_ci, verdicts
from fsmeter.store import open_store
from report_synth import add_trials


def _store(path, n_trials_by_fs: dict, source: str):
    rng = random.Random(5)
    store = open_store(path)
    cid = store.create_campaign("q", source, [("seq-read", {"filesystem": fs}) for fs in n_trials_by_fs])
    for c, (fs, n) in zip(store.cells(cid), n_trials_by_fs.items()):
        add_trials(store, c["id"], [500.0 * rng.gauss(1, 0.02) for _ in range(n)], "access", fs, {}, rng)
        store.set_cell_status(c["id"], "done", stop_reason="fixed-n")
    store.set_campaign_status(cid, "done")
    store.close()
    return cid


def test_single_trial_gets_batch_ci_and_short_phases_are_flagged(tmp_path):
    db = tmp_path / "s.sqlite"
    cid = _store(db, {"ext4": 3, "xfs": 3, "btrfs": 1}, "name = 'q'\n")  # synthetic phases last 10 s
    view = build_view(db, str(cid))
    w = view.workloads[0]
    assert w.too_short and w.longest_phase_s == 10.0 and w.min_phase_s == 60.0
    single = next(c for c in w.headline.configs if c.label == "btrfs")
    assert single.ci is None and single.batch_pct is not None and 0 < single.batch_pct < 50
    assert "1 trial, batch means" in fmt_ci(single)
    ranked = next(c for c in w.headline.configs if c.label == "ext4")
    assert ranked.batch_pct is None and ranked.ci is not None
    notes = " ".join(verdicts(view)[0]["notes"])
    assert "too short to trust" in notes and "batch-means CI" in notes


def test_min_phase_s_from_the_campaign_file_lifts_the_flag(tmp_path):
    db = tmp_path / "s.sqlite"
    cid = _store(db, {"ext4": 3, "xfs": 3}, "name = 'q'\nmin_phase_s = 5\n")
    view = build_view(db, str(cid))
    assert not view.workloads[0].too_short
    assert not any("too short" in n for n in verdicts(view)[0]["notes"])
