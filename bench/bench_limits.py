"""Benchmark: every family against its physical limit, a bare C loop of the same system calls.

For each case of limits_cases.py (a family's named workload beside its loop in bench/limits/),
on a fresh tmpfs and on a fresh ext4 (a 1 GiB loop image, 2 GiB with LIMITS_TOGETHER, whose
backing file is in memory, the loop device doing direct I/O on it, so the "device" is steady), at
1 and 2 threads where the family runs threads: fsmeter and the loop take turns in rounds whose
order alternates (fsmeter first, then the loop first, ...). Each round's ratio (fsmeter's figure
over the loop's, taken back to back) is a pair; a row gives the medians of both sides, the median
ratio, the rounds' range and a confidence interval for the median ratio (5 rounds: 93.75%).
Target: 0.95, the fraction of the limit fsmeter should reach.

Equal work. Fixed-work cases (fileset, tree, replay, bonnie, iozone) run the same count of
operations with the same names, sizes and random draws on both sides, each round in a fresh,
empty directory that is removed afterwards. Timed cases (access, crash) run for the same seconds
with the same warm-up; the access file is laid out once by fsmeter and read and written by both.
fsmeter runs with `--cache keep`, as the loop touches no cache.

The loops are built with the system compiler (cc) into a scratch folder when the bench starts.
`LIMITS=access,tree python bench/run.py --only limits` runs some families only, `LIMITS_FS=ext4`
(or `tmpfs`) one of the two filesystems only, `LIMITS_CASES="qd1,randread psync"` the cases whose name
holds one of those texts only, `LIMITS_THREADS=1` (or 2) one thread count only, and `LIMITS_ROUNDS=15`
more rounds than 5.

`LIMITS_TOGETHER=1`: the access family's cases at 1 thread run both sides at the same time, one on
each of two CPUs (swapped from round to round), each on a file of its own laid out the same way, the
loop started when fsmeter's start-up (measured once, by a short run) is over; so the host's noise
hits both sides of a pair, where alternating rounds 10 s apart each meet their own. Needs 2 CPUs;
the other cases and thread counts run alternating as usual.

The whole bench takes well over an hour (the access family alone more than 30 minutes); each row
is also appended to bench/out/limits-rows.jsonl as it is measured, so a run stopped part of the way
keeps its rows.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import threading
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
        # Run side by side (LIMITS_TOGETHER): the loop then has a laid-out file of its own.
        self.together = together() and case.layout and threads == 1
        self.bare_shared = where / f"{case.family}-files-bare"
        self.lead = 0.0  # fsmeter's start-up, by which the loop's start is delayed when together

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
        d = self.bare_shared if self.together else self._dir()
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
        sets = dict(self.case.fsm_sets(self.mode, self.threads, self.scratch), duration_s=0.2, warmup_s=0)
        # Side by side, the loop's own file is laid out by fsmeter as the other one: a copy is not the
        # same file to the filesystem (on ext4, side by side, the loop wrote 4 KiB at random to a copy
        # made with sendfile at 2.9 times fsmeter's rate on the laid-out file, and read it at 0.85 of
        # fsmeter's rate).
        homes = [self.shared, self.bare_shared] if self.together else [self.shared]
        for home in homes if self.case.layout else []:
            if not (home / "fsmeter.access.0").exists():
                home.mkdir(exist_ok=True)
                self.ctx.fsmeter(self.case.workload, home, sets, keep_files=True, cache="keep")
        if self.together:
            os.sync()
            # fsmeter's start-up: a run of 0.2 s on the laid-out file, less the 0.2 s.
            doc = self.ctx.fsmeter(self.case.workload, self.shared, sets, keep_files=True, cache="keep")
            self.lead = max(0.0, doc["_wall_s"] - 0.2)

    def both(self, rnd: int) -> dict:
        """One round of both sides at the same time, fsmeter on one CPU and the loop on the other
        (swapped every round), the loop started `lead` seconds later; each side's figures."""
        two = sorted(os.sched_getaffinity(0))[:2]
        cpus = two if rnd % 2 == 0 else two[::-1]
        got, errors = {}, []

        def side(name: str, cpu: int, delay: float) -> None:
            try:
                os.sched_setaffinity(0, {cpu})  # this thread's CPU, which the child it starts inherits
                time.sleep(delay)
                got[name] = getattr(self, name)(rnd)
            except BaseException as e:  # handed to the caller
                errors.append(e)

        threads = [
            threading.Thread(target=side, args=("fsmeter", cpus[0], 0.0)),
            threading.Thread(target=side, args=("bare", cpus[1], self.lead)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return got


def compare(ctx, case, threads: int, fs: str, where: Path, exe: Path, rounds: int, mode: str, scratch: Path) -> list:
    """Interleaved rounds of both sides; one row per figure."""
    sides = Sides(ctx, case, threads, where, exe, mode, scratch)
    sides.lay_out()
    got = {"fsmeter": [], "bare": []}
    if sides.together:
        for rnd in range(rounds):
            pair = sides.both(rnd)
            for side in got:
                got[side].append(pair[side])
    else:
        for order in alternating(rounds, ["fsmeter", "bare"]):
            for side in order:
                got[side].append(getattr(sides, side)(len(got[side])))
    rows = []
    med = statistics.median
    for i, fig in enumerate(case.figures):
        f = [r[i] for r in got["fsmeter"]]
        b = [r[i] for r in got["bare"]]
        pairs = [x / y for x, y in zip(f, b) if y > 0]
        how = (
            f"{rounds} rounds side by side (one CPU each, swapped every round; the loop started "
            f"{sides.lead:.2f} s after fsmeter, its start-up)"
            if sides.together
            else f"{rounds} interleaved rounds, order alternating"
        )
        notes = (
            f"{how}; fsmeter {spread(f)}, bare loop {spread(b)}, per-round ratio {min(pairs):.2f}..{max(pairs):.2f}"
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


def together() -> bool:
    """LIMITS_TOGETHER=1: the access cases at 1 thread run both sides at once (module docstring)."""
    raw = os.environ.get("LIMITS_TOGETHER", "").strip()
    if raw not in ("", "0", "1"):
        raise SystemExit(f"LIMITS_TOGETHER: {raw!r}: give 1 (side by side) or 0 (alternating, the default)")
    if raw == "1" and len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("LIMITS_TOGETHER=1 needs 2 CPUs to run on; this process may use fewer")
    return raw == "1"


def thread_counts() -> tuple:
    """The thread counts LIMITS_THREADS names (1, 2 or both, comma-separated; default both)."""
    raw = [w.strip() for w in os.environ.get("LIMITS_THREADS", "").split(",") if w.strip()]
    if any(w not in ("1", "2") for w in raw):
        raise SystemExit(f"LIMITS_THREADS: {','.join(raw)}: use 1, 2 or both (comma-separated)")
    return tuple(sorted({int(w) for w in raw})) or (1, 2)


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
    # Side by side, each side has an access file of its own: the ext4 image holds two.
    image = "2G" if together() else "1G"
    every = (("tmpfs", lambda: ctx.tmpfs("3G")), ("ext4", lambda: ctx.loopfs("ext4", image, in_ram=True)))
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
                    for threads in thread_counts():
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
