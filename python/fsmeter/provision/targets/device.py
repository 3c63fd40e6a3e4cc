"""A real block device, named twice by the user, checked before a single byte is written.

Refused when: the two names differ; it is not a block device; it (or a partition of it) is
mounted or used as swap; something holds it (device mapper, md, an exclusive opener); and,
unless ``force``, when blkid finds a filesystem or partition-table signature on it.
Mounted or in use is refused even with ``force``.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from typing import Any

from fsmeter.provision import sysinfo
from fsmeter.provision._run import which
from fsmeter.provision.errors import DeviceRefused
from fsmeter.provision.targets.base import Target


def _dev_numbers(device: str) -> str:
    st = os.stat(device)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def _mounted_numbers() -> dict[str, str]:
    """major:minor -> mount point, from /proc/self/mountinfo (names can lie, numbers cannot)."""
    out = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            out.setdefault(fields[2], fields[4])
    return out


def _swaps() -> set[str]:
    try:
        with open("/proc/swaps") as f:
            return {os.path.realpath(line.split()[0]) for line in f.readlines()[1:] if line.strip()}
    except OSError:
        return set()


def _partitions(name: str) -> list[str]:
    sysdir = f"/sys/class/block/{name}"
    return sorted(p for p in os.listdir(sysdir) if os.path.exists(os.path.join(sysdir, p, "partition")))


def signature(device: str) -> str | None:
    """What blkid -p (low-level probe, no cache) finds on the device, or None when it is blank."""
    blkid = which("blkid")
    if not blkid:
        raise DeviceRefused("blkid missing: install Debian package util-linux (needed to check the device is blank)")
    proc = subprocess.run(
        [blkid, "-p", "-o", "export", device], stdin=subprocess.DEVNULL, capture_output=True, text=True
    )
    if proc.returncode == 2:  # nothing found
        return None
    if proc.returncode != 0:
        # Ambiguous probes (several signatures) exit non-zero too: that is not blank.
        return f"blkid could not tell ({(proc.stderr or proc.stdout).strip() or 'exit ' + str(proc.returncode)})"
    fields = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    if "PTTYPE" in fields:
        return f"a {fields['PTTYPE']} partition table"
    if "TYPE" in fields:
        return f"a {fields['TYPE']} signature" + (f" (label {fields['LABEL']})" if "LABEL" in fields else "")
    return "a signature: " + " ".join(f"{k}={v}" for k, v in fields.items())


def check_device(device: str | None, destroy_data_on: str | None, force: bool) -> str:
    """Every safety check for formatting ``device``. Returns its canonical path or raises DeviceRefused."""
    if not device:
        raise DeviceRefused("no device given: use --device /dev/X --destroy-data-on /dev/X", exit_code=2)
    if not destroy_data_on:
        raise DeviceRefused(f"{device} would be formatted: confirm with --destroy-data-on {device}", exit_code=2)
    real = os.path.realpath(device)
    if real != os.path.realpath(destroy_data_on):
        raise DeviceRefused(
            f"--device {device} and --destroy-data-on {destroy_data_on} name different devices: "
            "name the same device twice",
            exit_code=2,
        )
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise DeviceRefused(f"{device}: no such device", exit_code=2) from None
    if not stat.S_ISBLK(st.st_mode):
        raise DeviceRefused(f"{device} is not a block device: use --target dir:{device} for a directory", exit_code=2)
    name = sysinfo.block_name(real)
    mounted = _mounted_numbers()
    if _dev_numbers(real) in mounted:
        raise DeviceRefused(
            f"{device} is mounted on {mounted[_dev_numbers(real)]}: refusing even with --force; "
            "unmount it yourself first if its data may really be destroyed"
        )
    for part in _partitions(name):
        numbers = _dev_numbers(f"/dev/{part}") if os.path.exists(f"/dev/{part}") else None
        if numbers in mounted:
            raise DeviceRefused(
                f"{device} holds mounted partition /dev/{part} (on {mounted[numbers]}): refusing even with --force"
            )
    if real in _swaps() or any(f"/dev/{p}" in _swaps() for p in _partitions(name)):
        raise DeviceRefused(f"{device} is in use as swap: refusing even with --force")
    holders = os.listdir(f"/sys/class/block/{name}/holders")
    if holders:
        raise DeviceRefused(
            f"{device} is in use by {', '.join(holders)} (device mapper, RAID...): refusing even with --force"
        )
    try:  # O_EXCL on a block device fails with EBUSY while the kernel or anyone holds it exclusively
        os.close(os.open(real, os.O_RDONLY | os.O_EXCL))
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            raise DeviceRefused(
                f"{device} is busy (held exclusively by the kernel or a program): refusing even with --force"
            ) from None
        raise DeviceRefused(f"{device}: cannot open ({exc.strerror}): run as root") from None
    if not force:
        found = signature(real)
        if found is None and _partitions(name):
            found = "partitions " + ", ".join(_partitions(name))
        if found:
            raise DeviceRefused(
                f"{device} carries {found}: its data would be destroyed; add --force if that is really intended"
            )
    return real


class DeviceTarget(Target):
    kind = "device"

    def __init__(self, device: str | None, destroy_data_on: str | None, force: bool, ours: Any = frozenset()):
        self.requested = device
        self.destroy_data_on = destroy_data_on
        self.force = force
        #: Devices formatted by this same provisioner: their signature is fsmeter's own filesystem.
        self.ours = ours
        self.overwrite = force  # mkfs force flags only when the user forced it (or the filesystem is ours)

    def setup(self) -> None:
        mine = bool(self.requested) and os.path.realpath(self.requested) in self.ours
        # Every check still applies (named twice, not mounted, not in use); only the signature check
        # is waived for a filesystem this run made itself.
        self.device = check_device(self.requested, self.destroy_data_on, self.force or mine)
        self.overwrite = self.force or mine

    def info(self) -> dict[str, Any]:
        return {**super().info(), "forced": self.force}
