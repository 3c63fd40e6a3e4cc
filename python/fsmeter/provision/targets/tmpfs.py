"""A tmpfs: no device; the Provisioner mounts it with a size under a source name unique to fsmeter."""

from __future__ import annotations

from typing import Any

from fsmeter.provision.targets.base import Target


class TmpfsTarget(Target):
    kind = "tmpfs"
    needs_mkfs = False

    def __init__(self, ident: str, size_bytes: int):
        self.source = f"fsmeter-{ident}"  # how /proc/mounts tells our tmpfs from anyone else's
        self.size_bytes = size_bytes

    def info(self) -> dict[str, Any]:
        return {**super().info(), "size_bytes": self.size_bytes}
