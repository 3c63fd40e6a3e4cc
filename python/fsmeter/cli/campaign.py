"""`fsmeter campaign run|resume|list|show`: a matrix of configurations, stored trial by trial."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fsmeter.cli._device import device_options, device_target
from fsmeter.cli._runlock import no_wait_option
from fsmeter.errors import UserError

DB_HELP = "results database (default: $FSMETER_DB or ./fsmeter.sqlite)"


def cell_summary(store, campaign_id: int) -> list:
    """Per cell: its row, kept headline values, and mean/CI (None while fewer than 2 are kept)."""
    from fsmeter.stats.kept import is_kept
    from fsmeter.stats.summary import mean_ci

    out = []
    for cell in store.cells(campaign_id):
        rows = store.conn.execute(
            "SELECT t.number, t.discarded, t.status, m.value, m.name, m.phase_key, m.unit, m.higher_is_better "
            "FROM trials t LEFT JOIN metrics m ON m.trial_id = t.id AND m.headline = 1 WHERE t.cell_id = ? "
            "ORDER BY t.number",
            (cell["id"],),
        ).fetchall()
        kept = [r["value"] for r in rows if is_kept(r["status"], r["discarded"], r["value"])]
        head = next((r for r in rows if r["name"] is not None), None)
        ci = mean_ci(kept, 0.95) if len(kept) >= 2 else None
        out.append(
            {
                "cell": cell,
                "n_trials": len(rows),
                "kept": kept,
                "ci": ci,
                "metric": f"{head['phase_key']}.{head['name']}" if head else None,
                "unit": head["unit"] if head else "",
                "higher_is_better": bool(head["higher_is_better"]) if head else True,
            }
        )
    return out


def guest_of_cells(store, campaign_id: int) -> dict:
    """cell id -> the guest its trials ran in (fsmeter.guest: kernel, accelerator, emulated), for cells run in one."""
    out: dict = {}
    for r in store.conn.execute(
        "SELECT t.cell_id, e.extra FROM environment e JOIN trials t ON t.id = e.trial_id JOIN cells c "
        "ON c.id = t.cell_id WHERE c.campaign_id = ?",
        (campaign_id,),
    ):
        try:
            g = json.loads(r["extra"] or "{}").get("guest")
        except (ValueError, AttributeError):
            g = None
        if isinstance(g, dict):
            out[r["cell_id"]] = g
    return out


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}"


def cells_table(store, campaign_id: int, title: str) -> Table:
    t = Table(title=title)
    for col in ("#", "workload", "factors", "status", "trials", "headline (mean ± 95% CI)", "stop / cause"):
        t.add_column(col, overflow="fold")
    guests = guest_of_cells(store, campaign_id)
    for s in cell_summary(store, campaign_id):
        c = s["cell"]
        factors = ", ".join(f"{k}={v}" for k, v in json.loads(c["factors"]).items())
        g = guests.get(c["id"])
        if s["ci"] is not None:
            head = f"{_fmt(s['ci'].mean)} ± {_fmt(s['ci'].half_width)} {s['unit']} ({s['metric']})"
        elif s["kept"]:
            head = f"{_fmt(s['kept'][0])} {s['unit']} (1 trial, no CI)"
        else:
            head = "-"
        color = {"done": "green", "failed": "red", "interrupted": "yellow"}.get(c["status"], "white")
        if g is not None:  # the guest's kernel release and accelerator; emulated figures said so
            factors += f" (guest {g.get('kernel_release') or g.get('kernel_version')}, {g.get('accelerator')})"
            if g.get("emulated") and head != "-":
                head += " [yellow]emulated[/]"
        t.add_row(
            str(c["idx"] + 1),
            escape(c["workload"]),
            escape(factors),
            f"[{color}]{c['status']}[/]",
            str(s["n_trials"]),
            head,
            escape(c["cause"] or c["stop_reason"] or ""),
        )
    if any(g.get("emulated") for g in guests.values()):
        from fsmeter.guest.kernels import EMULATED_NOTE

        t.caption = (
            f"{EMULATED_NOTE}: the cells marked emulated ran in a guest under software emulation (TCG): "
            "functional results only"
        )
        t.caption_justify = "left"
    return t


def trial_outliers_table(db, campaign_id: int) -> Table | None:
    """Trials far from their cell's others (modified z-score, stats.outliers), with what explains them."""
    from fsmeter.report.data import build_view
    from fsmeter.report.matrix import build_matrix, fmt_short
    from fsmeter.stats.outliers import THRESHOLD

    mx = build_matrix(build_view(db, str(campaign_id)))
    found = [(r, o) for r in mx.rows for c in r.cells.values() for o in c.outliers]
    if not found:
        return None
    t = Table(
        title=f"outlier trials (|modified z-score| > {THRESHOLD:g}, Iglewicz & Hoaglin); kept in every figure",
        title_justify="left",
    )
    for col in ("workload", "configuration", "trial", "value", "median", "z", "explanation"):
        t.add_column(col, overflow="fold", justify="right" if col in ("trial", "value", "median", "z") else "left")
    for r, o in found:
        t.add_row(
            r.workload,
            o.label,
            str(o.trial),
            f"{fmt_short(o.value)} {r.unit}",
            fmt_short(o.median),
            f"{o.score:+.1f}",
            o.explanation,
        )
    return t


def execute(
    store,
    campaign_id: int,
    campaign,
    console: Console,
    quiet: bool = False,
    take_over: bool = False,
    show_cells: bool = True,
) -> None:
    """Run/resume with the user-facing messages around it (interrupt -> how to resume, exit 130);
    show_cells: end with the per-cell table."""
    from fsmeter.runner import run_campaign
    from fsmeter.store import StoreError

    try:
        counts = run_campaign(
            campaign, store, campaign_id, console, show_progress=not quiet, take_over=take_over, cap_notes=show_cells
        )
    except KeyboardInterrupt:
        console.print(
            f"[bold yellow]campaign {campaign_id} interrupted[/]: finished trials are stored in "
            f"{store.path}; continue with `fsmeter campaign resume {campaign_id} --db {store.path}`"
        )
        raise typer.Exit(130) from None
    except StoreError as exc:
        if exc.kind == "damaged":
            raise
        raise StoreError(
            f"{exc.message}; the trials finished before are kept: then continue with "
            f"`fsmeter campaign resume {campaign_id} --db {store.path}`",
            exc.kind,
        ) from None
    if show_cells:
        console.print(cells_table(store, campaign_id, f"campaign {campaign_id}: {escape(campaign.name)}"))
        _print_scaling(store.path, campaign_id, console)
    console.print(
        f"stored in {store.path} (campaign {campaign_id}); "
        f"{counts['done']} cell(s) done, {counts['failed']} failed, {counts['skipped']} already finished",
        highlight=False,
        markup=False,
    )
    if counts["failed"] and not counts["done"] and not counts["skipped"]:
        # Nothing was measured: a script or CI job must not read this run as a success.
        raise UserError(f"campaign {campaign_id}: every cell failed (see the causes above)", exit_code=1)


def _print_scaling(db, campaign_id: int, console: Console) -> None:
    """Campaigns with a `ranks` factor: the rates against ranks (fsmeter.report.mpi)."""
    from fsmeter.report.mpi import scaling_table

    t = scaling_table(db, campaign_id)
    if t is not None:
        console.print(t)


DEVICE_OPT, CONFIRM_OPT, FORCE_OPT = device_options()


def register(app: typer.Typer) -> None:
    camp = typer.Typer(
        help="Run a campaign file (a matrix of filesystems x factors x workloads) into the store.", no_args_is_help=True
    )
    app.add_typer(camp, name="campaign")

    @camp.command("run")
    def run(
        file: Path = typer.Argument(..., help="campaign file (TOML); see docs/campaign-file.md"),
        db: Path | None = typer.Option(None, "--db", help=DB_HELP),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bars"),
        device: str | None = DEVICE_OPT,
        destroy_data_on: str | None = CONFIRM_OPT,
        force: bool = FORCE_OPT,
        no_wait: bool = no_wait_option(),
    ) -> None:
        """Validate FILE, then run every cell; each finished trial is committed before the next starts."""
        from fsmeter.campaign import dump_toml, load_campaign, parse_campaign
        from fsmeter.runlock import measuring
        from fsmeter.runner import check_target, start_campaign
        from fsmeter.store import open_store

        campaign, text = load_campaign(file)
        target = device_target(device, destroy_data_on, force)
        if target is not None:  # the command line's device replaces the file's [target]
            data = tomllib.loads(text)
            data["target"] = target
            text = dump_toml(data)
            campaign = parse_campaign(text, str(file))
        check_target(campaign)  # before the store is made or the run lock taken (start_campaign checks again)
        console = Console()
        with measuring(wait=not no_wait), open_store(db) as store:
            cid = start_campaign(file, store, console, campaign=campaign, text=text)
            # Plain text: rich's highlighter takes time growing faster than the line's length.
            console.print(
                f"campaign {cid} ({campaign.name}): {len(store.cells(cid))} cell(s), "
                f"repetitions: {campaign.repetitions.policy}; results in {store.path}",
                markup=False,
                highlight=False,
            )
            execute(store, cid, campaign, console, quiet)

    @camp.command("resume")
    def resume(
        campaign_id: str | None = typer.Argument(
            None, help="campaign id or name (default: the latest unfinished one no live process runs)"
        ),
        db: Path | None = typer.Option(None, "--db", help=DB_HELP),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bars"),
        no_wait: bool = no_wait_option(),
        take_over: bool = typer.Option(
            False,
            "--take-over",
            help="resume a campaign owned by a process on another host (its liveness cannot be checked from here)",
        ),
    ) -> None:
        """Finish an interrupted campaign: finished trials and cells are kept, the rest of the matrix runs.

        A campaign that another live fsmeter process is still running is never resumed."""
        from fsmeter import runlock
        from fsmeter.campaign import parse_campaign
        from fsmeter.store import open_store

        console = Console()
        # Chosen only once the run lock is ours: a campaign's owner may finish while we wait.
        with runlock.measuring(wait=not no_wait), open_store(db, create=False, writable=True) as store:
            if campaign_id is None:
                rows, busy = [], []
                for r in store.campaigns():
                    if r["status"] == "done":
                        continue
                    owner = store.campaign_owner(r["id"])
                    alive = runlock.alive(owner) if owner is not None else False
                    (busy if alive is not False else rows).append((r, owner))
                if not rows:
                    why = "".join(f"; campaign {r['id']} is still being run by {runlock.describe(o)}" for r, o in busy)
                    raise UserError(f"no unfinished campaign to resume in {store.path}{why}")
                row = rows[-1][0]
            else:
                row = store.campaign(campaign_id)
            campaign = parse_campaign(row["source"], f"campaign {row['id']} (stored source)")
            console.print(f"resuming campaign {row['id']} ({row['name']})", markup=False, highlight=False)
            execute(store, row["id"], campaign, console, quiet, take_over=take_over)

    @camp.command("list")
    def list_(db: Path | None = typer.Option(None, "--db", help=DB_HELP)) -> None:
        """Campaigns in the store, with their progress."""
        from fsmeter.store import open_store

        with open_store(db, create=False) as store:
            from fsmeter import runlock

            t = Table(title=f"campaigns in {store.path}")
            for col in ("id", "name", "created", "status", "cells finished", "trials"):
                t.add_column(col)
            for r in store.campaigns():
                status, owner = r["status"], store.campaign_owner(r["id"])
                if owner is not None and runlock.alive(owner) is not False:
                    status += f" (pid {owner['pid']}{' on ' + owner['host'] if runlock.alive(owner) is None else ''})"
                elif status == "running":
                    status = "stopped (its run ended without finishing: resume it)"
                t.add_row(
                    str(r["id"]),
                    escape(r["name"]),
                    r["created"][:19],
                    status,
                    f"{r['n_finished']}/{r['n_cells']}",
                    str(r["n_trials"]),
                )
            Console().print(t)

    @camp.command("show")
    def show(
        campaign_id: str = typer.Argument(..., help="campaign id or name"),
        db: Path | None = typer.Option(None, "--db", help=DB_HELP),
        source: bool = typer.Option(False, "--source", help="also print the campaign file"),
    ) -> None:
        """Cells of a campaign: status, trials, headline mean ± CI, why each stopped or failed, outlier trials."""
        from fsmeter.store import open_store
        from fsmeter.store.health import guard

        console = Console()
        with guard(db), open_store(db, create=False) as store:
            row = store.campaign(campaign_id)
            title = f"campaign {row['id']}: {escape(row['name'])} ({row['status']})"
            console.print(cells_table(store, row["id"], title))
            outliers_table = trial_outliers_table(store.path, row["id"])
            if outliers_table is not None:
                console.print(outliers_table)
            _print_scaling(store.path, row["id"], console)
            if source:
                console.print(row["source"], markup=False, highlight=False)
