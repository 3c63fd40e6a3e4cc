"""The edge rule (fsmeter.study.edge) on synthetic data with a known answer, checked by hand.

The samples: ext3 98, 99, 100, 101, 102 (mean 100, sd 1.5811) and xfs the same shape about m. The
difference's standard error is sqrt(2.5/5 + 2.5/5) = 1.0 (1% of ext3's mean), Welch's df 8, and the
90% interval (alpha 0.05 one-sided) is (m - 100) +- t(0.95, 8) x 1.0 = +- 1.860.
"""

from __future__ import annotations

import math

import pytest
from claim_data import runs_frame, study, summary_frame
from fsmeter.study import edge
from fsmeter.study.claims import ClaimChecker

ORDER = {"kind": "ordering", "tiers": [["xfs"], ["ext3"]]}
SAME = {"kind": "equivalence", "tiers": [["xfs", "ext3"]], "margin_pct": 5.0}


def _shape(m: float) -> list[float]:
    return [m - 2, m - 1, m, m + 1, m + 2]


def _one(s, frame, paper=False):
    return ClaimChecker(s, frame, paper=paper).check_all()[0]


def test_an_interval_touching_zero_reads_inconclusive_and_names_the_trials():
    """m = 102.5: estimate +2.5%, 90% lower bound 2.5 - 1.860 = +0.64 > 0 (t = 2.5, df 8, one-sided
    p = 0.018): significant, "reproduced" on the numbers. The wobble with B = 2 points is
    sqrt(2 x 1.0^2 + 2^2) = 2.449 > 0.64: on the edge, inconclusive. Trials: with se = sqrt(5 / n) the
    bound 2.5 - 1.645 se must clear sqrt(2 se^2 + 4): se < 0.2794 (2.5 - 1.645 x 0.2794 = 2.0404 and
    sqrt(2 x 0.0781 + 4) = 2.0386), i.e. n >= 65 (n = 64 gives se 0.2795: 2.0402 < 2.0389 fails by a hair,
    so the least n is 64 or 65)."""
    s = study([ORDER], rules={"between_run_pct": 2.0, "between_run_source": "a test"})
    v = _one(s, runs_frame({("xfs", "a"): _shape(102.5), ("ext3", "a"): _shape(100)}))
    t = v.tests[0]
    assert t.se == pytest.approx(1.0)
    assert t.interval[0] == pytest.approx(2.5 - 1.8595, abs=1e-3)
    assert t.decided == "holds" and t.status == "unclear"
    assert t.wobble == pytest.approx(math.sqrt(6.0))
    assert v.data_outcome == "reproduced" and v.outcome == "inconclusive"
    assert t.edge_needed in (64, 65)
    assert f"about {t.edge_needed} trials a side" in v.full_reason()
    assert "between-run wobble 2 percentage points (a test)" in v.full_reason()


def test_an_interval_well_clear_keeps_its_word():
    """m = 110: lower bound 10 - 1.860 = 8.14, clear of 0 by more than the wobble 2.449: reproduced."""
    s = study([ORDER], rules={"between_run_pct": 2.0})
    v = _one(s, runs_frame({("xfs", "a"): _shape(110), ("ext3", "a"): _shape(100)}))
    assert v.outcome == "reproduced" and v.tests[0].status == "holds" and not v.tests[0].edge
    assert v.tests[0].clearance == pytest.approx(8.14, abs=0.01)
    # reversed the same way: the upper bound -8.14 is clear of 0
    v = _one(s, runs_frame({("xfs", "a"): _shape(90), ("ext3", "a"): _shape(100)}))
    assert v.outcome == "reversed" and not v.tests[0].edge


def test_the_between_run_part_alone_can_leave_it_unsettled():
    """B = 3 points against an estimate of 2.5: no number of trials settles it."""
    s = study([ORDER], rules={"between_run_pct": 3.0})
    v = _one(s, runs_frame({("xfs", "a"): _shape(102.5), ("ext3", "a"): _shape(100)}))
    assert v.outcome == "inconclusive" and v.tests[0].edge_needed is None
    assert "no number of trials settles it" in v.full_reason()


def test_without_a_between_run_part_the_sampling_part_still_applies():
    """B = 0: wobble sqrt(2) x 1.0 = 1.414 > 0.64, still on the edge; settled when 2.5 - 1.645 se >
    1.414 se, se < 0.8170, n > 5 / 0.6675 = 7.49: 8 trials."""
    s = study([ORDER], rules={"between_run_pct": 0.0})
    v = _one(s, runs_frame({("xfs", "a"): _shape(102.5), ("ext3", "a"): _shape(100)}))
    assert v.outcome == "inconclusive" and v.tests[0].edge_needed == 8


def test_the_default_is_used_and_named_when_the_rules_give_none():
    v = _one(study([ORDER]), runs_frame({("xfs", "a"): _shape(102.5), ("ext3", "a"): _shape(100)}))
    assert v.outcome == "inconclusive"
    assert edge.DEFAULT_BETWEEN_RUN_SOURCE in v.wobble


def test_an_equivalence_near_its_margin_reads_inconclusive():
    """TOST at 5%: m = 102.2, interval 2.2 +- 1.86 = [0.34, 4.06], inside +-5 (holds on the numbers) but
    the upper bound is 0.94 from the margin, under the wobble 2.449. m = 100.2: [-1.66, 2.06], 2.94 from
    the margin: holds."""
    s = study([SAME], rules={"between_run_pct": 2.0})
    v = _one(s, runs_frame({("xfs", "a"): _shape(102.2), ("ext3", "a"): _shape(100)}))
    assert v.data_outcome == "reproduced" and v.outcome == "inconclusive"
    v = _one(s, runs_frame({("xfs", "a"): _shape(100.2), ("ext3", "a"): _shape(100)}))
    assert v.outcome == "reproduced"


def test_a_ratio_near_the_end_of_its_range_reads_inconclusive():
    """Ratio claimed in [1.02, inf): xfs 105 against 100: the log-scale interval's lower end sits about
    1.1 log-% above ln 1.02 = 1.98 log-% (3.06: ln 1.05 = 4.88 less 1.86 x 0.977), within the wobble 2.41: inconclusive; xfs 130 is clear."""
    claim = {"kind": "magnitude", "tiers": [["xfs"], ["ext3"]], "ratio_range": [1.02, 100.0]}
    s = study([claim], rules={"between_run_pct": 2.0})
    near = _one(s, runs_frame({("xfs", "a"): _shape(105), ("ext3", "a"): _shape(100)}))
    assert near.tests[0].decided == "holds" and near.outcome == "inconclusive"
    far = _one(s, runs_frame({("xfs", "a"): _shape(130), ("ext3", "a"): _shape(100)}))
    assert far.outcome == "reproduced"


def test_the_papers_own_numbers_are_not_judged_by_the_edge_rule():
    """The edge rule is about re-runs: `study check` on published numbers keeps its words."""
    s = study([ORDER], rules={"between_run_pct": 2.0})
    f = summary_frame({("xfs", "a"): (102.5, 1.5811, 5), ("ext3", "a"): (100, 1.5811, 5)})
    v = _one(s, f, paper=True)
    assert v.paper_verdict == "supported" and not v.tests[0].edge
