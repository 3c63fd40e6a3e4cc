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


def run_guest_campaign(campaign, db, scratch: str):
    """`fsmeter campaign run CAMPAIGN --db DB` with FSMETER_SCRATCH=scratch, as a user runs it; afterwards
    every QEMU naming this scratch folder is killed. Returns (the completed process, the QEMU pids that
    were still running)."""
    import sys

    env = {**os.environ, "FSMETER_SCRATCH": scratch}
    fsmeter = os.path.join(os.path.dirname(sys.executable), "fsmeter")
    try:
        r = subprocess.run(
            [fsmeter, "campaign", "run", str(campaign), "--db", str(db), "--quiet"],
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
    finally:
        leftovers = qemu_pids_with(scratch)
        for pid in leftovers:  # only processes that name this test's own scratch folder
            subprocess.run(["kill", "-9", pid], capture_output=True)
    return r, leftovers
