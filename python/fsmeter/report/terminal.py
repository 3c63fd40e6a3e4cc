"""Terminal rendering (rich tables): engine phase reports of one run, and campaigns ranked per workload."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from fsmeter.engine import latency_measured

MiB = float(1 << 20)


def fmt_us(ns: float) -> str:
    """Nanoseconds as microseconds with sensible precision."""
    us = ns / 1000.0
    if us >= 100_000:
        return f"{us / 1000:,.0f}ms"
    if us >= 100:
        return f"{us:,.0f}"
    return f"{us:.1f}"


def _compact(x: float) -> str:
    """A count or rate in at most 6 characters: 98,765 / 421k / 1.23M (full figures are in --json)."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= 100 * div:
            return f"{x / div:.0f}{suffix}" if x >= 100 * div * 10 else f"{x / div:.3g}{suffix}"
    return f"{x:,.0f}"


def phase_table(title: str, report: dict, width: int | None = None) -> Table:
    """One row per op kind: count, ops/s, MiB/s, latency percentiles (µs). Fits 80 columns: below 100 the
    p50 and p99.99 columns are left out (the JSON has them all)."""
    from rich import box
    from rich.console import Console

    width = width or Console().width
    flags = []
    if report.get("interrupted"):
        flags.append("[bold red]interrupted[/]")
    t = Table(
        title=f"{title}  ({report['elapsed_s']:.2f} s measured, {report.get('threads', 1)} thread(s)"
        f"{', warm-up {:.1f} s'.format(report['warmup_s']) if report.get('warmup_s') else ''}; latency in µs) "
        f"{' '.join(flags)}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    pcts = [
        ("mean", "mean_ns"),
        ("p50", "p50_ns"),
        ("p90", "p90_ns"),
        ("p99", "p99_ns"),
        ("p99.9", "p999_ns"),
        ("p99.99", "p9999_ns"),
        ("max", "max_ns"),
    ]
    if width < 100:
        pcts = [p for p in pcts if p[0] not in ("p50", "p99.99")]
    for col in ("op", "count", "ops/s", "MiB/s", *(name for name, _ in pcts)):
        t.add_column(col, justify="left" if col == "op" else "right", no_wrap=True)
    for name, op in report["ops"].items():
        lat = op["lat"]
        timed = latency_measured(op)  # else say "–", not 0
        t.add_row(
            name,
            _compact(op["count"]),
            _compact(op["ops_per_s"]),
            f"{op['bytes_per_s'] / MiB:,.1f}",
            *(fmt_us(lat[key]) if timed else "–" for _, key in pcts),
        )
    tot = report["total"]
    t.add_row(
        "[bold]total[/]",
        _compact(tot["ops"]),
        f"[bold]{_compact(tot['ops_per_s'])}[/]",
        f"[bold]{tot['bytes_per_s'] / MiB:,.1f}[/]",
        *([""] * len(pcts)),
        end_section=True,
    )
    cpu = report.get("cpu") or {}
    if cpu:
        t.caption = (
            f"CPU: fsmeter {cpu['process_pct']:.0f}% of one CPU (user {cpu['user_s']:.2f} s, sys {cpu['sys_s']:.2f} s); "
            f"system user {cpu['sys_user_pct']:.0f}% sys {cpu['sys_system_pct']:.0f}% "
            f"iowait {cpu['sys_iowait_pct']:.0f}% idle {cpu['sys_idle_pct']:.0f}%"
        )
        t.caption_justify = "left"
    counters = report.get("counters") or {}
    if counters:
        extra = ", ".join(f"{k} {v:,}" for k, v in counters.items())
        t.caption = (t.caption + "\n" if t.caption else "") + extra
    lt = (report.get("extra") or {}).get("latency_target")
    if lt:
        t.caption = (t.caption + "\n" if t.caption else "") + latency_target_line(lt)
    for w in report.get("warnings") or []:
        t.caption = (t.caption + "\n" if t.caption else "") + f"[yellow]warning:[/] {w}"
    return t


def latency_target_line(lt: dict) -> str:
    """The depth a latency target found, in fio's words (its 'latency : target=..., depth=N' line), and what the
    figures above cover."""
    covers = (
        "the final window at that depth only (the statistics were reset before it, as fio does)"
        if lt.get("stats_reset")
        else "the whole run (the statistics were never reset: "
        + ("latency_run" if lt.get("run") else "the job's size or runtime ended before a final window")
        + ")"
    )
    return (
        f"latency: target={lt['target_ns'] / 1e3:,.2f} us, window={lt['window_ns'] / 1e3:,.2f} us, "
        f"percentile={lt['percentile']:.2f}%, depth={lt['depth']} (of iodepth {lt.get('iodepth', '?')}); "
        f"figures above: {covers}"
    )


# -- campaigns: configurations ranked per workload ----------------------------------------------------------

#: Significance markers against the best configuration (stats.ranking.rank groups).
MARKERS = {"best": "[bold green]★[/]", "same": "[green]=[/]", "worse": "[red]▼[/]", "": ""}
LEGEND = (
    "★ best  = not significantly worse than the best (Welch t-test, or less than the practical threshold)  "
    "▼ significantly worse"
)


def workload_table(w, level: float = 0.95) -> Table:
    """Configurations as rows; per metric mean ± CI half-width with a marker; rank and group on the headline."""
    from fsmeter.report.data import fmt_ci

    fixed = ", ".join(f"{k}={v}" for k, v in w.fixed.items())
    t = Table(
        title=f"{w.workload}" + (f"  ({fixed})" if fixed else "") + f"  — mean ± {level:.0%} CI half-width",
        title_justify="left",
    )
    t.add_column("rank", justify="right")
    t.add_column("group", justify="right")
    t.add_column("configuration", overflow="fold")
    t.add_column("trials", justify="right")
    for m in w.metrics:
        arrow = "↑" if m.higher_is_better else "↓"
        t.add_column(f"{m.key} ({m.unit}) {arrow}" + (" [headline]" if m.headline else ""), justify="right")
    head = w.headline
    order = [e.name for e in head.ranking] + [c.label for c in head.configs if head.entry(c.label) is None]
    for label in order:
        e = head.entry(label)
        c0 = head.config(label)
        cells = []
        for m in w.metrics:
            c = m.config(label)
            cells.append(f"{fmt_ci(c)} {MARKERS[m.marker(label)]}".rstrip())
        n_bad = sum(1 for r in c0.trials if r[2] == "corrupt")
        n_fail = sum(1 for r in c0.trials if r[2] not in ("ok", "corrupt"))
        trials = (
            f"{len(c0.values)}"
            + (f" [red](+{n_fail} failed)[/]" if n_fail else "")
            + (f" [bold red](+{n_bad} corrupt)[/]" if n_bad else "")
        )
        shown = f"{label} [yellow](emulated)[/]" if label in w.emulated else label
        t.add_row(str(e.rank) if e else "-", str(e.group) if e else "-", shown, trials, *cells)
    t.caption = LEGEND
    if w.emulated:
        from fsmeter.guest.kernels import EMULATED_NOTE

        t.caption += (
            f"\n(emulated): {EMULATED_NOTE}; the configuration ran in a guest under software emulation "
            "(TCG) and is not ranked"
        )
    t.caption_justify = "left"
    return t


def per_op_table(w) -> Table:
    """Per operation kind: best and second-best configuration by mean latency (lower is better)."""
    from fsmeter.report.data import fmt_num

    t = Table(
        title=f"{w.workload}: best and second-best configuration per operation (mean latency, µs)", title_justify="left"
    )
    for col in ("operation", "best", "µs", "second", "µs", "significantly better?"):
        t.add_column(
            col,
            justify="left" if col in ("operation", "best", "second", "significantly better?") else "right",
            overflow="fold",
        )
    for o in w.per_op:
        r = o.ranking
        if not r:
            continue
        best, second = r[0], (r[1] if len(r) > 1 else None)
        sig = "-" if second is None else ("no (same group)" if second.group == best.group else "yes")
        t.add_row(
            o.op,
            best.name,
            fmt_num(o.means_us[best.name]),
            second.name if second else "-",
            fmt_num(o.means_us[second.name]) if second else "-",
            sig,
        )
    return t


def throughput_ascending_table(w) -> Table:
    """Overall throughput (headline) per configuration, ascending, as dbench studies list it."""
    from fsmeter.report.data import fmt_ci

    m = w.headline
    t = Table(title=f"{w.workload}: overall {m.key} ({m.unit}), ascending", title_justify="left")
    t.add_column("configuration", overflow="fold")
    t.add_column(f"{m.unit}", justify="right")
    for c in sorted([c for c in m.configs if c.values], key=lambda c: c.mean):
        t.add_row(c.label, fmt_ci(c))
    return t


def failures_table(view) -> Table | None:
    rows = view.failures()
    if not rows:
        return None
    t = Table(title="failed, corrupt or interrupted trials and cells", title_justify="left")
    for col in ("workload", "configuration", "trial", "status", "cause"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(r["workload"], r["configuration"], str(r["trial"] or "-"), f"[red]{r['status']}[/]", r["cause"])
    return t


def print_campaign(view, console: Console | None = None) -> None:
    """Everything the terminal shows of a campaign: per-workload tables, per-op rankings, verdicts, failures."""
    from fsmeter.report.data import verdicts

    con = console or Console()
    c = view.campaign
    con.print(f"[bold]campaign {c['id']}: {c['name']}[/] ({c['status']}, {view.db})")
    for w in view.workloads:
        con.print(workload_table(w, view.level))
        if w.per_op:
            con.print(per_op_table(w))
            con.print(throughput_ascending_table(w))
    con.print("[bold]verdict[/]")
    for v in verdicts(view):
        con.print(f"• {v['text']}")
        for n in v["notes"]:
            con.print(f"  [yellow]note:[/] {n}")
    ft = failures_table(view)
    if ft is not None:
        con.print(ft)


def print_ranking(
    db,
    campaign=None,
    console: Console | None = None,
    level: float = 0.95,
    alpha: float = 0.05,
    practical_pct: float = 10.0,
) -> None:
    """The final ranking of a stored campaign, for the campaign runner and `fsmeter report`."""
    from fsmeter.report.data import build_view

    print_campaign(build_view(db, campaign, level, alpha, practical_pct), console)
