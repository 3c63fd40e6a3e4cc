"""Reading fio job files as fio reads them: sections, [global] inheritance, comments, ${VAR} expansion, fio's
built-in variables ($pagesize, $mb_memory, $ncpus, with the arithmetic fio then hands to bc), and fio's number
syntax (size suffixes under kb_base, time suffixes, ranges, percentages).

This module only parses; the fsmeter.interop.fio package decides what each option means for fsmeter.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fsmeter.errors import UserError
from fsmeter.interop import fio_include
from fsmeter.textfile import read_text


@dataclass(frozen=True)
class FioOption:
    name: str
    #: None for a bare flag (``time_based``), else the text after '='.
    value: str | None
    line: int
    #: The value as the file has it, before ${VAR} and $pagesize-style expansion (for error lines).
    written: str | None = None
    #: An environment variable the value names that is not set (the option cannot be used).
    unset: str | None = None

    @property
    def as_written(self) -> str:
        """name=value as the user wrote it (a bare flag: just the name)."""
        w = self.written if self.written is not None else self.value
        return self.name if w is None else f"{self.name}={w}"


@dataclass
class FioJob:
    """One job section with the [global] options in force where it appears merged in (its own win)."""

    section: str
    line: int
    options: dict = field(default_factory=dict)  # name -> FioOption

    @property
    def name(self) -> str:
        """The section's name, or the job's own name= (fio gives a name= of [global] to no job: each is named
        after its section)."""
        o = self.options.get("name")
        return o.value if o is not None and o.value and o.line > self.line else self.section

    def get(self, name: str) -> FioOption | None:
        return self.options.get(name)


@dataclass
class FioJobFile:
    path: str
    jobs: list


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _strip_comment(s: str) -> str:
    """fio ends an option line at '#' or ';' (and lines starting with them are comments)."""
    cut = min([i for i in (s.find("#"), s.find(";")) if i >= 0], default=-1)
    return s if cut < 0 else s[:cut]


def fio_keywords() -> dict:
    """fio's built-in variables as fio computes them on this machine: the page size, the physical memory in
    MiB (pages x page size // 2^20) and the configured CPUs."""
    page = os.sysconf("SC_PAGESIZE")
    return {
        "$pagesize": str(page),
        "$mb_memory": str(os.sysconf("SC_PHYS_PAGES") * page // (1 << 20)),
        "$ncpus": str(os.sysconf("SC_NPROCESSORS_CONF")),
    }


_ARITH_TOKEN = re.compile(r"\s*(?:([0-9]+)|(.))")
#: Bounds on an expression fio hands to bc: its length in characters, and how deep its parentheses and its
#: signs in a row nest. A job file's value is a few terms; a hostile one (500 nested parentheses, a thousand
#: minus signs) is refused in one line instead of exhausting the parser's stack.
ARITH_MAX_LEN = 1000
ARITH_MAX_DEPTH = 64


def eval_int_arith(text: str) -> int:
    """A whole-number expression as bc evaluates it by default (scale 0): + - * / % and parentheses, with the
    usual precedence, and division truncating toward zero. Raises ValueError for anything else, and for an
    expression longer than ARITH_MAX_LEN characters or nested (parentheses, signs in a row) deeper than
    ARITH_MAX_DEPTH."""
    if len(text) > ARITH_MAX_LEN:
        raise ValueError(f"an expression of {len(text)} characters, more than fsmeter reads ({ARITH_MAX_LEN})")
    toks = []
    for m in _ARITH_TOKEN.finditer(text.strip()):
        if m.group(1) is not None:
            toks.append(int(m.group(1)))
        elif m.group(2) in "+-*/%()":
            toks.append(m.group(2))
        elif not m.group(2).isspace():
            raise ValueError(f"{m.group(2)!r} is not part of a whole-number expression")
    pos = 0
    depth = 0

    def peek():
        return toks[pos] if pos < len(toks) else None

    def take():
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    def atom() -> int:
        nonlocal depth
        t = take() if peek() is not None else None
        if t == "(" or t == "-":
            depth += 1
            if depth > ARITH_MAX_DEPTH:
                raise ValueError(f"parentheses or signs nested more than {ARITH_MAX_DEPTH} deep")
            if t == "(":
                v = expr()
                if peek() != ")":
                    raise ValueError("unbalanced parentheses")
                take()
            else:
                v = -atom()
            depth -= 1
            return v
        if isinstance(t, int):
            return t
        raise ValueError("incomplete expression")

    def term() -> int:
        v = atom()
        while peek() in ("*", "/", "%"):
            op, r = take(), atom()
            if op == "*":
                v *= r
            elif r == 0:
                raise ValueError("division by zero")
            else:
                q = abs(v) // abs(r) * (1 if (v >= 0) == (r >= 0) else -1)
                v = q if op == "/" else v - q * r
        return v

    def expr() -> int:
        v = term()
        while peek() in ("+", "-"):
            op, r = take(), term()
            v = v + r if op == "+" else v - r
        return v

    value = expr()
    if pos != len(toks):
        raise ValueError("not a whole-number expression")
    return value


def _replace_keywords(value: str, keywords: Mapping[str, str]) -> tuple:
    """fio's keyword step: $pagesize, $mb_memory and $ncpus replaced by their values; when one was, a value
    with + - * or / is computed (fio pipes it through bc). Returns (value, replaced?)."""
    replaced = False
    for word, rep in keywords.items():
        if word in value:
            value, replaced = value.replace(word, rep), True
    if replaced and any(c in value for c in "+-*/"):
        value = str(eval_int_arith(value))
    return value, replaced


def unset_message(where: str, line: int, var: str) -> str:
    return f"{where} line {line}: ${{{var}}} is not set in the environment: export it, or write the value"


def parse_jobfile(
    text: str,
    where: str,
    env: Mapping[str, str] | None = None,
    keywords: Mapping[str, str] | None = None,
    base: Path | None = None,
) -> FioJobFile:
    """Sections and options of a job file; errors name `where` and the line. `include FILE` lines read FILE from
    the folder `base` (the job file's; fio_include says how)."""
    env = os.environ if env is None else env
    keywords = fio_keywords() if keywords is None else keywords
    jobs: list = []
    global_opts: dict = {}
    current: dict | None = None  # options of the section being read
    current_job: FioJob | None = None
    for item in fio_include.expand(text, where, base):
        n, raw, loc = item.n, item.raw, item.loc
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if item.included and line.startswith("["):
            raise UserError(f"{loc}: {line!r}: an included file holds options only (fio refuses sections in it)")

        unset: list = []

        def expand(m: re.Match) -> str:
            if m.group(1) not in env:
                unset.append(m.group(1))
                return ""
            return env[m.group(1)]

        written = _strip_comment(line).partition("=")
        line = _VAR.sub(expand, line)
        if unset and (line.startswith("[") or not written[1]):
            raise UserError(unset_message(where, n, unset[0]))
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise UserError(f"{loc}: {raw.strip()!r} is not a section header: write [name]")
            name = line[1:-1].strip()
            if name == "global":
                current, current_job = global_opts, None
            else:
                current_job = FioJob(section=name, line=n, options=dict(global_opts))
                jobs.append(current_job)
                current = current_job.options
            continue
        line = _strip_comment(line).strip()
        if not line:
            continue
        if current is None:
            raise UserError(f"{loc}: option {line!r} outside of a [job] section: put it under [global] or a job")
        key, sep, value = line.partition("=")
        key = key.strip()
        if not key or " " in key:
            raise UserError(f"{loc}: {raw.strip()!r} is not an option: write name=value")
        value = value.strip() if sep else None
        if unset:  # refused when the job is mapped, after what would say more (the engine, unknown options)
            current[key] = FioOption(key, "", n, written[2].strip(), unset=unset[0])
            continue
        if value is not None and "$" in value:
            try:
                value, _ = _replace_keywords(value, keywords)
            except ValueError as exc:
                shown = written[2].strip()
                shown = shown if len(shown) <= 80 else f"{shown[:80]}... ({len(shown)} characters)"
                raise UserError(f"{loc}: {key}={shown}: {exc}: write the value as a number") from None
        current[key] = FioOption(key, value, n, written[2].strip() if written[1] else None)
    if not jobs:
        raise UserError(f"{where}: no job section: add one, e.g. [seq-read] with rw=read")
    return FioJobFile(path=where, jobs=jobs)


def read_jobfile(path: Path, env: Mapping[str, str] | None = None) -> FioJobFile:
    return parse_jobfile(read_text(path, "job file"), str(path), env, base=Path(path).parent)


# -- fio's numbers ---------------------------------------------------------------------------------------------
# ASCII digits only: Python's \d and int() also take other scripts' digits (full-width １２８), which fio does not.
_NUM = re.compile(r"^(0[xX][0-9a-fA-F]+|[0-9]+)(.*)$")
_INT = re.compile(r"^[+-]?(0[xX][0-9a-fA-F]+|[0-9]+)$")
#: A percentage as fio reads it in bssplit: a plain decimal number (no exponent, nan or inf).
_PCT = re.compile(r"^[0-9]+(\.[0-9]*)?$|^\.[0-9]+$")
_POW = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def parse_fio_size(text: str, kb_base: int = 1024) -> int:
    """A size as fio's get_mult_bytes reads it. With kb_base=1024 (fio's default) k/m/g/t/p (with or without
    'b') are powers of 1024 and the IEC forms kib/mib/... powers of 1000 (fio's compatibility mode); with
    kb_base=1000 the other way round. Raises ValueError for anything fio would not read as a whole size."""
    s = text.strip()
    m = _NUM.match(s)
    if not m:
        raise ValueError(f"{text!r} is not a size (a whole number with an optional k, m, g, t or p suffix)")
    n = _whole(m.group(1), text)
    suffix = m.group(2).lower()
    if suffix.endswith("%"):
        raise ValueError(f"{text!r}: a percentage")
    if suffix in ("", "b"):
        return n
    unit = suffix[0]
    if unit not in _POW:
        raise ValueError(f"{text!r}: unknown unit {m.group(2)!r} (use k, m, g, t, p; kib etc.)")
    rest = suffix[1:]
    if rest in ("", "b", "i"):
        base = kb_base
    elif rest == "ib":
        base = 1000 if kb_base == 1024 else 1024
    else:
        raise ValueError(f"{text!r}: unknown unit {m.group(2)!r} (use k, m, g, t, p; kib etc.)")
    return n * base ** _POW[unit]


def _whole(digits: str, text: str) -> int:
    """ASCII decimal (leading zeros allowed, as fio's strtoll in base 10) or 0x hex; at most 20 digits, which
    is already beyond any 64-bit value (the limits of each option are checked where it is used)."""
    if len(digits) > 20:
        raise ValueError(f"{text.strip()[:40]!r}... is too large a number")
    return int(digits, 16) if digits[:2] in ("0x", "0X") else int(digits, 10)


def is_percentage(text: str) -> bool:
    return text.strip().endswith("%")


def parse_fio_time_s(text: str, default_unit: str = "s") -> float:
    """fio's time values: a whole number with d, h, m, s, ms/msec, us/usec (default seconds)."""
    m = re.match(r"^([0-9]+)[ \t]*([a-zA-Z]*)$", text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a time (a whole number with s, m, h, d, ms or us)")
    unit = (m.group(2) or default_unit).lower()
    mult = {"d": 86400, "h": 3600, "m": 60, "s": 1, "sec": 1, "ms": 1e-3, "msec": 1e-3, "us": 1e-6, "usec": 1e-6}.get(
        unit
    )
    if mult is None:
        raise ValueError(f"{text!r}: unknown time unit {m.group(2)!r} (use s, m, h, d, ms or us)")
    return _whole(m.group(1), text) * mult


def parse_fio_int(text: str) -> int:
    """A whole number as fio reads one: ASCII decimal or 0x hex, optionally signed (no '_', no other digits)."""
    t = text.strip()
    if not _INT.match(t):
        raise ValueError(f"{text!r} is not a whole number")
    sign = -1 if t[0] == "-" else 1
    return sign * _whole(t.lstrip("+-"), text)


def parse_fio_pct(text: str) -> float:
    """A percentage of bssplit: a plain decimal number from 0 to 100."""
    t = text.strip()
    if not _PCT.match(t) or float(t) > 100:
        raise ValueError(f"{text!r} is not a percentage from 0 to 100")
    return float(t)


def split_names(text: str) -> list:
    """fio's filename list: names separated by ':', where '\\:' is a literal colon inside a name."""
    names, cur, i = [], [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and text[i + 1 : i + 2] == ":":
            cur.append(":")
            i += 2
            continue
        if c == ":":
            names.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    names.append("".join(cur))
    return names


def parse_fio_bool(text: str | None) -> bool:
    """A bare flag is true; else 0/1 (fio also takes 'true'/'false')."""
    if text is None or text == "":
        return True
    t = text.strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{text!r} is not a boolean (use 0 or 1)")


def parse_fio_range(text: str, kb_base: int = 1024) -> tuple:
    """fio's irange: '1k-4k' or '1k:4k' (swapped when given upside down); a single value is (v, v)."""
    for sep in ("-", ":"):
        if sep in text:
            lo, hi = (parse_fio_size(x, kb_base) for x in text.split(sep, 1))
            return (min(lo, hi), max(lo, hi))
    v = parse_fio_size(text, kb_base)
    return (v, v)
