"""A progress bar for engine phases: time-based phases show warm-up then
measurement against the clock; fixed-work phases show operations done."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class PhaseProgress:
    def __init__(self, progress: Progress, label: str):
        self._p = progress
        self._label = label
        self._task = progress.add_task(label, total=None)

    def __call__(self, p: dict) -> None:
        state = p["state"]
        timed = p["duration_s"] > 0
        rate = p["ops"] / max(p["elapsed_s"] - p["warmup_s"], 1e-9) if state == "measuring" else 0.0
        desc = f"{self._label}: {'warm-up' if state == 'warmup' else state}"
        if state == "measuring" and p["ops"]:
            desc += f" {rate:,.0f} ops/s"
        if timed:
            self._p.update(
                self._task,
                description=desc,
                total=p["warmup_s"] + p["duration_s"],
                completed=min(p["elapsed_s"], p["warmup_s"] + p["duration_s"]),
            )
        elif p["work_total"]:
            self._p.update(self._task, description=desc, total=p["work_total"], completed=p["ops"])
        else:
            self._p.update(self._task, description=desc)

    def done(self) -> None:
        t = self._p.tasks[self._task]
        self._p.update(
            self._task, description=f"{self._label}: done", completed=t.total if t.total else 1, total=t.total or 1
        )


@contextmanager
def progress_bar(console: Console, enabled: bool = True) -> Iterator[Progress]:
    p = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
        disable=not enabled,
    )
    with p:
        yield p
