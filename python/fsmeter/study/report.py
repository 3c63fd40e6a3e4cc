"""The study report: the study's own tables and figures from the new run, beside the published
numbers, what the run changed from the design, and a verdict per published claim.

One self-contained HTML file (plotly.js inlined), drawn with the same page machinery as the
campaign report, so headless Chromium can check it the same way (``#fsm-status``).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from rich.table import Table

import fsmeter
from fsmeter.errors import UserError
from fsmeter.report.figures import clean as _clean
from fsmeter.report.html import TEMPLATES
from fsmeter.study.evidence import Verdict
from fsmeter.study.model import Study
from fsmeter.study.sections import SECTIONS, fmt, generic_section, relative_section
from fsmeter.study.verdict import (
    INCONCLUSIVE,
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    REPRODUCED,
    REVERSED,
    counts,
)
from fsmeter.study.view import StudyView, load_run


def build_study_view(study: Study, db: Path, campaign: str | None = None) -> StudyView:
    data, changes, frame, verdicts, study = load_run(study, db, campaign)
    from fsmeter.study.paper import check_paper

    paper = {r.claim.id: r for r in check_paper(study)}
    view = StudyView(study, Path(db), data["campaigns"], frame, data, changes, verdicts, paper)
    SECTIONS.get(study.slug, generic_section)(view)
    relative_section(view)
    return view


STYLE = {
    REPRODUCED: "green",
    REVERSED: "red",
    NOT_REPRODUCED: "red",
    INCONCLUSIVE: "yellow",
    NOT_COMPARABLE: "cyan",
    NOT_TESTABLE: "dim",
}


def headline(view: StudyView) -> str:
    """Counts per verdict word, each cause apart, and how many claims the paper's own data contradict."""
    c = counts(v.outcome for v in view.verdicts)
    line = ", ".join(f"{n} {w}" for w, n in c.items())
    contra = [i for i, r in view.paper.items() if r.paper_verdict == "contradicted"]
    if contra:
        line += f"; contradicted by the paper's own data: {', '.join(contra)}"
    return line


def rules_text(study: Study) -> str:
    """The study's own decision rules, in a line (shown in every report)."""
    r = study.rules
    parts = [f"tests at the {r.level:.0%} level"]
    parts.append(
        f"a difference counts from {r.min_difference_pct:g}%"
        if r.min_difference_pct
        else "no minimum difference stated"
    )
    if r.intervals == "no_overlap":
        parts.append(f"and only when the two {r.level:.0%} intervals do not overlap")
    if r.run_s:
        parts.append(f"runs of {r.run_s:g} s" + (f" after {r.warmup_s:g} s of warm-up" if r.warmup_s else ""))
    if r.settle_s:
        parts.append(f"throughput settles after about {r.settle_s:g} s (shorter phases are gated)")
    return "; ".join(parts) + (f" ({r.source})" if r.source else "")


def says(v: Verdict) -> str:
    """The claim's words, marked when they are a reading of the paper's tables rather than its own
    conclusion, and with what bound the paper's result."""
    out = v.claim.says
    if v.claim.basis == "read_off":
        out += " [a reading of the paper's tables: the paper states no such conclusion]"
    if v.claim.bound_by:
        out += f"\n(bound by {', '.join(b.replace('_', ' ') for b in v.claim.bound_by)} in the paper)"
    return out


def run_word(view: StudyView, v: Verdict) -> str:
    """The re-run word, marked when the paper's own data contradict the claim."""
    p = view.paper.get(v.claim.id)
    if p is not None and p.paper_verdict == "contradicted" and v.outcome == REPRODUCED:
        return f"{v.outcome}, but contradicted by its own data"
    return v.outcome


def verdicts_json(view: StudyView) -> list:
    """One record per claim: the re-run word, the paper's, why, the gates, the notes and the evidence."""
    out = []
    for v in view.verdicts:
        p = view.paper.get(v.claim.id)
        out.append(
            {
                "study": view.study.slug,
                "claim": v.claim.id,
                "verdict": v.outcome,
                "shown_as": run_word(view, v),
                "numbers_alone": v.data_outcome or v.outcome,
                "paper_verdict": p.paper_verdict if p else None,
                "test": v.test,
                "why": v.full_reason(),
                "gates": v.gates,
                "notes": v.notes,
                "evidence": v.evidence(),
                "tests": [t.as_json() for t in v.tests],
                "cases": [{"case": c.context, "outcome": c.outcome} for c in v.subs],
                "bound_by": list(v.claim.bound_by),
                "basis": v.claim.basis,
                "regime": v.regime,
            }
        )
    return out


EVIDENCE_COLUMNS = (
    "case",
    "a",
    "mean a",
    "sd a",
    "n a",
    "b",
    "mean b",
    "sd b",
    "n b",
    "effect",
    "interval",
    "p",
    "adjusted p",
    "outcome",
)


def _p(x) -> str:
    return "-" if x is None else f"{x:.2g}" if x >= 1e-4 else "<1e-4"


def evidence_rows(v: Verdict) -> list[list[str]]:
    """A claim's comparisons as table rows (EVIDENCE_COLUMNS): each side's mean, sd and n, the effect,
    its interval, p and Holm-adjusted p of the claim's own test, and the outcome (marked when the edge
    rule withdrew a decisive one)."""
    rows = []
    for t in v.tests:
        if t.unit == "ratio":
            eff = "-" if t.estimate is None else f"{t.estimate:.3g}x"
            iv = f"{t.interval[0]:.3g} .. {t.interval[1]:.3g}" if t.interval else "-"
        else:
            eff = "-" if t.estimate is None else f"{t.estimate:+.1f}%"
            iv = f"{t.interval[0]:+.1f} .. {t.interval[1]:+.1f}" if t.interval else "-"
        if t.interval and t.level:
            iv += f" ({t.level:.0%})"
        tested = t.descriptive is None
        sb = t.sb if t.mode != "threshold" else None
        rows.append(
            [
                t.case or "-",
                t.a,
                fmt(t.sa.mean),
                fmt(t.sa.sd),
                str(t.sa.n),
                t.b,
                fmt(sb.mean) if sb else "-",
                fmt(sb.sd) if sb else "-",
                str(sb.n) if sb else "-",
                eff,
                iv,
                _p(t.p_hold) if tested else "descriptive",
                _p(t.adj_p_hold) if tested else "-",
                t.status + (f" ({t.decided} on the edge)" if t.edge else ""),
            ]
        )
    return rows


def short_reason(v: Verdict) -> str:
    """The verdict's reason in a line: the case count, the edge and the first gate (details in -v)."""
    out = v.reason
    if v.edge_note:
        out += "; " + v.edge_note.split("; ")[-1]
    if v.gates:
        out += f"; gate: {v.gates[0]}" + (f" (+{len(v.gates) - 1} more)" if len(v.gates) > 1 else "")
    return out


def summary_table(view: StudyView) -> Table:
    """The compact table the terminal shows first: one line per claim, its word and why in short."""
    t = Table(title=f"{view.study.slug}: {headline(view)}", caption=f"the study's rules: {rules_text(view.study)}")
    for col in ("claim", "verdict", "paper", "why (fsmeter study report -v for the evidence)"):
        t.add_column(col, overflow="fold")
    for v in view.verdicts:
        p = view.paper.get(v.claim.id)
        t.add_row(
            v.claim.id,
            f"[{STYLE.get(v.outcome, 'white')}]{run_word(view, v)}[/]",
            p.paper_verdict if p else "-",
            short_reason(v)[:240],
        )
    return t


def evidence_table(view: StudyView, v: Verdict) -> Table | None:
    """One claim's evidence as a terminal table (-v)."""
    rows = evidence_rows(v)
    if not rows:
        return None
    t = Table(title=f"{v.claim.id}: evidence per comparison ({v.test})")
    for col in EVIDENCE_COLUMNS:
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(*r)
    return t


def verdict_table(view: StudyView) -> Table:
    t = Table(
        title=f"{view.study.slug}: the study's claims tested on this run "
        "(published absolute numbers are not compared: the hardware differs)",
        caption=f"{headline(view)}\nthe study's rules: {rules_text(view.study)}",
    )
    for col in ("claim", "the study says", "verdict", "on the paper's data", "test and evidence"):
        t.add_column(col, overflow="fold")
    for v in view.verdicts:
        why = (f"{v.test}: " if v.test else "") + v.full_reason()
        why += "".join(f"\n- gate: {g}" for g in v.gates)
        why += "".join(f"\n- {n}" for n in v.notes)
        why += "".join(f"\n{e}" for e in v.evidence(4))[:700]
        p = view.paper.get(v.claim.id)
        t.add_row(
            v.claim.id,
            says(v),
            f"[{STYLE.get(v.outcome, 'white')}]{run_word(view, v)}[/]",
            p.paper_verdict if p else "-",
            why,
        )
    return t


# -- per-study sections -------------------------------------------------------------------------------
# -- HTML -----------------------------------------------------------------------------------------------
def render_study_html(view: StudyView) -> str:
    import jinja2
    from markupsafe import Markup
    from plotly.offline import get_plotlyjs

    from fsmeter.study.edge import Wobble
    from fsmeter.study.forest import COLOURS, forest_svg

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env_rows = view.data["environment"]
    machine = {}
    if not env_rows.empty:
        for col in ("hostname", "kernel", "cpu_model", "mem_bytes", "cpus_online"):
            if col in env_rows.columns:
                machine[col] = ", ".join(sorted({str(v) for v in env_rows[col].dropna()}))
    word_counts = counts(v.outcome for v in view.verdicts)
    ctx = {
        "study": view.study.study,
        "db": str(view.db),
        "machine": machine,
        "campaigns": view.campaigns.to_dict("records"),
        "changes": view.changes,
        "verdicts": view.verdicts,
        "counts": word_counts,
        "headline": headline(view),
        "paper": view.paper,
        "run_words": {v.claim.id: run_word(view, v) for v in view.verdicts},
        "rules_text": rules_text(view.study),
        "wobble": Wobble.of(view.study.rules).text(),
        "forest": {
            v.claim.id: Markup(forest_svg(v, view.paper[v.claim.id].verdict if v.claim.id in view.paper else None))
            for v in view.verdicts
        },
        "evidence_columns": EVIDENCE_COLUMNS,
        "evidence": {v.claim.id: evidence_rows(v) for v in view.verdicts},
        "short_reason": {v.claim.id: short_reason(v) for v in view.verdicts},
        "colours": COLOURS,
        "tables": view.tables,
        "plotly_js": get_plotlyjs(),
        "figures_json": json.dumps(_clean(view.figures), separators=(",", ":")).replace("</", "<\\/"),
        "figures": view.figures,
        "n_figures": len(view.figures),
        "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "fsmeter_version": fsmeter.__version__,
    }
    return env.get_template("study.html.j2").render(**ctx)


def write_study_report(view: StudyView, out: Path) -> None:
    out = Path(out)
    if not out.parent.is_dir():
        raise UserError(f"-o {out}: the folder {out.parent} does not exist")
    out.write_text(render_study_html(view), encoding="utf-8")
