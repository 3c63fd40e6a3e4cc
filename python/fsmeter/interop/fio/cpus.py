"""Where a fio job's threads run and where their buffers' memory comes from: cpus_allowed, cpumask,
numa_cpu_nodes (with cpus_allowed_policy) and numa_mem_policy."""

from __future__ import annotations

import os
from pathlib import Path

from fsmeter.interop.fio.values import Ctx
from fsmeter.interop.fio_jobfile import parse_fio_int


def _id_list(ctx: Ctx, opt, text: str, what: str, limit: int) -> list:
    """fio's CPU and node lists: 'all', or numbers and A-B ranges separated by commas."""
    if text.strip() == "all":
        return list(range(limit))
    out = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            a = parse_fio_int(lo)
            b = parse_fio_int(hi) if sep else a
        except ValueError:
            ctx.fail(opt, f"{part.strip()!r}: give {what} numbers and A-B ranges separated by commas, or all")
        if a < 0 or b < a:
            ctx.fail(opt, f"{part.strip()!r}: a range runs from a lower to a higher {what} number")
        out.extend(range(a, b + 1))
    return sorted(set(out))


def _numa_nodes() -> dict:
    """This machine's NUMA nodes -> their CPUs (Linux sysfs); one node 0 with every CPU when there is no NUMA."""
    base = Path("/sys/devices/system/node")
    nodes = {}
    for d in sorted(base.glob("node[0-9]*")) if base.is_dir() else []:
        try:
            text = (d / "cpulist").read_text().strip()
        except OSError:
            continue
        cpus = []
        for part in filter(None, text.split(",")):
            lo, _, hi = part.partition("-")
            cpus.extend(range(int(lo), int(hi or lo) + 1))
        nodes[int(d.name[4:])] = cpus
    return nodes or {0: sorted(os.sched_getaffinity(0))}


def thread_placement(ctx: Ctx, notes: list) -> dict | None:
    """cpus_allowed / cpumask / numa_cpu_nodes (with cpus_allowed_policy) and numa_mem_policy -> where the job's
    threads run (sched_setaffinity) and where their buffers' memory comes from (set_mempolicy)."""
    out: dict = {}
    allowed = sorted(os.sched_getaffinity(0))
    given = [k for k in ("cpus_allowed", "cpumask", "numa_cpu_nodes") if ctx.job.get(k) is not None]
    if len(given) > 1:
        ctx.fail(
            ctx.job.get(given[1]),
            f"give one of {', '.join(given)}: fsmeter does not combine them (fio lets the "
            "later one win in a way that depends on its build)",
        )
    if given:
        key = given[0]
        opt = ctx.job.get(key)
        value = (opt.value or "").strip()
        if key == "cpus_allowed":
            cpus = _id_list(ctx, opt, value, "CPU", os.cpu_count() or 1)
        elif key == "cpumask":
            try:
                mask = parse_fio_int(value)
            except ValueError:
                ctx.fail(opt, "give a bit mask of CPUs (a decimal or 0x number)")
            cpus = [c for c in range(mask.bit_length()) if mask >> c & 1]
        else:
            nodes = _numa_nodes()
            want = _id_list(ctx, opt, value, "node", max(nodes) + 1)
            missing = [n for n in want if n not in nodes]
            if missing:
                ctx.fail(
                    opt,
                    f"NUMA node {missing[0]} does not exist on this machine (its nodes: "
                    f"{', '.join(map(str, sorted(nodes)))}): name nodes it has",
                )
            cpus = sorted({c for n in want for c in nodes[n]})
        outside = [c for c in cpus if c not in allowed]
        if not cpus or outside:
            ctx.fail(
                opt,
                f"CPU {outside[0] if outside else '(none)'} is not one this process may run on (CPUs "
                f"{', '.join(map(str, allowed))}): name CPUs among them",
            )
        out["cpus"] = cpus
        pol = ctx.job.get("cpus_allowed_policy")
        if pol is not None:
            p = (pol.value or "").strip()
            if p not in ("shared", "split"):
                ctx.fail(pol, "use shared or split")
            if p == "split":
                out["split"] = True
        notes.append(
            f"{opt.as_written}: the job's threads run on CPUs {cpus}"
            + (" (one each, round robin)" if out.get("split") else "")
            + " (sched_setaffinity)"
        )
    mp = ctx.job.get("numa_mem_policy")
    if mp is not None:
        mode, _, nodelist = (mp.value or "").strip().partition(":")
        mode = mode.strip()
        if mode not in ("default", "prefer", "bind", "interleave", "local"):
            ctx.fail(mp, "use default, prefer:N, bind:NODES, interleave:NODES or local")
        nodes = _numa_nodes()
        want = _id_list(ctx, mp, nodelist, "node", max(nodes) + 1) if nodelist.strip() else []
        if mode in ("default", "local") and want:
            ctx.fail(mp, f"{mode} takes no nodes: write numa_mem_policy={mode}")
        if mode in ("prefer", "bind", "interleave") and not want:
            ctx.fail(mp, f"{mode} needs nodes: write numa_mem_policy={mode}:0")
        if mode == "prefer" and len(want) != 1:
            ctx.fail(mp, "prefer takes one node")
        missing = [n for n in want if n not in nodes]
        if missing:
            ctx.fail(
                mp,
                f"NUMA node {missing[0]} does not exist on this machine (its nodes: "
                f"{', '.join(map(str, sorted(nodes)))}): the policy cannot be honoured; name nodes it has",
            )
        out["mem_policy"] = {"mode": mode, "nodes": want}
        notes.append(f"{mp.as_written}: each thread's buffers are allocated under this policy (set_mempolicy)")
    return out or None
