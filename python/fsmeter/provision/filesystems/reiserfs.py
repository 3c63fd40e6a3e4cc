"""ReiserFS 3. Declared; removed from recent kernels, so usually reported as unsupported."""

from fsmeter.provision.filesystems.base import Filesystem


class Reiserfs(Filesystem):
    name = "reiserfs"
    mkfs_tool = "mkfs.reiserfs"
    debian_package = "reiserfsprogs"
    quiet_options = ["-q"]
    force_options = ["-ff"]  # a single -f still asks when the target is a whole disk
    min_size_bytes = 40 << 20
