"""What every parser's fuzz test checks (tests/fuzz/): an input gives a result or one UserError,
one line long, and nothing else; and the hypothesis settings that keep all of them within a minute or two.

The deadline is hypothesis's per-example limit: an example that takes longer fails the test (a hang or a
time that grows faster than the input), so it is far above what any example needs, not a speed target.
"""

from __future__ import annotations

import random

from fsmeter.errors import UserError
from hypothesis import HealthCheck, settings

#: Per-example deadline (ms): only a runaway example reaches it.
DEADLINE_MS = 5000
FAST = settings(
    max_examples=300,
    deadline=DEADLINE_MS,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
SLOW = settings(
    max_examples=100,
    deadline=DEADLINE_MS * 4,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def result_or_user_error(fn, *args, **kwargs):
    """fn(*args) -> (result, None) or (None, UserError); any other exception fails the test as it is. A
    UserError's message must be one line: the CLI prints it after `fsmeter: error:`."""
    try:
        return fn(*args, **kwargs), None
    except UserError as exc:
        assert exc.message and "\n" not in exc.message and "\r" not in exc.message, repr(exc.message)
        assert exc.exit_code in (1, 2)
        return None, exc


#: Fragments that broke parsers before: bytes and characters of other scripts, numbers past every limit.
NASTY = [
    "\x00",
    "\xff",
    "１２８",
    "٣",
    "-1",
    "0",
    "1e30",
    "1e308",
    "inf",
    "-inf",
    "nan",
    "18446744073709551616",
    "9" * 30,
    "[",
    "]",
    "{",
    "}",
    "=",
    '"',
    "'",
    "\\",
    "\\:",
    ":",
    ",",
    "/",
    "..",
    "#",
    ";",
    "\n",
    "\t",
    " ",
    "%",
    "k",
    "K",
    "G",
    "p",
    "0x",
    "_",
]


def mutate(seed: str, rnd: random.Random, n: int = 3, fragments: list = NASTY) -> str:
    """A few random edits of ``seed``: delete, duplicate or replace a span, or insert one of ``fragments``
    (scripts/fuzz_inputs.py uses the same edits with fragments of its own)."""
    s = seed
    for _ in range(n):
        i = rnd.randrange(len(s) + 1)
        j = min(len(s), i + rnd.randrange(1, 12))
        op = rnd.randrange(4)
        if op == 0:
            s = s[:i] + s[j:]
        elif op == 1:
            s = s[:i] + s[i:j] * rnd.randrange(2, 5) + s[i:]
        elif op == 2:
            s = s[:i] + rnd.choice(fragments) + s[j:]
        else:
            s = s[:i] + rnd.choice(fragments) + s[i:]
    return s


def splice_bytes(raw: bytes, junk: bytes, at: int, encoding: str = "utf-8") -> tuple:
    """``junk`` inserted into ``raw`` at ``at`` (clamped): (the bytes, the 1-based line of the first
    byte that does not decode, or None when the whole still decodes)."""
    at = min(at, len(raw))
    data = raw[:at] + junk + raw[at:]
    try:
        data.decode(encoding)
    except UnicodeDecodeError as exc:
        return data, data.count(b"\n", 0, exc.start) + 1
    return data, None
