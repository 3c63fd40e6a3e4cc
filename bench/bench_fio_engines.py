"""Benchmark: fio's queued engines and buffer contents, `fsmeter run JOB.fio` against fio 3.x on the same
job file. Target: a ratio of at least 1.0 (the result must measure the filesystem, not fsmeter).

(d1-d4) 4 KiB random reads, O_DIRECT, libaio and io_uring at iodepth 1 and 32, on an ext4 loop image
        whose image sits in memory (the loop device does direct I/O on it), so the device is steady
(b1-b4) the same engines and depths, buffered 4 KiB random reads on tmpfs
(w1)    buffered 4 KiB random writes with libaio at iodepth 1 on tmpfs (fio's t/jobs t0031)
(z1)    buffered 8 KiB random reads and writes (70/30) with buffer_compress_percentage=66, refilled buffers,
        on tmpfs (OpenZFS's performance job's contents)
(r1)    a lone 1 MiB sequential buffered reader on tmpfs

Every job is time-based and draws offsets with replacement (norandommap; fsmeter's draws are with
replacement). Both sides run the one job file on the one file, laid out once and kept, so both read the
same extents; the rounds alternate which side runs first, and each row's ratio is the median of the
rounds' paired ratios (fsmeter / fio, back to back).

`FIO_ENGINES=b3,r1 python bench/run.py --only fio_engines` runs some cases only (by their tags), and
`FIO_ENGINES_ROUNDS=15` more paired rounds than 5, for a case whose rounds swing (b3: io_uring hands a
buffered tmpfs read to a worker thread, so each request waits for a thread to wake).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path

FILE = "fio-engines.0"

RAND4K = "rw=randread\nbs=4k\nnorandommap\n"
DIRECT = [
    (f"(d{i + 1}) 4K randread ext4 O_DIRECT {eng} QD{qd}", f"ioengine={eng}\niodepth={qd}\ndirect=1\n{RAND4K}")
    for i, (eng, qd) in enumerate([("libaio", 1), ("libaio", 32), ("io_uring", 1), ("io_uring", 32)])
]
BUFFERED = [
    (f"(b{i + 1}) 4K randread tmpfs buffered {eng} QD{qd}", f"ioengine={eng}\niodepth={qd}\n{RAND4K}")
    for i, (eng, qd) in enumerate([("libaio", 1), ("libaio", 32), ("io_uring", 1), ("io_uring", 32)])
]
TMPFS_OTHERS = [
    ("(w1) 4K randwrite tmpfs buffered libaio QD1", "ioengine=libaio\niodepth=1\nrw=randwrite\nbs=4k\nnorandommap\n"),
    (
        "(z1) 8K randrw 70/30 tmpfs compress 66%",
        "ioengine=psync\nrw=randrw\nrwmixread=70\nbs=8k\nnorandommap\nbuffer_compress_percentage=66\n"
        "buffer_compress_chunk=4096\nrefill_buffers\n",
    ),
    ("(r1) 1M read tmpfs buffered psync", "ioengine=psync\nrw=read\nbs=1m\n"),
]


def job_file(folder: Path, name: str, body: str, seconds: float, size: str) -> Path:
    p = folder / f"{name}.fio"
    p.write_text(
        f"[bench]\nfilename={FILE}\nsize={size}\ntime_based\nruntime={int(seconds * 1000)}ms\nrandrepeat=0\n{body}"
    )
    return p


def fio_rate(ctx, jf: Path, cwd: Path) -> float:
    out = jf.with_suffix(".json")
    ctx.cmd(["fio", "--output-format=json", f"--output={out}", str(jf)], cwd=cwd)
    job = json.loads(out.read_text())["jobs"][0]
    out.unlink()
    return float(job["read"]["bw_bytes"] + job["write"]["bw_bytes"])


def fsmeter_rate(ctx, jf: Path, d: Path) -> float:
    doc = ctx.fsmeter(str(jf), d, {}, keep_files=True, cache="keep")
    return float(doc["phases"]["bench:run"]["total"]["bytes_per_s"])


def _cases(ctx, d: Path, jobs_dir: Path, cases: list, size: str, where: str) -> list:
    rows = []
    secs = ctx.seconds(8, 3)
    rounds = ctx.rounds("FIO_ENGINES_ROUNDS", 5, 3)
    for i, (case, body) in enumerate(cases):
        jf = job_file(jobs_dir, f"{where}{i}", body, secs, size)
        # The file laid out once (by fsmeter, which keeps it), then read by both sides.
        fsmeter_rate(ctx, job_file(jobs_dir, f"{where}{i}-lay", body, 0.2, size), d)
        f_v, p_v, pairs = [], [], []
        for r in range(rounds):
            got = {}
            for side in (0, 1) if r % 2 == 0 else (1, 0):
                got[side] = fsmeter_rate(ctx, jf, d) if side == 0 else fio_rate(ctx, jf, d)
            f_v.append(got[0])
            p_v.append(got[1])
            pairs.append(got[0] / got[1])
        mib = 1 << 20
        med = statistics.median
        rows.append(
            ctx.row(
                case,
                "MiB/s",
                med(f_v) / mib,
                med(p_v) / mib,
                "fio",
                1.0,
                pairs=pairs,
                notes=f"{where}; median of {rounds} paired rounds of {secs:g} s, order alternating",
            )
        )
    return rows


def tag(case: str) -> str:
    """A case's tag: "(b3) 4K randread ..." -> "b3"."""
    return case[1 : case.index(")")]


def wanted(cases: list) -> list:
    """The cases FIO_ENGINES names (all when unset)."""
    want = {w.strip() for w in os.environ.get("FIO_ENGINES", "").split(",") if w.strip()}
    known = {tag(c) for c, _ in DIRECT + BUFFERED + TMPFS_OTHERS}
    if want - known:
        raise SystemExit(f"FIO_ENGINES: {', '.join(sorted(want - known))}: use tags among {', '.join(sorted(known))}")
    return [c for c in cases if not want or tag(c[0]) in want]


def run(ctx) -> list:
    cases = DIRECT + BUFFERED + TMPFS_OTHERS
    if shutil.which("fio") is None:
        return [
            ctx.row(c, "MiB/s", None, None, "fio", 1.0, notes="fio is not installed (make sysdeps)") for c, _ in cases
        ]
    rows = []
    jobs_dir = Path(tempfile.mkdtemp(prefix="fsmeter-bench-fio-engines-"))
    try:
        if wanted(DIRECT):
            with ctx.loopfs("ext4", "1G", in_ram=True) as d:
                where = "ext4 loop, image in memory" + ("" if ctx.loop_dio else " (loop WITHOUT direct I/O)")
                rows += _cases(ctx, d, jobs_dir, wanted(DIRECT), "512m", where)
        if wanted(BUFFERED + TMPFS_OTHERS):
            with ctx.tmpfs("1G") as d:
                rows += _cases(ctx, d, jobs_dir, wanted(BUFFERED + TMPFS_OTHERS), "512m", "tmpfs")
    finally:
        shutil.rmtree(jobs_dir, ignore_errors=True)
    return rows
