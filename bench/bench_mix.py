"""Benchmark, mix family: re-aim-7 against fsmeter's mix with the same workfile and N schedule.

re-aim-7 is built from its source at bench time in a scratch directory: the source is
taken from $REAIM_SRC (a git directory holding osdl-aim-7/, default bench/peers/areaim.git: a bare
clone of davidlohr/areaim) and
compiled directly with gcc (`-D_GNU_SOURCE -fcommon`, every src/*.c of its Makefile.am and
lib/*.c); its 2003 autotools files are not used, so the only prerequisites are gcc and
make (Debian: build-essential). Then, on a fresh tmpfs and on a fresh loop ext4, for each
N of the schedule 1, 2, 4, 8 and for several interleaved rounds:

    reaim -c CONFIG -f data/workfile.disk -s N -e N -j J -y      (CONFIG: FILESIZE 10k,
                                                         POOLSIZE 1m, DISKDIR <target>/reaim)
    fsmeter run aim7-disk --set tasks=N --set jobs_per_task=J --set sync=none

(J = 300 on tmpfs and 100 on loop ext4, 3 rounds; --quick: 100 and 50, 1 round). A re-aim
run whose result line has fewer children than N, or that reports a crashed child, is an
error: re-aim's JPM divides by N whatever happened to the children.

On tmpfs both run re-aim's workfile.disk. On the loop ext4 the target is measured on
workfile.disk less disk_dio_wrt and disk_dio_cp, which do no I/O in re-aim (a bug: their block
count is overwritten by posix_memalign's 0 before the loop) but do in fsmeter; workfile.disk
itself is reported there too, without a target. Both run the same weights, J jobs per task,
files of 10 KiB + 1 MiB / N, and no sync calls (re-aim -y; fsmeter sync=none). re-aim's
figure is the "Jobs per Minute" column of its result line; fsmeter's is the same formula
(jobs per task / subrun time x 60 x N). Every job of workfile.disk is a disk job, so JPM
is the disk-job throughput. Targets: at the peak, fsmeter JPM / re-aim JPM >= 0.85 (within
15%); the N of the peak (median JPM per N) within one step of the schedule.

Memory: summed RSS of 64 fsmeter tasks (workfile.disk, 20 jobs per task); target 300 MB.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from run import PEERS

REAIM_SRC = Path(os.environ.get("REAIM_SRC", str(PEERS / "areaim.git")))
SCHEDULE = [1, 2, 4, 8]
WORKFILE_DISK = "data/workfile.disk"
SOURCES = [
    "driver.c",
    "ram.c",
    "rand.c",
    "times_ms.c",
    "add.c",
    "creat_clo.c",
    "drv_funcs.c",
    "div.c",
    "disk_funcs.c",
    "pipe_test.c",
    "mul.c",
    "num_fcns.c",
    "int_fcns.c",
    "disk1.c",
    "disk_src.c",
    "fun.c",
    "funcal.c",
]
LINE = re.compile(r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", re.M)


def build_reaim(ctx, scratch: Path) -> Path:
    """Extract osdl-aim-7 from the git directory and compile `reaim`; returns its source folder."""
    if not (REAIM_SRC / "HEAD").exists():
        raise RuntimeError(f"re-aim source not found at {REAIM_SRC} (set REAIM_SRC to a git directory of re-aim)")
    tar = subprocess.run(
        ["git", "--git-dir", str(REAIM_SRC), "archive", "HEAD", "osdl-aim-7"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "x", "-C", str(scratch)], input=tar, check=True)
    src = scratch / "osdl-aim-7"
    files = [f"src/{f}" for f in SOURCES] + sorted(str(p.relative_to(src)) for p in (src / "lib").glob("*.c"))
    ctx.cmd(
        ["gcc", "-O2", "-w", "-D_GNU_SOURCE", "-fcommon", "-I.", "-Iinclude", "-Isrc", "-o", "reaim", *files, "-lm"],
        cwd=src,
        timeout=600,
    )
    return src


def reaim_jpm(ctx, src: Path, target: Path, n: int, jobs: int, workfile: str) -> float:
    # A fresh subdirectory, as fsmeter works in DIR/mix: on ext4 a new top-level directory
    # lands in another block group, which matters on a sparse loop image.
    work = target / "reaim"
    work.mkdir()
    try:
        return _reaim_jpm(ctx, src, work, n, jobs, workfile)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _reaim_jpm(ctx, src: Path, target: Path, n: int, jobs: int, workfile: str) -> float:
    conf = src / "bench.config"
    conf.write_text(f"FILESIZE 10k\nPOOLSIZE 1m\nDISKDIR {target}\n")
    res = ctx.cmd(
        ["./reaim", "-c", str(conf), "-f", workfile, "-s", str(n), "-e", str(n), "-j", str(jobs), "-y"],
        cwd=src,
        timeout=1800,
    )
    # Its JPM uses N, not the children that exited normally: a crashed child would inflate it.
    if "uncaught signal" in res.stdout + res.stderr:
        raise RuntimeError(f"a re-aim child crashed: {(res.stdout + res.stderr)[-400:]}")
    rows = [m for m in LINE.finditer(res.stdout) if int(m.group(1)) == n]
    if not rows:
        raise RuntimeError(f"no result line with {n} children in re-aim's output: {res.stdout[-400:]}")
    return float(rows[-1].group(5))


def fsmeter_jpm(ctx, target: Path, n: int, jobs: int, workfile: str) -> float:
    sets = {"tasks": n, "jobs_per_task": jobs, "sync": "none"}
    if workfile != WORKFILE_DISK:
        sets["workfile"] = workfile
    doc = ctx.fsmeter("aim7-disk", target, sets)
    return doc["phases"]["subruns"]["extra"]["subruns"][0]["jpm"]


def compare(ctx, src: Path, target: Path, jobs: int, rounds: int, workfile: str) -> tuple:
    ours = {n: [] for n in SCHEDULE}
    theirs = {n: [] for n in SCHEDULE}
    for _ in range(rounds):
        for n in SCHEDULE:  # interleaved, so load changes on the machine hit both alike
            theirs[n].append(reaim_jpm(ctx, src, target, n, jobs, workfile))
            ours[n].append(fsmeter_jpm(ctx, target, n, jobs, workfile))
    med = statistics.median
    return {n: med(v) for n, v in ours.items()}, {n: med(v) for n, v in theirs.items()}


def rows_for(ctx, where: str, ours: dict, theirs: dict, jobs: int, rounds: int, target=0.85) -> list:
    peak_o = max(ours, key=ours.get)
    peak_t = max(theirs, key=theirs.get)
    step = abs(SCHEDULE.index(peak_o) - SCHEDULE.index(peak_t))
    curve = "; ".join(f"N={n}: {ours[n]:,.0f} vs {theirs[n]:,.0f}" for n in SCHEDULE)
    note = f"median of {rounds} interleaved rounds, {jobs} jobs/task, no syncs (-y); JPM fsmeter vs re-aim: {curve}"
    return [
        ctx.row(f"{where}, peak", "peak JPM", ours[peak_o], theirs[peak_t], "re-aim-7", target=target, notes=note),
        ctx.row(
            where,
            "peak N",
            float(peak_o),
            float(peak_t),
            "re-aim-7",
            notes=f"same peak N within one step of 1,2,4,8: {'yes' if step <= 1 else 'NO'} ({step} step(s))",
        ),
    ]


def same_work_workfile(src: Path) -> str:
    """workfile.disk without the two jobs that do no I/O in re-aim: its disk_dio_wrt and disk_dio_cp
    overwrite their block count with local_pma()'s return value (0 on success) before the loop, so
    they create, close and unlink a file and report disk_iteration_count KiB they never moved.
    fsmeter moves the blocks. Written under re-aim's data/ so both tools read the same file."""
    lines = [
        ln
        for ln in (src / WORKFILE_DISK).read_text().splitlines()
        if ln.split()[-1:] not in (["disk_dio_wrt"], ["disk_dio_cp"])
    ]
    path = src / "data" / "workfile.disk-same-work"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def run(ctx) -> list:
    # Loop ext4 runs ~10,000 O_SYNC 1 KiB writes per 100 jobs at N=1: fewer jobs there.
    jobs, jobs_ext4 = (100, 50) if ctx.quick else (300, 100)
    rounds = 1 if ctx.quick else 3
    out = []
    scratch = Path(tempfile.mkdtemp(prefix="fsmeter-bench-reaim-"))
    try:
        src = build_reaim(ctx, scratch)
        same = same_work_workfile(src)
        with ctx.tmpfs("2G") as base:
            out += rows_for(
                ctx, "tmpfs, workfile.disk", *compare(ctx, src, base, jobs, rounds, WORKFILE_DISK), jobs, rounds
            )
            m = base / "mem"
            m.mkdir()
            doc = ctx.fsmeter("aim7-disk", m, {"tasks": 64, "jobs_per_task": 20, "sync": "none"})
            s = doc["phases"]["subruns"]["extra"]["subruns"][0]
            out.append(
                ctx.row(
                    "tmpfs, 64 tasks, workfile.disk",
                    "tasks' summed RSS MB",
                    s["tasks_rss_max_bytes"] / 2**20,
                    300.0,
                    "target 300 MB",
                    target=1.0,
                    higher_is_better=False,
                    notes=f"peak of 200 ms samples of the 64 task processes; summed PSS "
                    f"{s['tasks_pss_max_bytes'] / 2**20:.0f} MB; fsmeter's own process "
                    f"{doc['_maxrss_kb'] / 1024:.0f} MB max RSS",
                )
            )
        with ctx.loopfs("ext4", "1G") as mnt:
            # On a device the two jobs re-aim skips cost real I/O: the target is on the same work.
            out += rows_for(
                ctx,
                "loop ext4 1G, workfile.disk less disk_dio_wrt/cp (same work)",
                *compare(ctx, src, mnt, jobs_ext4, rounds, same),
                jobs_ext4,
                rounds,
            )
            out += rows_for(
                ctx,
                "loop ext4 1G, workfile.disk (re-aim skips 2 of 20 jobs' I/O)",
                *compare(ctx, src, mnt, jobs_ext4, rounds, WORKFILE_DISK),
                jobs_ext4,
                rounds,
                target=None,
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out
