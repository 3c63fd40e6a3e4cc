"""Paths a user names for fsmeter to work in or to write: the directory to measure (`--dir`) and every
output file (`--json`, `--report`, `-o`, `--html`, a new store), under one set of rules, checked before
any work starts so that a path that cannot be used never costs a finished run.

The rules, for both kinds:

- the name is a path the kernel can take: no NUL byte, at most PATH_MAX bytes, no part over NAME_MAX;
- it is not in a kernel interface (/proc, /sys, /dev, cgroup, ...: :func:`fsmeter.mounts.pseudo_filesystem`),
  followed through symbolic links: as root, writing there changes the running system, and a file there
  is not a filesystem's file (a JSON written into /proc failed only after the run);
- a directory exists; an output's folder exists, and the output can be written there (a directory is
  never an output file).

`-` names standard output, for the outputs where a user would expect it (`run --json -`); elsewhere it
is refused rather than taken as a file named "-".
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from fsmeter.errors import UserError
from fsmeter.mounts import pseudo_filesystem

#: The name of standard output on the command line.
STDOUT = "-"
#: Linux's limits on a path and on each of its parts, in bytes (linux/limits.h).
PATH_MAX = 4096
NAME_MAX = 255


def relative_depth(path: os.PathLike | str) -> int:
    """How many folders below its starting folder a relative name ends, following its "." and ".." parts in
    order; -1 when it climbs above the start at any point (``a/../..`` and ``../a`` both do). The name's
    own text only: no symbolic link is followed (a caller confines those when it opens the file)."""
    depth = 0
    for part in Path(path).parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            return -1
    return depth


def is_stdout(path: os.PathLike | str | None) -> bool:
    return path is not None and os.fspath(path) == STDOUT


def _short(path: os.PathLike | str, limit: int = 160) -> str:
    text = os.fspath(path)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _check_name(path: os.PathLike | str, option: str) -> None:
    raw = os.fsencode(path)
    if b"\0" in raw:
        raise UserError(f"{option} {_short(repr(os.fspath(path)))}: a path cannot hold a NUL byte: name another")
    if not raw:
        raise UserError(f"{option}: an empty path: name a file or directory")
    if len(raw) >= PATH_MAX:
        raise UserError(f"{option} {_short(path)}: longer than {PATH_MAX - 1} bytes: name a shorter path")
    long = next((p for p in raw.split(b"/") if len(p) > NAME_MAX), None)
    if long is not None:
        raise UserError(
            f"{option} {_short(path)}: a part of {len(long)} bytes, more than a filesystem's {NAME_MAX}: "
            "name a shorter path"
        )


def _is(test, path: Path, option: str) -> bool:
    """``test(path)`` (Path.is_dir, ...) with an error the path itself causes (a loop of links, a part that is
    a file, no permission to look) as one line."""
    try:
        return test(path)
    except OSError as exc:
        raise UserError(f"{option} {_short(path)}: cannot look at it ({exc.strerror or exc}): name another") from None


def check_dir(path: os.PathLike | str, option: str = "--dir") -> Path:
    """``path`` as a directory to measure: it exists and is on a filesystem, not a kernel interface."""
    p = Path(path)
    _check_name(path, option)
    if not _is(Path.is_dir, p, option):
        raise UserError(f"{option} {_short(p)}: not an existing directory: create it, or name another")
    pseudo = pseudo_filesystem(str(p))
    if pseudo:
        raise UserError(
            f"{option} {_short(p)} is a kernel interface ({pseudo}), not a filesystem to measure: name a "
            "directory on a real filesystem"
        )
    return p


def check_output_path(path: os.PathLike | str, option: str, *, stdout: bool = False, what: str = "file") -> Path:
    """Refuse, before anything is measured, an output file that could not be written afterwards: a
    directory, a missing folder, a path under a file, a kernel interface, a place this user may not write.
    ``stdout``: this output may go to standard output, named ``-``. ``option`` names the command-line option
    in the message (``--json``); ``what`` says what the output is ("file", or "folder" for one it makes)."""
    p = Path(path)
    if is_stdout(path):
        if stdout:
            return p
        raise UserError(f"{option} -: this output cannot go to standard output: name a file")
    _check_name(path, option)
    if _is(Path.is_dir, p, option):
        raise UserError(f"{option} {_short(p)}: is a directory: name a {what} to write")
    parent = p.parent
    if not _is(Path.is_dir, parent, option):
        missing = "is not a folder" if _is(Path.exists, parent, option) else "does not exist"
        raise UserError(
            f"{option} {_short(p)}: the folder {_short(parent)} {missing}: create it, or name another {what}"
        )
    # The file itself may be a link into a kernel interface: follow it (realpath), as writing would.
    pseudo = pseudo_filesystem(os.path.realpath(p))
    if pseudo:
        hint = ", or - for standard output" if stdout else ""
        raise UserError(
            f"{option} {_short(p)} is in a kernel interface ({pseudo}), not a {what} on a filesystem: name a "
            f"{what} on a real filesystem{hint}"
        )
    exists = _is(Path.exists, p, option)
    if exists and not _is(Path.is_file, p, option):
        raise UserError(f"{option} {_short(p)}: not a regular file (a device, a pipe or a socket): name a file")
    if exists and not os.access(p, os.W_OK):
        raise UserError(f"{option} {_short(p)}: cannot be written (no write permission): name another file")
    if not exists and not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(
            f"{option} {_short(p)}: the folder {_short(parent)} cannot be written: name a file in another folder"
        )
    return p


def check_output_dir(path: os.PathLike | str, option: str) -> Path:
    """A folder outputs are written into (made when it does not exist yet), under the rules of an output
    file: an existing folder must not be in a kernel interface and must be writable."""
    p = Path(path)
    _check_name(path, option)
    if not _is(Path.is_dir, p, option):
        return check_output_path(p, option, what="folder")  # made by the command: its place follows a file's rules
    pseudo = pseudo_filesystem(os.path.realpath(p))
    if pseudo:
        raise UserError(f"{option} {_short(p)} is in a kernel interface ({pseudo}), not a folder on a filesystem")
    if not os.access(p, os.W_OK | os.X_OK):
        raise UserError(f"{option} {_short(p)}: the folder cannot be written: name another")
    return p


def own_dir(path: os.PathLike | str, what: str, *, private: bool = False) -> Path:
    """Make (or find) a folder fsmeter writes its own files into, refusing a symbolic link in its place (the
    files would land where the link points). ``private``: the folder is also this user's alone (mode 0700 when
    made; an existing one must be owned by this user and closed to others), so nobody else can plant a link
    inside it either."""
    p = Path(path)
    try:
        p.mkdir(mode=0o700 if private else 0o777, parents=True, exist_ok=True)
    except FileExistsError:
        pass  # a link or a file in its place: named below
    except OSError as exc:
        raise UserError(f"{what} {_short(p)}: cannot be made ({exc.strerror or exc})", exit_code=1) from None
    st = os.lstat(p)
    if stat.S_ISLNK(st.st_mode):
        raise UserError(
            f"{what} {_short(p)} is a symbolic link fsmeter did not make: remove it, or name another folder"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise UserError(f"{what} {_short(p)} is not a folder: remove it, or name another folder")
    if private and (st.st_uid != os.geteuid() or st.st_mode & 0o077):
        raise UserError(
            f"{what} {_short(p)} is open to other users (mode {stat.S_IMODE(st.st_mode):o}, owner {st.st_uid}): "
            "a private folder of fsmeter's must be this user's alone; remove it"
        )
    return p


def write_output(path: os.PathLike | str, text: str, option: str) -> bool:
    """Write ``text`` to the output ``path`` checked by :func:`check_output_path` (``-``: standard output).
    Returns whether it went to a file. A failure now (the disk filled up meanwhile) is one line."""
    if is_stdout(path):
        sys.stdout.write(text)
        sys.stdout.flush()
        return False
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{option} {_short(path)}: could not be written ({exc.strerror or exc})", exit_code=1) from None
    return True


__all__ = [
    "NAME_MAX",
    "PATH_MAX",
    "STDOUT",
    "check_dir",
    "check_output_dir",
    "check_output_path",
    "is_stdout",
    "own_dir",
    "write_output",
]
