"""A page-cache limit: a memory cgroup created inside fsmeter's own cgroup, the process moved in
for the cell and back out after, the cgroup removed. cgroup v1 (memory.limit_in_bytes) or v2
(memory.max).

What is limited is the page cache. A cgroup limit counts anonymous memory too (the engine's
buffers, the per-thread state of a 64-thread run, the Python objects made while a phase runs), and a
fixed limit of a few tens of MiB would have the kernel kill the whole run when that memory grows.
So the hard limit follows it: a watcher thread reads the cgroup's anonymous memory every 20 ms and
keeps the limit at ``page cache limit + anonymous memory + 8 MiB`` (raised as the run allocates,
lowered back as it frees). The page cache is then held to the limit give or take the 8 MiB slack,
and the run's own memory never makes it an out-of-memory kill. The largest anonymous use seen is
recorded with the trial (``memory_cgroup_anon_peak_bytes``).
"""
from __future__ import annotations

import itertools
import os
import threading
from dataclasses import dataclass
from typing import Any

from fsmeter.provision.errors import HostFactorError
from fsmeter.provision.host.base import HostChange, log
from fsmeter.provision.state import StateFile

_seq = itertools.count()
#: Room above page cache + anonymous memory, so an allocation between two looks is not an OOM kill.
SLACK_BYTES = 8 << 20
#: How often the watcher looks at the cgroup's anonymous memory.
WATCH_INTERVAL_S = 0.02


def anon_bytes(stat_text: str, version: int) -> int:
    """Anonymous memory charged to a cgroup, from its memory.stat (v1: rss + rss_huge; v2: anon)."""
    fields = dict(line.split(" ", 1) for line in stat_text.splitlines() if " " in line)
    keys = ("rss", "rss_huge") if version == 1 else ("anon",)
    return sum(int(fields.get(k, "0")) for k in keys)


def hard_limit(limit_bytes: int, anon: int) -> int:
    """The cgroup's hard limit for a page-cache limit and the anonymous memory in use."""
    return limit_bytes + anon + SLACK_BYTES


@dataclass(frozen=True)
class MemoryCgroup:
    version: int          # 1 or 2
    path: str             # directory of the process's current memory cgroup
    limit_file: str       # memory.limit_in_bytes (v1) or memory.max (v2)


def _mountinfo() -> list[tuple[str, str, str, str]]:
    """(root, mount point, fstype, super options) of every mount."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            lf, rf = left.split(), right.split()
            if len(lf) >= 5 and len(rf) >= 3:
                out.append((lf[3], lf[4], rf[0], rf[2]))
    return out


def _join(mount: str, root: str, rel: str) -> str:
    if root != "/" and rel.startswith(root):
        rel = rel[len(root):]
    return os.path.join(mount, rel.lstrip("/"))


def find_memory_cgroup() -> MemoryCgroup:
    """This process's memory cgroup, or HostFactorError saying why there is none."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f if line.strip()]
    except OSError as exc:
        raise HostFactorError(f"page-cache limit: cannot read /proc/self/cgroup ({exc.strerror})") from exc
    mounts = _mountinfo()
    for _, controllers, rel in lines:  # cgroup v1: a hierarchy with the memory controller
        if "memory" in controllers.split(","):
            for root, mnt, fstype, opts in mounts:
                if fstype == "cgroup" and "memory" in opts.split(","):
                    return MemoryCgroup(1, _join(mnt, root, rel), "memory.limit_in_bytes")
    for _, controllers, rel in lines:  # cgroup v2: the unified hierarchy, if memory is available
        if controllers == "":
            for root, mnt, fstype, _opts in mounts:
                if fstype == "cgroup2":
                    path = _join(mnt, root, rel)
                    try:
                        with open(os.path.join(path, "cgroup.controllers")) as f:
                            available = f.read().split()
                    except OSError:
                        continue
                    if "memory" in available:
                        return MemoryCgroup(2, path, "memory.max")
    raise HostFactorError("page-cache limit unavailable: no memory cgroup controller (v1 or v2) for this "
                          "process: boot with cgroup memory enabled, or leave page_cache_limit_bytes out")


def memory_cgroup_status() -> tuple[bool, str]:
    """For `fsmeter doctor`: can a child memory cgroup be created here? (ok, detail)."""
    try:
        cg = find_memory_cgroup()
    except HostFactorError as exc:
        return False, str(exc)
    writable = os.access(cg.path, os.W_OK)
    detail = f"v{cg.version} memory controller at {cg.path}" + ("" if writable else " (not writable)")
    return writable, detail


class PageCacheLimit(HostChange):
    name = "page_cache_limit_bytes"

    def __init__(self, limit_bytes: int, state: StateFile | None = None):
        self.limit_bytes = int(limit_bytes)
        self.state = state
        self.cgroup: MemoryCgroup | None = None
        self.child: str | None = None
        self._entry: str | None = None
        self._enabled_subtree = False
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self.anon_peak = 0

    def show(self) -> str:
        return str(self.limit_bytes) if self.child else "none"

    def info(self) -> dict[str, Any]:
        return {"page_cache_limit_bytes": self.limit_bytes if self.child else None,
                "memory_cgroup": self.child,
                "memory_cgroup_rule": f"hard limit = page cache limit + anonymous memory + {SLACK_BYTES >> 20} MiB"
                if self.child else None,
                "memory_cgroup_anon_peak_bytes": self.anon_peak if self.child else None}

    def apply(self) -> None:
        cg = self.cgroup = find_memory_cgroup()
        child = os.path.join(cg.path, f"fsmeter-{os.getpid()}-{next(_seq)}")
        if cg.version == 2:
            self._enable_v2_memory(cg)
        if self.state is not None:
            self._entry = self.state.add("cgroup", path=child)
        try:
            os.mkdir(child)
        except OSError as exc:
            self._forget()
            raise HostFactorError(f"page-cache limit: cannot create cgroup {child}: {exc.strerror}: "
                                  "run as root, or leave page_cache_limit_bytes out") from exc
        self.child = child
        try:
            with open(os.path.join(child, cg.limit_file), "w") as f:
                f.write(str(hard_limit(self.limit_bytes, 0)))
            with open(os.path.join(child, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        except OSError as exc:
            self.revert()
            raise HostFactorError(f"page-cache limit: cannot limit or enter {child}: {exc.strerror}") from exc
        self._stop.clear()
        self._watcher = threading.Thread(target=self._watch, name="fsmeter-memcg-watch", daemon=True)
        self._watcher.start()
        log.info("memory cgroup %s: limit %d bytes, process %d moved in", child, self.limit_bytes, os.getpid())

    def _watch(self) -> None:
        """Keep the hard limit at page cache limit + anonymous memory + slack while the cell runs."""
        assert self.cgroup is not None and self.child is not None
        stat = os.path.join(self.child, "memory.stat")
        limit_file = os.path.join(self.child, self.cgroup.limit_file)
        current = hard_limit(self.limit_bytes, 0)
        while not self._stop.wait(WATCH_INTERVAL_S):
            try:
                with open(stat) as f:
                    anon = anon_bytes(f.read(), self.cgroup.version)
                self.anon_peak = max(self.anon_peak, anon)
                want = hard_limit(self.limit_bytes, anon)
                # Raise at once; lower only past a whole slack, so the limit does not flap.
                if want > current or want < current - SLACK_BYTES:
                    with open(limit_file, "w") as f:
                        f.write(str(want))
                    current = want
            except OSError:
                continue  # EBUSY on lowering (cache not yet reclaimed), or the cgroup going away

    def _enable_v2_memory(self, cg: MemoryCgroup) -> None:
        control = os.path.join(cg.path, "cgroup.subtree_control")
        with open(control) as f:
            if "memory" in f.read().split():
                return
        try:
            with open(control, "w") as f:
                f.write("+memory")
        except OSError as exc:
            raise HostFactorError(
                f"page-cache limit: cannot delegate the memory controller below {cg.path} "
                f"({exc.strerror}; cgroup v2 forbids it in a cgroup that holds processes): run fsmeter "
                "via `systemd-run --scope -p Delegate=yes`, or leave page_cache_limit_bytes out") from exc
        self._enabled_subtree = True

    def revert(self) -> None:
        if self.child is None or self.cgroup is None:
            return
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join()
            self._watcher = None
        parent = self.cgroup.path
        with open(os.path.join(parent, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        os.rmdir(self.child)
        log.info("memory cgroup %s: process moved back to %s, cgroup removed", self.child, parent)
        self.child = None
        self._forget()
        if self._enabled_subtree:
            try:
                with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                    f.write("-memory")
            except OSError:
                pass
            self._enabled_subtree = False

    def _forget(self) -> None:
        if self._entry and self.state is not None:
            self.state.remove(self._entry)
        self._entry = None
