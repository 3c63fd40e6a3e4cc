"""Workload families on the Python side: the pydantic model of each family's
parameters (mirroring the engine's serde spec), its phases, and its headline metric.

One module per family; each defines ``FAMILY``, a `Family` instance.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel


@dataclass(frozen=True)
class Phase:
    #: The engine phase to run.
    name: str
    #: Reported as a result (False: setup such as laying out files).
    measured: bool = True
    #: Caches are reset (remount / drop caches) right before this phase.
    cold_cache: bool = False
    #: Name of this run of the phase in results; defaults to `name`. An engine
    #: phase may run several times (filemark: transactions-1, transactions-2, ...).
    label: str = ""
    #: Excluded from statistics (filemark discards its first transaction phase).
    discard: bool = False

    @property
    def key(self) -> str:
        return self.label or self.name


@dataclass(frozen=True)
class Metric:
    """A number a phase report yields, e.g. ("run", "ops_per_s"). `phase` is a Phase.key."""

    phase: str
    name: str
    unit: str
    higher_is_better: bool = True
    #: Extracts the value from a phase report (engine JSON).
    get: Callable[[dict], float | None] = field(default=lambda r: None, compare=False)
    #: For one value of a grid (iozone: test, file_size, record_size): what it is keyed by. Keyed
    #: metrics are stored (metrics.keys) and charted as surfaces, not ranked one by one.
    keys: dict | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Family:
    name: str
    params: type[BaseModel]
    #: Phases in run order; a callable gets the validated params (phase lists can depend on them).
    phases: Callable[[BaseModel], list]
    #: Metrics stored per trial; the first is the headline used to rank configurations.
    metrics: Callable[[BaseModel], list]
    description: str = ""
    #: Per metric name: its counted quantity in one interval sample (the engine's ``intervals[]``
    #: dicts), in the metric's unit, or None when the sample lacks it. The metric's value is that
    #: quantity over the measured time, so quantity / ``dur_s`` per sample is the metric's own time
    #: series: a single trial's batch-means CI is computed on it. A metric without an entry is not
    #: sampled per interval, and a single trial of it gets no CI.
    series: dict = field(default_factory=dict)
    #: Campaigns without an explicit `mkfs` make a fresh filesystem per cell or per trial as the family asks.
    default_mkfs: str = "per-cell"
    #: Optional: doc (the `fsmeter run` result) -> a rich renderable printed after the phase tables;
    #: a callable, or a hook reference "module:function" (see `resolve`).
    run_summary: Callable[[dict], object] | str | None = None
    #: Optional: the family's own charts in the HTML report, a hook reference "module:function" (see
    #: `resolve`) to ``fn(view, workload_view, idx, baseline) -> [figure dict]`` (fsmeter.report.figures),
    #: drawn after the heat maps of each of the family's workloads.
    charts: str | None = None
    #: The report's per-interval throughput chart says something about this family's phases (False
    #: for a phase of one long operation).
    interval_chart: bool = True

    def summary(self, doc: dict):
        """What `fsmeter run` prints after the phase tables (None: nothing)."""
        return None if self.run_summary is None else resolve(self.run_summary)(doc)

    def chart_figures(self, view, w, idx: int, baseline: str | None = None) -> list:
        """The family's own report figures for workload ``w`` (section ``idx``) of a campaign view."""
        return [] if self.charts is None else list(resolve(self.charts)(view, w, idx, baseline))


def resolve(hook):
    """A family hook: a callable as it is, or a reference "package.module:function", imported when it is
    first used. The report code a family names stands above the families (a family never imports it):
    the reference is how a family says where its charts and its run summary live."""
    if callable(hook):
        return hook
    module, sep, name = str(hook).partition(":")
    if not sep:
        raise ValueError(f"family hook {hook!r}: write it as package.module:function")
    return getattr(importlib.import_module(module), name)


@dataclass
class WorkloadDef:
    """A workload as defined, before it is bound to a directory (fsmeter.spec.build_job): a named
    workload's TOML file, a workload file of the user's, or one job of a fio job file."""

    name: str
    family: Family
    description: str
    params: dict
    settings: dict
    source: Path


def ops_series(iv: dict) -> float | None:
    """Operations of one interval sample (all kinds)."""
    return iv.get("ops")


def kind_series(kind: str) -> Callable[[dict], float | None]:
    """Operations of one kind in one interval sample."""
    return lambda iv: (iv.get("ops_by_kind") or {}).get(kind, 0) if "ops" in iv else None


def bytes_series(per_unit: float) -> Callable[[dict], float | None]:
    """Bytes of one interval sample, divided by ``per_unit`` (1 << 20 for MiB/s, 1e6 for MB/s)."""
    return lambda iv: None if iv.get("bytes") is None else iv["bytes"] / per_unit


def total_metric(phase: str, key: str, unit: str, higher_is_better: bool = True) -> Metric:
    """A metric from a phase's totals: key is 'ops_per_s' or 'bytes_per_s'."""
    if key == "bytes_per_s":
        return Metric(phase, "MiB_per_s", "MiB/s", higher_is_better, lambda r: r["total"]["bytes_per_s"] / (1 << 20))
    return Metric(phase, key, unit, higher_is_better, lambda r: r["total"][key])


def op_latency_metric(phase: str, op: str, pct: str = "p99_ns") -> Metric:
    """A latency percentile of one op kind, in microseconds (lower is better)."""

    def get(r: dict) -> float | None:
        o = r.get("ops", {}).get(op)
        # No latency kept (an untimed phase, or no operation of the kind): not measured, not 0.
        return None if o is None or not o["lat"]["count"] else o["lat"][pct] / 1000.0

    return Metric(phase, f"{op}_{pct[:-3]}_us", "us", False, get)


def _load() -> dict:
    fams = {}
    for info in pkgutil.iter_modules(__path__):
        mod = importlib.import_module(f"{__name__}.{info.name}")
        fam = getattr(mod, "FAMILY", None)
        if fam is not None:
            fams[fam.name] = fam
    return fams


FAMILIES: dict = _load()
