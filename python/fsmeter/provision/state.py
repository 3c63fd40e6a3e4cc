"""The state file: a record of every mount, loop device, image, cgroup and sysfs change fsmeter makes.

Written BEFORE a resource is created (or right after, when its name is only known then), and
removed when it is destroyed, so that after a SIGKILL the next start or ``fsmeter cleanup``
removes exactly those leftovers. JSON, rewritten atomically (temp file + rename) under an
fcntl lock on a separate lock file, so concurrent fsmeter processes sharing a scratch folder
never lose each other's records.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

from fsmeter.runlock import process_start as _proc_start_time

STATE_VERSION = 1
DEFAULT_SCRATCH = "/var/tmp/fsmeter"


def default_scratch() -> str:
    return os.environ.get("FSMETER_SCRATCH") or DEFAULT_SCRATCH


def owner_alive(entry: dict[str, Any]) -> bool:
    """True when the process that recorded ``entry`` still runs (pid plus start time, so reuse is seen)."""
    return _proc_start_time(entry["pid"]) == entry.get("pid_start")


class StateFile:
    """Records in ``<scratch>/state.json``; every method takes the lock for its whole read-modify-write."""

    def __init__(self, scratch: str):
        self.scratch = scratch
        self.path = os.path.join(scratch, "state.json")
        self._lock_path = os.path.join(scratch, "state.lock")
        os.makedirs(scratch, mode=0o700, exist_ok=True)
        self._me = (os.getpid(), _proc_start_time(os.getpid()))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            data = self._read()
            before = json.dumps(data, sort_keys=True)
            yield data
            if json.dumps(data, sort_keys=True) != before:
                self._write(data)
        finally:
            os.close(fd)  # releases the flock

    def _read(self) -> dict[str, Any]:
        try:
            with open(self.path) as f:
                data = json.load(f)
        except FileNotFoundError:
            return {"version": STATE_VERSION, "entries": []}
        except ValueError:
            # Only a crash of a non-atomic writer could do this; keep the evidence aside.
            os.replace(self.path, self.path + f".corrupt-{int(time.time())}")
            return {"version": STATE_VERSION, "entries": []}
        data.setdefault("entries", [])
        return data

    def _write(self, data: dict[str, Any]) -> None:
        tmp = f"{self.path}.tmp-{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        dfd = os.open(self.scratch, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    def new_entry(self, kind: str, **fields: Any) -> dict[str, Any]:
        """A record of this process, not yet stored (``add`` stores one)."""
        return {
            "id": uuid.uuid4().hex[:12],
            "kind": kind,
            "pid": self._me[0],
            "pid_start": self._me[1],
            "created": time.time(),
            **fields,
        }

    def add(self, kind: str, **fields: Any) -> str:
        """Record a resource of ``kind`` (image, loop, mount, mountpoint, cgroup, sysfs); returns its id."""
        entry = self.new_entry(kind, **fields)
        with self._locked() as data:
            data["entries"].append(entry)
        return entry["id"]

    def update(self, entry_id: str, **fields: Any) -> None:
        with self._locked() as data:
            for e in data["entries"]:
                if e["id"] == entry_id:
                    e.update(fields)

    def remove(self, entry_id: str) -> None:
        with self._locked() as data:
            data["entries"] = [e for e in data["entries"] if e["id"] != entry_id]

    def entries(self) -> list[dict[str, Any]]:
        with self._locked() as data:
            return [dict(e) for e in data["entries"]]
