"""`fsmeter crash list|run|report`: cut the power under a write-heavy load and see what each filesystem kept."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from fsmeter.cli._runlock import no_wait_option
from fsmeter.errors import UserError


def _apply_sets(text_data: dict, sets: list[str]) -> None:
    """`--set campaign.crash_points=2`: override one field of the campaign file (TOML value syntax)."""
    import tomllib

    for s in sets:
        key, sep, value = s.partition("=")
        if not sep or "." not in key:
            raise UserError(f"--set {s!r}: use section.field=value, e.g. campaign.crash_points=2")
        section, field = key.split(".", 1)
        try:
            parsed = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            parsed = value  # a bare word: a string
        if section not in ("campaign", "workload"):
            raise UserError(f"--set {s!r}: only campaign.* and workload.* can be set")
        text_data.setdefault(section, {})[field] = parsed


def register(app: typer.Typer) -> None:
    cr = typer.Typer(
        help="Crash and recovery: cut the power under a write-heavy load, recover, and check "
        "that everything fsync promised survived.",
        no_args_is_help=True,
    )
    app.add_typer(cr, name="crash")

    @cr.command("list")
    def list_() -> None:
        """The named crash campaigns."""
        from fsmeter.crash.model import campaign_names, load_campaign

        t = Table(title="crash campaigns (fsmeter crash run NAME --out DIR)")
        for col in ("campaign", "what", "cells", "cuts per cell"):
            t.add_column(col, overflow="fold")
        for name in campaign_names():
            c, _, _ = load_campaign(name)
            t.add_row(name, c.campaign.description, str(len(c.cells())), str(c.campaign.crash_points))
        Console().print(t)

    @cr.command("run")
    def run(
        campaign: str = typer.Argument(..., help="a named crash campaign (fsmeter crash list) or a TOML file"),
        out: Path = typer.Option(..., "--out", "-o", help="results folder: results.json, ledgers, evidence"),
        sets: list[str] = typer.Option([], "--set", help="override a field: campaign.crash_points=5"),
        html: Path | None = typer.Option(None, "--html", help="HTML report (default: OUT/report.html)"),
        db: Path | None = typer.Option(
            None,
            "--db",
            help="results store that also gets every crash point as a trial (default: $FSMETER_DB or ./fsmeter.sqlite)",
        ),
        no_wait: bool = no_wait_option(),
    ) -> None:
        """Run a crash campaign: every filesystem x size x dirty set, N power cuts each, recovered and verified."""
        import tomllib

        from pydantic import ValidationError

        from fsmeter.crash.model import CrashCampaign, load_campaign, validation_message
        from fsmeter.crash.report import terminal_table, write_html
        from fsmeter.crash.run import CrashRunner
        from fsmeter.interrupt import note_signal
        from fsmeter.provision.errors import Interrupted
        from fsmeter.provision.state import StateFile, default_scratch
        from fsmeter.provision.undo import cleanup_leftovers
        from fsmeter.runlock import measuring

        c, text, source = load_campaign(campaign)
        if sets:
            data = tomllib.loads(text)
            _apply_sets(data, sets)
            try:
                c = CrashCampaign.model_validate(data)
            except ValidationError as exc:
                raise UserError(f"--set: {validation_message(exc)}") from None
        if os.geteuid() != 0 or not os.path.exists("/dev/loop-control"):
            raise UserError(
                "crash campaigns make filesystems on loop devices and a FUSE disk: run as root "
                "(sudo fsmeter crash run ...)",
                exit_code=1,
            )
        from fsmeter.userpaths import check_output_dir, check_output_path

        check_output_dir(out, "--out")  # made if missing: under the rules of every output
        if out.exists() and (out / "results.json").exists():
            raise UserError(f"--out {out}: already holds crash results: give a new folder")
        if html is not None:  # checked before the campaign runs, not after it
            check_output_path(html, "--html")
        console = Console()
        scratch = default_scratch()

        def _on_term(signum, frame):  # SIGTERM/SIGHUP tear down like Ctrl-C: finally blocks unmount and detach
            note_signal(signum)
            raise Interrupted(signum)

        old_term = signal.signal(signal.SIGTERM, _on_term)
        old_hup = signal.signal(signal.SIGHUP, _on_term)
        with measuring(wait=not no_wait):
            state = StateFile(scratch)
            _, problems = cleanup_leftovers(state)
            for p in problems:
                console.print(f"[yellow]leftover not removed: {p}[/]")
            from fsmeter.store import default_db_path

            runner = CrashRunner(
                c,
                text if not sets else f"{text}\n# --set {' '.join(sets)}",
                str(out),
                scratch,
                say=lambda m: console.print(m, highlight=False),
                db=str(default_db_path(db)),
            )
            try:
                doc = runner.run()
            finally:
                signal.signal(signal.SIGTERM, old_term)
                signal.signal(signal.SIGHUP, old_hup)
        console.print(terminal_table(doc))
        page = write_html(doc, str(html or out / "report.html"))
        console.print(f"campaign took {doc['elapsed_s']:.0f} s; results {out / 'results.json'}; report {page}")
        if doc.get("store"):
            console.print(
                f"stored in {doc['store']['path']} (campaign {doc['store']['campaign_id']}: "
                f"`fsmeter campaign show {doc['store']['campaign_id']} --db {doc['store']['path']}`)"
            )

    @cr.command("report")
    def report(
        folder: Path = typer.Argument(..., help="the results folder of `fsmeter crash run`"),
        html: Path | None = typer.Option(None, "--html", help="HTML report (default: FOLDER/report.html)"),
    ) -> None:
        """The campaign's table, and its HTML report: recovery time per filesystem, data lost beyond fsync."""
        from fsmeter.crash.report import load_results, terminal_table, write_html

        doc = load_results(str(folder))
        Console().print(terminal_table(doc))
        page = write_html(doc, str(html or (folder if folder.is_dir() else folder.parent) / "report.html"))
        Console().print(f"report: {page}")
