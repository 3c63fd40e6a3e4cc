"""The edge rule: a decisive word must survive a re-run of the same study on the same machine
(docs/studies.md, "Verdicts that repeat").

A pair's decisive status (holds, reversed, not shown) rests on a bound of its interval (or its
estimate) lying on one side of a boundary: zero, the claimed size, the study's minimum difference,
an equivalence margin, an end of a claimed ratio range. A re-run of the same study moves that bound
by its *run-to-run wobble*, which has two parts:

- **sampling**: each run's estimate has standard error SE, so the difference of two runs' estimates
  has a standard deviation of about sqrt(2) x SE;
- **between runs**: systematic differences between two runs on one machine (where the images land,
  aging, the host's cache) that the within-run SE cannot see: ``B``, in percentage points of the
  effect, a measured constant (the study's ``[rules] between_run_pct`` with its source, else
  :data:`DEFAULT_BETWEEN_RUN_PCT`), calibrated by ``fsmeter study calibrate`` from two stores.

The expected wobble is ``w = sqrt(2 SE^2 + B^2)`` (the two parts independent). A decisive status
stands only when every bound that decided it is clear of its boundary by more than ``w``; otherwise
the pair is "unclear" on the edge, and the claim's word follows from the decision rules as before
(so at most "inconclusive"). One standard deviation of clearance: a re-run's bound then lands on
the same side about 84% of the time (normal approximation), and a flip needs one of the two runs on
its edge, where it reads "inconclusive".

How many trials would settle it: the trials per side at which the bound, its interval narrowing as
1/sqrt(n) about the same estimate, would clear the boundary by the wobble at that n (normal
quantile for the interval: an approximation, said so). None when the estimate itself lies within B
of the boundary: no number of trials removes the between-run part.

Ratios are judged on the log scale: 100 x ln(ratio) is the effect in "log percent", B converts as
100 x ln(1 + B/100).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats as sps

from fsmeter.study.verdict import AGAINST, HOLDS, OPPOSITE, UNCLEAR

#: The between-run wobble (percentage points of an effect) used when a study's [rules] do not give one.
DEFAULT_BETWEEN_RUN_PCT = 2.0
DEFAULT_BETWEEN_RUN_SOURCE = (
    "provisional default, not yet calibrated on this machine: an assumed 2 percentage points; "
    "`fsmeter study calibrate` measures it from two back-to-back runs"
)
#: The most trials per side a projection looks for.
MOST_TRIALS = 1000


@dataclass(frozen=True)
class Wobble:
    """The between-run part of the run-to-run wobble, with where the figure comes from."""

    between_pct: float
    source: str

    @classmethod
    def of(cls, rules) -> Wobble:
        pct = getattr(rules, "between_run_pct", None)
        if pct is None:
            return cls(DEFAULT_BETWEEN_RUN_PCT, DEFAULT_BETWEEN_RUN_SOURCE)
        return cls(float(pct), getattr(rules, "between_run_source", "") or "the study's [rules]")

    def text(self) -> str:
        return f"between-run wobble {self.between_pct:g} percentage points ({self.source})"


@dataclass(frozen=True)
class Check:
    """One bound that decided a status: ``value`` must lie on ``side`` (+1 above, -1 below) of
    ``boundary``. ``kind``: "lower" / "upper" (an interval bound, moves with the interval's width) or
    "estimate" (the point estimate). All on the effect scale (% or 100 ln ratio)."""

    what: str
    kind: str
    value: float
    boundary: float
    side: int

    def clearance(self) -> float:
        return (self.value - self.boundary) * self.side


@dataclass(frozen=True)
class Edge:
    """The outcome of the rule for one pair: ``clear`` when the status stands."""

    clear: bool
    wobble: float  # w on the effect scale
    clearance: float  # the least clearance of the deciding bounds
    what: str  # the bound that is closest
    needed: int | None  # trials per side that would settle it (None: none would, or it is clear)


def scale(unit: str, x: float) -> float:
    """An effect on the scale the rule works on: % as it is, a ratio as 100 ln(ratio)."""
    if unit != "ratio":
        return x
    return 100.0 * math.log(x) if x > 0 else -math.inf


def between_on_scale(unit: str, between_pct: float) -> float:
    return 100.0 * math.log1p(between_pct / 100.0) if unit == "ratio" else between_pct


def checks(t, *, size_pct: float, min_difference_pct: float, margin_pct: float | None) -> list[Check]:
    """The bounds that decided pair ``t``'s status (a :class:`fsmeter.study.evidence.PairTest`), on the
    effect scale. Empty when the status is not decisive or the pair has no interval."""
    if t.status not in (HOLDS, OPPOSITE, AGAINST) or t.interval is None or t.estimate is None:
        return []
    lo, hi = (scale(t.unit, x) for x in t.interval)
    est = scale(t.unit, t.estimate)
    s, out = t.status, []
    if t.mode in ("better", "threshold"):
        thr = t.mode == "threshold"
        size = 0.0 if thr else size_pct
        if s == HOLDS:
            out.append(Check("lower bound vs 0", "lower", lo, 0.0, +1))
            if size > 0:
                out.append(Check(f"estimate vs the claimed size {size:g}%", "estimate", est, size, +1))
        elif s == OPPOSITE:
            out.append(Check("upper bound vs 0", "upper", hi, 0.0, -1))
            if min_difference_pct > 0:
                out.append(
                    Check(
                        f"estimate vs the minimum difference -{min_difference_pct:g}%",
                        "estimate",
                        est,
                        -min_difference_pct,
                        -1,
                    )
                )
        else:  # not shown: the (simultaneous) upper bound below the claimed size
            up = t.upper if t.upper is not None else hi
            out.append(Check(f"upper bound vs the claimed size {size:g}%", "upper", up, size, -1))
    elif t.mode in ("not_better", "not_worse"):
        m = float(margin_pct or 0.0)
        if t.mode == "not_better":  # claimed: better by less than m
            out.append(
                Check(f"upper bound vs the margin {m:g}%", "upper", hi, m, -1)
                if s == HOLDS
                else Check(f"lower bound vs the margin {m:g}%", "lower", lo, m, +1)
            )
        else:  # claimed: worse by less than m
            out.append(
                Check(f"lower bound vs the margin -{m:g}%", "lower", lo, -m, +1)
                if s == HOLDS
                else Check(f"upper bound vs the margin -{m:g}%", "upper", hi, -m, -1)
            )
    elif t.mode == "same":
        m = float(margin_pct or 0.0)
        if s == HOLDS:
            out += [
                Check(f"lower bound vs the margin -{m:g}%", "lower", lo, -m, +1),
                Check(f"upper bound vs the margin +{m:g}%", "upper", hi, m, -1),
            ]
        elif lo > m:
            out.append(Check(f"lower bound vs the margin +{m:g}%", "lower", lo, m, +1))
        else:
            out.append(Check(f"upper bound vs the margin -{m:g}%", "upper", hi, -m, -1))
    elif t.mode == "ratio" and t.claimed is not None:
        rlo, rhi = t.claimed
        ln_lo = scale("ratio", rlo) if rlo > 0 else -math.inf
        ln_hi = scale("ratio", rhi) if math.isfinite(rhi) else math.inf
        if s == HOLDS:
            if math.isfinite(ln_lo):
                out.append(Check(f"lower bound vs the range's end {rlo:g}", "lower", lo, ln_lo, +1))
            if math.isfinite(ln_hi):
                out.append(Check(f"upper bound vs the range's end {rhi:g}", "upper", hi, ln_hi, -1))
        elif s == OPPOSITE:
            out.append(
                Check("upper bound vs a ratio of 1", "upper", hi, 0.0, -1)
                if rlo >= 1
                else Check("lower bound vs a ratio of 1", "lower", lo, 0.0, +1)
            )
        elif lo > ln_hi:
            out.append(Check(f"lower bound vs the range's end {rhi:g}", "lower", lo, ln_hi, +1))
        else:
            out.append(Check(f"upper bound vs the range's end {rlo:g}", "upper", hi, ln_lo, -1))
    return out


def _clear_at(cs: list[Check], est: float, se: float, z: float, between: float) -> float:
    """The least clearance minus the wobble when the standard error is ``se``: an interval bound then
    lies z x se from the estimate on its side (normal quantile), the estimate stays where it is."""
    w = math.sqrt(2 * se * se + between * between)
    worst = math.inf
    for c in cs:
        v = c.value if c.kind == "estimate" else est + (z * se if c.kind == "upper" else -z * se)
        worst = min(worst, (v - c.boundary) * c.side - w)
    return worst


def judge(t, cs: list[Check], between_pct: float) -> Edge | None:
    """The edge rule for pair ``t`` with the bounds ``cs`` that decided it. None: nothing to judge
    (no decisive status, no standard error)."""
    se = getattr(t, "se", None)
    if not cs or se is None or not math.isfinite(se):
        return None
    between = between_on_scale(t.unit, between_pct)
    w = math.sqrt(2 * se * se + between * between)
    least = min(cs, key=lambda c: c.clearance())
    if least.clearance() > w:
        return Edge(True, w, least.clearance(), least.what, None)
    level = t.level or 0.9
    z = float(sps.norm.ppf(0.5 + level / 2))
    est = scale(t.unit, t.estimate)
    n0 = max(2, min(t.sa.n, t.sb.n))
    needed = None
    for n in range(n0 + 1, MOST_TRIALS + 1):
        if _clear_at(cs, est, se * math.sqrt(n0 / n), z, between) > 0:
            needed = n
            break
    return Edge(False, w, least.clearance(), least.what, needed)


def edge_text(e: Edge) -> str:
    """Why a decisive status was withdrawn, in a clause."""
    head = f"on the edge: the {e.what} is clear by {e.clearance:.2g}, within the run-to-run wobble {e.wobble:.2g}"
    if e.needed is None:
        return head + " (no number of trials settles it: the between-run part alone is larger)"
    return head + f" (about {e.needed} trials a side would settle it)"


def apply(t, *, size_pct: float, min_difference_pct: float, margin_pct: float | None, between_pct: float) -> None:
    """Withdraw pair ``t``'s decisive status when it was decided on the edge: the status becomes
    unclear, ``t.decided`` keeps the word the numbers gave, ``t.edge`` says why."""
    cs = checks(t, size_pct=size_pct, min_difference_pct=min_difference_pct, margin_pct=margin_pct)
    e = judge(t, cs, between_pct)
    if e is None:
        return
    t.wobble = e.wobble
    t.clearance = e.clearance
    if not e.clear:
        t.decided = t.status
        t.status = UNCLEAR
        t.edge = edge_text(e)
        t.edge_needed = e.needed
