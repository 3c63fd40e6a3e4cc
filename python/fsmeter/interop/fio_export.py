"""fio-shaped JSON out of a stored campaign: one document for the whole campaign, or one file per cell laid out
as bench-fio lays out its results, so that fio-plot and fio's own scripts read them.

What each field is and where it comes from is in docs/fio.md; the rules that matter:

- only access workloads are exported, and only those fio can express (one rw pattern, one read share and one
  random share for the whole mix); the others are listed with the reason, never written wrongly;
- ``job options`` carry what fio would have printed for the equivalent job (rw, bs or bssplit, rwmixread,
  iodepth, numjobs, ioengine, direct, size, runtime, ...);
- a cell's kept trials are pooled into one job (bytes, I/Os and measured time summed; latency moments pooled);
- json+ ``bins`` are the engine's stored HDR buckets, keyed by their upper bound in ns, counts exact.
"""

from __future__ import annotations

import errno
import json
import math
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsmeter
from fsmeter.errors import UserError
from fsmeter.stats.kept import is_kept
from fsmeter.store import default_db_path, open_store

FIO_FORMAT = "fsmeter-fio-json"
#: Version of the fio-json documents. 1: jobs[] with read/write/trim, clat_ns/lat_ns/slat_ns.
#: 2: job options mapped to fio's (rw, bs, iodepth, numjobs, ...), latency_ns/us/ms, iops/bw sample
#: statistics, json+ bins, --split layout.
FIO_VERSION = 2
#: fio's percentile keys (fio prints them with six decimals) and the store columns they come from.
FIO_PERCENTILES = {
    "50.000000": "p50_ns",
    "90.000000": "p90_ns",
    "99.000000": "p99_ns",
    "99.900000": "p999_ns",
    "99.990000": "p9999_ns",
}
ACCESS_FAMILY = "access"
#: Factors that become fio job options rather than part of a configuration's name.
FIO_FACTORS = {"threads": "numjobs", "queue_depth": "iodepth"}
#: fio's latency distribution keys (ns and us: upper bounds in that unit; ms: the same plus 2000 and >=2000).
_LAT_KEYS = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"]


# -- access parameters -> fio options ------------------------------------------------------------------------
def fio_size(n: int) -> str:
    """Bytes as fio writes sizes in its job options (kb_base=1024): 4096 -> '4k', 1536 -> '1536'."""
    for suffix, mult in (("t", 1 << 40), ("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult}{suffix}"
    return str(n)


def fio_options(params: dict, settings: dict) -> tuple:
    """The fio job options of an access workload (engine spec `params`, job `settings`), or (None, reason)
    when fio has no equivalent. Values are strings, as fio prints them."""
    entries = params.get("entries") or []
    if not entries:
        return None, "no access entries recorded"
    engine = params.get("fio_engine", "data")
    if engine in ("filecreate", "filestat", "filedelete", "dircreate", "dirstat", "dirdelete"):
        return None, (
            f"it runs fio's {engine} engine: its creates, stats or removals have no read or write figures in fio's JSON"
        )
    reads = {float(e["read_pct"]) for e in entries}
    rands = {float(e.get("random_pct", 100.0)) for e in entries}
    if len(reads) > 1:
        return None, "its entries have different read percentages (fio has one rwmixread per job)"
    if len(rands) > 1:
        return None, "its entries have different random percentages (fio has one percentage_random per job)"
    read_pct, rand_pct = reads.pop(), rands.pop()
    random = rand_pct > 0
    if read_pct >= 100:
        rw = "randread" if random else "read"
    elif read_pct <= 0:
        rw = "randwrite" if random else "write"
    else:
        rw = "randrw" if random else "rw"
    opts: dict = {"rw": rw}
    total_w = sum(float(e["weight"]) for e in entries)
    sizes: dict = {}
    for e in entries:
        sizes[int(e["size"])] = sizes.get(int(e["size"]), 0.0) + float(e["weight"])
    if len(sizes) == 1:
        opts["bs"] = fio_size(next(iter(sizes)))
    else:
        pct = {s: 100.0 * w / total_w for s, w in sizes.items()}
        if any(p != int(p) for p in pct.values()):
            return None, "its request-size weights are not whole percentages (fio's bssplit takes integers)"
        opts["bssplit"] = ":".join(f"{fio_size(s)}/{int(p)}" for s, p in sorted(pct.items()) if p > 0)
        opts["bs"] = fio_size(min(sizes))
    if rw in ("rw", "randrw"):
        opts["rwmixread"] = f"{read_pct:g}"
    if random and rand_pct < 100:
        opts["percentage_random"] = f"{rand_pct:g}"
    qd = int(params.get("queue_depth", 1))
    backend = settings.get("backend", "psync")
    opts["ioengine"] = (
        engine
        if engine != "data"
        else {"io_uring": "io_uring", "libaio": "libaio", "null": "null", "mmap": "mmap", "libpmem": "libpmem"}.get(
            backend, "psync"
        )
    )
    opts["iodepth"] = str(qd)
    opts["numjobs"] = str(int(settings.get("threads", 1)))
    opts["direct"] = "1" if params.get("direct") else "0"
    nfiles, fsize = int(params.get("file_count", 1)), int(params.get("file_size", 0))
    if params.get("thread_files"):  # fio's per-job files: size and nrfiles are per clone
        nfiles = max(1, nfiles // max(1, int(settings.get("threads", 1))))
    opts["size"] = fio_size(nfiles * fsize)
    if nfiles > 1:
        opts["nrfiles"] = str(nfiles)
        opts["filesize"] = fio_size(fsize)
    if params.get("offset"):
        opts["offset"] = fio_size(int(params["offset"]))
    align = int(params.get("alignment", 512))
    if random and align != min(sizes):
        opts["blockalign"] = fio_size(align)
    if params.get("duration_s") is not None:
        opts["runtime"] = f"{float(params['duration_s']):g}"
        if params.get("total_bytes") is None:
            opts["time_based"] = "1"
    if params.get("total_bytes") is not None:
        opts["io_size"] = fio_size(int(params["total_bytes"]) // max(1, int(settings.get("threads", 1))))
    if float(params.get("warmup_s") or 0) > 0:
        opts["ramp_time"] = f"{float(params['warmup_s']):g}"
    if int(params.get("fsync_every") or 0) > 0:
        opts["fsync"] = str(int(params["fsync_every"]))
    if params.get("fsync_end"):
        opts["end_fsync"] = "1"
    if random and not params.get("random_map"):
        opts["norandommap"] = "1"  # fsmeter drew random offsets with replacement
    spr = params.get("sprandom")
    if spr:  # fio's sprandom: fio sets io_size to the physical size of min(file, io_size) itself
        opts["sprandom"] = "1"
        opts["spr_op"] = f"{float(spr.get('over_provisioning', 0.15)):g}"
        opts["spr_num_regions"] = str(int(spr.get("regions", 100)))
        if int(spr.get("cache_size") or 0):
            opts["spr_cs"] = str(int(spr["cache_size"]))
        opts.pop("io_size", None)
        if int(spr.get("logical_size") or 0):
            opts["io_size"] = fio_size(int(spr["logical_size"]))
    if "seed" in settings:
        opts["randseed"] = str(settings["seed"])
    return opts, None


def _job_of(workload: str, extra: str | None) -> tuple:
    """(family, engine workload spec, settings) of a stored trial: the recorded job, completed by the named
    workload's parameters and the family defaults when the record is partial."""
    try:
        job = json.loads(extra or "{}").get("job") or {}
    except ValueError:
        job = {}
    rec = dict(job.get("workload") or {})
    settings = {k: job[k] for k in ("threads", "seed", "backend") if k in job}
    fam = rec.get("family")
    try:
        from fsmeter.spec import load_workload

        d = load_workload(workload)
        fam = fam or d.family.name
        if fam == ACCESS_FAMILY and d.family.name == ACCESS_FAMILY:
            merged = {**d.params, **{k: v for k, v in rec.items() if k != "family"}}
            rec = d.family.params(**merged).engine_spec()
            settings = {**d.settings, **settings}
    except Exception:  # a workload this fsmeter does not know: use what was recorded
        pass
    return fam, rec, settings


# -- per-direction blocks --------------------------------------------------------------------------------------
def _pool_lat(lats: list) -> dict:
    """Pooled latency moments of several trials' summaries (counts add, means weighted, variances combined)."""
    lats = [x for x in lats if x and x.get("count")]
    n = sum(int(x["count"]) for x in lats)
    if not n:
        return {}
    mean = sum(x["count"] * float(x["mean_ns"]) for x in lats) / n
    ex2 = sum(x["count"] * (float(x.get("stdev_ns") or 0) ** 2 + float(x["mean_ns"]) ** 2) for x in lats) / n
    out = {
        "count": n,
        "min_ns": min(int(x["min_ns"]) for x in lats),
        "max_ns": max(int(x["max_ns"]) for x in lats),
        "mean_ns": mean,
        "stdev_ns": math.sqrt(max(0.0, ex2 - mean * mean)),
    }
    if len(lats) == 1:  # one trial: its own figures, not recomputed
        out["mean_ns"], out["stdev_ns"] = float(lats[0]["mean_ns"]), float(lats[0].get("stdev_ns") or 0.0)
    # Percentiles: count-weighted mean of each trial's HDR percentile (one trial: exact).
    for col in FIO_PERCENTILES.values():
        out[col] = int(round(sum(x["count"] * float(x.get(col) or 0) for x in lats) / n))
    buckets: dict = {}
    for x in lats:
        for upper, cnt in x.get("buckets") or []:
            buckets[int(upper)] = buckets.get(int(upper), 0) + int(cnt)
    out["buckets"] = sorted(buckets.items())
    return out


def _lat_block(lat: dict, percentiles: bool, bins: bool) -> dict:
    if not lat:
        out = {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
        if percentiles:
            out["percentile"] = {k: 0 for k in FIO_PERCENTILES}
        return out
    out = {
        "min": int(lat.get("min_ns") or 0),
        "max": int(lat.get("max_ns") or 0),
        "mean": float(lat.get("mean_ns") or 0.0),
        "stddev": float(lat.get("stdev_ns") or 0.0),
        "N": int(lat.get("count") or 0),
    }
    if percentiles:
        out["percentile"] = {k: int(lat.get(col) or 0) for k, col in FIO_PERCENTILES.items()}
    if bins and lat.get("buckets"):
        # fio_jsonplus_clat2csv needs at least one bin when the key is there: only written when I/O was done.
        out["bins"] = {str(int(u)): int(c) for u, c in lat["buckets"] if int(c) > 0}
    return out


def _samples(reports: list, direction: str) -> list:
    """Per-interval IOPS of one direction over every report (interval ops by kind; else the direction's share)."""
    out = []
    for rep in reports:
        o = (rep.get("ops") or {}).get(direction) or {}
        tot = (rep.get("total") or {}).get("ops") or 0
        share = (o.get("count") or 0) / tot if tot else 0.0
        for iv in rep.get("intervals") or []:
            dur = float(iv.get("dur_s") or 0)
            if dur <= 0:
                continue
            by_kind = iv.get("ops_by_kind")
            n = by_kind.get(direction, 0) if isinstance(by_kind, dict) else (iv.get("ops") or 0) * share
            out.append(n / dur)
    return out


def _stats(xs: list, prefix: str) -> dict:
    if not xs:
        return {
            f"{prefix}_min": 0,
            f"{prefix}_max": 0,
            f"{prefix}_mean": 0.0,
            f"{prefix}_stddev": 0.0,
            f"{prefix}_samples": 0,
        }
    return {
        f"{prefix}_min": min(xs),
        f"{prefix}_max": max(xs),
        f"{prefix}_mean": statistics.fmean(xs),
        f"{prefix}_stddev": statistics.stdev(xs) if len(xs) > 1 else 0.0,
        f"{prefix}_samples": len(xs),
    }


def io_block(reports: list, direction: str, bins: bool = False) -> dict:
    """fio's per-direction object pooled over `reports` (engine phase reports): bytes, I/Os and measured time
    summed, so that bw = io_bytes / runtime as in one fio run."""
    ops = [(r.get("ops") or {}).get(direction) for r in reports]
    done = [o for o in ops if o and o.get("count")]
    runtime_s = sum(float(r.get("elapsed_s") or 0.0) for r in reports) if done else 0.0
    io_bytes = sum(int(o.get("bytes") or 0) for o in done)
    n = sum(int(o.get("count") or 0) for o in done)
    bw_bytes = int(round(io_bytes / runtime_s)) if runtime_s else 0
    lat = _pool_lat([o.get("lat") for o in done])
    iops = _samples(reports, direction) if done else []
    per_op = io_bytes / n if n else 0.0
    bw_kib = [x * per_op / 1024 for x in iops]
    block = {
        "io_bytes": io_bytes,
        "io_kbytes": io_bytes // 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes // 1024,
        "iops": n / runtime_s if runtime_s else 0.0,
        "runtime": int(round(runtime_s * 1000)),
        "total_ios": n,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": _lat_block({}, False, False),
        "clat_ns": _lat_block(lat, True, bins),
        "lat_ns": _lat_block(lat, False, bins),
    }
    bstats = _stats(bw_kib, "bw")
    block.update(
        {
            "bw_min": int(bstats["bw_min"]),
            "bw_max": int(bstats["bw_max"]),
            "bw_agg": 100.0 if n else 0.0,
            "bw_mean": bstats["bw_mean"],
            "bw_dev": bstats["bw_stddev"],
            "bw_samples": bstats["bw_samples"],
        }
    )
    istats = _stats(iops, "iops")
    block.update(
        {
            "iops_min": int(istats["iops_min"]),
            "iops_max": int(istats["iops_max"]),
            "iops_mean": istats["iops_mean"],
            "iops_stddev": istats["iops_stddev"],
            "iops_samples": istats["iops_samples"],
        }
    )
    return block


def latency_distribution(reports: list) -> dict:
    """fio's latency_ns / latency_us / latency_ms: percent of all I/Os per decade bin. Our buckets are powers
    of two from 1 us, so a bucket counts wholly in the fio bin holding its upper bound (approximate)."""
    buckets: dict = {}
    for rep in reports:
        for d in ("read", "write", "trim"):
            o = (rep.get("ops") or {}).get(d) or {}
            for upper, cnt in (o.get("lat") or {}).get("buckets") or []:
                buckets[int(upper)] = buckets.get(int(upper), 0) + int(cnt)
    total = sum(buckets.values())
    bounds = (
        [("latency_ns", int(k), k) for k in _LAT_KEYS]
        + [("latency_us", int(k) * 1000, k) for k in _LAT_KEYS]
        + [("latency_ms", int(k) * 1_000_000, k) for k in _LAT_KEYS + ["2000"]]
    )
    out = {
        "latency_ns": {k: 0.0 for k in _LAT_KEYS},
        "latency_us": {k: 0.0 for k in _LAT_KEYS},
        "latency_ms": {**{k: 0.0 for k in _LAT_KEYS + ["2000"]}, ">=2000": 0.0},
    }
    for upper, cnt in buckets.items():
        for group, limit, key in bounds:
            if upper <= limit:
                out[group][key] += 100.0 * cnt / total
                break
        else:
            out["latency_ms"][">=2000"] += 100.0 * cnt / total
    return out


def fio_job(name: str, groupid: int, options: dict, reports: list, bins: bool) -> dict:
    """One fio job object pooled over `reports`."""
    runtime_s = sum(float(r.get("elapsed_s") or 0.0) for r in reports)
    user = sum(float((r.get("cpu") or {}).get("user_s") or 0.0) for r in reports)
    sys_ = sum(float((r.get("cpu") or {}).get("sys_s") or 0.0) for r in reports)
    elapsed = sum(float(r.get("elapsed_s") or 0.0) + float(r.get("warmup_s") or 0.0) for r in reports)
    job = {
        "jobname": name,
        "groupid": groupid,
        "error": 0,
        "eta": 0,
        "elapsed": int(math.ceil(elapsed)),
        "job options": options,
        "job_runtime": int(round(runtime_s * 1000)),
        "read": io_block(reports, "read", bins),
        "write": io_block(reports, "write", bins),
        "trim": io_block(reports, "trim", bins),
        "sync": {"total_ios": sum(int(((r.get("ops") or {}).get("fsync") or {}).get("count") or 0) for r in reports)},
        "usr_cpu": 100.0 * user / runtime_s if runtime_s else 0.0,
        "sys_cpu": 100.0 * sys_ / runtime_s if runtime_s else 0.0,
        "ctx": 0,
        "majf": 0,
        "minf": 0,
    }
    job.update(latency_distribution(reports))
    lts = [(r.get("extra") or {}).get("latency_target") for r in reports]
    if lts and lts[-1]:
        # fio's stat.c: the depth found, the target in ns (twice), the window in us (twice), the percentile.
        lt = lts[-1]
        job.update(
            {
                "latency_depth": lt["depth"],
                "latency_target": lt["target_ns"],
                "latency_target_ns": lt["target_ns"],
                "latency_percentile": float(lt["percentile"]),
                "latency_window": lt["window_ns"] // 1000,
                "latency_window_us": lt["window_ns"] // 1000,
            }
        )
        if lt.get("ended_over_target_ns"):
            job["error"] = errno.ETIMEDOUT  # fio's lat_fatal: a late request at depth 1 with percentile 100
    return job


# -- reading the store ------------------------------------------------------------------------------------------
@dataclass
class _Cell:
    idx: int
    workload: str
    factors: dict
    options: dict | None = None
    reason: str | None = None
    family: str | None = None
    trials: list = field(default_factory=list)  # (trial number, phase key, report)


def _cells(db: Any, campaign: str | None) -> tuple:
    path = default_db_path(db)
    with open_store(path, create=False) as store:
        cid = store.campaign_id(campaign)
        camp = dict(store.campaign(cid))
        rows = store.conn.execute(
            "SELECT c.id AS cell_id, c.workload, c.factors, c.idx, t.number, t.status, t.discarded, p.key, p.report,"
            " e.extra FROM phases p JOIN trials t ON t.id = p.trial_id JOIN cells c ON c.id = t.cell_id"
            " LEFT JOIN environment e ON e.trial_id = t.id"
            " WHERE c.campaign_id = ? AND p.measured = 1 AND p.discarded = 0"
            " ORDER BY c.idx, t.number, p.seq",
            (cid,),
        ).fetchall()
    cells: dict = {}
    for r in rows:
        if not is_kept(r["status"], r["discarded"]):  # the one rule of kept trials
            continue
        c = cells.get(r["cell_id"])
        if c is None:
            c = cells[r["cell_id"]] = _Cell(int(r["idx"]), r["workload"], json.loads(r["factors"]))
            fam, params, settings = _job_of(r["workload"], r["extra"])
            c.family = fam
            if fam == ACCESS_FAMILY:
                c.options, c.reason = fio_options(params, settings)
            else:
                c.reason = f"not an access workload (family {fam or 'unknown'}; fio-json covers the access family)"
        c.trials.append((int(r["number"]), r["key"], json.loads(r["report"])))
    return cid, camp, list(cells.values())


def _refuse_empty(cid: int, cells: list) -> None:
    if not any(c.options for c in cells):
        why = sorted(
            {f"{c.workload} is {c.reason}" if c.family != ACCESS_FAMILY else f"{c.workload}: {c.reason}" for c in cells}
        )
        what = f" ({'; '.join(why)})" if why else ""
        raise UserError(
            f"campaign {cid} has no finished trial of an access workload fio can express{what}: "
            "use --format json or csv"
        )


def _skipped(cells: list) -> dict:
    out: dict = {}
    for c in cells:
        if not c.options:
            out.setdefault(c.workload, c.reason)
    return out


def _header(cid: int, camp: dict, skipped: dict, extra: dict | None = None) -> dict:
    now = time.time()
    return {
        "fio version": f"fsmeter-{fsmeter.__version__}",
        "timestamp": int(now),
        "timestamp_ms": int(now * 1000),
        "time": time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now)),
        "global options": {},
        "jobs": [],
        "disk_util": [],
        "fsmeter": {
            "format": FIO_FORMAT,
            "version": FIO_VERSION,
            "campaign_id": cid,
            "campaign": camp["name"],
            "skipped_workloads": sorted(skipped),
            "skipped_why": skipped,
            **(extra or {}),
        },
    }


def fio_document(db: Any = None, campaign: str | None = None, bins: bool = False) -> dict:
    """fio --output-format=json (json+ with `bins`) for the access workloads of a campaign: one job per kept
    trial x measured phase."""
    cid, camp, cells = _cells(db, campaign)
    _refuse_empty(cid, cells)
    skipped = _skipped(cells)
    doc = _header(cid, camp, skipped)
    for c in cells:
        if not c.options:
            continue
        for number, key, rep in c.trials:
            opts = {
                **c.options,
                "workload": c.workload,
                **{k: str(v) for k, v in c.factors.items()},
                "trial": str(number),
                "phase": key,
            }
            doc["jobs"].append(fio_job(c.workload, c.idx, opts, [rep], bins))
    return doc


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+=-]+", "_", s).strip("_") or "_"


def config_name(factors: dict) -> str:
    """A configuration's directory: the filesystem label, then every other factor level except those that
    are fio job options (threads -> numjobs, queue_depth -> iodepth)."""
    parts = [str(factors.get("filesystem", "dir"))]
    parts += [f"{k}-{v}" for k, v in factors.items() if k != "filesystem" and k not in FIO_FACTORS]
    return _safe("_".join(parts))


def split_export(out_dir: Path, db: Any = None, campaign: str | None = None, bins: bool = True) -> dict:
    """One fio JSON per cell (configuration x workload x factor levels), pooled over its kept trials, in
    ``out_dir/<configuration>/<rw>-iodepth-<d>-numjobs-<n>.json``; when two workloads of the campaign would share
    a file name in one configuration, every workload gets its own level: ``out_dir/<workload>/<configuration>/``.
    Returns an index (also written to out_dir/fsmeter-index.json)."""
    cid, camp, cells = _cells(db, campaign)
    _refuse_empty(cid, cells)
    skipped = _skipped(cells)
    keep = [c for c in cells if c.options]

    def fname(c: _Cell) -> str:
        o = c.options
        return f"{o['rw']}-iodepth-{o['iodepth']}-numjobs-{o['numjobs']}.json"

    seen: dict = {}
    by_workload = False
    for c in keep:
        key = (config_name(c.factors), fname(c))
        if key in seen and seen[key] != c.workload:
            by_workload = True
        seen.setdefault(key, c.workload)
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"--split {out_dir}: exists and is not a directory: name a directory")
    files = []
    for c in keep:
        sub = out_dir / _safe(c.workload) / config_name(c.factors) if by_workload else out_dir / config_name(c.factors)
        sub.mkdir(parents=True, exist_ok=True)
        path = sub / fname(c)
        if path.exists() and any(f["path"] == str(path) for f in files):
            raise UserError(
                f"--split: two cells of campaign {cid} map to {path}: export with --format fio-json "
                "(one document) instead"
            )
        reports = [rep for _, _, rep in c.trials]
        doc = _header(
            cid,
            camp,
            skipped,
            {
                "workload": c.workload,
                "factors": c.factors,
                "trials": sorted({n for n, _, _ in c.trials}),
                "pooled": "bytes, I/Os and measured time summed over the kept trials",
            },
        )
        doc["global options"] = {}
        doc["jobs"] = [fio_job(c.workload, 0, dict(c.options), reports, bins)]
        path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        write_logs(sub / fname(c)[: -len(".json")], reports[0], _size_of(c.options["bs"]))
        files.append(
            {
                "path": str(path),
                "workload": c.workload,
                "factors": c.factors,
                "rw": c.options["rw"],
                "iodepth": int(c.options["iodepth"]),
                "numjobs": int(c.options["numjobs"]),
                "bs": c.options.get("bs"),
            }
        )
    index = {
        "format": "fsmeter-fio-split",
        "version": 1,
        "campaign_id": cid,
        "campaign": camp["name"],
        "layout": "workload/configuration" if by_workload else "configuration",
        "files": files,
        "skipped_workloads": skipped,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "fsmeter-index.json").write_text(json.dumps(index, indent=1), encoding="utf-8")
    return index


def _size_of(text: str) -> int:
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    return int(text[:-1]) * mult[text[-1]] if text[-1] in mult else int(text)


def write_logs(stem: Path, report: dict, bs: int) -> list:
    """fio's bandwidth and IOPS logs (``<stem>_bw.1.log``, ``<stem>_iops.1.log``: time ms, value, direction
    0/1, block size, offset 0) from the interval samples of one trial (the cell's first kept one), for
    ``fio-plot -g``. Bandwidth is KiB/s: the interval's I/Os of that direction x its mean request size."""
    ops = report.get("ops") or {}
    tot = (report.get("total") or {}).get("ops") or 0
    rows: dict = {"bw": [], "iops": []}
    for iv in report.get("intervals") or []:
        dur = float(iv.get("dur_s") or 0)
        if dur <= 0:
            continue
        t_ms = int(round(float(iv.get("t_s") or 0) * 1000))
        for ddir, name in ((0, "read"), (1, "write")):
            o = ops.get(name) or {}
            if not o.get("count"):
                continue
            by_kind = iv.get("ops_by_kind")
            n = by_kind.get(name, 0) if isinstance(by_kind, dict) else (iv.get("ops") or 0) * o["count"] / tot
            per_op = (o.get("bytes") or 0) / o["count"]
            rows["iops"].append(f"{t_ms}, {int(round(n / dur))}, {ddir}, {bs}, 0")
            rows["bw"].append(f"{t_ms}, {int(round(n / dur * per_op / 1024))}, {ddir}, {bs}, 0")
    written = []
    for kind, lines in rows.items():
        if lines:
            p = Path(f"{stem}_{kind}.1.log")
            p.write_text("\n".join(lines) + "\n", encoding="utf-8")
            written.append(p)
    return written


def export_fio_json(db: Any = None, campaign: str | None = None) -> str:
    return json.dumps(fio_document(db, campaign), indent=1)


def export_fio_jsonplus(db: Any = None, campaign: str | None = None) -> str:
    return json.dumps(fio_document(db, campaign, bins=True), indent=1)
