"""The real iozone, built from source in a scratch directory, for bench/bench_iozone.py and for
bench/iozone_cellsets.py (which records iozone's own output as test data).

iozone is not a Debian package. Its source is taken from a git mirror (a bare repository):
$IOZONE_GIT, else bench/peers/iozone.git (a bare clone of klazarsk/iozone-rh); `git archive HEAD src` is unpacked in
a temporary directory and built with `make linux-AMD64` (or linux on other machines).
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import tempfile
from pathlib import Path

DEFAULT_GIT = str(Path(__file__).resolve().parent / "peers" / "iozone.git")
_CELL_LINE = re.compile(r"^\s+(\d+)\s+(\d+)(\s+\d+)*\s*$")


def build_iozone(scratch: Path | None = None) -> Path:
    """Build iozone in ``scratch`` (a new temporary directory by default); returns the binary."""
    git = os.environ.get("IOZONE_GIT", DEFAULT_GIT)
    if not Path(git).exists():
        raise RuntimeError(f"iozone source not found at {git}: set IOZONE_GIT to a git directory of iozone")
    scratch = Path(scratch or tempfile.mkdtemp(prefix="fsmeter-iozone-"))
    archive = subprocess.run(
        ["git", f"--git-dir={git}", "archive", "HEAD", "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive, check=True)
    target = "linux-AMD64" if platform.machine() == "x86_64" else "linux"
    subprocess.run(["make", target], cwd=scratch / "src", check=True, capture_output=True)
    binary = scratch / "src" / "iozone"
    if not binary.exists():
        raise RuntimeError(f"iozone did not build in {scratch}/src")
    return binary


def parse_cells(output: str) -> list[tuple[int, int]]:
    """The (file KiB, record KiB) of each line of iozone's per-cell table, in order."""
    cells = []
    in_table = False
    for line in output.splitlines():
        if line.strip().startswith("kB") and "reclen" in line:
            in_table = True
            continue
        if in_table:
            if line.startswith("iozone test complete") or line.startswith("Excel output"):
                break
            m = _CELL_LINE.match(line)
            if m:
                cells.append((int(m.group(1)), int(m.group(2))))
    return cells


def parse_excel(output: str) -> dict:
    """iozone's -R reports: title -> (header record sizes KiB, [(file KiB, [values])])."""
    reports, title, rows, header = {}, None, [], []
    for line in output.splitlines():
        s = line.strip()
        if s.startswith('"') and s.endswith('report"'):
            if title:
                reports[title] = (header, rows)
            title, rows, header = s.strip('"'), [], []
        elif title and s.startswith('"') and not header:
            header = [int(x) for x in re.findall(r'"(\d+)"', s)]
        elif title and s.startswith('"'):
            m = re.match(r'"(\d+)"\s+(.*)$', s)
            if m:
                rows.append((int(m.group(1)), [int(x) for x in m.group(2).split()]))
    if title:
        reports[title] = (header, rows)
    return reports
