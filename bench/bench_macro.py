"""Benchmark, macro family: fsmeter's timing of cp / tar xjf / rm -rf against the study's
own method, bash's `time` around the same command and a sync.

Peer, per operation, on its own fresh loop ext4 (fsmeter gets another), with the very files
fsmeter used (its cached copy source and archive, read warm as fsmeter reads them); who goes
first alternates from round to round:
    bash -c 'TIMEFORMAT="%R %U %S"; time (cp SRC DST; sync -f MNT)'
    bash -c 'TIMEFORMAT="%R %U %S"; time (tar xjf ARCHIVE -C DEST; sync -f MNT)'
    bash -c 'TIMEFORMAT="%R %U %S"; time (rm -rf DEST; sync -f MNT)'
bash's `time` of a subshell reports the subshell's wall time and the CPU of its reaped children,
which is what fsmeter takes from wait4. The rows compare real, user and sys seconds (ratio
peer / fsmeter: 1.0 = the same figure; lower is better for both). No target: the two measure the
same thing, so the ratio shows how far one run differs from the next on this machine.
"""

from __future__ import annotations

import statistics
from pathlib import Path


def _timed(ctx, script: str) -> tuple:
    r = ctx.cmd(["bash", "-c", f'TIMEFORMAT="%R %U %S"; time ({script})'])
    real, user, sys_ = (float(x) for x in r.stderr.strip().splitlines()[-1].split())
    return real, user, sys_


def _warm(path: str) -> None:
    with open(path, "rb") as f:
        while f.read(1 << 22):
            pass


def run(ctx) -> list:
    sets = (
        {"tree_files": 2000, "tree_dirs": 110, "cp_size": "64M"}
        if ctx.quick
        else {"tree_files": 30786, "tree_dirs": 1657, "cp_size": "256M"}
    )
    runs = 1 if ctx.quick else 3
    ours: dict = {op: [] for op in ("cp", "untar", "rm")}
    peer: dict = {op: [] for op in ("cp", "untar", "rm")}
    paths: dict = {}

    def fsmeter_side() -> None:
        with ctx.loopfs("ext4", "1G") as mnt:
            doc = ctx.fsmeter("macro-quick", Path(mnt), sets)
        for op in ours:
            x = doc["phases"][op]["extra"]
            ours[op].append((x["real_s"], x["user_s"], x["sys_s"]))
        paths["src"] = doc["phases"]["cp"]["extra"]["tool"]["argv"][1]
        paths["archive"] = doc["phases"]["untar"]["extra"]["tool"]["argv"][2]

    def peer_side() -> None:
        with ctx.loopfs("ext4", "1G") as mnt:
            mnt = Path(mnt)
            src, archive = paths["src"], paths["archive"]
            dest = mnt / "peer-tree"
            dest.mkdir()
            _warm(src)
            peer["cp"].append(_timed(ctx, f"cp '{src}' '{mnt}/peer-cp.bin'; sync -f '{mnt}'"))
            _warm(archive)
            peer["untar"].append(_timed(ctx, f"tar xjf '{archive}' -C '{dest}'; sync -f '{mnt}'"))
            peer["rm"].append(_timed(ctx, f"rm -rf '{dest}'; sync -f '{mnt}'"))

    # Each side gets its own fresh filesystem every round; who goes first alternates (round 0:
    # fsmeter, which also makes the cached files both sides use).
    for i in range(runs):
        for side in (fsmeter_side, peer_side) if i % 2 == 0 else (peer_side, fsmeter_side):
            side()
    med = statistics.median
    n = f"median of {runs}" if runs > 1 else "1 run"
    size = f"{sets['tree_files']} files" if "tree_files" in sets else ""
    rows = []
    for op in ("cp", "untar", "rm"):
        for i, name in enumerate(("real", "user", "sys")):
            mine, theirs = med(o[i] for o in ours[op]), med(p[i] for p in peer[op])
            case = f"{op} on loop ext4 1G ({size}, cp {sets['cp_size']})"
            notes = f"{n}; same files, warm source; each side on its own fresh fs, order alternating"
            if mine > 0:
                rows.append(
                    ctx.row(
                        case, f"{name} s", mine, theirs, "bash time (cmd; sync -f)", higher_is_better=False, notes=notes
                    )
                )
            else:  # 0 s of CPU (cp's user time): no ratio
                rows.append(
                    {
                        **ctx.row(
                            case,
                            f"{name} s",
                            mine,
                            None,
                            "bash time (cmd; sync -f)",
                            higher_is_better=False,
                            notes=notes + "; 0 s: no ratio",
                        ),
                        "peer": theirs,
                    }
                )
    return rows
