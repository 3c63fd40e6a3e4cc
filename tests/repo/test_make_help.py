"""`make help` lists every target of the Makefile, each with its one line."""

from __future__ import annotations

import re
import subprocess

from repo_paths import ROOT


def _phony() -> set[str]:
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    lines = [line for line in text.splitlines() if line.startswith(".PHONY:")]
    return {name for line in lines for name in line.split(":", 1)[1].split()}


def test_make_help_lists_every_target_once_with_a_line():
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    rows = [re.match(r"^  (\S+)\s+(\S.*)$", line) for line in out.splitlines()]
    assert all(rows), f"a line of make help is not `  target  what it does`: {out!r}"
    names = [row.group(1) for row in rows if row]
    assert len(names) == len(set(names)), f"a target listed twice: {names}"
    assert set(names) == _phony(), (
        f"make help against .PHONY: missing {_phony() - set(names)}, extra {set(names) - _phony()}"
    )
    assert {"help", "check", "test", "lint", "build"} <= set(names)
