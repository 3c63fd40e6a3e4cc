"""Phase quality: too-short flag, batch-means CI from interval samples, steady-state warm-up check."""

from __future__ import annotations

import numpy as np
import pytest
from fsmeter.stats.phase import phase_quality, report_quality


def intervals(rates, dur=1.0, last_partial=None):
    iv = [{"dur_s": dur, "ops": r * dur} for r in rates]
    if last_partial is not None:
        iv.append({"dur_s": last_partial[0], "ops": last_partial[1]})
    return iv


def test_steady_run_gets_a_batch_ci_that_covers_the_mean():
    rng = np.random.default_rng(3)
    rates = 1000 + rng.normal(0, 20, 120)
    q = phase_quality(intervals(rates, last_partial=(0.3, 999999)), elapsed_s=120.3)
    assert q.samples == 120  # the partial last interval (with an absurd rate) is left out
    assert q.batch is not None and q.batch.ci.low < 1000 < q.batch.ci.high
    assert q.batch.ci.half_width_pct < 2
    assert q.steady.steady and q.steady_from_s == 0
    assert not q.too_short
    d = q.to_dict()
    assert d["batch_ci"]["n_batches"] >= 10 and d["steady"] is True


def test_ramp_is_found_and_a_longer_warmup_suggested():
    # Window = 45 // 5 = 9 samples; 500 is 50% off any window mean near 1000, so steady starts at index 5.
    rates = [100, 200, 300, 400, 500] + [1000] * 40
    q = phase_quality(intervals(rates), elapsed_s=45, warmup_s=2)
    assert q.steady.steady
    assert q.steady_from_s == pytest.approx(2 + 5)  # warm-up 2 s + the 5 ramp samples
    assert any("warm-up of >= 7.0 s" in n for n in q.notes)
    assert "too short to trust" in q.summary()


def test_few_samples_say_why_there_is_no_batch_ci():
    q = report_quality({"intervals": intervals([5, 6, 5]), "elapsed_s": 3, "warmup_s": 0}, min_phase_s=1)
    assert q.batch is None and q.steady is None and not q.too_short
    assert "batch-means CI needs >= 10" in q.notes[0]


def test_run_cli_default_matches_the_statistics_default():
    from fsmeter.phases import DEFAULT_MIN_PHASE_S
    from fsmeter.stats.batch import DEFAULT_MIN_PHASE_S as STATS_DEFAULT

    assert DEFAULT_MIN_PHASE_S == STATS_DEFAULT


def test_one_long_interval_does_not_drop_the_others():
    # The engine's last sample can run a little past the sampling interval (it ends with the last
    # operation); judged against that one, every regular 1 s sample looked partial and was dropped.
    rng = np.random.default_rng(8)
    rates = list(1000 + rng.normal(0, 10, 30))
    iv = intervals(rates) + [{"dur_s": 1.2, "ops": 1200}]
    q = phase_quality(iv, elapsed_s=31.2, interval_s=1.0, min_phase_s=1)
    assert q.interval_s == 1.0
    assert q.samples == 31  # the 30 regular samples and the long one
    assert q.batch is not None and q.batch.ci.low < 1000 < q.batch.ci.high
    # Without the job's interval (older records) the median sample length stands in.
    assert phase_quality(iv, elapsed_s=31.2, min_phase_s=1).samples == 31
    # A short last sample is still left out against the job's interval.
    assert phase_quality(intervals(rates, last_partial=(0.4, 1)), 30.4, interval_s=1.0).samples == 30
    rep = {"intervals": iv, "elapsed_s": 31.2, "warmup_s": 0}
    assert report_quality(rep, min_phase_s=1, interval_s=1.0).samples == 31
