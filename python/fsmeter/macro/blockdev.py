"""The block device under a target directory: its /sys stat file (I/O counters) and its size.

btrfs reports an anonymous st_dev, so the device comes from the mount table first
(/proc/mounts source), then from st_dev; tmpfs, overlay and network filesystems have none.
"""

from __future__ import annotations

import os
from pathlib import Path

from fsmeter.provision.sysinfo import block_name, device_of_path, mount_containing


def target_device(directory: str) -> str | None:
    """Kernel name of the block device holding `directory` (loop3, vdb1, dm-0), or None."""
    m = mount_containing(directory)
    for dev in ((m.source if m else None), device_of_path(directory)):
        if dev and dev.startswith("/dev/") and os.path.exists(dev):
            try:
                name = block_name(dev)
            except OSError:
                continue
            if Path(f"/sys/class/block/{name}/stat").exists():
                return name
    return None


def stat_path(directory: str) -> Path | None:
    """/sys/class/block/<dev>/stat of the target's device (fields: Documentation/block/stat.rst)."""
    name = target_device(directory)
    return Path(f"/sys/class/block/{name}/stat") if name else None


def device_bytes(directory: str) -> int | None:
    """Size of the target's block device in bytes, or None without one."""
    name = target_device(directory)
    if name is None:
        return None
    try:
        return int(Path(f"/sys/class/block/{name}/size").read_text()) * 512
    except (OSError, ValueError):
        return None
