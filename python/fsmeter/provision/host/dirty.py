"""The dirty-page limits of a machine with a page-cache limit's memory (/proc/sys/vm/dirty_*).

A page-cache limit (memcg.PageCacheLimit) stands for a machine with that much memory for file data.
For reads it is: what does not fit is read from the device. For writes it is not, by itself: under a
cgroup v1 memory controller (and a v2 one without cgroup writeback) the kernel does not hold a
cgroup's dirty pages to the dirty ratio of its memory, so the whole limit can fill with dirty data
and a write phase ends with all of it still unwritten. A machine with that memory would have held
at most ``vm.dirty_ratio`` percent of it dirty (and started writing back at
``vm.dirty_background_ratio``). Measured on the 2-core development machine, cgroup v1: creating
1.2 GiB of 4 MiB files under a 768 MiB limit on a disk model ended with 774 MiB not yet on the
device, the whole limit.

So beside a page-cache limit, fsmeter sets ``vm.dirty_bytes`` and ``vm.dirty_background_bytes`` to the
machine's ratios applied to the limit (20% and 10% of 768 MiB with the kernel's default ratios), and
puts the ratios back after the cell. The limits are global: while they are in effect every writer
on the machine is held to them, which the measuring lock (one measuring run at a time) makes
fsmeter's own cell. A machine already set in bytes (``vm.dirty_ratio`` reads 0) keeps its
proportion: its bytes times the limit over its memory.

Writing a ``*_bytes`` file makes the kernel read the matching ``*_ratio`` as 0, and writing the ratio
back clears the bytes. The change is therefore recorded (state file, for a killed run's cleanup)
as the ratio file going from its value to "0": putting the ratio back undoes it.
"""

from __future__ import annotations

import os
from typing import Any

from fsmeter.hostinfo import mem_total_bytes
from fsmeter.provision.host.base import SysfsSetting, read_sysfs_choice
from fsmeter.provision.state import StateFile

VM_DIR = "/proc/sys/vm"
#: The kernel refuses a dirty_bytes under two pages; fsmeter keeps at least this much.
MIN_DIRTY_BYTES = 1 << 20


def scaled_bytes(limit_bytes: int, ratio: int, machine_bytes: int, mem_total: int) -> int:
    """The dirty bytes a machine with ``limit_bytes`` of memory would allow: the ratio (percent) of it,
    or, for a machine set in bytes (ratio 0), its bytes in proportion to the limit."""
    if ratio > 0:
        want = limit_bytes * ratio // 100
    else:
        want = machine_bytes * limit_bytes // max(1, mem_total)
    return max(MIN_DIRTY_BYTES, want)


class DirtyBytes(SysfsSetting):
    """``vm.<kind>_bytes`` set for the limit, recorded as ``vm.<kind>_ratio`` going to "0" (or, for a machine
    already set in bytes, as the bytes file itself)."""

    def __init__(self, kind: str, limit_bytes: int, state: StateFile | None, vm_dir: str, mem_total: int):
        ratio_path = os.path.join(vm_dir, f"{kind}_ratio")
        self.bytes_path = os.path.join(vm_dir, f"{kind}_bytes")
        ratio = int(read_sysfs_choice(ratio_path) or 0)
        machine = int(read_sysfs_choice(self.bytes_path) or 0)
        self.bytes = scaled_bytes(limit_bytes, ratio, machine, mem_total)
        self.kind = kind
        if ratio > 0:  # the usual case: the ratio is what the machine is set by, and what cleanup restores
            super().__init__(ratio_path, "0", state, f"vm.{kind}_ratio", write=(self.bytes_path, str(self.bytes)))
        else:
            super().__init__(self.bytes_path, str(self.bytes), state, f"vm.{kind}_bytes")

    def info(self) -> dict[str, Any]:
        return {f"vm_{self.kind}_bytes": self.bytes}


def dirty_limits(limit_bytes: int, state: StateFile | None = None, vm_dir: str = VM_DIR) -> list[DirtyBytes]:
    """Both dirty limits for a page-cache limit, as two host changes (applied after the cgroup, in this
    order, and reverted in the reverse order by fsmeter.provision.host.applied)."""
    total = mem_total_bytes()
    return [DirtyBytes(k, limit_bytes, state, vm_dir, total) for k in ("dirty", "dirty_background")]
