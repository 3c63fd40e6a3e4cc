"""The host's side of a guest campaign: one boot per kernel level, its trials back into the store.

For each level of the `kernel` factor that has unfinished cells: a fresh folder in fsmeter's
scratch directory holds the guest's scratch disk (a sparse raw image), the run's description
(spec.json) and the journal the guest writes (journal.jsonl, one JSON line per trial or cell
status). The guest runs those cells with the ordinary campaign runner; the host copies each
journal line into the campaign's store as it would have recorded a trial of its own, with the
kernel, the guest's settings and the accelerator in the trial's environment. The folder is
removed afterwards, whatever happened. The run lock the command holds is passed on to vng, which
lives as long as its QEMU, so that no other measuring fsmeter starts while a guest still runs, even if
this process dies.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from typing import Any

from fsmeter.campaign import KERNEL_FACTOR, CampaignFile
from fsmeter.errors import UserError
from fsmeter.guest import kernels, vm
from fsmeter.guest.kernels import EMULATED_NOTE


def machine(c: CampaignFile, cell) -> tuple:
    """(vCPUs, memory in bytes) of the guest a cell runs in: the [guest] section, or its guest factor levels."""
    from fsmeter.units import parse_size

    vcpus = int(cell.guest.get("vcpus", c.guest.vcpus))
    memory = parse_size(cell.guest["memory"]) if "memory" in cell.guest else c.guest.memory
    return vcpus, memory


def guest_settings(c: CampaignFile, kernel: kernels.Kernel, accel: kernels.Accel, vcpus: int, memory: int) -> dict:
    g = c.guest
    return {
        "kernel_level": kernel.level,
        "kernel_image": kernel.image,
        "kernel_version": kernel.version,
        "vcpus": vcpus,
        "memory_bytes": memory,
        "disk_size_bytes": g.disk_size,
        "disk_cache": g.disk_cache,
        "disk_format": "raw",
        "accelerator": accel.name,
        "accelerator_reason": accel.reason,
        "emulated": accel.emulated,
        "launcher": "virtme-ng",
    }


def run_guest_levels(
    c: CampaignFile,
    cells: list,
    rows: list,
    store: Any,
    campaign_id: int,
    console: Any,
    campaign_text: str,
    cap_notes: bool = True,
) -> dict:
    """Run every unfinished cell, one guest per kernel level; returns counts as the host runner does."""
    from fsmeter.provision import default_scratch

    missing = vm.missing_tools()
    if missing:
        raise UserError(f"factors.{KERNEL_FACTOR}: guests cannot run here: missing {'; '.join(missing)}")
    accel = kernels.choose(c.guest.accelerator)
    counts = {"done": 0, "failed": 0, "skipped": 0}
    levels: dict = {}
    for cell, row in zip(cells, rows):  # one boot per kernel level (and guest_vcpus x guest_memory levels)
        levels.setdefault((cell.kernel, *machine(c, cell)), []).append((cell, row))
    store.set_campaign_status(campaign_id, "running")
    if accel.emulated:
        console.print(
            f"[yellow]guests run under software emulation (TCG): {accel.reason}; their figures are "
            f"marked '{EMULATED_NOTE}'[/]"
        )
    try:
        for (level, vcpus, memory), pairs in levels.items():
            todo = [(cell, row) for cell, row in pairs if row["status"] not in ("done", "failed")]
            counts["skipped"] += len(pairs) - len(todo)
            if not todo:
                continue
            kernel = kernels.resolve(level)
            scratch = default_scratch()
            os.makedirs(scratch, exist_ok=True)
            work = tempfile.mkdtemp(prefix="guest-", dir=scratch)
            try:
                with served_model(c, work, todo, memory) as model:
                    _one_level(
                        c,
                        kernel,
                        accel,
                        vcpus,
                        memory,
                        todo,
                        store,
                        campaign_id,
                        console,
                        campaign_text,
                        work,
                        counts,
                        cap_notes,
                        model,
                    )
            except ModelUnavailable as exc:  # no guest without its disk: this level's cells fail with the cause
                _fail_cells(todo, store, counts, console, f"guest (kernel {kernel.level}): {exc}", str(exc))
            finally:
                left = mounted_under(work)
                if left:  # a model its teardown could not take down: the state file's cleanup does, not rmtree
                    console.print(
                        f"[red]{', '.join(left)} still mounted: {work} is left for fsmeter's cleanup "
                        "(the next run, or `fsmeter cleanup`)[/]"
                    )
                else:
                    shutil.rmtree(work, ignore_errors=True)
    except KeyboardInterrupt:
        store.set_campaign_status(campaign_id, "interrupted")
        raise
    store.set_campaign_status(campaign_id, "done")
    return counts


class ModelUnavailable(Exception):
    """The host could not serve the disk model a guest was to run on (its cells fail with this cause)."""


@contextlib.contextmanager
def served_model(c, work: str, todo: list, memory: int):
    """For a disk-model target: the model served on the host for the guest's whole boot (its daemon, its
    direct-I/O loop device; a second drive for the external journal when a cell has one), in the folder
    shared with the guest so that the guest reads its stats; taken down when the guest is gone. None for
    any other target. ``memory``: the guest's, which the model's image must leave to it."""
    if c.target.kind != "disk-model":
        yield None
        return
    from fsmeter.provision import default_scratch
    from fsmeter.provision.state import StateFile
    from fsmeter.provision.targets import DiskModelTarget

    journal = any(cell.fs is not None and cell.fs.external_journal for cell, _ in todo)
    folder = os.path.join(work, "model")
    try:
        os.mkdir(folder, 0o700)
        target = DiskModelTarget(
            StateFile(default_scratch()),
            f"guest-{os.getpid()}",
            c.target.size,
            c.target.model or "",
            offset_bytes=c.target.offset,
            journal_size_bytes=c.target.journal_size if journal else None,
            folder=folder,
            reserve_bytes=memory,
        )
    except OSError as exc:
        raise ModelUnavailable(f"the disk model the guest was to run on: {folder}: {exc.strerror}") from None
    try:
        try:
            target.setup()
        except (UserError, OSError) as exc:  # ProvisionError is a UserError
            why = exc.message if isinstance(exc, UserError) else str(exc)
            raise ModelUnavailable(f"the disk model the guest was to run on could not be set up: {why}") from None
        yield target
    finally:
        target.teardown()


def mounted_under(path: str) -> list[str]:
    """Mount points at or below ``path`` (a guest's folder must not be removed while one is there)."""
    from fsmeter.mounts import proc_mounts

    root = os.path.realpath(path).rstrip("/") + "/"
    return [m.target for m in proc_mounts() if (m.target.rstrip("/") + "/").startswith(root)]


def _fail_cells(pairs: list, store, counts: dict, console, cause: str, shown: str) -> None:
    """Mark each (cell, row) failed with ``cause``, counted, and say so with ``shown``."""
    for cell, row in pairs:
        store.set_cell_status(row["id"], "failed", cause=cause)
        counts["failed"] += 1
        console.print(f"[red]cell {cell.index + 1} ({cell.describe()}) failed:[/] {shown}")


def _one_level(
    c, kernel, accel, vcpus, memory, todo, store, campaign_id, console, campaign_text, work, counts, cap_notes, model
) -> None:
    """One guest boot for one kernel level's cells (``model``: the disk model served for it, or None)."""
    from fsmeter import runlock

    g = c.guest
    disk = os.path.join(work, "scratch.img")
    vm.make_disk(disk, g.disk_size)
    journal = os.path.join(work, "journal.jsonl")
    rows = {}
    for _cell, row in todo:
        old = store.trials(row["id"])
        rows[str(row["id"])] = {
            "trials": [
                {"number": t["number"], "started": t["started"], "ended": t["ended"], "status": t["status"]}
                for t in old
            ],
            "headline": [list(x) for x in store.headline_values(row["id"])],
        }
    settings = guest_settings(c, kernel, accel, vcpus, memory)
    spec = {
        "journal": journal,
        "rows": rows,
        "guest": settings,
        "campaign_text": campaign_text,
        "campaign_id": campaign_id,
        "cells": [cell.index for cell, _ in todo],
        "cell_ids": {str(cell.index): row["id"] for cell, row in todo},
        "status": {str(cell.index): row["status"] for cell, row in todo},
        "filesystems": sorted({cell.fs.name for cell, _ in todo if cell.fs is not None}),
        "cap_notes": cap_notes,
        "cwd": os.getcwd(),
    }
    info = model.info() if model is not None else {}
    if model is not None:  # the guest's disk-model targets are this drive (fsmeter.provision.targets.guestmodel)
        spec["disk_model"] = {
            "info": info,
            "stats_paths": model.stats_paths,
            "journal": model.journal_device is not None,
        }
        settings["disk_model"] = info.get("disk_model")
    spec_path = os.path.join(work, "spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    exec_cmd = f"{sys.executable} -m fsmeter.guest.inside {spec_path}"
    cmd = vm.command(
        kernel.image,
        accel.name,
        vcpus,
        memory,
        disk,
        g.disk_cache,
        work,
        exec_cmd,
        model_device=model.device if model is not None else None,
        model_journal_device=model.journal_device if model is not None else None,
    )
    on = f", on a model of the {info.get('disk_model_drive')}" if model is not None else ""
    console.print(
        f"kernel {kernel.level} ({kernel.version}): booting a guest ({accel.name}, {vcpus} vCPU, "
        f"{memory >> 20} MiB{on}) for {len(todo)} cell(s)"
    )
    seen = {"lines": 0}
    by_id = {row["id"]: (cell, row) for cell, row in todo}

    def on_line(line: str) -> None:
        # The guest's runner prints its cell notes and failures; pass them on, and copy the journal as it grows.
        if line.startswith("cell ") or line.startswith("fsmeter guest:"):
            console.print(f"  [dim]guest {kernel.level}:[/] {line}", markup=True, highlight=False)
        _replay(journal, store, seen, by_id, counts, final=False, campaign_id=campaign_id)

    fd = runlock.held_fd()
    try:
        boot = vm.run(cmd, g.boot_timeout_s, on_line=on_line, pass_fds=(fd,) if fd is not None else ())
    except KeyboardInterrupt:  # the guest is stopped; what it finished is stored, the rest is left to resume
        _replay(journal, store, seen, by_id, counts, final=True, campaign_id=campaign_id)
        for _cell, row in todo:
            if seen.get(row["id"]) not in ("done", "failed"):
                store.set_cell_status(
                    row["id"], "interrupted", cause="interrupted (SIGINT/SIGTERM): the guest was stopped"
                )
        raise
    _replay(journal, store, seen, by_id, counts, final=True, campaign_id=campaign_id)
    ready = f"booted in {boot.boot_s:.1f} s" if boot.boot_s is not None else "did not boot"
    console.print(f"kernel {kernel.level}: guest {ready}, {boot.wall_s:.0f} s in all")
    left = [(cell, row) for cell, row in todo if seen.get(row["id"]) not in ("done", "failed")]
    if left:
        why = (
            seen.get("setup")
            or boot.cause
            or f"the guest stopped (vng exit status {boot.rc}) before these cells finished"
        )
        tail = next((ln for ln in reversed(boot.lines) if ln.strip()), "")
        cause = f"guest (kernel {kernel.level}): {why}" + (f"; last console line: {tail[:200]}" if tail else "")
        _fail_cells(left, store, counts, console, cause, f"guest: {why}")


def _replay(journal: str, store, seen: dict, by_id: dict, counts: dict, final: bool, campaign_id: int) -> None:
    """Copy the journal's new complete lines into the store (a torn last line waits for the next call)."""
    try:
        with open(journal) as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        return
    complete = lines[:-1]  # the text after the last newline is not a whole line yet
    for line in complete[seen["lines"] :]:
        seen["lines"] += 1
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        op = doc.pop("op", None)
        cid = doc.pop("cell_id", None)
        if cid is not None and cid not in by_id:
            continue  # not a cell this guest was given: ignored
        try:
            if op == "trial":
                store.record_trial(cid, doc.pop("number"), **doc)
            elif op == "storage-probe":  # the guest's scratch disk, measured inside
                store.record_storage_probe(campaign_id, dict(doc["probe"]))
            elif op == "setup-failed":  # modules, scratch disk: no cell could run
                seen["setup"] = f"the guest could not set up: {doc.get('cause')}"
            elif op == "cell":
                store.set_cell_status(cid, doc["status"], cause=doc.get("cause"), stop_reason=doc.get("stop_reason"))
                seen[cid] = doc["status"]
                if doc["status"] in ("done", "failed"):
                    counts[doc["status"]] += 1
        except (TypeError, KeyError, ValueError) as exc:  # a line this fsmeter did not write: reported, not stored
            print(f"fsmeter: guest journal {journal}: line {seen['lines']} ignored ({exc})", file=sys.stderr)


__all__ = ["EMULATED_NOTE", "guest_settings", "machine", "run_guest_levels"]
