"""`fsmeter compare-runs A B`: per metric change from campaign A to B; exit 3 on a significant regression."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

HELP = """Compare two campaigns (ids or names in --db, or exported campaign JSON files) metric by metric.

Metrics are matched by workload, phase, metric and factor levels. B regresses when Welch's t-test
finds it significantly worse than A (alpha) by at least --threshold percent, in the metric's own
direction. With many metrics, p-values are Holm-corrected over all of them (--correction none keeps
them per metric), so an unchanged build is not flagged by chance. Exit codes: 0 no regression; 3 at least one regression; 2 bad input (nothing comparable).
"""


def register(app: typer.Typer) -> None:
    @app.command("compare-runs", help=HELP)
    def compare_runs_cmd(
        a: str = typer.Argument(..., help="baseline: campaign id or name, or an exported campaign .json"),
        b: str = typer.Argument(..., help="candidate: campaign id or name, or an exported campaign .json"),
        db: Path | None = typer.Option(
            None, "--db", help="results database (default: $FSMETER_DB or ./fsmeter.sqlite)"
        ),
        db_b: Path | None = typer.Option(None, "--db-b", help="results database of B, if not --db"),
        threshold: float = typer.Option(10.0, "--threshold", help="practical threshold, % of A's mean"),
        alpha: float = typer.Option(0.05, "--alpha", help="significance level of the Welch t-test"),
        correction: str = typer.Option(
            "holm", "--correction", help="multiple-test correction over all metrics: holm (default) or none"
        ),
    ) -> None:
        from contextlib import nullcontext

        from rich.console import Console

        from fsmeter.report.compare_runs import EXIT_REGRESSION, check_options, compare_runs, load_side, result_table
        from fsmeter.store.health import guard

        check_options(threshold, alpha, correction)  # before either side is read

        def side(ref: str, store: Path | None):
            exported = ref.endswith(".json") and os.path.isfile(ref)  # not the store: no store damage to explain
            with nullcontext() if exported else guard(store):
                return load_side(ref, store)

        side_a, side_b = side(a, db), side(b, db_b or db)
        res = compare_runs(side_a, side_b, threshold, alpha, correction)
        con = Console(width=None if sys.stdout.isatty() else 160)
        con.print(result_table(res))
        for w, cfg, d in res.mismatches:
            con.print(f"[bold yellow]not compared[/] {w} / {cfg}: parameters differ ({d})")
        for label, keys in (("only in A", res.only_a), ("only in B", res.only_b)):
            if keys:
                con.print(
                    f"[yellow]{label}[/] ({len(keys)}): "
                    + ", ".join(keys[:10])
                    + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")
                )
        regs = res.regressions
        if regs:
            con.print(
                f"[bold red]{len(regs)} significant regression(s)[/] beyond {threshold:g}%: "
                + ", ".join(f"{r.workload} / {r.config} / {r.key} {r.change_pct:+.1f}%" for r in regs)
            )
            raise typer.Exit(EXIT_REGRESSION)
        con.print(f"no significant regression beyond {threshold:g}% ({len(res.rows)} metric(s) compared)")
