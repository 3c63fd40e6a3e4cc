"""Read-only views of the kernel's state: /proc/mounts, /proc/filesystems, block devices in /sys."""
from __future__ import annotations

import os
from dataclasses import dataclass


def _unescape(field: str) -> str:
    # /proc/mounts escapes space, tab, newline and backslash as \ooo octal.
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class MountEntry:
    source: str
    target: str
    fstype: str
    options: str
    line: str


def proc_mounts() -> list[MountEntry]:
    entries = []
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4:
                entries.append(MountEntry(_unescape(parts[0]), _unescape(parts[1]), parts[2], parts[3],
                                          line.rstrip("\n")))
    return entries


def mounts_at(target: str) -> list[MountEntry]:
    target = os.path.realpath(target)
    return [m for m in proc_mounts() if m.target == target]


def mount_containing(path: str) -> MountEntry | None:
    """The mount a path lives on (longest mount-point prefix; the last one wins when stacked)."""
    path = os.path.realpath(path)
    best = None
    for m in proc_mounts():
        t = m.target.rstrip("/") or "/"
        if path == t or path.startswith(t + "/") or t == "/":
            if best is None or len(t) >= len(best.target.rstrip("/") or "/"):
                best = m
    return best


def kernel_filesystems() -> set[str]:
    with open("/proc/filesystems") as f:
        return {line.split()[-1] for line in f if line.strip()}


def kernel_module_available(name: str) -> bool:
    """True when a loadable module for ``name`` ships with the running kernel."""
    dep = f"/lib/modules/{os.uname().release}/modules.dep"
    try:
        with open(dep) as f:
            return any(f"/{name}.ko" in line.split(":", 1)[0] for line in f)
    except OSError:
        return False


def block_name(device: str) -> str:
    """Kernel name of a block device node: /dev/loop3 -> loop3, /dev/mapper/x -> dm-0."""
    st = os.stat(device)
    link = f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    return os.path.basename(os.path.realpath(link))


def queue_dir(device: str) -> str:
    """The /sys queue directory governing ``device`` (a partition's is its disk's)."""
    sysdir = os.path.realpath(f"/sys/class/block/{block_name(device)}")
    if os.path.exists(os.path.join(sysdir, "partition")):
        sysdir = os.path.dirname(sysdir)
    return os.path.join(sysdir, "queue")


def device_of_path(path: str) -> str | None:
    """The block device node holding ``path``, or None (tmpfs, overlay...)."""
    st = os.stat(path)
    link = f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    if not os.path.exists(link):
        return None
    node = "/dev/" + os.path.basename(os.path.realpath(link))
    return node if os.path.exists(node) else None


def loop_backing_file(device: str) -> str | None:
    """The image file behind a loop device, or None when it is not attached."""
    name = os.path.basename(device)
    try:
        with open(f"/sys/block/{name}/loop/backing_file") as f:
            backing = f.read().strip()
    except OSError:
        return None
    return backing.removesuffix(" (deleted)") or None


def loops_backing(image: str) -> list[str]:
    """Every attached loop device whose backing file is ``image``."""
    image = os.path.realpath(image)
    found = []
    for name in sorted(os.listdir("/sys/block")):
        if name.startswith("loop"):
            backing = loop_backing_file("/dev/" + name)
            if backing and os.path.realpath(backing) == image:
                found.append("/dev/" + name)
    return found
