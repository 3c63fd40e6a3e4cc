"""Statistics for fsmeter: summaries and CIs, one-run batch means, adaptive trials,
comparisons, and full factorial ANOVA (Jain, *The Art of Computer Systems
Performance Analysis*, ch. 12-13, 20-22, 25). Pure Python on numpy/scipy/statsmodels/pandas.
"""
from fsmeter.stats.adaptive import AdaptiveRule, Decision
from fsmeter.stats.analyze import Analysis, analyze_frame, render
from fsmeter.stats.anova import AnovaResult, factorial_anova
from fsmeter.stats.batch import BatchMeansResult, SteadyState, batch_means_ci, is_too_short, steady_state
from fsmeter.stats.compare import Comparison, RankEntry, compare, rank
from fsmeter.stats.summary import MeanCI, Summary, mean_ci, summarize

__all__ = [
    "AdaptiveRule", "Decision", "Analysis", "analyze_frame", "render", "AnovaResult", "factorial_anova",
    "BatchMeansResult", "SteadyState", "batch_means_ci", "is_too_short", "steady_state", "Comparison",
    "RankEntry", "compare", "rank", "MeanCI", "Summary", "mean_ci", "summarize",
]
