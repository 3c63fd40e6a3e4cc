"""Test files import nothing from each other. pytest imports them in importlib mode (pyproject.toml), so
that two folders may hold files of the same name; a test file is then not importable by its name, and an
import of one, even inside a test's body, fails only when that test runs. What tests share is a module
of tests/helpers."""

from __future__ import annotations

import ast

from repo_paths import ROOT

TESTS = ROOT / "tests"


def _imported_modules(path) -> list:
    """(line, module) for every import in the file, at any depth (a test's body included)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
    return out


def _test_module_imports(paths, root) -> list:
    bad = []
    for path in paths:
        for line, module in _imported_modules(path):
            if module.split(".")[0].startswith(("test_", "conftest")):
                bad.append(f"{path.relative_to(root)}:{line}: imports {module}")
    return bad


def test_no_test_file_imports_another():
    files = sorted(TESTS.rglob("*.py"))
    assert len(files) > 60
    bad = _test_module_imports(files, ROOT)
    assert not bad, "move what they share into a module of tests/helpers:\n" + "\n".join(bad)


def test_the_check_finds_an_import_inside_a_test(tmp_path):
    """The check can fail: imports of test files, at the top or inside a test, are caught; helpers are not."""
    f = tmp_path / "test_x.py"
    f.write_text(
        "import os\nfrom campaigns import fsm\n\n\ndef test_a():\n    from test_store import fill\n"
        "    import conftest\n"
    )
    assert _test_module_imports([f], tmp_path) == ["test_x.py:6: imports test_store", "test_x.py:7: imports conftest"]
