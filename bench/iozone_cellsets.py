#!/usr/bin/env python3
"""Run the real iozone for a few auto-mode grids and save its output as test data.

tests/families/iozone/test_grid.py compares fsmeter's cell set with the cells iozone itself printed, and
fsmeter's -R export layout with iozone's. Re-run after changing the grids here:

    python bench/iozone_cellsets.py            # builds iozone from source, writes tests/data/iozone/*.txt

The grids write only (-i 0) to stay fast, except `lourdas`, the seed study's whole command line.
They run in a temporary directory on /dev/shm when it exists (tmpfs), else under /tmp.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from iozone_peer import build_iozone, parse_cells  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "iozone"

GRIDS = {
    # -a's defaults up to 64 MiB: the crossover drops records under 64K for the 32M and 64M files.
    "default-g64m": "-a -i 0 -g 64m",
    # The Lourdas (2009) command line, whole (its -i 8 prints nothing in auto mode).
    "lourdas": "-a -n 4k -g 64m -i 0 -i 1 -i 2 -i 4 -i 6 -i 7 -i 8 -p -O -R",
    # Record bounds (-y, -q) switch the crossover off.
    "bounds-y-q": "-a -i 0 -n 8k -g 64m -y 8k -q 256k -R",
    "min-record-y": "-a -i 0 -n 16m -g 128m -y 16k",
    # -z switches it off too.
    "no-crossover-z": "-a -z -i 0 -n 8m -g 64m",
    # Only large files: every row crossed over.
    "large-files": "-a -i 0 -n 32m -g 256m -R",
    # Small files, with the -R report.
    "small-n-g": "-a -i 0 -n 128k -g 2m -R",
}


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="fsmeter-iozone-") as scratch:
        record(build_iozone(Path(scratch)))


def record(binary: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    base = "/dev/shm" if Path("/dev/shm").is_dir() else None
    for name, args in GRIDS.items():
        with tempfile.TemporaryDirectory(dir=base) as tmp:
            cmd = [str(binary), *shlex.split(args), "-f", f"{tmp}/iozone.tmp"]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=tmp).stdout
        cells = parse_cells(out)
        if not cells:
            raise SystemExit(f"{name}: no cell in iozone's output")
        # Keep the arguments without the scratch path, so the data does not depend on where it ran.
        text = f"# iozone {args}\n" + out.replace(f"{tmp}/iozone.tmp", "iozone.tmp")
        (OUT / f"{name}.txt").write_text(text)
        print(f"{name}: {len(cells)} cells -> {OUT / (name + '.txt')}")


if __name__ == "__main__":
    main()
