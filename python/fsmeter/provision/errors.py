"""Exceptions of provisioning: each is a UserError whose message says what failed and what to do.

A campaign catches :class:`ProvisionError` around one cell, records ``str(exc)`` as the
cell's cause, and goes on with the next cell.
"""

from __future__ import annotations

from fsmeter.errors import UserError
from fsmeter.interrupt import Interrupted as _Interrupted


class ProvisionError(UserError):
    """Provisioning could not be done. ``cmd``/``returncode``/``stderr`` are set when a tool failed."""

    def __init__(
        self,
        message: str,
        *,
        cmd: list[str] | None = None,
        returncode: int | None = None,
        stderr: str = "",
        exit_code: int = 1,
    ):
        super().__init__(message, exit_code=exit_code)
        self.cmd = cmd
        self.returncode = returncode
        self.stderr = stderr


class CommandError(ProvisionError):
    """An external tool (losetup, mount, umount...) exited non-zero."""


class MkfsError(CommandError):
    """mkfs refused or failed; ``stderr`` holds the tool's own words."""


class MountError(CommandError):
    """mount refused the filesystem or its options."""


class FilesystemUnsupported(ProvisionError):
    """The kernel lacks the filesystem or the mkfs tool is not installed."""


class DeviceRefused(ProvisionError):
    """A block device target failed a safety check; nothing was written to it."""


class HostFactorError(ProvisionError):
    """A host change (scheduler, readahead, CPUs, memory cgroup) is unavailable or was refused."""


class Interrupted(_Interrupted):
    """SIGINT, SIGTERM or SIGHUP arrived inside a Provisioner; everything it created has been torn down.

    A KeyboardInterrupt, so code that already handles Ctrl-C handles the other signals the same way.
    """
