"""What the tests that boot a real guest share: why one cannot boot here, and QEMU processes left over."""

from __future__ import annotations

import os
import shutil
import subprocess


def guest_skip_reason() -> str | None:
    """Why no guest can boot a filesystem this host lacks here (None: one can)."""
    from fsmeter.guest import kernels, vm

    if os.geteuid() != 0 or not os.path.exists("/dev/loop-control"):
        return "needs root and loop devices"
    missing = vm.missing_tools()
    if missing:
        return "guests cannot run here: missing " + "; ".join(missing)
    if not kernels.installed():
        return "no kernel image in /boot to boot a guest (make sysdeps installs one)"
    return None if usable_guest_filesystem() else "no filesystem the host lacks has its mkfs tool installed"


def usable_guest_filesystem() -> str | None:
    """A filesystem this host's kernel lacks whose mkfs tool is installed (what a guest is for), or None."""
    from fsmeter.provision.sysinfo import kernel_filesystems

    tools = {"jfs": "mkfs.jfs", "reiserfs": "mkfs.reiserfs", "nilfs2": "mkfs.nilfs2", "f2fs": "mkfs.f2fs"}
    have = kernel_filesystems()
    return next((f for f, tool in tools.items() if f not in have and shutil.which(tool)), None)


def qemu_pids_with(path: str) -> list:
    """Processes (other than this one) whose command line names ``path``."""
    out = subprocess.run(["pgrep", "-f", path], capture_output=True, text=True).stdout.split()
    return [p for p in out if int(p) != os.getpid()]
