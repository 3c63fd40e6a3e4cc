"""fio's I/O log: write_iolog (every request a job issues, in fio's iolog version 3, written by the engine after the
run phase: access/issuelog.rs)."""

from __future__ import annotations

import os
from pathlib import Path

from fsmeter.errors import UserError
from fsmeter.interop.fio.logs import check_log_folder, confine_log_name
from fsmeter.interop.fio.values import Ctx

#: Records the engine keeps for the whole job (32 bytes each): 128 MiB.
_JOB_RECORDS = 1 << 22


def _records(params: dict, threads: int) -> int:
    """Requests each thread's log keeps: what a job with a byte total issues (its smallest request size, its
    reads-back counted twice), else its share of 2^22 records, at least 2^16."""
    share = max(1 << 16, _JOB_RECORDS // max(threads, 1))
    total, sizes = params.get("total_bytes"), [e["size"] for e in params.get("entries") or []]
    if total and sizes:
        per_thread = total // min(sizes) // max(threads, 1)
        if params.get("verify_backlog"):
            per_thread *= 2
        return max(16, min(share, per_thread + 4096))
    return share


def write_iolog(ctx: Ctx, params: dict, notes: list, threads: int, engine_kind: str | None) -> None:
    """write_iolog=FILE: the engine logs every request the job's threads issue (reads, writes, trims, the syncs of
    fsync=/fdatasync=/end_fsync and the read-backs of verify), in issue order, as fio's log_io_u does."""
    from fsmeter.userpaths import check_output_path

    opt = ctx.job.get("write_iolog")
    if opt is None:
        return
    name = (opt.value or "").strip()
    if not name or any(c in name for c in "\n\0"):
        ctx.fail(opt, "give a file name")
    if engine_kind is not None:
        ctx.fail(opt, f"with ioengine={engine_kind} is not supported: fio's I/O log holds data transfers")
    confine_log_name(ctx, opt, name, notes)
    check_log_folder(ctx, opt, Path(name).parent)
    try:
        check_output_path(Path(name), f"{ctx.where} line {opt.line}: write_iolog")
    except UserError as exc:
        raise UserError(exc.message) from None
    names = list(params["file_names"])
    blank = next((n for n in names if any(c.isspace() for c in n)), None)
    if blank is not None:
        ctx.fail(opt, f"the file name {blank!r} holds a blank, which fio's I/O log cannot: rename the file")
    params["iolog_out"] = {
        "path": os.path.abspath(name),
        "names": names,
        "max_records": _records(params, threads),
    }
    note = (
        f"write_iolog={name}: every request the job issues, in fio's I/O log version 3 (time in microseconds from "
        "the start, file, action, offset, length), the files named as the job names them in its directory (fio "
        "puts directory= in front)"
    )
    if threads > 1:
        note += f"; the job's {threads} threads in one log, in issue order (fio: each clone appends its own lines)"
    notes.append(note)
