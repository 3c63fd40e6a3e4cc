"""The Python floor pyproject promises is the one the code is written for."""

from __future__ import annotations

import ast
import re
import tomllib

from repo_paths import ROOT

PACKAGE = ROOT / "python" / "fsmeter"


def _floor() -> tuple[int, int]:
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    m = re.fullmatch(r">=\s*3\.(\d+)", spec.strip())
    assert m, f"requires-python should be a plain floor, got {spec!r}"
    return (3, int(m.group(1)))


def test_the_floor_is_3_11_where_tomllib_is_in_the_standard_library():
    assert _floor() == (3, 11)
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not [d for d in deps if d.startswith("tomli") and not d.startswith("tomli-w")], deps


def test_every_module_parses_with_the_floors_grammar_and_needs_no_backport():
    floor = _floor()
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        tree = ast.parse(text, filename=str(path), feature_version=floor)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert "tomli" not in names, f"{path.relative_to(ROOT)}: tomllib is standard from 3.11"
