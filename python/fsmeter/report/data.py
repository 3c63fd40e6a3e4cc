"""One campaign read from the store and summarised per workload: the data every report view shares.

The terminal tables, the HTML report and the verdicts all read a :class:`CampaignView`, so they
can never disagree. Statistics come from :mod:`fsmeter.stats` (Student-t CIs, Welch comparisons,
rank groups); nothing here re-derives them.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fsmeter.errors import UserError
from fsmeter.guest.kernels import EMULATED_NOTE
from fsmeter.stats.kept import is_kept
from fsmeter.stats.kept import kept as kept_rows
from fsmeter.stats.ranking import DEFAULT_ALPHA, DEFAULT_PRACTICAL_PCT, RankEntry, rank
from fsmeter.stats.summary import MeanCI, mean_ci
from fsmeter.store import TIDY_COLUMNS, default_db_path, load, open_store

#: Families whose phase reports carry many operation kinds worth ranking one by one (dbench).
PER_OP_FAMILIES = {"replay"}
#: Any other workload qualifies too when a measured phase has at least this many op kinds.
PER_OP_MIN_KINDS = 4


def resolve_campaign(db: Any, ref: str | None) -> int:
    """A campaign id from an id or name; None picks the newest campaign in the store."""
    path = default_db_path(db)
    with open_store(path, create=False) as store:
        if ref is not None:
            return int(store.campaign(ref)["id"])
        rows = store.campaigns()
        if not rows:
            raise UserError(f"no campaign in {path}: run one with `fsmeter campaign run FILE --db {path}`")
        return int(rows[-1]["id"])


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def level_str(v: Any) -> str:
    """A factor level as people write it: 4 not 4.0, True, 'ext4'."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def numeric_level(v: Any) -> float | None:
    """A level as a number (ints, floats, '4K'-style sizes), or None when it is not numeric."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    from fsmeter.units import parse_size

    try:
        return float(parse_size(str(v)))
    except ValueError:
        return None


@dataclass
class Config:
    """One configuration (cell) of a workload and what its trials measured on one metric."""

    cell_id: int
    label: str
    levels: dict  # factor -> level (only factors that apply to this workload)
    status: str
    cause: str | None
    values: list  # kept trial values: ok, not discarded, not NaN
    trials: list  # [(trial number, value or None, status, discarded)]
    ci: MeanCI | None  # None with fewer than 2 kept values
    #: With a single kept trial: the half-width (% of the mean) of the batch-means CI (Jain 25.5.2)
    #: of the metric's own per-interval series in that trial (bytes for MB/s, transactions for tx/s...).
    batch_pct: float | None = None
    #: With a single kept trial and no such CI: why not.
    batch_note: str | None = None

    @property
    def mean(self) -> float:
        return float(sum(self.values) / len(self.values)) if self.values else math.nan


@dataclass
class MetricView:
    """One metric of one workload across its configurations, ranked (stats.ranking.rank)."""

    phase: str
    name: str
    unit: str
    higher_is_better: bool
    headline: bool
    configs: list  # [Config] in matrix order
    ranking: list  # [RankEntry], configurations with >= 2 kept trials, best first

    @property
    def key(self) -> str:
        return f"{self.phase}.{self.name}"

    def entry(self, label: str) -> RankEntry | None:
        return next((e for e in self.ranking if e.name == label), None)

    def config(self, label: str) -> Config:
        return next(c for c in self.configs if c.label == label)

    def marker(self, label: str) -> str:
        """'best', 'same' (not significantly worse than the best), 'worse', or '' (not ranked)."""
        e = self.entry(label)
        if e is None:
            return ""
        if e.rank == 1:
            return "best"
        return "same" if e.group == 1 else "worse"


@dataclass
class OpView:
    """Per operation kind of a per-operation workload: mean latency per configuration, ranked."""

    phase: str
    op: str
    ranking: list  # [RankEntry] on per-trial mean latency (us), lower is better
    means_us: dict  # label -> mean latency (us)


@dataclass
class WorkloadView:
    workload: str
    family: str | None
    varying: list  # factors with >= 2 levels in this workload
    fixed: dict  # factor -> the one level it has here
    metrics: list  # [MetricView]; the headline first
    per_op: list = field(default_factory=list)  # [OpView] for per-operation workloads
    labels: list = field(default_factory=list)  # configuration labels in matrix order
    #: Longest measured phase of the workload's kept trials, and the campaign's minimum for claims.
    longest_phase_s: float | None = None
    min_phase_s: float = 60.0
    #: Measured phases of the kept trials, those run on a busy machine (fsmeter.regime.BUSY_SHARE),
    #: the largest share of the CPUs other processes used, and the median page-cache share of reads.
    phases_measured: int = 0
    phases_busy: int = 0
    max_other_cpu_share: float | None = None
    median_cache_read_share: float | None = None
    #: Measured phases of the kept trials run on a disk model, those whose reply lateness p99 exceeded
    #: 5% of the mean modelled service time (fsmeter.diskmodel.stats), and the largest such p99 (ms).
    phases_on_disk_model: int = 0
    phases_disturbed: int = 0
    max_lateness_p99_ms: float | None = None
    #: Configurations run in a guest under software emulation (fsmeter.guest): functional results only,
    #: never ranked; and each guest configuration's kernel and accelerator ("6.1.0-50-amd64, tcg").
    emulated: list = field(default_factory=list)
    guests: dict = field(default_factory=dict)
    #: Configurations run in a (hardware-accelerated) guest beside configurations run on the host: not ranked.
    in_guest_apart: list = field(default_factory=list)

    @property
    def too_short(self) -> bool:
        return self.longest_phase_s is not None and self.longest_phase_s < self.min_phase_s

    @property
    def headline(self) -> MetricView:
        return self.metrics[0]


@dataclass
class CampaignView:
    db: Path
    campaign: dict  # the campaigns row
    frames: dict  # fsmeter.store.load() output
    factors: list  # factor columns of the campaign
    workloads: list  # [WorkloadView]
    level: float
    alpha: float
    practical_pct: float

    def failures(self) -> list:
        """Trials and cells that did not finish, with the cause: dicts for tables."""
        out = []
        cells = self.frames["cells"].set_index("cell_id")
        labels = {c.cell_id: (w.workload, c.label) for w in self.workloads for c in w.headline.configs}
        trials = self.frames["trials"]
        bad = trials[trials["status"] != "ok"]
        for _, t in bad.iterrows():
            wl, lab = labels.get(t["cell_id"], (t["workload"], ""))
            out.append(
                {
                    "workload": wl,
                    "configuration": lab,
                    "trial": int(t["trial"]),
                    "status": t["status"],
                    "cause": t["cause"] or "(no cause recorded)",
                }
            )
        with_trials = set(trials["cell_id"])
        for cid, c in cells.iterrows():
            if c["status"] in ("failed", "interrupted") and cid not in with_trials:
                wl, lab = labels.get(cid, (c["workload"], ""))
                out.append(
                    {
                        "workload": wl,
                        "configuration": lab,
                        "trial": None,
                        "status": c["status"],
                        "cause": c["cause"] or "(no cause recorded)",
                    }
                )
        return out


def _family_of(workload: str, env: pd.DataFrame) -> str | None:
    """The workload's family: from the job recorded with its trials, else from the named workload."""
    for extra in env.get("extra", pd.Series(dtype=object)).dropna():
        try:
            fam = ((json.loads(extra).get("job") or {}).get("workload") or {}).get("family")
        except (ValueError, AttributeError):
            fam = None
        if fam:
            return str(fam)
    try:
        from fsmeter.spec import load_workload

        return load_workload(workload).family.name
    except Exception:  # an unknown or since-removed workload: the report still works without it
        return None


def _guest_cells(env: pd.DataFrame) -> dict:
    """cell id -> the guest record of its trials (fsmeter.guest: kernel, settings, accelerator), for
    cells run in a virtual machine."""
    out: dict = {}
    if not len(env) or "extra" not in env.columns:
        return out
    for _, r in env.iterrows():
        try:
            g = json.loads(r["extra"]).get("guest") if isinstance(r["extra"], str) else None
        except (ValueError, AttributeError):
            g = None
        if isinstance(g, dict):
            out[int(r["cell_id"])] = g
    return out


def _label(levels: dict, varying: list) -> str:
    if not levels:
        return "(single configuration)"
    parts = []
    for f in varying or list(levels):  # nothing varies: name the one configuration by all its levels
        v = level_str(levels.get(f))
        parts.append(v if f == "filesystem" else f"{f}={v}")
    return ", ".join(parts)


def build_view(
    db: Any = None,
    campaign: str | None = None,
    level: float = 0.95,
    alpha: float = DEFAULT_ALPHA,
    practical_pct: float = DEFAULT_PRACTICAL_PCT,
) -> CampaignView:
    """Read ``campaign`` (id or name; None = newest) from the store at ``db`` and summarise it."""
    path = default_db_path(db)
    cid = resolve_campaign(path, campaign)
    frames = load(path, cid)
    with open_store(path, create=False) as store:
        camp = dict(store.campaign(cid))
        heads = store.conn.execute(
            "SELECT DISTINCT c.workload, m.phase_key, m.name FROM metrics m JOIN trials t ON t.id = m.trial_id "
            "JOIN cells c ON c.id = t.cell_id WHERE c.campaign_id = ? AND m.headline = 1",
            (cid,),
        ).fetchall()
        # Grid values (iozone cells) are charted as surfaces, not ranked one by one.
        keyed = {
            (r["workload"], r["phase_key"], r["name"])
            for r in store.conn.execute(
                "SELECT DISTINCT c.workload, m.phase_key, m.name FROM metrics m JOIN trials t ON t.id = m.trial_id "
                "JOIN cells c ON c.id = t.cell_id WHERE c.campaign_id = ? AND m.keys IS NOT NULL",
                (cid,),
            )
        }
    headline = {}
    for r in heads:
        headline.setdefault(r["workload"], (r["phase_key"], r["name"]))
    tidy = frames["metrics"]
    factors = [c for c in tidy.columns if c not in TIDY_COLUMNS]
    cells = frames["cells"]
    factors = factors or [
        c
        for c in cells.columns
        if c not in ("campaign_id", "cell_id", "idx", "workload", "status", "cause", "stop_reason")
    ]
    trials = frames["trials"]
    env = frames["environment"]
    min_phase_s = _min_phase_s(camp.get("source"))
    views = []
    for workload in dict.fromkeys(cells["workload"]):
        wcells = cells[cells["workload"] == workload]
        applies = [f for f in factors if f in wcells.columns and not wcells[f].map(_is_missing).all()]
        varying = [f for f in applies if wcells[f].map(level_str).nunique() > 1]
        fixed = {f: wcells[f].iloc[0] for f in applies if f not in varying}
        cell_levels = {
            int(r["cell_id"]): {f: r[f] for f in applies if not _is_missing(r[f])} for _, r in wcells.iterrows()
        }
        labels = {cid_: _label(lv, varying) for cid_, lv in cell_levels.items()}
        wt = tidy[tidy["workload"] == workload]
        keys = [k for k in dict.fromkeys(zip(wt["phase"], wt["metric"])) if (workload, *k) not in keyed]
        head = headline.get(workload)
        if head in keys:
            keys.remove(head)
            keys.insert(0, head)
        wenv = env[env["cell_id"].isin(wcells["cell_id"])] if len(env) else env
        family = _family_of(workload, wenv)
        guests = _guest_cells(wenv)
        emulated_ids = {cid_ for cid_, g in guests.items() if g.get("emulated")}
        # A guest's I/O path (virtio disk, the host's page cache or not) is not the host's: where a workload has
        # configurations of both, only the host's are ranked; the guest's are listed beside them.
        unranked_ids = set(emulated_ids)
        if guests and len(guests) < len(wcells):
            unranked_ids |= set(guests)
        metrics = []
        for phase, name in keys:
            mt = wt[(wt["phase"] == phase) & (wt["metric"] == name)]
            configs = []
            for _, c in wcells.iterrows():
                cell_id = int(c["cell_id"])
                ct = trials[trials["cell_id"] == cell_id]
                cm = mt[mt["cell_id"] == cell_id].set_index("trial")["value"]
                rows, kept = [], []
                for _, t in ct.iterrows():
                    v = cm.get(t["trial"])
                    v = None if _is_missing(v) else float(v)
                    rows.append((int(t["trial"]), v, t["status"], bool(t["discarded"])))
                    if is_kept(t["status"], t["discarded"], v):
                        kept.append(v)
                configs.append(
                    Config(
                        cell_id,
                        labels[cell_id],
                        cell_levels[cell_id],
                        c["status"],
                        c["cause"],
                        kept,
                        rows,
                        mean_ci(kept, level) if len(kept) >= 2 else None,
                    )
                )
            unit = str(mt["unit"].iloc[0]) if len(mt) else ""
            hib = bool(mt["higher_is_better"].iloc[0]) if len(mt) else True
            # Emulated guests measure the emulator: their figures are functional only, never ranked.
            ranking = rank(
                {c.label: c.values for c in configs if len(c.values) >= 2 and c.cell_id not in unranked_ids},
                hib,
                alpha,
                practical_pct,
            )
            metrics.append(MetricView(phase, name, unit, hib, (phase, name) == head, configs, ranking))
        if not metrics:  # every trial failed: keep the workload visible with its failures
            configs = [
                Config(
                    int(c["cell_id"]),
                    labels[int(c["cell_id"])],
                    cell_levels[int(c["cell_id"])],
                    c["status"],
                    c["cause"],
                    [],
                    [],
                    None,
                )
                for _, c in wcells.iterrows()
            ]
            metrics.append(MetricView("-", "-", "", True, True, configs, []))
        view = WorkloadView(
            workload,
            family,
            varying,
            fixed,
            metrics,
            labels=[labels[int(i)] for i in wcells["cell_id"]],
            min_phase_s=min_phase_s,
            emulated=[labels[i] for i in labels if i in emulated_ids],
            in_guest_apart=[labels[i] for i in labels if i in unranked_ids and i not in emulated_ids],
            guests={
                labels[i]: f"{g.get('kernel_release') or g.get('kernel_version')}, {g.get('accelerator')}"
                for i, g in guests.items()
                if i in labels
            },
        )
        _judge_phases(view, frames, wcells, level, path)
        view.per_op = _per_op(view, frames, alpha, practical_pct)
        views.append(view)
    return CampaignView(path, camp, frames, factors, views, level, alpha, practical_pct)


def _min_phase_s(source: str | None) -> float:
    """The campaign file's min_phase_s (default 60 s: the minimum for claims)."""
    from fsmeter.stats.batch import DEFAULT_MIN_PHASE_S

    try:
        return float(tomllib.loads(source or "").get("min_phase_s", DEFAULT_MIN_PHASE_S))
    except (tomllib.TOMLDecodeError, TypeError, ValueError):
        return DEFAULT_MIN_PHASE_S


def _judge_phases(view: WorkloadView, frames: dict, wcells: pd.DataFrame, level: float, db: Path) -> None:
    """Flag too-short phases; give single-trial configurations a batch-means CI of the headline's own
    per-interval series (the family's ``series`` for the metric), or say why there is none."""
    from fsmeter.families import FAMILIES
    from fsmeter.stats.phase import phase_quality

    ph = frames.get("phases")
    if ph is None or not len(ph):
        return
    ph = ph[ph["cell_id"].isin(wcells["cell_id"]) & (ph["measured"] == 1) & (ph["discarded"] == 0)]
    if len(ph):
        view.longest_phase_s = float(ph["elapsed_s"].max())
        _judge_regime(view, ph)
        _judge_disk_model(view, ph, db)
    head = view.headline
    fam = FAMILIES.get(view.family) if view.family else None
    quantity = fam.series.get(head.name) if fam is not None else None
    for c in head.configs:
        kept = [t for t in c.trials if is_kept(t[2], t[3], t[1])]
        if len(c.values) != 1 or len(kept) != 1:
            continue
        if quantity is None:
            c.batch_note = f"{head.name} is not sampled per interval"
            continue
        trial = kept[0][0]
        p = ph[(ph["cell_id"] == c.cell_id) & (ph["trial"] == trial) & (ph["phase"] == head.phase)]
        if not len(p):
            continue
        intervals = _phase_intervals(db, int(p["phase_id"].iloc[0]))
        if any(quantity(i) is None for i in intervals):
            c.batch_note = f"the trial's interval samples do not record what {head.name} counts (older fsmeter)"
            continue
        q = phase_quality(
            intervals,
            float(p["elapsed_s"].iloc[0]),
            float(p["warmup_s"].iloc[0]),
            level,
            view.min_phase_s,
            _job_interval_s(frames, c.cell_id, trial),
            count=quantity,
        )
        if q.batch is not None:
            c.batch_pct = q.batch.ci.half_width_pct
        else:
            c.batch_note = q.notes[0] if q.notes else "too few interval samples"


def _judge_regime(view: WorkloadView, ph: pd.DataFrame) -> None:
    """Count the measured phases that ran on a busy machine and sum up their page-cache reads
    (store version 5 columns; older stores have none and nothing is flagged)."""
    from fsmeter.regime import BUSY_SHARE

    view.phases_measured = len(ph)
    if "other_cpu_share" in ph.columns:
        share = ph["other_cpu_share"].dropna().astype(float)
        if len(share):
            view.phases_busy = int((share > BUSY_SHARE).sum())
            view.max_other_cpu_share = float(share.max())
    if "cache_read_share" in ph.columns:
        cached = ph["cache_read_share"].dropna().astype(float)
        if len(cached):
            view.median_cache_read_share = float(cached.median())


def _judge_disk_model(view: WorkloadView, ph: pd.DataFrame, db: Path) -> None:
    """Count the measured phases that ran on a disk model and those its lateness disturbed (the flag
    and lateness each phase's regime recorded; phases on other targets have none)."""
    ids = [int(i) for i in ph["phase_id"]]
    if not ids:
        return
    with open_store(db, create=False) as store:
        rows = []
        for i in range(0, len(ids), 500):  # SQLite's limit on parameters
            chunk = ids[i : i + 500]
            rows += store.conn.execute(
                "SELECT json_extract(report, '$.regime.disturbed') AS disturbed,"
                " json_extract(report, '$.regime.disk_model.lateness_p99_ms') AS p99 FROM phases"
                f" WHERE id IN ({','.join('?' * len(chunk))}) AND json_extract(report, '$.regime.disk_model') IS NOT NULL",
                chunk,
            ).fetchall()
    view.phases_on_disk_model = len(rows)
    view.phases_disturbed = sum(1 for r in rows if r["disturbed"])
    p99 = [float(r["p99"]) for r in rows if r["p99"] is not None]
    view.max_lateness_p99_ms = max(p99) if p99 else None


def _phase_intervals(db: Path, phase_id: int) -> list:
    """The interval samples of one stored phase, as the engine reported them (every field)."""
    with open_store(db, create=False) as store:
        row = store.conn.execute("SELECT report FROM phases WHERE id = ?", (phase_id,)).fetchone()
    try:
        return list((json.loads(row["report"]) or {}).get("intervals") or []) if row and row["report"] else []
    except ValueError:
        return []


def _job_interval_s(frames: dict, cell_id: int, trial: int) -> float | None:
    """The sampling interval of the job a trial ran (from its environment record), if recorded."""
    env = frames.get("environment")
    if env is None or not len(env) or "extra" not in env.columns:
        return None
    rows = env[(env["cell_id"] == cell_id) & (env["trial"] == trial)]
    for extra in rows["extra"].dropna():
        try:
            v = (json.loads(extra).get("job") or {}).get("interval_s")
        except (ValueError, AttributeError):
            v = None
        if v:
            return float(v)
    return None


def _per_op(view: WorkloadView, frames: dict, alpha: float, practical_pct: float) -> list:
    """Per-op latency rankings for per-operation workloads (dbench: best and second-best per op)."""
    hist = frames["histograms"]
    if not len(hist):
        return []
    trials = frames["trials"]
    kept = kept_rows(trials)
    kept_keys = set(zip(kept["cell_id"], kept["trial"]))
    ids = {c.cell_id: c.label for c in view.headline.configs}
    h = hist[hist["cell_id"].isin(list(ids))]
    h = h[np.array([k in kept_keys for k in zip(h["cell_id"], h["trial"])], dtype=bool)]
    if h.empty:
        return []
    phase = view.headline.phase if view.headline.phase in set(h["phase"]) else h["phase"].iloc[0]
    h = h[h["phase"] == phase]
    kinds = list(dict.fromkeys(h["op"]))
    if view.family not in PER_OP_FAMILIES and len(kinds) < PER_OP_MIN_KINDS:
        return []
    out = []
    for op in kinds:
        samples = {}
        for cid, label in ids.items():
            vals = [
                float(v) / 1000.0 for v in h[(h["op"] == op) & (h["cell_id"] == cid)]["mean_ns"] if not _is_missing(v)
            ]
            if vals:
                samples[label] = vals
        ranked = rank({k: v for k, v in samples.items() if len(v) >= 2}, False, alpha, practical_pct)
        out.append(OpView(phase, op, ranked, {k: sum(v) / len(v) for k, v in samples.items()}))
    return out


def fmt_num(v: float | None) -> str:
    """Numbers for tables: 4 significant digits, thousands separators, '-' for missing."""
    if v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v))):
        return "-" if v is None or math.isnan(v) else ("inf" if v > 0 else "-inf")
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1e7 or a < 1e-3:
        return f"{v:.3e}"
    decimals = max(0, 3 - int(math.floor(math.log10(a))))
    return f"{v:,.{decimals}f}"


def fmt_ci(c: Config) -> str:
    if c.ci is not None:
        return f"{fmt_num(c.ci.mean)} ± {fmt_num(c.ci.half_width)}"
    if c.values and c.batch_pct is not None:
        return f"{fmt_num(c.values[0])} ± {fmt_num(abs(c.values[0]) * c.batch_pct / 100.0)} (1 trial, batch means)"
    if c.values and c.batch_note is not None:
        return f"{fmt_num(c.values[0])} (1 trial, no CI)"
    if c.values:
        return f"{fmt_num(c.values[0])} (1 trial)"
    return "-"


def verdicts(view: CampaignView) -> list:
    """Per workload, the plain-words verdict on its headline metric: dicts with 'workload' and 'text'."""
    out = []
    lvl = f"{view.level:.0%}"
    for w in view.workloads:
        m = w.headline
        direction = "higher is better" if m.higher_is_better else "lower is better"
        what = f"{m.key} ({m.unit}, {direction})"
        ranked = m.ranking
        unranked = [c for c in m.configs if len(c.values) < 2 and c.label not in w.emulated + w.in_guest_apart]
        notes = []
        if w.emulated and len(w.emulated) < len(m.configs):
            notes.append(
                f"{EMULATED_NOTE}: {', '.join(w.emulated)} ran in a guest under software emulation "
                "(TCG); their figures show that the filesystem works, not how fast: not ranked"
            )
        if w.in_guest_apart:
            notes.append(
                f"ran in a guest (virtual machine), not ranked against the configurations run on the host "
                f"(another I/O path): {', '.join(w.in_guest_apart)}"
            )
        if unranked:
            notes.append(
                "not ranked (fewer than 2 usable trials): "
                + ", ".join(
                    f"{c.label} ({c.status}{': ' + c.cause if c.cause else ''})"
                    if not c.values
                    else f"{c.label} ({len(c.values)} trial)"
                    for c in unranked
                )
            )
        if not ranked and w.emulated:
            done = sum(1 for c in m.configs if c.status == "done")
            text = (
                f"{w.workload}: {EMULATED_NOTE}. Every configuration ran in a guest under software emulation "
                f"(TCG): functional results only, not ranked; {done} of {len(m.configs)} configurations "
                "finished."
            )
        elif not ranked:
            text = f"{w.workload}: no configuration has 2 usable trials on {what}, so nothing can be claimed."
        elif len(ranked) == 1:
            c = m.config(ranked[0].name)
            text = (
                f"{w.workload}: only one configuration to judge ({ranked[0].name}): {fmt_ci(c)} {m.unit} "
                f"on {what} ({lvl} CI, {len(c.values)} trials). Nothing to compare it with."
            )
        else:
            best = m.config(ranked[0].name)
            same = [e for e in ranked[1:] if e.group == 1]
            worse = [e for e in ranked[1:] if e.group != 1]
            ns = sorted({len(m.config(e.name).values) for e in ranked})
            trials = f"{ns[0]}" if len(ns) == 1 else f"{ns[0]} to {ns[-1]}"

            def diff(e: RankEntry) -> str:
                return f"{100.0 * (e.mean - best.mean) / abs(best.mean):+.1f}%" if best.mean else "n/a"

            text = f"{w.workload}: best is {ranked[0].name} at {fmt_ci(best)} {m.unit} on {what}. "
            if same:
                text += (
                    "Not significantly worse than the best: " + ", ".join(f"{e.name} ({diff(e)})" for e in same) + ". "
                )
            else:
                text += "Every other configuration is significantly worse. "
            if worse and same:
                text += "Significantly worse: " + ", ".join(f"{e.name} ({diff(e)})" for e in worse) + ". "
            elif worse:
                text = text.rstrip(". ") + ": " + ", ".join(f"{e.name} ({diff(e)})" for e in worse) + ". "
            text += (
                f"Based on {lvl} confidence intervals, Welch t-tests at alpha = {view.alpha:g} and a practical "
                f"threshold of {view.practical_pct:g}% (smaller differences do not count), "
                f"with {trials} trials per configuration."
            )
        if any(c.batch_pct is not None for c in m.configs):
            notes.append(
                f"a configuration with a single trial shows a batch-means CI (Jain 25.5.2) of {m.key} "
                "itself, from that trial's interval samples; it is not ranked"
            )
        for c in m.configs:
            if c.batch_note is not None:
                notes.append(f"{c.label}: single trial, no CI available: {c.batch_note}")
        if w.too_short:
            notes.append(
                f"too short to trust: the longest measured phase lasted {w.longest_phase_s:.1f} s, under "
                f"the {w.min_phase_s:g} s minimum for claims (min_phase_s); lengthen the phases "
                "(duration_s) before drawing conclusions"
            )
        if w.phases_busy:
            from fsmeter.regime import BUSY_SHARE

            notes.append(
                f"busy machine: {w.phases_busy} of {w.phases_measured} measured phases ran while other "
                f"processes used more than {BUSY_SHARE:.0%} of the CPUs (up to {w.max_other_cpu_share:.0%}); "
                "their figures may show contention rather than the filesystem: re-run on a quiet machine"
            )
        if w.phases_disturbed:
            from fsmeter.diskmodel.stats import DISTURBED_SHARE

            notes.append(
                f"disk model disturbed: in {w.phases_disturbed} of {w.phases_on_disk_model} measured phases the "
                f"model's replies left late (lateness p99 over {DISTURBED_SHARE:.0%} of the mean modelled service "
                f"time, up to {w.max_lateness_p99_ms:.2f} ms): their figures include this machine's scheduling, "
                "not only the modelled disk; re-run on a quiet machine"
            )
        if w.median_cache_read_share is not None:
            notes.append(
                f"reads served by the page cache: median {w.median_cache_read_share:.0%} of the bytes read "
                "per phase (phases that read at least 1 MiB)"
            )
        out.append({"workload": w.workload, "text": text, "notes": notes})
    return out
