"""Emptying the page cache: drop_caches for the whole host (root), posix_fadvise for our own files."""

from __future__ import annotations

import os
from collections.abc import Iterable

from fsmeter.provision.errors import HostFactorError
from fsmeter.provision.host.base import log


def drop_caches() -> None:
    """sync, then drop clean page cache, dentries and inodes (/proc/sys/vm/drop_caches = 3)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
    except OSError as exc:
        raise HostFactorError(
            f"drop caches: cannot write /proc/sys/vm/drop_caches ({exc.strerror}): "
            "run as root, or let fsmeter use fadvise on its own files"
        ) from exc
    log.info("dropped page cache, dentries and inodes")


def _files(paths: Iterable[str]) -> Iterable[str]:
    for p in paths:
        if os.path.isdir(p):
            for dirpath, _dirs, names in os.walk(p):
                for n in names:
                    yield os.path.join(dirpath, n)
        else:
            yield p


def fadvise_dontneed(paths: Iterable[str]) -> int:
    """Write back and evict the cached pages of these files (directories are walked). Returns files done."""
    count = 0
    for path in _files(paths):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # vanished, a socket, a symlink: nothing of ours to evict
        try:
            os.fdatasync(fd)  # DONTNEED only drops clean pages
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            count += 1
        except OSError:
            pass
        finally:
            os.close(fd)
    log.info("fadvise(DONTNEED) on %d files", count)
    return count
