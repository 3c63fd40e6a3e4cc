"""Per-sample summary statistics and Student-t confidence intervals for the mean.

Method: Jain, *The Art of Computer Systems Performance Analysis* (1991), ch. 12
(indices of central tendency and dispersion, Box 12.1) and ch. 13.2 (confidence
interval for the mean from Student's t when n < 30 -- we use t for every n, which
is exact for normal data and tends to z for large n).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from fsmeter.errors import UserError
from fsmeter.stats._numpy import np

#: Confidence levels a user may ask for. Others are legal for the maths; the CLI
#: accepts any value in (0, 1) but these are the ones Jain tabulates.
COMMON_LEVELS = (0.90, 0.95, 0.99)

#: numpy quantile method for the quartiles behind the SIQR. "linear" is
#: Hyndman & Fan type 7 (the R, Excel QUARTILE.INC and numpy default): position
#: (n-1)p + 1, interpolated. Jain ch. 12 uses the same position but rounds it to
#: the nearest order statistic; interpolation avoids the jump between samples.
QUANTILE_METHOD = "linear"


def _as_array(values: Iterable[float]) -> np.ndarray:
    arr = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    if arr.ndim != 1:
        arr = arr.ravel()
    return arr


def check_level(level: float) -> float:
    """Return ``level`` if it is a usable confidence level, else raise UserError."""
    if not (0.0 < float(level) < 1.0):
        raise UserError(f"confidence level {level} is not between 0 and 1: use 0.90, 0.95 or 0.99")
    return float(level)


def t_critical(level: float, df: int) -> float:
    """Two-sided Student t quantile t_{1-alpha/2; df} for confidence ``level``."""
    # stdtrit is the inverse of Student's t CDF (what scipy.stats.t.ppf calls). scipy.special, not
    # scipy.stats: `fsmeter run` judges every phase with mean_ci, and scipy.stats (~45 MB resident)
    # would count against its memory; summarize() imports it when it is used. Imported here, not at
    # the top: it takes 0.3 s, and a run whose phases are too short for a CI never needs it.
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + check_level(level) / 2.0))


@dataclass(frozen=True)
class MeanCI:
    """Confidence interval for the mean: mean +- t_{1-a/2; n-1} * s / sqrt(n) (Jain 13.2)."""

    mean: float
    low: float
    high: float
    half_width: float
    level: float
    n: int

    @property
    def half_width_pct(self) -> float:
        """Half-width as a percentage of |mean| (the adaptive-trials target); inf at mean 0."""
        if self.mean == 0 or math.isnan(self.mean):
            return math.inf if self.half_width > 0 else (0.0 if self.half_width == 0 else math.nan)
        return 100.0 * self.half_width / abs(self.mean)

    def overlaps(self, other: MeanCI) -> bool:
        return self.low <= other.high and other.low <= self.high


def mean_ci(values: Iterable[float], level: float = 0.95) -> MeanCI:
    """Student-t CI for the mean of ``values`` (Jain ch. 13.2).

    Needs n >= 2; with n < 2 the interval is NaN (no variance to estimate).
    """
    x = _as_array(values)
    n = int(x.size)
    check_level(level)
    if n == 0:
        return MeanCI(math.nan, math.nan, math.nan, math.nan, level, 0)
    m = float(np.mean(x))
    if n < 2:
        return MeanCI(m, math.nan, math.nan, math.nan, level, n)
    sem = float(np.std(x, ddof=1)) / math.sqrt(n)  # s / sqrt(n)
    hw = t_critical(level, n - 1) * sem
    return MeanCI(m, m - hw, m + hw, hw, level, n)


@dataclass(frozen=True)
class Summary:
    """Everything Jain ch. 12 asks a report to show about one sample."""

    n: int
    mean: float
    geometric_mean: float
    harmonic_mean: float
    median: float
    stddev: float  # sample standard deviation, divisor n-1
    cov: float  # coefficient of variation s / mean
    skewness: float  # adjusted Fisher-Pearson G1 (see summarize)
    q1: float
    q3: float
    siqr: float  # semi-interquartile range (q3 - q1) / 2
    min: float
    max: float
    range: float
    max_min_ratio: float
    ci: MeanCI
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict:
        d = asdict(self)
        d["ci"] = {**asdict(self.ci), "half_width_pct": self.ci.half_width_pct}
        d["notes"] = list(self.notes)
        return d


def summarize(values: Iterable[float], level: float = 0.95) -> Summary:
    """Summary of one sample (Jain ch. 12, Box 12.1) with a Student-t CI (ch. 13).

    Statistics that are undefined for this sample are NaN, with the reason in
    ``notes`` -- never an exception, because a report must still show the rest:

    * geometric and harmonic means need every value > 0 (Jain 12.5/12.6);
    * max/min needs min > 0;
    * stddev, COV, CI need n >= 2; skewness needs n >= 3 and s > 0.

    Skewness is scipy's ``skew(bias=False)``, the adjusted Fisher-Pearson
    coefficient G1 = g1 * sqrt(n(n-1)) / (n-2), g1 = m3 / m2^1.5 (what Excel SKEW
    reports). Jain's Box 12.1 divides m3 by s^3 with s from n-1, which is
    g1 * ((n-1)/n)^1.5; the two agree for large n and we pick the unbiased one.
    """
    from scipy import stats as sps

    x = _as_array(values)
    check_level(level)
    notes: list[str] = []
    n = int(x.size)
    if n == 0:
        raise UserError("cannot summarise an empty sample: check the filter or the column")
    if not np.all(np.isfinite(x)):
        raise UserError("sample contains NaN or infinite values: clean the data first")

    mean = float(np.mean(x))
    median = float(np.median(x))
    lo, hi = float(np.min(x)), float(np.max(x))

    if lo > 0:
        gmean = float(sps.gmean(x))
        hmean = float(sps.hmean(x))
        ratio = hi / lo
    else:
        gmean = hmean = ratio = math.nan
        notes.append("geometric/harmonic mean and max/min need all values > 0")

    if n >= 2:
        sd = float(np.std(x, ddof=1))
        cov = sd / mean if mean != 0 else math.nan
        if mean == 0:
            notes.append("COV undefined: mean is 0")
    else:
        sd = cov = math.nan
        notes.append("stddev, COV and CI need at least 2 values")

    if n >= 3 and sd > 0:
        skew = float(sps.skew(x, bias=False))
    else:
        skew = math.nan
        notes.append("skewness needs at least 3 values that are not all equal")

    q1, q3 = (float(v) for v in np.quantile(x, [0.25, 0.75], method=QUANTILE_METHOD))
    return Summary(
        n=n,
        mean=mean,
        geometric_mean=gmean,
        harmonic_mean=hmean,
        median=median,
        stddev=sd,
        cov=cov,
        skewness=skew,
        q1=q1,
        q3=q3,
        siqr=(q3 - q1) / 2.0,
        min=lo,
        max=hi,
        range=hi - lo,
        max_min_ratio=ratio,
        ci=mean_ci(x, level),
        notes=tuple(notes),
    )


def summarize_many(samples: dict[str, Sequence[float]], level: float = 0.95) -> dict[str, Summary]:
    """Summaries keyed like ``samples``."""
    return {k: summarize(v, level) for k, v in samples.items()}
