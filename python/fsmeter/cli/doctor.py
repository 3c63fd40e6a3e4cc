"""`fsmeter doctor`: what this machine can do (root, loop, filesystems, cgroups, io_uring, tools) and
the fix for each missing piece."""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import shutil
from dataclasses import dataclass

import typer
from rich.console import Console
from rich.table import Table

from fsmeter.provision import FILESYSTEMS, default_scratch
from fsmeter.provision._run import which
from fsmeter.provision.host import memory_cgroup_status
from fsmeter.provision.sysinfo import kernel_filesystems

# Debian packages of the classic benchmarks fsmeter is cross-checked against: tool -> package.
BENCH_TOOLS = {"fio": "fio", "postmark": "postmark", "dbench": "dbench", "bonnie++": "bonnie++",
               "fs_mark": "fsmark"}
_IO_URING_SETUP = {"x86_64": 425, "aarch64": 425, "riscv64": 425, "ppc64le": 425, "s390x": 425}


@dataclass
class Check:
    what: str
    ok: bool | None      # None: informational / partial
    detail: str
    fix: str = ""


def io_uring_probe() -> tuple[bool, str]:
    """io_uring_setup(1, &params) on a zeroed struct: a ring fd means io_uring works for us."""
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as f:
            disabled = f.read().strip()
    except OSError:
        disabled = None
    if disabled == "2":
        return False, "disabled (kernel.io_uring_disabled = 2)"
    nr = _IO_URING_SETUP.get(platform.machine())
    if nr is None:
        return False, f"not probed on {platform.machine()}"
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)  # sizeof(struct io_uring_params)
    fd = libc.syscall(nr, 1, params)
    if fd >= 0:
        os.close(fd)
        extra = " (restricted to group kernel.io_uring_group)" if disabled == "1" else ""
        return True, "available" + extra
    err = ctypes.get_errno()
    if err == errno.ENOSYS:
        return False, "not built into this kernel (ENOSYS)"
    if err == errno.EPERM:
        return False, f"not permitted (EPERM; kernel.io_uring_disabled = {disabled})"
    return False, f"io_uring_setup failed: {os.strerror(err)}"


def mpi_check() -> Check:
    """mpirun and mpi4py, for `mpirun -n N fsmeter run` and campaigns with ranks (found, not started)."""
    import importlib.util

    from fsmeter.mpi.comm import INSTALL_HINT

    mpirun = which("mpirun")
    has_mpi4py = importlib.util.find_spec("mpi4py") is not None
    ok = bool(mpirun) and has_mpi4py
    detail = f"mpirun {mpirun or 'missing'}, mpi4py {'installed' if has_mpi4py else 'missing'}"
    return Check("MPI (scale-out)", ok, detail, "" if ok else INSTALL_HINT)


def checks() -> list[Check]:
    out: list[Check] = []
    root = os.geteuid() == 0
    out.append(Check("root", root, "running as root" if root else f"uid {os.geteuid()}",
                     "" if root else "run as root for loop devices, mkfs and mount; without root only "
                                     "--target dir:PATH works"))
    loop = os.path.exists("/dev/loop-control")
    out.append(Check("loop devices", loop and root,
                     "/dev/loop-control present" if loop else "/dev/loop-control missing",
                     "" if loop and root else ("modprobe loop" if not loop else "run as root")))
    have = kernel_filesystems()
    for name, cls in FILESYSTEMS.items():
        fs = cls()
        in_kernel = fs.proc_name in have
        tool = fs.tool_path() if fs.mkfs_tool else None
        if not in_kernel:
            fix = f"a kernel with {name} (CONFIG_{name.upper()}_FS)"
            if fs.mkfs_tool and not tool:
                fix += f", and apt-get install {fs.debian_package}"
            out.append(Check(f"fs {name}", False, "not supported by this kernel (not in /proc/filesystems)", fix))
        elif fs.mkfs_tool and not tool:
            out.append(Check(f"fs {name}", False, f"kernel yes; {fs.mkfs_tool} missing",
                             f"apt-get install {fs.debian_package}"))
        else:
            out.append(Check(f"fs {name}", True, "kernel yes" + (f"; {fs.tool_version}" if fs.mkfs_tool else "")))
    ok, detail = memory_cgroup_status()
    versions = []
    if os.path.isdir("/sys/fs/cgroup/memory"):
        versions.append("v1")
    for line in open("/proc/self/mounts"):
        if " cgroup2 " in line:
            versions.append("v2")
            break
    out.append(Check("cgroups (page-cache limit)", ok, f"{'+'.join(versions) or 'none'}; {detail}",
                     "" if ok else "run as root on a host with the memory controller (cgroup_enable=memory), "
                                   "or leave page_cache_limit_bytes out"))
    ok, detail = io_uring_probe()
    out.append(Check("io_uring", ok, detail, "" if ok else "sysctl kernel.io_uring_disabled=0, or use the psync backend"))
    out.append(mpi_check())
    for tool in ("losetup", "blkid", "mount"):
        path = which(tool)
        out.append(Check(tool, bool(path), path or "missing", "" if path else "apt-get install util-linux mount"))
    for tool, pkg in BENCH_TOOLS.items():
        path = which(tool)
        out.append(Check(f"bench {tool}", bool(path), path or "missing", "" if path else f"apt-get install {pkg}"))
    scratch = default_scratch()
    probe = scratch if os.path.isdir(scratch) else os.path.dirname(scratch.rstrip("/")) or "/"
    try:
        free = shutil.disk_usage(probe).free
        out.append(Check("scratch folder", free >= 2 << 30, f"{scratch}: {free >> 30} GiB free",
                         "" if free >= 2 << 30 else "set FSMETER_SCRATCH to a folder with a few GiB free"))
    except OSError as exc:
        out.append(Check("scratch folder", False, f"{scratch}: {exc.strerror}", "set FSMETER_SCRATCH"))
    return out


def doctor() -> None:
    """Check what this machine offers fsmeter, with the fix for each missing piece."""
    console = Console()
    table = Table(title=f"fsmeter doctor — {platform.node()}, kernel {os.uname().release}")
    for col in ("check", "", "detail", "fix"):
        table.add_column(col)
    for c in checks():
        mark = "[green]ok[/]" if c.ok else ("[yellow]?[/]" if c.ok is None else "[red]no[/]")
        table.add_row(c.what, mark, c.detail, c.fix)
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("doctor", help="Check root, loop devices, filesystems, mkfs tools, cgroups, io_uring and "
                               "benchmark tools; print the fix for each missing piece.")(doctor)
