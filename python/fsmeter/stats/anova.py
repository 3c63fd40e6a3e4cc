"""k-factor full factorial design with replications: ANOVA table, effects with CIs, residuals.

Method: Jain, *The Art of Computer Systems Performance Analysis*, ch. 22
("Two-factor full factorial design with replications") and its k-factor
generalisation (ch. 23), one factor with unequal replications from ch. 20,
multiplicative (log) models from ch. 18.7/21.7. The ANOVA table itself comes from
statsmodels (OLS + ``anova_lm``); effects are computed in Jain's form, as
sum-to-zero deviations from the grand mean, so they read like his tables.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats as sps
from statsmodels.stats.anova import anova_lm

from fsmeter.errors import UserError
from fsmeter.stats.summary import check_level

ERROR_TERM = "error"
TOTAL_TERM = "total"


def _where(df: pd.DataFrame, idx) -> str:
    """'line 7' for frames loaded by ``analyze.load_csv`` (index = CSV line), else 'row 5'."""
    return f"line {idx}" if df.index.name == "line" else f"row {idx}"


def validate_design(df: pd.DataFrame, response: str, factors: Sequence[str]) -> pd.DataFrame:
    """Check ``df`` can carry a full factorial analysis; return a clean copy.

    Raises UserError naming the column/line and what to do for: unknown columns,
    non-numeric or missing responses, missing factor levels, a factor with one
    level, empty cells, cells without replications, and -- for two or more
    factors, where Jain's formulation needs it -- unequal replications.
    """
    cols = [str(c) for c in df.columns]
    avail = ", ".join(cols)
    if response not in df.columns:
        raise UserError(f"no column {response!r} for the response: available columns are {avail}")
    factors = list(factors)
    for f in factors:
        if f not in df.columns:
            raise UserError(f"no column {f!r} for a factor: available columns are {avail}")
    if len(set(factors)) != len(factors):
        raise UserError(f"factor listed twice in {','.join(factors)}: list each column once")
    if response in factors:
        raise UserError(f"{response!r} is both the response and a factor: pick other factors")
    if df.empty:
        raise UserError("no rows to analyse: check the file or the filter")

    out = df[[*factors, response]].copy()
    raw = out[response]
    num = pd.to_numeric(raw, errors="coerce")
    bad = num.isna()
    if bad.any():
        idx = bad[bad].index[0]
        val = raw[bad].iloc[0]  # by position: stacked responses repeat each line number
        what = "is empty" if pd.isna(val) else f"has {val!r}, not a number"
        raise UserError(
            f"response column {response!r} {what} at {_where(df, idx)}: fix or remove that row, "
            "or choose a numeric column"
        )
    if not np.all(np.isfinite(num.to_numpy(dtype=float))):
        idx = num[~np.isfinite(num)].index[0]
        raise UserError(f"response column {response!r} is infinite at {_where(df, idx)}: fix or remove that row")
    out[response] = num.astype(float)
    for f in factors:
        miss = out[f].isna()
        if miss.any():
            raise UserError(
                f"factor column {f!r} is empty at {_where(df, miss[miss].index[0])}: fill it or drop the row"
            )
        out[f] = out[f].astype(str)
        levels = out[f].unique()
        if len(levels) < 2:
            raise UserError(
                f"factor {f!r} has only one level ({levels[0]!r}): nothing to compare; drop it from --factors"
            )
    if not factors:
        return out

    counts = out.groupby(factors, sort=True).size()
    full = list(itertools.product(*[sorted(out[f].unique()) for f in factors]))
    if len(counts) < len(full):
        present = set(counts.index if len(factors) > 1 else [(i,) for i in counts.index])
        missing = [c for c in full if tuple(c) not in present]
        shown = "; ".join(", ".join(f"{f}={v}" for f, v in zip(factors, c)) for c in missing[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise UserError(
            f"empty cells in the {' x '.join(factors)} design: no rows for {shown}{more}; a full factorial "
            "needs every combination -- add the runs, drop a factor, or join factors with '+'"
        )
    if counts.min() < 2:
        cell = counts.idxmin()
        cell = cell if isinstance(cell, tuple) else (cell,)
        shown = ", ".join(f"{f}={v}" for f, v in zip(factors, cell))
        raise UserError(f"cell {shown} has 1 row: the error term needs at least 2 replications per cell; add trials")
    if len(factors) >= 2 and counts.nunique() > 1:
        lo, hi = counts.idxmin(), counts.idxmax()
        raise UserError(
            f"unbalanced design: cells have {counts.min()} to {counts.max()} replications "
            f"(e.g. {dict(zip(factors, lo))} has {counts.min()}, {dict(zip(factors, hi))} has "
            f"{counts.max()}); Jain's factorial analysis needs equal replications -- drop the "
            "extra trials or add the missing ones"
        )
    return out


@dataclass(frozen=True)
class AnovaRow:
    """One line of the ANOVA table (Jain Table 22.5 layout)."""

    term: str
    ss: float
    pct_variation: float  # 100 SS / SST (Jain: "percentage of variation explained")
    df: int
    ms: float
    f: float
    f_crit: float  # F_{1-alpha; df, df_e}
    p: float
    significant: bool


@dataclass(frozen=True)
class Effect:
    """One effect (main or interaction) at one level combination, with its CI.

    ``value`` is a deviation from the grand mean (sum-to-zero over each factor's
    levels). In a log model ``ratio = exp(value)`` is the multiplicative effect.
    """

    term: str
    levels: tuple[str, ...]
    value: float
    stddev: float
    low: float
    high: float
    significant: bool  # CI excludes zero
    ratio: float | None = None


@dataclass
class AnovaResult:
    response: str
    factors: list[str]
    log: bool
    level: float
    alpha: float
    n: int
    replications: int | None  # None when unequal (one factor only)
    grand_mean: float
    grand_mean_ci: tuple[float, float]
    table: list[AnovaRow]
    effects: list[Effect]
    sst: float
    sse: float
    df_error: int
    s_e: float  # sqrt(MSE), standard deviation of errors
    fitted: np.ndarray
    residuals: np.ndarray
    qq_theoretical: np.ndarray  # normal order-statistic medians (probplot osm)
    qq_ordered: np.ndarray  # ordered residuals (probplot osr)
    qq_fit: tuple[float, float, float]  # slope, intercept, r of the Q-Q line
    shapiro_w: float
    shapiro_p: float
    notes: list[str] = field(default_factory=list)

    def row(self, term: str) -> AnovaRow:
        for r in self.table:
            if r.term == term:
                return r
        raise KeyError(term)

    def table_frame(self) -> pd.DataFrame:
        return pd.DataFrame([r.__dict__ for r in self.table]).set_index("term")

    def effects_frame(self) -> pd.DataFrame:
        return pd.DataFrame([e.__dict__ for e in self.effects])


def _terms(k: int) -> list[tuple[int, ...]]:
    """All non-empty factor subsets, main effects first, then by order (A, B, AB, ...)."""
    return [c for r in range(1, k + 1) for c in itertools.combinations(range(k), r)]


def _effects(
    work: pd.DataFrame, names: list, factors: list, grand: float, s_e: float, N: int, t: float, log: bool
) -> tuple[list[Effect], pd.Series, bool]:
    """The effects of every term and their CIs, from marginal means (Jain 22.2), by inclusion-exclusion;
    with their cell counts and whether the design is balanced (factorial_anova's docstring has the method)."""

    def label(idx: tuple[int, ...]) -> str:
        return ":".join(factors[i] for i in idx)

    n_levels = [work[n].nunique() for n in names]
    counts = work.groupby(names).size()
    balanced = counts.nunique() == 1
    marg: dict[tuple[int, ...], pd.Series] = {
        s: work.groupby([names[i] for i in s])["y"].mean()
        for r in range(1, len(names) + 1)
        for s in itertools.combinations(range(len(names)), r)
    }

    def marginal(s: tuple[int, ...], lv: dict[int, str]) -> float:
        if not s:
            return grand
        key = tuple(lv[i] for i in s)
        return float(marg[s].loc[key if len(key) > 1 else key[0]])

    effects: list[Effect] = []
    for idx in _terms(len(factors)):
        if balanced:
            sd_common = s_e * math.sqrt(math.prod(n_levels[i] - 1 for i in idx) / N)
        levels_lists = [sorted(work[names[i]].unique()) for i in idx]
        for combo in itertools.product(*levels_lists):
            lv = dict(zip(idx, combo))
            val = sum(
                (-1) ** (len(idx) - len(sub)) * marginal(sub, lv)
                for r in range(len(idx) + 1)
                for sub in itertools.combinations(idx, r)
            )
            if balanced:
                sd = sd_common
            else:  # one factor, unequal r_j (Jain ch. 20): Var(ybar_j - ybar) = s^2 (1/r_j - 1/N)
                r_j = int((work[names[idx[0]]] == combo[0]).sum())
                sd = s_e * math.sqrt(1.0 / r_j - 1.0 / N)
            lo, hi = val - t * sd, val + t * sd
            effects.append(
                Effect(label(idx), tuple(combo), val, sd, lo, hi, not (lo <= 0 <= hi), math.exp(val) if log else None)
            )
    return effects, counts, balanced


def _residual_checks(model, alpha: float, notes: list) -> tuple:
    """Residuals and fitted values of the fit, the normal Q-Q data (scipy probplot) and Shapiro-Wilk on the
    residuals (a note when they fail it at `alpha`) -> (residuals, fitted, (osm, osr), (slope, icpt, r), (w, p))."""
    resid = np.asarray(model.resid, dtype=float)
    fitted = np.asarray(model.fittedvalues, dtype=float)
    if np.ptp(resid) > 0 and resid.size >= 3:
        (osm, osr), (slope, icpt, r) = sps.probplot(resid, dist="norm")
        sw = sps.shapiro(resid)
        w, pw = float(sw.statistic), float(sw.pvalue)
        if pw < alpha:
            notes.append(
                f"residuals fail Shapiro-Wilk (p={pw:.3g} < {alpha:g}): errors may not be normal; "
                "check the Q-Q plot, or try --log if spread grows with the mean"
            )
    else:
        osm = osr = np.zeros(0)
        slope = icpt = r = w = pw = math.nan
    return resid, fitted, (osm, osr), (slope, icpt, r), (w, pw)


def factorial_anova(
    df: pd.DataFrame,
    response: str,
    factors: Sequence[str],
    level: float = 0.95,
    alpha: float | None = None,
    log: bool = False,
) -> AnovaResult:
    """Full factorial ANOVA with replications on ``response`` over ``factors``.

    * Table: statsmodels OLS with sum-to-zero contrasts (``C(x, Sum)``) and
      ``anova_lm(typ=2)``. For a balanced design type 1, 2 and sum-contrast
      type 3 sums of squares coincide (the effect columns are orthogonal), and
      equal Jain's SSA, SSB, SSAB ... with SSE = sum of squared residuals and
      SST = SSY - SS0 = SSA + SSB + SSAB + SSE. One factor with unequal
      replications is allowed (a single term: every type agrees).
    * F_crit is F_{1-alpha; df, df_e}; a term is significant when F > F_crit.
    * Effects (Jain 22.2): mu = grand mean; alpha_j = ybar_.j. - mu; beta_i =
      ybar_i.. - mu; gamma_ij = ybar_ij. - ybar_.j. - ybar_i.. + mu, and so on
      by inclusion-exclusion for higher orders. Standard deviations (Jain Table
      22.5, generalised): s_effect = s_e sqrt(prod(L_f - 1) / N) over the factors
      f of the term (s_mu = s_e / sqrt(N)); for one factor with r_j trials at
      level j, s_alpha_j = s_e sqrt(1/r_j - 1/N). CIs use t_{1-a/2; df_e}.
    * ``log=True`` fits log(y) (Jain's multiplicative model, for effects that
      scale the response, e.g. when max/min of the cells is large): effects
      become ratios exp(effect). Needs every response > 0.
    * Residual checks: fitted values (= cell means), residuals, normal Q-Q data
      (scipy ``probplot``) and Shapiro-Wilk on residuals (scipy ``shapiro``).
    """
    check_level(level)
    alpha = 1.0 - level if alpha is None else float(alpha)
    if not 0 < alpha < 1:
        raise UserError(f"alpha = {alpha}: must be between 0 and 1")
    factors = list(factors)
    if not factors:
        raise UserError("ANOVA needs at least one factor: pass --factors")
    data = validate_design(df, response, factors)
    notes: list[str] = []

    y = data[response].to_numpy(dtype=float)
    if log:
        if np.any(y <= 0):
            idx = data.index[np.argmax(y <= 0)]
            raise UserError(
                f"--log needs every {response!r} > 0 but {_where(df, idx)} has {y[y <= 0][0]:g}: "
                "drop --log or remove that row"
            )
        y = np.log(y)

    # Internal names keep patsy away from column names such as "access mode" or "fs-opts".
    names = [f"f{i}" for i in range(len(factors))]
    work = pd.DataFrame({n: data[f].to_numpy() for n, f in zip(names, factors)})
    work["y"] = y
    formula = "y ~ " + " * ".join(f"C({n}, Sum)" for n in names)
    model = smf.ols(formula, data=work).fit()
    aov = anova_lm(model, typ=2)

    N = int(y.size)
    grand = float(y.mean())
    sst = float(np.sum((y - grand) ** 2))
    sse = float(aov.loc["Residual", "sum_sq"])
    df_e = int(round(aov.loc["Residual", "df"]))
    mse = sse / df_e
    s_e = math.sqrt(mse)
    t = float(sps.t.ppf(0.5 + level / 2.0, df_e))

    def label(idx: tuple[int, ...]) -> str:
        return ":".join(factors[i] for i in idx)

    def sm_label(idx: tuple[int, ...]) -> str:
        return ":".join(f"C({names[i]}, Sum)" for i in idx)

    table: list[AnovaRow] = []
    for idx in _terms(len(factors)):
        ss = float(aov.loc[sm_label(idx), "sum_sq"])
        d = int(round(aov.loc[sm_label(idx), "df"]))
        ms = ss / d
        fval = ms / mse if mse > 0 else math.inf
        p = float(sps.f.sf(fval, d, df_e)) if mse > 0 else 0.0
        fcrit = float(sps.f.ppf(1 - alpha, d, df_e))
        table.append(AnovaRow(label(idx), ss, 100 * ss / sst if sst else math.nan, d, ms, fval, fcrit, p, fval > fcrit))
    table.append(
        AnovaRow(ERROR_TERM, sse, 100 * sse / sst if sst else math.nan, df_e, mse, math.nan, math.nan, math.nan, False)
    )
    table.append(AnovaRow(TOTAL_TERM, sst, 100.0, N - 1, math.nan, math.nan, math.nan, math.nan, False))

    effects, counts, balanced = _effects(work, names, factors, grand, s_e, N, t, log)
    resid, fitted, (osm, osr), (slope, icpt, r), (w, pw) = _residual_checks(model, alpha, notes)
    s_mu = s_e / math.sqrt(N)
    if not balanced:
        notes.append("unequal replications across levels: effects use Jain's one-factor formulas for unequal r_j")
    return AnovaResult(
        response=response,
        factors=factors,
        log=log,
        level=level,
        alpha=alpha,
        n=N,
        replications=int(counts.iloc[0]) if balanced else None,
        grand_mean=grand,
        grand_mean_ci=(grand - t * s_mu, grand + t * s_mu),
        table=table,
        effects=effects,
        sst=sst,
        sse=sse,
        df_error=df_e,
        s_e=s_e,
        fitted=fitted,
        residuals=resid,
        qq_theoretical=np.asarray(osm),
        qq_ordered=np.asarray(osr),
        qq_fit=(float(slope), float(icpt), float(r)),
        shapiro_w=w,
        shapiro_p=pw,
        notes=notes,
    )
