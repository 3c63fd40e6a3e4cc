"""The recorded disk: an image served by fsmeter-blocklog (FUSE) under a direct-I/O loop device, and its write log.

    with LoggedDisk(state, image, log, workdir) as disk:   # disk.device: the loop device to mount
        ...
    for rec in read_log(log): ...                          # writes, zero ranges, flushes, in arrival order

The daemon appends every request the loop device sends it to the log before answering it; the log
format is described in crates/blocklog/src/main.rs and mirrored by ``RECORD`` here.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fsmeter.provision.fusedisk import ServedDisk, helper_program
from fsmeter.provision.state import StateFile

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
    return helper_program(str(BLOCKLOG_PROGRAM), "a crash run")


class LoggedDisk(ServedDisk):
    """Serve ``image`` through fsmeter-blocklog, logging to ``log``, with a direct-I/O loop device over it.

    Everything is in the state file before it exists; ``close`` (and the state file's undo after a
    SIGKILL) detaches the loop device, unmounts the FUSE filesystem (which ends the daemon) and
    removes its mount point (fsmeter.provision.fusedisk).
    """

    def __init__(self, state: StateFile, image: str, log: str, workdir: str):
        self.image = image
        self.log = log
        fuse_dir = os.path.join(workdir, "blocklog")
        super().__init__(state, [], fuse_dir, source=FUSE_SOURCE, what="fsmeter-blocklog")

    def open(self) -> None:
        self.argv = [blocklog_program(), self.image, self.log, self.fuse_dir]
        super().open()
