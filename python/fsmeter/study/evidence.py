"""What checking a claim returns, as data: each comparison (:class:`PairTest`), each case
(:class:`SubCheck`) and the claim's :class:`Verdict`, with the evidence the report tables and plots
draw (effects, intervals, p-values before and after Holm, power, the edge rule's clearance)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fsmeter.study.model import Claim
from fsmeter.study.stattests import Sample
from fsmeter.study.verdict import (
    AGAINST,
    HOLDS,
    OPPOSITE,
    PAPER_OF,
    REPRODUCED,
    UNCLEAR,
)


@dataclass
class PairTest:
    """One comparison inside a claim: a against b in one case, with its evidence as data (the effect,
    its interval, the p-values before and after Holm, the power) for the report and for plots."""

    case: str
    a: str
    b: str
    sa: Sample
    sb: Sample
    effect: str  # the measured effect with its interval, as text
    mode: str = "better"  # better | threshold | not_better | not_worse | same | ratio
    hib: bool = True  # the metric's better direction: higher
    unit: str = "%"  # what estimate and interval are in: "%" (of b's mean, in the claimed direction) or "ratio"
    estimate: float | None = None  # the effect: % in the claimed direction, or the ratio a / b
    interval: tuple[float, float] | None = None  # its two-sided interval at 1 - 2 alpha
    level: float | None = None  # that interval's level
    claimed: tuple[float, float] | None = None  # the region the claim puts the effect in (same unit)
    upper: float | None = None  # ordering: the simultaneous upper bound of the effect (Bonferroni)
    apart: bool = True  # the study's interval rule (no overlap of the two means' intervals) holds
    p_hold: float = 1.0  # the claim's own test
    p_against: float = 1.0  # shown otherwise (beyond the margin, outside the range)
    p_opposite: float = 1.0  # significant in the opposite direction
    power: float | None = None  # ordering: power at effect_pct, at the Bonferroni level
    needed: int | None = None  # trials per side that power wants
    descriptive: str | None = None  # point values or ranges: the status the numbers give, no test
    regime: dict = field(default_factory=dict)
    status: str = UNCLEAR
    adj_p: float = 1.0  # Holm-adjusted p of the claim's own test
    adj_p_hold: float = 1.0
    adj_p_against: float = 1.0
    adj_p_opposite: float = 1.0
    se: float | None = None  # the effect's standard error, on the edge rule's scale (% or 100 ln ratio)
    decided: str | None = None  # the status the numbers gave, when the edge rule withdrew it
    edge: str = ""  # why it was withdrawn (fsmeter.study.edge)
    edge_needed: int | None = None  # trials per side that would settle it
    wobble: float | None = None  # the expected run-to-run wobble of the deciding bound
    clearance: float | None = None  # how far the deciding bound is from its boundary

    def text(self) -> str:
        if self.descriptive is not None:
            what = "ranges" if self.sa.ranged or self.sb.ranged else "point values"
            return f"{self.a} {self.sa.text()} vs {self.b} {self.sb.text()}: {self.effect} -> {self.status} ({what})"
        pw = (
            f", power {self.power:.2f} at the powered effect"
            if self.power is not None and self.status in (UNCLEAR, AGAINST)
            else ""
        )
        p = {OPPOSITE: self.adj_p_opposite, AGAINST: min(self.adj_p_against, self.adj_p)}.get(self.status, self.adj_p)
        which = {OPPOSITE: "the other way", AGAINST: "otherwise"}.get(self.status, "")
        if self.mode in ("better", "threshold") and self.status == AGAINST and self.upper is not None:
            which, p = "", self.adj_p
            pw = f", simultaneous upper bound {self.upper:+.1f}%" + pw
        against = self.b if self.mode == "threshold" else f"{self.b} ({self.sb.text()})"
        return (
            f"{self.a} ({self.sa.text()}) vs {against}: {self.effect}, "
            f"p={p:.3g} (Holm{', ' + which if which else ''}){pw} -> {self.status}"
            + (f" ({self.decided} {self.edge})" if self.edge else "")
        )

    def as_json(self) -> dict:
        """The evidence as data: per case and pair, the effect, its interval, p before and after Holm, power."""
        return {
            "case": self.case,
            "a": self.a,
            "b": self.b,
            "a_sample": _sample_json(self.sa),
            "b_sample": _sample_json(self.sb),
            "test": self.mode,
            "unit": self.unit,
            "effect": _num(self.estimate),
            "interval": [_num(x) for x in self.interval] if self.interval else None,
            "interval_level": self.level,
            "claimed": [_num(x) for x in self.claimed] if self.claimed else None,
            "simultaneous_upper": _num(self.upper),
            "p": _num(self.p_hold) if self.descriptive is None else None,
            "adjusted_p": _num(self.adj_p_hold) if self.descriptive is None else None,
            "p_opposite": _num(self.p_opposite) if self.descriptive is None else None,
            "adjusted_p_opposite": _num(self.adj_p_opposite) if self.descriptive is None else None,
            "power": _num(self.power),
            "trials_needed": self.needed,
            "descriptive": self.descriptive is not None,
            "status": self.status,
            "se": _num(self.se),
            "wobble": _num(self.wobble),
            "clearance": _num(self.clearance),
            "status_on_numbers": self.decided or self.status,
            "edge": self.edge or None,
            "edge_trials_needed": self.edge_needed,
            "text": self.effect,
        }


def _num(x):
    """A float for JSON: None for a missing or infinite value (JSON has no inf)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _sample_json(s: Sample) -> dict:
    out = {"mean": _num(s.mean), "sd": _num(s.sd), "n": s.n}
    if s.ranged:
        out.update(low=_num(s.low), high=_num(s.high))
    return out


@dataclass
class SubCheck:
    context: str
    outcome: str
    detail: str


@dataclass
class Verdict:
    claim: Claim
    outcome: str  # a word of fsmeter.study.verdict.RUN_WORDS
    reason: str
    subs: list[SubCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tests: list[PairTest] = field(default_factory=list)
    test: str = ""  # what the test was, in a line
    descriptive: bool = False  # some comparison had point values or ranges only
    data_outcome: str = ""  # the word before the gates
    gates: list[str] = field(default_factory=list)
    no_data: bool = False  # nothing in the frame matched the claim
    regime: dict = field(default_factory=dict)  # shortest phase, busiest, most cache-served, fastest storage
    power_note: str = ""  # an inconclusive verdict: the power and the trials a decision would need
    edge_note: str = ""  # cases decided on the edge (fsmeter.study.edge) and the trials that would settle them
    wobble: str = ""  # the between-run wobble the edge rule used, with its source

    @property
    def paper_verdict(self) -> str:
        """The word this verdict stands for on the paper's own data."""
        return PAPER_OF.get(self.outcome, self.outcome)

    def evidence(self, limit: int = 8) -> list[str]:
        """The comparisons that decided, as lines: failing ones first when the claim did not hold."""
        if not self.tests:
            return [f"{s.context}: {s.detail}" for s in self.subs[:limit]]
        held = (self.data_outcome or self.outcome) == REPRODUCED
        rows = sorted(self.tests, key=lambda t: (t.status != HOLDS) if held else (t.status == HOLDS))
        return [f"{t.case + ': ' if t.case else ''}{t.text()}" for t in rows[:limit]]

    def as_json(self) -> dict:
        """The verdict as `fsmeter claim check --json` writes it: exactly id, verdict, data_outcome, gates,
        tests (per comparison: its case, effect, interval, p, adjusted p, power...) and reason."""
        return {
            "id": self.claim.id,
            "verdict": self.outcome,
            "data_outcome": self.data_outcome or self.outcome,
            "gates": list(self.gates),
            "tests": [t.as_json() for t in self.tests],
            "reason": self.full_reason(),
        }

    def full_reason(self) -> str:
        """The reason with what explains an inconclusive word (the power, the trials needed)."""
        return (
            self.reason
            + (f"; {self.edge_note}" if self.edge_note else "")
            + (f"; {self.power_note}" if self.power_note else "")
        )
