"""fio's `include FILE` lines: the named file's option lines read in place of the line, as fio reads them.

fio looks for FILE as given and then next to the including file; fsmeter looks only in the job file's folder
(and below it), so that a job file cannot make fsmeter read what its user did not hand in. An included file
holds options only (fio refuses a section in it), may include further files, and a file that includes itself
(directly or through others) is refused, as is a chain deeper or longer than any real job file needs.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fsmeter.errors import UserError
from fsmeter.textfile import read_text

#: How deep includes may nest, and how many included files one job file may read in all.
MAX_DEPTH = 16
MAX_FILES = 256


@dataclass(frozen=True)
class Line:
    #: The line number in the job file itself (of the include line, for an included line): options are
    #: ordered and named by it.
    n: int
    raw: str
    #: Where the line is, for error messages: "jobs.fio line 7" or "inc.fio line 3 (included at jobs.fio line 7)".
    loc: str
    #: True for a line read from an included file.
    included: bool = False


def include_target(line: str) -> str | None:
    """The file an `include FILE` line names (None when the line is not an include)."""
    s = line.strip()
    if s == "include" or s.startswith(("include ", "include\t")):
        return s[len("include") :].strip()
    return None


def expand(text: str, where: str, base: Path | None) -> Iterator[Line]:
    """The job file's lines with each include line replaced by the included file's lines (recursively)."""
    count = [0]
    yield from _expand(text, where, base, None, ((str(Path(where).resolve()), where),), count)


def _expand(text: str, where: str, base: Path | None, top: int | None, chain: tuple, count: list) -> Iterator[Line]:
    for k, raw in enumerate(text.splitlines(), 1):
        n = k if top is None else top
        loc = f"{where} line {k}" if top is None else f"{where} line {k} (included at {chain[0][1]} line {top})"
        target = include_target(_uncommented(raw))
        if target is None:
            yield Line(n, raw, loc, top is not None)
            continue
        path = _resolve(target, base, loc)
        key = str(path)
        if any(key == c[0] for c in chain):
            raise UserError(f"{loc}: include {target}: this file is already being included (a cycle): remove the line")
        if len(chain) > MAX_DEPTH:
            raise UserError(f"{loc}: include {target}: includes nest more than {MAX_DEPTH} deep: flatten them")
        count[0] += 1
        if count[0] > MAX_FILES:
            raise UserError(f"{loc}: include {target}: more than {MAX_FILES} included files in all: flatten them")
        inner = read_text(path, "included job file")
        yield from _expand(inner, target, base, n, (*chain, (key, target)), count)


def _uncommented(raw: str) -> str:
    s = raw.strip()
    return "" if not s or s[0] in "#;" else s


def _resolve(target: str, base: Path | None, loc: str) -> Path:
    """The included file, which must be a regular file in the job file's folder (or below it)."""
    if not target:
        raise UserError(f"{loc}: include names no file: write include FILE (a path relative to the job file)")
    if base is None:
        raise UserError(f"{loc}: include {target}: a job file read from text has no folder to include from")
    root = base.resolve()
    path = (root / target).resolve()
    if not path.is_relative_to(root):
        raise UserError(
            f"{loc}: include {target}: the file is outside the job file's folder {root}: fsmeter includes only "
            "files in that folder or below it; copy it there"
        )
    try:
        st = os.stat(path)
    except OSError as exc:
        raise UserError(f"{loc}: include {target}: cannot read it ({exc.strerror or exc}): check the path") from None
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{loc}: include {target}: not a regular file: name a job file")
    return path
