"""Benchmark: the fileset family against PostMark 1.53 and fs_mark, and its memory per file.

(a) postmark: 10,000 files of 512..10,000 bytes on tmpfs, one thread: fsmeter tx/s / postmark tx/s, target >= 1.0.
    PostMark times in whole seconds (time()), so the transaction count is raised until postmark's
    transaction phase lasts >= 10 s (3 s with --quick); both run the same count.
(b) the same with fsmeter on 2 threads (each owns half the files and transactions) / postmark: target >= 1.6.
(c) fs_mark -n 20000 -s 4096 -S 0 -d DIR against fsmeter's create phase of 20,000 files of 4096 bytes
    (one 4096-byte write each, unbuffered, no sync): files/s, target >= 1.0.
(d) peak RSS of a 1,000,000-file create (1-byte files on tmpfs) less that of a 1-file run: engine bytes
    per file, target <= 100.
"""

from __future__ import annotations

import re

FILES = 10_000
SIZES = {"size_low": 512, "size_high": 10_000}


def postmark(ctx, d, files: int, transactions: int, low: int, high: int) -> dict:
    cmds = (
        "\n".join(
            [
                f"set location {d}",
                f"set number {files}",
                f"set transactions {transactions}",
                f"set size {low} {high}",
                "set read 512",
                "set write 512",
                "set seed 42",
                "run",
                "quit",
            ]
        )
        + "\n"
    )
    res = ctx.cmd(["postmark"], cwd=d, stdin=cmds, timeout=1800)
    m = re.search(r"(\d+) seconds of transactions \((\d+) per second\)", res.stdout)
    if not m:
        raise RuntimeError(f"no transaction rate in postmark's output:\n{res.stdout[-2000:]}")
    secs = int(m.group(1))
    return {"tx_s": transactions / secs, "secs": secs, "maxrss_kb": res.maxrss_kb}


def fsm_postmark(ctx, d, transactions: int, threads: int, **sets) -> dict:
    doc = ctx.fsmeter(
        "postmark-big",
        d,
        {"files": FILES, "transactions": transactions, "threads": threads, **SIZES, **sets},
        cache="keep",
    )
    tx = doc["phases"]["transactions"]
    return {"tx_s": tx["extra"]["rates"]["transactions_per_s"], "secs": tx["elapsed_s"], "doc": doc}


def fs_mark(ctx, d) -> float:
    # fs_mark wants a directory name under 40 bytes: give it a relative one.
    res = ctx.cmd(["fs_mark", "-n", "20000", "-s", "4096", "-S", "0", "-d", d.name], cwd=d.parent, timeout=600)
    rows = [
        line.split() for line in res.stdout.splitlines() if re.match(r"^\s*\d+\s+\d+\s+\d+\s+[\d.]+\s+\d+\s*$", line)
    ]
    if not rows:
        raise RuntimeError(f"no result line in fs_mark's output:\n{res.stdout[-2000:]}")
    return float(rows[-1][3])


def run(ctx) -> list:
    rows = []
    min_secs = 3 if ctx.quick else 10
    with ctx.tmpfs("3G") as d:
        # Calibrate: PostMark's whole-second clock needs a long transaction phase.
        tx = 50_000
        pm = postmark(ctx, d, FILES, tx, SIZES["size_low"], SIZES["size_high"])
        while pm["secs"] < min_secs:
            tx = int(tx * (min_secs + 2) / max(pm["secs"], 0.5))
            pm = postmark(ctx, d, FILES, tx, SIZES["size_low"], SIZES["size_high"])
        f1 = fsm_postmark(ctx, d, tx, 1)
        rows.append(
            ctx.row(
                f"(a) postmark {FILES} files, {tx} tx, tmpfs, 1T",
                "tx/s",
                f1["tx_s"],
                pm["tx_s"],
                "postmark",
                1.0,
                notes=f"postmark {pm['secs']} s (whole seconds), fsmeter {f1['secs']:.2f} s",
            )
        )
        f2 = fsm_postmark(ctx, d, tx, 2)
        rows.append(
            ctx.row(
                "(b) same, fsmeter 2T (shared dirs)",
                "tx/s",
                f2["tx_s"],
                pm["tx_s"],
                "postmark 1T",
                1.6,
                notes=f"fsmeter 2T/1T = {f2['tx_s'] / f1['tx_s']:.2f}",
            )
        )
        f2d = fsm_postmark(ctx, d, tx, 2, subdirectories=16)
        f1d = fsm_postmark(ctx, d, tx, 1, subdirectories=16)
        rows.append(
            ctx.row(
                "(b') 2T with 16 subdirectories",
                "tx/s",
                f2d["tx_s"],
                pm["tx_s"],
                "postmark 1T",
                1.6,
                notes=f"fsmeter 2T/1T = {f2d['tx_s'] / f1d['tx_s']:.2f} (16 subdirs both)",
            )
        )
    with ctx.tmpfs("1G") as d:
        (d / "fm").mkdir()
        fm = fs_mark(ctx, d / "fm")
        doc = ctx.fsmeter(
            "postmark",
            d,
            {
                "files": 20000,
                "transactions": 10,
                "size_low": 4096,
                "size_high": 4096,
                "write_block": 16384,
                "buffering": "false",
                "bias_read": -1,
                "bias_create": -1,
            },
            cache="keep",
        )
        rows.append(
            ctx.row(
                "(c) create 20000 x 4 KiB, no sync, tmpfs",
                "files/s",
                doc["phases"]["create"]["extra"]["rates"]["files_created_per_s"],
                fm,
                "fs_mark",
                1.0,
                notes="fs_mark names are 40 bytes, fsmeter's PostMark numbers",
            )
        )
    n = 200_000 if ctx.quick else 1_000_000
    with ctx.tmpfs("6G") as d:
        small = {"size_low": 1, "size_high": 1, "transactions": 10, "bias_read": -1}
        base = ctx.fsmeter("postmark", d, {"files": 1, **small}, cache="keep")["_maxrss_kb"]
        big = ctx.fsmeter("postmark", d, {"files": n, **small}, cache="keep")["_maxrss_kb"]
        per_file = (big - base) * 1024 / n
        rows.append(
            ctx.row(
                f"(d) {n:,}-file fileset peak RSS",
                "B/file",
                per_file,
                100.0,
                "target",
                1.0,
                higher_is_better=False,
                notes=f"peak RSS {big / 1024:.0f} MiB vs {base / 1024:.0f} MiB for 1 file",
            )
        )
    return rows
