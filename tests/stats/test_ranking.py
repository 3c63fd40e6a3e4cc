"""Welch comparisons with a practical threshold, and rankings with groups."""

import pytest
from fsmeter.errors import UserError
from fsmeter.stats.ranking import compare, rank


def test_welch_hand_checked():
    # a = 10, 11, 12 ; b = 20, 21, 22: means 11, 21; s^2 = 1 each.
    # se = sqrt(1/3 + 1/3) = 0.81650, t = -10 / 0.81650 = -12.247
    # Welch df = (2/3)^2 / ((1/3)^2/2 + (1/3)^2/2) = 4 ; p = 2 * P(T_4 > 12.247) = 2.56e-4
    c = compare([10, 11, 12], [20, 21, 22])
    assert c.p_value == pytest.approx(2.56e-4, rel=0.01)
    assert c.rel_diff_pct == pytest.approx(-47.619, abs=1e-3)
    assert c.significant and not c.cis_overlap
    assert c.verdict == "slower"  # throughput: a is lower
    assert compare([10, 11, 12], [20, 21, 22], higher_is_better=False).verdict == "faster"  # latency


def test_significant_but_below_practical_threshold():
    a = [100.0, 100.1, 99.9, 100.05, 99.95]
    b = [103.0, 103.1, 102.9, 103.05, 102.95]
    c = compare(a, b)
    assert c.p_value < 1e-6 and abs(c.rel_diff_pct) < 10
    assert c.verdict == "no significant difference"
    assert compare(a, b, practical_pct=2).verdict == "slower"


def test_large_but_noisy_difference_is_not_claimed():
    c = compare([50, 150, 100], [90, 200, 140])
    assert abs(c.rel_diff_pct) > 10 and not c.significant
    assert c.verdict == "no significant difference" and c.cis_overlap


def test_constant_samples():
    assert compare([5, 5, 5], [5, 5, 5]).verdict == "no significant difference"
    assert compare([5, 5, 5], [10, 10, 10]).verdict == "slower"


def test_compare_needs_two_trials():
    with pytest.raises(UserError):
        compare([1], [2, 3])


def test_rank_groups():
    samples = {
        "ext4": [100, 101, 99, 100],
        "xfs": [99, 100, 98, 99.5],  # within 10% of ext4: same group
        "btrfs": [60, 61, 59, 60],  # far below: new group
        "f2fs": [59, 60, 58, 59.5],  # same as btrfs
    }
    r = rank(samples)
    assert [(e.name, e.rank, e.group) for e in r] == [("ext4", 1, 1), ("xfs", 2, 1), ("btrfs", 3, 2), ("f2fs", 4, 2)]
    assert r[1].vs_leader is not None and r[2].vs_leader is None
    # As latency (lower is better) the order flips.
    lat = rank(samples, higher_is_better=False)
    assert [e.name for e in lat] == ["f2fs", "btrfs", "xfs", "ext4"]
    assert [e.group for e in lat] == [1, 1, 2, 2]


def test_nearly_identical_samples_compare_without_a_warning():
    """scipy's precision-loss RuntimeWarning for near-constant samples must not reach the user's terminal."""
    import warnings

    from fsmeter.stats.ranking import compare

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = compare([5.0, 5.0, 5.0], [5.0, 5.0, 5.000000001])  # scipy warns on exactly this pair
    assert c.verdict == "no significant difference"
