"""The adaptive-trials rule (Jain 13.9 applied after every trial)."""

import math

import numpy as np
import pytest
from fsmeter.errors import UserError
from fsmeter.stats.adaptive import AdaptiveRule


def test_hand_checked_decisions():
    rule = AdaptiveRule(target_pct=10, level=0.95, discard_first=1, min_trials=3, max_trials=30)
    # Kept 10, 10.5, 9.5 (50 discarded): mean 10, s 0.5, t_{.975;2} = 4.303
    # half-width = 4.303 * 0.5 / sqrt(3) = 1.2421 -> 12.42% > 10%: continue.
    d = rule.decide([50, 10, 10.5, 9.5], elapsed_s=30)
    assert (d.stop, d.reason, d.n_used) == (False, "continue", 3)
    assert d.half_width_pct == pytest.approx(12.42, abs=0.01)
    assert d.mean == pytest.approx(10)
    # Add 10.2, 9.8: s = sqrt(0.58 / 4) = 0.38079, t_{.975;4} = 2.776
    # half-width = 2.776 * 0.38079 / sqrt(5) = 0.4728 -> 4.73%: target met.
    d = rule.decide([50, 10, 10.5, 9.5, 10.2, 9.8], elapsed_s=60)
    assert (d.stop, d.reason) == (True, "target-met")
    assert d.half_width_pct == pytest.approx(4.73, abs=0.01)


def test_min_trials_and_discard():
    rule = AdaptiveRule(min_trials=3, discard_first=1)
    d = rule.decide([1000, 10, 10])  # two equal kept values: hw 0 but too few trials
    assert d.reason == "continue" and d.half_width_pct == 0
    assert rule.decide([1000]).reason == "continue" and math.isnan(rule.decide([1000]).half_width_pct)
    assert rule.decide([1000, 10, 10, 10]).reason == "target-met"


def test_caps_and_precedence():
    rule = AdaptiveRule(target_pct=1, max_trials=5, max_time_s=100)
    noisy = [1, 5, 9, 2, 8]
    assert rule.decide(noisy, elapsed_s=10).reason == "trial-cap"
    assert rule.decide(noisy[:4], elapsed_s=100).reason == "time-cap"
    assert rule.decide(noisy[:4], elapsed_s=99).reason == "continue"
    # The time cap does not cut a cell below min_trials kept trials (3 by default, 1 discarded).
    assert rule.decide(noisy[:3], elapsed_s=500).reason == "continue"
    assert rule.decide(noisy[:4], elapsed_s=500).reason == "time-cap"
    # Meeting the target on the last allowed trial is reported as target-met.
    assert rule.decide([7, 10, 10, 10, 10], elapsed_s=500).reason == "target-met"


def run_until_stop(rule, rng, mu, sigma, trial_s=10.0):
    values = []
    while True:
        values.append(rng.normal(mu, sigma))
        d = rule.decide(values, elapsed_s=trial_s * len(values))
        if d.stop:
            return values, d


def test_stops_at_target_on_known_variance():
    # COV 5%: Jain 13.9 gives n = (t s / (0.1 mean))^2 ~ (2.78 * 5 / 10)^2 ~ 2-4 kept trials,
    # so min_trials = 3 usually decides. Over 300 cells every one must stop at the target.
    rule = AdaptiveRule(target_pct=10, min_trials=3, max_trials=30)
    rng = np.random.default_rng(11)
    runs = [run_until_stop(rule, rng, 100, 5) for _ in range(300)]
    assert all(d.reason == "target-met" and d.half_width_pct <= 10 for _, d in runs)
    assert np.median([len(v) for v, _ in runs]) <= 6


def test_cov_20_needs_more_trials_but_meets_target():
    # COV 20%: n ~ (2.0 * 20 / 10)^2 ~ 16-18 kept trials; cap 30 leaves room.
    rule = AdaptiveRule(target_pct=10, max_trials=30)
    rng = np.random.default_rng(12)
    runs = [run_until_stop(rule, rng, 100, 20) for _ in range(200)]
    met = [len(v) for v, d in runs if d.reason == "target-met"]
    assert len(met) >= 180
    assert 10 <= np.median(met) <= 25


def test_hits_trial_cap_when_variance_too_large():
    # COV 100% would need ~400 trials: the cap of 30 stops every cell, and says so.
    rule = AdaptiveRule(target_pct=10, max_trials=30)
    rng = np.random.default_rng(13)
    for _ in range(50):
        values, d = run_until_stop(rule, rng, 100, 100)
        assert d.reason == "trial-cap" and len(values) == 30 and d.half_width_pct > 10


def test_time_cap():
    rule = AdaptiveRule(target_pct=1, max_trials=30, max_time_s=55)
    values, d = run_until_stop(rule, np.random.default_rng(1), 100, 50, trial_s=10)
    assert d.reason == "time-cap" and len(values) == 6


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(target_pct=0),
        dict(level=1.5),
        dict(min_trials=1),
        dict(discard_first=-1),
        dict(max_trials=3, discard_first=1, min_trials=3),
        dict(max_time_s=0),
    ],
)
def test_bad_parameters(kwargs):
    with pytest.raises(UserError):
        AdaptiveRule(**kwargs)
