"""A disk model seen from inside a guest: the virtio disk the host's model serves (fsmeter.guest).

The host sets up the campaign's disk-model target itself (fsmeter.provision.targets.diskmodel: the
daemon, the direct-I/O loop device) and passes the loop device to QEMU as a second virtio disk
with ``cache=none`` and the serial ``fsmeter-model``. Inside the guest, a cell's ``disk-model``
target is that disk: the filesystem goes on it directly, with no loop device or image between,
and the guest's memory is the machine's RAM. A cell with an external journal puts it on the
third virtio disk, the host's second drive of the profile (serial ``fsmeter-model-journal``).

The guest's setup (fsmeter.guest.inside) finds the disk by its serial and describes it in the
environment variable ``FSMETER_GUEST_DISK_MODEL`` (JSON: the device, the host target's ``info()``
and the daemons' stats files, which lie in the folder the host shares with the guest). A target is
made only from that description, and ``setup`` checks again that the device carries the serial and
is not mounted: nothing else in the guest is ever formatted as a disk model.
"""

from __future__ import annotations

import json
import os
from typing import Any

from fsmeter.provision.errors import ProvisionError
from fsmeter.provision.targets.base import Target
from fsmeter.provision.targets.device import _dev_numbers, _mounted_numbers
from fsmeter.provision.targets.diskmodel import DiskModelWatch

#: The environment variable the guest's setup describes the passed disk in.
ENV = "FSMETER_GUEST_DISK_MODEL"


def passed_disk() -> dict[str, Any] | None:
    """The description of the disk-model drive the host passed to this guest, or None (not in such a guest)."""
    text = os.environ.get(ENV)
    if not text:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        raise ProvisionError(f"{ENV}: not JSON: this variable is set by fsmeter's guest setup only") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("device"), str) or not isinstance(doc.get("serial"), str):
        raise ProvisionError(f"{ENV}: no device and serial: this variable is set by fsmeter's guest setup only")
    return doc


def device_serial(device: str) -> str | None:
    """The serial a virtio disk carries (/sys/block/NAME/serial), or None."""
    try:
        with open(f"/sys/block/{os.path.basename(os.path.realpath(device))}/serial") as f:
            return f.read().strip()
    except OSError:
        return None


def _mounted(device: str) -> bool:
    """Whether the device is mounted (by its number, as a device target checks)."""
    try:
        numbers = _dev_numbers(device)
    except OSError:
        return False
    return numbers in _mounted_numbers()


def _profile_name(model: str) -> str:
    """The profile's own name (a profile may be named by a .toml file whose name differs)."""
    from fsmeter.diskmodel.profiles import load_profile
    from fsmeter.errors import UserError

    try:
        return load_profile(model).name
    except UserError:
        return os.path.basename(model).removesuffix(".toml")


class GuestModelWatch(DiskModelWatch):
    """The host daemon's view of a phase, without its idle pollers' CPU: they spin on the host's CPUs,
    not on the guest's, so nothing of them is taken out of the guest's CPU figures."""

    def since(self, before: dict | None) -> dict | None:
        out = super().since(before)
        if out is not None:
            out["idle_poll_cpu_s"] = 0.0
        return out


class GuestModelTarget(Target):
    kind = "disk-model"
    overwrite = True  # the host made this drive for this guest (its serial says so): a fresh mkfs per cell

    def __init__(self, passed: dict[str, Any], model: str, journal: bool = False):
        self.passed = passed
        self.model = model
        self.serial = str(passed["serial"])
        self.device = str(passed["device"])
        #: The external journal's drive (the host's second drive of the profile), when the cell has one.
        self.journal_serial = str(passed.get("journal_serial") or "")
        if journal and not (passed.get("journal_device") and self.journal_serial):
            raise ProvisionError(
                "external journal on a disk model in a guest: the host passed no journal drive", exit_code=2
            )
        self.journal_device = str(passed["journal_device"]) if journal else None
        host = passed.get("info") or {}
        self.host_info = host if isinstance(host, dict) else {}
        paths = passed.get("stats_paths") or []
        self.stats_paths = [str(p) for p in paths] if isinstance(paths, list) else []

    def setup(self) -> None:
        served = self.host_info.get("disk_model")
        if served and self.model and _profile_name(self.model) != served:
            raise ProvisionError(
                f"disk-model target: the guest's drive is a model of {served}, the cell asks for {self.model}: "
                "one guest serves one model",
                exit_code=2,
            )
        drives = [(self.device, self.serial, "the disk-model drive")]
        if self.journal_device is not None:
            drives.append((self.journal_device, self.journal_serial, "the disk model's journal drive"))
        for dev, serial, what in drives:
            if device_serial(dev) != serial:
                raise ProvisionError(
                    f"{dev} does not carry the serial {serial!r} the host gave {what}: not formatting it"
                )
            if _mounted(dev):
                raise ProvisionError(f"{dev} ({what}) is mounted: not formatting it")

    def watch(self) -> GuestModelWatch | None:
        """The host daemon's stats, read through the folder the host shares with the guest."""
        if not self.stats_paths or not all(os.path.exists(p) for p in self.stats_paths):
            return None
        return GuestModelWatch(self.stats_paths, str(self.host_info.get("disk_model") or self.model))

    def info(self) -> dict[str, Any]:
        return {
            **self.host_info,
            **super().info(),
            "guest_disk": f"the host's disk-model loop device as a virtio disk (cache=none, serial {self.serial})",
            "host_device": self.host_info.get("device"),
        }


__all__ = ["ENV", "GuestModelTarget", "GuestModelWatch", "device_serial", "passed_disk"]
