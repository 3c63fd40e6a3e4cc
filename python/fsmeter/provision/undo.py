"""Undo one recorded resource, after checking it is still the one fsmeter created.

Shared by normal teardown and by leftover cleanup, so a resource is destroyed the same
careful way whether its owner exits normally or was SIGKILLed. A resource that no longer
matches its record (another source mounted there, the loop device now backs another file)
is left alone and reported.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable

from fsmeter.provision import sysinfo
from fsmeter.provision._run import run
from fsmeter.provision.errors import CommandError
from fsmeter.provision.state import StateFile, owner_alive

log = logging.getLogger("fsmeter.provision")


def _same_source(recorded: str, seen: str) -> bool:
    if recorded == seen:
        return True
    if recorded.startswith("/") and seen.startswith("/"):
        return os.path.realpath(recorded) == os.path.realpath(seen)
    return False


def unmount(target: str, source: str) -> str | None:
    """Unmount ``target`` while it still has ``source`` mounted there. Returns what was done."""
    done = None
    for _ in range(8):  # stacked mounts of ours come off one by one
        ours = [m for m in sysinfo.mounts_at(target) if _same_source(source, m.source)]
        if not ours:
            return done
        for attempt in range(5):
            try:
                run(["umount", target], what=f"umount {target}",
                    hint="a process may still use it (see `fuser -vm` on it)")
                break
            except CommandError:
                if attempt == 4:
                    raise
                time.sleep(0.3 * (attempt + 1))  # a just-exited writer may still hold it
        done = f"unmounted {target} ({source})"
    return done


def undo_mount(e: dict[str, Any]) -> str | None:
    others = [m for m in sysinfo.mounts_at(e["target"]) if not _same_source(e["source"], m.source)]
    done = unmount(e["target"], e["source"])
    if others and not done:
        log.warning("left %s alone: mounted from %s, not the recorded %s", e["target"], others[0].source,
                    e["source"])
    return done


def detach_loop(device: str, image: str) -> str | None:
    """Detach ``device`` only while it still backs ``image``."""
    backing = sysinfo.loop_backing_file(device)
    if backing is None:
        return None
    if os.path.realpath(backing) != os.path.realpath(image):
        log.warning("left %s alone: it now backs %s, not the recorded %s", device, backing, image)
        return None
    run(["losetup", "--detach", device], what=f"losetup --detach {device}")
    return f"detached {device} ({image})"


def undo_loop(e: dict[str, Any]) -> str | None:
    return detach_loop(e["device"], e["image"])


def undo_image(e: dict[str, Any]) -> str | None:
    path = e["path"]
    done = []
    # The image is ours, so any loop device over it is ours too: this also catches a loop
    # attached in the instant between losetup and its state record.
    for dev in sysinfo.loops_backing(path):
        msg = detach_loop(dev, path)
        if msg:
            done.append(msg)
    try:
        os.unlink(path)
        done.append(f"deleted {path}")
    except FileNotFoundError:
        pass
    return "; ".join(done) or None


def undo_mountpoint(e: dict[str, Any]) -> str | None:
    path = e["path"]
    if sysinfo.mounts_at(path):
        raise CommandError(f"{path} is still a mount point: not removing it")
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return None
    return f"removed directory {path}"


def undo_cgroup(e: dict[str, Any]) -> str | None:
    path = e["path"]
    if not os.path.isdir(path):
        return None
    # Processes left inside (a child of a killed run) go back to the parent we took them from.
    procs = os.path.join(path, "cgroup.procs")
    try:
        with open(procs) as f:
            pids = [p for p in f.read().split() if p]
    except OSError:
        pids = []
    for pid in pids:
        try:
            with open(os.path.join(os.path.dirname(path), "cgroup.procs"), "w") as f:
                f.write(pid)
        except OSError:
            pass
    for attempt in range(5):
        try:
            os.rmdir(path)
            return f"removed cgroup {path}"
        except FileNotFoundError:
            return None
        except OSError as exc:
            if attempt == 4:
                raise CommandError(f"cannot remove cgroup {path}: {exc}") from exc
            time.sleep(0.2)
    return None


def undo_sysfs(e: dict[str, Any]) -> str | None:
    """Put a sysfs setting back, unless someone changed it again since we did."""
    from fsmeter.provision.host.base import read_sysfs_choice

    path = e["path"]
    if not os.path.exists(path):
        return None
    if read_sysfs_choice(path) != e["new"]:
        log.warning("left %s alone: it is no longer %r", path, e["new"])
        return None
    with open(path, "w") as f:
        f.write(e["old"])
    return f"restored {path} to {e['old']}"


def undo_sysfs_entry(state: StateFile, e: dict[str, Any]) -> str | None:
    """A recorded sysfs change, released the way its live owner would (host.base.release_sysfs)."""
    from fsmeter.provision.host.base import release_sysfs

    return release_sysfs(state, e["id"])


def undo_fuse(e: dict[str, Any]) -> str | None:
    """A FUSE daemon's mount (fsmeter-blocklog): unmounting it ends the daemon; then its mount point goes.
    Comes after the loop devices, which hold the file it serves open."""
    done = unmount(e["target"], e["source"])
    try:
        os.rmdir(e["target"])
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise CommandError(f"{e['target']}: {exc}") from exc
    return done


UNDO: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "sysfs": undo_sysfs,
    "cgroup": undo_cgroup,
    "mount": undo_mount,
    "mountpoint": undo_mountpoint,
    "loop": undo_loop,
    "fuse": undo_fuse,
    "image": undo_image,
}
ORDER = list(UNDO)  # dependants first: settings, cgroups, mounts, then devices, then files


def undo_entries(state: StateFile, entries: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Undo ``entries`` in dependency order; each success drops its record. Returns (done, problems)."""
    done: list[str] = []
    problems: list[str] = []
    ordered = sorted(entries, key=lambda e: (ORDER.index(e["kind"]) if e["kind"] in UNDO else 99,
                                             -e.get("created", 0)))
    still_mounted: set[str] = set()  # sources whose unmount failed: their loop and image must stay
    for e in ordered:
        undo = UNDO.get(e["kind"])
        if undo is None:
            problems.append(f"unknown record kind {e['kind']!r} kept in {state.path}")
            continue
        if e["kind"] in ("loop", "image") and still_mounted:
            devices = {e["device"]} if e["kind"] == "loop" else set(sysinfo.loops_backing(e["path"]))
            if devices & still_mounted:
                problems.append(f"{e['kind']} {e.get('device') or e.get('path')}: kept, its mount is still there")
                continue
        try:
            msg = undo_sysfs_entry(state, e) if e["kind"] == "sysfs" else undo(e)
        except (CommandError, OSError) as exc:
            problems.append(f"{e['kind']} {e.get('target') or e.get('path') or e.get('device')}: {exc}")
            if e["kind"] == "mount":
                still_mounted.add(e["source"])
            continue
        if msg:
            log.info("%s", msg)
            done.append(msg)
        state.remove(e["id"])
    return done, problems


def cleanup_leftovers(state: StateFile) -> tuple[list[str], list[str]]:
    """Undo everything recorded by processes that are gone. Live owners' records are untouched."""
    leftovers = [e for e in state.entries() if not owner_alive(e)]
    return undo_entries(state, leftovers)


def live_owners(state: StateFile) -> set[int]:
    return {e["pid"] for e in state.entries() if owner_alive(e)}
