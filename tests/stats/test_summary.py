"""Hand-checked summaries and Student-t CIs (Jain ch. 12-13), plus CI coverage by simulation."""

import math

import numpy as np
import pytest
from fsmeter.errors import UserError
from fsmeter.stats.summary import mean_ci, summarize, t_critical

# The sample 2, 4, 4, 4, 5, 5, 7, 9 worked by hand (n = 8, sorted already):
#   mean      = 40 / 8 = 5
#   deviations  -3 -1 -1 -1 0 0 2 4 ; squares 9 1 1 1 0 0 4 16 -> sum 32
#   s^2       = 32 / 7 = 4.571428... ; s = 2.138090
#   COV       = s / mean = 0.427618
#   median    = (4 + 5) / 2 = 4.5
#   geometric = (2*4*4*4*5*5*7*9)^(1/8) = 201600^(1/8) = 4.603216
#   harmonic  = 8 / (1/2 + 3/4 + 2/5 + 1/7 + 1/9) = 8 / 1.903968 = 4.201751
#   quartiles (type 7, position (n-1)p + 1): p=.25 -> 2.75 -> x2 + .75 (x3 - x2) = 4
#                                            p=.75 -> 6.25 -> x6 + .25 (x7 - x6) = 5.5
#   SIQR      = (5.5 - 4) / 2 = 0.75
#   skewness  m2 = 32/8 = 4, m3 = (-27 -1 -1 -1 +8 +64)/8 = 5.25, g1 = 5.25 / 4^1.5 = 0.65625
#             G1 = g1 sqrt(n(n-1)) / (n-2) = 0.65625 * sqrt(56) / 6 = 0.818488
#   95% CI    t_{0.975; 7} = 2.365 (Jain Table A.4: 2.365)
#             half-width = 2.364624 * 2.138090 / sqrt(8) = 1.787488 -> [3.212512, 6.787488]
#   range 7, max/min 4.5
SAMPLE = [2, 4, 4, 4, 5, 5, 7, 9]


def test_summary_hand_checked():
    s = summarize(SAMPLE, level=0.95)
    assert s.n == 8
    assert s.mean == pytest.approx(5.0)
    assert s.stddev == pytest.approx(2.138090, abs=1e-6)
    assert s.cov == pytest.approx(0.427618, abs=1e-6)
    assert s.median == pytest.approx(4.5)
    assert s.geometric_mean == pytest.approx(4.603216, abs=1e-6)
    assert s.harmonic_mean == pytest.approx(4.201751, abs=1e-6)
    assert (s.q1, s.q3) == pytest.approx((4.0, 5.5))
    assert s.siqr == pytest.approx(0.75)
    assert s.skewness == pytest.approx(0.818488, abs=1e-6)
    assert (s.min, s.max, s.range, s.max_min_ratio) == pytest.approx((2, 9, 7, 4.5))
    assert s.notes == ()


def test_ci_against_t_table():
    assert t_critical(0.95, 7) == pytest.approx(2.365, abs=5e-4)  # Jain Table A.4
    assert t_critical(0.90, 7) == pytest.approx(1.895, abs=5e-4)
    assert t_critical(0.99, 9) == pytest.approx(3.250, abs=5e-4)
    ci = mean_ci(SAMPLE, 0.95)
    hw = 2.365 * math.sqrt(32 / 7) / math.sqrt(8)  # by hand with the table value
    assert ci.half_width == pytest.approx(hw, rel=2e-4)
    assert (ci.low, ci.high) == pytest.approx((3.212512, 6.787488), abs=1e-5)
    assert ci.half_width_pct == pytest.approx(100 * 1.787488 / 5, abs=1e-4)
    # Higher confidence, wider interval.
    assert mean_ci(SAMPLE, 0.99).half_width > ci.half_width > mean_ci(SAMPLE, 0.90).half_width


def test_nonpositive_values_give_nan_with_reason_not_a_crash():
    s = summarize([-1.0, 0.0, 3.0, 4.0])
    assert math.isnan(s.geometric_mean) and math.isnan(s.harmonic_mean) and math.isnan(s.max_min_ratio)
    assert any("> 0" in n for n in s.notes)
    assert s.mean == pytest.approx(1.5)


def test_single_value_and_constant_sample():
    s = summarize([7.0])
    assert s.mean == 7.0 and math.isnan(s.stddev) and math.isnan(s.ci.half_width)
    assert any("at least 2" in n for n in s.notes)
    c = summarize([3.0, 3.0, 3.0])
    assert c.stddev == 0 and c.ci.half_width == 0 and math.isnan(c.skewness)


def test_bad_input_is_a_user_error():
    with pytest.raises(UserError):
        summarize([])
    with pytest.raises(UserError):
        summarize([1.0, float("nan")])
    with pytest.raises(UserError):
        mean_ci([1, 2, 3], level=95)


@pytest.mark.parametrize("n", [5, 30])
def test_t_ci_covers_true_mean_about_95_percent(n):
    # 4000 normal samples of size n; the 95% Student-t CI must cover mu 93-97% of the time.
    rng = np.random.default_rng(20240605 + n)
    mu, sigma, draws = 100.0, 15.0, 4000
    hits = 0
    for _ in range(draws):
        ci = mean_ci(rng.normal(mu, sigma, n), 0.95)
        hits += ci.low <= mu <= ci.high
    assert 0.93 <= hits / draws <= 0.97


def test_z_interval_would_undercover_small_samples():
    # Why Student t: with n = 4, mean +- 1.96 s/sqrt(n) covers clearly less than 95%.
    rng = np.random.default_rng(7)
    x = rng.normal(0, 1, (4000, 4))
    m, s = x.mean(axis=1), x.std(axis=1, ddof=1)
    z_cover = np.mean(np.abs(m) <= 1.96 * s / 2)
    t_cover = np.mean([mean_ci(row).low <= 0 <= mean_ci(row).high for row in x[:2000]])
    assert z_cover < 0.91 and 0.93 <= t_cover <= 0.97
