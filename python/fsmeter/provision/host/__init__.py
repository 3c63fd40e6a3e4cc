"""Host factors, one reversible change per file, and the context that applies and always reverts them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from fsmeter.provision.host.base import HostChange, log
from fsmeter.provision.host.caches import drop_caches, fadvise_dontneed
from fsmeter.provision.host.cpus import CpuAffinity
from fsmeter.provision.host.dirty import dirty_limits
from fsmeter.provision.host.memcg import PageCacheLimit, find_memory_cgroup, memory_cgroup_status
from fsmeter.provision.host.readahead import Readahead
from fsmeter.provision.host.scheduler import Scheduler, offered_schedulers


class AppliedHost:
    """The changes in effect inside ``Provisioner.host()``; ``info()`` is for the trial record."""

    def __init__(self, changes: list[HostChange]):
        self.changes = changes

    def info(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for c in self.changes:
            out.update(c.info())
        return out


@contextlib.contextmanager
def applied(changes: list[HostChange]) -> Iterator[AppliedHost]:
    """Apply in order; revert what was applied in reverse order, whatever happens."""
    done: list[HostChange] = []
    failed = False
    try:
        for c in changes:
            c.apply()
            done.append(c)
        yield AppliedHost(done)
    except BaseException:
        failed = True
        raise
    finally:
        errors = []
        for c in reversed(done):
            try:
                c.revert()
            except OSError as exc:  # keep reverting the others
                log.error("could not revert %s: %s", c.name, exc)
                errors.append(exc)
        if errors and not failed:  # never hide the block's own exception behind a revert error
            raise errors[0]


__all__ = [
    "AppliedHost",
    "CpuAffinity",
    "HostChange",
    "PageCacheLimit",
    "Readahead",
    "Scheduler",
    "applied",
    "dirty_limits",
    "drop_caches",
    "fadvise_dontneed",
    "find_memory_cgroup",
    "memory_cgroup_status",
    "offered_schedulers",
]
