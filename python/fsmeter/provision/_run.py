"""Running the system tools (mkfs, mount, losetup...) with their stderr kept for error messages."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess

from fsmeter.provision.errors import CommandError

log = logging.getLogger("fsmeter.provision")

# mkfs and friends live in sbin, which a non-login root shell may not have on PATH.
_SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def which(tool: str) -> str | None:
    """Full path of ``tool`` on PATH or in the sbin directories, or None."""
    path = os.environ.get("PATH", "") + os.pathsep + os.pathsep.join(_SBIN)
    return shutil.which(tool, path=path)


def run(
    argv: list[str],
    *,
    error: type[CommandError] = CommandError,
    what: str | None = None,
    hint: str = "",
    timeout_s: float = 600,
) -> str:
    """Run ``argv`` without stdin; return stdout. A non-zero exit raises ``error`` with the tool's stderr."""
    exe = which(argv[0]) or argv[0]
    log.debug("run: %s", " ".join(argv))
    try:
        proc = subprocess.run(
            [exe, *argv[1:]], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s
        )
    except FileNotFoundError:
        raise error(
            f"{argv[0]} not found: install util-linux / the tool's Debian package", cmd=argv, returncode=127
        ) from None
    except subprocess.TimeoutExpired:
        raise error(f"{argv[0]} did not finish in {timeout_s:.0f} s", cmd=argv) from None
    if proc.returncode != 0:
        stderr = (proc.stderr or proc.stdout).strip()
        tail = " | ".join(stderr.splitlines()[-4:])
        msg = f"{what or argv[0]} failed (exit {proc.returncode}): {tail or 'no message'}"
        if hint:
            msg += f": {hint}"
        raise error(msg, cmd=argv, returncode=proc.returncode, stderr=stderr)
    return proc.stdout


def is_root() -> bool:
    return os.geteuid() == 0
