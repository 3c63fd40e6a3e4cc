"""A fio job file's jobs as fsmeter workloads: each job mapped in file order with its stonewall group, the jobs of
a group run at the same time as one access_group workload, exec jobs beside their group, and the references
(path.fio or path.fio:jobname) the CLI and campaigns load."""

from __future__ import annotations

import re
from pathlib import Path

from fsmeter.errors import UserError
from fsmeter.interop import fio_exec
from fsmeter.interop.fio.job import map_job
from fsmeter.interop.fio.mapped import MappedGroup, MappedJob, no_files
from fsmeter.interop.fio_jobfile import parse_fio_bool, read_jobfile


def map_jobfile(path: Path, target: Path | None = None, dir_given: bool = True) -> list:
    """Every job of a job file, in order, with its stonewall group: a job with stonewall (or
    wait_for_previous) starts a new group, the others run at the same time as the job before them.
    `target` and `dir_given` as for map_job."""
    jf = read_jobfile(path)
    where = str(path)
    out: list = []
    group = -1
    names: set = set()
    thread_no = 1
    report_group, exitall = 0, False
    fill_outputs: dict = {}  # (directory, file name) -> (fill_device job, size, known?, group)
    for i, job in enumerate(jf.jobs):
        wait = job.get("stonewall") or job.get("wait_for_previous")
        stonewall = wait is not None and _wait_flag(where, wait)
        if i == 0 or stonewall:
            group += 1
        new = job.get("new_group")
        if i > 0 and (stonewall or (new is not None and _wait_flag(where, new))):
            report_group += 1  # fio's groupid: a new one at each stonewall or new_group
        m = map_job(where, job, group, target, dir_given, {k: v for k, v in fill_outputs.items() if v[3] < group})
        if m.fill:
            for n in m.params["file_names"]:
                fill_outputs[(str(m.dir), n)] = (m.name, m.params["file_size"], False, group)
        if m.name in names:
            raise UserError(f"{where} line {job.line}: a second job named {m.name}: give each job its own name")
        names.add(m.name)
        m.logs = [(k, f.replace("{n}", str(thread_no))) for k, f in m.logs]  # fio numbers logs by thread, from 1
        if "io_log" in m.params:
            m.params["io_log"]["paths"] = [f.replace("{n}", str(thread_no)) for f in m.params["io_log"]["paths"]]
        thread_no += int(m.settings["threads"])
        m.report_group = report_group
        ea = job.get("exitall")
        exitall = exitall or (ea is not None and _wait_flag(where, ea))
        _wait_for(where, job, m, out)
        out.append(m)
    _content_threads(out, thread_no - 1)
    _check_exit_on_io_done(where, out)
    _check_latency_alone(where, out)
    for m in out:
        if not exitall:
            m.exit_what = "none"  # fio: exit_what only acts with exitall (set by any job, for every job)
        elif m.exit_what == "all":
            m.notes.append(
                "exitall with exit_what=all: when one of its threads ends, every job stops, and the "
                "groups after this one do not run"
            )
    return out


def _content_threads(jobs: list, total: int) -> None:
    """fio numbers every thread of the file; dedupe_global's working set rotates over all of them, each entry the
    bytes of that thread's stream. Each job's content gets its first thread's number and the count, and the jobs
    sharing a working set one seed (the first such job's), so that their streams are the same everywhere."""
    base, shared = 0, None
    for m in jobs:
        c = m.params.get("content")
        if c is not None:
            c["thread_base"], c["threads_total"] = base, total
            if c.get("global"):
                shared = m.settings["seed"] if shared is None else shared
                c["seed"] = shared
        base += int(m.settings["threads"])
    if shared is not None:
        for m in jobs:  # the streams the working sets name are those of every job's threads
            if m.params.get("content") is not None:
                m.params["content"]["seed"] = shared


def _wait_for(where: str, job, m: MappedJob, before: list) -> None:
    """fio's wait_for=NAME: the job starts once every clone of the earlier job NAME is done. In the same stonewall
    group that is the engine's wait; a job of an earlier group is done before this group starts anyway."""
    opt = job.get("wait_for")
    if opt is None:
        return
    name = (opt.value or "").strip()
    waitee = [b for b in before if b.name == name]
    if not waitee:
        raise UserError(
            f"{where} line {opt.line}: wait_for={name}: no job named {name} before this one (fio, too, "
            "waits only for a job defined earlier in the file): name an earlier job"
        )
    if waitee[0].group == m.group:
        m.wait_for = name
        if m.start_delay_s:
            m.notes.append(
                f"wait_for={name} with startdelay: the job starts when {name} is done, and not before its start delay"
            )
    else:
        m.notes.append(
            f"wait_for={name}: {name} runs in an earlier group (a stonewall between them), so it is done "
            "before this job starts"
        )


def _wait_flag(where: str, opt) -> bool:
    try:
        return parse_fio_bool(opt.value)
    except ValueError as exc:
        raise UserError(f"{where} line {opt.line}: {opt.name}={opt.value or ''}: {exc}") from None


def _check_exit_on_io_done(where: str, jobs: list) -> None:
    """fsmeter stops a cpuio job with exit_on_io_done when the I/O jobs of its group are done: it needs some."""
    for m in jobs:
        if m.params.get("cpu_exit_on_io_done") and not any(o.group == m.group and not no_files(o) for o in jobs):
            raise UserError(
                f"{where} line {m.line}: job {m.name}: exit_on_io_done with no I/O job running beside it "
                "(fsmeter stops it when the I/O jobs of its group are done): put it in the group of the "
                "I/O jobs it is to run beside (no stonewall between them), or remove exit_on_io_done"
            )


def _check_latency_alone(where: str, jobs: list) -> None:
    """A latency_target job runs alone in its group: its final window resets the statistics of its phase."""
    for m in jobs:
        if m.params.get("latency_target") and any(o is not m and o.group == m.group for o in jobs):
            raise UserError(
                f"{where} line {m.line}: job {m.name}: latency_target in a job that runs at the same time "
                "as others is not supported by fsmeter (planned): its final window resets the statistics "
                "of the phase; put stonewall (or new_group) between it and the jobs beside it"
            )


def group_jobs(jobs: list, taken: set) -> list:
    """MappedJobs in file order -> one item per stonewall group: the MappedJob itself when it is alone,
    else a MappedGroup named group<N> (group<N>_ while a job has that name)."""
    out: list = []
    for m in jobs:
        if out and out[-1][0].group == m.group:
            out[-1].append(m)
        else:
            out.append([m])
    items = []
    for ms in out:
        # A job alone in its group is an access workload, unless exitall makes the end of one of its clones stop
        # the others (fio: the same reporting group), which only a group's harness does.
        if len(ms) == 1 and not (ms[0].exit_what != "none" and int(ms[0].settings["threads"]) > 1):
            m = ms[0]
            if m.start_delay_s:
                m.notes.append(
                    f"startdelay: fio starts the job {m.start_delay_s:g} s late; nothing runs beside it (a "
                    "group of its own), so fsmeter starts it at once: the same work"
                )
            items.append(m)
            continue
        name = f"group{ms[0].group}"
        while name in taken:
            name += "_"
        items.append(
            MappedGroup(
                name=name,
                line=ms[0].line,
                group=ms[0].group,
                jobs=ms,
                group_reporting=any(m.group_reporting for m in ms),
            )
        )
    return items


def _split_execs(jobs: list, items: list, path: Path) -> list:
    """The items of the file with its exec jobs attached to their group's item (`execs`), or an ExecGroup for a
    group of exec jobs only, in file order."""
    execs = [j.params["exec"] for j in jobs if j.params.get("fio_engine") == "exec"]
    if execs and len(execs) == len(jobs):
        raise UserError(
            f"{path} line {execs[0].line}: every job of the file is ioengine=exec: fsmeter measures "
            "filesystems, and these jobs do no I/O: add a job to measure, or run the programs yourself"
        )
    for item in items:
        item.execs = [e for e in execs if e.group == item.group]
    alone = {}
    for e in execs:
        if not any(item.group == e.group for item in items):
            alone.setdefault(e.group, []).append(e)
    for g, es in alone.items():
        items.append(fio_exec.ExecGroup(name=f"group{g}", line=es[0].line, group=g, execs=es, dir=es[0].dir))
    return sorted(items, key=lambda it: it.group)


def split_ref(ref: str) -> tuple:
    """'dir/jobs.fio' -> (path, None); 'dir/jobs.fio:seq-read' -> (path, 'seq-read')."""
    m = re.match(r"^(.*\.fio)(?::([^/]+))?$", ref)
    if not m:
        raise UserError(f"{ref}: not a fio job file reference: write path/to/file.fio or path/to/file.fio:jobname")
    return Path(m.group(1)), m.group(2)


def is_fio_ref(ref: str) -> bool:
    return bool(re.match(r"^.*\.fio(:[^/]+)?$", str(ref)))


def fio_workloads(ref: str, target: Path | None = None, dir_given: bool = True) -> list:
    """(WorkloadDef, MappedJob or MappedGroup) per stonewall group of the file (or the one job named after
    ':', alone), in run order: a group of concurrent jobs is one access_group workload."""
    path, only = split_ref(ref)
    if not path.is_file():
        raise UserError(f"{path}: no such fio job file")
    jobs = map_jobfile(path, target, dir_given)
    if only is not None:
        jobs = [j for j in jobs if j.name == only]
        if not jobs:
            raise UserError(f"{path}: no job named {only}: the jobs are {', '.join(j.name for j in map_jobfile(path))}")
    out = []
    io_jobs = [j for j in jobs if j.params.get("fio_engine") != "exec"]
    for item in _split_execs(jobs, group_jobs(io_jobs, {j.name for j in jobs}), path):
        if isinstance(item, fio_exec.ExecGroup):
            if not dir_given and item.dir is None:
                raise UserError(
                    f"{path} line {item.line}: job {item.execs[0].name}: ioengine=exec runs its program "
                    "in the job's directory, and this one names none: give --dir D or an absolute "
                    "directory="
                )
            out.append((None, item))
            continue
        if not dir_given and item.dir is None:  # only jobs without files (cpuio) get here without a directory
            raise UserError(
                f"{path} line {item.line}: job {item.jobs[0].name if isinstance(item, MappedGroup) else item.name}"
                ": ioengine=cpuio works on no files, but fsmeter runs every job in a directory (the run "
                "records its filesystem): give --dir D"
            )
        if isinstance(item, MappedGroup):
            for j in item.jobs:
                if j.dir != item.dir and not no_files(j):
                    first = next(f for f in item.jobs if not no_files(f))
                    raise UserError(
                        f"{path} line {j.line}: job {j.name} runs in {j.dir or 'the --dir folder'} but "
                        f"job {first.name} of its group, at the same time, in "
                        f"{first.dir or 'the --dir folder'}: fsmeter runs the jobs of one group in "
                        "one directory (planned): give them one directory=, or put stonewall between them"
                    )
            d = group_def(path, item)
        else:
            d = access_def(path, item)
        out.append((d, item))
    return out


def group_def(path: Path, item: MappedGroup):
    """A group of concurrent fio jobs as one access_group WorkloadDef."""
    from fsmeter.families import FAMILIES, WorkloadDef

    params = {
        "jobs": [
            {
                "name": j.name,
                **{k: j.settings[k] for k in ("threads", "seed", "backend")},
                "params": dict(j.params),
                **j.group_entry(),
            }
            for j in item.jobs
        ]
    }
    return WorkloadDef(
        name=f"{path.name}:{item.name}",
        family=FAMILIES["access_group"],
        description=f"fio jobs {', '.join(j.name for j in item.jobs)} of {path} (line "
        f"{item.line}), run at the same time",
        params=params,
        settings={"threads": sum(j.settings["threads"] for j in item.jobs)},
        source=path,
    )


def access_def(path: Path, m: MappedJob):
    """One fio job as an access WorkloadDef."""
    from fsmeter.families import FAMILIES, WorkloadDef

    return WorkloadDef(
        name=f"{path.name}:{m.name}",
        family=FAMILIES["access"],
        description=f"fio job {m.name} of {path} (line {m.line}, rw={m.fio_rw})",
        params=dict(m.params),
        settings=dict(m.settings),
        source=path,
    )


def load_fio_workload(ref: str):
    """One job (or one group of concurrent jobs) of a fio job file as a WorkloadDef (campaigns: a file with
    several groups needs :jobname)."""
    pairs = fio_workloads(ref)
    if len(pairs) > 1:
        path, _ = split_ref(ref)
        names = ", ".join(j.name for _, j in pairs)
        raise UserError(
            f"{path} has {len(pairs)} jobs or groups of concurrent jobs ({names}): name one job as "
            f"{path}:JOBNAME (or run them all with fsmeter run {path})"
        )
    campaign_ready(ref, pairs[0][1])
    return pairs[0][0]


def campaign_ready(ref: str, item) -> None:
    """A campaign runs each group of a job file as a workload of its own, on fresh filesystems: a job sized by what
    a fill_device job of an earlier group wrote cannot be (fsmeter run runs the groups in turn)."""
    for j in item.jobs if isinstance(item, MappedGroup) else [item]:
        if j.after_fill:
            raise UserError(
                f"{split_ref(ref)[0]} line {j.line}: job {j.name} takes its size from what the "
                f"fill_device job {j.after_fill} writes, which only fsmeter run {split_ref(ref)[0]} runs "
                "before it: give it size= to use it in a campaign"
            )
