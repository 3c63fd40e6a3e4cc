"""`fsmeter store check STORE` and `fsmeter store recover STORE --to NEW`: a damaged results store."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table


def register(app: typer.Typer) -> None:
    st = typer.Typer(help="Check a results store, or copy what is readable out of a damaged one.", no_args_is_help=True)
    app.add_typer(st, name="store")

    @st.command("check")
    def check_cmd(store: Path = typer.Argument(..., help="the results database (.sqlite)")) -> None:
        """Read the whole store (read-only): PRAGMA integrity_check, schema version, and per table how
        many rows are readable. Exit 0 healthy, 1 damaged."""
        from fsmeter.store import SCHEMA_VERSION
        from fsmeter.store.health import check, recovered_name

        rep = check(store)
        con = Console()
        con.print(
            f"store {store}: schema version {rep.version if rep.version is not None else 'unknown'} "
            f"(this fsmeter: {SCHEMA_VERSION}); PRAGMA integrity_check: "
            f"{rep.integrity if rep.integrity is not None else 'could not run (locked?)'}",
            markup=False,
            highlight=False,
        )
        if rep.fatal:
            con.print(f"unreadable: {rep.fatal}", markup=False, highlight=False)
        if rep.tables:
            t = Table(title="rows per table")
            for col in ("table", "readable", "unreadable", "damaged stretches", "first problem"):
                t.add_column(col, overflow="fold", justify="left" if col in ("table", "first problem") else "right")
            for s in rep.tables:
                if not s.present:
                    t.add_row(s.table, "-", "-", "-", "table missing or its definition is damaged")
                else:
                    t.add_row(s.table, str(s.read), str(s.lost), str(s.skipped_regions), s.first_problem or "")
            con.print(t)
        if rep.healthy:
            con.print("healthy")
            return
        if rep.foreign:
            print(f"not a store: {store} holds no fsmeter tables: name the results store")
            raise typer.Exit(1)
        print(
            f"damaged: {rep.problem()}: `fsmeter store recover {store} --to {recovered_name(store)}` copies out "
            "every readable trial"
        )
        raise typer.Exit(1)

    @st.command("recover")
    def recover_cmd(
        store: Path = typer.Argument(..., help="the damaged results database"),
        to: Path = typer.Option(..., "--to", help="the new store to write (must not exist)"),
    ) -> None:
        """Copy every readable campaign, cell, trial and sample into a new store, skipping what cannot
        be read (and rows whose campaign, cell, trial or phase was lost); the damaged store is only read."""
        from fsmeter.store.health import recover

        rep = recover(store, to)
        t = Table(title=f"recovered {store} into {to}")
        for col in ("table", "copied", "lost", "damaged stretches"):
            t.add_column(col, justify="left" if col == "table" else "right")
        for table, n in rep.copied.items():
            t.add_row(table, str(n), str(rep.lost[table]), str(rep.skipped_regions[table]))
        con = Console()
        con.print(t)
        if rep.schema_repaired:
            con.print(
                f"table definitions read as this fsmeter's own (damaged in the store): "
                f"{', '.join(rep.schema_repaired)}",
                markup=False,
            )
        lost = sum(rep.lost.values())
        stretches = sum(rep.skipped_regions.values())
        con.print(
            f"{rep.copied.get('trials', 0)} trial(s) in {rep.copied.get('campaigns', 0)} campaign(s) kept; "
            f"{lost} row(s) lost"
            + (f", and {stretches} damaged stretch(es) whose rows cannot be counted" if stretches else ""),
            markup=False,
            highlight=False,
        )
