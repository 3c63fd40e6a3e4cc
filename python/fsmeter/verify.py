"""Data verification results: what the engine's phase reports say about corrupt blocks.

The engine counts bad blocks per phase in ``counters.verify_mismatches`` and keeps
the first ones in full in ``extra.verify.mismatches`` (file, offset, kind, expected
and found header, first differing bytes; see docs/verify.md). A run or trial with
any is ``corrupt``, never ``ok``.
"""

from __future__ import annotations

from collections.abc import Iterable

#: Values of the ``verify`` parameter ("off": no headers, no checks).
CHOICES = ("off", "crc32c", "xxh3", "sha256")


def mismatches(report: dict) -> int:
    """Corrupt blocks one phase report found (0 without verification)."""
    return int(((report or {}).get("counters") or {}).get("verify_mismatches") or 0)


def describe(m: dict) -> str:
    """One line for one mismatch of ``extra.verify.mismatches``."""
    where = f"{m.get('file', '?')} offset {m.get('offset')}"
    text = f"{m.get('kind')} at {where} ({m.get('len')} bytes, phase {m.get('phase')})"
    if m.get("first_diff_offset") is not None:
        text += (
            f"; first differing byte at file offset {m['first_diff_offset']}: expected "
            f"{m.get('expected_bytes') or '-'} found {m.get('found_bytes') or '-'} (from block byte "
            f"{m.get('window_start')})"
        )
    found = m.get("found")
    if found:
        text += (
            f"; found header: offset {found.get('offset')} len {found.get('len')} thread {found.get('thread')} "
            f"generation {found.get('generation')}"
        )
    exp = m.get("expected")
    if exp and found and (exp.get("generation"), exp.get("thread")) != (found.get("generation"), found.get("thread")):
        text += f"; expected thread {exp.get('thread')} generation {exp.get('generation')}"
    return text


def corruption(reports: Iterable[tuple[str, dict]]) -> str | None:
    """None when no phase found a corrupt block, else one line: how many, where, the first one in full."""
    total, first, phases = 0, None, []
    for key, rep in reports:
        n = mismatches(rep)
        if n:
            total += n
            phases.append(f"{key}: {n}")
            kept = ((rep.get("extra") or {}).get("verify") or {}).get("mismatches") or []
            if first is None and kept:
                first = kept[0]
    if not total:
        return None
    text = f"data verification found {total} corrupt block(s) ({', '.join(phases)})"
    if first is not None:
        text += f"; first: {describe(first)}"
    return text


__all__ = ["CHOICES", "corruption", "describe", "mismatches"]
