"""`fsmeter run WORKLOAD --dir PATH`: one workload, once, on a directory you name."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import typer
from rich.console import Console
from rich.text import Text

from fsmeter.cli._runlock import no_wait_option
from fsmeter.errors import UserError
from fsmeter.phases import CACHE_CHOICES, DEFAULT_MIN_PHASE_S, run_job
from fsmeter.regime import describe as describe_regime
from fsmeter.report.terminal import phase_table
from fsmeter.spec import build_job, load_workload, parse_set


def describe_direct_io(d: dict) -> str:
    """One line on whether O_DIRECT was really direct (the access family's `extra.direct_io`)."""
    added = d.get("page_cache_pages_added")
    seen = "" if added is None else f"; {added} page(s) of the data files entered the page cache"
    how = f"O_DIRECT alignment {d['offset_align']} B ({d['align_source']})"
    if d.get("buffered_fallback_possible"):
        return f"[yellow]O_DIRECT may have fallen back to buffered I/O[/]: {how}{seen}"
    return f"O_DIRECT, truly direct: every request a multiple of the {how}{seen}"


def describe_buffers(b: dict) -> str | None:
    """One line on huge-page request buffers (the access family's `extra.buffer_memory`); None for
    the default heap buffers."""
    kind = b.get("kind")
    if kind in (None, "heap"):
        return None
    mib = lambda v: f"{(v or 0) / 2**20:,.1f}"  # noqa: E731
    name = {"thp": "transparent huge pages", "hugetlb": "hugetlb pages"}.get(kind, kind)
    mapped, huge = b.get("mapped_bytes"), b.get("huge_bytes")
    if huge is None:
        return f"request buffers: {mib(b.get('bytes'))} MiB on {name} asked for; how many the kernel gave is unknown"
    line = (
        f"request buffers: {mib(b.get('bytes'))} MiB on {name} ({mib(mapped)} MiB mapped in whole huge pages, "
        f"{mib(huge)} MiB of it huge)"
    )
    if kind == "thp" and mapped and huge < mapped:
        line += (
            " [yellow](the kernel gave 4 KiB pages for the rest: transparent_hugepage off, or no free 2 MiB blocks)[/]"
        )
    return line


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run(
        workload: str = typer.Argument(
            ...,
            help="a named workload (see `fsmeter list`), a workload .toml file, or a "
            "fio job file (.fio; FILE.fio:JOB for one job)",
        ),
        dir: Path | None = typer.Option(
            None,
            "--dir",
            "-d",
            help="directory on the filesystem to measure (must exist; a fio job file's absolute directory= without it)",
        ),
        set_: list[str] | None = typer.Option(None, "--set", "-s", help="override a parameter: key=value (repeatable)"),
        json_out: Path | None = typer.Option(None, "--json", help="also write the full result as JSON to this file"),
        keep_files: bool = typer.Option(False, "--keep-files", help="leave the workload's files in --dir"),
        allow_exec: bool = typer.Option(
            False,
            "--allow-exec",
            help="a fio job file: run the program= of its "
            "ioengine=exec jobs (refused without it: trust the file first)",
        ),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar"),
        min_phase_s: float = typer.Option(
            DEFAULT_MIN_PHASE_S,
            "--min-phase-s",
            help="phases shorter than this are flagged too short to trust (60 s for claims)",
        ),
        cache: str = typer.Option(
            "auto",
            "--cache",
            help="before cold-cache phases: auto (drop as root, else "
            "fadvise), drop (drop_caches, root), fadvise (files under --dir), keep",
        ),
        no_wait: bool = no_wait_option(),
        stonewall: str | None = typer.Option(
            None,
            "--stonewall",
            help="under mpirun: stop every rank's measured "
            "phases when the first rank finishes (first-done) or after SECONDS",
        ),
        mpi_timeout_s: float = typer.Option(
            60.0,
            "--mpi-timeout-s",
            help="under mpirun: the longest a rank waits "
            "for the others at a barrier before aborting every rank (or as long "
            "as it worked itself since the last barrier, when that is longer)",
        ),
        wearout: bool = typer.Option(
            False,
            "--stonewall-wearout",
            help="under mpirun, with --stonewall: after the "
            "stonewall every rank goes on until it has done as many requests (access "
            "workloads, IOR -O stoneWallingWearOut=1) or as many files per tree (tree "
            "family's create, mdtest -W) as the busiest rank: IO500's rule",
        ),
        shared_file: bool = typer.Option(
            False,
            "--shared-file",
            help="under mpirun, access workloads: every rank "
            "works on its own region of the same files in --dir (IOR without -F)",
        ),
        reorder_shift: str | None = typer.Option(
            None,
            "--reorder-shift",
            help="with --shared-file: each rank's "
            "measured phase works on the region of rank (r + K) mod N; node: "
            "K = the ranks of one host (IOR -C)",
        ),
        disk_model: str | None = typer.Option(
            None,
            "--disk-model",
            help="instead of --dir: make a filesystem (--fs) on a disk model (fsmeter disk-model list) of "
            "--size, run there, and remove it (root)",
        ),
        fs: str = typer.Option("ext4", "--fs", help="with --disk-model: the filesystem to make on it"),
        size: str = typer.Option("1G", "--size", help="with --disk-model: the size of its image"),
    ) -> None:
        """Run one workload once on a directory and print ops/s, MiB/s, latency percentiles and CPU."""
        from fsmeter.userpaths import is_stdout

        # With --json - the result document is standard output: the tables go to standard error.
        console = Console(stderr=is_stdout(json_out))
        _check_options(workload, dir, cache, json_out, min_phase_s)
        opts = dict(show_progress=not quiet, keep_files=keep_files, cache=cache, min_phase_s=min_phase_s)
        if disk_model is not None:
            return _run_on_disk_model(workload, disk_model, fs, size, dir, set_, json_out, no_wait, console, opts)
        for given, name in ((fs != "ext4", "--fs"), (size != "1G", "--size")):
            if given:
                raise UserError(f"{name} applies to --disk-model only: add --disk-model NAME or leave it out")
        _check_dir(workload, dir)
        _check_mpi_options(workload, stonewall, shared_file, reorder_shift, wearout, allow_exec)
        from fsmeter.mpi.comm import launched_under_mpi

        if launched_under_mpi():  # one rank of mpirun -n N: rank 0 prints and writes the merged result
            if dir is None:
                raise UserError("--dir is required under mpirun: name the directory every rank works in")
            from fsmeter.mpi.run import run_under_mpi

            if not mpi_timeout_s > 0:
                raise UserError(f"--mpi-timeout-s {mpi_timeout_s:g}: use a number of seconds > 0")
            doc, job = run_under_mpi(
                workload,
                dir,
                parse_set(set_ or []),
                console,
                no_wait=no_wait,
                timeout_s=mpi_timeout_s,
                stonewall=stonewall,
                shared_file=shared_file,
                reorder_shift=reorder_shift,
                wearout=wearout,
                **opts,
            )
            if doc is not None:
                print_result(doc, job, console, json_out)
            return
        if workload.endswith(".fio"):  # every job of a fio job file, in order, all validated first
            from fsmeter.interop.fio_run import plan_jobfile, run_jobfile

            jobs = plan_jobfile(workload, dir, parse_set(set_ or []), allow_exec=allow_exec)
            job = next(j for j, _ in jobs if j is not None)  # an access workload (family hooks below)
        else:
            job = build_job(load_workload(workload), dir, parse_set(set_ or []))
        from fsmeter.runlock import measuring

        with measuring(wait=not no_wait):
            if workload.endswith(".fio"):
                doc = run_jobfile(jobs, workload, console, place=dir, **opts)
            else:
                doc = run_job(job, console, **opts)
        print_result(doc, job, console, json_out)


def _run_on_disk_model(workload, model, fs, size, dir, set_, json_out, no_wait, console, opts) -> None:
    """`fsmeter run W --disk-model NAME`: the run makes its own target (a filesystem on a disk model),
    runs the workload in it once, records the model's profile and lateness, and removes it."""
    import tempfile

    from fsmeter.diskmodel.profiles import load_profile
    from fsmeter.mpi.comm import launched_under_mpi
    from fsmeter.provision import FILESYSTEMS, FsConfig, Provisioner, TargetSpec
    from fsmeter.runlock import measuring
    from fsmeter.runner import disk_model_record
    from fsmeter.units import parse_size

    if dir is not None:
        raise UserError("--disk-model and --dir exclude each other: the run makes its own filesystem on the model")
    if workload.endswith(".fio") or ".fio:" in workload or launched_under_mpi():
        raise UserError("--disk-model runs a named workload (or a workload .toml) once, without mpirun: leave it out")
    if fs not in FILESYSTEMS:
        raise UserError(f"--fs {fs}: unknown filesystem: use one of {', '.join(FILESYSTEMS)}")
    try:
        size_bytes = parse_size(size)
    except ValueError as exc:
        raise UserError(f"--size: {exc}") from None
    load_profile(model)  # an unknown model or a bad profile: one line now
    defn = load_workload(workload)
    sets = parse_set(set_ or [])
    build_job(defn, Path(tempfile.gettempdir()), sets)  # every parameter checked before anything is made
    if os.geteuid() != 0 or not os.path.exists("/dev/loop-control"):
        raise UserError(
            "--disk-model serves the modelled disk through FUSE under a loop device and formats it: run as root",
            exit_code=1,
        )
    with measuring(wait=not no_wait), Provisioner() as prov:
        mnt = prov.create(TargetSpec(kind="disk-model", model=model, size_bytes=size_bytes), FsConfig(name=fs))
        try:
            job = build_job(defn, Path(mnt.path), sets)
            watch = mnt.target.watch()
            before = watch.snapshot()
            doc = run_job(job, console, device=mnt.device, disk=watch, **opts)
            doc["target"] = {k: v for k, v in mnt.info().items() if k != "proc_mounts_line"}
            doc["disk_model"] = disk_model_record(mnt, watch.since(before))
        finally:
            prov.destroy(mnt)
    print_result(doc, job, console, json_out)
    dm = (doc["disk_model"] or {}).get("trial") or {}
    if dm.get("requests"):
        from fsmeter.diskmodel.stats import describe as describe_dm

        console.print(describe_dm(dm), highlight=False)


def _check_options(workload: str, dir: Path | None, cache: str, json_out: Path | None, min_phase_s: float) -> None:
    """`fsmeter run`'s options that need no MPI, checked before anything runs."""
    if cache not in CACHE_CHOICES:
        raise UserError(f"--cache {cache!r}: use one of {', '.join(CACHE_CHOICES)}")
    if cache == "drop" and os.geteuid() != 0:
        raise UserError(
            "--cache drop needs root (it writes /proc/sys/vm/drop_caches): run as root, or use --cache fadvise"
        )
    if json_out is not None:  # checked now: a path that cannot be written would lose the whole run
        from fsmeter.userpaths import check_output_path

        check_output_path(json_out, "--json", stdout=True)
    if not (min_phase_s >= 0 and math.isfinite(min_phase_s)):
        raise UserError(f"--min-phase-s {min_phase_s!r}: give a number of seconds >= 0")


def _check_dir(workload: str, dir: Path | None) -> None:
    """--dir names a directory on a real filesystem (a fio job file naming absolute directories may omit it)."""
    from fsmeter.userpaths import check_dir

    if dir is None and not workload.endswith(".fio"):
        raise UserError(
            "--dir is required: name a directory on the filesystem to measure (only `fsmeter run "
            "FILE.fio` of a job file that names absolute directories may leave it out)"
        )
    if dir is not None:
        check_dir(dir)


def _check_mpi_options(
    workload: str, stonewall: str | None, shared_file: bool, reorder_shift: str | None, wearout: bool, allow_exec: bool
) -> None:
    """The options that work under mpirun only (and --allow-exec, never under it)."""
    from fsmeter.mpi.comm import launched_under_mpi

    if stonewall is not None and not launched_under_mpi():
        raise UserError(
            "--stonewall works under mpirun only (it stops the other ranks): leave it out, or run "
            "`mpirun -n N fsmeter run ...`"
        )
    for given, name in (
        (shared_file, "--shared-file"),
        (reorder_shift is not None, "--reorder-shift"),
        (wearout, "--stonewall-wearout"),
    ):
        if given and not launched_under_mpi():
            raise UserError(
                f"{name} works under mpirun only (it lays out regions for the other ranks): leave "
                "it out, or run `mpirun -n N fsmeter run ...`"
            )
    if allow_exec and (not workload.endswith(".fio") or launched_under_mpi()):
        raise UserError(
            "--allow-exec runs the programs of a fio job file's ioengine=exec jobs, under `fsmeter "
            "run FILE.fio` without mpirun only: leave it out"
        )


def group_tables(title: str, rep: dict) -> list:
    """What the terminal shows for a group phase, as fio does: each job's table, then one line for the group;
    with group_reporting, the group's jobs merged into one table."""
    from fsmeter.interop.fio_run import group_line

    g = rep["fio_group"]
    if g["group_reporting"]:
        return [phase_table(f"{title} (group {g['group']}: {', '.join(g['jobs'])}, group_reporting)", rep)]
    out = [
        phase_table(f"{title} / {name} (line {jr.get('fio_line', '?')}, {jr['start_s']:.2f}-{jr['end_s']:.2f} s)", jr)
        for name, jr in rep["jobs"].items()
    ]
    out.append(Text(group_line(rep), style="bold"))
    return out


def print_result(doc: dict, job, console: Console, json_out: Path | None) -> None:
    """The phase tables, quality lines and summary of a run; writes --json; exit 130 if interrupted."""
    for name, rep in doc["phases"].items():
        if rep.get("measured", True):
            if "fio_group" in rep:  # the jobs of a fio group, measured together: each job, then the group
                for t in group_tables(f"{doc['workload']} / {name}", rep):
                    console.print(t)
            else:
                console.print(phase_table(f"{doc['workload']} / {name}", rep))
            extra = rep.get("extra") if isinstance(rep.get("extra"), dict) else {}
            if extra.get("direct_io"):
                console.print(f"  [dim]{name}:[/] {describe_direct_io(extra['direct_io'])}", highlight=False)
            bufs = describe_buffers(extra["buffer_memory"]) if extra.get("buffer_memory") else None
            if bufs:
                console.print(f"  [dim]{name}:[/] {bufs}", highlight=False)
            if "subruns" in extra:
                from fsmeter.report.mix import subrun_table

                console.print(subrun_table(rep))
            if "quality" in rep:
                from fsmeter.stats.phase import summarize_quality

                console.print(f"  [dim]{name}:[/] {summarize_quality(rep['quality'])}", highlight=False)
            regime = describe_regime(rep.get("regime") or {})
            if regime:
                style = "yellow" if (rep.get("regime") or {}).get("busy") else "dim"
                console.print(f"  [{style}]{name}:[/] {regime}", highlight=False)
            if "mpi" in rep:
                from fsmeter.report.mpi import rank_summary

                console.print(rank_summary(name, rep["mpi"]), highlight=False)
    if job.workload.family.run_summary is not None and doc["phases"]:
        console.print(job.workload.family.summary(doc))
    for w in (doc.get("cleanup") or {}).get("warnings") or []:
        console.print(f"  [yellow]cleanup:[/] {w}", highlight=False)
    files = (doc.get("mpi") or {}).get("files") or {}
    if files.get("kind") == "shared file":
        console.print(
            f"  [dim]files:[/] one shared set in {files['dir']}, {files['regions']}; {files['run_regions']}",
            highlight=False,
        )
        if files.get("note"):
            console.print(f"  [yellow]note:[/] {files['note']}", highlight=False)
    if (doc.get("mpi") or {}).get("mounts_note"):
        console.print(f"  [yellow]note:[/] {doc['mpi']['mounts_note']}", highlight=False)
    if json_out is not None:
        from fsmeter.userpaths import write_output

        if write_output(json_out, json.dumps(doc, indent=1) + "\n", "--json"):
            console.print(f"wrote {json_out}")
    if doc["interrupted"]:
        console.print("[bold red]interrupted:[/] the figures above cover only what ran before the stop")
        raise typer.Exit(130)
    if doc.get("corrupt"):
        console.print(f"[bold red]corrupt:[/] {doc['corrupt']}", highlight=False)
        raise typer.Exit(1)
    checked = sum((r.get("counters") or {}).get("verify_blocks_checked", 0) for r in doc["phases"].values())
    if any("verify_mismatches" in (r.get("counters") or {}) for r in doc["phases"].values()):
        console.print(f"[green]verified:[/] {checked} block(s) checked, none corrupt", highlight=False)
