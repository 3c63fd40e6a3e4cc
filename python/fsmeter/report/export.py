"""Exports of a stored campaign: tidy CSV, the whole campaign as JSON, and fio-compatible JSON (json and json+,
written by fsmeter.interop.fio_export).

One function per format, all registered in :data:`EXPORTERS` (name -> fn(db, campaign) -> text).
The JSON shapes are versioned; docs/reports.md (Exports) describes every field, including the subset of
fio's ``--output-format=json`` that ``fio-json`` writes.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sqlite3
from collections.abc import Callable
from typing import Any

import fsmeter
from fsmeter.errors import UserError
from fsmeter.store import TIDY_COLUMNS, default_db_path, open_store, tidy

CAMPAIGN_FORMAT = "fsmeter-campaign"
#: Version of the campaign JSON. 1: campaign, factors, cells, trials, phases (with the engine report),
#: metrics, environment.
CAMPAIGN_VERSION = 1


def _num(v: Any) -> Any:
    """NaN is not JSON: undefined numbers become null."""
    return None if isinstance(v, float) and (math.isnan(v) or math.isinf(v)) else v


# -- tidy CSV ------------------------------------------------------------------------------------------------
def export_tidy_csv(db: Any = None, campaign: str | None = None) -> str:
    """One row per trial x metric, TIDY_COLUMNS then one column per factor (= store.tidy())."""
    path = default_db_path(db)
    with open_store(path, create=False) as store:
        cid = store.campaign_id(campaign)
    return tidy(path, cid).to_csv(index=False)


def export_csv(db: Any = None, campaign: str | None = None) -> str:
    """Tidy CSV; a campaign of bonnie workloads only gets Bonnie's own table (report.bonnie_export)."""
    from fsmeter.report.bonnie_export import bonnie_csv

    path = default_db_path(db)
    with open_store(path, create=False) as store:
        cid = store.campaign_id(campaign)
    return bonnie_csv(path, cid, _family) or export_tidy_csv(db, str(cid))


# -- campaign JSON ---------------------------------------------------------------------------------------------
def _rows(conn: sqlite3.Connection, q: str, args: tuple) -> list:
    return [dict(r) for r in conn.execute(q, args).fetchall()]


def campaign_document(db: Any = None, campaign: str | None = None) -> dict:
    """The whole campaign as one JSON-ready dict (format fsmeter-campaign, see docs/reports.md, Exports)."""
    path = default_db_path(db)
    with open_store(path, create=False) as store:
        cid = store.campaign_id(campaign)
        conn = store.conn
        camp = dict(store.campaign(cid))
        cells = _rows(
            conn,
            "SELECT id, idx, workload, factors, status, cause, stop_reason FROM cells "
            "WHERE campaign_id = ? ORDER BY idx",
            (cid,),
        )
        sub = "SELECT id FROM cells WHERE campaign_id = ?"
        trials = _rows(
            conn,
            "SELECT id, cell_id, number, status, cause, started, ended, discarded, stop_reason,"
            f" half_width_pct FROM trials WHERE cell_id IN ({sub}) ORDER BY cell_id, number",
            (cid,),
        )
        tsub = f"SELECT id FROM trials WHERE cell_id IN ({sub})"
        phases = _rows(
            conn,
            "SELECT id, trial_id, seq, key, engine_phase, measured, discarded, elapsed_s, warmup_s,"
            f" interrupted, cache_method, report FROM phases WHERE trial_id IN ({tsub})"
            " ORDER BY trial_id, seq",
            (cid,),
        )
        metrics = _rows(
            conn,
            "SELECT trial_id, phase_key AS phase, name, unit, higher_is_better, headline, value"
            f" FROM metrics WHERE trial_id IN ({tsub}) ORDER BY trial_id, rowid",
            (cid,),
        )
        env = _rows(conn, f"SELECT * FROM environment WHERE trial_id IN ({tsub}) ORDER BY trial_id", (cid,))
    factors: list = []
    for c in cells:
        c["factors"] = json.loads(c["factors"])
        if not isinstance(c["factors"], dict):  # damaged: the store guard names the column
            raise TypeError(f"cell {c['id']}: factors is not a JSON object")
        factors += [k for k in c["factors"] if k not in factors]
    for t in trials:
        t["discarded"] = bool(t["discarded"])
        t["half_width_pct"] = _num(t["half_width_pct"])
    for p in phases:
        p["report"] = json.loads(p["report"])
        for k in ("measured", "discarded", "interrupted"):
            p[k] = bool(p[k])
    for m in metrics:
        m["higher_is_better"], m["headline"], m["value"] = (
            bool(m["higher_is_better"]),
            bool(m["headline"]),
            _num(m["value"]),
        )
    for e in env:
        if e.get("mkfs_options"):
            try:
                e["mkfs_options"] = json.loads(e["mkfs_options"])
            except ValueError:
                pass
        e["extra"] = json.loads(e["extra"]) if e.get("extra") else {}
    return {
        "format": CAMPAIGN_FORMAT,
        "version": CAMPAIGN_VERSION,
        "fsmeter_version": fsmeter.__version__,
        "exported": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "campaign": camp,
        "factors": factors,
        "cells": cells,
        "trials": trials,
        "phases": phases,
        "metrics": metrics,
        "environment": env,
    }


def export_json(db: Any = None, campaign: str | None = None) -> str:
    return json.dumps(campaign_document(db, campaign), indent=1, default=str)


#: The deepest nesting of lists and objects a campaign export may use (it needs about 8: a phase's report).
MAX_EXPORT_DEPTH = 64


def _export_models():
    """Pydantic models of what compare-runs reads from a campaign export (other fields are let be)."""
    from pydantic import BaseModel, ConfigDict, StrictBool, StrictFloat, StrictInt, StrictStr

    Level = StrictStr | StrictInt | StrictFloat | StrictBool | None
    loose = ConfigDict(extra="allow")

    class Campaign(BaseModel):
        model_config = loose
        id: StrictInt
        name: StrictStr

    class Cell(BaseModel):
        model_config = loose
        id: StrictInt
        workload: StrictStr
        factors: dict[StrictStr, Level]

    class Trial(BaseModel):
        model_config = loose
        id: StrictInt
        cell_id: StrictInt
        number: StrictInt
        status: StrictStr
        discarded: StrictBool

    class Metric(BaseModel):
        model_config = loose
        trial_id: StrictInt
        phase: StrictStr
        name: StrictStr
        unit: StrictStr
        higher_is_better: StrictBool
        value: StrictFloat | StrictInt | None

    class Environment(BaseModel):
        model_config = loose
        trial_id: StrictInt
        extra: dict | StrictStr | None = None

    class Document(BaseModel):
        model_config = loose
        format: StrictStr
        version: StrictInt
        campaign: Campaign
        factors: list[StrictStr] = []
        cells: list[Cell]
        trials: list[Trial]
        metrics: list[Metric]
        environment: list[Environment] = []

    return Document


def read_campaign_document(path) -> dict:
    """A campaign export (``fsmeter export --format json``) read as a hostile file: UTF-8, bounded in size
    and nesting, of the export's shape (the fields compare-runs uses, of their types), every trial's cell
    and every metric's trial present. Any other file is one UserError naming it."""
    from pathlib import Path

    from pydantic import ValidationError

    from fsmeter.textfile import read_text, toml_depth_error

    p = Path(path)
    again = "make one with `fsmeter export CAMPAIGN --format json`"
    try:
        doc = json.loads(read_text(p, "campaign export"))
    except RecursionError:
        raise UserError(f"{p}: JSON nested too deeply to read: not an fsmeter campaign export") from None
    except ValueError as exc:
        raise UserError(f"{p}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise UserError(f"{p}: a JSON {type(doc).__name__}, not an fsmeter campaign export: {again}")
    if doc.get("format") == "fsmeter-run":
        raise UserError(
            f"{p} is one `fsmeter run` result (1 trial per metric): significance needs at least 2 "
            "trials per side; compare campaigns, or campaign exports (`fsmeter export --format json`)"
        )
    if doc.get("format") != CAMPAIGN_FORMAT:
        raise UserError(f"{p}: not an fsmeter campaign export: {again}")
    deep = toml_depth_error(doc, MAX_EXPORT_DEPTH)
    if deep:
        raise UserError(
            f"{p}: {deep[:120]}: nested more than {MAX_EXPORT_DEPTH} levels deep: not an fsmeter campaign export"
        )
    try:
        _export_models().model_validate(doc)
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(x) for x in e["loc"]) or "(top level)"
        raise UserError(f"{p}: {where}: {e['msg']}: not an fsmeter campaign export as written; {again}") from None
    if isinstance(doc["version"], int) and doc["version"] > CAMPAIGN_VERSION:
        raise UserError(
            f"{p}: campaign JSON version {doc['version']} is newer than this fsmeter reads ({CAMPAIGN_VERSION}): "
            "upgrade fsmeter"
        )
    cells = {c["id"] for c in doc["cells"]}
    trials = {t["id"] for t in doc["trials"]}
    for kind, rows, key, known in (
        ("trials", doc["trials"], "cell_id", cells),
        ("metrics", doc["metrics"], "trial_id", trials),
        ("environment", doc.get("environment", []), "trial_id", trials),
    ):
        bad = next((i for i, r in enumerate(rows) if r[key] not in known), None)
        if bad is not None:
            raise UserError(f"{p}: {kind}.{bad}.{key}: {rows[bad][key]} names no {key[:-3]} of the export: {again}")
    clash = sorted({f for c in doc["cells"] for f in c["factors"]} & set(TIDY_COLUMNS))
    if clash:
        raise UserError(f"{p}: factor {clash[0]!r} has the name of one of the export's own columns: {again}")
    return doc


def tidy_from_document(doc: dict):
    """The tidy frame (as store.tidy()) of a campaign JSON document, for compare-runs on exported files."""
    import pandas as pd

    if doc.get("format") != CAMPAIGN_FORMAT:
        raise UserError(
            f"not an fsmeter campaign export (format {doc.get('format')!r}): export one with "
            "`fsmeter export CAMPAIGN --format json`"
        )
    if int(doc.get("version", 0)) > CAMPAIGN_VERSION:
        raise UserError(
            f"campaign JSON version {doc.get('version')} is newer than this fsmeter reads "
            f"({CAMPAIGN_VERSION}): upgrade fsmeter"
        )
    camp = doc["campaign"]
    cells = {c["id"]: c for c in doc["cells"]}
    trials = {t["id"]: t for t in doc["trials"]}
    rows = []
    for m in doc["metrics"]:
        t = trials[m["trial_id"]]
        c = cells[t["cell_id"]]
        rows.append(
            {
                "campaign_id": camp["id"],
                "campaign": camp["name"],
                "cell_id": c["id"],
                "trial": t["number"],
                "status": t["status"],
                "discarded": bool(t["discarded"]),
                "workload": c["workload"],
                "phase": m["phase"],
                "metric": m["name"],
                "unit": m["unit"],
                "higher_is_better": bool(m["higher_is_better"]),
                "value": float("nan") if m["value"] is None else float(m["value"]),
                **c["factors"],
            }
        )
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=TIDY_COLUMNS)
    return df[TIDY_COLUMNS + [f for f in doc.get("factors", []) if f in df.columns]]


def _family(workload: str, extra: str | None) -> str | None:
    """The family of a stored trial: from its recorded job, else from the named workload."""
    try:
        fam = ((json.loads(extra or "{}").get("job") or {}).get("workload") or {}).get("family")
    except (ValueError, AttributeError):
        fam = None
    if fam:
        return fam
    try:
        from fsmeter.spec import load_workload

        return load_workload(workload).family.name
    except Exception:  # unknown workload name: the caller says what it cannot export
        return None


# -- fio-compatible JSON: fsmeter.interop.fio_export (kept importable from here) --------------------------------
from fsmeter.interop.fio_export import (  # noqa: E402,F401
    FIO_FORMAT,
    FIO_PERCENTILES,
    FIO_VERSION,
    export_fio_json,
    export_fio_jsonplus,
    fio_document,
)


def export_iozone(db: Any = None, campaign: str | None = None) -> str:
    from fsmeter.report.iozone import export_iozone as fn

    return fn(db, campaign)


EXPORTERS: dict[str, Callable[[Any, str | None], str]] = {
    "csv": export_csv,
    "tidy-csv": export_tidy_csv,
    "json": export_json,
    "fio-json": export_fio_json,
    "fio-jsonplus": export_fio_jsonplus,
    "iozone": export_iozone,
}


def export(fmt: str, db: Any = None, campaign: str | None = None) -> str:
    try:
        fn = EXPORTERS["fio-jsonplus" if fmt == "fio-json+" else fmt]
    except KeyError:
        raise UserError(f"--format {fmt}: unknown export format: use one of {', '.join(EXPORTERS)}") from None
    return fn(db, campaign)
