"""Benchmark: the access family against fio and the bare-loop ceiling.

(a) 4 KiB random read of a cached 1 GiB file on tmpfs, 1 thread, psync: IOPS ratio, target >= 1.10
(b) 4 KiB random read, O_DIRECT, queue depth 32, io_uring, 1 GiB file on ext4 on a loop device: >= 1.0
(c) 1 MiB sequential O_DIRECT read and write on the same: >= 0.98
(d) fsmeter (a) / bare_pread (bench/bare_pread.c) on the same file: goal >= 0.95
(e) scaling: (a) with 2 threads over 1 thread, fsmeter and fio side by side: goal >= 1.8
(f) 1 MiB sequential O_DIRECT read, psync, of a 1 GiB file on ext4 on a loop device whose image is in
    memory, with request buffers on hugetlb pages: fsmeter buffer_memory=hugetlb against fio
    --iomem=mmaphuge (anonymous MAP_HUGETLB, the same 2 MiB pool, which the bench grows by 8 pages
    and puts back), beside both tools' default 4 KiB-page buffers: >= 0.98 for each pair. The loop
    device splits a 1 MiB request into scattered 4 KiB pages in two and keeps it whole in a huge
    page; the notes give the device requests per MiB read (/sys/block/loopN/stat).

Equal work. fsmeter draws random offsets uniformly *with replacement* (no map of blocks
already visited), so fio runs with --norandommap (else it keeps a random map and visits each
block once per pass, which costs it time and changes the access pattern), and with
--randrepeat=0 while fsmeter gets a new seed each round: both draw a fresh sequence per run.
Offsets are aligned to the block size on both sides (fio's blockalign = bs, fsmeter's
rand-read-4k alignment = 4K). With io_uring, fsmeter registers its files and buffers with the
ring, so fio runs with --registerfiles --fixedbufs.

Order. On a loop device both tools share the host's caches and writeback, so the tool that
runs second pays for the first one's leftovers. Every case here runs in interleaved rounds
whose order alternates (fsmeter first, then fio first, ...), and reports medians with the
spread (min..max) of each side; the loop device is attached with direct I/O
(losetup --direct-io=on, checked in /sys/block/loopN/loop/dio) so that device-bound means the
device, not the host's page cache.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from run import hugetlb_pages, loop_reads

GiB = 1 << 30
FILE = "fsmeter.access.0"  # the name fsmeter's access family lays files out under
# fio runs straight after on the same file with whatever is cached, so fsmeter keeps the cache too (--cache keep).


def fio_args(
    filename: Path,
    rw: str,
    bs: str,
    seconds: float,
    engine: str = "psync",
    depth: int = 1,
    direct: bool = False,
    jobs: int = 1,
    iomem: str = "malloc",
) -> list:
    """fio doing what fsmeter does (see the module docstring: equal work)."""
    args = [
        "fio",
        "--name=bench",
        f"--filename={filename}",
        f"--size={GiB}",
        f"--rw={rw}",
        f"--bs={bs}",
        f"--ioengine={engine}",
        f"--iodepth={depth}",
        f"--direct={int(direct)}",
        f"--numjobs={jobs}",
        f"--runtime={seconds}",
        "--time_based",
        "--group_reporting",
        "--output-format=json",
        f"--iomem={iomem}",
    ]
    if rw.startswith("rand"):
        args += ["--norandommap", "--randrepeat=0"]
    if engine == "io_uring":
        args += ["--registerfiles", "--fixedbufs"]
    return args


def alternating(rounds: int, tools: list) -> list:
    """Run order of each round: the tools' order reverses from one round to the next."""
    return [list(tools) if r % 2 == 0 else list(reversed(tools)) for r in range(rounds)]


def interleaved(rounds: int, runners: dict) -> dict:
    """Call each runner (name -> fn(round) -> value) once per round, in alternating order."""
    got = {name: [] for name in runners}
    for r, order in enumerate(alternating(rounds, list(runners))):
        for name in order:
            got[name].append(runners[name](r))
    return got


def spread(values: list) -> str:
    return f"{min(values):,.0f}..{max(values):,.0f}"


def fio(
    ctx,
    filename: Path,
    rw: str,
    bs: str,
    seconds: float,
    engine: str = "psync",
    depth: int = 1,
    direct: bool = False,
    jobs: int = 1,
    iomem: str = "malloc",
) -> dict:
    res = ctx.cmd(fio_args(filename, rw, bs, seconds, engine, depth, direct, jobs, iomem))
    job = json.loads(res.stdout[res.stdout.index("{") :])["jobs"][0]
    side = job["read"] if rw in ("randread", "read") else job["write"]
    return {"iops": side["iops"], "MiB_s": side["bw_bytes"] / (1 << 20), "bytes": side["io_bytes"]}


def fsm(ctx, workload: str, d: Path, seconds: float, **sets) -> dict:
    doc = ctx.fsmeter(
        workload,
        d,
        {"file_size": GiB, "reuse_files": "true", "warmup_s": 0, "seed": 42, "duration_s": seconds, **sets},
        keep_files=True,
        cache="keep",
    )
    tot = doc["phases"]["run"]["total"]
    return {"iops": tot["ops_per_s"], "MiB_s": tot["bytes_per_s"] / (1 << 20), "bytes": tot["bytes"]}


def bare_exe():
    """Build bench/bare_pread.c (the syscall-bound ceiling), or None without gcc."""
    src = Path(__file__).with_name("bare_pread.c")
    if not src.exists() or not shutil.which("gcc"):
        return None
    exe = Path(tempfile.mkdtemp()) / "bare-pread"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(src)], check=True)
    return exe


def run(ctx) -> list:
    rows = []
    secs = ctx.seconds(10, 3)
    rounds = 2 if ctx.quick else 4
    med = statistics.median
    note = f"median of {rounds} interleaved rounds, order alternating"
    with ctx.tmpfs("1500M") as d:
        fsm(ctx, "rand-read-4k", d, 0.2)  # lay out the 1 GiB file once; every tool reads it
        exe = bare_exe()
        # On a shared VM the machine's speed drifts over minutes: one run per tool would compare
        # different moments more than different tools.
        runners = {
            "fsmeter": lambda r: fsm(ctx, "rand-read-4k", d, secs, seed=1000 + r)["iops"],
            "fio": lambda r: fio(ctx, d / FILE, "randread", "4k", secs)["iops"],
            "fsmeter-2T": lambda r: fsm(ctx, "rand-read-4k", d, secs, threads=2, seed=2000 + r)["iops"],
            "fio-2T": lambda r: fio(ctx, d / FILE, "randread", "4k", secs, jobs=2)["iops"],
        }
        if exe:
            runners["bare"] = lambda r: float(ctx.cmd([exe, d / FILE, GiB, secs]).stdout.strip())
        got = interleaved(rounds, runners)
        a_f, a_p, e_f, e_p = got["fsmeter"], got["fio"], got["fsmeter-2T"], got["fio-2T"]
        bare = got.get("bare", [])
        rows.append(
            ctx.row(
                "(a) 4K randread tmpfs psync 1T",
                "IOPS",
                med(a_f),
                med(a_p),
                "fio",
                1.10,
                notes=f"{note}; fsmeter {spread(a_f)}, fio {spread(a_p)}; fio --norandommap --randrepeat=0",
            )
        )
        rows.append(
            ctx.row(
                "(d) (a) vs bare loop",
                "IOPS",
                med(a_f),
                med(bare) if bare else None,
                "bare-pread",
                0.95,
                notes=f"{note}; fsmeter keeps latency histograms on"
                if bare
                else "gcc not found to build bench/bare_pread.c",
            )
        )
        rows.append(
            ctx.row(
                "(e) 2T/1T scaling",
                "x",
                med(e_f) / med(a_f),
                1.0,
                "ideal 2x=2.0",
                1.8,
                notes=f"{note}; fio 2T/1T = {med(e_p) / med(a_p):.2f}",
            )
        )
        rows.append(
            ctx.row(
                "(e) 4K randread tmpfs psync 2T",
                "IOPS",
                med(e_f),
                med(e_p),
                "fio",
                notes=f"{note}; fsmeter {spread(e_f)}, fio {spread(e_p)}",
            )
        )
    with ctx.loopfs("ext4", "1400M") as d:
        dio = f"loop direct I/O {'on' if getattr(ctx, 'loop_dio', None) else 'OFF (host page cache in the way)'}"
        fsm(ctx, "rand-read-4k", d, 0.2)
        got = interleaved(
            rounds,
            {
                "fsmeter": lambda r: fsm(
                    ctx, "rand-read-4k", d, secs, backend="io_uring", queue_depth=32, direct="true", seed=3000 + r
                )["iops"],
                "fio": lambda r: fio(ctx, d / FILE, "randread", "4k", secs, engine="io_uring", depth=32, direct=True)[
                    "iops"
                ],
            },
        )
        rows.append(
            ctx.row(
                "(b) 4K randread ext4/loop O_DIRECT io_uring qd32",
                "IOPS",
                med(got["fsmeter"]),
                med(got["fio"]),
                "fio",
                1.0,
                notes=f"{note}; fsmeter {spread(got['fsmeter'])}, fio {spread(got['fio'])}; {dio}; "
                "fio --norandommap --randrepeat=0 --registerfiles --fixedbufs",
            )
        )
        for wl, rw in (("seq-read", "read"), ("seq-write", "write")):
            got = interleaved(
                rounds,
                {
                    "fsmeter": lambda r: fsm(ctx, wl, d, secs, record_size="1M", direct="true")["MiB_s"],
                    "fio": lambda r: fio(ctx, d / FILE, rw, "1M", secs, direct=True)["MiB_s"],
                },
            )
            ratios = [a / b for a, b in zip(got["fsmeter"], got["fio"])]
            rows.append(
                ctx.row(
                    f"(c) 1M {rw} ext4/loop O_DIRECT psync",
                    "MiB/s",
                    med(got["fsmeter"]),
                    med(got["fio"]),
                    "fio",
                    0.98,
                    notes=f"{note}; fsmeter {spread(got['fsmeter'])}, fio {spread(got['fio'])}, per-round "
                    f"ratio {min(ratios):.2f}..{max(ratios):.2f}; {dio}",
                )
            )
    rows += huge_page_rows(ctx, secs, rounds)
    return rows


def huge_page_rows(ctx, secs: float, rounds: int) -> list:
    """(f): hugetlb request buffers against fio's iomem=mmaphuge, heap buffers against fio's malloc."""
    med = statistics.median
    rows = []
    with ctx.loopfs("ext4", "1400M", in_ram=True) as d, hugetlb_pages(8):
        dio = f"loop direct I/O {'on' if getattr(ctx, 'loop_dio', None) else 'OFF (host page cache in the way)'}"
        fsm(ctx, "seq-read", d, 0.2, record_size="1M")
        per_mib: dict = {}

        def counted(name, fn):
            """fn's MiB/s; the device's read requests per MiB the run read go to per_mib."""

            def run(r):
                before = loop_reads(d)
                got = fn(r)
                per_mib.setdefault(name, []).append((loop_reads(d) - before) / max(got["bytes"] / (1 << 20), 1.0))
                return got["MiB_s"]

            return run

        sides = {
            "fsmeter heap": lambda r: fsm(ctx, "seq-read", d, secs, record_size="1M", direct="true"),
            "fio malloc": lambda r: fio(ctx, d / FILE, "read", "1M", secs, direct=True),
            "fsmeter hugetlb": lambda r: fsm(
                ctx, "seq-read", d, secs, record_size="1M", direct="true", buffer_memory="hugetlb"
            ),
            "fio mmaphuge": lambda r: fio(ctx, d / FILE, "read", "1M", secs, direct=True, iomem="mmaphuge"),
        }
        got = interleaved(rounds, {k: counted(k, fn) for k, fn in sides.items()})
        for mine, theirs, what, iomem in (
            ("fsmeter hugetlb", "fio mmaphuge", "hugetlb buffers", "mmaphuge"),
            ("fsmeter heap", "fio malloc", "4 KiB-page buffers", "malloc"),
        ):
            ratios = [a / b for a, b in zip(got[mine], got[theirs])]
            rows.append(
                ctx.row(
                    f"(f) 1M read ext4/in-memory loop O_DIRECT psync, {what}",
                    "MiB/s",
                    med(got[mine]),
                    med(got[theirs]),
                    "fio",
                    0.98,
                    notes=f"median of {rounds} interleaved rounds; fsmeter {spread(got[mine])}, fio "
                    f"{spread(got[theirs])}, per-round ratio {min(ratios):.2f}..{max(ratios):.2f}; "
                    f"device requests per MiB: fsmeter {med(per_mib[mine]):.2f}, fio "
                    f"{med(per_mib[theirs]):.2f}; "
                    f"fio --iomem={iomem}; {dio}",
                )
            )
    return rows
