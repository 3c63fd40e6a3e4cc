"""Sizes and durations as people write them ("4K", "1GiB", "64k") turned into numbers.

Size suffixes are binary, as in fio with its default kb_base=1024: K = KiB = KB = 1024.
"""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import BeforeValidator

_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgtp]?)(i?b)?\s*$", re.IGNORECASE)  # ASCII digits only
_MULT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def parse_size(value: str | int | float) -> int:
    """'4K' -> 4096, '1.5M' -> 1572864, 512 -> 512. Raises ValueError with the accepted forms."""
    if isinstance(value, bool):
        raise ValueError("a size, not a boolean")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} is not a whole number of bytes >= 0")
    if isinstance(value, (int, float)):
        if value < 0 or int(value) != value:
            raise ValueError(f"{value!r} is not a whole number of bytes >= 0")
        return int(value)
    text = str(value)
    m = _SIZE_RE.match(text) if len(text) <= 64 else None
    if not m:
        shown = repr(text) if len(text) <= 64 else repr(text[:64]) + "..."
        raise ValueError(f"{shown} is not a size: use bytes or a number with K, M, G or T (binary: 4K = 4096)")
    whole, _, frac = m.group(1).partition(".")
    mult = _MULT[m.group(2).lower()]
    # Exact arithmetic: a float loses whole bytes beyond 2^53 (and overflows for long digit strings).
    num, den = int(whole + frac), 10 ** len(frac)
    if (num * mult) % den:
        raise ValueError(f"{value!r} is not a whole number of bytes")
    return num * mult // den


def format_size(n: float) -> str:
    """4096 -> '4KiB', 1536 -> '1.5KiB'."""
    for unit, mult in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult:
            v = n / mult
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.3g}{unit}"
    return f"{n:.0f}B"


Size = Annotated[int, BeforeValidator(parse_size)]


# -- limits every parameter is held to (fsmeter.spec.check_limits), so that no value reaches the engine
# that would overflow its clock or its integer types; docs/limits.md lists them.
#: The longest duration (any ``*_s`` parameter): 10,000,000 s, about 116 days (the engine checks it again).
MAX_DURATION_S = 1e7
#: The largest size or byte count (any parameter whose name says size, bytes, offset, alignment or block): 1 PiB.
MAX_SIZE_BYTES = 1 << 50
#: The largest other whole number (counts: files, operations, passes, threads...): 2^32 - 1.
MAX_COUNT = (1 << 32) - 1
