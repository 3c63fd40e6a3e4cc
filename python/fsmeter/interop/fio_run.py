"""`fsmeter run JOBFILE.fio`: every stonewall group of a fio job file, in order, as access workloads on one
directory (a group of concurrent jobs as one access_group workload, its jobs measured together); one result
document with each group's phases, and each job's own figures under its group's phase (`jobs`)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from fsmeter.engine import EngineFailure
from fsmeter.errors import UserError
from fsmeter.interop import fio_exec
from fsmeter.interop.fio.job import map_job
from fsmeter.interop.fio.load import access_def, fio_workloads, group_def, split_ref
from fsmeter.interop.fio.mapped import MappedGroup, job_error
from fsmeter.phases import PhaseSteps, run_job
from fsmeter.spec import build_job


def plan_jobfile(ref: str, directory: Path | None, overrides: dict, allow_exec: bool = False) -> list:
    """Every group of the file validated (job, MappedJob or MappedGroup), before any runs. Without `directory`
    (--dir), each job runs in the absolute directory its file names; with it, there (replacing the file's
    absolute paths). The jobs of a group are each built as an access job with the same overrides (so `--set`
    reaches every job), then joined into the group's job."""
    path, _ = split_ref(ref)
    token = fio_exec.ALLOW_EXEC.set(allow_exec)  # ioengine=exec jobs only with --allow-exec
    try:
        out = [
            _plan_item(path, d, m, directory, overrides) if d is not None else (None, m)
            for d, m in fio_workloads(ref, directory, dir_given=directory is not None)
        ]
    finally:
        fio_exec.ALLOW_EXEC.reset(token)
    _link_fills(path, out, directory, overrides)
    return out


def _members(m) -> list:
    return m.jobs if isinstance(m, MappedGroup) else [m]


def _link_fills(path: Path, items: list, directory: Path | None, overrides: dict) -> None:
    """fio's fill_device: a job of a later group that works on the file a fill_device job wrote takes its size from
    what was written. The filling item keeps its file (`keeps_fill`, removed at the end of the run unless
    --keep-files: `fill_paths`), and the later one is planned again once it has run (`replan`)."""
    fills = {j.name: m for _, m in items for j in _members(m) if j.fill}
    for _job, m in items:
        for j in _members(m):
            if j.fill:
                place = j.dir if j.dir is not None else directory
                j.fill_paths = [Path(place) / n for n in j.params["file_names"]] if place is not None else []
        waits = [j.after_fill for j in _members(m) if j.after_fill]
        for name in waits:
            fills[name].keeps_fill = True
        if waits:
            m.replan = lambda m=m, fill_jobs=[fills[w] for w in waits]: _replan(
                path, m, fill_jobs, directory, overrides
            )


def _replan(path: Path, m, fill_items: list, directory: Path | None, overrides: dict) -> tuple:
    """The item again, its jobs that work on a fill_device job's file sized by what that job wrote."""
    where = str(path)
    written = {}
    for f in fill_items:
        for fj in _members(f):
            for rel, p in zip(fj.params["file_names"], getattr(fj, "fill_paths", [])):
                try:
                    size = p.stat().st_size
                except OSError:
                    size = 0
                written[(str(fj.dir), rel)] = (fj.name, size, True, fj.group)
    for j in _members(m):
        if not j.after_fill:
            continue
        if not any(v[1] for v in written.values()):
            raise UserError(
                f"{where} line {j.line}: job {j.name}: the fill_device job before it wrote nothing, so "
                "there is nothing to size it by: give size="
            )
        new = map_job(where, j.fio_job, j.group, directory, directory is not None, written)
        j.params = new.params
        j.notes = [n for n in j.notes if not n.startswith("size from what job")] + [
            n for n in new.notes if n.startswith("size from what job")
        ]
    d = group_def(path, m) if isinstance(m, MappedGroup) else access_def(path, m)
    return _plan_item(path, d, m, directory, overrides)


def _job_names(m, most: int = 6) -> str:
    """The names of a group's jobs for an error line: the first few and how many there are."""
    names = [j.name for j in m.jobs]
    return ", ".join(names) if len(names) <= most else f"{', '.join(names[:most])}, ... ({len(names)} jobs)"


def _plan_item(path: Path, d, m, directory: Path | None, overrides: dict) -> tuple:
    """(job, MappedJob or MappedGroup): the engine job of one item of the file, checked."""
    where = str(path)
    place = m.dir if m.dir is not None else directory
    if not isinstance(m, MappedGroup):
        return (_build(where, m, d, place, overrides), m)
    if len(m.jobs) > 4096:  # each job is a thread at least: refused before building 20000 jobs one by one
        raise UserError(
            f"{path} line {m.line}: the jobs of group {m.group} ({_job_names(m)}) run at least "
            f"{len(m.jobs)} threads at the same time, more than fsmeter's 4096: put stonewall between "
            "them, or fewer jobs"
        )
    built = [_build(where, j, access_def(path, j), place, overrides) for j in m.jobs]
    threads = sum(b.settings.threads for b in built)
    if threads > 4096:
        raise UserError(
            f"{path} line {m.line}: the jobs of group {m.group} ({_job_names(m)}) "
            f"run {threads} threads at the same time, more than fsmeter's 4096: lower numjobs"
        )
    d.params = {
        "jobs": [
            {
                "name": j.name,
                "threads": b.settings.threads,
                "seed": b.settings.seed,
                "backend": b.settings.backend,
                "params": b.params.model_dump(exclude={"record_size"}),
                **j.group_entry(),
            }
            for j, b in zip(m.jobs, built)
        ]
    }
    d.settings = {"threads": threads}
    # log_avg_msec sets the sample interval, which is the group's (one sampler for the phase).
    intervals = {j.settings["interval_s"] for j in m.jobs if "interval_s" in j.settings}
    if len(intervals) > 1:
        raise UserError(
            f"{path} line {m.line}: the jobs of group {m.group} ({_job_names(m)}) "
            "give different log_avg_msec values, and fsmeter samples a group's jobs together: give "
            "them one log_avg_msec"
        )
    if intervals:
        d.settings["interval_s"] = intervals.pop()
    group_overrides = {k: v for k, v in overrides.items() if k == "interval_s"}
    job = build_job(d, place, group_overrides)
    job.members = built  # each job's own engine dict, for the result document
    return (job, m)


def _build(where: str, m, d, place: Path | None, overrides: dict):
    """build_job for one fio job, its errors told in the job file's terms (job_error)."""
    try:
        return build_job(d, place, overrides)
    except UserError as exc:
        raise UserError(job_error(where, m, exc.message), exit_code=exc.exit_code) from None


def run_jobfile(jobs: list, ref: str, console: Console, **run_opts) -> dict:
    """Each job through fsmeter.phases.run_job, in order, until one is interrupted; one document, its
    phases and metrics named JOB:KEY. ``run_opts``: run_job's options (progress, cache, --keep-files...)."""
    doc: dict = {}
    for _job, m in jobs:
        for note in m.notes:
            console.print(f"[dim]note:[/] {m.name}: {note}", highlight=False)
    try:
        return _run_items(jobs, ref, console, doc, run_opts)
    finally:
        # fill_device files kept for a later group: removed at the end whatever happened (unless --keep-files).
        for _job, m in jobs:
            for j in _members(m) if getattr(m, "keeps_fill", False) and not run_opts.get("keep_files") else []:
                for p in getattr(j, "fill_paths", []):
                    p.unlink(missing_ok=True)


class _ExecSteps(PhaseSteps):
    """The group's exec jobs start right before its measured phase (after its files are laid out) and are
    stopped at their runtime; the phase's end waits for that, as fio's group waits for its exec jobs."""

    def __init__(self, execs: list, place: Path | None, console: Console, out: list):
        self.execs, self.place, self.console, self.out = execs, place, console, out
        self.running: list | None = None

    def before(self, run, phase) -> None:
        if self.execs and self.running is None and phase.measured:
            self.running = fio_exec.start_all(self.execs, self.place)

    def after(self, run, phase, report: dict) -> dict | None:
        if phase.measured:
            stopped = bool((report or {}).get("interrupted"))
            if not stopped:
                for r in self.running or []:  # fio's group lasts until its exec jobs' runtime too
                    r.wait_runtime()
            self.finish(interrupted=stopped)
        return report

    def finish(self, interrupted: bool) -> None:
        if self.running:
            running, self.running = self.running, []
            _exec_records(running, interrupted, self.console, self.out)


def _exec_records(running: list, interrupted: bool, console: Console, out: list) -> None:
    """Stop what the exec jobs started (at once when the run was interrupted), one line each, their records. A stop
    signal while a program has its grace time kills it and every one after it at once, then goes on as the
    interrupt it is."""
    for i, r in enumerate(running):
        try:
            rec = r.finish(interrupted)
        except KeyboardInterrupt:
            for rest in running[i:]:
                out.append(rest.finish(interrupted=True))
                console.print(fio_exec.line(out[-1]), highlight=False, markup=False)
            raise
        out.append(rec)
        console.print(fio_exec.line(rec), highlight=False, markup=False)


def _exec_alone(m, place: Path | None, console: Console, out: list) -> bool:
    """A group of exec jobs only: their programs run for their runtime. True when the run was interrupted."""
    running = fio_exec.start_all(m.execs, m.dir if m.dir is not None else place)
    interrupted = True
    try:
        for r in running:
            r.wait_runtime()
        interrupted = False
    finally:
        _exec_records(running, interrupted, console, out)
    return interrupted


def _run_items(jobs: list, ref: str, console: Console, doc: dict, run_opts: dict) -> dict:
    where = str(split_ref(str(ref))[0])
    execs_run: list = []
    doc = _run_groups(jobs, ref, console, doc, run_opts, where, execs_run)
    if execs_run:
        doc["exec"] = execs_run  # which programs ran (argv), how each ended
    return doc


def _run_groups(jobs: list, ref: str, console: Console, doc: dict, run_opts: dict, where: str, execs_run: list) -> dict:
    for idx, (job, m) in enumerate(jobs):
        if getattr(m, "replan", None) is not None:
            job, m = m.replan()  # sized by what the fill_device job before it wrote
            for n in (n for j in _members(m) for n in j.notes if n.startswith("size from what job")):
                console.print(f"[dim]note:[/] {m.name}: {n}", highlight=False)
        keep = run_opts.get("keep_files") or m.keep_files or getattr(m, "keeps_fill", False)
        if isinstance(m, fio_exec.ExecGroup):
            if _exec_alone(m, run_opts.get("place"), console, execs_run):
                doc["interrupted"] = True
                break
            continue
        steps = _ExecSteps(
            getattr(m, "execs", []), m.dir if m.dir is not None else run_opts.get("place"), console, execs_run
        )
        try:
            one = run_job(
                job, console, steps=steps, **{k: v for k, v in {**run_opts, "keep_files": keep}.items() if k != "place"}
            )
        except EngineFailure as exc:
            raise EngineFailure(_failure(where, m, exc), errno=exc.errno) from None
        except UserError as exc:
            if not exc.message.startswith("parameter "):
                raise
            raise UserError(job_error(where, m, exc.message), exit_code=exc.exit_code) from None
        finally:
            steps.finish(interrupted=True)  # a program still running here: the run stopped early
        _fill_notes(one, m, console)
        if not doc:
            doc = {**one, "workload": Path(str(ref)).name, "phases": {}, "metrics": {}, "jobs": {}}
        if isinstance(m, MappedGroup):
            for j, b in zip(m.jobs, job.members):
                doc["jobs"][j.name] = {
                    "job": b.engine_dict(),
                    "fio_line": j.line,
                    "notes": j.notes,
                    "group": m.group,
                    "phase": m.name,
                }
            for rep in one["phases"].values():
                _order_jobs(rep, m)
            run = one["phases"].get("run")
            fmts = {j.name: j.log_format for j in m.jobs}
            for name, kind, fname in m.logs:
                jr = ((run or {}).get("jobs") or {}).get(name)
                if jr is not None:
                    if not (fmts[name].get("per_io") and kind in ("lat", "clat")):  # else the engine wrote it
                        write_fio_log(Path(fname), jr, kind, since_s=float(jr.get("start_s") or 0.0), fmt=fmts[name])
                    console.print(f"wrote {fname}", highlight=False)
        else:
            doc["jobs"][m.name] = {
                "job": one["job"],
                "fio_line": m.line,
                "notes": m.notes,
                "group": m.group,
                "phase": m.name,
            }
            run = one["phases"].get("run")
            if m.logs and run is not None:
                for kind, fname in m.logs:
                    if not (m.log_format.get("per_io") and kind in ("lat", "clat")):  # else the engine wrote it
                        write_fio_log(Path(fname), run, kind, fmt=m.log_format)
                    console.print(f"wrote {fname}", highlight=False)
            if run is not None and "jobs" not in run:
                # A lone job is its group: the same shape as a group's phase, its window the phase's.
                run["jobs"] = {
                    m.name: {
                        "name": m.name,
                        **{
                            k: run[k]
                            for k in ("threads", "warmup_s", "elapsed_s", "total", "ops", "errors", "fill")
                            if k in run
                        },
                        "start_s": 0.0,
                        "end_s": run.get("elapsed_s", 0.0),
                        "fio_line": m.line,
                    }
                }
        for k, v in one["phases"].items():
            doc["phases"][f"{m.name}:{k}"] = v
        for k, v in one["metrics"].items():
            doc["metrics"][f"{m.name}:{k}"] = v
        if one["interrupted"]:
            doc["interrupted"] = True
            break
        if m.exit_what == "all":
            # fio's exitall with exit_what=all: the job's end stopped every job, those of later groups too.
            later = [x.name for _, x in jobs[idx + 1 :]]
            if later:
                console.print(
                    f"[dim]note:[/] {m.name}: exit_what=all: {', '.join(later)} not run, as in fio", highlight=False
                )
                doc["exit_all"] = {"after": m.name, "not_run": later}
            break
    for part in (doc.get("job"), doc.get("jobs")):
        cap_file_names(part)
    return doc


#: How many of a job's file names its result keeps (fio's file engines name hundreds of thousands of files).
NAMES_KEPT = 64


def cap_file_names(obj) -> None:
    """Every `file_names` list longer than NAMES_KEPT inside a result's job -> its first NAMES_KEPT names, and
    `file_names_total` the job's count: a filecreate job of 500,000 names would carry each name twice (20 MB)."""
    if isinstance(obj, dict):
        names = obj.get("file_names")
        if isinstance(names, list) and len(names) > NAMES_KEPT:
            obj["file_names_total"] = len(names)
            obj["file_names"] = names[:NAMES_KEPT]
        for v in obj.values():
            cap_file_names(v)
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, (dict, list)):
                cap_file_names(v)


def _failure(where: str, m, exc: EngineFailure) -> str:
    """A failed request that stopped the run, told in the job file's terms: the job and its line, the request (its
    direction, length, offset and file) and the errno by name."""
    import errno as _errno

    in_run = exc.message.startswith("phase run: ")
    msg = exc.message.removeprefix("phase run: ").removeprefix("phase prepare: ")
    job = None
    for j in _members(m):
        if msg.startswith(f"job {j.name}: "):
            job, msg = j, msg[len(f"job {j.name}: ") :]
    job = job or (m if not isinstance(m, MappedGroup) else None)
    name = _errno.errorcode.get(exc.errno)
    tail = f" [{name}]" if name else ""
    hint = ""
    if name and in_run and job is not None and job.fio_job is not None:
        given = job.fio_job.get("continue_on_error") or job.fio_job.get("ignore_error")
        hint = (
            f"; to count {name} and go on, as fio does, list it in ignore_error= (continue_on_error alone goes on "
            "after EIO and EILSEQ)"
            if given
            else f"; to count such errors and go on, as fio does, add continue_on_error=io and ignore_error={name},{name}"
        )
    if job is None:
        return f"{where} line {m.line}: {msg}{tail}{hint}"
    return f"{where} line {job.line}: job {job.name}: {msg}{tail}{hint}"


def error_summary(extra_errors: dict) -> dict:
    """The engine's `errors` of a job's run in fio's words: total_err and first_error (fio's JSON), and the counts
    per direction and errno name."""
    import errno as _errno

    by = {
        d: {_errno.errorcode.get(int(e), e): n for e, n in c.items()}
        for d, c in (extra_errors.get("by_errno") or {}).items()
    }
    first = extra_errors.get("first_error") or 0
    return {
        "total_err": extra_errors.get("total", 0),
        "first_error": first,
        "first_error_name": _errno.errorcode.get(first, "") if first else "",
        "by_errno": by,
        "first": extra_errors.get("first"),
        "dumped": extra_errors.get("dumped") or [],
        "not_dumped": extra_errors.get("not_dumped", 0),
    }


def _fill_notes(one: dict, m, console: Console) -> None:
    """Each job's errors gone on after (fio's total_err, first_error) into its run entry, and said; what a
    fill_device job wrote, said."""
    import errno as _errno

    run = one["phases"].get("run") or {}
    for j in _members(m):
        jr = (run.get("jobs") or {}).get(j.name) if isinstance(m, MappedGroup) else run
        if not jr:
            continue
        found = (jr.get("extra") or {}).get("errors")
        if found is None:
            continue
        summ = error_summary(found)
        jr["errors"] = summ
        if summ["total_err"]:
            counts = "; ".join(
                f"{d}: " + ", ".join(f"{n} {e}" for e, n in c.items()) for d, c in summ["by_errno"].items()
            )
            console.print(
                f"[dim]note:[/] {j.name}: {summ['total_err']} failed request(s) counted and gone on after "
                f"({counts}); first error {summ['first_error']} ({summ['first_error_name']})",
                highlight=False,
            )
            for f in summ["dumped"]:
                console.print(
                    f"[dim]note:[/] {j.name}: {f['dir']} error {_errno.errorcode.get(f['errno'], f['errno'])} "
                    f"on {f['file']}: offset {f['offset']}, {f['len']} bytes",
                    highlight=False,
                )
            if summ["not_dumped"]:
                console.print(f"[dim]note:[/] {j.name}: {summ['not_dumped']} more not listed", highlight=False)
        if j.fill:
            written = ((jr.get("ops") or {}).get("write") or {}).get("bytes", 0)
            sizes = []
            for p in getattr(j, "fill_paths", []):
                try:
                    sizes.append(p.stat().st_size)
                except OSError:
                    pass
            full = bool(found.get("filled"))
            # The writes that met the full filesystem as fio counts them in total_ios: the one that failed, and
            # before it the short write whose rest it was, if the fill ended so.
            failed = int(found.get("filled", 0)) + int(found.get("filled_short_write", 0))
            jr["fill"] = {
                "bytes_written": written,
                "file_bytes": sum(sizes),
                "filesystem_full": full,
                "failed_writes": failed,
            }
            console.print(
                f"[dim]note:[/] {j.name}: fill_device: {written} bytes written"
                + (f", the file holds {sum(sizes)}" if sizes else "")
                + (
                    "; the filesystem is full (ENOSPC)"
                    if full
                    else "; it ended before the filesystem was full (size= or runtime)"
                ),
                highlight=False,
            )


def _order_jobs(rep: dict, m: MappedGroup) -> None:
    """A group phase's `jobs` in job-file order (the engine sorts them by name), each with its line, and how
    the group is to be reported."""
    jobs = rep.get("jobs")
    if not isinstance(jobs, dict):
        return
    lines = {j.name: j.line for j in m.jobs}
    # CPU use is the process's, measured for the group (the phase's `cpu`), not per job.
    rep["jobs"] = {
        j.name: {**{k: v for k, v in jobs[j.name].items() if k != "cpu"}, "fio_line": lines[j.name]}
        for j in m.jobs
        if j.name in jobs
    }
    rep["fio_group"] = {"group": m.group, "group_reporting": m.group_reporting, "jobs": [j.name for j in m.jobs]}


def group_line(rep: dict) -> str:
    """fio's "Run status group" line: per direction, the group's bandwidth (its bytes over the group's time),
    its data, and the shortest and longest job's time."""
    g = rep["fio_group"]
    times = [jr["elapsed_s"] for jr in rep["jobs"].values()]
    parts = []
    for kind, label in (("read", "READ"), ("write", "WRITE")):
        o = (rep.get("ops") or {}).get(kind)
        if o:
            mine = [jr["elapsed_s"] for jr in rep["jobs"].values() if (jr.get("ops") or {}).get(kind)]
            mib = 1 << 20
            parts.append(
                f"{label}: bw={o['bytes_per_s'] / mib:,.1f} MiB/s, io={o['bytes'] / mib:,.1f} MiB, "
                f"run={min(mine or times):.2f}-{max(mine or times):.2f} s"
            )
    cpu = rep.get("cpu") or {}
    if cpu:  # measured for the process, so for the group
        parts.append(
            f"CPU: fsmeter {cpu['process_pct']:.0f}% of one CPU (user {cpu['user_s']:.2f} s, sys {cpu['sys_s']:.2f} s)"
        )
    return f"  group {g['group']} (all jobs): " + "; ".join(parts or ["no data moved"])


def fio_log_lines(report: dict, kind: str, since_s: float = 0.0, fmt: dict | None = None) -> list:
    """fio's bandwidth (KiB/s), IOPS or latency (ns) log of one measured phase, as fio writes it with
    log_avg_msec: per sample interval and direction that did I/O, 'time ms, value, direction, 0, 0' (time: the
    interval's end since the phase started; direction 0 read, 1 write, 2 trim (latency logs); block size and
    priority 0, as in fio 3's averaged lines). `since_s`: when the job started in its phase (a job of a group
    that starts late): its log's times count from its own start, as fio's do, and intervals before it are left
    out. `fmt` (fio.logs.log_format): `offset` adds fio's offset column (0 in averaged lines, as fio's),
    `prio` writes the priority column in hex (0x0000), `window` max or both logs the latency window's largest
    value instead of (or after) its mean.
    Bandwidth is the interval's bytes of that direction: the interval's I/Os of it times the direction's mean
    request size over the phase (exact for one request size). Latency is the mean (fio: rounded to the nearest
    ns) of the requests that completed in the interval, from issue to completion; the _slat log is empty
    (fsmeter has no separate submission time)."""
    fmt = fmt or {}
    tail = (", 0" if fmt.get("offset") else "") + (", 0x0000" if fmt.get("prio") else ", 0")
    if kind in ("lat", "clat", "slat"):
        return [] if kind == "slat" else _lat_log_lines(report, since_s, fmt.get("window", "avg"), tail)
    ops = report.get("ops") or {}
    lines = []
    for iv in report.get("intervals") or []:
        dur = float(iv.get("dur_s") or 0)
        if dur <= 0:
            continue
        t_end = float(iv.get("t_s") or 0) - since_s
        if t_end <= 0:
            continue  # before the job started
        end_ms = int(round(t_end * 1000))  # t_s: the interval's end
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
            lines.append(f"{end_ms}, {int(value + 0.5)}, {ddir}, 0{tail}")
    return lines


def _lat_log_lines(report: dict, since_s: float, window: str, tail: str) -> list:
    lines = []
    for iv in report.get("intervals") or []:
        t_end = float(iv.get("t_s") or 0) - since_s
        if t_end <= 0:
            continue
        end_ms = int(round(t_end * 1000))
        lat = iv.get("lat") or {}
        for ddir, name in ((0, "read"), (1, "write"), (2, "trim")):
            one = lat.get(name)
            if not one or not one.get("count"):
                continue
            mean = int(one["sum_ns"] / one["count"] + 0.5)
            value = {"avg": f"{mean}", "max": f"{one['max_ns']}", "both": f"{mean}, {one['max_ns']}"}[window]
            lines.append(f"{end_ms}, {value}, {ddir}, 0{tail}")
    return lines


def write_fio_log(path: Path, report: dict, kind: str, since_s: float = 0.0, fmt: dict | None = None) -> None:
    """One log file; a file that cannot be written (its folder gone or full since the job was planned) is one line,
    exit 1, not a traceback (the run's figures are printed before)."""
    text = "".join(line + "\n" for line in fio_log_lines(report, kind, since_s, fmt))
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(
            f"cannot write the {kind} log {path}: {exc.strerror or exc}: free the folder or name another file",
            exit_code=1,
        ) from None
