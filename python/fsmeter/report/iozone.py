"""iozone grids: iozone's own text output (the per-cell table and the -R "Excel" reports) and the
HTML charts (heatmaps of file size x record size, and throughput against file size with one line per
record size, the chart of the iozone studies).

A grid is a mapping column -> {(file size bytes, record size bytes): value}, built from a `fsmeter run`
result (one run) or from the store (the mean over a configuration's kept trials).
"""

from __future__ import annotations

import json
import math
from typing import Any

from fsmeter.families.iozone import COLUMNS, REPORT_TITLES, IozoneParams
from fsmeter.families.iozone_grid import CROSSOVER_KB, LARGE_RECORD
from fsmeter.report.figures import figure

KiB = 1024
Grid = dict[str, dict[tuple[int, int], float | None]]
#: iozone's console columns, in its order (test 8 adds "mix" after them).
CONSOLE_ORDER = [c for t in range(9) for c in COLUMNS[t]]
#: The two heading lines of iozone's console table (what its plotting scripts skip).
_HEAD1 = ["", "", "", "", "random", "random", "bkwd", "record", "stride", "", "", "", "", "random"]
_HEAD2 = [
    "write",
    "rewrite",
    "read",
    "reread",
    "read",
    "write",
    "read",
    "rewrite",
    "read",
    "fwrite",
    "frewrite",
    "fread",
    "freread",
    "mix",
]


def grid_from_report(report: dict, ops: bool) -> Grid:
    """The grid of one engine `grid` phase report: KB/s, or ops/s with ``ops``."""
    key = "ops_per_s" if ops else "KB_per_s"
    grid: Grid = {}
    for c in report["extra"]["cells"]:
        for col in report["extra"]["columns"]:
            res = c["results"].get(col)
            grid.setdefault(col, {})[(c["file_size"], c["record_size"])] = None if res is None else res[key]
    return grid


def _int(v: float | None) -> int:
    """iozone prints whole numbers, truncated; a missing value (failed cell) is 0."""
    return 0 if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)


def _crossed(p: IozoneParams, file_size: int) -> bool:
    """Whether -a's crossover dropped the small records of this file size."""
    bounded = p.min_record_size is not None or p.max_record_size is not None
    explicit = bool(p.file_sizes) or bool(p.record_sizes)
    return p.crossover and not bounded and not explicit and file_size // KiB > CROSSOVER_KB


def header_records(p: IozoneParams) -> list[int]:
    """The record sizes across the top of an -R table: the whole requested range."""
    if p.record_sizes:
        return sorted(set(p.record_sizes))
    lo = p.min_record_size or 4 * KiB
    hi = p.max_record_size or 16 << 20
    out, r = [], lo
    while r <= hi:
        out.append(r)
        r *= 2
    return out


def console_table(p: IozoneParams, grid: Grid) -> str:
    """iozone's per-cell table: `kB reclen write rewrite ...`, one line per cell, blanks for the
    columns not run (10 characters each)."""
    cols = [c for c in CONSOLE_ORDER if c in grid]
    show = [c for c in CONSOLE_ORDER if c != "mix" or "mix" in grid]
    h1 = "".join(f"{_HEAD1[CONSOLE_ORDER.index(c)]:>10}" for c in show)
    h2 = "".join(f"{_HEAD2[CONSOLE_ORDER.index(c)]:>10}" for c in show)
    lines = [f"{'':24}{h1}", f"{'kB':>16}{'reclen':>8}{h2}"]
    for f, r in p.cells():
        vals = "".join(f"{_int(grid[c].get((f, r))):>10}" if c in cols else " " * 10 for c in show)
        lines.append(f"{f // KiB:>16}{r // KiB:>8}{vals}".rstrip())
    return "\n".join(lines) + "\n"


def excel_reports(p: IozoneParams, grid: Grid) -> str:
    """iozone's -R output: per column a titled table, record sizes (KiB) across, file sizes (KiB)
    down; rows skipped by the crossover start with one 0 per record size under 64K, as iozone writes."""
    recs = header_records(p)
    by_file: dict[int, list[int]] = {}
    for f, r in p.cells():
        by_file.setdefault(f, []).append(r)
    out = ["Excel output is below:"]
    for col in [c for c in CONSOLE_ORDER if c in grid]:
        out.append("")
        out.append(f'"{REPORT_TITLES[col]}"')
        out.append("      " + "".join(f'  "{r // KiB}"' for r in recs))
        for f in sorted(by_file):
            pad = [0] * sum(1 for r in recs if r < LARGE_RECORD) if _crossed(p, f) else []
            vals = pad + [_int(grid[col].get((f, r))) for r in by_file[f]]
            out.append(f'"{f // KiB}"  ' + "".join(f" {v} " for v in vals))
    return "\n".join(out) + "\n"


def iozone_text(p: IozoneParams, grid: Grid, title: str = "") -> str:
    """The whole iozone-style output file: a short header, the console table, the -R reports."""
    unit = "Output is in operations per second." if p.ops else "Output is in kBytes/sec"
    head = [f"\tfsmeter iozone grid{(': ' + title) if title else ''}", f"\t{unit}", ""]
    return "\n".join(head) + console_table(p, grid) + "\n" + excel_reports(p, grid)


# -- from the store ------------------------------------------------------------------------------------------
def keyed_frame(db_path: Any, campaign_id: int):
    """Every keyed metric of a campaign: cell_id, workload, trial, status, discarded, unit, test,
    file_size, record_size, value."""
    import pandas as pd

    from fsmeter.store import open_store

    with open_store(db_path, create=False) as store:
        rows = store.conn.execute(
            "SELECT c.id AS cell_id, c.workload, t.number AS trial, t.status, t.discarded, m.unit, m.keys, m.value "
            "FROM metrics m JOIN trials t ON t.id = m.trial_id JOIN cells c ON c.id = t.cell_id "
            "WHERE c.campaign_id = ? AND m.keys IS NOT NULL ORDER BY c.idx, t.number, m.rowid",
            (campaign_id,),
        ).fetchall()
    recs = []
    for r in rows:
        k = json.loads(r["keys"])
        recs.append(
            {
                "cell_id": r["cell_id"],
                "workload": r["workload"],
                "trial": r["trial"],
                "status": r["status"],
                "discarded": bool(r["discarded"]),
                "unit": r["unit"],
                "test": k.get("test"),
                "file_size": k.get("file_size"),
                "record_size": k.get("record_size"),
                "value": r["value"],
            }
        )
    return pd.DataFrame(
        recs,
        columns=[
            "cell_id",
            "workload",
            "trial",
            "status",
            "discarded",
            "unit",
            "test",
            "file_size",
            "record_size",
            "value",
        ],
    )


def mean_grids(kf) -> dict[int, tuple[Grid, int, str]]:
    """Per cell_id: (grid of means over kept trials, number of kept trials, unit)."""
    out = {}
    kept = kf[(kf["status"] == "ok") & ~kf["discarded"]]
    for cell_id, g in kept.groupby("cell_id", sort=False):
        grid: Grid = {}
        for (test, f, r), v in g.groupby(["test", "file_size", "record_size"], sort=False)["value"]:
            vals = v.dropna()
            grid.setdefault(test, {})[(int(f), int(r))] = float(vals.mean()) if len(vals) else None
        out[int(cell_id)] = (grid, int(g["trial"].nunique()), str(g["unit"].iloc[0]))
    return out


def params_of_cell(db_path: Any, cell_id: int) -> IozoneParams | None:
    """The iozone parameters a stored cell ran with (from its recorded job)."""
    from fsmeter.store import open_store

    with open_store(db_path, create=False) as store:
        row = store.conn.execute(
            "SELECT e.extra FROM environment e JOIN trials t ON t.id = e.trial_id WHERE t.cell_id = ? "
            "ORDER BY t.number LIMIT 1",
            (cell_id,),
        ).fetchone()
    if row is None:
        return None
    job = json.loads(row["extra"] or "{}").get("job") or {}
    return params_of_job(job)


def params_of_job(job: dict) -> IozoneParams | None:
    """The iozone parameters recorded in an engine job (None for another family)."""
    w = job.get("workload") or {}
    if w.get("family") != "iozone" or not isinstance(w.get("params"), dict):
        return None
    return IozoneParams(**w["params"])


# -- HTML charts -------------------------------------------------------------------------------------------
def _size_label(n: int) -> str:
    for suffix, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult}{suffix}"
    return f"{n}B"


def grid_figures(workload: str, idx: int, configs: list[tuple[str, Grid, int]], unit: str) -> list[dict]:
    """Per iozone column: a heatmap (file size down, record size across) and the studies' chart
    (value against file size, one line per record size, log axes), each with a menu to switch
    between configurations. ``configs``: [(label, grid, kept trials)]."""
    figs = []
    cols = [c for c in CONSOLE_ORDER if any(c in g for _, g, _ in configs)]
    for col in cols:
        heat, lines, heat_vis, line_vis = [], [], [], []
        for ci, (label, grid, _) in enumerate(configs):
            cells = grid.get(col, {})
            files = sorted({f for f, _ in cells})
            recs = sorted({r for _, r in cells})
            z = [[cells.get((f, r)) for r in recs] for f in files]
            heat.append(
                {
                    "type": "heatmap",
                    "x": [_size_label(r) for r in recs],
                    "y": [_size_label(f) for f in files],
                    "z": z,
                    "colorscale": "Viridis",
                    "visible": ci == 0,
                    "name": label,
                    "colorbar": {"title": {"text": unit}},
                    "hovertemplate": f"{label}<br>file %{{y}}, record %{{x}}<br>%{{z:.4g}} {unit}<extra></extra>",
                }
            )
            heat_vis.append(1)
            n_lines = 0
            for r in recs:
                pts = [(f, cells[(f, r)]) for f in files if (f, r) in cells]
                lines.append(
                    {
                        "type": "scatter",
                        "mode": "lines+markers",
                        "name": f"{_size_label(r)} records",
                        "x": [f // KiB for f, _ in pts],
                        "y": [v for _, v in pts],
                        "visible": ci == 0,
                        "legendgroup": label,
                        "hovertemplate": f"{label}, record {_size_label(r)}<br>file %{{x}} KiB<br>"
                        f"%{{y:.4g}} {unit}<extra></extra>",
                    }
                )
                n_lines += 1
            line_vis.append(n_lines)

        def menu(counts: list[int]) -> list:
            if len(configs) < 2:
                return []
            total = sum(counts)
            buttons, start = [], 0
            for (label, _, _), k in zip(configs, counts):
                vis = [start <= j < start + k for j in range(total)]
                buttons.append({"label": label, "method": "restyle", "args": ["visible", vis]})
                start += k
            return [{"type": "dropdown", "buttons": buttons, "x": 1.0, "xanchor": "right", "y": 1.15, "yanchor": "top"}]

        first = configs[0][0]
        cap_cfg = " Use the menu to switch configurations." if len(configs) > 1 else ""
        trials = ", ".join(f"{label}: {n} trial(s)" for label, _, n in configs)
        figs.append(
            figure(
                f"w{idx}-ioz-heat-{col}",
                f"{workload}: {col} ({unit}) by file size x record size",
                f"Mean over kept trials per cell ({trials}); iozone's surface seen from above. Showing "
                f"{first} first.{cap_cfg}",
                heat,
                {
                    "xaxis": {"title": "record size", "type": "category"},
                    "yaxis": {"title": "file size", "type": "category"},
                    "updatemenus": menu(heat_vis),
                },
            )
        )
        figs.append(
            figure(
                f"w{idx}-ioz-lines-{col}",
                f"{workload}: {col} ({unit}) against file size",
                f"One line per record size, as the iozone studies chart it; log axes. Mean over kept "
                f"trials ({trials}). Showing {first} first.{cap_cfg}",
                lines,
                {
                    "xaxis": {"title": "file size (KiB)", "type": "log"},
                    "yaxis": {"title": unit, "type": "log"},
                    "updatemenus": menu(line_vis),
                },
            )
        )
    return figs


def workload_charts(view, w, idx: int, baseline: str | None = None) -> list:
    """The iozone family's report charts (its ``Family.charts``): the grid charts of workload ``w``."""
    labels = {c.cell_id: c.label for c in w.headline.configs}
    return workload_grid_figures(view.db, int(view.campaign["id"]), w.workload, idx, labels)


def workload_grid_figures(db_path: Any, campaign_id: int, workload: str, idx: int, labels: dict[int, str]) -> list:
    """The grid charts of one workload of a campaign; [] when it has no keyed metrics."""
    kf = keyed_frame(db_path, campaign_id)
    kf = kf[kf["workload"] == workload]
    if kf.empty:
        return []
    grids = mean_grids(kf)
    configs = [(labels.get(cid, str(cid)), g, n) for cid, (g, n, _) in grids.items()]
    if not configs:
        return []
    unit = next(iter(grids.values()))[2]
    return grid_figures(workload, idx, configs, unit)


# -- export ------------------------------------------------------------------------------------------------
def export_iozone(db: Any = None, campaign: str | None = None) -> str:
    """Each iozone configuration of a campaign as iozone's output (mean over kept trials), one block
    per configuration, each headed by a line naming it."""
    from fsmeter.errors import UserError
    from fsmeter.report.data import build_view

    view = build_view(db, campaign)
    kf = keyed_frame(view.db, int(view.campaign["id"]))
    if kf.empty:
        raise UserError("--format iozone: this campaign has no iozone workload (nothing keyed by file and record size)")
    grids = mean_grids(kf)
    blocks = []
    for w in view.workloads:
        for c in w.headline.configs:
            if c.cell_id not in grids:
                continue
            p = params_of_cell(view.db, c.cell_id)
            if p is None:
                continue
            grid, n, _ = grids[c.cell_id]
            blocks.append(iozone_text(p, grid, f"{w.workload} {c.label} (mean of {n} kept trial(s))"))
    if not blocks:
        raise UserError("--format iozone: no finished iozone trial to export")
    return "\n".join(blocks)


def run_summary(p: IozoneParams, report: dict) -> str:
    """What `fsmeter run` prints after an iozone grid: iozone's table, and the failed cells."""
    text = console_table(p, grid_from_report(report, p.ops))
    failed = [c for c in report["extra"]["cells"] if c["status"] == "failed"]
    for c in failed:
        text += f"cell {c['file_kb']} KiB x {c['record_kb']} KiB failed: {c.get('error')}\n"
    unit = "operations per second" if p.ops else "KB/s (KiB per second)"
    return f"iozone grid, {unit}:\n" + text


def run_summary_of_doc(doc: dict):
    """What `fsmeter run` prints after the tables (the iozone family's ``Family.run_summary``):
    iozone's per-cell table and the failed cells."""
    from rich.text import Text

    p = params_of_job(doc.get("job") or {})
    rep = (doc.get("phases") or {}).get("grid")
    if p is None or rep is None:
        return Text("")
    return Text(run_summary(p, rep), no_wrap=True, overflow="ignore")
