"""The Provisioner: creates filesystems on targets, applies host factors, and guarantees teardown.

    with Provisioner() as prov:                      # removes a killed run's leftovers first
        mnt = prov.create(TargetSpec(size_bytes=1 << 30), FsConfig(name="xfs"))
        with prov.host(HostFactors(scheduler="none", cpus=2), mnt) as host:
            ... run the workload in mnt.path; record mnt.info() | host.info()
        prov.destroy(mnt)                            # or left to the end of the with-block

Every resource is in the state file before (or right after) it exists; leaving the with-block
for any reason, including SIGINT/SIGTERM, unmounts, detaches and deletes what it created.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

from fsmeter.interrupt import STOP_SIGNALS, note_signal
from fsmeter.provision import host as hostmod
from fsmeter.provision import sysinfo
from fsmeter.provision._run import run
from fsmeter.provision.errors import HostFactorError, Interrupted, MkfsError, ProvisionError
from fsmeter.provision.filesystems import get_filesystem
from fsmeter.provision.filesystems.base import Filesystem
from fsmeter.provision.mounted import Mounted
from fsmeter.provision.specs import FsConfig, HostFactors, TargetSpec
from fsmeter.provision.state import StateFile, default_scratch
from fsmeter.provision.targets import (
    DeviceTarget,
    DirTarget,
    DiskModelTarget,
    GuestModelTarget,
    LoopTarget,
    Target,
    TmpfsTarget,
    passed_disk,
)
from fsmeter.provision.undo import cleanup_leftovers, file_identity, loop_identity, undo_mountpoint, unmount

log = logging.getLogger("fsmeter.provision")
_seq = itertools.count()


class Provisioner:
    """Context manager owning everything it provisions. Not shared between threads."""

    def __init__(self, scratch: str | None = None, *, clean_leftovers: bool = True, handle_signals: bool = True):
        self.scratch = os.path.abspath(scratch or default_scratch())
        self.clean_leftovers = clean_leftovers
        self.handle_signals = handle_signals
        self.state: StateFile | None = None
        self.mounts: list[Mounted] = []
        self.leftovers_removed: list[str] = []
        self.leftover_problems: list[str] = []
        #: leftovers no longer what their records say (someone else's now): left alone, records dropped
        self.leftovers_left_alone: list[str] = []
        self._old_handlers: dict[int, Any] = {}
        self._quiet = 0  # >0 while tearing down: further signals wait for it to finish
        #: A stop signal that arrived in a shielded block, raised once the block is done.
        self._pending: int | None = None
        #: Devices this provisioner formatted itself: the filesystem found on them next time is its own,
        #: not the user's data, so a campaign may format them again cell after cell without --force.
        self.formatted_devices: set[str] = set()

    # -- lifetime -----------------------------------------------------------------------
    def __enter__(self) -> Provisioner:
        self.state = StateFile(self.scratch)
        if self.clean_leftovers:
            self.leftovers_removed, self.leftover_problems = cleanup_leftovers(self.state, self.leftovers_left_alone)
            for msg in self.leftovers_left_alone:
                log.warning("%s", msg)
            for msg in self.leftover_problems:
                log.warning("leftover not removed: %s", msg)
        if self.handle_signals and threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                if signal.getsignal(signum) is not signal.SIG_IGN:
                    self._old_handlers[signum] = signal.signal(signum, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        self._quiet += 1
        try:
            self.close()
        finally:
            self._quiet -= 1
            for signum, old in self._old_handlers.items():
                signal.signal(signum, old)
            self._old_handlers.clear()

    def _on_signal(self, signum: int, frame: object) -> None:
        note_signal(signum)
        if self._quiet:
            log.warning("signal %d: already cleaning up, please wait", signum)
            if self._pending is None:
                self._pending = signum
            return
        log.warning("signal %d: unmounting and detaching before exit", signum)
        raise Interrupted(signum)

    @contextlib.contextmanager
    def _shielded(self) -> Iterator[None]:
        """A block no stop signal interrupts (a trial's commit); one that arrived in it is raised when
        the block is done, so the run still stops (it was dropped: a SIGTERM that came during a
        commit left the campaign running)."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1
        if self._quiet == 0 and self._pending is not None:
            signum, self._pending = self._pending, None
            raise Interrupted(signum)

    def close(self) -> None:
        """Destroy every filesystem still provisioned, newest first."""
        errors = []
        for mnt in reversed(list(self.mounts)):
            try:
                self.destroy(mnt)
            except Exception as exc:  # noqa: BLE001 - the others still need tearing down
                log.error("teardown of %s failed: %s", mnt.path, exc)
                errors.append(exc)
        if errors:
            raise errors[0]

    def _require_state(self) -> StateFile:
        if self.state is None:
            raise RuntimeError("use Provisioner as a context manager: `with Provisioner() as prov:`")
        return self.state

    # -- create / destroy ---------------------------------------------------------------
    def create(self, spec: TargetSpec | None = None, fs: FsConfig | str | None = None) -> Mounted:
        """Make and mount a filesystem as configured; raises ProvisionError (a UserError) with the cause.

        ``fs`` is ignored-but-checked for a ``dir`` target (the directory's filesystem is used);
        a nodev filesystem (tmpfs) needs no device, so a ``loop`` spec with it becomes a tmpfs.
        """
        state = self._require_state()
        spec = spec or TargetSpec()
        cfg = FsConfig(name=fs) if isinstance(fs, str) else fs
        if spec.kind == "dir":
            if cfg is not None and cfg.mkfs_options:
                raise ProvisionError(
                    "dir target: no mkfs is done, so mkfs_options cannot apply: remove them", exit_code=2
                )
            target: Target = DirTarget(spec.path or ".")
            target.setup()
            mnt = Mounted(
                fs=None,
                config=cfg,
                target=target,
                path=target.path or "",
                source=None,
                mount_type=None,
                mount_options="",
                mkfs_argv=None,
                mkfs_options=[],
                journal_mkfs_argv=None,
            )
            self.mounts.append(mnt)
            return mnt
        if cfg is None:
            cfg = FsConfig(name="tmpfs" if spec.kind == "tmpfs" else "ext4")
        if spec.kind == "glusterfs":  # hosts, servers, a volume on bricks of this configuration
            from fsmeter.provision.gluster import GlusterMounted

            get_filesystem(cfg.name).validate(cfg)
            gm = GlusterMounted(self, spec, cfg)
            self.mounts.append(gm)  # type: ignore[arg-type]
            return gm  # type: ignore[return-value]
        fsys = get_filesystem(cfg.name)
        fsys.validate(cfg)
        if spec.kind in ("loop", "disk-model") and fsys.needs_device and spec.size_bytes < fsys.min_size_bytes:
            raise ProvisionError(
                f"{fsys.name} needs an image of at least {fsys.min_size_bytes >> 20} MiB: "
                f"raise size_bytes (now {spec.size_bytes >> 20} MiB)",
                exit_code=2,
            )
        fsys.check_available()
        ident = f"{fsys.name}-{os.getpid()}-{next(_seq)}"
        target = self._target(spec, fsys, cfg, ident, state)
        mnt: Mounted | None = None
        try:
            target.setup()
            mkfs_argv = journal_argv = None
            options: list[str] = []
            if target.needs_mkfs:
                mkfs_argv, journal_argv, options = self._mkfs(fsys, cfg, target)
                if isinstance(target, DeviceTarget):
                    self.formatted_devices.add(target.device)
            path = os.path.join(self.scratch, "mnt", ident)
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            source = target.device if fsys.needs_device else getattr(target, "source", f"fsmeter-{ident}")
            mnt = Mounted(
                fs=fsys,
                config=cfg,
                target=target,
                path=path,
                source=source,
                mount_type=fsys.mount_type(),
                mount_options=fsys.mount_options(cfg, target.journal_device, spec.size_bytes),
                mkfs_argv=mkfs_argv,
                mkfs_options=options,
                journal_mkfs_argv=journal_argv,
            )
            mnt.entry_ids.append(state.add("mountpoint", path=path))
            os.mkdir(path, 0o755)
            state.update(mnt.entry_ids[-1], **file_identity(path))
            mount_id = state.add(
                "mount", target=path, source=source, fstype=mnt.mount_type, **self._source_identity(source, target)
            )
            mnt.entry_ids.append(mount_id)
            mnt.mount()
            state.update(mount_id, dev=sysinfo.dev_text(os.stat(path).st_dev))
        except BaseException:
            with self._shielded():
                self._rollback(mnt, target)
            raise
        self.mounts.append(mnt)
        log.info("provisioned %s on %s (%s)", fsys.name, mnt.path, mnt.device or mnt.source)
        return mnt

    @staticmethod
    def _source_identity(source: str, target: Target) -> dict[str, Any]:
        """What proves a mount's source is ours at cleanup time: a block device's number; for a
        loop device also the image behind it, by path and device/inode."""
        if not source.startswith("/dev/"):
            return {}
        ident: dict[str, Any] = {}
        if source.startswith("/dev/loop"):
            ident = {k: v for k, v in loop_identity(source).items() if k != "rdev"}
            image = getattr(target, "image", None) if getattr(target, "device", None) == source else None
            if image:
                ident["image"] = image
        try:
            ident["source_rdev"] = sysinfo.dev_text(os.stat(source).st_rdev)
        except OSError:
            pass
        return ident

    def _target(self, spec: TargetSpec, fsys: Filesystem, cfg: FsConfig, ident: str, state: StateFile) -> Target:
        if not fsys.needs_device:
            if spec.kind in ("device", "disk-model"):
                raise ProvisionError(f"{fsys.name} lives in memory: it cannot go on a {spec.kind} target", exit_code=2)
            return TmpfsTarget(ident, spec.size_bytes)
        if spec.kind == "tmpfs":
            raise ProvisionError(
                f"tmpfs target: filesystem {fsys.name} needs a block device: use kind='loop'", exit_code=2
            )
        if spec.kind == "disk-model" and (passed := passed_disk()) is not None:  # inside a guest: the host's drive
            return GuestModelTarget(passed, spec.model or "", journal=cfg.external_journal)
        if spec.kind == "disk-model":  # an external journal goes on a second drive of the same profile
            return DiskModelTarget(
                state,
                ident,
                spec.size_bytes,
                spec.model or "",
                offset_bytes=spec.model_offset_bytes,
                journal_size_bytes=spec.journal_size_bytes if cfg.external_journal else None,
            )
        if spec.kind == "device":
            if cfg.external_journal:
                raise ProvisionError(
                    "external journal on a device target is not supported: use a loop target", exit_code=2
                )
            return DeviceTarget(spec.device, spec.destroy_data_on, spec.force, ours=self.formatted_devices)
        return LoopTarget(
            state,
            ident,
            spec.size_bytes,
            preallocate=spec.preallocate,
            journal_size_bytes=spec.journal_size_bytes if cfg.external_journal else None,
        )

    def _mkfs(self, fsys: Filesystem, cfg: FsConfig, target: Target) -> tuple[list[str], list[str] | None, list[str]]:
        assert target.device
        options = fsys.mkfs_options(cfg, overwrite=target.overwrite)
        journal_argv = None
        if target.journal_device:
            journal_argv = fsys.journal_mkfs_argv(target.journal_device, options, overwrite=target.overwrite)
            if journal_argv:
                run(journal_argv, error=MkfsError, what=f"{journal_argv[0]} (journal device)")
        argv = fsys.mkfs_argv(target.device, options, target.journal_device)
        run(argv, error=MkfsError, what=f"{argv[0]} ({fsys.name})", hint="check the mkfs options")
        return argv, journal_argv, options

    def _rollback(self, mnt: Mounted | None, target: Target) -> None:
        state = self._require_state()
        try:
            if mnt is not None:
                self._unmount(mnt, state)
        finally:
            target.teardown()

    def _unmount(self, mnt: Mounted, state: StateFile) -> None:
        if mnt.owns_mount and mnt.source:
            unmount(mnt.path, mnt.source)
            undo_mountpoint({"path": mnt.path})
        for entry_id in mnt.entry_ids:
            state.remove(entry_id)
        mnt.entry_ids.clear()

    def destroy(self, mnt: Mounted) -> None:
        """Unmount, detach and delete what ``create`` made for ``mnt`` (nothing for a dir target)."""
        if mnt.destroyed:
            return
        if not isinstance(mnt, Mounted):  # a glusterfs target: its hosts, volume and bricks
            with self._shielded():
                mnt.close()
                if mnt in self.mounts:
                    self.mounts.remove(mnt)
            return
        state = self._require_state()
        with self._shielded():
            self._unmount(mnt, state)
            mnt.target.teardown()
            mnt.destroyed = True
            if mnt in self.mounts:
                self.mounts.remove(mnt)
        log.info("destroyed %s", mnt.path)

    # -- host factors -------------------------------------------------------------------
    def host(
        self, factors: HostFactors, mnt: Mounted | None = None
    ) -> contextlib.AbstractContextManager[hostmod.AppliedHost]:
        """Apply host factors for a block of work and always revert them: ``with prov.host(f, mnt) as h``.

        Scheduler and readahead act on ``mnt``'s device (a partition's disk).
        """
        state = self._require_state()
        changes: list[hostmod.HostChange] = []
        if factors.scheduler is not None or factors.readahead_kb is not None:
            device = mnt.device if mnt is not None else None
            if device is None:
                raise HostFactorError(
                    f"scheduler/readahead: {mnt.fs_name if mnt else 'no filesystem'} has no block device: "
                    "leave these factors out for this target",
                    exit_code=2,
                )
            if factors.scheduler is not None:
                changes.append(hostmod.Scheduler(device, factors.scheduler, state))
            if factors.readahead_kb is not None:
                changes.append(hostmod.Readahead(device, factors.readahead_kb, state))
        if factors.cpus is not None:
            changes.append(hostmod.CpuAffinity(factors.cpus))
        if factors.page_cache_limit_bytes is not None:
            changes.append(hostmod.PageCacheLimit(factors.page_cache_limit_bytes, state))
            # a machine with that memory also holds that much less dirty data (host/dirty.py)
            changes += hostmod.dirty_limits(factors.page_cache_limit_bytes, state)
        return hostmod.applied(changes)
