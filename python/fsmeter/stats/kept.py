"""Which stored trials count in statistics: finished (status ok) and not a discarded warm-up trial.

One rule for every consumer (report, ranking, `fsmeter analyze`, `campaign show`, compare-runs), so
that their summaries and tests are computed from the same trials. Failed and interrupted trials and
the warm-up trials a campaign discards stay in the store and in exports, marked as such.
"""

from __future__ import annotations

import math
from typing import Any


def is_kept(status: Any, discarded: Any, value: Any = 0.0) -> bool:
    """One trial (or one of its metric values): ok, not discarded, and the value (if given) a number."""
    if status != "ok" or bool(discarded):
        return False
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def kept_mask(df):
    """Boolean Series over a frame with ``status`` and ``discarded`` columns (and ``value``, if present)."""
    mask = (df["status"] == "ok") & ~df["discarded"].astype(bool)
    if "value" in df.columns:
        mask &= df["value"].notna()
    return mask


def kept(df):
    """The rows of ``df`` (tidy metrics, or trials) that count in statistics."""
    return df[kept_mask(df)]


__all__ = ["is_kept", "kept", "kept_mask"]
