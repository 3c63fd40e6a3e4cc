"""What a disk-model daemon served between two snapshots of its ``stats.json``, and whether the
model's timing held.

    before = read_stats(stats_path)
    ... the phase runs ...
    summary = since(before, read_stats(stats_path))
    summary["disturbed"]        # lateness p99 (or all the lateness) over DISTURBED_SHARE of the service

The daemon (crates/diskmodel/src/stats.rs) counts, per kind of request, how many and the sums of
their modelled service times and parts, and keeps two histograms (modelled service time,
lateness of the reply) exported bucket by bucket: the difference of two snapshots is the
histogram of the requests served in between. Percentiles, method: the smallest bucket value at
which the cumulative count reaches q x total (nearest rank on the bucketed values; a bucket's
value is the highest value equivalent to it at the histogram's 3 significant digits, so a
percentile is exact to 0.1%).

Lateness is the wall-clock instant a reply was sent minus its modelled completion: how far this
machine's scheduling pushed the model off its own times. A phase is disturbed when its lateness
p99 exceeds DISTURBED_SHARE of the mean modelled service time, or when its replies' lateness added
up exceeds DISTURBED_SHARE of their modelled service added up (``lateness_share``: the histogram's
bucket values times their counts, exact to the histogram's 0.1%): its figures include this machine's
noise, not only the model's disk; the trial is kept and flagged, as a busy-machine phase is
(fsmeter.regime). The second rule catches a stall the percentile cannot see: a daemon that stopped
serving for 17 minutes delayed a few hundred of a phase's 6,800 replies (p99 0.044 ms), but by
16.5 minutes each.
"""

from __future__ import annotations

import json
from typing import Any

#: A phase is disturbed when the p99 lateness of its requests exceeds this share of their mean
#: modelled service time, or their lateness added up this share of their service added up.
DISTURBED_SHARE = 0.05
KINDS = ("read", "write", "flush", "discard", "write_zeroes")


def read_stats(path: str) -> dict[str, Any]:
    """One snapshot of the daemon's counters (its stats.json)."""
    with open(path) as f:
        doc = json.load(f)
    if doc.get("format") != "fsmeter-diskmodel-stats":
        raise ValueError(f"{path}: not a fsmeter-diskmodel stats file")
    return doc


def merge(docs: list[dict]) -> dict[str, Any]:
    """One snapshot of several daemons (a target's data and journal drives): counts and sums added per
    kind, histograms added bucket by bucket. One document is returned as it is."""
    if len(docs) == 1:
        return docs[0]
    kinds: dict[str, dict[str, int]] = {}
    hists: dict[str, dict[int, int]] = {}
    for doc in docs:
        for k, d in (doc.get("kinds") or {}).items():
            acc = kinds.setdefault(k, {})
            for f, v in d.items():
                acc[f] = acc.get(f, 0) + int(v)
        for key, val in doc.items():
            if key.endswith("_ns") and isinstance(val, list):
                h = hists.setdefault(key, {})
                for v, c in _buckets(doc, key).items():
                    h[v] = h.get(v, 0) + c
    out: dict[str, Any] = {
        "format": "fsmeter-diskmodel-stats",
        "kinds": kinds,
        # each drive's own busy time (a drive's busy share is its own, not the sum's)
        "drive_busy_ns": [_busy_ns(d) for d in docs],
        "early_replies": sum(int(d.get("early_replies", 0)) for d in docs),
        "max_queue": max(int(d.get("max_queue", 0)) for d in docs),
        "drives": len(docs),
        "idle_poll_cpu_ns": sum(_poll_ns(d) for d in docs),
    }
    for key, h in hists.items():
        out[key] = sorted([v, c] for v, c in h.items())
    return out


def _buckets(doc: dict, key: str) -> dict[int, int]:
    return {int(v): int(c) for v, c in doc.get(key) or []}


def _busy_ns(doc: dict) -> int:
    """A daemon's busy time so far, ns: the model's own count (a request in service, or its actuator
    writing the cache back; daemons since 2026-11-30), else the modelled service time of every request
    it counts (which misses the write-back of cached writes)."""
    state = doc.get("state") or {}
    if "busy_ns" in state:
        return int(state["busy_ns"])
    return sum(int(d.get("service_ns", 0)) for d in (doc.get("kinds") or {}).values())


def drive_busy_s(before: dict, after: dict) -> list[float]:
    """Each drive's busy time between two snapshots, s (one entry for a single daemon's)."""
    b = before.get("drive_busy_ns") or [_busy_ns(before)]
    a = after.get("drive_busy_ns") or [_busy_ns(after)]
    if len(a) != len(b):
        return [max(0, _busy_ns(after) - _busy_ns(before)) / 1e9]
    return [max(0, int(x) - int(y)) / 1e9 for x, y in zip(a, b)]


def _poll_ns(doc: dict) -> int:
    """The idle pollers' CPU time in a snapshot (a merged one's, or a daemon's own), ns."""
    if "idle_poll_cpu_ns" in doc:
        return int(doc["idle_poll_cpu_ns"])
    return int((doc.get("state") or {}).get("idle_poll_cpu_ns") or 0)


def histogram_since(before: dict, after: dict, key: str) -> list[tuple[int, int]]:
    """(value, count) of the requests recorded between the two snapshots, sorted by value."""
    a, b = _buckets(before, key), _buckets(after, key)
    out = [(v, c - a.get(v, 0)) for v, c in b.items()]
    return sorted((v, c) for v, c in out if c > 0)


def percentile(hist: list[tuple[int, int]], q: float) -> float | None:
    """The q-quantile (0 < q <= 1) of a bucketed histogram, by nearest rank; None when empty."""
    total = sum(c for _, c in hist)
    if total == 0:
        return None
    need = q * total
    acc = 0
    for v, c in hist:
        acc += c
        if acc >= need:
            return float(v)
    return float(hist[-1][0])


def since(before: dict, after: dict) -> dict[str, Any]:
    """What was served between two snapshots: counts and sums per kind, the mean modelled service
    time, lateness p50 / p99 / max (ms), and whether the phase was disturbed."""
    kinds: dict[str, dict[str, int]] = {}
    for k in KINDS:
        b = (before.get("kinds") or {}).get(k) or {}
        a = (after.get("kinds") or {}).get(k) or {}
        d = {f: int(a.get(f, 0)) - int(b.get(f, 0)) for f in a}
        if d.get("count"):
            kinds[k] = d
    requests = sum(d["count"] for d in kinds.values())
    service_ns = sum(d["service_ns"] for d in kinds.values())
    lat = histogram_since(before, after, "lateness_ns")
    mean_service_ms = service_ns / requests / 1e6 if requests else None
    p50, p99 = percentile(lat, 0.50), percentile(lat, 0.99)
    out: dict[str, Any] = {
        "requests": requests,
        "kinds": kinds,
        "mean_service_ms": mean_service_ms,
        "lateness_p50_ms": None if p50 is None else p50 / 1e6,
        "lateness_p99_ms": None if p99 is None else p99 / 1e6,
        "lateness_max_ms": (lat[-1][0] / 1e6) if lat else None,
        "lateness_share": (sum(v * c for v, c in lat) / service_ns) if lat and service_ns else None,
        "early_replies": int(after.get("early_replies", 0)) - int(before.get("early_replies", 0)),
    }
    # The lateness's two parts (daemons since 2026-11: absent before): the drive thread's wake-up
    # after its sleep to the completion, and its wait for the request's data I/O on the image.
    for part in ("wake", "image_wait"):
        if f"{part}_ns" in after:
            q = percentile(histogram_since(before, after, f"{part}_ns"), 0.99)
            out[f"{part}_p99_ms"] = None if q is None else q / 1e6
    # The idle pollers' CPU (the daemon's lowest-priority spinners that keep the CPUs out of their
    # idle state): not the workload's, not others'; the caller takes it out of the machine's busy time.
    out["idle_poll_cpu_s"] = max(0, _poll_ns(after) - _poll_ns(before)) / 1e9
    out["drive_busy_s"] = drive_busy_s(before, after)
    out["disturbed"] = disturbed(out["lateness_p99_ms"], mean_service_ms, out["lateness_share"])
    return out


def disturbed(
    lateness_p99_ms: float | None, mean_service_ms: float | None, lateness_share: float | None = None
) -> bool | None:
    """True when the p99 lateness exceeds DISTURBED_SHARE of the mean service time, or the lateness
    added up exceeds DISTURBED_SHARE of the service added up (`lateness_share`); None when nothing was
    served."""
    if lateness_p99_ms is None or not mean_service_ms:
        return None
    return lateness_p99_ms > DISTURBED_SHARE * mean_service_ms or (
        lateness_share is not None and lateness_share > DISTURBED_SHARE
    )


def describe(summary: dict) -> str:
    """One line for a terminal."""
    if not summary.get("requests"):
        return "disk model: no request reached it"
    txt = (
        f"disk model: {summary['requests']} requests, mean modelled service {summary['mean_service_ms']:.3f} ms, "
        f"reply lateness p50 {summary['lateness_p50_ms']:.3f} ms, p99 {summary['lateness_p99_ms']:.3f} ms"
    )
    if summary.get("disturbed"):
        txt += f" (over {DISTURBED_SHARE:.0%} of the service time: disturbed, this machine's noise is in the figures)"
    return txt


__all__ = [
    "DISTURBED_SHARE",
    "describe",
    "disturbed",
    "drive_busy_s",
    "histogram_since",
    "merge",
    "percentile",
    "read_stats",
    "since",
]
