"""One long run: batch-means CI, steady-state detection and the too-short flag.

Interval samples (e.g. MB/s per second) from one run are autocorrelated, so the
plain Student-t CI on them is far too narrow. The method of batch means (Jain
ch. 25.5.2) groups consecutive samples into batches long enough that the batch
means are nearly independent, and builds the t-interval on those.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

from fsmeter.errors import UserError

# numpy only (on first use): `fsmeter run` judges every phase with this module, and scipy.stats or
# statsmodels (with pandas) would add over 100 MB to its peak memory for three one-line formulas.
from fsmeter.stats._numpy import np
from fsmeter.stats.summary import MeanCI, check_level, mean_ci

#: Below this many seconds a phase result is shown but flagged: start-up effects,
#: timer resolution and one-off stalls dominate short phases, so we make no claims.
DEFAULT_MIN_PHASE_S = 60.0

#: Number of batches. Jain and Law & Kelton suggest 10 to 30: fewer makes t
#: (df = k-1) wide and the variance estimate unstable; more makes batches short,
#: so their means stay correlated. We start at the most we can and double the
#: batch size (halving k) while the batch means look correlated, down to the minimum.
MAX_BATCHES = 30
MIN_BATCHES = 10


def is_too_short(duration_s: float, min_duration_s: float = DEFAULT_MIN_PHASE_S) -> bool:
    """True when a phase is too short to make claims about (flag it, don't hide it)."""
    return float(duration_s) < float(min_duration_s)


def lag1_autocorrelation(x: Sequence[float]) -> float:
    """Sample lag-1 autocorrelation r1, the standard biased estimator (Box & Jenkins; what
    statsmodels ``acf`` returns): sum((x_t - m)(x_t+1 - m)) / sum((x_t - m)^2).

    NaN for fewer than 3 values or a constant series.
    """
    arr = np.asarray(x, dtype=float)
    if arr.size < 3 or np.ptp(arr) == 0:
        return math.nan
    d = arr - arr.mean()
    return float(np.dot(d[:-1], d[1:]) / np.dot(d, d))


def r1_limit(k: int, level: float = 0.95) -> float:
    """Bound above which |r1| of k independent values is unlikely: z_{1-a/2} / sqrt(k).

    Bartlett's large-sample standard error of r1 under independence is 1/sqrt(k)
    (the band statsmodels' plot_acf draws). A fixed cut such as 0.2 would flag
    independent batch means about half the time at k = 10..30.
    """
    return float(NormalDist().inv_cdf(0.5 + level / 2.0) / math.sqrt(k))


@dataclass(frozen=True)
class BatchMeansResult:
    """CI for the steady-state mean of one run, with what it was built from."""

    ci: MeanCI
    n_batches: int
    batch_size: int  # samples per batch
    warmup: int  # samples dropped at the start
    unused: int  # samples dropped at the end to make equal batches
    r1: float  # lag-1 autocorrelation of the batch means actually used
    r1_limit: float
    autocorrelated: bool  # |r1| still above the limit at the smallest k allowed
    duration_s: float  # duration of the samples used (after warm-up)
    too_short: bool
    batch_means: tuple[float, ...]
    notes: tuple[str, ...] = field(default=())


def batch_means_ci(
    samples: Sequence[float],
    warmup: int = 0,
    level: float = 0.95,
    interval_s: float = 1.0,
    max_batches: int = MAX_BATCHES,
    min_batches: int = MIN_BATCHES,
    min_duration_s: float = DEFAULT_MIN_PHASE_S,
) -> BatchMeansResult:
    """Batch-means CI for the mean of interval ``samples`` (Jain ch. 25.5.2).

    ``warmup`` samples at the start are excluded (see :func:`steady_state` for a
    suggestion). Batch size b starts at n // max_batches and doubles while the
    lag-1 autocorrelation of the batch means exceeds :func:`r1_limit` and at
    least ``min_batches`` batches remain -- Jain's rule of growing the batch
    until the batch means' autocovariance is small. If r1 is still large at the
    smallest k allowed, ``autocorrelated`` is set: the CI is then too narrow.
    """
    check_level(level)
    if min_batches < 2 or max_batches < min_batches:
        raise UserError(f"batches: need 2 <= min_batches ({min_batches}) <= max_batches ({max_batches})")
    x = np.asarray(samples, dtype=float)
    if warmup < 0 or warmup >= x.size:
        raise UserError(f"warm-up of {warmup} samples leaves nothing of {x.size}: lower the warm-up")
    x = x[warmup:]
    n = int(x.size)
    if n < min_batches:
        raise UserError(
            f"{n} samples after warm-up: batch means need at least {min_batches}; run longer or sample more often"
        )
    notes: list[str] = []
    b = max(1, n // max_batches)
    while True:
        k = n // b
        means = x[: k * b].reshape(k, b).mean(axis=1)
        r1 = lag1_autocorrelation(means)
        limit = r1_limit(k, level)
        bigger_ok = n // (2 * b) >= min_batches
        if math.isnan(r1) or abs(r1) <= limit or not bigger_ok:
            break
        b *= 2
    autocorrelated = (not math.isnan(r1)) and abs(r1) > limit
    if autocorrelated:
        notes.append(
            f"batch means still autocorrelated (r1={r1:.2f} > {limit:.2f}) with {k} batches of "
            f"{b}: CI is optimistic; run longer"
        )
    duration = n * float(interval_s)
    short = is_too_short(duration, min_duration_s)
    if short:
        notes.append(f"measured {duration:g} s after warm-up, below {min_duration_s:g} s: too short to trust")
    return BatchMeansResult(
        ci=mean_ci(means, level),
        n_batches=k,
        batch_size=b,
        warmup=warmup,
        unused=n - k * b,
        r1=r1,
        r1_limit=limit,
        autocorrelated=autocorrelated,
        duration_s=duration,
        too_short=short,
        batch_means=tuple(float(v) for v in means),
        notes=tuple(notes),
    )


@dataclass(frozen=True)
class SteadyState:
    """Result of :func:`steady_state`.

    ``warmup`` is the first sample index from which every window of ``window``
    samples meets the criteria (None when the last window does not: not steady).
    ``slope_pct`` and ``deviation_pct`` are the criteria on the last window.
    """

    steady: bool
    warmup: int | None
    window: int
    slope_pct: float
    deviation_pct: float


def _window_criteria(y: np.ndarray) -> tuple[float, float]:
    """fio steadystate.c criteria on one window, both in % of the window mean.

    slope: least-squares slope per sample (x = 0..W-1: sum((x - x̄)(y - ȳ)) / sum((x - x̄)^2),
    as scipy linregress), as 100 * |slope| / mean. deviation: 100 * max |y_i - mean| / mean.
    """
    mean = float(np.mean(y))
    if mean == 0:
        return (0.0, 0.0) if np.ptp(y) == 0 else (math.inf, math.inf)
    xd = np.arange(y.size, dtype=float) - (y.size - 1) / 2.0
    slope = float(np.dot(xd, y - mean) / np.dot(xd, xd))
    dev = float(np.max(np.abs(y - mean)))
    return 100.0 * abs(slope) / abs(mean), 100.0 * dev / abs(mean)


def steady_state(
    samples: Sequence[float],
    window: int,
    slope_pct: float | None = None,
    deviation_pct: float | None = None,
) -> SteadyState:
    """Steady-state detection on interval samples, after fio's ``steadystate`` option.

    fio ``ss=iops_slope:X%``: the least-squares slope of the last ``ss_dur``
    samples is below X% of their mean; ``ss=iops:X%``: every sample of the window
    is within X% of the window mean (fio steadystate.c, ``criterion < limit``).
    Give one or both limits; both must hold when both are given. fio stops the
    job at the first window that passes; for analysis after the run we return
    the first index from which *every* later window passes, so one lucky quiet
    window in a ramp does not end the warm-up.
    """
    if slope_pct is None and deviation_pct is None:
        raise UserError("steady state: give slope_pct and/or deviation_pct (e.g. slope 0.3%, deviation 20%)")
    if window < 3:
        raise UserError(f"steady-state window of {window} samples: use at least 3")
    y = np.asarray(samples, dtype=float)
    if y.size < window:
        return SteadyState(False, None, window, math.nan, math.nan)

    def ok(s: float, d: float) -> bool:
        return (slope_pct is None or s < slope_pct) and (deviation_pct is None or d < deviation_pct)

    crit = [_window_criteria(y[i : i + window]) for i in range(y.size - window + 1)]
    last_s, last_d = crit[-1]
    if not ok(last_s, last_d):
        return SteadyState(False, None, window, last_s, last_d)
    start = len(crit) - 1
    while start > 0 and ok(*crit[start - 1]):
        start -= 1
    return SteadyState(True, start, window, last_s, last_d)
