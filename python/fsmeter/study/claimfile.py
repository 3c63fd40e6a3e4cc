"""A claim file and its data: the study verdict engine for any campaign (``fsmeter claim check``).

CLAIM.toml holds one or more ``[[claims]]`` in the studies' schema (fsmeter.study.model.Claim: id,
says, kind, tiers, metrics, effect_pct, size_pct, margin_pct, ratio_range, where, sensitive_to,
bound_by, decide ...), an optional ``[rules]`` (the studies' level, min_difference_pct, intervals,
settle_s, plus the gates this file wants: min_phase_s, max_other_cpu_share, max_cache_read_share),
optional ``[[hardware]]`` (the reference machine a ``bound_by`` compares with), and optional
``lower_is_better`` / ``higher_is_better`` lists of metrics.

The data are a tidy table, one row per trial and metric (TRIALS.csv), or a campaign of a results
store. CSV columns: ``config`` (the names the tiers use), ``metric``, ``value``, ``trial``; one column
per factor a claim's ``where`` names (or that varies); and optionally the regime columns
(fsmeter.study.gates.REGIME_COLUMNS: ``phase_s``, ``other_cpu_share``, ``cache_read_share``,
``cache_write_share``, ``storage_read_latency_ms`` and the probe's other figures). A missing regime column means "not
measured": a gate that needs it fails closed.

A metric is better when higher, unless listed in ``lower_is_better`` or named like a time
(ending in ``_s``, ``_ms``, ``_us``, ``_ns`` without ``per_``, as ``real_s`` but not ``MiB_per_s``; or
containing ``latency``) and not listed in ``higher_is_better``. A stored campaign's metrics carry their
own direction.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fsmeter.errors import UserError
from fsmeter.study.gates import REGIME_COLUMNS
from fsmeter.study.model import Claim, Machine, Rules

#: The CSV's required columns.
CSV_COLUMNS = ("config", "metric", "value", "trial")
_TIME_SUFFIXES = ("_s", "_ms", "_us", "_ns")


class ClaimRules(Rules):
    """A claim file's [rules]: the study rules, and the gates it wants (none unless set, but the cache
    gate of a claim sensitive to cache_residency)."""

    min_phase_s: float | None = Field(None, gt=0, description="gate: every phase at least this long (s)")
    max_other_cpu_share: float | None = Field(
        None, gt=0, le=1, description="gate: others' CPU share of the machine at most this during a phase"
    )
    max_cache_read_share: float = Field(
        0.5, ge=0, le=1, description="a claim sensitive to cache_residency: at most this share of reads from the cache"
    )


class ClaimFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    claims: list[Claim] = Field(min_length=1)
    rules: ClaimRules = Field(default_factory=ClaimRules)
    hardware: list[Machine] = Field(default_factory=list)
    lower_is_better: list[str] = Field(default_factory=list)
    higher_is_better: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> ClaimFile:
        ids = [c.id for c in self.claims]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"claims: the id {dup[0]!r} is used twice: give each claim its own id")
        machines = [m.id for m in self.hardware]
        for c in self.claims:
            if c.machine is not None and c.machine not in machines:
                raise ValueError(f"claim {c.id}: machine: {c.machine!r} is not a machine of [[hardware]]")
            if c.test == "variation":
                raise ValueError(f"claim {c.id}: kind: a variation claim needs a study's design; use fsmeter analyze")
        both = set(self.lower_is_better) & set(self.higher_is_better)
        if both:
            raise ValueError(f"lower_is_better and higher_is_better both name {sorted(both)[0]!r}: name it once")
        return self

    # -- what ClaimChecker asks of a study ---------------------------------------------------------------
    @property
    def study(self) -> ClaimRules:  # the gate thresholds
        return self.rules

    @property
    def workloads(self) -> list:
        return []

    @property
    def factors(self) -> list:
        return []

    def machine_of(self, claim: Claim) -> Machine | None:
        if claim.machine is not None:
            return next(m for m in self.hardware if m.id == claim.machine)
        return self.hardware[0] if self.hardware else None

    def alpha_of(self, claim: Claim) -> float:
        return claim.alpha if claim.alpha is not None else self.rules.alpha

    def higher_is_better_of(self, metric: str) -> bool:
        if metric in self.lower_is_better:
            return False
        if metric in self.higher_is_better:
            return True
        name = metric.rsplit(".", 1)[-1].lower()
        timed = (name.endswith(_TIME_SUFFIXES) and "per_" not in name) or "latency" in name
        return not timed


def load_claim_file(path: str | Path) -> ClaimFile:
    """A CLAIM.toml, checked: every error is one line naming the field."""
    from fsmeter.textfile import loads_toml, read_text

    p = Path(path)
    data = loads_toml(read_text(p, "claim file"), str(p))
    try:
        return ClaimFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = list(err["loc"])
        if len(loc) >= 2 and loc[0] == "claims" and isinstance(loc[1], int):
            claims = data.get("claims") if isinstance(data.get("claims"), list) else []
            cid = claims[loc[1]].get("id") if loc[1] < len(claims) and isinstance(claims[loc[1]], dict) else None
            loc = [f"claims[{loc[1]}]" + (f" ({cid})" if cid else ""), *loc[2:]]
        where = ".".join(str(x) for x in loc)
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise UserError(f"{p}: {where + ': ' if where else ''}{msg}") from None


def frame_from_csv(path: str | Path, cf: ClaimFile) -> pd.DataFrame:
    """TRIALS.csv as the checker's frame; one line names the first bad row or column."""
    from fsmeter.stats.analyze import load_csv

    p = Path(path)
    df = load_csv(p)
    missing = [c for c in CSV_COLUMNS if c not in df.columns]
    if missing:
        raise UserError(
            f"{p}: no column {missing[0]!r}: a TRIALS.csv has the columns {', '.join(CSV_COLUMNS)} "
            "(and one per factor, and optionally the regime columns)"
        )
    for col in ("config", "metric"):
        bad = df[col].isna() | (df[col].astype(str).str.strip() == "")
        if bad.any():
            raise UserError(f"{p} line {bad[bad].index[0]}: {col} is empty: name the {col} of every row")
    value = pd.to_numeric(df["value"], errors="coerce")
    bad = value.isna() | ~value.map(lambda x: math.isfinite(x) if isinstance(x, float) else True)
    if bad.any():
        line = bad[bad].index[0]
        raise UserError(f"{p} line {line}: value {str(df['value'][line])[:40]!r} is not a finite number")
    trial = pd.to_numeric(df["trial"], errors="coerce")
    bad = trial.isna() | (trial != trial.round()) | (trial < 1)
    if bad.any():
        line = bad[bad].index[0]
        raise UserError(f"{p} line {line}: trial {str(df['trial'][line])[:40]!r}: a trial is a whole number >= 1")
    out = pd.DataFrame(
        {
            "workload": "",
            "metric_key": df["metric"].astype(str).str.strip(),
            "value": value.astype(float),
            "filesystem": df["config"].astype(str).str.strip(),
            "trial": trial.astype(int),
        },
        index=df.index,
    )
    out["higher_is_better"] = out["metric_key"].map(cf.higher_is_better_of)
    for col in df.columns:
        if col in CSV_COLUMNS:
            continue
        if col in REGIME_COLUMNS and col != "storage_class":
            num = pd.to_numeric(df[col], errors="coerce")
            bad = df[col].notna() & (num.isna() | ~num.fillna(0).map(math.isfinite) | (num < 0))
            if bad.any():
                line = bad[bad].index[0]
                raise UserError(
                    f"{p} line {line}: {col} {str(df[col][line])[:40]!r} is not a number >= 0: "
                    "write the measurement, or leave the cell empty (not measured)"
                )
            share = col in ("other_cpu_share", "cache_read_share", "cache_write_share")
            if share and (num > 1).any():
                line = num[num > 1].index[0]
                raise UserError(f"{p} line {line}: {col} {num[line]:g} is a share: between 0 and 1")
            out[col] = num
        else:
            out[col] = df[col].map(lambda v: v if pd.isna(v) else str(v).strip())
    factors = [c for c in df.columns if c not in CSV_COLUMNS and c not in REGIME_COLUMNS]
    dup = out.duplicated(["metric_key", "filesystem", "trial", *factors])
    if dup.any():
        line = dup[dup].index[0]
        raise UserError(
            f"{p} line {line}: a second row for config {out['filesystem'][line]!r}, metric "
            f"{out['metric_key'][line]!r}, trial {out['trial'][line]} and the same factor levels: one row per trial"
        )
    return out.reset_index(drop=True)


def frame_from_store(db: str | Path, campaign: str | None, cf: ClaimFile) -> pd.DataFrame:
    """A stored campaign's kept trials as the checker's frame: config = the filesystem label, metric =
    "phase.metric", the campaign's factors, and the regime (phases, environment, storage probe)."""
    from fsmeter.store import load, open_store
    from fsmeter.store.health import guard
    from fsmeter.study.frames import campaign_frame

    p = Path(db)
    if not p.is_file():
        raise UserError(f"no such results database: {p}: check the path given to --db")
    with guard(p):
        with open_store(p, create=False) as store:
            cid = store.campaign_id(campaign)
        data = load(p, cid)
    if data["metrics"].empty:
        raise UserError(f"{p}: campaign {cid} has no kept trials to check claims on")
    return campaign_frame(data)


__all__ = ["CSV_COLUMNS", "ClaimFile", "ClaimRules", "frame_from_csv", "frame_from_store", "load_claim_file"]
