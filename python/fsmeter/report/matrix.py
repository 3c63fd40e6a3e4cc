"""The comparison matrix: workloads down, configurations (filesystems) across, one figure per cell.

Each cell is the mean of the kept trials in the workload's natural unit (MiB/s for sequential
transfers, IOPS for random ones, tx/s, files/s, MB/s for dbench) with its Student-t CI half-width
in % of the mean. A cell whose half-width is above ``unresolved_pct`` (or that has fewer than two
usable trials, or failed) is "unresolved": it is shown with the reason in a footnote and takes no
part in the ranking. The resolved cells of a row are ranked with fsmeter's own rule
(:func:`fsmeter.stats.ranking.rank`: Welch's t-test at alpha AND the practical threshold): the best
is marked, and so is every configuration in the best's group (not significantly different = tied).
Trials far from their siblings (:mod:`fsmeter.stats.outliers`) are listed in the footnotes with
their score and what the trial record says about them; they stay in every figure.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from fsmeter.report.data import CampaignView, Config, MetricView, WorkloadView, fmt_num
from fsmeter.stats.kept import is_kept
from fsmeter.stats.outliers import THRESHOLD as OUTLIER_THRESHOLD
from fsmeter.stats.outliers import find_outliers
from fsmeter.stats.ranking import rank

#: A cell whose CI half-width exceeds this % of its mean is too loose to rank (the compare suite's bar).
DEFAULT_UNRESOLVED_PCT = 25.0
#: Appended to a cell that has an outlier trial (explained in the notes).
OUTLIER_MARK = "†"
#: A trial whose machine had at least this many more CPUs busy with other work than its siblings'
#: median is reported as disturbed by other load.
BUSY_CPUS_NOTABLE = 0.5
STOP_TEXT = {
    "time-cap": "the cell's time cap stopped it",
    "trial-cap": "the cell's trial cap stopped it",
    "fixed-n": "the fixed number of trials was reached",
    "target-met": "its CI target was met",
}


@dataclass
class OutlierNote:
    label: str
    trial: int
    value: float
    score: float
    median: float
    n: int
    explanation: str


@dataclass
class MatrixCell:
    label: str
    mean: float | None
    half_width_pct: float | None
    n: int
    mark: str  # best | tied | "" (ranked, worse) | unresolved
    reason: str = ""  # why unresolved
    footnotes: list = field(default_factory=list)  # footnote numbers
    outliers: list = field(default_factory=list)  # [OutlierNote]


@dataclass
class MatrixRow:
    workload: str
    metric: str  # phase.name of the metric shown
    unit: str  # display unit (IOPS for random access)
    higher_is_better: bool
    cells: dict  # label -> MatrixCell
    verdict: str
    #: The verdict in whole sentences, on the same metric, unit and judgement as the row (the HTML report's).
    sentence: str = ""


@dataclass
class Matrix:
    columns: list  # configuration labels, in matrix order
    rows: list  # [MatrixRow]
    footnotes: list  # [(number, text)]
    level: float
    alpha: float
    practical_pct: float
    unresolved_pct: float
    #: Set when other processes kept the machine busy during the measured phases (see machine_load).
    load_note: str = ""

    @property
    def outliers(self) -> list:
        return [o for r in self.rows for c in r.cells.values() for o in c.outliers]

    def to_dict(self) -> dict:
        def cell(c: MatrixCell) -> dict:
            return {
                "label": c.label,
                "mean": c.mean,
                "half_width_pct": c.half_width_pct,
                "n": c.n,
                "mark": c.mark,
                "reason": c.reason,
                "footnotes": c.footnotes,
                "text": cell_text(c),
            }

        return {
            "columns": self.columns,
            "level": self.level,
            "alpha": self.alpha,
            "practical_pct": self.practical_pct,
            "unresolved_pct": self.unresolved_pct,
            "rows": [
                {
                    "workload": r.workload,
                    "metric": r.metric,
                    "unit": r.unit,
                    "verdict": r.verdict,
                    "sentence": r.sentence,
                    "cells": [cell(r.cells[lab]) if lab in r.cells else None for lab in self.columns],
                }
                for r in self.rows
            ],
            "footnotes": [{"n": n, "text": t} for n, t in self.footnotes],
            "load_note": self.load_note,
            "outliers": [o.__dict__ for o in self.outliers],
        }


def fmt_short(v: float | None) -> str:
    """At most 5 characters, 3 significant digits: 0.123, 85.3, 512, 1,234, 12.3k, 123k, 1.23M."""
    if v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v))):
        return "-"
    a = abs(v)
    if a == 0:
        return "0"
    if a < 1000:
        decimals = max(0, 2 - int(math.floor(math.log10(a))))
        s = f"{v:.{decimals}f}"
        return s if float(s) < 1000 else f"{v:,.0f}"
    if a < 10_000:
        return f"{v:,.0f}"
    for div, suffix in ((1e3, "k"), (1e6, "M"), (1e9, "G")):
        x = v / div
        if abs(x) < 999.5:
            return f"{x:.{max(0, 2 - int(math.floor(math.log10(abs(x)))))}f}{suffix}"
    return f"{v:.2e}"


def cell_text(c: MatrixCell) -> str:
    """At most 13 characters ("★ 12.3k ±24%†"), so five filesystems fit in 100 columns. † marks a cell with an
    outlier trial; the notes under the matrix say which trial and why, and why a cell is unresolved."""
    dagger = OUTLIER_MARK if c.outliers else ""
    if c.mark == "unresolved":
        return f"unresolved{dagger}"
    mark = {"best": "★ ", "tied": "= "}.get(c.mark, "")
    hw = "" if c.half_width_pct is None else f" ±{c.half_width_pct:.0f}%"
    return f"{mark}{fmt_short(c.mean)}{hw}{dagger}"


def _job_of(view: CampaignView, w: WorkloadView) -> dict | None:
    env = view.frames.get("environment")
    if env is None or not len(env) or "extra" not in env.columns:
        return None
    ids = {c.cell_id for c in w.headline.configs}
    for _, r in env[env["cell_id"].isin(ids)].iterrows():
        try:
            job = (json.loads(r["extra"]) or {}).get("job")
        except (TypeError, ValueError):
            continue
        if job:
            return job
    return None


def natural_metric(view: CampaignView, w: WorkloadView) -> tuple:
    """(MetricView, display unit): MiB/s for an access workload whose every request is sequential,
    IOPS for any other access workload, else the family's headline (tx/s, files/s, MB/s...)."""
    head = w.headline
    if w.family != "access":
        return head, head.unit
    job = _job_of(view, w) or {}
    entries = (job.get("workload") or {}).get("entries") or []
    if entries and all(float(e.get("random_pct", 0)) == 0 for e in entries):
        mib = next((m for m in w.metrics if m.phase == head.phase and m.unit == "MiB/s"), None)
        if mib is not None:
            return mib, "MiB/s"
    return head, "IOPS" if head.unit == "ops/s" else head.unit


def _trial_cpu(view: CampaignView, cell_id: int, phase: str) -> dict:
    """trial number -> CPUs busy with work other than fsmeter's own process during the measured phase."""
    from fsmeter.store import open_store

    out = {}
    with open_store(view.db, create=False) as store:
        rows = store.conn.execute(
            "SELECT t.number, p.report, e.cpus_online FROM phases p JOIN trials t ON t.id = p.trial_id "
            "LEFT JOIN environment e ON e.trial_id = t.id WHERE t.cell_id = ? AND p.key = ?",
            (cell_id, phase),
        ).fetchall()
    for r in rows:
        try:
            cpu = (json.loads(r["report"]) or {}).get("cpu") or {}
            busy = (cpu["sys_user_pct"] + cpu["sys_system_pct"]) / 100.0 * float(r["cpus_online"])
            out[int(r["number"])] = max(0.0, busy - cpu["process_pct"] / 100.0)
            out["cpus"] = float(r["cpus_online"])
        except (KeyError, TypeError, ValueError):
            continue
    return out


def machine_load(view: CampaignView) -> tuple:
    """(median CPUs kept busy by other work, CPUs online) over the measured phases of the ok trials, or
    (None, None). Other work = the machine's user + system share minus fsmeter's own process; kernel
    threads working for fsmeter (the loop device's) count as other work, so it is an upper bound."""
    from fsmeter.store import open_store

    busy, cpus = [], None
    with open_store(view.db, create=False) as store:
        rows = store.conn.execute(
            "SELECT p.report, e.cpus_online FROM phases p JOIN trials t ON t.id = p.trial_id JOIN cells c "
            "ON c.id = t.cell_id LEFT JOIN environment e ON e.trial_id = t.id WHERE c.campaign_id = ? AND "
            "p.measured = 1 AND t.status = 'ok'",
            (int(view.campaign["id"]),),
        ).fetchall()
    for r in rows:
        try:
            cpu = (json.loads(r["report"]) or {}).get("cpu") or {}
            n = float(r["cpus_online"])
            busy.append(
                max(0.0, (cpu["sys_user_pct"] + cpu["sys_system_pct"]) / 100.0 * n - cpu["process_pct"] / 100.0)
            )
            cpus = n
        except (KeyError, TypeError, ValueError):
            continue
    if not busy:
        return None, None
    busy.sort()
    mid = len(busy) // 2
    return (busy[mid] if len(busy) % 2 else (busy[mid - 1] + busy[mid]) / 2), cpus


def _explain(view: CampaignView, c: Config, m: MetricView, trial: int, numbers: list) -> str:
    """What the trial record says about an outlier: other load on the machine, or its place in the cell."""
    why = []
    cpu = _trial_cpu(view, c.cell_id, m.phase)
    if trial in cpu:
        others = [cpu[n] for n in numbers if n != trial and n in cpu]
        if others:
            med = (
                sorted(others)[len(others) // 2]
                if len(others) % 2
                else sum(sorted(others)[len(others) // 2 - 1 : len(others) // 2 + 1]) / 2
            )
            if cpu[trial] - med >= BUSY_CPUS_NOTABLE:
                why.append(
                    f"other processes kept {cpu[trial]:.1f} CPUs busy during it against {med:.1f} in its "
                    "siblings' median: the machine was loaded"
                )
            elif med - cpu[trial] >= BUSY_CPUS_NOTABLE:
                why.append(
                    f"the machine was quieter during it ({cpu[trial]:.1f} CPUs busy with other work, "
                    f"{med:.1f} in its siblings' median)"
                )
            elif min(cpu[trial], med) >= cpu.get("cpus", math.inf) - BUSY_CPUS_NOTABLE:
                why.append(
                    f"other processes kept the machine's {cpu['cpus']:g} CPUs saturated during it and its "
                    "siblings, so how much CPU fsmeter got varied from trial to trial"
                )
    if trial == min(numbers):
        why.append("it was the cell's first trial")
    if not why:
        why.append("the trial record shows no cause (other load, first trial); rerun the cell to see whether it recurs")
    return "; ".join(why)


def _verdict(row_cells: dict, ranking: list, higher_is_better: bool) -> str:
    unresolved = [lab for lab, c in row_cells.items() if c.mark == "unresolved"]
    tail = f"; unresolved: {', '.join(unresolved)}" if unresolved else ""
    if not ranking:
        return "nothing resolved" + tail.replace("; unresolved:", ":")
    if len(ranking) == 1:
        return f"only {ranking[0].name} resolved" + tail
    best = ranking[0]
    tied = [e.name for e in ranking if e.group == 1]
    worse = [e for e in ranking if e.group != 1]

    def join(names: list) -> str:
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

    if len(tied) == 1:
        text = f"{best.name} best"
    elif not worse and len(tied) > 2:
        text = f"all {len(tied)} tie"
    else:
        text = f"{join(tied)} tie"
    parts = []
    for e in worse:
        if best.mean == 0:
            continue
        pct = (
            100.0 * (best.mean - e.mean) / abs(best.mean)
            if higher_is_better
            else 100.0 * (e.mean - best.mean) / abs(best.mean)
        )
        parts.append(f"{e.name} {pct:.0f}% " + ("slower" if higher_is_better else "worse"))
    if parts:
        text += "; " + ", ".join(parts)
    return text + tail


def _sentence(workload: str, m: MetricView, unit: str, cells: dict, ranking: list, view: CampaignView) -> str:
    """The row's verdict in words: the row's metric and unit, its best and tied cells, its unresolved ones.
    Same rule as the marks (fsmeter.stats.ranking.rank over the resolved cells), so text and matrix agree."""
    what = f"{m.key} ({unit}, {'higher' if m.higher_is_better else 'lower'} is better)"
    unresolved = [c for c in cells.values() if c.mark == "unresolved"]
    tail = (
        "Unresolved, so not ranked: " + "; ".join(f"{c.label} ({c.reason})" for c in unresolved) + ". "
        if unresolved
        else ""
    )
    if not ranking:
        return f"{workload}: no configuration is resolved on {what}, so nothing can be claimed. {tail}".rstrip()

    def ci(name: str) -> str:
        c = m.config(name)
        return f"{fmt_num(c.ci.mean)} ± {fmt_num(c.ci.half_width)} {unit}" if c.ci is not None else "-"

    best = ranking[0]
    if len(ranking) == 1:
        return (
            f"{workload}: only {best.name} is resolved, at {ci(best.name)} on {what}: nothing to compare it "
            f"with. {tail}"
        ).rstrip()

    def diff(e) -> str:
        return f"{e.name} ({100.0 * (e.mean - best.mean) / abs(best.mean):+.1f}%)" if best.mean else e.name

    tied = [diff(e) for e in ranking[1:] if e.group == 1]
    worse = [diff(e) for e in ranking[1:] if e.group != 1]
    ns = sorted({len(m.config(e.name).values) for e in ranking})
    trials = f"{ns[0]}" if len(ns) == 1 else f"{ns[0]} to {ns[-1]}"
    text = f"{workload}: best is {best.name} at {ci(best.name)} on {what}. "
    if tied:
        text += "Tied with the best: " + ", ".join(tied) + ". "
    if worse:
        text += (
            ("Significantly worse: " if tied else "Every other resolved configuration is significantly worse: ")
            + ", ".join(worse)
            + ". "
        )
    text += tail
    return text + (
        f"Based on {view.level:.0%} confidence intervals, Welch t-tests at alpha = {view.alpha:g} and a "
        f"practical threshold of {view.practical_pct:g}% (smaller differences do not count), with "
        f"{trials} trials per ranked configuration."
    )


def build_matrix(view: CampaignView, unresolved_pct: float = DEFAULT_UNRESOLVED_PCT) -> Matrix:
    """The matrix of a campaign view (see the module docstring for every rule)."""
    columns: list = []
    rows: list = []
    footnotes: list = []
    cells_frame = view.frames["cells"].set_index("cell_id") if len(view.frames["cells"]) else None

    def note(text: str) -> int:
        footnotes.append((len(footnotes) + 1, text))
        return len(footnotes)

    for w in view.workloads:
        m, unit = natural_metric(view, w)
        cells: dict = {}
        for c in m.configs:
            if c.label not in columns:
                columns.append(c.label)
            ci = c.ci
            hw = ci.half_width_pct if ci is not None and not math.isnan(ci.half_width_pct) else None
            mc = MatrixCell(c.label, c.mean if c.values else None, hw, len(c.values), "")
            stop = None
            if cells_frame is not None and c.cell_id in cells_frame.index:
                stop = cells_frame.loc[c.cell_id, "stop_reason"]
            how = STOP_TEXT.get(stop or "", "")
            if c.label in w.emulated:  # fsmeter.guest: software emulation measures the emulator
                from fsmeter.guest.kernels import EMULATED_NOTE

                mc.mark, mc.reason = "unresolved", f"{EMULATED_NOTE} (a guest under software emulation, TCG)"
            elif c.status == "failed" or (not c.values and c.cause):
                mc.mark, mc.reason = "unresolved", f"{c.status}: {c.cause or 'no cause recorded'}"
            elif len(c.values) < 2:
                mc.mark = "unresolved"
                mc.reason = f"{len(c.values)} usable trial{'s' if len(c.values) != 1 else ''}: a CI needs 2" + (
                    f" ({c.status})" if c.status != "done" else ""
                )
            elif hw is None or hw > unresolved_pct:
                mc.mark = "unresolved"
                mc.reason = (
                    f"{fmt_short(mc.mean)} {unit} ±{hw:.0f}% after {len(c.values)} trials, wider than the "
                    f"±{unresolved_pct:g}% a ranking needs" + (f"; {how}" if how else "")
                )
            cells[c.label] = mc
        resolved = {c.label: c.values for c in m.configs if cells[c.label].mark != "unresolved"}
        ranking = rank(resolved, m.higher_is_better, view.alpha, view.practical_pct)
        for e in ranking:
            cells[e.name].mark = "best" if e.rank == 1 else ("tied" if e.group == 1 else "")
        for c in m.configs:
            mc = cells[c.label]
            if mc.mark == "unresolved":
                mc.footnotes.append(note(f"{c.label} / {w.workload}: unresolved: {mc.reason}."))
            kept = [t for t in c.trials if is_kept(t[2], t[3], t[1])]
            numbers = [t[0] for t in kept]
            for o in find_outliers([t[1] for t in kept]):
                trial = numbers[o.index]
                on = OutlierNote(
                    c.label, trial, o.value, o.score, o.median, len(kept), _explain(view, c, m, trial, numbers)
                )
                mc.outliers.append(on)
                mc.footnotes.append(
                    note(
                        f"{c.label} / {w.workload}: trial {trial} is an outlier: {fmt_short(o.value)} {unit} against a "
                        f"median of {fmt_short(o.median)} over {len(kept)} trials (modified z-score {o.score:+.1f}, "
                        f"|z| > {OUTLIER_THRESHOLD:g}); kept in the mean and CI; {on.explanation}."
                    )
                )
        rows.append(
            MatrixRow(
                w.workload,
                m.key,
                unit,
                m.higher_is_better,
                cells,
                _verdict(cells, ranking, m.higher_is_better),
                _sentence(w.workload, m, unit, cells, ranking, view),
            )
        )
    mx = Matrix(columns, rows, footnotes, view.level, view.alpha, view.practical_pct, unresolved_pct)
    other, cpus = machine_load(view)
    if other is not None and other >= BUSY_CPUS_NOTABLE:
        mx.load_note = (
            f"the machine was busy: other processes kept a median of {other:.1f} of its {cpus:g} CPUs busy "
            "during the measured phases, so the figures include that contention and vary with it; "
            "rerun on a quiet machine before quoting them"
        )
    return mx


def matrix_table(mx: Matrix):
    """The matrix as a rich Table: no cell wraps; the verdicts and footnotes go below (print_matrix)."""
    from rich import box
    from rich.table import Table

    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    t.add_column("workload", no_wrap=True)
    t.add_column("unit", no_wrap=True)
    for lab in mx.columns:
        t.add_column(lab, justify="right", no_wrap=True)
    style = {"best": "bold green", "tied": "green", "unresolved": "yellow", "": ""}
    for r in mx.rows:
        vals = []
        for lab in mx.columns:
            c = r.cells.get(lab)
            if c is None:
                vals.append("")
                continue
            s = style[c.mark]
            vals.append(f"[{s}]{cell_text(c)}[/]" if s else cell_text(c))
        t.add_row(r.workload, r.unit, *vals)
    return t


def legend(mx: Matrix) -> str:
    return (
        f"mean ±{mx.level:.0%} CI half-width (% of the mean).  ★ best   = tied with the best (Welch t-test "
        f"at α={mx.alpha:g}, or less than {mx.practical_pct:g}% apart)   unresolved: CI wider than "
        f"±{mx.unresolved_pct:g}%, too few trials, or failed   † an outlier trial (kept; see the notes)"
    )


def print_matrix(mx: Matrix, console) -> None:
    """Matrix, legend, one verdict line per workload, then the numbered notes."""
    console.print(matrix_table(mx))
    console.print(legend(mx), style="dim", highlight=False)
    width = max((len(r.workload) for r in mx.rows), default=0)
    for r in mx.rows:
        console.print(f"[bold]{r.workload:<{width}}[/]  {r.verdict}", highlight=False)
    if mx.load_note:
        console.print(f"[yellow]note:[/] {mx.load_note}", highlight=False)
    for _, text in mx.footnotes:
        console.print(f"{'†' if 'is an outlier' in text else '•'} {text}", highlight=False)


__all__ = [
    "DEFAULT_UNRESOLVED_PCT",
    "Matrix",
    "MatrixCell",
    "MatrixRow",
    "OutlierNote",
    "build_matrix",
    "cell_text",
    "fmt_short",
    "legend",
    "machine_load",
    "matrix_table",
    "natural_metric",
    "print_matrix",
]
