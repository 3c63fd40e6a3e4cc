"""How a fio job makes its writes durable: sync= (the files opened O_SYNC or O_DSYNC), fdatasync=N and
sync_file_range=FLAGS:N (a sync after every N writes, beside fsync=N), and fsync_on_close."""

from __future__ import annotations

from fsmeter.interop.fio.values import Ctx

#: sync_file_range's flags as fio names them, and the SYNC_FILE_RANGE_* bits (Linux's values).
_RANGE_FLAGS = {"wait_before": 1, "write": 2, "wait_after": 4}


def sync_mode(ctx: Ctx) -> str | None:
    """fio's sync=: none (0), sync (1) or dsync; None when not set."""
    opt = ctx.job.get("sync")
    if opt is None:
        return None
    v = (opt.value or "1").strip().lower()  # a bare `sync` is sync=1 in fio
    mode = {"0": "none", "none": "none", "false": "none", "1": "sync", "sync": "sync", "true": "sync"}.get(v)
    if v == "dsync":
        mode = "dsync"
    if mode is None:
        ctx.fail(opt, "use 0, 1, none, sync or dsync")
    return mode


def write_syncs(ctx: Ctx, params: dict, notes: list, engine: str) -> None:
    """sync=, fdatasync=, sync_file_range= and fsync_on_close onto the access workload's parameters."""
    mode = sync_mode(ctx)
    if mode in ("sync", "dsync") and engine not in ("mmap", "libpmem"):  # engines.engine_setup says theirs
        params["open_sync"] = mode
        flag = "O_SYNC" if mode == "sync" else "O_DSYNC"
        notes.append(f"{ctx.job.get('sync').as_written}: the files are opened {flag}, as fio opens them")
    every = ctx.int("fdatasync", 0, 0)
    if every:
        params["fdatasync_every"] = every
        notes.append(
            f"fdatasync={every}: an fdatasync after every {every} writes, counted as fsyncs in the report "
            "(fio reports them as syncs)"
            + ("; fsync= wins where both fall, as in fio" if params.get("fsync_every") else "")
        )
    _sync_file_range(ctx, params, notes)
    if ctx.flag("fsync_on_close", False):
        params["fsync_end"] = True
        notes.append(
            "fsync_on_close=1: fio fsyncs each file as it closes it, at the end of the job; fsmeter fsyncs each "
            "file at the end of the job, inside the measured time (as end_fsync)"
        )


def _sync_file_range(ctx: Ctx, params: dict, notes: list) -> None:
    """sync_file_range=FLAGS[:N]: FLAGS one or more of wait_before, write, wait_after (comma-separated)."""
    opt = ctx.job.get("sync_file_range")
    if opt is None:
        return
    text = (opt.value or "").strip()
    names, _, nr = text.partition(":")
    bits = 0
    for name in names.split(","):
        name = name.strip()
        if name not in _RANGE_FLAGS:
            ctx.fail(opt, "use one or more of wait_before, write, wait_after (comma-separated), then :N")
        bits |= _RANGE_FLAGS[name]
    every = 1
    if nr.strip():
        if not nr.strip().isascii() or not nr.strip().isdigit() or not 0 < int(nr) < 1 << 32:
            ctx.fail(opt, "the number after ':' is how many writes between syncs: give a whole number > 0")
        every = int(nr)
    params["sync_range_every"], params["sync_range_flags"] = every, bits
    notes.append(
        f"{opt.as_written}: sync_file_range after every {every} writes, over the whole file (fio: over the range "
        "written since its last sync; the same dirty pages), counted as fsyncs in the report"
    )
