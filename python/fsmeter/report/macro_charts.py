"""The macro family's charts, shaped like Lourdas (2009): per operation, real/user/sys seconds of
each configuration side by side, every operation's real time per filesystem, and cp's MB/s."""

from __future__ import annotations

from fsmeter.report.figures import PALETTE, figure

TIMES = (("real_s", "real", "#1f77b4"), ("user_s", "user", "#ff7f0e"), ("sys_s", "sys", "#2ca02c"))
OPS = ("cp", "untar", "rm")


def _metric(w, key: str):
    return next((m for m in w.metrics if m.key == key), None)


def _bars(m, labels: list) -> tuple:
    cs = [m.config(x) if any(c.label == x for c in m.configs) else None for x in labels]
    ys = [c.mean if c is not None and c.values else None for c in cs]
    err = [c.ci.half_width if c is not None and c.ci else None for c in cs]
    return ys, err


def workload_charts(view, w, idx: int, baseline: str | None = None) -> list:
    """The macro family's report charts (its ``Family.charts``): the study's bar charts (Lourdas 2009)."""
    return study_charts(w, idx, view.level)


def study_charts(w, idx: int, level: float) -> list:
    """Figures for one macro workload (fsmeter.report.figures dicts)."""
    labels = list(w.labels) or [c.label for c in w.headline.configs]
    ops = [op for op in OPS if _metric(w, f"{op}.real_s") is not None]
    figs: list = []
    whisk = f"{level:.0%} CI whiskers (Student t over the kept trials)"
    # 1. Every operation's real time, one bar per configuration (the study's summary chart).
    data = []
    for i, lab in enumerate(labels):
        ys, err = [], []
        for op in ops:
            y, e = _bars(_metric(w, f"{op}.real_s"), [lab])
            ys.append(y[0])
            err.append(e[0])
        data.append(
            {
                "type": "bar",
                "name": lab,
                "x": ops,
                "y": ys,
                "marker": {"color": PALETTE[i % len(PALETTE)]},
                "error_y": {"type": "data", "array": err, "visible": True},
                "hovertemplate": lab + " %{x}: %{y:.3f} s<extra></extra>",
            }
        )
    if ops:
        figs.append(
            figure(
                f"w{idx}-macro-real",
                f"{w.workload}: real time per operation (s, sync included)",
                "Wall-clock seconds of each tool run and the sync after it (as `time (cmd; sync)`), one "
                f"bar per configuration; mean with {whisk}. Lower is better.",
                data,
                {
                    "barmode": "group",
                    "xaxis": {"title": "operation", "type": "category"},
                    "yaxis": {"title": "seconds"},
                },
            )
        )
    # 2. Per operation: real, user and sys of each configuration (the study's per-operation tables as bars).
    for op in ops:
        data = []
        for key, name, color in TIMES:
            m = _metric(w, f"{op}.{key}")
            if m is None:
                continue
            ys, err = _bars(m, labels)
            data.append(
                {
                    "type": "bar",
                    "name": name,
                    "x": labels,
                    "y": ys,
                    "marker": {"color": color},
                    "error_y": {"type": "data", "array": err, "visible": True},
                    "hovertemplate": name + " %{x}: %{y:.3f} s<extra></extra>",
                }
            )
        figs.append(
            figure(
                f"w{idx}-macro-{op}",
                f"{w.workload}: {op} — real, user, sys (s)",
                f"{op}: real (wall clock, sync included), user and sys CPU seconds of the tool and sync "
                f"children (wait4 rusage, their own children included, e.g. bzip2 under tar xjf); mean with "
                f"{whisk}.",
                data,
                {"barmode": "group", "xaxis": {"type": "category", "automargin": True}, "yaxis": {"title": "seconds"}},
            )
        )
    # 3. cp throughput.
    m: object | None = _metric(w, "cp.MB_per_s")
    if m is not None:
        ys, err = _bars(m, labels)
        figs.append(
            figure(
                f"w{idx}-macro-cpmb",
                f"{w.workload}: cp throughput (MB/s)",
                f"Bytes copied / real time of cp and sync, in 10^6 bytes per second; mean with {whisk}. "
                "Higher is better.",
                [
                    {
                        "type": "bar",
                        "x": labels,
                        "y": ys,
                        "marker": {"color": "#1f77b4"},
                        "error_y": {"type": "data", "array": err, "visible": True},
                        "hovertemplate": "%{x}: %{y:.1f} MB/s<extra></extra>",
                    }
                ],
                {"xaxis": {"type": "category", "automargin": True}, "yaxis": {"title": "MB/s"}},
            )
        )
    return figs
