"""The statistical tests behind study verdicts, checked by hand and against scipy/statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fsmeter.study.stattests import (
    Sample,
    beyond_margin_p,
    diff_interval,
    holm,
    one_sided_p,
    ratio_in_range_p,
    ratio_interval,
    ratio_outside_p,
    tost_p,
    trials_needed,
    welch,
    welch_power,
)
from scipy import stats as sps

A = Sample(110.0, 10.0, 10)
B = Sample(100.0, 10.0, 10)


def test_welch_one_sided_by_hand():
    # se = sqrt(100/10 + 100/10) = sqrt(20) = 4.472; t = 10 / 4.472 = 2.236; equal sd and n: df = 2(n-1) = 18.
    w = welch(A, B)
    assert w.diff == 10.0 and w.se == pytest.approx(math.sqrt(20)) and w.df == pytest.approx(18.0)
    p = one_sided_p(A, B)
    # t table, df 18: t(0.975) = 2.101 < 2.236 < t(0.99) = 2.552, so 0.01 < p < 0.025
    assert 0.01 < p < 0.025
    assert p == pytest.approx(
        sps.ttest_ind_from_stats(110, 10, 10, 100, 10, 10, equal_var=False, alternative="greater").pvalue
    )
    # the other direction is the complement
    assert one_sided_p(A, B, a_larger=False) == pytest.approx(1 - p)


def test_welch_from_raw_runs_matches_scipy():
    rng = np.random.default_rng(7)
    x, y = rng.normal(10, 1, 8), rng.normal(9, 2, 5)
    p = one_sided_p(Sample.of(x), Sample.of(y))
    assert p == pytest.approx(sps.ttest_ind(x, y, equal_var=False, alternative="greater").pvalue)
    d, lo, hi = diff_interval(Sample.of(x), Sample.of(y), 0.95)
    ci = sps.ttest_ind(x, y, equal_var=False).confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((ci.low * 100 / y.mean(), ci.high * 100 / y.mean()))


def test_tost_against_statsmodels_and_by_hand():
    from statsmodels.stats.weightstats import ttost_ind

    rng = np.random.default_rng(3)
    x, y = rng.normal(101, 3, 10), rng.normal(100, 3, 10)
    margin = 5.0
    d = margin / 100 * y.mean()
    ref = ttost_ind(x, y, -d, d, usevar="unequal")[0]
    assert tost_p(Sample.of(x), Sample.of(y), margin) == pytest.approx(ref)
    # by hand: 110 vs 100 (se 4.472, df 18) with a 5% margin: the upper test has t = (10 - 5) / 4.472 = +1.118,
    # p = P(T18 < 1.118) > 0.5: equivalence at 5% is not shown; with a 20% margin both t are +-2.236: p ~ 0.019
    assert tost_p(A, B, 5.0) > 0.5
    assert tost_p(A, B, 20.0) == pytest.approx(one_sided_p(A, B), rel=1e-9)
    # and the difference is not shown to exceed 5% (t = 1.118, p ~ 0.14), but it is shown above 0%
    assert 0.1 < beyond_margin_p(A, B, 5.0) < 0.2


def test_ratio_interval_by_hand():
    # CV 10% on both sides, n = 10: var(log mean) = 0.01/10 each, se = sqrt(0.002) = 0.04472, df = 18,
    # t(0.975, 18) = 2.1009: half-width 0.09396 on the log scale: 1.2 x exp(+-0.09396) = [1.0924, 1.3182]
    r, lo, hi = ratio_interval(Sample(120.0, 12.0, 10), B, 0.95)
    assert r == pytest.approx(1.2)
    assert lo == pytest.approx(1.0924, abs=1e-4) and hi == pytest.approx(1.3182, abs=1e-4)
    # "about +20%" as [1.1, 1.3]: the 90% interval (two one-sided 5% tests) is 1.2 x exp(+-1.7341 x 0.04472)
    # = [1.1105, 1.2968], inside [1.1, 1.3], so p < 0.05; a claimed [1.25, 1.5] is not shown (estimate below 1.25)
    assert ratio_in_range_p(Sample(120.0, 12.0, 10), B, 1.1, 1.3) < 0.05
    assert ratio_in_range_p(Sample(120.0, 12.0, 10), B, 1.25, 1.5) > 0.5
    # a 5x claim against a measured 1.2: the ratio is shown below 5 (far outside)
    assert ratio_outside_p(Sample(120.0, 12.0, 10), B, 4.0, 6.0) < 1e-6
    assert ratio_outside_p(Sample(120.0, 12.0, 10), B, 1.0, 2.0) == 1.0
    # an open range: "at least 3x" is [3, inf]
    assert ratio_in_range_p(Sample(400.0, 40.0, 10), B, 3.0, math.inf) < 0.05


def test_holm_by_hand_and_against_statsmodels():
    from statsmodels.stats.multitest import multipletests

    # sorted 0.01, 0.03, 0.04: 3 x 0.01 = 0.03, 2 x 0.03 = 0.06, 1 x 0.04 = 0.04 -> kept monotone: 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    ps = [0.001, 0.2, 0.012, 0.049, 0.03, 0.9]
    assert holm(ps) == pytest.approx(list(multipletests(ps, method="holm")[1]))
    # one test: unchanged
    assert holm([0.04]) == [0.04]


def test_power_against_statsmodels():
    from statsmodels.stats.power import TTestIndPower

    # equal n and sd, Welch's df equals the pooled test's 2n - 2, so the two agree
    for n, d in ((10, 1.0), (5, 0.5), (20, 0.3)):
        s = Sample(100.0, 10.0, n)
        ref = TTestIndPower().power(effect_size=d, nobs1=n, alpha=0.05, ratio=1.0, alternative="larger")
        assert welch_power(s, s, d * 10.0, 0.05) == pytest.approx(ref, rel=1e-6)
    need = TTestIndPower().solve_power(effect_size=1.0, alpha=0.05, power=0.8, ratio=1.0, alternative="larger")
    assert trials_needed(B, B, 10.0, 0.05, 0.8) == math.ceil(need)
    # three trials with a 10% CV cannot see a 5% effect: its power is under 0.2
    assert welch_power(Sample(100.0, 10.0, 3), Sample(100.0, 10.0, 3), 5.0, 0.05) < 0.2


# -- inside a claim: Holm, the decision rule, power, gates ------------------------------------------------
import pandas as pd  # noqa: E402
from fsmeter.study.claims import ClaimChecker  # noqa: E402
from fsmeter.study.model import Claim, load_study  # noqa: E402
from fsmeter.study.plan import Change  # noqa: E402


def _study(**claim):
    from claim_data import study

    return study([{"kind": "ordering", "tiers": [["xfs"], ["ext3"]], **claim}])


def _summary_frame(cells, **extra):
    """cells: {(filesystem, case): (mean, sd, n)} as published summaries (one row each)."""
    return pd.DataFrame(
        [
            dict(
                workload="w",
                metric_key="run.x",
                higher_is_better=True,
                filesystem=fs,
                case=c,
                value=m,
                sd=sd,
                n=n,
                **extra,
            )
            for (fs, c), (m, sd, n) in cells.items()
        ]
    )


def _runs_frame(cells, n=8, **extra):
    """cells: {filesystem: mean}; n exact trials at mean -2, -1, 0, +1, +2 ... (sd ~1.5) per filesystem;
    a quiet machine unless ``extra`` says otherwise."""
    extra = {"other_cpu_share": 0.01, **extra}
    offs = [(-1) ** i * (i // 2 + 1) * 0.75 for i in range(n)]
    return pd.DataFrame(
        [
            dict(
                workload="w",
                metric_key="run.x",
                higher_is_better=True,
                filesystem=fs,
                trial=i,
                value=m + offs[i],
                **extra,
            )
            for fs, m in cells.items()
            for i in range(n)
        ]
    )


def test_holm_inside_a_claim_turns_a_lone_significant_case_unclear():
    # Three cases; by hand each one-sided Welch p: case a t = 5/sqrt(2*25/10) = 2.236, df 18, p = 0.0191;
    # Holm across the three: 3 x 0.0191 = 0.057 > 0.05, so case a alone no longer holds.
    cells = {
        ("xfs", "a"): (105, 5, 10),
        ("ext3", "a"): (100, 5, 10),
        ("xfs", "b"): (100, 5, 10),
        ("ext3", "b"): (100, 5, 10),
        ("xfs", "c"): (100, 5, 10),
        ("ext3", "c"): (100, 5, 10),
    }
    # a claimed 3% effect: too little power (~0.4) for silence to count as "not reproduced"
    v = ClaimChecker(_study(decide="any", effect_pct=3.0), _summary_frame(cells), paper=True).check_all()[0]
    a = next(t for t in v.tests if t.case.endswith("case=a"))
    assert a.p_hold == pytest.approx(0.0191, abs=2e-4) and a.adj_p == pytest.approx(3 * a.p_hold)
    assert a.status == "unclear" and v.outcome == "inconclusive"
    # the same case alone: unadjusted, it holds
    one = {k: val for k, val in cells.items() if k[1] == "a"}
    assert ClaimChecker(_study(), _summary_frame(one), paper=True).check_all()[0].outcome == "reproduced"


def test_decision_rule_across_cases():
    cells = {
        ("xfs", "a"): (150, 5, 10),
        ("ext3", "a"): (100, 5, 10),
        ("xfs", "b"): (150, 5, 10),
        ("ext3", "b"): (100, 5, 10),
        ("xfs", "c"): (60, 5, 10),
        ("ext3", "c"): (100, 5, 10),
    }
    f = _summary_frame(cells)
    words = {
        rule: ClaimChecker(_study(decide=rule), f, paper=True).check_all()[0].outcome
        for rule in ("all", "majority", "any", 3)
    }
    # two cases hold, one is reversed: 'all' (and 3) cannot be reached any more, and one reversed case of
    # three is not the opposite claim: not reproduced; 'majority' and 'any' hold
    assert words == {"all": "not reproduced", "majority": "reproduced", "any": "reproduced", 3: "not reproduced"}
    # a claim about four cases cannot be shown on three
    assert ClaimChecker(_study(decide=4), f, paper=True).check_all()[0].outcome == "inconclusive"


def test_not_reproduced_needs_the_interval_to_exclude_the_claimed_effect():
    # equal means; sd 1 of 100 with n = 10: the 95% upper bound is 0 + 1.734 x 0.447 = 0.78%
    precise = _summary_frame({("xfs", "a"): (100, 1, 10), ("ext3", "a"): (100, 1, 10)})
    # a claimed 10% lies beyond it: not reproduced
    assert ClaimChecker(_study(size_pct=10.0), precise, paper=True).check_all()[0].outcome == "not reproduced"
    # "faster" with no size: any positive difference up to 0.78% is still possible: inconclusive, however
    # high the power at 10% (about 1 here)
    v = ClaimChecker(_study(), precise, paper=True).check_all()[0]
    assert v.outcome == "inconclusive" and v.tests[0].power > 0.99
    # sd 20 with n = 3: nothing excluded either
    noisy = _summary_frame({("xfs", "a"): (100, 20, 3), ("ext3", "a"): (100, 20, 3)})
    v = ClaimChecker(_study(size_pct=10.0), noisy, paper=True).check_all()[0]
    assert v.outcome == "inconclusive" and v.tests[0].power < 0.3


def test_point_values_are_compared_descriptively():
    f = _summary_frame({("xfs", "a"): (120, None, None), ("ext3", "a"): (100, None, None)})
    v = ClaimChecker(_study(), f, paper=True).check_all()[0]
    assert v.outcome == "reproduced" and v.descriptive
    assert any("descriptive" in n for n in v.notes)


def test_gates_turn_short_or_busy_runs_inconclusive():
    s = _study()
    fine = _runs_frame({"xfs": 150, "ext3": 100}, phase_s=30.0, other_cpu_share=0.01)
    assert ClaimChecker(s, fine).check_all()[0].outcome == "reproduced"
    short = _runs_frame({"xfs": 150, "ext3": 100}, phase_s=0.4, other_cpu_share=0.01)
    v = ClaimChecker(s, short).check_all()[0]
    assert v.outcome == "inconclusive" and v.data_outcome == "reproduced"
    assert "under the study's minimum of 5 s" in v.gates[0] and "on the numbers alone: reproduced" in v.notes
    busy = _runs_frame({"xfs": 150, "ext3": 100}, phase_s=30.0, other_cpu_share=0.45)
    v = ClaimChecker(s, busy).check_all()[0]
    assert v.outcome == "inconclusive" and "busy" in v.gates[0]
    # the power at a small effect_pct no longer gates a significant result
    three = _runs_frame({"xfs": 150, "ext3": 100}, n=3, phase_s=30.0)
    v = ClaimChecker(_study(effect_pct=0.5), three).check_all()[0]
    assert v.outcome == "reproduced" and v.tests[0].power < 0.8


def test_two_trials_a_side_are_never_a_verdict():
    # +50% with a spread of about 1.5%: on 2 trials a side the test and the power both pass, but the
    # spreads behind them come from two numbers each (Welch: about one degree of freedom). Inconclusive.
    few = _runs_frame({"xfs": 150, "ext3": 100}, n=2, phase_s=30.0)
    v = ClaimChecker(_study(), few).check_all()[0]
    assert v.outcome == "inconclusive" and v.data_outcome == "reproduced"
    assert v.gates == ["2 trials per side: a verdict needs at least 3"]
    three = _runs_frame({"xfs": 150, "ext3": 100}, n=3, phase_s=30.0)
    assert ClaimChecker(_study(), three).check_all()[0].outcome == "reproduced"


def test_a_change_the_claim_is_sensitive_to_makes_it_not_comparable():
    f = _runs_frame({"xfs": 150, "ext3": 100}, phase_s=30.0)
    shrunk = [Change("shrunk", "w: size 1G -> 256M", "smaller data", ("file_size",))]
    assert ClaimChecker(_study(sensitive_to=["file_size"]), f, shrunk).check_all()[0].outcome == "not comparable here"
    assert ClaimChecker(_study(sensitive_to=["kernel"]), f, shrunk).check_all()[0].outcome == "reproduced"
    # reads served from the page cache void a claim sensitive to cache residency
    cached = _runs_frame({"xfs": 150, "ext3": 100}, phase_s=30.0, cache_read_share=0.97)
    v = ClaimChecker(_study(sensitive_to=["cache_residency"]), cached).check_all()[0]
    assert v.outcome == "not comparable here" and "97%" in v.gates[0]


def test_a_change_to_another_workload_or_configuration_leaves_the_claim_comparable():
    lay = load_study("layton2009")
    claim = Claim.model_validate(
        {
            "id": "C",
            "says": "",
            "kind": "ordering",
            "metrics": ["run.x"],
            "tiers": [["xfs"], ["ext3"]],
            "workloads": ["fdtree-small-shallow"],
            "sensitive_to": ["file_size"],
        }
    )
    s = lay.model_copy(update={"claims": [claim]})
    f = _runs_frame({"xfs": 150, "ext3": 100}, phase_s=30.0).assign(workload="fdtree-small-shallow")
    other = [Change("shrunk", "fdtree-medium-shallow: file_size 4M -> 1M", "smaller", ("file_size",))]
    assert ClaimChecker(s, f, other).check_all()[0].outcome == "reproduced"
    mine = [Change("shrunk", "fdtree-small-shallow: file_size 4K -> 1K", "smaller", ("file_size",))]
    assert ClaimChecker(s, f, mine).check_all()[0].outcome == "not comparable here"
    jfs = [Change("substituted", "configuration jfs -> ext4", "absent", ("file_size",))]
    assert ClaimChecker(s, f, jfs).check_all()[0].outcome == "reproduced"
    xfs = [Change("substituted", "configuration xfs -> ext4", "absent", ("file_size",))]
    assert ClaimChecker(s, f, xfs).check_all()[0].outcome == "not comparable here"
    # a change to the whole run (no workload or configuration named) touches every claim
    whole = [Change("approximated", "storage", "a loop device", ("file_size",))]
    assert ClaimChecker(s, f, whole).check_all()[0].outcome == "not comparable here"
    # each claim lists the changes touching it, voiding or not
    kern = [Change("approximated", "kernel", "another kernel", ("kernel",))]
    v = ClaimChecker(s, f, kern).check_all()[0]
    assert v.outcome == "reproduced"
    assert "this run's changes touching it: kernel (none it is sensitive to)" in v.notes


def test_variation_claims_pass_the_gates_too():
    rows = []
    for fs, fe in (("ext2", 5.0), ("ext3", -5.0)):
        for mode, me in (("block_read.kbs", 20.0), ("block_write.kbs", -20.0)):
            for t in range(6):
                rows.append(
                    dict(
                        workload="w",
                        metric_key=mode,
                        higher_is_better=True,
                        trial=t,
                        filesystem=fs,
                        value=100 + fe + me + (t - 2.5) * 0.4,
                        phase_s=30.0,
                        other_cpu_share=0.02,
                    )
                )
    f = pd.DataFrame(rows)
    claim = {
        "kind": "variation",
        "metrics": ["block_read.kbs", "block_write.kbs"],
        "tiers": [],
        "design": ["filesystem", "access_mode"],
        "larger": ["access_mode", "filesystem"],
    }
    assert ClaimChecker(_study(**claim), f).check_all()[0].outcome == "reproduced"
    busy = f.assign(other_cpu_share=0.9)
    v = ClaimChecker(_study(**claim), busy).check_all()[0]
    assert v.outcome == "inconclusive" and "busy" in v.gates[0]
    cached = f.assign(cache_read_share=1.0)
    v = ClaimChecker(_study(sensitive_to=["cache_residency"], **claim), cached).check_all()[0]
    assert v.outcome == "not comparable here"


def test_a_re_run_with_one_trial_a_side_is_inconclusive_not_descriptive():
    one = _runs_frame({"xfs": 150, "ext3": 100}, n=1, phase_s=30.0)
    v = ClaimChecker(_study(), one).check_all()[0]
    assert v.outcome == "inconclusive" and "one kept trial" in v.tests[0].effect
    # the same numbers published as point values are compared descriptively
    assert ClaimChecker(_study(), one, paper=True).check_all()[0].outcome == "reproduced"


def test_not_better_by_more_than_a_margin():
    """'deep is not faster than shallow' with a 5% margin (a non-superiority test, one-sided Welch)."""
    base = {
        "factor": "workload",
        "pairs": [["shallow", "deep"]],
        "direction": "not_up",
        "margin_pct": 5.0,
        "tiers": [],
        "metrics": ["run.x"],
    }

    def frame(deep, shallow):
        return pd.DataFrame(
            [
                dict(workload=w, metric_key="run.x", higher_is_better=True, filesystem="ext4", value=m, sd=1.0, n=10)
                for w, m in (("deep", deep), ("shallow", shallow))
            ]
        )

    # deep 2% faster: within the margin -> holds; by hand t = (5 - 2) / sqrt(0.2) = 6.7, p ~ 1e-6
    assert ClaimChecker(_study(**base), frame(102, 100), paper=True).check_all()[0].outcome == "reproduced"
    # deep 10% faster: beyond the margin, significantly -> reversed
    assert ClaimChecker(_study(**base), frame(110, 100), paper=True).check_all()[0].outcome == "reversed"
    # deep 5.2% faster: on the margin, neither shown -> inconclusive
    assert ClaimChecker(_study(**base), frame(105.2, 100), paper=True).check_all()[0].outcome == "inconclusive"


def test_evidence_leads_with_the_cases_that_decided():
    cells = {
        ("xfs", "a"): (150, 5, 10),
        ("ext3", "a"): (100, 5, 10),
        ("xfs", "b"): (60, 5, 10),
        ("ext3", "b"): (100, 5, 10),
    }
    v = ClaimChecker(_study(), _summary_frame(cells), paper=True).check_all()[0]
    assert v.outcome == "not reproduced"
    assert v.evidence()[0].startswith("run.x, w, case=b") and "reversed" in v.evidence()[0]
    v = ClaimChecker(_study(decide="any"), _summary_frame(cells), paper=True).check_all()[0]
    assert v.outcome == "reproduced" and v.evidence()[0].startswith("run.x, w, case=a")
