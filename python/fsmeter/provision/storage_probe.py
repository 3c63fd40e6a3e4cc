"""The storage under a target, measured before mkfs: how fast it answers a random read, streams, and
flushes. A study compares these figures with the paper's disk (fsmeter.study.gates); a campaign
records them for its target (the store's ``storage_probes``).

    probe = probe_path("/dev/loop3", span_bytes=8 << 30)   # a raw device or file fsmeter may overwrite
    with Provisioner() as prov:
        probe = probe_target(prov, TargetSpec(kind="loop", size_bytes=8 << 30))
    probe.as_dict()

Method, on the raw target (a block device, or a file in a directory target), every I/O with
O_DIRECT and page-aligned buffers, timed with CLOCK_MONOTONIC around each system call:

1. **random blocks written first**: ``reads`` 4 KiB blocks at offsets drawn uniformly over the whole
   target past the sequential region (aligned to 4 KiB; a fixed seed), each written once. A read of
   a sparse image's hole or of an unwritten extent never reaches a disk (the filesystem or the loop
   driver answers it with zeros), so what is read must have been written;
2. **sequential write**: ``seq_bytes`` at the start of the target in 8 MiB writes, then fdatasync;
   MB/s (10^6 bytes per second) over the writes and the sync. Its size (128 MiB by default) is
   more than a disk's own cache of the 2000s (2-64 MB), so it also pushes step 1's blocks out of it;
3. **random reads**: the blocks of step 1 read back one at a time (queue depth 1) in another random
   order: the median and the mean latency, ms. On a disk this is a seek, half a revolution on
   average and the transfer; on a virtual machine's disk it is whatever the host answers with,
   often its page cache;
4. **sequential read**: step 2's bytes read back in 8 MiB reads, MB/s;
5. **flush**: ``flushes`` times a 4 KiB write followed by fdatasync, the pair timed: the median, ms.
   fdatasync on a block device sends the device a cache flush; a loop device passes it to its
   backing file's filesystem, which flushes the disk below.

A directory target is probed through a file in it (``probe_bytes``, 256 MiB, with 32 MiB of
sequential I/O: the directory's filesystem is the user's), removed afterwards. tmpfs and
ramfs have no O_DIRECT and no disk: their storage class is "memory" and nothing is timed. Other
storage classes: "loop-image" (fsmeter's loop targets: an image file on this host's storage),
"block-device", "file" (a directory target on a block-backed filesystem), and "disk-model:NAME"
(a modelled disk; its target names the model).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any

BLOCK = 4096
#: Sequential I/O goes in requests of this size: the block layer splits each into several in flight, as a
#: streaming reader's readahead or a writer's writeback does; 1 MiB requests one at a time measured a
#: quarter of a virtual disk's rate (its per-request latency), not its bandwidth.
CHUNK = 8 << 20
#: Defaults: a few seconds on a disk of the 2000s, well under one on fast storage.
SEQ_BYTES = 128 << 20
READS = 256
FLUSHES = 16
#: The random reads stop after this long (a slow disk still gives a median from the reads so far).
READ_BUDGET_S = 5.0
#: A directory target is probed through a file of this size, with a shorter sequential part (the
#: directory's filesystem is the user's: fsmeter writes as little into it as will do).
PROBE_FILE_BYTES = 256 << 20
DIR_SEQ_BYTES = 32 << 20
MEMORY_FS = frozenset({"tmpfs", "ramfs"})


@dataclass
class StorageProbe:
    """What the probe measured (figures None when not measured, with ``note`` saying why)."""

    storage_class: str
    path: str
    span_bytes: int
    random_read_ms_p50: float | None = None
    random_read_ms_mean: float | None = None
    random_reads: int = 0
    seq_read_mb_s: float | None = None
    seq_write_mb_s: float | None = None
    seq_bytes: int = 0
    flush_ms_p50: float | None = None
    flushes: int = 0
    seconds: float = 0.0
    method: str = "O_DIRECT, queue depth 1, 4 KiB random reads of written blocks; 8 MiB sequential; write+fdatasync"
    note: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One line for a terminal."""
        if self.random_read_ms_p50 is None:
            return f"storage: {self.storage_class} ({self.note or 'not timed'})"
        return (
            f"storage: {self.storage_class}: random 4 KiB read {self.random_read_ms_p50:.3g} ms (median of "
            f"{self.random_reads}), sequential read {self.seq_read_mb_s:.0f} MB/s, write {self.seq_write_mb_s:.0f} "
            f"MB/s, write+fdatasync {self.flush_ms_p50:.3g} ms"
        )


def _buffer(size: int) -> mmap.mmap:
    """A page-aligned buffer (anonymous mmap), as O_DIRECT needs; filled with a non-zero pattern so that
    no layer can recognise zeros."""
    buf = mmap.mmap(-1, size)
    pattern = bytes(range(1, 256)) * (size // 255 + 1)
    buf[:] = pattern[:size]
    return buf


def _timed(fn, *args) -> float:
    t0 = time.monotonic_ns()
    fn(*args)
    return (time.monotonic_ns() - t0) / 1e6


def _pwrite_all(fd: int, buf, offset: int) -> None:
    view = memoryview(buf)
    done = 0
    while done < len(view):
        n = os.pwrite(fd, view[done:], offset + done)
        if n <= 0:
            raise OSError(f"short write at {offset + done}")
        done += n


def _pread_all(fd: int, buf, offset: int) -> None:
    n = os.preadv(fd, [buf], offset)
    if n != len(buf):
        raise OSError(f"short read at {offset}: {n} of {len(buf)} bytes (the target is smaller than it says)")


def _size_of(fd: int) -> int:
    return os.lseek(fd, 0, os.SEEK_END)


def probe_path(
    path: str,
    *,
    span_bytes: int | None = None,
    storage_class: str = "block-device",
    seq_bytes: int = SEQ_BYTES,
    reads: int = READS,
    flushes: int = FLUSHES,
    read_budget_s: float = READ_BUDGET_S,
    seed: int = 42,
) -> StorageProbe:
    """Probe a raw block device or a file that fsmeter may overwrite (its data is destroyed): see the
    module's method. ``span_bytes``: how much of it the random reads range over (default: all of it)."""
    t_start = time.monotonic()
    fd = os.open(path, os.O_RDWR | os.O_DIRECT)
    try:
        size = span_bytes if span_bytes is not None else _size_of(fd)
        size = size // BLOCK * BLOCK
        if size < 4 * BLOCK:
            raise ValueError(f"{path}: {size} bytes is too small to probe")
        seq = min(seq_bytes, size // 4) // CHUNK * CHUNK or min(seq_bytes, size // 4) // BLOCK * BLOCK
        rng = random.Random(seed)
        first, last = seq // BLOCK, size // BLOCK - 1
        offsets = sorted({rng.randint(first, last) * BLOCK for _ in range(reads)}) if last > first else []
        block = _buffer(BLOCK)
        chunk = _buffer(min(CHUNK, seq)) if seq else None
        # 1. write what will be read
        order = offsets[:]
        rng.shuffle(order)
        for off in order:
            _pwrite_all(fd, block, off)
        os.fdatasync(fd)
        # 2. sequential write (also pushes step 1 out of a disk's own cache)
        write_s = 0.0
        if seq and chunk is not None:
            t0 = time.monotonic_ns()
            for off in range(0, seq, len(chunk)):
                _pwrite_all(fd, chunk, off)
            os.fdatasync(fd)
            write_s = (time.monotonic_ns() - t0) / 1e9
        # 3. random reads, queue depth 1, another order
        rng.shuffle(order)
        lat: list[float] = []
        deadline = time.monotonic() + read_budget_s
        for off in order:
            lat.append(_timed(_pread_all, fd, block, off))
            if time.monotonic() > deadline and len(lat) >= 16:
                break
        # 4. sequential read
        read_s = 0.0
        if seq and chunk is not None:
            t0 = time.monotonic_ns()
            for off in range(0, seq, len(chunk)):
                _pread_all(fd, chunk, off)
            read_s = (time.monotonic_ns() - t0) / 1e9
        # 5. write + fdatasync pairs, inside the sequential region
        flush: list[float] = []
        for i in range(flushes):
            off = (i * 64 * BLOCK) % max(seq, BLOCK)
            t0 = time.monotonic_ns()
            _pwrite_all(fd, block, off)
            os.fdatasync(fd)
            flush.append((time.monotonic_ns() - t0) / 1e6)
    finally:
        os.close(fd)
    return StorageProbe(
        storage_class=storage_class,
        path=path,
        span_bytes=size,
        random_read_ms_p50=round(statistics.median(lat), 4) if lat else None,
        random_read_ms_mean=round(statistics.fmean(lat), 4) if lat else None,
        random_reads=len(lat),
        seq_read_mb_s=round(seq / 1e6 / read_s, 1) if read_s > 0 else None,
        seq_write_mb_s=round(seq / 1e6 / write_s, 1) if write_s > 0 else None,
        seq_bytes=seq,
        flush_ms_p50=round(statistics.median(flush), 4) if flush else None,
        flushes=len(flush),
        seconds=round(time.monotonic() - t_start, 3),
        details=_machine(),
    )


def _machine() -> dict[str, Any]:
    """Whether this is a virtual machine (the CPU's hypervisor flag): its disk may be the host's cache."""
    virtual = None
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    virtual = " hypervisor" in line or line.rstrip().endswith("hypervisor")
                    break
    return {"virtual_machine": virtual}


def probe_directory(directory: str, *, probe_bytes: int = PROBE_FILE_BYTES, **kw) -> StorageProbe:
    """Probe the storage under a directory through a file of ``probe_bytes`` in it (removed afterwards).
    tmpfs and ramfs are "memory": nothing is timed."""
    from fsmeter.provision import sysinfo

    m = sysinfo.mount_containing(directory)
    fstype = m.fstype if m else None
    if fstype in MEMORY_FS:
        return StorageProbe("memory", directory, 0, note=f"{fstype}: data lives in memory, there is no disk to time")
    kw.setdefault("seq_bytes", DIR_SEQ_BYTES)
    path = os.path.join(directory, f".fsmeter-storage-probe-{os.getpid()}")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, probe_bytes)
        os.close(fd)
        try:
            out = probe_path(path, storage_class="file", **kw)
        except OSError as exc:
            if exc.errno == 22:  # EINVAL: this filesystem takes no O_DIRECT
                return StorageProbe(
                    "file", directory, 0, note=f"{fstype or 'this filesystem'} refuses O_DIRECT: not timed"
                )
            raise
        out.path = directory
        out.details["filesystem"] = fstype
        return out
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def storage_class_of(spec) -> str:
    """The storage class a campaign target stands for (before it is probed)."""
    kind = getattr(spec, "kind", "loop")
    if kind == "disk-model":
        return f"disk-model:{getattr(spec, 'model', None) or 'unknown'}"
    return {"loop": "loop-image", "device": "block-device", "tmpfs": "memory", "dir": "file"}.get(kind, kind)


def probe_target(prov, spec, **kw) -> StorageProbe:
    """Probe a campaign's target on its raw storage before any mkfs: a fresh loop image of the
    target's size (the same scratch folder the cells' images use), a fresh disk-model device of the
    target's size (its timing is the model's; in a guest, the model's drive the host passed, which the
    cells will format), the device itself (which the campaign will format anyway), or a file in the
    directory. tmpfs is memory. Other kinds
    (glusterfs) are not probed. Everything made here is recorded in the provisioner's state file
    before it exists and removed before returning."""
    from fsmeter.provision.targets import DeviceTarget, DiskModelTarget, GuestModelTarget, LoopTarget, passed_disk

    kind = getattr(spec, "kind", "loop")
    cls = storage_class_of(spec)
    if kind == "tmpfs":
        return StorageProbe("memory", "tmpfs", 0, note="tmpfs: data lives in memory, there is no disk to time")
    if kind == "dir":
        return probe_directory(spec.path or ".", **kw)
    if kind == "device":
        target = DeviceTarget(spec.device, spec.destroy_data_on, spec.force, ours=prov.formatted_devices)
        target.setup()
        out = probe_path(target.device, storage_class=cls, **kw)
        return out
    if kind == "disk-model" and (passed := passed_disk()) is not None:  # in a guest: the drive the host serves
        target = GuestModelTarget(passed, spec.model or "")
        target.setup()  # its serial, not mounted: the probe writes to it, before any cell's mkfs
        out = probe_path(target.device, storage_class=cls, **kw)
        out.details["guest_disk"] = target.info()["guest_disk"]
        return out
    if kind in ("loop", "disk-model"):
        ident = f"probe-{os.getpid()}"
        target = (
            LoopTarget(prov._require_state(), ident, spec.size_bytes)
            if kind == "loop"
            else DiskModelTarget(
                prov._require_state(), ident, spec.size_bytes, spec.model or "", offset_bytes=spec.model_offset_bytes
            )
        )
        try:
            target.setup()
            out = probe_path(target.device, storage_class=cls, **kw)
            out.details.update({k: v for k, v in target.info().items() if k in ("loop_direct_io", "backing_fs")})
            return out
        finally:
            target.teardown()
    return StorageProbe(cls, kind, 0, note=f"a {kind} target is not probed")


__all__ = [
    "FLUSHES",
    "READS",
    "SEQ_BYTES",
    "StorageProbe",
    "probe_directory",
    "probe_path",
    "probe_target",
    "storage_class_of",
]
