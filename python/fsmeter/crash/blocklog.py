"""The recorded disk: an image served by fsmeter-blocklog (FUSE) under a direct-I/O loop device, and its write log.

    with LoggedDisk(state, image, log, workdir) as disk:   # disk.device: the loop device to mount
        ...
    for rec in read_log(log): ...                          # writes, zero ranges, flushes, in arrival order

The daemon appends every request the loop device sends it to the log before answering it; the log
format is described in crates/blocklog/src/main.rs and mirrored by ``RECORD`` here.
"""

from __future__ import annotations

import os
import select
import struct
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fsmeter.provision import sysinfo
from fsmeter.provision._run import run
from fsmeter.provision.errors import ProvisionError
from fsmeter.provision.state import StateFile
from fsmeter.provision.undo import detach_loop, undo_fuse

BLOCKLOG_PROGRAM = Path(__file__).resolve().parent.parent / "_bin" / "fsmeter-blocklog"
FUSE_SOURCE = "fsmeter-blocklog"

RECORD = struct.Struct("<B3xIQQQ")  # kind, len, seq, t_ns, offset
WRITE, FLUSH, ZERO, START = 1, 2, 3, 4


@dataclass(frozen=True)
class LogRecord:
    kind: int
    length: int
    seq: int
    t_ns: int
    offset: int
    data_at: int  # file position of a write's data in the log


def read_log(path: str) -> Iterator[LogRecord]:
    """The log's records in order; a torn last record (the daemon was killed mid-write) ends it."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        pos = 0
        while pos + RECORD.size <= size:
            f.seek(pos)
            kind, length, seq, t_ns, offset = RECORD.unpack(f.read(RECORD.size))
            if kind not in (WRITE, FLUSH, ZERO, START):
                raise ValueError(f"{path}: record {seq} at byte {pos}: unknown kind {kind}")
            data = length if kind == WRITE else 0
            if pos + RECORD.size + data > size:
                return
            yield LogRecord(kind, length, seq, t_ns, offset, pos + RECORD.size)
            pos += RECORD.size + data


def blocklog_program() -> str:
    if not BLOCKLOG_PROGRAM.exists():
        raise ProvisionError(
            f"{BLOCKLOG_PROGRAM} is missing: reinstall fsmeter (`make build` or `pip install .`)", exit_code=1
        )
    if not os.path.exists("/dev/fuse"):
        raise ProvisionError(
            "crash runs need FUSE (/dev/fuse is missing): load the fuse module (modprobe fuse)", exit_code=1
        )
    return str(BLOCKLOG_PROGRAM)


class LoggedDisk:
    """Serve ``image`` through fsmeter-blocklog, logging to ``log``, with a direct-I/O loop device over it.

    Everything is in the state file before it exists; ``close`` (and the state file's undo after a
    SIGKILL) detaches the loop device, unmounts the FUSE filesystem (which ends the daemon) and
    removes its mount point.
    """

    READY_TIMEOUT_S = 15.0

    def __init__(self, state: StateFile, image: str, log: str, workdir: str):
        self.state = state
        self.image = image
        self.log = log
        self.fuse_dir = os.path.join(workdir, "blocklog")
        self.device: str | None = None
        self.proc: subprocess.Popen | None = None
        self._ids: list[str] = []

    @property
    def served_file(self) -> str:
        return os.path.join(self.fuse_dir, "disk.img")

    def __enter__(self) -> LoggedDisk:
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        prog = blocklog_program()
        self._ids.append(self.state.add("fuse", target=self.fuse_dir, source=FUSE_SOURCE))
        os.makedirs(self.fuse_dir, mode=0o700)
        self.proc = subprocess.Popen(
            [prog, self.image, self.log, self.fuse_dir],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        ready, _, _ = select.select([self.proc.stdout], [], [], self.READY_TIMEOUT_S)
        line = self.proc.stdout.readline().decode(errors="replace").strip() if ready else ""
        if line != "ready":
            err = self._stop_daemon()
            raise ProvisionError(f"fsmeter-blocklog did not start: {err or 'no answer in 15 s'}", exit_code=1)
        out = run(["losetup", "--direct-io=on", "--find", "--show", self.served_file], what="losetup (recorded disk)")
        self.device = out.strip().splitlines()[-1]
        self._ids.append(self.state.add("loop", device=self.device, image=self.served_file))

    def direct_io(self) -> bool | None:
        if not self.device:
            return None
        try:
            with open(f"/sys/block/{os.path.basename(self.device)}/loop/dio") as f:
                return f.read().strip() == "1"
        except OSError:
            return None

    def _stop_daemon(self) -> str:
        """Wait for the daemon to end (it does once unmounted); kill it if it does not. Returns its stderr."""
        if self.proc is None:
            return ""
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        err = self.proc.stderr.read().decode(errors="replace").strip() if self.proc.stderr else ""
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()
        self.proc = None
        return err

    def close(self) -> None:
        errors: list[BaseException] = []
        if self.device:
            try:
                for _ in range(20):  # a just-unmounted filesystem may hold the device a moment
                    try:
                        detach_loop(self.device, self.served_file)
                        break
                    except Exception:  # noqa: BLE001
                        time.sleep(0.2)
                else:
                    detach_loop(self.device, self.served_file)
            except BaseException as exc:  # noqa: BLE001 - the daemon still has to go
                errors.append(exc)
            self.device = None
        if self.proc is not None or os.path.isdir(self.fuse_dir):
            try:
                if sysinfo.mounts_at(self.fuse_dir):
                    undo_fuse({"target": self.fuse_dir, "source": FUSE_SOURCE})
                elif os.path.isdir(self.fuse_dir):
                    os.rmdir(self.fuse_dir)
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
            self._stop_daemon()
        if not errors:
            for entry_id in self._ids:
                self.state.remove(entry_id)
            self._ids.clear()
        if errors:
            raise errors[0]
