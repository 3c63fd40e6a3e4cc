"""A forest plot per claim, as inline SVG: one row per comparison (a case, a pair of configurations or
levels), the re-run's effect with its interval, the claimed region shaded, the paper's own effect from
its published numbers as a second marker, and the comparison's outcome beside it.

Effects share one axis per claim: % better in the claimed direction (% of the mean of the member
claimed worse) for orderings and margins, % difference for "the same", the ratio of means on a log
axis for magnitudes. The SVG carries its own scale (``data-scale``, ``data-lo``, ``data-hi``,
``data-x0``, ``data-x1``) and every mark its value (``data-value``, ``data-lo``, ``data-hi``), so a
reader (or a test) can map positions back to effects.
"""

from __future__ import annotations

import math
from html import escape

#: The outcome colours (a pair's status and the claim's word share them).
COLOURS = {
    "holds": "#2e7d32",
    "reversed": "#c62828",
    "not shown": "#d84315",
    "unclear": "#8d6e00",
    "reproduced": "#2e7d32",
    "not reproduced": "#d84315",
    "inconclusive": "#8d6e00",
    "not comparable here": "#00838f",
    "not testable here": "#757575",
}
WIDTH, LABEL_W, WORD_W, ROW_H, TOP, BOTTOM = 860, 300, 150, 24, 26, 54
X0, X1 = LABEL_W, WIDTH - WORD_W


def axis_title(tests) -> str:
    t = tests[0]
    if t.unit == "ratio":
        return f"ratio of means ({t.a} / {t.b}), log scale"
    if t.mode == "same":
        return "% difference (a vs b)"
    if t.mode == "threshold":
        return "% above the bound"
    return "% better in the claimed direction (of the mean of the member claimed worse)"


class Axis:
    """Effects to x positions: linear in %, logarithmic for ratios."""

    def __init__(self, values: list[float], log: bool):
        self.log = log
        vals = [v for v in values if v is not None and math.isfinite(v) and (v > 0 or not log)]
        ref = 1.0 if log else 0.0
        vals.append(ref)
        f = (lambda v: math.log10(v)) if log else (lambda v: v)
        lo, hi = min(map(f, vals)), max(map(f, vals))
        pad = (hi - lo) * 0.08 or (0.05 if log else 1.0)
        self.flo, self.fhi = lo - pad, hi + pad
        self.lo = 10**self.flo if log else self.flo
        self.hi = 10**self.fhi if log else self.fhi

    def f(self, v: float) -> float:
        if self.log:
            return math.log10(v) if v > 0 else -math.inf
        return v

    def x(self, v: float) -> float:
        """The x position of effect v, clipped to the plot."""
        fv = self.f(v)
        if fv == math.inf:
            return X1
        if fv == -math.inf:
            return X0
        return min(X1, max(X0, X0 + (fv - self.flo) / (self.fhi - self.flo) * (X1 - X0)))

    def ticks(self) -> list[float]:
        if self.log:
            out = [
                m * 10**e
                for e in range(math.floor(self.flo), math.ceil(self.fhi) + 1)
                for m in (1, 2, 5)
                if self.flo <= math.log10(m * 10**e) <= self.fhi
            ]
            return out if len(out) >= 2 else [self.lo, 1.0, self.hi]
        span = self.fhi - self.flo
        step = 10 ** math.floor(math.log10(span / 5)) if span > 0 else 1.0
        for m in (1, 2, 5, 10):
            if span / (step * m) <= 7:
                step *= m
                break
        first = math.ceil(self.flo / step) * step
        return [first + i * step for i in range(int((self.fhi - first) / step) + 1)]

    def label(self, v: float) -> str:
        return f"{v:.3g}" if self.log else f"{v:+.0f}%" if v else "0"


def _paper_effects(paper_verdict) -> dict:
    """The paper's own effect per comparison: (case, a, b) and, where unique, (a, b)."""
    out: dict = {}
    if paper_verdict is None:
        return out
    pairs: dict = {}
    for t in paper_verdict.tests:
        if t.estimate is None or not math.isfinite(t.estimate):
            continue
        out[(t.case, t.a, t.b)] = t.estimate
        pairs.setdefault((t.a, t.b), []).append(t.estimate)
    for k, v in pairs.items():
        if len(v) == 1:
            out[k] = v[0]
    return out


def row_label(t) -> str:
    return f"{t.a} vs {t.b}{' · ' + t.case if t.case else ''}"


def _short(text: str, n: int = 50) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def forest_svg(verdict, paper_verdict=None, anchor: str = "") -> str:
    """The forest plot of a claim's re-run comparisons (empty when it has none with an effect)."""
    tests = [t for t in verdict.tests if t.estimate is not None and math.isfinite(t.estimate)]
    if not tests:
        return ""
    paper = _paper_effects(paper_verdict)
    log = tests[0].unit == "ratio"
    values = []
    for t in tests:
        values.append(t.estimate)
        values += list(t.interval or ())
        values += [c for c in (t.claimed or ()) if math.isfinite(c)]
        p = paper.get((t.case, t.a, t.b), paper.get((t.a, t.b)))
        if p is not None:
            values.append(p)
    ax = Axis(values, log)
    height = TOP + ROW_H * len(tests) + BOTTOM
    word = verdict.outcome
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="forest" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" data-claim="{escape(verdict.claim.id)}" '
        f'data-scale="{"log" if log else "linear"}" data-lo="{ax.lo:.6g}" data-hi="{ax.hi:.6g}" '
        f'data-x0="{X0}" data-x1="{X1}" font-family="sans-serif" font-size="11">',
        f"<title>{escape(verdict.claim.id)}: {escape(word)}</title>",
        f'<text x="4" y="16" font-weight="bold">{escape(verdict.claim.id)}</text>',
        f'<text class="claim-word" x="{X1 + 8}" y="16" font-weight="bold" '
        f'fill="{COLOURS.get(word, "#333")}">{escape(word)}</text>',
    ]
    for i, t in enumerate(tests):
        y0 = TOP + i * ROW_H
        yc = y0 + ROW_H / 2
        if t.claimed:
            lo, hi = t.claimed
            xa, xb = ax.x(lo), ax.x(hi)
            out.append(
                f'<rect class="claimed" x="{xa:.2f}" y="{y0 + 1}" width="{max(0.0, xb - xa):.2f}" '
                f'height="{ROW_H - 2}" fill="#1565c0" fill-opacity="0.12" '
                f'data-lo="{lo:.6g}" data-hi="{hi:.6g}"><title>claimed: {_region(t)}</title></rect>'
            )
        label = row_label(t)
        out.append(f'<text x="4" y="{yc + 4:.1f}"><title>{escape(label)}</title>{escape(_short(label))}</text>')
        colour = COLOURS.get(t.status, "#333")
        if t.interval:
            lo, hi = t.interval
            out.append(
                f'<line class="interval" x1="{ax.x(lo):.2f}" x2="{ax.x(hi):.2f}" y1="{yc:.1f}" y2="{yc:.1f}" '
                f'stroke="{colour}" stroke-width="2" data-lo="{lo:.6g}" data-hi="{hi:.6g}"/>'
            )
        xe = ax.x(t.estimate)
        out.append(
            f'<circle class="estimate" cx="{xe:.2f}" cy="{yc:.1f}" r="4" fill="{colour}" '
            f'data-value="{t.estimate:.6g}"><title>this run: {escape(t.effect)}</title></circle>'
        )
        p = paper.get((t.case, t.a, t.b), paper.get((t.a, t.b)))
        if p is not None:
            xp = ax.x(p)
            out.append(
                f'<path class="paper" d="M{xp:.2f},{yc - 6:.1f} L{xp + 5:.2f},{yc:.1f} L{xp:.2f},{yc + 6:.1f} '
                f'L{xp - 5:.2f},{yc:.1f} Z" fill="none" stroke="#000" data-value="{p:.6g}">'
                f"<title>the paper's own numbers: {p:.4g}</title></path>"
            )
        status = t.status + (" (edge)" if t.edge else "")
        out.append(
            f'<text class="word" x="{X1 + 8}" y="{yc + 4:.1f}" fill="{colour}">'
            f"{escape(status)}{'<title>' + escape(t.edge) + '</title>' if t.edge else ''}</text>"
        )
    ybot = TOP + ROW_H * len(tests)
    ref = ax.x(1.0 if log else 0.0)
    out.append(
        f'<line class="zero" x1="{ref:.2f}" x2="{ref:.2f}" y1="{TOP}" y2="{ybot}" stroke="#555" stroke-dasharray="3,3"/>'
    )
    out.append(f'<line x1="{X0}" x2="{X1}" y1="{ybot}" y2="{ybot}" stroke="#555"/>')
    for v in ax.ticks():
        x = ax.x(v)
        out.append(f'<line x1="{x:.2f}" x2="{x:.2f}" y1="{ybot}" y2="{ybot + 4}" stroke="#555"/>')
        out.append(f'<text class="tick" x="{x:.2f}" y="{ybot + 16}" text-anchor="middle">{ax.label(v)}</text>')
    out.append(f'<text class="axis-title" x="{X0}" y="{ybot + 30}" fill="#555">{escape(axis_title(tests))}</text>')
    out.append(
        f'<text x="4" y="{ybot + 46}" fill="#555">● this run, {_level(tests)} interval · ◇ the paper\'s own '
        "numbers · shaded: what the claim says</text>"
    )
    out.append("</svg>")
    return "\n".join(out)


def _level(tests) -> str:
    lv = next((t.level for t in tests if t.level), None)
    return f"{lv:.0%}" if lv else "its"


def _region(t) -> str:
    lo, hi = t.claimed
    unit = "" if t.unit == "ratio" else "%"
    if math.isinf(hi):
        return f"at least {lo:g}{unit}"
    if math.isinf(lo):
        return f"below {hi:g}{unit}"
    return f"{lo:g}{unit} to {hi:g}{unit}"
