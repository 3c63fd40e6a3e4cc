"""Benchmark: a fio job file whose jobs run at the same time, `fsmeter run JOB.fio` against fio on the same
job file. Target: a ratio of at least 1.0 for the group's throughput (both jobs' bytes over the group's time).

(g1) a 1 MiB sequential reader beside a 1 MiB sequential writer, psync, buffered, tmpfs
(g2) a 4 KiB random reader beside a 4 KiB random writer, psync, buffered, tmpfs (norandommap: fsmeter draws
     random offsets with replacement, and so does fio with it)

Each side lays its files out once in a folder of its own on one tmpfs and keeps them; the rounds alternate
which side runs first, and each row's ratio is the median of the rounds' paired ratios (fsmeter / fio, run
back to back). Each job's own throughput is given in the notes.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path

CASES = [
    ("(g1) 1M read + 1M write tmpfs psync", "rw=read\nbs=1m\n", "rw=write\nbs=1m\n"),
    (
        "(g2) 4K randread + 4K randwrite tmpfs psync",
        "rw=randread\nbs=4k\nnorandommap\n",
        "rw=randwrite\nbs=4k\nnorandommap\n",
    ),
]


def job_file(folder: Path, name: str, reader: str, writer: str, seconds: float) -> Path:
    p = folder / f"{name}.fio"
    p.write_text(
        f"[global]\nioengine=psync\nsize=256m\ntime_based\nruntime={int(seconds * 1000)}ms\n"
        f"randrepeat=0\n[reader]\n{reader}[writer]\n{writer}"
    )
    return p


def fio_group(ctx, jf: Path, cwd: Path) -> tuple:
    """fio on the job file: the group's bytes per second (all jobs' bytes over the longest job's time), and
    each job's."""
    out = cwd / "fio.json"
    ctx.cmd(["fio", "--output-format=json", f"--output={out}", str(jf)], cwd=cwd)
    jobs = json.loads(out.read_text())["jobs"]
    out.unlink()
    moved = {j["jobname"]: j["read"]["io_bytes"] + j["write"]["io_bytes"] for j in jobs}
    secs = {j["jobname"]: max(j["read"]["runtime"], j["write"]["runtime"]) / 1e3 for j in jobs}
    per = {n: moved[n] / secs[n] for n in moved}
    total = sum(moved.values())
    longest = max(secs.values())
    return total / longest, per


def fsmeter_group(ctx, jf: Path, d: Path) -> tuple:
    doc = ctx.fsmeter(str(jf), d, {}, keep_files=True, cache="keep")
    ph = doc["phases"]["group0:run"]
    return ph["total"]["bytes_per_s"], {n: j["total"]["bytes_per_s"] for n, j in ph["jobs"].items()}


def run(ctx) -> list:
    import shutil

    if shutil.which("fio") is None:
        return [
            ctx.row(case, "MiB/s", None, None, "fio", 1.0, notes="fio is not installed (make sysdeps)")
            for case, _, _ in CASES
        ]
    rows = []
    secs = ctx.seconds(10, 3)
    rounds = 2 if ctx.quick else 5
    jobs_dir = Path(tempfile.mkdtemp(prefix="fsmeter-bench-fio-groups-"))
    with ctx.tmpfs("1500M") as d:
        for i, (case, reader, writer) in enumerate(CASES):
            jf = job_file(jobs_dir, f"group{i}", reader, writer, secs)
            fsm_dir, fio_dir = d / f"fsm{i}", d / f"fio{i}"
            fsm_dir.mkdir()
            fio_dir.mkdir()
            f_v, p_v, pairs, f_jobs, p_jobs = [], [], [], [], []
            for r in range(rounds):
                order = (0, 1) if r % 2 == 0 else (1, 0)
                got = {}
                for side in order:
                    got[side] = fsmeter_group(ctx, jf, fsm_dir) if side == 0 else fio_group(ctx, jf, fio_dir)
                (fv, fj), (pv, pj) = got[0], got[1]
                f_v.append(fv)
                p_v.append(pv)
                pairs.append(fv / pv)
                f_jobs.append(fj)
                p_jobs.append(pj)
            med = statistics.median
            mib = 1 << 20
            each = ", ".join(
                f"{n} {med([j[n] for j in f_jobs]) / mib:,.0f} vs {med([j[n] for j in p_jobs]) / mib:,.0f}"
                for n in ("reader", "writer")
            )
            rows.append(
                ctx.row(
                    case,
                    "MiB/s",
                    med(f_v) / mib,
                    med(p_v) / mib,
                    "fio",
                    1.0,
                    pairs=pairs,
                    notes=f"group total; per job MiB/s fsmeter vs fio: {each}; median of {rounds} "
                    "paired rounds, order alternating",
                )
            )
            shutil.rmtree(fsm_dir)
            shutil.rmtree(fio_dir)
    shutil.rmtree(jobs_dir, ignore_errors=True)
    return rows
