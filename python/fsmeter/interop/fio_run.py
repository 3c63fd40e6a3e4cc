"""`fsmeter run JOBFILE.fio`: every job of a fio job file, in order (a stonewall group is a job), as access
workloads on one directory; one result document with each job's phases."""
from __future__ import annotations

from pathlib import Path

from rich.console import Console

from fsmeter.interop.fio_map import fio_workloads
from fsmeter.phases import run_job
from fsmeter.spec import build_job


def plan_jobfile(ref: str, directory: Path, overrides: dict) -> list:
    """Every job of the file validated (job, MappedJob), before any runs."""
    return [(build_job(d, directory, overrides), m) for d, m in fio_workloads(ref)]


def run_jobfile(jobs: list, ref: str, console: Console, **run_opts) -> dict:
    """Each job through fsmeter.phases.run_job, in order, until one is interrupted; one document, its
    phases and metrics named JOB:KEY. ``run_opts``: run_job's options (progress, cache, --keep-files...)."""
    doc: dict = {}
    for job, m in jobs:
        for note in m.notes:
            console.print(f"[dim]note:[/] {m.name}: {note}", highlight=False)
    for job, m in jobs:
        one = run_job(job, console, **run_opts)
        if not doc:
            doc = {**one, "workload": Path(str(ref)).name, "phases": {}, "metrics": {}, "jobs": {}}
        doc["jobs"][m.name] = {"job": one["job"], "fio_line": m.line, "notes": m.notes}
        for k, v in one["phases"].items():
            doc["phases"][f"{m.name}:{k}"] = v
        for k, v in one["metrics"].items():
            doc["metrics"][f"{m.name}:{k}"] = v
        if one["interrupted"]:
            doc["interrupted"] = True
            break
    return doc
