"""One measuring fsmeter at a time on a machine, and who a process is (for owner records).

Two measuring processes on one machine corrupt each other's figures: they share the CPUs, the
disks and the page cache, and one's ``drop_caches`` empties the other's cache mid-phase. Every
measuring command (``run``, ``campaign run``/``resume``, ``compare``, and any later one) therefore
runs inside :func:`measuring`, an exclusive ``flock`` on one machine-wide file. The kernel drops
the lock when its holder exits, however it dies, so there is nothing to clean up. The holder writes
its pid, command and start into the file, so that a second process can say whom it waits for.

The lock is per host: its file is ``fsmeter-run.HOST.lock`` (HOST: this machine's host name) in
``$FSMETER_LOCK_DIR`` when that is set, else in ``/run/lock`` (the machine's world-writable lock
folder), else in ``/tmp``. With the host in its name, a lock folder shared by several hosts (on a
network filesystem, or the one ``/run/lock`` of hosts simulated on one machine) still gives each host
a lock of its own: fsmeter ranks on different hosts never queue behind each other.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from fsmeter.errors import UserError

LOCK_NAME = "fsmeter-run.{host}.lock"
#: How often a bounded wait (measuring(wait_s=...)) tries the lock again.
RETRY_S = 0.1
_held = 0  # nesting depth in this process: a measuring command inside another takes no second lock
_fd: int | None = None  # the lock's descriptor while held


def lock_dir() -> str:
    env = os.environ.get("FSMETER_LOCK_DIR")
    if env:
        return env
    for d in ("/run/lock", "/tmp"):
        if os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK):
            return d
    return "/tmp"


def lock_path() -> str:
    host = socket.gethostname().replace("/", "_") or "localhost"
    return os.path.join(lock_dir(), LOCK_NAME.format(host=host))


# -- who a process is -----------------------------------------------------------------------------
def boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def process_start(pid: int) -> str | None:
    """Start time of a live, non-zombie process (field 22 of /proc/PID/stat: clock ticks after boot),
    or None when it is gone or a zombie (its resources are leftovers)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return fields[19]


def command_line() -> str:
    return " ".join(["fsmeter", *sys.argv[1:]])[:300]


def identity(command: str | None = None) -> dict:
    """This process, in a form another process can check for liveness (pid reuse and reboots included)."""
    pid = os.getpid()
    return {
        "pid": pid,
        "start": process_start(pid),
        "boot_id": boot_id(),
        "host": socket.gethostname(),
        "command": command or command_line(),
        "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def alive(ident: dict | None) -> bool | None:
    """True while the process ``ident`` describes still runs, False once it is gone (exited, its pid
    reused by another process, or the machine rebooted since), None when it ran on another host."""
    if not ident or not ident.get("pid"):
        return False
    if ident.get("host") and ident["host"] != socket.gethostname():
        return None
    if ident.get("boot_id") and boot_id() and ident["boot_id"] != boot_id():
        return False
    start = process_start(int(ident["pid"]))
    return start is not None and start == ident.get("start")


def describe(ident: dict | None) -> str:
    if not ident:
        return "an unknown process"
    where = f" on {ident['host']}" if ident.get("host") and ident["host"] != socket.gethostname() else ""
    return f"pid {ident.get('pid')}{where} ({ident.get('command') or '?'}, since {ident.get('since') or '?'})"


# -- the lock ---------------------------------------------------------------------------------------
def _open(path: str) -> tuple[int, bool]:
    """(fd, writable). Opened without O_CREAT when it exists: in a sticky world-writable folder the
    kernel may refuse O_CREAT on another user's file (fs.protected_regular)."""
    hint = "set FSMETER_LOCK_DIR to a folder every fsmeter user can write"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    for _ in range(5):
        try:
            return os.open(path, os.O_RDWR | os.O_CLOEXEC), True
        except PermissionError:
            try:  # flock works on a read-only descriptor: we just cannot write who we are
                return os.open(path, os.O_RDONLY | os.O_CLOEXEC), False
            except PermissionError:
                raise UserError(f"run lock {path}: cannot open it: {hint}") from None
        except FileNotFoundError:
            pass
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue  # another process made it just now: open that one
        except PermissionError:
            raise UserError(f"run lock {path}: cannot create it: {hint}") from None
        os.fchmod(fd, 0o666)  # any user's fsmeter must be able to record itself as the holder
        return fd, True
    raise UserError(f"run lock {path}: cannot open it: {hint}")


def holder(path: str | None = None) -> dict | None:
    """What the current holder wrote into the lock file (may be stale when nobody holds it)."""
    try:
        with open(path or lock_path()) as f:
            return json.loads(f.read() or "null")
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def measuring(
    command: str | None = None, wait: bool = True, say: Callable[[str], Any] | None = None, wait_s: float | None = None
) -> Iterator[str]:
    """Hold the machine-wide run lock for a measuring command; yields the lock file's path.

    Busy: with ``wait`` it says whom it waits for (``say``, default stderr) and blocks until the
    holder finishes (Ctrl-C gives up), or for at most ``wait_s`` seconds when that is given (a rank of
    an MPI job, whose other ranks wait for it); without ``wait``, or when that bound passes, it raises
    UserError (exit code 1) naming the holder.
    """
    global _held
    path = lock_path()
    if _held:
        _held += 1
        try:
            yield path
        finally:
            _held -= 1
        return
    fd, writable = _open(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            h = holder(path)
            # Between taking the lock and writing itself in, the holder's record is its predecessor's.
            who = describe(h) if alive(h) is not False else "another fsmeter (not yet recorded in the lock file)"
            if not wait:
                raise UserError(
                    f"another measuring fsmeter is running on this machine: {who}; its figures and "
                    f"yours would corrupt each other: wait for it to finish, or leave out --no-wait to "
                    f"queue behind it (run lock {path})",
                    exit_code=1,
                ) from None
            if wait_s is not None:
                _wait_bounded(fd, path, wait_s)
            else:
                (say or (lambda m: print(m, file=sys.stderr, flush=True)))(
                    f"fsmeter: waiting for the run lock {path}, held by {who}: one measuring fsmeter at a time "
                    "on a machine (Ctrl-C gives up; --no-wait refuses instead of waiting)"
                )
                fcntl.flock(fd, fcntl.LOCK_EX)
        if writable:
            me = json.dumps(identity(command)).encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, me, 0)
        _held = 1
        global _fd
        _fd = fd
        try:
            yield path
        finally:
            _held, _fd = 0, None
    finally:
        os.close(fd)  # releases the lock


def held_fd() -> int | None:
    """The run lock's descriptor while this process holds it, else None. A child given it (pass_fds)
    keeps the lock held as long as it lives: a virtual machine fsmeter starts (through vng, which waits
    for its QEMU) is covered by it."""
    return _fd


def _wait_bounded(fd: int, path: str, wait_s: float) -> None:
    """Try the lock every RETRY_S until it is free or ``wait_s`` has passed (then a UserError)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
        if time.monotonic() >= deadline:
            h = holder(path)
            who = describe(h) if alive(h) is not False else "another fsmeter (not yet recorded in the lock file)"
            raise UserError(
                f"the run lock {path} is still held by {who} after {wait_s:g} s: another measuring "
                "fsmeter runs on this host; wait for it to finish and start again",
                exit_code=1,
            )
        time.sleep(RETRY_S)


__all__ = ["alive", "describe", "held_fd", "holder", "identity", "lock_path", "measuring"]
