"""The layering rule of HACKING.md, checked: no module of `python/fsmeter` imports one of a higher level,
and nothing but the CLI and `__main__` imports the CLI.

The levels are HACKING.md's table (its rows `| N | `a`, `b.c` | what they hold |`), read here, so the rule
has one written form. Every import counts, wherever it is (module level, inside a function, under
`if TYPE_CHECKING:`); relative imports are resolved against the importing module's package, and
`from a import b` is an import of the module `a.b` when that module exists, of `a` otherwise. A module
takes the level of the longest table name it lies under (`guest.kernels` before `guest`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from repo_paths import ROOT

# A row of HACKING's levels table: `| 3 | `provision`, `store` | what they hold |`.
_ROW = re.compile(r"^\|\s*(\d+)\s*\|([^|]*)\|")
_NAME = re.compile(r"`([A-Za-z_][\w.]*)`")
TABLE_HEADER = "| level | modules | what they hold |"


def levels_from_hacking(text: str, package: str) -> dict[str, int]:
    """Module name (relative to the package, dotted; "" for the package itself) -> level, from the table
    under TABLE_HEADER."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == TABLE_HEADER)
    except StopIteration:
        raise ValueError(f"no levels table (header {TABLE_HEADER!r})") from None
    levels: dict[str, int] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        row = _ROW.match(line)
        if row is None:
            raise ValueError(f"levels table: row without a level number: {line!r}")
        for name in _NAME.findall(row.group(2)):
            name = "" if name == package else name
            if name in levels:
                raise ValueError(f"levels table: {name} is listed twice")
            levels[name] = int(row.group(1))
    if not levels:
        raise ValueError("levels table: no rows")
    return levels


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted, relative to the package ("" for the package itself)
    imported: str  # the imported module, same form
    line: int


def module_name(path: Path, package_dir: Path) -> str:
    parts = list(path.relative_to(package_dir).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(package_dir: Path) -> dict[str, Path]:
    return {module_name(p, package_dir): p for p in sorted(package_dir.rglob("*.py"))}


def _known(package_dir: Path) -> set[str]:
    """The modules an import may name: the Python files, and the compiled ones by their stubs (`_engine.pyi`)."""
    return set(_modules(package_dir)) | {module_name(p, package_dir) for p in package_dir.rglob("*.pyi")}


def _resolve(name: str, known: set[str]) -> str:
    """The deepest known module that `name` (dotted, relative to the package) names or lies in."""
    parts = name.split(".") if name else []
    while parts and ".".join(parts) not in known:
        parts.pop()
    return ".".join(parts)


def imports(package_dir: Path, package: str) -> list[Import]:
    """Every import of one of the package's own modules, by every module of the package."""
    mods = _modules(package_dir)
    known = _known(package_dir)
    found: list[Import] = []
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        here = name.split(".") if name else []
        base_pkg = here if is_pkg else here[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = base_pkg[: len(base_pkg) - (node.level - 1)]
                    mod = ".".join([package, *anchor, *([node.module] if node.module else [])])
                else:
                    mod = node.module or ""
                targets = [f"{mod}.{a.name}" for a in node.names if a.name != "*"] or [mod]
            for target in targets:
                if target != package and not target.startswith(package + "."):
                    continue
                rel = target[len(package) + 1 :]
                found.append(Import(name, _resolve(rel, known), node.lineno))
    return found


def level_of(module: str, levels: dict[str, int]) -> int | None:
    """The level of the longest table name the module lies under ("" is the package itself only)."""
    if not module:
        return levels.get("")
    parts = module.split(".")
    while parts:
        key = ".".join(parts)
        if key in levels:
            return levels[key]
        parts.pop()
    return None


def unlisted(package_dir: Path, levels: dict[str, int]) -> list[str]:
    """Modules the table gives no level."""
    return [m for m in _modules(package_dir) if m and level_of(m, levels) is None]


def violations(
    package_dir: Path,
    package: str,
    levels: dict[str, int],
    top: str = "cli",
    top_importers: tuple[str, ...] = ("__main__",),
) -> dict[tuple[str, str], str]:
    """(importer, imported) -> `module -> imported (level a -> level b)` for each upward import, and for
    each import of `top` (the CLI) by a module outside it and not in `top_importers`; the first import
    of each pair of modules (full dotted names)."""
    out: dict[tuple[str, str], str] = {}
    for imp in imports(package_dir, package):
        src, dst = imp.module, imp.imported
        if src == dst or (dst and src.startswith(dst + ".")):
            continue  # a module and its own package
        full_src = f"{package}.{src}" if src else package
        full_dst = f"{package}.{dst}" if dst else package
        in_top = src == top or src.startswith(top + ".")
        if (dst == top or dst.startswith(top + ".")) and not in_top and src not in top_importers:
            out.setdefault((full_src, full_dst), f"{full_src} -> {full_dst} (line {imp.line}: only the CLI imports it)")
            continue
        a, b = level_of(src, levels), level_of(dst, levels)
        if a is None or b is None:
            continue  # reported by unlisted()
        if b > a:
            out.setdefault((full_src, full_dst), f"{full_src} -> {full_dst} (level {a} -> level {b}, line {imp.line})")
    return out


PACKAGE = "fsmeter"
PACKAGE_DIR = ROOT / "python" / PACKAGE

#: Imports the rule lets upward, each with its reason: (importer, imported) -> why. Nothing is to be added
#: here that can be moved down a level or passed in instead.
EXEMPT = {
    ("fsmeter", "fsmeter.errors"): "the package re-exports UserError for users (`from fsmeter import UserError`); "
    "every module of the package has imported the package first anyway",
    ("fsmeter", "fsmeter.store"): "the package's lazy `fsmeter.load`, the store's reader for users, imported on "
    "first use of the attribute only",
}


def _levels() -> dict[str, int]:
    return levels_from_hacking((ROOT / "HACKING.md").read_text(), PACKAGE)


def test_every_module_has_a_level():
    missing = unlisted(PACKAGE_DIR, _levels())
    assert not missing, f"modules without a level in HACKING.md's levels table (add them): {missing}"


def test_no_module_imports_a_higher_level_or_the_cli():
    found = violations(PACKAGE_DIR, PACKAGE, _levels())
    bad = [msg for pair, msg in sorted(found.items()) if pair not in EXEMPT]
    assert not bad, "imports against the levels of HACKING.md (move what is shared down a level):\n" + "\n".join(bad)
    stale = sorted(set(EXEMPT) - set(found))
    assert not stale, f"exemptions no longer needed (remove them from EXEMPT): {stale}"


def test_the_table_names_existing_modules():
    known = _known(PACKAGE_DIR) | {""}
    ghosts = sorted(name for name in _levels() if name not in known)
    assert not ghosts, f"HACKING.md's levels table names modules that do not exist: {ghosts}"


# The checker on a package made up for the test, where the answer is known.
_TABLE = f"""intro

{TABLE_HEADER}
|---|---|---|
| 0 | `pkg` | the package |
| 1 | `low`, `sub.low` | the bottom |
| 2 | `sub` | the middle |
| 3 | `cli`, `__main__` | the top |

after the table
"""


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for rel, text in {
        "__init__.py": "",
        "low.py": "",
        "sub/__init__.py": "",
        "sub/low.py": "",
        "sub/mid.py": "",
        "cli/__init__.py": "",
        "cli/run.py": "",
        "__main__.py": "",
        **files,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_checker_passes_a_package_that_keeps_the_rule(tmp_path):
    root = _package(
        tmp_path,
        {
            "sub/mid.py": "from pkg import low\nfrom . import low as sub_low\nfrom .low import x\nimport pkg.sub.low\n",
            "sub/low.py": "from ..low import y\n",  # sub.low is level 1 although sub is 2
            "cli/run.py": "from pkg.sub import mid\n",
            "__main__.py": "from pkg.cli import run\n",
        },
    )
    levels = levels_from_hacking(_TABLE, "pkg")
    assert levels == {"": 0, "low": 1, "sub.low": 1, "sub": 2, "cli": 3, "__main__": 3}
    assert unlisted(root, levels) == []
    assert violations(root, "pkg", levels) == {}


@pytest.mark.parametrize(
    ("where", "code", "expected"),
    [
        ("low.py", "import pkg.sub.mid\n", "pkg.low -> pkg.sub.mid (level 1 -> level 2, line 1)"),
        ("low.py", "def f():\n    from pkg.sub import mid\n", "pkg.low -> pkg.sub.mid (level 1 -> level 2, line 2)"),
        ("sub/low.py", "from . import mid\n", "pkg.sub.low -> pkg.sub.mid (level 1 -> level 2, line 1)"),
        ("sub/low.py", "from .mid import thing\n", "pkg.sub.low -> pkg.sub.mid (level 1 -> level 2, line 1)"),
        ("low.py", "from .sub import mid\n", "pkg.low -> pkg.sub.mid (level 1 -> level 2, line 1)"),
        ("low.py", "if True:\n    import pkg.sub\n", "pkg.low -> pkg.sub (level 1 -> level 2, line 2)"),
        (
            "sub/mid.py",
            "class A:\n    def m(self):\n        from pkg import cli\n",
            "pkg.sub.mid -> pkg.cli (line 3: only the CLI imports it)",
        ),
        (
            "sub/mid.py",
            "from pkg.cli.run import main\n",
            "pkg.sub.mid -> pkg.cli.run (line 1: only the CLI imports it)",
        ),
    ],
)
def test_the_checker_catches_a_planted_import(tmp_path, where, code, expected):
    root = _package(tmp_path, {where: code})
    assert list(violations(root, "pkg", levels_from_hacking(_TABLE, "pkg")).values()) == [expected]


def test_a_module_missing_from_the_table_is_named(tmp_path):
    root = _package(tmp_path, {"extra.py": ""})
    assert unlisted(root, levels_from_hacking(_TABLE, "pkg")) == ["extra"]


def test_a_table_that_cannot_be_read_is_refused():
    with pytest.raises(ValueError, match="no levels table"):
        levels_from_hacking("no table here", "pkg")
    with pytest.raises(ValueError, match="listed twice"):
        levels_from_hacking(_TABLE.replace("`sub` |", "`low` |"), "pkg")
    with pytest.raises(ValueError, match="without a level number"):
        levels_from_hacking(_TABLE.replace("| 2 |", "| two |"), "pkg")
