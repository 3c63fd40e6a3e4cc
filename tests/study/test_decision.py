"""The decision rules (fsmeter.study.verdict) on data sets whose answer is known, checked by hand.

Each data set is small enough to recompute on paper; the comments give the arithmetic (Welch's t,
its Satterthwaite df, the t-table bounds) so that a reader can check the word without the code.
"""

from __future__ import annotations

import math

import pytest
from claim_data import QUIET, runs_frame, study, summary_frame
from fsmeter.study import verdict as vd
from fsmeter.study.claims import ClaimChecker
from fsmeter.study.verdict import AGAINST, HOLDS, OPPOSITE, UNCLEAR

ORDER = {"kind": "ordering", "tiers": [["xfs"], ["ext3"]]}


def _one(s, frame, paper=False, changes=()):
    return ClaimChecker(s, frame, changes, paper=paper).check_all()[0]


# -- the rules themselves -------------------------------------------------------------------------------
def test_pair_rules():
    kw = dict(size_pct=0.0, min_difference_pct=0.0, apart=True)
    assert vd.ordering_pair(holds_sig=True, opposite_sig=False, estimate_pct=5, upper_pct=9, **kw) == HOLDS
    # significant but under the claimed size: not a hold; its bound still reaches the size: unclear
    assert (
        vd.ordering_pair(holds_sig=True, opposite_sig=False, estimate_pct=5, upper_pct=9, **{**kw, "size_pct": 8})
        == UNCLEAR
    )
    # ... and when the bound stays under the size, the claimed effect is excluded
    assert (
        vd.ordering_pair(holds_sig=True, opposite_sig=False, estimate_pct=5, upper_pct=7, **{**kw, "size_pct": 8})
        == AGAINST
    )
    # the opposite, significant: reversed, unless it is under the study's minimum difference
    assert vd.ordering_pair(holds_sig=False, opposite_sig=True, estimate_pct=-8, upper_pct=-5, **kw) == OPPOSITE
    assert (
        vd.ordering_pair(
            holds_sig=False, opposite_sig=True, estimate_pct=-8, upper_pct=-5, **{**kw, "min_difference_pct": 10}
        )
        == AGAINST
    )
    # nothing shown either way
    assert vd.ordering_pair(holds_sig=False, opposite_sig=False, estimate_pct=1, upper_pct=4, **kw) == UNCLEAR
    # the study's interval rule (intervals overlap) stops a hold
    assert (
        vd.ordering_pair(holds_sig=True, opposite_sig=False, estimate_pct=5, upper_pct=9, **{**kw, "apart": False})
        == UNCLEAR
    )


def test_case_and_claim_rules():
    assert vd.case_outcome([HOLDS, HOLDS]) == HOLDS
    assert vd.case_outcome([OPPOSITE, OPPOSITE]) == OPPOSITE
    # a three-tier ordering with one pair flipped is falsified, not reversed
    assert vd.case_outcome([HOLDS, OPPOSITE, HOLDS]) == AGAINST
    assert vd.case_outcome([HOLDS, UNCLEAR]) == UNCLEAR
    assert vd.case_outcome([UNCLEAR, AGAINST]) == AGAINST
    # 'all' over four cases
    assert vd.decide([HOLDS] * 4, "all")[0] == "reproduced"
    assert vd.decide([HOLDS, HOLDS, HOLDS, OPPOSITE], "all")[0] == "not reproduced"
    assert vd.decide([OPPOSITE] * 4, "all")[0] == "reversed"
    assert vd.decide([HOLDS, HOLDS, HOLDS, UNCLEAR], "all")[0] == "inconclusive"
    # 'majority' of three: 2 needed
    assert vd.decide([HOLDS, HOLDS, OPPOSITE], "majority")[0] == "reproduced"
    assert vd.decide([OPPOSITE, OPPOSITE, HOLDS], "majority")[0] == "reversed"
    assert vd.decide([AGAINST, AGAINST, UNCLEAR], "majority")[0] == "not reproduced"
    assert vd.decide([AGAINST, UNCLEAR, UNCLEAR], "majority")[0] == "inconclusive"
    # a rule asking for more cases than there are
    assert vd.decide([HOLDS, HOLDS], 3)[0] == "inconclusive"


# -- the hand-checked data sets -----------------------------------------------------------------------------
def test_a_significant_large_effect_with_three_trials_a_side_is_reproduced():
    """xfs 130, 150, 170 against ext3 99, 100, 101. By hand: means 150 and 100, sd 20 and 1; se =
    sqrt(400/3 + 1/3) = 11.56; t = 50 / 11.56 = 4.32; Satterthwaite df = (133.67^2) / (133.33^2 / 2 +
    0.333^2 / 2) = 2.01; the t table at 2 df: t(0.975) = 4.30 < 4.32 < t(0.99) = 6.96, so 0.01 < p < 0.025.
    Power at the default 10% difference is low (se 11.6 against 10), which once made this inconclusive;
    power is not consulted for a significant result: the decision rules read "reproduced".

    The edge rule (fsmeter.study.edge) then asks whether a re-run would say the same: the 90% lower
    bound, 50 - t(0.95, 2.01) x 11.56 = 50 - 2.92 x 11.56 = 16.2, is clear of zero by less than the
    run-to-run wobble, sqrt(2) x 11.56 = 16.3 from sampling alone: the verdict is inconclusive."""
    f = runs_frame({("xfs", "a"): [130, 150, 170], ("ext3", "a"): [99, 100, 101]})
    v = _one(study([ORDER]), f)
    t = v.tests[0]
    assert 0.01 < t.p_hold < 0.025 and t.p_hold == pytest.approx(0.02454, abs=1e-4)
    assert t.estimate == pytest.approx(50.0)
    assert t.power < 0.3  # reported, not used
    assert v.data_outcome == "reproduced" and v.gates == []
    assert v.outcome == "inconclusive" and t.decided == "holds" and "on the edge" in t.edge


def test_a_non_significant_result_whose_interval_holds_the_claimed_effect_is_inconclusive():
    """101.2 against 100, sd 2.2361 both, n = 10: se = sqrt(2 x 5 / 10) = 1.0, t = 1.2, df 18, p = 0.123
    (the t table: t(0.90, 18) = 1.330 > 1.2); the one-sided 95% upper bound is 1.2 + 1.734 = 2.93%. The
    claim says at least 2.7%: inside the interval, so not excluded: inconclusive. The old rule called it
    'not reproduced' because the power at 2.7% is 0.83 (noncentral t, ncp 2.7, df 18)."""
    f = summary_frame({("xfs", "a"): (101.2, 2.2361, 10), ("ext3", "a"): (100.0, 2.2361, 10)})
    v = _one(study([{**ORDER, "size_pct": 2.7, "effect_pct": 2.7}]), f, paper=True)
    t = v.tests[0]
    assert t.p_hold == pytest.approx(0.1228, abs=1e-3)
    assert t.upper == pytest.approx(2.934, abs=2e-3)
    assert t.power == pytest.approx(0.829, abs=2e-3)
    assert t.status == UNCLEAR and v.outcome == "inconclusive"
    assert "power at a 2.7% difference: 0.83" in v.power_note
    # a claimed 3.5% lies above the bound: excluded, "not reproduced" (contradicted on a paper's numbers)
    v = _one(study([{**ORDER, "size_pct": 3.5}]), f, paper=True)
    assert v.tests[0].status == AGAINST and v.outcome == "not reproduced"


def test_a_universal_claim_failing_in_one_case_of_four_is_not_reproduced_not_reversed():
    """Four cases (sd 1, n 10: se = sqrt(0.2) = 0.447): three at +10% (t = 22), one at -10% (t = -22).
    'All' needs four holds; one case is reversed, three hold: the claim is not reproduced."""
    cells = {}
    for c, m in (("a", 110), ("b", 110), ("c", 110), ("d", 90)):
        cells[("xfs", c)] = (m, 1.0, 10)
        cells[("ext3", c)] = (100.0, 1.0, 10)
    v = _one(study([ORDER]), summary_frame(cells), paper=True)
    assert [s.outcome for s in v.subs] == [HOLDS, HOLDS, HOLDS, OPPOSITE]
    assert v.outcome == "not reproduced" and v.paper_verdict == "contradicted"
    # every case flipped: the opposite claim holds for all four: reversed
    flipped = {k: ((90.0, 1.0, 10) if k[0] == "xfs" else val) for k, val in cells.items()}
    assert _one(study([ORDER]), summary_frame(flipped), paper=True).outcome == "reversed"


def test_a_three_tier_ordering_with_one_pair_flipped_is_falsified_not_reversed():
    """xfs > ext3 > btrfs claimed; measured xfs 120, btrfs 110, ext3 100 (sd 1, n 10): xfs above both
    holds, ext3 above btrfs is reversed. The case is 'not shown', the claim 'not reproduced'."""
    three = {**ORDER, "tiers": [["xfs"], ["ext3"], ["btrfs"]]}
    cells = {("xfs", "a"): (120, 1, 10), ("ext3", "a"): (100, 1, 10), ("btrfs", "a"): (110, 1, 10)}
    v = _one(study([three]), summary_frame(cells), paper=True)
    assert sorted(t.status for t in v.tests) == [HOLDS, HOLDS, OPPOSITE]
    assert v.subs[0].outcome == AGAINST and v.outcome == "not reproduced"


def test_the_same_data_give_the_same_word_whatever_effect_pct_says():
    """One data set, effect_pct 2% and 50%: the power and the trials needed differ, the word does not."""
    for f, word in (
        (
            summary_frame({("xfs", "a"): (104, 3, 5), ("ext3", "a"): (100, 3, 5)}),
            "inconclusive",
        ),  # t = 2.1, Holm-free p = 0.034
        # +1%: the 95% bound 1 + 1.86 x 1.897 = 4.5% stays under the claimed 5%: excluded
        (summary_frame({("xfs", "a"): (101, 3, 5), ("ext3", "a"): (100, 3, 5)}), "not reproduced"),
        (summary_frame({("xfs", "a"): (140, 3, 5), ("ext3", "a"): (100, 3, 5)}), "reproduced"),
        (summary_frame({("xfs", "a"): (60, 3, 5), ("ext3", "a"): (100, 3, 5)}), "reversed"),
    ):
        small = _one(study([{**ORDER, "effect_pct": 2.0, "size_pct": 5.0}]), f, paper=True)
        large = _one(study([{**ORDER, "effect_pct": 50.0, "size_pct": 5.0}]), f, paper=True)
        assert small.outcome == large.outcome == word
        assert small.tests[0].power < large.tests[0].power
    # the first: +4% with se = sqrt(2 x 9 / 5) = 1.897: t = 2.11, df 8, p = 0.034 (t(0.95, 8) = 1.860 < 2.11
    # < t(0.975, 8) = 2.306): significant, but under the claimed 5%, and the 95% bound 4 + 1.86 x 1.897 =
    # 7.5% still holds 5%: unclear, inconclusive
    f = summary_frame({("xfs", "a"): (104, 3, 5), ("ext3", "a"): (100, 3, 5)})
    t = _one(study([{**ORDER, "size_pct": 5.0}]), f, paper=True).tests[0]
    assert 0.025 < t.p_hold < 0.05 and t.upper == pytest.approx(4 + 1.8595 * math.sqrt(3.6), abs=0.01)


def test_a_study_minimum_difference_of_ten_percent_against_seven():
    """Bryant's rule: a difference counts when it is at least 10% and the 95% intervals do not overlap.
    +7% with sd 1 and n 10 (se 0.447, t = 15.7, p ~ 3e-12): significant, but under 10%, and the 95%
    bound 7 + 1.734 x 0.447 = 7.78% excludes 10%: not shown, 'not reproduced'. -8% the other way is
    significant too, but under 10%: 'no difference' by his rule, so not reversed either."""
    rules = {"level": 0.95, "min_difference_pct": 10.0, "intervals": "no_overlap"}
    plus7 = summary_frame({("xfs", "a"): (107, 1, 10), ("ext3", "a"): (100, 1, 10)})
    v = _one(study([ORDER], rules=rules), plus7, paper=True)
    assert v.tests[0].upper == pytest.approx(7.7755, abs=1e-3)
    assert v.tests[0].status == AGAINST and v.outcome == "not reproduced"
    minus8 = summary_frame({("xfs", "a"): (92, 1, 10), ("ext3", "a"): (100, 1, 10)})
    v = _one(study([ORDER], rules=rules), minus8, paper=True)
    assert v.tests[0].status == AGAINST and v.outcome == "not reproduced"
    # without the study's rule the same -8% is reversed
    assert _one(study([ORDER]), minus8, paper=True).outcome == "reversed"
    # +12%, intervals apart (95% half-width t(0.975, 9) x 1 / sqrt(10) = 0.72): reproduced
    plus12 = summary_frame({("xfs", "a"): (112, 1, 10), ("ext3", "a"): (100, 1, 10)})
    assert _one(study([ORDER], rules=rules), plus12, paper=True).outcome == "reproduced"
    # +12% with sd 12 and n 30: Welch significant (se 3.1, t = 3.87), but the two 95% intervals
    # (half-width t(0.975, 29) x 12 / sqrt(30) = 4.48) overlap: 107.5 < 104.5? no: 100 + 4.48 = 104.48 and
    # 112 - 4.48 = 107.52 are apart; with sd 20 (half-width 7.47) they overlap: 107.47 > 104.53
    wide = summary_frame({("xfs", "a"): (112, 20, 30), ("ext3", "a"): (100, 20, 30)})
    v = _one(study([ORDER], rules=rules), wide, paper=True)
    assert v.tests[0].p_hold < 0.05 and not v.tests[0].apart and v.tests[0].status == UNCLEAR


def test_an_unmeasured_cache_share_on_a_claim_sensitive_to_it_is_not_comparable():
    claim = {**ORDER, "sensitive_to": ["cache_residency"]}
    good = {("xfs", "a"): [150, 151, 149], ("ext3", "a"): [100, 101, 99]}
    assert _one(study([claim]), runs_frame(good)).outcome == "reproduced"
    v = _one(study([claim]), runs_frame(good, {**QUIET, "cache_read_share": None}))
    assert v.outcome == "not comparable here" and v.data_outcome == "reproduced"
    assert "cache_residency (not measured" in v.gates[0]
    # an empty cell (a write phase) is not measured either
    f = runs_frame(good)
    f.loc[f["filesystem"] == "ext3", "cache_read_share"] = None
    assert _one(study([claim]), f).outcome == "not comparable here"
    # measured, and mostly from the cache
    v = _one(study([claim]), runs_frame(good, {**QUIET, "cache_read_share": 0.97}))
    assert v.outcome == "not comparable here" and "97%" in v.gates[0]
    # a claim not sensitive to it does not need it
    assert _one(study([ORDER]), runs_frame(good, {**QUIET, "cache_read_share": None})).outcome == "reproduced"


def test_a_write_phase_is_gated_by_the_share_of_its_writes_the_device_had_not_received():
    claim = {**ORDER, "sensitive_to": ["cache_residency"]}
    good = {("xfs", "a"): [150, 151, 149], ("ext3", "a"): [100, 101, 99]}
    # A write phase: no read share; three quarters of what it wrote reached the device during it.
    written = {**QUIET, "cache_read_share": None, "cache_write_share": 0.25}
    assert _one(study([claim]), runs_frame(good, written)).outcome == "reproduced"
    # Most of it still dirty in the page cache at the phase's end: the page cache's speed, not the disk's.
    v = _one(study([claim]), runs_frame(good, {**written, "cache_write_share": 0.9}))
    assert v.outcome == "not comparable here" and "90%" in v.gates[0]
    assert "had not reached the device" in v.gates[0]
    # A phase with both shares is judged by its reads (the write share does not hide a cached read).
    v = _one(study([claim]), runs_frame(good, {**QUIET, "cache_read_share": 0.97, "cache_write_share": 0.0}))
    assert v.outcome == "not comparable here" and "97%" in v.gates[0]
    # One configuration with neither share measured: not measured, fails closed.
    f = runs_frame(good, written)
    f.loc[f["filesystem"] == "ext3", "cache_write_share"] = None
    v = _one(study([claim]), f)
    assert v.outcome == "not comparable here" and "cache_residency (not measured" in v.gates[0]


def test_other_missing_measurements_fail_closed():
    good = {("xfs", "a"): [150, 151, 149], ("ext3", "a"): [100, 101, 99]}
    for col, says in (("phase_s", "length of a phase"), ("other_cpu_share", "how busy the machine was")):
        v = _one(study([ORDER]), runs_frame(good, {**QUIET, col: None}))
        assert v.outcome == "inconclusive" and v.data_outcome == "reproduced"
        assert any(says in g for g in v.gates), v.gates


def test_the_gates_still_stop_short_busy_and_thin_runs():
    good = {("xfs", "a"): [150, 151, 149], ("ext3", "a"): [100, 101, 99]}
    v = _one(study([ORDER]), runs_frame(good, {**QUIET, "phase_s": 0.4}))
    assert v.outcome == "inconclusive" and "under the study's minimum of 5 s" in v.gates[0]
    v = _one(study([ORDER]), runs_frame(good, {**QUIET, "other_cpu_share": 0.45}))
    assert v.outcome == "inconclusive" and "busy" in v.gates[0]
    two = {("xfs", "a"): [150, 151], ("ext3", "a"): [100, 101]}
    v = _one(study([ORDER]), runs_frame(two))
    assert v.outcome == "inconclusive" and v.gates == ["2 trials per side: a verdict needs at least 3"]
    # a study whose throughput settles after 15 s: a 5 s phase is gated
    v = _one(study([ORDER], rules={"settle_s": 15.0}), runs_frame(good, {**QUIET, "phase_s": 6.0}))
    assert v.outcome == "inconclusive" and "15 s the study found its throughput needs to settle" in v.gates[0]


# -- the storage regime --------------------------------------------------------------------------------------
CHEETAH = {
    "id": "paper",
    "disk": {
        "model": "Seagate Cheetah ST-39102LW",
        "source": "the paper",
        "rpm": {"value": 10025, "source": "datasheet"},
        "avg_seek_ms": {"value": 5.4, "source": "datasheet"},
        "track_seek_ms": {"value": 0.6, "source": "datasheet"},
        "media_mb_s": {"value": 21.3, "source": "datasheet"},
    },
    "cpu": {"model": "Pentium II", "source": "the paper", "clock_mhz": {"value": 400, "source": "the paper"}},
}
FAST = {
    **QUIET,
    "storage_read_latency_ms": 0.09,
    "storage_read_mb_s": 2100.0,
    "storage_write_mb_s": 900.0,
    "storage_flush_ms": 1.0,
}
GOOD = {("xfs", "a"): [150, 151, 149], ("ext3", "a"): [100, 101, 99]}


def test_a_claim_bound_by_disk_seeks_on_much_faster_storage_is_not_comparable():
    """The Cheetah's expected random 4 KiB read: 5.4 ms seek + half a revolution at 10,025 rpm (2.99 ms) +
    4 KiB at 21.3 MB/s (0.19 ms) = 8.58 ms; this storage's 0.09 ms is 95x faster, over the 4x allowed."""
    s = study([{**ORDER, "bound_by": ["disk_seeks"]}], hardware=[CHEETAH])
    assert s.hardware[0].random_read_ms().value == pytest.approx(5.4 + 30000 / 10025 + 4096 / 21.3e6 * 1000)
    v = _one(s, runs_frame(GOOD, FAST))
    assert v.outcome == "not comparable here" and v.data_outcome == "reproduced"
    assert (
        "this storage answers a random 4 KiB read in 0.09 ms; the paper's Seagate Cheetah ST-39102LW about 8.6 ms"
        in v.gates[0]
    )
    # within 4x (a disk model of it: 6 ms): comparable, and said to be on a model of the paper's disk
    model = {**FAST, "storage_read_latency_ms": 6.0, "storage_class": "disk-model:seagate-st39102lw"}
    v = _one(s, runs_frame(GOOD, model))
    assert v.outcome == "reproduced" and "on a model of the paper's disk" in v.reason
    # not probed: the claim is sensitive to it, so not comparable
    v = _one(s, runs_frame(GOOD))
    assert v.outcome == "not comparable here" and "random-read latency was not measured" in v.gates[0]
    # memory
    v = _one(s, runs_frame(GOOD, {**FAST, "storage_class": "memory"}))
    assert v.outcome == "not comparable here" and "storage is memory" in v.gates[0]


def test_bandwidth_flush_and_cpu_bounds():
    s = study([{**ORDER, "bound_by": ["disk_bandwidth"]}], hardware=[CHEETAH])
    v = _one(s, runs_frame(GOOD, FAST))  # the slower direction, 900 MB/s, is 42x 21.3
    assert v.outcome == "not comparable here" and "42x faster" in v.gates[0]
    s = study([{**ORDER, "bound_by": ["journal_flushes"]}], hardware=[CHEETAH])
    # 0.6 + 2.99 = 3.59 ms against 1.0 ms: 3.6x, within 4x: comparable
    assert _one(s, runs_frame(GOOD, FAST)).outcome == "reproduced"
    s = study([{**ORDER, "bound_by": ["cpu"]}], hardware=[CHEETAH])
    v = _one(s, runs_frame(GOOD, FAST))  # 2400 MHz against 400: at least 6x
    assert v.outcome == "not comparable here" and "lower bound of the speed ratio" in v.gates[0]
    near = {**CHEETAH, "cpu": {**CHEETAH["cpu"], "clock_mhz": {"value": 2000, "source": "x"}}}
    v = _one(study([{**ORDER, "bound_by": ["cpu"]}], hardware=[near]), runs_frame(GOOD, FAST))
    assert v.outcome == "reproduced" and any("the real ratio may be larger" in n for n in v.notes)


def test_pinning_threads_is_not_a_one_cpu_machine():
    s = study([{**ORDER, "where": {"cpus": 1}}])
    f = runs_frame(GOOD, {**FAST, "cpus_online": 2}).assign(cpus=1)
    v = _one(s, f)
    assert v.outcome == "not comparable here" and "pinning is not a machine with fewer CPUs" in v.gates[0]
    assert _one(s, f.assign(cpus_online=1)).outcome == "reproduced"


def test_the_evidence_is_data_for_plots():
    v = _one(study([ORDER]), runs_frame(GOOD))
    t = v.as_json()["tests"][0]
    assert {"case", "effect", "interval", "p", "adjusted_p", "power", "claimed", "status"} <= set(t)
    assert t["effect"] == pytest.approx(50.0) and t["interval"][0] < 50 < t["interval"][1]
    assert t["claimed"] == [0.0, None]  # at least 0%, no upper end


def test_magnitude_pairs_hold_fall_outside_and_reverse_by_the_same_rules():
    """A ratio claimed in [1.1, 1.3] (sd 1, n 10, so the 90% interval of the log ratio is about +-0.8%):
    1.2 holds; 1.5 is outside the range (not shown); 0.8 is on the other side of 1: reversed, unless
    the study's minimum difference (25%) is more than the 20% it is off."""
    claim = {"kind": "magnitude", "tiers": [["xfs"], ["ext3"]], "ratio_range": [1.1, 1.3]}
    for m, word in ((120.0, "reproduced"), (150.0, "not reproduced"), (80.0, "reversed")):
        f = summary_frame({("xfs", "a"): (m, 1.0, 10), ("ext3", "a"): (100.0, 1.0, 10)})
        assert _one(study([claim]), f, paper=True).outcome == word, m
    f = summary_frame({("xfs", "a"): (80.0, 1.0, 10), ("ext3", "a"): (100.0, 1.0, 10)})
    v = _one(study([claim], rules={"min_difference_pct": 25.0}), f, paper=True)
    assert v.tests[0].status == AGAINST and v.outcome == "not reproduced"


def test_a_threshold_is_shown_excluded_or_unclear_never_reversed():
    """'At least 60 s': 90 s (sd 5, n 10, se 1.58) holds; 20 s is excluded (not reversed: a bound has no
    opposite claim); 58 s with sd 10 (se 3.2) is unclear."""
    claim = {"kind": "threshold", "metrics": ["run.x"], "at_least": 60.0}
    words = {}
    for m, sd in ((90.0, 5.0), (20.0, 5.0), (58.0, 10.0)):
        f = summary_frame({("xfs", "a"): (m, sd, 10)}).assign(higher_is_better=False)
        v = _one(study([claim]), f, paper=True)
        words[m] = (v.tests[0].status, v.outcome)
    assert words == {
        90.0: (HOLDS, "reproduced"),
        20.0: (AGAINST, "not reproduced"),
        58.0: (UNCLEAR, "inconclusive"),
    }


def test_published_ranges_are_compared_by_their_bounds():
    """gus3's ranges: 100-160 MB/s against 40-45 MB/s cannot overlap (the least favourable pairing is
    100 / 45 = 2.2x): the ordering holds; 100-160 against 90-120 overlaps: unclear; an equivalence of
    160-170 with itself holds within 10% (the farthest pairing is 170 / 160 = +6.25%)."""
    f = summary_frame({("xfs", "a"): (130, None, None), ("ext3", "a"): (42.5, None, None)})
    f["low"], f["high"] = [100.0, 40.0], [160.0, 45.0]
    v = _one(study([ORDER]), f, paper=True)
    assert v.tests[0].status == HOLDS and v.tests[0].interval == pytest.approx(
        (100 / 45 * 100 - 100, 160 / 40 * 100 - 100)
    )
    f["low"], f["high"] = [100.0, 90.0], [160.0, 120.0]
    assert _one(study([ORDER]), f, paper=True).tests[0].status == UNCLEAR
    same = {"kind": "equivalence", "tiers": [["xfs", "ext3"]], "margin_pct": 10.0}
    f["low"], f["high"] = [160.0, 160.0], [170.0, 170.0]
    assert _one(study([same]), f, paper=True).tests[0].status == HOLDS


def test_best_of_compares_the_upper_cell_with_every_lower_cell():
    """xfs at threads = 20 against every ext3 cell (threads 5 and 20): above both holds; an ext3 cell
    above it makes the case not shown, not reversed."""
    claim = {**ORDER, "where": {"threads": 20}, "best_of": True}
    cells = {("xfs", "20"): (150, 1, 10), ("ext3", "20"): (100, 1, 10), ("ext3", "5"): (120, 1, 10)}
    f = summary_frame(cells).rename(columns={"case": "threads"})
    f = f[~((f["filesystem"] == "xfs") & (f["threads"] == "5"))]
    v = _one(study([claim]), f, paper=True)
    assert sorted(t.b for t in v.tests) == ["ext3 (threads=20)", "ext3 (threads=5)"] and v.outcome == "reproduced"
    cells[("ext3", "5")] = (170, 1, 10)
    f = summary_frame(cells).rename(columns={"case": "threads"})
    v = _one(study([claim]), f, paper=True)
    assert v.subs[0].outcome == AGAINST and v.outcome == "not reproduced"


#: Bryant's small machine: an IDE disk whose model the paper does not give (its rpm only a bound).
IDE = {
    "id": "small",
    "disk": {
        "model": "an 80 GB IDE disk",
        "source": "the paper",
        "rpm": {"value": 7200, "bound": "upper", "source": "a bound"},
        "measured_mb_s": {"value": 17.4, "source": "hdparm"},
    },
}


def test_a_paper_figure_that_is_only_a_bound_cannot_show_comparability():
    """Bryant's small machine: the IDE disk's model is not given, so its random read is only known to be
    at least half a revolution at 7,200 rpm (4.17 ms) + 4 KiB at 17.4 MB/s (0.24 ms). 0.09 ms here is
    over 4x faster than even that: not comparable. 2 ms here is 2.2x the bound, but the real disk may
    have been slower still: whether it is within 4x cannot be shown, so not comparable either."""
    s = study([{**ORDER, "bound_by": ["disk_seeks"]}], hardware=[IDE])
    fig = s.hardware[0].random_read_ms()
    assert not fig.exact and fig.value == pytest.approx(30000 / 7200 + 4096 / 17.4e6 * 1000)
    v = _one(s, runs_frame(GOOD, FAST))
    assert v.outcome == "not comparable here" and "at least 4.4 ms" in v.gates[0] and "over the 4x" in v.gates[0]
    v = _one(s, runs_frame(GOOD, {**FAST, "storage_read_latency_ms": 2.0}))
    assert v.outcome == "not comparable here" and "cannot be shown" in v.gates[0]


def test_a_disk_model_of_the_papers_class_is_comparable_where_the_papers_figure_is_a_bound():
    """Bryant's paper-disk scale: the stand-in model of the small machine's IDE disk answers a random read in
    6.7 ms, within what the paper's bound allows (at least 4.4 ms): the model is that class's storage, and the
    claim is tested on it. A disk model 4x faster than even the bound is still not comparable."""
    s = study([{**ORDER, "bound_by": ["disk_seeks"]}], hardware=[IDE])
    model = {**FAST, "storage_read_latency_ms": 6.7, "storage_class": "disk-model:ata-80gb-2001"}
    v = _one(s, runs_frame(GOOD, model))
    assert v.outcome == "reproduced", v.gates
    assert any("a disk model of the paper's disk class" in n for n in v.notes), v.notes
    v = _one(s, runs_frame(GOOD, {**model, "storage_read_latency_ms": 0.5}))
    assert v.outcome == "not comparable here" and "over the 4x" in v.gates[0]
