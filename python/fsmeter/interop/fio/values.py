"""Reading a fio job's option values as fio reads them: sizes with kb_base, whole numbers, booleans, times and
decimal numbers, each refused in one line naming the job file's line and the option as written."""

from __future__ import annotations

import re

from fsmeter.errors import UserError
from fsmeter.interop.fio_jobfile import (
    FioJob,
    eval_int_arith,
    is_percentage,
    parse_fio_bool,
    parse_fio_int,
    parse_fio_range,
    parse_fio_size,
    parse_fio_time_s,
)

#: A number followed by arithmetic outside parentheses (iodepth=128*1): fio's strtoll reads the leading number.
_LEADING = re.compile(r"^\s*([0-9]+)\s*[-+*/%]")
_FLOAT = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$")


def fio_float(text: str) -> float:
    """A decimal number as fio's strtod reads one in these options: ASCII digits only (Python's float() also
    takes '٠.٥', '９９' and '1_0'). ValueError otherwise."""
    t = text.strip()
    if not _FLOAT.match(t):
        raise ValueError(f"{text!r} is not a number")
    return float(t)


def _shown(value: str, most: int = 80) -> str:
    """A value as an error line shows it: an 8 MiB verify_pattern is not repeated in full."""
    return value if len(value) <= most else f"{value[:most]}... ({len(value)} characters)"


class Ctx:
    def __init__(self, where: str, job: FioJob):
        self.where, self.job = where, job
        #: Notes on how values were read (arithmetic), for the job's notes.
        self.notes: list = []
        kb = job.get("kb_base")
        self.kb_base = 1024
        if kb is not None:
            if kb.value not in ("1024", "1000"):
                self.fail(kb, "use 1024 or 1000")
            self.kb_base = int(kb.value)

    def fail(self, opt, what: str):
        raise UserError(f"{self.where} line {opt.line}: {opt.name}={_shown(opt.value or '')}: {what}")

    def size(self, name: str, default: int | None = None, allow_range: bool = False) -> int | None:
        opt = self.job.get(name)
        if opt is None:
            return default
        if opt.value is None or opt.value == "":
            self.fail(opt, "give a size")
        if is_percentage(opt.value):
            self.fail(opt, "a percentage of a device is not supported by fsmeter (not planned): give a size")
        if any(c in opt.value for c in "-:") and not opt.value.startswith("0x"):
            lo_hi = self._range(opt)
            if lo_hi[0] != lo_hi[1]:
                self.fail(opt, "a range is not supported for this option by fsmeter (planned): give one size")
            return lo_hi[0]
        try:
            return parse_fio_size(opt.value, self.kb_base)
        except ValueError as exc:
            self.fail(opt, str(exc))

    def _range(self, opt):
        try:
            return parse_fio_range(opt.value, self.kb_base)
        except ValueError as exc:
            self.fail(opt, str(exc))

    def int(self, name: str, default: int, lo: int = 0, hi: int | None = None) -> int:
        opt = self.job.get(name)
        if opt is None:
            return default
        try:
            v = self._whole(opt)
        except ValueError:
            self.fail(opt, "give a whole number (ASCII digits), or an expression in parentheses")
        if v < lo or (hi is not None and v > hi):
            self.fail(opt, f"must be between {lo} and {hi}" if hi is not None else f"must be >= {lo}")
        return v

    def _whole(self, opt) -> int:
        """A whole number as fio reads an integer option: an expression in parentheses is computed (fio's
        arithmetic: + - * / % and parentheses); a number followed by arithmetic without them is the number
        alone, as fio's strtoll leaves it (with a note)."""
        text = (opt.value or "").strip()
        if text.startswith("(") and text.endswith(")"):
            return eval_int_arith(text)
        m = _LEADING.match(text)
        if m is not None:
            try:
                eval_int_arith(text)
            except ValueError:
                raise ValueError(text) from None
            v = int(m.group(1))
            self.notes.append(
                f"{opt.as_written}: fio reads the number before the arithmetic ({v}) and ignores the rest, as it "
                f"computes only expressions in parentheses; so does fsmeter (write {opt.name}=({text}) for the "
                "expression's value)"
            )
            return v
        return parse_fio_int(text)

    def flag(self, name: str, default: bool = False) -> bool:
        opt = self.job.get(name)
        if opt is None:
            return default
        try:
            return parse_fio_bool(opt.value)
        except ValueError as exc:
            self.fail(opt, str(exc))

    def time_s(self, name: str) -> float | None:
        opt = self.job.get(name)
        if opt is None:
            return None
        try:
            return parse_fio_time_s(opt.value or "")
        except ValueError as exc:
            self.fail(opt, str(exc))


def alias(ctx: Ctx, names: tuple):
    """The option among fio's aliases that the job sets (the later line wins, as in fio), or None."""
    given = [n for n in names if ctx.job.get(n) is not None]
    return max(given, key=lambda n: ctx.job.get(n).line) if given else None
