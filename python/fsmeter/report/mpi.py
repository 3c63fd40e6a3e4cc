"""Scale-out figures of MPI runs: the per-rank spread of one phase, and rates against ranks."""

from __future__ import annotations


def _si(x: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= div:
            return f"{x / div:.3g}{unit}"
    return f"{x:.3g}"


def rank_summary(phase: str, mpi: dict) -> str:
    """One line under a phase table: ranks, hosts, per-rank min/mean/max, imbalance, done times."""
    r = mpi["rank_ops_per_s"]
    b = mpi.get("rank_bytes_per_s") or {}
    data = ""
    if b.get("max"):
        data = f", {b['min'] / 2**20:.1f}/{b['mean'] / 2**20:.1f}/{b['max'] / 2**20:.1f} MiB/s"
    wall = ""
    sw = mpi.get("stonewall")
    if sw:
        wall = (
            f"; stonewall: stopped when rank {sw['first_rank']} finished"
            if sw.get("mode") == "first-done"
            else f"; stonewall at {sw.get('stonewall_s')} s"
        )
    return (
        f"  [dim]{phase}:[/] {mpi['ranks']} ranks on {len(mpi['hosts'])} host(s); per rank (min/mean/max) "
        f"{_si(r['min'])}/{_si(r['mean'])}/{_si(r['max'])} ops/s{data}; imbalance {mpi['imbalance_pct']:.1f}% "
        f"(slowest vs fastest rank); first rank done at {mpi['first_done_s']:.3f} s, last at "
        f"{mpi['last_done_s']:.3f} s after the barrier{wall}"
    )


def scaling_rows(db, campaign_id: int, workload: str) -> list:
    """Per cell and measured phase of a campaign that varies `ranks`: the mean over kept trials of
    the merged rates and of the per-rank imbalance. [{config, ranks, phase, ops_per_s, MiB_per_s,
    imbalance_pct, rank_min, rank_max, trials}]"""
    import json

    from fsmeter.store import open_store

    with open_store(db, create=False) as store:
        rows = store.conn.execute(
            "SELECT c.factors, p.key, p.report FROM phases p JOIN trials t ON p.trial_id = t.id "
            "JOIN cells c ON t.cell_id = c.id WHERE c.campaign_id = ? AND c.workload = ? AND t.status = 'ok' "
            "AND t.discarded = 0 AND p.measured = 1 AND p.discarded = 0 ORDER BY c.idx, p.seq",
            (campaign_id, workload),
        ).fetchall()
    acc: dict = {}
    for factors, key, report in rows:
        f = json.loads(factors)
        rep = json.loads(report)
        ranks = f.get("ranks")
        m = rep.get("mpi") or {}
        if ranks is None:
            continue
        config = ", ".join(f"{k}={v}" if k != "filesystem" else str(v) for k, v in f.items() if k != "ranks")
        a = acc.setdefault((config, int(ranks), key), {"ops": [], "bytes": [], "imb": [], "rmin": [], "rmax": []})
        a["ops"].append(rep["total"]["ops_per_s"])
        a["bytes"].append(rep["total"]["bytes_per_s"])
        if m:
            a["imb"].append(m["imbalance_pct"])
            a["rmin"].append(m["rank_ops_per_s"]["min"])
            a["rmax"].append(m["rank_ops_per_s"]["max"])
    mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
    return [
        {
            "config": c,
            "ranks": r,
            "phase": ph,
            "ops_per_s": mean(a["ops"]),
            "MiB_per_s": (mean(a["bytes"]) or 0) / 2**20,
            "imbalance_pct": mean(a["imb"]),
            "rank_min_ops_per_s": mean(a["rmin"]),
            "rank_max_ops_per_s": mean(a["rmax"]),
            "trials": len(a["ops"]),
        }
        for (c, r, ph), a in sorted(acc.items())
    ]


def scaling_table(db, campaign_id: int):
    """A rich Table of the merged rate of every measured phase against ranks, per workload and
    configuration, with the speedup over the fewest ranks and the per-rank imbalance; None when the
    campaign does not vary `ranks`."""
    from rich.table import Table

    from fsmeter.store import open_store

    with open_store(db, create=False) as store:
        wls = [
            r[0]
            for r in store.conn.execute(
                "SELECT DISTINCT workload FROM cells WHERE campaign_id = ? AND json_extract(factors, '$.ranks') "
                "IS NOT NULL ORDER BY idx",
                (campaign_id,),
            )
        ]
    rows = [(w, r) for w in wls for r in scaling_rows(db, campaign_id, w)]
    ranks = sorted({r["ranks"] for _, r in rows})
    if len(ranks) < 2:
        return None
    t = Table(
        title=f"campaign {campaign_id}: aggregate rate against MPI ranks (mean of kept trials; speedup "
        f"over {ranks[0]} rank(s); imbalance = slowest vs fastest rank)"
    )
    for col in ("workload", "configuration", "phase", "unit", *[f"{n} ranks" for n in ranks], "speedup", "imbalance %"):
        t.add_column(col, justify="right" if col not in ("workload", "configuration", "phase", "unit") else "left")
    groups: dict = {}
    for w, r in rows:
        groups.setdefault((w, r["config"], r["phase"]), {})[r["ranks"]] = r
    for (w, config, phase), by in groups.items():
        units = [("ops/s", "ops_per_s")] + (
            [("MiB/s", "MiB_per_s")] if any(x["MiB_per_s"] > 0 for x in by.values()) else []
        )
        first, last = by.get(ranks[0]), by.get(max(by))
        imb = "/".join(
            f"{by[n]['imbalance_pct']:.0f}" if n in by and by[n]["imbalance_pct"] is not None else "-" for n in ranks
        )
        for unit, key in units:
            speed = f"{last[key] / first[key]:.2f}x" if first and last and first[key] else "-"
            t.add_row(w, config or "-", phase, unit, *[_si(by[n][key]) if n in by else "-" for n in ranks], speed, imb)
    return t


def scaling_figures(view, w, idx: int, fig, palette: list) -> list:
    """Rates against ranks (throughput when the phase moves data, else operations) and the per-rank
    imbalance against ranks, one line per configuration and phase: for workloads whose campaign
    varies `ranks`."""
    if "ranks" not in w.varying:
        return []
    rows = scaling_rows(view.db, view.campaign["id"], w.workload)
    series: dict = {}
    for r in rows:
        series.setdefault((r["config"], r["phase"]), []).append(r)
    rate, imb = [], []
    for i, ((config, phase), pts) in enumerate(series.items()):
        # MiB/s for the data families; operations/s (files, directories, ...) for the others
        data_phase = w.family in ("access", "iozone", "bonnie") and any(p["MiB_per_s"] > 0 for p in pts)
        color = {"color": palette[i % len(palette)]}
        name = f"{config} / {phase}" if config else phase
        rate.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": name + (" (MiB/s)" if data_phase else " (ops/s)"),
                "x": [p["ranks"] for p in pts],
                "y": [p["MiB_per_s"] if data_phase else p["ops_per_s"] for p in pts],
                "line": color,
            }
        )
        imb.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": name,
                "x": [p["ranks"] for p in pts],
                "y": [p["imbalance_pct"] for p in pts],
                "line": color,
            }
        )
    return [
        fig(
            f"w{idx}-ranks-rate",
            f"{w.workload}: aggregate rate against MPI ranks",
            "Every measured phase's merged rate (all ranks' operations or bytes over the latest end minus the "
            "earliest start, as IOR and mdtest count it), mean of the kept trials, one line per configuration "
            "and phase: MiB/s for the data families (access, iozone, bonnie), operations/s otherwise.",
            rate,
            {"xaxis": {"title": "ranks", "type": "log", "dtick": 0.30103}, "yaxis": {"title": "rate"}},
        ),
        fig(
            f"w{idx}-ranks-imbalance",
            f"{w.workload}: per-rank imbalance against MPI ranks",
            "How far the slowest rank's own rate is below the fastest rank's, in % of the fastest (0 = every "
            "rank equally fast), mean of the kept trials.",
            imb,
            {"xaxis": {"title": "ranks", "type": "log", "dtick": 0.30103}, "yaxis": {"title": "imbalance %"}},
        ),
    ]


__all__ = ["rank_summary", "scaling_figures", "scaling_rows", "scaling_table"]
