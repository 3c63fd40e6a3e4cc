"""A page-cache limit: a memory cgroup created inside fsmeter's own cgroup, the process moved in
for the cell and back out after, the cgroup removed. cgroup v1 (memory.limit_in_bytes) or v2
(memory.max).

What is limited is the page cache. A cgroup limit also counts the run's other memory: anonymous
memory (engine buffers, per-thread state, the Python objects made while a phase runs) and kernel
memory (the inodes and dentries of 64 threads x 1,000 files are tens of MiB). With a fixed limit of
a few tens of MiB the kernel would kill the whole run when that memory grows. So the limit follows
it: a watcher process (memcg_watch.py), started outside the cgroup, reads the cgroup's usage every
20 ms and keeps the limit at ``page cache limit + (usage - page cache) + 8 MiB``. On cgroup v1 the
cgroup's OOM killer is disabled, so a burst of allocations between two looks waits (milliseconds)
for the next raise instead of being killed; on v2 the watched limit is memory.high, which throttles
instead of killing. The page cache is held to the limit give or take the 8 MiB slack. The largest
non-cache use seen is recorded with the trial (``memory_cgroup_other_peak_bytes``).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import tempfile
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


def cache_bytes(stat_text: str, version: int) -> int:
    """Page cache charged to a cgroup, from its memory.stat (v1: cache; v2: file)."""
    fields = dict(line.split(" ", 1) for line in stat_text.splitlines() if " " in line)
    return int(fields.get("cache" if version == 1 else "file", "0"))


def other_bytes(usage: int, stat_text: str, version: int) -> int:
    """What a cgroup holds besides the page cache: anonymous and kernel memory."""
    return max(0, usage - cache_bytes(stat_text, version))


def hard_limit(limit_bytes: int, other: int) -> int:
    """The cgroup's hard limit for a page-cache limit and the other memory in use."""
    return limit_bytes + other + SLACK_BYTES


@dataclass(frozen=True)
class MemoryCgroup:
    version: int  # 1 or 2
    path: str  # directory of the process's current memory cgroup
    limit_file: str  # memory.limit_in_bytes (v1) or memory.max (v2)


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
        rel = rel[len(root) :]
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
    raise HostFactorError(
        "page-cache limit unavailable: no memory cgroup controller (v1 or v2) for this "
        "process: boot with cgroup memory enabled, or leave page_cache_limit_bytes out"
    )


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
        self._watcher: subprocess.Popen | None = None
        self._peak_file: str | None = None

    def show(self) -> str:
        return str(self.limit_bytes) if self.child else "none"

    def info(self) -> dict[str, Any]:
        return {
            "page_cache_limit_bytes": self.limit_bytes if self.child else None,
            "memory_cgroup": self.child,
            "memory_cgroup_rule": f"hard limit = page cache limit + other memory in use + {SLACK_BYTES >> 20} MiB"
            if self.child
            else None,
            "memory_cgroup_other_peak_bytes": self.other_peak() if self.child else None,
        }

    def other_peak(self) -> int:
        """The largest memory other than page cache the cell has used so far (anonymous and kernel)."""
        try:
            with open(self._peak_file or "") as f:
                return int(f.read() or 0)
        except (OSError, ValueError):
            return 0

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
            raise HostFactorError(
                f"page-cache limit: cannot create cgroup {child}: {exc.strerror}: "
                "run as root, or leave page_cache_limit_bytes out"
            ) from exc
        self.child = child
        try:
            with open(os.path.join(child, cg.limit_file), "w") as f:
                # v1: the hard limit the watcher moves; v2: memory.max stays "max", memory.high is watched
                f.write(str(hard_limit(self.limit_bytes, 0)) if cg.version == 1 else "max")
            if cg.version == 1:
                with open(os.path.join(child, "memory.oom_control"), "w") as f:
                    f.write("1")  # wait for the watcher's next raise instead of killing the run
            else:
                with open(os.path.join(child, "memory.high"), "w") as f:
                    f.write(str(hard_limit(self.limit_bytes, 0)))
            fd, self._peak_file = tempfile.mkstemp(prefix="fsmeter-memcg-peak-")
            os.close(fd)
            self._watcher = subprocess.Popen(
                [
                    sys.executable,
                    "-S",
                    os.path.join(os.path.dirname(__file__), "memcg_watch.py"),
                    child,
                    str(cg.version),
                    str(self.limit_bytes),
                    str(SLACK_BYTES),
                    str(WATCH_INTERVAL_S),
                    self._peak_file,
                ],
                stdin=subprocess.PIPE,
                close_fds=True,
            )
            with open(os.path.join(child, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        except OSError as exc:
            self.revert()
            raise HostFactorError(f"page-cache limit: cannot limit or enter {child}: {exc.strerror}") from exc
        log.info("memory cgroup %s: limit %d bytes, process %d moved in", child, self.limit_bytes, os.getpid())

    def _stop_watcher(self) -> None:
        w, self._watcher = self._watcher, None
        if w is None:
            return
        try:
            w.communicate(timeout=10)  # closes its stdin: it exits
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()

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
                "via `systemd-run --scope -p Delegate=yes`, or leave page_cache_limit_bytes out"
            ) from exc
        self._enabled_subtree = True

    def revert(self) -> None:
        if self.child is None or self.cgroup is None:
            return
        parent = self.cgroup.path
        with open(os.path.join(parent, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        self._stop_watcher()
        if self._peak_file:
            try:
                os.unlink(self._peak_file)
            except OSError:
                pass
            self._peak_file = None
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
