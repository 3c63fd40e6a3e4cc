"""F2FS, the flash-friendly log-structured filesystem."""

from fsmeter.provision.filesystems.base import Filesystem


class F2fs(Filesystem):
    name = "f2fs"
    mkfs_tool = "mkfs.f2fs"
    debian_package = "f2fs-tools"
    quiet_options = ["-q"]
    force_options = ["-f"]
    min_size_bytes = 64 << 20
