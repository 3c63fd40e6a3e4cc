"""The crash campaign's report: a terminal table and one self-contained HTML page (plotly inlined).

Charts: recovery time per filesystem configuration (check and mount, every crash point drawn, against
the image size when the campaign has several), and data lost beyond what fsync promised (which must
be zero on a correct filesystem), beside the losses fsync did not promise (zero-filled tails, files
and blocks never synced, entries in lost+found).
"""

from __future__ import annotations

import html
import json
import os
from statistics import median

from rich.table import Table

from fsmeter.crash.run import RESULTS
from fsmeter.errors import UserError
from fsmeter.units import format_size


def load_results(folder: str) -> dict:
    path = os.path.join(folder, RESULTS) if os.path.isdir(folder) else folder
    try:
        with open(path) as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise UserError(f"{path}: no crash results there: give the folder `fsmeter crash run --out` wrote") from None
    except ValueError as exc:
        raise UserError(f"{path}: not a crash results file ({exc})") from None
    if doc.get("format") != "fsmeter-crash/1":
        raise UserError(f"{path}: not a crash results file (format {doc.get('format')!r})")
    return doc


def rows(doc: dict) -> list[dict]:
    """One row per cell: the medians of its crash points and the sums of what was lost."""
    out = []
    for cell in doc["cells"]:
        pts = [p for p in cell["points"] if "recovery" in p]
        fsck = [p["recovery"]["fsck_s"] for p in pts if p["recovery"].get("fsck_s") is not None]
        mount = [p["recovery"]["mount_s"] for p in pts if p["recovery"].get("mount_s") is not None]
        counters = [p.get("check", {}).get("counters", {}) for p in pts]

        def total(key: str) -> int:
            return sum(c.get(key, 0) for c in counters)

        out.append(
            {
                "title": cell["title"],
                "filesystem": cell["filesystem"],
                "size_bytes": cell["size_bytes"],
                "dirty_bytes": cell["dirty_bytes"],
                "status": cell["status"],
                "cause": cell.get("cause"),
                "points": len(pts),
                "fsck_s_median": median(fsck) if fsck else None,
                "mount_s_median": median(mount) if mount else None,
                "fsck_fixed": sum(1 for p in pts if p["recovery"].get("fsck_fixed")),
                "fsck_failed": sum(1 for p in pts if p["recovery"].get("fsck_failed")),
                "unmountable": sum(1 for p in pts if p["recovery"].get("mount_error")),
                "blocks_promised": total("blocks_promised"),
                "bytes_lost_beyond_fsync": total("bytes_lost_beyond_fsync"),
                "files_lost_beyond_fsync": total("files_lost_beyond_fsync") + total("files_truncated_beyond_fsync"),
                "entries_lost_beyond_fsync": total("entries_lost_beyond_fsync"),
                "files_zero_tail": total("files_zero_tail"),
                "files_missing_unpromised": total("files_missing_unpromised"),
                "blocks_garbage": total("blocks_garbage"),
                "lost_found": sum(p["recovery"].get("lost_found_entries", 0) for p in pts),
                "findings": sum(1 for p in pts if p.get("finding")),
                "write_mb_s": (cell.get("write", {}).get("bytes_per_s") or 0) / 1e6,
            }
        )
    return out


def terminal_table(doc: dict) -> Table:
    c = doc["campaign"]["campaign"]
    rs = rows(doc)
    # size and dirty set get a column only when the campaign varies them (else they are in the title)
    sizes = sorted({r["size_bytes"] for r in rs})
    dirties = sorted({r["dirty_bytes"] for r in rs})
    title = f"crash campaign {c['name']}: {c['crash_points']} cuts per cell, model {c['cut']}, seed {c['seed']}"
    if len(sizes) == 1:
        title += f", {format_size(sizes[0])} images"
    if len(dirties) == 1:
        title += f", dirty set {format_size(dirties[0])}"
    t = Table(title=title)
    cols = (
        ["filesystem"]
        + (["size"] if len(sizes) > 1 else [])
        + (["dirty"] if len(dirties) > 1 else [])
        + ["fsck s", "mount s", "fsck fixed", "lost beyond fsync", "zero tails", "lost+ found", "findings"]
    )
    for col in cols:
        t.add_column(col, justify="left" if col == "filesystem" else "right", no_wrap=col == "filesystem")
    for r in rs:
        lost = (
            f"{format_size(r['bytes_lost_beyond_fsync'])}/{r['files_lost_beyond_fsync']}/"
            f"{r['entries_lost_beyond_fsync']}"
        )
        lost = f"[red]{lost}[/]" if r["findings"] else f"[green]{lost}[/]"
        fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        cells = [r["title"] + ("" if r["status"] == "done" else f" [yellow]({r['status']})[/]")]
        cells += [format_size(r["size_bytes"])] if len(sizes) > 1 else []
        cells += [format_size(r["dirty_bytes"])] if len(dirties) > 1 else []
        cells += [
            fmt(r["fsck_s_median"]),
            fmt(r["mount_s_median"]),
            f"{r['fsck_fixed']}/{r['points']}",
            lost,
            str(r["files_zero_tail"]),
            str(r["lost_found"]),
            str(r["findings"]),
        ]
        t.add_row(*cells)
    t.caption = (
        "fsck s, mount s: medians over the cuts; lost beyond fsync: bytes/files/directory entries; "
        "the other columns add up over the cuts"
    )
    return t


def figures(doc: dict) -> list[dict]:
    """Plotly figure dicts: recovery time per configuration, and what was lost."""
    cells = doc["cells"]
    sizes = sorted({c["size_bytes"] for c in cells})
    titles = list(dict.fromkeys(c["title"] for c in cells))
    figs = [_recovery_figure(cells, sizes)]
    if len(sizes) > 1:
        figs.append(_recovery_size_figure(cells, titles))
    return figs + _loss_figures(doc)


def _recovery_figure(cells: list, sizes: list) -> dict:
    """Recovery time: one marker per crash point; x is the configuration (and the size when several)."""
    traces = []
    for what, key, symbol in (
        ("check (fsck)", "fsck_s", "circle"),
        ("mount (journal/log replay)", "mount_s", "diamond"),
    ):
        xs, ys, texts = [], [], []
        for c in cells:
            for p in c["points"]:
                v = p.get("recovery", {}).get(key)
                if v is None:
                    continue
                xs.append(f"{c['title']} {format_size(c['size_bytes'])}" if len(sizes) > 1 else c["title"])
                ys.append(v)
                texts.append(
                    f"{c['title']}, {format_size(c['size_bytes'])}, dirty {format_size(c['dirty_bytes'])}, "
                    f"cut at {p['cut_after_s']:.2f} s"
                )
        traces.append(
            {
                "type": "box",
                "name": what,
                "x": xs,
                "y": ys,
                "text": texts,
                "boxpoints": "all",
                "jitter": 0.3,
                "pointpos": 0,
                "marker": {"symbol": symbol},
            }
        )
    return {
        "id": "recovery",
        "title": "Recovery time per filesystem after a power cut",
        "data": traces,
        "layout": {
            "title": "Recovery time after a power cut (every crash point)",
            "boxmode": "group",
            "yaxis": {"title": "seconds"},
            "height": 440,
            "template": "plotly_white",
        },
    }


def _recovery_size_figure(cells: list, titles: list) -> dict:
    """Recovery = check + mount at every crash point against the filesystem's size, and the median per size
    joined by a line."""
    traces = []
    for title in titles:
        pts = [
            (c["size_bytes"], p["recovery"]["fsck_s"] + p["recovery"]["mount_s"])
            for c in cells
            if c["title"] == title
            for p in c["points"]
            if p.get("recovery", {}).get("fsck_s") is not None and p["recovery"].get("mount_s") is not None
        ]
        if not pts:
            continue
        med = [(s, median(v for z, v in pts if z == s)) for s in sorted({z for z, _ in pts})]
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{title} (median)",
                "legendgroup": title,
                "x": [s / 2**30 for s, _ in med],
                "y": [v for _, v in med],
            }
        )
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": title,
                "legendgroup": title,
                "showlegend": False,
                "opacity": 0.5,
                "x": [s / 2**30 for s, _ in pts],
                "y": [v for _, v in pts],
            }
        )
    return {
        "id": "recovery-size",
        "title": "Recovery time (check + mount) against filesystem size",
        "data": traces,
        "layout": {
            "title": "Recovery time (check + mount) against filesystem size",
            "xaxis": {"title": "filesystem size (GiB)"},
            "yaxis": {"title": "seconds"},
            "height": 420,
            "template": "plotly_white",
        },
    }


def _loss_figures(doc: dict) -> list[dict]:
    """What was lost beyond what fsync promised, and what a crash took that fsync never promised."""
    rs = rows(doc)
    labels = [f"{r['title']} {format_size(r['size_bytes'])} dirty {format_size(r['dirty_bytes'])}" for r in rs]
    figs = [
        {
            "id": "loss",
            "title": "Data lost beyond what fsync promised",
            "data": [
                {
                    "type": "bar",
                    "name": "bytes lost beyond fsync (must be 0)",
                    "x": labels,
                    "y": [r["bytes_lost_beyond_fsync"] for r in rs],
                    "marker": {"color": "#c0392b"},
                    "text": [str(r["bytes_lost_beyond_fsync"]) for r in rs],
                    "textposition": "outside",
                    "cliponaxis": False,
                },
                {
                    "type": "bar",
                    "name": "files lost/truncated beyond fsync",
                    "x": labels,
                    "y": [r["files_lost_beyond_fsync"] for r in rs],
                    "marker": {"color": "#e67e22"},
                    "yaxis": "y2",
                    "text": [str(r["files_lost_beyond_fsync"]) for r in rs],
                    "textposition": "outside",
                    "cliponaxis": False,
                },
            ],
            "layout": {
                "title": "Data lost beyond what fsync promised (0 on a correct filesystem)",
                "barmode": "group",
                "yaxis": {"title": "bytes", "rangemode": "tozero"},
                "yaxis2": {"title": "files", "overlaying": "y", "side": "right", "rangemode": "tozero"},
                "height": 420,
                "template": "plotly_white",
            },
        }
    ]
    figs.append(
        {
            "id": "unpromised",
            "title": "What a crash took that fsync never promised",
            "data": [
                {"type": "bar", "name": name, "x": labels, "y": [r[key] for r in rs]}
                for name, key in (
                    ("files with zero-filled tails", "files_zero_tail"),
                    ("unsynced files gone", "files_missing_unpromised"),
                    ("blocks of foreign/garbage data", "blocks_garbage"),
                    ("entries in lost+found", "lost_found"),
                )
            ],
            "layout": {
                "title": "What a crash took that fsync never promised (summed over crash points)",
                "barmode": "group",
                "height": 420,
                "template": "plotly_white",
            },
        }
    )
    return figs


def write_html(doc: dict, path: str) -> str:
    from plotly.offline import get_plotlyjs

    c = doc["campaign"]["campaign"]
    rs = rows(doc)
    head = [
        "configuration",
        "size",
        "dirty set",
        "cuts",
        "fsck s (median)",
        "mount s (median)",
        "fsck fixed",
        "bytes lost beyond fsync",
        "files lost beyond fsync",
        "entries lost beyond fsync",
        "zero tails",
        "lost+found",
        "findings",
    ]
    body = []
    for r in rs:
        cells = [
            r["title"],
            format_size(r["size_bytes"]),
            format_size(r["dirty_bytes"]),
            r["points"],
            "-" if r["fsck_s_median"] is None else f"{r['fsck_s_median']:.3f}",
            "-" if r["mount_s_median"] is None else f"{r['mount_s_median']:.3f}",
            r["fsck_fixed"],
            r["bytes_lost_beyond_fsync"],
            r["files_lost_beyond_fsync"],
            r["entries_lost_beyond_fsync"],
            r["files_zero_tail"],
            r["lost_found"],
            r["findings"],
        ]
        cls = ' class="finding"' if r["findings"] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in cells) + "</tr>")
    findings = []
    for cell in doc["cells"]:
        for p in cell["points"]:
            if p.get("finding"):
                f = p.get("check", {}).get("findings", [])[:5]
                findings.append(
                    f"<li><b>{html.escape(cell['title'])}</b> cut {p['index'] + 1} at "
                    f"{p['cut_after_s']:.2f} s: evidence {html.escape(str(p.get('evidence_image')))}"
                    f" and {html.escape(os.path.join(cell['slug'], 'ledger.jsonl'))}"
                    f"<pre>{html.escape(json.dumps(f, indent=1))}</pre></li>"
                )
    figs = figures(doc)
    divs = "".join(f'<h2>{html.escape(f["title"])}</h2><div id="{f["id"]}"></div>' for f in figs)
    plots = "".join(f'Plotly.newPlot("{f["id"]}", {json.dumps(f["data"])}, {json.dumps(f["layout"])});' for f in figs)
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>fsmeter crash campaign {html.escape(c["name"])}</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}
tr.finding td{{background:#fdd}} pre{{font-size:85%;background:#f6f6f6;padding:6px}}</style>
<script>{get_plotlyjs()}</script></head><body>
<h1>Crash campaign {html.escape(c["name"])}</h1>
<p>{html.escape(c.get("description") or "")}</p>
<p>{c["crash_points"]} power cuts per cell at instants drawn with seed {c["seed"]} over a {c["runtime_s"]:g} s write phase
({c["threads"]} threads); cut model <b>{html.escape(c["cut"])}</b>. Host {html.escape(doc["host"].get("hostname", ""))},
kernel {html.escape(doc["host"].get("kernel", ""))}; campaign took {doc.get("elapsed_s") or 0:.0f} s.
Data lost beyond fsync must be 0 on a correct filesystem: any other value is a finding, with its image and ledger kept.</p>
<table><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr>{"".join(body)}</table>
<h2>Findings</h2><ul>{"".join(findings) or "<li>none: every promise of fsync held at every crash point</li>"}</ul>
{divs}<script>{plots}</script></body></html>"""
    with open(path, "w") as f:
        f.write(page)
    return path
