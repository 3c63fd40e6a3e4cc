"""Test a study's claims, on a re-run's kept trials or on the paper's own published numbers.

A claim is tested in each of its *cases* (the cells of the factors it does not fix). In a case its
test compares pairs of levels: every upper member against every lower one for an ordering, every
pair of a tier for an equivalence, the two tiers (or numerator and denominator) for a magnitude.
The tests are in :mod:`fsmeter.study.stattests`: one-sided Welch, TOST at the claim's margin, the
ratio of means in the claimed range (delta method on logs). All the tests of one claim form one
family: their p-values are adjusted by Holm's method (Holm 1979) at the claim's alpha.

A pair *holds* when its adjusted p-value is under alpha. It is *reversed* when the opposite is
significant (the adjusted p-value of the one-sided test the other way), and *not shown* when the
claim is shown not to hold in its own direction: a difference beyond the margin (equivalence), a
ratio outside the range (magnitude), or no effect where the test had the power (``power``, at the
claim's ``effect_pct``, default 10%) to see the claimed one (ordering). Otherwise it is *unclear*.
A case holds when all its pairs do; it is reversed when any pair is, not shown when any pair is.
The claim's word follows from its cases and its ``decide`` rule (:func:`fsmeter.study.verdict.decide`).

Where a side has a point value only (a paper that printed one number), the comparison is
descriptive: the point estimate agrees with the claim or not, no test, and the verdict says so.

Re-run verdicts pass gates (:mod:`fsmeter.study.verdict`): a claim ``sensitive_to`` a change this run
made is *not comparable here*; short phases, a busy machine or too few trials for the power make a
verdict *inconclusive*. Published absolute numbers are never compared with a re-run: the hardware differs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fsmeter.study import stattests as st
from fsmeter.study.model import Claim, Study
from fsmeter.study.stattests import Sample
from fsmeter.study.verdict import (
    AGAINST,
    HOLDS,
    INCONCLUSIVE,
    NOT_COMPARABLE,
    NOT_TESTABLE,
    OPPOSITE,
    PAPER_OF,
    UNCLEAR,
    decide,
    gate_reasons,
)

#: Ordering claims that state no size are powered at this difference (% of the lower mean).
DEFAULT_EFFECT_PCT = 10.0
#: Columns of a claim frame that are not factors.
_NOT_FACTORS = (
    "workload",
    "metric_key",
    "value",
    "higher_is_better",
    "trial",
    "sd",
    "n",
    "phase_s",
    "other_cpu_share",
    "cache_read_share",
    "unit",
    "emulated",
)


@dataclass
class PairTest:
    """One comparison inside a claim: a against b in one case."""

    case: str
    a: str
    b: str
    sa: Sample
    sb: Sample
    effect: str  # the measured effect with its interval, as text
    p_hold: float = 1.0  # the claim's own test
    p_against: float = 1.0  # shown otherwise (beyond the margin, outside the range)
    p_opposite: float = 1.0  # significant in the opposite direction
    power: float | None = None  # ordering: power at the claimed effect
    needed: int | None = None  # trials per side the power wanted needs
    descriptive: str | None = None  # point values: the status the point estimate gives
    regime: dict[str, float] = field(default_factory=dict)
    status: str = UNCLEAR
    adj_p: float = 1.0  # Holm-adjusted p of the claim's own test
    adj_p_hold: float = 1.0
    adj_p_against: float = 1.0
    adj_p_opposite: float = 1.0

    def text(self) -> str:
        if self.descriptive is not None:
            return (
                f"{self.a} {self.sa.text()} vs {self.b} {self.sb.text()}: {self.effect} -> {self.status} (point values)"
            )
        pw = f", power {self.power:.2f}" if self.power is not None and self.status in (UNCLEAR, AGAINST) else ""
        p = {OPPOSITE: self.adj_p_opposite, AGAINST: min(self.adj_p_against, self.adj_p)}.get(self.status, self.adj_p)
        which = {OPPOSITE: "the other way", AGAINST: "otherwise"}.get(self.status, "")
        return (
            f"{self.a} ({self.sa.text()}) vs {self.b} ({self.sb.text()}): {self.effect}, "
            f"p={p:.3g} (Holm{', ' + which if which else ''}){pw} -> {self.status}"
        )


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
    descriptive: bool = False  # some comparison had point values only
    data_outcome: str = ""  # the word before the gates
    gates: list[str] = field(default_factory=list)
    no_data: bool = False  # nothing in the frame matched the claim
    regime: dict[str, float] = field(default_factory=dict)  # shortest phase, busiest, most cache-served

    @property
    def paper_verdict(self) -> str:
        """The word this verdict stands for on the paper's own data."""
        return PAPER_OF.get(self.outcome, self.outcome)

    def evidence(self, limit: int = 8) -> list[str]:
        """The comparisons that decided, as lines: failing ones first when the claim did not hold."""
        if not self.tests:
            return [f"{s.context}: {s.detail}" for s in self.subs[:limit]]
        held = (self.data_outcome or self.outcome) == "reproduced"
        rows = sorted(self.tests, key=lambda t: (t.status != HOLDS) if held else (t.status == HOLDS))
        return [f"{t.case + ': ' if t.case else ''}{t.text()}" for t in rows[:limit]]


def _merge_regimes(parts) -> dict[str, float]:
    """The shortest phase, the busiest machine and the most cache-served reads over several parts."""
    out: dict[str, float] = {}
    for part in parts:
        for k, v in part.items():
            out[k] = v if k not in out else (min if k == "phase_s" else max)(out[k], v)
    return out


def _concerns(change, claim: Claim, study: Study) -> bool:
    """Does a run change touch this claim? A change to one workload ("w: size ...") touches only claims on
    that workload, a change to one configuration only claims that compare or name it; the rest touch all."""
    head = str(change.what).split(":", 1)[0].strip()
    workloads = {w.id for w in study.workloads}
    if head in workloads:
        mine = (
            set(claim.workloads) | set(claim.numerator.get("workload", [])) | set(claim.denominator.get("workload", []))
        )
        if claim.compare == "workload" or claim.factor == "workload":
            mine |= {str(x) for t in claim.tiers for x in t} | {str(x) for p in claim.pairs for x in p}
        return not mine or head in mine
    if str(change.what).startswith("configuration "):
        cid = str(change.what)[len("configuration ") :].split(" ", 1)[0]
        mine = set(claim.configurations)
        if claim.compare == "filesystem":
            mine |= {str(x) for t in claim.tiers for x in t}
        return not mine or cid in mine
    return True


def _ABSENT(note: str) -> bool:
    """A note saying that something the claim compares did not run here (or was not published)."""
    return (
        "not run here" in note
        or "needs runs on two" in note
        or "was not varied here" in note
        or note.startswith("no published numbers for")
    )


def _better_diff(a: Sample, b: Sample, hib: bool) -> float:
    return (a.mean - b.mean) if hib else (b.mean - a.mean)


class ClaimChecker:
    """Claims of one study against a tidy frame (levels in the study's names).

    ``frame`` columns: workload, metric_key ("phase.metric"), value, higher_is_better, filesystem (the
    study's configuration id), one column per varied study factor, optionally kernel / host. A row is
    one trial; a row with ``sd`` and ``n`` is a published mean with its spread; a lone row without them
    is a point value. Re-run frames may carry per-row ``phase_s``, ``other_cpu_share`` and
    ``cache_read_share`` for the gates. ``changes`` are the run's (objects with an ``affects`` list);
    ``paper`` says the frame holds the paper's own numbers (no gates, paper words).
    """

    def __init__(self, study: Study, frame, changes: Sequence = (), paper: bool = False):
        self.study, self.df = study, frame
        self.paper = paper
        self.changes = [c for c in changes if getattr(c, "affects", None)]
        self.factors = [c for c in frame.columns if c not in _NOT_FACTORS]

    # -- selection ------------------------------------------------------------------------------
    def _select(self, claim: Claim, notes: list, workloads: bool = True):
        df = self.df
        if claim.workloads and workloads:
            gone = [w for w in claim.workloads if w not in set(df["workload"])]
            if gone and len(gone) == len(claim.workloads):
                notes.append(f"{'no published numbers for' if self.paper else 'not run here'}: {', '.join(gone)}")
            df = df[df["workload"].isin(claim.workloads)]
        if claim.configurations:
            missing = [c for c in claim.configurations if c not in set(df["filesystem"])]
            if missing:
                notes.append(f"{'no published numbers for' if self.paper else 'not run here'}: {', '.join(missing)}")
            df = df[df["filesystem"].isin(claim.configurations)]
        for key, want in claim.where.items():
            if key not in df.columns:
                notes.append(f"{key} was not varied here: read at this machine's one setting")
                continue
            wanted = [str(w) for w in (want if isinstance(want, list) else [want])]
            absent = [w for w in wanted if w not in set(df[key].astype(str))]
            if absent:
                notes.append(f"{key} = {', '.join(absent)} not run here")
            df = df[df[key].astype(str).isin(wanted)]
        for exc in claim.except_:
            keys = {k: v for k, v in exc.items() if k in df.columns and k != "winner"}
            dropped = [k for k in exc if k not in keys and k != "winner"]
            if dropped:
                notes.append(
                    f"exception {exc}: {', '.join(dropped)} not varied here, so every "
                    f"{', '.join(f'{k}={v}' for k, v in keys.items())} case is left out"
                )
            if keys:
                mask = np.ones(len(df), dtype=bool)
                for k, v in keys.items():
                    mask &= (df[k].astype(str) == str(v)).to_numpy()
                df = df[~mask]
        return df

    def _contexts(self, df, exclude: Sequence[str]):
        cols = [c for c in self.factors if c not in exclude and c in df.columns and df[c].nunique(dropna=False) > 1]
        cols = [c for c in ("metric_key", "workload") if c not in exclude] + cols
        if not cols:
            yield "", df
            return
        for key, part in df.groupby(cols, dropna=False, sort=False):
            key = key if isinstance(key, tuple) else (key,)
            label = ", ".join(
                f"{v}" if c in ("metric_key", "workload") else f"{c}={v}"
                for c, v in zip(cols, key)
                if not (isinstance(v, float) and math.isnan(v))
            )
            yield label, part

    # -- samples ----------------------------------------------------------------------------------
    @staticmethod
    def _sample(g) -> Sample | None:
        vals = [float(v) for v in g["value"] if v is not None and not (isinstance(v, float) and math.isnan(v))]
        if not vals:
            return None
        if "sd" in g.columns and len(g) == 1 and not pd.isna(g["sd"].iloc[0]):
            n = int(g["n"].iloc[0]) if "n" in g.columns and not pd.isna(g["n"].iloc[0]) else 0
            if n >= 2:
                return Sample(vals[0], float(g["sd"].iloc[0]), n)
        return Sample.of(vals)

    def _regime(self, g) -> dict[str, float]:
        """The shortest phase, the busiest machine and the most cache-served reads of these rows. Reads
        from the page cache count only for workloads the study did not run from memory itself (its
        ``regime = "cache"`` ones did: cache residency is their regime, not a change)."""
        out = {}
        cached = {w.id for w in self.study.workloads if w.regime == "cache"}
        for col, how in (
            ("phase_s", "min"),
            ("other_cpu_share", "max"),
            ("cache_read_share", "max"),
            ("emulated", "max"),
        ):
            vals = g[col] if col in g.columns else None
            if vals is not None and col == "cache_read_share" and "workload" in g.columns:
                vals = vals[~g["workload"].astype(str).isin(cached)]
            if vals is not None and vals.notna().any():
                out[col] = float(getattr(vals, how)())
        return out

    def _samples(self, part, col: str) -> dict[str, tuple]:
        out = {}
        for k, g in part.groupby(col, sort=False):
            s = self._sample(g)
            if s is not None:
                out[str(k)] = (s, self._regime(g))
        return out

    # -- one comparison --------------------------------------------------------------------------
    def _pair(self, claim: Claim, case: str, a: str, b: str, A: tuple, B: tuple, hib: bool, mode: str) -> PairTest:
        """mode: 'better' (a better than b), 'not_better' / 'not_worse' (within margin_pct),
        'same' (TOST at margin_pct), 'ratio' (mean(a)/mean(b) in ratio_range)."""
        (sa, ra), (sb, rb) = A, B
        regime = _merge_regimes([ra, rb])
        bd = _better_diff(sa, sb, hib)
        pct = 100.0 * bd / abs(sb.mean) if sb.mean else math.inf
        point = sa.point or sb.point
        margin = claim.margin_pct
        t = PairTest(case, a, b, sa, sb, "", regime=regime)
        if point and not self.paper:  # a re-run with one kept trial on a side: nothing to test with
            t.effect = f"{pct:+.1f}%, one kept trial on a side: no spread to test with"
            t.descriptive = UNCLEAR
            return t
        if mode == "ratio" and (sa.mean <= 0 or sb.mean <= 0):
            t.effect = f"means {sa.mean:.4g} and {sb.mean:.4g}: a ratio needs positive means"
            t.descriptive = UNCLEAR
            return t
        if mode == "ratio":
            lo, hi = claim.ratio_range
            claim_side = 1 if lo >= 1 else (-1 if hi <= 1 else 0)
            if point:
                r = sa.mean / sb.mean
                t.effect = f"ratio {r:.3g}, claimed {lo:g}..{hi:g}"
                t.descriptive = (
                    HOLDS if lo <= r <= hi else OPPOSITE if claim_side and (r - 1) * claim_side < 0 else AGAINST
                )
                return t
            r, rlo, rhi = st.ratio_interval(sa, sb, 1 - 2 * claim.alpha)
            t.effect = f"ratio {r:.3g} [{rlo:.3g}, {rhi:.3g}] ({1 - 2 * claim.alpha:.0%}), claimed {lo:g}..{hi:g}"
            t.p_hold = st.ratio_in_range_p(sa, sb, lo, hi)
            t.p_against = st.ratio_outside_p(sa, sb, lo, hi)
            if claim_side:
                t.p_opposite = st.one_sided_p(sa, sb, a_larger=claim_side < 0)
            return t
        if mode == "same":
            if point:
                t.effect = f"{pct:+.1f}% (margin {margin:g}%)"
                t.descriptive = HOLDS if abs(pct) < margin else AGAINST
                return t
            d, lo_, hi_ = st.diff_interval(sa, sb, 1 - 2 * claim.alpha)
            t.effect = f"{d:+.1f}% [{lo_:+.1f}, {hi_:+.1f}] ({1 - 2 * claim.alpha:.0%}), margin +-{margin:g}%"
            t.p_hold = st.tost_p(sa, sb, margin)
            t.p_against = st.beyond_margin_p(sa, sb, margin)
            return t
        # better / not_better / not_worse
        if point:
            t.effect = f"{pct:+.1f}% better" + (f" (margin {margin:g}%)" if mode != "better" else "")
            if mode == "better":
                t.descriptive = HOLDS if bd > 0 else (OPPOSITE if bd < 0 else AGAINST)
            elif mode == "not_better":
                t.descriptive = HOLDS if pct < margin else OPPOSITE
            else:
                t.descriptive = HOLDS if pct > -margin else OPPOSITE
            return t
        d, lo_, hi_ = st.diff_interval(sa, sb, 1 - 2 * claim.alpha)
        sign = 1 if hib else -1
        w = st.welch(sa, sb)
        lo_b, hi_b = sorted((sign * lo_, sign * hi_))
        t.effect = f"{sign * d:+.1f}% better [{lo_b:+.1f}, {hi_b:+.1f}] ({1 - 2 * claim.alpha:.0%})"
        effect_pct = claim.effect_pct or DEFAULT_EFFECT_PCT
        if mode == "better":
            t.p_hold = st.one_sided_p(sa, sb, a_larger=hib)
            t.p_opposite = st.one_sided_p(sa, sb, a_larger=not hib)
            t.power = st.welch_power(sa, sb, effect_pct, claim.alpha)
            t.needed = st.trials_needed(sa, sb, effect_pct, claim.alpha, claim.power)
            return t
        m = margin / 100.0 * abs(sb.mean)
        if w.se == 0:
            t.p_hold = 0.0 if (bd < m if mode == "not_better" else bd > -m) else 1.0
            t.p_opposite = 0.0 if (bd > m if mode == "not_better" else bd < -m) else 1.0
        elif mode == "not_better":  # H1: better-difference < margin; the opposite: > margin
            t.p_hold = float(st.sps.t.sf((m - bd) / w.se, w.df))
            t.p_opposite = float(st.sps.t.sf((bd - m) / w.se, w.df))
        else:  # H1: better-difference > -margin; the opposite: < -margin
            t.p_hold = float(st.sps.t.sf((bd + m) / w.se, w.df))
            t.p_opposite = float(st.sps.t.sf((-m - bd) / w.se, w.df))
        t.effect += f", margin {margin:g}%"
        return t

    # -- claim kinds ------------------------------------------------------------------------------
    def _tiers(self, claim: Claim, present: set, notes: list) -> list:
        tiers, gone = [], []
        named = dict(zip(("newest", "oldest"), _by_version(present)[::-1][:1] + _by_version(present)[:1]))
        for tier in claim.tiers:
            tier = [named.get(str(x), x) for x in tier]
            kept = [str(x) for x in tier if str(x) in present]
            gone += [str(x) for x in tier if str(x) not in present]
            if kept:
                tiers.append(kept)
        if gone:
            notes.append(
                f"not run here: {', '.join(gone)}" if not self.paper else f"no published numbers for: {', '.join(gone)}"
            )
        return tiers

    def _tier_tests(self, claim: Claim, df, notes: list) -> list[PairTest]:
        col = claim.compare
        if col not in df.columns:
            if col in ("kernel", "host"):
                notes.append(f"needs runs on two {col}s: run the study on each, then `fsmeter merge` the stores")
            else:
                notes.append(f"{col} was not varied here")
            return []
        test = claim.test
        tiers = self._tiers(claim, set(df[col].astype(str)), notes)
        if (test != "equivalence" and len(tiers) < 2) or (test == "equivalence" and sum(map(len, tiers)) < 2):
            return []
        out = []
        for label, part in self._contexts(df, [col]):
            s = self._samples(part, col)
            hib = bool(part["higher_is_better"].iloc[0])
            if test == "equivalence":
                members = [m for t in tiers for m in t if m in s]
                for i, a in enumerate(members):
                    for b in members[i + 1 :]:
                        out.append(self._pair(claim, label, a, b, s[a], s[b], hib, "same"))
            else:
                mode = "ratio" if test == "magnitude" else "better"
                for i, upper in enumerate(tiers):
                    for lower in tiers[i + 1 :] if mode == "better" else tiers[i + 1 : i + 2]:
                        for a in upper:
                            for b in lower:
                                if a in s and b in s:
                                    out.append(self._pair(claim, label, a, b, s[a], s[b], hib, mode))
        return out

    def _factor_tests(self, claim: Claim, df, notes: list) -> list[PairTest]:
        col = claim.factor
        if col not in df.columns:
            notes.append(f"{col} was not varied here")
            return []
        mode = {"up": "better", "down": "better", "not_up": "not_better", "not_down": "not_worse"}[claim.direction]
        if mode != "better" and claim.margin_pct is None:
            notes.append(
                f"a '{claim.direction}' claim needs margin_pct: how much better or worse still counts as 'not'"
            )
            return []
        out = []
        for label, part in self._contexts(df, [col]):
            s = self._samples(part, col)
            hib = bool(part["higher_is_better"].iloc[0])
            for frm, to in claim.pairs:
                a, b = str(to), str(frm)
                if a not in s or b not in s:
                    continue
                if claim.direction == "down":
                    out.append(self._pair(claim, label, f"{col}={b}", f"{col}={a}", s[b], s[a], hib, mode))
                else:
                    out.append(self._pair(claim, label, f"{col}={a}", f"{col}={b}", s[a], s[b], hib, mode))
        return out

    def _ratio_tests(self, claim: Claim, notes: list) -> list[PairTest]:
        num_w, den_w = claim.numerator.get("workload", []), claim.denominator.get("workload", [])
        out = []
        df = _pick_metrics(self._select(claim, notes, workloads=False), claim.all_metrics)
        for nw, dw in zip(num_w, den_w):
            part = df[df["workload"].isin([nw, dw])]
            for label, g in self._contexts(part, ["workload"]):
                s = self._samples(g, "workload")
                if nw in s and dw in s:
                    out.append(self._pair(claim, label, nw, dw, s[nw], s[dw], True, "ratio"))
        return out

    def _variation(self, claim: Claim, df, notes: list) -> list[SubCheck]:
        """Jain's allocation of variation (two-factor design with replications) and its F-tests."""
        from fsmeter.errors import UserError
        from fsmeter.stats.anova import ERROR_TERM, factorial_anova

        data = df.copy()
        data["access_mode"] = data["metric_key"]
        if "setup" in claim.design:  # a configuration on its kernel, as a paper that ran ext2 on two kernels had it
            data["setup"] = data["filesystem"].astype(str)
            if "kernel" in data.columns:
                data["setup"] += "-" + data["kernel"].astype(str)
        if "sd" in data.columns and data["sd"].notna().any():
            notes.append("published means with sd only where runs were not printed: the ANOVA needs the runs")
            data = data[data["sd"].isna()]
        subs = []
        extra = [
            c
            for c in ("kernel", "host")
            if c in data.columns and c not in claim.design and not (c == "kernel" and "setup" in claim.design)
        ]
        groups = data.groupby(extra, sort=False) if extra else [((), data)]
        for key, part in groups:
            key = key if isinstance(key, tuple) else (key,)
            label = ", ".join(f"{c}={v}" for c, v in zip(extra, key)) or "all runs"
            try:
                res = factorial_anova(part, "value", claim.design, level=claim.level)
            except UserError as exc:
                notes.append(f"{label}: no ANOVA: {exc.message}")
                continue
            share = {r.term: r.pct_variation for r in res.table}
            share["explained"] = 100.0 - share.get(ERROR_TERM, 0.0)
            sig = {r.term: r.significant for r in res.table}
            checks, bad = [], False
            if claim.larger:
                a, b = claim.larger
                ok = share.get(a, 0) > share.get(b, 0)
                checks.append(f"{a} {share.get(a, 0):.1f}% {'>' if ok else '<='} {b} {share.get(b, 0):.1f}%")
                bad |= not ok
            for term, lim in claim.below.items():
                ok = share.get(term, 0) < lim
                checks.append(f"{term} {share.get(term, 0):.1f}% {'<' if ok else '>='} {lim:g}%")
                bad |= not ok
            for term, (lo, hi) in claim.share_range.items():
                ok = lo <= share.get(term, 0) <= hi
                checks.append(f"{term} {share.get(term, 0):.1f}% {'in' if ok else 'outside'} {lo:g}..{hi:g}%")
                bad |= not ok
            for term in claim.significant:
                ok = bool(sig.get(term))
                checks.append(f"{term} {'significant' if ok else 'not significant'} at {claim.level:.0%} (F-test)")
                bad |= not ok
            subs.append(SubCheck(label, AGAINST if bad else HOLDS, "; ".join(checks)))
        return subs

    # -- the verdict --------------------------------------------------------------------------------
    def _settle(self, claim: Claim, tests: list[PairTest]) -> None:
        """Holm inside the claim, then each pair's status."""
        tested = [t for t in tests if t.descriptive is None]
        for fam in ("p_hold", "p_against", "p_opposite"):
            adj = st.holm([getattr(t, fam) for t in tested])
            for t, p in zip(tested, adj):
                setattr(t, "adj_" + fam, p)
        for t in tests:
            if t.descriptive is not None:
                t.status = t.descriptive
                continue
            t.adj_p = t.adj_p_hold
            if t.adj_p_hold < claim.alpha:
                t.status = HOLDS
            elif t.adj_p_opposite < claim.alpha:
                t.status = OPPOSITE
            elif t.adj_p_against < claim.alpha:
                t.status = AGAINST
            elif t.power is not None and t.power >= claim.power:
                t.status = AGAINST
            else:
                t.status = UNCLEAR

    @staticmethod
    def _cases(tests: list[PairTest]) -> list[SubCheck]:
        by: dict[str, list[PairTest]] = {}
        for t in tests:
            by.setdefault(t.case, []).append(t)
        subs = []
        for case, ts in by.items():
            st_ = [t.status for t in ts]
            out = (
                HOLDS
                if all(s == HOLDS for s in st_)
                else OPPOSITE
                if OPPOSITE in st_
                else AGAINST
                if AGAINST in st_
                else UNCLEAR
            )
            shown = [t for t in ts if (t.status != HOLDS) == (out != HOLDS)] or ts
            subs.append(SubCheck(case, out, "; ".join(t.text() for t in shown)))
        return subs

    def _describe(self, claim: Claim) -> str:
        t = claim.test
        if t == "ordering":
            if claim.factor and claim.direction in ("not_up", "not_down") and claim.margin_pct:
                return (
                    f"one-sided Welch non-{'superiority' if claim.direction == 'not_up' else 'inferiority'} "
                    f"test at a {claim.margin_pct}% margin"
                )
            return (
                f"one-sided Welch t-test, power wanted {claim.power:.0%} at "
                f"{claim.effect_pct or DEFAULT_EFFECT_PCT:g}%" + ("" if claim.effect_pct else " (no size stated)")
            )
        if t == "equivalence":
            return f"TOST (Schuirmann) at +-{claim.margin_pct:g}%"
        if t == "magnitude":
            lo, hi = claim.ratio_range
            return f"ratio of means in [{lo:g}, {hi:g}] (two one-sided tests, delta method on logs)"
        if t == "variation":
            return "Jain's allocation of variation and F-tests"
        return ""

    def check(self, claim: Claim) -> Verdict:
        notes: list = []
        if claim.test == "untestable":
            return Verdict(claim, NOT_TESTABLE, claim.why)
        if claim.test == "equivalence" and claim.margin_pct is None:
            return Verdict(
                claim, INCONCLUSIVE, "no margin_pct written down for this claim: 'the same' needs one", test="TOST"
            )
        tests: list[PairTest] = []
        subs: list[SubCheck] = []
        variation_regime: dict[str, float] = {}
        if claim.test == "magnitude" and claim.numerator:
            tests = self._ratio_tests(claim, notes)
        else:
            df = _pick_metrics(self._select(claim, notes), claim.all_metrics)
            if df.empty:
                if not self.paper and claim.compare in self.df.columns:
                    # a whole tier absent from the run (a filesystem this kernel lacks) leaves nothing to order
                    ran = set(self.df[claim.compare].astype(str))
                    gone = [
                        str(x)
                        for t in claim.tiers
                        if not any(str(y) in ran for y in t)
                        for x in t
                        if str(x) not in ("newest", "oldest")
                    ]
                    if gone:
                        notes.append(f"not run here: {', '.join(gone)}")
                # a filesystem or level absent: not testable here, whatever else the run changed; only the
                # claim's workloads absent (a scale that leaves them out): not testable here too, unless the
                # run changed what the claim is about (then "not comparable here", by _void)
                ran = set(self.df["workload"])
                wl_gone = bool(claim.workloads) and not any(w in ran for w in claim.workloads)
                wl_note = f"not run here: {', '.join(claim.workloads)}"  # what _select noted for them
                levels = not self.paper and any(_ABSENT(n) for n in notes if n != wl_note)
                v = Verdict(
                    claim,
                    NOT_TESTABLE if (levels or (wl_gone and not self.paper)) else INCONCLUSIVE,
                    ("no published numbers for this claim" if self.paper else "no results for this claim in the run")
                    + (f" ({'; '.join(notes)})" if notes else ""),
                    notes=notes,
                    test=self._describe(claim),
                    no_data=True,
                )
                return v if levels else self._void(v)
            if claim.test == "variation":
                subs = self._variation(claim, df, notes)
                variation_regime = self._regime(df)
            elif claim.factor:
                tests = self._factor_tests(claim, df, notes)
            else:
                tests = self._tier_tests(claim, df, notes)
        if tests:
            self._settle(claim, tests)
            subs = self._cases(tests)
        if claim.reading:
            notes.append(f"read as: {claim.reading}")
        desc = self.paper and any(t.descriptive is not None for t in tests)
        if desc:
            notes.append("descriptive: point values without a published spread were compared as they stand")
        if not subs:
            absent = [n for n in notes if _ABSENT(n)]
            if absent:  # what the claim compares is not here: a filesystem, kernel or setting
                return Verdict(
                    claim,
                    INCONCLUSIVE if self.paper else NOT_TESTABLE,
                    "; ".join(absent),
                    notes=notes,
                    test=self._describe(claim),
                    no_data=self.paper,
                )
            return self._void(
                Verdict(
                    claim,
                    INCONCLUSIVE,
                    "too little left to compare"
                    + (f" ({'; '.join(n for n in notes if not n.startswith('read as'))})" if notes else ""),
                    notes=notes,
                    test=self._describe(claim),
                )
            )
        word, k = decide([s.outcome for s in subs], claim.decide)
        n_hold = sum(s.outcome == HOLDS for s in subs)
        reason = f"holds in {n_hold} of {len(subs)} case(s), {k} needed ({claim.decide})"
        others = {o: sum(s.outcome == o for s in subs) for o in (OPPOSITE, AGAINST, UNCLEAR)}
        reason += "".join(f"; {v} {o}" for o, v in others.items() if v)
        test = self._describe(claim)
        if self.paper and tests and all(t.descriptive is not None for t in tests):
            test = f"descriptive: point values compared as they stand (with spreads it would be: {test})"
        v = Verdict(
            claim,
            word,
            reason,
            subs,
            notes,
            tests,
            test,
            desc,
            word,
            regime=_merge_regimes([t.regime for t in tests] + [variation_regime]),
        )
        if not self.paper:
            self._gate(v)
        return v

    def _affects(self, claim: Claim) -> set:
        """What this run's changes that concern the claim alter (their ``affects``)."""
        return {a for c in self.changes if _concerns(c, claim, self.study) for a in c.affects}

    def _void(self, v: Verdict) -> Verdict:
        """A re-run verdict with nothing to test: a claim this run changed the subject of is "not
        comparable here" whatever data it has (B01's disk is gone whether its workload ran or not)."""
        if self.paper or v.outcome not in (INCONCLUSIVE, NOT_TESTABLE):
            return v
        hit = [a for a in v.claim.sensitive_to if a in self._affects(v.claim)]
        if hit:
            v.gates.append(f"this run changed what the claim is about: {', '.join(hit)}")
            v.notes.append(f"on the numbers alone: {v.outcome} ({v.reason})")
            v.outcome = NOT_COMPARABLE
        return v

    def _gate(self, v: Verdict) -> None:
        """The re-run gates: comparability first, then phase length, busy machine, trials for the power."""
        claim, study = v.claim, self.study.study
        affects = self._affects(claim)
        hit = [a for a in claim.sensitive_to if a in affects]
        if affects:
            v.notes.append(
                "this run's changes touching it: "
                + ", ".join(sorted(affects))
                + (f" (sensitive to {', '.join(hit)})" if hit else " (none it is sensitive to)")
            )
        cache = v.regime.get("cache_read_share", -1)
        if "cache_residency" in claim.sensitive_to and cache > study.max_cache_read_share:
            hit.append(f"cache_residency (measured: {cache:.0%} of the reads came from the page cache)")
        if hit:
            v.gates.append(f"this run changed what the claim is about: {', '.join(hit)}")
            v.outcome = NOT_COMPARABLE
            v.notes.append(f"on the numbers alone: {v.data_outcome}")
            return
        shortest, busiest = v.regime.get("phase_s"), v.regime.get("other_cpu_share")
        trials = min((min(t.sa.n, t.sb.n) for t in v.tests if t.descriptive is None), default=None)
        needs = [t.needed for t in v.tests if t.descriptive is None and t.power is not None]
        needed = max(needs) if needs and None not in needs else None
        reasons = gate_reasons(study.min_phase_s, shortest, study.max_other_cpu_share, busiest, trials, needed)
        if None in needs:
            reasons.append("the observed spread is too large for the power wanted at any practical number of trials")
        if v.regime.get("emulated"):  # fsmeter.guest: a guest under TCG measured the emulator
            from fsmeter.guest.kernels import EMULATED_NOTE

            reasons.append(
                f"it rests on cells run in a guest under software emulation ({EMULATED_NOTE}): functional results only"
            )
        if reasons:  # shown on an inconclusive verdict too: they say why the numbers may be noisy
            v.gates = reasons
            if v.outcome != INCONCLUSIVE:
                v.outcome = INCONCLUSIVE
                v.notes.append(f"on the numbers alone: {v.data_outcome}")

    def check_all(self) -> list[Verdict]:
        return [self.check(c) for c in self.study.claims]


def _pick_metrics(df, metrics: Sequence[str]):
    """Rows of the named metrics. A name with '*' matches several phases, whose values then pool as
    samples of one metric (filemark's method: each kept transactions phase is one observation)."""
    import fnmatch

    if not metrics:
        return df
    parts = []
    for m in metrics:
        if "*" in m:
            sel = df[df["metric_key"].map(lambda k, m=m: fnmatch.fnmatchcase(k, m))].copy()
            sel["metric_key"] = m
            sel = _one_per_trial(sel)
        else:
            sel = df[df["metric_key"] == m]
        parts.append(sel)
    return pd.concat(parts) if parts else df.iloc[0:0]


def _one_per_trial(sel):
    """The phases a '*' name matches within one re-run trial, as one observation: their mean value.

    The phases of one trial ran back to back on one filesystem, so they are not independent samples;
    counting each as one (the study's own method, on a single run per cell) would inflate n and the
    tests' degrees of freedom. The trial is the unit: the gates see its shortest phase and its
    busiest regime. Rows without a trial (published means or runs) are left as they are."""
    if sel.empty or "trial" not in sel.columns or sel["trial"].isna().all():
        return sel
    runs, rest = sel[sel["trial"].notna()], sel[sel["trial"].isna()]
    agg = {"value": "mean"}
    agg.update(
        {
            c: f
            for c, f in (("phase_s", "min"), ("other_cpu_share", "max"), ("cache_read_share", "max"))
            if c in runs.columns
        }
    )
    keys = [c for c in runs.columns if c not in agg]
    one = runs.groupby(keys, dropna=False, sort=False).agg(agg).reset_index()[list(sel.columns)]
    return pd.concat([one, rest]) if not rest.empty else one


def _by_version(levels) -> list:
    """Kernel (or other) version strings, oldest first: '4.19.0' < '6.1.0-26-amd64' < '6.12.1'."""
    import re

    def key(v: str):
        return [int(x) if x.isdigit() else x for x in re.split(r"[.\-+~_]", str(v))]

    try:
        return sorted(levels, key=key)
    except TypeError:
        return sorted(levels, key=str)


def study_frame(study: Study, tidy_df, environment=None, phases=None):
    """Kept trials of a study campaign as ClaimChecker wants them: study names for factors and levels.

    Campaign factor columns become the study's factor names with the study's level names
    (scheduler "bfq" -> elevator "cfq"); kernel and host become factors when they vary. With the
    store's ``phases`` table, each row gets its phase's length (``phase_s``) and regime
    (``other_cpu_share``, ``cache_read_share``) for the gates.
    """
    from fsmeter.stats.kept import kept

    df = kept(tidy_df).copy()
    df["metric_key"] = df["phase"] + "." + df["metric"]
    keep = ["workload", "metric_key", "value", "higher_is_better", "filesystem", "trial", "cell_id"]
    if phases is not None and not phases.empty:
        cols = [c for c in ("elapsed_s", "other_cpu_share", "cache_read_share") if c in phases.columns]
        ph = phases[["cell_id", "trial", "phase", *cols]].drop_duplicates(["cell_id", "trial", "phase"])
        df = df.merge(ph.rename(columns={"elapsed_s": "phase_s"}), on=["cell_id", "trial", "phase"], how="left")
        keep += ["phase_s" if c == "elapsed_s" else c for c in cols]
    for f in study.factors:
        if f.campaign and f.campaign in df.columns:
            back = {str(v): k for k, v in f.map.items()}
            df[f.name] = df[f.campaign].map(lambda v: back.get(str(v), str(v)) if not pd.isna(v) else v)
            keep.append(f.name)
    if environment is not None and not environment.empty and "extra" in environment.columns:
        # Cells run in a guest under software emulation (fsmeter.guest): the gates make their claims functional only.
        def _emulated(extra) -> float:
            try:
                g = json.loads(extra).get("guest") if isinstance(extra, str) else None
            except (ValueError, AttributeError):
                g = None
            return 1.0 if isinstance(g, dict) and g.get("emulated") else 0.0

        emu = environment[["cell_id", "extra"]].drop_duplicates("cell_id")
        emu = emu.assign(emulated=emu["extra"].map(_emulated))[["cell_id", "emulated"]]
        if emu["emulated"].any():
            df = df.merge(emu, on="cell_id", how="left")
            keep.append("emulated")
    if environment is not None and not environment.empty:
        env = environment.drop_duplicates("cell_id")[["cell_id", "kernel", "hostname"]]
        # A campaign's own kernel factor (study run --kernel: "host", "6.1") gives way to the release each
        # trial ran under, as with merged runs.
        df = df.drop(columns=[c for c in ("kernel", "hostname") if c in df.columns])
        df = df.merge(env, on="cell_id", how="left")
        for col, name in (("kernel", "kernel"), ("hostname", "host")):
            if df[col].nunique() > 1:
                df[name] = df[col]
                keep.append(name)
    return df[[c for c in keep if c in df.columns]].drop(columns=["cell_id"])
