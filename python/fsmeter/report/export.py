"""Exports of a stored campaign: tidy CSV, the whole campaign as JSON, and fio-compatible JSON.

One function per format, all registered in :data:`EXPORTERS` (name -> fn(db, campaign) -> text).
The JSON shapes are versioned; the README (Reports, exports) describes every field, including the subset of
fio's ``--output-format=json`` that ``fio-json`` writes.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import sqlite3
import time
from typing import Any, Callable, Optional

import fsmeter
from fsmeter.errors import UserError
from fsmeter.store import TIDY_COLUMNS, default_db_path, open_store, tidy

CAMPAIGN_FORMAT = "fsmeter-campaign"
#: Version of the campaign JSON. 1: campaign, factors, cells, trials, phases (with the engine report),
#: metrics, environment.
CAMPAIGN_VERSION = 1
FIO_FORMAT = "fsmeter-fio-json"
#: Version of the fio-json subset (see the README (Reports, exports)). 1: jobs[] with read/write/trim, clat_ns/lat_ns/slat_ns.
FIO_VERSION = 1
#: fio's percentile keys (fio prints them with six decimals) and the store columns they come from.
FIO_PERCENTILES = {"50.000000": "p50_ns", "90.000000": "p90_ns", "99.000000": "p99_ns", "99.900000": "p999_ns",
                   "99.990000": "p9999_ns"}
ACCESS_FAMILY = "access"


def _campaign_id(store, campaign: Optional[str]) -> int:
    if campaign is not None:
        return int(store.campaign(campaign)["id"])
    rows = store.campaigns()
    if not rows:
        raise UserError(f"no campaign in {store.path}: run one with `fsmeter campaign run FILE --db {store.path}`")
    return int(rows[-1]["id"])


def _num(v: Any) -> Any:
    """NaN is not JSON: undefined numbers become null."""
    return None if isinstance(v, float) and (math.isnan(v) or math.isinf(v)) else v


# -- tidy CSV ------------------------------------------------------------------------------------------------
def export_tidy_csv(db: Any = None, campaign: Optional[str] = None) -> str:
    """One row per trial x metric, TIDY_COLUMNS then one column per factor (= store.tidy())."""
    path = default_db_path(db)
    with open_store(path, create=False) as store:
        cid = _campaign_id(store, campaign)
    return tidy(path, cid).to_csv(index=False)


def export_csv(db: Any = None, campaign: Optional[str] = None) -> str:
    """Tidy CSV; a campaign of bonnie workloads only gets Bonnie's own table (report.bonnie_export)."""
    from fsmeter.report.bonnie_export import bonnie_csv

    path = default_db_path(db)
    with open_store(path, create=False) as store:
        cid = _campaign_id(store, campaign)
    return bonnie_csv(path, cid, _family) or export_tidy_csv(db, str(cid))


# -- campaign JSON ---------------------------------------------------------------------------------------------
def _rows(conn: sqlite3.Connection, q: str, args: tuple) -> list:
    return [dict(r) for r in conn.execute(q, args).fetchall()]


def campaign_document(db: Any = None, campaign: Optional[str] = None) -> dict:
    """The whole campaign as one JSON-ready dict (format fsmeter-campaign, see the README (Reports, exports))."""
    path = default_db_path(db)
    with open_store(path, create=False) as store:
        cid = _campaign_id(store, campaign)
        conn = store.conn
        camp = dict(store.campaign(cid))
        cells = _rows(conn, "SELECT id, idx, workload, factors, status, cause, stop_reason FROM cells "
                            "WHERE campaign_id = ? ORDER BY idx", (cid,))
        sub = "SELECT id FROM cells WHERE campaign_id = ?"
        trials = _rows(conn, "SELECT id, cell_id, number, status, cause, started, ended, discarded, stop_reason,"
                             f" half_width_pct FROM trials WHERE cell_id IN ({sub}) ORDER BY cell_id, number", (cid,))
        tsub = f"SELECT id FROM trials WHERE cell_id IN ({sub})"
        phases = _rows(conn, "SELECT id, trial_id, seq, key, engine_phase, measured, discarded, elapsed_s, warmup_s,"
                             f" interrupted, cache_method, report FROM phases WHERE trial_id IN ({tsub})"
                             " ORDER BY trial_id, seq", (cid,))
        metrics = _rows(conn, "SELECT trial_id, phase_key AS phase, name, unit, higher_is_better, headline, value"
                              f" FROM metrics WHERE trial_id IN ({tsub}) ORDER BY trial_id, rowid", (cid,))
        env = _rows(conn, f"SELECT * FROM environment WHERE trial_id IN ({tsub}) ORDER BY trial_id", (cid,))
    factors: list = []
    for c in cells:
        c["factors"] = json.loads(c["factors"])
        factors += [k for k in c["factors"] if k not in factors]
    for t in trials:
        t["discarded"] = bool(t["discarded"])
        t["half_width_pct"] = _num(t["half_width_pct"])
    for p in phases:
        p["report"] = json.loads(p["report"])
        for k in ("measured", "discarded", "interrupted"):
            p[k] = bool(p[k])
    for m in metrics:
        m["higher_is_better"], m["headline"], m["value"] = bool(m["higher_is_better"]), bool(m["headline"]), \
            _num(m["value"])
    for e in env:
        if e.get("mkfs_options"):
            try:
                e["mkfs_options"] = json.loads(e["mkfs_options"])
            except ValueError:
                pass
        e["extra"] = json.loads(e["extra"]) if e.get("extra") else {}
    return {"format": CAMPAIGN_FORMAT, "version": CAMPAIGN_VERSION, "fsmeter_version": fsmeter.__version__,
            "exported": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "campaign": camp, "factors": factors, "cells": cells, "trials": trials, "phases": phases,
            "metrics": metrics, "environment": env}


def export_json(db: Any = None, campaign: Optional[str] = None) -> str:
    return json.dumps(campaign_document(db, campaign), indent=1, default=str)


def tidy_from_document(doc: dict):
    """The tidy frame (as store.tidy()) of a campaign JSON document, for compare-runs on exported files."""
    import pandas as pd

    if doc.get("format") != CAMPAIGN_FORMAT:
        raise UserError(f"not an fsmeter campaign export (format {doc.get('format')!r}): export one with "
                        "`fsmeter export CAMPAIGN --format json`")
    if int(doc.get("version", 0)) > CAMPAIGN_VERSION:
        raise UserError(f"campaign JSON version {doc.get('version')} is newer than this fsmeter reads "
                        f"({CAMPAIGN_VERSION}): upgrade fsmeter")
    camp = doc["campaign"]
    cells = {c["id"]: c for c in doc["cells"]}
    trials = {t["id"]: t for t in doc["trials"]}
    rows = []
    for m in doc["metrics"]:
        t = trials[m["trial_id"]]
        c = cells[t["cell_id"]]
        rows.append({"campaign_id": camp["id"], "campaign": camp["name"], "cell_id": c["id"], "trial": t["number"],
                     "status": t["status"], "discarded": bool(t["discarded"]), "workload": c["workload"],
                     "phase": m["phase"], "metric": m["name"], "unit": m["unit"],
                     "higher_is_better": bool(m["higher_is_better"]),
                     "value": float("nan") if m["value"] is None else float(m["value"]), **c["factors"]})
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=TIDY_COLUMNS)
    return df[TIDY_COLUMNS + [f for f in doc.get("factors", []) if f in df.columns]]


# -- fio-compatible JSON ---------------------------------------------------------------------------------------
def _family(workload: str, extra: Optional[str]) -> Optional[str]:
    try:
        fam = ((json.loads(extra or "{}").get("job") or {}).get("workload") or {}).get("family")
    except (ValueError, AttributeError):
        fam = None
    if fam:
        return fam
    try:
        from fsmeter.spec import load_workload

        return load_workload(workload).family.name
    except Exception:  # unknown workload name: not exportable as fio, said by the caller
        return None


def _lat_block(lat: Optional[dict], percentiles: bool) -> dict:
    if not lat:
        out = {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
        if percentiles:
            out["percentile"] = {k: 0 for k in FIO_PERCENTILES}
        return out
    out = {"min": int(lat.get("min_ns") or 0), "max": int(lat.get("max_ns") or 0),
           "mean": float(lat.get("mean_ns") or 0.0), "stddev": float(lat.get("stdev_ns") or 0.0),
           "N": int(lat.get("count") or 0)}
    if percentiles:
        out["percentile"] = {k: int(lat.get(col) or 0) for k, col in FIO_PERCENTILES.items()}
    return out


def _io_block(op: Optional[dict], runtime_ms: int) -> dict:
    """fio's per-direction object: bytes, KiB/s, bytes/s, IOPS, runtime (ms), latencies (ns)."""
    if not op:
        op, lat, rt = {}, None, 0
    else:
        lat, rt = op.get("lat"), runtime_ms
    io_bytes = int(op.get("bytes") or 0)
    bw_bytes = int(round(float(op.get("bytes_per_s") or 0.0)))
    return {"io_bytes": io_bytes, "io_kbytes": io_bytes // 1024, "bw_bytes": bw_bytes, "bw": bw_bytes // 1024,
            "iops": float(op.get("ops_per_s") or 0.0), "runtime": rt, "total_ios": int(op.get("count") or 0),
            "short_ios": 0, "drop_ios": 0,
            "slat_ns": _lat_block(None, False), "clat_ns": _lat_block(lat, True), "lat_ns": _lat_block(lat, False)}


def fio_document(db: Any = None, campaign: Optional[str] = None) -> dict:
    """fio --output-format=json shape for the access workloads of a campaign: one job per kept trial x measured
    phase (see the README (Reports, exports) for the fields and how they map)."""
    path = default_db_path(db)
    with open_store(path, create=False) as store:
        cid = _campaign_id(store, campaign)
        camp = dict(store.campaign(cid))
        rows = store.conn.execute(
            "SELECT c.workload, c.factors, c.idx, t.number, p.key, p.report, e.extra FROM phases p"
            " JOIN trials t ON t.id = p.trial_id JOIN cells c ON c.id = t.cell_id"
            " LEFT JOIN environment e ON e.trial_id = t.id"
            " WHERE c.campaign_id = ? AND t.status = 'ok' AND t.discarded = 0 AND p.measured = 1 AND p.discarded = 0"
            " ORDER BY c.idx, t.number, p.seq", (cid,)).fetchall()
    jobs, skipped = [], set()
    families: dict = {}
    for r in rows:
        wl = r["workload"]
        if wl not in families:
            families[wl] = _family(wl, r["extra"])
        if families[wl] != ACCESS_FAMILY:
            skipped.add(wl)
            continue
        rep = json.loads(r["report"])
        ops = rep.get("ops") or {}
        runtime_ms = int(round(float(rep.get("elapsed_s") or 0.0) * 1000))
        factors = json.loads(r["factors"])
        job_opts = {"workload": wl, **{k: str(v) for k, v in factors.items()}, "trial": str(r["number"]),
                    "phase": r["key"], "numjobs": str(rep.get("threads", 1))}
        cpu = rep.get("cpu") or {}
        cpu_s = float(rep.get("elapsed_s") or 0.0)
        jobs.append({
            "jobname": wl, "groupid": int(r["idx"]), "error": 0, "eta": 0,
            "elapsed": int(math.ceil(float(rep.get("elapsed_s") or 0.0) + float(rep.get("warmup_s") or 0.0))),
            "job options": job_opts, "job_runtime": runtime_ms,
            "read": _io_block(ops.get("read"), runtime_ms), "write": _io_block(ops.get("write"), runtime_ms),
            "trim": _io_block(None, runtime_ms),
            "usr_cpu": 100.0 * float(cpu.get("user_s") or 0.0) / cpu_s if cpu_s else 0.0,
            "sys_cpu": 100.0 * float(cpu.get("sys_s") or 0.0) / cpu_s if cpu_s else 0.0,
        })
    if not jobs:
        what = f" (its workloads: {', '.join(sorted(skipped))} are not access workloads)" if skipped else ""
        raise UserError(f"campaign {cid} has no finished trial of an access workload{what}: fio-json covers the "
                        "access family (seq-read, rand-read-4k, ...); use --format json or csv")
    now = time.time()
    return {"fio version": f"fsmeter-{fsmeter.__version__}", "timestamp": int(now), "timestamp_ms": int(now * 1000),
            "time": time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now)), "global options": {},
            "jobs": jobs, "disk_util": [],
            "fsmeter": {"format": FIO_FORMAT, "version": FIO_VERSION, "campaign_id": cid, "campaign": camp["name"],
                        "skipped_workloads": sorted(skipped)}}


def export_fio_json(db: Any = None, campaign: Optional[str] = None) -> str:
    return json.dumps(fio_document(db, campaign), indent=1)


EXPORTERS: dict[str, Callable[[Any, Optional[str]], str]] = {
    "csv": export_csv, "tidy-csv": export_tidy_csv, "json": export_json, "fio-json": export_fio_json,
}


def export(fmt: str, db: Any = None, campaign: Optional[str] = None) -> str:
    try:
        fn = EXPORTERS[fmt]
    except KeyError:
        raise UserError(f"--format {fmt}: unknown export format: use one of {', '.join(EXPORTERS)}") from None
    return fn(db, campaign)
