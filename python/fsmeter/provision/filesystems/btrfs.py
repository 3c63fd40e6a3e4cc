"""Btrfs (single device)."""

from fsmeter.provision.filesystems.base import Filesystem


class Btrfs(Filesystem):
    name = "btrfs"
    mkfs_tool = "mkfs.btrfs"
    debian_package = "btrfs-progs"
    quiet_options = ["-q"]
    force_options = ["-f"]
    version_args = ["--version"]
    min_size_bytes = 114 << 20
