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
from fsmeter.provision.sysinfo import kernel_filesystems, kernel_module_available

# Debian packages of the classic benchmarks fsmeter is cross-checked against: tool -> package.
BENCH_TOOLS = {"fio": "fio", "postmark": "postmark", "dbench": "dbench", "bonnie++": "bonnie++", "fs_mark": "fsmark"}
_IO_URING_SETUP = {"x86_64": 425, "aarch64": 425, "riscv64": 425, "ppc64le": 425, "s390x": 425}


@dataclass
class Check:
    what: str
    ok: bool | None  # None: informational / partial
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


def try_modprobe(name: str) -> bool:
    """Load the filesystem's module when one ships with this kernel (root only); True when it is now there."""
    modprobe = which("modprobe")
    if os.geteuid() != 0 or not modprobe or not kernel_module_available(name):
        return False
    import subprocess

    subprocess.run([modprobe, "-q", name], stdin=subprocess.DEVNULL, capture_output=True, check=False)
    return name in kernel_filesystems()


def guest_checks() -> list[Check]:
    """Can a `kernel` factor boot guests here, and with which accelerator (fsmeter.guest)."""
    from fsmeter.guest import kernels, vm

    out = []
    missing = vm.missing_tools()
    have = kernels.installed()
    if missing:
        out.append(
            Check(
                "guests (kernel factor)",
                False,
                "missing " + ", ".join(m.split(" (")[0] for m in missing),
                "; ".join(missing),
            )
        )
    elif not have:
        out.append(
            Check(
                "guests (kernel factor)",
                False,
                "no kernel image in /boot",
                "apt-get install a kernel (linux-image-6.1.0-...-amd64), or give a vmlinuz path as the level",
            )
        )
    else:
        out.append(Check("guests (kernel factor)", True, "virtme-ng and QEMU; kernels in /boot: " + ", ".join(have)))
    accel = kernels.choose("auto")
    if accel.emulated:
        out.append(
            Check(
                "guest accelerator",
                None,
                f"tcg (software emulation): {accel.reason}",
                "a host with hardware virtualisation (vmx/svm and /dev/kvm) for guest figures that measure "
                "the filesystem; emulated trials are functional only",
            )
        )
    else:
        out.append(Check("guest accelerator", True, f"kvm: {accel.reason}"))
    return out


def checks() -> list[Check]:
    out: list[Check] = []
    root = os.geteuid() == 0
    out.append(
        Check(
            "root",
            root,
            "running as root" if root else f"uid {os.geteuid()}",
            "" if root else "run as root for loop devices, mkfs and mount; without root only --target dir:PATH works",
        )
    )
    loop = os.path.exists("/dev/loop-control")
    out.append(
        Check(
            "loop devices",
            loop and root,
            "/dev/loop-control present" if loop else "/dev/loop-control missing",
            "" if loop and root else ("modprobe loop" if not loop else "run as root"),
        )
    )
    have = kernel_filesystems()
    for name, cls in FILESYSTEMS.items():
        fs = cls()
        in_kernel = fs.proc_name in have or try_modprobe(fs.proc_name)
        tool = fs.tool_path() if fs.mkfs_tool else None
        if not in_kernel:
            fix = f"a kernel with {name} (CONFIG_{name.upper()}_FS)"
            if fs.mkfs_tool and not tool:
                fix += f", and apt-get install {fs.debian_package}"
            why = (
                "not in /proc/filesystems, and no module to load"
                if root
                else "not in /proc/filesystems; loading a module needs root"
            )
            out.append(
                Check(
                    f"fs {name}",
                    False,
                    f"not supported by this kernel ({why})",
                    fix + "; or run it in a guest: factors.kernel (docs: guests)",
                )
            )
        elif fs.mkfs_tool and not tool:
            out.append(
                Check(
                    f"fs {name}", False, f"kernel yes; {fs.mkfs_tool} missing", f"apt-get install {fs.debian_package}"
                )
            )
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
    out.append(
        Check(
            "cgroups (page-cache limit)",
            ok,
            f"{'+'.join(versions) or 'none'}; {detail}",
            ""
            if ok
            else "run as root on a host with the memory controller (cgroup_enable=memory), "
            "or leave page_cache_limit_bytes out",
        )
    )
    ok, detail = io_uring_probe()
    out.append(
        Check("io_uring", ok, detail, "" if ok else "sysctl kernel.io_uring_disabled=0, or use the psync backend")
    )
    out.append(mpi_check())
    out.extend(guest_checks())
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
        out.append(
            Check(
                "scratch folder",
                free >= 2 << 30,
                f"{scratch}: {free >> 30} GiB free",
                "" if free >= 2 << 30 else "set FSMETER_SCRATCH to a folder with a few GiB free",
            )
        )
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
    app.command(
        "doctor",
        help="Check root, loop devices, filesystems, mkfs tools, cgroups, io_uring and "
        "benchmark tools; print the fix for each missing piece.",
    )(doctor)
