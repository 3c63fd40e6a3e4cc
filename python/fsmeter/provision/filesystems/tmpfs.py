"""tmpfs: memory as the upper bound every disk filesystem is compared with. No mkfs, no device."""

from fsmeter.provision.filesystems.base import Filesystem
from fsmeter.provision.specs import FsConfig


class Tmpfs(Filesystem):
    name = "tmpfs"
    needs_device = False

    def mount_options(self, cfg: FsConfig, journal_device: str | None, size_bytes: int) -> str:
        opts = [o for o in cfg.mount_options.split(",") if o]
        if not any(o.startswith("size=") for o in opts):
            opts.insert(0, f"size={size_bytes}")
        return ",".join(opts)
