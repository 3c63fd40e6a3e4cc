"""The adaptive-trials rule: repeat a cell until the CI is tight enough, or a cap is hit.

Jain ch. 13.9 ("Determining sample size"): n = (100 z s / (r xbar))^2 trials give a
CI of +-r% of the mean. Instead of predicting n from a pilot we apply the same
criterion after every trial -- the Student-t half-width as a % of the mean -- and
stop as soon as it is within the target. The campaign runner calls
:meth:`AdaptiveRule.decide` after each trial and stores ``Decision.reason``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fsmeter.errors import UserError
from fsmeter.stats.summary import check_level, mean_ci

Reason = Literal["target-met", "trial-cap", "time-cap", "continue"]


@dataclass(frozen=True)
class Decision:
    """What to do after a trial, and why.

    ``half_width_pct`` is the current CI half-width in % of |mean| over the kept
    trials (NaN while fewer than 2 are kept). ``n_used`` counts the kept trials.
    """

    stop: bool
    reason: Reason
    half_width_pct: float
    n_used: int
    mean: float


@dataclass(frozen=True)
class AdaptiveRule:
    """Stop when the CI half-width is <= ``target_pct`` % of the mean (fsmeter's run rules).

    * ``discard_first``: the first trials are warm-up (cold caches, first mkfs
      effects) and never enter the CI.
    * ``min_trials``: kept trials needed before "target-met" may be declared --
      two lucky equal values must not end a cell (min 2: a CI needs a variance).
    * ``max_trials``: cap on *all* trials, discarded ones included (it bounds cost).
    * ``max_time_s``: optional cap on the cell's elapsed time. It stops a cell only once it has
      ``min_trials`` kept trials: on a slow or loaded machine a cell cut at one trial has no CI
      at all, so the time cap bounds the extra trials, not the minimum.

    Precedence when several hold: target-met, then trial-cap, then time-cap, so
    a cell that met its target is reported as such even on its last allowed trial.
    """

    target_pct: float = 10.0
    level: float = 0.95
    discard_first: int = 1
    min_trials: int = 3
    max_trials: int = 30
    max_time_s: float | None = None

    def __post_init__(self) -> None:
        check_level(self.level)
        if not self.target_pct > 0:
            raise UserError(f"target_pct = {self.target_pct}: must be > 0 (e.g. 10 for +-10% of the mean)")
        if self.discard_first < 0:
            raise UserError(f"discard_first = {self.discard_first}: must be >= 0")
        if self.min_trials < 2:
            raise UserError(f"min_trials = {self.min_trials}: a CI needs at least 2 trials")
        if self.max_trials < self.discard_first + self.min_trials:
            raise UserError(
                f"max_trials = {self.max_trials} is below discard_first + min_trials = "
                f"{self.discard_first + self.min_trials}: raise max_trials"
            )
        if self.max_time_s is not None and not self.max_time_s > 0:
            raise UserError(f"max_time_s = {self.max_time_s}: must be > 0, or None for no time cap")

    def decide(self, values: Sequence[float], elapsed_s: float = 0.0) -> Decision:
        """Decide after the latest trial. ``values``: every trial so far, in order
        (discarded ones included); ``elapsed_s``: time spent on this cell so far."""
        kept = [float(v) for v in values[self.discard_first :]]
        if len(kept) >= 2:
            ci = mean_ci(kept, self.level)
            hw_pct, mean = ci.half_width_pct, ci.mean
        else:
            hw_pct = math.nan
            mean = kept[0] if kept else math.nan
        if len(kept) >= self.min_trials and hw_pct <= self.target_pct:
            return Decision(True, "target-met", hw_pct, len(kept), mean)
        if len(values) >= self.max_trials:
            return Decision(True, "trial-cap", hw_pct, len(kept), mean)
        if self.max_time_s is not None and elapsed_s >= self.max_time_s and len(kept) >= self.min_trials:
            return Decision(True, "time-cap", hw_pct, len(kept), mean)
        return Decision(False, "continue", hw_pct, len(kept), mean)
