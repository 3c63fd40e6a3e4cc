"""fio's bandwidth, IOPS and latency logs of a job: their file names, the sample interval, and how their lines
are written (offset and priority columns, the window's average or maximum, per-I/O lines)."""

from __future__ import annotations

import os
from pathlib import Path

from fsmeter.errors import UserError
from fsmeter.interop.fio.values import Ctx, alias
from fsmeter.userpaths import relative_depth

#: fio's log options -> the logs each writes (write_lat_log: total, submission and completion latency, in
#: fio's order; disable_lat/disable_slat/disable_clat leave one out, as in fio).
_LOG_KINDS = (("write_bw_log", ("bw",)), ("write_iops_log", ("iops",)), ("write_lat_log", ("lat", "slat", "clat")))


def job_logs(ctx: Ctx, name: str, numjobs: int, settings: dict, notes: list) -> list:
    """write_bw_log / write_iops_log / write_lat_log: fio's log files (named as fio names them, the job's number
    filled in by map_jobfile), one line per sample interval, as fio writes them with log_avg_msec (which sets the
    interval)."""
    from fsmeter.userpaths import check_output_path

    out = []
    per_job = ctx.flag("per_job_logs", True)
    for key, kinds in _LOG_KINDS:
        opt = ctx.job.get(key)
        if opt is None:
            continue
        stem = (opt.value or "").strip() or name
        if any(c in stem for c in "\n\0"):
            ctx.fail(opt, "give a file name prefix")
        confine_log_name(ctx, opt, stem, notes)
        check_log_folder(ctx, opt, Path(stem + "_x.log").parent)
        for kind in kinds:
            if kind != "bw" and kind != "iops" and ctx.flag(f"disable_{kind}"):
                continue
            out.append((kind, stem + f"_{kind}" + (".{n}.log" if per_job else ".log")))
            try:
                check_output_path(Path(stem + f"_{kind}.log"), f"{ctx.where} line {opt.line}: {key}")
            except UserError as exc:
                raise UserError(f"{exc.message}") from None
    if not out:
        return out
    avg = ctx.job.get("log_avg_msec")
    ms = ctx.int("log_avg_msec", 0, 0, 3_600_000) if avg is not None else 0
    if ms:
        settings["interval_s"] = ms / 1000.0
    elif {k for k, _ in out} & {"bw", "iops"}:
        notes.append(
            "write_bw_log/write_iops_log: fio logs every I/O unless log_avg_msec is set; fsmeter writes one "
            "line per sample interval (1 s; log_avg_msec=N sets it): the interval's average, as fio's "
            "log_avg_msec lines"
        )
    if numjobs > 1:
        notes.append(f"the logs cover the job's {numjobs} threads together (fio: one log per clone)")
    return out


def confine_log_name(ctx: Ctx, opt, stem: str, notes: list) -> None:
    """A relative log name stays in the current directory, where fio writes its logs: a name whose ".." parts
    climb out of it is refused with its line. An absolute name is the user's choice of an output file, as
    `--json` is: it is honoured, checked before the job runs (job_logs), and a note says where the logs go."""
    if os.path.isabs(stem):
        notes.append(
            f"{opt.name}={stem}: an absolute name, honoured as an output the job file names: the logs go there"
        )
        return
    if relative_depth(Path(stem + "_x.log").parent) < 0:
        ctx.fail(
            opt,
            "the name leaves the current directory ('..'): name a file in it or below it, or an absolute path",
        )


def check_log_folder(ctx: Ctx, opt, folder: Path) -> None:
    """A log goes to a folder of a filesystem: not into /proc, /sys or /dev (root may write there, and a log
    named /proc/x failed only after the run, or /dev/null made /dev/null_bw.1.log)."""
    from fsmeter.provision.sysinfo import pseudo_filesystem

    pseudo = pseudo_filesystem(str(folder.resolve()))
    if pseudo:
        ctx.fail(opt, f"{folder} is a kernel interface ({pseudo}), not a folder for logs: name a file on a filesystem")


def _io_log_records(params: dict, threads: int) -> int:
    """Requests each thread's per-I/O log keeps (32 bytes each, allocated before the start): what a job with a
    byte total does (its smallest request size), else 2^22 records shared by its threads (128 MiB), at least
    2^16 and at most 2^20 each."""
    cap = max(1 << 16, min(1 << 20, (1 << 22) // max(threads, 1)))
    total, sizes = params.get("total_bytes"), [e["size"] for e in params.get("entries") or []]
    if total and sizes and params.get("thread_regions"):  # offset_increment: each thread its own bytes
        return max(16, min(cap, max(r["bytes"] for r in params["thread_regions"]) // min(sizes) + 16))
    if total and sizes:
        return max(16, min(cap, total // min(sizes) // max(threads, 1) + 16))
    return cap


def log_format(ctx: Ctx, logs: list, params: dict, threads: int, notes: list) -> dict:
    """How the job's log lines are written, as fio's flush_samples writes them: log_offset (an offset column),
    log_prio (the priority column as fio's 16-bit class and level in hex instead of 0/1), log_max_value /
    log_window_value (avg, max or both: the latency logs' value per window). write_lat_log has the engine keep
    each sample interval's latency (interval_lat) with log_avg_msec, and without it log every measured request
    (io_log: the engine writes the _lat and _clat files, fio's per-I/O lines)."""
    fmt = {"offset": ctx.flag("log_offset"), "prio": ctx.flag("log_prio"), "window": "avg"}
    key = alias(ctx, ("log_max_value", "log_window_value"))
    if key is not None:
        opt = ctx.job.get(key)
        v = (opt.value or "").strip().lower()
        window = {"0": "avg", "avg": "avg", "1": "max", "max": "max", "both": "both"}.get(v)
        if window is None:
            ctx.fail(opt, "use avg, max or both (or 0 and 1, fio's old avg and max)")
        fmt["window"] = window
    kinds = {k for k, _ in logs}
    averaged = ctx.job.get("log_avg_msec") is not None and ctx.int("log_avg_msec", 0, 0, 3_600_000) > 0
    per_io = [k for k in ("offset", "prio") if fmt[k]]
    if per_io and ({"bw", "iops"} & kinds or (averaged and kinds)):
        notes.append(
            f"log_{'/log_'.join(per_io)}: fio's per-I/O lines (without log_avg_msec) carry each request's "
            f"{' and '.join(per_io)}; its averaged lines, as fsmeter writes them, carry 0 there"
            + ("; the requests given a priority are counted in counters.cmdprio_ios" if fmt["prio"] else "")
        )
    lat_files = [f for k, f in logs if k in ("lat", "clat")]
    if lat_files and not averaged:
        # fio's default: one line per request, written by the engine after the phase.
        fmt["per_io"] = True
        params["io_log"] = {
            "paths": [os.path.abspath(f) for f in lat_files],
            "offset": fmt["offset"],
            "prio_hex": fmt["prio"],
            "max_records": _io_log_records(params, threads),
        }
        if fmt["window"] != "avg":
            notes.append(
                f"{ctx.job.get(key).as_written}: fio uses it only with log_avg_msec; without it every "
                "request is logged, as in fio"
            )
    if kinds & {"lat", "clat", "slat"}:
        params["interval_lat"] = averaged
        backend = (ctx.job.get("ioengine").value or "").strip() if ctx.job.get("ioengine") is not None else "psync"
        if "slat" in kinds and backend in ("io_uring", "libaio"):
            notes.append(
                "write_lat_log: fsmeter times each request from its submission to its completion, with no "
                "separate submission time: the _lat and _clat logs carry that latency and the _slat log is "
                "empty (fio's _slat: the time to submit; with a synchronous engine fio's is empty too)"
            )
    return fmt


def gtod_reduce(ctx: Ctx, params: dict, notes: list) -> None:
    """fio's gtod_reduce=1 (no latencies, the clock read less): fsmeter's latency=false, unless the job also
    asks for what needs each request's latency (a latency log, a latency target, a steady state on latency),
    which fio then leaves empty; fsmeter keeps timing every request there, and says so."""
    if not ctx.flag("gtod_reduce", False):
        return
    steady = params.get("steadystate") or {}
    needs = [
        name
        for name, on in (
            ("write_lat_log", params.get("interval_lat") or params.get("io_log")),
            ("latency_target", params.get("latency_target")),
            ("steadystate", str(steady.get("criterion", "")).startswith("lat")),
        )
        if on
    ]
    if needs:
        notes.append(
            f"gtod_reduce=1: fio then keeps no latencies, which {' and '.join(needs)} reads; fsmeter keeps timing "
            "every request for it"
        )
        return
    params["latency"] = False
