"""One entry point for analysing a tidy DataFrame, shared by ``fsmeter analyze`` and the HTML report.

``analyze_frame`` returns plain data (:class:`Analysis`); :func:`render` draws it
with rich. Loading helpers turn a CSV or the results store into such a frame.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from rich import box
from rich.console import Console
from rich.table import Table

from fsmeter.errors import UserError
from fsmeter.stats.anova import AnovaResult, factorial_anova, validate_design
from fsmeter.stats.summary import Summary, check_level, summarize

STACKED_FACTOR = "response"


@dataclass(frozen=True)
class CellSummary:
    levels: dict[str, str]  # factor -> level of this cell
    summary: Summary


@dataclass
class Analysis:
    response: str
    factors: list[str]
    level: float
    log: bool
    cells: list[CellSummary]
    anova: AnovaResult | None  # None when there are no factors
    notes: list[str] = field(default_factory=list)

    def cells_frame(self) -> pd.DataFrame:
        """One row per cell: factor levels then every summary statistic (CI flattened)."""
        rows = []
        for c in self.cells:
            s = c.summary.to_dict()
            ci = s.pop("ci")
            s.pop("notes")
            rows.append(
                {**c.levels, **s, "ci_low": ci["low"], "ci_high": ci["high"], "ci_half_width_pct": ci["half_width_pct"]}
            )
        return pd.DataFrame(rows)

    def to_dict(self) -> dict:
        """Plain lists/dicts/floats for templates and JSON (NaN stays NaN: undefined, not zero)."""
        out: dict = {
            "response": self.response,
            "factors": self.factors,
            "level": self.level,
            "log": self.log,
            "cells": self.cells_frame().to_dict("records"),
            "notes": list(self.notes),
            "anova": None,
        }
        a = self.anova
        if a is not None:
            out["anova"] = {
                "table": a.table_frame().reset_index().to_dict("records"),
                "effects": [{**e.__dict__, "levels": list(e.levels)} for e in a.effects],
                "grand_mean": a.grand_mean,
                "grand_mean_ci": list(a.grand_mean_ci),
                "s_e": a.s_e,
                "df_error": a.df_error,
                "replications": a.replications,
                "alpha": a.alpha,
                "shapiro_w": a.shapiro_w,
                "shapiro_p": a.shapiro_p,
                "fitted": a.fitted.tolist(),
                "residuals": a.residuals.tolist(),
                "qq": {
                    "theoretical": a.qq_theoretical.tolist(),
                    "ordered": a.qq_ordered.tolist(),
                    "slope": a.qq_fit[0],
                    "intercept": a.qq_fit[1],
                    "r": a.qq_fit[2],
                },
            }
        return out


def analyze_frame(
    df: pd.DataFrame,
    response: str,
    factors: Sequence[str],
    level: float = 0.95,
    log: bool = False,
    alpha: float | None = None,
) -> Analysis:
    """Per-cell summaries (Jain ch. 12-13) and, with factors, the full factorial ANOVA (ch. 22).

    ``df`` has one row per observation (trial); ``response`` is a numeric column,
    ``factors`` are columns whose distinct values are the levels. ``level`` is the
    confidence level for every CI; ``alpha`` (default 1 - level) for F tests.
    Bad input raises :class:`UserError` (see ``anova.validate_design``).
    """
    check_level(level)
    factors = list(factors)
    if response in df.columns:  # before the design checks: the value itself is what to fix
        num = pd.to_numeric(df[response], errors="coerce")
        big = (num.abs() > MAX_RESPONSE) & np.isfinite(num)
        if big.any():
            idx = big[big].index[0]
            where = f"line {idx}" if df.index.name == "line" else f"row {idx}"
            raise UserError(
                f"response column {response!r} has {float(num[big].iloc[0]):g} at {where}: beyond "
                f"±{MAX_RESPONSE:g}, where sums of squares overflow: fix or remove that row, or rescale"
            )
    data = validate_design(df, response, factors)
    cells: list[CellSummary] = []
    if factors:
        for key, grp in data.groupby(factors, sort=True):
            key = key if isinstance(key, tuple) else (key,)
            cells.append(CellSummary(dict(zip(factors, map(str, key))), summarize(grp[response], level)))
        try:
            result = factorial_anova(data, response, factors, level=level, alpha=alpha, log=log)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            # validate_design refuses the designs it knows to be unusable; whatever numbers still defeat the
            # computation (a degenerate fit) are bad input too, said in one line rather than a traceback.
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise UserError(
                f"the ANOVA of {response!r} cannot be computed on these values ({why}): check the data"
            ) from None
        notes = list(result.notes)
    else:
        cells.append(CellSummary({}, summarize(data[response], level)))
        result, notes = None, []
    return Analysis(response, factors, level, log, cells, result, notes)


# ---------------------------------------------------------------- loading


#: The confidence levels fsmeter's tables are made for (and Jain's tables list).
LEVELS = (0.90, 0.95, 0.99)
#: The largest magnitude a response may have: squares of larger values overflow the ANOVA's sums of squares.
MAX_RESPONSE = 1e100


def check_cli_level(level: float, option: str = "--level") -> float:
    """A confidence level given on the command line: one of LEVELS."""
    if not any(abs(level - lv) < 1e-9 for lv in LEVELS):
        raise UserError(f"{option} {level!r}: use 0.90, 0.95 or 0.99")
    return float(level)


def load_csv(path: str | Path) -> pd.DataFrame:
    """Read a CSV; the index is the file's line number so errors can point at it.

    The file is checked before pandas reads it: a header of distinct, non-empty names and every row with
    exactly as many fields as the header (pandas would otherwise take surplus fields as an index and shift
    every column, or rename a repeated column 'a.1')."""
    import csv
    import io

    from fsmeter.textfile import read_text

    p = Path(path)
    if not p.is_file():
        raise UserError(f"no such file: {p}: check the path given to --csv")
    text = read_text(p, "CSV file")
    rows, lines = [], []
    try:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        start = 1
        for row in reader:
            if row:  # pandas skips blank lines too
                rows.append(row)
                lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise UserError(f"{p} line {reader.line_num}: not valid CSV ({exc}): check the file") from None
    if not rows:
        raise UserError(f"{p}: empty: give a header line and one row per trial")
    header = [h.strip() for h in rows[0]]
    for i, h in enumerate(header):
        if not h:
            raise UserError(f"{p} line {lines[0]}: column {i + 1} of the header has no name: name every column")
        if h in header[:i]:
            raise UserError(
                f"{p} line {lines[0]}: column {h!r} appears twice in the header: give each column its own name"
            )
    if len(rows) == 1:
        raise UserError(f"{p}: a header and no rows: give one row per trial")
    for row, line in zip(rows[1:], lines[1:]):
        if len(row) != len(header):
            raise UserError(
                f"{p} line {line}: {len(row)} fields, but the header names {len(header)} columns: "
                "fix that row (a value with a comma needs quotes)"
            )
    try:
        df = pd.read_csv(io.StringIO(text), index_col=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise UserError(f"cannot read {p} as CSV ({str(exc).splitlines()[0]}): check the file") from None
    df.columns = header
    if len(df) != len(lines) - 1:  # pandas and the csv module disagree on the rows: refuse rather than guess
        raise UserError(f"cannot read {p} as CSV: {len(df)} rows read, {len(lines) - 1} expected: check the quoting")
    df.index = pd.Index(lines[1:], name="line")
    return df


def stack_responses(df: pd.DataFrame, responses: Sequence[str], name: str = STACKED_FACTOR) -> pd.DataFrame:
    """Wide to long: several response columns become one ``value`` column plus a factor ``name``
    whose levels are the column names (e.g. block_read_kbs, block_write_kbs = access mode)."""
    avail = ", ".join(map(str, df.columns))
    for r in responses:
        if r not in df.columns:
            raise UserError(f"no column {r!r} for the response: available columns are {avail}")
    for col in (name, "value"):
        if col in df.columns:
            raise UserError(f"cannot stack responses: the data already has a column {col!r}; rename it")
    for r in responses:  # checked here, where the column still has its own name (stacked, it is 'value')
        num = pd.to_numeric(df[r], errors="coerce")
        bad = num.isna() | ~np.isfinite(num.fillna(0).astype(float)) | (num.abs() > MAX_RESPONSE)
        if bad.any():
            idx, val = bad[bad].index[0], df[r][bad].iloc[0]
            where = f"line {idx}" if df.index.name == "line" else f"row {idx}"
            what = (
                "is empty" if pd.isna(val) else f"has {str(val)[:40]!r}, not a finite number within ±{MAX_RESPONSE:g}"
            )
            raise UserError(
                f"response column {r!r} {what} at {where}: fix or remove that row, or choose a numeric column"
            )
    parts = []
    for r in responses:
        part = df.drop(columns=[c for c in responses]).copy()
        part[name] = r
        part["value"] = df[r]
        parts.append(part)
    return pd.concat(parts)  # keeps the line-number index for error messages


def combine_factors(df: pd.DataFrame, spec: str) -> tuple[pd.DataFrame, str]:
    """Factor spec ``a+b`` -> a new column 'a+b' with levels 'x/y' (e.g. filesystem+kernel = setup)."""
    if spec in df.columns or "+" not in spec:
        return df, spec
    parts = [p.strip() for p in spec.split("+")]
    avail = ", ".join(map(str, df.columns))
    for p in parts:
        if p not in df.columns:
            raise UserError(f"no column {p!r} in factor {spec!r}: available columns are {avail}")
    for p in parts:
        miss = df[p].isna()
        if miss.any():
            idx = miss[miss].index[0]
            where = f"line {idx}" if df.index.name == "line" else f"row {idx}"
            raise UserError(f"factor column {p!r} is empty at {where}: fill it or drop the row")
    out = df.copy()
    out[spec] = out[parts].astype(str).agg("/".join, axis=1)
    return out, spec


def metric_frame(tidy: pd.DataFrame, metric: str, factors: Sequence[str] = ()) -> pd.DataFrame:
    """Rows of one metric from the store's tidy frame (one row per trial x metric)."""
    if "metric" not in tidy.columns or "value" not in tidy.columns:
        raise UserError("store data has no metric/value columns: the store version is not supported")
    sel = tidy[tidy["metric"] == metric]
    if sel.empty:
        names = ", ".join(sorted(map(str, tidy["metric"].unique())))
        raise UserError(f"no metric {metric!r} in this campaign: available metrics are {names}")
    for col in ("workload", "phase"):
        if col in sel.columns and col not in factors and sel[col].nunique() > 1:
            vals = ", ".join(sorted(map(str, sel[col].unique())))
            raise UserError(
                f"metric {metric!r} spans several {col}s ({vals}): pick one with --{col} or add {col} to --factors"
            )
    return sel


# ---------------------------------------------------------------- rendering


def _fmt(v: float | None, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if v == 0:
        return "0"
    if math.isinf(v):
        return "inf"
    a = abs(v)
    if a >= 1e6 or a < 1e-3:
        return f"{v:.{digits - 1}e}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(a))))
    return f"{v:,.{decimals}f}"


def _p(p: float) -> str:
    if math.isnan(p):
        return "-"
    return "<1e-16" if p < 1e-16 else f"{p:.3g}"


def _print_table(con: Console, title: str, headers: Sequence[str], rows: list[list[str]], n_text: int) -> None:
    """The first ``n_text`` columns are labels and may wrap; numbers keep their full width."""
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for i, h in enumerate(headers):
        if i < n_text:
            t.add_column(h, overflow="fold")
        else:  # a number has no spaces, so rich keeps it whole unless nothing else can give way
            t.add_column(h, justify="right", overflow="fold")
    for r in rows:
        t.add_row(*r)
    con.print(t)


def render(analysis: Analysis, console: Console | None = None) -> None:
    """Print per-cell summaries, the ANOVA table and the effects with rich."""
    # Not a terminal (pipe, file, CI log): no reason to squeeze tables into 80 columns.
    con = console or Console(width=None if sys.stdout.isatty() else 160)
    lvl = f"{analysis.level:.0%}"
    resp = analysis.response
    fac = analysis.factors
    # One label column for the cell keeps the numbers readable on an 80-column terminal.
    label = " x ".join(fac) if fac else "sample"
    nf = 1

    def cell(c: CellSummary) -> list[str]:
        return [", ".join(c.levels[f] for f in fac) or resp]

    rows = []
    for c in analysis.cells:
        s = c.summary
        rows.append(
            [
                *cell(c),
                str(s.n),
                _fmt(s.mean),
                _fmt(s.ci.low),
                _fmt(s.ci.high),
                _fmt(s.ci.half_width_pct, 2),
                _fmt(s.median),
                _fmt(s.geometric_mean),
                _fmt(s.harmonic_mean),
            ]
        )
    _print_table(
        con,
        f"{resp}: per-cell summary ({lvl} CI for the mean, Student t)",
        [label, "n", "mean", "CI low", "CI high", "±%", "median", "geo mean", "harm mean"],
        rows,
        nf,
    )

    rows = []
    for c in analysis.cells:
        s = c.summary
        rows.append(
            [
                *cell(c),
                _fmt(s.stddev),
                _fmt(s.cov, 3),
                _fmt(s.skewness, 3),
                _fmt(s.siqr),
                _fmt(s.min),
                _fmt(s.max),
                _fmt(s.range),
                _fmt(s.max_min_ratio),
            ]
        )
    _print_table(
        con,
        f"{resp}: dispersion (stddev n-1; SIQR from type-7 quartiles)",
        [label, "stddev", "COV", "skew", "SIQR", "min", "max", "range", "max/min"],
        rows,
        nf,
    )
    for c in analysis.cells:
        for note in c.summary.notes:
            con.print(f"[yellow]note[/]: {', '.join(c.levels.values()) or resp}: {note}")

    a = analysis.anova
    if a is None:
        return
    model = f"log({resp})" if a.log else resp
    design = " x ".join(a.factors) + (f", {a.replications} replications" if a.replications else "")
    rows = [
        [
            r.term,
            _fmt(r.ss),
            _fmt(r.pct_variation, 3),
            str(r.df),
            _fmt(r.ms),
            _fmt(r.f),
            _fmt(r.f_crit),
            _p(r.p),
            "*" if r.significant else "",
        ]
        for r in a.table
    ]
    _print_table(
        con,
        f"ANOVA of {model}: {design} (alpha={a.alpha:g}; Jain ch. 22)",
        ["term", "SS", "% var", "df", "MS", "F", "F crit", "p", "sig"],
        rows,
        1,
    )

    rows = [
        [
            e.term,
            ", ".join(e.levels),
            _fmt(e.value),
            _fmt(e.stddev),
            _fmt(e.low),
            _fmt(e.high),
            *([_fmt(e.ratio)] if a.log else []),
            "*" if e.significant else "",
        ]
        for e in a.effects
    ]
    _print_table(
        con,
        f"Effects on {model}: deviations from the grand mean {_fmt(a.grand_mean)}, {lvl} CI (t, {a.df_error} df)",
        ["term", "level", "effect", "stddev", "CI low", "CI high", *(["ratio"] if a.log else []), "sig"],
        rows,
        2,
    )
    con.print(
        f"s_e = {_fmt(a.s_e)} (df {a.df_error}); Shapiro-Wilk on residuals: W = {_fmt(a.shapiro_w)}, "
        f"p = {_p(a.shapiro_p)}"
    )
    for note in analysis.notes:
        con.print(f"[yellow]note[/]: {note}")
