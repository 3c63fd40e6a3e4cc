"""Small synthetic results stores for the report, export and compare-runs tests.

Filled through the store's own API (create_campaign, record_trial, set_*_status), with engine-shaped
phase reports, so every view reads exactly what a real campaign would leave behind.
"""

from __future__ import annotations

import json
import random

from fsmeter.store import open_store

REPLAY_OPS = ["NTCreateX", "Close", "ReadX", "WriteX", "QueryFileInfo", "Find"]


def _lat(mean_ns: float, count: int) -> dict:
    m = float(mean_ns)
    return {
        "count": count,
        "min_ns": int(m * 0.3),
        "mean_ns": m,
        "stdev_ns": m * 0.2,
        "p50_ns": int(m * 0.9),
        "p90_ns": int(m * 1.4),
        "p99_ns": int(m * 2.5),
        "p999_ns": int(m * 4),
        "p9999_ns": int(m * 6),
        "max_ns": int(m * 9),
        "buckets": [[int(m), count // 2], [int(m * 9), count - count // 2]],
    }


def phase_report(
    mib_s: float,
    ops: dict,
    rng: random.Random,
    elapsed_s: float = 10.0,
    n_int: int = 20,
    bs: int = 4096,
    threads: int = 1,
) -> dict:
    """An engine phase report: ``ops`` maps op kind -> (share of ops, mean latency ns)."""
    total_bytes = mib_s * (1 << 20) * elapsed_s
    total_ops = max(1, int(total_bytes / bs))
    kinds = {}
    for kind, (share, lat_ns) in ops.items():
        n = max(1, int(total_ops * share))
        b = n * bs if kind in ("read", "write", "ReadX", "WriteX") else 0
        kinds[kind] = {
            "count": n,
            "bytes": b,
            "ops_per_s": n / elapsed_s,
            "bytes_per_s": b / elapsed_s,
            "lat": _lat(lat_ns * rng.uniform(0.95, 1.05), n),
        }
    # Interval throughput: a ramp over the first quarter, then flat with noise.
    dur = elapsed_s / n_int
    intervals = []
    for i in range(n_int):
        ramp = min(1.0, 0.4 + 0.6 * i / max(1, n_int // 4))
        f = ramp * rng.uniform(0.97, 1.03)
        o = int(total_ops / n_int * f)
        intervals.append({"t_s": round((i + 1) * dur, 6), "dur_s": dur, "ops": o, "bytes": o * bs})
    return {
        "phase": "run",
        "interrupted": False,
        "threads": threads,
        "warmup_s": 1.0,
        "elapsed_s": elapsed_s,
        "total": {
            "ops": total_ops,
            "bytes": int(total_bytes),
            "ops_per_s": total_ops / elapsed_s,
            "bytes_per_s": total_bytes / elapsed_s,
        },
        "ops": kinds,
        "intervals": intervals,
        "cpu": {
            "user_s": 0.1,
            "sys_s": 0.2,
            "process_pct": 3.0,
            "sys_user_pct": 1.0,
            "sys_system_pct": 2.0,
            "sys_iowait_pct": 0.0,
            "sys_idle_pct": 97.0,
        },
        "counters": {},
        "extra": {},
        "warnings": [],
    }


def environment(fs: str, family: str, params: dict, threads: int = 1) -> dict:
    return {
        "hostname": "testhost",
        "kernel": "6.1.0-test",
        "cpu_model": "Test CPU @ 2.0GHz",
        "mem_bytes": 8 << 30,
        "cpus_online": 4,
        "cpus_used": threads,
        "target_kind": "loop",
        "device": "/dev/loop7",
        "fs": fs,
        "mkfs_command": f"mkfs.{fs} -q /dev/loop7",
        "mkfs_options": ["-q"],
        "mkfs_tool": f"mkfs.{fs}",
        "mkfs_tool_version": "1.47.0",
        "mount_options": "rw,relatime",
        "scheduler": "mq-deadline",
        "proc_mounts_line": f"/dev/loop7 /mnt {fs} rw,relatime 0 0",
        "readahead_kb": 128,
        "cache_method": "remount",
        "seed": 42,
        "fsmeter_version": "0.1.0",
        "job": {
            "dir": "/x",
            "threads": threads,
            "seed": 42,
            "backend": "psync",
            "interval_s": 0.5,
            "workload": {"family": family, **params},
        },
    }


def add_trials(
    store,
    cell_id: int,
    values: list,
    family: str,
    fs: str,
    params: dict,
    rng: random.Random,
    threads: int = 1,
    ops: dict | None = None,
    lat_scale: float = 1.0,
    start: int = 1,
) -> None:
    """One ok trial per value of the headline (MiB/s) with the access metrics."""
    ops = ops or {"read": (0.7, 50_000 * lat_scale), "write": (0.3, 80_000 * lat_scale)}
    for n, v in enumerate(values, start):
        rep = phase_report(v, ops, rng, threads=threads)
        metrics = [
            {
                "phase": "run",
                "name": "MiB_per_s",
                "unit": "MiB/s",
                "higher_is_better": True,
                "value": v,
                "headline": True,
            },
            {
                "phase": "run",
                "name": "ops_per_s",
                "unit": "ops/s",
                "higher_is_better": True,
                "value": rep["total"]["ops_per_s"],
            },
        ]
        if "read" in rep["ops"]:
            metrics.append(
                {
                    "phase": "run",
                    "name": "read_p99_us",
                    "unit": "us",
                    "higher_is_better": False,
                    "value": rep["ops"]["read"]["lat"]["p99_ns"] / 1000.0,
                }
            )
        store.record_trial(
            cell_id,
            n,
            status="ok",
            started="2024-01-01T00:00:00Z",
            phases=[
                {
                    "key": "prepare",
                    "engine_phase": "prepare",
                    "measured": False,
                    "report": {"phase": "prepare", "elapsed_s": 0.1, "total": {}, "ops": {}},
                },
                {"key": "run", "engine_phase": "run", "cache_method": "remount", "report": rep},
            ],
            metrics=metrics,
            environment=environment(fs, family, params, threads),
        )


FS_SPEED = {"ext4": 1.0, "xfs": 0.97, "btrfs": 0.6}


def make_store(path, seed: int = 1, n_trials: int = 3) -> int:
    """A campaign with three workloads: access (fs x threads, one failed trial), replay (per-op kinds,
    one failed cell) and an iozone-like file size x record size grid. Returns the campaign id."""
    rng = random.Random(seed)
    store = open_store(path)
    cells = [("seq-read", {"filesystem": fs, "threads": t}) for fs in ("ext4", "xfs", "btrfs") for t in (1, 2, 4)]
    cells += [("dbench-quick", {"filesystem": fs}) for fs in ("ext4", "xfs", "btrfs")]
    cells += [
        ("iozone-grid", {"filesystem": fs, "file_size": f, "record_size": r})
        for fs in ("ext4", "xfs")
        for f in ("64K", "1M")
        for r in ("4K", "64K")
    ]
    cid = store.create_campaign("synth", "name = 'synth'\n", cells)
    for c in store.cells(cid):
        f = json.loads(c["factors"])
        fs = f["filesystem"]
        if c["workload"] == "seq-read":
            t = f["threads"]
            base = 500.0 * FS_SPEED[fs] * (1 + 0.5 * (t - 1) ** 0.5)
            vals = [base * rng.gauss(1.0, 0.02) for _ in range(n_trials)]
            add_trials(store, c["id"], vals, "access", fs, {"file_size": 1 << 20}, rng, threads=t)
            if fs == "xfs" and t == 4:  # a failed trial with its cause, after the good ones
                store.record_trial(
                    c["id"],
                    n_trials + 1,
                    status="failed",
                    started="2024-01-01T00:00:00Z",
                    cause="EngineFailure: write /mnt/f0: No space left on device (os error 28)",
                )
            store.set_cell_status(c["id"], "done", stop_reason="fixed-n")
        elif c["workload"] == "dbench-quick":
            if fs == "btrfs":
                store.record_trial(
                    c["id"],
                    1,
                    status="failed",
                    started="2024-01-01T00:00:00Z",
                    cause="UserError: mount -o remount failed: device busy",
                )
                store.set_cell_status(c["id"], "failed", cause="every trial failed")
                continue
            ops = {
                op: (1.0 / len(REPLAY_OPS), 20_000 * (i + 1) * (1.0 if fs == "ext4" else 1.0 + 0.3 * (i % 2)))
                for i, op in enumerate(REPLAY_OPS)
            }
            vals = [120.0 * FS_SPEED[fs] * rng.gauss(1.0, 0.02) for _ in range(n_trials)]
            add_trials(store, c["id"], vals, "replay", fs, {"clients": 2}, rng, ops=ops)
            store.set_cell_status(c["id"], "done", stop_reason="fixed-n")
        else:
            size = {"64K": 64, "1M": 1024, "4K": 4}
            base = 100.0 * FS_SPEED[fs] * (1 + size[f["record_size"]] / 64) * (1 + size[f["file_size"]] / 1024)
            vals = [base * rng.gauss(1.0, 0.02) for _ in range(n_trials)]
            add_trials(store, c["id"], vals, "iozone", fs, {}, rng)
            store.set_cell_status(c["id"], "done", stop_reason="fixed-n")
    store.set_campaign_status(cid, "done")
    store.close()
    return cid


def make_pair(path, change_pct: float, noise_pct: float, n: int = 8, seed: int = 7) -> tuple:
    """Two campaigns A and B of seq-read on ext4 and xfs; B's throughput is A's mean x (1 + change)."""
    rng = random.Random(seed)
    store = open_store(path)
    ids = []
    for name, factor in (("A", 1.0), ("B", 1.0 + change_pct / 100.0)):
        cid = store.create_campaign(
            name, f"name = '{name}'\n", [("seq-read", {"filesystem": fs}) for fs in ("ext4", "xfs")]
        )
        for c in store.cells(cid):
            vals = [1000.0 * factor * rng.gauss(1.0, noise_pct / 100.0) for _ in range(n)]
            fs = json.loads(c["factors"])["filesystem"]
            add_trials(store, c["id"], vals, "access", fs, {"file_size": 1 << 20}, rng)
            store.set_cell_status(c["id"], "done")
        store.set_campaign_status(cid, "done")
        ids.append(cid)
    store.close()
    return tuple(ids)
