"""Provisioning: filesystems on loop images, devices, directories or tmpfs; host factors; safe cleanup.

The public API for campaigns is this module's ``__all__``; see ``Provisioner``.
"""

from fsmeter.provision.errors import (
    CommandError,
    DeviceRefused,
    FilesystemUnsupported,
    HostFactorError,
    Interrupted,
    MkfsError,
    MountError,
    ProvisionError,
)
from fsmeter.provision.filesystems import FILESYSTEMS, get_filesystem
from fsmeter.provision.host import AppliedHost, drop_caches
from fsmeter.provision.mounted import Mounted
from fsmeter.provision.provisioner import Provisioner
from fsmeter.provision.specs import FsConfig, HostFactors, TargetSpec
from fsmeter.provision.state import StateFile, default_scratch
from fsmeter.provision.undo import cleanup_leftovers

__all__ = [
    "AppliedHost",
    "CommandError",
    "DeviceRefused",
    "FILESYSTEMS",
    "FilesystemUnsupported",
    "FsConfig",
    "HostFactorError",
    "HostFactors",
    "Interrupted",
    "MkfsError",
    "MountError",
    "Mounted",
    "ProvisionError",
    "Provisioner",
    "StateFile",
    "TargetSpec",
    "cleanup_leftovers",
    "default_scratch",
    "drop_caches",
    "get_filesystem",
]
