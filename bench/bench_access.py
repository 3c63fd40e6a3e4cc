"""Issue 2 benchmarks: the access family against fio and the bare-loop ceiling.

(a) 4 KiB random read of a cached 1 GiB file on tmpfs, 1 thread, psync: IOPS ratio, target >= 1.10
(b) 4 KiB random read, O_DIRECT, queue depth 32, io_uring, 1 GiB file on ext4 on a loop device: >= 1.0
(c) 1 MiB sequential O_DIRECT read and write on the same: >= 0.98
(d) fsmeter (a) / bare-pread (../shared/limits/bare-pread.c) on the same file: goal >= 0.95
(e) scaling: (a) with 2 threads over 1 thread, fsmeter and fio side by side: goal >= 1.8
"""
from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from run import SHARED

GiB = 1 << 30
FILE = "fsmeter.access.0"  # the name fsmeter's access family lays files out under
# fio runs straight after on the same file with whatever is cached, so fsmeter keeps the cache too (--cache keep).


def fio(ctx, filename: Path, rw: str, bs: str, seconds: float, engine: str = "psync", depth: int = 1,
        direct: bool = False, jobs: int = 1) -> dict:
    args = ["fio", "--name=bench", f"--filename={filename}", f"--size={GiB}", f"--rw={rw}", f"--bs={bs}",
            f"--ioengine={engine}", f"--iodepth={depth}", f"--direct={int(direct)}", f"--numjobs={jobs}",
            f"--runtime={seconds}", "--time_based", "--group_reporting", "--output-format=json"]
    res = ctx.cmd(args)
    job = json.loads(res.stdout[res.stdout.index("{"):])["jobs"][0]
    side = job["read"] if rw in ("randread", "read") else job["write"]
    return {"iops": side["iops"], "MiB_s": side["bw_bytes"] / (1 << 20)}


def fsm(ctx, workload: str, d: Path, seconds: float, **sets) -> dict:
    doc = ctx.fsmeter(workload, d, {"file_size": GiB, "reuse_files": "true", "warmup_s": 0,
                                    "duration_s": seconds, **sets}, keep_files=True, cache="keep")
    tot = doc["phases"]["run"]["total"]
    return {"iops": tot["ops_per_s"], "MiB_s": tot["bytes_per_s"] / (1 << 20)}


def bare_exe():
    """Build ../shared/limits/bare-pread.c (the syscall-bound ceiling), or None where it is missing."""
    src = SHARED / "limits" / "bare-pread.c"
    if not src.exists() or not shutil.which("gcc"):
        return None
    exe = Path(tempfile.mkdtemp()) / "bare-pread"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(src)], check=True)
    return exe


def run(ctx) -> list:
    rows = []
    secs = ctx.seconds(10, 3)
    rounds = 1 if ctx.quick else 3
    with ctx.tmpfs("1500M") as d:
        fsm(ctx, "rand-read-4k", d, 0.2)  # lay out the 1 GiB file once; every tool reads it
        exe = bare_exe()
        # Interleaved rounds, medians: on a shared VM the machine's speed drifts over minutes,
        # and one run per tool would compare different moments more than different tools.
        a_f, a_p, bare, e_f, e_p = [], [], [], [], []
        for _ in range(rounds):
            a_f.append(fsm(ctx, "rand-read-4k", d, secs)["iops"])
            a_p.append(fio(ctx, d / FILE, "randread", "4k", secs)["iops"])
            if exe:
                bare.append(float(ctx.cmd([exe, d / FILE, GiB, secs]).stdout.strip()))
            e_f.append(fsm(ctx, "rand-read-4k", d, secs, threads=2)["iops"])
            e_p.append(fio(ctx, d / FILE, "randread", "4k", secs, jobs=2)["iops"])
        med = statistics.median
        note = f"median of {rounds} interleaved rounds"
        rows.append(ctx.row("(a) 4K randread tmpfs psync 1T", "IOPS", med(a_f), med(a_p), "fio", 1.10, notes=note))
        rows.append(ctx.row("(d) (a) vs bare loop", "IOPS", med(a_f), med(bare) if bare else None, "bare-pread", 0.95,
                            notes=f"{note}; fsmeter keeps latency histograms on" if bare else "bare-pread.c not found"))
        rows.append(ctx.row("(e) 2T/1T scaling", "x", med(e_f) / med(a_f), 1.0, "ideal 2x=2.0", 1.8,
                            notes=f"{note}; fio 2T/1T = {med(e_p) / med(a_p):.2f}"))
        rows.append(ctx.row("(e) 4K randread tmpfs psync 2T", "IOPS", med(e_f), med(e_p), "fio", notes=note))
    with ctx.loopfs("ext4", "1400M") as d:
        fsm(ctx, "rand-read-4k", d, 0.2)
        b_f = fsm(ctx, "rand-read-4k", d, secs, backend="io_uring", queue_depth=32, direct="true")
        b_p = fio(ctx, d / FILE, "randread", "4k", secs, engine="io_uring", depth=32, direct=True)
        rows.append(ctx.row("(b) 4K randread ext4/loop O_DIRECT io_uring qd32", "IOPS", b_f["iops"], b_p["iops"], "fio", 1.0))
        for wl, rw in (("seq-read", "read"), ("seq-write", "write")):
            c_f = fsm(ctx, wl, d, secs, record_size="1M", direct="true")
            c_p = fio(ctx, d / FILE, rw, "1M", secs, direct=True)
            rows.append(ctx.row(f"(c) 1M {rw} ext4/loop O_DIRECT psync", "MiB/s", c_f["MiB_s"], c_p["MiB_s"], "fio", 0.98))
    return rows
