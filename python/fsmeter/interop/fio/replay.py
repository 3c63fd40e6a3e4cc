"""fio's read_iolog: a job whose requests are replayed from an I/O log (fio's text log, version 2 or 3), each at its
time (replay_no_stall, replay_time_scale), onto the files the log names (or replay_redirect's), with fio's
replay_skip, replay_scale and replay_align. The log is a file the user hands in: read bounded, every line checked,
every file it names kept inside the job's directory. The engine replays it (access/replay.rs)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from fsmeter.errors import UserError
from fsmeter.interop.fio.options import BATCH_OPTS, IOLOG_OPTS
from fsmeter.interop.fio.values import Ctx
from fsmeter.textfile import decode_text
from fsmeter.units import MAX_DURATION_S, MAX_SIZE_BYTES
from fsmeter.userpaths import relative_depth

#: The largest log read (about 1.5 million requests).
MAX_LOG_BYTES = 64 << 20
#: What fio's log actions are to the engine (access/replay.rs).
_ACTIONS = {"read": 0, "write": 1, "trim": 2, "sync": 3, "datasync": 4}
_FILE_ACTIONS = ("add", "open", "close")
#: blktrace's magic, less its version byte (its binary traces of a block device, which fio also replays).
BLKTRACE_MAGIC = 0x65617400

#: The options a replayed job honours (with the log's requests in place of rw=, bs=, size= and filename=); any other
#: is refused, so that none is silently dropped.
REPLAY_OPTIONS = {
    "name",
    "description",
    "ioengine",
    "iodepth",
    "direct",
    "buffered",
    "numjobs",
    "thread",
    "runtime",
    "timeout",
    "ramp_time",
    "time_based",
    "directory",
    "filename",
    "rw",
    "readwrite",
    "bs",
    "blocksize",
    "size",
    "group_reporting",
    "stonewall",
    "wait_for_previous",
    "new_group",
    "kb_base",
    "unit_base",
    "clocksource",
    "write_lat_log",
    "write_bw_log",
    "write_iops_log",
    "log_avg_msec",
    "log_offset",
    "log_prio",
    "log_max_value",
    "per_job_logs",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "write_iolog",
    "iodepth_low",
    *BATCH_OPTS,
    *IOLOG_OPTS,
    "randrepeat",
    "randseed",
    "invalidate",
}


def _read_log(ctx: Ctx, opt, path: str) -> list[str]:
    p = Path(path)
    try:
        if p.is_dir():
            ctx.fail(opt, f"{path} is a directory: name fio's I/O log file")
        with open(p, "rb") as f:
            data = f.read(MAX_LOG_BYTES + 1)
    except OSError as exc:
        ctx.fail(opt, f"cannot read {path} ({exc.strerror or exc}): check the path (it is relative to where you run)")
    if len(data) > MAX_LOG_BYTES:
        ctx.fail(opt, f"{path} is larger than {MAX_LOG_BYTES >> 20} MiB: fsmeter replays logs up to that size")
    head = data[:4].ljust(4, b"\0")
    if BLKTRACE_MAGIC in (int.from_bytes(head, "little") & ~0xFF, int.from_bytes(head, "big") & ~0xFF):
        ctx.fail(
            opt,
            f"{path} is a blktrace trace (a block device's): fsmeter replays fio's text I/O logs (versions 2 and "
            "3) only: run this job with fio",
        )
    return decode_text(data, path).splitlines()


def _file_name(ctx: Ctx, opt, path: str, line: int, name: str) -> str:
    """A file the log names, relative to the job's directory and inside it."""
    pure = PurePosixPath(name)
    if pure.is_absolute() or relative_depth(pure) <= 0:
        ctx.fail(
            opt,
            f"{path} line {line}: the file {name!r} is not inside the job's directory: fsmeter replays onto files "
            "named relative to it (set replay_redirect=NAME to replay every request onto one file)",
        )
    return str(pure)


def parse_log(ctx: Ctx, opt, path: str) -> dict:
    """The log's requests, as the engine takes them: `ops` ([due_ns, file, action, offset, len] in order), `names`
    (the files, relative to the job's directory, in the order the log adds them) and what is needed to lay them
    out; with fio's replay options applied."""
    lines = _read_log(ctx, opt, path)
    if not lines or lines[0].strip() not in ("fio version 2 iolog", "fio version 3 iolog"):
        ctx.fail(opt, f"{path} line 1: not fio's I/O log (its first line is 'fio version 2 iolog' or '... 3 iolog')")
    v3 = lines[0].strip() == "fio version 3 iolog"
    redirect = (ctx.job.get("replay_redirect").value or "").strip() if ctx.job.get("replay_redirect") else ""
    if redirect:
        redirect = _file_name(ctx, ctx.job.get("replay_redirect"), "replay_redirect", 0, redirect)
    skip = set()
    if ctx.job.get("replay_skip") is not None:
        for word in (ctx.job.get("replay_skip").value or "").split(","):
            w = word.strip()
            if w not in ("read", "write", "sync", "trim"):
                ctx.fail(ctx.job.get("replay_skip"), f"{w!r}: use read, write, sync or trim, separated by commas")
            skip.add(w)
    scale = ctx.int("replay_scale", 1, 1, 1 << 40)
    align = ctx.int("replay_align", 0, 0, 1 << 30)
    if align and align & (align - 1):
        ctx.fail(ctx.job.get("replay_align"), "use a power of two")
    pct = ctx.int("replay_time_scale", 100, 1, 1 << 20)
    timed = not ctx.flag("replay_no_stall", False)
    names: dict[str, int] = {}
    ops: list = []
    first_t = last_t = None
    wait_ns = 0
    for i, raw in enumerate(lines[1:], start=2):
        parts = raw.split()
        if not parts:
            continue
        t = None
        if v3:
            if len(parts) not in (3, 5) or not parts[0].isdigit():
                ctx.fail(
                    opt, f"{path} line {i}: {raw.strip()[:80]!r}: a version 3 line is TIME FILE ACTION [OFFSET LENGTH]"
                )
            t, parts = int(parts[0]), parts[1:]
        elif len(parts) not in (2, 4):
            ctx.fail(opt, f"{path} line {i}: {raw.strip()[:80]!r}: a version 2 line is FILE ACTION [OFFSET LENGTH]")
        name, act = parts[0], parts[1]
        if len(parts) == 2:
            if act not in _FILE_ACTIONS:
                ctx.fail(opt, f"{path} line {i}: {act!r}: a file's action is add, open or close")
            if act == "add":
                names.setdefault(redirect or _file_name(ctx, opt, path, i, name), len(names))
            continue
        if not (parts[2].isdigit() and parts[3].isdigit()):
            ctx.fail(opt, f"{path} line {i}: the offset and length are whole numbers of bytes")
        offset, length = int(parts[2]), int(parts[3])
        if offset + length > MAX_SIZE_BYTES:
            ctx.fail(opt, f"{path} line {i}: {length} bytes at {offset}: past fsmeter's limit of 1 PiB in a file")
        if act == "wait":
            if v3:
                continue  # fio: "wait" is not allowed with version 3, and skipped
            wait_ns = max(wait_ns, offset * 1_000_000)  # fio's version 2: milliseconds since the job's start
            continue
        if act not in _ACTIONS:
            ctx.fail(opt, f"{path} line {i}: {act!r}: an action is read, write, trim, sync, datasync or wait")
        if act in skip:
            continue
        key = redirect or _file_name(ctx, opt, path, i, name)
        if key not in names:
            ctx.fail(opt, f"{path} line {i}: the file {name!r} is used before its 'add' line")
        if t is not None:
            first_t = t if first_t is None else first_t
            if last_t is not None and t < last_t:
                t = last_t  # fio: a time before the one before it is no delay
            last_t = t
        due = wait_ns
        if t is not None and first_t is not None:
            due = max(due, (t - first_t) * 1000 * 100 // pct)
        if due > MAX_DURATION_S * 1_000_000_000:
            ctx.fail(
                opt,
                f"{path} line {i}: its time is more than fsmeter's limit of {MAX_DURATION_S:.0f} s after the first request",
            )
        if act in ("sync", "datasync"):
            offset, length = 0, 0
        else:
            offset //= scale
            if align:
                offset -= offset % align
            if length == 0 or length > 1 << 30:
                ctx.fail(opt, f"{path} line {i}: a request of {length} bytes: 1 byte to 1 GiB")
        ops.append([due if timed else 0, names[key], _ACTIONS[act], offset, length])
    if not ops:
        ctx.fail(opt, f"{path}: the log holds no request to replay")
    return {"ops": ops, "names": list(names), "timed": timed, "v3": v3, "pct": pct}


def replay_options_alone(ctx: Ctx, notes: list) -> None:
    """fio's replay options without read_iolog change nothing, in fio as here: a note says so."""
    for name in IOLOG_OPTS:
        if name != "read_iolog":
            opt = ctx.job.get(name)
            if opt is not None:
                notes.append(f"{opt.as_written} without read_iolog: nothing to replay, nothing changes (as in fio)")


def _check_room(ctx: Ctx, opt, path: str, names: list, size: int, root: Path | None) -> None:
    """Laying the log's files out must fit the filesystem: a log (a file handed in) that names a far offset
    must not make fsmeter fill the disk."""
    if root is None:
        return
    try:
        st = os.statvfs(root)
    except OSError:
        return
    need = 0
    for n in names:
        try:
            have = (root / n).stat().st_size
        except OSError:
            have = 0
        need += max(0, size - have)
    free = st.f_bavail * st.f_frsize
    if need > free:
        ctx.fail(
            opt,
            f"{path}: its requests reach byte {size} of each file: laying its {len(names)} file(s) out needs "
            f"{need} bytes, and {root} has {free} free: replay it where there is room, or onto existing files",
        )


def replay_params(ctx: Ctx, notes: list, params: dict, numjobs: int, direct: bool, root: Path | None = None) -> None:
    """The access parameters of a replayed job (params holds the engine's: queue_depth, direct ...)."""
    opt = ctx.job.get("read_iolog")
    path = (opt.value or "").strip()
    if not path:
        ctx.fail(opt, "give the I/O log's file name")
    if ":" in path:
        ctx.fail(opt, "one log per clone (names separated by ':') is not supported by fsmeter yet (planned): give one")
    for o in ctx.job.options.values():
        if o.name not in REPLAY_OPTIONS:
            raise UserError(
                f"{ctx.where} line {o.line}: option {o.name} with read_iolog is not supported by fsmeter yet "
                "(planned): the replayed job takes its requests from the log; remove it, or run this job with fio"
            )
    log = parse_log(ctx, opt, path)
    ops = log["ops"]
    data = [o for o in ops if o[2] <= 2]
    if direct and any(o[3] % 512 or o[4] % 512 for o in data):
        bad = next(o for o in data if o[3] % 512 or o[4] % 512)
        ctx.fail(
            opt, f"{path}: a request of {bad[4]} bytes at {bad[3]}: with direct=1 fio and fsmeter need multiples of 512"
        )
    extent = max((o[3] + o[4] for o in data), default=4096)
    longest = max((o[4] for o in data), default=512)
    align = 4096
    for o in data:
        while align > 1 and (o[3] % align or o[4] % align):
            align //= 2
    size = -(-longest // align) * align
    _check_room(ctx, opt, path, log["names"], -(-extent // 4096) * 4096, root)
    reads = sum(1 for o in data if o[2] == 0)
    writes = sum(1 for o in data if o[2] == 1)
    params.update(
        {
            "entries": [{"size": size, "weight": 100.0, "read_pct": 100 if not writes else 0, "random_pct": 0}],
            "alignment": align,
            "file_count": len(log["names"]),
            "file_size": -(-extent // 4096) * 4096,
            "file_names": log["names"],
            "offset": 0,
            "thread_files": False,
            "reuse_files": True,
            "total_bytes": numjobs * (sum(o[4] for o in data) + 1),
            "replay": {"ops": ops, "timed": log["timed"]},
        }
    )
    for name in ("rw", "readwrite", "bs", "blocksize", "size", "filename"):
        if ctx.job.get(name) is not None:
            notes.append(f"{ctx.job.get(name).as_written}: the log gives the requests and their files, as in fio")
    when = (
        "each at its time in the log"
        + (f" scaled to {log['pct']}%" if log["pct"] != 100 else "")
        + (
            " (fsmeter lets the requests in flight finish before it waits for the next one's time; fio keeps them "
            "in flight and reaps them while it waits)"
            if params.get("queue_depth", 1) > 1
            else ""
        )
        if log["timed"]
        else "as fast as they go (replay_no_stall)"
    )
    trims, syncs = len(data) - reads - writes, len(ops) - len(data)
    what = ", ".join(
        f"{n} {w}{'s' if n != 1 else ''}"
        for n, w in ((reads, "read"), (writes, "write"), (trims, "trim"), (syncs, "sync"))
    )
    notes.append(
        f"read_iolog={path}: {len(ops)} requests ({what}) on {len(log['names'])} file(s), replayed "
        f"in order, {when}; a sync is done between the requests. Files are laid out to {params['file_size']} bytes "
        "where they are smaller (fio replays onto the files as they are)"
        + (f"; each of the {numjobs} threads replays the whole log, as fio's clones do" if numjobs > 1 else "")
    )
    if os.path.isabs(path):
        notes.append(f"read_iolog={path}: read from that path, as the job file names it")
    if ctx.job.get("read_iolog_chunked") is not None and ctx.flag("read_iolog_chunked"):
        notes.append(
            "read_iolog_chunked=1: fsmeter reads the whole log before the run (fio reads it in chunks as it "
            "goes): the same requests"
        )
    if ctx.flag("time_based") and params.get("duration_s"):
        notes.append("time_based: the replay ends with its log, or at runtime if that comes first, as in fio")
