"""The HTML report: one self-contained file (plotly.js inlined, no network) drawn from a stored campaign.

Figures are plotly figures serialised to JSON and drawn by ``Plotly.newPlot`` in the page; the page
records script errors and finished charts in ``#fsm-status`` so a headless browser can check it.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import fsmeter
from fsmeter.errors import UserError
from fsmeter.report.data import (
    CampaignView,
    MetricView,
    WorkloadView,
    build_view,
    fmt_ci,
    fmt_num,
    level_str,
    numeric_level,
    verdicts,
)
from fsmeter.report.figures import COLORS, PALETTE, clean, figure

# Steady-state criteria: one definition, shared with `fsmeter run` and the campaign runner.
from fsmeter.stats.phase import STEADY_DEVIATION_PCT, STEADY_SLOPE_PCT

TEMPLATES = Path(__file__).parent / "templates"

#: Factor names read as iozone's two axes (file size down, record size across).
FILE_SIZE_FACTORS = ("file_size", "filesize", "size_kb", "file_size_kb")
RECORD_SIZE_FACTORS = ("record_size", "reclen", "record_size_kb", "block_size", "bs")


def _order(m: MetricView) -> list:
    """Configurations best first (ranked), then the unranked in matrix order."""
    return [e.name for e in m.ranking] + [c.label for c in m.configs if m.entry(c.label) is None and c.values]


def bar_chart(w: WorkloadView, idx: int, level: float) -> dict:
    m = w.headline
    labels = _order(m)
    cs = [m.config(x) for x in labels]
    data = [
        {
            "type": "bar",
            "x": labels,
            "y": [c.mean for c in cs],
            "error_y": {"type": "data", "array": [c.ci.half_width if c.ci else None for c in cs], "visible": True},
            "marker": {"color": [COLORS[m.marker(x)] for x in labels]},
            "hovertemplate": "%{x}<br>%{y:.4g} ± %{error_y.array:.3g} " + m.unit + "<extra></extra>",
        }
    ]
    return figure(
        f"w{idx}-bar",
        f"{w.workload}: {m.key} ({m.unit})",
        f"Mean per configuration with {level:.0%} CI whiskers (Student t), best first. Dark green: best; "
        "light green: not significantly worse than the best; grey: significantly worse.",
        data,
        {"xaxis": {"type": "category", "automargin": True}, "yaxis": {"title": m.unit}},
    )


def line_charts(w: WorkloadView, idx: int, level: float) -> list:
    """Metric against each numeric factor, one line per combination of the other varying factors."""
    m = w.headline
    out = []
    for f in w.varying:
        if f == "filesystem":
            continue
        nums = {level_str(c.levels.get(f)): numeric_level(c.levels.get(f)) for c in m.configs}
        if any(v is None for v in nums.values()) or len(set(nums.values())) < 2:
            continue
        others = [g for g in w.varying if g != f]
        series: dict = {}
        for c in m.configs:
            if not c.values:
                continue
            key = (
                ", ".join(
                    level_str(c.levels.get(g)) if g == "filesystem" else f"{g}={level_str(c.levels.get(g))}"
                    for g in others
                )
                or m.key
            )
            series.setdefault(key, []).append((nums[level_str(c.levels.get(f))], c))
        data = []
        for i, (key, pts) in enumerate(series.items()):
            pts.sort(key=lambda p: p[0])
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": key,
                    "x": [p[0] for p in pts],
                    "y": [p[1].mean for p in pts],
                    "error_y": {
                        "type": "data",
                        "array": [p[1].ci.half_width if p[1].ci else None for p in pts],
                        "visible": True,
                    },
                    "line": {"color": PALETTE[i % len(PALETTE)]},
                }
            )
        log = max(nums.values()) / max(min(nums.values()), 1e-12) >= 16
        out.append(
            figure(
                f"w{idx}-line-{f}",
                f"{w.workload}: {m.key} against {f}",
                f"Mean {m.key} ({m.unit}) at each level of {f}, one line per "
                f"{' x '.join(others) or 'configuration'}, with {level:.0%} CI whiskers.",
                data,
                {"xaxis": {"title": f, "type": "log" if log else "linear"}, "yaxis": {"title": m.unit}},
            )
        )
    return out


def heatmaps(w: WorkloadView, idx: int) -> list:
    """iozone-style grid: file size down, record size across, one heatmap per other-factor combination."""
    fsz = next((f for f in w.varying if f.lower() in FILE_SIZE_FACTORS), None)
    rsz = next((f for f in w.varying if f.lower() in RECORD_SIZE_FACTORS), None)
    if fsz is None or rsz is None:
        return []
    m = w.headline
    others = [g for g in w.varying if g not in (fsz, rsz)]
    groups: dict = {}
    for c in m.configs:
        key = ", ".join(level_str(c.levels.get(g)) for g in others) or m.key
        groups.setdefault(key, []).append(c)
    out = []
    for j, (key, cs) in enumerate(groups.items()):

        def sort_levels(f):
            lv = {level_str(c.levels.get(f)) for c in cs}
            return sorted(lv, key=lambda s: (numeric_level(s) is None, numeric_level(s) or 0, s))

        ys, xs = sort_levels(fsz), sort_levels(rsz)
        z = [[None] * len(xs) for _ in ys]
        for c in cs:
            if c.values:
                z[ys.index(level_str(c.levels.get(fsz)))][xs.index(level_str(c.levels.get(rsz)))] = c.mean
        data = [
            {
                "type": "heatmap",
                "x": xs,
                "y": ys,
                "z": z,
                "colorscale": "Viridis",
                "colorbar": {"title": {"text": m.unit}},
                "hovertemplate": f"{fsz}=%{{y}}<br>{rsz}=%{{x}}<br>%{{z:.4g}} {m.unit}<extra></extra>",
            }
        ]
        out.append(
            figure(
                f"w{idx}-heat-{j}",
                f"{w.workload}: {m.key} by {fsz} x {rsz} ({key})",
                f"Mean {m.key} ({m.unit}) for each {fsz} (rows) and {rsz} (columns), as iozone -a draws it.",
                data,
                {
                    "xaxis": {"title": rsz, "type": "category"},
                    "yaxis": {"title": fsz, "type": "category"},
                    "height": 380,
                },
            )
        )
    return out


def interval_chart(w: WorkloadView, idx: int, frames: dict) -> dict | None:
    """Interval throughput of the first kept trial of each configuration, warm-up and steady state marked."""
    from fsmeter.stats.batch import steady_state

    iv = frames["intervals"]
    if not len(iv):
        return None
    m = w.headline
    phases = frames["phases"]
    data, shapes, warm_max, steady_notes = [], [], 0.0, []
    for i, c in enumerate(m.configs):
        kept = [r[0] for r in c.trials if r[2] == "ok" and not r[3]]
        if not kept:
            continue
        trial = kept[0]
        s = iv[(iv["cell_id"] == c.cell_id) & (iv["trial"] == trial) & (iv["phase"] == m.phase)]
        if s.empty:
            continue
        use_bytes = s["bytes"].sum() > 0
        rate = (s["bytes"] / (1 << 20) if use_bytes else s["ops"]) / s["dur_s"].where(s["dur_s"] > 0)
        color = PALETTE[i % len(PALETTE)]
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": c.label,
                "x": s["t_s"].tolist(),
                "y": rate.tolist(),
                "line": {"color": color},
                "legendgroup": c.label,
            }
        )
        ph = phases[(phases["cell_id"] == c.cell_id) & (phases["trial"] == trial) & (phases["phase"] == m.phase)]
        if len(ph) and not pd.isna(ph["warmup_s"].iloc[0]):
            warm_max = max(warm_max, float(ph["warmup_s"].iloc[0]))
        y = rate.fillna(0).to_numpy()
        ss = steady_state(y, window=max(3, len(y) // 5), deviation_pct=STEADY_DEVIATION_PCT, slope_pct=STEADY_SLOPE_PCT)
        if ss.steady and ss.warmup is not None:
            t0 = float(s["t_s"].iloc[ss.warmup]) - float(s["dur_s"].iloc[ss.warmup])
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": f"{c.label}: steady from {t0:.3g} s",
                    "x": [t0],
                    "y": [float(y[ss.warmup])],
                    "legendgroup": c.label,
                    "showlegend": False,
                    "marker": {"symbol": "diamond", "size": 11, "color": color, "line": {"width": 1}},
                }
            )
        else:
            steady_notes.append(c.label)
    if not data:
        return None
    if warm_max > 0:
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": -warm_max,
                "x1": 0,
                "y0": 0,
                "y1": 1,
                "fillcolor": "#ffe0b2",
                "opacity": 0.5,
                "line": {"width": 0},
                "layer": "below",
            }
        )
    unit = "MiB/s" if any(t.get("y") and iv["bytes"].sum() > 0 for t in data) else "ops/s"
    cap = (
        "Throughput per sampling interval of the first kept trial of each configuration (time 0 = start of the "
        "measured phase). Shaded: the warm-up before it, excluded from every statistic. Diamonds: where a steady "
        f"state begins (every later window of a fifth of the run stays within {STEADY_DEVIATION_PCT:g}% of its "
        f"mean with a slope under {STEADY_SLOPE_PCT:g}% per sample, after fio's steadystate check)."
    )
    if steady_notes:
        cap += " No steady state found for: " + ", ".join(steady_notes) + "."
    return figure(
        f"w{idx}-intervals",
        f"{w.workload}: interval throughput ({m.phase})",
        cap,
        data,
        {"shapes": shapes, "xaxis": {"title": "seconds"}, "yaxis": {"title": unit}},
    )


def scatter_chart(w: WorkloadView, idx: int) -> dict | None:
    m = w.headline
    groups = {"kept": ([], [], []), "discarded (warm-up trial)": ([], [], [])}
    for c in m.configs:
        for number, v, status, discarded in c.trials:
            if v is None:
                continue
            g = groups["discarded (warm-up trial)" if discarded or status != "ok" else "kept"]
            g[0].append(c.label)
            g[1].append(v)
            g[2].append(f"trial {number}")
    data = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": name,
            "x": xs,
            "y": ys,
            "text": tx,
            "marker": {"size": 9, "opacity": 0.8, "color": "#1f77b4" if name == "kept" else "#bbbbbb"},
            "hovertemplate": "%{x}<br>%{text}: %{y:.4g}<extra></extra>",
        }
        for name, (xs, ys, tx) in groups.items()
        if xs
    ]
    if not data:
        return None
    return figure(
        f"w{idx}-trials",
        f"{w.workload}: every trial ({m.key})",
        "One point per trial. Discarded trials (the warm-up trial of the run rules) are grey and excluded "
        "from the statistics.",
        data,
        {
            "xaxis": {"type": "category", "categoryorder": "array", "categoryarray": w.labels, "automargin": True},
            "yaxis": {"title": m.unit},
        },
    )


def qq_chart(w: WorkloadView, idx: int, anova: dict) -> dict | None:
    qq = anova.get("qq") or {}
    xs, ys = qq.get("theoretical") or [], qq.get("ordered") or []
    if len(xs) < 3:
        return None
    slope, icpt = qq.get("slope"), qq.get("intercept")
    data = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "residuals",
            "x": xs,
            "y": ys,
            "marker": {"size": 7, "color": "#1f77b4"},
        }
    ]
    if slope is not None and not math.isnan(slope):
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "normal fit",
                "x": [xs[0], xs[-1]],
                "y": [icpt + slope * xs[0], icpt + slope * xs[-1]],
                "line": {"color": "#d62728", "dash": "dash"},
            }
        )
    return figure(
        f"w{idx}-qq",
        f"{w.workload}: normal Q-Q plot of ANOVA residuals",
        "Ordered residuals of the factorial model against normal quantiles (scipy probplot). Points far off "
        "the line mean the errors are not normal and the F tests and CIs are approximate.",
        data,
        {"xaxis": {"title": "theoretical quantile"}, "yaxis": {"title": "residual"}, "height": 380},
    )


def _anova(w: WorkloadView, view: CampaignView) -> tuple:
    """(Analysis.to_dict() or None, note) for the headline over the varying factors."""
    from fsmeter.stats.analyze import analyze_frame

    if not w.varying:
        return None, "one configuration: no factor varies, so there is no ANOVA."
    m = w.headline
    rows = [{**{f: level_str(c.levels.get(f)) for f in w.varying}, "value": v} for c in m.configs for v in c.values]
    if not rows:
        return None, "no usable trials."
    try:
        a = analyze_frame(pd.DataFrame(rows), "value", w.varying, level=view.level, alpha=view.alpha)
    except UserError as exc:
        return None, f"no ANOVA: {exc.message}"
    return a.to_dict(), ""


def _summary_rows(w: WorkloadView) -> list:
    head = w.headline
    rows = []
    for label in _order(head) + [c.label for c in head.configs if not c.values]:
        e = head.entry(label)
        c0 = head.config(label)
        rows.append(
            {
                "rank": e.rank if e else "-",
                "group": e.group if e else "-",
                "label": label,
                "trials": len(c0.values),
                "failed": sum(1 for t in c0.trials if t[2] not in ("ok", "corrupt")),
                "corrupt": sum(1 for t in c0.trials if t[2] == "corrupt"),
                "cells": [{"text": fmt_ci(m.config(label)), "marker": m.marker(label)} for m in w.metrics],
            }
        )
    return rows


def _latency_rows(w: WorkloadView, frames: dict) -> list:
    hist = frames["histograms"]
    if not len(hist):
        return []
    from fsmeter.stats.kept import kept as kept_rows

    good = kept_rows(frames["trials"])
    kept = set(zip(good["cell_id"], good["trial"]))
    out = []
    for c in w.headline.configs:
        h = hist[(hist["cell_id"] == c.cell_id) & (hist["phase"] == w.headline.phase)]
        h = h[np.array([k in kept for k in zip(h["cell_id"], h["trial"])], dtype=bool)]
        for op, g in h.groupby("op", sort=False):
            us = lambda col: fmt_num(float(g[col].mean()) / 1000.0) if g[col].notna().any() else "-"  # noqa: E731
            out.append(
                {
                    "label": c.label,
                    "op": op,
                    "count": int(g["count"].sum()),
                    "mean": us("mean_ns"),
                    "p50": us("p50_ns"),
                    "p90": us("p90_ns"),
                    "p99": us("p99_ns"),
                    "p999": us("p999_ns"),
                    "p9999": us("p9999_ns"),
                    "max": fmt_num(float(g["max_ns"].max()) / 1000.0) if g["max_ns"].notna().any() else "-",
                }
            )
    return out


def _environment(frames: dict) -> tuple:
    """(host rows [(name, value)], per-filesystem rows [dict]) from the environment table."""
    env = frames["environment"]
    if not len(env):
        return [], []

    def distinct(col):
        vals = [level_str(v) for v in env[col].dropna().unique()] if col in env else []
        return " | ".join(vals) if vals else "-"

    mem = env["mem_bytes"].dropna().unique() if "mem_bytes" in env else []
    host = [
        ("host", distinct("hostname")),
        ("kernel", distinct("kernel")),
        ("CPU", distinct("cpu_model")),
        ("RAM", " | ".join(f"{float(v) / (1 << 30):.1f} GiB" for v in mem) or "-"),
        ("CPUs online", distinct("cpus_online")),
        ("CPUs used", distinct("cpus_used")),
        ("fsmeter", distinct("fsmeter_version")),
        ("target", distinct("target_kind")),
    ]
    extra = [json.loads(x) for x in env["extra"].dropna()] if "extra" in env else []
    py = sorted({str(e.get("python")) for e in extra if e.get("python")})
    if py:
        host.append(("Python", " | ".join(py)))
    cols = [
        "fs",
        "device",
        "mkfs_command",
        "mkfs_tool",
        "mkfs_tool_version",
        "mount_options",
        "scheduler",
        "readahead_kb",
        "cache_method",
    ]
    cols = [c for c in cols if c in env]
    per_fs = env[cols].astype(object).where(env[cols].notna(), "-").map(level_str).drop_duplicates()
    return host, per_fs.to_dict("records")


def _matrix_verdicts(view: CampaignView, mx) -> dict:
    """workload -> {workload, text, notes}: the verdict sits above the matrix, so it speaks of the matrix's
    metric in the matrix's unit and judges as the matrix does (unresolved cells are named, never ranked).
    The notes keep what the headline verdict says about the phases' length; its notes on unranked
    configurations are the matrix's unresolved cells, named in the text."""
    headline = {v["workload"]: v for v in verdicts(view)}
    out = {}
    for r in mx.rows:
        notes = [
            n
            for n in headline[r.workload]["notes"]
            if not n.startswith(("not ranked", "a configuration with a single trial")) and "single trial" not in n
        ]
        out[r.workload] = {"workload": r.workload, "text": r.sentence, "notes": notes}
    return out


def build_context(view: CampaignView, baseline: str | None = None) -> dict:
    """Everything the template needs, figures as JSON-ready dicts."""
    from fsmeter.families import FAMILIES
    from fsmeter.report.matrix import build_matrix, legend

    figures, sections = [], []
    mx = build_matrix(view)
    verdict_by = _matrix_verdicts(view, mx)
    for i, w in enumerate(view.workloads):
        figs = []
        if w.headline.configs and any(c.values for c in w.headline.configs):
            family = FAMILIES.get(w.family)
            figs.append(bar_chart(w, i, view.level))
            figs += line_charts(w, i, view.level)
            figs += heatmaps(w, i)
            if family is not None:  # the family's own charts (Family.charts: iozone's grids, mix's JPM...)
                figs += family.chart_figures(view, w, i, baseline)
            if "ranks" in w.varying:  # campaigns across MPI clients
                from fsmeter.report.mpi import scaling_figures

                figs += scaling_figures(view, w, i, figure, PALETTE)
            ic = interval_chart(w, i, view.frames) if family is None or family.interval_chart else None
            if ic:
                figs.append(ic)
            sc = scatter_chart(w, i)
            if sc:
                figs.append(sc)
        anova, anova_note = _anova(w, view)
        if anova is not None:
            qq = qq_chart(w, i, anova["anova"] or {})
            if qq:
                figs.append(qq)
        figures += figs
        per_op = []
        for o in w.per_op:
            if o.ranking:
                b = o.ranking[0]
                s = o.ranking[1] if len(o.ranking) > 1 else None
                per_op.append(
                    {
                        "op": o.op,
                        "best": b.name,
                        "best_us": fmt_num(o.means_us[b.name]),
                        "second": s.name if s else "-",
                        "second_us": fmt_num(o.means_us[s.name]) if s else "-",
                        "significant": "-" if s is None else ("no" if s.group == b.group else "yes"),
                    }
                )
        ascending = sorted([c for c in w.headline.configs if c.values], key=lambda c: c.mean)
        sections.append(
            {
                "idx": i,
                "workload": w.workload,
                "family": w.family or "-",
                "varying": w.varying,
                "fixed": {k: level_str(v) for k, v in w.fixed.items()},
                "metrics": [
                    {"key": m.key, "unit": m.unit, "hib": m.higher_is_better, "headline": m.headline} for m in w.metrics
                ],
                "summary": _summary_rows(w),
                "figures": figs,
                "verdict": verdict_by[w.workload],
                "anova": anova if (anova and len(w.varying) >= 2) else None,
                "anova_note": anova_note
                if anova is None
                else (
                    "" if len(w.varying) >= 2 else "one factor varies: see the ranking; ANOVA tables need two or more."
                ),
                "latency": _latency_rows(w, view.frames),
                "per_op": per_op,
                "ascending": [{"label": c.label, "value": fmt_ci(c)} for c in ascending] if w.per_op else [],
            }
        )
    host, per_fs = _environment(view.frames)
    c = view.campaign
    return {
        "matrix": mx.to_dict(),
        "matrix_legend": legend(mx),
        "campaign": {k: c[k] for k in ("id", "name", "status", "created", "finished", "fsmeter_version")},
        "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "fsmeter_version": fsmeter.__version__,
        "db": str(view.db),
        "level": view.level,
        "alpha": view.alpha,
        "practical_pct": view.practical_pct,
        "sections": sections,
        "host": host,
        "per_fs": per_fs,
        "failures": view.failures(),
        "verdicts": [verdict_by[w.workload] for w in view.workloads],
        "figures_json": json.dumps(clean(figures), separators=(",", ":")).replace("</", "<\\/"),
        "n_figures": len(figures),
        "fmt_num": fmt_num,
    }


def render_html(view: CampaignView, baseline: str | None = None) -> str:
    import jinja2
    from plotly.offline import get_plotlyjs

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    ctx = build_context(view, baseline)
    ctx["plotly_js"] = get_plotlyjs()
    return env.get_template("report.html.j2").render(**ctx)


def write_report(
    out: Path,
    db: Any = None,
    campaign: str | None = None,
    level: float = 0.95,
    alpha: float = 0.05,
    practical_pct: float = 10.0,
    baseline: str | None = None,
) -> CampaignView:
    """Build the view of ``campaign`` and write the self-contained HTML report to ``out``."""
    from fsmeter.userpaths import check_output_path, write_output

    check_output_path(out, "-o", stdout=True)  # the CLI checked it before; a caller of this function may not
    view = build_view(db, campaign, level, alpha, practical_pct)
    write_output(out, render_html(view, baseline), "-o")
    return view
