"""A provisioned, mounted filesystem: where it is, how it was made, and how to empty its cache."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from fsmeter.provision import sysinfo
from fsmeter.provision._run import is_root, run
from fsmeter.provision.errors import MountError, ProvisionError
from fsmeter.provision.host import drop_caches, fadvise_dontneed
from fsmeter.provision.host.base import read_sysfs_choice
from fsmeter.provision.undo import unmount

if TYPE_CHECKING:
    from fsmeter.provision.filesystems.base import Filesystem
    from fsmeter.provision.specs import FsConfig
    from fsmeter.provision.targets.base import Target


class Mounted:
    """Returned by ``Provisioner.create``. ``path`` is where the workload's files go."""

    def __init__(
        self,
        *,
        fs: Filesystem | None,
        config: FsConfig | None,
        target: Target,
        path: str,
        source: str | None,
        mount_type: str | None,
        mount_options: str,
        mkfs_argv: list[str] | None,
        mkfs_options: list[str],
        journal_mkfs_argv: list[str] | None,
    ):
        self.fs = fs
        self.config = config
        self.target = target
        self.path = path
        self.source = source
        self.mount_type = mount_type
        self.mount_options = mount_options
        self.mkfs_argv = mkfs_argv
        self.mkfs_options = mkfs_options
        self.journal_mkfs_argv = journal_mkfs_argv
        self.entry_ids: list[str] = []  # state records of the mount and its mount point
        self.destroyed = False

    # -- identity -------------------------------------------------------------------
    @property
    def device(self) -> str | None:
        return self.target.device

    @property
    def journal_device(self) -> str | None:
        return self.target.journal_device

    @property
    def owns_mount(self) -> bool:
        return self.target.owns_mount

    @property
    def fs_name(self) -> str:
        if self.fs is not None:
            return self.fs.name
        m = sysinfo.mount_containing(self.path)
        return m.fstype if m else "unknown"

    def proc_mounts_line(self) -> str | None:
        """The /proc/mounts line in effect: the options the kernel actually applied."""
        if self.owns_mount:
            found = sysinfo.mounts_at(self.path)
            return found[-1].line if found else None
        m = sysinfo.mount_containing(self.path)
        return m.line if m else None

    def is_mounted(self) -> bool:
        return bool(sysinfo.mounts_at(self.path)) if self.owns_mount else os.path.isdir(self.path)

    # -- mount / remount ------------------------------------------------------------
    def _mount_argv(self) -> list[str]:
        argv = ["mount", "-t", self.mount_type or "auto"]
        if self.mount_options:
            argv += ["-o", self.mount_options]
        return [*argv, self.source or "none", self.path]

    def mount(self) -> None:
        run(
            self._mount_argv(),
            error=MountError,
            what=f"mount {self.fs_name}",
            hint="check the mount options (the kernel's reason is in dmesg)",
        )

    def remount(self) -> None:
        """Unmount and mount again, which empties this filesystem's page cache, dentries and inodes.

        tmpfs keeps its data only in memory, so it gets ``mount -o remount`` (data kept) instead.
        """
        if not self.owns_mount:
            raise ProvisionError(
                f"{self.path}: fsmeter did not mount it, so it will not remount it: "
                "use reset_cache() (drop_caches or fadvise)",
                exit_code=2,
            )
        if self.fs is not None and not self.fs.needs_device:
            run(["mount", "-o", "remount", self.path], error=MountError, what="remount")
            return
        os.sync()
        unmount(self.path, self.source or "")
        self.mount()

    def reset_cache(self, files: Iterable[str] | None = None) -> str:
        """Empty the page cache for the next measured phase; returns the method, for the trial record.

        "remount" when fsmeter owns the mount; else "drop_caches" as root; else "fadvise"
        (posix_fadvise DONTNEED on ``files``, default every file under ``path``). tmpfs: "none",
        its data *is* page cache.
        """
        if self.owns_mount:
            if self.fs is not None and not self.fs.needs_device:
                return "none"
            self.remount()
            return "remount"
        if is_root():
            drop_caches()
            return "drop_caches"
        fadvise_dontneed(list(files) if files is not None else [self.path])
        return "fadvise"

    def cache_reset_method(self) -> str:
        """What reset_cache() would use here, without doing it."""
        if self.owns_mount:
            return "none" if self.fs is not None and not self.fs.needs_device else "remount"
        return "drop_caches" if is_root() else "fadvise"

    # -- record -----------------------------------------------------------------------
    def _queue_value(self, name: str) -> str | None:
        if not self.device:
            return None
        try:
            return read_sysfs_choice(os.path.join(sysinfo.queue_dir(self.device), name))
        except OSError:
            return None

    def info(self) -> dict[str, Any]:
        """The environment of this filesystem as it is now, for the trial record."""
        line = self.proc_mounts_line()
        ra = self._queue_value("read_ahead_kb")
        out: dict[str, Any] = {
            "fs": self.fs_name,
            "path": self.path,
            **self.target.info(),
            "owns_mount": self.owns_mount,
            "mkfs_command": " ".join(self.mkfs_argv) if self.mkfs_argv else None,
            "mkfs_options": list(self.mkfs_options),
            "journal_mkfs_command": " ".join(self.journal_mkfs_argv) if self.journal_mkfs_argv else None,
            "mkfs_tool": self.fs.mkfs_tool if self.fs and self.target.needs_mkfs else None,
            "mkfs_tool_version": self.fs.tool_version if self.fs and self.target.needs_mkfs else None,
            "mount_options_requested": self.mount_options,
            "proc_mounts_line": line,
            "mount_options": line.split()[3] if line else None,
            "scheduler": self._queue_value("scheduler"),
            "readahead_kb": int(ra) if ra is not None and ra.isdigit() else None,
            "cache_reset_method": self.cache_reset_method(),
            "kernel": os.uname().release,
        }
        return out

    def __repr__(self) -> str:
        return f"Mounted({self.fs_name} on {self.path}, device={self.device})"
