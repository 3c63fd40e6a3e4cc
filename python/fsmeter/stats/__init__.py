"""Statistics for fsmeter: summaries and CIs, one-run batch means, adaptive trials,
comparisons, and full factorial ANOVA (Jain, *The Art of Computer Systems
Performance Analysis*, ch. 12-13, 20-22, 25). Pure Python on numpy/scipy/statsmodels/pandas.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names below, as the type checker sees them (at run time: __getattr__)
    from fsmeter.stats.adaptive import AdaptiveRule, Decision
    from fsmeter.stats.analyze import Analysis, analyze_frame, render
    from fsmeter.stats.anova import AnovaResult, factorial_anova
    from fsmeter.stats.batch import BatchMeansResult, SteadyState, batch_means_ci, is_too_short, steady_state
    from fsmeter.stats.ranking import Comparison, RankEntry, compare, rank
    from fsmeter.stats.summary import MeanCI, Summary, mean_ci, summarize

# Submodules load on first use (PEP 562): `fsmeter.stats.phase` must not pull statsmodels and
# pandas into a run that only needs a batch-means CI.
_WHERE = {
    "AdaptiveRule": "adaptive",
    "Decision": "adaptive",
    "Analysis": "analyze",
    "analyze_frame": "analyze",
    "render": "analyze",
    "AnovaResult": "anova",
    "factorial_anova": "anova",
    "BatchMeansResult": "batch",
    "SteadyState": "batch",
    "batch_means_ci": "batch",
    "is_too_short": "batch",
    "steady_state": "batch",
    "Comparison": "ranking",
    "RankEntry": "ranking",
    "compare": "ranking",
    "rank": "ranking",
    "MeanCI": "summary",
    "Summary": "summary",
    "mean_ci": "summary",
    "summarize": "summary",
}


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AdaptiveRule",
    "Decision",
    "Analysis",
    "analyze_frame",
    "render",
    "AnovaResult",
    "factorial_anova",
    "BatchMeansResult",
    "SteadyState",
    "batch_means_ci",
    "is_too_short",
    "steady_state",
    "Comparison",
    "RankEntry",
    "compare",
    "rank",
    "MeanCI",
    "Summary",
    "mean_ci",
    "summarize",
]
