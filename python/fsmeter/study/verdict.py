"""Verdict words for study claims, and the gates a re-run verdict must pass.

Re-run words keep causes apart (docs/studies.md, "Verdicts"):

- **reproduced**: the claim's test holds in the cases its decision rule asks for;
- **reversed**: a significant effect in the opposite direction;
- **not reproduced**: no effect where the claim says one, with the power to have seen it (or, for
  "the same" and magnitudes, a difference shown beyond the margin or outside the range);
- **inconclusive**: too little data, too little power, or a gate failed (short phases, busy machine);
- **not comparable here**: the run changed what the claim is about (its ``sensitive_to``);
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


def decide(statuses: list[str], rule) -> tuple:
    """The claim's word from its cases' outcomes and its decision rule (all / any / majority / a number).

    Reproduced when at least k cases hold; otherwise, when more cases fail outright (reversed or shown
    otherwise) than the rule can spare, reversed if reversals are at least half of those failures and
    not reproduced if not; otherwise inconclusive. A number k above the cases there are is inconclusive
    (the run cannot show k cases). Returns (word, k).
    """
    n = len(statuses)
    k = {"all": n, "any": 1, "majority": n // 2 + 1}.get(rule, rule) if isinstance(rule, str) else int(rule)
    k = max(1, k)
    if k > n:  # the rule asks for more cases than this run has
        return INCONCLUSIVE, k
    holds = statuses.count(HOLDS)
    opp, against = statuses.count(OPPOSITE), statuses.count(AGAINST)
    if holds >= k:
        return REPRODUCED, k
    if opp + against > n - k:
        return (REVERSED if opp >= against else NOT_REPRODUCED), k
    return INCONCLUSIVE, k


#: The fewest trials per side a re-run verdict rests on. With 2, Welch's test has about one degree of
#: freedom: its p-value hangs on two spreads each estimated from two numbers (a 90% interval is then
#: some six standard errors wide), and a power computed from those spreads is no better. 3 is the
#: floor, not a target: the power gate usually asks for more.
MIN_TRIALS = 3


def gate_reasons(
    min_phase_s: float | None,
    shortest_s: float | None,
    max_other: float | None,
    busiest: float | None,
    trials: int | None,
    needed: int | None,
) -> list[str]:
    """Why a re-run verdict cannot stand: phases too short, machine busy, too few trials (under
    MIN_TRIALS, or under what the power wants)."""
    out = []
    if trials is not None and trials < MIN_TRIALS:
        out.append(f"{trials} trial{'s' if trials != 1 else ''} per side: a verdict needs at least {MIN_TRIALS}")
    if shortest_s is not None and min_phase_s is not None and shortest_s < min_phase_s:
        out.append(f"a phase it rests on lasted {shortest_s:.3g} s, under the study's minimum of {min_phase_s:g} s")
    if busiest is not None and max_other is not None and busiest > max_other:
        out.append(
            f"the machine was busy: other processes used {busiest:.0%} of its CPUs during a phase it rests "
            f"on (the bound is {max_other:.0%})"
        )
    if needed is not None and trials is not None and MIN_TRIALS <= trials < needed:
        out.append(f"{trials} trials per side, the power wanted needs {needed}")
    return out


def counts(words: Iterable[str], vocabulary=RUN_WORDS) -> dict:
    """Headline counts, one per word, in the vocabulary's order (zeros kept: a reader compares runs)."""
    words = list(words)
    return {w: words.count(w) for w in vocabulary}
