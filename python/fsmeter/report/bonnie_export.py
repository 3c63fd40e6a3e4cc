"""Bonnie's own table for a bonnie campaign: one row per trial, Bonnie's columns.

Columns, in order: the campaign's factors (filesystem, ...), ``workload`` when the campaign has more than one,
``run`` (the trial number), ``size_mb`` (data file size in MiB), then for each phase that ran its rate and
%CPU: putc_write_kbs, putc_write_cpu, block_write_kbs, block_write_cpu, rewrite_kbs, rewrite_cpu, getc_read_kbs,
getc_read_cpu, block_read_kbs, block_read_cpu, seeks_per_s, seeks_cpu, and for bonnie++'s file tests
seq_create_per_s, seq_create_cpu, ..., ran_del_per_s, ran_del_cpu. KiB/s are 1024-byte units (Bonnie's K/sec);
%CPU is (user + sys) / elapsed of the phase. Only finished, kept trials appear.
"""

from __future__ import annotations

import json
from typing import Any

from fsmeter.families.bonnie import FILE_COLUMNS, IO_COLUMNS
from fsmeter.stats.kept import kept
from fsmeter.store import open_store, tidy

BONNIE_FAMILY = "bonnie"


def bonnie_frame(path: Any, cid: int, family_of) -> Any | None:
    """The Bonnie-shaped frame of campaign `cid`, or None when it has a workload of another family.

    `family_of(workload, extra)` names a workload's family (report.export._family)."""
    import pandas as pd

    with open_store(path, create=False) as store:
        rows = store.conn.execute(
            "SELECT c.workload, (SELECT e.extra FROM environment e JOIN trials t ON t.id = e.trial_id"
            " WHERE t.cell_id = c.id LIMIT 1) AS extra FROM cells c WHERE c.campaign_id = ?",
            (cid,),
        ).fetchall()
        if not rows or any(family_of(r["workload"], r["extra"]) != BONNIE_FAMILY for r in rows):
            return None
        sizes = {}
        for r in store.conn.execute(
            "SELECT t.cell_id, t.number, p.report FROM phases p JOIN trials t ON t.id = p.trial_id"
            " JOIN cells c ON c.id = t.cell_id WHERE c.campaign_id = ? AND p.key = 'block_write'",
            (cid,),
        ):
            try:
                sizes[(r["cell_id"], r["number"])] = json.loads(r["report"])["extra"]["size_bytes"] / (1 << 20)
            except (ValueError, KeyError, TypeError):
                pass
    df = tidy(path, cid)
    df = kept(df)
    factors = [
        c
        for c in df.columns
        if c
        not in (
            "campaign_id",
            "campaign",
            "cell_id",
            "trial",
            "status",
            "discarded",
            "workload",
            "phase",
            "metric",
            "unit",
            "higher_is_better",
            "value",
        )
    ]
    factors.sort(key=lambda c: c != "filesystem")  # the seed data set's first column, then the campaign's order
    df = df.assign(column=df["phase"] + "_" + df["metric"])
    keys = ["cell_id", "trial", "workload"] + factors
    wide = df.pivot_table(index=keys, columns="column", values="value", aggfunc="first", dropna=False).reset_index()
    wide = wide.dropna(axis=0, how="all", subset=[c for c in wide.columns if c not in keys])
    wide["size_mb"] = [sizes.get((c, t), float("nan")) for c, t in zip(wide["cell_id"], wide["trial"])]
    wide = wide.rename(columns={"trial": "run"}).sort_values(["cell_id", "run"])
    data_cols = [c for c in IO_COLUMNS + FILE_COLUMNS if c in wide.columns]
    lead = factors + (["workload"] if wide["workload"].nunique() > 1 else []) + ["run", "size_mb"]
    if wide["size_mb"].isna().all():
        lead.remove("size_mb")
    out = wide[lead + data_cols]
    if "size_mb" in out.columns:
        out = out.assign(size_mb=out["size_mb"].map(lambda v: int(v) if v == v and float(v).is_integer() else v))
    return pd.DataFrame(out).reset_index(drop=True)


def bonnie_csv(path: Any, cid: int, family_of) -> str | None:
    df = bonnie_frame(path, cid, family_of)
    return None if df is None else df.to_csv(index=False)
