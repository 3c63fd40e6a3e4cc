"""What runs inside a guest: one kernel level's cells of a campaign, as whole trials.

Started by the guest's init as ``python -m fsmeter.guest.inside SPEC.json`` (the host's fsmeter,
seen through the shared root filesystem). It loads the filesystems' modules, formats the scratch
disk the host made for it and mounts it as fsmeter's scratch folder (and finds, by its serial, the
disk-model drive the host serves when the campaign's target is a disk model: the cells' filesystems
go on it, fsmeter.provision.targets.guestmodel), then runs its cells with the
campaign runner (fresh filesystem per cell, cache control, repetition policy: the same code as on
the host). Every trial and cell status goes to a journal in the shared folder, one JSON line each,
which the host copies into the campaign's store; nothing in the guest writes to the store itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from fsmeter.guest.vm import DISK_SERIAL, MODEL_JOURNAL_SERIAL, MODEL_SERIAL, READY

SCRATCH_MOUNT = "/tmp/fsmeter-guest-scratch"
#: Filesystems whose kernel module has another name.
MODULES = {"ext2": "ext4", "ext3": "ext4"}


class JournalStore:
    """The part of fsmeter.store.Store the runner uses for a cell, written as JSON lines."""

    def __init__(self, path: str, rows: dict, guest: dict):
        self.path = path
        self.rows = rows  # cell id -> {"trials": [...], "headline": [[n, v], ...]}
        self.guest = guest

    def _write(self, doc: dict) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(doc, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def trials(self, cell_id: int) -> list:
        return list(self.rows.get(str(cell_id), {}).get("trials", []))

    def headline_values(self, cell_id: int) -> list:
        return [tuple(x) for x in self.rows.get(str(cell_id), {}).get("headline", [])]

    def set_cell_status(
        self, cell_id: int, status: str, cause: str | None = None, stop_reason: str | None = None
    ) -> None:
        self._write({"op": "cell", "cell_id": cell_id, "status": status, "cause": cause, "stop_reason": stop_reason})

    def set_campaign_status(self, campaign_id: int, status: str) -> None:
        pass

    def record_storage_probe(self, campaign_id: int, probe: dict) -> int:
        """The storage under the guest's scratch disk, as the guest measured it; the host stores it."""
        self._write({"op": "storage-probe", "probe": {**probe, "guest": self.guest}})
        return 0

    def record_trial(self, cell_id: int, number: int, **kw: Any) -> int:
        env = dict(kw.get("environment") or {})
        env["guest"] = self.guest  # kernel level, guest settings, accelerator, emulated
        kw["environment"] = env
        self._write({"op": "trial", "cell_id": cell_id, "number": number, **kw})
        return 0


def _sh(cmd: list) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)


def device_with_serial(serial: str) -> str | None:
    """The block device whose serial is ``serial`` (the scratch disk's, the disk model's)."""
    for name in sorted(os.listdir("/sys/block")):
        try:
            with open(f"/sys/block/{name}/serial") as f:
                if f.read().strip() == serial:
                    return f"/dev/{name}"
        except OSError:
            continue
    return None


def scratch_device() -> str | None:
    """The block device whose serial is the scratch disk's."""
    return device_with_serial(DISK_SERIAL)


def model_disk(passed: dict) -> dict:
    """The disk-model drive the host passed: found by its serial, described for the campaign's targets
    (fsmeter.provision.targets.guestmodel) in the environment."""
    from fsmeter.provision.targets.guestmodel import ENV

    dev = device_with_serial(MODEL_SERIAL)
    if dev is None:
        raise RuntimeError(f"no block device with serial {MODEL_SERIAL}: the disk-model drive is missing")
    desc = {**passed, "device": dev, "serial": MODEL_SERIAL}
    if passed.get("journal"):
        jdev = device_with_serial(MODEL_JOURNAL_SERIAL)
        if jdev is None:
            raise RuntimeError(f"no block device with serial {MODEL_JOURNAL_SERIAL}: the journal's drive is missing")
        desc.update(journal_device=jdev, journal_serial=MODEL_JOURNAL_SERIAL)
    os.environ[ENV] = json.dumps(desc)
    seen = all(os.path.exists(p) for p in passed.get("stats_paths", []))
    return {"model_device": dev, "model_journal_device": desc.get("journal_device"), "model_stats_visible": seen}


def setup(filesystems: list, passed_model: dict | None = None) -> dict:
    """Modules, scratch disk and environment; returns what was done (for the journal)."""
    modules = sorted({MODULES.get(f, f) for f in filesystems} | {"loop"})
    loaded = {m: _sh(["modprobe", m]).returncode == 0 for m in modules}
    dev = scratch_device()
    if dev is None:
        raise RuntimeError(f"no block device with serial {DISK_SERIAL}: the scratch disk is missing")
    mk = _sh(["mkfs.ext4", "-q", "-F", "-E", "nodiscard", dev])
    if mk.returncode != 0:
        raise RuntimeError(f"mkfs.ext4 {dev}: {mk.stderr.strip()}")
    os.makedirs(SCRATCH_MOUNT, exist_ok=True)
    mt = _sh(["mount", dev, SCRATCH_MOUNT])
    if mt.returncode != 0:
        raise RuntimeError(f"mount {dev}: {mt.stderr.strip()}")
    os.environ["FSMETER_SCRATCH"] = os.path.join(SCRATCH_MOUNT, "fsmeter")
    os.environ["FSMETER_LOCK_DIR"] = "/tmp"  # the guest's own: the host's run lock covers the whole guest
    model = model_disk(passed_model) if passed_model is not None else {}
    return {"modules": loaded, "scratch_device": dev, **model}


def main(spec_path: str) -> int:
    with open(spec_path) as f:
        spec = json.load(f)
    journal = spec["journal"]
    store = JournalStore(journal, spec["rows"], spec["guest"])
    try:
        done = setup(spec["filesystems"], spec.get("disk_model"))
    except Exception as exc:  # the host marks this level's cells failed with the cause
        store._write({"op": "setup-failed", "cause": str(exc)})
        print(f"fsmeter guest: setup failed: {exc}", flush=True)
        return 1
    store.guest = {**store.guest, "kernel_release": os.uname().release, "modules": done["modules"]}
    store._write({"op": "ready", "kernel_release": os.uname().release, **done})
    print(f"{READY} {os.uname().release}", flush=True)

    from rich.console import Console

    from fsmeter.campaign import parse_campaign, plan
    from fsmeter.runner import _run_cells

    if spec.get("cwd") and os.path.isdir(spec["cwd"]):
        os.chdir(spec["cwd"])  # workload files named relative to where the campaign was started
    c = parse_campaign(spec["campaign_text"], spec.get("campaign_where", "campaign"))
    if spec.get("disk_model") and c.order == "interleaved":
        # One drive for every cell: a cell keeps its filesystem on it between its trials, so the cells
        # take the drive one after another.
        c = c.model_copy(update={"order": "cells"})
        print("fsmeter guest: order = 'cells' here: the cells share the one disk-model drive", flush=True)
    wanted = set(spec["cells"])
    cells = [x for x in plan(c) if x.index in wanted]
    rows = [
        {
            "id": spec["cell_ids"][str(x.index)],
            "status": spec["status"][str(x.index)],
            "idx": x.index,
            "workload": x.workload,
        }
        for x in cells
    ]
    console = Console(file=sys.stdout, force_terminal=False, width=120)
    counts = _run_cells(
        c, cells, rows, store, spec["campaign_id"], console, show_progress=False, cap_notes=spec.get("cap_notes", True)
    )
    store._write({"op": "finished", "counts": counts})
    print("fsmeter guest: finished", json.dumps(counts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
