"""Targets, one class per file: loop (default), device, dir, tmpfs, disk-model (and its drive inside a guest)."""

from fsmeter.provision.targets.base import Target
from fsmeter.provision.targets.device import DeviceTarget, check_device
from fsmeter.provision.targets.dir import DirTarget
from fsmeter.provision.targets.diskmodel import DiskModelTarget
from fsmeter.provision.targets.guestmodel import GuestModelTarget, passed_disk
from fsmeter.provision.targets.loop import LoopTarget
from fsmeter.provision.targets.tmpfs import TmpfsTarget

__all__ = [
    "DeviceTarget",
    "DirTarget",
    "DiskModelTarget",
    "GuestModelTarget",
    "LoopTarget",
    "Target",
    "TmpfsTarget",
    "check_device",
    "passed_disk",
]
