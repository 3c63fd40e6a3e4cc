"""fio's engines beyond plain reads and writes: the file, directory and one-call engines (filecreate ...
e4defrag), what mmap and libpmem make of direct= and sync=, and the jobs of the libblkio, cpuio and exec engines."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from fsmeter.errors import UserError
from fsmeter.interop import fio_exec
from fsmeter.interop.fio.cpus import thread_placement
from fsmeter.interop.fio.mapped import MappedJob, option_sources
from fsmeter.interop.fio.options import (
    BATCH_OPTS,
    NAME_ENGINE_ACCEPTED,
    NAME_ENGINES,
    SUPPORTED,
    SYNC_ENGINES,
    check_options,
)
from fsmeter.interop.fio.syncs import sync_mode
from fsmeter.interop.fio.values import Ctx, alias
from fsmeter.interop.fio_jobfile import FioJob, FioOption
from fsmeter.units import MAX_DURATION_S

if TYPE_CHECKING:
    from fsmeter.interop.fio.files import Placement


def engine_setup(ctx: Ctx, engine: str, params: dict, notes: list) -> None:
    """What the mmap and libpmem engines make of direct= and sync=, and fio's batching options, as fio does."""
    for name in (*BATCH_OPTS, "iodepth_low"):
        opt = ctx.job.get(name)
        if opt is not None and engine in SYNC_ENGINES:
            notes.append(
                f"{opt.as_written}: ioengine={engine} does one I/O at a time, so there is nothing to batch (fio's too)"
            )
    if engine not in SYNC_ENGINES:
        _batching(ctx, params, notes)
    _serialize_overlap(ctx, params, notes)
    sync = sync_mode(ctx)
    if engine == "mmap" and sync not in (None, "none"):
        notes.append(
            f"{ctx.job.get('sync').as_written}: fio opens the files O_SYNC, which stores to a mapping do "
            "not go through: nothing changes for ioengine=mmap, in fio or fsmeter (fsync= is what msyncs)"
        )
    if engine != "libpmem":
        return
    if params.get("direct"):
        notes.append(
            "direct=1 with ioengine=libpmem: fio copies with non-temporal stores (PMEM_F_MEM_NONTEMPORAL); "
            "fsmeter copies with memcpy and makes each write durable as above, without O_DIRECT"
        )
        params["direct"] = False
    if sync in (None, "none"):
        notes.append(
            "libpmem without sync=1: fio flushes each write but does not wait for it to drain; fsmeter "
            "makes each write durable before it completes, as fio's sync=1 does"
        )
    else:
        notes.append(
            f"{ctx.job.get('sync').as_written}: each write is durable before it completes (fio: "
            "pmem_drain after each write), as fsmeter's libpmem does for every write"
        )


def _serialize_overlap(ctx: Ctx, params: dict, notes: list) -> None:
    """fio's serialize_overlap: no request goes while one of the job's own in flight overlaps its bytes; with
    io_submit_mode=offload fio also looks at the other jobs' requests."""
    opt = ctx.job.get("serialize_overlap")
    if opt is None or not ctx.flag("serialize_overlap", False):
        return
    offload = (ctx.job.get("io_submit_mode") and (ctx.job.get("io_submit_mode").value or "").strip()) == "offload"
    shared = ctx.int("numjobs", 1, 1, 4096) > 1 and not params.get("thread_files")
    if offload and shared:
        ctx.fail(
            opt,
            "with io_submit_mode=offload and clones sharing their files is not supported by fsmeter yet (planned): "
            "fio then holds back a request that overlaps another clone's; fsmeter serializes each thread's own "
            "requests only: drop io_submit_mode=offload, or run this job with fio",
        )
    params["serialize_overlap"] = True
    qd = params.get("queue_depth", 1)
    what = (
        "with one request in flight per thread there is nothing to hold back"
        if qd <= 1
        else "a request whose bytes overlap one of its thread's requests in flight waits (with the requests drawn "
        "after it) until that one is back, as fio's job waits"
    )
    if offload:
        what += "; across clones (fio's offload mode) nothing can overlap here: each clone has files of its own"
    notes.append(f"{opt.as_written}: {what}")


def _batching(ctx: Ctx, params: dict, notes: list) -> None:
    """fio's iodepth_batch* and iodepth_low with a queued engine (io_uring, libaio, posixaio)."""
    qd = params.get("queue_depth", 1)
    name = alias(ctx, ("iodepth_batch_complete_min", "iodepth_batch_complete"))  # the second: fio's older name
    lo = ctx.int(name, 1, 0, 1 << 16) if name else 1
    if lo > 1:
        params["reap_min"] = min(lo, qd)
        notes.append(
            f"{name}={lo}: each thread waits for {min(lo, qd)} completions (fewer when "
            "fewer are in flight) before it handles any, as fio does"
        )
    for name in ("iodepth_batch", "iodepth_batch_submit"):
        if ctx.job.get(name) is not None:
            n = ctx.int(name, 1, 0, 1 << 16)
            notes.append(
                f"{name}={n}: fsmeter queues a request for each completion it handles and submits them all in one "
                "system call (io_uring_enter, or io_submit with libaio) before it waits again (fio submits up to this many "
                "at once): the same I/Os"
            )
    if ctx.job.get("iodepth_batch_complete_max") is not None:
        n = ctx.int("iodepth_batch_complete_max", 0, 0, 1 << 16)
        notes.append(
            f"iodepth_batch_complete_max={n}: fsmeter handles every completion the kernel has ready at once "
            "(fio at most this many): the same I/Os"
        )
    if ctx.job.get("iodepth_low") is not None:
        n = ctx.int("iodepth_low", qd, 0, 1 << 16)
        if n < qd:
            notes.append(
                f"iodepth_low={n}: fio lets the queue drain to {n} before it fills it again; fsmeter refills each "
                f"slot as its request completes (fio's default, iodepth_low=iodepth): the same I/Os, the queue "
                "kept fuller"
            )


def fio_engine(
    ctx: Ctx,
    engine: str,
    rw: str,
    rw_opt,
    params: dict,
    notes: list,
    numjobs: int,
    time_based: bool,
    loops: int,
    ramp: float,
    place: Placement,
) -> None:
    """ioengine=filecreate ... dirdelete, falloc, ftruncate, e4defrag: the engine's fio_engine, with fio's
    meaning of each (docs/fio.md), and their own options (stat_type, donorname, inplace)."""
    eng = ctx.job.get("ioengine")
    params["fio_engine"] = engine
    if params.get("verify"):
        ctx.fail(ctx.job.get("verify"), f"ioengine={engine} moves no data, so there is nothing to verify: remove it")
    if params["direct"]:
        notes.append(
            f"direct=1 with ioengine={engine}: no data moves through the page cache, so O_DIRECT changes "
            "nothing; fsmeter opens the files without it"
        )
        params["direct"] = False
    if engine in NAME_ENGINES:
        once = engine not in ("filestat", "dirstat")
        kind = "create" if "create" in engine else "stat" if "stat" in engine else "delete"
        what = {"create": "creates", "stat": "stats", "delete": "removes"}[kind]
        if once:
            for name, bad in (("time_based", time_based), ("loops", loops > 1), ("ramp_time", ramp > 0)):
                if bad:
                    ctx.fail(
                        ctx.job.get(name),
                        f"ioengine={engine} {what} each file name once (a second pass "
                        "would find the names already made or gone): remove it",
                    )
            if numjobs > 1 and not place.thread_files:
                ctx.fail(
                    place.opt or eng,
                    f"with numjobs={numjobs}, the clones of ioengine={engine} would share these "
                    f"names and each one {what[:-1]} them all: give each clone its own names "
                    "(no filename=, or $jobnum in filename_format)",
                )
        params["random_map"] = False
        notes[:] = [n for n in notes if not n.startswith("create_on_open")]  # the creation is what is timed here
        for key, why in NAME_ENGINE_ACCEPTED.items():
            if ctx.job.get(key) is not None:
                notes.append(f"{ctx.job.get(key).as_written}: {why}")
        notes.append(
            f"ioengine={engine}: one {kind} call per {'directory' if engine.startswith('dir') else 'file'} "
            f"name, timed and counted as fio times its {'opens' if kind == 'create' else kind + 's'} (the "
            f"run's '{kind}' operations); fio also counts filesize/bs I/Os of bs bytes per name that do "
            "nothing"
        )
        st = ctx.job.get("stat_type")
        if st is not None:
            v = (st.value or "").strip()
            if v not in ("stat", "lstat", "statx"):
                ctx.fail(st, "use stat, lstat or statx")
            params["stat_type"] = v
        return
    if engine in ("ftruncate", "e4defrag") and rw not in ("write", "randwrite"):
        ctx.fail(
            rw_opt or eng,
            f"ioengine={engine} acts on writes only (fio fails its reads and trims with EINVAL): "
            "use rw=write or rw=randwrite",
        )
    if engine == "falloc":
        notes.append(
            "ioengine=falloc: each request is a fallocate over its range, as in fio: reads with KEEP_SIZE, "
            "writes with mode 0, trims punch a hole; no data moves"
        )
    elif engine == "ftruncate":
        notes.append(
            "ioengine=ftruncate: each write truncates its file to the write's offset, as in fio (bs only "
            "sets how far offsets move)"
        )
    else:
        donor = ctx.job.get("donorname")
        if donor is None or not (donor.value or "").strip():
            raise UserError(
                f"{ctx.where} line {(donor or eng).line}: ioengine=e4defrag needs donorname= (the donor "
                "file whose blocks each write's range is moved to): add donorname=NAME"
            )
        name = (donor.value or "").strip()
        if name.startswith("/") or ".." in name.split("/") or "\0" in name:
            ctx.fail(donor, "give a file name inside the job's directory (fio puts it under directory=)")
        d_opt = ctx.job.get("directory")
        directory = (d_opt.value or "").strip().rstrip("/") if d_opt is not None else ""
        params["donor_name"] = f"{directory}/{name}" if directory and not directory.startswith("/") else name
        params["donor_inplace"] = ctx.flag("inplace", False)
        notes.append(
            "ioengine=e4defrag: each write moves its range to the donor file's blocks (EXT4_IOC_MOVE_EXT), as "
            "in fio; it needs ext4, and stops in one line elsewhere"
        )


def libblkio_job(ctx: Ctx, notes: list) -> FioJob:
    """ioengine=libblkio: with libblkio_driver=io_uring, the job's file is libblkio_path (fio gives libblkio that
    path and ignores filename= and directory=); other drivers reach a device past any filesystem and are refused."""
    job = ctx.job
    drv = job.get("libblkio_driver")
    driver = (drv.value or "").strip() if drv is not None else ""
    if not driver:
        eng = job.get("ioengine")
        raise UserError(
            f"{ctx.where} line {eng.line}: {eng.as_written}: needs libblkio_driver= (fio refuses the job "
            "without it): add libblkio_driver=io_uring and libblkio_path=FILE"
        )
    if driver != "io_uring":
        ctx.fail(
            drv,
            f"the libblkio driver {driver} reaches a device past any filesystem (vfio, vhost-user, "
            "virtio-blk or NVMe pass-through): fsmeter measures filesystems and runs only "
            "libblkio_driver=io_uring, on a file (not planned); run this job with fio",
        )
    path = job.get("libblkio_path")
    if path is None or not (path.value or "").strip():
        raise UserError(
            f"{ctx.where} line {(path or drv).line}: libblkio_driver=io_uring needs libblkio_path= (the "
            "file to read and write): add libblkio_path=FILE"
        )
    for name in ("filename", "directory", "filename_format", "nrfiles", "nr_files"):
        if job.get(name) is not None:
            notes.append(
                f"{job.get(name).as_written}: fio's libblkio engine works on libblkio_path only and ignores "
                "it, and so does fsmeter"
            )
    options = {
        k: v
        for k, v in job.options.items()
        if k not in ("filename", "directory", "filename_format", "nrfiles", "nr_files")
    }
    value = (path.value or "").strip().replace(":", "\\:")  # one name: a colon in it is not a separator
    options["filename"] = FioOption("filename", value, path.line, path.written)
    return FioJob(section=job.section, line=job.line, options=options)


#: The options a cpuio job uses (the others of SUPPORTED describe I/O it does not do).
_CPUIO_OPTS = {
    "name",
    "description",
    "ioengine",
    "cpuload",
    "cpuchunks",
    "cpumode",
    "exit_on_io_done",
    "numjobs",
    "runtime",
    "timeout",
    "time_based",
    "ramp_time",
    "startdelay",
    "exit_what",
    "exitall",
    "group_reporting",
    "stonewall",
    "wait_for_previous",
    "wait_for",
    "thread",
    "threads",
    "cpus_allowed",
    "cpumask",
    "cpus_allowed_policy",
    "numa_cpu_nodes",
    "numa_mem_policy",
    "kb_base",
}


def cpuio_job(ctx: Ctx, group: int, notes: list) -> MappedJob:
    """ioengine=cpuio: no I/O and no files; each clone burns cpuload percent of one CPU for the runtime, in bursts
    of cpuchunks microseconds of spinning (cpumode=noop) or a round of sorts (qsort), each followed by a sleep, as
    fio's engine does (the engine's fio_engine=cpuio)."""
    job, name = ctx.job, ctx.job.name
    load_opt = job.get("cpuload")
    if load_opt is None:
        raise UserError(
            f"{ctx.where} line {job.line}: job {name}: ioengine=cpuio needs cpuload= (the percent of one "
            "CPU to burn; fio refuses the job without it): add cpuload=N"
        )
    load = ctx.int("cpuload", 0, 0)
    if load == 0:
        ctx.fail(load_opt, "give the percent of one CPU to burn, 1 to 100 (fio refuses 0)")
    if load > 100:
        notes.append(f"{load_opt.as_written}: fio caps it at 100, and so does fsmeter")
        load = 100
    chunk = ctx.int("cpuchunks", 50_000, 1, 3_600_000_000)
    mode_opt = job.get("cpumode")
    mode = (mode_opt.value or "").strip() if mode_opt is not None else "noop"
    if mode not in ("noop", "qsort"):
        ctx.fail(mode_opt, "use noop or qsort")
    if mode == "qsort" and job.get("cpuchunks") is not None:
        notes.append(
            f"{job.get('cpuchunks').as_written} with cpumode=qsort: a burst is one round of sorts, however "
            "long it takes (fio sets the chunk to it too)"
        )
    runtime = ctx.time_s("runtime") if job.get("runtime") is not None else ctx.time_s("timeout")
    if not runtime or not ctx.flag("time_based", False):
        raise UserError(
            f"{ctx.where} line {job.line}: job {name}: ioengine=cpuio burns CPU for the job's runtime: "
            "give runtime= and time_based"
        )
    numjobs = ctx.int("numjobs", 1, 1, 4096)
    params = {
        "entries": [{"size": 4096, "weight": 100.0, "read_pct": 100.0, "random_pct": 0.0}],
        "file_size": 4096,
        "alignment": 4096,
        "fio_engine": "cpuio",
        "cpu_load": load,
        "cpu_chunk_us": chunk,
        "cpu_mode": mode,
        "cpu_exit_on_io_done": ctx.flag("exit_on_io_done"),
        "duration_s": runtime,
        "warmup_s": ctx.time_s("ramp_time") or 0.0,
        "total_bytes": None,
    }
    pinning = thread_placement(ctx, notes)
    if pinning:
        params["place"] = pinning
    idle = [
        o.as_written
        for o in sorted(job.options.values(), key=lambda o: o.line)
        if o.name in SUPPORTED and o.name not in _CPUIO_OPTS
    ]
    if idle:
        notes.append(f"ioengine=cpuio does no I/O: {', '.join(idle)} change nothing for it (in fio too)")
    burst = f"{chunk} us of spinning" if mode == "noop" else "a round of sorts of 256 Ki integers"
    notes.append(
        f"ioengine=cpuio: no I/O; each of the job's {numjobs} thread(s) burns {load}% of one CPU: {burst}, "
        f"then a sleep {100 - load}/{load} as long, for {runtime:g} s, as fio's engine does; the run reports "
        "the share of the time spent in bursts and the CPU each thread got (extra.cpuio)"
    )
    delay = job.get("startdelay")
    start_delay = 0.0
    if delay is not None:
        if "-" in (delay.value or "") or ":" in (delay.value or ""):
            ctx.fail(delay, "a random start delay (a range) is not supported by fsmeter (planned): give one time")
        start_delay = ctx.time_s("startdelay") or 0.0
    exit_what = "group"
    ew = job.get("exit_what")
    if ew is not None:
        exit_what = (ew.value or "").strip()
        if exit_what not in ("group", "stonewall", "all"):
            ctx.fail(ew, "use group, stonewall or all")
    for key in ("write_bw_log", "write_iops_log", "write_lat_log"):
        if job.get(key) is not None:
            ctx.fail(job.get(key), "ioengine=cpuio does no I/O, so there is nothing to log: remove it")
    return MappedJob(
        name=name,
        line=job.line,
        group=group,
        params=params,
        settings={"threads": numjobs, "seed": 42, "backend": "psync"},
        notes=notes,
        fio_rw="cpuio",
        sources=option_sources(job),
        group_reporting=ctx.flag("group_reporting"),
        start_delay_s=start_delay,
        exit_what=exit_what,
    )


def exec_job(ctx: Ctx, group: int, target: Path | None) -> MappedJob:
    """ioengine=exec (with --allow-exec): a job that runs a program beside its group (fio_exec); it has no engine
    job, its spec rides in params["exec"] until fio_workloads takes it out of the group."""
    spec = fio_exec.exec_spec(ctx.where, ctx.job, group, 0.0, False, check_only=True)  # refused without the flag
    # The job's other options as any job's: one a fio job cannot have, or fsmeter refuses, is told in one line.
    check_options(
        ctx.where,
        FioJob(
            section=ctx.job.section,
            line=ctx.job.line,
            options={
                k: v
                for k, v in ctx.job.options.items()
                if k not in ("ioengine", "program", "arguments", "grace_time", "std_redirect")
            },
        ),
    )
    key = "runtime" if ctx.job.get("runtime") is not None else "timeout"
    runtime = ctx.time_s(key)
    if runtime and runtime > MAX_DURATION_S:  # a timer that long overflows (and no run lasts it)
        ctx.fail(
            ctx.job.get(key),
            f"longer than fsmeter's limit of {MAX_DURATION_S:.0f} s (about 116 days): give a shorter runtime",
        )
    spec = fio_exec.exec_spec(ctx.where, ctx.job, group, runtime or 0.0, ctx.flag("time_based", False))
    d = ctx.job.get("directory")
    if target is None and d is not None and (d.value or "").startswith("/"):
        spec.dir = Path(re.split(r"(?<!\\):", (d.value or "").strip())[0])  # fio's first directory
    return MappedJob(
        name=ctx.job.name,
        line=ctx.job.line,
        group=group,
        params={"fio_engine": "exec", "exec": spec},
        settings={"threads": 1, "seed": 0, "backend": "psync"},
        notes=spec.notes,
        fio_job=ctx.job,
    )
