"""One guest boot: virtme-ng on QEMU, a scratch disk, a shared results folder, one command.

Why virtme-ng rather than QEMU alone: a stock distribution kernel needs a root filesystem with
its modules, the fsmeter package and the mkfs tools. virtme-ng boots the kernel with the host's
own root filesystem shared read-only (virtiofs or 9p) and a small init of its own, so the guest
runs the very fsmeter (and mkfs programs) installed on the host, with no image to build or keep
in step. What virtme-ng does not do as a benchmark needs, fsmeter does itself: the scratch disk
is passed to QEMU directly (``format=raw`` and the campaign's cache mode, ``cache=none`` by
default; virtme-ng's ``--disk`` gives neither), and the guest's output is read through a pipe.

The scratch disk is a sparse raw image fsmeter creates in a fresh folder of its scratch
directory; the guest formats it (ext4) and keeps its loop images there (the guest's /tmp is
a small tmpfs). Results come back through the shared folder (``--rwdir``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from fsmeter.errors import UserError

#: Printed by the guest once it has booted and set up its scratch disk (boot time is measured to it).
READY = "FSMETER-GUEST-READY"
#: The serial number the scratch disk carries, so the guest finds it among its block devices.
DISK_SERIAL = "fsmeter-scratch"
#: The serial number of a disk-model drive the host serves to the guest (a campaign's disk-model target).
MODEL_SERIAL = "fsmeter-model"
#: ... and of its external journal's drive (a second drive of the same profile), when a cell has one.
MODEL_JOURNAL_SERIAL = "fsmeter-model-journal"


@dataclass
class Boot:
    rc: int | None  # the exit status of vng (None: killed)
    boot_s: float | None  # from start to READY, None when it never came
    wall_s: float
    lines: list[str] = field(default_factory=list)  # the guest's console, last lines
    cause: str | None = None  # why it did not finish, when it did not


def vng_path() -> str | None:
    """The vng program: next to this Python (its venv) first, then on PATH."""
    import sys

    here = os.path.join(os.path.dirname(sys.executable), "vng")
    return here if os.access(here, os.X_OK) else shutil.which("vng")


def qemu_path() -> str | None:
    return shutil.which("qemu-system-x86_64")


def missing_tools() -> list[str]:
    """What a guest boot needs and this host lacks, each with how to get it."""
    out = []
    if not qemu_path():
        out.append("qemu-system-x86_64 (apt-get install qemu-system-x86)")
    if not vng_path():
        out.append("vng (pip install virtme-ng, in fsmeter's venv)")
    if not shutil.which("busybox"):
        out.append("busybox (apt-get install busybox-static)")
    return out


def make_disk(path: str, size_bytes: int) -> None:
    """A new sparse raw image (refuses to reuse a file: fsmeter formats only what it created)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, size_bytes)
    finally:
        os.close(fd)


def command(
    image: str,
    accel: str,
    vcpus: int,
    memory_bytes: int,
    disk: str,
    disk_cache: str,
    rwdir: str,
    exec_cmd: str,
    model_device: str | None = None,
    model_journal_device: str | None = None,
) -> list[str]:
    """The vng command line for one boot. ``model_device``: the host's disk-model block device, passed
    as a second virtio disk with ``cache=none`` (nothing of the host caches it: every request the guest
    sends reaches the model), whatever the scratch disk's cache mode; ``model_journal_device``: its
    external journal's drive, a third virtio disk, the same way."""
    vng = vng_path()
    if vng is None:
        raise UserError(
            "guest: vng (virtme-ng) is not installed: pip install virtme-ng (in fsmeter's venv), "
            "and apt-get install qemu-system-x86 busybox-static"
        )
    drives = [(disk, "fsmscratch", disk_cache, DISK_SERIAL)]
    if model_device is not None:
        drives.append((model_device, "fsmmodel", "none", MODEL_SERIAL))
    if model_journal_device is not None:
        drives.append((model_journal_device, "fsmjournal", "none", MODEL_JOURNAL_SERIAL))
    drive = " ".join(
        f"-drive file={path},format=raw,if=none,id={ident},cache={cache},aio=threads "
        f"-device virtio-blk-pci,drive={ident},serial={serial}"
        for path, ident, cache, serial in drives
    )
    cmd = [
        vng,
        "--run",
        image,
        "--cpus",
        str(vcpus),
        "--memory",
        f"{max(memory_bytes >> 20, 256)}M",
        "--rwdir",
        rwdir,
        "--disable-monitor",
        f"--qemu-opts={drive}",
        "--exec",
        exec_cmd,
    ]
    if accel == "tcg":
        cmd.insert(1, "--disable-kvm")
    return cmd


def run(
    cmd: list[str],
    boot_timeout_s: float,
    on_line: Callable[[str], None] | None = None,
    pass_fds: tuple = (),
    keep: int = 200,
) -> Boot:
    """Run a guest to its end, reading its console through a pipe; killed (the whole process group)
    when it has not printed READY within ``boot_timeout_s``, or on Ctrl-C (which then propagates)."""
    t0 = time.monotonic()
    env = dict(os.environ)  # vng runs its helper programs (virtme-run) from PATH: its own folder first
    env["PATH"] = os.path.dirname(cmd[0]) + os.pathsep + env.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        pass_fds=pass_fds,
        text=True,
        errors="replace",
        bufsize=1,
        env=env,
    )
    lines: list[str] = []
    boot_s = None
    cause = None
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        while True:
            if boot_s is None and time.monotonic() - t0 > boot_timeout_s:
                cause = f"the guest did not boot within {boot_timeout_s:.0f} s (guest.boot_timeout_s)"
                _kill(proc)
                break
            if not sel.select(timeout=1.0):
                if proc.poll() is not None:
                    break
                continue
            line = proc.stdout.readline()
            if not line:
                break
            line = line.rstrip("\r\n")
            if boot_s is None and READY in line:
                boot_s = time.monotonic() - t0
            lines.append(line)
            del lines[:-keep]
            if on_line is not None:
                on_line(line)
        rc = proc.wait()
    except BaseException:
        _kill(proc)
        raise
    finally:
        sel.close()
        if proc.stdout is not None:
            proc.stdout.close()
    try:  # a QEMU left behind by vng (same process group) must not outlive the run
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if cause is None and boot_s is None:
        cause = f"the guest stopped before it was ready (vng exit status {rc})"
    return Boot(
        rc=None if cause and "within" in cause else rc,
        boot_s=boot_s,
        wall_s=time.monotonic() - t0,
        lines=lines,
        cause=cause,
    )


def _kill(proc: subprocess.Popen) -> None:
    """Stop vng and its QEMU (they share the process group fsmeter started them in)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


__all__ = [
    "Boot",
    "DISK_SERIAL",
    "MODEL_JOURNAL_SERIAL",
    "MODEL_SERIAL",
    "READY",
    "command",
    "make_disk",
    "missing_tools",
    "run",
    "vng_path",
]
