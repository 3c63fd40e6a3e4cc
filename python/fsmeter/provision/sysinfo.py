"""Read-only views of the kernel's state: /proc/mounts, /proc/filesystems, block devices in /sys."""

from __future__ import annotations

import fcntl
import os
import struct
from dataclasses import dataclass

from fsmeter.mounts import (  # noqa: F401  (this module's API: the mount table lives in fsmeter.mounts)
    PSEUDO_FILESYSTEMS,
    MountEntry,
    mount_containing,
    proc_mounts,
    pseudo_filesystem,
    unescape,
)


def mounts_at(target: str) -> list[MountEntry]:
    target = os.path.realpath(target)
    return [m for m in proc_mounts() if m.target == target]


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
            if sep and len(a) >= 5 and len(b) >= 2 and unescape(a[4]) == target:
                found.append(MountInfo(a[2], target, b[0], unescape(b[1])))
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
