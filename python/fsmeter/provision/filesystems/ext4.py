"""ext4, with inode tables and journal initialised at mkfs time."""

from fsmeter.provision.filesystems._ext import ExtFilesystem


class Ext4(ExtFilesystem):
    name = "ext4"
    ext_type = "ext4"
    supports_external_journal = True
    # Lazy init would leave the ext4lazyinit kernel thread zeroing inode tables during the
    # first measurements; we pay that cost at mkfs instead.
    default_mkfs_options = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
