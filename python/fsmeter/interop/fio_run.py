"""`fsmeter run JOBFILE.fio`: every job of a fio job file, in order (a stonewall group is a job), as access
workloads on one directory; one result document with each job's phases."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from rich.console import Console

from fsmeter.errors import UserError
from fsmeter.interop.fio_map import fio_workloads, job_error, split_ref
from fsmeter.phases import run_job
from fsmeter.spec import build_job


def plan_jobfile(ref: str, directory: Optional[Path], overrides: dict) -> list:
    """Every job of the file validated (job, MappedJob), before any runs. Without `directory` (--dir), each job
    runs in the absolute directory its file names; with it, there (replacing the file's absolute paths)."""
    out = []
    where = str(split_ref(ref)[0])
    for d, m in fio_workloads(ref, directory, dir_given=directory is not None):
        try:
            out.append((build_job(d, m.dir if m.dir is not None else directory, overrides), m))
        except UserError as exc:
            raise UserError(job_error(where, m, exc.message), exit_code=exc.exit_code) from None
    return out


def run_jobfile(jobs: list, ref: str, console: Console, **run_opts) -> dict:
    """Each job through fsmeter.phases.run_job, in order, until one is interrupted; one document, its
    phases and metrics named JOB:KEY. ``run_opts``: run_job's options (progress, cache, --keep-files...)."""
    doc: dict = {}
    for _job, m in jobs:
        for note in m.notes:
            console.print(f"[dim]note:[/] {m.name}: {note}", highlight=False)
    for job, m in jobs:
        try:
            one = run_job(job, console, **{**run_opts, "keep_files": run_opts.get("keep_files") or m.keep_files})
        except UserError as exc:
            if not exc.message.startswith("parameter "):
                raise
            raise UserError(job_error(str(split_ref(str(ref))[0]), m, exc.message), exit_code=exc.exit_code) from None
        if not doc:
            doc = {**one, "workload": Path(str(ref)).name, "phases": {}, "metrics": {}, "jobs": {}}
        doc["jobs"][m.name] = {"job": one["job"], "fio_line": m.line, "notes": m.notes}
        run = one["phases"].get("run")
        if m.logs and run is not None:
            for kind, fname in m.logs:
                write_fio_log(Path(fname), run, kind)
                console.print(f"wrote {fname}", highlight=False)
        for k, v in one["phases"].items():
            doc["phases"][f"{m.name}:{k}"] = v
        for k, v in one["metrics"].items():
            doc["metrics"][f"{m.name}:{k}"] = v
        if one["interrupted"]:
            doc["interrupted"] = True
            break
    return doc


def fio_log_lines(report: dict, kind: str) -> list:
    """fio's bandwidth (KiB/s) or IOPS log of one measured phase, as fio writes it with log_avg_msec: per
    sample interval and direction that did I/O, 'time ms, value, direction, 0, 0' (time: the interval's end
    since the phase started; direction 0 read, 1 write; block size and priority 0, as in fio 3's averaged
    lines).
    Bandwidth is the interval's bytes of that direction: the interval's I/Os of it times the direction's mean
    request size over the phase (exact for one request size)."""
    ops = report.get("ops") or {}
    lines = []
    for iv in report.get("intervals") or []:
        dur = float(iv.get("dur_s") or 0)
        if dur <= 0:
            continue
        end_ms = int(round(float(iv.get("t_s") or 0) * 1000))  # t_s: the interval's end
        by_kind = iv.get("ops_by_kind") or {}
        for ddir, name in ((0, "read"), (1, "write")):
            o = ops.get(name) or {}
            n = by_kind.get(name, 0)
            if not o.get("count") or not n:
                continue
            if kind == "iops":
                value = n / dur
            else:
                value = n * (o.get("bytes") or 0) / o["count"] / dur / 1024
            lines.append(f"{end_ms}, {int(value + 0.5)}, {ddir}, 0, 0")
    return lines


def write_fio_log(path: Path, report: dict, kind: str) -> None:
    path.write_text("".join(line + "\n" for line in fio_log_lines(report, kind)), encoding="utf-8")
