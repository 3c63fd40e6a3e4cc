"""The study report: the study's own tables and figures from the new run, beside the published
numbers, what the run changed from the design, and a verdict per published claim.

One self-contained HTML file (plotly.js inlined), drawn with the same page machinery as the
campaign report, so headless Chromium can check it the same way (``#fsm-status``).
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import pandas as pd
from rich.table import Table

import fsmeter
from fsmeter.errors import UserError
from fsmeter.report.html import PALETTE, TEMPLATES, _clean, _fig
from fsmeter.study.claims import CONFIRMED, INCONCLUSIVE, REFUTED, ClaimChecker, Verdict, study_frame
from fsmeter.study.model import Study
from fsmeter.study.plan import Change, changes_of


@dataclass
class StudyView:
    study: Study
    db: Path
    campaigns: pd.DataFrame
    frame: pd.DataFrame  # study_frame(): kept trials, study names
    data: dict  # fsmeter.store.load() of the study's campaigns
    changes: List[Change]
    verdicts: List[Verdict]
    tables: List[dict] = field(default_factory=list)
    figures: List[dict] = field(default_factory=list)


def study_campaign_ids(store, study: Study, campaign: Optional[str]) -> list:
    if campaign is not None:
        return [store.campaign(campaign)["id"]]
    prefix = f"study-{study.slug}-"
    ids = [r["id"] for r in store.campaigns() if r["name"].startswith(prefix)]
    if not ids:
        raise UserError(f"{store.path}: no campaign of study {study.slug}: run `fsmeter study run {study.slug}` "
                        "first, or name the database with --db")
    return ids


def build_study_view(study: Study, db: Path, campaign: Optional[str] = None) -> StudyView:
    from fsmeter.store import load, open_store

    with open_store(db, create=False) as store:
        ids = study_campaign_ids(store, study, campaign)
        sources = [store.campaign(i)["source"] for i in ids]
    data = load(db, ids)
    changes: List[Change] = []
    for src in sources:
        for c in changes_of(src):
            if c not in changes:
                changes.append(c)
    frame = study_frame(study, data["metrics"], data["environment"])
    verdicts = ClaimChecker(study, frame).check_all()
    view = StudyView(study, Path(db), data["campaigns"], frame, data, changes, verdicts)
    SECTIONS.get(study.slug, _generic_section)(view)
    return view


# -- terminal -------------------------------------------------------------------------------------
STYLE = {CONFIRMED: "green", REFUTED: "red", INCONCLUSIVE: "yellow"}


def verdict_table(view: StudyView) -> Table:
    t = Table(title=f"{view.study.slug}: the study's claims tested on this run "
                    "(published absolute numbers are not compared: the hardware differs)")
    for col in ("claim", "the study says", "verdict", "why"):
        t.add_column(col, overflow="fold")
    for v in view.verdicts:
        why = v.reason + ("".join(f"\n- {n}" for n in v.notes) if v.notes else "")
        if v.outcome == REFUTED:
            why += "".join(f"\n{s.context}: {s.detail}" for s in v.subs if s.outcome == REFUTED)[:600]
        t.add_row(v.claim.id, v.claim.says, f"[{STYLE[v.outcome]}]{v.outcome}[/]", why)
    return t


# -- per-study sections -------------------------------------------------------------------------------
def _mean_sd(values) -> tuple:
    v = np.asarray(list(values), float)
    return (float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else float("nan"), int(v.size))


def _published(view: StudyView, **match) -> Dict[str, dict]:
    """Published rows matching every key, by configuration."""
    out = {}
    for r in view.study.published.rows:
        if all(r.get(k) == v for k, v in match.items()):
            out[r["configuration"]] = r
    return out


def _fmt(v: Optional[float], digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "-"
    return f"{v:,.{digits}g}" if abs(v) < 1000 else f"{v:,.0f}"


def _phase_times(view: StudyView) -> pd.DataFrame:
    ph = view.data["phases"]
    trials = view.data["trials"]
    ok = trials[(trials["status"] == "ok") & ~trials["discarded"].astype(bool)][["cell_id", "trial"]]
    ph = ph.merge(ok, on=["cell_id", "trial"])
    ph = ph[ph["measured"].astype(bool)]
    cells = view.data["cells"][["cell_id", "workload", "filesystem"]]
    return ph.merge(cells, on="cell_id")


def _layton_section(view: StudyView) -> None:
    """fdtree: phase times (mean, sd over the runs) and rates per filesystem, beside the article's tables."""
    times = _phase_times(view)
    configs = [c.id for c in view.study.configurations]
    for w in view.study.workloads:
        rows = []
        for phase in ("mkdir", "create", "remove", "rmdir"):
            for cid in configs:
                sel = times[(times["workload"] == w.id) & (times["phase"] == phase) & (times["filesystem"] == cid)]
                pub = _published(view, workload=w.id, phase=phase, metric="elapsed_s").get(cid)
                if sel.empty and pub is None:
                    continue
                m, sd, n = _mean_sd(sel["elapsed_s"]) if not sel.empty else (None, None, 0)
                rows.append([phase, cid, _fmt(m), _fmt(sd), str(n),
                             _fmt(pub.get("value")) if pub else "-", _fmt(pub.get("stddev")) if pub else "-"])
        view.tables.append({"title": f"{w.id}: phase times (s)", "columns": [
            "phase", "filesystem", "mean (this run)", "sd", "runs", "mean (published)", "spread (published)"],
            "rows": rows})
        for metric, unit in (("create.files_per_s", "files/s"), ("remove.files_per_s", "files/s"),
                             ("create.KiB_per_s", "KiB/s")):
            phase, name = metric.split(".")
            sel = view.frame[(view.frame["workload"] == w.id) & (view.frame["metric_key"] == metric)]
            pub = _published(view, workload=w.id, phase=phase, metric=name)
            names = [c for c in configs if c in set(sel["filesystem"]) or c in pub]
            if not names:
                continue
            ours = [sel[sel["filesystem"] == c]["value"] for c in names]
            data = [{"type": "bar", "name": "this run", "x": names, "xaxis": "x", "yaxis": "y",
                     "y": [float(v.mean()) if len(v) else None for v in ours],
                     "error_y": {"type": "data", "array": [float(v.std(ddof=1)) if len(v) > 1 else 0 for v in ours]},
                     "marker": {"color": PALETTE[0]}},
                    {"type": "bar", "name": "published", "x": names, "xaxis": "x2", "yaxis": "y2",
                     "y": [pub[c].get("value") if c in pub else None for c in names],
                     "error_y": {"type": "data", "array": [pub[c].get("stddev", 0) if c in pub else 0 for c in names]},
                     "marker": {"color": PALETTE[1]}}]
            layout = {"grid": {"rows": 1, "columns": 2, "pattern": "independent"},
                      "xaxis": {"domain": [0, 0.47]}, "xaxis2": {"domain": [0.53, 1]},
                      "yaxis": {"title": {"text": f"{unit} (this run)"}},
                      "yaxis2": {"title": {"text": f"{unit} (published)"}, "anchor": "x2"}}
            view.figures.append(_fig(f"fig-{len(view.figures)}", f"{w.id}: {metric}",
                                     "mean and sd over the runs; left this run, right the article's table", data,
                                     layout))


def _gus3_section(view: StudyView) -> None:
    """dbench: best and second-best filesystem per operation, and every throughput in ascending order."""
    f = view.frame[view.frame["metric_key"] == "run.MB_per_s"]
    factors = [c for c in ("elevator", "threads", "cpus", "kernel", "host") if c in f.columns]
    means = f.groupby(["filesystem", *factors], dropna=False)["value"].agg(["mean", "std", "count"]).reset_index()
    asc = means.sort_values("mean")
    view.tables.append({"title": "overall dbench throughput, ascending (MB/s, mean over trials)",
                        "columns": ["filesystem", *factors, "MB/s", "sd", "trials"],
                        "rows": [[r["filesystem"], *[str(r[c]) for c in factors], _fmt(r["mean"]), _fmt(r["std"]),
                                  str(int(r["count"]))] for _, r in asc.iterrows()]})
    hist = view.data["histograms"]
    hist = hist.loc[:, ~hist.columns.duplicated()]  # h.* repeats the phase's ids
    if not hist.empty:
        cells = view.data["cells"]
        keep = [c for c in cells.columns if c not in ("campaign_id", "idx", "status", "cause", "stop_reason")]
        h = hist[hist["phase"] == "run"].merge(cells[keep], on="cell_id")
        for fac in view.study.factors:
            if fac.campaign and fac.campaign in h.columns:
                inv = {str(v): k for k, v in fac.map.items()}
                h[fac.name] = h[fac.campaign].map(lambda v, inv=inv: inv.get(str(v), str(v)))
        keys = [c for c in ("elevator", "threads", "cpus") if c in h.columns]
        rows = []
        for key, g in h.groupby([*keys, "op"], sort=True):
            per_fs = g.groupby("filesystem")["mean_ns"].mean().sort_values()
            if len(per_fs) == 0:
                continue
            best = per_fs.index[0]
            second = per_fs.index[1] if len(per_fs) > 1 else "-"
            rows.append([*map(str, key[:-1]), key[-1], best, _fmt(per_fs.iloc[0] / 1e6),
                         second, _fmt(per_fs.iloc[1] / 1e6) if len(per_fs) > 1 else "-"])
        view.tables.append({"title": "best and second-best filesystem per dbench operation (lowest mean latency)",
                            "columns": [*keys, "operation", "best", "ms", "second", "ms"], "rows": rows})
    for threads, g in means.groupby("threads") if "threads" in means.columns else [(None, means)]:
        data = []
        for i, (cid, gg) in enumerate(g.groupby("filesystem")):
            x = [" / ".join(str(r[c]) for c in factors if c != "threads") for _, r in gg.iterrows()]
            data.append({"type": "bar", "name": cid, "x": x, "y": list(gg["mean"]),
                         "error_y": {"type": "data", "array": list(gg["std"].fillna(0))},
                         "marker": {"color": PALETTE[i % len(PALETTE)]}})
        view.figures.append(_fig(f"fig-{len(view.figures)}", f"dbench MB/s, {threads} clients",
                                 "mean and sd over trials, per elevator / CPUs", data,
                                 {"barmode": "group", "yaxis": {"title": {"text": "MB/s"}}}))
    view.tables.append({"title": "published figures (for scale only: 2008 hardware)",
                        "columns": ["configuration", "where", "MB/s", "note"],
                        "rows": [[r["configuration"], json.dumps(r.get("where", {})),
                                  f"{r.get('qualifier', '')}{r.get('value', '')}" if "value" in r else
                                  f"{r.get('value_min')}..{r.get('value_max')}", r.get("statistic", "")]
                                 for r in view.study.published.rows if r.get("metric") == "MB_per_s"]})


def _generic_section(view: StudyView) -> None:
    """Any study: the headline of each workload per configuration."""
    for w in view.study.workloads:
        sel = view.frame[view.frame["workload"] == w.id]
        if sel.empty:
            continue
        key = sel["metric_key"].iloc[0]
        sel = sel[sel["metric_key"] == key]
        g = sel.groupby("filesystem")["value"].agg(["mean", "std"]).reset_index()
        view.figures.append(_fig(f"fig-{len(view.figures)}", f"{w.id}: {key}", "mean and sd over trials",
                                 [{"type": "bar", "x": list(g["filesystem"]), "y": list(g["mean"]),
                                   "error_y": {"type": "data", "array": list(g["std"].fillna(0))}}], {}))


SECTIONS: Dict[str, Callable[[StudyView], None]] = {
    "layton2009": _layton_section,
    "gus3-2008": _gus3_section,
}


# -- HTML -----------------------------------------------------------------------------------------------
def render_study_html(view: StudyView) -> str:
    import jinja2
    from plotly.offline import get_plotlyjs

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env_rows = view.data["environment"]
    machine = {}
    if not env_rows.empty:
        for col in ("hostname", "kernel", "cpu_model", "mem_bytes", "cpus_online"):
            if col in env_rows.columns:
                machine[col] = ", ".join(sorted({str(v) for v in env_rows[col].dropna()}))
    counts = {k: sum(v.outcome == k for v in view.verdicts) for k in (CONFIRMED, REFUTED, INCONCLUSIVE)}
    ctx = {
        "study": view.study.study, "db": str(view.db), "machine": machine,
        "campaigns": view.campaigns.to_dict("records"), "changes": view.changes, "verdicts": view.verdicts,
        "counts": counts, "tables": view.tables, "plotly_js": get_plotlyjs(),
        "figures_json": json.dumps(_clean(view.figures), separators=(",", ":")).replace("</", "<\\/"),
        "figures": view.figures, "n_figures": len(view.figures),
        "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "fsmeter_version": fsmeter.__version__,
    }
    return env.get_template("study.html.j2").render(**ctx)


def write_study_report(view: StudyView, out: Path) -> None:
    out = Path(out)
    if not out.parent.is_dir():
        raise UserError(f"-o {out}: the folder {out.parent} does not exist")
    out.write_text(render_study_html(view), encoding="utf-8")
