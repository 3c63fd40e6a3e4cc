"""`fsmeter io500`: the IO500-style suite (fsmeter.mpi.io500) on a directory or on a filesystem fsmeter
provisions, its phases and score printed and stored."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from fsmeter.cli._runlock import no_wait_option
from fsmeter.errors import UserError

TARGETS = ("dir", "loop", "tmpfs", "glusterfs")
#: The smallest filesystem fsmeter makes for the suite (--size): the suite's folders and a few files.
MIN_SIZE = 16 << 20


def _size(text: str, flag: str) -> int:
    from fsmeter.units import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise UserError(f"{flag} {text!r}: {exc}") from None


def phase_table(doc: dict) -> Table:
    """IO500's result lines as a table: phase, value, unit, time."""
    from fsmeter.mpi.io500 import PHASES

    t = Table(title=f"io500: {doc['mpi']['ranks']} rank(s) on {len(doc['mpi']['hosts'])} host(s), {doc['dir']}")
    for col, just in (
        ("phase", "left"),
        ("value", "right"),
        ("unit", "left"),
        ("time s", "right"),
        ("operations", "right"),
        ("note", "left"),
    ):
        t.add_column(col, justify=just)
    for name, _, unit in PHASES:
        rep = doc["phases"].get(name)
        if rep is None:
            t.add_row(name, "-", unit, "-", "-", "not run")
            continue
        io = rep["io500"]
        note = io.get("note", "")
        sw = (rep.get("mpi") or {}).get("stonewall") or {}
        if sw.get("wearout"):
            w = sw["wearout"]
            note = (
                f"stonewall {sw['stonewall_s']:g} s: {w['at_stonewall']['min']:,}-{w['at_stonewall']['max']:,} "
                f"a rank, worn out to {w['target_per_rank']:,}" + (f"; {note}" if note else "")
            )
        if name == "find":
            c = rep.get("counters") or {}
            note = f"found {c.get('found', 0):,} of {c.get('entries', 0):,} entries (expected {doc['find_expected']:,})"
        t.add_row(name, f"{io['score']:.6f}", unit, f"{io['time_s']:.3f}", f"{rep['total']['ops']:,}", note)
    return t


def score_line(doc: dict) -> str:
    s = doc.get("score")
    if s is None:
        return "[yellow]no score: the suite did not run every phase[/]"
    return (
        f"[bold]SCORE[/] bandwidth {s['bandwidth_GiB_per_s']:.6f} GiB/s : metadata {s['metadata_kIOPS']:.6f} "
        f"kIOPS : total {s['total']:.6f}"
    )


def _forward(opts: dict) -> list:
    """The suite's options as the ranks' command line."""
    args = []
    for flag, v in opts.items():
        if isinstance(v, bool):
            if v:
                args.append(flag)
        elif v is not None:
            args += [flag, str(v)]
    return args


def register(app: typer.Typer) -> None:
    @app.command("io500")
    def io500(
        dir: Path | None = typer.Option(
            None,
            "--dir",
            "-d",
            help="an existing directory on the filesystem to "
            "measure (under mpirun: required; the suite makes io500-data and "
            "io500-timestamp in it and removes them after)",
        ),
        ranks: int = typer.Option(2, "--ranks", "-n", min=1, help="outside mpirun: the MPI ranks to launch"),
        target: str = typer.Option(
            "dir",
            "--target",
            help="outside mpirun: dir (--dir), loop (a loop filesystem "
            "fsmeter makes, root), tmpfs, or glusterfs (a volume on --hosts namespace hosts, "
            "bricks on loop filesystems, root)",
        ),
        fs: str = typer.Option("ext4", "--fs", help="with --target loop or glusterfs: the filesystem (of the bricks)"),
        mkfs_options: str = typer.Option("", "--mkfs-options", help="with --target loop or glusterfs: mkfs options"),
        size: str = typer.Option("1G", "--size", help="with --target loop, tmpfs or glusterfs: the image (brick) size"),
        hosts: int = typer.Option(
            2,
            "--hosts",
            min=1,
            max=16,
            help="with --target glusterfs: namespace hosts; the ranks are placed on them by slot",
        ),
        stonewall_s: float = typer.Option(
            300.0,
            "--stonewall-s",
            help="the write phases' stonewall (IO500: 300 s; "
            "a shorter one makes the result not comparable with IO500's)",
        ),
        ior_easy_transfer: str = typer.Option("2M", "--ior-easy-transfer", help="ior-easy's transfer size (IO500: 2m)"),
        ior_easy_block: str = typer.Option(
            "9920000M",
            "--ior-easy-block",
            help="ior-easy's bytes per rank at most (IO500: 9920000m; the stonewall normally ends the phase first)",
        ),
        ior_hard_segments: int = typer.Option(
            10_000_000, "--ior-hard-segments", help="ior-hard's segments per rank at most (IO500: 10000000)"
        ),
        mdtest_easy_files: int = typer.Option(
            1_000_000, "--mdtest-easy-files", help="mdtest-easy's files per rank at most (IO500: 1000000)"
        ),
        mdtest_hard_files: int = typer.Option(
            1_000_000, "--mdtest-hard-files", help="mdtest-hard's files per rank at most (IO500: 1000000)"
        ),
        drop_caches: bool = typer.Option(
            False,
            "--drop-caches",
            help="drop the page cache (once per host) before each phase: IO500's drop-caches option (root)",
        ),
        json_out: Path | None = typer.Option(None, "--json", help="also write the full result as JSON here"),
        db: Path | None = typer.Option(None, "--db", help="results store (default: $FSMETER_DB or ./fsmeter.sqlite)"),
        no_store: bool = typer.Option(False, "--no-store", help="do not record the result in the store"),
        keep_files: bool = typer.Option(False, "--keep-files", help="leave the suite's files in --dir"),
        mpi_timeout_s: float = typer.Option(
            60.0,
            "--mpi-timeout-s",
            help="the longest a rank waits for the others "
            "(or as long as it worked itself since they last met, when longer)",
        ),
        no_wait: bool = no_wait_option(),
    ) -> None:
        """IO500's twelve phases (ior-easy, ior-hard, mdtest-easy, mdtest-hard, find) with its stonewall,
        wear-out and score, under MPI; see docs/io500.md for where it differs from the official suite."""
        from fsmeter.mpi.comm import launched_under_mpi

        try:
            _io500(
                dir,
                ranks,
                target,
                fs,
                mkfs_options,
                size,
                hosts,
                stonewall_s,
                ior_easy_transfer,
                ior_easy_block,
                ior_hard_segments,
                mdtest_easy_files,
                mdtest_hard_files,
                drop_caches,
                json_out,
                db,
                no_store,
                keep_files,
                mpi_timeout_s,
                no_wait,
            )
        except UserError as exc:
            # Under mpirun every rank checks the same command line: one of them says what is wrong.
            rank = next((os.environ[k] for k in RANK_ENV if k in os.environ), "0")
            if launched_under_mpi() and rank != "0" and exc.exit_code == 2:
                raise SystemExit(2) from None
            raise


#: Where the MPI launchers put a process's rank (Open MPI, PMIx, MPICH/Hydra and Slurm's PMI).
RANK_ENV = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")


def _io500(
    dir,
    ranks,
    target,
    fs,
    mkfs_options,
    size,
    hosts,
    stonewall_s,
    ior_easy_transfer,
    ior_easy_block,
    ior_hard_segments,
    mdtest_easy_files,
    mdtest_hard_files,
    drop_caches,
    json_out,
    db,
    no_store,
    keep_files,
    mpi_timeout_s,
    no_wait,
) -> None:
    from fsmeter.mpi.comm import launched_under_mpi
    from fsmeter.mpi.io500 import Io500Config
    from fsmeter.userpaths import check_dir, check_output_path, is_stdout

    # With --json - the result document is standard output: the tables go to standard error.
    console = Console(width=None if sys.stdout.isatty() else 200, stderr=is_stdout(json_out))
    cfg = Io500Config(
        stonewall_s=stonewall_s,
        ior_easy_transfer=_size(ior_easy_transfer, "--ior-easy-transfer"),
        ior_easy_block=_size(ior_easy_block, "--ior-easy-block"),
        ior_hard_segments=ior_hard_segments,
        mdtest_easy_files=mdtest_easy_files,
        mdtest_hard_files=mdtest_hard_files,
        drop_caches=drop_caches,
    )
    cfg.check()
    if not (mpi_timeout_s > 0 and math.isfinite(mpi_timeout_s)):
        raise UserError(f"--mpi-timeout-s {mpi_timeout_s:g}: use a number of seconds > 0")
    if drop_caches and os.geteuid() != 0:
        raise UserError("--drop-caches needs root (it writes /proc/sys/vm/drop_caches): run as root, or leave it out")
    if json_out is not None:
        check_output_path(json_out, "--json", stdout=True)
    if target not in TARGETS:
        raise UserError(f"--target {target!r}: use one of {', '.join(TARGETS)}")
    if dir is not None:
        check_dir(dir)
    rank = next((os.environ[k] for k in RANK_ENV if k in os.environ), "0")
    if not no_store and (not launched_under_mpi() or rank == "0"):
        _check_store(db)  # now, not after the suite: a store that cannot take the result would lose it
    if launched_under_mpi():
        if dir is None:
            raise UserError("--dir is required under mpirun: name the directory every rank works in")
        if target != "dir":
            raise UserError(
                "--target: under mpirun the suite runs on --dir; to have fsmeter provision a "
                "filesystem, run `fsmeter io500 --target ...` without mpirun (it launches the ranks)"
            )
        from fsmeter.mpi.io500 import run_suite

        def show(name, rep):
            io = rep["io500"]
            console.print(
                f"[dim]\\[phase][/] {name:>20} {io['score']:15.6f} "
                f"{'GiB/s' if name.startswith('ior') else 'kIOPS'} : time {io['time_s']:.3f} s",
                highlight=False,
            )

        doc = run_suite(dir.resolve(), cfg, timeout_s=mpi_timeout_s, no_wait=no_wait, keep_files=keep_files, show=show)
        if doc is None:
            return
        _finish(doc, console, json_out, None if no_store else db, no_store)
        return
    _launch(
        console,
        cfg,
        dir,
        ranks,
        target,
        fs,
        mkfs_options,
        size,
        hosts,
        json_out,
        db,
        no_store,
        keep_files,
        mpi_timeout_s,
        no_wait,
    )


def _check_store(db) -> None:
    """Refuse, before the suite runs, a results store that cannot take its result (not a store, damaged,
    read-only, a newer schema); one that does not exist yet is made."""
    from fsmeter.store import default_db_path, open_store
    from fsmeter.userpaths import check_output_path

    path = default_db_path(db)
    if not os.path.isfile(path):  # os.path: a name too long is no file, not an OSError
        check_output_path(path, "--db")
    open_store(path).close()


def _check_launch(ranks: int, target: str, fs: str, mkfs_options: str, size: str, hosts: int) -> int:
    """The launcher's own options, checked before anything is made: --ranks within what this host can run,
    --size a size fsmeter can make, --fs a filesystem it knows. Returns --size in bytes."""
    from fsmeter.units import MAX_SIZE_BYTES

    if target == "glusterfs":
        if ranks > hosts:
            raise UserError(
                f"--ranks {ranks}: at most --hosts ({hosts}) on a glusterfs target (one rank per namespace host)"
            )
    else:
        from fsmeter.mpi.launch import local_ranks_problem

        why = local_ranks_problem(ranks)
        if why is not None:
            raise UserError(f"--ranks {ranks}: {why}")
    byte_size = _size(size, "--size")
    if target != "dir" and not MIN_SIZE <= byte_size <= MAX_SIZE_BYTES:
        raise UserError(
            f"--size {size}: give a size from {MIN_SIZE >> 20} MiB to 1 PiB for the filesystem fsmeter makes"
        )
    if target in ("loop", "glusterfs"):
        import shlex

        from pydantic import ValidationError

        try:
            shlex.split(mkfs_options)
        except ValueError as exc:
            raise UserError(f"--mkfs-options {mkfs_options!r}: {exc}: quote the options as a shell would") from None

        from fsmeter.campaign import FsModel

        try:
            FsModel(name=fs, mkfs_options=mkfs_options)
        except ValidationError as exc:
            first = exc.errors()[0]
            what = "--mkfs-options" if first["loc"] and first["loc"][0] == "mkfs_options" else f"--fs {fs}"
            raise UserError(f"{what}: {first['msg'].removeprefix('Value error, ')}") from None
    return byte_size


def _finish(
    doc: dict, console: Console, json_out: Path | None, db: Path | None, no_store: bool, environment: dict | None = None
) -> None:
    console.print(phase_table(doc))
    console.print(score_line(doc), highlight=False)
    if json_out is not None:
        from fsmeter.userpaths import write_output

        if write_output(json_out, json.dumps(doc, indent=1) + "\n", "--json"):
            console.print(f"wrote {json_out}")
    if not no_store:
        from fsmeter.mpi.io500 import store_result
        from fsmeter.store.health import guard

        with guard(db):
            where = store_result(doc, db, environment)
        console.print(
            f"stored as campaign {where['campaign_id']} in {where['db']} (`fsmeter report "
            f"{where['campaign_id']} --db {where['db']}`)",
            highlight=False,
        )
    if doc.get("interrupted"):
        console.print("[bold red]interrupted:[/] the figures above cover only the phases that ran")
        raise typer.Exit(130)


def _launch(
    console,
    cfg,
    dir,
    ranks,
    target,
    fs,
    mkfs_options,
    size,
    hosts,
    json_out,
    db,
    no_store,
    keep_files,
    mpi_timeout_s,
    no_wait,
) -> None:
    """Outside mpirun: provision the target if asked, launch `mpirun -n RANKS fsmeter io500 --dir ...`
    (on the namespace hosts for glusterfs), read the ranks' result and record it."""
    from fsmeter import runlock
    from fsmeter.mpi.comm import INSTALL_HINT
    from fsmeter.mpi.run import LOCK_HELD_ENV

    if target == "dir" and dir is None:
        raise UserError(
            "--dir is required with --target dir: name the directory to measure, or give --target loop, "
            "tmpfs or glusterfs for fsmeter to make one"
        )
    if target != "dir" and dir is not None:
        raise UserError(f"--dir: not with --target {target} (fsmeter makes and mounts the filesystem itself)")
    byte_size = _check_launch(ranks, target, fs, mkfs_options, size, hosts)
    from fsmeter.mpi.io500 import check_fits

    if target == "dir":  # the bound the ranks check again, checked before they are launched
        st = os.statvfs(dir)
        check_fits(cfg, ranks, st.f_bavail * st.f_frsize, f"under --dir {dir}")
    else:
        check_fits(cfg, ranks, byte_size, f"on a filesystem of --size {size}")
    if target != "dir" and os.geteuid() != 0:
        raise UserError(
            f"--target {target}: making a filesystem needs root: run as root, or measure an existing "
            "directory with --dir"
        )
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise UserError(f"mpirun not found: {INSTALL_HINT}", exit_code=1)
    from fsmeter.provision import Provisioner
    from fsmeter.provision.specs import FsConfig, TargetSpec

    opts = {
        "--stonewall-s": repr(cfg.stonewall_s),
        "--ior-easy-transfer": cfg.ior_easy_transfer,
        "--ior-easy-block": cfg.ior_easy_block,
        "--ior-hard-segments": cfg.ior_hard_segments,
        "--mdtest-easy-files": cfg.mdtest_easy_files,
        "--mdtest-hard-files": cfg.mdtest_hard_files,
        "--drop-caches": cfg.drop_caches,
        "--keep-files": keep_files,
        "--mpi-timeout-s": repr(float(mpi_timeout_s)),
        "--no-store": True,
    }
    with runlock.measuring(wait=not no_wait), contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="fsmeter-io500-"))
        mnt, info, path = None, {"target": "dir", "path": str(dir.resolve()) if dir else None}, dir
        if target != "dir":
            prov = stack.enter_context(Provisioner())
            spec = TargetSpec(kind=target, size_bytes=byte_size, hosts=hosts)
            fscfg = FsConfig(name=fs, mkfs_options=mkfs_options) if target != "tmpfs" else None
            mnt = prov.create(spec, fscfg)
            stack.callback(prov.destroy, mnt)
            info = mnt.info()
            path = Path(mnt.path)
        out = Path(tmp) / "result.json"
        cmd = [mpirun, "-n", str(ranks)]
        if target != "glusterfs":
            cmd.append("--oversubscribe")
        cmd += [sys.executable, "-m", "fsmeter", "io500", "--dir", str(path), "--json", str(out), *_forward(opts)]
        launch = getattr(mnt, "launch", None)
        if launch is not None:  # a volume on namespace hosts: mpirun from the first host, over their network
            cmd = launch(cmd)
        # Open MPI may hand rank 0 a terminal: plain text, so that its phase lines can be passed on.
        env = dict(os.environ, **{LOCK_HELD_ENV: socket.gethostname(), "NO_COLOR": "1"})
        if os.geteuid() == 0:  # Open MPI refuses root unless told twice
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        for line in proc.stdout.splitlines():
            line = re.sub(r"\x1b\[[0-9;]*m", "", line)
            if line.startswith("[phase]"):
                console.print(line, highlight=False, markup=False)
        doc = json.loads(out.read_text()) if out.is_file() else None
        if proc.returncode != 0 or doc is None:
            lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("fsmeter: error:")]
            tail = (
                lines[0].removeprefix("fsmeter: error: ")
                if lines
                else " | ".join(proc.stderr.strip().splitlines()[-3:])
            )
            raise UserError(
                f"mpirun -n {ranks} fsmeter io500 exited with {proc.returncode}: {tail}",
                exit_code=2 if proc.returncode == 2 else 1,
            )
    env_extra = {
        "target_kind": target,
        "fs": info.get("fs"),
        "device": info.get("device"),
        "mkfs_options": info.get("mkfs_options"),
        "mount": info,
        "mpi_command": cmd,
    }
    _finish(doc, console, json_out, db, no_store, env_extra)
