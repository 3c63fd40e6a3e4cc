"""Terminal rendering of engine phase reports (rich tables)."""
from __future__ import annotations

from rich.table import Table

MiB = float(1 << 20)


def fmt_us(ns: float) -> str:
    """Nanoseconds as microseconds with sensible precision."""
    us = ns / 1000.0
    if us >= 100_000:
        return f"{us / 1000:,.0f}ms"
    if us >= 100:
        return f"{us:,.0f}"
    return f"{us:.1f}"


def phase_table(title: str, report: dict) -> Table:
    """One row per op kind: ops/s, MiB/s, latency percentiles (us)."""
    flags = []
    if report.get("interrupted"):
        flags.append("[bold red]interrupted[/]")
    t = Table(title=f"{title}  ({report['elapsed_s']:.2f} s measured, {report.get('threads', 1)} thread(s)"
              f"{', warm-up %.1f s' % report['warmup_s'] if report.get('warmup_s') else ''}) {' '.join(flags)}",
              title_justify="left")
    for col in ("op", "count", "ops/s", "MiB/s", "mean µs", "p50", "p90", "p99", "p99.9", "p99.99", "max"):
        t.add_column(col, justify="left" if col == "op" else "right")
    for name, op in report["ops"].items():
        lat = op["lat"]
        t.add_row(name, f"{op['count']:,}", f"{op['ops_per_s']:,.0f}", f"{op['bytes_per_s'] / MiB:,.1f}",
                  fmt_us(lat["mean_ns"]), fmt_us(lat["p50_ns"]), fmt_us(lat["p90_ns"]), fmt_us(lat["p99_ns"]),
                  fmt_us(lat["p999_ns"]), fmt_us(lat["p9999_ns"]), fmt_us(lat["max_ns"]))
    tot = report["total"]
    t.add_row("[bold]total[/]", f"{tot['ops']:,}", f"[bold]{tot['ops_per_s']:,.0f}[/]",
              f"[bold]{tot['bytes_per_s'] / MiB:,.1f}[/]", "", "", "", "", "", "", "", end_section=True)
    cpu = report.get("cpu") or {}
    if cpu:
        t.caption = (f"CPU: fsmeter {cpu['process_pct']:.0f}% of one CPU (user {cpu['user_s']:.2f} s, sys {cpu['sys_s']:.2f} s); "
                     f"system user {cpu['sys_user_pct']:.0f}% sys {cpu['sys_system_pct']:.0f}% "
                     f"iowait {cpu['sys_iowait_pct']:.0f}% idle {cpu['sys_idle_pct']:.0f}%")
        t.caption_justify = "left"
    counters = report.get("counters") or {}
    if counters:
        extra = ", ".join(f"{k} {v:,}" for k, v in counters.items())
        t.caption = (t.caption + "\n" if t.caption else "") + extra
    for w in report.get("warnings") or []:
        t.caption = (t.caption + "\n" if t.caption else "") + f"[yellow]warning:[/] {w}"
    return t
