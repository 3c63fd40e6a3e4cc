"""NILFS2, the continuous-snapshot log-structured filesystem."""

from fsmeter.provision.filesystems.base import Filesystem


class Nilfs2(Filesystem):
    name = "nilfs2"
    mkfs_tool = "mkfs.nilfs2"
    debian_package = "nilfs-tools"
    quiet_options = ["-q"]
    force_options = ["-f"]
    min_size_bytes = 128 << 20
