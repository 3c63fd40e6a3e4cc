"""How fast a fio job goes and when it stops: rate, thinktime and flow (the access workload's pace), the search for
a queue depth within a latency target, steady state, and I/O priorities."""

from __future__ import annotations

from fsmeter.interop.fio.values import Ctx, alias, fio_float
from fsmeter.interop.fio_jobfile import parse_fio_int, parse_fio_size, parse_fio_time_s
from fsmeter.units import MAX_COUNT, MAX_DURATION_S, MAX_SIZE_BYTES


def _per_dir(ctx: Ctx, name: str, size: bool) -> tuple | None:
    """fio's READ[,WRITE[,TRIM]] values (bs's rules): one value for every direction; 'R,' or ',W' leaves the
    other unlimited. Sizes with fio's suffixes (size=True) or whole numbers. -> (read, write, trim)."""
    opt = ctx.job.get(name)
    if opt is None:
        return None
    parts = [p.strip() for p in (opt.value or "").split(",")]
    if len(parts) > 3 or not any(parts):
        ctx.fail(opt, "give one value, or READ,WRITE (each may be empty: no limit for that direction)")
    vals = []
    for p in parts:
        if not p:
            vals.append(0)
            continue
        try:
            v = parse_fio_size(p, ctx.kb_base) if size else parse_fio_int(p)
        except ValueError as exc:
            ctx.fail(opt, str(exc))
        top = MAX_SIZE_BYTES if size else MAX_COUNT  # the limits the job's parameters are held to
        if v < 0 or v > top:
            ctx.fail(opt, f"must be >= 0 and at most {top}")
        vals.append(v)
    if len(vals) == 1:
        vals = vals * 3
    while len(vals) < 3:
        vals.append(0)
    return tuple(vals)


def _time_us(ctx: Ctx, name: str) -> int:
    """A time option whose plain number is microseconds (fio's thinktime)."""
    opt = ctx.job.get(name)
    if opt is None:
        return 0
    try:
        us = int(round(parse_fio_time_s(opt.value or "", default_unit="us") * 1e6))
    except ValueError as exc:
        ctx.fail(opt, str(exc))
    if us > 10**13:
        ctx.fail(opt, "at most 10^13 microseconds (about four months)")
    return us


def pace(ctx: Ctx, entries: list, notes: list) -> dict | None:
    """fio's rate, rate_iops, rate_min (ratemin), rate_iops_min, rate_process, rate_cycle (ratecycle) and
    thinktime, thinktime_spin, thinktime_blocks -> the access workload's pace (per thread: fio paces every clone
    of a job on its own)."""
    out: dict = {}
    trims = any(e.get("trim_pct") for e in entries)
    for keys, param, size in (
        (("rate",), "rate_bytes_per_s", True),
        (("rate_iops",), "rate_iops", False),
        (("rate_min", "ratemin"), "rate_min_bytes_per_s", True),
        (("rate_iops_min",), "rate_min_iops", False),
    ):
        given = [k for k in keys if ctx.job.get(k) is not None]
        if not given:
            continue
        key = max(given, key=lambda k: ctx.job.get(k).line)  # an alias: the later line wins, as in fio
        vals = _per_dir(ctx, key, size)
        if trims:
            ctx.fail(
                ctx.job.get(key),
                "pacing trims is not supported by fsmeter (planned): remove it, or run this job with fio",
            )
        if any(vals[:2]):
            out[param] = [vals[0], vals[1]]
    proc = ctx.job.get("rate_process")
    if proc is not None:
        p = (proc.value or "").strip()
        if p not in ("linear", "poisson"):
            ctx.fail(proc, "use linear or poisson")
        if p == "poisson":
            if not (out.get("rate_bytes_per_s") or out.get("rate_iops")):
                ctx.fail(proc, "poisson paces a rate: give rate= or rate_iops= too")
            out["rate_process"] = p
    cyc = [k for k in ("rate_cycle", "ratecycle") if ctx.job.get(k) is not None]
    if cyc:
        key = max(cyc, key=lambda k: ctx.job.get(k).line)
        out["rate_cycle_ms"] = ctx.int(key, 1000, 1, 1 << 31)
    think = _time_us(ctx, "thinktime")
    if think:
        out["thinktime_us"] = think
        spin = _time_us(ctx, "thinktime_spin")
        if spin > think:
            ctx.fail(ctx.job.get("thinktime_spin"), f"more than thinktime ({think} us): make it at most thinktime")
        if spin:
            out["thinktime_spin_us"] = spin
        blocks = ctx.int("thinktime_blocks", 1, 1, 1 << 31)
        if blocks > 1:
            out["thinktime_blocks"] = blocks
        if trims:
            ctx.fail(
                ctx.job.get("thinktime"),
                "thinktime with trims is not supported by fsmeter (planned): remove it, or run this job with fio",
            )
    flow = ctx.int("flow", 0, 0, 1000)
    if flow:
        if trims:
            ctx.fail(
                ctx.job.get("flow"),
                "flow with trims is not supported by fsmeter (planned): remove it, or run this job with fio",
            )
        paced = bool(out)
        out["flow"] = flow
        if ctx.job.get("flow_id") is not None:
            out["flow_id"] = ctx.int("flow_id", 0, 0, 1 << 31)
        if ctx.job.get("flow_sleep") is not None:
            out["flow_sleep_us"] = ctx.int("flow_sleep", 0, 0, 1 << 40)
        notes.append(
            "flow: the jobs of this group with the same flow_id keep their request counts in the ratio of "
            "their weights (each thread counts on its own, as fio's clones do); a job alone in its group "
            "has no one to keep pace with"
            + ("; a request the flow lets pass then waits for its time by the job's rate or thinktime" if paced else "")
        )
    if not out:
        return None
    for d in (0, 1):
        r = out.get("rate_bytes_per_s", [0, 0])[d]
        if out.get("rate_process") == "poisson" and r:
            small = min(
                (e["size"] for e in entries if (e["read_pct"] > 0) == (d == 0) or 0 < e["read_pct"] < 100), default=0
            )
            if small and r < small:
                ctx.fail(
                    ctx.job.get("rate"),
                    f"{r} B/s is less than one {small}-byte request per second: a Poisson "
                    "process needs at least 1 IOPS (fio's too)",
                )
    if out.get("rate_bytes_per_s") or out.get("rate_iops"):
        notes.append(
            "rate: each thread paces its own requests (fio: each clone of the job) on the monotonic clock; "
            "a request not yet due waits once nothing is in flight (fio's inline submission), and the "
            "direction is the mix's draw (fio may switch to the other direction when that one is due first)"
        )
    if out.get("rate_min_bytes_per_s") or out.get("rate_min_iops"):
        notes.append(
            "rate_min: a thread below the minimum over a rate cycle (after 2 s) stops and the phase report "
            "warns (fio ends the job with an error)"
        )
    return out


_LAT_OPTS = ("latency_target", "latency_window", "latency_percentile", "latency_run")


def latency_target(ctx: Ctx, params: dict, notes: list, numjobs: int) -> None:
    """fio's latency_target (a time, microseconds without a unit), latency_window (the same), latency_percentile
    (0-100, default 100) and latency_run -> the access workload's latency_target (engine: access/lattarget.rs)."""
    opt = ctx.job.get("latency_target")
    target_ns = 0
    if opt is not None:
        try:
            target_ns = int(round(parse_fio_time_s(opt.value or "", default_unit="us") * 1e9))
        except ValueError as exc:
            ctx.fail(opt, str(exc))
        if target_ns >= 1 << 62:
            ctx.fail(opt, "at most 2^62 nanoseconds")
    if not target_ns:
        given = [ctx.job.get(o).as_written for o in _LAT_OPTS[1:] if ctx.job.get(o) is not None]
        if given:
            notes.append(f"{', '.join(given)}: without a latency_target fio searches no queue depth; nor does fsmeter")
        return
    out: dict = {"target_ns": target_ns}
    win = ctx.job.get("latency_window")
    if win is not None:
        try:
            out["window_ns"] = int(round(parse_fio_time_s(win.value or "", default_unit="us") * 1e9))
        except ValueError as exc:
            ctx.fail(win, str(exc))
        if out["window_ns"] >= 1 << 62:
            ctx.fail(win, "at most 2^62 nanoseconds")
    pct = ctx.job.get("latency_percentile")
    if pct is not None:
        try:
            v = fio_float(pct.value or "")
        except ValueError:
            ctx.fail(pct, "give a percentage between 0 and 100 (e.g. 99.9)")
        if not 0.0 <= v <= 100.0:
            ctx.fail(pct, "give a percentage between 0 and 100 (e.g. 99.9)")
        out["percentile"] = v
    out["run"] = ctx.flag("latency_run")
    clash = None
    if ctx.int("loops", 1, 1) > 1:
        clash = (
            ctx.job.get("loops"),
            "with latency_target is not supported by fsmeter (planned): fio starts the "
            "search again at depth 1 on each loop, and fsmeter runs the loops as one pass; use loops=1 (or a "
            "larger size)",
        )
    elif numjobs > 1:
        clash = (
            ctx.job.get("numjobs"),
            f"numjobs={numjobs} with latency_target is not supported by fsmeter "
            "(planned): each clone searches its own depth and resets its own statistics; use numjobs=1",
        )
    else:
        for o in ("rate", "rate_iops", "rate_min", "ratemin", "rate_iops_min", "thinktime", "flow"):
            if ctx.job.get(o) is not None and params.get("pace"):
                clash = (ctx.job.get(o), "with latency_target is not supported by fsmeter (planned): remove one")
                break
        else:
            if params.get("steadystate"):
                clash = (
                    ctx.job.get(alias(ctx, ("steadystate_duration", "ss_dur"))),
                    "with latency_target is not supported by fsmeter (planned): remove one",
                )
            elif params.get("interval_lat") or params.get("io_log"):
                clash = (
                    opt,
                    "with write_lat_log is not supported by fsmeter (planned): the final window restarts "
                    "the statistics mid-run; remove write_lat_log",
                )
    if clash is not None:
        ctx.fail(*clash)
    params["latency_target"] = out
    pct_v = out.get("percentile", 100.0)
    notes.append(
        f"latency_target: the queue depth is searched for between 1 and iodepth={params['queue_depth']} as "
        f"fio searches it (a window of {out.get('window_ns', 0) / 1e9:g} s judged by the share of requests "
        f"within {target_ns / 1e3:g} us, {pct_v:g}% needed; doubling, then bisecting, draining on a miss)"
        + (
            "; latency_run: it goes on adjusting until the job's size or runtime ends, and everything is reported"
            if out["run"]
            else "; once the depth stops changing the statistics are reset and one more window runs at it: only "
            "that window is reported, as fio reports it (unless the job's size or runtime ends first)"
        )
    )


def steadystate(ctx: Ctx, notes: list) -> dict | None:
    """fio's steadystate (ss) = CRITERION:LIMIT[%], steadystate_duration (ss_dur), steadystate_ramp_time (ss_ramp),
    steadystate_check_interval (ss_interval); times in seconds unless a unit is given. Without a duration fio
    does not judge steady state (its default is 0)."""
    dur_key = alias(ctx, ("steadystate_duration", "ss_dur"))
    crit_key = alias(ctx, ("steadystate", "ss"))
    dur = 0.0
    if dur_key is not None:
        dur = ctx.time_s(dur_key) or 0.0
    if not dur:
        if crit_key is not None:
            notes.append(
                f"{ctx.job.get(crit_key).as_written}: without steadystate_duration (ss_dur) fio judges no "
                "steady state; nor does fsmeter"
            )
        return None
    crit_opt = ctx.job.get(crit_key) if crit_key else None
    text = (crit_opt.value or "").strip() if crit_opt is not None else "iops_slope:0.01%"
    kind, sep, lim = text.partition(":")
    kind = kind.strip()
    if kind not in ("iops", "iops_slope", "bw", "bw_slope", "lat", "lat_slope") or not sep:
        ctx.fail(
            crit_opt,
            "write CRITERION:LIMIT, CRITERION one of iops, iops_slope, bw, bw_slope, lat, lat_slope (e.g. iops:10%)",
        )
    lim = lim.strip()
    pct = lim.endswith("%")
    try:
        limit = fio_float(lim[:-1] if pct else lim)
    except ValueError:
        ctx.fail(crit_opt, f"{lim!r} is not a number: write e.g. {kind}:10% or {kind}:2")
    if not (limit >= 0) or limit == float("inf"):
        ctx.fail(crit_opt, "the limit must be a number >= 0")
    ramp_key = alias(ctx, ("steadystate_ramp_time", "ss_ramp"))
    iv_key = alias(ctx, ("steadystate_check_interval", "ss_interval"))
    interval = (ctx.time_s(iv_key) if iv_key else None) or 1.0
    if dur / interval > 100_000:
        ctx.fail(
            ctx.job.get(iv_key) or ctx.job.get(dur_key),
            "more than 100,000 samples in the window: make the check interval longer",
        )
    if dur / interval < 2:
        ctx.fail(
            ctx.job.get(dur_key),
            f"the window holds fewer than two samples of {interval:g} s: make it at least twice the check interval",
        )
    out = {
        "criterion": kind,
        "limit": limit,
        "pct": pct,
        "dur_s": dur,
        "interval_s": interval,
        "ramp_s": (ctx.time_s(ramp_key) if ramp_key else None) or 0.0,
        "group": ctx.flag("group_reporting"),
    }
    for key, v in ((dur_key, dur), (ramp_key, out["ramp_s"]), (iv_key, interval)):
        if v > MAX_DURATION_S:
            ctx.fail(ctx.job.get(key), f"at most {MAX_DURATION_S:.0f} s")
    what = {"bw": "bandwidth", "la": "mean completion latency (ns)"}.get(kind[:2], "IOPS")
    notes.append(
        f"steadystate={kind}:{lim}: every {interval:g} s the {what} "
        f"of {'the reporting group' if out['group'] else 'each thread'} is sampled; once {dur:g} s of samples "
        "(after the ramp) meet the criterion, it stops, as fio's does"
    )
    return out


#: fio's option -> (lowest, highest) of each value (prio levels 0-7, classes 1 real-time, 2 best-effort, 3 idle,
#: hints 0-1023: the kernel's ioprio fields).
_PRIO_RANGES = {
    "prio": (0, 7),
    "prioclass": (0, 3),
    "priohint": (0, 1023),
    "cmdprio_percentage": (0, 100),
    "cmdprio_class": (1, 3),
    "cmdprio": (0, 7),
    "cmdprio_hint": (0, 1023),
}


_CMDPRIO_OPTS = ("cmdprio_percentage", "cmdprio_class", "cmdprio", "cmdprio_hint", "cmdprio_bssplit")


def _ioprio_value(cls: int, level: int, hint: int) -> int:
    """The kernel's 16-bit ioprio: class in bits 13-15 (no class: best-effort, as fio's ioprio_value), hint in
    bits 3-12, level in bits 0-2."""
    return ((cls or 2) << 13) | (hint << 3) | level


def _prio_pair(ctx: Ctx, name: str, default: int) -> list:
    """An int[,int] option of fio's cmdprio: one value for reads and writes, or READ,WRITE (an empty side keeps
    the default)."""
    opt = ctx.job.get(name)
    if opt is None:
        return [default, default]
    lo, hi = _PRIO_RANGES[name]
    parts = [p.strip() for p in (opt.value or "").split(",")]
    if len(parts) == 1:
        parts = parts * 2
    if len(parts) != 2 or not any(parts):
        ctx.fail(opt, f"give a whole number from {lo} to {hi}, or READ,WRITE")
    out = []
    for p in parts:
        if p == "":
            out.append(default)
            continue
        try:
            v = parse_fio_int(p)
        except ValueError:
            v = -1
        if not lo <= v <= hi:
            ctx.fail(opt, f"{p!r}: give a whole number from {lo} to {hi}")
        out.append(v)
    return out


def _cmdprio_bssplit(ctx: Ctx, cls: list, level: list, hint: list) -> list:
    """cmdprio_bssplit=BS/PCT[/CLASS/LEVEL[/HINT]]:...[,WRITE LIST] -> per direction, the engine's rules. An entry
    without its own class and level takes cmdprio_class, cmdprio and cmdprio_hint; one list covers both
    directions, as in fio."""
    opt = ctx.job.get("cmdprio_bssplit")
    lists = [x.strip() for x in (opt.value or "").split(",")]
    if len(lists) == 1:
        lists = lists * 2
    if len(lists) > 3 or not any(lists):
        ctx.fail(opt, "write BS/PCT[/CLASS/LEVEL[/HINT]]:... for reads, then ,LIST for writes")
    out = [[], []]
    for d in (0, 1):
        for ent in filter(None, (e.strip() for e in lists[d].split(":"))):
            f = [x.strip() for x in ent.split("/")]
            if len(f) not in (2, 4, 5):
                ctx.fail(opt, f"{ent!r}: write BS/PCT, BS/PCT/CLASS/LEVEL or BS/PCT/CLASS/LEVEL/HINT")
            try:
                size = parse_fio_size(f[0], ctx.kb_base)
                nums = [parse_fio_int(x) for x in f[1:]]
            except ValueError:
                ctx.fail(opt, f"{ent!r}: a size, then whole numbers")
            for v, (lo, hi), what in zip(
                nums, ((0, 100), (0, 3), (0, 7), (0, 1023)), ("percentage", "class", "level", "hint")
            ):
                if not lo <= v <= hi:
                    ctx.fail(opt, f"{ent!r}: the {what} must be from {lo} to {hi}")
            if not 0 < size < 1 << 32:
                ctx.fail(opt, f"{ent!r}: the block size must be above 0 and below 4 GiB")
            if len(nums) == 1:
                value = _ioprio_value(cls[d], level[d], hint[d])
            else:
                value = _ioprio_value(nums[1], nums[2], nums[3] if len(nums) == 4 else 0)
            out[d].append({"size": size, "pct": nums[0], "ioprio": value})
        for s in {r["size"] for r in out[d]}:
            total = sum(r["pct"] for r in out[d] if r["size"] == s)
            if total > 100:
                ctx.fail(opt, f"the percentages for block size {s} add up to {total}: at most 100")
    return out


def ioprio(ctx: Ctx, engine: str, params: dict, notes: list) -> None:
    """fio's I/O priorities. prio/prioclass/priohint: the priority of each thread of the job (ioprio_set, as fio
    sets it on each job). cmdprio_percentage or cmdprio_bssplit (with cmdprio_class, default real-time, cmdprio
    and cmdprio_hint): a per-request priority on that share of the requests, as fio's io_uring and libaio engines
    set it (engines/cmdprio.c); fio has these options only with those engines."""
    given = [k for k in ("prio", "prioclass", "priohint") if ctx.job.get(k) is not None]
    spec: dict = {}
    if given:
        v = {k: ctx.int(k, 0, *_PRIO_RANGES[k]) for k in ("prio", "prioclass", "priohint")}
        spec["thread"] = _ioprio_value(v["prioclass"], v["prio"], v["priohint"])
    cmd = [k for k in _CMDPRIO_OPTS if ctx.job.get(k) is not None]
    if cmd:
        opt = ctx.job.get(cmd[0])
        if engine not in ("io_uring", "libaio"):
            ctx.fail(
                opt,
                f"an option of fio's io_uring and libaio engines (fio refuses it with ioengine={engine}): "
                "use ioengine=io_uring, or prio/prioclass for every request of the job",
            )
        pct, cls = _prio_pair(ctx, "cmdprio_percentage", 0), _prio_pair(ctx, "cmdprio_class", 1)
        level, hint = _prio_pair(ctx, "cmdprio", 0), _prio_pair(ctx, "cmdprio_hint", 0)
        if ctx.job.get("cmdprio_bssplit") is not None:
            if ctx.job.get("cmdprio_percentage") is not None:
                ctx.fail(
                    ctx.job.get("cmdprio_percentage"),
                    "cmdprio_percentage and cmdprio_bssplit exclude each other (as in fio): keep one",
                )
            rules = _cmdprio_bssplit(ctx, cls, level, hint)
        else:
            rules = [
                [{"size": 0, "pct": pct[d], "ioprio": _ioprio_value(cls[d], level[d], hint[d])}] if pct[d] else []
                for d in (0, 1)
            ]
        if any(r["pct"] for d in rules for r in d):
            spec["cmd"] = rules
            notes.append(
                "cmdprio: each request's priority is drawn as fio draws it and set on the request itself "
                "(io_uring's sqe.ioprio, libaio's aio_reqprio); counters.cmdprio_ios counts the measured requests "
                "that got one"
            )
    if spec:
        params["ioprio"] = spec
        notes.append(
            "I/O priorities take effect where the I/O scheduler or the device honours them (a tmpfs or "
            "page-cache hit has none to honour)"
        )
