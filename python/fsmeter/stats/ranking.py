"""Is configuration A faster than B? Welch's t-test plus a practical threshold, and rankings.

A difference is claimed only when it is statistically significant (Welch's
unequal-variance t-test, scipy ``ttest_ind(equal_var=False)``; Jain ch. 13.4.2
gives the same approximate-df test for unpaired observations) AND at least the
practical threshold (10% of the mean by default) -- a significant 2% is not news.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats as sps

from fsmeter.errors import UserError
from fsmeter.stats.summary import MeanCI, mean_ci

Verdict = Literal["faster", "slower", "no significant difference"]

DEFAULT_ALPHA = 0.05
DEFAULT_PRACTICAL_PCT = 10.0


@dataclass(frozen=True)
class Comparison:
    """A compared with B. ``rel_diff_pct`` = 100 (mean_a - mean_b) / |mean_b|.

    ``verdict`` is from A's point of view: "faster" means A is better on this
    metric (higher throughput, or lower latency when ``higher_is_better`` is False).
    """

    mean_a: float
    mean_b: float
    rel_diff_pct: float
    p_value: float
    ci_a: MeanCI
    ci_b: MeanCI
    cis_overlap: bool
    significant: bool  # p < alpha
    verdict: Verdict


def compare(
    a: Sequence[float],
    b: Sequence[float],
    higher_is_better: bool = True,
    alpha: float = DEFAULT_ALPHA,
    practical_pct: float = DEFAULT_PRACTICAL_PCT,
) -> Comparison:
    """Compare two samples of one metric (Welch t-test, CIs at level 1 - alpha).

    Overlapping CIs are reported for the reader but do not decide: two 95% CIs
    can overlap while the difference is significant (Jain 13.4.3 calls the
    overlap case "inconclusive" and sends you to the t-test, which we always run).
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        raise UserError(f"comparison needs at least 2 trials per side (got {x.size} and {y.size})")
    if not 0 < alpha < 1:
        raise UserError(f"alpha = {alpha}: must be between 0 and 1 (e.g. 0.05)")
    ci_a, ci_b = mean_ci(x, 1 - alpha), mean_ci(y, 1 - alpha)
    ma, mb = ci_a.mean, ci_b.mean
    rel = 100.0 * (ma - mb) / abs(mb) if mb != 0 else (0.0 if ma == mb else math.inf)
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        # Welch's t is 0/0 for two constant samples: equal means -> no evidence, else certain.
        p = 1.0 if ma == mb else 0.0
    else:
        # scipy warns ("precision loss ... nearly identical") when both samples barely vary; the p-value
        # it returns is still the test's, and the warning would land in the middle of the user's table.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            # scipy sets TtestResult's pvalue in its constructor, where its types do not declare it
            p = float(sps.ttest_ind(x, y, equal_var=False).pvalue)  # pyright: ignore[reportAttributeAccessIssue]
    significant = p < alpha
    if significant and abs(rel) >= practical_pct:
        a_better = (ma > mb) == higher_is_better
        verdict: Verdict = "faster" if a_better else "slower"
    else:
        verdict = "no significant difference"
    return Comparison(ma, mb, rel, p, ci_a, ci_b, ci_a.overlaps(ci_b), significant, verdict)


@dataclass(frozen=True)
class RankEntry:
    name: str
    mean: float
    rank: int  # 1 = best mean
    group: int  # 1 = best group; equal groups are not distinguishable
    vs_leader: Comparison | None  # comparison with the group's best (None for a leader)


def rank(
    samples: Mapping[str, Sequence[float]],
    higher_is_better: bool = True,
    alpha: float = DEFAULT_ALPHA,
    practical_pct: float = DEFAULT_PRACTICAL_PCT,
) -> list[RankEntry]:
    """Rank configurations on one metric and group the indistinguishable ones.

    Rule: sort by mean, best first. The best opens group 1 and is its leader.
    Each next configuration is compared with the current group's leader
    (:func:`compare`); if the verdict is "no significant difference" it joins the
    group, otherwise it opens the next group and leads it. Groups are therefore
    contiguous in the ranking and every member is indistinguishable from its
    leader (not necessarily from every other member). This is a plain sequential
    rule without multiple-comparison correction; with many configurations read
    group borders as indicative.
    """
    if not samples:
        return []
    order = sorted(samples, key=lambda k: float(np.mean(samples[k])), reverse=higher_is_better)
    out: list[RankEntry] = []
    group, leader = 1, order[0]
    for i, name in enumerate(order):
        mean = float(np.mean(samples[name]))
        if i == 0:
            out.append(RankEntry(name, mean, 1, 1, None))
            continue
        c = compare(samples[name], samples[leader], higher_is_better, alpha, practical_pct)
        if c.verdict == "no significant difference":
            out.append(RankEntry(name, mean, i + 1, group, c))
        else:
            group, leader = group + 1, name
            out.append(RankEntry(name, mean, i + 1, group, None))
    return out
