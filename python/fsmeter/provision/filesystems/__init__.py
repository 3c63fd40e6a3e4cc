"""Filesystem plug-ins, one file each; adding a filesystem is adding a file and a line here."""

from __future__ import annotations

from fsmeter.provision.errors import ProvisionError
from fsmeter.provision.filesystems.base import Filesystem
from fsmeter.provision.filesystems.btrfs import Btrfs
from fsmeter.provision.filesystems.ext2 import Ext2
from fsmeter.provision.filesystems.ext3 import Ext3
from fsmeter.provision.filesystems.ext4 import Ext4
from fsmeter.provision.filesystems.f2fs import F2fs
from fsmeter.provision.filesystems.jfs import Jfs
from fsmeter.provision.filesystems.nilfs2 import Nilfs2
from fsmeter.provision.filesystems.reiserfs import Reiserfs
from fsmeter.provision.filesystems.tmpfs import Tmpfs
from fsmeter.provision.filesystems.xfs import Xfs

FILESYSTEMS: dict[str, type[Filesystem]] = {
    cls.name: cls for cls in (Ext2, Ext3, Ext4, Xfs, Btrfs, Tmpfs, Jfs, Reiserfs, F2fs, Nilfs2)
}


def get_filesystem(name: str) -> Filesystem:
    """The plug-in for ``name``; an unknown name is a UserError listing the known ones."""
    try:
        return FILESYSTEMS[name]()
    except KeyError:
        raise ProvisionError(f"unknown filesystem {name!r}: use one of {', '.join(FILESYSTEMS)}", exit_code=2) from None


__all__ = ["FILESYSTEMS", "Filesystem", "get_filesystem"]
