"""The claim frame: a store's kept trials as :class:`fsmeter.study.claims.ClaimChecker` reads them.

One row per trial and metric, with the study's factor names and levels (or any campaign's own), the
regime of the trial's phases (phase length, other processes' CPU share, the share of reads the page
cache served, threads) and of its campaign's storage probe (random-read latency, sequential rates,
flush latency, CPU clock, storage class), and the selection helpers the checker uses on it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd

from fsmeter.study.model import Study


def _pick_metrics(df, metrics: Sequence[str]):
    """Rows of the named metrics. A name with '*' matches several phases, whose values then pool as
    samples of one metric (filemark's method: each kept transactions phase is one observation)."""
    import fnmatch

    if not metrics:
        return df
    parts = []
    for m in metrics:
        if "*" in m:
            sel = df[df["metric_key"].map(lambda k, m=m: fnmatch.fnmatchcase(k, m))].copy()
            sel["metric_key"] = m
            sel = _one_per_trial(sel)
        else:
            sel = df[df["metric_key"] == m]
        parts.append(sel)
    return pd.concat(parts) if parts else df.iloc[0:0]


def without_disturbed(df: pd.DataFrame, min_trials: int, cell: Sequence[str]) -> tuple[pd.DataFrame, int]:
    """The rows of ``df`` without the trials whose disk-model replies left late (``disturbed``), in each
    cell (the rows alike in the ``cell`` columns present, and in workload and metric) where at least
    ``min_trials`` trials remain; elsewhere the rows as they are (the gate then makes the claim
    inconclusive). Returns the rows and how many were left out.

    A disturbed trial is one whose figures hold this machine's scheduling as well as the modelled
    disk; its cell's other trials do not. Leaving it out judges the model's disk on the trials that
    measured it alone, and a cell whose every trial (or all but a few) was disturbed still gates the
    claim: lateness that follows a configuration (a filesystem whose small requests the machine always
    answers late) is not quietly dropped. Rows without a trial (published numbers) or without the
    column are kept. The count returned is of trials (a trial's several metrics count once).

    This picks trials by a property of the instrument (the model kept its times or not), which the
    workload can influence: a late trial may also be one that sent more requests. What its late replies
    could have added is bounded by their lateness (``lateness_share``: 0.8-1.8% of the service time in
    Lourdas's late copies), under the differences the studies' claims count (6% for that copy)."""
    if df.empty or "disturbed" not in df.columns or "trial" not in df.columns:
        return df, 0
    flag: pd.Series = pd.Series(pd.to_numeric(df["disturbed"], errors="coerce"), index=df.index).fillna(0)
    bad: pd.Series = flag > 0
    if not bad.any():
        return df, 0
    keys = list(dict.fromkeys(c for c in ("workload", "metric_key", "cell_id", *cell) if c in df.columns))
    on_time = (~bad).astype(int).groupby([df[k] for k in keys], dropna=False, sort=False).transform("sum")
    drop: pd.Series = bad & (pd.Series(on_time, index=df.index) >= min_trials)
    trial_keys = [k for k in keys if k != "metric_key"] + ["trial"]
    trials = len(df.loc[drop, trial_keys].drop_duplicates())
    return df.loc[~drop], trials


def _one_per_trial(sel):
    """The phases a '*' name matches within one re-run trial, as one observation: their mean value.

    The phases of one trial ran back to back on one filesystem, so they are not independent samples;
    counting each as one (the study's own method, on a single run per cell) would inflate n and the
    tests' degrees of freedom. The trial is the unit: the gates see its shortest phase and its
    busiest regime. Rows without a trial (published means or runs) are left as they are."""
    if sel.empty or "trial" not in sel.columns or sel["trial"].isna().all():
        return sel
    runs, rest = sel[sel["trial"].notna()], sel[sel["trial"].isna()]
    agg = {"value": "mean"}
    agg.update(
        {
            c: f
            for c, f in (
                ("phase_s", "min"),
                ("other_cpu_share", "max"),
                ("cache_read_share", "max"),
                ("cache_write_share", "max"),
                ("disturbed", "max"),
                ("steal_share", "max"),
            )
            if c in runs.columns
        }
    )
    keys = [c for c in runs.columns if c not in agg]
    one = runs.groupby(keys, dropna=False, sort=False).agg(agg).reset_index()[list(sel.columns)]
    return pd.concat([one, rest]) if not rest.empty else one


def _by_version(levels) -> list:
    """Kernel (or other) version strings, oldest first: '4.19.0' < '6.1.0-26-amd64' < '6.12.1'."""
    import re

    def key(v: str):
        return [int(x) if x.isdigit() else x for x in re.split(r"[.\-+~_]", str(v))]

    try:
        return sorted(levels, key=key)
    except TypeError:
        return sorted(levels, key=str)


#: The store's storage_probes columns -> the claim frame's regime columns, and how several probes of one
#: campaign combine (the fastest storage and clock: what a gate must not miss).
_PROBE_COLUMNS = {
    "random_read_ms_p50": ("storage_read_latency_ms", "min"),
    "seq_read_mb_s": ("storage_read_mb_s", "max"),
    "seq_write_mb_s": ("storage_write_mb_s", "max"),
    "flush_ms_p50": ("storage_flush_ms", "min"),
    "cpu_mhz": ("cpu_mhz", "max"),
}


def probe_frame(storage) -> pd.DataFrame | None:
    """One row per campaign from the store's storage probes: the regime columns of the claim frame."""
    if storage is None or storage.empty:
        return None
    agg = {src: how for src, (_, how) in _PROBE_COLUMNS.items() if src in storage.columns}
    out = storage.groupby("campaign_id").agg(agg).rename(columns={k: v[0] for k, v in _PROBE_COLUMNS.items()})
    classes = storage.groupby("campaign_id")["storage_class"].agg(lambda x: ",".join(sorted(set(map(str, x)))))
    return out.assign(storage_class=classes).reset_index()


def campaign_frame(data: dict):
    """Any campaign's kept trials (fsmeter.store.load()) as ClaimChecker wants them: the campaign's own
    factor names and levels, and the regime (as study_frame)."""
    from fsmeter.store import TIDY_COLUMNS

    tidy = data["metrics"]
    names = [c for c in tidy.columns if c not in TIDY_COLUMNS and c != "filesystem"]
    return study_frame(None, tidy, data.get("environment"), data.get("phases"), data.get("storage"), names)


def study_frame(study: Study | None, tidy_df, environment=None, phases=None, storage=None, factors=None):
    """Kept trials of a study campaign as ClaimChecker wants them: study names for factors and levels.

    Campaign factor columns become the study's factor names with the study's level names
    (scheduler "bfq" -> elevator "cfq"); kernel and host become factors when they vary. With the
    store's ``phases`` table, each row gets its phase's length (``phase_s``) and regime
    (``other_cpu_share``, ``cache_read_share``, ``cache_write_share``) for the gates; with its ``environment`` the CPUs
    online, with its ``storage`` probes the storage's figures and the CPU clock. ``factors``: without
    a study, the campaign factor columns kept under their own names.
    """
    from fsmeter.stats.kept import kept

    df = kept(tidy_df).copy()
    df["metric_key"] = df["phase"] + "." + df["metric"]
    keep = ["workload", "metric_key", "value", "higher_is_better", "filesystem", "trial", "cell_id"]
    probes = probe_frame(storage)
    if probes is not None and "campaign_id" in df.columns:
        df = df.merge(probes, on="campaign_id", how="left")
        keep += [c for c in probes.columns if c != "campaign_id"]
    if phases is not None and not phases.empty:
        cols = [
            c
            for c in (
                "elapsed_s",
                "other_cpu_share",
                "cache_read_share",
                "cache_write_share",
                "disturbed",
                "steal_share",
                "disk_bound",
            )
            if c in phases.columns
        ]
        ph = phases[["cell_id", "trial", "phase", *cols]].drop_duplicates(["cell_id", "trial", "phase"])
        df = df.merge(ph.rename(columns={"elapsed_s": "phase_s"}), on=["cell_id", "trial", "phase"], how="left")
        keep += ["phase_s" if c == "elapsed_s" else c for c in cols if c != "disk_bound"]  # disk_bound: below
    for f in study.factors if study is not None else ():
        if f.campaign and f.campaign in df.columns:
            back = {str(v): k for k, v in f.map.items()}
            df[f.name] = df[f.campaign].map(lambda v: back.get(str(v), str(v)) if not pd.isna(v) else v)
            keep.append(f.name)
    keep += [c for c in factors or () if c in df.columns and c not in keep]
    if environment is not None and not environment.empty and "extra" in environment.columns:
        # Cells run in a guest under software emulation (fsmeter.guest): the gates make their claims functional only.
        def _emulated(extra) -> float:
            try:
                g = json.loads(extra).get("guest") if isinstance(extra, str) else None
            except (ValueError, AttributeError):
                g = None
            return 1.0 if isinstance(g, dict) and g.get("emulated") else 0.0

        emu = environment[["cell_id", "extra"]].drop_duplicates("cell_id")
        emu = emu.assign(emulated=emu["extra"].map(_emulated))[["cell_id", "emulated"]]
        if emu["emulated"].any():
            df = df.merge(emu, on="cell_id", how="left")
            keep.append("emulated")
            if "disk_bound" in df.columns:
                # A phase on a disk model that the modelled disk set the pace of, with the guest's CPUs
                # less than half busy (fsmeter.regime.disk_bound): the emulated CPU did not decide it.
                # Decided per cell and phase, over all its trials: keeping the disk-bound trials of a cell
                # and dropping the others would pick trials by how they went.
                each = (df["emulated"] == 1) & (pd.to_numeric(df["disk_bound"], errors="coerce") == 1)
                bound = each.groupby([df["cell_id"], df["phase"]]).transform("all").astype(bool)
                bound &= df["emulated"] == 1
                df["emulated_disk_bound"] = bound.astype(float)
                df.loc[bound, "emulated"] = 0.0
                keep.append("emulated_disk_bound")
    if environment is not None and not environment.empty:
        cols = [c for c in ("cell_id", "kernel", "hostname", "cpus_online") if c in environment.columns]
        env = environment.drop_duplicates("cell_id")[cols]
        # A campaign's own kernel factor (study run --kernel: "host", "6.1") gives way to the release each
        # trial ran under, as with merged runs.
        df = df.drop(columns=[c for c in ("kernel", "hostname", "cpus_online") if c in df.columns])
        df = df.merge(env, on="cell_id", how="left")
        if "cpus_online" in df.columns:
            keep.append("cpus_online")
        for col, name in (("kernel", "kernel"), ("hostname", "host")):
            if df[col].nunique() > 1:
                df[name] = df[col]
                keep.append(name)
    return df[[c for c in keep if c in df.columns]].drop(columns=["cell_id"])
