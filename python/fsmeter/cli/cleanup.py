"""`fsmeter cleanup`: remove what an interrupted run left behind (mounts, loop devices, images, cgroups),
exactly what its state file records, never anything else."""

from __future__ import annotations

import os

import typer

from fsmeter.errors import UserError
from fsmeter.provision import StateFile, default_scratch
from fsmeter.provision.state import owner_alive
from fsmeter.provision.undo import cleanup_leftovers


def cleanup(
    scratch: str | None = typer.Option(
        None, "--scratch", help="fsmeter's scratch folder (default: $FSMETER_SCRATCH or /var/tmp/fsmeter)"
    ),
) -> None:
    """Unmount, detach and delete the leftovers of killed fsmeter runs, and say what was removed."""
    folder = os.path.abspath(scratch or default_scratch())
    if not os.path.exists(os.path.join(folder, "state.json")):
        typer.echo(f"nothing to clean: no state file in {folder}")
        return
    state = StateFile(folder)
    live = [e for e in state.entries() if owner_alive(e)]
    left: list[str] = []
    done, problems = cleanup_leftovers(state, left)
    for msg in done:
        typer.echo(f"removed: {msg}")
    for msg in left:  # no longer what fsmeter made: not touched, record dropped
        typer.echo(msg)
    if not done and not problems and not left:
        typer.echo(f"nothing to clean in {folder}")
    for pid in sorted({e["pid"] for e in live}):
        n = sum(1 for e in live if e["pid"] == pid)
        typer.echo(f"kept: {n} resource(s) in use by running fsmeter process {pid}")
    if problems:
        for msg in problems:
            typer.echo(f"not removed: {msg}", err=True)
        raise UserError(
            f"{len(problems)} leftover(s) could not be removed: see above; run as root, "
            "or stop the processes using them, and run `fsmeter cleanup` again",
            exit_code=1,
        )


def register(app: typer.Typer) -> None:
    app.command(
        "cleanup",
        help="Remove the mounts, loop devices, images and cgroups left by an "
        "interrupted fsmeter run (only those in its state file).",
    )(cleanup)
