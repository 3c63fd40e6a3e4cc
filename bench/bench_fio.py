"""Benchmark: a fio job file must not be a slower path than the named workload it maps to.

bench_access's cases written as fio job files, run by `fsmeter run JOB.fio`, against `fsmeter run <named
workload>` with the same parameters, on the same (kept) file, interleaved rounds, medians; target ratio >= 0.98:

(a) 4 KiB random read, 1 GiB file on tmpfs, psync, 1 thread   (rand-read-4k)
(e) the same with 2 threads (numjobs=2 on the shared file)     (rand-read-4k, threads=2)
(c) 1 MiB sequential read and write, buffered, tmpfs           (seq-read / seq-write, record_size=1M)

The job files name the named workload's file (filename=fsmeter.access.0), so both read the same cached data.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

GiB = 1 << 30
FILE = "fsmeter.access.0"

CASES = [
    # (case, named workload, its --set, the job file's body)
    ("(a) 4K randread tmpfs psync 1T", "rand-read-4k", {}, "rw=randread\nbs=4k\nioengine=psync\nnorandommap\n"),
    (
        "(e) 4K randread tmpfs psync 2T",
        "rand-read-4k",
        {"threads": 2},
        "rw=randread\nbs=4k\nioengine=psync\nnorandommap\nnumjobs=2\n",
    ),
    ("(c) 1M read tmpfs psync", "seq-read", {"record_size": "1M"}, "rw=read\nbs=1m\nioengine=psync\n"),
    ("(c) 1M write tmpfs psync", "seq-write", {"record_size": "1M"}, "rw=write\nbs=1m\nioengine=psync\n"),
]


def job_file(folder: Path, name: str, body: str, seconds: float) -> Path:
    p = folder / f"{name}.fio"
    p.write_text(f"[bench]\nfilename={FILE}\nsize=1g\ntime_based\nruntime={int(seconds * 1000)}ms\n{body}")
    return p


def run(ctx) -> list:
    rows = []
    secs = ctx.seconds(10, 3)
    rounds = 1 if ctx.quick else 3
    jobs_dir = Path(tempfile.mkdtemp(prefix="fsmeter-bench-fio-"))
    with ctx.tmpfs("1500M") as d:
        base = {"file_size": GiB, "reuse_files": "true", "warmup_s": 0}
        ctx.fsmeter("rand-read-4k", d, {**base, "duration_s": 0.2}, keep_files=True, cache="keep")
        for i, (case, named, sets, body) in enumerate(CASES):
            jf = job_file(jobs_dir, f"case{i}", body, secs)
            named_v, job_v = [], []
            for _ in range(rounds):
                doc = ctx.fsmeter(named, d, {**base, "duration_s": secs, **sets}, keep_files=True, cache="keep")
                named_v.append(doc["phases"]["run"]["total"]["bytes_per_s"])
                doc = ctx.fsmeter(str(jf), d, {}, keep_files=True, cache="keep")
                job_v.append(doc["phases"]["bench:run"]["total"]["bytes_per_s"])
            med = statistics.median
            rows.append(
                ctx.row(
                    case,
                    "MiB/s",
                    med(job_v) / (1 << 20),
                    med(named_v) / (1 << 20),
                    f"fsmeter run {named}",
                    0.98,
                    notes=f"job file / named workload; median of {rounds} interleaved rounds",
                )
            )
    return rows
