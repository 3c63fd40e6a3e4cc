"""The mix family (AIM Suite VII as re-aim-7 runs it): N tasks run the same
weighted job list in their own random order; N rises subrun by subrun; jobs
per minute (JPM), its peak and the crossover.

Mirrors crates/engine/src/workload/mix (MixSpec). The workfile (weights) is
parsed here, so a bad line is reported with its number before anything runs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fsmeter import workfiles
from fsmeter.errors import UserError
from fsmeter.families import Family, Metric, Phase
from fsmeter.units import Size

SEARCHES = ("peak", "crossover")
#: The task program (one small process per task), built into the package with the extension.
TASK_PROGRAM = Path(__file__).resolve().parent.parent / "_bin" / "fsmeter-mix-task"


def task_program() -> Path:
    """The task program: $FSMETER_MIX_TASK, else the one installed with the package."""
    env = os.environ.get("FSMETER_MIX_TASK")
    return Path(env) if env else TASK_PROGRAM


def _parse_tasks(v):
    """'1,2,4,8' / [1, 2, 4] / 'peak' / 'crossover'."""
    if isinstance(v, int) and not isinstance(v, bool):
        return [v]
    if isinstance(v, str):
        s = v.strip().lower()
        if s in SEARCHES:
            return s
        if not re.fullmatch(r"\d+(\s*,\s*\d+)*", s):
            raise ValueError(f"tasks: {v!r}: give task counts like 1,2,4,8, or peak, or crossover")
        return [int(x) for x in s.split(",")]
    return v


class MixParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    family: Literal["mix"] = "mix"
    workfile: str = Field("shared", description="job weights: shared, disk (fsmeter's copies of re-aim's), or a file")
    tasks: list[int] | Literal["peak", "crossover"] = Field(
        default_factory=lambda: [1, 2, 4, 8],
        description="task counts in order (1,2,4,8), or re-aim's searches: peak (-g), crossover (-x)",
    )
    jobs_per_task: int = Field(100, ge=1, le=100_000, description="jobs per task before rounding (re-aim -j)")
    file_size: Size | None = Field(
        None, ge=1024, description="disk-job file size, KiB multiple (FILESIZE; default: the workfile's, else 10K)"
    )
    pool_size: Size | None = Field(
        None,
        ge=0,
        description="POOLSIZE, split over the tasks: file = "
        "file_size + pool_size / N (default: the workfile's, else 1M)",
    )
    start_tasks: int = Field(1, ge=1, le=4096, description="first N of a search (re-aim -s)")
    increment: int = Field(1, ge=1, le=4096, description="step of a search (re-aim -i)")
    adaptive_increment: bool = Field(True, description="re-aim's adaptive step after nine subruns (off: re-aim -t)")
    max_tasks: int = Field(256, ge=1, le=4096, description="a search stops here (re-aim -e)")
    crossover_jpm_per_task: float = Field(
        10.0, gt=0, description="crossover: JPM per task at or below this (re-aim 10; 60 with -q)"
    )
    sync: Literal["shell", "syscall", "none"] = Field(
        "syscall",
        description='where re-aim runs system("sync") in the disk jobs: shell (as re-aim), '
        "syscall (sync(2)), none (re-aim -y)",
    )
    verify: Literal["off", "pattern"] = Field(
        "off",
        description="data verification (docs/verify.md): every block a disk job reads back is compared with "
        "the block AIM7 writes everywhere; AIM7's blocks are all alike, so there is no checksum choice and a "
        "misplaced block is not found",
    )
    task_mode: Literal["process", "fork", "thread"] = Field(
        "process",
        description="process: each task is a small task program (AIM7's tasks are small processes); "
        "fork: a fork of fsmeter itself; thread: threads of fsmeter",
    )
    exec_path: str = Field("/bin/true", description="the small program exec_test runs")

    @field_validator("sync", mode="before")
    @classmethod
    def _sync_none(cls, v):
        # `--set sync=none` arrives as None (the CLI's spelling of "no value").
        return "none" if v is None else v

    @field_validator("tasks", mode="before")
    @classmethod
    def _parse(cls, v):
        return _parse_tasks(v)

    @field_validator("tasks")
    @classmethod
    def _check_tasks(cls, v):
        if isinstance(v, list):
            if not v:
                raise ValueError("tasks: give at least one task count")
            if any(n < 1 or n > 4096 for n in v):
                raise ValueError("tasks: each task count must be between 1 and 4096")
        return v

    @model_validator(mode="after")
    def _check(self):
        for name in ("file_size", "pool_size"):
            v = getattr(self, name)
            if v is not None and v % 1024:
                raise ValueError(f"{name}: must be a whole number of KiB (the disk jobs move 1 KiB blocks)")
        if self.start_tasks > self.max_tasks:
            raise ValueError("start_tasks: must not exceed max_tasks")
        return self

    def check_settings(self, settings) -> None:
        if settings.threads != 1:
            raise UserError(
                "setting threads: the mix family's task counts are its tasks parameter: "
                "use --set tasks=1,2,4,8 and leave threads at 1"
            )
        if settings.backend != "psync":
            raise UserError("setting backend: the mix jobs issue re-aim's system calls directly: use backend=psync")
        if not Path(self.exec_path).is_file():
            raise UserError(f"parameter exec_path: {self.exec_path} does not exist: name a small program")
        self.workfile_data()
        if self.task_mode == "process" and not task_program().is_file():
            raise UserError(
                f"the mix task program {task_program()} is missing: reinstall fsmeter (`make build` or `pip install .`), or use "
                "--set task_mode=fork"
            )

    def workfile_data(self) -> workfiles.Workfile:
        return workfiles.load(self.workfile)

    def sizes_kib(self) -> tuple:
        wf = self.workfile_data()
        file_kib = (
            self.file_size // 1024 if self.file_size is not None else (wf.file_kib if wf.file_kib is not None else 10)
        )
        pool_kib = (
            self.pool_size // 1024 if self.pool_size is not None else (wf.pool_kib if wf.pool_kib is not None else 1024)
        )
        if file_kib == 0 and pool_kib == 0:
            raise UserError("parameters file_size and pool_size: both are 0: the disk jobs need a file")
        return file_kib, pool_kib

    def engine_spec(self) -> dict:
        wf = self.workfile_data()
        file_kib, pool_kib = self.sizes_kib()
        d = {
            "family": "mix",
            "weights": [{"job": j, "hits": h} for j, h in wf.weights],
            "jobs_per_task": self.jobs_per_task,
            "file_kib": file_kib,
            "pool_kib": pool_kib,
            "start_tasks": self.start_tasks,
            "increment": self.increment,
            "adaptive_increment": self.adaptive_increment,
            "max_tasks": self.max_tasks,
            "crossover_jpm_per_task": self.crossover_jpm_per_task,
            "sync": self.sync,
            "task_mode": self.task_mode,
            "exec_path": str(Path(self.exec_path).resolve()),
            "verify": self.verify == "pattern",
        }
        if self.task_mode == "process":
            d["task_program"] = str(task_program())
        if isinstance(self.tasks, list):
            d["tasks"] = list(self.tasks)
        else:
            d["tasks"] = []
            d["search"] = self.tasks
        return d


def _phases(p: MixParams) -> list:
    return [Phase("prepare", measured=False), Phase("subruns")]


def subrun_at(r: dict, n: int) -> dict | None:
    return next((s for s in r.get("extra", {}).get("subruns", []) if s["tasks"] == n), None)


def _jpm_at(n: int) -> Metric:
    def get(r: dict) -> float | None:
        s = subrun_at(r, n)
        return None if s is None else s["jpm"]

    return Metric("subruns", f"jpm_at_{n}", "jobs/min", True, get)


def _metrics(p: MixParams) -> list:
    ms = [
        Metric("subruns", "peak_jpm", "jobs/min", True, lambda r: r["extra"]["peak_jpm"]),
        Metric("subruns", "peak_tasks", "tasks", True, lambda r: r["extra"]["peak_tasks"]),
        Metric("subruns", "crossover_tasks", "tasks", True, lambda r: r["extra"].get("crossover_tasks")),
        Metric(
            "subruns",
            "tasks_pss_max_MiB",
            "MiB",
            False,
            lambda r: (r["extra"].get("tasks_pss_max_bytes") or 0) / (1 << 20),
        ),
    ]
    if isinstance(p.tasks, list):
        ms += [_jpm_at(n) for n in p.tasks]
    return ms


FAMILY = Family(
    name="mix",
    params=MixParams,
    phases=_phases,
    metrics=_metrics,
    description="AIM Suite VII / re-aim: a weighted job mix run by N tasks at once; jobs per minute, peak and crossover",
    charts="fsmeter.report.mix:workload_charts",
)
