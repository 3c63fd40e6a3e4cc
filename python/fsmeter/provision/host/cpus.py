"""Restrict fsmeter (and the engine threads it hosts) to k CPUs by affinity, then restore the masks."""

from __future__ import annotations

import os
from typing import Any

from fsmeter.provision.errors import HostFactorError
from fsmeter.provision.host.base import HostChange, log


def _threads() -> list[int]:
    return [int(t) for t in os.listdir("/proc/self/task")]


class CpuAffinity(HostChange):
    """The first ``cpus`` CPUs of the current mask, on every thread of this process.

    Every thread, not just the caller: ``sched_setaffinity(0)`` only moves the calling
    thread, and the engine's worker threads may be spawned from another one.
    """

    name = "cpus"

    def __init__(self, cpus: int):
        self.cpus = cpus
        self._old: dict[int, set[int]] = {}
        self._main_old: set[int] | None = None

    def show(self) -> str:
        return ",".join(map(str, sorted(os.sched_getaffinity(0))))

    def info(self) -> dict[str, Any]:
        return {"cpus": len(os.sched_getaffinity(0)), "cpu_list": sorted(os.sched_getaffinity(0))}

    def apply(self) -> None:
        available = sorted(os.sched_getaffinity(0))
        if self.cpus > len(available):
            raise HostFactorError(
                f"cpus={self.cpus}: only {len(available)} CPUs are available to fsmeter "
                f"({self.show()}): use cpus <= {len(available)}",
                exit_code=2,
            )
        new = set(available[: self.cpus])
        self._main_old = set(available)
        for tid in _threads():
            try:
                self._old[tid] = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, new)
            except (ProcessLookupError, FileNotFoundError):
                continue  # the thread ended meanwhile
        log.info("cpu affinity: %s -> %s", ",".join(map(str, available)), ",".join(map(str, sorted(new))))

    def revert(self) -> None:
        if self._main_old is None:
            return
        for tid in _threads():
            try:
                os.sched_setaffinity(tid, self._old.get(tid, self._main_old))
            except (ProcessLookupError, FileNotFoundError):
                continue
        log.info("cpu affinity: reverted to %s", ",".join(map(str, sorted(self._main_old))))
        self._old.clear()
        self._main_old = None
