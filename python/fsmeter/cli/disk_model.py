"""`fsmeter disk-model list|show|calibrate`: the modelled disks a campaign or a run can put a filesystem on."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from fsmeter.cli._runlock import no_wait_option
from fsmeter.errors import UserError


def _num(v: float | None, unit: str = "") -> str:
    if v is None:
        return "-"
    return f"{v:,.2f}{(' ' + unit) if unit else ''}"


def _print_profile(con: Console, p, fig: dict, exp: dict) -> None:
    """`disk-model show`: the drive, the model's derived figures, what calibration expects, the sources."""
    con.print(f"[bold]{p.name}[/]: {p.drive} ({p.year}, {p.interface})", highlight=False)
    con.print(p.description, highlight=False)
    if p.stand_in_for:
        con.print(f"[yellow]stand-in:[/] {p.stand_in_for}", highlight=False)
    con.print(
        f"capacity {fig['capacity_bytes'] / 1e9:,.1f} GB ({fig['capacity_sectors']:,} sectors), "
        f"{fig['surfaces']} surfaces, {fig['cylinders']:,} cylinders in {len(fig['zones'])} zones, "
        f"{60e3 / fig['revolution_ms']:,.0f} rpm ({fig['revolution_ms']:.3f} ms a turn); "
        f"write cache {'on' if fig['write_cache'] else 'off'}; queue {fig['queue']['policy']} "
        f"(depth {fig['queue']['depth']})",
        highlight=False,
    )
    s = fig["seek"]
    con.print(
        f"seek ({'measured table' if s['kind'] == 'table' else 'three-point curve'}): track to track "
        f"{s['track_to_track_ms']:.2f} ms, average {s['average_ms']:.2f} ms over cylinder pairs "
        f"({s['random_block_ms']:.2f} ms between random blocks), full stroke {s['full_stroke_ms']:.2f} ms",
        highlight=False,
    )
    z0, zn = fig["zones"][0], fig["zones"][-1]
    con.print(
        f"media rate: outer zone {z0['track_mb_s']:.1f} MB/s a track, {fig['outer_sustained_mb_s']:.1f} MB/s "
        f"sustained; inner zone {zn['track_mb_s']:.1f} and {fig['inner_sustained_mb_s']:.1f} MB/s",
        highlight=False,
    )
    if p.datasheet is not None:
        ds = {k: v for k, v in p.datasheet.model_dump(exclude={"source", "field_sources"}).items() if v is not None}
        con.print("published figures: " + ", ".join(f"{k} {v:,}" for k, v in ds.items()), highlight=False)
    t = Table(title="what calibration expects (fsmeter disk-model calibrate)")
    for col in ("figure", "expected", "from"):
        t.add_column(col, overflow="fold")
    for k, v in exp.items():
        t.add_row(k, _num(v["expected"], v["unit"]), v["basis"])
    con.print(t)
    src = Table(title="sources")
    src.add_column("key")
    src.add_column("source", overflow="fold")
    for k, v in p.sources.items():
        src.add_row(k, v)
    con.print(src)
    assumed = p.assumptions()
    if assumed:
        con.print(f"[yellow]{len(assumed)} figures are assumptions, not from a source:[/]")
        for a in assumed:
            con.print(f"  {a.split(':', 1)[0]}", highlight=False)


def register(app: typer.Typer) -> None:
    dm = typer.Typer(
        help="Disk models: block devices served with the timing of a paper's disk (seek, rotation, zones, "
        "buffer, write cache), for campaigns (target kind = 'disk-model') and runs (--disk-model).",
        no_args_is_help=True,
    )
    app.add_typer(dm, name="disk-model")

    @dm.command("list")
    def list_() -> None:
        """The disk-model profiles, with the studies whose disk each is (or stands in for)."""
        from fsmeter.diskmodel.profiles import load_profile, profile_names

        t = Table(title="disk models (fsmeter disk-model show NAME)")
        for col in ("profile", "drive", "year", "studies", "kind", "assumed figures"):
            t.add_column(col, overflow="fold")
        for name in profile_names():
            p = load_profile(name)
            t.add_row(
                name,
                p.drive,
                str(p.year),
                ", ".join(p.studies) or "-",
                "stand-in" if p.stand_in_for else "the paper's disk",
                str(len(p.assumptions())),
            )
        Console().print(t)

    @dm.command("show")
    def show(
        name: str = typer.Argument(..., help="a profile (fsmeter disk-model list) or a profile .toml file"),
        json_out: Path | None = typer.Option(None, "--json", help="also write the model's derived figures as JSON"),
    ) -> None:
        """A profile: the drive, its sources, the model's derived figures, and what calibration expects."""
        from fsmeter.diskmodel.profiles import describe, expected_figures, load_profile
        from fsmeter.userpaths import check_output_path

        if json_out is not None:
            check_output_path(json_out, "--json")
        p = load_profile(name)
        fig = describe(p)
        exp = expected_figures(p, fig)
        _print_profile(Console(), p, fig, exp)
        if json_out is not None:
            Path(json_out).write_text(
                json.dumps({"profile": p.model_dump(), "figures": fig, "expected": exp}, indent=1)
            )

    @dm.command("calibrate")
    def calibrate_cmd(
        name: str = typer.Argument(..., help="a profile (fsmeter disk-model list) or a profile .toml file"),
        json_out: Path | None = typer.Option(
            None,
            "--json",
            help='write {"figures": {NAME: {"measured", "expected", "unit", ...}}, "lateness_p99_ms": ...} here',
        ),
        quick: bool = typer.Option(
            False, "--quick", help="a quarter of the reads (a few seconds; figures less precise)"
        ),
        no_wait: bool = no_wait_option(),
    ) -> None:
        """Read the model's raw device (random 4 KiB, sequential 1 MiB outer and inner, short and
        full-stroke seeks) and print each figure beside the one its sources imply, with the
        replies' lateness (this machine's noise). Needs root."""
        from fsmeter.calibration import RANDOM_READS, SEEK_PAIRS, SEQ_BYTES, calibrate
        from fsmeter.diskmodel.profiles import load_profile
        from fsmeter.runlock import measuring
        from fsmeter.userpaths import check_output_path

        load_profile(name)  # a bad name or file: one line before anything else
        if json_out is not None:
            check_output_path(json_out, "--json")
        if os.geteuid() != 0 or not os.path.exists("/dev/loop-control"):
            raise UserError(
                "calibrate serves the model through FUSE under a loop device: run as root "
                "(sudo fsmeter disk-model calibrate ...)",
                exit_code=1,
            )
        con = Console()
        div = 4 if quick else 1
        with measuring(wait=not no_wait):
            doc = calibrate(
                name,
                random_reads=RANDOM_READS // div,
                seq_bytes=SEQ_BYTES // div,
                seek_pairs=SEEK_PAIRS // div,
                say=lambda m: con.print(f"  {m}", highlight=False),
            )
        t = Table(title=f"calibration of {doc['profile']} ({doc['drive']})")
        for col in ("figure", "measured", "modelled", "expected", "measured / expected"):
            t.add_column(col, justify="right" if col != "figure" else "left")
        for k, v in doc["figures"].items():
            ratio = v["measured"] / v["expected"] if v.get("measured") and v.get("expected") else None
            t.add_row(
                k,
                _num(v.get("measured"), v["unit"]),
                _num(v.get("modelled"), v["unit"]),
                _num(v.get("expected"), v["unit"]),
                "-" if ratio is None else f"{ratio:.1%}",
            )
        con.print(t)
        con.print(
            f"reply lateness (this machine's scheduling): p50 {_num(doc['lateness_p50_ms'], 'ms')}, "
            f"p99 {_num(doc['lateness_p99_ms'], 'ms')}. measured: this process's wall clock (lateness "
            "included); modelled: the daemon's own account of the same requests.",
            highlight=False,
        )
        if json_out is not None:
            text = json.dumps(doc, indent=1)
            if str(json_out) == "-":
                print(text)
            else:
                Path(json_out).write_text(text + "\n")
