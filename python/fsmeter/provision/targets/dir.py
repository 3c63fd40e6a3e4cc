"""An existing directory on whatever filesystem holds it: no mkfs, no mount, works without root."""

from __future__ import annotations

import os
from typing import Any

from fsmeter.provision import sysinfo
from fsmeter.provision.errors import ProvisionError
from fsmeter.provision.targets.base import Target


class DirTarget(Target):
    kind = "dir"
    owns_mount = False
    needs_mkfs = False

    def __init__(self, path: str):
        self.requested = path

    def setup(self) -> None:
        path = os.path.realpath(self.requested)
        if not os.path.isdir(path):
            raise ProvisionError(
                f"dir target {self.requested}: not an existing directory: create it first", exit_code=2
            )
        pseudo = sysinfo.pseudo_filesystem(path)
        if pseudo:
            raise ProvisionError(
                f"dir target {self.requested} is a kernel interface ({pseudo}), not a filesystem "
                "to measure: name a directory on a real filesystem",
                exit_code=2,
            )
        if not os.access(path, os.W_OK | os.X_OK):
            raise ProvisionError(
                f"dir target {self.requested}: not writable by this user: choose a writable directory", exit_code=2
            )
        self.path = path
        self.device = sysinfo.device_of_path(path)
        self.mount = sysinfo.mount_containing(path)

    def info(self) -> dict[str, Any]:
        """The directory and the mount it is on, as this process sees it: its type, source (a
        network filesystem's server and export, a local one's device) and mount point. fsmeter
        neither made nor will unmount it."""
        m = self.mount
        return {
            **super().info(),
            "path": self.path,
            "mount_type": m.fstype if m else None,
            "mount_source": m.source if m else None,
            "mount_point": m.target if m else None,
        }
