"""`fsmeter export [CAMPAIGN] --format csv|json|fio-json|fio-jsonplus -o FILE` (or fio-json --split DIR):
a stored campaign for other tools."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from fsmeter.errors import UserError


def register(app: typer.Typer) -> None:
    @app.command("export")
    def export(
        campaign: str | None = typer.Argument(None, help="campaign id or name (default: the newest in the store)"),
        fmt: str = typer.Option(
            "csv",
            "--format",
            "-f",
            help="csv (tidy: one row per trial x metric; a bonnie campaign: Bonnie's columns, one "
            "row per trial), tidy-csv (always tidy), json (the whole campaign), "
            "fio-json (fio's JSON shape, access workloads), fio-jsonplus (fio's json+: "
            "with latency bins), iozone (iozone's table and -R reports, iozone workloads)",
        ),
        out: Path | None = typer.Option(None, "--output", "-o", help="file to write; - for standard output"),
        split: Path | None = typer.Option(
            None,
            "--split",
            help="fio-json/fio-jsonplus: one file per "
            "configuration x workload x factor level under this directory, laid "
            "out for fio-plot (DIR/<configuration>/<rw>-iodepth-<d>-numjobs-<n>.json)",
        ),
        db: Path | None = typer.Option(
            None, "--db", help="results database (default: $FSMETER_DB or ./fsmeter.sqlite)"
        ),
    ) -> None:
        """Export a stored campaign: tidy CSV, versioned JSON, or fio-compatible JSON (see docs/reports.md, Exports)."""
        from fsmeter.report.export import export as do_export
        from fsmeter.store.health import guard

        if split is not None:
            if fmt not in ("fio-json", "fio-jsonplus", "fio-json+"):
                raise UserError(f"--split goes with --format fio-json or fio-jsonplus, not {fmt}")
            if out is not None:
                raise UserError("--split DIR and -o FILE: give one of them")
            from fsmeter.userpaths import check_output_dir

            check_output_dir(split, "--split")
            from fsmeter.interop.fio_export import split_export

            with guard(db):
                index = split_export(split, db, campaign)
            for why_w, why in sorted(index["skipped_workloads"].items()):
                print(f"note: {why_w} left out: {why}", file=sys.stderr)
            print(
                f"wrote {len(index['files'])} fio JSON files under {split} "
                f"(layout {index['layout']}; index in {split / 'fsmeter-index.json'})",
                file=sys.stderr,
            )
            return
        if out is None:
            raise UserError("-o FILE is needed (or - for standard output; --split DIR for fio-json)")
        from fsmeter.userpaths import check_output_path, write_output

        check_output_path(out, "-o", stdout=True)
        with guard(db):
            text = do_export(fmt, db, campaign)
        if write_output(out, text, "-o"):
            print(f"wrote {out} ({fmt})", file=sys.stderr)
