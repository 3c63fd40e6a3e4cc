"""iozone -a against fsmeter's iozone family, side by side on the same grid.

The peer is the real iozone, built from source in a scratch directory (bench/iozone_peer.py):
`iozone -a -n 64k -g G -i 0 .. -i 7 [-I] -f DIR/iozone.tmp`, run in alternating turns with
`fsmeter run iozone-auto --set max_file_size=G [--set direct=true]` on the same directory.
Per iozone column, the row is the median over the grid's cells of fsmeter's value / iozone's
value (each cell's value being the median of the rounds): 1.0 means the same throughput.
iozone subtracts its clock's resolution (the "Time Resolution" it prints, one gettimeofday tick of
1 us) from the time of every pass, so its figure for a pass of a few microseconds is up to a fifth
higher than the bytes over the time the pass took. The rows with a target therefore compare against
iozone's figures with that tick put back (file size / (file size / rate + resolution)); the rows as
iozone printed them, and over the cells iozone timed for at least 100 us, are reported beside them.
Cases: a tmpfs (cached: the engine must not be the bottleneck, target >= 1.0), a 1 GiB loop
ext4 buffered (reported, no target: both measure the page cache and the same writeback), and
the loop ext4 with O_DIRECT (target: within 10% either way, 0.9 to 1.1; for the stdio columns,
which -I leaves buffered in both tools, at least 0.9). Then the wall time of the whole grid on tmpfs,
and the engine's memory on one grid of 1 GiB files and 16 MiB records (how much the peak RSS of
`fsmeter run` grows over that of a tiny grid).
"""
from __future__ import annotations

import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from iozone_peer import build_iozone, parse_cells  # noqa: E402

#: Cells shorter than this (as iozone timed them) are dominated by iozone's clock tick.
MIN_TIMED_S = 100e-6

COLUMNS = ["write", "rewrite", "read", "reread", "random_read", "random_write", "bkwd_read", "record_rewrite",
           "stride_read", "fwrite", "frewrite", "fread", "freread"]
#: iozone's stdio tests open with fopen, which -I does not touch: under O_DIRECT they still go through
#: the page cache, so the upper bound of "within 10%" (same device-bound work) does not apply to them.
STDIO = {"fwrite", "frewrite", "fread", "freread"}


def _iozone_grid(out: str) -> dict:
    """column -> {(file KiB, record KiB): value} from iozone's per-cell table (all of tests 0-7 run)."""
    grid = {c: {} for c in COLUMNS}
    cells = set(parse_cells(out))
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 + len(COLUMNS) and all(x.isdigit() for x in f) and (int(f[0]), int(f[1])) in cells:
            for c, v in zip(COLUMNS, f[2:]):
                grid[c][(int(f[0]), int(f[1]))] = float(v)
    return grid


_TIME_RES = re.compile(r"Time Resolution = ([0-9.]+) seconds")


def _time_res(out: str) -> float:
    """The clock resolution iozone measured and subtracts from every pass (its header line)."""
    m = _TIME_RES.search(out)
    if not m:
        raise RuntimeError("iozone printed no 'Time Resolution' line: cannot restore its subtracted tick")
    return float(m.group(1))


def _restore_tick(grid: dict, res: float) -> dict:
    """iozone's KB/s per cell with its subtracted tick put back: the file's KiB over the time the
    pass took (iozone's time + res)."""
    return {c: {k: k[0] / (k[0] / v + res) for k, v in cells.items() if v > 0} for c, cells in grid.items()}


def _fsmeter_grid(doc: dict) -> dict:
    grid = {c: {} for c in COLUMNS}
    for cell in doc["phases"]["grid"]["extra"]["cells"]:
        for c in COLUMNS:
            res = cell["results"].get(c)
            if res:
                grid[c][(cell["file_kb"], cell["record_kb"])] = res["KB_per_s"]
    return grid


def _median_grid(grids: list) -> dict:
    out = {}
    for c in COLUMNS:
        keys = set.intersection(*(set(g[c]) for g in grids))
        out[c] = {k: statistics.median(g[c][k] for g in grids) for k in keys}
    return out


def _compare(ctx, binary: Path, path: Path, case: str, max_file: str, direct: bool, rounds: int, target,
             target_max=None) -> tuple:
    ioz, ioz_real, fsm, walls = [], [], [], {"iozone": [], "fsmeter": []}
    args = [binary, "-a", "-n", "64k", "-g", max_file.lower(), *[x for t in range(8) for x in ("-i", str(t))]]
    if direct:
        args.append("-I")
    sets = {"max_file_size": max_file, **({"direct": "true"} if direct else {})}
    def peer():
        r = ctx.cmd([*args, "-f", path / "iozone.tmp"], cwd=path, timeout=3600)
        ioz.append(_iozone_grid(r.stdout))
        ioz_real.append(_restore_tick(ioz[-1], _time_res(r.stdout)))
        walls["iozone"].append(r.wall_s)

    def ours():
        doc = ctx.fsmeter("iozone-auto", path, sets)
        fsm.append(_fsmeter_grid(doc))
        walls["fsmeter"].append(doc["_wall_s"])

    for i in range(rounds):
        # Rounds alternate which tool goes first, so neither always meets the other's leftovers.
        for step in ((peer, ours) if i % 2 == 0 else (ours, peer)):
            step()
    a, b, real = _median_grid(fsm), _median_grid(ioz), _median_grid(ioz_real)
    rows = []
    for c in COLUMNS:
        keys = sorted(set(a[c]) & set(b[c]))
        ratios = [a[c][k] / b[c][k] for k in keys if b[c][k] > 0]
        med = statistics.median(ratios) if ratios else None
        fair = [a[c][k] / real[c][k] for k in keys if real[c].get(k, 0) > 0]
        fmed = statistics.median(fair) if fair else None
        rows.append(ctx.row(case, f"{c}: median cell ratio, iozone's tick restored", fmed,
                            1.0 if fmed is not None else None, "iozone", target=target,
                            target_max=None if c in STDIO else target_max,
                            notes=f"{len(fair)} cells, {rounds} round(s), median of ratios against iozone's "
                                  "rates with its subtracted clock tick put back (fsmeter "
                                  f"{statistics.median(a[c].values()):,.0f} KB/s vs iozone "
                                  f"{statistics.median(real[c].values()):,.0f} KB/s per cell, medians)"
                            if fair else "no common cell"))
        rows.append(ctx.row(case, f"{c}: median cell ratio, iozone as printed", med, 1.0 if med is not None else None,
                            "iozone", notes=f"{len(ratios)} cells; iozone's own figures, one tick short per pass; "
                                            "no target (see the row above)" if ratios else "no common cell"))
        # The same median, as iozone printed them, over the cells iozone timed for at least
        # MIN_TIMED_S, where its subtracted tick is at most 1%; no target.
        timed = [a[c][k] / b[c][k] for k in keys if b[c][k] > 0 and k[0] / b[c][k] >= MIN_TIMED_S]
        if timed and len(timed) < len(ratios):
            rows.append(ctx.row(case, f"{c}: median cell ratio, cells >= {MIN_TIMED_S * 1e6:.0f} us",
                                statistics.median(timed), 1.0, "iozone",
                                notes=f"{len(timed)} of {len(ratios)} cells, as iozone printed them; no target"))
    return rows, walls


def run(ctx) -> list:
    rows = []
    rounds = 1 if ctx.quick else 3
    with tempfile.TemporaryDirectory(prefix="fsmeter-iozone-build-") as scratch:
        binary = build_iozone(Path(scratch))
        g = "16M" if ctx.quick else "64M"
        with ctx.tmpfs("1G") as d:
            got, walls = _compare(ctx, binary, d, f"tmpfs -g {g}", g, False, rounds, 1.0)
            rows += got
            rows.append(ctx.row(f"tmpfs -g {g}", "whole -a grid wall time (s)", statistics.median(walls["fsmeter"]),
                                statistics.median(walls["iozone"]), "iozone", target=1.0, higher_is_better=False,
                                notes="process start to exit, median of rounds; fsmeter's includes Python start-up"))
        gd = "8M" if ctx.quick else "32M"
        with ctx.loopfs("ext4", "1G") as d:
            got, _ = _compare(ctx, binary, d, f"loop ext4 -g {gd}", gd, False, rounds, None)
            rows += got
            got, _ = _compare(ctx, binary, d, f"loop ext4 O_DIRECT -g {gd}", gd, True, rounds, 0.9, 1.1)
            rows += got
    # Memory: one cell of a 1 GiB file in 16 MiB records, against a tiny grid's footprint.
    with ctx.tmpfs("1200M") as d:
        small = ctx.fsmeter("iozone-quick", d, {"file_sizes": "[65536]", "record_sizes": "[4096]", "tests": "[0, 1]"})
        big = ctx.fsmeter("iozone-quick", d, {"file_sizes": "[\"1G\"]", "record_sizes": "[\"16M\"]", "tests": "[0, 1]"})
        growth_mb = (big["_maxrss_kb"] - small["_maxrss_kb"]) / 1024
        rows.append(ctx.row("tmpfs 1G file x 16M records", "peak RSS growth over a 64K grid (MiB)",
                            growth_mb, 64.0 + 32.0, "limit", target=1.0, higher_is_better=False,
                            notes=f"peak RSS {big['_maxrss_kb'] // 1024} MiB vs {small['_maxrss_kb'] // 1024} MiB; "
                                  "the limit is 64 MiB beyond the 32 MiB of record and stdio buffers "
                                  "(the stdio one stays untouched, so unmapped, without tests 6 and 7)"))
    return rows
