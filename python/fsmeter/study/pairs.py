"""One comparison of a claim: two levels of one case, as the claim's kind compares them (one level
better than the other, within a margin of it, their ratio in a range), tested, or read descriptively
where a side is a point value or a published range. A part of :class:`~fsmeter.study.claims.ClaimChecker`
(a mixin: it uses the checker's study, rules and edge rule)."""

from __future__ import annotations

import math

from fsmeter.study import gates as gt
from fsmeter.study import stattests as st
from fsmeter.study import verdict as vd
from fsmeter.study.evidence import PairTest
from fsmeter.study.model import Claim
from fsmeter.study.stattests import Sample
from fsmeter.study.verdict import AGAINST, HOLDS, OPPOSITE, UNCLEAR

#: Ordering claims are powered at this difference (% of the mean of the member claimed worse) unless
#: their ``effect_pct`` says otherwise; the power only explains an inconclusive verdict.
DEFAULT_EFFECT_PCT = 10.0


def _better_diff(a: Sample, b: Sample, hib: bool) -> float:
    return (a.mean - b.mean) if hib else (b.mean - a.mean)


def _bounds_pct(a: Sample, b: Sample, hib: bool) -> tuple[float, float]:
    """The least and the most favourable difference in the claimed direction (% of b's value) that two
    point values or published ranges allow: equal for two point values."""
    alo, ahi = (a.low, a.high) if a.ranged else (a.mean, a.mean)
    blo, bhi = (b.low, b.high) if b.ranged else (b.mean, b.mean)

    def pct(x: float, y: float) -> float:
        return 100.0 * x / abs(y) if y else math.copysign(math.inf, x)

    if hib:
        return pct(alo - bhi, bhi), pct(ahi - blo, blo)
    return pct(blo - ahi, blo), pct(bhi - alo, bhi)


def _upper_pct(a: Sample, b: Sample, hib: bool, level: float) -> float:
    """The one-sided upper bound at ``level`` of the difference in the claimed direction, % of b's mean."""
    return st.diff_upper_pct(a, b, level) if hib else -st.diff_lower_pct(a, b, level)


class PairComparisons:
    """The pair tests of :class:`~fsmeter.study.claims.ClaimChecker`."""

    def _pair(self, claim: Claim, case: str, a: str, b: str, A: tuple, B: tuple, hib: bool, mode: str) -> PairTest:
        """mode: 'better' (a better than b), 'not_better' / 'not_worse' (within margin_pct),
        'same' (TOST at margin_pct), 'ratio' (mean(a)/mean(b) in ratio_range). The p-values here are
        raw; Holm, the simultaneous bounds and the statuses come in _settle."""
        (sa, ra), (sb, rb) = A, B
        regime = gt.merge([ra, rb])
        alpha = self.study.alpha_of(claim)
        level = 1 - 2 * alpha
        t = PairTest(case, a, b, sa, sb, "", mode=mode, hib=hib, regime=regime, level=level)
        point = sa.point or sb.point
        if point and not self.paper:  # a re-run with one kept trial on a side: nothing to test with
            bd = _better_diff(sa, sb, hib)
            pct = 100.0 * bd / abs(sb.mean) if sb.mean else math.inf
            t.effect = f"{pct:+.1f}%, one kept trial on a side: no spread to test with"
            t.descriptive = UNCLEAR
            return t
        if mode == "ratio":
            return self._ratio_pair(claim, t, sa, sb, point)
        if mode == "same":
            return self._same_pair(claim, t, sa, sb, hib, point)
        size = self._size(claim)
        min_diff = self.rules.min_difference_pct
        margin = claim.margin_pct
        if mode == "threshold":
            size, min_diff = 0.0, 0.0
        if point:  # point values or ranges: the least and the most favourable difference they allow
            worst, best = _bounds_pct(sa, sb, hib)
            t.unit, t.estimate = "%", (worst + best) / 2
            t.interval = (worst, best) if worst != best else None
            shown = f"{worst:+.1f}%" if worst == best else f"{worst:+.1f}% to {best:+.1f}%"
            if mode in ("better", "threshold"):
                t.claimed = (size, math.inf)
                t.effect = f"{shown} better" + (f" (claimed at least {size:g}%)" if size else "")
                t.descriptive = vd.descriptive_ordering(worst, best, size, min_diff)
                if mode == "threshold" and t.descriptive == OPPOSITE:
                    t.descriptive = AGAINST
            elif mode == "not_better":
                t.claimed = (-math.inf, margin)
                t.effect = f"{shown} better (margin {margin:g}%)"
                t.descriptive = HOLDS if best < margin else OPPOSITE if worst > margin else UNCLEAR
            else:
                t.claimed = (-margin, math.inf)
                t.effect = f"{shown} better (margin {margin:g}%)"
                t.descriptive = HOLDS if worst > -margin else OPPOSITE if best < -margin else UNCLEAR
            return t
        d, lo_, hi_ = st.diff_interval(sa, sb, level)
        sign = 1 if hib else -1
        w = st.welch(sa, sb)
        t.se = 100.0 * w.se / abs(sb.mean) if sb.mean else None
        lo_b, hi_b = sorted((sign * lo_, sign * hi_))
        t.unit, t.estimate, t.interval = "%", sign * d, (lo_b, hi_b)
        t.effect = f"{sign * d:+.1f}% better [{lo_b:+.1f}, {hi_b:+.1f}] ({level:.0%})"
        if mode in ("better", "threshold"):
            t.claimed = (size, math.inf)
            if size:
                t.effect += f", claimed at least {size:g}%"
            t.p_hold = st.one_sided_p(sa, sb, a_larger=hib)
            t.p_opposite = st.one_sided_p(sa, sb, a_larger=not hib)
            if self.rules.intervals == "no_overlap" and mode == "better":
                t.apart = st.intervals_apart(sa, sb, self.rules.level)
                if not t.apart:
                    t.effect += f", the two {self.rules.level:.0%} intervals overlap"
            return t
        bd = _better_diff(sa, sb, hib)
        m = margin / 100.0 * abs(sb.mean)
        t.claimed = (-math.inf, margin) if mode == "not_better" else (-margin, math.inf)
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

    def _size(self, claim: Claim) -> float:
        """The claimed size s of an ordering: the size the words state, else the study's minimum difference."""
        return claim.size_pct if claim.size_pct is not None else self.rules.min_difference_pct

    def _ratio_pair(self, claim: Claim, t: PairTest, sa: Sample, sb: Sample, point: bool) -> PairTest:
        lo, hi = claim.ratio_range
        claim_side = 1 if lo >= 1 else (-1 if hi <= 1 else 0)
        t.unit, t.claimed = "ratio", (lo, hi)
        if (sa.mean <= 0 or sb.mean <= 0) or (sa.ranged and sa.low <= 0) or (sb.ranged and sb.low <= 0):
            t.effect = f"means {sa.mean:.4g} and {sb.mean:.4g}: a ratio needs positive means"
            t.descriptive = UNCLEAR
            return t
        min_diff = self.rules.min_difference_pct
        if point:
            rmin = (sa.low if sa.ranged else sa.mean) / (sb.high if sb.ranged else sb.mean)
            rmax = (sa.high if sa.ranged else sa.mean) / (sb.low if sb.ranged else sb.mean)
            t.estimate = sa.mean / sb.mean
            t.interval = (rmin, rmax) if rmin != rmax else None
            shown = f"{rmin:.3g}" if rmin == rmax else f"{rmin:.3g} to {rmax:.3g}"
            t.effect = f"ratio {shown}, claimed {lo:g}..{hi:g}"
            other = (rmax < 1 and (1 - rmax) * 100 >= min_diff) if claim_side > 0 else False
            other |= (rmin > 1 and (rmin - 1) * 100 >= min_diff) if claim_side < 0 else False
            t.descriptive = (
                HOLDS
                if lo <= rmin and rmax <= hi
                else OPPOSITE
                if other
                else AGAINST
                if rmax < lo or rmin > hi
                else UNCLEAR
            )
            return t
        r, rlo, rhi = st.ratio_interval(sa, sb, t.level)
        t.estimate, t.interval = r, (rlo, rhi)
        t.se = 100.0 * st.log_ratio(sa, sb).se
        t.effect = f"ratio {r:.3g} [{rlo:.3g}, {rhi:.3g}] ({t.level:.0%}), claimed {lo:g}..{hi:g}"
        t.p_hold = st.ratio_in_range_p(sa, sb, lo, hi)
        t.p_against = st.ratio_outside_p(sa, sb, lo, hi)
        if claim_side:
            t.p_opposite = st.one_sided_p(sa, sb, a_larger=claim_side < 0)
        return t

    def _same_pair(self, claim: Claim, t: PairTest, sa: Sample, sb: Sample, hib: bool, point: bool) -> PairTest:
        margin = claim.margin_pct
        t.unit, t.claimed = "%", (-margin, margin)
        if point:
            diffs = [
                100.0 * (x - y) / abs(y)
                for x in ((sa.low, sa.high) if sa.ranged else (sa.mean,))
                for y in ((sb.low, sb.high) if sb.ranged else (sb.mean,))
                if y
            ]
            overlap = (sa.low if sa.ranged else sa.mean) <= (sb.high if sb.ranged else sb.mean) and (
                sb.low if sb.ranged else sb.mean
            ) <= (sa.high if sa.ranged else sa.mean)
            most = max(abs(x) for x in diffs)
            least = 0.0 if overlap else min(abs(x) for x in diffs)
            t.estimate = 100.0 * (sa.mean - sb.mean) / abs(sb.mean) if sb.mean else math.inf
            t.effect = (
                f"{t.estimate:+.1f}% (margin {margin:g}%)"
                if most == least
                else f"differ by {least:.1f}% to {most:.1f}% (margin {margin:g}%)"
            )
            t.descriptive = HOLDS if most < margin else AGAINST if least >= margin else UNCLEAR
            return t
        d, lo_, hi_ = st.diff_interval(sa, sb, t.level)
        t.estimate, t.interval = d, (lo_, hi_)
        t.se = 100.0 * st.welch(sa, sb).se / abs(sb.mean) if sb.mean else None
        t.effect = f"{d:+.1f}% [{lo_:+.1f}, {hi_:+.1f}] ({t.level:.0%}), margin +-{margin:g}%"
        t.p_hold = st.tost_p(sa, sb, margin)
        t.p_against = st.beyond_margin_p(sa, sb, margin)
        return t
