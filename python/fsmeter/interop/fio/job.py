"""One fio job as an access workload: map_job runs the mapping of each group of fio's options in turn (pattern,
engine, files, time and bytes, then pacing, content, logs, priorities and run control) and gathers their notes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fsmeter.errors import UserError
from fsmeter.interop.fio.content import (
    atomic,
    buffer_memory,
    buffer_pattern_and_verify,
    verify_readback,
    write_contents,
)
from fsmeter.interop.fio.cpus import thread_placement
from fsmeter.interop.fio.engines import cpuio_job, engine_setup, exec_job, fio_engine, libblkio_job
from fsmeter.interop.fio.files import (
    Placement,
    fallocate,
    file_sizes,
    fill_sizes,
    filled_by,
    job_file_name,
    place_files,
)
from fsmeter.interop.fio.iolog import write_iolog
from fsmeter.interop.fio.logs import gtod_reduce, job_logs, log_format
from fsmeter.interop.fio.mapped import MappedJob, option_sources
from fsmeter.interop.fio.offsets import access_shape, offset_increment, sprandom
from fsmeter.interop.fio.on_error import on_error
from fsmeter.interop.fio.options import (
    CALL_ENGINES,
    ENGINE_NOTES,
    ENGINE_WHY,
    ENGINES,
    NAME_ENGINES,
    SYNC_ENGINES,
    accepted_notes,
    check_options,
)
from fsmeter.interop.fio.pacing import ioprio, latency_target, pace, steadystate
from fsmeter.interop.fio.pattern import (
    TRIM_PATTERNS,
    dir_entries,
    dir_map_block,
    dir_min_bs,
    random_distribution,
    random_map,
    requests,
    rw_mix,
    sized_map,
)
from fsmeter.interop.fio.replay import replay_options_alone, replay_params
from fsmeter.interop.fio.syncs import write_syncs
from fsmeter.interop.fio.values import Ctx, alias
from fsmeter.interop.fio_jobfile import FioJob, FioOption
from fsmeter.units import MAX_DURATION_S


@dataclass
class _Draft:
    """What map_job knows of a job so far, filled in by its steps in turn. The steps run in the order fio's options
    are checked in, which is also the order of the job's notes and of the first error a job file gets."""

    ctx: Ctx
    notes: list
    file_name: str
    # The access pattern (pattern.rw_mix, pattern.requests).
    rw_opt: FioOption | None = None
    rw: str = "read"
    seq_add: int = 0
    read_pct: int = 100
    random_pct: int = 0
    split: tuple | None = None
    bs: tuple = (4096, 4096)
    per_dir: tuple = ()
    entries: list = field(default_factory=list)
    trim_then_write: bool = False
    sizes: list = field(default_factory=list)
    # The engine and its depth (_engine).
    engine: str = "psync"
    qd: int = 1
    direct: bool = False
    buffer_memory: str = "heap"
    # The files and their sizes (_data_set).
    numjobs: int = 1
    offset: int = 0
    place: Placement | None = None
    nrfiles: int = 1
    fill: bool = False
    from_fill: tuple | None = None
    size: int = 0
    filesize: int = 0
    real: list | None = None
    io_per_job: int = 0
    align: int = 0
    # How long, and how many bytes (_timing, _bytes_per_clone, _total).
    time_based: bool = False
    runtime: float | None = None
    ramp: float = 0.0
    distribution: str = "random"
    dir_block: int = 0
    shape: dict = field(default_factory=dict)
    per_job: int = 0
    loops: int = 1
    total: int | None = None
    layout: int = 0
    max_ios: int = 0
    params: dict = field(default_factory=dict)


def map_job(
    where: str,
    job: FioJob,
    group: int,
    target: Path | None = None,
    dir_given: bool = True,
    fill_outputs: dict | None = None,
) -> MappedJob:
    """One fio job -> access params and settings, with notes on what differs from fio. `target` is the
    directory the job runs in when known (--dir: for the size of files already there); `dir_given` says
    whether one is given at all: then it replaces the job file's absolute directory= and filename= paths
    (with a note), else those paths are the job's target and every other file needs one."""
    if job.get("ioengine") is not None and (job.get("ioengine").value or "").strip() == "exec":
        return exec_job(Ctx(where, job), group, target if dir_given else None)
    check_options(where, job)
    ctx = Ctx(where, job)
    notes: list = []
    accepted_notes(ctx, notes)
    file_name = job_file_name(where, job, notes)
    first_engine = (job.get("ioengine").value or "").strip() if job.get("ioengine") is not None else "psync"
    if first_engine == "cpuio":
        return cpuio_job(ctx, group, notes)
    if first_engine == "libblkio":
        ctx.job = libblkio_job(ctx, notes)
    d = _Draft(ctx=ctx, notes=notes, file_name=file_name)
    d.rw_opt, d.rw, d.seq_add, d.read_pct, d.random_pct = rw_mix(ctx)
    d.split, d.bs, d.per_dir, d.entries, d.trim_then_write = requests(ctx, d.rw, d.read_pct, d.random_pct, notes)
    d.sizes = [e["size"] for e in d.entries]
    _engine(d)
    if job.get("read_iolog") is not None:
        return _replay_job(d, group, target, dir_given)
    replay_options_alone(ctx, notes)
    _data_set(d, target, dir_given, fill_outputs)
    _timing(d)
    _bytes_per_clone(d)
    _total(d)
    _params(d)
    seed = _seed(ctx, notes)
    _files_notes(d)
    if d.engine in NAME_ENGINES or d.engine in CALL_ENGINES:
        fio_engine(ctx, d.engine, d.rw, d.rw_opt, d.params, notes, d.numjobs, d.time_based, d.loops, d.ramp, d.place)
    engine_setup(ctx, d.engine, d.params, notes)
    write_iolog(
        ctx, d.params, notes, d.numjobs, d.engine if d.engine in NAME_ENGINES or d.engine in CALL_ENGINES else None
    )
    return _mapped(
        d,
        group,
        seed,
        fio_rw=d.rw,
        keep_files=d.real is not None and d.from_fill is None,
        fill=d.fill,
        after_fill=d.from_fill[0] if d.from_fill is not None else None,
    )


def _mapped(
    d: _Draft, group: int, seed: int, fio_rw: str, keep_files: bool, fill: bool = False, after_fill: str | None = None
) -> MappedJob:
    """The end of every data job's mapping: its settings, logs, priorities and run control, and the job."""
    ctx, notes = d.ctx, d.notes
    settings = {"threads": d.numjobs, "seed": seed, "backend": ENGINES[d.engine]}
    logs = job_logs(ctx, d.file_name, d.numjobs, settings, notes)
    log_lines = log_format(ctx, logs, d.params, d.numjobs, notes)
    latency_target(ctx, d.params, notes, d.numjobs)
    gtod_reduce(ctx, d.params, notes)
    ioprio(ctx, d.engine, d.params, notes)
    start_delay, exit_what = _run_control(ctx)
    notes.extend(dict.fromkeys(ctx.notes))
    return MappedJob(
        name=ctx.job.name,
        line=ctx.job.line,
        group=group,
        params=d.params,
        settings=settings,
        notes=notes,
        fio_rw=fio_rw,
        dir=d.place.dir,
        keep_files=keep_files,
        logs=logs,
        log_format=log_lines,
        sources=option_sources(ctx.job),
        group_reporting=ctx.flag("group_reporting"),
        start_delay_s=start_delay,
        exit_what=exit_what,
        fill=fill,
        after_fill=after_fill,
        fio_job=ctx.job,
    )


def _replay_job(d: _Draft, group: int, target: Path | None, dir_given: bool) -> MappedJob:
    """A job of fio's read_iolog: its requests, files and times come from the log (replay.py)."""
    ctx, notes = d.ctx, d.notes
    d.numjobs = ctx.int("numjobs", 1, 1, 4096)
    d.place = place_files(ctx, ctx.job.name, 1, target, dir_given, [], d.file_name)
    _timing(d)
    d.params = {
        "queue_depth": d.qd,
        "direct": d.direct,
        "warmup_s": d.ramp,
        "duration_s": d.runtime if d.runtime else None,
        "buffer_memory": d.buffer_memory,
    }
    base = d.place.dir or target
    replay_params(ctx, notes, d.params, d.numjobs, d.direct, Path(base) if base is not None else None)
    engine_setup(ctx, d.engine, d.params, notes)
    write_iolog(ctx, d.params, notes, d.numjobs, None)
    seed = _seed(ctx, notes)
    entry = d.params["entries"][0]
    return _mapped(
        d,
        group,
        seed,
        fio_rw="read" if entry["read_pct"] == 100 else "write",
        keep_files=base is not None and all((Path(base) / n).is_file() for n in d.params["file_names"]),
    )


def _engine(d: _Draft) -> None:
    """ioengine (checked again: a libblkio job's is the one mapped), iodepth, direct/buffered and iomem."""
    ctx, notes = d.ctx, d.notes
    eng_opt = ctx.job.get("ioengine")
    engine = (eng_opt.value or "").strip() if eng_opt is not None else "psync"
    if engine not in ENGINES:
        ctx.fail(
            eng_opt,
            f"ioengine {engine} is not supported: {ENGINE_WHY.get(engine, 'not planned')}; "
            f"fsmeter runs {', '.join(ENGINES)}",
        )
    if engine in ENGINE_NOTES:
        notes.append(ENGINE_NOTES[engine])
    qd = ctx.int("iodepth", 1, 1, 4096)
    if qd > 1 and engine in SYNC_ENGINES:
        notes.append(f"iodepth={qd} with the synchronous ioengine {engine}: queue depth capped at 1, as fio does")
        qd = 1
    direct = ctx.flag("direct", False)
    if ctx.job.get("buffered") is not None:
        direct = not ctx.flag("buffered", True)
    d.engine, d.qd, d.direct = engine, qd, direct
    d.buffer_memory = buffer_memory(ctx, notes)


def _data_set(d: _Draft, target: Path | None, dir_given: bool, fill_outputs: dict | None) -> None:
    """The job's clones, its files and their sizes (or what a fill_device job writes), io_size and the alignment."""
    ctx, job, notes, sizes = d.ctx, d.ctx.job, d.notes, d.sizes
    name = job.name
    d.numjobs = numjobs = ctx.int("numjobs", 1, 1, 4096)
    d.offset = offset = ctx.size("offset", 0)
    d.place = place = place_files(ctx, name, numjobs, target, dir_given, notes, d.file_name)
    nrfiles = len(place.names)
    if place.thread_files:
        nrfiles //= numjobs
    d.nrfiles = nrfiles
    d.fill = ctx.flag(alias(ctx, ("fill_device", "fill_fs")) or "fill_device")
    if d.fill:
        d.size, d.filesize, d.real = fill_sizes(ctx, d.rw, numjobs, nrfiles, offset, sizes, place, target, notes)
    else:
        d.from_fill = filled_by(ctx, place, fill_outputs)
        d.size, d.filesize, d.real = file_sizes(ctx, name, nrfiles, offset, place, notes)
    d.io_per_job = ctx.size("io_size") or ctx.size("io_limit") or d.size
    ba_opt = job.get("blockalign") or job.get("ba")
    if ba_opt is not None and "," in (ba_opt.value or ""):
        ctx.fail(ba_opt, "one alignment for both directions only (fsmeter: planned)")
    d.align = align = ctx.size(ba_opt.name) if ba_opt is not None else min(sizes)
    if align <= 0:
        ctx.fail(ba_opt, "must be > 0 (a number of bytes every offset is a multiple of)")
    if offset % align and (d.random_pct or job.get("offset_increment") is None):  # fio: ba aligns random offsets
        ctx.fail(job.get("offset"), f"must be a multiple of the alignment ({align} bytes; set blockalign)")
    if max(sizes) > d.filesize:
        raise UserError(
            f"{ctx.where} line {job.line}: job {name}: a {max(sizes)}-byte request does not fit in a "
            f"{d.filesize}-byte file: make size/filesize larger or bs smaller"
        )


def _timing(d: _Draft) -> None:
    """time_based, runtime (or fio's alias timeout) and ramp_time."""
    ctx, job = d.ctx, d.ctx.job
    d.time_based = ctx.flag("time_based", False)
    d.runtime = ctx.time_s("runtime") if job.get("runtime") is not None else ctx.time_s("timeout")  # fio's alias
    d.ramp = ctx.time_s("ramp_time") or 0.0
    if d.time_based and not d.runtime:
        # fio: "time_based requires a runtime/timeout setting", and it runs the job without time_based.
        d.notes.append(
            f"time_based without runtime (line {job.get('time_based').line}): fio turns time_based off, and "
            "so does fsmeter: the job ends after its bytes"
        )
        d.time_based = False


def _bytes_per_clone(d: _Draft) -> None:
    """The bytes each clone moves in one pass, counted as fio counts them: whole requests up to the end of its
    files' regions or its full random map, or where an access shape or fio's per-direction map stops it."""
    ctx, notes = d.ctx, d.notes
    d.per_job = d.io_per_job
    d.distribution = random_distribution(ctx, notes)
    if d.rw not in TRIM_PATTERNS:
        mins = dir_min_bs(ctx, d.split, d.bs)
        d.dir_block = dir_map_block(
            ctx, d.per_dir, mins, d.read_pct, d.random_pct, d.distribution, d.nrfiles, d.time_based, notes
        )
    if d.dir_block:
        d.entries = dir_entries(d.per_dir, d.read_pct, d.random_pct)
        d.sizes, d.align = [e["size"] for e in d.entries], d.dir_block
    sizes, random_pct, io_per_job = d.sizes, d.random_pct, d.io_per_job
    io_size_given = (ctx.job.get("io_size") or ctx.job.get("io_limit")) is not None
    d.shape = shape = access_shape(
        ctx, d.rw, d.seq_add, sizes, d.filesize, d.nrfiles, d.offset, random_pct, d.distribution, notes
    )
    if d.dir_block and not d.time_based:
        # fio's random map with per-direction block sizes: the job's bytes, unless its stop rule ends it first.
        d.per_job = io_per_job
    elif len(set(sizes)) == 1 and not d.time_based and shape.get("cap", 0) != 0:
        # An offset modifier, strided zones or a strided sequence: fio stops where the shape says (cap I/Os),
        # or goes on wrapping (cap None) until the job's bytes are done.
        whole = -(-io_per_job // sizes[0])
        cap = shape["cap"]
        if d.seq_add > 0 and cap is not None and io_per_job > d.filesize:
            # fio's walk with a hole wraps to the file's start instead of ending when io_size is beyond the
            # file (fio 3.33: read:8k, bs=4k, size=38k does 3 reads, with io_size=128k 32).
            cap = None
            notes[:] = [n for n in notes if not n.startswith(f"rw={d.rw}:{d.seq_add}:")]
            notes.append(
                f"rw={d.rw}:{d.seq_add} with io_size beyond the file: the walk starts again at the file's start "
                "where the next request would not fit, until io_size is done, as fio's does"
            )
        d.per_job = (whole if cap is None else min(whole, cap)) * sizes[0]
    elif len(set(sizes)) == 1 and not d.time_based:
        # fio stops a clone at the end of its files' regions (sequential) or when its random map is full, and
        # never issues a partial request: count whole requests as fio does.
        bsz = sizes[0]
        whole = -(-io_per_job // bsz)
        blocks = d.nrfiles * (d.filesize // bsz)
        capped = not random_pct or not (ctx.flag("norandommap", False) or d.distribution != "random")
        if capped and whole > blocks and io_size_given:
            # fio goes over the files again (sequential: from their start; random: a fresh random map) until
            # io_size is done.
            capped = False
            notes.append(
                f"io_size beyond the files ({io_per_job} bytes, the files {d.nrfiles * d.filesize}): each clone "
                "goes over its files again until io_size is done, as fio does"
            )
        d.per_job = (min(whole, blocks) if capped else whole) * bsz
    elif sized_map(sizes, d.align, random_pct, d.distribution, ctx) and not d.time_based:
        # fio's random map of smallest blocks: requests are shortened at blocks already done, so each pass moves
        # the map's bytes exactly (the files' whole blocks: a tail shorter than a block is never read), fio
        # ends the pass when the map is full, and only an io_size beyond the files starts another pass.
        cover = d.nrfiles * (d.filesize // d.align) * d.align
        d.per_job = io_per_job if io_size_given else min(io_per_job, cover)
    elif random_pct and not ctx.flag("norandommap", False) and not d.time_based:
        notes.append(
            "several request sizes without norandommap: fio's random map shortens requests as blocks "
            "fill up (so it does more, smaller I/Os than bssplit says); fsmeter keeps the sizes asked for, "
            "as fio does with norandommap"
        )


def _total(d: _Draft) -> None:
    """The job's bytes over its loops and clones (None: time-based), number_ios, and the length the files are
    laid out to when they were there before and are longer than the region."""
    ctx, job, sizes, numjobs = d.ctx, d.ctx.job, d.sizes, d.numjobs
    d.loops = loops = ctx.int("loops", 1, 1, 1 << 32)
    d.total = None if d.time_based else d.per_job * numjobs * loops  # fio: the whole job again, `loops` times
    nio = job.get("number_ios")
    if nio is not None and ctx.int("number_ios", 0, 0) > 0:
        # fio: each clone stops after this many I/Os (reads and writes together), if nothing stops it before.
        if len(set(sizes)) > 1:
            # the sizes are drawn: each thread counts its requests (max_ios) beside the job's bytes.
            d.max_ios = ctx.int("number_ios", 0, 0)
        else:
            cap = ctx.int("number_ios", 0, 0) * sizes[0]
            d.total = min(d.per_job * loops, cap) * numjobs if not d.time_based else cap * numjobs
    d.layout = d.filesize
    if d.real is not None and min(d.real) - d.offset > d.filesize:
        # The files were there before and are longer than the region: fio works inside them and leaves the rest;
        # fsmeter would lay out (truncate) a file of another length, so it keeps their length and stops after
        # the region's bytes instead.
        d.layout = min(d.real) - d.offset
        if d.total is None:
            ctx.fail(
                job.get("size"),
                "a region smaller than the existing files with time_based: fsmeter would "
                "spread the requests over the whole files; give size= equal to the files' size",
            )
        if d.random_pct:
            d.notes.append(
                f"the existing files are longer than the region ({d.filesize} bytes): fsmeter keeps them "
                f"whole and draws random offsets over {d.layout} bytes (fio: inside the region); the bytes "
                "and I/O counts are the same"
            )


def _params(d: _Draft) -> None:
    """The access workload's parameters: the plain ones, then what each group of fio's options adds to them."""
    ctx, notes = d.ctx, d.notes
    pace_params = pace(ctx, d.entries, notes)
    d.params = params = {
        "entries": d.entries,
        "alignment": d.align,
        "file_count": len(d.place.names),
        "file_size": d.layout,
        "queue_depth": d.qd,
        "direct": d.direct,
        "fsync_every": ctx.int("fsync", 0, 0),
        "fsync_end": ctx.flag("end_fsync"),
        "warmup_s": d.ramp,
        "duration_s": d.runtime if d.runtime else None,
        "total_bytes": d.total,
        "file_names": d.place.names,
        "offset": d.offset,
        "thread_files": d.place.thread_files,
        "reuse_files": True,
        "buffer_memory": d.buffer_memory,
    }
    if d.max_ios:
        params["max_ios"] = d.max_ios
        notes.append(
            f"number_ios={d.max_ios} with several request sizes: each thread stops after {d.max_ios} requests "
            "(reads and writes together), or at its bytes or its runtime if they come first, as in fio"
        )
    if ctx.job.get("offset_increment") is not None:
        d.per_job = (
            offset_increment(
                ctx,
                params,
                notes,
                numjobs=d.numjobs,
                offset=d.offset,
                place=d.place,
                rw=d.rw,
                sizes=d.sizes,
                seq_add=d.seq_add,
                random_pct=d.random_pct,
                time_based=d.time_based,
                loops=d.loops,
                distribution=d.distribution,
                shape=d.shape,
            )
            or d.per_job
        )
    if pace_params:
        params["pace"] = pace_params
    steady = steadystate(ctx, notes)
    if steady:
        params["steadystate"] = steady
    pinning = thread_placement(ctx, notes)
    if pinning:
        params["place"] = pinning
    if d.trim_then_write:
        params["trim_then_write"] = True
        if params["total_bytes"] is not None:
            params["total_bytes"] *= 2  # fio's trimwrite: the trims cover io_size, and so do their writes
    params.update(d.shape.get("params", {}))
    if _mixes_sequentially(params["entries"]):
        params["seq_per_direction"] = True  # fio keeps one position per direction (last_pos)
        if params.get("seq_add") or params.get("zone_size"):
            notes.append(
                "sequential mix with holes or strided zones: reads and writes share one walk per thread "
                "(fio keeps one position per direction)"
            )
    write_syncs(ctx, params, notes, d.engine)
    buffer_pattern_and_verify(ctx, params, notes, 1 if d.time_based else d.loops)
    write_contents(ctx, params, notes, d.size, d.nrfiles)
    atomic(ctx, params, notes, d.engine)
    if ctx.flag("do_verify", True):
        verify_readback(ctx, params, notes, d.per_job, d.time_based, d.loops)
    random_map(ctx, params, notes, d.dir_block, d.random_pct, d.sizes, d.align, d.distribution)
    sprandom(
        ctx,
        d.rw,
        d.sizes,
        d.align,
        d.numjobs,
        len(d.place.names),
        min(d.filesize, d.io_per_job),
        d.filesize,
        d.random_pct,
        d.distribution,
        d.time_based,
        d.loops,
        params,
        notes,
    )


def _seed(ctx: Ctx, notes: list) -> int:
    """randseed, or with randrepeat=0 a seed from the clock."""
    seed = 42
    if ctx.job.get("randseed") is not None:
        seed = ctx.int("randseed", 42, 0)
    if not ctx.flag("randrepeat", True) and ctx.job.get("randseed") is None:
        import time as _time

        seed = int(_time.time_ns() % (1 << 63))
        notes.append(f"randrepeat=0: seed {seed} from the clock")
    return seed


def _files_notes(d: _Draft) -> None:
    """What becomes of the files (unlink, fill_device, files there before), errors the job goes on after, and
    fallocate."""
    ctx, notes = d.ctx, d.notes
    if ctx.flag("unlink", False) is False and ctx.job.get("unlink") is not None:
        notes.append("unlink=0: fsmeter run removes its files at the end unless --keep-files")
    if d.fill:
        d.params["fill"] = True
    on_error(ctx, d.params, notes)
    fallocate(ctx, d.engine, notes)
    if d.from_fill is not None:
        notes[:] = [n for n in notes if not n.startswith("size from the existing files")]
        notes.append(
            f"size from what job {d.from_fill[0]} writes (fill_device): "
            + (f"{d.from_fill[1]} bytes" if d.from_fill[2] else "taken when that job has run")
        )
    elif d.real is not None:
        notes.append("its files were there before the run: fsmeter uses them as they are and leaves them in place")


def _run_control(ctx: Ctx) -> tuple:
    """startdelay and exit_what (exitall is read by map_jobfile) -> (start delay in seconds, exit_what)."""
    delay = ctx.job.get("startdelay")
    start_delay = 0.0
    if delay is not None:
        if "-" in (delay.value or "") or ":" in (delay.value or ""):
            ctx.fail(delay, "a random start delay (a range) is not supported by fsmeter (planned): give one time")
        start_delay = ctx.time_s("startdelay") or 0.0
        if start_delay > MAX_DURATION_S:
            ctx.fail(delay, f"at most {MAX_DURATION_S:.0f} s")
    exit_what = "group"  # fio's default; map_jobfile turns it off when no job of the file has exitall
    ew = ctx.job.get("exit_what")
    if ew is not None:
        exit_what = (ew.value or "").strip()
        if exit_what not in ("group", "stonewall", "all"):
            ctx.fail(ew, "use group, stonewall or all")
    ctx.flag("exitall")
    return start_delay, exit_what


def _mixes_sequentially(entries: list[dict]) -> bool:
    """Whether sequential requests come in more than one direction (fio's rw=rw, readwrite, or a
    percentage_random below 100): fio then walks each direction from a position of its own."""
    dirs = set()
    for e in entries:
        if e.get("random_pct", 0) >= 100:
            continue
        read = e.get("read_pct", 0)
        trim = e.get("trim_pct", 0)
        if read > 0:
            dirs.add("read")
        if trim > 0:
            dirs.add("trim")
        if read + trim < 100:
            dirs.add("write")
    return len(dirs) > 1
