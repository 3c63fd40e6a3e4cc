"""The study report's tables and figures of each study: the paper's own tables redrawn from the re-run
beside the published numbers (Layton, gus3, Wettstein, Lourdas, Bryant; a generic table for others),
and the paper's and the run's means relative to a reference configuration."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import numpy as np
import pandas as pd

from fsmeter.report.figures import PALETTE
from fsmeter.report.figures import figure as _fig
from fsmeter.study.view import StudyView


def relative_section(view: StudyView) -> None:
    """The paper's and the run's means side by side, each relative to a reference configuration ([study]
    reference, else the study's first that both have), for every workload and metric a claim names."""
    from fsmeter.study.paper import paper_frame

    pf, rf = paper_frame(view.study), view.frame
    if pf.empty or rf.empty:
        return
    keys = []
    for c in view.study.claims:
        for m in c.all_metrics:
            for w in c.workloads or sorted(set(rf["workload"])):
                if (w, m) not in keys:
                    keys.append((w, m))
    order = [c.id for c in view.study.configurations]
    if view.study.study.reference in order:
        order.remove(view.study.study.reference)
        order.insert(0, view.study.study.reference)
    rows = []
    for w, m in keys:
        p = pf[(pf["workload"] == w) & (pf["metric_key"] == m)]
        r = rf[(rf["workload"] == w) & (rf["metric_key"] == m)]
        if p.empty or r.empty:
            continue
        if "kernel" in p.columns and p["kernel"].notna().any():  # the paper's newest kernel, as a re-run has one
            p = p[
                p["kernel"]
                == max(p["kernel"].dropna(), key=lambda v: [int(x) if x.isdigit() else 0 for x in str(v).split(".")])
            ]
        pm = p.groupby("filesystem")["value"].mean()
        rm = r.groupby("filesystem")["value"].mean()
        ref = next((c for c in order if c in pm.index and c in rm.index), None)
        if ref is None:
            continue
        for cfg in [c for c in order if c in pm.index or c in rm.index]:
            rows.append(
                [
                    w,
                    m,
                    cfg + (" (reference)" if cfg == ref else ""),
                    f"{pm[cfg] / pm[ref]:.2f}" if cfg in pm.index else "-",
                    f"{rm[cfg] / rm[ref]:.2f}" if cfg in rm.index else "not run",
                ]
            )
    if rows:
        view.tables.append(
            {
                "title": "the paper and this run side by side, relative to a reference configuration",
                "columns": ["workload", "metric", "configuration", "paper (x reference)", "this run (x reference)"],
                "rows": rows,
            }
        )


# -- terminal -------------------------------------------------------------------------------------
def _mean_sd(values) -> tuple:
    v = np.asarray(list(values), float)
    return (float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else float("nan"), int(v.size))


def _published(view: StudyView, **match) -> dict[str, dict]:
    """Published rows matching every key, by configuration."""
    out = {}
    for r in view.study.published.rows:
        if all(r.get(k) == v for k, v in match.items()):
            out[r["configuration"]] = r
    return out


def fmt(v: float | None, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "-"
    return f"{v:,.{digits}g}" if abs(v) < 1000 else f"{v:,.0f}"


def _phase_times(view: StudyView) -> pd.DataFrame:
    ph = view.data["phases"]
    trials = view.data["trials"]
    from fsmeter.stats.kept import kept

    ok = kept(trials)[["cell_id", "trial"]]
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
                rows.append(
                    [
                        phase,
                        cid,
                        fmt(m),
                        fmt(sd),
                        str(n),
                        fmt(pub.get("value")) if pub else "-",
                        fmt(pub.get("stddev")) if pub else "-",
                    ]
                )
        view.tables.append(
            {
                "title": f"{w.id}: phase times (s)",
                "columns": [
                    "phase",
                    "filesystem",
                    "mean (this run)",
                    "sd",
                    "runs",
                    "mean (published)",
                    "spread (published)",
                ],
                "rows": rows,
            }
        )
        for metric, unit in (
            ("create.files_per_s", "files/s"),
            ("remove.files_per_s", "files/s"),
            ("create.KiB_per_s", "KiB/s"),
        ):
            phase, name = metric.split(".")
            sel = view.frame[(view.frame["workload"] == w.id) & (view.frame["metric_key"] == metric)]
            pub = _published(view, workload=w.id, phase=phase, metric=name)
            names = [c for c in configs if c in set(sel["filesystem"]) or c in pub]
            if not names:
                continue
            ours = [sel[sel["filesystem"] == c]["value"] for c in names]
            data = [
                {
                    "type": "bar",
                    "name": "this run",
                    "x": names,
                    "xaxis": "x",
                    "yaxis": "y",
                    "y": [float(v.mean()) if len(v) else None for v in ours],
                    "error_y": {"type": "data", "array": [float(v.std(ddof=1)) if len(v) > 1 else 0 for v in ours]},
                    "marker": {"color": PALETTE[0]},
                },
                {
                    "type": "bar",
                    "name": "published",
                    "x": names,
                    "xaxis": "x2",
                    "yaxis": "y2",
                    "y": [pub[c].get("value") if c in pub else None for c in names],
                    "error_y": {"type": "data", "array": [pub[c].get("stddev", 0) if c in pub else 0 for c in names]},
                    "marker": {"color": PALETTE[1]},
                },
            ]
            layout = {
                "grid": {"rows": 1, "columns": 2, "pattern": "independent"},
                "xaxis": {"domain": [0, 0.47]},
                "xaxis2": {"domain": [0.53, 1]},
                "yaxis": {"title": {"text": f"{unit} (this run)"}},
                "yaxis2": {"title": {"text": f"{unit} (published)"}, "anchor": "x2"},
            }
            view.figures.append(
                _fig(
                    f"fig-{len(view.figures)}",
                    f"{w.id}: {metric}",
                    "mean and sd over the runs; left this run, right the article's table",
                    data,
                    layout,
                )
            )


def _gus3_section(view: StudyView) -> None:
    """dbench: best and second-best filesystem per operation, and every throughput in ascending order."""
    f = view.frame[view.frame["metric_key"] == "run.MB_per_s"]
    factors = [c for c in ("elevator", "threads", "cpus", "kernel", "host") if c in f.columns]
    means = f.groupby(["filesystem", *factors], dropna=False)["value"].agg(["mean", "std", "count"]).reset_index()
    asc = means.sort_values("mean")
    view.tables.append(
        {
            "title": "overall dbench throughput, ascending (MB/s, mean over trials)",
            "columns": ["filesystem", *factors, "MB/s", "sd", "trials"],
            "rows": [
                [r["filesystem"], *[str(r[c]) for c in factors], fmt(r["mean"]), fmt(r["std"]), str(int(r["count"]))]
                for _, r in asc.iterrows()
            ],
        }
    )
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
            rows.append(
                [
                    *map(str, key[:-1]),
                    key[-1],
                    best,
                    fmt(per_fs.iloc[0] / 1e6),
                    second,
                    fmt(per_fs.iloc[1] / 1e6) if len(per_fs) > 1 else "-",
                ]
            )
        view.tables.append(
            {
                "title": "best and second-best filesystem per dbench operation (lowest mean latency)",
                "columns": [*keys, "operation", "best", "ms", "second", "ms"],
                "rows": rows,
            }
        )
    for threads, g in means.groupby("threads") if "threads" in means.columns else [(None, means)]:
        data = []
        for i, (cid, gg) in enumerate(g.groupby("filesystem")):
            x = [" / ".join(str(r[c]) for c in factors if c != "threads") for _, r in gg.iterrows()]
            data.append(
                {
                    "type": "bar",
                    "name": cid,
                    "x": x,
                    "y": list(gg["mean"]),
                    "error_y": {"type": "data", "array": list(gg["std"].fillna(0))},
                    "marker": {"color": PALETTE[i % len(PALETTE)]},
                }
            )
        view.figures.append(
            _fig(
                f"fig-{len(view.figures)}",
                f"dbench MB/s, {threads} clients",
                "mean and sd over trials, per elevator / CPUs",
                data,
                {"barmode": "group", "yaxis": {"title": {"text": "MB/s"}}},
            )
        )
    view.tables.append(
        {
            "title": "published figures (for scale only: 2008 hardware)",
            "columns": ["configuration", "where", "MB/s", "note"],
            "rows": [
                [
                    r["configuration"],
                    json.dumps(r.get("where", {})),
                    f"{r.get('qualifier', '')}{r.get('value', '')}"
                    if "value" in r
                    else f"{r.get('value_min')}..{r.get('value_max')}",
                    r.get("statistic", ""),
                ]
                for r in view.study.published.rows
                if r.get("metric") == "MB_per_s"
            ],
        }
    )


def _wettstein_section(view: StudyView) -> None:
    """Bonnie: means with 99% CIs per cell beside the report's, the two-factor ANOVA, Q-Q plots per cell."""
    from scipy import stats as sps

    from fsmeter.errors import UserError as _UE
    from fsmeter.stats.anova import factorial_anova
    from fsmeter.stats.summary import mean_ci

    f = view.frame[view.frame["metric_key"].isin(["block_read.kbs", "block_write.kbs"])].copy()
    f["MB_per_s"] = f["value"] / 1024.0  # the report's MB/s: Bonnie's KB/s / 1024
    f["access_mode"] = f["metric_key"].str.split(".").str[0]
    extra = [c for c in ("kernel", "host") if c in f.columns]
    rows = []
    for key, g in f.groupby(["filesystem", *extra, "access_mode"], sort=True):
        ci = mean_ci(g["MB_per_s"].to_numpy(), 0.99) if len(g) > 1 else None
        fs, mode = key[0], key[-1]
        pubs = [
            r
            for r in view.study.published.rows
            if r.get("statistic") == "mean" and r.get("phase") == mode and r["configuration"].split("-")[0] == fs
        ]
        pub = (
            "; ".join(
                f"{r['configuration']}: {r['value']:.2f} [{r.get('ci_low', float('nan')):.2f}, "
                f"{r.get('ci_high', float('nan')):.2f}]"
                for r in pubs
            )
            or "-"
        )
        rows.append(
            [
                fs,
                *map(str, key[1:-1]),
                mode,
                fmt(ci.mean if ci else g["MB_per_s"].mean()),
                f"[{fmt(ci.low)}, {fmt(ci.high)}]" if ci else "-",
                str(len(g)),
                pub,
            ]
        )
    view.tables.append(
        {
            "title": "Bonnie block read and write, MB/s: mean and 99% CI per cell (Appendix A.3 beside)",
            "columns": [
                "filesystem",
                *extra,
                "access mode",
                "mean",
                "99% CI",
                "runs",
                "published mean [99% CI] (2002)",
            ],
            "rows": rows,
        }
    )
    groups = f.groupby(extra, sort=False) if extra else [((), f)]
    for key, part in groups:
        label = ", ".join(map(str, key if isinstance(key, tuple) else (key,))) or "this run"
        try:
            res = factorial_anova(part, "MB_per_s", ["filesystem", "access_mode"], level=0.90)
        except _UE as exc:
            view.tables.append({"title": f"ANOVA ({label})", "columns": ["note"], "rows": [[exc.message]]})
            continue
        view.tables.append(
            {
                "title": f"two-factor ANOVA with replications, allocation of variation ({label}; F-tests at 90%)",
                "columns": ["term", "SS", "% of variation", "df", "MS", "F", "F crit", "significant"],
                "rows": [
                    [
                        r.term,
                        fmt(r.ss, 4),
                        f"{r.pct_variation:.1f}",
                        str(r.df),
                        fmt(r.ms, 4),
                        fmt(r.f),
                        fmt(r.f_crit),
                        "yes" if r.significant else "no",
                    ]
                    for r in res.table
                ],
            }
        )
    pub_var = [
        r for r in view.study.published.rows if r.get("metric") == "anova" and r.get("statistic") == "percent_variation"
    ]
    if pub_var:
        view.tables.append(
            {
                "title": "published allocation of variation (2002)",
                "columns": ["term", "%"],
                "rows": [[r.get("where", {}).get("component", "?"), fmt(r.get("value"))] for r in pub_var],
            }
        )
    for key, g in f.groupby(["filesystem", "access_mode"], sort=True):
        v = g["MB_per_s"].to_numpy()
        if v.size < 3:
            continue
        (osm, osr), (slope, icpt, _) = sps.probplot(v - v.mean(), dist="norm")
        data = [
            {"type": "scatter", "mode": "markers", "x": list(osm), "y": list(osr), "name": "residuals"},
            {
                "type": "scatter",
                "mode": "lines",
                "x": [float(osm[0]), float(osm[-1])],
                "y": [icpt + slope * osm[0], icpt + slope * osm[-1]],
                "name": "normal line",
            },
        ]
        view.figures.append(
            _fig(
                f"fig-{len(view.figures)}",
                f"Q-Q: {key[0]} / {key[1]}",
                "residuals (run minus cell mean, MB/s) against normal quantiles",
                data,
                {
                    "height": 320,
                    "xaxis": {"title": {"text": "normal quantile"}},
                    "yaxis": {"title": {"text": "residual, MB/s"}},
                },
            )
        )


_CELL = re.compile(r"^(?P<test>[a-z_]+)\[(?P<f>[0-9]+[KMG]?),(?P<r>[0-9]+[KMG]?)\]$")
#: The record sizes the article charted, KiB.
LOURDAS_RECORDS_KB = (4, 8, 16, 64, 512, 2048)


def _kib(token: str) -> int:
    mult = {"K": 1, "M": 1024, "G": 1 << 20}
    return int(token[:-1]) * mult[token[-1]] if token[-1] in mult else int(token) // 1024


def _lourdas_section(view: StudyView) -> None:
    """iozone: ops/s against file size, one line per record size, per test; cp/tar/rm real/user/sys tables."""
    f = view.frame[view.frame["metric_key"].str.startswith("grid.")].copy()
    if not f.empty:
        m = f["metric_key"].str[len("grid.") :].str.extract(_CELL)
        f = pd.concat([f.reset_index(drop=True), m.reset_index(drop=True)], axis=1).dropna(subset=["test"])
        f["file_kb"], f["rec_kb"] = f["f"].map(_kib), f["r"].map(_kib)
        for test, g in f.groupby("test", sort=False):
            for cid, gg in g.groupby("filesystem", sort=False):
                data = []
                for i, rec in enumerate(LOURDAS_RECORDS_KB):
                    line = gg[gg["rec_kb"] == rec].groupby("file_kb")["value"].mean().sort_index()
                    if not line.empty:
                        data.append(
                            {
                                "type": "scatter",
                                "mode": "lines+markers",
                                "name": f"{rec} KiB records",
                                "x": list(line.index),
                                "y": list(line.values),
                                "line": {"color": PALETTE[i % len(PALETTE)]},
                            }
                        )
                if data:
                    view.figures.append(
                        _fig(
                            f"fig-{len(view.figures)}",
                            f"iozone {test}: {cid}",
                            "mean ops/s over the runs against file size, one line per record size",
                            data,
                            {
                                "xaxis": {"type": "log", "title": {"text": "file size, KiB"}},
                                "yaxis": {"title": {"text": "ops/s"}},
                            },
                        )
                    )
    configs = [c.id for c in view.study.configurations]
    for phase, title in (("cp", "copy a big file"), ("untar", "extract the source tree"), ("rm", "remove the tree")):
        rows = []
        for cid in configs:
            cells = []
            for t in ("real_s", "user_s", "sys_s"):
                sel = view.frame[(view.frame["metric_key"] == f"{phase}.{t}") & (view.frame["filesystem"] == cid)]
                pub = _published(view, workload="cp-tar-rm", phase=phase, metric=t).get(cid)
                cells += [fmt(sel["value"].mean()) if len(sel) else "-", fmt(pub.get("value")) if pub else "-"]
            if any(c != "-" for c in cells):
                rows.append([cid, *cells])
        if rows:
            view.tables.append(
                {
                    "title": f"{title} (+ sync): seconds, mean over the runs (published beside)",
                    "columns": ["filesystem", "real", "real (2009)", "user", "user (2009)", "sys", "sys (2009)"],
                    "rows": rows,
                }
            )
        sel = view.frame[view.frame["metric_key"].isin([f"{phase}.real_s", f"{phase}.user_s", f"{phase}.sys_s"])]
        if not sel.empty:
            g = sel.groupby(["metric_key", "filesystem"], sort=False)["value"].mean().reset_index()
            data = [
                {
                    "type": "bar",
                    "name": mk.split(".")[1],
                    "x": list(gg["filesystem"]),
                    "y": list(gg["value"]),
                    "marker": {"color": PALETTE[i]},
                }
                for i, (mk, gg) in enumerate(g.groupby("metric_key", sort=False))
            ]
            view.figures.append(
                _fig(
                    f"fig-{len(view.figures)}",
                    f"{title}: real, user, sys",
                    "seconds, mean over runs",
                    data,
                    {"barmode": "group", "yaxis": {"title": {"text": "s"}}},
                )
            )


def _num_key(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("inf")


def _lines_against(
    view: StudyView, sel: pd.DataFrame, factor: str, title: str, caption: str, unit: str, log_x: bool = True
) -> None:
    """One line per configuration: mean and sd of ``value`` against a numeric factor."""
    data = []
    for i, cid in enumerate(c.id for c in view.study.configurations):
        g = sel[sel["filesystem"] == cid]
        if g.empty:
            continue
        agg = g.groupby(factor)["value"].agg(["mean", "std"])
        agg = agg.loc[sorted(agg.index, key=_num_key)]
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": cid,
                "x": [_num_key(x) for x in agg.index],
                "y": list(agg["mean"]),
                "error_y": {"type": "data", "array": list(agg["std"].fillna(0))},
                "line": {"color": PALETTE[i % len(PALETTE)]},
            }
        )
    if data:
        view.figures.append(
            _fig(
                f"fig-{len(view.figures)}",
                title,
                caption,
                data,
                {
                    "xaxis": {"type": "log" if log_x else "linear", "title": {"text": factor.replace("_", " ")}},
                    "yaxis": {"title": {"text": unit}},
                },
            )
        )


def _bryant_section(view: StudyView) -> None:
    """pgmeter: throughput against outstanding I/Os per filesystem; filemark: transactions/s against
    threads; AIM7: peak jobs/min per filesystem relative to ext2, beside the paper's percentages."""
    f = view.frame
    configs = [c.id for c in view.study.configurations]
    for w in view.study.workloads:
        sel = f[f["workload"] == w.id]
        if sel.empty:
            continue
        if w.id.startswith("pgmeter") and "queue_depth" in sel.columns:
            mib = sel[sel["metric_key"] == "run.MiB_per_s"]
            _lines_against(
                view,
                mib,
                "queue_depth",
                f"{w.id}: MiB/s against outstanding I/Os",
                "mean and sd over the trials, one line per filesystem (the paper's throughput "
                "against outstanding I/Os on the small machine)",
                "MiB/s",
            )
            rows = []
            for cid in configs:
                g = mib[mib["filesystem"] == cid]
                if g.empty:
                    continue
                agg = g.groupby("queue_depth")["value"].agg(["mean", "std", "count"])
                for qd in sorted(agg.index, key=_num_key):
                    r = agg.loc[qd]
                    rows.append([cid, str(qd), fmt(r["mean"]), fmt(r["std"]), str(int(r["count"]))])
            view.tables.append(
                {
                    "title": f"{w.id}: MiB/s per filesystem and outstanding I/Os",
                    "columns": ["filesystem", "outstanding I/Os", "MiB/s", "sd", "trials"],
                    "rows": rows,
                }
            )
        elif w.id.startswith("filemark") and "threads" in sel.columns:
            tps = sel[sel["metric_key"].str.match(r"^transactions-\d+\.transactions_per_s$")]
            _lines_against(
                view,
                tps,
                "threads",
                f"{w.id}: transactions/s against threads",
                "mean and sd over the kept transaction phases of every trial (the paper pooled "
                "its repeated transaction phases the same way), one line per filesystem",
                "transactions/s",
            )
        elif w.id.startswith("aim7"):
            jpm = sel[sel["metric_key"] == "subruns.peak_jpm"]
            keys = [c for c in ("cpus",) if c in jpm.columns]
            rows = []
            for key, g in jpm.groupby(keys) if keys else [((), jpm)]:
                means = g.groupby("filesystem")["value"].agg(["mean", "std", "count"])
                base = means["mean"].get("ext2")
                cpus = key[0] if isinstance(key, tuple) and key else key
                for cid in configs:
                    if cid not in means.index:
                        continue
                    r = means.loc[cid]
                    pub = [
                        p
                        for p in view.study.published.rows
                        if p.get("workload") == w.id
                        and p.get("metric", "").startswith("peak_jobs_per_min_vs_ext2")
                        and cid.startswith(p["configuration"])
                    ]
                    rows.append(
                        [
                            cid,
                            str(cpus) if keys else "-",
                            fmt(r["mean"]),
                            fmt(r["std"]),
                            str(int(r["count"])),
                            f"{100 * r['mean'] / base:.0f}%" if base else "-",
                            "; ".join(
                                f"{p['value']}{'%' if '%' in p.get('unit', '') else ''} "
                                f"({p.get('unit', '')}, {p['where'].get('cpus')} CPUs)"
                                for p in pub
                            )
                            or "-",
                        ]
                    )
            view.tables.append(
                {
                    "title": "AIM7 shared mix: peak jobs/min and its share of ext2's peak",
                    "columns": [
                        "filesystem",
                        "CPUs",
                        "peak jobs/min",
                        "sd",
                        "trials",
                        "% of ext2 (this run)",
                        "published (2002, large machine)",
                    ],
                    "rows": rows,
                }
            )


def generic_section(view: StudyView) -> None:
    """Any study: the headline of each workload per configuration."""
    for w in view.study.workloads:
        sel = view.frame[view.frame["workload"] == w.id]
        if sel.empty:
            continue
        key = sel["metric_key"].iloc[0]
        sel = sel[sel["metric_key"] == key]
        g = sel.groupby("filesystem")["value"].agg(["mean", "std"]).reset_index()
        view.figures.append(
            _fig(
                f"fig-{len(view.figures)}",
                f"{w.id}: {key}",
                "mean and sd over trials",
                [
                    {
                        "type": "bar",
                        "x": list(g["filesystem"]),
                        "y": list(g["mean"]),
                        "error_y": {"type": "data", "array": list(g["std"].fillna(0))},
                    }
                ],
                {},
            )
        )


SECTIONS: dict[str, Callable[[StudyView], None]] = {
    "layton2009": _layton_section,
    "gus3-2008": _gus3_section,
    "wettstein2002": _wettstein_section,
    "lourdas2009": _lourdas_section,
    "bryant2002": _bryant_section,
}
