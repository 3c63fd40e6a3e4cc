"""Benchmark: what data verification costs.

Cached 4 KiB random writes to a 256 MiB file on a fresh tmpfs, 1 thread, psync:
(a) fsmeter verify=crc32c over fsmeter verify=off (IOPS): goal >= 0.85 (verification costs at most 15%)
(b) the same with verify=xxh3, and with sha256 (no goal: sha256 is the slow, strong choice)
(c) fsmeter verify=crc32c against fio verify=crc32c doing the same work (IOPS ratio), with fio's own
    cost (fio verify=crc32c over fio without verify) in the notes

How each tool runs. fsmeter: `fsmeter run rand-write-4k --set file_size=256M --set verify=...
--set warmup_s=0 --set duration_s=S --cache keep` (it lays the file out with headers, measures S
seconds of writes, each 4 KiB block filled with its header and payload and checksummed before the
pwrite, then its verify phase re-reads the file; only the measured writes count here). fio:
`fio --name=bench --filename=F --size=256M --rw=randwrite --bs=4k --ioengine=psync --iodepth=1
--runtime=S --time_based --norandommap --randrepeat=0 --verify=crc32c --do_verify=0 --verify_state_save=0` on the file
fsmeter laid out: fio also fills each 4 KiB block with a header and random data and checksums it
before writing; --do_verify=0 leaves out its read-back pass, which fsmeter does in a separate,
unmeasured phase. fsmeter draws offsets with replacement, hence --norandommap on fio.

Rounds are interleaved with alternating order (the machine's speed drifts); medians are reported
with the spread of each side.
"""

from __future__ import annotations

import json
import statistics

from bench_access import interleaved, spread

FILE = "fsmeter.access.0"
SIZE = "256M"


def fsm(ctx, d, seconds: float, verify: str, seed: int) -> float:
    doc = ctx.fsmeter(
        "rand-write-4k",
        d,
        {"file_size": SIZE, "warmup_s": 0, "duration_s": seconds, "seed": seed, "verify": verify},
        keep_files=True,
        cache="keep",
    )
    if doc.get("corrupt"):
        raise RuntimeError(f"fsmeter found corrupt data on tmpfs: {doc['corrupt']}")
    return doc["phases"]["run"]["total"]["ops_per_s"]


def fio(ctx, d, seconds: float, verify: str) -> float:
    args = [
        "fio",
        "--name=bench",
        f"--filename={d / FILE}",
        f"--size={SIZE}",
        "--rw=randwrite",
        "--bs=4k",
        "--ioengine=psync",
        "--iodepth=1",
        f"--runtime={seconds}",
        "--time_based",
        "--norandommap",
        "--randrepeat=0",
        "--output-format=json",
    ]
    if verify != "off":
        # --verify_state_save=0: fio would otherwise leave local-bench-0-verify.state in the caller's folder.
        args += [f"--verify={verify}", "--do_verify=0", "--verify_state_save=0"]
    res = ctx.cmd(args)
    return json.loads(res.stdout[res.stdout.index("{") :])["jobs"][0]["write"]["iops"]


def run(ctx) -> list:
    rows = []
    secs = ctx.seconds(8, 3)
    rounds = 2 if ctx.quick else 4
    med = statistics.median
    note = (
        f"median of {rounds} interleaved rounds, order alternating; cached 4K randwrite, 256 MiB file, tmpfs, 1T psync"
    )
    with ctx.tmpfs("1G") as d:
        fsm(ctx, d, 0.2, "off", 1)  # lay the file out once, so fio has it from the first round
        got = interleaved(
            rounds,
            {
                "off": lambda r: fsm(ctx, d, secs, "off", 100 + r),
                "crc32c": lambda r: fsm(ctx, d, secs, "crc32c", 200 + r),
                "xxh3": lambda r: fsm(ctx, d, secs, "xxh3", 300 + r),
                "sha256": lambda r: fsm(ctx, d, secs, "sha256", 400 + r),
                "fio-off": lambda r: fio(ctx, d, secs, "off"),
                "fio-crc32c": lambda r: fio(ctx, d, secs, "crc32c"),
            },
        )
    off = med(got["off"])
    for algo, target in (("crc32c", 0.85), ("xxh3", 0.85), ("sha256", None)):
        per_round = [a / b for a, b in zip(got[algo], got["off"])]
        rows.append(
            ctx.row(
                f"(a/b) verify={algo} / verify=off",
                "IOPS",
                med(got[algo]),
                off,
                "fsmeter verify=off",
                target,
                notes=f"{note}; on {spread(got[algo])}, off {spread(got['off'])}, per-round ratio "
                f"{min(per_round):.2f}..{max(per_round):.2f}",
            )
        )
    fio_cost = med(got["fio-crc32c"]) / med(got["fio-off"])
    rows.append(
        ctx.row(
            "(c) verify=crc32c, fsmeter vs fio",
            "IOPS",
            med(got["crc32c"]),
            med(got["fio-crc32c"]),
            "fio --verify=crc32c --do_verify=0",
            notes=f"{note}; fsmeter {spread(got['crc32c'])}, fio {spread(got['fio-crc32c'])}; fio's own "
            f"cost: verify/off = {fio_cost:.2f} (off {spread(got['fio-off'])})",
        )
    )
    return rows
