"""Power cuts from a write log: the image a device holds at an instant, under a chosen cache model.

The base image is the disk as it was when the log started. Applying the log's records in arrival
order up to an instant gives what the device had received then. Which of those a power cut keeps
depends on the device's write cache:

- ``prefix`` (no volatile cache, the default): every request received before the instant is kept.
  A request is only answered after it is logged, so this holds every write the filesystem saw
  complete, plus the ones still in flight: a state a disk that writes through can be left in.
- ``volatile-lost``: the writes received after the last cache flush before the instant are lost
  (a drive with a volatile cache that had written none of them).
- ``volatile-reorder``: each of those writes is kept or lost at random (seeded), in any mix: a
  volatile cache that destaged some of them in its own order. Flushed writes are always kept.

Each cut is built from the previous one's stable part, so N cuts of one log cost one pass over it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import random
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass

from fsmeter.crash.blocklog import FLUSH, WRITE, ZERO, LogRecord, read_log

CUT_MODELS = ("prefix", "volatile-lost", "volatile-reorder")

_FALLOC_FL_KEEP_SIZE = 0x01
_FALLOC_FL_PUNCH_HOLE = 0x02
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]


def copy_sparse(src: str, dst: str) -> None:
    """Copy an image keeping its holes (a 1 GiB image is mostly holes)."""
    subprocess.run(["cp", "--sparse=always", src, dst], check=True, capture_output=True)


def _zero(fd: int, offset: int, length: int) -> None:
    if _libc.fallocate(fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE, offset, length) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"punch hole at {offset}+{length}: {os.strerror(err)}")


def apply(records: Iterable[LogRecord], log_path: str, image: str) -> int:
    """Apply writes and zero ranges to ``image``; returns the number applied."""
    n = 0
    fd = os.open(image, os.O_WRONLY)
    try:
        with open(log_path, "rb") as log:
            for r in records:
                if r.kind == WRITE:
                    log.seek(r.data_at)
                    data = log.read(r.length)
                    os.pwrite(fd, data, r.offset)
                    n += 1
                elif r.kind == ZERO:
                    _zero(fd, r.offset, r.length)
                    n += 1
        os.fsync(fd)
    finally:
        os.close(fd)
    return n


@dataclass
class CutInfo:
    cut_ns: int
    model: str
    records_applied: int  # writes and zero ranges in the cut image
    records_after_flush: int  # of the writes and zero ranges received after the last flush: how many
    kept_after_flush: int  # ... the cut kept
    flushes: int  # cache flushes received before the cut
    last_flush_ns: int | None


class CutBuilder:
    """Builds cut images for increasing instants from one base image and one log."""

    def __init__(self, base: str, log_path: str, work_image: str, model: str, seed: int):
        if model not in CUT_MODELS:
            raise ValueError(f"cut model {model!r}: use one of {', '.join(CUT_MODELS)}")
        self.log_path = log_path
        self.work = work_image
        self.model = model
        self.seed = seed
        self.records = list(read_log(log_path))
        self.pos = 0  # records[:pos] are applied to the work image (all up to a flush)
        self.applied = 0
        self.flushes = 0
        self.last_flush_ns: int | None = None
        copy_sparse(base, work_image)

    @property
    def first_ns(self) -> int | None:
        return self.records[0].t_ns if self.records else None

    def build(self, cut_ns: int, out: str) -> CutInfo:
        """Write the image a power cut at ``cut_ns`` leaves to ``out``. Instants must not decrease; the
        same instant again gives the same image (the evidence of a finding is rebuilt that way)."""
        end = self.pos
        last_flush = None
        while end < len(self.records) and self.records[end].t_ns < cut_ns:
            if self.records[end].kind == FLUSH:
                last_flush = end
            end += 1
        if last_flush is not None:  # everything up to the last flush is stable in every model
            stable = self.records[self.pos : last_flush + 1]
            self.applied += apply(stable, self.log_path, self.work)
            self.flushes += sum(1 for r in stable if r.kind == FLUSH)
            self.last_flush_ns = self.records[last_flush].t_ns
            self.pos = last_flush + 1
        tail = [r for r in self.records[self.pos : end] if r.kind in (WRITE, ZERO)]
        if self.model == "prefix":
            kept = tail
        elif self.model == "volatile-lost":
            kept = []
        else:
            rng = random.Random(f"{self.seed}:{cut_ns}")  # per cut, so a cut can be built again alike
            kept = [r for r in tail if rng.random() < 0.5]
        copy_sparse(self.work, out)
        n = apply(kept, self.log_path, out)
        return CutInfo(
            cut_ns=cut_ns,
            model=self.model,
            records_applied=self.applied + n,
            records_after_flush=len(tail),
            kept_after_flush=len(kept),
            flushes=self.flushes,
            last_flush_ns=self.last_flush_ns,
        )
