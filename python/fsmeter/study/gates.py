"""The gates a re-run verdict passes before its word stands (docs/studies.md, "Gates").

Two kinds, in this order:

- **comparability** ("not comparable here"): the run changed what the claim is about (a change the
  plan made meets its ``sensitive_to``; its phases read from the page cache while it is sensitive to
  ``cache_residency``); a resource its paper's result was bound by (``bound_by``) is more than
  ``RESOURCE_RATIO`` times faster here than on the paper's machine; or the claim is about fewer CPUs
  than the run had online (pinning fsmeter's threads is not a machine with fewer CPUs: the kernel's
  loop worker, writeback and the filesystems' workqueues still use the others);
- **data** ("inconclusive"): too few trials (``MIN_TRIALS``), phases shorter than the study's minimum
  or than the time its throughput needs to settle, a busy machine, a disk model whose replies were late
  (``disturbed``), a guest under emulation (unless every phase it rests on was bound by a disk model
  the host served the guest: then the verdict stands, marked ``EMULATED_DISK_BOUND``).

A gate whose measurement is missing does not pass (fails closed): the verdict names the missing
measurement and is at most inconclusive, or not comparable when the claim is sensitive to it.

The resource figures come from the storage probes of the run's target (:mod:`fsmeter.provision.
storage_probe`, recorded per campaign at its start, and for a loop or disk-model target again between
trials and at its end; the fastest of them counts) and the paper's machine (``[[hardware]]`` of the
study file):

- ``disk_seeks``: the probe's median random 4 KiB read at queue depth 1 (O_DIRECT) against the
  paper's disk's expected random read (average seek + half a revolution + the transfer);
- ``disk_bandwidth``: the slower of the probe's sequential read and write against the paper's
  disk's sustained media rate (or a sequential rate the paper measured on it);
- ``journal_flushes``: the probe's median 4 KiB write + fsync against track-to-track seek + half a
  revolution (what a commit waits for when nothing caches the write);
- ``cpu``: this machine's clock against the paper's CPU clock. No common benchmark figure exists for
  the papers' CPUs, and a core of today does at least as much per clock as one of 2002-2009, so the
  clock ratio is a lower bound of the speed ratio: over the bound it is certainly over; under it,
  the verdict says the real ratio may be larger;
- ``page_cache``: not gated by the probe (the storage did not bind the paper's result); the cache
  regime itself is the ``cache_residency`` gate.

A storage class ``disk-model:NAME`` (a modelled disk) within the ratio is comparable, and the verdict
says it ran "on a model of the paper's disk", or "of the paper's disk class" when the profile is a
documented stand-in of the same class (the paper names no drive).
"""

from __future__ import annotations

import functools
import math
from typing import Any

from fsmeter.regime import CPU_FREE_SHARE, DISK_BOUND_SHARE

#: A resource more than this many times faster here than on the paper's machine makes a claim bound by
#: it not comparable.
RESOURCE_RATIO = 4.0

#: How a verdict resting on a guest under emulation is marked where every phase it rests on was bound by
#: a disk model (fsmeter.regime.disk_bound): the emulated CPU did not set the pace.
EMULATED_DISK_BOUND = (
    "guest under emulation, disk-bound: in every phase it rests on that ran in the guest, the modelled disk "
    f"was busy for at least {DISK_BOUND_SHARE:.0%} of the time and the guest's CPUs for under {CPU_FREE_SHARE:.0%}"
)

#: The regime columns of a claim frame (per row; a missing column or an empty cell is "not measured").
REGIME_COLUMNS = (
    "phase_s",
    "other_cpu_share",
    "cache_read_share",
    "cache_write_share",
    "storage_read_latency_ms",
    "storage_read_mb_s",
    "storage_write_mb_s",
    "storage_flush_ms",
    "storage_class",
    "cpus_online",
    "cpu_mhz",
    "emulated",
    "emulated_disk_bound",
    "disturbed",
    "steal_share",
)
#: Regime columns only some targets measure (a guest's emulation, a disk model's lateness, a virtual
#: machine's steal): absent or empty, they are not "not measured", so no gate fails closed on them.
OPTIONAL_REGIME_COLUMNS = ("emulated", "emulated_disk_bound", "disturbed", "steal_share")
#: How several rows' regimes combine: the shortest phase, the busiest machine, the most cache-served
#: reads, the fastest storage and CPU, the most CPUs online.
COMBINE = {
    "phase_s": min,
    "other_cpu_share": max,
    "cache_read_share": max,
    "cache_write_share": max,
    "storage_read_latency_ms": min,
    "storage_read_mb_s": max,
    "storage_write_mb_s": max,
    "storage_flush_ms": min,
    "cpus_online": max,
    "cpu_mhz": max,
    "emulated": max,
    "emulated_disk_bound": max,
    "disturbed": max,
    "steal_share": max,
}
#: Steal above this share of the machine's CPU time in a phase is named where a disk model's replies
#: were late: on a virtual machine, bursts of it (the host running another guest) delayed the drive
#: thread's wake-ups by 10-19 ms in Lourdas's copy, where phases with little steal stayed under 1 ms.
STEAL_NAMED_SHARE = 0.01


def merge(parts) -> dict[str, Any]:
    """Several regimes as one: the combination rules above; ``missing`` collects the measurements some
    part lacked, ``storage_class`` the classes seen."""
    out: dict[str, Any] = {}
    missing: set = set()
    classes: set = set()
    for part in parts:
        for k, v in part.items():
            if k == "missing":
                missing |= set(v)
            elif k == "storage_class":
                classes |= set(v) if isinstance(v, (set, list, tuple)) else {v}
            elif k in COMBINE:
                out[k] = v if k not in out else COMBINE[k](out[k], v)
            else:
                out[k] = v
    if missing:
        out["missing"] = sorted(missing)
    if classes:
        out["storage_class"] = sorted(classes)
    return out


def _ratio_text(r: float) -> str:
    return f"{r:.0f}x" if r >= 10 else f"{r:.1f}x"


def resource_gates(bound_by, machine, regime: dict) -> tuple[list[str], list[str]]:
    """(reasons the claim is not comparable here, notes) for the resources its paper was bound by."""
    reasons: list[str] = []
    notes: list[str] = []
    if not bound_by:
        return reasons, notes
    classes = regime.get("storage_class") or []
    memory = [c for c in classes if c == "memory"]
    model = [c for c in classes if str(c).startswith("disk-model:")]
    disk = machine.disk if machine is not None else None
    dname = disk.model if disk is not None else "the paper's disk"
    for res in bound_by:
        if res in ("disk_seeks", "disk_bandwidth", "journal_flushes") and memory:
            reasons.append(f"it is bound by {res.replace('_', ' ')} and this run's storage is memory (tmpfs)")
            continue
        if res == "disk_seeks":
            here = regime.get("storage_read_latency_ms")
            paper = machine.random_read_ms() if machine is not None else None
            if here is None or paper is None:
                reasons.append(
                    "it is bound by disk seeks and "
                    + (
                        "this storage's random-read latency was not measured"
                        if here is None
                        else f"the paper's disk ({dname}) lacks the rpm to compare with"
                    )
                )
                continue
            _compare(
                reasons,
                notes,
                paper.value / max(here, 1e-9),
                paper.exact,
                f"this storage answers a random 4 KiB read in {here:.2g} ms; the paper's {dname} "
                f"{'about' if paper.exact else 'at least'} {paper.value:.1f} ms ({paper.how})",
                "disk seeks",
                bool(model),
            )
        elif res == "disk_bandwidth":
            rd, wr = regime.get("storage_read_mb_s"), regime.get("storage_write_mb_s")
            paper = machine.seq_mb_s() if machine is not None else None
            if rd is None or wr is None or paper is None:
                reasons.append(
                    "it is bound by disk bandwidth and "
                    + (
                        "this storage's sequential rates were not measured"
                        if rd is None or wr is None
                        else f"the paper's disk ({dname}) has no sequential rate to compare with"
                    )
                )
                continue
            _compare(
                reasons,
                notes,
                min(rd, wr) / paper.value,
                paper.exact,
                f"this storage reads {rd:.0f} and writes {wr:.0f} MB/s sequentially; the paper's {dname} "
                f"{'' if paper.exact else 'at most '}{paper.value:g} MB/s ({paper.how}); the slower direction",
                "disk bandwidth",
                bool(model),
            )
        elif res == "journal_flushes":
            here = regime.get("storage_flush_ms")
            paper = machine.flush_ms() if machine is not None else None
            if here is None or paper is None:
                reasons.append(
                    "it is bound by journal flushes and "
                    + (
                        "this storage's fsync latency was not measured"
                        if here is None
                        else f"the paper's disk ({dname}) lacks the rpm to compare with"
                    )
                )
                continue
            _compare(
                reasons,
                notes,
                paper.value / max(here, 1e-9),
                paper.exact,
                f"this storage completes a 4 KiB write and fsync in {here:.2g} ms; a commit on the paper's "
                f"{dname} waits {'about' if paper.exact else 'at least'} {paper.value:.1f} ms ({paper.how})",
                "journal flushes",
                bool(model),
            )
        elif res == "cpu":
            cpu = machine.cpu if machine is not None else None
            here = regime.get("cpu_mhz")
            if here is None or cpu is None or cpu.clock_mhz is None or cpu.clock_mhz.bound == "lower":
                reasons.append(
                    "it is bound by the CPU and "
                    + (
                        "this machine's CPU clock was not recorded"
                        if here is None
                        else "the paper gives no CPU clock (nor an upper bound on it) to compare with"
                    )
                )
                continue
            r = here / cpu.clock_mhz.value
            bound = " (an upper bound on it)" if cpu.clock_mhz.bound == "upper" else ""
            text = (
                f"this CPU runs at {here:.0f} MHz; the paper's {cpu.model} at {cpu.clock_mhz.value:g} MHz{bound}: "
                f"at least {_ratio_text(r)} faster (the clock ratio is a lower bound of the speed ratio: a core "
                "of today does at least as much per clock)"
            )
            (reasons if r > RESOURCE_RATIO else notes).append(
                text
                + (
                    f", over the {RESOURCE_RATIO:g}x a CPU-bound claim allows"
                    if r > RESOURCE_RATIO
                    else "; the real ratio may be larger"
                )
            )
        elif res == "page_cache":
            notes.append("bound by the page cache in the paper: the storage is not compared (its cache regime is)")
    if model and not reasons and any(r in ("disk_seeks", "disk_bandwidth", "journal_flushes") for r in bound_by):
        notes.append(model_note(model))
    return reasons, notes


@functools.cache
def _is_stand_in(profile: str) -> bool:
    """Whether a disk-model profile is a stand-in (read once: every verdict of a report asks)."""
    from fsmeter.diskmodel.profiles import load_profile
    from fsmeter.errors import UserError

    try:
        return bool(load_profile(profile).stand_in_for)
    except UserError:  # a profile this installation lacks (another machine's store): say no more
        return False


def model_note(classes: list) -> str:
    """ "on a model of the paper's disk (disk-model:NAME)", or "of the paper's disk class" when the profile
    is a stand-in (the paper names no drive: a documented drive of the same class)."""
    stand_in = any(_is_stand_in(str(c).split(":", 1)[1]) for c in classes)
    what = (
        "a model of the paper's disk class (a stand-in: the paper names no drive)"
        if stand_in
        else ("a model of the paper's disk")
    )
    return f"on {what} ({', '.join(str(c) for c in classes)})"


def _compare(reasons: list, notes: list, ratio: float, exact: bool, text: str, what: str, model: bool = False) -> None:
    """Over RESOURCE_RATIO: not comparable. Under it with a paper's figure that is only a bound: the real
    ratio may still be over it, so comparability is not shown (fails closed), unless the storage is a disk
    model: a documented drive of the paper's disk class (its own figures from its sources, never tuned to
    the study) that is within the tolerance of what the paper's figures allow is that class's storage.
    Otherwise a note."""
    if ratio > RESOURCE_RATIO:
        reasons.append(
            f"{text}: {_ratio_text(ratio)} faster, over the {RESOURCE_RATIO:g}x a claim bound by {what} allows"
        )
    elif not exact and model:
        notes.append(
            f"{text}: {_ratio_text(ratio)} {'faster' if ratio >= 1 else 'as fast'} at most as far as the paper's "
            f"figures tell (they are only a bound); the storage is a disk model of the paper's disk class, within "
            f"{RESOURCE_RATIO:g}x of them"
        )
    elif not exact:
        reasons.append(
            f"{text}: {_ratio_text(ratio)} faster at most as far as the paper's figures tell, and they are only a "
            f"bound: whether it is within {RESOURCE_RATIO:g}x cannot be shown"
        )
    else:
        notes.append(
            f"{text}: {_ratio_text(ratio)} {'faster' if ratio >= 1 else 'as fast'}, within {RESOURCE_RATIO:g}x"
        )


def cpu_count_gate(levels: list[int], cpus_online: float | None) -> str | None:
    """The claim is about runs on ``levels`` CPUs: not comparable when the run had more online (pinning
    is not fewer CPUs), or when it is not known how many were online."""
    if not levels:
        return None
    fewest = min(levels)
    if cpus_online is None or (isinstance(cpus_online, float) and math.isnan(cpus_online)):
        return f"it is about runs on {fewest} CPU(s) and the run did not record how many CPUs were online"
    if cpus_online > fewest:
        return (
            f"it is about {fewest} CPU(s): the run pinned fsmeter's threads to {fewest}, but the machine had "
            f"{cpus_online:.0f} online, and the kernel's loop worker, writeback and the filesystems' workqueues "
            "used the others (pinning is not a machine with fewer CPUs; a guest with that many vCPUs is)"
        )
    return None


def data_gates(
    *,
    min_trials: int,
    trials: int | None,
    min_phase_s: float | None,
    settle_s: float | None,
    max_other_cpu_share: float | None,
    regime: dict,
) -> list[str]:
    """Why a re-run verdict cannot stand on its data (it becomes inconclusive), missing measurements
    included."""
    out = []
    missing = set(regime.get("missing") or ())
    if trials is not None and trials < min_trials:
        out.append(f"{trials} trial{'s' if trials != 1 else ''} per side: a verdict needs at least {min_trials}")
    shortest = regime.get("phase_s")
    if (min_phase_s is not None or settle_s is not None) and ("phase_s" in missing or shortest is None):
        out.append("the length of a phase it rests on was not measured")
    if shortest is not None and min_phase_s is not None and shortest < min_phase_s:
        out.append(f"a phase it rests on lasted {shortest:.3g} s, under the study's minimum of {min_phase_s:g} s")
    if shortest is not None and settle_s is not None and shortest < settle_s:
        out.append(
            f"a phase it rests on lasted {shortest:.3g} s, under the {settle_s:g} s the study found its "
            "throughput needs to settle"
        )
    busiest = regime.get("other_cpu_share")
    if max_other_cpu_share is not None and ("other_cpu_share" in missing or busiest is None):
        out.append("how busy the machine was during a phase it rests on was not measured")
    if busiest is not None and max_other_cpu_share is not None and busiest > max_other_cpu_share:
        out.append(
            f"the machine was busy: other processes used {busiest:.0%} of its CPUs during a phase it rests "
            f"on (the bound is {max_other_cpu_share:.0%})"
        )
    if regime.get("disturbed"):  # fsmeter.regime: a disk model's replies left late (this machine's noise)
        steal = regime.get("steal_share")
        out.append(
            "the disk model's replies were late in a phase it rests on: their lateness p99 exceeded 5% of the "
            "mean modelled service time, or all their lateness 5% of all their service, so this machine's "
            "scheduling is in the figures"
            + (
                f" (the hypervisor took up to {steal:.1%} of the CPUs' time, as steal, in a phase it rests on: "
                "work outside this machine: another guest's, or the host's own)"
                if steal is not None and steal > STEAL_NAMED_SHARE
                else ""
            )
        )
    if regime.get("emulated"):  # fsmeter.guest: a guest under TCG measured the emulator
        from fsmeter.guest.kernels import EMULATED_NOTE

        out.append(
            f"it rests on cells run in a guest under software emulation ({EMULATED_NOTE}): functional results only"
        )
    return out
