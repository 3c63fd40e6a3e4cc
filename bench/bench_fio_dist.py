"""Benchmark: skewed random reads (random_distribution) against fio doing the same.

4 KiB random reads of a 1 GiB file on tmpfs, psync, 1 thread, offsets drawn by fio's zipf (theta 1.2)
and pareto (h 0.2): `fsmeter run rand-read-4k --set random_distribution=...` against `fio
--random_distribution=... --norandommap --randrepeat=0` on the same cached file, time-based, rounds
interleaved with the order alternating, medians and the per-round ratios. Target: ratio >= 1.0 (a skewed
draw costs fsmeter no more than fio: one powf for zipf and pareto, no allocation). Both read mostly the
same few hot pages, so the figures are far above the uniform case's.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

GiB = 1 << 30
FILE = "fsmeter.access.0"
DISTS = ["zipf:1.2", "pareto:0.2"]


def fio(ctx, filename: Path, dist: str, seconds: float) -> float:
    res = ctx.cmd(
        [
            "fio",
            "--name=bench",
            f"--filename={filename}",
            f"--size={GiB}",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=psync",
            f"--random_distribution={dist}",
            "--norandommap",
            "--randrepeat=0",
            f"--runtime={seconds}",
            "--time_based",
            "--output-format=json",
        ]
    )
    return json.loads(res.stdout[res.stdout.index("{") :])["jobs"][0]["read"]["iops"]


def fsm(ctx, d: Path, dist: str, seconds: float, seed: int) -> float:
    doc = ctx.fsmeter(
        "rand-read-4k",
        d,
        {
            "file_size": GiB,
            "reuse_files": "true",
            "warmup_s": 0,
            "seed": seed,
            "duration_s": seconds,
            "random_distribution": dist,
        },
        keep_files=True,
        cache="keep",
    )
    return doc["phases"]["run"]["total"]["ops_per_s"]


def run(ctx) -> list:
    rows = []
    secs = ctx.seconds(10, 3)
    rounds = 3 if ctx.quick else 5
    med = statistics.median
    with ctx.tmpfs("1500M") as d:
        fsm(ctx, d, "random", 0.2, 1)  # lay the file out once; both tools read it
        for dist in DISTS:
            ours, theirs = [], []
            for r in range(rounds):
                order = [0, 1] if r % 2 == 0 else [1, 0]
                for who in order:
                    if who == 0:
                        ours.append(fsm(ctx, d, dist, secs, 1000 + r))
                    else:
                        theirs.append(fio(ctx, d / FILE, dist, secs))
            pairs = [a / b for a, b in zip(ours, theirs)]
            rows.append(
                ctx.row(
                    f"4K randread {dist} tmpfs psync 1T",
                    "IOPS",
                    med(ours),
                    med(theirs),
                    "fio",
                    1.0,
                    pairs=pairs,
                    notes=f"median of {rounds} interleaved rounds; fio --norandommap --randrepeat=0",
                )
            )
    return rows
