"""`fsmeter analyze`: summaries, CIs and the factorial ANOVA for a CSV or a stored campaign."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from fsmeter.errors import UserError

HELP = """Summarise a response per cell and run the full factorial ANOVA (Jain ch. 12-13, 22).

Input is either a CSV (--csv FILE, one row per trial) or a campaign in the results
store (DB --campaign ID). --response names a numeric column (CSV) or a metric (store);
several comma-separated CSV columns are stacked into one response with an extra
factor 'response' (e.g. block_read_kbs,block_write_kbs = access mode).
--factors is a comma-separated list of columns; join columns with '+' to make one
factor of their combinations (filesystem+kernel).
"""


def _split(s: str | None) -> list[str]:
    return [p.strip() for p in (s or "").split(",") if p.strip()]


def _store_frame(db: Path, campaign: str | None):
    try:
        from fsmeter.store import tidy  # lazy: the store is optional for CSV work
    except ImportError:
        raise UserError(
            "the results store is not available in this build (fsmeter.store.tidy): "
            "export the data to CSV and use --csv"
        ) from None
    if not os.path.isfile(db):
        raise UserError(f"no such results database: {db}: check the path")
    from fsmeter.store.health import guard

    with guard(db):  # a damaged store: one line naming what is damaged and how to recover it
        df = tidy(db, campaign=campaign)
    if df is None or len(df) == 0:
        what = f"campaign {campaign!r}" if campaign else "any campaign"
        raise UserError(f"no trials for {what} in {db}: list campaigns with `fsmeter` report commands")
    return df


def _kept_only(df):
    """The trials statistics may use (the report's rule, fsmeter.stats.kept), and a note of the others."""
    from fsmeter.stats.kept import kept_mask

    mask = kept_mask(df)
    left = df[~mask].drop_duplicates(["cell_id", "trial"])
    if not len(left):
        return df, None
    warm = int(((left["status"] == "ok") & left["discarded"].astype(bool)).sum())
    bad = int((left["status"] != "ok").sum())
    parts = [f"{warm} discarded warm-up trial(s)"] if warm else []
    parts += [f"{bad} failed or interrupted trial(s)"] if bad else []
    parts += [f"{len(left) - warm - bad} trial(s) without a value"] if len(left) - warm - bad else []
    return df[mask], "left out of the statistics: " + ", ".join(parts)


def analyze(
    db: Path | None = typer.Argument(None, help="Results database (with --campaign).", show_default=False),
    csv: Path | None = typer.Option(None, "--csv", help="CSV file, one row per trial.", show_default=False),
    campaign: str | None = typer.Option(None, "--campaign", help="Campaign id in the results database."),
    response: str = typer.Option("", "--response", help="Response column(s) or store metric."),
    factors: str = typer.Option("", "--factors", help="Comma-separated factor columns (a+b joins two)."),
    level: float = typer.Option(0.95, "--level", help="Confidence level: 0.90, 0.95 or 0.99."),
    log: bool = typer.Option(False, "--log", help="Multiplicative model: ANOVA of log(response)."),
    workload: str | None = typer.Option(None, "--workload", help="Store only: keep one workload."),
    phase: str | None = typer.Option(None, "--phase", help="Store only: keep one phase."),
) -> None:
    from fsmeter.stats.analyze import (
        analyze_frame,
        check_cli_level,
        combine_factors,
        load_csv,
        metric_frame,
        render,
        stack_responses,
    )

    check_cli_level(level)
    responses = _split(response)
    if not responses:
        raise UserError("missing --response: name the numeric column (CSV) or metric (store) to analyse")
    if (csv is None) == (db is None):
        raise UserError("give either --csv FILE or a results database DB with --campaign ID")
    fac = _split(factors)

    if csv is not None:
        if campaign or workload or phase:
            raise UserError("--campaign, --workload and --phase apply to a results database, not to --csv")
        df = load_csv(csv)
        if len(responses) > 1:
            df = stack_responses(df, responses)
            if "response" not in fac:
                fac.append("response")
            target = "value"
        else:
            target = responses[0]
    else:
        if len(responses) > 1:
            raise UserError("the store path takes one metric in --response; add 'metric' to --factors instead")
        df = _store_frame(db, campaign)
        for col, val in (("workload", workload), ("phase", phase)):
            if val is not None:
                if col not in df.columns or not (df[col] == val).any():
                    have = ", ".join(sorted(map(str, df[col].unique()))) if col in df.columns else "none"
                    raise UserError(f"no {col} {val!r} in this campaign: available are {have}")
                df = df[df[col] == val]
        df = metric_frame(df, responses[0], fac)
        df, note = _kept_only(df)
        if not len(df):
            raise UserError(
                f"no finished, kept trial of metric {responses[0]!r}: every one failed, was "
                "interrupted or was a discarded warm-up trial (see `fsmeter campaign show`)"
            )
        if note:
            print(f"note: {note}")
        target = "value"

    combined = []
    for f in fac:
        df, name = combine_factors(df, f)
        combined.append(name)
    render(analyze_frame(df, target, combined, level=level, log=log))


def register(app: typer.Typer) -> None:
    app.command("analyze", help=HELP)(analyze)
