"""`fsmeter merge A.sqlite B.sqlite -o all.sqlite`: results from other boots or machines in one store."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console


def register(app: typer.Typer) -> None:
    @app.command("merge")
    def merge(
        inputs: list[Path] = typer.Argument(..., help="results databases to merge (left as they are)"),
        out: Path = typer.Option(..., "-o", "--out", help="the new merged database (must not exist)"),
    ) -> None:
        """Copy every campaign of the INPUTS, with its environment rows, into a new store OUT.

        Reports then see the kernel and host of each trial: `fsmeter study report` treats them as
        factors when they differ."""
        from fsmeter.store.merge import merge_stores

        console = Console()
        counts = merge_stores(inputs, out)
        console.print(
            f"merged {len(inputs)} database(s) into {out}: {counts.get('campaigns', 0)} campaign(s), "
            f"{counts.get('trials', 0)} trial(s), {counts.get('environment', 0)} environment row(s)"
        )
        for d in counts["duplicates"]:
            console.print(f"[yellow]note:[/] already merged, not copied again: {d}")
