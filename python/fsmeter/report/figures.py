"""Report figures: plotly figures as JSON-ready dicts, drawn by ``Plotly.newPlot`` in the HTML pages
(the campaign report, fsmeter.report.html, and the study report, fsmeter.study.report).

    figure("w0-bar", "seq-read: MiB/s", "caption under the chart", [trace, ...], {"yaxis": {...}})

A family's own charts (its ``Family.charts`` entry, fsmeter.families) build their figures here too,
in the palette below, so every chart of a page looks alike.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: Colours of the verdict groups: the best configuration, those not significantly worse, the worse.
COLORS = {"best": "#2e7d32", "same": "#81c784", "worse": "#9e9e9e", "": "#bdbdbd"}
#: One colour per configuration, in order (plotly's default qualitative palette).
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


def figure(fig_id: str, title: str, caption: str, data: list, layout: dict) -> dict:
    """One figure: its id in the page, title, caption, plotly traces and layout (over the defaults)."""
    base = {
        "title": {"text": title, "font": {"size": 15}},
        "margin": {"t": 50, "l": 70, "r": 20, "b": 80},
        "height": 420,
        "template": "plotly_white",
    }
    base.update(layout)
    return {"id": fig_id, "title": title, "caption": caption, "data": data, "layout": base}


def clean(v: Any) -> Any:
    """JSON-safe: NaN/inf -> None, numpy -> Python (plotly treats null as a gap)."""
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    return v


__all__ = ["COLORS", "PALETTE", "clean", "figure"]
