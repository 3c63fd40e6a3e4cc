"""`fsmeter claim check`: a published study's verdict engine for any campaign or table of trials."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from fsmeter.errors import UserError

HELP = """Test claims (CLAIM.toml) on a stored campaign (--db STORE [--campaign N]) or on a table of
trials (--data TRIALS.csv), with the decision rules and gates of the published studies.

CLAIM.toml: one or more \\[\\[claims]] in the studies' schema (id, says, kind = ordering | equivalence |
magnitude, tiers, metrics, size_pct, effect_pct, margin_pct, ratio_range, where, sensitive_to,
bound_by, decide), an optional \\[rules] (level, min_difference_pct, intervals, settle_s, min_phase_s,
max_other_cpu_share, max_cache_read_share) and optional \\[\\[hardware]] and lower_is_better.
TRIALS.csv: the columns config, metric, value, trial, one column per factor, and optionally the
regime columns phase_s, other_cpu_share, cache_read_share, storage_read_latency_ms (missing: not
measured). Each claim reads reproduced, reversed, not reproduced, inconclusive, not comparable here
or not testable here. Exit status 0, or 2 on bad input."""


def register(app: typer.Typer) -> None:
    cl = typer.Typer(help="Test claims about a campaign with the studies' verdict engine.", no_args_is_help=True)
    app.add_typer(cl, name="claim")

    @cl.command("check", help=HELP)
    def check(
        claim_file: Path = typer.Argument(..., help="CLAIM.toml: the claims to test"),
        db: Path | None = typer.Option(None, "--db", help="a results database holding the campaign"),
        campaign: str | None = typer.Option(
            None, "--campaign", help="with --db: the campaign id or name (default: the newest)"
        ),
        data: Path | None = typer.Option(None, "--data", help="TRIALS.csv: one row per trial and metric"),
        json_out: Path | None = typer.Option(
            None, "--json", help="also write the verdicts to this JSON file: per claim id, verdict, data_outcome, ..."
        ),
    ) -> None:
        import json

        from rich.console import Console
        from rich.table import Table

        from fsmeter.study.claimfile import frame_from_csv, frame_from_store, load_claim_file
        from fsmeter.study.claims import ClaimChecker
        from fsmeter.study.verdict import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED, REVERSED, counts
        from fsmeter.textfile import check_output_path

        if (db is None) == (data is None):
            raise UserError(
                "claim check: give the data as --db STORE (with --campaign N) or --data TRIALS.csv, one of them"
            )
        if campaign is not None and db is None:
            raise UserError("--campaign: names a campaign of --db STORE; with --data there is none")
        if json_out is not None:
            check_output_path(json_out, "--json")
        cf = load_claim_file(claim_file)
        frame = frame_from_csv(data, cf) if data is not None else frame_from_store(db, campaign, cf)
        verdicts = ClaimChecker(cf, frame).check_all()
        con = Console(width=None if sys.stdout.isatty() else 160)
        rules = cf.rules
        t = Table(
            title=f"{claim_file}: claims tested at the {rules.level:.0%} level"
            + (f", minimum difference {rules.min_difference_pct:g}%" if rules.min_difference_pct else "")
            + (f", {rules.level:.0%} intervals must not overlap" if rules.intervals == "no_overlap" else ""),
            caption=", ".join(f"{n} {w}" for w, n in counts(v.outcome for v in verdicts).items()),
        )
        for col in ("claim", "says", "verdict", "test and evidence"):
            t.add_column(col, overflow="fold")
        style = {REPRODUCED: "green", REVERSED: "red", NOT_REPRODUCED: "red", NOT_COMPARABLE: "cyan"}
        for v in verdicts:
            why = (f"{v.test}: " if v.test else "") + v.full_reason()
            why += "".join(f"\n- gate: {g}" for g in v.gates)
            why += "".join(f"\n{e}" for e in v.evidence(4))
            t.add_row(v.claim.id, v.claim.says, f"[{style.get(v.outcome, 'yellow')}]{v.outcome}[/]", why)
        con.print(t)
        if json_out is not None:
            text = json.dumps([v.as_json() for v in verdicts], indent=1) + "\n"
            if str(json_out) == "-":
                sys.stdout.write(text)
            else:
                json_out.write_text(text)
                con.print(f"verdicts: {json_out}")
