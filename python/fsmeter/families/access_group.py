"""Several access jobs measured together in one phase, as fio runs the jobs of one group (no
stonewall between them): each job with its own parameters, threads, seed and backend. Made by
fio job files (fsmeter.interop.fio); the engine's spec is `access_group` (access/group.rs)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fsmeter.families import (
    Family,
    Metric,
    Phase,
    bytes_series,
    kind_series,
    op_latency_metric,
    ops_series,
    total_metric,
)
from fsmeter.families.access import AccessParams


class GroupJob(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    name: str = Field(
        min_length=1,
        max_length=256,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description="the job's name in the results: any text without control characters, as fio's "
        "job names (it names no file)",
    )
    threads: int = Field(1, ge=1, le=4096)
    seed: int = Field(42, ge=0, lt=1 << 64)
    backend: Literal["psync", "io_uring", "libaio", "null", "mmap", "libpmem"] = "psync"
    params: AccessParams
    start_delay_s: float = Field(
        0.0, ge=0, description="seconds after the group starts before this job does (fio startdelay)"
    )
    wait_for: str | None = Field(
        None,
        description="an earlier job of the group: this one starts when every thread of that one is done (fio wait_for)",
    )
    exit: Literal["none", "group", "stonewall", "all"] = Field(
        "none",
        description="what the end of each of its threads stops (fio exitall with exit_what): nothing, its "
        "reporting group, every job that has started, every job",
    )
    report_group: int = Field(0, ge=0, description="its reporting group (fio new_group), for exit = group")


class AccessGroupParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    family: Literal["access_group"] = "access_group"
    jobs: list[GroupJob] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self):
        names = [j.name for j in self.jobs]
        for n in names:
            if names.count(n) > 1:
                raise ValueError(f"jobs: two jobs named {n}: give each job its own name")
        for i, j in enumerate(self.jobs):
            if j.wait_for is not None and j.wait_for not in names[:i]:
                raise ValueError(f"jobs: {j.name} waits for {j.wait_for}, which is not an earlier job of the group")
        return self

    def check_settings(self, settings) -> None:
        """Each job's own checks, with its own threads and backend."""
        for j in self.jobs:
            j.params.check_settings(SimpleNamespace(threads=j.threads, backend=j.backend, seed=j.seed))

    def engine_spec(self) -> dict:
        jobs = []
        for j in self.jobs:
            spec = j.params.engine_spec()
            spec.pop("family", None)
            jobs.append(
                {
                    "name": j.name,
                    "threads": j.threads,
                    "seed": j.seed,
                    "backend": j.backend,
                    "workload": spec,
                    "start_delay_s": j.start_delay_s,
                    "wait_for": j.wait_for,
                    "exit": j.exit,
                    "report_group": j.report_group,
                }
            )
        return {"family": "access_group", "jobs": jobs}


def _phases(p: AccessGroupParams) -> list:
    phases = [Phase("prepare", measured=False), Phase("run", cold_cache=True)]
    if any((j.params.verify != "off" and j.params.verify_phase) or j.params.verify_pattern for j in p.jobs):
        phases.append(Phase("verify", measured=False, cold_cache=True))
    return phases


def _job_metric(job: str, key: str, name: str, unit: str, scale: float = 1.0) -> Metric:
    def get(r: dict):
        t = ((r.get("jobs") or {}).get(job) or {}).get("total")
        return None if t is None else t[key] / scale

    return Metric("run", f"{job}.{name}", unit, True, get)


def _metrics(p: AccessGroupParams) -> list:
    # The group's totals first (the headline), then each job's own.
    ms = [total_metric("run", "ops_per_s", "ops/s"), total_metric("run", "bytes_per_s", "MiB/s")]
    if any(e.read_pct > 0 for j in p.jobs for e in j.params.entries):
        ms.append(op_latency_metric("run", "read"))
    if any(e.read_pct < 100 for j in p.jobs for e in j.params.entries):
        ms.append(op_latency_metric("run", "write"))
    for j in p.jobs:
        ms.append(_job_metric(j.name, "ops_per_s", "ops_per_s", "ops/s"))
        ms.append(_job_metric(j.name, "bytes_per_s", "MiB_per_s", "MiB/s", 1 << 20))
    ms.append(Metric("run", "cpu_pct", "%", False, lambda r: r["cpu"]["process_pct"]))
    return ms


FAMILY = Family(
    name="access_group",
    params=AccessGroupParams,
    phases=_phases,
    metrics=_metrics,
    description="several access jobs measured together (a fio job file's group of concurrent jobs)",
    series={"ops_per_s": ops_series, "MiB_per_s": bytes_series(1 << 20), "fsync_per_s": kind_series("fsync")},
)
