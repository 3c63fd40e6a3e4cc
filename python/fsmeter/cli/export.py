"""`fsmeter export [CAMPAIGN] --format csv|json|fio-json -o FILE`: a stored campaign for other tools."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from fsmeter.errors import UserError


def register(app: typer.Typer) -> None:
    @app.command("export")
    def export(
        campaign: Optional[str] = typer.Argument(None, help="campaign id or name (default: the newest in the store)"),
        fmt: str = typer.Option("csv", "--format", "-f",
                                help="csv (tidy: one row per trial x metric; a bonnie campaign: Bonnie's columns, one "
                                     "row per trial), tidy-csv (always tidy), json (the whole campaign), "
                                     "fio-json (fio's JSON shape, access workloads)"),
        out: Path = typer.Option(..., "--output", "-o", help="file to write; - for standard output"),
        db: Optional[Path] = typer.Option(None, "--db", help="results database (default: $FSMETER_DB or "
                                                             "./fsmeter.sqlite)"),
    ) -> None:
        """Export a stored campaign: tidy CSV, versioned JSON, or fio-compatible JSON (see the README (Reports, exports))."""
        from fsmeter.report.export import export as do_export

        if str(out) != "-" and not out.parent.is_dir():
            raise UserError(f"-o {out}: the folder {out.parent} does not exist")
        text = do_export(fmt, db, campaign)
        if str(out) == "-":
            sys.stdout.write(text)
        else:
            out.write_text(text, encoding="utf-8")
            print(f"wrote {out} ({fmt})", file=sys.stderr)
