"""Verdict words for claims, and the decision rules that give them: one module every verdict goes
through (a study's claims on its paper's numbers or on a re-run, and ``fsmeter claim check``).

Re-run words keep causes apart (docs/studies.md, "The decision rules"):

- **reproduced**: significant in the claimed direction at the study's level, the estimate at least
  the claimed size, in as many cases as the claim's decision rule asks for;
- **reversed**: the opposite claim holds by the same aggregation (not one case of several flipped);
- **not reproduced**: the claim can no longer reach its cases: the intervals exclude the claimed
  effect in too many of them (for "the same" and magnitudes, a difference shown beyond the margin
  or a ratio outside the range);
- **inconclusive**: none of these; the power and the trials the decision would need explain it; or a
  gate failed (short phases, busy machine, a measurement missing);
- **not comparable here**: the run changed what the claim is about (its ``sensitive_to``), or the
  resource the paper's result was bound by is more than 4x faster here (its ``bound_by``);
- **not testable here**: the filesystem, kernel or hardware is absent, or the claim is a judgement.

On the paper's own data (``fsmeter study check``) a claim is **supported**, **contradicted** (by its
own data), **inconclusive**, has **no data** published, or is **not testable**.
"""

from __future__ import annotations

from collections.abc import Iterable

REPRODUCED = "reproduced"
REVERSED = "reversed"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_COMPARABLE = "not comparable here"
NOT_TESTABLE = "not testable here"
RUN_WORDS = (REPRODUCED, REVERSED, NOT_REPRODUCED, INCONCLUSIVE, NOT_COMPARABLE, NOT_TESTABLE)

SUPPORTED = "supported"
CONTRADICTED = "contradicted"
NO_DATA = "no data"
PAPER_NOT_TESTABLE = "not testable"
PAPER_WORDS = (SUPPORTED, CONTRADICTED, INCONCLUSIVE, NO_DATA, PAPER_NOT_TESTABLE)

#: How a re-run word reads on the paper's own data.
PAPER_OF = {
    REPRODUCED: SUPPORTED,
    REVERSED: CONTRADICTED,
    NOT_REPRODUCED: CONTRADICTED,
    INCONCLUSIVE: INCONCLUSIVE,
    NOT_TESTABLE: PAPER_NOT_TESTABLE,
    NOT_COMPARABLE: INCONCLUSIVE,
}

#: Case (and pair) outcomes inside a claim.
HOLDS, AGAINST, OPPOSITE, UNCLEAR = "holds", "not shown", "reversed", "unclear"


# -- the decision rules, written down once (docs/studies.md, "The decision rules") -----------------------
# Every verdict, on a paper's numbers, a study re-run or `fsmeter claim check`, goes through these
# functions. Power is never an argument: it explains an inconclusive verdict, it never makes one.


def ordering_pair(
    *,
    holds_sig: bool,
    opposite_sig: bool,
    estimate_pct: float,
    upper_pct: float,
    size_pct: float,
    min_difference_pct: float,
    apart: bool = True,
) -> str:
    """One comparison of an ordering ("a is better than b").

    ``estimate_pct``: the difference in the claimed direction, % of the mean of b (the member
    claimed worse); ``upper_pct``: its simultaneous upper bound (Bonferroni over the claim's tests);
    ``holds_sig`` / ``opposite_sig``: the one-sided test in the claimed / opposite direction is
    significant after Holm; ``size_pct``: the claimed size s; ``apart``: the study's interval rule
    (Bryant: the two means' intervals do not overlap) holds, True where it has none.

    - holds: significant in the claimed direction, the estimate at least s, the interval rule kept;
    - reversed: significant the other way, by at least the study's minimum difference, the interval
      rule kept (a smaller opposite difference is "no difference" by the study's own rule);
    - not shown: the bound excludes the claimed effect (upper bound below s; for s = 0 that is
      significance the other way, which reads "reversed" above or, under the minimum, "not shown");
    - unclear otherwise.
    """
    if holds_sig and estimate_pct >= size_pct and apart:
        return HOLDS
    if opposite_sig and -estimate_pct >= min_difference_pct and apart:
        return OPPOSITE
    if upper_pct < size_pct:
        return AGAINST
    return UNCLEAR


def margin_pair(*, holds_sig: bool, beyond_sig: bool) -> str:
    """ "b is not better (not worse) than a by more than the margin": holds when the one-sided test
    within the margin is significant; reversed when the difference is significantly beyond it."""
    if holds_sig:
        return HOLDS
    if beyond_sig:
        return OPPOSITE
    return UNCLEAR


def equivalence_pair(*, holds_sig: bool, beyond_sig: bool) -> str:
    """TOST at the margin: holds when significant, not shown when the difference is significantly
    beyond the margin; an equivalence has no opposite."""
    if holds_sig:
        return HOLDS
    if beyond_sig:
        return AGAINST
    return UNCLEAR


def magnitude_pair(
    *, holds_sig: bool, outside_sig: bool, opposite_sig: bool, opposite_pct: float, min_difference_pct: float
) -> str:
    """A ratio claimed in [lo, hi]: holds when the interval lies in the range; reversed only when the
    ratio is significantly on the other side of 1 from the range, by at least the study's minimum
    difference (``opposite_pct``: how far, in %); not shown when significantly outside the range."""
    if holds_sig:
        return HOLDS
    if opposite_sig and opposite_pct >= min_difference_pct:
        return OPPOSITE
    if outside_sig:
        return AGAINST
    return UNCLEAR


def descriptive_ordering(worst_pct: float, best_pct: float, size_pct: float, min_difference_pct: float) -> str:
    """An ordering on point values or published ranges (no spread): ``worst_pct`` / ``best_pct`` are the
    least and the most favourable difference the numbers allow (equal for two point values)."""
    if worst_pct >= size_pct and worst_pct > 0:
        return HOLDS
    if best_pct < 0 and -best_pct >= min_difference_pct:
        return OPPOSITE
    if best_pct < size_pct or best_pct <= 0:
        return AGAINST
    return UNCLEAR


def case_outcome(statuses: list[str]) -> str:
    """A case from its pairs: holds when all hold; reversed only when every pair is (the case's whole
    ordering turned round); not shown when some pair is reversed or not shown while the case does not
    hold (a three-tier ordering with one pair flipped is falsified, not reversed); unclear otherwise."""
    if statuses and all(x == HOLDS for x in statuses):
        return HOLDS
    if statuses and all(x == OPPOSITE for x in statuses):
        return OPPOSITE
    if any(x in (OPPOSITE, AGAINST) for x in statuses):
        return AGAINST
    return UNCLEAR


def decide(statuses: list[str], rule) -> tuple:
    """The claim's word from its cases' outcomes and its decision rule (all / any / majority / a number k).

    Reproduced when at least k cases hold; reversed when the opposite claim holds by the same
    aggregation (at least k cases reversed: for "all", every case); not reproduced when the claim can
    no longer reach k (holds + unclear < k) and is not reversed; inconclusive otherwise, and when k
    is more than the cases the run has. Returns (word, k).
    """
    n = len(statuses)
    k = {"all": n, "any": 1, "majority": n // 2 + 1}[rule] if isinstance(rule, str) else int(rule)
    k = max(1, k)
    if k > n:  # the rule asks for more cases than this run has
        return INCONCLUSIVE, k
    holds, opp, unclear = statuses.count(HOLDS), statuses.count(OPPOSITE), statuses.count(UNCLEAR)
    if holds >= k:
        return REPRODUCED, k
    if opp >= k:
        return REVERSED, k
    if holds + unclear < k:
        return NOT_REPRODUCED, k
    return INCONCLUSIVE, k


#: The fewest trials per side a re-run verdict rests on. With 2, Welch's test has about one degree of
#: freedom: its p-value hangs on two spreads each estimated from two numbers (a 90% interval is then
#: some six standard errors wide), and a power computed from those spreads is no better. 3 is the
#: floor, not a target: the power gate usually asks for more.
MIN_TRIALS = 3


def counts(words: Iterable[str], vocabulary=RUN_WORDS) -> dict:
    """Headline counts, one per word, in the vocabulary's order (zeros kept: a reader compares runs)."""
    words = list(words)
    return {w: words.count(w) for w in vocabulary}
