"""An IO500-style suite: IO500's twelve scored phases, in its order and with its rules, run by MPI
ranks with fsmeter's engine, and IO500's score.

Every rank runs every phase; a phase is: timed barrier -> the engine sets the phase up and holds ->
a second barrier -> the measured work (write phases: until the stonewall, then IO500's wear-out)
-> one gather of the reports on rank 0, which merges them as IOR and mdtest do
(fsmeter.mpi.merge: all ranks' operations over the common window) and scores the phase:

- ior phases: GiB/s, all ranks' bytes / the window / 2^30;
- mdtest and find phases: kIOPS, all ranks' operations / the window / 1000.

The score is IO500's (its main.c, calc_score): the bandwidth score is the geometric mean of the
ior phases' GiB/s, the metadata score the geometric mean of the mdtest and find phases' kIOPS
(a phase whose score is not > 0 is left out of its mean, and a mean of no phase is 0), and the
total is sqrt(bandwidth x metadata). `score()` is hand-checked in tests/mpi/test_io500_score.py.

Layout under --dir (made by the suite, refused if it is already there):
``io500-data/{ior-easy,ior-hard,mdtest-easy,mdtest-hard}`` and the find's reference file
``io500-timestamp``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fsmeter.errors import UserError

GiB = 1 << 30
#: IO500's scored phases, in the order it runs them: (name, score group, unit).
PHASES = [
    ("ior-easy-write", "bw", "GiB/s"),
    ("mdtest-easy-write", "md", "kIOPS"),
    ("ior-hard-write", "bw", "GiB/s"),
    ("mdtest-hard-write", "md", "kIOPS"),
    ("find", "md", "kIOPS"),
    ("ior-easy-read", "bw", "GiB/s"),
    ("mdtest-easy-stat", "md", "kIOPS"),
    ("ior-hard-read", "bw", "GiB/s"),
    ("mdtest-hard-stat", "md", "kIOPS"),
    ("mdtest-easy-delete", "md", "kIOPS"),
    ("mdtest-hard-read", "md", "kIOPS"),
    ("mdtest-hard-delete", "md", "kIOPS"),
]
#: The write phases: stonewalled, then worn out (every rank goes on to the busiest rank's count).
WRITE_PHASES = ("ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write")
#: IO500's fixed shapes: ior-hard's transfer (and block), mdtest-hard's file size, find's criteria.
IOR_HARD_TRANSFER = 47008
MDTEST_HARD_BYTES = 3901
FIND_NAME = "01"
DATA = "io500-data"
TIMESTAMP = "io500-timestamp"


@dataclass
class Io500Config:
    """The suite's options; the defaults are IO500's (its ini file's defaults)."""

    stonewall_s: float = 300.0
    ior_easy_transfer: int = 2 << 20  # [ior-easy] transferSize = 2m
    ior_easy_block: int = 9_920_000 << 20  # [ior-easy] blockSize = 9920000m
    ior_hard_segments: int = 10_000_000  # [ior-hard] segmentCount
    mdtest_easy_files: int = 1_000_000  # [mdtest-easy] n, per rank
    mdtest_hard_files: int = 1_000_000  # [mdtest-hard] n, per rank
    drop_caches: bool = False  # [global] drop-caches
    interval_s: float = 1.0
    seed: int = 1
    extra: dict = field(default_factory=dict)

    def check(self) -> None:
        def bad(flag: str, what: str) -> UserError:
            return UserError(f"{flag}: {what}")

        if not (self.stonewall_s > 0 and math.isfinite(self.stonewall_s)):
            raise bad("--stonewall-s", f"{self.stonewall_s!r}: give a number of seconds > 0 (IO500's is 300)")
        if not 0 < self.ior_easy_transfer <= 64 << 20:
            raise bad("--ior-easy-transfer", "give a size between 1 byte and 64 MiB (IO500's is 2m)")
        if self.ior_easy_block <= 0 or self.ior_easy_block % self.ior_easy_transfer:
            raise bad("--ior-easy-block", "give a multiple of --ior-easy-transfer (IOR's -b is a multiple of -t)")
        if self.ior_easy_block > 1 << 60:
            raise bad("--ior-easy-block", "at most 2^60 bytes")
        if not 0 < self.ior_hard_segments <= 1 << 40:
            raise bad("--ior-hard-segments", "give a number between 1 and 2^40")
        for flag, n in (
            ("--mdtest-easy-files", self.mdtest_easy_files),
            ("--mdtest-hard-files", self.mdtest_hard_files),
        ):
            if not 0 < n <= 4_000_000_000:
                raise bad(flag, "give a number of files per rank between 1 and 4e9")


def most_written(cfg: Io500Config, ranks: int) -> int:
    """The bytes the ior phases may write at most: ranks x (ior-easy's block + ior-hard's segments x 47008)."""
    return ranks * (cfg.ior_easy_block + cfg.ior_hard_segments * IOR_HARD_TRANSFER)


def check_fits(cfg: Io500Config, ranks: int, free: int, where: str) -> None:
    """Refuse bounds whose writes could fill the ``free`` bytes ``where`` (IO500's own defaults, 9.9 TB a
    rank, count on the stonewall to end the writes first; on a filesystem smaller than that, a fast one
    fills up, the ranks abort and leave their files)."""
    most = most_written(cfg, ranks)
    if most > free:
        raise UserError(
            f"--ior-easy-block, --ior-hard-segments: the ior phases may write up to {most / GiB:,.1f} "
            f"GiB ({ranks} ranks x ({cfg.ior_easy_block / GiB:,.1f} GiB + {cfg.ior_hard_segments:,} x "
            f"{IOR_HARD_TRANSFER} B)), more than the {free / GiB:,.1f} GiB free {where}: lower them so that "
            "the writes fit (IO500's defaults count on a filesystem larger than the stonewall can fill)"
        )


def geometric_mean(values: list) -> float:
    """IO500's mean of one score group: the values > 0 multiplied, to the power 1/their count; 0 when
    there is none (main.c: calc_score skips a phase whose score is <= 0)."""
    kept = [float(v) for v in values if v is not None and v > 0]
    if not kept:
        return 0.0
    return math.exp(sum(math.log(v) for v in kept) / len(kept))


def score(phases: dict) -> dict:
    """IO500's score from {phase name: score} (GiB/s for ior phases, kIOPS for the others):
    bandwidth = geometric mean of the ior phases, metadata = that of the mdtest and find phases,
    total = sqrt(bandwidth x metadata)."""
    group = {name: g for name, g, _ in PHASES}
    bw = geometric_mean([v for k, v in phases.items() if group.get(k) == "bw"])
    md = geometric_mean([v for k, v in phases.items() if group.get(k) == "md"])
    return {"bandwidth_GiB_per_s": bw, "metadata_kIOPS": md, "total": math.sqrt(bw * md)}


def phase_score(name: str, report: dict) -> float:
    """One merged phase's IO500 figure: GiB/s (ior) or kIOPS (mdtest, find), over its common window."""
    el = report.get("elapsed_s") or 0.0
    if el <= 0:
        return 0.0
    if name.startswith("ior"):
        return report["total"]["bytes"] / el / GiB
    return report["total"]["ops"] / el / 1000.0


def hard_file_names(rank: int, files: int, done: int) -> list:
    """The names of the first `done` files mdtest-hard's rank `rank` creates in the shared
    directory: the tree family's walk order (L0F<files> down to L0F1) after the rank's prefix."""
    prefix = _prefix(rank)
    return [f"{prefix}L0F{n}" for n in range(files, files - done, -1)]


def expected_find(ranks: int, files: int, done: int) -> int:
    """The files find must match, by construction: mdtest-hard's (the only files of 3901 bytes, all
    made after the timestamp) whose names hold "01"."""
    return sum(FIND_NAME in n for r in range(ranks) for n in hard_file_names(r, files, done))


def _prefix(rank: int) -> str:
    return f"file.mdtest.{rank}."


def _job(directory: Path, workload: dict, seed: int, interval_s: float) -> str:
    return json.dumps(
        {
            "dir": str(directory),
            "threads": 1,
            "seed": seed,
            "backend": "psync",
            "interval_s": interval_s,
            "workload": workload,
        }
    )


def _tree(files: int, rank: int, size: int, file_range: list | None = None) -> dict:
    from fsmeter.families.tree import TreeParams

    p = TreeParams(
        levels=0,
        dirs_per_level=1,
        files_per_dir=files,
        file_blocks=0,
        file_bytes=size,
        file_prefix=_prefix(rank),
        stat=True,
    )
    spec = p.engine_spec()
    spec["family"] = "tree"
    if file_range is not None:
        spec["file_range"] = [list(file_range)]
    return spec


class Suite:
    """One rank's run of the suite (every rank makes one); rank 0 keeps the merged phases."""

    def __init__(self, world, cfg: Io500Config, base: Path, shift: int):
        self.world, self.cfg, self.base, self.shift = world, cfg, Path(base), shift
        self.data = self.base / DATA
        self.r, self.n = world.rank, world.size
        self.next_r = (self.r + shift) % self.n  # IOR -C: read what the rank one host further wrote
        self.neighbour = (self.r + 1) % self.n  # mdtest -N 1: stat, read and delete the next rank's files
        self.results: dict = {}
        self.targets: dict = {}
        self.newer_than_ns = 0

    # -- paths and engine jobs --------------------------------------------------------------------
    def easy_dir(self, rank: int) -> Path:
        return self.data / "mdtest-easy" / f"rank-{rank:05d}"

    def ior_easy(self, rank: int, ops_range=None) -> dict:
        c = self.cfg
        return {
            "family": "io500",
            "file": f"ior-easy/ior_file_easy.{rank:08d}",
            "transfer": c.ior_easy_transfer,
            "block": c.ior_easy_block,
            "segments": 1,
            "ranks": 1,
            "rank": 0,
            "fsync": True,
            "ops_range": ops_range,
        }

    def ior_hard(self, ops_range=None, read_rank=None) -> dict:
        return {
            "family": "io500",
            "file": "ior-hard/file",
            "transfer": IOR_HARD_TRANSFER,
            "block": IOR_HARD_TRANSFER,
            "segments": self.cfg.ior_hard_segments,
            "ranks": self.n,
            "rank": self.r,
            "read_rank": read_rank,
            "fsync": True,
            "ops_range": ops_range,
        }

    def job(self, name: str, spec: dict, where: Path | None = None) -> str:
        return _job(where or self.data, spec, self.cfg.seed + self.r, self.cfg.interval_s)

    # -- the run ----------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Rank 0 makes the folders (IO500: the data directory's phase folders), each rank its own
        mdtest-easy folder; the shared mdtest-hard folder is rank 0's."""
        w = self.world
        err = None
        if self.r == 0:
            try:
                for p in (self.data, self.base / TIMESTAMP):
                    if p.exists() or p.is_symlink():
                        raise UserError(
                            f"--dir {self.base}: {p.name} is already there (left by an earlier run?): "
                            "remove it, or use another --dir"
                        )
                self.check_space()
                self.data.mkdir()
                for sub in ("ior-easy", "ior-hard", "mdtest-easy", "mdtest-hard", "mdtest-hard/tree-0"):
                    (self.data / sub).mkdir()
            except UserError as exc:
                err = exc.message
            except OSError as exc:
                err = f"--dir {self.base}: cannot make the suite's folders: {exc.strerror}"
        err = w.bcast(err, "making the suite's folders")
        if err is not None:
            if self.r == 0:
                raise UserError(err)
            raise SystemExit(2)
        try:
            self.easy_dir(self.r).mkdir()
            (self.easy_dir(self.r) / "tree-0").mkdir()
        except OSError as exc:
            w.abort(f"--dir {self.base}: cannot make this rank's mdtest-easy folder: {exc.strerror}")
        w.barrier("after making each rank's folder")

    def check_space(self) -> None:
        """Refuse bounds that could fill --dir (:func:`check_fits`)."""
        st = os.statvfs(self.base)
        check_fits(self.cfg, self.n, st.f_bavail * st.f_frsize, f"under --dir {self.base}")

    def run(self, show=None) -> None:
        for name, _, _ in PHASES:
            if name == "ior-hard-write":
                self.timestamp()
            getattr(self, name.replace("-", "_"))(name)
            if show is not None and self.r == 0:
                show(name, self.results[name])

    def timestamp(self) -> None:
        """IO500's timestamp phase, between mdtest-easy-write and ior-hard-write: find matches files
        modified after this file, as the filesystem dates them."""
        t = None
        if self.r == 0:
            p = self.base / TIMESTAMP
            with open(p, "x"):
                pass
            st = os.stat(p)
            t = st.st_mtime_ns
        self.newer_than_ns = self.world.bcast(t, "sharing the timestamp")

    # -- one phase --------------------------------------------------------------------------------
    def measure(self, name: str, job_json: str, engine_phase: str, walled: bool) -> tuple:
        """Barrier, the engine's phase held at a second barrier, the stonewall while it runs;
        returns (this rank's report, the clock at the start barrier)."""
        from fsmeter.engine import EngineSession
        from fsmeter.mpi.run import Stonewall

        w = self.world
        if self.cfg.drop_caches:
            w.barrier(f"before the cache drop of {name}")
            if w.local_rank == 0:
                from fsmeter.provision.host.caches import drop_caches

                drop_caches()
        t0 = w.barrier(f"before phase {name}")
        session = EngineSession(job_json, for_merge=True)
        held: dict = {}

        def at_start():
            held["t0"] = w.barrier(f"at the start of phase {name}")
            if walled:
                held["wall"] = Stonewall(w, self.cfg.stonewall_s, session, held["t0"])

        def tick(_p):
            if "wall" in held:
                held["wall"].poll()

        report = session.run_phase(engine_phase, on_progress=tick, at_start=at_start)
        if "t0" not in held:  # every phase here is held; keep the collectives in step regardless
            w.barrier(f"at the start of phase {name} (this rank's phase never held)")
        else:
            t0 = held["t0"]
        wall = held.get("wall")
        if wall is not None and wall.stopped:
            report["interrupted"] = False  # the engine marks a stop; this one is the rule
            report["stonewalled"] = True
        return report, t0

    def wear_out(self, name: str, report: dict, t0: int, mine: int, more_job) -> tuple:
        """IO500's rule after the stonewall: every rank goes on until it has done as many
        operations as the busiest rank (IOR -O stoneWallingWearOut=1, mdtest -W). Returns (the
        rank's joined report, the target, the record of the counts)."""
        from fsmeter.engine import EngineSession
        from fsmeter.mpi.merge import join_consecutive

        counts = self.world.allgather(mine, f"counting at the stonewall of {name}")
        target = max(counts)
        info = {
            "mode": "time",
            "stonewall_s": self.cfg.stonewall_s,
            "wearout": {
                "at_stonewall": {"min": min(counts), "max": target, "sum": sum(counts)},
                "target_per_rank": target,
            },
        }
        if mine < target:
            job_json, phase = more_job(mine, target)
            more = EngineSession(job_json, for_merge=True).run_phase(phase)
            report = join_consecutive(report, more, t0, self.cfg.interval_s)
        return report, target, info

    def finish(self, name: str, report: dict, t0: int, stonewall: dict | None = None) -> None:
        """Gather every rank's report; rank 0 merges it and scores the phase."""
        from fsmeter.mpi.merge import merge_phase

        w = self.world
        part = {
            "rank": self.r,
            "host": w.host,
            "barrier_mono_ns": t0,
            "held": True,
            "returned_mono_ns": time.monotonic_ns(),
            "report": report,
        }
        parts = w.gather(part, f"after phase {name}")
        stop = None
        if self.r == 0:
            merged = merge_phase(parts, self.cfg.interval_s, stonewall=stonewall)
            for op in merged["ops"].values():
                op["lat"].pop("hdr", None)
            merged["extra"] = [p["report"].get("extra") for p in sorted(parts, key=lambda p: p["rank"])]
            merged["io500"] = {"score": phase_score(name, merged), "time_s": merged["elapsed_s"]}
            if name in WRITE_PHASES and merged["elapsed_s"] < self.cfg.stonewall_s:
                merged["io500"]["note"] = (
                    f"ran {merged['elapsed_s']:.3f} s, less than the stonewall "
                    f"({self.cfg.stonewall_s:g} s): the ranks ran out of work first "
                    "(IO500 calls such a phase invalid)"
                )
            self.results[name] = merged
            stop = bool(merged.get("interrupted"))
        if w.bcast(stop, f"after phase {name}"):
            raise KeyboardInterrupt

    # -- the phases -------------------------------------------------------------------------------
    def ior_easy_write(self, name: str) -> None:
        report, t0 = self.measure(name, self.job(name, self.ior_easy(self.r)), "write", True)
        report, target, info = self.wear_out(
            name,
            report,
            t0,
            int(report["counters"]["transfers"]),
            lambda a, b: (self.job(name, self.ior_easy(self.r, ops_range=[a, b])), "write"),
        )
        self.targets[name] = target
        self.finish(name, report, t0, info)

    def ior_hard_write(self, name: str) -> None:
        report, t0 = self.measure(name, self.job(name, self.ior_hard()), "write", True)
        report, target, info = self.wear_out(
            name,
            report,
            t0,
            int(report["counters"]["transfers"]),
            lambda a, b: (self.job(name, self.ior_hard(ops_range=[a, b])), "write"),
        )
        self.targets[name] = target
        self.finish(name, report, t0, info)

    def _md_write(self, name: str, files: int, size: int, where: Path) -> None:
        report, t0 = self.measure(name, self.job(name, _tree(files, self.r, size), where), "create", True)
        report, target, info = self.wear_out(
            name,
            report,
            t0,
            int(report["extra"]["files_by_tree"][0]),
            lambda a, b: (self.job(name, _tree(files, self.r, size, [a, b]), where), "create"),
        )
        self.targets[name] = target
        self.finish(name, report, t0, info)

    def mdtest_easy_write(self, name: str) -> None:
        self._md_write(name, self.cfg.mdtest_easy_files, 0, self.easy_dir(self.r))

    def mdtest_hard_write(self, name: str) -> None:
        # find -newer: mdtest-hard's files must be dated after the timestamp, on a filesystem that dates to
        # the second too. IO500's ior-hard-write (300 s) always lies between; a scaled-down suite may wait
        # here, outside every measured window, for at most a second.
        if self.r == 0:
            delay = self.newer_than_ns / 1e9 + 1.0 - time.time()
            if delay > 0:
                time.sleep(min(delay, 1.0))
        self._md_write(name, self.cfg.mdtest_hard_files, MDTEST_HARD_BYTES, self.data / "mdtest-hard")

    def find(self, name: str) -> None:
        spec = {
            "family": "io500",
            "roots": [DATA],
            "newer_than_ns": self.newer_than_ns,
            "size": MDTEST_HARD_BYTES,
            "name_contains": FIND_NAME,
            "share": [self.r, self.n],
        }
        report, t0 = self.measure(
            name, _job(self.base, spec, self.cfg.seed + self.r, self.cfg.interval_s), "find", False
        )
        self.finish(name, report, t0)

    def ior_easy_read(self, name: str) -> None:
        t = self.targets["ior-easy-write"]
        report, t0 = self.measure(name, self.job(name, self.ior_easy(self.next_r, ops_range=[0, t])), "read", False)
        self.finish(name, report, t0)

    def ior_hard_read(self, name: str) -> None:
        t = self.targets["ior-hard-write"]
        report, t0 = self.measure(
            name, self.job(name, self.ior_hard(ops_range=[0, t], read_rank=self.next_r)), "read", False
        )
        self.finish(name, report, t0)

    def _md(self, name: str, write_phase: str, files: int, size: int, phase: str, where: Path) -> None:
        t = self.targets[write_phase]
        job = self.job(name, _tree(files, self.neighbour, size, [0, t]), where)
        report, t0 = self.measure(name, job, phase, False)
        self.finish(name, report, t0)

    def mdtest_easy_stat(self, name: str) -> None:
        c = self.cfg
        self._md(name, "mdtest-easy-write", c.mdtest_easy_files, 0, "stat", self.easy_dir(self.neighbour))

    def mdtest_hard_stat(self, name: str) -> None:
        c = self.cfg
        self._md(name, "mdtest-hard-write", c.mdtest_hard_files, MDTEST_HARD_BYTES, "stat", self.data / "mdtest-hard")

    def mdtest_easy_delete(self, name: str) -> None:
        c = self.cfg
        self._md(name, "mdtest-easy-write", c.mdtest_easy_files, 0, "remove", self.easy_dir(self.neighbour))

    def mdtest_hard_read(self, name: str) -> None:
        c = self.cfg
        self._md(name, "mdtest-hard-write", c.mdtest_hard_files, MDTEST_HARD_BYTES, "read", self.data / "mdtest-hard")

    def mdtest_hard_delete(self, name: str) -> None:
        c = self.cfg
        self._md(name, "mdtest-hard-write", c.mdtest_hard_files, MDTEST_HARD_BYTES, "remove", self.data / "mdtest-hard")

    # -- cleanup ----------------------------------------------------------------------------------
    def cleanup(self) -> None:
        """Remove what the suite made, and nothing else: each rank its ior-easy file and its (emptied)
        mdtest-easy folder, then rank 0 the shared file and the folders (a folder still holding
        something fsmeter did not make is left, and said)."""
        w = self.world
        with contextlib.suppress(FileNotFoundError):
            (self.data / f"ior-easy/ior_file_easy.{self.r:08d}").unlink()
        for d in (self.easy_dir(self.r) / "tree-0", self.easy_dir(self.r)):
            with contextlib.suppress(FileNotFoundError):
                d.rmdir()
        w.barrier("after each rank's cleanup")
        if self.r != 0:
            return
        with contextlib.suppress(FileNotFoundError):
            (self.data / "ior-hard/file").unlink()
        with contextlib.suppress(FileNotFoundError):
            (self.base / TIMESTAMP).unlink()
        for sub in ("ior-easy", "ior-hard", "mdtest-easy", "mdtest-hard/tree-0", "mdtest-hard", ""):
            with contextlib.suppress(FileNotFoundError):
                (self.data / sub).rmdir()


def run_suite(
    directory: Path,
    cfg: Io500Config,
    timeout_s: float = 60.0,
    no_wait: bool = False,
    keep_files: bool = False,
    show=None,
) -> dict | None:
    """The suite in this rank (under mpirun); the result document on rank 0, None on the others."""
    import fsmeter
    from fsmeter import runlock
    from fsmeter.hostinfo import host_info
    from fsmeter.mpi.comm import LOCK_WAIT_S, World
    from fsmeter.mpi.run import LOCK_HELD_ENV, resolve_shift

    world = World(timeout_s)
    pids = world.allgather((world.host, os.getpid()), "exchanging host names")
    hosts = [h for h, _ in pids]
    layout: dict = {}
    for r, h in enumerate(hosts):
        layout.setdefault(h, []).append(r)
    shift = resolve_shift("node", hosts)
    suite = Suite(world, cfg, directory, shift)
    started = time.time()
    with contextlib.ExitStack() as stack:
        if world.local_rank == 0 and os.environ.get(LOCK_HELD_ENV) != world.host:
            try:
                stack.enter_context(runlock.measuring(wait=not no_wait, wait_s=min(LOCK_WAIT_S, timeout_s / 2)))
            except UserError as exc:
                world.abort(exc.message)
        world.barrier("waiting for the first rank of each host to take its host's run lock")
        suite.prepare()
        interrupted = False
        try:
            suite.run(show)
        except KeyboardInterrupt:
            interrupted = True
        except SystemExit:
            raise
        except BaseException as exc:  # any failure in this rank ends every rank now, saying who
            msg = exc.message if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
            world.abort(msg)
        if not keep_files and not interrupted:
            suite.cleanup()
    if world.rank != 0:
        return None
    phases = {k: v["io500"]["score"] for k, v in suite.results.items()}
    hard = suite.targets.get("mdtest-hard-write")
    doc = {
        "format": "fsmeter-io500",
        "version": 1,
        "fsmeter_version": fsmeter.__version__,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "dir": str(directory),
        "config": asdict(cfg),
        "host": host_info(),
        "mpi": {
            "ranks": world.size,
            "hosts": sorted(layout),
            "layout": layout,
            "read_shift": shift,
            "timeout_s": timeout_s,
        },
        "phases": suite.results,
        "scores": phases,
        "score": score(phases) if len(phases) == len(PHASES) else None,
        "interrupted": interrupted,
        "find_expected": (expected_find(world.size, cfg.mdtest_hard_files, hard) if hard is not None else None),
    }
    return doc


def store_result(doc: dict, db=None, environment: dict | None = None) -> dict:
    """Record a suite's result in the results store as a campaign of one cell and one trial (so
    `fsmeter report` lists it): every phase's merged report, each phase's score and the three
    scores as metrics (the total is the headline). Returns {db, campaign_id}."""
    from fsmeter.store import default_db_path, now_iso, open_store

    path = default_db_path(db)
    cfg = doc["config"]
    source = "\n".join(
        [
            "# fsmeter io500",
            *(f"{k} = {json.dumps(v)}" for k, v in cfg.items() if k != "extra"),
            f"ranks = {doc['mpi']['ranks']}",
            f"dir = {json.dumps(doc['dir'])}",
            "min_phase_s = 0",
        ]
    )
    phases, metrics = [], []
    for name, _, unit in PHASES:
        rep = doc["phases"].get(name)
        if rep is None:
            continue
        phases.append({"key": name, "engine_phase": name, "measured": True, "report": rep})
        metrics.append(
            {"phase": name, "name": "score", "unit": unit, "higher_is_better": True, "value": rep["io500"]["score"]}
        )
    s = doc.get("score")
    if s is not None:
        metrics = [
            {
                "phase": "io500",
                "name": "score",
                "unit": "score",
                "higher_is_better": True,
                "value": s["total"],
                "headline": True,
            },
            {
                "phase": "io500",
                "name": "bandwidth",
                "unit": "GiB/s",
                "higher_is_better": True,
                "value": s["bandwidth_GiB_per_s"],
            },
            {
                "phase": "io500",
                "name": "metadata",
                "unit": "kIOPS",
                "higher_is_better": True,
                "value": s["metadata_kIOPS"],
            },
        ] + metrics
    h = doc.get("host") or {}
    env = {
        "hostname": h.get("hostname"),
        "kernel": h.get("kernel"),
        "cpu_model": h.get("cpu_model"),
        "mem_bytes": h.get("mem_bytes"),
        "cpus_online": h.get("cpus_online"),
        "seed": cfg.get("seed"),
        "fsmeter_version": doc.get("fsmeter_version"),
        "target_kind": "dir",
        "mpi": doc["mpi"],
        "io500": {"config": cfg, "find_expected": doc.get("find_expected")},
    }
    env.update(environment or {})
    status = "interrupted" if doc.get("interrupted") else "ok"
    with open_store(path) as store:
        cid = store.create_campaign("io500", source, [("io500", {"ranks": doc["mpi"]["ranks"]})])
        cell = store.cells(cid)[0]["id"]
        store.record_trial(
            cell,
            1,
            status=status,
            started=doc["started_at"],
            ended=now_iso(),
            cause="interrupted" if status != "ok" else None,
            phases=phases,
            metrics=metrics,
            environment=env,
        )
        store.set_cell_status(cell, "done" if status == "ok" else "interrupted", stop_reason="fixed-n")
        store.set_campaign_status(cid, "done" if status == "ok" else "interrupted")
    return {"db": str(path), "campaign_id": cid}


__all__ = [
    "PHASES",
    "Io500Config",
    "Suite",
    "expected_find",
    "geometric_mean",
    "hard_file_names",
    "phase_score",
    "run_suite",
    "score",
    "store_result",
]
