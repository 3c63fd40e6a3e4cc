"""The block device's I/O scheduler (/sys/block/<dev>/queue/scheduler): whatever the kernel offers."""

from __future__ import annotations

import os

from fsmeter.provision import sysinfo
from fsmeter.provision.errors import HostFactorError
from fsmeter.provision.host.base import SysfsSetting
from fsmeter.provision.state import StateFile


def scheduler_path(device: str) -> str:
    return os.path.join(sysinfo.queue_dir(device), "scheduler")


def offered_schedulers(device: str) -> list[str]:
    with open(scheduler_path(device)) as f:
        return [t.strip("[]") for t in f.read().split()]


class Scheduler(SysfsSetting):
    name = "scheduler"

    def __init__(self, device: str, scheduler: str, state: StateFile | None = None):
        self.device = device
        path = scheduler_path(device)
        if not os.path.exists(path):
            raise HostFactorError(
                f"scheduler: {device} has no I/O scheduler ({path} missing): "
                "leave the scheduler factor out for this target"
            )
        super().__init__(path, scheduler, state, f"scheduler of {sysinfo.block_name(device)}")

    def check(self) -> None:
        offered = offered_schedulers(self.device)
        if self.value not in offered:
            raise HostFactorError(
                f"scheduler {self.value!r} is not offered for {self.device}: choose one of {', '.join(offered)}",
                exit_code=2,
            )
