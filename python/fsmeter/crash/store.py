"""Crash results in the results store, beside every other campaign.

A crash campaign becomes a campaign named ``crash-<name>``. Each filesystem x size x dirty-set
cell is a cell of workload ``crash-fsync`` (the load it records), with the factors ``filesystem``
(the configuration's title, journal mode included), ``size`` and ``dirty``. Each power cut is a
trial:
- status ``ok``;
- ``corrupt`` when anything fsync had promised was lost (a finding);
- ``failed`` when the image did not mount after its check.
Its metrics are the recovery times and the check's counters. `fsmeter campaign show`, `report`,
`export` and `compare-runs` then read crash campaigns like any other. results.json stays the full
record: fsck output, ledger paths, evidence images.
"""

from __future__ import annotations

from fsmeter.units import format_size

WORKLOAD = "crash-fsync"
#: (phase, metric, unit, higher_is_better, where in a crash point). The first is the headline.
METRICS = [
    ("recovery", "check_s", "s", False, ("recovery", "fsck_s")),
    ("recovery", "mount_s", "s", False, ("recovery", "mount_s")),
    ("recovery", "journal_replay_s", "s", False, ("recovery", "journal_replay_s")),
    ("recovery", "lost_found_entries", "entries", False, ("recovery", "lost_found_entries")),
    ("check", "bytes_lost_beyond_fsync", "bytes", False, ("check", "counters", "bytes_lost_beyond_fsync")),
    ("check", "files_lost_beyond_fsync", "files", False, ("check", "counters", "files_lost_beyond_fsync")),
    ("check", "entries_lost_beyond_fsync", "entries", False, ("check", "counters", "entries_lost_beyond_fsync")),
    ("check", "files_truncated_beyond_fsync", "files", False, ("check", "counters", "files_truncated_beyond_fsync")),
    ("check", "files_zero_tail", "files", False, ("check", "counters", "files_zero_tail")),
    ("check", "files_missing_unpromised", "files", False, ("check", "counters", "files_missing_unpromised")),
    ("check", "blocks_garbage", "blocks", False, ("check", "counters", "blocks_garbage")),
]


def cell_factors(title: str, size: int, dirty: int) -> dict:
    return {"filesystem": title, "size": format_size(size), "dirty": format_size(dirty)}


def _get(point: dict, path: tuple) -> float | None:
    v = point
    for k in path:
        if not isinstance(v, dict) or k not in v:
            return None
        v = v[k]
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def point_status(point: dict) -> tuple:
    """(status, cause) of a crash point as a trial."""
    rec = point.get("recovery", {})
    if rec.get("mount_error"):
        return "failed", f"the cut image does not mount after its check: {rec['mount_error']}"
    if point.get("finding"):
        c = point.get("check", {}).get("counters", {})
        return "corrupt", (
            f"lost beyond fsync: {c.get('bytes_lost_beyond_fsync', 0)} bytes, "
            f"{c.get('files_lost_beyond_fsync', 0)} files, "
            f"{c.get('entries_lost_beyond_fsync', 0)} directory entries; evidence "
            f"{point.get('evidence_image', 'not kept')}"
        )
    return "ok", None


def point_metrics(point: dict) -> list:
    out = []
    for i, (phase, name, unit, hib, path) in enumerate(METRICS):
        v = _get(point, path)
        if v is None and phase == "check" and "check" in point:
            v = 0.0  # a counter the check did not need to report
        out.append(
            {"phase": phase, "name": name, "unit": unit, "higher_is_better": hib, "value": v, "headline": i == 0}
        )
    return out


def point_environment(doc: dict, cell: dict, point: dict) -> dict:
    host = doc.get("host", {})
    camp = doc.get("campaign", {}).get("campaign", {})
    return {
        "hostname": host.get("hostname"),
        "kernel": host.get("kernel"),
        "cpu_model": host.get("cpu_model"),
        "mem_bytes": host.get("mem_bytes"),
        "cpus_online": host.get("cpus_online"),
        "target_kind": "loop (blocklog)",
        "fs": cell.get("filesystem"),
        "mkfs_command": " ".join(cell.get("mkfs_argv", [])) or None,
        "mkfs_tool_version": cell.get("mkfs_version"),
        "mount_options": cell.get("mount_options_in_effect") or cell.get("mount_options"),
        "seed": camp.get("seed"),
        "fsmeter_version": doc.get("fsmeter_version"),
        "cut": point.get("cut"),
        "cut_after_s": point.get("cut_after_s"),
        "fsck_repairs": point.get("recovery", {}).get("fsck_repairs"),
        "evidence_image": point.get("evidence_image"),
    }


class CrashStore:
    """Opens the store, registers the campaign, and records each crash point as it is measured."""

    def __init__(self, path, name: str, source: str, cells: list):
        from fsmeter.store import open_store

        self.store = open_store(path)
        self.path = self.store.path
        self.campaign_id = self.store.create_campaign(f"crash-{name}", source, [(WORKLOAD, f) for f in cells])
        self.cell_ids = [r["id"] for r in self.store.cells(self.campaign_id)]

    def record(self, index: int, doc: dict, cell: dict, point: dict, started: str, ended: str) -> None:
        status, cause = point_status(point)
        self.store.record_trial(
            self.cell_ids[index],
            point["index"] + 1,
            status=status,
            cause=cause,
            started=started,
            ended=ended,
            metrics=point_metrics(point),
            environment=point_environment(doc, cell, point),
        )

    def cell_done(self, index: int, status: str, cause: str | None = None) -> None:
        self.store.set_cell_status(self.cell_ids[index], status, cause)

    def close(self, status: str) -> None:
        self.store.set_campaign_status(self.campaign_id, status)
        self.store.close()
