"""XFS, optionally with its log on a separate device (mkfs -l logdev=, mount logdev=)."""

from fsmeter.provision.filesystems.base import Filesystem
from fsmeter.provision.specs import FsConfig


class Xfs(Filesystem):
    name = "xfs"
    mkfs_tool = "mkfs.xfs"
    debian_package = "xfsprogs"
    quiet_options = ["-q"]
    force_options = ["-f"]
    version_args = ["-V"]
    min_size_bytes = 300 << 20
    supports_external_journal = True

    def mkfs_argv(self, device: str, options: list[str], journal_device: str | None) -> list[str]:
        extra = ["-l", f"logdev={journal_device}"] if journal_device else []
        return ["mkfs.xfs", *options, *extra, device]

    def mount_options(self, cfg: FsConfig, journal_device: str | None, size_bytes: int) -> str:
        opts = [o for o in cfg.mount_options.split(",") if o]
        if journal_device:
            opts.append(f"logdev={journal_device}")
        return ",".join(opts)
