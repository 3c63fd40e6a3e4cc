"""Calibration of a disk model: what its raw device delivers here, beside what its sources imply.

    doc = calibrate("seagate-st39102lw", say=print)
    doc["figures"]["random_4k_read_iops"]   # {"measured": ..., "modelled": ..., "expected": ..., "unit": "IOPS"}
    doc["lateness_p99_ms"]

The model's raw device (a fresh daemon and loop device over a sparse image of the drive's whole
capacity; no filesystem) is read with O_DIRECT:

- ``random_4k_read_iops``: 4 KiB reads at 4 KiB-aligned offsets drawn uniformly over the whole
  span, one at a time (queue depth 1);
- ``seq_outer_read_mb_s`` / ``seq_inner_read_mb_s``: 1 MiB reads one after another from the
  drive's first block, and over its last whole MiBs (the innermost zone);
- ``track_to_track_seek_ms`` / ``full_stroke_seek_ms``: pairs of 4 KiB reads, the second on the
  next cylinder (random cylinder, random sector) or at the other end of the disk (random sector
  within the first or last ten cylinders); the figure is the second read's time less the
  overhead, half a revolution and the transfer the model adds to every read.

Each figure is given three ways: ``measured`` from this process's wall clock (what a program on
this machine gets, lateness included: quote it only from a quiet machine), ``modelled`` from the
daemon's own account of the same requests (its modelled service times and parts; for the sequential
rates, service times plus the read-ahead the drive did while it waited for the host: the time
its media was busy. Independent of this machine's load), and ``expected`` from the profile's sources
(fsmeter.diskmodel.profiles.expected_figures). The reply lateness of every request (p50, p99)
is this machine's noise. The result is kept in the scratch folder, per profile, so that trials on
the model record the newest calibration of the description they ran (`saved_calibration`).
"""

from __future__ import annotations

import datetime as dt
import json
import mmap
import os
import random
import socket
import time
from collections.abc import Callable
from typing import Any

from fsmeter.diskmodel import stats as dmstats
from fsmeter.diskmodel.profiles import describe, expected_figures, load_profile
from fsmeter.provision.state import default_scratch
from fsmeter.provision.targets.diskmodel import DiskModelTarget, profile_digest

#: How much a full calibration reads (the tests use smaller counts).
RANDOM_READS = 400
SEQ_BYTES = 64 << 20
SEEK_PAIRS = 100
MiB = 1 << 20


def calibration_path(name: str, scratch: str | None = None) -> str:
    return os.path.join(scratch or default_scratch(), "diskmodel-calibration", f"{name}.json")


def saved_calibration(name: str | None, sha256: str | None, scratch: str | None = None) -> dict | None:
    """The newest calibration of profile ``name`` on this machine, when it calibrated the same drive
    description (``sha256``); None otherwise."""
    if not name:
        return None
    try:
        with open(calibration_path(name, scratch)) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("profile_sha256") == sha256 else None


class _Reader:
    """O_DIRECT reads of a block device into one aligned buffer per thread."""

    def __init__(self, device: str):
        self.fd = os.open(device, os.O_RDONLY | os.O_DIRECT)
        self.size = os.lseek(self.fd, 0, os.SEEK_END)

    def close(self) -> None:
        os.close(self.fd)

    def read(self, offset: int, length: int, buf: mmap.mmap) -> float:
        """Read ``length`` bytes at ``offset``; returns the seconds it took."""
        t0 = time.perf_counter()
        n = os.preadv(self.fd, [memoryview(buf)[:length]], offset)
        dt_s = time.perf_counter() - t0
        if n != length:
            raise OSError(f"short read: {n} of {length} bytes at {offset}")
        return dt_s


def _control(target: DiskModelTarget) -> None:
    with open(target.control_path, "w") as f:
        f.write("reset")


def _stats(target: DiskModelTarget) -> dict:
    return dmstats.read_stats(target.stats_path)


def _reads(snapshot: dict) -> dict:
    return (snapshot.get("kinds") or {}).get("read") or {}


def calibrate(
    name: str,
    *,
    scratch: str | None = None,
    random_reads: int = RANDOM_READS,
    seq_bytes: int = SEQ_BYTES,
    seek_pairs: int = SEEK_PAIRS,
    seq_request: int = MiB,
    seed: int = 1,
    say: Callable[[str], None] = lambda m: None,
    save: bool = True,
) -> dict[str, Any]:
    """Calibrate profile ``name`` (root: a loop device and a FUSE mount); returns the document.

    ``seq_request``: the size of each sequential read (1 MiB). At queue depth 1 the drive waits
    for the host between reads; on a busy machine those pauses outlast the read-ahead and the drive
    then loses part of a turn, as a real one would, so the modelled rate too falls below the media
    rate. Larger reads (the loop device splits them into pieces it queues at once, in order) leave
    fewer pauses: the calibration test, which must pass on a busy machine, reads 8 MiB at a time."""
    from fsmeter.provision import Provisioner

    profile = load_profile(name)
    fig = describe(profile)
    expected = expected_figures(profile, fig)
    rng = random.Random(seed)
    rev_ms = fig["revolution_ms"]
    per_read_ms = fig["read_miss_overhead_ms"] + rev_ms / 2 + fig["transfer_4k_ms"]
    out: dict[str, Any] = {
        k: {"unit": v["unit"], "expected": v["expected"], "basis": v["basis"]} for k, v in expected.items()
    }
    lateness_all: list[tuple[int, int]] = []
    with Provisioner(scratch) as prov:
        target = DiskModelTarget(prov.state, f"calibrate-{os.getpid()}", fig["capacity_bytes"], name)
        try:
            target.setup()
            reader = _Reader(target.device)
            try:
                buf = mmap.mmap(-1, max(MiB, seq_request))
                span = reader.size // 4096

                def window(before: dict) -> dict:
                    after = _stats(target)
                    lateness_all.extend(dmstats.histogram_since(before, after, "lateness_ns"))
                    return dmstats.since(before, after)

                # -- random 4 KiB reads, queue depth 1
                say(f"random 4 KiB reads, queue depth 1: {random_reads}")
                before = _stats(target)
                t0 = time.perf_counter()
                for _ in range(random_reads):
                    reader.read(rng.randrange(span) * 4096, 4096, buf)
                wall = time.perf_counter() - t0
                w = window(before)
                r = w["kinds"].get("read", {})
                out["random_4k_read_iops"]["measured"] = random_reads / wall
                out["random_4k_read_iops"]["modelled"] = (
                    1e9 * r["count"] / r["service_ns"] if r.get("service_ns") else None
                )

                # -- sequential 1 MiB reads, outer and inner
                length = min(seq_bytes, reader.size // 4) // seq_request * seq_request
                for key, start in (
                    ("seq_outer_read_mb_s", 0),
                    ("seq_inner_read_mb_s", (reader.size - length) // MiB * MiB),  # the last whole MiBs
                ):
                    say(
                        f"sequential {seq_request >> 20} MiB reads, {'outer' if 'outer' in key else 'inner'} zone: "
                        f"{length >> 20} MiB"
                    )
                    before = _stats(target)
                    t0 = time.perf_counter()
                    for off in range(start, start + length, seq_request):
                        reader.read(off, seq_request, buf)
                    wall = time.perf_counter() - t0
                    w = window(before)
                    r = w["kinds"].get("read", {})
                    out[key]["measured"] = length / wall / 1e6
                    # the time the media was busy: the services, and the read-ahead while the drive
                    # waited for the host's next read (which that read then found in the buffer)
                    busy_ns = r.get("service_ns", 0) + r.get("readahead_ns", 0)
                    out[key]["modelled"] = length / (busy_ns / 1e9) / 1e6 if busy_ns else None

                # -- seeks: pairs of reads, the second one timed
                first_cyl, last_cyl = fig["data_cylinders"]
                lbn_of = _cylinder_lbns(fig)
                for key, pick in (
                    ("track_to_track_seek_ms", lambda: _next_cylinder_pair(rng, lbn_of, first_cyl, last_cyl)),
                    ("full_stroke_seek_ms", lambda: _end_to_end_pair(rng, lbn_of, first_cyl, last_cyl)),
                ):
                    say(f"{'short' if 'track' in key else 'full-stroke'} seeks: {seek_pairs} pairs of reads")
                    times, seeks = [], []
                    while len(times) < seek_pairs:
                        a, b = pick()
                        s0 = _stats(target)
                        reader.read(_random_block(rng, lbn_of, a, reader.size), 4096, buf)
                        s1 = _stats(target)
                        took = reader.read(_random_block(rng, lbn_of, b, reader.size), 4096, buf)
                        s2 = _stats(target)
                        lateness_all.extend(dmstats.histogram_since(s0, s2, "lateness_ns"))
                        # Only pairs whose two reads both went to the media count: a read found in
                        # the buffer leaves the head where it was, so the next one's seek is another.
                        if _reads(s2).get("hits", 0) != _reads(s0).get("hits", 0):
                            continue
                        times.append(took)
                        seeks.append((_reads(s2)["seek_ns"] - _reads(s1)["seek_ns"]) / 1e6)
                    out[key]["measured"] = sum(times) / len(times) * 1e3 - per_read_ms
                    out[key]["modelled"] = sum(seeks) / len(seeks) if seeks else None
            finally:
                reader.close()
        finally:
            target.teardown()
    lat = sorted(lateness_all)
    doc = {
        "format": "fsmeter-diskmodel-calibration",
        "version": 1,
        "profile": profile.name,
        "drive": profile.drive,
        "profile_sha256": profile_digest(profile),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "figures": out,
        "lateness_p50_ms": _ms(dmstats.percentile(lat, 0.5)),
        "lateness_p99_ms": _ms(dmstats.percentile(lat, 0.99)),
        "counts": {
            "random_reads": random_reads,
            "seq_bytes": seq_bytes,
            "seq_request_bytes": seq_request,
            "seek_pairs": seek_pairs,
        },
    }
    if save:
        path = calibration_path(profile.name, scratch)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, path)
    return doc


def _ms(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e6


def _cylinder_lbns(fig: dict) -> list[tuple[int, int, int]]:
    """(first cylinder, last cylinder, first block) of each zone, and each zone's blocks per cylinder."""
    surfaces = fig["surfaces"]
    return [
        (z["first_cylinder"], z["last_cylinder"], z["first_lbn"], surfaces * z["sectors_per_track"])
        for z in fig["zones"]
    ]


def _random_block(rng: random.Random, zones: list, cylinder: int, size: int) -> int:
    """A random 4 KiB-aligned byte offset whose block lies on ``cylinder``."""
    for first, last, lbn, per_cyl in zones:
        if first <= cylinder <= last:
            start = (lbn + (cylinder - first) * per_cyl) * 512
            first_4k = (start + 4095) // 4096
            last_4k = (start + per_cyl * 512) // 4096 - 1  # the last 4 KiB wholly on the cylinder
            return min(rng.randint(first_4k, max(first_4k, last_4k)) * 4096, size - 4096)
    raise ValueError(f"cylinder {cylinder} holds no block")


def _next_cylinder_pair(rng: random.Random, zones: list, first: int, last: int) -> tuple[int, int]:
    """A random cylinder and the next one, both holding blocks (zones may leave spare cylinders between them)."""
    while True:
        c = rng.randrange(first, last)
        if _has_blocks(zones, c) and _has_blocks(zones, c + 1):
            return c, c + 1


def _has_blocks(zones: list, cylinder: int) -> bool:
    return any(first <= cylinder <= last for first, last, _, _ in zones)


def _end_to_end_pair(rng: random.Random, zones: list, first: int, last: int) -> tuple[int, int]:
    """A cylinder among the ten outermost and one among the ten innermost whole ones, in either order."""
    while True:
        outer = first + rng.randrange(10)
        inner = last - 1 - rng.randrange(10)
        if _has_blocks(zones, outer) and _has_blocks(zones, inner):
            return (outer, inner) if rng.random() < 0.5 else (inner, outer)


__all__ = ["RANDOM_READS", "SEEK_PAIRS", "SEQ_BYTES", "calibrate", "calibration_path", "saved_calibration"]
