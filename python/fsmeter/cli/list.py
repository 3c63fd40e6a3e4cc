"""`fsmeter list`: the named workloads, one line each."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from fsmeter.spec import list_workloads


def register(app: typer.Typer) -> None:
    @app.command("list")
    def list_() -> None:
        """List the named workloads: name, family, what it does."""
        t = Table(box=None, show_header=True, pad_edge=False)
        t.add_column("workload")
        t.add_column("family")
        t.add_column("description")
        for d in list_workloads():
            t.add_row(d.name, d.family.name, d.description)
        Console().print(t)
