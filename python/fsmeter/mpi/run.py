"""`fsmeter run` as one rank of `mpirun -n N fsmeter run ...`: every rank runs the same workload in
its own subdirectory (mdtest -u), or, with --shared-file, on its own region of the same files (IOR's
shared file, with -C's shifted read-back as --reorder-shift), phase by phase in lockstep, and rank 0
merges the phase reports.

Per phase: (cold-cache reset) -> timed barrier -> the engine sets the phase up in this rank and
holds -> a second timed barrier -> the measured work -> one gather of the reports on rank 0 ->
merge (fsmeter.mpi.merge) -> rank 0 tells every rank whether to go on. An error in any rank
aborts the whole job (MPI_Abort) with that rank's number, host and message; a rank that waits
longer than the timeout at a barrier or gather aborts it too.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from fsmeter.errors import UserError
from fsmeter.mpi.comm import LOCK_WAIT_S, World
from fsmeter.mpi.options import STONEWALL_PHASES, WEAROUT_FAMILIES, parse_reorder_shift, parse_stonewall
from fsmeter.phases import PhaseSteps

#: Tag of the stonewall notices (a rank that finished first tells rank 0).
STONEWALL_TAG = 7713
#: Set by a parent that already holds its host's run lock (a campaign launching mpirun) to that
#: host's name: the ranks on that host take no lock of their own, those on other hosts do.
LOCK_HELD_ENV = "FSMETER_RUN_LOCK_HELD"


def rank_dir(base: Path, rank: int) -> Path:
    """Each rank's own folder under --dir (mdtest -u: unique working directories)."""
    return Path(base) / f"rank-{rank:05d}"


def shared_regions(rank: int, size: int, base_offset: int, file_size: int, shift: int) -> tuple:
    """IOR's segmented layout with one segment: rank r owns [base + r * file_size, + file_size) of every
    file; with a shift (IOR -C), its run phase works on the region of rank (r + shift) mod N."""
    return base_offset + rank * file_size, base_offset + ((rank + shift) % size) * file_size


def resolve_shift(shift, hosts: list) -> int:
    """IOR -C with by-slot placement: one host further on is as many ranks as the first host runs."""
    if shift == "node":
        return sum(1 for h in hosts if h == hosts[0])
    return int(shift or 0)


def _shared_errors(world: World, err: UserError | None) -> None:
    """Every rank learns every rank's input error, so that all exit alike; rank 0 says it once."""
    mine = None if err is None else (str(err), err.exit_code)
    every = world.allgather(mine, "checking the input")
    bad = [(r, e) for r, e in enumerate(every) if e is not None]
    if not bad:
        return
    r, (msg, code) = bad[0]
    if world.rank == 0:
        same = all(e == bad[0][1] for _, e in bad)
        where = "every rank" if same and len(bad) == world.size else f"rank {r}"
        raise UserError(f"{msg} ({where})", exit_code=code)
    raise SystemExit(code)


class Stonewall:
    """Stops every rank's phase when the first rank finishes (first-done) or at a time (seconds).

    first-done: a rank that finishes sends one notice to rank 0 (unless it already heard that the
    phase is over); rank 0, on the first notice or on finishing itself, starts a non-blocking
    broadcast of the finisher's rank, and every rank stops its engine when that broadcast lands.
    Each rank's report then counts what it completed; the merged rate is their sum over the
    common window (the stonewall rule of mdtest and IO500, without IO500's wear-out).
    """

    def __init__(self, world: World, mode, session, t0_mono_ns: int):
        import numpy as np

        self.world, self.mode, self.session, self.t0 = world, mode, session, t0_mono_ns
        self.stopped = False
        self.sent_notice = False
        self.received = 0
        self.buf = np.full(1, -1, dtype=np.int64)
        self.bcast_req = None
        self.notice_req = None
        if mode == "first-done":
            if world.rank == 0:
                self.notice_req = world.comm.irecv(source=world.MPI.ANY_SOURCE, tag=STONEWALL_TAG)
            else:
                self.bcast_req = world.comm.Ibcast(self.buf, root=0)

    def _start_bcast(self, finisher: int) -> None:
        self.buf[0] = finisher
        self.bcast_req = self.world.comm.Ibcast(self.buf, root=0)

    def poll(self) -> None:
        """Called every progress tick while the engine runs."""
        if self.stopped:
            return
        if self.mode != "first-done":
            if time.monotonic_ns() - self.t0 >= self.mode * 1e9:
                self.stopped = True
                self.session.stop()
            return
        w = self.world
        if w.rank == 0:
            done, who = self.notice_req.test()
            if done:
                self.received += 1
                self.notice_req = None
                self._start_bcast(who)
                self.stopped = True
                self.session.stop()
        elif self.bcast_req.Test():
            self.stopped = True
            self.session.stop()

    def finished(self) -> None:
        """This rank's engine returned: tell the others if it was first; wait for the verdict."""
        if self.mode != "first-done":
            return
        w = self.world
        if w.rank == 0:
            if self.bcast_req is None:
                if self.notice_req is not None:
                    done, who = self.notice_req.test()
                    if done:
                        self.received += 1
                        self.notice_req = None
                        self._start_bcast(who)
                if self.bcast_req is None:
                    self._start_bcast(0)
        elif not self.bcast_req.Test():
            w.comm.send(w.rank, dest=0, tag=STONEWALL_TAG)
            self.sent_notice = True
        deadline = time.monotonic() + w.timeout_s
        while not self.bcast_req.Test():
            if time.monotonic() > deadline:
                w.abort("stonewall: rank 0 never said the phase was over")
            time.sleep(0.001)

    def close(self, parts: list | None) -> dict | None:
        """Rank 0, after the gather: collect the notices still in flight; returns what to record."""
        if self.mode != "first-done":
            return {"mode": "time", "stonewall_s": self.mode} if parts is not None else None
        if parts is None:
            return None
        w = self.world
        sent = sum(1 for p in parts if p.get("sent_notice"))
        if self.notice_req is not None:  # still posted: it may hold a notice already, else it is withdrawn
            done, _ = self.notice_req.test()
            if done:
                self.received += 1
            else:
                self.notice_req.Cancel()
                self.notice_req.Wait()
            self.notice_req = None
        while self.received < sent:
            w.comm.recv(source=w.MPI.ANY_SOURCE, tag=STONEWALL_TAG)
            self.received += 1
        return {"mode": "first-done", "first_rank": int(self.buf[0])}


def check_wearout(job, stonewall) -> int | None:
    """The request size an access wear-out continues with (IOR's -O stoneWallingWearOut=1; None for
    the tree family's, which counts files), or a clear error."""
    if stonewall is None:
        raise UserError("--stonewall-wearout: needs --stonewall (first-done or seconds)")
    if job.workload.family.name not in WEAROUT_FAMILIES:
        raise UserError(
            f"--stonewall-wearout: the {job.workload.family.name} family cannot go on after a stonewall "
            "to a count of operations; wear-out is built for the access family's workloads (IOR) and "
            "the tree family's create (mdtest)"
        )
    if job.workload.family.name == "tree":
        return None
    p = job.params
    sizes = {e.size for e in p.entries}
    if len(sizes) != 1:
        raise UserError(
            "--stonewall-wearout: the workload mixes request sizes; wear-out counts requests of one size "
            "(IOR's transfers): use one record_size"
        )
    if p.verify != "off":
        raise UserError(
            "--stonewall-wearout: not with verify (the wear-out's writes are made by a second engine run, "
            "which the verify phase's record of writes would not know)"
        )
    return sizes.pop()


def wear_out(world: World, job, report: dict, barrier_ns: int, size: int) -> tuple:
    """IO500's rule after a stonewall: every rank goes on until it has done as many requests as the
    busiest rank did (IOR -O stoneWallingWearOut=1). Returns (this rank's joined report, info)."""
    import json

    from fsmeter.engine import EngineSession
    from fsmeter.mpi.merge import join_consecutive

    mine = int(report["total"]["ops"])
    counts = world.allgather(mine, "counting requests at the stonewall")
    target = max(counts)
    info = {"ops_at_stonewall": {"min": min(counts), "max": target}, "target_ops_per_rank": target}
    need = target - mine
    if need <= 0:
        return report, info
    d = json.loads(job.engine_json())
    w = d["workload"]
    w.update(duration_s=None, warmup_s=0.0, total_bytes=need * size)
    if all(e["random_pct"] == 0 for e in w["entries"]):
        # Sequential: go on after the last request done, as IOR's wear-out does (wrapping at the region's end).
        done = (mine * size) % w["file_size"]
        if done:
            base = w.get("run_offset") if w.get("run_offset") is not None else w["offset"]
            w["file_size"] -= done
            if w.get("shared_file"):
                w["run_offset"] = base + done
            else:
                w["offset"] = base + done
    more = EngineSession(json.dumps(d), for_merge=True).run_phase("run")
    return join_consecutive(report, more, barrier_ns, job.settings.interval_s), info


def tree_after_stonewall(world: World, job, report: dict, barrier_ns: int, wearout: bool) -> tuple:
    """mdtest's rule after a stonewall in the tree family's create (mdtest -W). Each tree stopped
    after some files (in the walk's order). With wear-out, every tree goes on, in a second engine
    run, until it has as many files as the fullest tree of any rank; the later phases then visit
    those files. Without it, each tree's later phases visit the files it has.

    Returns (this rank's report, the engine job for the later phases or None, info for rank 0)."""
    import json

    from fsmeter.engine import EngineSession
    from fsmeter.mpi.merge import join_consecutive

    have = [int(n) for n in report["extra"]["files_by_tree"]]
    everyone = world.allgather(have, "counting files at the stonewall")
    counts = [n for rank in everyone for n in rank]
    per_tree = report["extra"]["files_per_tree"]
    info = {"files_at_stonewall": {"min": min(counts), "max": max(counts), "sum": sum(counts)}}
    d = json.loads(job.engine_json())
    if wearout:
        target = max(counts)
        info["target_files_per_tree"] = target
        if any(n < target for n in have):
            d["workload"]["file_range"] = [[n, target] for n in have]
            more = EngineSession(json.dumps(d), for_merge=True).run_phase("create")
            joined = join_consecutive(report, more, barrier_ns, job.settings.interval_s)
            joined["extra"] = dict(report["extra"], files_by_tree=[target] * len(have))
            joined["extra"].pop("file_range", None)
            report = joined
        have = [target] * len(have)
    if all(n == per_tree for n in have):  # this rank's trees are whole: its later phases need no range
        return report, None, info
    d["workload"]["file_range"] = [[0, n] for n in have]
    return report, json.dumps(d), info


def mount_of(directory: Path) -> dict:
    """The mount holding ``directory`` as this host sees it: filesystem type, source (the server
    and export of a network filesystem, the device of a local one) and mount point."""
    from fsmeter.provision.sysinfo import mount_containing

    m = mount_containing(str(directory))
    return {"fstype": m.fstype, "source": m.source, "mount_point": m.target} if m is not None else {}


def mounts_note(mounts: dict) -> dict:
    """{"mounts_note": ...} when the hosts see --dir on different filesystems (type or source),
    else {}: the ranks then do not measure one shared filesystem."""
    seen = {(m.get("fstype"), m.get("source")) for m in mounts.values()}
    if len(seen) < 2:
        return {}
    each = "; ".join(f"{h}: {m.get('fstype')} {m.get('source')}" for h, m in sorted(mounts.items()))
    return {
        "mounts_note": f"the hosts see --dir on different filesystems ({each}): the ranks do not all measure "
        "one shared filesystem; mount the same one at the same path on every host"
    }


def _reset_cache(world: World, method: str, directory: Path) -> str:
    """The cold-cache reset of one rank: drop_caches once per host (it is system-wide), else fadvise
    on this rank's own files."""
    from fsmeter.phases import reset_cache

    if method == "auto":
        method = "drop" if os.geteuid() == 0 else "fadvise"
    if method == "drop":
        if world.local_rank == 0:
            reset_cache("drop", directory)
        return "drop_caches"
    return reset_cache(method, directory)


def merge_extra(job, merged: dict, parts: list) -> dict:
    """A merged phase's family details (`extra`), for the families whose metrics read them."""
    from fsmeter.mpi import merge

    family = job.workload.family.name
    extras = [p["report"].get("extra") for p in sorted(parts, key=lambda p: p["rank"])]
    if family == "access":
        return merge.access_extra(extras, shared_file=job.params._shared_region is not None)
    if family == "fileset":
        return merge.fileset_extra(merged, extras)
    if family == "iozone":
        return merge.iozone_extra(extras)
    if family == "mix":
        return merge.mix_extra(parts, job.params.crossover_jpm_per_task)
    if family == "macro":
        return merge.macro_extra(extras)
    if family == "tree":
        return merge.tree_extra(extras)
    return merged["extra"]


class RankSteps(PhaseSteps):
    """One MPI rank's way through each phase (fsmeter.phases.run_phases): a barrier before the phase,
    a second one where the engine holds it set up (``at_start``), the stonewall while it runs and the
    wear-out after it, then one gather of the reports and their merge on rank 0, which alone keeps a
    report and tells every rank whether to go on."""

    def __init__(self, world: World, job, stonewall, wearout: bool, wear_size: int | None):
        self.world, self.job, self.stonewall, self.wearout, self.wear_size = world, job, stonewall, wearout, wear_size
        self.family = job.workload.family.name
        self.t0 = 0
        self.part: dict = {}

    def before(self, run, ph) -> None:
        self.t0 = self.world.barrier(f"before phase {ph.key}")

    def run(self, run, ph, on_progress) -> dict:
        world, stonewall = self.world, self.stonewall
        t0 = self.t0
        walled = stonewall is not None and ph.name in STONEWALL_PHASES.get(self.family, ())
        # A second barrier where the engine holds the phase, its files open and its workers
        # ready: each rank's set-up (tens of milliseconds, longer on a cold cache) would
        # otherwise stagger the starts and stretch the common window. The stonewall posts its
        # non-blocking collectives after that barrier, so every rank posts the collectives in
        # the same order.
        held: dict = {}

        def at_start():
            held["t0"] = world.barrier(f"at the start of phase {ph.key}")
            if walled:
                held["wall"] = Stonewall(world, stonewall, run.session, held["t0"])

        def tick(p):
            on_progress(p)
            if "wall" in held:
                held["wall"].poll()

        report = run.session.run_phase(ph.name, on_progress=tick, at_start=at_start)
        returned = time.monotonic_ns()
        if "t0" in held:
            t0 = held["t0"]
        else:  # a phase outside the harness: meet the others' start barrier now, so
            # that every rank makes the same collective calls whatever its phase did
            world.barrier(f"at the start of phase {ph.key} (this rank's phase never held)")
            if walled:
                held["wall"] = Stonewall(world, stonewall, run.session, t0)
        wall = held.get("wall")
        wear = None
        if wall is not None:
            wall.finished()
            if wall.stopped:  # the engine marks a stop as an interruption; this one is the rule
                report["interrupted"] = False
                report["stonewalled"] = True
                run.session.reset_stop()
            if self.family == "tree":
                report, later, wear = tree_after_stonewall(world, self.job, report, t0, self.wearout)
                returned = time.monotonic_ns()
                if later is not None:  # the later phases visit only the files each tree has
                    from fsmeter.engine import EngineSession

                    run.session = EngineSession(later, for_merge=True)
            elif self.wear_size is not None:
                report, wear = wear_out(world, self.job, report, t0, self.wear_size)
                returned = time.monotonic_ns()
        self.part = {
            "rank": world.rank,
            "host": world.host,
            "barrier_mono_ns": t0,
            "held": "t0" in held,
            "returned_mono_ns": returned,
            "sent_notice": bool(wall and wall.sent_notice),
            "wall": wall,
            "wear": wear,
        }
        return report

    def after(self, run, ph, report: dict) -> dict | None:
        from fsmeter.mpi.merge import merge_phase, merge_regime

        wall, wear = self.part.pop("wall"), self.part.pop("wear")
        part = dict(self.part, report=report)
        parts = self.world.gather(part, f"after phase {ph.key}")
        if self.world.rank != 0:
            return None
        info = wall.close(parts) if wall is not None else None
        if info is not None and wear is not None:
            info["wearout" if self.wearout else "files"] = wear
        merged = merge_phase(parts, self.job.settings.interval_s, stonewall=info)
        if isinstance(merged.get("extra"), dict):
            merged["extra"] = merge_extra(self.job, merged, parts)
        merged["regime"] = merge_regime(parts)
        for op in merged["ops"].values():  # the full buckets served the merge; keep them out
            op["lat"].pop("hdr", None)
        return merged

    def go_on(self, run, ph, report: dict | None) -> bool:
        return self.world.bcast(report is None or not report["interrupted"], f"after phase {ph.key}")

    def cleanup(self, run) -> dict | None:
        try:
            return run.session.run_phase("cleanup")
        except BaseException as exc:
            self.world.abort(f"cleanup: {exc}")
            return None


def _rank_job(world: World, workload: str, directory: Path, sets: dict, stonewall, shared_file, reorder_shift, wearout):
    """This rank's job, and the options checked against the workload: -> (stonewall, reorder_shift, the job as
    given, the wear-out size, this rank's job: in its own folder of --dir, or --dir itself with a shared file,
    seeded by its rank)."""
    from fsmeter.spec import build_job, load_workload

    stonewall = parse_stonewall(stonewall)
    if workload.endswith(".fio") or ".fio:" in workload:
        raise UserError(
            f"{workload}: fio job files are not run under mpirun: use a named workload or a "
            "workload .toml (fsmeter list)"
        )
    defn = load_workload(workload)
    if stonewall is not None and defn.family.name not in STONEWALL_PHASES:
        raise UserError(
            f"--stonewall: the {defn.family.name} family cannot be stopped early and go on (its later "
            "phases need all the earlier ones did): use it with the "
            f"{', '.join(sorted(STONEWALL_PHASES))} families, or leave it out"
        )
    reorder_shift = parse_reorder_shift(reorder_shift)
    if reorder_shift is not None and not shared_file:
        raise UserError(
            "--reorder-shift: needs --shared-file (with a file per rank, there is no other rank's region to read)"
        )
    if shared_file and defn.family.name != "access":
        raise UserError(
            f"--shared-file: the {defn.family.name} family keeps a file (or tree) per rank; one shared "
            "file is for the access family's workloads (seq-write, seq-read, rand-read-4k ...)"
        )
    base = build_job(defn, directory, sets)
    wear_size = check_wearout(base, stonewall) if wearout else None
    # A shared file: every rank in --dir itself, on its own region of the same files.
    where = directory if shared_file else rank_dir(directory, world.rank)
    where.mkdir(exist_ok=True)
    job = build_job(defn, where, {**sets, "seed": base.settings.seed + world.rank})
    return stonewall, reorder_shift, base, wear_size, job


def _file_layout(world: World, job, directory: Path, shared_file: bool, reorder_shift, hosts: list) -> dict:
    """How the ranks share the files, for the run's document; with a shared file, this rank's regions are set
    on its job (where it lays out, where it runs)."""
    file_layout = {"kind": "file per rank", "rank_dirs": f"{directory}/rank-NNNNN"}
    if shared_file:
        shift = resolve_shift(reorder_shift, hosts)
        p = job.params
        region, run_at = shared_regions(world.rank, world.size, p.offset, p.file_size, shift)
        p.share_file(region, run_at)
        file_layout = {
            "kind": "shared file",
            "dir": str(directory),
            "region_bytes": p.file_size,
            "regions": f"rank r: [{p.offset} + r * {p.file_size}, + {p.file_size})",
            "reorder_shift": shift,
            "run_regions": (
                f"rank r runs on the region of rank (r + {shift}) mod {world.size}"
                if shift % world.size
                else "each rank runs on its own region"
            ),
        }
        if reorder_shift is not None and not shift % world.size:
            file_layout["note"] = (
                f"--reorder-shift {reorder_shift} is {shift} ranks, a whole turn of {world.size}: "
                "every rank works on its own region (IOR's -C does the same on one host); "
                "give a number of ranks such as 1 to work on a neighbour's"
            )
    return file_layout


def _rank0_doc(world: World, job, base, layout: dict, file_layout: dict, mounts: dict, timeout_s: float, stonewall):
    """The run's document as rank 0 writes it: the job, and under `mpi` the ranks, hosts, files, seeds, mounts,
    timeout, stonewall and clocks."""
    from fsmeter.phases import run_doc

    return run_doc(
        job,
        mpi={
            "ranks": world.size,
            "hosts": sorted(layout),
            "layout": layout,
            "files": file_layout,
            "seeds": f"{base.settings.seed} + rank",
            "mounts": mounts,
            **mounts_note(mounts),
            "timeout_s": timeout_s,
            "stonewall": stonewall if stonewall is not None else "none",
            "clock": "each rank's CLOCK_MONOTONIC from its release of the barrier opening the phase",
            "start": (
                "a phase measured by the engine's harness waits, its files open and its workers "
                "ready, at a second barrier; its measured work starts at that release"
            ),
        },
    )


def run_under_mpi(
    workload: str,
    directory: Path,
    sets: dict,
    console,
    show_progress: bool = True,
    keep_files: bool = False,
    cache: str = "auto",
    min_phase_s: float = 60.0,
    no_wait: bool = False,
    timeout_s: float = 600.0,
    stonewall=None,
    shared_file: bool = False,
    reorder_shift=None,
    wearout: bool = False,
):
    """Run one workload in every rank; returns (doc, job) on rank 0 and (None, job) on the others."""
    from fsmeter import runlock
    from fsmeter.engine import EngineSession
    from fsmeter.phases import PhaseRun, add_results, bar_progress, judge, run_phases
    from fsmeter.progress import progress_bar
    from fsmeter.regime import own_device

    world = World(timeout_s)
    err, job = None, None
    try:
        stonewall, reorder_shift, base, wear_size, job = _rank_job(
            world, workload, directory, sets, stonewall, shared_file, reorder_shift, wearout
        )
    except UserError as exc:
        err = exc
    except OSError as exc:
        err = UserError(f"--dir {directory}: cannot create this rank's folder: {exc.strerror}", exit_code=1)
    _shared_errors(world, err)

    # Host names, and the process ids of this host's ranks: their CPU is the run's own, not others'
    # (fsmeter.regime), as a single process's worker threads are.
    # And the mount each host sees --dir on: on a cluster every host must see the same shared
    # filesystem there, and a host whose mount is missing would measure its local disk unnoticed.
    pids = world.allgather((world.host, os.getpid(), mount_of(directory)), "exchanging host names")
    hosts = [h for h, _, _ in pids]
    siblings = [pid for h, pid, _ in pids if h == world.host and pid != os.getpid()]
    mounts = {h: m for h, _, m in pids}
    with contextlib.ExitStack() as stack:
        if world.local_rank == 0 and os.environ.get(LOCK_HELD_ENV) != world.host:
            # One lock per host, taken by the host's first rank; the others wait for it at the
            # barrier below. A lock another measurement holds is not waited for long: the other
            # ranks would spin at that barrier meanwhile. This rank gives up after a short bound
            # and aborts every rank, saying why.
            try:
                stack.enter_context(runlock.measuring(wait=not no_wait, wait_s=min(LOCK_WAIT_S, timeout_s / 2)))
            except UserError as exc:
                world.abort(exc.message)
        world.barrier("waiting for the first rank of each host to take its host's run lock")
        file_layout = _file_layout(world, job, directory, shared_file, reorder_shift, hosts)
        layout: dict = {}
        for r, h in enumerate(hosts):
            layout.setdefault(h, []).append(r)
        doc = (
            _rank0_doc(world, job, base, layout, file_layout, mounts, timeout_s, stonewall) if world.rank == 0 else None
        )
        run = PhaseRun(EngineSession(job.engine_json(), for_merge=True))
        steps = RankSteps(world, job, stonewall, wearout, wear_size)

        def reset(ph) -> str:
            world.barrier(f"before the cache reset of phase {ph.key}")
            return _reset_cache(world, cache, job.dir)

        try:
            with progress_bar(console, enabled=show_progress and world.rank == 0) as bar:
                run_phases(
                    run,
                    job.phases(),
                    bar_progress(bar, label=lambda ph: f"{ph.key} (rank 0 of {world.size})"),
                    reset_cache=reset,
                    device=own_device(job.dir, job.engine_dict().get("backend")),
                    own_pids=siblings,
                    quality=judge(min_phase_s=min_phase_s, interval_s=job.settings.interval_s),
                    annotate=True,
                    cleanup="never" if keep_files else "unless-raised",
                    steps=steps,
                )
        except SystemExit:
            raise
        except BaseException as exc:  # any failure in this rank ends every rank now, saying who
            msg = exc.message if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
            world.abort(msg)
        if doc is not None:
            doc["phases"] = run.reports()
            doc["interrupted"] = run.interrupted
    if doc is not None:
        # verify_mismatches counters are summed over the ranks; the first mismatch shown is rank 0's
        add_results(doc, job)
    if not keep_files and not shared_file:
        with contextlib.suppress(OSError):
            job.dir.rmdir()  # this rank's folder, when the workload left it empty (never --dir itself)
    return doc, job


__all__ = [
    "RankSteps",
    "Stonewall",
    "mount_of",
    "mounts_note",
    "rank_dir",
    "resolve_shift",
    "run_under_mpi",
    "shared_regions",
    "tree_after_stonewall",
]
