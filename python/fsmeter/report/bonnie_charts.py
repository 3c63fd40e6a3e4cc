"""The bonnie family's report charts: Bonnie's table as bars, one group per phase, one bar per configuration.

Three figures per bonnie workload: throughput of the five I/O phases (KiB/s), random seeks (seeks/s) with the
small-file rates (files/s) when bonnie++'s file tests ran, and %CPU of every phase. Whiskers are the Student-t
CI of the mean over kept trials (as in the headline bar chart).
"""

from __future__ import annotations

from fsmeter.families.bonnie import FILE_PHASES, IO_PHASES
from fsmeter.report.data import WorkloadView
from fsmeter.report.figures import PALETTE, figure


def _grouped(w: WorkloadView, pick, level: float) -> list:
    """One bar trace per configuration over the metrics `pick` selects (in Bonnie's order)."""
    ms = [
        m
        for m in sorted(
            w.metrics,
            key=lambda m: (IO_PHASES + FILE_PHASES).index(m.phase) if m.phase in IO_PHASES + FILE_PHASES else 99,
        )
        if pick(m)
    ]
    if not ms:
        return []
    labels = [c.label for c in ms[0].configs if c.values]
    data = []
    for i, lab in enumerate(labels):
        ys, errs = [], []
        for m in ms:
            c = next((c for c in m.configs if c.label == lab), None)
            ys.append(c.mean if c and c.values else None)
            errs.append(c.ci.half_width if c and c.ci else None)
        data.append(
            {
                "type": "bar",
                "name": lab,
                "x": [m.phase for m in ms],
                "y": ys,
                "error_y": {"type": "data", "array": errs, "visible": True},
                "marker": {"color": PALETTE[i % len(PALETTE)]},
            }
        )
    return data


def workload_charts(view, w: WorkloadView, idx: int, baseline: str | None = None) -> list:
    """The bonnie family's report charts (its ``Family.charts``)."""
    return bonnie_charts(w, idx, view.level, figure)


def bonnie_charts(w: WorkloadView, idx: int, level: float, fig) -> list:
    """`fig` is fsmeter.report.figures.figure (id, title, caption, data, layout) -> figure dict."""
    out = []
    ci = f"{level:.0%} CI whiskers (Student t) over the kept trials"
    specs = [
        (
            "io",
            lambda m: m.name == "kbs",
            "throughput per phase (KiB/s)",
            "KiB/s",
            "Bonnie's I/O phases in its order, one bar per configuration",
        ),
        (
            "rates",
            lambda m: m.name == "per_s",
            "random seeks and small-file rates (per second)",
            "per second",
            "seeks/s for the seek phase; files/s for bonnie++'s file tests",
        ),
        (
            "cpu",
            lambda m: m.name == "cpu",
            "%CPU per phase",
            "% of one CPU",
            "(user + sys) / elapsed of each phase, Bonnie's definition",
        ),
    ]
    for key, pick, title, unit, what in specs:
        data = _grouped(w, pick, level)
        if data:
            log = key == "rates" and len(data[0]["x"]) > 1
            out.append(
                fig(
                    f"w{idx}-bonnie-{key}",
                    f"{w.workload}: {title}",
                    f"{what}; {ci}.",
                    data,
                    {
                        "barmode": "group",
                        "xaxis": {"type": "category"},
                        "yaxis": {"title": unit, "type": "log" if log else "linear"},
                    },
                )
            )
    return out
