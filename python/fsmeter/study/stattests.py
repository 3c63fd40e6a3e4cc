"""The statistical tests behind study verdicts, from raw samples or from published summaries.

Papers mostly print a mean and a standard deviation per cell, sometimes the runs, sometimes one
number. A :class:`Sample` holds any of the three; every test here works from (mean, sd, n).

Methods (each function says which it uses):

- **Welch's t** for two means with unequal variances, with Satterthwaite's degrees of freedom
  (Welch 1947; Satterthwaite 1946). One-sided p-values.
- **TOST**, two one-sided tests of equivalence (Schuirmann 1987): A and B are shown equivalent
  within a margin d when both H0: mean(A) - mean(B) <= -d and H0: mean(A) - mean(B) >= d are
  rejected; its p-value is the larger of the two one-sided p-values. The margin is a percentage of
  B's mean, and that mean is treated as exact (an approximation: with few runs in B the test is a
  little too lenient; said here as the method's stated limit).
- **Ratio of means** on the log scale by the delta method: Var(log mean) ~ sd^2 / (n mean^2)
  (e.g. Casella & Berger, Statistical Inference, 2nd ed., 5.5.4), t with Satterthwaite's df over
  the two log-scale variance parts. "The ratio lies in [lo, hi]" is tested as two one-sided tests
  on log(ratio) against log(lo) and log(hi), like TOST. Fieller's exact interval is not used; the
  delta method is close to it while the means are many standard errors from zero, which holds for
  throughputs and times with CVs under ~30%.
- **Power** of the one-sided Welch test at an effect size from the observed standard deviations:
  the noncentral t distribution with noncentrality effect / se and Satterthwaite's df (the usual
  approximation for Welch's test, e.g. Cohen 1988, ch. 2).
- **Holm's step-down adjustment** (Holm 1979) of a family of p-values: sort ascending, multiply
  the i-th smallest (0-based) by (m - i), keep it monotone, cap at 1.
- **Simultaneous bounds** (Bonferroni): a one-sided bound of each of m differences at level
  1 - alpha / m holds for all m together with probability at least 1 - alpha, whatever their
  dependence (e.g. Hsu, Multiple Comparisons, 1996, 1.3). "Not reproduced" rests on these bounds,
  so that it is at least as strict as Holm made "reproduced" (Holm's first step is Bonferroni's).
- **Confidence interval of one mean**: mean +- t(1 - (1 - level) / 2, n - 1) x sd / sqrt(n) (Student).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from scipy import stats as sps


@dataclass(frozen=True)
class Sample:
    """One cell's numbers: raw values, or a published mean with sd and n, or a point value (sd None),
    or a published range (``low``..``high``: every value the cell took lies in it; mean = its middle)."""

    mean: float
    sd: float | None
    n: int
    values: tuple[float, ...] = field(default=(), compare=False)
    low: float | None = None
    high: float | None = None

    @classmethod
    def span(cls, low: float, high: float) -> Sample:
        """A published range: every value of the cell lies between low and high (no spread, no n)."""
        lo, hi = sorted((float(low), float(high)))
        return cls((lo + hi) / 2.0, None, 0, (), lo, hi)

    @property
    def ranged(self) -> bool:
        return self.low is not None and self.high is not None

    @classmethod
    def of(cls, values: Sequence[float]) -> Sample:
        v = tuple(float(x) for x in values)
        if not v:
            raise ValueError("an empty sample")
        m = sum(v) / len(v)
        sd = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else None
        return cls(m, sd, len(v), v)

    @property
    def point(self) -> bool:
        """Only a point value: no spread to test with."""
        return self.sd is None or self.n < 2

    def text(self) -> str:
        if self.ranged:
            return f"{self.low:.4g}..{self.high:.4g}"
        if self.point:
            return f"{self.mean:.4g}"
        return f"{self.mean:.4g} sd {self.sd:.3g} n={self.n}"


@dataclass(frozen=True)
class Welch:
    diff: float  # mean(a) - mean(b)
    se: float
    df: float


def _sd(s: Sample) -> float:
    """The sample's standard deviation: the tests that need one are never run on a point value."""
    if s.sd is None:
        raise ValueError("a point value (no standard deviation) cannot enter this test")
    return s.sd


def welch(a: Sample, b: Sample) -> Welch:
    """mean(a) - mean(b), its standard error and Satterthwaite's df (Welch 1947)."""
    va, vb = _sd(a) ** 2 / a.n, _sd(b) ** 2 / b.n
    se = math.sqrt(va + vb)
    if va + vb == 0:
        return Welch(a.mean - b.mean, 0.0, float(a.n + b.n - 2))
    df = (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1))
    return Welch(a.mean - b.mean, se, df)


def _sf(t: float, df: float) -> float:
    """P(T >= t); a zero standard error makes the statistic +-inf."""
    return float(sps.t.sf(t, df))


def one_sided_p(a: Sample, b: Sample, a_larger: bool = True) -> float:
    """Welch's one-sided p-value for H1: mean(a) > mean(b) (a_larger) or mean(a) < mean(b)."""
    w = welch(a, b)
    d = w.diff if a_larger else -w.diff
    if w.se == 0:
        return 0.0 if d > 0 else 1.0
    return _sf(d / w.se, w.df)


def diff_interval(a: Sample, b: Sample, level: float) -> tuple[float, float, float]:
    """Welch's two-sided interval of mean(a) - mean(b) as % of mean(b): (diff %, low %, high %)."""
    w = welch(a, b)
    half = float(sps.t.ppf(0.5 + level / 2, w.df)) * w.se if w.se else 0.0
    k = 100.0 / abs(b.mean) if b.mean else math.inf
    return w.diff * k, (w.diff - half) * k, (w.diff + half) * k


def diff_upper_pct(a: Sample, b: Sample, level: float) -> float:
    """Welch's one-sided upper confidence bound at ``level`` of mean(a) - mean(b), as % of mean(b)."""
    w = welch(a, b)
    k = 100.0 / abs(b.mean) if b.mean else math.inf
    if w.se == 0:
        return w.diff * k
    return (w.diff + float(sps.t.ppf(level, w.df)) * w.se) * k


def diff_lower_pct(a: Sample, b: Sample, level: float) -> float:
    """Welch's one-sided lower confidence bound at ``level`` of mean(a) - mean(b), as % of mean(b)."""
    w = welch(a, b)
    k = 100.0 / abs(b.mean) if b.mean else math.inf
    if w.se == 0:
        return w.diff * k
    return (w.diff - float(sps.t.ppf(level, w.df)) * w.se) * k


def mean_interval(s: Sample, level: float) -> tuple[float, float]:
    """Student's two-sided interval of one mean at ``level``: mean +- t x sd / sqrt(n)."""
    if s.point:
        return s.mean, s.mean
    half = float(sps.t.ppf(0.5 + level / 2, s.n - 1)) * _sd(s) / math.sqrt(s.n)
    return s.mean - half, s.mean + half


def intervals_apart(a: Sample, b: Sample, level: float) -> bool:
    """Do the two means' intervals at ``level`` not overlap? (Bryant's rule for a difference.)"""
    alo, ahi = mean_interval(a, level)
    blo, bhi = mean_interval(b, level)
    return ahi < blo or bhi < alo


def tost_p(a: Sample, b: Sample, margin_pct: float) -> float:
    """TOST p-value (Schuirmann 1987) that |mean(a) - mean(b)| < margin_pct % of |mean(b)|."""
    w = welch(a, b)
    d = margin_pct / 100.0 * abs(b.mean)
    if w.se == 0:
        return 0.0 if abs(w.diff) < d else 1.0
    p_low = _sf((w.diff + d) / w.se, w.df)  # H1: diff > -d
    p_high = _sf(-(w.diff - d) / w.se, w.df)  # H1: diff < d
    return max(p_low, p_high)


def beyond_margin_p(a: Sample, b: Sample, margin_pct: float) -> float:
    """One-sided p-value that the difference lies beyond the margin on the side the estimate falls."""
    w = welch(a, b)
    d = margin_pct / 100.0 * abs(b.mean)
    if w.se == 0:
        return 0.0 if abs(w.diff) > d else 1.0
    if w.diff >= 0:
        return _sf((w.diff - d) / w.se, w.df)  # H1: diff > d
    return _sf(-(w.diff + d) / w.se, w.df)  # H1: diff < -d


@dataclass(frozen=True)
class LogRatio:
    ratio: float  # mean(a) / mean(b)
    se: float  # standard error of log(ratio)
    df: float


def log_ratio(a: Sample, b: Sample) -> LogRatio:
    """mean(a) / mean(b) and the delta-method standard error of its log, Satterthwaite's df."""
    va = (_sd(a) / a.mean) ** 2 / a.n
    vb = (_sd(b) / b.mean) ** 2 / b.n
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1)) if va + vb else float(a.n + b.n - 2)
    return LogRatio(a.mean / b.mean, se, df)


def ratio_interval(a: Sample, b: Sample, level: float) -> tuple[float, float, float]:
    """mean(a) / mean(b) with its two-sided interval at ``level`` (delta method on logs)."""
    r = log_ratio(a, b)
    half = float(sps.t.ppf(0.5 + level / 2, r.df)) * r.se
    return r.ratio, r.ratio * math.exp(-half), r.ratio * math.exp(half)


def ratio_in_range_p(a: Sample, b: Sample, lo: float, hi: float) -> float:
    """Two one-sided tests on log(mean(a)/mean(b)) that the ratio lies in (lo, hi); lo 0 or hi inf are open."""
    r = log_ratio(a, b)
    x = math.log(r.ratio)
    ps = []
    if lo > 0:
        ps.append(_sf((x - math.log(lo)) / r.se, r.df) if r.se else float(r.ratio <= lo))
    if math.isfinite(hi):
        ps.append(_sf((math.log(hi) - x) / r.se, r.df) if r.se else float(r.ratio >= hi))
    return max(ps) if ps else 0.0


def ratio_outside_p(a: Sample, b: Sample, lo: float, hi: float) -> float:
    """One-sided p-value that the ratio lies outside [lo, hi], on the side its estimate falls (1 inside)."""
    r = log_ratio(a, b)
    x = math.log(r.ratio)
    if lo > 0 and r.ratio < lo:
        return _sf((math.log(lo) - x) / r.se, r.df) if r.se else 0.0
    if math.isfinite(hi) and r.ratio > hi:
        return _sf((x - math.log(hi)) / r.se, r.df) if r.se else 0.0
    return 1.0


def power_one_sided(se: float, df: float, effect: float, alpha: float) -> float:
    """Power of the one-sided t-test at level alpha to detect a true difference ``effect`` (> 0)
    when the difference's standard error is ``se``: P(T' > t_crit), T' noncentral t(df, effect/se)."""
    if se == 0:
        return 1.0
    crit = float(sps.t.ppf(1 - alpha, df))
    return float(sps.nct.sf(crit, df, effect / se))


def welch_power(a: Sample, b: Sample, effect_pct: float, alpha: float) -> float:
    """Power of the one-sided Welch test of a against b at a true difference of effect_pct % of mean(b)."""
    w = welch(a, b)
    return power_one_sided(w.se, w.df, effect_pct / 100.0 * abs(b.mean), alpha)


def trials_needed(a: Sample, b: Sample, effect_pct: float, alpha: float, power: float, most: int = 1000) -> int | None:
    """The fewest trials per side (equal on both) at which the one-sided Welch test, with the observed
    standard deviations, reaches ``power`` at a difference of effect_pct % of mean(b); None if over ``most``."""
    effect = effect_pct / 100.0 * abs(b.mean)
    sa2, sb2 = _sd(a) ** 2, _sd(b) ** 2
    for n in range(2, most + 1):
        va, vb = sa2 / n, sb2 / n
        se = math.sqrt(va + vb)
        df = (va + vb) ** 2 / ((va**2 + vb**2) / (n - 1)) if va + vb else 2.0 * n - 2
        if power_one_sided(se, df, effect, alpha) >= power:
            return n
    return None


def holm(pvalues: Sequence[float]) -> list:
    """Holm's (1979) step-down adjusted p-values, in the input's order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out
