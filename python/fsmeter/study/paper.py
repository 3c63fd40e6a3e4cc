"""Test a study's claims on its own published numbers (``fsmeter study check``).

The ``[published] rows`` become the frame :class:`fsmeter.study.claims.ClaimChecker` reads, in the
claims' names: ``[published] metrics`` maps a published ``phase.metric`` to the run's metric key,
``[published] configurations`` a published configuration label to the study's configuration and
factor levels. Per cell (workload, metric, configuration, levels):

- rows with ``where.run`` are raw runs: they are the sample, and summary rows of the same cell are
  left out (the runs say more, and may be in other units);
- else a row with ``stddev`` and ``n`` (and ``statistic`` absent or "mean") is a published mean;
- else a row with a ``value`` is a point value, compared descriptively;
- a row with ``value_min`` and ``value_max`` is a published range: every value of the cells it covers
  lies in it (``over`` lists the factors whose every level it covers: the row stands for each), and
  it is compared descriptively by its bounds;
- a row whose ``statistic`` is a "best of" figure (the best of a configuration's runs over all its
  cells) serves only the claims about the best cell (``best_of``).

Rows of other statistics (median, min, max, CV...) and bounds (a ``qualifier`` such as ">") are not
samples and are left out.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import cast

import pandas as pd

from fsmeter.study.claims import ClaimChecker
from fsmeter.study.evidence import Verdict
from fsmeter.study.model import Claim, Study
from fsmeter.study.verdict import NO_DATA

TIME_UNITS = {"s", "ms", "us", "min", "seconds", "sec", "h"}


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _kind(r: dict) -> str | None:
    """What a published row is to the check: "mean", "range", "best", or None (left out)."""
    if r.get("qualifier"):
        return None
    stat = str(r.get("statistic") or "mean")
    if stat.startswith("best of"):
        return "best" if _number(r.get("value")) else None
    if stat != "mean":
        return None
    if _number(r.get("value")):
        return "mean"
    if _number(r.get("value_min")) and _number(r.get("value_max")):
        return "range"
    return None


def paper_frame(study: Study) -> pd.DataFrame:
    pub = study.published
    rows = []
    for r in pub.rows:
        kind = _kind(r)
        if kind is None:
            continue
        key = f"{r['phase']}.{r['metric']}" if r.get("phase") else str(r.get("metric"))
        key = pub.metrics.get(key, key)
        label = str(r.get("configuration", ""))
        mapped = pub.configurations.get(label)
        where = dict(r.get("where") or {})
        run = where.pop("run", None)
        sd = float(r["stddev"]) if isinstance(r.get("stddev"), (int, float)) and run is None else None
        n = int(r["n"]) if isinstance(r.get("n"), int) and run is None else None
        if sd is not None and n is not None and n > 1 and pub.stddev == "population":
            sd *= (n / (n - 1)) ** 0.5  # population sd (divided by n) -> sample sd (divided by n - 1)
        ranged = kind == "range"
        row = {
            "workload": r.get("workload"),
            "metric_key": key,
            "value": (float(r["value_min"]) + float(r["value_max"])) / 2 if ranged else float(r["value"]),
            "low": float(r["value_min"]) if ranged else None,
            "high": float(r["value_max"]) if ranged else None,
            "statistic": "best" if kind == "best" else "mean",
            "filesystem": mapped.configuration if mapped else label,
            "unit": r.get("unit", ""),
            "sd": sd,
            "n": n,
            "_raw": run is not None,
        }
        if mapped:
            row.update({k: str(v) for k, v in mapped.levels.items()})
        row.update({k: str(v) for k, v in where.items()})
        lower = key in pub.lower_is_better or (not pub.lower_is_better and str(row["unit"]) in TIME_UNITS)
        row["higher_is_better"] = not lower
        over = [str(f) for f in (r.get("over") or [])]
        if over:  # a range over every level of these factors stands for each level
            levels = []
            for f in over:
                fac = study.factor(f)
                levels.append([str(x) for x in fac.levels] if fac else [])
            for combo in itertools.product(*levels):
                rows.append({**row, **dict(zip(over, combo))})
        else:
            rows.append(row)
    if not rows:
        return pd.DataFrame(columns=["workload", "metric_key", "value", "higher_is_better", "filesystem", "sd", "n"])
    df = pd.DataFrame(rows)
    if bool(df["low"].isna().all()):
        df = df.drop(columns=["low", "high"])
    if bool((df["statistic"] == "mean").all()):
        df = df.drop(columns=["statistic"])
    cell = [c for c in df.columns if c not in ("value", "sd", "n", "_raw", "unit", "higher_is_better", "low", "high")]
    raw_cells = df[df["_raw"]].groupby(cell, dropna=False).size().reset_index()[cell]
    if not raw_cells.empty:
        marked = df.merge(raw_cells.assign(_has_raw=True), on=cell, how="left")
        # a boolean mask selects rows: a DataFrame (pandas' stubs type the indexing as DataFrame | Series)
        df = cast(pd.DataFrame, marked[marked["_raw"] | marked["_has_raw"].isna()]).drop(columns=["_has_raw"])
    return df.drop(columns=["_raw"]).reset_index(drop=True)


@dataclass
class PaperResult:
    claim: Claim
    verdict: Verdict
    paper_verdict: str
    why: str
    expected: str | None

    @property
    def misjudged(self) -> bool:
        """The check disagrees with the verdict the study file expects (no expectation: not misjudged)."""
        return self.expected is not None and self.expected != self.paper_verdict

    def as_json(self) -> dict:
        return {
            "claim": self.claim.id,
            "paper_verdict": self.paper_verdict,
            "why": self.why,
            "expected": self.expected,
            "test": self.verdict.test,
            "descriptive": self.verdict.descriptive,
            "evidence": self.verdict.evidence(),
            "paper_says": (self.claim.paper_says.model_dump() if self.claim.paper_says else None),
            "basis": self.claim.basis,
        }


def check_paper(study: Study) -> list[PaperResult]:
    """Every claim of the study on its own published numbers."""
    frame = paper_frame(study)
    checker = ClaimChecker(study, frame, paper=True)
    out = []
    for claim in study.claims:
        if frame.empty and claim.test != "untestable":
            v = Verdict(claim, "inconclusive", "the study file publishes no numbers")
            word = NO_DATA
        else:
            v = checker.check(claim)
            word = v.paper_verdict
            if v.no_data:
                word = NO_DATA
        why = v.reason
        if v.test:
            why = f"{v.test}: {why}"
        ev = v.evidence(3)
        if ev and word != "not testable":
            why += " | " + " | ".join(ev)
        if v.descriptive:
            why += " | descriptive: the paper gives point values or ranges, without a spread"
        if claim.paper_says and word == "contradicted":
            why += f" | the paper's data: {claim.paper_says.evidence}"
        out.append(PaperResult(claim, v, word, why, claim.expect_paper))
    return out
