"""A small results store filled through the store's own API: two seq-read cells (ext4 with one thread,
xfs with four), two trials each (the first discarded), with an engine-shaped phase report."""

from __future__ import annotations

from fsmeter.store import open_store

REPORT = {
    "phase": "run",
    "interrupted": False,
    "threads": 1,
    "warmup_s": 0.5,
    "elapsed_s": 2.0,
    "total": {"ops": 100, "bytes": 409600, "ops_per_s": 50.0, "bytes_per_s": 204800.0},
    "ops": {
        "read": {
            "count": 100,
            "bytes": 409600,
            "lat": {
                "count": 100,
                "min_ns": 10,
                "mean_ns": 20.0,
                "stdev_ns": 1.0,
                "p50_ns": 20,
                "p90_ns": 25,
                "p99_ns": 30,
                "p999_ns": 31,
                "p9999_ns": 31,
                "max_ns": 31,
                "buckets": [[31, 100]],
            },
        }
    },
    "intervals": [
        {"t_s": 1.0, "dur_s": 1.0, "ops": 40, "bytes": 163840},
        {"t_s": 2.0, "dur_s": 1.0, "ops": 60, "bytes": 245760},
    ],
    "cpu": {"process_pct": 3.0},
}


def metric(value, name="ops_per_s", headline=True):
    return {
        "phase": "run",
        "name": name,
        "unit": "ops/s",
        "higher_is_better": True,
        "value": value,
        "headline": headline,
    }


def fill(path):
    store = open_store(path)
    cid = store.create_campaign(
        "demo",
        "name = 'demo'\n",
        [("seq-read", {"filesystem": "ext4", "threads": 1}), ("seq-read", {"filesystem": "xfs", "threads": 4})],
    )
    cells = store.cells(cid)
    for i, cell in enumerate(cells):
        for n in (1, 2):
            store.record_trial(
                cell["id"],
                n,
                status="ok",
                started="t0",
                discarded=(n == 1),
                phases=[{"key": "run", "engine_phase": "run", "report": REPORT, "cache_method": "remount"}],
                metrics=[metric(100.0 * (i + 1) + n), metric(1.5, "cpu_pct", False)],
                environment={
                    "kernel": "6.1",
                    "fs": cell["factors"],
                    "seed": 42,
                    "proc_mounts_line": "/dev/loop0 /mnt ext4 rw,relatime 0 0",
                    "mkfs_options": ["-q"],
                    "something_else": 7,
                },
            )
    return store, cid
