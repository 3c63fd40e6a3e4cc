"""Run a campaign: every cell of the matrix, trial by trial, into the results store.

    cells = plan(campaign)
    for cell in cells:
        run_cell(cell, ctx)

Per cell: provision (fresh mkfs per cell, or per trial), then for each trial: apply the host
factors, build the job on the mount, run its phases (resetting caches before cold-cache
phases and recording how), extract the metrics, commit the trial, and ask the repetition
policy whether the cell is done ("target-met", "trial-cap", "time-cap", or "fixed-n").

A cell that cannot be provisioned or whose workload fails (mkfs error, unsupported
filesystem, ENOSPC...) is recorded as failed with its cause, and the campaign goes on.
SIGINT/SIGTERM/SIGHUP: the running trial is recorded as interrupted with what it measured, the
Provisioner unmounts and detaches everything, and the KeyboardInterrupt propagates.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

import fsmeter
from fsmeter.campaign import CampaignFile, Cell, plan
from fsmeter.engine import EngineFailure, EngineSession
from fsmeter.errors import UserError
from fsmeter.hostinfo import host_info
from fsmeter.store import Store, StoreError, now_iso


@dataclass
class RunContext:
    campaign: CampaignFile
    campaign_id: int
    store: Store
    prov: Any  # fsmeter.provision.Provisioner
    console: Console
    bar: Progress
    overall: Any = None  # rich task id
    overall_total: int = 0
    counts: dict = field(default_factory=lambda: {"done": 0, "failed": 0, "skipped": 0})
    #: Print a line when a cell stops at a cap before its CI target (compare leaves that to its matrix notes).
    cap_notes: bool = True
    #: When the target's storage was last probed (CLOCK_MONOTONIC), and trials run since.
    probed_at: float = 0.0
    trials_since_probe: int = 0

    def probe(self) -> None:
        """Probe the target's storage and record it (see _probe_storage); the clock starts again."""
        _probe_storage(self.campaign, self.store, self.campaign_id, self.prov, self.console)
        self.probed_at, self.trials_since_probe = time.monotonic(), 0

    def reprobe(self, *, final: bool = False) -> None:
        """Probe the target's storage again when REPROBE_EVERY_S has passed since the last probe (or,
        with ``final``, when any trial ran since it), for the targets whose probe uses storage of its
        own (REPROBE_KINDS)."""
        spec = self.campaign.target.spec()
        if spec.kind not in REPROBE_KINDS or self.trials_since_probe == 0:
            return
        from fsmeter.provision.targets.guestmodel import passed_disk

        if spec.kind == "disk-model" and passed_disk() is not None:
            return  # in a guest, the model's one drive holds the cells' filesystems: probed once, blank

        if not final and time.monotonic() - self.probed_at < REPROBE_EVERY_S:
            return
        self.probe()


#: A storage probe is one sample of a host that may be slowed, for a while, by what else runs on it
#: (its own writeback, another guest of the hypervisor): one slow probe at the start once read a
#: host-cached disk's fsync as 3.1 times faster than the paper's disk where the next run's read 19
#: times. So the target is probed again between trials every this many seconds and once at the end,
#: and a study's gates take the fastest of a campaign's probes (fsmeter.study.frames): nothing makes
#: storage faster than it is, so the fastest probe is the nearest to what it can do.
REPROBE_EVERY_S = 300.0
#: Target kinds probed again during a campaign: those whose probe makes storage of its own (a fresh
#: loop image, a fresh disk-model device). A device target holds a cell's filesystem while the campaign
#: runs, and a directory target is the user's: both are probed once, at the start; so is a disk model
#: inside a guest (the one drive the host passed holds the cells' filesystems).
REPROBE_KINDS = frozenset({"loop", "disk-model"})


def expected_trials(c: CampaignFile) -> int:
    """Trials a cell is expected to take, for the overall ETA (adaptive: the minimum it needs)."""
    r = c.repetitions
    return r.n if r.policy == "fixed" else r.discard + r.min_trials


class Policy:
    """The repetition rule: fixed N, or the adaptive rule of fsmeter.stats.adaptive."""

    def __init__(self, c: CampaignFile):
        self.r = c.repetitions
        self.rule = self.r.rule() if self.r.policy == "adaptive" else None

    def decide(self, values: list, elapsed_s: float):
        """(stop, reason, half_width_pct) after the latest trial; values: headline of every ok trial."""
        if self.rule is not None:
            d = self.rule.decide(values, elapsed_s)
            return d.stop, d.reason, d.half_width_pct
        from fsmeter.stats.summary import mean_ci

        kept = values[self.r.discard :]
        hw = mean_ci(kept, self.r.level).half_width_pct if len(kept) >= 2 else float("nan")
        return len(values) >= self.r.n, "fixed-n", hw


def _nan_none(x: float | None) -> float | None:
    return None if x is None or x != x else float(x)


def _elapsed(started: str, ended: str) -> float:
    return (dt.datetime.fromisoformat(ended) - dt.datetime.fromisoformat(started)).total_seconds()


# -- one campaign ---------------------------------------------------------------------------
def claim_campaign(store: Store, campaign_id: int, take_over: bool = False) -> dict:
    """Record this process as the campaign's owner; refuse while another live process owns it.

    ``take_over``: also claim a campaign owned by a process on another host, whose liveness cannot
    be checked from here. Returns this process's identity (for release_campaign).
    """
    from fsmeter import runlock

    me = runlock.identity()
    owner = store.campaign_owner(campaign_id)
    if owner is not None and (owner.get("pid"), owner.get("start")) != (me["pid"], me["start"]):
        state = runlock.alive(owner)
        if state is True:
            raise UserError(
                f"campaign {campaign_id} is being run by {runlock.describe(owner)}: let it finish, or "
                f"stop it (Ctrl-C, or kill {owner['pid']}) and resume it then",
                exit_code=1,
            )
        if state is None and not take_over:
            raise UserError(
                f"campaign {campaign_id} is owned by {runlock.describe(owner)}, which cannot be checked "
                "from this host: if that run has stopped, resume with --take-over",
                exit_code=1,
            )
    if not store.claim_campaign(campaign_id, me, owner):
        raise UserError(
            f"campaign {campaign_id}: another fsmeter claimed it at the same moment: see `fsmeter campaign list`",
            exit_code=1,
        )
    return me


def check_guest_resources(c: CampaignFile) -> None:
    """A guest's CPUs and memory ([guest] and the guest_vcpus, guest_memory levels) within this host's: on
    the host only (a guest parses the same campaign with fewer of either)."""
    from fsmeter.campaign import guest_memory_problem, guest_vcpus_problem
    from fsmeter.hostinfo import cpus_online, mem_total_bytes

    cpus, mem = cpus_online(), mem_total_bytes()
    checks = [("guest.vcpus", guest_vcpus_problem(c.guest.vcpus, cpus))]
    checks.append(("guest.memory", guest_memory_problem(c.guest.memory, mem)))
    checks += [("factors.guest_vcpus", guest_vcpus_problem(v, cpus)) for v in c.factors.get("guest_vcpus", [])]
    checks += [("factors.guest_memory", guest_memory_problem(v, mem)) for v in c.factors.get("guest_memory", [])]
    for where, why in checks:
        if why is not None:
            raise UserError(f"{where}: {why}: no cell was run")


def check_local_ranks(c: CampaignFile) -> None:
    """Every trial's ranks within what this machine can run, when they all run on it: MPI without a
    hostfile, or on the namespace hosts of a glusterfs target (which share its CPUs)."""
    if c.mpi is None and "ranks" not in c.factors:
        return
    if c.mpi is not None and c.mpi.hostfile and c.target.kind != "glusterfs":
        return  # on the hosts of the hostfile: their slots are mpirun's to count
    from fsmeter.mpi.launch import local_ranks_problem

    levels = c.factors.get("ranks") or [c.mpi.ranks]
    for n in levels:
        why = local_ranks_problem(n)
        if why is not None:
            where = "factors.ranks" if "ranks" in c.factors else "mpi.ranks"
            raise UserError(f"{where}: {why}: no cell was run")


def check_target(c: CampaignFile, fresh: bool = True) -> None:
    """Refuse the whole campaign before its first cell when its target cannot be used: a device
    that is not a block device, is mounted or in use, or (on a fresh start, without force) carries
    data; a directory that is a kernel interface. One line, exit 2: no cell runs."""
    from fsmeter.campaign import KERNEL_FACTOR

    if any(lv != "host" for lv in c.factors.get(KERNEL_FACTOR, [])):  # guests: QEMU, vng, an accelerator
        from fsmeter.guest import kernels, vm

        missing = vm.missing_tools()
        if missing:
            raise UserError(
                f"factors.{KERNEL_FACTOR}: guests cannot run here: missing {'; '.join(missing)}: no cell was run"
            )
        kernels.choose(c.guest.accelerator)  # accelerator = 'kvm' where it cannot boot: refused, saying why
        check_guest_resources(c)
    t = c.target
    if t.kind == "device":
        from fsmeter.provision.errors import DeviceRefused
        from fsmeter.provision.targets.device import check_device

        # On a resume the device holds the filesystem an earlier cell made: its signature is
        # checked cell by cell, as then (the in-use checks apply regardless of force).
        try:
            check_device(t.device, t.destroy_data_on, t.force or not fresh)
        except DeviceRefused as exc:
            raise UserError(f"target: {exc.message}: no cell was run") from None
    elif t.kind == "glusterfs" and c.mpi is None and "ranks" not in c.factors:
        raise UserError(
            "target: kind = 'glusterfs' runs every trial under MPI on its hosts: add an [mpi] "
            "section (ranks = one per client host or more)"
        )
    elif t.kind == "disk-model":
        from fsmeter.diskmodel.profiles import describe, load_profile

        try:
            fig = describe(load_profile(t.model or ""))
        except UserError as exc:
            raise UserError(f"target.model: {exc.message}: no cell was run") from None
        if t.size + t.offset > fig["capacity_bytes"]:
            raise UserError(
                f"target.size: {t.size >> 20} MiB at offset {t.offset >> 20} MiB does not fit on {t.model} "
                f"({fig['capacity_bytes'] / 1e9:.1f} GB): make it smaller; no cell was run"
            )
    elif t.kind == "dir" and t.path:
        from fsmeter.userpaths import check_dir

        check_dir(t.path, "target.path:")  # the rules of `fsmeter run --dir`
    check_local_ranks(c)


def run_campaign(
    c: CampaignFile,
    store: Store,
    campaign_id: int,
    console: Console,
    show_progress: bool = True,
    take_over: bool = False,
    cap_notes: bool = True,
) -> dict:
    """Run (or resume) every unfinished cell; returns counts of done/failed cells."""
    cells = plan(c)
    rows = store.cells(campaign_id)
    if [(r["idx"], r["workload"]) for r in rows] != [(x.index, x.workload) for x in cells]:
        raise UserError(
            f"campaign {campaign_id}: its stored matrix no longer matches its campaign file "
            "(changed workloads or fsmeter version): start a new campaign with `campaign run`"
        )
    check_target(c, fresh=all(r["status"] == "pending" for r in rows))
    me = claim_campaign(store, campaign_id, take_over)
    try:
        guest = [i for i, cell in enumerate(cells) if cell.kernel is not None]  # a kernel factor: in guests
        if guest:
            from fsmeter.guest.host import run_guest_levels

            here = [i for i in range(len(cells)) if i not in set(guest)]  # kernel = "host": on the host
            out = {"done": 0, "failed": 0, "skipped": 0}
            if here:
                out = _run_cells(
                    c,
                    [cells[i] for i in here],
                    [rows[i] for i in here],
                    store,
                    campaign_id,
                    console,
                    show_progress,
                    cap_notes,
                )
            more = run_guest_levels(
                c,
                [cells[i] for i in guest],
                [rows[i] for i in guest],
                store,
                campaign_id,
                console,
                store.campaign(campaign_id)["source"],
                cap_notes,
            )
            out = {k: out.get(k, 0) + more.get(k, 0) for k in set(out) | set(more)}
        else:
            out = _run_cells(c, cells, rows, store, campaign_id, console, show_progress, cap_notes)
    except BaseException:
        _quietly(store.release_campaign, campaign_id, me)  # never hide why the run stopped
        raise
    store.release_campaign(campaign_id, me)
    return out


def _quietly(write, *args, **kwargs) -> None:
    """A status write on the way out of a run the store stopped (disk full, damage): it may fail
    too; the store then keeps what its last commit left, which `campaign resume` continues from."""
    try:
        write(*args, **kwargs)
    except StoreError:
        pass


def _run_cells(
    c: CampaignFile,
    cells: list,
    rows: list,
    store: Store,
    campaign_id: int,
    console: Console,
    show_progress: bool,
    cap_notes: bool = True,
) -> dict:
    from fsmeter.provision import Provisioner

    store.set_campaign_status(campaign_id, "running")
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        disable=not show_progress,
    )
    try:
        with Provisioner() as prov, bar:
            ctx = RunContext(c, campaign_id, store, prov, console, bar, cap_notes=cap_notes)
            ctx.probe()
            ctx.overall_total = len(cells) * expected_trials(c)
            ctx.overall = bar.add_task(f"campaign {c.name}: trials", total=ctx.overall_total)
            if c.order == "interleaved":
                _run_interleaved(cells, rows, ctx)
            else:
                for cell, row in zip(cells, rows):
                    run_cell(cell, row, ctx)
            ctx.reprobe(final=True)
    except KeyboardInterrupt:
        store.set_campaign_status(campaign_id, "interrupted")
        raise
    except StoreError:  # the store cannot take results: stopped like an interrupt, resumable
        _quietly(store.set_campaign_status, campaign_id, "interrupted")
        raise
    store.set_campaign_status(campaign_id, "done")
    return ctx.counts


def _probe_storage(c: CampaignFile, store: Store, campaign_id: int, prov, console: Console) -> None:
    """Measure the storage under the campaign's target before any mkfs and record it (the store's
    storage_probes): a study compares it with the paper's disk. A probe that fails is recorded as not
    measured, with why; it never stops the campaign."""
    from fsmeter.hostinfo import cpu_clock_mhz
    from fsmeter.provision.errors import ProvisionError
    from fsmeter.provision.storage_probe import StorageProbe, probe_target, storage_class_of

    spec = c.target.spec()
    try:
        probe = probe_target(prov, spec)
    except (OSError, ValueError, ProvisionError) as exc:
        msg = getattr(exc, "message", None) or str(exc)
        probe = StorageProbe(storage_class_of(spec), spec.kind, 0, note=f"the probe failed: {msg}")
    info = host_info()
    row = {**probe.as_dict(), "cpu_mhz": cpu_clock_mhz(), "cpus_online": info["cpus_online"]}
    row["hostname"] = info["hostname"]
    store.record_storage_probe(campaign_id, row)
    console.print(f"[dim]{probe.line()}[/]")


def _run_interleaved(cells: list, rows: list, ctx: RunContext) -> None:
    """The cells of each workload take turns, one trial each; the turn order reverses every round
    (A B C, C B A, ...) so that a linear drift during a round costs every configuration the same."""
    groups: dict = {}
    for cell, row in zip(cells, rows):
        groups.setdefault(cell.workload, []).append((cell, row))
    for group in groups.values():
        steps = [_cell_steps(cell, row, ctx) for cell, row in group]
        try:
            while steps:
                for step in list(steps):
                    try:
                        next(step)
                    except StopIteration:
                        steps.remove(step)
                steps.reverse()
        finally:
            for step in steps:  # an interrupt: the cells still open tear their filesystems down now
                step.close()


# -- one cell -------------------------------------------------------------------------------
def run_cell(cell: Cell, row: Any, ctx: RunContext) -> None:
    """All trials of one cell until the repetition policy stops it; failures are recorded, not raised."""
    for _ in _cell_steps(cell, row, ctx):
        pass


def _cell_steps(cell: Cell, row: Any, ctx: RunContext):
    """run_cell as a generator that pauses after each recorded trial (for the interleaved order)."""
    store, policy = ctx.store, Policy(ctx.campaign)
    if row["status"] in ("done", "failed"):
        ctx.counts["skipped"] += 1
        ctx.bar.advance(ctx.overall, len(store.trials(row["id"])))
        return
    old = store.trials(row["id"])
    number = max((t["number"] for t in old), default=0) + 1
    values = [v for _, v in store.headline_values(row["id"])]
    elapsed = sum(_elapsed(t["started"], t["ended"]) for t in old)
    ctx.bar.advance(ctx.overall, len(old))
    if values:
        stop, reason, _ = policy.decide(values, elapsed)
        if stop:
            store.set_cell_status(row["id"], "done", stop_reason=reason)
            ctx.counts["done"] += 1
            return
    cell_total = max(expected_trials(ctx.campaign), len(values))
    task = ctx.bar.add_task(f"cell {cell.index + 1}: {cell.describe()}", total=cell_total)
    ctx.bar.advance(task, len(values))
    store.set_cell_status(row["id"], "running")
    mnt = None
    base: Path | None = None
    on_this_mkfs = 0  # trials run on the current filesystem
    try:
        while True:
            per_trial = (ctx.campaign.mkfs or cell.definition.family.default_mkfs) == "per-trial"
            if mnt is None or (per_trial and on_this_mkfs > 0):
                if mnt is not None:
                    ctx.prov.destroy(mnt)
                    mnt = None
                mnt = ctx.prov.create(ctx.campaign.target.spec(), cell.fs)
                on_this_mkfs = 0
                # A fresh mount needs its work folder again; so does a glusterfs target made anew
                # for the trial (a new volume at a new path, not a mount fsmeter may remount).
                if base is None or mnt.owns_mount or not base.is_dir():
                    base = _workdir(mnt)
            on_this_mkfs += 1
            ctx.reprobe()
            with ctx.prov.host(cell.host, mnt) as host:
                result = run_trial(cell, mnt, host, base, number, ctx)
            ctx.trials_since_probe += 1
            if result["status"] == "ok":
                values.append(result["headline"])
            elapsed += _elapsed(result["started"], result["ended"])
            stop, reason, hw = policy.decide(values, elapsed) if result["status"] == "ok" else (True, None, None)
            discarded = result["status"] == "ok" and len(values) <= policy.r.discard
            with ctx.prov._shielded():  # a second Ctrl-C must not tear this trial's commit in half
                store.record_trial(
                    row["id"],
                    number,
                    status=result["status"],
                    cause=result["cause"],
                    started=result["started"],
                    ended=result["ended"],
                    discarded=discarded,
                    stop_reason=reason if stop else None,
                    half_width_pct=_nan_none(hw),
                    phases=result["phases"],
                    metrics=result["metrics"],
                    environment=result["environment"],
                )
            ctx.bar.advance(task)
            ctx.bar.advance(ctx.overall)
            number += 1
            if result["status"] == "interrupted":
                store.set_cell_status(row["id"], "interrupted", cause=result["cause"])
                raise KeyboardInterrupt(result["cause"])
            if result["status"] in ("failed", "corrupt"):
                raise _TrialFailed(result["cause"] if result["status"] == "failed" else f"corrupt: {result['cause']}")
            if stop:
                store.set_cell_status(row["id"], "done", stop_reason=reason)
                ctx.counts["done"] += 1
                if reason in ("trial-cap", "time-cap") and ctx.cap_notes:
                    hw_txt = f"{hw:.1f}%" if hw == hw else "unknown"
                    ctx.console.print(
                        f"[yellow]cell {cell.index + 1} ({cell.describe()}): stopped by {reason} "
                        f"before the CI target; half-width {hw_txt} of the mean[/]"
                    )
                return
            if number - 1 >= cell_total:  # the adaptive rule wants more trials than expected: grow the ETA
                cell_total += 1
                ctx.overall_total += 1
                ctx.bar.update(task, total=cell_total)
                ctx.bar.update(ctx.overall, total=ctx.overall_total)
            yield
    except (KeyboardInterrupt, GeneratorExit):  # GeneratorExit: interleaved, another cell was interrupted
        store.set_cell_status(row["id"], "interrupted", cause="interrupted (SIGINT/SIGTERM)")
        raise
    except StoreError as exc:  # not the cell's failure: it stays to be run by `campaign resume`
        _quietly(store.set_cell_status, row["id"], "interrupted", cause=f"results store: {exc.kind}")
        raise
    except (_TrialFailed, UserError) as exc:
        # mkfs error, unsupported filesystem, mount error, host factor refused, ENOSPC...
        cause = f"{type(exc).__name__}: {exc}" if not isinstance(exc, _TrialFailed) else str(exc)
        store.set_cell_status(row["id"], "failed", cause=cause)
        ctx.counts["failed"] += 1
        ctx.console.print(f"[red]cell {cell.index + 1} ({cell.describe()}) failed:[/] {cause}")
    finally:
        if mnt is not None and not mnt.owns_mount and base is not None:
            shutil.rmtree(base, ignore_errors=True)
        if mnt is not None:
            ctx.prov.destroy(mnt)
        ctx.bar.remove_task(task)


class _TrialFailed(Exception):
    pass


def _workdir(mnt) -> Path:
    """Where a cell's trials put their files: the fresh filesystem itself, or (dir target) a new folder."""
    if mnt.owns_mount:
        return Path(mnt.path)
    return Path(tempfile.mkdtemp(prefix=".fsmeter-campaign-", dir=mnt.path))


# -- one trial ------------------------------------------------------------------------------
def run_trial(cell: Cell, mnt, host, base: Path, number: int, ctx: RunContext) -> dict:
    """Run every phase of the cell's job once; never raises for a failed workload or an interrupt,
    it returns status ok | failed | interrupted with whatever was measured."""
    from fsmeter.phases import PhaseRun, bar_progress, judge, run_phases
    from fsmeter.spec import build_job
    from fsmeter.verify import corruption

    started = now_iso()
    trial_dir = base / f"trial-{number}"
    trial_dir.mkdir(exist_ok=True)
    job = build_job(cell.definition, trial_dir, cell.overrides)
    status, cause = "ok", None
    phases: list = []
    methods: list = []
    run = None
    mpi_env = None
    disk_watch = disk_before = None
    try:
        if cell.ranks is not None:  # every trial as mpirun -n RANKS fsmeter run ... (fsmeter.mpi.launch)
            from fsmeter.mpi.launch import trial_phases

            status, cause, phases, methods, mpi_env = trial_phases(
                cell, job, trial_dir, ctx.campaign, launch=getattr(mnt, "launch", None)
            )
        else:
            run = PhaseRun(EngineSession(job.engine_json()))
            # Read counters of the cell's own block device (fsmeter made it); none with the null backend.
            device = mnt.device if mnt.owns_mount and job.engine_dict().get("backend") != "null" else None
            disk_watch = _disk_watch(mnt)
            disk_before = disk_watch.snapshot() if disk_watch is not None else None
            run_phases(
                run,
                job.phases(),
                bar_progress(ctx.bar, label=lambda ph: f"  {ph.key}", remove=True),
                reset_cache=lambda ph: mnt.reset_cache([str(trial_dir)]),
                device=device,
                disk=disk_watch,
                quality=judge(
                    level=ctx.campaign.repetitions.level,
                    min_phase_s=ctx.campaign.min_phase_s,
                    interval_s=job.settings.interval_s,
                    interrupted=True,
                ),
                cleanup="if-complete",
            )
            for w in (run.cleanup_report or {}).get("warnings") or []:  # e.g. a ledger kept as evidence
                ctx.console.print(f"  [yellow]cell {cell.index + 1}, cleanup:[/] {w}", highlight=False)
            if run.interrupted:
                status, cause = "interrupted", f"interrupted during phase {run.phases[-1].phase.key}"
    except EngineFailure as exc:
        status, cause = "failed", f"EngineFailure: {exc.message}"
    except KeyboardInterrupt as exc:
        status, cause = "interrupted", f"interrupted ({exc or 'SIGINT'})"
    except UserError as exc:  # e.g. a remount refused
        status, cause = "failed", f"{type(exc).__name__}: {exc.message}"
    finally:
        if run is not None:  # what was measured, also when a failure or a stop ended the trial
            phases = [
                {
                    "key": o.phase.key,
                    "engine_phase": o.phase.name,
                    "measured": o.phase.measured,
                    "discarded": o.phase.discard,
                    "cache_method": o.cache_method,
                    "report": o.report,
                }
                for o in run.phases
            ]
            methods = list(run.resets)
        if status != "interrupted":
            shutil.rmtree(trial_dir, ignore_errors=True)
    metrics, headline = [], None
    for i, m in enumerate(job.metrics()):
        rep = next((p["report"] for p in phases if p["key"] == m.phase), None)
        if rep is None:
            continue
        try:
            v = m.get(rep)
        except (KeyError, TypeError, ZeroDivisionError):
            v = None
        if i == 0:
            headline = v
        metrics.append(
            {
                "phase": m.phase,
                "name": m.name,
                "unit": m.unit,
                "higher_is_better": m.higher_is_better,
                "value": v,
                "headline": i == 0,
                "keys": m.keys,
            }
        )
    if status == "ok" and headline is None:
        status, cause = "failed", f"the headline metric {cell.headline} could not be computed from the report"
    bad_data = corruption((p["key"], p["report"]) for p in phases)
    if bad_data and status in ("ok", "failed"):
        status, cause = "corrupt", bad_data  # a finding, never an ok trial
    env = _environment(job, mnt, host, methods)
    if run is not None and disk_watch is not None:  # the disk model's profile, calibration and lateness
        env["disk_model"] = disk_model_record(mnt, disk_watch.since(disk_before))
    if mpi_env is not None:
        env["mpi"] = mpi_env  # hosts and rank layout, in the environment row's extra JSON
        mine = len((mpi_env.get("layout") or {}).get(env["hostname"]) or []) or cell.ranks
        env["cpus_used"] = min(env["cpus_allowed"], job.settings.threads * mine)  # this host's ranks x threads
    return {
        "status": status,
        "cause": cause,
        "started": started,
        "ended": now_iso(),
        "phases": phases,
        "metrics": metrics,
        "headline": headline,
        "environment": env,
    }


def _disk_watch(mnt):
    """The disk-model target's watch (None for every other target)."""
    target = getattr(mnt, "target", None)
    return target.watch() if target is not None else None


def disk_model_record(mnt, trial: dict | None) -> dict:
    """What a trial on a disk model records beside its environment: the profile (name, drive,
    digest of the description the daemon ran), the newest calibration of that description on this
    machine (fsmeter.calibration, or None), and the trial's lateness (fsmeter.diskmodel.stats)."""
    from fsmeter.calibration import saved_calibration

    info = mnt.target.info()
    return {
        "profile": info.get("disk_model"),
        "drive": info.get("disk_model_drive"),
        "profile_sha256": info.get("disk_model_profile_sha256"),
        "storage_class": info.get("storage_class"),
        "calibration": saved_calibration(info.get("disk_model"), info.get("disk_model_profile_sha256")),
        "trial": trial,
        "disturbed": (trial or {}).get("disturbed"),
    }


def _environment(job, mnt, host, methods: list) -> dict:
    hi = host_info()
    mi = mnt.info()
    hinfo = host.info() if host is not None else {}
    env = {
        "hostname": hi["hostname"],
        "kernel": hi["kernel"],
        "cpu_model": hi["cpu_model"],
        "mem_bytes": hi["mem_bytes"],
        "cpus_online": hi["cpus_online"],
        "cpus_used": min(len(os.sched_getaffinity(0)), job.settings.threads) if job is not None else None,
        "target_kind": mi.get("target"),
        "storage_class": mi.get("storage_class"),
        "device": mi.get("device"),
        "fs": mi.get("fs"),
        "mkfs_command": mi.get("mkfs_command"),
        "mkfs_options": mi.get("mkfs_options"),
        "mkfs_tool": mi.get("mkfs_tool"),
        "mkfs_tool_version": mi.get("mkfs_tool_version"),
        "mount_options": mi.get("mount_options"),
        "proc_mounts_line": mi.get("proc_mounts_line"),
        "scheduler": mi.get("scheduler"),
        "readahead_kb": mi.get("readahead_kb"),
        "cache_method": ",".join(sorted(set(methods))) if methods else "none (no cold-cache phase)",
        "seed": job.settings.seed if job is not None else None,
        "fsmeter_version": fsmeter.__version__,
        "cpus_allowed": len(os.sched_getaffinity(0)),
        "host_factors": hinfo,
        "mount": {k: v for k, v in mi.items() if k not in ("fs", "device", "proc_mounts_line")},
        "job": job.engine_dict() if job is not None else None,
        "python": hi["python"],
        "os": hi["os"],
    }
    return env


def start_campaign(
    path: Path,
    store: Store,
    console: Console,
    show_progress: bool = True,
    campaign: CampaignFile | None = None,
    text: str | None = None,
) -> int:
    """Validate, plan and register a campaign file; returns its id (run it with run_campaign)."""
    from fsmeter.campaign import load_campaign

    if campaign is None:
        campaign, text = load_campaign(path)
    cells = plan(campaign)
    check_target(campaign)  # before anything is stored: a refused target leaves no campaign behind
    return store.create_campaign(
        campaign.name, text or "", [(x.workload, x.factors) for x in cells], source_path=str(path) if path else None
    )


__all__ = [
    "Policy",
    "RunContext",
    "check_target",
    "claim_campaign",
    "run_campaign",
    "run_cell",
    "run_trial",
    "start_campaign",
]
