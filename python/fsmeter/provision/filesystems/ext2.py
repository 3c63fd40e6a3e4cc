"""ext2: the unjournaled baseline."""

from fsmeter.provision.filesystems._ext import ExtFilesystem


class Ext2(ExtFilesystem):
    name = "ext2"
    ext_type = "ext2"
