"""The filesystem plug-in contract: how to check, make, journal-attach and mount one filesystem."""

from __future__ import annotations

import functools
import subprocess
from typing import ClassVar

from fsmeter.provision import sysinfo
from fsmeter.provision._run import which
from fsmeter.provision.errors import FilesystemUnsupported, ProvisionError
from fsmeter.provision.specs import FsConfig


class Filesystem:
    """One filesystem. Subclasses set the class attributes and override what differs."""

    name: ClassVar[str]
    kernel_name: ClassVar[str] = ""  # name in /proc/filesystems (defaults to name)
    mkfs_tool: ClassVar[str | None] = None  # None: nothing to make (tmpfs)
    debian_package: ClassVar[str | None] = None
    # Flags that make mkfs quiet and overwrite old signatures. Only used on fsmeter's own
    # images, or a device the user confirmed *and* forced.
    quiet_options: ClassVar[list[str]] = []
    force_options: ClassVar[list[str]] = []
    default_mkfs_options: ClassVar[list[str]] = []
    version_args: ClassVar[list[str]] = ["-V"]
    needs_device: ClassVar[bool] = True
    min_size_bytes: ClassVar[int] = 16 << 20
    supports_external_journal: ClassVar[bool] = False

    @property
    def proc_name(self) -> str:
        return self.kernel_name or self.name

    # -- availability -------------------------------------------------------------
    def kernel_supported(self) -> bool:
        return self.proc_name in sysinfo.kernel_filesystems()

    def tool_path(self) -> str | None:
        return which(self.mkfs_tool) if self.mkfs_tool else None

    def check_available(self) -> None:
        """Raise FilesystemUnsupported with the fix when this kernel or host cannot make it."""
        if not self.kernel_supported():
            if sysinfo.kernel_module_available(self.proc_name):
                raise FilesystemUnsupported(
                    f"{self.name}: module not loaded (not in /proc/filesystems): run 'modprobe {self.proc_name}'"
                )
            raise FilesystemUnsupported(
                f"{self.name}: not supported by this kernel (not in /proc/filesystems): "
                f"use a kernel built with {self.name} support, or leave {self.name} out"
            )
        if self.mkfs_tool and not self.tool_path():
            raise FilesystemUnsupported(
                f"mkfs tool missing: install Debian package {self.debian_package} "
                f"({self.mkfs_tool} not found, needed for {self.name})"
            )

    @functools.cached_property
    def tool_version(self) -> str | None:
        """First line of the mkfs tool's version output, e.g. 'mkfs.xfs version 6.1.0'."""
        path = self.tool_path()
        if not path:
            return None
        out = subprocess.run([path, *self.version_args], stdin=subprocess.DEVNULL, capture_output=True, text=True)
        text = (out.stdout + out.stderr).strip()
        return text.splitlines()[0].strip() if text else None

    # -- configuration ------------------------------------------------------------
    def validate(self, cfg: FsConfig) -> None:
        """Reject a configuration this filesystem cannot honour, before anything is created."""
        if cfg.external_journal and not self.supports_external_journal:
            raise ProvisionError(
                f"{self.name}: no external journal/log device support: set external_journal = false", exit_code=2
            )

    def mkfs_options(self, cfg: FsConfig, *, overwrite: bool) -> list[str]:
        """Options passed to mkfs: quiet/force flags, defaults, then the user's (which win)."""
        opts = list(self.quiet_options)
        if overwrite:
            opts += self.force_options
        return opts + list(self.default_mkfs_options) + list(cfg.mkfs_options)

    def mkfs_argv(self, device: str, options: list[str], journal_device: str | None) -> list[str]:
        assert self.mkfs_tool
        return [self.mkfs_tool, *options, device]

    def journal_mkfs_argv(self, journal_device: str, options: list[str], *, overwrite: bool) -> list[str] | None:
        """A command that prepares the external journal device first, or None."""
        return None

    def mount_type(self) -> str:
        return self.proc_name

    def mount_options(self, cfg: FsConfig, journal_device: str | None, size_bytes: int) -> str:
        return cfg.mount_options
