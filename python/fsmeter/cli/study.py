"""`fsmeter study list|run|check|report|compare-runs|calibrate`: re-run a published filesystem study and test its claims."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from fsmeter.cli._device import device_options, device_target
from fsmeter.cli._runlock import no_wait_option
from fsmeter.errors import UserError
from fsmeter.userpaths import check_output_path

DEVICE_OPT, CONFIRM_OPT, FORCE_OPT = device_options()
DB_HELP = "results database (default: $FSMETER_DB or ./fsmeter.sqlite)"


def _minutes(s: float) -> str:
    return f"{s / 60:.0f} min" if s >= 90 else f"{s:.0f} s"


def _change_table(changes: list) -> Table:
    t = Table(title="what this run changes from the study", show_lines=False)
    for col in ("change", "what", "why", "affects"):
        t.add_column(col, overflow="fold")
    for c in changes:
        color = {"skipped": "yellow", "substituted": "cyan", "shrunk": "magenta"}.get(c.kind, "white")
        t.add_row(f"[{color}]{c.kind}[/]", c.what, c.why, ", ".join(c.affects))
    return t


def list_() -> None:
    """The studies fsmeter can re-run, what they need, and their time at each scale here."""
    from fsmeter.study.model import load_study, study_paths
    from fsmeter.study.plan import TRIAL_OVERHEAD_S, plan_study

    console = Console()
    t = Table(title="studies (fsmeter study run NAME --scale small|quick|paper|FACTOR)")
    for col in ("study", "what it measured", "needs", "small", "quick (functional only)", "paper"):
        t.add_column(col, overflow="fold")
    for slug in study_paths():
        s = load_study(slug)
        needs = ", ".join(
            ["root" if s.study.needs_root else "no root"]
            + (["a device"] if s.study.needs_device else [])
            + [f"{f} family" for f in s.study.families]
        )
        est = []
        for scale in ("small", "quick", "paper"):
            try:
                p = plan_study(s, scale)
                est.append(f"~{_minutes(p.est_s)} ({p.cells} cells x {p.trials_per_cell})")
            except UserError as exc:
                est.append(f"cannot run: {exc.message}")
        t.add_row(f"{slug}\n[dim]{s.study.citation}[/]", s.study.summary, needs, *est)
    console.print(t)
    console.print(
        "[dim]times are estimates for this machine (per-trial times measured on a 2-core "
        f"machine with loop images, plus ~{TRIAL_OVERHEAD_S:g} s per trial for mkfs, mount and cache "
        "resets)[/]"
    )


def run(
    name: str = typer.Argument(..., help="a study from `fsmeter study list`"),
    scale: str = typer.Option(
        "small",
        "--scale",
        help="small (about 10 min, in the study's regime) | quick "
        "(a functional check only: disk-bound workloads become cache-resident) | "
        "paper | paper-disk (on a model of the paper's disk, as root; the studies that define it) | "
        "a factor of the paper scale such as 0.25",
    ),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bars"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the generated campaign and stop"),
    device: str | None = DEVICE_OPT,
    destroy_data_on: str | None = CONFIRM_OPT,
    force: bool = FORCE_OPT,
    no_wait: bool = no_wait_option(),
    kernel: str | None = typer.Option(
        None,
        "--kernel",
        help="comma-separated kernels (e.g. 6.1) to run "
        "the configurations this host's kernel cannot make in guests "
        "(virtual machines; see the guests page of the docs)",
    ),
) -> None:
    """Generate the study's campaign for this machine at SCALE and run it into the store."""
    from fsmeter.campaign import parse_campaign
    from fsmeter.cli.campaign import execute
    from fsmeter.runlock import measuring
    from fsmeter.runner import start_campaign
    from fsmeter.store import open_store
    from fsmeter.study.model import load_study
    from fsmeter.study.plan import TRIAL_OVERHEAD_S, plan_study

    console = Console()
    study = load_study(name)
    target = device_target(device, destroy_data_on, force)
    kernels = [k.strip() for k in (kernel or "").split(",") if k.strip()] or None
    if kernel is not None and not kernels:
        raise UserError("--kernel: name at least one kernel, e.g. --kernel 6.1")
    plan = plan_study(study, scale, target, kernels)
    text = plan.text()
    console.print(
        f"[bold]{study.study.title}[/] ({study.study.citation}), scale {plan.scale}: "
        f"{plan.cells} cells x {plan.trials_per_cell} trials, about {_minutes(plan.est_s)} here"
    )
    if plan.scale == "quick":
        console.print(
            "[yellow]quick scale: a functional check only; its verdicts do not stand for the study "
            "(disk-bound workloads run from the page cache): use --scale small[/]"
        )
    if plan.changes:
        console.print(_change_table(plan.changes))
    if dry_run:
        est = Table(
            title="time estimate (one trial's time per workload as measured on a quiet 2-CPU machine "
            f"with loop images, plus {TRIAL_OVERHEAD_S:g} s per trial; a busy machine takes longer)"
        )
        for col in ("workload", "cells", "trials each", "s per trial", "total"):
            est.add_column(col)
        for wl, (n, secs) in plan.est_by_workload.items():
            each = secs / (n * plan.trials_per_cell) if n and plan.trials_per_cell else 0.0
            est.add_row(wl, str(n), str(plan.trials_per_cell), f"{each:.1f}", _minutes(secs))
        console.print(est)
        console.print(text, markup=False, highlight=False)
        return
    if study.study.needs_root and target is None and (os.geteuid() != 0 or not os.path.exists("/dev/loop-control")):
        raise UserError(
            f"study {study.slug} makes filesystems on loop devices: run it as root "
            "(sudo fsmeter study run ...), or on a device with --device/--destroy-data-on"
        )
    campaign = parse_campaign(text, f"study {study.slug}")
    with measuring(wait=not no_wait), open_store(db) as store:
        cid = start_campaign(Path(f"study:{study.slug}"), store, console, campaign=campaign, text=text)
        console.print(f"campaign {cid} ({campaign.name}) -> {store.path}")
        execute(store, cid, campaign, console, quiet)
        console.print(
            f"next: `fsmeter study report {study.slug} --db {store.path}` draws the study's tables "
            "beside the published ones and tests its claims"
        )


def check(
    name: str | None = typer.Argument(None, help="a study from `fsmeter study list`"),
    all_: bool = typer.Option(False, "--all", help="every shipped study"),
    json_out: Path | None = typer.Option(
        None, "--json", help="also write the verdicts to this JSON file: a list of {claim, paper_verdict, why, ...}"
    ),
) -> None:
    """Test every claim of a study on the paper's own published numbers (no measurement).

    Exit status 1 when a claim's verdict differs from the one its study file expects (expect_paper)."""
    import json

    from fsmeter.study.model import load_study, study_paths
    from fsmeter.study.paper import check_paper
    from fsmeter.study.report import rules_text
    from fsmeter.study.verdict import PAPER_WORDS, counts

    if all_ == (name is not None):
        raise UserError("study check: name one study, or give --all (fsmeter study list shows them)")
    if json_out is not None:
        check_output_path(json_out, "--json")
    slugs = list(study_paths()) if all_ else [name]
    console = Console()
    out, misjudged = [], []
    for slug in slugs:
        study = load_study(slug)
        results = check_paper(study)
        t = Table(title=f"{study.slug}: its claims on its own published numbers", show_lines=True)
        for col in ("claim", "the study says", "on its own data", "expected", "test and evidence"):
            t.add_column(col, overflow="fold")
        for r in results:
            color = {"supported": "green", "contradicted": "red", "inconclusive": "yellow"}.get(r.paper_verdict, "dim")
            word = "contradicted by its own data" if r.paper_verdict == "contradicted" else r.paper_verdict
            exp = r.expected or "-"
            if r.misjudged:
                exp = f"[bold red]{exp} (differs)[/]"
                misjudged.append(f"{study.slug} {r.claim.id}")
            says = r.claim.says + (
                " [a reading of the paper's tables: the paper states no such conclusion]"
                if r.claim.basis == "read_off"
                else ""
            )
            t.add_row(r.claim.id, says, f"[{color}]{word}[/]", exp, r.why[:900])
            out.append({"study": study.slug, **r.as_json()})
        console.print(t)
        c = counts((r.paper_verdict for r in results), PAPER_WORDS)
        console.print(", ".join(f"{n} {w}" for w, n in c.items()))
        console.print(f"the study's rules: {rules_text(study)}")
    if json_out is not None:
        json_out.write_text(json.dumps(out, indent=1) + "\n")
        console.print(f"verdicts: {json_out}")
    if misjudged:
        console.print(
            f"[red]{len(misjudged)} claim(s) judged otherwise than their study file expects: {', '.join(misjudged)}[/]"
        )
        raise typer.Exit(1)


def report(
    name: str = typer.Argument(..., help="a study from `fsmeter study list`"),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    out: Path | None = typer.Option(
        None, "-o", "--out", help="HTML file (default: <study>-report.html next to the store)"
    ),
    campaign: str | None = typer.Option(
        None, "--campaign", help="a campaign id (default: every campaign of this study in the store)"
    ),
    json_out: Path | None = typer.Option(
        None,
        "--json",
        help="also write the verdicts to this JSON file: a list of {claim, verdict, paper_verdict, ...}",
    ),
    verbose: bool = typer.Option(
        False, "-v", "--verbose", help="after the summary, every claim's reasons, gates, notes and evidence table"
    ),
) -> None:
    """The study's tables and figures from the new run beside the published ones, and a verdict per claim.

    The terminal shows one line per claim first; -v adds the details and each claim's evidence table."""
    from fsmeter.store import default_db_path
    from fsmeter.study.model import load_study
    from fsmeter.study.report import (
        build_study_view,
        evidence_table,
        summary_table,
        verdict_table,
        write_study_report,
    )

    console = Console()
    study = load_study(name)
    if out is not None:
        check_output_path(out, "--out")
    path = default_db_path(db)
    if not os.path.exists(path):  # os.path: a name too long is no file, not an OSError
        raise UserError(
            f"{path}: no results database: run `fsmeter study run {study.slug}` first, or name one with --db"
        )
    if json_out is not None:
        check_output_path(json_out, "--json")
    view = build_study_view(study, path, campaign)
    console.print(summary_table(view))
    if verbose:
        console.print(verdict_table(view))
        for v in view.verdicts:
            t = evidence_table(view, v)
            if t is not None:
                console.print(t)
    if json_out is not None:
        import json

        from fsmeter.study.report import verdicts_json

        json_out.write_text(json.dumps(verdicts_json(view), indent=1) + "\n")
        console.print(f"verdicts: {json_out}")
    target = out or path.parent / f"{study.slug}-report.html"
    write_study_report(view, target)
    console.print(f"report: {target}")


def _two_runs(name, all_, db, db_b, campaign, campaign_b, what: str) -> list:
    """The studies to compare and, per study, its verdicts in run a and run b: [(slug, verdicts a, verdicts b)].
    With --all, a study absent from both stores is left out (said so); absent from one is an error."""
    from fsmeter.store import default_db_path
    from fsmeter.study.model import load_study, study_paths
    from fsmeter.study.report import load_run

    if all_ == (name is not None):
        raise UserError(f"study {what}: name one study, or give --all (fsmeter study list shows them)")
    if all_ and (campaign is not None or campaign_b is not None):
        raise UserError(f"study {what}: --campaign and --campaign-b name one study's campaigns: name the study")
    path_a = default_db_path(db)
    path_b = default_db_path(db_b) if db_b is not None else path_a
    for p, opt in ((path_a, "--db"), (path_b, "--db-b")):
        if not os.path.exists(p):
            raise UserError(f"{opt} {p}: no results database")
    if path_a.resolve() == path_b.resolve() and (campaign is None or campaign_b is None or campaign == campaign_b):
        raise UserError(
            f"study {what}: run a and run b are the same: name a second store with --db-b, or two campaigns "
            "of one store with --campaign and --campaign-b"
        )
    console = Console(stderr=True)
    out = []
    for slug in list(study_paths()) if all_ else [name]:
        study = load_study(slug)
        runs = []
        for path, camp in ((path_a, campaign), (path_b, campaign_b)):
            try:
                runs.append(load_run(study, path, camp)[3])
            except UserError as exc:
                if not all_ or "no campaign of study" not in exc.message:
                    raise
                runs.append(None)
        if runs[0] is None and runs[1] is None:
            console.print(f"[dim]{slug}: in neither store, left out[/]")
            continue
        if None in runs:
            gone = path_a if runs[0] is None else path_b
            raise UserError(f"{gone}: no campaign of study {slug}, which the other store has: run it there too")
        out.append((slug, runs[0], runs[1]))
    return out


_TWO_RUN_OPTS = {
    "db": typer.Option(None, "--db", help="the store of run a (" + DB_HELP + ")"),
    "db_b": typer.Option(None, "--db-b", help="the store of run b (default: --db, with --campaign-b)"),
    "campaign": typer.Option(None, "--campaign", help="run a's campaign id (default: every campaign of the study)"),
    "campaign_b": typer.Option(None, "--campaign-b", help="run b's campaign id (default: every campaign of the study)"),
}


def compare_runs(
    name: str | None = typer.Argument(None, help="a study from `fsmeter study list`"),
    all_: bool = typer.Option(False, "--all", help="every study the two stores hold"),
    db: Path | None = _TWO_RUN_OPTS["db"],
    db_b: Path | None = _TWO_RUN_OPTS["db_b"],
    campaign: str | None = _TWO_RUN_OPTS["campaign"],
    campaign_b: str | None = _TWO_RUN_OPTS["campaign_b"],
    json_out: Path | None = typer.Option(None, "--json", help="also write the changed claims to this JSON file"),
) -> None:
    """The claims whose verdict word changed between two runs of a study, with both words and intervals.

    Exit status 3 when a claim flipped between two decisive words (reproduced, reversed, not
    reproduced): the edge rule is there to make that rare; a change through "inconclusive" is not a flip."""
    import json

    from fsmeter.study.repeat import word_changes, word_pairs

    if json_out is not None:
        check_output_path(json_out, "--json")
    console = Console()
    changes, claims = [], 0
    for slug, va, vb in _two_runs(name, all_, db, db_b, campaign, campaign_b, "compare-runs"):
        claims += len(va)
        changes += word_changes(slug, va, vb)
    t = Table(title="claims whose word changed between run a and run b", show_lines=True)
    for col in ("study", "claim", "run a", "run b", "intervals a", "intervals b"):
        t.add_column(col, overflow="fold")
    for c in changes:
        style = "bold red" if c.flip else "yellow"
        t.add_row(
            c.study,
            c.claim,
            f"[{style}]{c.word_a}[/]",
            f"[{style}]{c.word_b}[/]",
            "\n".join(c.intervals_a[:6]) or "-",
            "\n".join(c.intervals_b[:6]) or "-",
        )
    if changes:
        console.print(t)
    split = word_pairs(changes)
    console.print(
        f"{len(changes)} of {claims} claim(s) changed their word: {split['flips']} flip(s) between decisive words, "
        f"{split['via inconclusive']} through inconclusive, {split['other']} other (a gate)"
    )
    if json_out is not None:
        json_out.write_text(json.dumps([c.as_json() for c in changes], indent=1) + "\n")
        console.print(f"changes: {json_out}")
    if split["flips"]:
        raise typer.Exit(3)


def calibrate(
    name: str | None = typer.Argument(None, help="a study from `fsmeter study list`"),
    all_: bool = typer.Option(False, "--all", help="every study the two stores hold (one figure over all)"),
    db: Path | None = _TWO_RUN_OPTS["db"],
    db_b: Path | None = _TWO_RUN_OPTS["db_b"],
    campaign: str | None = _TWO_RUN_OPTS["campaign"],
    campaign_b: str | None = _TWO_RUN_OPTS["campaign_b"],
    json_out: Path | None = typer.Option(None, "--json", help="also write every comparison's two effects to JSON"),
) -> None:
    """Measure the between-run wobble from two back-to-back runs of the same study(ies) on one machine.

    Prints every comparison's effect in both runs, their difference and its z (the difference over
    what the two standard errors explain), and the between-run wobble B they imply (method of
    moments, with a cluster-bootstrap upper bound): the figure for `between_run_pct` in a study's
    \\[rules], which the edge rule uses. The claims a gate made inconclusive in either run (a busy
    machine, a disk model's late replies, a phase too short) are left out and listed."""
    import json
    import math

    from fsmeter.study.repeat import between_run, case_diffs, gated_claims

    if json_out is not None:
        check_output_path(json_out, "--json")
    console = Console()
    diffs = []
    left_out: list[tuple[str, str, list[str]]] = []
    for slug, va, vb in _two_runs(name, all_, db, db_b, campaign, campaign_b, "calibrate"):
        gated = gated_claims(va, vb)
        left_out += [(slug, claim, why) for claim, why in gated.items()]
        diffs += case_diffs(slug, va, vb, leave_out=set(gated))
    t = Table(title="every comparison's effect in run a and run b (% of the reference, or 100 ln ratio)")
    for col in ("study", "claim", "case", "comparison", "a", "se a", "b", "se b", "b - a", "z"):
        t.add_column(col, overflow="fold")
    for c in diffs:
        z = c.z
        t.add_row(
            c.study,
            c.claim,
            c.case or "-",
            f"{c.a} vs {c.b}" + (" (ratio)" if c.unit == "ratio" else ""),
            f"{c.effect_a:+.2f}",
            f"{c.se_a:.2f}",
            f"{c.effect_b:+.2f}",
            f"{c.se_b:.2f}",
            f"{c.diff:+.2f}",
            ("[bold]" if math.isfinite(z) and abs(z) > 3 else "") + (f"{z:+.1f}" if math.isfinite(z) else "inf"),
        )
    console.print(t)
    for slug, claim, why in left_out:
        console.print(f"left out: {slug} {claim}, gated in run a or b ({'; '.join(why)})", markup=False)
    b = between_run(diffs)
    if b is None:
        raise UserError(
            "study calibrate: no comparison has an effect and a standard error in both runs"
            + (f" outside the {len(left_out)} gated claim(s) left out" if left_out else "")
        )
    console.print(
        f"{b.comparisons} comparisons in {b.claims} claims: root mean square of the differences {b.rms_diff:.2f} "
        f"points, of what sampling explains {b.rms_sampling:.2f}\n"
        f"between-run wobble B = {b.estimate_pct:.2f} percentage points (method of moments); "
        f"{b.upper_pct:.2f} at the 90% upper bound (cluster bootstrap over claims)\n"
        f"for the \\[rules] of the studies: between_run_pct = {b.upper_pct:.2f} and between_run_source = "
        '"fsmeter study calibrate: two back-to-back runs on <machine>, <date>: 90% upper bound"'
    )
    if b.claims < 3:
        console.print(
            f"the upper bound rests on {b.claims} claim(s): resampling fewer than 3 claims says little about the "
            "spread; two more runs, or a study with more testable claims, would"
        )
    if json_out is not None:
        doc = {
            "between_run_pct": b.estimate_pct,
            "between_run_pct_upper90": b.upper_pct,
            "comparisons": [c.as_json() for c in diffs],
            "left_out": [{"study": s, "claim": c, "gates": why} for s, c, why in left_out],
        }
        json_out.write_text(json.dumps(doc, indent=1) + "\n")
        console.print(f"comparisons: {json_out}")


def register(app: typer.Typer) -> None:
    st = typer.Typer(
        help="Re-run a published filesystem study in one command and test its conclusions.", no_args_is_help=True
    )
    app.add_typer(st, name="study")
    st.command("list")(list_)
    st.command("run")(run)
    st.command("check")(check)
    st.command("report")(report)
    st.command("compare-runs")(compare_runs)
    st.command("calibrate")(calibrate)
