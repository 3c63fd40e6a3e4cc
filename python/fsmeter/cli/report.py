"""`fsmeter report [CAMPAIGN]`: a stored campaign ranked in the terminal, or as one self-contained HTML file."""

from __future__ import annotations

from pathlib import Path

import typer

DB_HELP = "results database (default: $FSMETER_DB or ./fsmeter.sqlite)"


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        campaign: str | None = typer.Argument(None, help="campaign id or name (default: the newest in the store)"),
        db: Path | None = typer.Option(None, "--db", help=DB_HELP),
        out: Path | None = typer.Option(
            None, "--output", "-o", help="write the HTML report here (default: tables in the terminal)"
        ),
        level: float = typer.Option(0.95, "--level", help="confidence level of every interval"),
        alpha: float = typer.Option(0.05, "--alpha", help="significance level of the Welch t-tests"),
        threshold: float = typer.Option(
            10.0, "--threshold", min=0.0, help="practical threshold, % of the mean: smaller differences do not count"
        ),
        baseline: str | None = typer.Option(
            None,
            "--baseline",
            help="configuration label the mix family's relative-JPM chart divides by (default: the first)",
        ),
    ) -> None:
        """Rank a campaign's configurations per workload; with -o, the HTML report with every chart."""
        from rich.console import Console

        from fsmeter.report.data import build_view
        from fsmeter.report.terminal import print_campaign
        from fsmeter.stats.summary import check_level

        check_level(level)
        if out is not None:
            from fsmeter.userpaths import check_output_path

            check_output_path(out, "--output", stdout=True)
        if not 0 < alpha < 1:
            from fsmeter.errors import UserError

            raise UserError(f"--alpha {alpha}: must be between 0 and 1 (e.g. 0.05)")
        import sys

        from fsmeter.store.health import guard

        with guard(db):
            # Not a terminal (pipe, CI log): no reason to squeeze the tables into 80 columns.
            console = Console(width=None if sys.stdout.isatty() else 160)
            if out is None:
                print_campaign(build_view(db, campaign, level, alpha, threshold), console)
                return
            from fsmeter.report.html import write_report
            from fsmeter.userpaths import is_stdout

            view = write_report(out, db, campaign, level, alpha, threshold, baseline=baseline)
            if is_stdout(out):  # the page was standard output: nothing more goes there
                return
            n_fail = len(view.failures())
            console.print(
                f"wrote {out} (campaign {view.campaign['id']}: {view.campaign['name']}, "
                f"{len(view.workloads)} workload(s)"
                + (f", {n_fail} failed trial(s)/cell(s) listed" if n_fail else "")
                + ")"
            )
