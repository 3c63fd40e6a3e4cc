"""Views of the mix family's results: the per-subrun table of `fsmeter run`,
and the campaign charts (JPM against the task count per configuration, and
JPM relative to a baseline configuration, as the AIM7 filesystem studies drew it).
"""

from __future__ import annotations

import re

JPM_AT = re.compile(r"^jpm_at_(\d+)$")


def subrun_table(rep: dict):
    """A rich table: one row per subrun (tasks, time, JPM, JPM/task, JTI, disk KiB/s, slowest job type)."""
    from rich.table import Table

    ex = rep.get("extra") or {}
    t = Table(title="mix subruns (re-aim's figures)", title_justify="left")
    for col in ("tasks", "real s", "JPM", "JPM/task", "JTI", "disk KiB/s", "task RSS/PSS MiB", "most time in"):
        t.add_column(col, justify="right" if col != "most time in" else "left")
    for s in ex.get("subruns", []):
        jobs = s.get("jobs", {})
        top = sorted(jobs.items(), key=lambda kv: -kv[1]["total_s"])[:1]
        t.add_row(
            str(s["tasks"]),
            f"{s['real_time_s']:.2f}",
            f"{s['jpm']:.1f}",
            f"{s['jpm_per_task']:.1f}",
            f"{s['jti']:.0f}",
            f"{s['disk_kib_per_s']:.0f}",
            f"{s['tasks_rss_max_bytes'] / 2**20:.0f}/{s['tasks_pss_max_bytes'] / 2**20:.0f}",
            ", ".join(f"{k} {v['total_s']:.2f}s" for k, v in top),
        )
    cross = ex.get("crossover_tasks")
    t.caption = (
        f"peak {ex.get('peak_jpm', 0):.1f} JPM at {ex.get('peak_tasks')} tasks; crossover "
        f"(JPM/task <= {ex.get('crossover_jpm_per_task')}): "
        f"{cross if cross is not None else 'not reached'}; stop: {ex.get('stop_reason')}"
    )
    return t


def _series(w) -> dict:
    """{N: MetricView} of the jpm_at_N metrics of a workload."""
    out = {}
    for m in w.metrics:
        mm = JPM_AT.match(m.name)
        if mm and m.phase == "subruns":
            out[int(mm.group(1))] = m
    return dict(sorted(out.items()))


def workload_charts(view, w, idx: int, baseline: str | None = None) -> list:
    """The mix family's report charts (its ``Family.charts``): JPM against the task count, and relative
    to ``baseline``."""
    from fsmeter.report.figures import PALETTE, figure

    return jpm_figures(w, idx, figure, PALETTE, baseline)


def jpm_figures(w, idx: int, fig, palette: list, baseline: str | None = None) -> list:
    """JPM against N, one line per configuration; then JPM relative to `baseline`
    (a configuration label; default the first configuration in matrix order)."""
    series = _series(w)
    if len(series) < 2:
        return []
    labels = [c.label for c in next(iter(series.values())).configs if c.values]
    if not labels:
        return []
    ns = list(series)
    means = {lab: [series[n].config(lab).mean if series[n].config(lab).values else None for n in ns] for lab in labels}
    cis = {
        lab: [(series[n].config(lab).ci.half_width if series[n].config(lab).ci else None) for n in ns] for lab in labels
    }
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": lab,
            "x": ns,
            "y": means[lab],
            "error_y": {"type": "data", "array": cis[lab], "visible": True},
            "line": {"color": palette[i % len(palette)]},
        }
        for i, lab in enumerate(labels)
    ]
    out = [
        fig(
            f"w{idx}-mix-jpm",
            f"{w.workload}: jobs per minute against tasks",
            "re-aim's JPM (jobs per task / subrun time x 60 x tasks) at each task count, mean over trials with "
            "CI whiskers, one line per configuration; the peak is the highest point of each line.",
            data,
            {
                "xaxis": {"title": "tasks", "type": "log" if ns[-1] / ns[0] >= 16 else "linear"},
                "yaxis": {"title": "jobs/min"},
            },
        )
    ]
    base = baseline if baseline in labels else labels[0]
    rel = []
    for i, lab in enumerate(labels):
        ys = [None if (a is None or b in (None, 0)) else a / b for a, b in zip(means[lab], means[base])]
        rel.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": lab,
                "x": ns,
                "y": ys,
                "line": {"color": palette[i % len(palette)]},
            }
        )
    out.append(
        fig(
            f"w{idx}-mix-rel",
            f"{w.workload}: JPM relative to {base}",
            f"Each configuration's mean JPM divided by {base}'s at the same task count (1.0 = the baseline; "
            "`fsmeter report --baseline LABEL` picks another).",
            rel,
            {"xaxis": {"title": "tasks"}, "yaxis": {"title": f"JPM / JPM of {base}"}},
        )
    )
    return out
