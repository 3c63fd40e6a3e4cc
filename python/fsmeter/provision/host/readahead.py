"""The block device's readahead window (/sys/block/<dev>/queue/read_ahead_kb)."""

from __future__ import annotations

import os
from typing import Any

from fsmeter.provision import sysinfo
from fsmeter.provision.host.base import SysfsSetting
from fsmeter.provision.state import StateFile


class Readahead(SysfsSetting):
    name = "readahead_kb"

    def __init__(self, device: str, readahead_kb: int, state: StateFile | None = None):
        self.device = device
        path = os.path.join(sysinfo.queue_dir(device), "read_ahead_kb")
        super().__init__(path, str(int(readahead_kb)), state, f"read_ahead_kb of {sysinfo.block_name(device)}")

    def info(self) -> dict[str, Any]:
        return {self.name: int(self.show())}
