"""The disk model's own cost per request (goal: under 2% of the mean modelled service time of the
random-read case).

Random 4 KiB reads at queue depth 1 over the whole span of a disk model's raw device (a fresh
fsmeter-diskmodel daemon and loop device, no filesystem), timed one by one by this process. The
model's own cost per request is the mean wall-clock time of a read less the mean modelled service
time the daemon reports for the same reads: the FUSE round trip, the loop device, the daemon's
bookkeeping and how late its replies left (this machine's scheduling). No peer tool serves a
modelled disk, so the row compares that cost, as a share of the modelled service time, with the 2%
budget (ratio = budget / share, >= 1 meets the goal). A second row gives the replies' lateness p99,
and a third the outer zone's sequential rate against the profile's media rate.
"""

from __future__ import annotations

import mmap
import os
import random
import time

PROFILES = ("seagate-st39102lw", "seagate-st3500641as")
BUDGET_PCT = 2.0


def _case(ctx, name: str, reads: int) -> list[dict]:
    from fsmeter.calibration import MiB, _Reader
    from fsmeter.diskmodel import stats as dmstats
    from fsmeter.diskmodel.profiles import describe, expected_figures, load_profile
    from fsmeter.provision import Provisioner
    from fsmeter.provision.targets.diskmodel import DiskModelTarget

    p = load_profile(name)
    fig = describe(p)
    exp = expected_figures(p, fig)
    rng = random.Random(7)
    rows = []
    with Provisioner() as prov:
        target = DiskModelTarget(prov.state, f"bench-{os.getpid()}", fig["capacity_bytes"], name)
        try:
            target.setup()
            reader = _Reader(target.device)
            try:
                buf = mmap.mmap(-1, MiB)
                span = reader.size // 4096
                before = dmstats.read_stats(target.stats_path)
                wall = 0.0
                for _ in range(reads):
                    wall += reader.read(rng.randrange(span) * 4096, 4096, buf)
                after = dmstats.read_stats(target.stats_path)
                w = dmstats.since(before, after)
                r = w["kinds"]["read"]
                modelled_ms = r["response_ns"] / r["count"] / 1e6
                wall_ms = wall / reads * 1e3
                share = max(0.0, (wall_ms - modelled_ms) / modelled_ms * 100)
                rows.append(
                    ctx.row(
                        f"diskmodel {name}: random 4 KiB QD1, {reads} reads",
                        "own cost per request (% of modelled service)",
                        share,
                        BUDGET_PCT,
                        "budget: 2%",
                        target=1.0,
                        higher_is_better=False,
                        notes=f"wall {wall_ms:.3f} ms a read, modelled {modelled_ms:.3f} ms: "
                        f"{(wall_ms - modelled_ms) * 1e3:.0f} us of FUSE, loop, daemon and lateness",
                    )
                )
                rows.append(
                    ctx.row(
                        f"diskmodel {name}: random 4 KiB QD1",
                        "reply lateness p99 (ms)",
                        w["lateness_p99_ms"],
                        0.05 * modelled_ms,
                        "5% of the modelled service (the disturbed gate)",
                        target=1.0,
                        higher_is_better=False,
                        notes=f"p50 {w['lateness_p50_ms']:.3f} ms",
                    )
                )
                length = (16 if ctx.quick else 64) * MiB
                t0 = time.perf_counter()
                for off in range(0, length, MiB):
                    reader.read(off, MiB, buf)
                rate = length / (time.perf_counter() - t0) / 1e6
                expected = exp["seq_outer_read_mb_s"]["expected"]
                rows.append(
                    ctx.row(
                        f"diskmodel {name}: sequential 1 MiB, outer zone",
                        "MB/s (wall clock)",
                        rate,
                        expected,
                        "profile's media rate",
                        target=0.9,
                        target_max=1.1,
                        notes="within 10% of the sources on a quiet machine",
                    )
                )
            finally:
                reader.close()
        finally:
            target.teardown()
    return rows


def run(ctx) -> list[dict]:
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        return [
            ctx.row(
                "diskmodel",
                "own cost per request",
                None,
                None,
                "budget: 2%",
                notes="skipped: needs root, loop devices and /dev/fuse",
            )
        ]
    rows = []
    for name in PROFILES[:1] if ctx.quick else PROFILES:
        rows += _case(ctx, name, 100 if ctx.quick else 400)
    return rows
