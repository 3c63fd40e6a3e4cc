"""Files the user names, treated as hostile: a text file handed in (campaign, workload TOML, fio job file,
CSV) is read as UTF-8 only, bounded in size, every failure one UserError naming the file (and the line of a
bad byte). (Output files are checked by fsmeter.userpaths, whose check is kept importable from here.)

Also the nesting bound for the TOML such a file holds: a table nested thousands deep is refused with one
line instead of reaching Python's recursion limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fsmeter.errors import UserError
from fsmeter.userpaths import check_output_path  # noqa: F401  (kept importable from here)

#: The largest input file read whole (campaigns, job files and CSV are kilobytes; 64 MiB leaves ample room).
MAX_TEXT_BYTES = 64 << 20
#: The deepest nesting of tables and arrays a TOML input may use (campaigns need 3: workloads[i].params.x).
MAX_TOML_DEPTH = 32


def decode_text(data: bytes, where: str) -> str:
    """``data`` as UTF-8 text (a leading byte order mark dropped); a bad byte is a UserError naming its line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UserError(
            f"{where} line {line}: byte 0x{data[exc.start]:02x} is not UTF-8 text: save the file as UTF-8"
        ) from None


def read_text(path: str | Path, what: str, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of the file at ``path`` (``what`` names it in errors: "campaign file", "job file")."""
    p = Path(path)
    try:
        if p.is_dir():
            raise UserError(f"{what} {p}: is a directory: name a file")
        with open(p, "rb") as f:
            data = f.read(max_bytes + 1)  # bounded even for a pipe or a device that never ends
    except OSError as exc:
        raise UserError(f"{what} {p}: cannot read it ({exc.strerror or exc}): check the path") from None
    if len(data) > max_bytes:
        raise UserError(f"{what} {p}: larger than {max_bytes >> 20} MiB: this is not a {what} fsmeter can use")
    return decode_text(data, str(p))


def toml_depth_error(data: Any, limit: int = MAX_TOML_DEPTH) -> str:
    """ "" when ``data`` (parsed TOML) nests at most ``limit`` tables/arrays deep, else the dotted path where
    it goes deeper. Iterative, so that it is safe on any depth."""
    stack = [(data, 0, "")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, dict):
            items = value.items()
        elif isinstance(value, list):
            items = ((f"[{i}]", x) for i, x in enumerate(value))
        else:
            continue
        if depth >= limit:
            return where or "(top level)"
        for k, v in items:
            stack.append((v, depth + 1, f"{where}{k}" if str(k).startswith("[") else f"{where}.{k}".lstrip(".")))
    return ""


def loads_toml(text: str, where: str) -> dict:
    """TOML text -> dict; a syntax error, or nesting deeper than MAX_TOML_DEPTH, is one UserError."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{where}: TOML syntax error: {exc}: fix the file") from None
    except RecursionError:
        raise UserError(
            f"{where}: tables or arrays nested too deeply to read: at most {MAX_TOML_DEPTH} levels"
        ) from None
    deep = toml_depth_error(data)
    if deep:
        raise UserError(f"{where}: {deep[:200]}: nested more than {MAX_TOML_DEPTH} levels deep: flatten it")
    return data


__all__ = [
    "MAX_TEXT_BYTES",
    "MAX_TOML_DEPTH",
    "check_output_path",
    "decode_text",
    "loads_toml",
    "read_text",
    "toml_depth_error",
]
