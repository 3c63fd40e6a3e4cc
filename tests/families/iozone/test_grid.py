"""The iozone grid against the real iozone's own output (tests/data/iozone, recorded by
bench/iozone_cellsets.py): the cell set of `iozone -a` for several -n/-g/-y/-q/-z grids, and the
layout of iozone's -R report and per-cell table, which fsmeter's export reproduces."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest
from fsmeter.families.iozone import IozoneParams
from fsmeter.report.iozone import console_table, excel_reports, iozone_text
from repo_paths import ROOT

DATA = ROOT / "tests" / "data" / "iozone"
sys.path.insert(0, str(ROOT / "bench"))
from iozone_peer import parse_cells, parse_excel  # noqa: E402

FILES = sorted(DATA.glob("*.txt"))
TITLE_TO_COL = {
    "Writer report": "write",
    "Re-writer report": "rewrite",
    "Reader report": "read",
    "Re-Reader report": "reread",
    "Random read report": "random_read",
    "Random write report": "random_write",
    "Backward read report": "bkwd_read",
    "Record rewrite report": "record_rewrite",
    "Stride read report": "stride_read",
    "Fwrite report": "fwrite",
    "Re-Fwrite report": "frewrite",
    "Fread report": "fread",
    "Re-Fread report": "freread",
}


def _size(arg: str) -> str:
    """iozone's size argument (KiB unless suffixed k/m/g) as an fsmeter size."""
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", arg)
    assert m, arg
    return m.group(1) + (m.group(2).upper() or "K")


def params_of(args: str) -> IozoneParams:
    """The fsmeter parameters of an iozone auto-mode command line."""
    kw, tests = {}, []
    it = iter(shlex.split(args))
    for a in it:
        if a in ("-a", "-R"):
            continue
        if a == "-az":
            kw["crossover"] = False
        elif a == "-z":
            kw["crossover"] = False
        elif a == "-i":
            tests.append(int(next(it)))
        elif a in ("-n", "-g", "-y", "-q"):
            field = {"-n": "min_file_size", "-g": "max_file_size", "-y": "min_record_size", "-q": "max_record_size"}[a]
            kw[field] = _size(next(it))
        elif a == "-p":
            kw["purge"] = True
        elif a == "-O":
            kw["ops"] = True
        else:
            raise AssertionError(f"option {a} not mapped")
    if tests:
        kw["tests"] = tests
    return IozoneParams(**kw)


def _load(path: Path):
    text = path.read_text()
    first, out = text.split("\n", 1)
    assert first.startswith("# iozone ")
    return first[len("# iozone ") :], out


def test_the_data_covers_the_rules():
    names = {p.stem for p in FILES}
    assert {"default-g64m", "lourdas", "bounds-y-q", "no-crossover-z", "large-files", "small-n-g"} <= names


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_cell_set_equals_iozones_own(path):
    args, out = _load(path)
    theirs = parse_cells(out)
    assert theirs, "iozone printed no cell"
    ours = [(f // 1024, r // 1024) for f, r in params_of(args).cells()]
    assert ours == theirs


def test_the_crossover_is_in_the_data():
    """Guard against data that could not tell the rules apart: iozone dropped small records above 16M."""
    _, out = _load(DATA / "default-g64m.txt")
    cells = parse_cells(out)
    assert (16384, 4) in cells and (32768, 4) not in cells and (32768, 64) in cells
    _, out = _load(DATA / "no-crossover-z.txt")
    assert (65536, 4) in parse_cells(out)


@pytest.mark.parametrize("path", [p for p in FILES if "Excel output is below" in p.read_text()], ids=lambda p: p.stem)
def test_excel_report_layout_is_iozones(path):
    """Fed iozone's own numbers, fsmeter writes iozone's -R section byte for byte."""
    args, out = _load(path)
    p = params_of(args)
    reports = parse_excel(out)
    grid = {}
    cells = p.cells()
    by_file = {}
    for f, r in cells:
        by_file.setdefault(f // 1024, []).append(r)
    for title, (_, rows) in reports.items():
        col = TITLE_TO_COL[title]
        g = grid.setdefault(col, {})
        for fkb, vals in rows:
            recs = by_file[fkb]
            for r, v in zip(recs, vals[len(vals) - len(recs) :]):
                g[(fkb * 1024, r)] = float(v)
    # iozone -a -i 8 prints no mix report; fsmeter's mix column stays out of this comparison.
    grid.pop("mix", None)
    block = out[out.index("Excel output is below:") :]
    block = block[: block.index("iozone test complete")] if "iozone test complete" in block else block
    assert excel_reports(p, grid).rstrip("\n").splitlines() == block.rstrip("\n").splitlines()


def test_console_table_reads_like_iozones_for_the_plot_scripts():
    """iozone's plot scripts (gengnuplot.sh, report.pl) take field 1 = kB, 2 = reclen, 3.. = the
    columns in iozone's order: the table fsmeter prints and exports keeps those positions."""
    p = IozoneParams(max_file_size="1M")
    cols = [
        "write",
        "rewrite",
        "read",
        "reread",
        "random_read",
        "random_write",
        "bkwd_read",
        "record_rewrite",
        "stride_read",
        "fwrite",
        "frewrite",
        "fread",
        "freread",
    ]
    grid = {c: {cell: float(100 * i + 1) for cell in p.cells()} for i, c in enumerate(cols)}
    text = console_table(p, grid)
    assert parse_cells(text) == [(f // 1024, r // 1024) for f, r in p.cells()]
    rows = [ln.split() for ln in text.splitlines() if re.match(r"^\s+\d", ln)]
    for fields in rows:
        assert [int(x) for x in fields[2:]] == [100 * i + 1 for i in range(len(cols))]
    full = iozone_text(p, grid)
    assert full.index("kB") < full.index("Excel output is below:")
