"""Benchmark, tree family: fdtree's file-create phase against fs_mark (Debian fsmark).

fdtree itself is not packaged, so the peer is fs_mark creating the same number of
4 KiB files in the same number of directories, without sync:
    fs_mark -d DIR -n 20000 -s 4096 -S 0 -D 100 -N 200 -L 1
and fsmeter's tree with 1 level of 99 subdirectories (100 directories, root
included) and 200 files in each (20,000 files of one 4 KiB block). Target:
fsmeter create files/s / fs_mark files/s >= 1.0.

fs_mark times neither mkdir (it makes its directories before the clock starts)
nor removal (3.3 leaves the files), so mkdir has no peer figure, and removal is
compared with `rm -r` of fs_mark's tree (entries/s over rm's wall time,
process start included) against fsmeter's remove + rmdir phases.
"""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path

FILES = 20_000
DIRS = 100
PER_DIR = FILES // DIRS

FSM_NOTE = (
    "fs_mark pre-creates its directories untimed, fills them round-robin in blocks of -N, names files with "
    "40 bytes (time stamp + random) and counts name generation and its gettimeofday calls in files/s; "
    "fsmeter times open+write+close per file with short names (f<k>), depth-first like fdtree"
)


def fs_mark(ctx, d: Path) -> float:
    """One fs_mark run in a fresh folder: its Files/sec."""
    d.mkdir()
    # fs_mark refuses directory names of 40 bytes or more: name it relative to its parent.
    res = ctx.cmd(
        ["fs_mark", "-d", d.name, "-n", FILES, "-s", 4096, "-S", 0, "-D", DIRS, "-N", PER_DIR, "-L", 1], cwd=d.parent
    )
    # The result line follows the "FSUse%  Count  Size  Files/sec  App Overhead" header.
    lines = res.stdout.splitlines()
    hdr = next(i for i, ln in enumerate(lines) if ln.strip().startswith("FSUse%"))
    fields = lines[hdr + 1].split()
    if int(fields[1]) != FILES:
        raise RuntimeError(f"fs_mark created {fields[1]} files, expected {FILES}: {res.stdout[-400:]}")
    return float(fields[3])


def rm_r(ctx, d: Path) -> float:
    """`rm -r` of fs_mark's tree: entries (files + directories) per second of wall time."""
    entries = sum(1 for _ in d.rglob("*")) + 1
    res = ctx.cmd(["rm", "-r", d])
    return entries / res.wall_s


def fsmeter_tree(ctx, d: Path) -> dict:
    doc = ctx.fsmeter(
        "fdtree-quick",
        d,
        {"levels": 1, "dirs_per_level": DIRS - 1, "files_per_dir": PER_DIR, "file_blocks": 1, "stat": "false"},
    )
    ph = doc["phases"]
    assert ph["create"]["counters"]["files"] == FILES, ph["create"]["counters"]
    rm_entries = ph["remove"]["counters"]["files"] + ph["rmdir"]["counters"]["directories"]
    return {
        "create": ph["create"]["total"]["ops_per_s"],
        "mkdir": ph["mkdir"]["total"]["ops_per_s"],
        "remove": rm_entries / (ph["remove"]["elapsed_s"] + ph["rmdir"]["elapsed_s"]),
        "unlink": ph["remove"]["total"]["ops_per_s"],
    }


def compare(ctx, case: str, base: Path, runs: int) -> list:
    """Alternate fs_mark and fsmeter `runs` times on the same filesystem; medians side by side."""
    fsm_create, fsm_rm, ours = [], [], []
    for i in range(runs):
        d = base / f"fs_mark-{i}"
        fsm_create.append(fs_mark(ctx, d))
        fsm_rm.append(rm_r(ctx, d))
        w = base / f"fsmeter-{i}"
        w.mkdir()
        ours.append(fsmeter_tree(ctx, w))
        shutil.rmtree(w)
    med = statistics.median
    n = f"median of {runs}" if runs > 1 else "1 run"
    return [
        ctx.row(
            f"{case} create {FILES} x 4K in {DIRS} dirs",
            "files/s",
            med(o["create"] for o in ours),
            med(fsm_create),
            "fs_mark",
            1.0,
            notes=f"{n}; {FSM_NOTE}",
        ),
        ctx.row(
            f"{case} mkdir {DIRS} dirs",
            "dirs/s",
            med(o["mkdir"] for o in ours),
            None,
            "fs_mark",
            notes="no peer figure: fs_mark makes its directories before timing",
        ),
        ctx.row(
            f"{case} remove files + dirs",
            "entries/s",
            med(o["remove"] for o in ours),
            med(fsm_rm),
            "rm -r",
            notes=f"{n}; fs_mark 3.3 does not remove its files, so the peer is rm -r of its tree "
            f"(fts + unlinkat, process start in the time); fsmeter unlink alone "
            f"{med(o['unlink'] for o in ours):,.0f} files/s",
        ),
    ]


def run(ctx) -> list:
    if not shutil.which("fs_mark"):
        return [ctx.row("tree", "error", None, None, "fs_mark", notes="fs_mark not installed: apt-get install fsmark")]
    runs = 1 if ctx.quick else 3
    rows = []
    with ctx.tmpfs("1G") as d:
        rows += compare(ctx, "tmpfs", d, runs)
    with ctx.loopfs("ext4", "1G") as d:
        rows += compare(ctx, "ext4 1G loop", d, runs)
    return rows
