"""A disk model: a sparse image served by fsmeter-diskmodel (FUSE) with a spinning disk's timing,
under a direct-I/O loop device the filesystem goes on.

Every request the loop device makes completes when the model of the profile's drive says it
would (crates/diskmodel). Nothing below the filesystem caches: the served file is opened with
FOPEN_DIRECT_IO (no FUSE page cache) and the loop device does direct I/O to it. The image's byte 0
is the drive's byte ``offset_bytes`` (default 0: a first partition, on the outer zone).

The daemon's ``stats.json`` (beside ``disk.img`` in its mount) counts the requests served, their
modelled service times and how late each reply left (fsmeter.diskmodel.stats); ``watch()`` gives
the per-phase view campaigns record in each phase's regime.

The image's data is kept in the daemon's memory when the target (and its journal) fit in half the
memory available at setup, less what a guest it serves will take, else in the sparse file beside it,
read and written with direct I/O: ``image_store`` in ``info()`` says which. An image in memory is
committed when the daemon starts (``--populate``: every page written once, before the first
request): on a virtual machine whose hypervisor takes back the pages the guest frees, a first write
to a page cost several times a later one, and a new filesystem's first pass made the replies late. The host's disk is not
always faster than a modelled drive's interface, and a write the drive's cache takes at once must
not wait for it. The daemon is started before a cell's page-cache limit applies, so the image's
memory is not the limited page cache's.

An external journal (``journal_size_bytes``) goes on a second drive of the same profile, served by
its own daemon under its own loop device: a journal on another spindle, with its own actuator and
platter, as the studies that used one had it. The per-phase view counts both drives' requests.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from fsmeter.diskmodel import stats as dmstats
from fsmeter.diskmodel.profiles import Profile, describe, diskmodel_program, drive_spec, load_profile
from fsmeter.errors import UserError
from fsmeter.provision.errors import ProvisionError
from fsmeter.provision.fusedisk import ServedDisk
from fsmeter.provision.state import StateFile
from fsmeter.provision.targets.base import Target
from fsmeter.provision.undo import file_identity, undo_image

FUSE_SOURCE = "fsmeter-diskmodel"
#: The image is kept in memory when the target's bytes are at most this share of MemAvailable.
MEMORY_SHARE = 0.5


def profile_digest(p: Profile) -> str:
    """sha256 of the drive description the daemon runs (what the model's timing depends on)."""
    return hashlib.sha256(json.dumps(drive_spec(p), sort_keys=True).encode()).hexdigest()


def check_fits(p: Profile, size_bytes: int, offset_bytes: int, capacity_bytes: int) -> None:
    if size_bytes % 512 or offset_bytes % 512:
        raise ProvisionError(
            f"disk-model target: size {size_bytes} and offset {offset_bytes} must be multiples of 512 bytes",
            exit_code=2,
        )
    if size_bytes + offset_bytes > capacity_bytes:
        raise ProvisionError(
            f"disk-model target: {size_bytes >> 20} MiB at offset {offset_bytes >> 20} MiB does not fit on "
            f"{p.name} ({capacity_bytes / 1e9:.1f} GB): make size (plus offset) smaller",
            exit_code=2,
        )


class DiskModelWatch:
    """Snapshots of the daemons' stats for fsmeter.regime.PhaseWatch: ``snapshot()`` before a
    phase, ``since(snapshot)`` after it (the phase's lateness, service times, disturbed or not),
    over every drive of the target (the data drive, and the journal's when there is one)."""

    def __init__(self, stats_paths: list[str], name: str):
        self.stats_paths = stats_paths
        self.name = name

    def snapshot(self) -> dict | None:
        try:
            return dmstats.merge([dmstats.read_stats(p) for p in self.stats_paths])
        except (OSError, ValueError):
            return None

    def since(self, before: dict | None) -> dict | None:
        after = self.snapshot()
        if before is None or after is None:
            return None
        return {"model": self.name, **dmstats.since(before, after)}


class DiskModelTarget(Target):
    kind = "disk-model"
    overwrite = True  # our own fresh image

    def __init__(
        self,
        state: StateFile,
        ident: str,
        size_bytes: int,
        model: str,
        *,
        offset_bytes: int = 0,
        journal_size_bytes: int | None = None,
        folder: str | None = None,
        reserve_bytes: int = 0,
    ):
        self.state = state
        #: Where the image, the drive description and the daemon's mount go (default: the scratch
        #: folder's images/; a guest's: the folder it shares with the host, so it reads the stats).
        self.folder = folder or os.path.join(state.scratch, "images")
        #: Memory something else will take while the model serves (a guest's): not the image's to use.
        self.reserve_bytes = reserve_bytes
        self.ident = ident
        self.size_bytes = size_bytes
        self.model = model
        self.offset_bytes = offset_bytes
        self.profile: Profile | None = None
        self.figures: dict[str, Any] | None = None
        self.backing_image: str | None = None
        #: The loop device's backing file (the served disk.img): what proves the loop is ours.
        self.image: str | None = None
        self.disk: ServedDisk | None = None
        #: The external journal's drive (same profile, its own daemon and loop device), if any.
        self.journal_size_bytes = journal_size_bytes
        self.journal_disk: ServedDisk | None = None
        self.journal_image: str | None = None
        #: "memory" or "file": where the daemons keep the image's data (decided at setup).
        self.image_store: str | None = None
        self._ids: list[str] = []
        self._files: list[str] = []

    def _path(self, suffix: str) -> str:
        return os.path.join(self.folder, f"{self.ident}{suffix}")

    @property
    def stats_path(self) -> str:
        return os.path.join(self._path(".fuse"), "stats.json")

    @property
    def stats_paths(self) -> list[str]:
        """Every drive's stats file: the data drive's, then the journal's."""
        extra = [os.path.join(self._path("-journal.fuse"), "stats.json")] if self.journal_disk is not None else []
        return [self.stats_path, *extra]

    @property
    def control_path(self) -> str:
        return os.path.join(self._path(".fuse"), "control")

    def setup(self) -> None:
        if not os.path.exists("/dev/loop-control"):
            raise ProvisionError(
                "loop devices unavailable (/dev/loop-control missing): a disk-model target needs root and the loop module"
            )
        try:
            self.profile = load_profile(self.model)
            self.figures = describe(self.profile)
        except UserError as exc:
            raise ProvisionError(f"disk-model target: {exc.message}", exit_code=2) from None
        check_fits(self.profile, self.size_bytes, self.offset_bytes, self.figures["capacity_bytes"])
        prog = diskmodel_program()
        os.makedirs(os.path.dirname(self._path("")), mode=0o700, exist_ok=True)
        if self.journal_size_bytes is not None:
            check_fits(self.profile, self.journal_size_bytes, 0, self.figures["capacity_bytes"])
        from fsmeter.hostinfo import mem_available_bytes

        total = self.size_bytes + (self.journal_size_bytes or 0)
        free_mem = max(mem_available_bytes() - self.reserve_bytes, 0)
        self.image_store = "memory" if total <= MEMORY_SHARE * free_mem else "file"
        free = os.statvfs(os.path.dirname(self._path("")))
        # An image in the daemon's memory writes nothing to the scratch folder (the sparse backing
        # files stay empty); a file image takes room for what is written to it.
        if self.image_store == "file" and free.f_bavail * free.f_frsize < min(total, 1 << 30):
            raise ProvisionError(
                f"scratch folder {self.state.scratch} has {free.f_bavail * free.f_frsize >> 20} MiB free: the "
                "disk model's image needs room for what is written to it: free space or set FSMETER_SCRATCH elsewhere"
            )
        self.backing_image = self._serve(prog, "", self.size_bytes, self.offset_bytes)
        assert self.disk is not None
        self.device = self.disk.device
        self.image = self.disk.served_file
        if self.journal_size_bytes is not None:  # a second drive: its outer edge, as a journal partition's
            self._serve(prog, "-journal", self.journal_size_bytes, 0)
            assert self.journal_disk is not None
            self.journal_device = self.journal_disk.device
            self.journal_image = self.journal_disk.served_file

    def _serve(self, prog: str, name: str, size: int, offset: int) -> str:
        """One drive: a sparse backing image, the drive description, the daemon and its loop device,
        kept as ``self.disk`` (or ``self.journal_disk``) before it opens, so that teardown closes it
        even when opening fails half-way. Returns the backing image's path."""
        assert self.profile is not None
        backing = self._file(f"{name}.img")
        with open(backing, "r+b") as f:
            f.truncate(size)  # sparse: only what is written takes room
        spec_path = self._file(f"{name}.drive.json")
        with open(spec_path, "w") as f:
            json.dump(drive_spec(self.profile), f)
        fuse_dir = self._path(f"{name}.fuse")
        argv = [prog, "serve", spec_path, backing, fuse_dir, "--offset", str(offset)]
        ready_s = ServedDisk.READY_TIMEOUT_S
        if self.image_store == "memory":
            argv += ["--memory", "1", "--populate", "1"]
            # committing the image's memory first: measured 0.9-3.5 GB/s here; allow 256 MiB/s
            ready_s = ServedDisk.READY_TIMEOUT_S + size / (256 << 20)
        if not name:  # one set of idle pollers for the machine: the data drive's daemon keeps them
            argv += ["--idle-poll", "1"]
        disk = ServedDisk(
            self.state, argv, fuse_dir, source=FUSE_SOURCE, what=f"fsmeter-diskmodel{name}", ready_timeout_s=ready_s
        )
        if name:
            self.journal_disk = disk
        else:
            self.disk = disk
        disk.open()
        return backing

    def _file(self, suffix: str) -> str:
        """A new empty file of ours in the scratch folder, recorded (as an image, with its identity)
        before it exists, so that cleanup deletes it after a kill."""
        path = self._path(suffix)
        entry = self.state.add("image", path=path)
        self._ids.append(entry)
        self._files.append(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            self.state.update(entry, **file_identity(path))
        finally:
            os.close(fd)
        return path

    def teardown(self) -> None:
        errors: list[BaseException] = []
        for attr in ("journal_disk", "disk"):
            disk = getattr(self, attr)
            if disk is not None:
                try:
                    disk.close()
                except BaseException as exc:  # noqa: BLE001 - the files still go
                    errors.append(exc)
                setattr(self, attr, None)
        if not errors:
            for path in reversed(self._files):
                try:
                    undo_image({"path": path})
                except BaseException as exc:  # noqa: BLE001
                    errors.append(exc)
        if not errors:
            for entry_id in self._ids:
                self.state.remove(entry_id)
            self._ids.clear()
            self._files.clear()
        self.device = None
        self.journal_device = None
        if errors:
            raise errors[0]

    def watch(self) -> DiskModelWatch | None:
        return DiskModelWatch(self.stats_paths, self.model) if self.disk is not None else None

    def info(self) -> dict[str, Any]:
        p, fig = self.profile, self.figures or {}
        return {
            **super().info(),
            "storage_class": f"disk-model:{p.name if p else self.model}",
            "disk_model": p.name if p else self.model,
            "disk_model_drive": p.drive if p else None,
            "disk_model_profile_sha256": profile_digest(p) if p else None,
            "disk_model_capacity_bytes": fig.get("capacity_bytes"),
            "size_bytes": self.size_bytes,
            "offset_bytes": self.offset_bytes,
            "image": self.image,
            "backing_image": self.backing_image,
            "image_store": self.image_store,
            "loop_direct_io": self.disk.direct_io() if self.disk else None,
            "fuse_direct_io": True,
            **(
                {
                    "journal_drive": "a second drive of the same profile, its own daemon and loop device",
                    "journal_size_bytes": self.journal_size_bytes,
                    "journal_image": self.journal_image,
                    "journal_loop_direct_io": self.journal_disk.direct_io() if self.journal_disk else None,
                }
                if self.journal_size_bytes is not None
                else {}
            ),
        }


__all__ = ["FUSE_SOURCE", "DiskModelTarget", "DiskModelWatch", "check_fits", "profile_digest"]
