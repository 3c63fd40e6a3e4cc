"""Batch means (Jain 25.5.2), fio-style steady-state detection, and the too-short flag."""

import math

import numpy as np
import pytest
from fsmeter.errors import UserError
from fsmeter.stats.batch import batch_means_ci, is_too_short, lag1_autocorrelation, steady_state


def test_batch_means_hand_checked():
    # 1..20 in 10 batches of 2: batch means 1.5, 3.5, ..., 19.5 (mean 10.5).
    # They are a straight line, so r1 is large, and the batch cannot grow (5 batches < 10): flagged.
    r = batch_means_ci(list(range(1, 21)), max_batches=10, min_batches=10, min_duration_s=0)
    assert r.batch_size == 2 and r.n_batches == 10 and r.unused == 0
    assert r.batch_means == pytest.approx([1.5 + 2 * i for i in range(10)])
    assert r.ci.mean == pytest.approx(10.5)
    # s of 1.5..19.5 step 2 = 2 * s(0..9) = 2 * 3.02765 = 6.05530; t_{.975;9} = 2.262
    assert r.ci.half_width == pytest.approx(2.262 * 6.05530 / math.sqrt(10), rel=5e-4)
    assert r.autocorrelated and r.r1 > r.r1_limit


def test_warmup_is_excluded():
    rng = np.random.default_rng(1)
    ramp = np.linspace(0, 100, 50)
    x = np.r_[ramp, rng.normal(100, 5, 600)]
    with_warmup = batch_means_ci(x, warmup=50)
    without = batch_means_ci(x, warmup=0)
    assert with_warmup.ci.low <= 100 <= with_warmup.ci.high
    # The ramp drags the mean down and, being a trend, widens the interval.
    assert without.ci.mean < with_warmup.ci.mean - 3
    assert without.ci.half_width > 3 * with_warmup.ci.half_width
    assert with_warmup.n_batches == 30 and with_warmup.batch_size == 20


def test_correlated_samples_grow_the_batches():
    # AR(1) with phi = 0.97: neighbouring 1-s samples are nearly equal, so small batches correlate.
    rng = np.random.default_rng(3)
    n, phi = 600, 0.97
    e = rng.normal(0, 1, n)
    x = np.empty(n)
    x[0] = 0
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    r = batch_means_ci(x + 1000)
    assert r.batch_size > n // 30  # grew from the initial 20
    assert 10 <= r.n_batches < 30
    iid = batch_means_ci(np.random.default_rng(4).normal(1000, 1, n))
    assert iid.batch_size == n // 30 and not iid.autocorrelated


def test_lag1_of_alternating_series_is_negative():
    assert lag1_autocorrelation([1, -1] * 10) == pytest.approx(-0.95)  # acf: -(n-1)/n
    assert math.isnan(lag1_autocorrelation([5, 5, 5, 5]))


def test_too_short():
    assert is_too_short(59.9) and not is_too_short(60.0)
    assert is_too_short(100, min_duration_s=120)
    r = batch_means_ci(np.ones(50) + np.arange(50) % 2, interval_s=1.0)
    assert r.too_short and any("too short" in n for n in r.notes)
    assert not batch_means_ci(np.ones(50) + np.arange(50) % 2, interval_s=2.0).too_short


def test_batch_errors():
    with pytest.raises(UserError):
        batch_means_ci([1, 2, 3], warmup=3)
    with pytest.raises(UserError):
        batch_means_ci([1.0] * 5)


def test_steady_state_deviation_hand_checked():
    # window 3, every sample within 5% of the window mean (fio ss=iops:5%):
    # [10,50,90] no; [50,90,100] no; [90,100,100] mean 96.67, max dev 6.67 = 6.9% no;
    # [100,100,100] and later yes -> warm-up = 3 samples.
    y = [10, 50, 90, 100, 100, 100, 100, 100]
    ss = steady_state(y, window=3, deviation_pct=5)
    assert ss.steady and ss.warmup == 3 and ss.deviation_pct == 0
    assert steady_state(y, window=3, deviation_pct=7).warmup == 2


def test_steady_state_slope_hand_checked():
    # [100, 101, 102]: least-squares slope 1 per sample, mean 101 -> 0.990% of the mean.
    assert steady_state([100, 101, 102], window=3, slope_pct=1.0).steady
    s = steady_state([100, 101, 102], window=3, slope_pct=0.9)
    assert not s.steady and s.warmup is None
    assert s.slope_pct == pytest.approx(100 / 101)


def test_steady_state_needs_all_later_windows():
    # A quiet stretch early in a ramp must not end the warm-up: criteria hold from index 10 only.
    y = [50, 50, 50, 60, 70, 80, 90, 95, 98, 99] + [100] * 10
    ss = steady_state(y, window=5, slope_pct=0.5, deviation_pct=2)
    assert ss.steady and ss.warmup is not None and ss.warmup >= 6
    assert steady_state(list(range(100, 130)), window=5, slope_pct=0.5).steady is False


def test_steady_state_arguments():
    with pytest.raises(UserError):
        steady_state([1, 2, 3], window=3)
    assert steady_state([1, 2], window=3, slope_pct=1).steady is False
