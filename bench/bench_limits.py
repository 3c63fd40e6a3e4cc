"""Benchmark: every family against its physical limit, a bare C loop of the same system calls.

For each case of limits_cases.py (a family's named workload beside its loop in bench/limits/),
on a fresh tmpfs and on a fresh ext4 (a 1 GiB loop image whose backing file is in memory, the
loop device doing direct I/O on it, so the "device" is steady), at 1 and 2 threads where the
family runs threads: fsmeter and the loop take turns in rounds whose order alternates (fsmeter
first, then the loop first, ...). Each round's ratio (fsmeter's figure over the loop's, taken
back to back) is a pair; a row gives the medians of both sides, the median ratio, the rounds'
range and a confidence interval for the median ratio (5 rounds: 93.75%). Target: 0.95, the
fraction of the limit fsmeter should reach.

Equal work. Fixed-work cases (fileset, tree, replay, bonnie, iozone) run the same count of
operations with the same names, sizes and random draws on both sides, each round in a fresh,
empty directory that is removed afterwards. Timed cases (access, crash) run for the same seconds
with the same warm-up; the access file is laid out once by fsmeter and read and written by both.
fsmeter runs with `--cache keep`, as the loop touches no cache.

The loops are built with the system compiler (cc) into a scratch folder when the bench starts.
`LIMITS=access,tree python bench/run.py --only limits` runs some families only, `LIMITS_FS=ext4`
(or `tmpfs`) one of the two filesystems only, `LIMITS_CASES="qd1,randread psync"` the cases whose name
holds one of those texts only, and `LIMITS_ROUNDS=15` more rounds than 5. The whole bench
takes well over an hour (the access family alone more than 20 minutes); each row is also appended to
bench/out/limits-rows.jsonl as it is measured, so a run stopped part of the way keeps its rows.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from limits_cases import CASES, build_loops, parse_results

TARGET = 0.95


def alternating(rounds: int, sides: list) -> list:
    """Each round's order: the sides' order reverses from one round to the next."""
    return [list(sides) if r % 2 == 0 else list(reversed(sides)) for r in range(rounds)]


def fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def spread(values: list) -> str:
    return f"{fmt(min(values))}..{fmt(max(values))}"


class Sides:
    """Runs one case at one thread count on one filesystem: fsmeter's side and the loop's."""

    def __init__(self, ctx, case, threads: int, where: Path, exe: Path, mode: str, scratch: Path):
        self.ctx, self.case, self.threads, self.where = ctx, case, threads, where
        self.exe, self.mode, self.scratch = exe, mode, scratch
        self.runs = 0
        self.shared = where / f"{case.family}-files"  # the laid-out file of a timed access case

    def _dir(self) -> Path:
        if self.case.layout:
            self.shared.mkdir(exist_ok=True)
            return self.shared
        self.runs += 1
        d = self.where / f"{self.case.family}-{self.runs}"
        d.mkdir()
        return d

    def _done(self, d: Path) -> None:
        if not self.case.layout:
            shutil.rmtree(d, ignore_errors=True)

    def fsmeter(self, _round: int) -> list:
        d = self._dir()
        try:
            sets = self.case.fsm_sets(self.mode, self.threads, self.scratch)
            doc = self.ctx.fsmeter(self.case.workload, d, sets, keep_files=self.case.layout, cache="keep")
            return [f.fsm(doc) for f in self.case.figures]
        finally:
            self._done(d)

    def bare(self, _round: int) -> list:
        d = self._dir()
        try:
            res = parse_results(
                self.ctx.cmd([self.exe, *self.case.loop_args(self.mode, self.threads, d, self.scratch)]).stdout
            )
            return [f.bare(res) for f in self.case.figures]
        finally:
            self._done(d)

    def lay_out(self) -> None:
        """The access file, made once by fsmeter's prepare phase (a run of a fraction of a second);
        or, for a primed case, what a first run makes in the scratch folder (the macro family's
        source cache), in a directory of its own removed afterwards."""
        if self.case.prime:
            self.fsmeter(-1)
        if self.case.layout and not (self.shared / "fsmeter.access.0").exists():
            sets = dict(self.case.fsm_sets(self.mode, self.threads, self.scratch), duration_s=0.2, warmup_s=0)
            self.shared.mkdir(exist_ok=True)
            self.ctx.fsmeter(self.case.workload, self.shared, sets, keep_files=True, cache="keep")


def compare(ctx, case, threads: int, fs: str, where: Path, exe: Path, rounds: int, mode: str, scratch: Path) -> list:
    """Interleaved rounds of both sides; one row per figure."""
    sides = Sides(ctx, case, threads, where, exe, mode, scratch)
    sides.lay_out()
    got = {"fsmeter": [], "bare": []}
    for order in alternating(rounds, ["fsmeter", "bare"]):
        for side in order:
            got[side].append(getattr(sides, side)(len(got[side])))
    rows = []
    med = statistics.median
    for i, fig in enumerate(case.figures):
        f = [r[i] for r in got["fsmeter"]]
        b = [r[i] for r in got["bare"]]
        pairs = [x / y for x, y in zip(f, b) if y > 0]
        notes = (
            f"{rounds} interleaved rounds, order alternating; fsmeter {spread(f)}, bare loop {spread(b)}, "
            f"per-round ratio {min(pairs):.2f}..{max(pairs):.2f}"
            if pairs
            else "the bare loop reported no rate"
        )
        if case.beyond:
            notes += f"; fsmeter beyond the calls: {case.beyond}"
        rows.append(
            ctx.row(
                f"{case.name}: {fig.label}, {fs}, {threads}T",
                fig.unit,
                med(f),
                med(b),
                f"bench/limits/{case.loop}.c",
                TARGET,
                notes=notes,
                pairs=pairs or None,
            )
        )
    return rows


#: Each row as soon as it is measured, one JSON object a line: the whole bench takes over an hour, and a run
#: stopped part of the way keeps the rows it finished (the file is appended to, never truncated).
PARTIAL = Path(__file__).resolve().parent / "out" / "limits-rows.jsonl"


def keep_rows(rows: list) -> None:
    PARTIAL.parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    with PARTIAL.open("a") as f:
        for r in rows:
            f.write(json.dumps({"at": stamp, **r}) + "\n")
            ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
            print(f"  {r['case']}: ratio {ratio}", flush=True)


def selected(cases: list) -> list:
    """The cases LIMITS (families) and LIMITS_CASES (texts a case's name holds) select; unset: all."""
    want = {w.strip() for w in os.environ.get("LIMITS", "").split(",") if w.strip()}
    texts = [w.strip() for w in os.environ.get("LIMITS_CASES", "").split(",") if w.strip()]
    chosen = [c for c in cases if (not want or c.family in want) and (not texts or any(t in c.name for t in texts))]
    if not chosen:
        raise SystemExit("LIMITS, LIMITS_CASES: no case matches; the cases are named in bench/limits_cases.py")
    return chosen


def places(ctx) -> list:
    """The filesystems the bench runs on, as LIMITS_FS names them (default: both)."""
    every = (("tmpfs", lambda: ctx.tmpfs("3G")), ("ext4", lambda: ctx.loopfs("ext4", "1G", in_ram=True)))
    want = {w.strip() for w in os.environ.get("LIMITS_FS", "").split(",") if w.strip()}
    unknown = want - {fs for fs, _ in every}
    if unknown:
        raise SystemExit(f"LIMITS_FS: {', '.join(sorted(unknown))}: use tmpfs, ext4 or both (comma-separated)")
    return [p for p in every if not want or p[0] in want]


def run(ctx) -> list:
    mode = "quick" if ctx.quick else "full"
    # LIMITS_ROUNDS: more rounds for the short phases (a stat of a few thousand cached files lasts milliseconds).
    rounds = ctx.rounds("LIMITS_ROUNDS", 5, 2)
    if not shutil.which("cc"):
        return [ctx.row("limits", "error", None, None, "-", notes="no C compiler (cc) to build bench/limits/*.c")]
    scratch = Path(tempfile.mkdtemp(prefix="fsmeter-limits-"))
    rows = []
    try:
        exes = build_loops(scratch / "bin")
        cases = selected(CASES)
        for fs, place in places(ctx):
            with place() as where:
                for case in cases:
                    for threads in (1, 2):
                        if threads not in case.threads:
                            rows.append(
                                ctx.row(f"{case.name}, {fs}, {threads}T", "-", None, None, "-", notes=case.note)
                            )
                            continue
                        got = compare(ctx, case, threads, fs, where, exes[case.loop], rounds, mode, scratch)
                        keep_rows(got)
                        rows += got
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return rows
