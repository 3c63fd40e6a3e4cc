"""`fsmeter compare`: the default main job -- which filesystem is fastest here, for a quick suite.

As root: ext2, ext3, ext4, xfs and btrfs on fresh 1 GiB loop images x the quick suite of
studies/quick-compare.toml, then one matrix (workloads down, filesystems across, mean ± CI% per
cell, the best and the tied marked, a verdict per workload, unresolved cells and outlier trials
explained in notes) and the HTML report next to the store. -v adds the per-cell and ranking
tables. Without root: the filesystem of the current directory (or --dir), and a note of what
could not be done.
"""

from __future__ import annotations

import copy
import os
import sys
import time
import tomllib
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from fsmeter.cli._device import device_options, device_target
from fsmeter.cli._runlock import no_wait_option
from fsmeter.errors import UserError

STUDY = Path(__file__).resolve().parent.parent / "data" / "studies" / "quick-compare.toml"


def _split(s: str | None) -> list:
    return [p.strip() for p in (s or "").split(",") if p.strip()]


def build_campaign(
    filesystems: str | None,
    workloads: str | None,
    directory: Path | None,
    quick_scale: float,
    trials: int | None,
    size: str | None,
    root: bool,
) -> tuple:
    """(campaign dict, notes): the study file adjusted to the options and to this machine."""
    from fsmeter.provision import FILESYSTEMS
    from fsmeter.spec import WORKLOAD_DIR

    data = tomllib.loads(STUDY.read_text())
    notes: list = []
    have = {p.stem for p in WORKLOAD_DIR.glob("*.toml")}
    by_name = {w["name"]: w for w in data["workloads"]}
    if workloads:
        chosen = []
        for name in _split(workloads):
            if name not in have:
                raise UserError(f"--workloads {name}: unknown workload: use one of {', '.join(sorted(have))}")
            chosen.append(copy.deepcopy(by_name.get(name, {"name": name})))
        data["workloads"] = chosen
    else:
        missing = [w["name"] for w in data["workloads"] if w["name"] not in have]
        data["workloads"] = [w for w in data["workloads"] if w["name"] in have]
        if missing:
            notes.append(f"not in this fsmeter yet, skipped: {', '.join(missing)}")
        usable = []
        for w in data["workloads"]:  # a suite workload of a family still being built must not stop the demo
            try:
                import tempfile

                from fsmeter.spec import build_job, load_workload

                build_job(load_workload(w["name"]), Path(tempfile.gettempdir()), w.get("params", {}))
                usable.append(w)
            except UserError as exc:
                notes.append(f"skipped {w['name']}: {exc.message}")
        data["workloads"] = usable
    if filesystems:
        names = _split(filesystems)
        for n in names:
            if n not in FILESYSTEMS:
                raise UserError(f"--filesystems {n}: unknown filesystem: use one of {', '.join(FILESYSTEMS)}")
        fs_by = {f["name"]: f for f in data["filesystems"]}
        data["filesystems"] = [copy.deepcopy(fs_by.get(n, {"name": n})) for n in names]
    if directory is None and not root:
        directory = Path(".")
        notes.append(
            "not root: no mkfs, mount or loop devices, so only the filesystem of the current directory "
            f"({Path('.').resolve()}) is measured and caches are reset with fadvise; "
            "run `sudo fsmeter compare` to compare ext2, ext3, ext4, xfs and btrfs"
        )
        if filesystems:
            notes.append(f"--filesystems {filesystems} ignored: creating filesystems needs root")
    if directory is not None:
        from fsmeter.userpaths import check_dir

        check_dir(directory)
        data["target"] = {"kind": "dir", "path": str(directory.resolve())}
        data.pop("filesystems", None)
        data["name"] = data["name"] + "-dir"
    elif size:
        data["target"]["size"] = size
    if quick_scale != 1.0:
        from fsmeter.spec import load_workload

        for w in data["workloads"]:
            params = w.setdefault("params", {})
            fields = load_workload(w["name"]).family.params.model_fields
            for key in ("warmup_s", "duration_s"):
                if key in fields:
                    base = params.get(key, load_workload(w["name"]).params.get(key, fields[key].default))
                    if base:
                        params[key] = round(float(base) * quick_scale, 3)
    if trials is not None:
        data["repetitions"] = {"policy": "fixed", "n": trials}
    return data, notes


#: The brick filesystems `compare --target glusterfs` compares when --filesystems does not say:
#: the two filesystems Gluster's documentation names for bricks (xfs recommended, ext4 supported).
GLUSTER_FILESYSTEMS = ("xfs", "ext4")
#: Its workloads when --workloads does not say: the quick suite's data workloads. Each trial makes
#: the hosts, bricks and volume anew (mkfs per trial), and a FUSE client's metadata operations cost
#: a round trip each to the brick's server: fdtree-quick with 2 ranks ran 154 s there, against 5 s
#: on a local ext4 (name such workloads with --workloads).
GLUSTER_WORKLOADS = ("seq-read", "seq-write")
#: Options that belong to --target glusterfs alone.
GLUSTER_ONLY = ("--hosts", "--ranks", "--volume-type", "--volume-option")


def gluster_target(
    hosts: int | None, ranks: int | None, volume_type: str | None, volume_options: list | None, size: str | None
) -> tuple:
    """(the campaign's [target], its [mpi]) for --target glusterfs, every option checked first."""
    import shutil

    if os.geteuid() != 0:
        raise UserError("--target glusterfs makes namespace hosts, loop bricks and mounts: run as root")
    for tool, hint in (
        ("glusterd", "install the Debian packages glusterfs-server and glusterfs-client"),
        ("glusterfs", "install the Debian package glusterfs-client"),
        ("mpirun", "run `make build` as root (it installs Open MPI and mpi4py)"),
    ):
        if shutil.which(tool) is None:
            raise UserError(f"--target glusterfs: {tool} not found: {hint}")
    from fsmeter.mpi.launch import local_ranks_problem
    from fsmeter.provision.gluster import volume_option_problem

    n = hosts or 2
    why = local_ranks_problem(ranks or n)  # the hosts are namespaces of this machine: its CPUs run every rank
    if why is not None:
        raise UserError(f"--ranks {ranks or n}: {why}")
    opts = {}
    for item in volume_options or []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise UserError(f"--volume-option {item!r}: write KEY=VALUE, e.g. performance.write-behind=off")
        why = volume_option_problem(key.strip(), value.strip())
        if why is not None:
            raise UserError(f"--volume-option {item[:100]!r}: {why}")
        opts[key.strip()] = value.strip()
    vt = volume_type or "distribute"
    if vt not in ("distribute", "replicate"):
        raise UserError(f"--volume-type {vt}: use distribute or replicate")
    target = {"kind": "glusterfs", "size": size or "1G", "hosts": n, "volume_type": vt, "volume_options": opts}
    return target, {"ranks": ranks or n}


def ranking_table(store, campaign_id: int) -> Table:
    """Per workload: filesystems ranked on the headline metric, mean ± CI half-width, group, verdict."""
    import json

    from fsmeter.cli.campaign import _fmt, cell_summary, guest_of_cells
    from fsmeter.guest.kernels import EMULATED_NOTE
    from fsmeter.stats.ranking import rank

    emulated = {cid for cid, g in guest_of_cells(store, campaign_id).items() if g.get("emulated")}

    t = Table(title="filesystems ranked per workload (same group = not significantly different)")
    for col in ("workload", "metric", "rank", "group", "filesystem", "mean ± 95% CI", "trials", "vs group leader"):
        t.add_column(col, overflow="fold")
    by_wl: dict = {}
    for s in cell_summary(store, campaign_id):
        by_wl.setdefault(s["cell"]["workload"], []).append(s)
    for wl, cells in by_wl.items():
        label = lambda s: ", ".join(str(v) for v in json.loads(s["cell"]["factors"]).values())  # noqa: E731
        ok = [s for s in cells if len(s["kept"]) >= 2 and s["cell"]["id"] not in emulated]
        metric = next((s["metric"] for s in cells if s["metric"]), "-")
        unit = next((s["unit"] for s in cells if s["metric"]), "")
        hib = next((s["higher_is_better"] for s in cells if s["metric"]), True)
        first = True
        if ok:
            entries = rank({label(s): s["kept"] for s in ok}, higher_is_better=hib)
            info = {label(s): s for s in ok}
            for e in entries:
                s = info[e.name]
                vs = "" if e.vs_leader is None else f"{e.vs_leader.rel_diff_pct:+.1f}% (p={e.vs_leader.p_value:.2f})"
                t.add_row(
                    wl if first else "",
                    f"{metric} ({unit})" if first else "",
                    str(e.rank),
                    str(e.group),
                    e.name,
                    f"{_fmt(s['ci'].mean)} ± {_fmt(s['ci'].half_width)}",
                    str(len(s["kept"])),
                    vs,
                )
                first = False
        for s in cells:
            if s in ok:
                continue
            c = s["cell"]
            why = (
                EMULATED_NOTE
                if c["id"] in emulated
                else f"{c['status']}: {c['cause']}"
                if c["cause"]
                else f"{len(s['kept'])} kept trial(s): no CI"
                if s["kept"]
                else c["status"]
            )
            val = _fmt(s["kept"][0]) if s["kept"] else "-"
            t.add_row(
                wl if first else "",
                f"{metric} ({unit})" if first else "",
                "-",
                "-",
                label(s),
                val,
                str(len(s["kept"])),
                why,
            )
            first = False
        t.add_section()
    return t


DEVICE_OPT, CONFIRM_OPT, FORCE_OPT = device_options()


#: The options of the other targets (guest kernels, GlusterFS bricks, a disk model).
KERNEL_OPT = typer.Option(
    None,
    "--kernel",
    help="comma-separated kernels to run in guests "
    "(virtual machines), e.g. 6.1,6.12 or /path/to/bzImage: a kernel factor "
    "(see the guests page of the docs)",
)
TARGET_KIND_OPT = typer.Option(
    None,
    "--target",
    help="glusterfs: the filesystems are the bricks' "
    "of a GlusterFS volume on namespace hosts of this machine, measured "
    "by MPI ranks on every host (root; default filesystems xfs,ext4, "
    "workloads seq-read,seq-write; see the many-hosts page)",
)
DISK_MODEL_OPT = typer.Option(
    None,
    "--disk-model",
    help="put every filesystem on a disk model instead of a loop image: the timing of a modelled "
    "disk (fsmeter disk-model list); --size sets its image (default 1G)",
)
HOSTS_OPT = typer.Option(
    None,
    "--hosts",
    min=1,
    max=16,
    help="--target glusterfs: namespace hosts h1..hN (default 2); the last serves the brick, all mount the volume",
)
RANKS_OPT = typer.Option(
    None, "--ranks", min=1, max=64, help="--target glusterfs: MPI ranks per trial (default: one per host)"
)
VOLUME_TYPE_OPT = typer.Option(None, "--volume-type", help="--target glusterfs: distribute (default) or replicate")
VOLUME_OPTION_OPT = typer.Option(
    None,
    "--volume-option",
    help="--target glusterfs: KEY=VALUE set on the volume before it starts (gluster volume set); repeat for several",
)


def _check_disk_model(name: str, root: bool, **others) -> None:
    """--disk-model NAME: a known model, as root, and no other target named beside it."""
    shown = {"directory": "--dir", "device": "--device", "gluster": "--target glusterfs", "kernel": "--kernel"}
    other = [shown[k] for k, v in others.items() if v]
    if other:
        raise UserError(f"--disk-model and {other[0]} exclude each other: the disk model is the target")
    from fsmeter.diskmodel.profiles import load_profile

    load_profile(name)  # an unknown model: one line before anything runs
    if not root:
        raise UserError("--disk-model serves the modelled disk through FUSE under a loop device: run as root")


def register(app: typer.Typer) -> None:
    @app.command("compare")
    def compare(
        filesystems: str | None = typer.Option(
            None, "--filesystems", "-f", help="comma-separated, e.g. ext4,xfs (default: ext2,ext3,ext4,xfs,btrfs)"
        ),
        workloads: str | None = typer.Option(
            None, "--workloads", "-w", help="comma-separated named workloads (default: the quick suite)"
        ),
        directory: Path | None = typer.Option(None, "--dir", help="measure this directory's filesystem (no mkfs)"),
        db: Path | None = typer.Option(
            None, "--db", help="results database (default: $FSMETER_DB or ./fsmeter.sqlite)"
        ),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bars"),
        verbose: bool = typer.Option(
            False, "--verbose", "-v", help="also the per-cell table and the ranking table with p-values"
        ),
        report: Path | None = typer.Option(
            None, "--report", help="HTML report path (default: next to the store, <store name>-report.html)"
        ),
        quick_scale: float = typer.Option(
            1.0, "--quick-scale", hidden=True, min=0.001, help="multiply warm-up and duration of every workload (tests)"
        ),
        trials: int | None = typer.Option(None, "--trials", hidden=True, min=1, help="fixed trials per cell"),
        size: str | None = typer.Option(None, "--size", hidden=True, help="loop image size (default 1G)"),
        device: str | None = DEVICE_OPT,
        destroy_data_on: str | None = CONFIRM_OPT,
        force: bool = FORCE_OPT,
        no_wait: bool = no_wait_option(),
        kernel: str | None = KERNEL_OPT,
        target_kind: str | None = TARGET_KIND_OPT,
        disk_model: str | None = DISK_MODEL_OPT,
        hosts: int | None = HOSTS_OPT,
        ranks: int | None = RANKS_OPT,
        volume_type: str | None = VOLUME_TYPE_OPT,
        volume_option: list[str] | None = VOLUME_OPTION_OPT,
    ) -> None:
        """Which filesystem is fastest here? Quick suite on fresh filesystems, ranked per workload."""
        from fsmeter.campaign import CampaignFile, dump_toml, parse_campaign

        # Not a terminal (pipe, CI log): the matrix is laid out for 100 columns, rich would assume 80.
        console = Console(width=None if sys.stdout.isatty() else 100)
        root = os.geteuid() == 0 and os.path.exists("/dev/loop-control")
        target = device_target(device, destroy_data_on, force)
        if target is not None and directory is not None:
            raise UserError("--device and --dir exclude each other: name one target")
        given = [name for name, v in zip(GLUSTER_ONLY, (hosts, ranks, volume_type, volume_option)) if v]
        if target_kind not in (None, "loop", "glusterfs"):
            raise UserError(
                f"--target {target_kind}: use glusterfs (a volume on namespace hosts) or loop (the "
                "default); --dir and --device name the other targets"
            )
        gluster = target_kind == "glusterfs"
        if given and not gluster:
            raise UserError(f"{given[0]} applies to --target glusterfs only: add --target glusterfs or leave it out")
        if gluster and (target is not None or directory is not None or kernel is not None):
            other = "--device" if target is not None else "--dir" if directory is not None else "--kernel"
            raise UserError(
                f"--target glusterfs and {other} exclude each other: the bricks are fsmeter's own loop "
                "filesystems on this machine"
            )
        if disk_model is not None:
            _check_disk_model(disk_model, root, directory=directory, device=target, gluster=gluster, kernel=kernel)
        if gluster:
            gtarget, gmpi = gluster_target(hosts, ranks, volume_type, volume_option, size)
            filesystems = filesystems or ",".join(GLUSTER_FILESYSTEMS)
            workloads = workloads or ",".join(GLUSTER_WORKLOADS)
        data, notes = build_campaign(filesystems, workloads, directory, quick_scale, trials, size, root)
        if target is not None:
            data["target"] = target
        if disk_model is not None:
            data["target"] = {"kind": "disk-model", "model": disk_model, "size": size or "1G"}
            data["name"] = data["name"] + "-disk-model"
            data["description"] = str(data.get("description", "")).replace(
                "1 GiB loop images", f"{size or '1G'} images served by the disk model {disk_model}"
            )
        if gluster:
            data["target"], data["mpi"] = gtarget, gmpi
            data["name"] = data["name"] + "-glusterfs"
            data["description"] = (
                f"brick filesystems of a {gtarget['volume_type']} GlusterFS volume on "
                f"{gtarget['hosts']} namespace hosts, {gmpi['ranks']} MPI rank(s)"
            )
        if kernel is not None:
            if target is not None or directory is not None:
                raise UserError(
                    "--kernel runs the filesystems on loop images inside guests: leave out --device and --dir"
                )
            levels = _split(kernel)
            if not levels:
                raise UserError("--kernel: name at least one kernel, e.g. --kernel 6.1,6.12")
            data.setdefault("factors", {})["kernel"] = levels
            data["name"] = data["name"] + "-guest"
        if not data["workloads"]:
            raise UserError("no workload to run: name some with --workloads")
        if report is not None:  # checked before the suite runs, not after it
            from fsmeter.userpaths import check_output_path

            check_output_path(report, "--report")
        text = dump_toml(data)
        campaign: CampaignFile = parse_campaign(text, "compare")
        from fsmeter.runner import check_target

        check_target(campaign)  # before the store is made or the run lock taken (start_campaign checks again)
        for n in notes:
            console.print(f"[yellow]note:[/] {n}")
        console.print(
            "[bold]quick suite:[/] short phases and few trials trade confidence for time; for results to "
            "quote, copy python/fsmeter/data/studies/quick-compare.toml, raise duration_s and the trial caps, "
            "and run it with `fsmeter campaign run`."
        )
        _run_compare(
            campaign, text, notes, console, db=db, no_wait=no_wait, quiet=quiet, verbose=verbose, report=report
        )


def _run_compare(
    campaign, text: str, notes: list, console: Console, *, db, no_wait: bool, quiet: bool, verbose: bool, report
) -> None:
    """Run the compare campaign into the store, then print its matrix and write its HTML report."""
    from fsmeter.cli.campaign import execute
    from fsmeter.runlock import measuring
    from fsmeter.runner import start_campaign
    from fsmeter.store import open_store

    t0 = time.monotonic()
    with measuring(wait=not no_wait), open_store(db) as store:
        cid = start_campaign(Path("compare"), store, console, campaign=campaign, text=text)
        console.print(f"campaign {cid}: {len(store.cells(cid))} cell(s) -> {store.path}")
        execute(store, cid, campaign, console, quiet, show_cells=verbose)
        if verbose:
            console.print(ranking_table(store, cid))
        store_path = store.path
    print_compare_matrix(store_path, cid, console)
    out = (report or store_path.with_name(f"{store_path.stem}-report.html")).resolve()
    from fsmeter.report.html import write_report

    write_report(out, store_path, str(cid))
    console.print(
        f"compare took {time.monotonic() - t0:.0f} s; HTML report: {out}", highlight=False, soft_wrap=True
    )  # a path must stay one piece, to copy or to grep
    console.print(
        f"details: `fsmeter campaign show {cid} --db {store_path}` (per cell, outlier trials), "
        f"`fsmeter compare -v`, `fsmeter analyze {store_path} --campaign {cid} --factors filesystem "
        "--response <metric>`",
        highlight=False,
    )
    for n in notes:
        console.print(f"[yellow]note:[/] {n}")


def print_compare_matrix(db, campaign_id: int, console: Console) -> None:
    """The compare result: one row per workload, one column per filesystem, verdicts and notes below."""
    from fsmeter.report.data import build_view
    from fsmeter.report.matrix import build_matrix, print_matrix

    view = build_view(db, str(campaign_id))
    console.print(f"[bold]campaign {campaign_id}: which filesystem is fastest here[/] ({view.campaign['name']})")
    print_matrix(build_matrix(view), console)
