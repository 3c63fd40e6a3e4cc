"""The mount table, read-only (/proc/mounts): which mount holds a path, and whether that is a kernel
interface (/proc, /sys, /dev, cgroups...) rather than a filesystem. Nothing but the standard library is
imported here, so that the checks of paths a user names (fsmeter.userpaths) can use it."""

from __future__ import annotations

import os
from dataclasses import dataclass


def unescape(field: str) -> str:
    """A field of /proc/mounts or mountinfo as the path it names."""
    # /proc/mounts escapes space, tab, newline and backslash as \ooo octal.
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
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
                entries.append(
                    MountEntry(unescape(parts[0]), unescape(parts[1]), parts[2], parts[3], line.rstrip("\n"))
                )
    return entries


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


#: Kernel interfaces that look like directories but hold no files of their own: benchmarking them
#: measures nothing and writing there changes the running system.
PSEUDO_FILESYSTEMS = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "debugfs",
        "tracefs",
        "securityfs",
        "configfs",
        "pstore",
        "bpf",
        "efivarfs",
        "fusectl",
        "mqueue",
        "binfmt_misc",
        "autofs",
        "rpc_pipefs",
        "nsfs",
        "selinuxfs",
        "hugetlbfs",
        "nfsd",
        "rootfs",
    }
)


def pseudo_filesystem(path: str) -> str | None:
    """The type of the kernel pseudo-filesystem holding ``path`` (proc, sysfs, cgroup...), or None.
    Anything under /proc, /sys or /dev counts, whatever is mounted there (a tmpfs for cgroups)."""
    m = mount_containing(path)
    if m is not None and m.fstype in PSEUDO_FILESYSTEMS:
        return m.fstype
    real = os.path.realpath(path)
    if any(real == top or real.startswith(top + "/") for top in ("/proc", "/sys", "/dev")):
        return m.fstype if m is not None else "a kernel interface"
    return None
