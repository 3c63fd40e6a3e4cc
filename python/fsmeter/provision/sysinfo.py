"""Read-only views of the kernel's state: /proc/mounts, /proc/filesystems, block devices in /sys."""

from __future__ import annotations

import fcntl
import os
import struct
from dataclasses import dataclass


def _unescape(field: str) -> str:
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
                    MountEntry(_unescape(parts[0]), _unescape(parts[1]), parts[2], parts[3], line.rstrip("\n"))
                )
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


@dataclass(frozen=True)
class MountInfo:
    """One line of /proc/self/mountinfo: the device number ("major:minor") and source of a mount."""

    dev: str
    target: str
    fstype: str
    source: str


def mountinfo_at(target: str) -> list[MountInfo]:
    """The mounts at ``target``, bottom first (the last one is what the path shows)."""
    target = os.path.realpath(target)
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, sep, right = line.partition(" - ")
            a, b = left.split(), right.split()
            if sep and len(a) >= 5 and len(b) >= 2 and _unescape(a[4]) == target:
                found.append(MountInfo(a[2], target, b[0], _unescape(b[1])))
    return found


def dev_text(dev: int) -> str:
    """A device number as mountinfo writes it: "major:minor"."""
    return f"{os.major(dev)}:{os.minor(dev)}"


_LOOP_GET_STATUS64 = 0x4C05
_LOOP_INFO64_SIZE = 232  # struct loop_info64 (linux/loop.h)


def loop_backing_identity(device: str) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the file behind a loop device, as the kernel holds it (it cannot
    be fooled by a different file put at the same path), or None when it is not attached."""
    try:
        fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        buf = fcntl.ioctl(fd, _LOOP_GET_STATUS64, bytes(_LOOP_INFO64_SIZE))
    except OSError:
        return None
    finally:
        os.close(fd)
    lo_device, lo_inode = struct.unpack_from("=QQ", buf)
    # The kernel's new_encode_dev(): minor's low byte, major, then minor's high bits.
    major = (lo_device & 0xFFF00) >> 8
    minor = (lo_device & 0xFF) | ((lo_device >> 12) & 0xFFF00)
    return os.makedev(major, minor), lo_inode


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
