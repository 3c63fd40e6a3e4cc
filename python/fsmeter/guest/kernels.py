"""Kernel levels and accelerators.

A level of the `kernel` factor names a kernel image: a path to a vmlinuz/bzImage, an installed
Debian kernel version ("6.1.0-50-amd64": /boot/vmlinuz-6.1.0-50-amd64), or a short version
("6.1", "6.12") resolved to the newest installed kernel of that series. Nothing but `errors`
is imported here, so the campaign validator can use it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from fsmeter.errors import UserError

BOOT = "/boot"
#: The kernel level that means "no guest: on the host, under its own kernel" (a study runs the
#: filesystems the host has there, and only the others in guests).
HOST_LEVEL = "host"
#: What reports say about a trial run in a guest under software emulation (TCG): it measured the emulator.
EMULATED_NOTE = "emulated: not a performance measurement"


@dataclass(frozen=True)
class Kernel:
    level: str  # as the campaign wrote it
    image: str  # the vmlinuz / bzImage path
    version: str  # the release its modules are installed under (/lib/modules/VERSION), or the image name

    def to_dict(self) -> dict:
        return {"level": self.level, "image": self.image, "version": self.version}


#: Where an x86 Linux kernel image (bzImage, what QEMU boots with -kernel) carries its boot protocol's
#: header signature: "HdrS" at offset 0x202 (the kernel's Documentation/arch/x86/boot.rst).
BOOT_MAGIC_OFFSET, BOOT_MAGIC = 0x202, b"HdrS"


def image_problem(path: str) -> str | None:
    """Why the file at ``path`` is not a Linux kernel image a guest can boot, or None: it must carry the
    x86 boot header ("HdrS" at 0x202). Checked before a campaign is stored or QEMU started: any file
    passed before, and the guest failed only after its boot timeout."""
    try:
        with open(path, "rb") as f:
            head = f.read(BOOT_MAGIC_OFFSET + len(BOOT_MAGIC))
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"
    if head[BOOT_MAGIC_OFFSET:] != BOOT_MAGIC:
        return (
            "not a Linux kernel image (no x86 boot header, 'HdrS' at offset 0x202): give a vmlinuz/bzImage "
            "file, or an installed version such as 6.1"
        )
    return None


def _checked(k: Kernel) -> Kernel:
    why = image_problem(k.image)
    if why is not None:
        raise UserError(f"kernel: {k.level}: {why}" if k.level == k.image else f"kernel: {k.level} ({k.image}): {why}")
    return k


def _vkey(version: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"[.+\-~]", version))


def installed(boot: str | None = None) -> list:
    """The kernel versions with an image in ``boot`` (default /boot: vmlinuz-VERSION), oldest first."""
    boot = boot or BOOT
    try:
        names = os.listdir(boot)
    except OSError:
        return []
    out = [n[len("vmlinuz-") :] for n in names if n.startswith("vmlinuz-") and os.path.isfile(os.path.join(boot, n))]
    return sorted(out, key=lambda v: [(isinstance(x, str), x) for x in _vkey(v)])


def resolve(level, boot: str | None = None) -> Kernel:
    """The image a `kernel` level names; UserError (saying what is installed) when there is none."""
    boot = boot or BOOT
    text = str(level).strip()
    if not text:
        raise UserError("kernel: an empty level: give a path to a vmlinuz, or an installed version such as 6.1")
    if "/" in text:
        p = Path(text)
        if not os.path.isfile(p):  # os.path: a name too long to look up is no file, not an OSError
            raise UserError(f"kernel: {text}: no such kernel image: give the path of a vmlinuz/bzImage file")
        name = p.name.removeprefix("vmlinuz-")
        return _checked(Kernel(text, str(p.resolve()), name))
    have = installed(boot)
    if text in have:
        return _checked(Kernel(text, os.path.join(boot, f"vmlinuz-{text}"), text))
    series = [
        v for v in have if v == text or v.startswith(text + ".") or v.startswith(text + "-") or v.startswith(text + "+")
    ]
    if not series:
        listed = ", ".join(have) if have else "none"
        raise UserError(
            f"kernel: {text!r}: no such kernel installed in {boot} (installed: {listed}): install one "
            f"(Debian: apt-get install linux-image-{text}...-amd64) or give the path of a vmlinuz"
        )
    best = series[-1]
    return _checked(Kernel(text, os.path.join(boot, f"vmlinuz-{best}"), best))


# -- accelerators ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Accel:
    name: str  # "kvm" or "tcg"
    reason: str  # why, in one sentence

    @property
    def emulated(self) -> bool:
        return self.name == "tcg"


def _cpu_flags() -> set:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def kvm_problem() -> str | None:
    """Why hardware KVM cannot boot a stock kernel here, or None when it can."""
    if not os.path.exists("/dev/kvm"):
        return "there is no /dev/kvm (no KVM module, or not allowed in this container)"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "/dev/kvm is not writable by this user (join the kvm group)"
    if not _cpu_flags() & {"vmx", "svm"}:
        return (
            "/dev/kvm cannot boot a stock kernel (the CPU shows no vmx/svm: a paravirtual KVM, whose guests "
            "die in the kernel's decompressor)"
        )
    return None


def choose(wanted: str = "auto") -> Accel:
    """The accelerator for ``wanted`` (auto, kvm, tcg); kvm refused with the reason when it cannot work."""
    problem = kvm_problem()
    if wanted == "tcg":
        return Accel("tcg", "asked for (guest.accelerator = 'tcg')")
    if wanted == "kvm":
        if problem:
            raise UserError(
                f"guest.accelerator: 'kvm' cannot be used here: {problem}: use 'auto' or 'tcg' "
                "(software emulation: functional results only)"
            )
        return Accel("kvm", "hardware virtualisation (/dev/kvm)")
    if problem:
        return Accel("tcg", f"{problem}: guests will be emulated")
    return Accel("kvm", "hardware virtualisation (/dev/kvm)")


__all__ = [
    "BOOT_MAGIC",
    "BOOT_MAGIC_OFFSET",
    "EMULATED_NOTE",
    "HOST_LEVEL",
    "Accel",
    "Kernel",
    "choose",
    "image_problem",
    "installed",
    "kvm_problem",
    "resolve",
]
