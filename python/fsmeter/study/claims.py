"""Test claims, on a re-run's kept trials, on a paper's own published numbers, or on any campaign.

A claim is tested in each of its *cases* (the cells of the factors it does not fix). In a case its
test compares pairs of levels: every upper member against every lower one for an ordering, every
pair of a tier for an equivalence, the two tiers (or numerator and denominator) for a magnitude.
The tests are in :mod:`fsmeter.study.stattests`: one-sided Welch, TOST at the claim's margin, the
ratio of means in the claimed range (delta method on logs). All the tests of one claim form one
family: their p-values are adjusted by Holm's method (Holm 1979) at the claim's alpha (1 - the
study's level), and the bounds that can exclude a claimed effect are simultaneous (Bonferroni).

What each pair, case and claim then *is* (holds, reversed, not shown, unclear; reproduced, reversed,
not reproduced, inconclusive) is decided by the rules of :mod:`fsmeter.study.verdict`, with the study's
own ``[rules]``: its level, its minimum difference, its interval rule. Power (at ``effect_pct``,
default 10%) and the trials needed are computed for orderings and only explain an inconclusive
verdict: the same data give the same word whatever ``effect_pct`` says.

Where a side has a point value only (a paper that printed one number) or a published range (every
value of the cells lay in it), the comparison is descriptive: the numbers agree with the claim or
not, no test, and the verdict says so.

Re-run verdicts pass gates (:mod:`fsmeter.study.gates`): a claim the run changed the subject of, or
bound by a resource much faster here than on the paper's machine, is *not comparable here*; short
phases, a busy machine, too few trials or a missing measurement make it *inconclusive*. Published
absolute numbers are never compared with a re-run: the hardware differs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from fsmeter.study import edge
from fsmeter.study import gates as gt
from fsmeter.study import stattests as st
from fsmeter.study import verdict as vd
from fsmeter.study.claim_gates import ClaimGating
from fsmeter.study.evidence import PairTest, SubCheck, Verdict
from fsmeter.study.frames import _by_version, _pick_metrics, without_disturbed
from fsmeter.study.model import Claim, Study
from fsmeter.study.pairs import DEFAULT_EFFECT_PCT, PairComparisons, _upper_pct
from fsmeter.study.stattests import Sample
from fsmeter.study.verdict import (
    AGAINST,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    OPPOSITE,
    UNCLEAR,
    decide,
)

#: Columns of a claim frame that are not factors.
_NOT_FACTORS = (
    "workload",
    "metric_key",
    "value",
    "higher_is_better",
    "trial",
    "sd",
    "n",
    "unit",
    "low",
    "high",
    "statistic",
    *gt.REGIME_COLUMNS,
)


#: The note of the rows left out as functional only (ClaimChecker._without_emulated).
EMULATED_OUT = "left out as functional only:"


def _ABSENT(note: str) -> bool:
    """A note saying that something the claim compares did not run here (or was not published)."""
    return (
        "not run here" in note
        or "needs runs on two" in note
        or "was not varied here" in note
        or note.startswith("no published numbers for")
    )


class ClaimChecker(PairComparisons, ClaimGating):
    """Claims of one study (or a claim file) against a tidy frame (levels in the claims' names).

    ``frame`` columns: workload, metric_key ("phase.metric"), value, higher_is_better, filesystem (the
    configuration id the tiers use), one column per varied factor, optionally kernel / host. A row is
    one trial; a row with ``sd`` and ``n`` is a published mean with its spread; a row with ``low`` and
    ``high`` a published range; a lone row without them a point value. Re-run frames carry the
    regime per row (fsmeter.study.gates.REGIME_COLUMNS: phase length, others' CPU, the page-cache
    share of the reads, the storage probe's figures, the CPUs online and the clock) for the gates; a
    missing column is a measurement not made. ``changes`` are the run's (objects with an ``affects``
    list); ``paper`` says the frame holds the paper's own numbers (no gates, paper words).

    ``study`` is a :class:`~fsmeter.study.model.Study` or anything with the same ``rules``,
    ``hardware``, ``workloads``, ``factors``, ``study`` (the gate thresholds), ``machine_of`` and
    ``alpha_of`` (a claim file, :mod:`fsmeter.study.claimfile`).
    """

    def __init__(self, study: Study, frame, changes: Sequence = (), paper: bool = False):
        self.study, self.df = study, frame
        self.paper = paper
        #: the levels of the compared column that ran only in an emulated guest (the claim being checked)
        self._left_out: set[str] = set()
        self.rules = study.rules
        self.wobble = edge.Wobble.of(study.rules)
        #: the edge rule judges re-runs of a study; a claim file (`fsmeter claim check`) opts in by giving its
        #: [rules] a between_run_pct (a user's campaign has no calibrated between-run figure of its own)
        self.edge_rule = not paper and (
            isinstance(study, Study) or getattr(study.rules, "between_run_pct", None) is not None
        )
        self.changes = [c for c in changes if getattr(c, "affects", None)]
        self.factors = [c for c in frame.columns if c not in _NOT_FACTORS]
        #: the storage and CPU figures of the whole run (one probe per campaign): the resource gates of a
        #: claim with no rows of its own (its workload left out) still see them
        self._machine_regime = {
            k: v for k, v in self._regime(frame).items() if k.startswith("storage_") or k in ("cpu_mhz", "cpus_online")
        }
        if "statistic" in frame.columns:  # best-of figures serve only the claims about them
            self._best = frame[frame["statistic"] == "best"]
            self.df = frame[frame["statistic"] != "best"]
        else:
            self._best = frame.iloc[0:0]

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
        return df if self.paper else self._without_emulated(claim, df, notes)

    def _without_emulated(self, claim: Claim, df, notes: list):
        """The rows of a guest under software emulation whose phase was not bound by a disk model are
        functional results only (fsmeter.study.frames): left out, as a configuration this kernel cannot
        make is, and said. A claim about the others is judged on them (adding guests never takes a
        verdict away); a claim about those configurations has too little left."""
        self._left_out = set()
        if "emulated" not in df.columns:
            return df
        emu = (pd.to_numeric(df["emulated"], errors="coerce").fillna(0) > 0).to_numpy()
        if not emu.any():
            return df
        col = claim.compare if claim.compare in df.columns else "filesystem"
        # the levels of what the claim compares that ran only emulated (a tier of them is gone, and said)
        self._left_out = set(df.loc[emu, col].astype(str)) - set(df.loc[~emu, col].astype(str))
        who = sorted(set(df.loc[emu, "filesystem"].astype(str))) if "filesystem" in df.columns else []
        notes.append(
            f"{EMULATED_OUT} {', '.join(who) or 'some rows'}, run in a guest under software emulation, in "
            "phases a disk model did not bind"
        )
        return df[~emu]

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
                if not (isinstance(v, float) and math.isnan(v)) and v != ""
            )
            yield label, part

    # -- samples ----------------------------------------------------------------------------------
    @staticmethod
    def _sample(g) -> Sample | None:
        if "low" in g.columns and len(g) == 1 and not pd.isna(g["low"].iloc[0]) and not pd.isna(g["high"].iloc[0]):
            return Sample.span(float(g["low"].iloc[0]), float(g["high"].iloc[0]))
        vals = [float(v) for v in g["value"] if v is not None and not (isinstance(v, float) and math.isnan(v))]
        if not vals:
            return None
        if "sd" in g.columns and len(g) == 1 and not pd.isna(g["sd"].iloc[0]):
            n = int(g["n"].iloc[0]) if "n" in g.columns and not pd.isna(g["n"].iloc[0]) else 0
            if n >= 2:
                return Sample(vals[0], float(g["sd"].iloc[0]), n)
        return Sample.of(vals)

    def _samples(self, part, col: str) -> dict[str, tuple]:
        out = {}
        for k, g in part.groupby(col, sort=False):
            s = self._sample(g)
            if s is not None:
                out[str(k)] = (s, self._regime(g))
        return out

    # -- claim kinds ------------------------------------------------------------------------------
    def _tiers(self, claim: Claim, present: set, notes: list) -> list:
        tiers, gone = [], []
        # "newest" / "oldest" among every level that ran, those left out as emulated included: a tier
        # whose kernel ran only emulated is gone, not quietly the next kernel
        ran = set(present) | self._left_out
        named = dict(zip(("newest", "oldest"), _by_version(ran)[::-1][:1] + _by_version(ran)[:1]))
        for tier in claim.tiers:
            tier = [named.get(str(x), x) for x in tier]
            kept = [str(x) for x in tier if str(x) in present]
            gone += [str(x) for x in tier if str(x) not in present]
            if kept:
                tiers.append(kept)
        # levels that ran, in a guest under emulation only (left out by _without_emulated): said there
        emulated = [g for g in gone if g in self._left_out]
        gone = [g for g in gone if g not in emulated]
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

    def _best_of_tests(self, claim: Claim, notes: list) -> list[PairTest]:
        """best_of: the upper tier at `where` against every cell of the lower tiers. Each lower cell (a
        member at one combination of the factors' levels) becomes a level of its own, "ext3 (elevator=noop,
        threads=5)"; the factors then leave the cases, so that every cell meets the upper one. On a
        paper's numbers its 'best of all runs' figures take part (the best of a member's cells is above
        the upper cell only if every cell is)."""
        col = claim.compare
        upper = {str(x) for x in claim.tiers[0]}
        lower = {str(x) for t in claim.tiers[1:] for x in t}
        saved = self.df
        self.df = pd.concat([saved, self._best], ignore_index=True) if not self._best.empty else saved
        try:
            top = _pick_metrics(self._select(claim, notes), claim.all_metrics)
            every = _pick_metrics(self._select(claim.model_copy(update={"where": {}}), []), claim.all_metrics)
        finally:
            self.df = saved
        if col not in top.columns:
            notes.append(f"{col} was not varied here")
            return []
        top = top[top[col].astype(str).isin(upper)]
        low = every[every[col].astype(str).isin(lower)].copy()
        # the factors `where` names (and any the upper cell does not have) make the lower cells; the others
        # (a kernel, a host) still split the cases
        facs = [
            c
            for c in self.factors
            if c != col and c in low.columns and (c in claim.where or c not in top.columns or top[c].isna().all())
        ]
        if facs and not low.empty:
            varied = [c for c in facs if low[c].nunique(dropna=True) > 0]
            low[col] = [
                f"{m} ({', '.join(f'{c}={r[c]}' for c in varied if not pd.isna(r[c]))})"
                if any(not pd.isna(r[c]) for c in varied)
                else str(m)
                for m, (_, r) in zip(low[col], low.iterrows())
            ]
        both = pd.concat([top, low], ignore_index=True).drop(columns=facs, errors="ignore")
        cells = sorted({str(x) for x in low[col]})
        tiers = [[x for x in claim.tiers[0] if str(x) in set(top[col].astype(str))], cells]
        if not tiers[0] or not cells:
            notes.append(
                "no result for the upper tier at " + ", ".join(f"{k}={v}" for k, v in claim.where.items())
                if not tiers[0]
                else "no result for the lower tiers"
            )
            return []
        return self._tier_tests(claim.model_copy(update={"tiers": tiers, "where": {}}), both, notes)

    def _threshold_tests(self, claim: Claim, df) -> list[PairTest]:
        """Every cell's mean against a constant (at_least / at_most): a one-sample one-sided t-test, as
        Welch's test against a side with no spread (its df is then n - 1)."""
        up = claim.at_least is not None
        bound = claim.at_least if up else claim.at_most
        out = []
        for label, part in self._contexts(df, []):
            s = self._sample(part)
            if s is None:
                continue
            const = Sample(float(bound), 0.0, 2)
            name = f"{'at least' if up else 'at most'} {bound:g}"
            out.append(
                self._pair(claim, label, "the mean", name, (s, self._regime(part)), (const, {}), up, "threshold")
            )
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
        """Holm inside the claim, the simultaneous bounds and the power, then each pair's status by the
        decision rules (fsmeter.study.verdict)."""
        alpha = self.study.alpha_of(claim)
        tested = [t for t in tests if t.descriptive is None]
        for fam in ("p_hold", "p_against", "p_opposite"):
            adj = st.holm([getattr(t, fam) for t in tested])
            for t, p in zip(tested, adj):
                setattr(t, "adj_" + fam, p)
        m = max(1, len(tested))
        size, min_diff = self._size(claim), self.rules.min_difference_pct
        effect_pct = claim.effect_pct or DEFAULT_EFFECT_PCT
        for t in tests:
            if t.descriptive is not None:
                t.status = t.descriptive
                continue
            t.adj_p = t.adj_p_hold
            if t.mode in ("better", "threshold"):
                t.upper = _upper_pct(t.sa, t.sb, t.hib, 1 - alpha / m)
                t.power = st.welch_power(t.sa, t.sb, effect_pct, alpha / m)
                t.needed = st.trials_needed(t.sa, t.sb, effect_pct, alpha / m, claim.power)
                thr = t.mode == "threshold"  # a bound has no opposite claim: beyond it the claim is not shown
                t.status = vd.ordering_pair(
                    holds_sig=t.adj_p_hold < alpha,
                    opposite_sig=t.adj_p_opposite < alpha and not thr,
                    estimate_pct=t.estimate,
                    upper_pct=t.upper,
                    size_pct=0.0 if thr else size,
                    min_difference_pct=0.0 if thr else min_diff,
                    apart=t.apart,
                )
            elif t.mode in ("not_better", "not_worse"):
                t.status = vd.margin_pair(holds_sig=t.adj_p_hold < alpha, beyond_sig=t.adj_p_opposite < alpha)
            elif t.mode == "same":
                t.status = vd.equivalence_pair(holds_sig=t.adj_p_hold < alpha, beyond_sig=t.adj_p_against < alpha)
            else:
                r = t.estimate or 1.0
                t.status = vd.magnitude_pair(
                    holds_sig=t.adj_p_hold < alpha,
                    outside_sig=t.adj_p_against < alpha,
                    opposite_sig=t.adj_p_opposite < alpha,
                    opposite_pct=abs(r - 1.0) * 100.0,
                    min_difference_pct=min_diff,
                )
            if self.edge_rule:  # a re-run's decisive status must survive a re-run (fsmeter.study.edge)
                edge.apply(
                    t,
                    size_pct=size,
                    min_difference_pct=min_diff,
                    margin_pct=claim.margin_pct,
                    between_pct=self.wobble.between_pct,
                )

    @staticmethod
    def _cases(tests: list[PairTest]) -> list[SubCheck]:
        by: dict[str, list[PairTest]] = {}
        for t in tests:
            by.setdefault(t.case, []).append(t)
        subs = []
        for case, ts in by.items():
            out = vd.case_outcome([t.status for t in ts])
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
            size = self._size(claim)
            rules = self.rules
            return (
                f"one-sided Welch t-test at alpha {self.study.alpha_of(claim):g} (Holm)"
                + (
                    f", claimed size {size:g}%"
                    + (" (stated)" if claim.size_pct is not None else " (the rules' minimum difference)")
                    if size
                    else ""
                )
                + (f", {rules.level:.0%} intervals must not overlap" if rules.intervals == "no_overlap" else "")
                + (", the upper tier's cell against every lower cell" if claim.best_of else "")
            )
        if t == "equivalence":
            return f"TOST (Schuirmann) at +-{claim.margin_pct:g}%"
        if t == "magnitude":
            lo, hi = claim.ratio_range
            return f"ratio of means in [{lo:g}, {hi:g}] (two one-sided tests, delta method on logs)"
        if t == "variation":
            return "Jain's allocation of variation and F-tests"
        if t == "threshold":
            bound = claim.at_least if claim.at_least is not None else claim.at_most
            word = "at least" if claim.at_least is not None else "at most"
            return f"one-sample one-sided t-test per case: the mean {word} {bound:g} (Holm)"
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
        elif claim.best_of:
            tests = self._best_of_tests(claim, notes)
        else:
            df = _pick_metrics(self._select(claim, notes), claim.all_metrics)
            # an analysis of variance needs every cell's trials: there a late trial keeps the gate
            if not self.paper and claim.test != "variation":
                df, late = without_disturbed(df, vd.MIN_TRIALS, ["filesystem", *self.factors])
                if late:
                    notes.append(
                        f"{late} trial(s) whose disk-model replies left late (disturbed) left out; each of their "
                        f"cells kept at least {vd.MIN_TRIALS} on-time trials"
                    )
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
            elif claim.test == "threshold":
                tests = self._threshold_tests(claim, df)
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
            notes.append(
                "descriptive: point values without a published spread (or published ranges) were compared as they stand"
            )
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
            named = list(claim.workloads)
            for side in (claim.numerator, claim.denominator):
                wl = side.get("workload") if isinstance(side, dict) else None
                named += [str(w) for w in (wl if isinstance(wl, list) else [wl] if wl else [])]
            ran = set(self.df["workload"]) if "workload" in self.df.columns else set()
            gone = list(dict.fromkeys(w for w in named if w not in ran)) if not self.paper else []
            if gone:  # a comparison across workloads, some of which this run (its scale) left out
                return Verdict(
                    claim,
                    NOT_TESTABLE,
                    f"not run here: {', '.join(gone)}, which the claim compares",
                    notes=notes,
                    test=self._describe(claim),
                )
            said = [n for n in notes if not n.startswith("read as")]
            return self._void(
                Verdict(
                    claim,
                    INCONCLUSIVE,
                    "too little left to compare" + (f" ({'; '.join(said)})" if said else ""),
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
            test = f"descriptive: point values or ranges compared as they stand (with spreads it would be: {test})"
        numbers = word  # the word the decision rules give before the edge rule withdrew any status
        if any(t.edge for t in tests):
            by: dict[str, list[str]] = {}
            for t in tests:
                by.setdefault(t.case, []).append(t.decided or t.status)
            numbers, _ = decide([vd.case_outcome(x) for x in by.values()], claim.decide)
            if numbers != word:
                notes.append(f"on the numbers alone: {numbers}, decided on the edge (the edge rule makes it {word})")
        v = Verdict(
            claim,
            word,
            reason,
            subs,
            notes,
            tests,
            test,
            desc,
            numbers,
            regime=gt.merge([t.regime for t in tests] + [variation_regime]),
        )
        if self.edge_rule:
            v.wobble = self.wobble.text()
            v.edge_note = self._edge_note(tests)
        if not self.paper:
            self._gate(v)
        if v.outcome == INCONCLUSIVE:
            v.power_note = self._power_note(claim, tests)
        return v

    def _edge_note(self, tests: list[PairTest]) -> str:
        """The pairs whose decisive status the edge rule withdrew, and the trials that would settle them."""
        on_edge = [t for t in tests if t.edge]
        if not on_edge:
            return ""
        needs = [t.edge_needed for t in on_edge]
        n = min(min(t.sa.n, t.sb.n) for t in on_edge)
        need = (
            "no number of trials settles "
            + ("it" if len(on_edge) == 1 else "some of them")
            + f": their estimate lies within the between-run wobble ({self.wobble.between_pct:g} points) of the boundary"
            if None in needs
            else f"about {max(needs)} trials a side (now {n}) would settle {'it' if len(on_edge) == 1 else 'them'}"
        )
        words = ", ".join(sorted({t.decided for t in on_edge if t.decided}))
        return (
            f"{len(on_edge)} comparison(s) read {words} on the numbers but within the run-to-run wobble of the "
            f"boundary (edge rule: sqrt(2) x SE and the {self.wobble.text()}); {need}"
        )

    @staticmethod
    def _power_note(claim: Claim, tests: list[PairTest]) -> str:
        """Why nothing was shown, for an inconclusive ordering: the power at the powered effect and the
        trials a decision would need (the power never decides the word)."""
        undecided = [t for t in tests if t.power is not None and t.status != HOLDS]
        if not undecided:
            return ""
        effect = claim.effect_pct or DEFAULT_EFFECT_PCT
        weakest = min(undecided, key=lambda t: t.power)
        needs = [t.needed for t in undecided]
        n = min(t.sa.n for t in undecided)
        need = (
            "more than 1000 trials a side would be needed"
            if None in needs
            else f"about {max(needs)} trials a side would reach {claim.power:.0%}"
        )
        return (
            f"power at a {effect:g}% difference{'' if claim.effect_pct else ' (effect_pct not set: 10%)'}: "
            f"{weakest.power:.2f} with {n} trials a side ({weakest.case + ': ' if weakest.case else ''}"
            f"{weakest.a} vs {weakest.b}); {need}"
        )

    def check_all(self) -> list[Verdict]:
        return [self.check(c) for c in self.study.claims]
