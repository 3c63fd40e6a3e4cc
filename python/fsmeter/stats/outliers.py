"""Trials far from their siblings: found with the modified z-score, shown and explained, never dropped.

Method: Iglewicz & Hoaglin, *How to Detect and Handle Outliers* (ASQC, 1993), section 3.2.
For a sample x_1..x_n with median x~ and median absolute deviation MAD = median(|x_i - x~|),

    M_i = 0.6745 (x_i - x~) / MAD

0.6745 is the 75th percentile of the standard normal distribution (Phi^-1(0.75)): for normal data
E[MAD] = 0.6745 sigma, so MAD / 0.6745 (= 1.4826 MAD) estimates sigma without being pulled by the
outlier itself, and M_i reads like an ordinary z-score. Iglewicz and Hoaglin label |M_i| > 3.5 a
potential outlier. hyperfine uses the same score with a looser bar (|x - x~| / MAD > 10 x 1.4826):
it times hundreds of runs, while a campaign cell has a handful of trials and one odd trial moves the
mean a lot, so we keep the textbook 3.5.

When more than half the values are equal, MAD is 0 and the score is undefined; Iglewicz and Hoaglin
(and IBM SPSS after them) then use the mean absolute deviation from the median, scaled by
1.253314 = sqrt(pi/2) (E|X - mu| = sigma sqrt(2/pi) for normal data): M_i = (x_i - x~) / (1.253314 MeanAD).
If every value equals the median there is no outlier.

Fewer than 3 values: nothing is judged (with two trials, neither is "far from the others").
A campaign cell has 3 to 5 trials, and the MAD of so few values is itself loose: three trials that
happen to agree within 0.2% make a trial 2% away score above 3.5. So a flagged trial must also be at
least ``min_rel_pct`` (default 10%, fsmeter's practical threshold: smaller differences do not count)
away from the median.
Outliers stay in every mean, CI and test; the reports list them with this score so a reader can judge.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Phi^-1(0.75): MAD / 0.6745 estimates the standard deviation of normal data.
MAD_TO_Z = 0.6745
#: sqrt(pi / 2): MeanAD x 1.253314 estimates the standard deviation of normal data (MAD = 0 fallback).
MEANAD_TO_SIGMA = 1.253314
#: Iglewicz & Hoaglin's cut-off for a potential outlier.
THRESHOLD = 3.5
#: Fewest values for which outliers are looked for.
MIN_VALUES = 3
#: A flagged value must also be this far (% of the median) from the median.
MIN_REL_PCT = 10.0


@dataclass(frozen=True)
class Outlier:
    index: int  # position in the sample
    value: float
    score: float  # modified z-score (signed: negative = below the median)
    median: float


def modified_z_scores(values: Sequence[float]) -> list:
    """M_i for every value (Iglewicz & Hoaglin 1993); NaN for all with fewer than MIN_VALUES values."""
    x = np.asarray(values, dtype=float)
    if x.size < MIN_VALUES:
        return [math.nan] * int(x.size)
    med = float(np.median(x))
    dev = np.abs(x - med)
    mad = float(np.median(dev))
    if mad > 0:
        return [float(v) for v in MAD_TO_Z * (x - med) / mad]
    mean_ad = float(np.mean(dev))
    if mean_ad == 0:
        return [0.0] * int(x.size)
    return [float(v) for v in (x - med) / (MEANAD_TO_SIGMA * mean_ad)]


def find_outliers(values: Sequence[float], threshold: float = THRESHOLD, min_rel_pct: float = MIN_REL_PCT) -> list:
    """The values whose |modified z-score| exceeds ``threshold`` and that lie at least ``min_rel_pct`` % of
    the median away from it, in sample order."""
    scores = modified_z_scores(values)
    if not scores:
        return []
    med = float(np.median(np.asarray(values, dtype=float)))
    return [
        Outlier(i, float(values[i]), s, med)
        for i, s in enumerate(scores)
        if not math.isnan(s) and abs(s) > threshold and abs(float(values[i]) - med) >= abs(med) * min_rel_pct / 100.0
    ]


__all__ = [
    "MAD_TO_Z",
    "MEANAD_TO_SIGMA",
    "MIN_REL_PCT",
    "MIN_VALUES",
    "THRESHOLD",
    "Outlier",
    "find_outliers",
    "modified_z_scores",
]
