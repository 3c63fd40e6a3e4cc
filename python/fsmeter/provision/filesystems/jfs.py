"""JFS (IBM). Declared so a campaign naming it gets a clear answer on kernels without it."""

from fsmeter.provision.filesystems.base import Filesystem


class Jfs(Filesystem):
    name = "jfs"
    mkfs_tool = "mkfs.jfs"
    debian_package = "jfsutils"
    quiet_options = ["-q"]  # jfs_mkfs -q: no confirmation prompt
