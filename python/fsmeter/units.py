"""Sizes and durations as people write them ("4K", "1GiB", "64k") turned into numbers.

Size suffixes are binary, as in fio with its default kb_base=1024: K = KiB = KB = 1024.
"""
from __future__ import annotations

import re
from typing import Annotated, Union

from pydantic import BeforeValidator

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b)?\s*$", re.IGNORECASE)
_MULT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def parse_size(value: Union[str, int, float]) -> int:
    """'4K' -> 4096, '1.5M' -> 1572864, 512 -> 512. Raises ValueError with the accepted forms."""
    if isinstance(value, bool):
        raise ValueError("a size, not a boolean")
    if isinstance(value, (int, float)):
        if value < 0 or int(value) != value:
            raise ValueError(f"{value!r} is not a whole number of bytes >= 0")
        return int(value)
    m = _SIZE_RE.match(str(value))
    if not m:
        raise ValueError(f"{value!r} is not a size: use bytes or a number with K, M, G or T (binary: 4K = 4096)")
    n = float(m.group(1)) * _MULT[m.group(2).lower()]
    if n != int(n):
        raise ValueError(f"{value!r} is not a whole number of bytes")
    return int(n)


def format_size(n: float) -> str:
    """4096 -> '4KiB', 1536 -> '1.5KiB'."""
    for unit, mult in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult:
            v = n / mult
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.3g}{unit}"
    return f"{n:.0f}B"


Size = Annotated[int, BeforeValidator(parse_size)]
