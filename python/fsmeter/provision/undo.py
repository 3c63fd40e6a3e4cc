"""Undo one recorded resource, after proving it is still the one fsmeter created.

Shared by normal teardown and by leftover cleanup, so a resource is destroyed the same
careful way whether its owner exits normally or was SIGKILLed. Identity, as recorded when
the resource was made:
- an image or a mount-point directory: its device and inode (st_dev, st_ino);
- a loop device: the path of its backing file AND that file's device and inode as the kernel
  holds them (LOOP_GET_STATUS64), so another image attached to the same loop number is not ours;
- a mount: its mount point, its source, and the device number /proc/self/mountinfo gives it,
  which for a loop device must be that loop device's, itself proven as above.
A resource that no longer matches its record is left alone, said so in one line, and its
record dropped (``NotOurs``). Records written before the resource existed and never completed
(a SIGKILL in between) carry no identity: those are trusted only inside fsmeter's scratch folder.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

from fsmeter.provision import sysinfo
from fsmeter.provision._run import run
from fsmeter.provision.errors import CommandError
from fsmeter.provision.state import StateFile, owner_alive

log = logging.getLogger("fsmeter.provision")


class NotOurs(Exception):
    """The resource is no longer the one recorded: it is left alone and its record dropped."""


def file_identity(path: str) -> dict[str, int]:
    """What proves a file or directory is the one made: {"dev": st_dev, "ino": st_ino} (not following links)."""
    st = os.lstat(path)
    return {"dev": st.st_dev, "ino": st.st_ino}


def _inside(path: str, folder: str | None) -> bool:
    if not folder:
        return False
    folder = os.path.realpath(folder)
    return os.path.realpath(path).startswith(folder.rstrip("/") + "/")


def _check_file(e: dict[str, Any], path: str, what: str) -> bool:
    """True when ``path`` is still the recorded file or directory; False when it is gone.
    Raises NotOurs when something else is there."""
    try:
        now = file_identity(path)
    except FileNotFoundError:
        return False
    if e.get("ino") is None:
        if _inside(path, e.get("_scratch")):
            return True
        raise NotOurs(
            f"{what} {path}: left alone, its identity was never recorded and it is outside the scratch folder"
        )
    if (now["dev"], now["ino"]) != (e["dev"], e["ino"]):
        raise NotOurs(
            f"{what} {path}: left alone, it is not the one fsmeter made (device/inode "
            f"{now['dev']}/{now['ino']}, recorded {e['dev']}/{e['ino']})"
        )
    return True


def loop_identity(device: str) -> dict[str, Any]:
    """What proves a loop device is ours, recorded when it is attached: its device number and
    its backing file's device and inode."""
    ident: dict[str, Any] = {}
    try:
        ident["rdev"] = sysinfo.dev_text(os.stat(device).st_rdev)
    except OSError:
        pass
    backing = sysinfo.loop_backing_identity(device)
    if backing is not None:
        ident["backing_dev"], ident["backing_ino"] = backing
    return ident


def _loop_proven(device: str, image: str, e: dict[str, Any]) -> str | None:
    """None when ``device`` still backs the recorded ``image`` (path and, when recorded, device and
    inode); else why not."""
    backing = sysinfo.loop_backing_file(device)
    if backing is None:
        return f"{device} is no longer attached"
    if os.path.realpath(backing) != os.path.realpath(image):
        return f"{device} now backs {backing}, not the recorded {image}"
    want = (e.get("backing_dev"), e.get("backing_ino"))
    if want[1] is None:
        if _inside(image, e.get("_scratch")):
            return None
        return f"{device}: the identity of its backing file was never recorded"
    now = sysinfo.loop_backing_identity(device)
    if now != want:
        return f"{device} now backs another file at {image} (device/inode {now}, recorded {want})"
    return None


def _same_source(recorded: str, seen: str) -> bool:
    if recorded == seen:
        return True
    if recorded.startswith("/") and seen.startswith("/"):
        return os.path.realpath(recorded) == os.path.realpath(seen)
    return False


def _umount(target: str) -> None:
    """umount TARGET, tried five times with a growing pause: a just-exited writer may still hold it."""
    for attempt in range(5):
        try:
            run(["umount", target], what=f"umount {target}", hint="a process may still use it (see `fuser -vm` on it)")
            return
        except CommandError:
            if attempt == 4:
                raise
            time.sleep(0.3 * (attempt + 1))


def unmount(target: str, source: str) -> str | None:
    """Unmount ``target`` while it still has ``source`` mounted there. Returns what was done."""
    done = None
    for _ in range(8):  # stacked mounts of ours come off one by one
        ours = [m for m in sysinfo.mounts_at(target) if _same_source(source, m.source)]
        if not ours:
            return done
        _umount(target)
        done = f"unmounted {target} ({source})"
    return done


def _mount_proven(e: dict[str, Any], m: sysinfo.MountInfo) -> str | None:
    """None when mount ``m`` is the one ``e`` records; else why not."""
    if not _same_source(e["source"], m.source):
        return f"mounted from {m.source}, not the recorded {e['source']}"
    if e.get("dev") and m.dev != e["dev"]:
        return f"its device is {m.dev}, the recorded mount's was {e['dev']}"
    if e["source"].startswith("/dev/loop"):
        loop = e.get("_loop") or {}
        if e.get("backing_ino") is not None:
            loop = {**loop, "backing_dev": e["backing_dev"], "backing_ino": e["backing_ino"]}
        image = e.get("image") or loop.get("image")
        if not image:
            return "the loop device under it was never recorded"
        why = _loop_proven(e["source"], image, {**loop, "_scratch": e.get("_scratch")})
        if why:
            return why
        rdev = e.get("source_rdev") or loop.get("rdev") or sysinfo.dev_text(os.stat(e["source"]).st_rdev)
        if m.dev != rdev:
            return f"its device is {m.dev}, not {e['source']}'s {rdev}"
    elif e.get("source_rdev") and m.dev != e["source_rdev"]:
        return f"its device is {m.dev}, the recorded {e['source']} was {e['source_rdev']}"
    return None


def undo_mount(e: dict[str, Any]) -> str | None:
    """Unmount a recorded mount, the top one at a time, while the top one is proven ours."""
    done = None
    for _ in range(8):  # stacked mounts of ours come off one by one
        here = sysinfo.mountinfo_at(e["target"])
        if not here:
            return done
        why = _mount_proven(e, here[-1])
        if why:
            if done:
                return done
            raise NotOurs(f"mount {e['target']}: left alone, {why}")
        _umount(e["target"])
        done = f"unmounted {e['target']} ({e['source']})"
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
    if sysinfo.loop_backing_file(e["device"]) is None:
        return None
    why = _loop_proven(e["device"], e["image"], e)
    if why:
        raise NotOurs(f"loop {e['device']}: left alone, {why}")
    run(["losetup", "--detach", e["device"]], what=f"losetup --detach {e['device']}")
    return f"detached {e['device']} ({e['image']})"


def undo_image(e: dict[str, Any]) -> str | None:
    path = e["path"]
    done = []
    recorded = "ino" in e or "_scratch" in e  # a leftover record, not a live owner's own teardown
    if recorded and not _check_file(e, path, "image"):
        return None
    # The image is ours, so any loop device over it is ours too: this also catches a loop
    # attached in the instant between losetup and its state record.
    for dev in sysinfo.loops_backing(path):
        if recorded and e.get("ino") is not None and sysinfo.loop_backing_identity(dev) != (e["dev"], e["ino"]):
            continue  # over another file that was at this path once
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
        if e.get("_ours_mounted", True):
            raise CommandError(f"{path} is still a mount point: not removing it")
        raise NotOurs(f"directory {path}: left alone, a filesystem fsmeter did not mount is mounted there")
    if ("ino" in e or "_scratch" in e) and not _check_file(e, path, "directory"):
        return None
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


def undo_entries(
    state: StateFile, entries: list[dict[str, Any]], left: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """Undo ``entries`` in dependency order; each success drops its record. Returns (done, problems).

    A resource that is no longer the one recorded is left alone and its record dropped; the one-line
    reason goes to ``left`` (or the log when None)."""
    done: list[str] = []
    problems: list[str] = []
    ordered = sorted(entries, key=lambda e: (ORDER.index(e["kind"]) if e["kind"] in UNDO else 99, -e.get("created", 0)))
    still_mounted: set[str] = set()  # sources whose unmount failed: their loop and image must stay
    loops = {e["device"]: e for e in entries if e["kind"] == "loop" and e.get("device")}
    foreign_targets: set[str] = set()  # mount points where someone else's filesystem sits now
    for e in ordered:
        e = {**e, "_scratch": state.scratch}
        if e["kind"] == "mount" and e.get("source") in loops:
            e["_loop"] = loops[e["source"]]
        if e["kind"] == "mountpoint":
            e["_ours_mounted"] = os.path.realpath(e["path"]) not in foreign_targets
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
        except NotOurs as exc:
            if e["kind"] == "mount":
                foreign_targets.add(os.path.realpath(e["target"]))
            if left is None:
                log.warning("%s", exc)
            else:
                left.append(str(exc))
            state.remove(e["id"])
            continue
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


def cleanup_leftovers(state: StateFile, left: list[str] | None = None) -> tuple[list[str], list[str]]:
    """Undo everything recorded by processes that are gone. Live owners' records are untouched.
    ``left``: collects what was left alone because it is no longer what was recorded."""
    leftovers = [e for e in state.entries() if not owner_alive(e)]
    return undo_entries(state, leftovers, left)


def live_owners(state: StateFile) -> set[int]:
    return {e["pid"] for e in state.entries() if owner_alive(e)}
