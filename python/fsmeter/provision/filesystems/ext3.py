"""ext3, with its three journaling modes chosen at mount time (data=ordered|writeback|journal)."""

from fsmeter.provision.filesystems._ext import ExtFilesystem


class Ext3(ExtFilesystem):
    name = "ext3"
    ext_type = "ext3"
    supports_external_journal = True
    # Zero the journal at mkfs, as ext4 does (ext3 has no uninit_bg, so its inode tables are always written).
    default_mkfs_options = ["-E", "lazy_journal_init=0"]
