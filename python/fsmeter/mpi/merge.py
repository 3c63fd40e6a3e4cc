"""One phase report out of the per-rank reports of an MPI run, aggregated as IOR and mdtest do.

Pure functions on plain dicts (no mpi4py): rank 0 calls :func:`merge_phase` on what it gathered,
and the tests call it on made-up ranks.

The definitions (docs/mpi.md):

- **Common clock.** Every rank notes its own CLOCK_MONOTONIC when it leaves the barrier that
  opens the phase (``barrier_mono_ns``); its measured window (the engine's ``window_mono_ns``) is
  placed on the common clock as ``window - barrier_mono_ns``. All ranks leave one barrier at
  the same moment up to the barrier's release skew (microseconds on one host, tens of
  microseconds over a fast network), so that skew is the clock error; no clock
  synchronisation between hosts is needed.
- **Rate** = total operations (or bytes) of all ranks / (latest end - earliest start) on that
  clock: IOR's ``aggFileSizeForBW / (max close end - min open start)`` and mdtest's barrier-to-
  barrier rate.
- **Per rank**: each rank's own rate over its own window; min, mean and max of those, and the
  first-done / last-done times (when the fastest and the slowest rank finished).
- **Latency**: the ranks' HDR histograms (every recorded bucket at the engine's precision,
  ``lat.hdr``) are summed bucket by bucket, and the percentiles are read from the sum with the
  rule of the hdrhistogram crate (the first bucket whose running count reaches ceil(q x count),
  at least 1; reported as that bucket's highest equivalent value, capped at the exact maximum).
  So they are the percentiles of one histogram of every operation, never an average of the
  ranks' percentiles. min, max and mean are exact; the standard deviation is pooled from the
  ranks' (count, mean, stdev).
- **Intervals**: the common time line is cut into ``interval_s`` slices from the earliest start;
  each rank's interval sample is added to the slice holding its midpoint, so the slices add up
  exactly to the totals.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

#: The percentiles every report carries, as (field, quantile).
PERCENTILES = (("p50_ns", 0.50), ("p90_ns", 0.90), ("p99_ns", 0.99), ("p999_ns", 0.999), ("p9999_ns", 0.9999))


# -- latency histograms ---------------------------------------------------------------------------
def add_buckets(parts: Iterable[Iterable]) -> list:
    """Sum [value, count] bucket lists that share one bucket grid; returns them sorted by value."""
    out: dict = {}
    for part in parts:
        for value, count in part or []:
            out[int(value)] = out.get(int(value), 0) + int(count)
    return [[v, c] for v, c in sorted(out.items()) if c > 0]


def value_at_quantile(hdr: list, quantile: float) -> int:
    """The hdrhistogram crate's value_at_quantile on [highest equivalent value, count] buckets."""
    total = sum(c for _, c in hdr)
    if total == 0:
        return 0
    want = max(1, math.ceil(min(quantile, 1.0) * total))
    running = 0
    for value, count in hdr:
        running += count
        if running >= want:
            return int(value)
    return int(hdr[-1][0])


def merge_lat(lats: list) -> dict:
    """One latency summary out of several ranks' summaries of the same operation kind."""
    lats = [x for x in lats if x and x.get("count")]
    if not lats:
        return {
            "count": 0,
            "min_ns": 0,
            "mean_ns": 0.0,
            "stdev_ns": 0.0,
            **{k: 0 for k, _ in PERCENTILES},
            "max_ns": 0,
            "buckets": [],
            "hdr": [],
        }
    count = sum(x["count"] for x in lats)
    mean = sum(x["mean_ns"] * x["count"] for x in lats) / count
    # Pooled variance (Chan, Golub and LeVeque 1979): within-rank plus between-rank spread.
    var = sum(x["count"] * (x["stdev_ns"] ** 2 + (x["mean_ns"] - mean) ** 2) for x in lats) / count
    hdr = add_buckets(x.get("hdr") for x in lats)
    if sum(c for _, c in hdr) != count:
        raise ValueError("latency histograms without their HDR buckets (lat.hdr) cannot be merged exactly")
    max_ns = max(x["max_ns"] for x in lats)
    out = {"count": count, "min_ns": min(x["min_ns"] for x in lats), "mean_ns": mean, "stdev_ns": math.sqrt(var)}
    for key, q in PERCENTILES:
        out[key] = min(value_at_quantile(hdr, q), max_ns)
    out["max_ns"] = max_ns
    out["buckets"] = add_buckets(x.get("buckets") for x in lats)
    out["hdr"] = hdr
    return out


# -- windows on the common clock ------------------------------------------------------------------
def rank_window_s(part: dict) -> tuple:
    """(start, end) of one rank's measured window, in seconds after it left the opening barrier."""
    rep, b = part["report"], part["barrier_mono_ns"]
    w = rep.get("window_mono_ns") or [0, 0]
    if w[1]:
        return (w[0] - b) / 1e9, (w[1] - b) / 1e9
    # A workload outside the shared harness: its window ends when run_phase returned.
    end = (part["returned_mono_ns"] - b) / 1e9
    return end - rep["elapsed_s"], end


def ior_rate(total: float, windows: list) -> float:
    """IOR's aggregate rate: the total over (latest end - earliest start)."""
    span = max(e for _, e in windows) - min(s for s, _ in windows)
    return total / span if span > 0 else 0.0


def _stats(xs: list) -> dict:
    return {"min": min(xs), "mean": sum(xs) / len(xs), "max": max(xs)}


def merge_intervals(parts: list, windows: list, start_s: float, end_s: float, interval_s: float) -> list:
    """The ranks' interval samples summed on common-clock slices of interval_s from start_s."""
    n = max(1, math.ceil((end_s - start_s) / interval_s - 1e-9))
    slices = [{"ops": 0, "bytes": 0, "ops_by_kind": {}, "units": None} for _ in range(n)]
    for part, (ws, _) in zip(parts, windows):
        for iv in part["report"].get("intervals") or []:
            mid = ws + iv["t_s"] - iv["dur_s"] / 2 - start_s
            k = min(n - 1, max(0, int(mid // interval_s)))
            sl = slices[k]
            sl["ops"] += iv["ops"]
            sl["bytes"] += iv["bytes"]
            for kind, c in (iv.get("ops_by_kind") or {}).items():
                sl["ops_by_kind"][kind] = sl["ops_by_kind"].get(kind, 0) + c
            if iv.get("units") is not None:
                sl["units"] = (sl["units"] or 0) + iv["units"]
    span = end_s - start_s
    out = []
    for k, sl in enumerate(slices):
        t_end = min(span, (k + 1) * interval_s)
        out.append({"t_s": t_end, "dur_s": t_end - k * interval_s, **sl})
    return out


# -- one phase ------------------------------------------------------------------------------------
def merge_phase(parts: list, interval_s: float, stonewall: dict | None = None) -> dict:
    """One phase report out of every rank's ``{rank, host, barrier_mono_ns, returned_mono_ns, report}``.

    The result has the shape of a single-process report (so the families' metrics read it as
    they are) plus ``mpi``: the per-rank figures and their spread.
    """
    parts = sorted(parts, key=lambda p: p["rank"])
    reps = [p["report"] for p in parts]
    windows = [rank_window_s(p) for p in parts]
    start_s, end_s = min(s for s, _ in windows), max(e for _, e in windows)
    elapsed = max(0.0, end_s - start_s)
    per_s = (lambda x: x / elapsed) if elapsed > 0 else (lambda x: 0.0)
    tops = sum(r["total"]["ops"] for r in reps)
    tbytes = sum(r["total"]["bytes"] for r in reps)
    kinds = sorted({k for r in reps for k in (r.get("ops") or {})})
    ops = {}
    for k in kinds:
        mine = [r["ops"][k] for r in reps if k in (r.get("ops") or {})]
        c, b = sum(o["count"] for o in mine), sum(o["bytes"] for o in mine)
        ops[k] = {
            "count": c,
            "bytes": b,
            "ops_per_s": per_s(c),
            "bytes_per_s": per_s(b),
            "lat": merge_lat([o["lat"] for o in mine]),
        }
    counters: dict = {}
    for r in reps:
        for k, v in (r.get("counters") or {}).items():
            counters[k] = counters.get(k, 0) + v
    cpu_keys = ("user_s", "sys_s", "process_pct")
    cpu = {k: sum((r.get("cpu") or {}).get(k, 0.0) for r in reps) for k in cpu_keys}
    for k in {k for r in reps for k in (r.get("cpu") or {})} - set(cpu_keys):  # system-wide: the mean over ranks
        cpu[k] = sum((r.get("cpu") or {}).get(k, 0.0) for r in reps) / len(reps)
    per_rank = []
    for p, r, (s, e) in zip(parts, reps, windows):
        el = e - s
        per_rank.append(
            {
                "rank": p["rank"],
                "host": p["host"],
                "start_s": s,
                "end_s": e,
                "elapsed_s": el,
                "ops": r["total"]["ops"],
                "bytes": r["total"]["bytes"],
                "ops_per_s": r["total"]["ops"] / el if el > 0 else 0.0,
                "bytes_per_s": r["total"]["bytes"] / el if el > 0 else 0.0,
                "interrupted": bool(r.get("interrupted")),
                # started at the second barrier, set up (run.py's at_start), or not held
                "held_start": bool(p.get("held")),
            }
        )
    rates = [x["ops_per_s"] for x in per_rank]
    mpi = {
        "ranks": len(parts),
        "hosts": sorted({p["host"] for p in parts}),
        "start_s": start_s,
        "end_s": end_s,
        "first_done_s": min(e for _, e in windows),
        "last_done_s": end_s,
        "ops_per_rank": _stats([x["ops"] for x in per_rank]),
        "rank_ops_per_s": _stats(rates),
        "rank_bytes_per_s": _stats([x["bytes_per_s"] for x in per_rank]),
        # Imbalance: how far the slowest rank is below the fastest, in % of the fastest.
        "imbalance_pct": (100.0 * (max(rates) - min(rates)) / max(rates)) if max(rates) > 0 else 0.0,
        "per_rank": per_rank,
    }
    if stonewall is not None:
        mpi["stonewall"] = stonewall
    warnings = []
    for p, r in zip(parts, reps):
        warnings += [f"rank {p['rank']}: {w}" for w in r.get("warnings") or []]
    held = [x["rank"] for x in per_rank if x["held_start"]]
    if held and len(held) < len(parts):
        # Some ranks waited at the start barrier until the others had run their whole phase.
        warnings.append(
            f"ranks {held} held at the phase's start and the others never did: those ranks started "
            "after the others had finished, so the phase's rate and imbalance are not a common run"
        )
    return {
        "phase": reps[0].get("phase"),
        "interrupted": any(r.get("interrupted") for r in reps),
        "threads": sum(r.get("threads", 0) for r in reps),
        "warmup_s": max(r.get("warmup_s", 0.0) for r in reps),
        "elapsed_s": elapsed,
        "total": {"ops": tops, "bytes": tbytes, "ops_per_s": per_s(tops), "bytes_per_s": per_s(tbytes)},
        "ops": ops,
        "intervals": merge_intervals(parts, windows, start_s, end_s, interval_s) if elapsed > 0 else [],
        "cpu": cpu,
        "counters": counters,
        "extra": reps[0].get("extra"),  # rank 0's details (each rank's own are alike by construction)
        "warnings": warnings,
        "mpi": mpi,
    }


def access_extra(extras: list, shared_file: bool = False) -> dict | None:
    """The access family's details for a merged phase: rank 0's, with what differs by rank added up
    over the ranks: each mix entry's request counts; the request buffers' bytes, bytes mapped and
    bytes on huge pages (None when a rank could not tell); and the O_DIRECT checks: unaligned
    requests or a possible buffered fallback on any rank, and the pages that entered the page
    cache, summed over ranks that each count their own files, or the largest count when the ranks
    share files (each rank counts the whole shared file, the others' pages too)."""
    if all(e is None for e in extras):
        return None
    extras = [e if isinstance(e, dict) else {} for e in extras]
    out = dict(extras[0])
    mixes = [e.get("mix") for e in extras]
    if mixes and all(isinstance(m, list) and len(m) == len(mixes[0]) for m in mixes):
        out["mix"] = [
            {**rows[0], **{k: sum(r.get(k) or 0 for r in rows) for k in ("reads", "writes", "random", "sequential")}}
            for rows in zip(*mixes)
        ]
    bufs = [e.get("buffer_memory") for e in extras]
    if bufs and all(isinstance(b, dict) for b in bufs):
        huge = [b.get("huge_bytes") for b in bufs]
        out["buffer_memory"] = {
            **bufs[0],
            "bytes": sum(b.get("bytes") or 0 for b in bufs),
            "mapped_bytes": sum(b.get("mapped_bytes") or 0 for b in bufs),
            "huge_bytes": None if any(h is None for h in huge) else sum(huge),
        }
    dios = [e.get("direct_io") for e in extras]
    if dios and all(isinstance(d, dict) for d in dios):
        added = [d.get("page_cache_pages_added") for d in dios]
        out["direct_io"] = {
            **dios[0],
            "unaligned_requests": any(d.get("unaligned_requests") for d in dios),
            "page_cache_pages_added": None
            if any(a is None for a in added)
            else (max(added) if shared_file else sum(added)),
            "buffered_fallback_possible": any(d.get("buffered_fallback_possible") for d in dios),
        }
    return out


def fileset_extra(merged: dict, extras: list) -> dict:
    """The fileset family's details for a merged phase: its PostMark rates recomputed from the merged
    operations and counters over the merged window (as the engine computes one rank's), running
    totals and live files summed over the ranks."""
    el = merged["elapsed_s"]
    rate = (lambda x: x / el) if el > 0 else (lambda x: 0.0)
    op = lambda k: merged["ops"].get(k) or {"count": 0, "bytes": 0}  # noqa: E731
    out = dict(extras[0] or {})
    out["rates"] = {
        "transactions_per_s": rate(merged["counters"].get("transactions_measured", 0)),
        "files_created_per_s": rate(op("create")["count"]),
        "files_read_per_s": rate(op("read")["count"]),
        "files_appended_per_s": rate(op("append")["count"]),
        "files_deleted_per_s": rate(op("delete")["count"]),
        "bytes_read_per_s": rate(op("read")["bytes"]),
        "bytes_written_per_s": rate(op("create")["bytes"] + op("append")["bytes"]),
    }
    totals: dict = {}
    for e in extras:
        for k, v in ((e or {}).get("run_totals") or {}).items():
            if isinstance(v, (int, float)):
                totals[k] = totals.get(k, 0) + v
    out["run_totals"] = totals
    out["files_live"] = sum((e or {}).get("files_live") or 0 for e in extras)
    out["threads"] = sum((e or {}).get("threads") or 0 for e in extras)
    return out


def tree_extra(extras: list) -> dict:
    """The tree family's details for a merged phase: rank 0's shape of the trees, with the trees and
    the per-tree file counts (and ranges) of every rank, in rank order."""
    out = dict(extras[0] or {})
    extras = [e or {} for e in extras]
    out["trees"] = sum(e.get("trees") or 0 for e in extras)
    if any("files_by_tree" in e for e in extras):
        out["files_by_tree"] = [x for e in extras for x in e.get("files_by_tree") or []]
    if any("file_range" in e for e in extras):  # a rank without one visited every file of its trees
        out["file_range"] = [
            r for e in extras for r in e.get("file_range") or [[0, e.get("files_per_tree")]] * (e.get("trees") or 0)
        ]
    return out


def iozone_extra(extras: list) -> dict:
    """The iozone grid of all ranks, cell by cell: iozone's throughput-mode rule ("children see
    throughput": the sum of each rank's own rate for that test and cell). The ranks run their grids
    one cell after another without a barrier per cell, so there is no common window per cell to
    divide by; the sum is what iozone -t itself reports. ops and bytes are summed, time_s is the
    slowest rank's, and every merged result keeps the per-rank minimum and maximum."""
    base = dict(extras[0] or {})
    grids = [{(c["file_size"], c["record_size"]): c for c in (e or {}).get("cells", [])} for e in extras]
    cells, partial = [], 0
    for c0 in base.get("cells", []):
        key = (c0["file_size"], c0["record_size"])
        mine = [g.get(key) for g in grids]
        cell = {k: v for k, v in c0.items() if k != "results"}
        statuses = [c["status"] if c else "missing" for c in mine]
        cell["status"] = next((st for st in ("failed", "interrupted", "missing") if st in statuses), "ok")
        errors = [c.get("error") for c in mine if c and c.get("error")]
        if errors:
            cell["error"] = errors[0]
        results = {}
        for col in c0.get("results", {}):
            per = [c["results"].get(col) if c else None for c in mine]
            if any(r is None for r in per):
                partial += 1
                continue
            kb = [r["KB_per_s"] for r in per]
            results[col] = {
                "KB_per_s": sum(kb),
                "ops_per_s": sum(r["ops_per_s"] for r in per),
                "time_s": max(r["time_s"] for r in per),
                "ops": sum(r["ops"] for r in per),
                "bytes": sum(r["bytes"] for r in per),
                "rank_KB_per_s_min": min(kb),
                "rank_KB_per_s_max": max(kb),
            }
        cell["results"] = results
        cells.append(cell)
    base["cells"] = cells
    base["merge"] = {
        "rule": "sum of the ranks' rates per cell and test (iozone -t: children see throughput)",
        "ranks": len(extras),
        "results_left_out": partial,
    }
    return base


def mix_extra(parts: list, crossover_jpm_per_task: float) -> dict:
    """The AIM7 subruns of all ranks: for each task count every rank ran, all ranks' jobs over the
    common window (earliest release to latest end, each rank's subrun placed on the clock of the
    barrier opening the phase): IOR's rule, as JPM. `tasks` stays per rank (`tasks_total` is the
    sum); peak and crossover are found again on the merged subruns with the engine's rule."""
    parts = sorted(parts, key=lambda p: p["rank"])
    extras = [p["report"].get("extra") or {} for p in parts]
    by_rank = [{sr["tasks"]: sr for sr in e.get("subruns", [])} for e in extras]
    out = dict(extras[0])
    merged = []
    for sr0 in extras[0].get("subruns", []):
        n = sr0["tasks"]
        mine = [b.get(n) for b in by_rank]
        if any(m is None for m in mine):
            continue
        starts = [(m["release_mono_ns"] - p["barrier_mono_ns"]) / 1e9 for m, p in zip(mine, parts)]
        ends = [(m["end_mono_ns"] - p["barrier_mono_ns"]) / 1e9 for m, p in zip(mine, parts)]
        real = max(ends) - min(starts)
        jobs_total = sum(m["jobs_per_task"] * n for m in mine)
        tasks_total = n * len(mine)
        jpm = jobs_total / real * 60.0 if real > 0 else 0.0
        jobs: dict = {}
        for m in mine:
            for name, j in (m.get("jobs") or {}).items():
                a = jobs.setdefault(
                    name,
                    {**j, "runs": 0, "total_s": 0.0, "units": 0, "bytes_read": 0, "bytes_written": 0, "max_ms": 0.0},
                )
                for k in ("runs", "total_s", "units", "bytes_read", "bytes_written"):
                    a[k] += j[k]
                a["max_ms"] = max(a["max_ms"], j["max_ms"])
        for a in jobs.values():
            a["mean_ms"] = a["total_s"] * 1e3 / a["runs"] if a["runs"] else 0.0
        rank_jpm = [m["jpm"] for m in mine]
        merged.append(
            {
                **sr0,
                "real_time_s": real,
                "jpm": jpm,
                "jpm_per_task": jpm / tasks_total if tasks_total else 0.0,
                "tasks_total": tasks_total,
                "ranks": len(mine),
                "rank_jpm_min": min(rank_jpm),
                "rank_jpm_max": max(rank_jpm),
                "start_s": min(starts),
                "end_s": max(ends),
                "task_time_min_s": min(m["task_time_min_s"] for m in mine),
                "task_time_max_s": max(m["task_time_max_s"] for m in mine),
                "user_s": sum(m["user_s"] for m in mine),
                "sys_s": sum(m["sys_s"] for m in mine),
                "tasks_rss_max_bytes": sum(m["tasks_rss_max_bytes"] for m in mine),
                "tasks_pss_max_bytes": sum(m["tasks_pss_max_bytes"] for m in mine),
                "disk_kib_per_s": sum(m["disk_kib_per_s"] for m in mine),
                "jobs": jobs,
                "interrupted": any(m["interrupted"] for m in mine),
            }
        )
    peak = max(merged, key=lambda r: r["jpm"], default=None)
    cross = next((r["tasks"] for r in merged if r["jpm_per_task"] <= crossover_jpm_per_task), None)
    out.update(
        {
            "subruns": merged,
            "peak_jpm": peak["jpm"] if peak else 0.0,
            "peak_tasks": peak["tasks"] if peak else 0,
            "crossover_tasks": cross,
            "tasks_rss_max_bytes": max((r["tasks_rss_max_bytes"] for r in merged), default=None),
            "tasks_pss_max_bytes": max((r["tasks_pss_max_bytes"] for r in merged), default=None),
            "merge": {
                "rule": "per task count: all ranks' jobs / (latest end - earliest start) x 60 (IOR's "
                "rule); tasks are per rank, tasks_total all ranks'; the crossover is per task "
                "of all ranks",
                "ranks": len(parts),
                "subruns_left_out": len(extras[0].get("subruns", [])) - len(merged),
            },
        }
    )
    return out


def macro_extra(extras: list) -> dict:
    """cp / untar / rm in every rank at once: the phase takes as long as its slowest rank (all
    start after one barrier), so real_s is the ranks' maximum; user and sys CPU, bytes and files
    are summed; cp's MB/s is all ranks' bytes over that time (IOR's rule, up to the barrier's
    release skew)."""
    extras = [e or {} for e in extras]
    out = dict(extras[0])
    if "real_s" not in out:
        return out
    reals = [e.get("real_s", 0.0) for e in extras]
    real = max(reals)
    total = sum(e.get("bytes", 0) for e in extras)
    out.update(
        {
            "real_s": real,
            "session_real_s": max(e.get("session_real_s", 0.0) for e in extras),
            "user_s": sum(e.get("user_s", 0.0) for e in extras),
            "sys_s": sum(e.get("sys_s", 0.0) for e in extras),
            "bytes": total,
            "files": sum(e.get("files", 0) for e in extras),
            "MB_per_s": total / 1e6 / real if real > 0 else 0.0,
            "rank_real_s_min": min(reals),
            "rank_real_s_max": real,
            "merge": {
                "rule": "real_s: the slowest rank's; CPU, bytes, files summed; MB/s = all bytes / real_s",
                "ranks": len(extras),
            },
        }
    )
    return out


def merge_regime(parts: list) -> dict:
    """The regime of a merged phase (fsmeter.regime) out of each rank's ``report["regime"]``.

    Every rank of a host watched the same machine, its host's other ranks counted as its own
    (run.py hands their process ids to the watch), and the same block device. So, per host: others'
    CPU share and own CPU time are the largest its ranks saw (the widest window), and the device's bytes are the
    largest delta its ranks saw (each rank's snapshots cover every rank's reads on that device).
    Over the hosts: others' share is the busiest host's, busy when any host is; the engine's
    bytes read and written are summed over the ranks, the device's over the hosts (unknown when
    any host's is), and the cache shares are recomputed from those sums by the single-process rule.
    """
    from fsmeter.regime import cache_read_share, cache_write_share

    regs = [(p["host"], (p["report"].get("regime") or {})) for p in sorted(parts, key=lambda p: p["rank"])]
    by_host: dict = {}
    for host, reg in regs:
        by_host.setdefault(host, []).append(reg)
    hosts: dict = {}
    for host, rs in by_host.items():
        shares = [r["other_cpu_share"] for r in rs if r.get("other_cpu_share") is not None]
        dev_rd = [r.get("device_read_bytes") for r in rs]
        dev_wr = [r.get("device_write_bytes") for r in rs]
        own = [float(r["own_cpu_s"]) for r in rs if r.get("own_cpu_s") is not None]
        hosts[host] = {
            "device": rs[0].get("device"),
            "cpus": rs[0].get("cpus"),
            "own_cpu_s": max(own) if own else None,
            "other_cpu_share": max(shares) if shares else None,
            "busy": any(r.get("busy") for r in rs) if any(r.get("busy") is not None for r in rs) else None,
            "device_read_bytes": None if None in dev_rd else max(dev_rd),
            "device_write_bytes": None if None in dev_wr else max(dev_wr),
        }
    first = regs[0][1] if regs else {}
    shares = [h["other_cpu_share"] for h in hosts.values() if h["other_cpu_share"] is not None]
    busy = [h["busy"] for h in hosts.values() if h["busy"] is not None]
    total = lambda key: sum(int(r.get(key) or 0) for _, r in regs)  # noqa: E731
    dev_rd = [h["device_read_bytes"] for h in hosts.values()]
    dev_wr = [h["device_write_bytes"] for h in hosts.values()]
    out = {
        "device": first.get("device"),
        "wall_s": max((r["wall_s"] for _, r in regs if r.get("wall_s") is not None), default=None),
        "cpus": first.get("cpus"),
        "own_cpu_s": round(sum(h["own_cpu_s"] or 0.0 for h in hosts.values()), 3),
        "other_cpu_share": max(shares) if shares else None,
        "busy": any(busy) if busy else None,
        "read_bytes": total("read_bytes"),
        "write_bytes": total("write_bytes"),
        "process_read_bytes": total("process_read_bytes"),
        "process_write_bytes": total("process_write_bytes"),
        "device_read_bytes": None if not hosts or None in dev_rd else sum(dev_rd),
        "device_write_bytes": None if not hosts or None in dev_wr else sum(dev_wr),
    }
    out["cache_read_share"] = cache_read_share(out["read_bytes"], out["device_read_bytes"])
    out["cache_write_share"] = cache_write_share(out["write_bytes"], out["device_write_bytes"])
    out["hosts"] = hosts
    return out


def join_consecutive(first: dict, then: dict, barrier_mono_ns: int, interval_s: float) -> dict:
    """One rank's phase report out of two consecutive engine runs (a stonewalled run and its
    wear-out): operations, bytes and counters summed, latency histograms merged exactly, the
    window from the first's start to the second's end, interval samples on that window."""
    parts = [
        {"rank": i, "host": "", "barrier_mono_ns": barrier_mono_ns, "returned_mono_ns": 0, "report": r}
        for i, r in enumerate((first, then))
    ]
    out = merge_phase(parts, interval_s)
    out.pop("mpi")
    out["warnings"] = list(first.get("warnings") or []) + list(then.get("warnings") or [])
    out["window_mono_ns"] = [first["window_mono_ns"][0], then["window_mono_ns"][1]]
    out["extra"] = first.get("extra")
    return out


__all__ = [
    "add_buckets",
    "fileset_extra",
    "ior_rate",
    "iozone_extra",
    "join_consecutive",
    "macro_extra",
    "merge_intervals",
    "merge_lat",
    "merge_phase",
    "merge_regime",
    "mix_extra",
    "rank_window_s",
    "tree_extra",
    "value_at_quantile",
]
