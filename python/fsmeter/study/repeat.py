"""Two runs of one study side by side: the claims whose word changed (``fsmeter study compare-runs``),
and the run-to-run differences of every case's effect with the between-run wobble they imply
(``fsmeter study calibrate``; the constant the edge rule of :mod:`fsmeter.study.edge` uses).

The between-run wobble ``B`` (percentage points) is estimated by the method of moments: for each
comparison tested in both runs, with effects e1, e2 and standard errors s1, s2 (on the edge rule's
scale: % of the reference mean, or 100 ln ratio), the difference d = e2 - e1 has variance
s1^2 + s2^2 + B^2 when the runs differ only by sampling and a between-run part of sd B. So
B^2 = mean(d^2 - s1^2 - s2^2), taken as 0 when negative. Its upper bound resamples whole claims
(a cluster bootstrap, 2000 draws, fixed seed: the comparisons of one claim share their samples and
are not independent) and takes the 90th percentile. A single d with z = d / sqrt(s1^2 + s2^2) beyond
3 is listed: one case's systematic change, which a single constant describes badly. The claims a
data gate made inconclusive in either run are left out (gated_claims): their figures carry more than
the wobble.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fsmeter.study.edge import scale
from fsmeter.study.verdict import INCONCLUSIVE, NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED, REVERSED

DECISIVE = (REPRODUCED, REVERSED, NOT_REPRODUCED)
#: The bootstrap's draws and seed (fixed: the same two stores print the same figures).
BOOT_DRAWS, BOOT_SEED, BOOT_QUANTILE = 2000, 20260, 0.90


@dataclass
class WordChange:
    """A claim whose word differs between the two runs."""

    study: str
    claim: str
    word_a: str
    word_b: str
    intervals_a: list[str]
    intervals_b: list[str]

    @property
    def flip(self) -> bool:
        """Both words decisive and different: what the edge rule is there to prevent."""
        return self.word_a in DECISIVE and self.word_b in DECISIVE

    def as_json(self) -> dict:
        return {
            "study": self.study,
            "claim": self.claim,
            "run_a": self.word_a,
            "run_b": self.word_b,
            "flip": self.flip,
            "intervals_a": self.intervals_a,
            "intervals_b": self.intervals_b,
        }


@dataclass
class CaseDiff:
    """One comparison tested in both runs: its effect and standard error in each, on the edge scale."""

    study: str
    claim: str
    case: str
    a: str
    b: str
    unit: str
    effect_a: float
    se_a: float
    effect_b: float
    se_b: float

    @property
    def diff(self) -> float:
        return self.effect_b - self.effect_a

    @property
    def z(self) -> float:
        s = math.hypot(self.se_a, self.se_b)
        return self.diff / s if s > 0 else (0.0 if self.diff == 0 else math.copysign(math.inf, self.diff))

    def as_json(self) -> dict:
        return {
            "study": self.study,
            "claim": self.claim,
            "case": self.case,
            "a": self.a,
            "b": self.b,
            "scale": "100 ln ratio" if self.unit == "ratio" else "%",
            "effect_a": self.effect_a,
            "se_a": self.se_a,
            "effect_b": self.effect_b,
            "se_b": self.se_b,
            "difference": self.diff,
            "z": self.z if math.isfinite(self.z) else None,
        }


@dataclass
class Between:
    """The between-run wobble the differences imply."""

    estimate_pct: float
    upper_pct: float
    comparisons: int
    claims: int
    rms_diff: float
    rms_sampling: float


def interval_text(t) -> str:
    """A comparison's effect and interval in a short line."""
    where = f"{t.case}: " if t.case else ""
    if t.estimate is None:
        return f"{where}{t.a} vs {t.b}: {t.effect}"
    if t.unit == "ratio":
        iv = f" [{t.interval[0]:.3g}, {t.interval[1]:.3g}]" if t.interval else ""
        return f"{where}{t.a}/{t.b} ratio {t.estimate:.3g}{iv} -> {t.status}"
    iv = f" [{t.interval[0]:+.1f}, {t.interval[1]:+.1f}]" if t.interval else ""
    return f"{where}{t.a} vs {t.b} {t.estimate:+.1f}%{iv} -> {t.status}"


def word_changes(study: str, va: list, vb: list) -> list[WordChange]:
    """The claims whose word differs between run a and run b (claims of one study, by id)."""
    by_b = {v.claim.id: v for v in vb}
    out = []
    for v in va:
        w = by_b.get(v.claim.id)
        if w is None or w.outcome == v.outcome:
            continue
        out.append(
            WordChange(
                study,
                v.claim.id,
                v.outcome,
                w.outcome,
                [interval_text(t) for t in v.tests],
                [interval_text(t) for t in w.tests],
            )
        )
    return out


def gated_claims(va: list, vb: list) -> dict[str, list[str]]:
    """The claims a data gate made inconclusive in either run (a busy machine, a disk model's late
    replies, a phase too short, too few trials), with their gates. Their figures carry something besides
    the two runs' wobble (a disk model's stalled trial: 0.6 MB/s among 100), so their comparisons are
    left out of B: a disturbed sample's large standard error would pull the estimate down, a shifted
    mean push it up. A claim "not comparable here" (the paper's regime differs) stays: its two runs
    measure this machine's wobble as well as any."""
    out: dict[str, list[str]] = {}
    for v in (*va, *vb):
        if v.outcome == NOT_COMPARABLE:
            continue
        for g in v.gates:
            gates = out.setdefault(v.claim.id, [])
            if g not in gates:
                gates.append(g)
    return out


def case_diffs(study: str, va: list, vb: list, leave_out: set[str] | frozenset[str] = frozenset()) -> list[CaseDiff]:
    """Every comparison with an effect and a standard error in both runs, matched by claim, case and pair;
    the claims in `leave_out` (gated_claims) are left out."""

    def keyed(vs):
        return {
            (v.claim.id, t.case, t.a, t.b): t
            for v in vs
            if v.claim.id not in leave_out
            for t in v.tests
            if t.estimate is not None and t.se is not None and math.isfinite(t.se) and t.descriptive is None
        }

    ka, kb = keyed(va), keyed(vb)
    out = []
    for key, ta in ka.items():
        tb = kb.get(key)
        if tb is None or tb.unit != ta.unit:
            continue
        ea, eb = scale(ta.unit, ta.estimate), scale(tb.unit, tb.estimate)
        if not (math.isfinite(ea) and math.isfinite(eb)):
            continue
        out.append(CaseDiff(study, key[0], key[1], key[2], key[3], ta.unit, ea, ta.se, eb, tb.se))
    return out


def _mom(d2: np.ndarray, s2: np.ndarray) -> float:
    return math.sqrt(max(0.0, float(np.mean(d2 - s2)))) if d2.size else 0.0


def between_run(diffs: list[CaseDiff]) -> Between | None:
    """The method-of-moments estimate of B and its cluster-bootstrap upper bound (module docstring)."""
    if not diffs:
        return None
    d2 = np.array([c.diff**2 for c in diffs])
    s2 = np.array([c.se_a**2 + c.se_b**2 for c in diffs])
    est = _mom(d2, s2)
    groups: dict[tuple, list[int]] = {}
    for i, c in enumerate(diffs):
        groups.setdefault((c.study, c.claim), []).append(i)
    idx = list(groups.values())
    rng = np.random.default_rng(BOOT_SEED)
    boots = []
    for _ in range(BOOT_DRAWS):
        pick = np.concatenate([idx[j] for j in rng.integers(0, len(idx), len(idx))])
        boots.append(_mom(d2[pick], s2[pick]))
    upper = float(np.quantile(boots, BOOT_QUANTILE))
    return Between(est, upper, len(diffs), len(idx), math.sqrt(float(d2.mean())), math.sqrt(float(s2.mean())))


def word_pairs(changes: list[WordChange]) -> dict:
    """How the changed words split: flips (both decisive), through inconclusive, and the rest (a gate)."""
    flips = sum(c.flip for c in changes)
    via = sum(INCONCLUSIVE in (c.word_a, c.word_b) for c in changes)
    return {"flips": flips, "via inconclusive": via, "other": len(changes) - flips - via}
