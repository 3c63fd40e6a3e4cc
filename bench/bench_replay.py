"""Benchmark, replay family: dbench 4 against fsmeter's replay of the same client.txt.

    dbench -D DIR -t 20 2        (Debian dbench 4.0, default load file /usr/share/dbench/client.txt)
    fsmeter run dbench --set duration_s=20 --set threads=2

on a fresh tmpfs each. Both warm up for 20/5 = 4 s first (dbench's default, which
fsmeter's replay copies) and report requested ReadX + WriteX bytes per second of
the measured run in 10^6 B/s; dbench's figure is its "Throughput X MB/sec" line.
Target: fsmeter MB/s / dbench MB/s >= 1.0.

Memory: peak RSS of the whole `fsmeter run` process (Python included, from wait4)
replaying client.txt with 128 clients, at two run lengths (5 s and 15 s; quick: 3 s
and 9 s) so that any growth with run time shows; target <= 150 MB at both.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

CLIENT_TXT = Path("/usr/share/dbench/client.txt")
NOTE = (
    "both: 2 clients, warm-up t/5, requested ReadX+WriteX bytes / s; dbench forks a process per client and "
    "samples its figure at 1 s ticks, fsmeter runs threads and divides by the exact measured time"
)


def dbench(ctx, d: Path, seconds: int, clients: int) -> float:
    res = ctx.cmd(["dbench", "-D", d, "-t", seconds, clients], timeout=seconds * 3 + 120)
    m = re.search(r"Throughput ([0-9.eE+]+) MB/sec", res.stdout)
    if not m:
        raise RuntimeError(f"no Throughput line in dbench's output: {res.stdout[-400:]}")
    return float(m.group(1))


def fsmeter_mb_s(ctx, d: Path, seconds: int, clients: int) -> tuple:
    doc = ctx.fsmeter("dbench", d, {"duration_s": seconds, "threads": clients})
    # Mismatches are expected from the second pass on (dbench's Deltree keeps directories,
    # so e.g. line 6's ~dmtmp exists again); dbench ignores them for these operations too.
    return doc["metrics"]["run.MB_per_s"]["value"], doc["_maxrss_kb"]


def run(ctx) -> list:
    if not CLIENT_TXT.is_file():
        return [
            ctx.row(
                "dbench client.txt", "MB/s", None, None, "dbench", notes=f"{CLIENT_TXT} missing: apt-get install dbench"
            )
        ]
    seconds = int(ctx.seconds(20, 10))
    runs = 1 if ctx.quick else 3
    ours, theirs = [], []
    with ctx.tmpfs("4G") as base:
        for i in range(runs):
            d = base / f"dbench-{i}"
            d.mkdir()
            theirs.append(dbench(ctx, d, seconds, 2))
            ctx.cmd(["rm", "-rf", d])
            w = base / f"fsmeter-{i}"
            w.mkdir()
            ours.append(fsmeter_mb_s(ctx, w, seconds, 2)[0])
            ctx.cmd(["rm", "-rf", w])
        mem = []
        for secs in (int(ctx.seconds(5, 3)), int(ctx.seconds(15, 9))):
            m128 = base / f"fsmeter-128-{secs}"
            m128.mkdir()
            mb128, rss_kb = fsmeter_mb_s(ctx, m128, secs, 128)
            mem.append((secs, mb128, rss_kb / 1024))
            ctx.cmd(["rm", "-rf", m128])
    med = statistics.median
    n = f"median of {runs}" if runs > 1 else "1 run"
    rows = [
        ctx.row(
            f"tmpfs, 2 clients, {seconds} s, client.txt",
            "MB/s",
            med(ours),
            med(theirs),
            "dbench 4.0",
            target=1.0,
            notes=f"{n}; {NOTE}",
        ),
    ]
    (s0, _, r0) = mem[0]
    for secs, mb, rss in mem:
        growth = "" if secs == s0 else f"; {rss - r0:+.0f} MB against the {s0} s run"
        rows.append(
            ctx.row(
                f"tmpfs, 128 clients, {secs} s (+{secs // 5} s warm-up), client.txt",
                "peak RSS MB",
                rss,
                150.0,
                "target 150 MB",
                target=1.0,
                higher_is_better=False,
                notes=f"whole fsmeter run process (Python included); load file parsed once; {mb:,.0f} MB/s{growth}",
            )
        )
    return rows
