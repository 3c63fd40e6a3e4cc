"""Test a study's published claims against new results, with fsmeter's own significance rule.

Every comparison is between two samples of kept trials (status ok, not a discarded warm-up)
of one metric. The rule is :func:`fsmeter.stats.compare.compare`'s: a difference counts when
Welch's t-test says p < alpha AND it is at least the practical threshold (10% of the
reference mean by default). Two samples are called *equal* when the confidence interval of
their difference lies inside +-threshold (an equivalence reading in the spirit of the
two-one-sided-tests procedure, Schuirmann 1987: the CI at level 1 - alpha, not 1 - 2 alpha,
so it is the stricter form); when neither is shown, the comparison is *unclear*.

The interval of a difference is Welch's (Satterthwaite df), expressed in % of the reference
mean; that percentage treats the reference mean as exact, which understates the width a
little when the reference sample is small (said here because it is an approximation).
A ratio's interval is the delta-method one on the log scale.

Outcomes per claim: **confirmed** (every part holds), **refuted** (some part is contradicted,
with the measured difference and its CI), **inconclusive** (with the reason). Published
absolute numbers are never compared: the hardware differs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
from scipy import stats as sps

from fsmeter.stats.compare import DEFAULT_ALPHA, DEFAULT_PRACTICAL_PCT
from fsmeter.study.model import Claim, Study

CONFIRMED, REFUTED, INCONCLUSIVE = "confirmed", "refuted", "inconclusive"


@dataclass(frozen=True)
class PairResult:
    """a against b on one metric: status holds | reversed | equal | unclear (for 'a better than b')."""

    a: str
    b: str
    status: str
    diff_pct: float
    ci_pct: tuple
    p_value: float

    def text(self) -> str:
        lo, hi = self.ci_pct
        return (f"{self.a} vs {self.b}: {self.diff_pct:+.1f}% [{lo:+.1f}, {hi:+.1f}] p={self.p_value:.3g}"
                f" -> {self.status}")


@dataclass
class SubCheck:
    context: str
    outcome: str
    detail: str


@dataclass
class Verdict:
    claim: Claim
    outcome: str
    reason: str
    subs: List[SubCheck] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def diff_ci(a: Sequence[float], b: Sequence[float], level: float) -> tuple:
    """Welch CI of mean(a) - mean(b), as % of mean(b): (diff_pct, (lo_pct, hi_pct))."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    mb = float(y.mean())
    d = float(x.mean()) - mb
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    se = math.sqrt(va + vb)
    if se == 0:
        half = 0.0
    else:
        df = (va + vb) ** 2 / ((va ** 2) / (x.size - 1) + (vb ** 2) / (y.size - 1))
        half = float(sps.t.ppf(0.5 + level / 2, df)) * se
    scale = 100.0 / abs(mb) if mb else math.inf
    return d * scale, ((d - half) * scale, (d + half) * scale)


def judge_pair(a_name: str, a: Sequence[float], b_name: str, b: Sequence[float], higher_is_better: bool,
               alpha: float = DEFAULT_ALPHA, practical_pct: float = DEFAULT_PRACTICAL_PCT) -> PairResult:
    """Is a better than b? holds / reversed (b better) / equal / unclear, by fsmeter's rule."""
    from fsmeter.stats.compare import compare

    c = compare(a, b, higher_is_better, alpha, practical_pct)
    diff, (lo, hi) = diff_ci(a, b, 1 - alpha)
    if c.verdict == "faster":
        status = "holds"
    elif c.verdict == "slower":
        status = "reversed"
    elif -practical_pct < lo and hi < practical_pct:
        status = "equal"
    else:
        status = "unclear"
    return PairResult(a_name, b_name, status, diff, (lo, hi), c.p_value)


def ratio_ci(num: Sequence[float], den: Sequence[float], level: float) -> tuple:
    """mean(num) / mean(den) and its delta-method CI on the log scale."""
    x, y = np.asarray(num, float), np.asarray(den, float)
    r = float(x.mean() / y.mean())
    v = x.var(ddof=1) / (x.size * x.mean() ** 2) + y.var(ddof=1) / (y.size * y.mean() ** 2)
    df = max(min(x.size, y.size) - 1, 1)
    half = float(sps.t.ppf(0.5 + level / 2, df)) * math.sqrt(v)
    return r, (r * math.exp(-half), r * math.exp(half))


def _outcome(pairs: Sequence[PairResult], good: Sequence[str], bad: Sequence[str]) -> str:
    """Confirmed when every pair's status is a good one, refuted when any is a bad one, else inconclusive."""
    if all(p.status in good for p in pairs):
        return CONFIRMED
    if any(p.status in bad for p in pairs):
        return REFUTED
    return INCONCLUSIVE


def _combine(subs: List[SubCheck], empty_reason: str) -> tuple:
    if not subs:
        return INCONCLUSIVE, empty_reason
    if any(s.outcome == REFUTED for s in subs):
        n = sum(s.outcome == REFUTED for s in subs)
        return REFUTED, f"contradicted in {n} of {len(subs)} case(s)"
    if all(s.outcome == CONFIRMED for s in subs):
        return CONFIRMED, f"holds in all {len(subs)} case(s)"
    n = sum(s.outcome == CONFIRMED for s in subs)
    return INCONCLUSIVE, f"holds in {n} of {len(subs)} case(s); the others are not significant either way"


class ClaimChecker:
    """Claims of one study against a tidy frame of its kept trials (levels in the study's names).

    ``frame`` columns: workload, metric_key ("phase.metric"), value, higher_is_better,
    filesystem (the study's configuration id), one column per varied study factor, and
    optionally kernel / host when the data come from several machines or boots.
    """

    def __init__(self, study: Study, frame, alpha: float = DEFAULT_ALPHA,
                 practical_pct: float = DEFAULT_PRACTICAL_PCT):
        self.study, self.df = study, frame
        self.alpha, self.practical = alpha, practical_pct
        self.factors = [c for c in frame.columns
                        if c not in ("workload", "metric_key", "value", "higher_is_better", "trial")]

    # -- selection ------------------------------------------------------------------------------
    def _select(self, claim: Claim, notes: list):
        df = self.df
        if claim.workloads:
            df = df[df["workload"].isin(claim.workloads)]
        if claim.configurations:
            missing = [c for c in claim.configurations if c not in set(df["filesystem"])]
            if missing:
                notes.append(f"not run here: {', '.join(missing)}")
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
                notes.append(f"exception {exc}: {', '.join(dropped)} not varied here, so every "
                             f"{', '.join(f'{k}={v}' for k, v in keys.items())} case is left out")
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
            label = ", ".join(f"{v}" if c in ("metric_key", "workload") else f"{c}={v}"
                              for c, v in zip(cols, key) if not (isinstance(v, float) and math.isnan(v)))
            yield label, part

    @staticmethod
    def _samples(part, col: str) -> Dict[str, list]:
        return {str(k): list(g["value"]) for k, g in part.groupby(col, sort=False)}

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
            notes.append(f"not run here: {', '.join(gone)}")
        return tiers

    def _ranking(self, claim: Claim, df, notes: list, equivalence: bool) -> List[SubCheck]:
        col = claim.compare
        if col not in df.columns:
            if col in ("kernel", "host"):
                notes.append(f"needs runs on two {col}s: run the study on each, then `fsmeter merge` the stores")
            return []
        tiers = self._tiers(claim, set(df[col].astype(str)), notes)
        if (not equivalence and len(tiers) < 2) or (equivalence and sum(map(len, tiers)) < 2):
            return []
        subs = []
        for label, part in self._contexts(df, [col]):
            s = self._samples(part, col)
            hib = bool(part["higher_is_better"].iloc[0])
            pairs = []
            if equivalence:
                members = [m for t in tiers for m in t if len(s.get(m, [])) >= 2]
                for i, a in enumerate(members):
                    for b in members[i + 1:]:
                        pairs.append(judge_pair(a, s[a], b, s[b], hib, self.alpha, self.practical))
                good, bad = ("equal",), ("holds", "reversed")
            else:
                for i, upper in enumerate(tiers):
                    for lower in tiers[i + 1:]:
                        for a in upper:
                            for b in lower:
                                if len(s.get(a, [])) >= 2 and len(s.get(b, [])) >= 2:
                                    pairs.append(judge_pair(a, s[a], b, s[b], hib, self.alpha, self.practical))
                good, bad = ("holds",), ("reversed", "equal")
            if not pairs:
                continue
            out = _outcome(pairs, good, bad)
            shown = [p for p in pairs if (p.status != "holds") == (out != CONFIRMED)] or pairs
            subs.append(SubCheck(label, out, "; ".join(p.text() for p in shown)))
        return subs

    def _trend(self, claim: Claim, df, notes: list) -> List[SubCheck]:
        col = claim.factor
        if col not in df.columns:
            notes.append(f"{col} was not varied here")
            return []
        subs = []
        for label, part in self._contexts(df, [col]):
            s = self._samples(part, col)
            hib = bool(part["higher_is_better"].iloc[0])
            for frm, to in claim.pairs:
                a, b = str(to), str(frm)
                if len(s.get(a, [])) < 2 or len(s.get(b, [])) < 2:
                    continue
                p = judge_pair(f"{col}={a}", s[a], f"{col}={b}", s[b], hib, self.alpha, self.practical)
                good = {"up": ("holds",), "down": ("reversed",),
                        "not_up": ("reversed", "equal"), "not_down": ("holds", "equal")}[claim.direction]
                bad = {"up": ("reversed", "equal"), "down": ("holds", "equal"),
                       "not_up": ("holds",), "not_down": ("reversed",)}[claim.direction]
                out = _outcome([p], good, bad)
                subs.append(SubCheck(label, out, p.text()))
        return subs

    def _ratio(self, claim: Claim, notes: list) -> List[SubCheck]:
        num_w, den_w = claim.numerator.get("workload", []), claim.denominator.get("workload", [])
        lo_ok, hi_ok = claim.ratio_range
        subs = []
        df = _pick_metrics(self.df, [claim.metric])
        for nw, dw in zip(num_w, den_w):
            part = df[df["workload"].isin([nw, dw])]
            for label, g in self._contexts(part, ["workload", "metric_key"]):
                num, den = list(g[g["workload"] == nw]["value"]), list(g[g["workload"] == dw]["value"])
                if len(num) < 2 or len(den) < 2:
                    continue
                r, (lo, hi) = ratio_ci(num, den, 1 - self.alpha)
                out = (CONFIRMED if lo_ok <= lo and hi <= hi_ok else
                       REFUTED if hi < lo_ok or lo > hi_ok else INCONCLUSIVE)
                subs.append(SubCheck(f"{nw} / {dw}" + (f", {label}" if label else ""), out,
                                     f"ratio {r:.3g} [{lo:.3g}, {hi:.3g}], claimed {lo_ok:g}..{hi_ok:g}"))
        return subs

    def _variation(self, claim: Claim, df, notes: list) -> List[SubCheck]:
        """Jain's allocation of variation (two-factor design with replications) and its F-tests."""
        from fsmeter.errors import UserError
        from fsmeter.stats.anova import ERROR_TERM, factorial_anova

        data = df.copy()
        data["access_mode"] = data["metric_key"]
        subs = []
        extra = [c for c in ("kernel", "host") if c in data.columns]
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
            subs.append(SubCheck(label, REFUTED if bad else CONFIRMED, "; ".join(checks)))
        return subs

    def check(self, claim: Claim) -> Verdict:
        notes: list = []
        if claim.kind == "untestable":
            return Verdict(claim, INCONCLUSIVE, f"not testable: {claim.why}")
        if claim.kind == "ratio":
            subs = self._ratio(claim, notes)
        else:
            df = _pick_metrics(self._select(claim, notes), claim.all_metrics)
            if df.empty:
                return Verdict(claim, INCONCLUSIVE, "no results for this claim in the run" +
                               (f" ({'; '.join(notes)})" if notes else ""), notes=notes)
            if claim.kind == "trend":
                subs = self._trend(claim, df, notes)
            elif claim.kind == "variation":
                subs = self._variation(claim, df, notes)
            else:
                subs = self._ranking(claim, df, notes, equivalence=claim.kind == "equivalence")
        outcome, reason = _combine(subs, "too little left to compare here" +
                                   (f" ({'; '.join(notes)})" if notes else " (fewer than 2 trials per side)"))
        if claim.reading:
            notes.append(f"read as: {claim.reading}")
        return Verdict(claim, outcome, reason, subs, notes)

    def check_all(self) -> List[Verdict]:
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
        else:
            sel = df[df["metric_key"] == m]
        parts.append(sel)
    import pandas as pd

    return pd.concat(parts) if parts else df.iloc[0:0]


def _by_version(levels) -> list:
    """Kernel (or other) version strings, oldest first: '4.19.0' < '6.1.0-26-amd64' < '6.12.1'."""
    import re

    def key(v: str):
        return [int(x) if x.isdigit() else x for x in re.split(r"[.\-+~_]", str(v))]

    try:
        return sorted(levels, key=key)
    except TypeError:
        return sorted(levels, key=str)


def study_frame(study: Study, tidy_df, environment=None):
    """Kept trials of a study campaign as ClaimChecker wants them: study names for factors and levels.

    Campaign factor columns become the study's factor names with the study's level names
    (scheduler "bfq" -> elevator "cfq"); kernel and host become factors when they vary.
    """
    import pandas as pd

    from fsmeter.stats.kept import kept

    df = kept(tidy_df).copy()
    df["metric_key"] = df["phase"] + "." + df["metric"]
    keep = ["workload", "metric_key", "value", "higher_is_better", "filesystem", "trial", "cell_id"]
    for f in study.factors:
        if f.campaign and f.campaign in df.columns:
            back = {str(v): k for k, v in f.map.items()}
            df[f.name] = df[f.campaign].map(lambda v: back.get(str(v), str(v)) if not pd.isna(v) else v)
            keep.append(f.name)
    if environment is not None and not environment.empty:
        env = environment.drop_duplicates("cell_id")[["cell_id", "kernel", "hostname"]]
        df = df.merge(env, on="cell_id", how="left")
        for col, name in (("kernel", "kernel"), ("hostname", "host")):
            if df[col].nunique() > 1:
                df[name] = df[col]
                keep.append(name)
    return df[[c for c in keep if c in df.columns]].drop(columns=["cell_id"])
