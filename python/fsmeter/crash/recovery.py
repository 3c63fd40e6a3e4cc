"""Recovering a crashed image the way a machine boots after a power cut, with each step timed.

- ext2/3/4: ``e2fsck -fy`` (for ext3/4 it replays the journal first), then ``mount``.
- xfs: ``mount`` (replays the log: xfs_repair refuses a dirty log), ``umount``, then ``xfs_repair``
  (its full check), then the verifying mount (not timed).
- btrfs: ``btrfs check --readonly`` (nothing to replay: btrfs is copy-on-write; the tree log of
  fsynced files is replayed by the mount), then ``mount``.

The check's exit code says whether it found (and fixed) damage; entries in ``lost+found`` are what
it could not put back.
"""
from __future__ import annotations

import os
import subprocess
import time
from dataclasses import asdict, dataclass, field

from fsmeter.provision._run import which
from fsmeter.provision.state import StateFile
from fsmeter.provision.undo import undo_mountpoint, unmount

CHECK_TIMEOUT_S = 600


@dataclass
class Recovery:
    fsck_tool: str
    fsck_s: float | None = None
    fsck_rc: int | None = None
    fsck_fixed: bool = False        # the check found damage and repaired it
    fsck_failed: bool = False       # the check could not repair, or could not run
    fsck_output: str = ""           # its last lines
    mount_s: float | None = None
    mount_error: str | None = None
    lost_found_entries: int = 0
    steps: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _timed(argv: list[str]) -> tuple[float, int, str]:
    exe = which(argv[0]) or argv[0]
    t0 = time.monotonic()
    try:
        p = subprocess.run([exe, *argv[1:]], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return time.monotonic() - t0, -1, f"{argv[0]} did not finish in {CHECK_TIMEOUT_S} s"
    dt = time.monotonic() - t0
    out = (p.stdout + p.stderr).strip().splitlines()
    return dt, p.returncode, "\n".join(out[-12:])


class RecoveredMount:
    """Mount of a recovered image; recorded in the state file before it is made, unmounted by ``close``."""

    def __init__(self, state: StateFile, device: str, path: str, fstype: str, options: str):
        self.state, self.device, self.path, self.fstype, self.options = state, device, path, fstype, options
        self.ids: list[str] = []
        self.mounted = False

    def mount(self) -> tuple[float, str | None]:
        if not self.ids:
            self.ids.append(self.state.add("mountpoint", path=self.path))
            os.makedirs(self.path, exist_ok=True)
            self.ids.append(self.state.add("mount", target=self.path, source=self.device, fstype=self.fstype))
        argv = ["mount", "-t", self.fstype] + (["-o", self.options] if self.options else []) + [self.device, self.path]
        dt, rc, out = _timed(argv)
        if rc != 0:
            return dt, out or f"mount exit {rc}"
        self.mounted = True
        return dt, None

    def umount(self) -> None:
        if self.mounted:
            unmount(self.path, self.device)
            self.mounted = False

    def close(self) -> None:
        try:
            self.umount()
            if os.path.isdir(self.path):
                undo_mountpoint({"path": self.path})
        finally:
            for i in self.ids:
                self.state.remove(i)
            self.ids.clear()


def _count_lost_found(path: str) -> int:
    try:
        return len(os.listdir(os.path.join(path, "lost+found")))
    except OSError:
        return 0


def recover(fsname: str, device: str, mnt: RecoveredMount) -> Recovery:
    """Check and mount ``device``; on return ``mnt`` is mounted unless ``mount_error`` says why not."""
    if fsname in ("ext2", "ext3", "ext4"):
        r = Recovery(fsck_tool="e2fsck -fy")
        r.fsck_s, r.fsck_rc, r.fsck_output = _timed(["e2fsck", "-fy", device])
        # e2fsck: 0 clean, 1/2 errors corrected, 4 left uncorrected, 8+ could not run
        r.fsck_fixed = r.fsck_rc in (1, 2, 3)
        r.fsck_failed = r.fsck_rc < 0 or r.fsck_rc >= 4
        r.steps = ["e2fsck -fy (timed)", "mount (timed)"]
        r.mount_s, r.mount_error = mnt.mount()
    elif fsname == "xfs":
        r = Recovery(fsck_tool="xfs_repair")
        r.mount_s, r.mount_error = mnt.mount()
        if r.mount_error is None:
            mnt.umount()
        r.fsck_s, r.fsck_rc, r.fsck_output = _timed(["xfs_repair", device])
        r.fsck_failed = r.fsck_rc != 0
        r.fsck_fixed = r.fsck_rc == 0 and ("moving disconnected" in r.fsck_output or "fixing" in r.fsck_output)
        r.steps = ["mount: log replay (timed)", "umount", "xfs_repair (timed)", "mount to verify"]
        if r.mount_error is None:
            _, err = mnt.mount()
            r.mount_error = err
    elif fsname == "btrfs":
        r = Recovery(fsck_tool="btrfs check --readonly")
        r.fsck_s, r.fsck_rc, r.fsck_output = _timed(["btrfs", "check", "--readonly", device])
        r.fsck_failed = r.fsck_rc != 0  # read-only: errors are reported, not fixed
        r.steps = ["btrfs check --readonly (timed)", "mount: tree-log replay (timed)"]
        r.mount_s, r.mount_error = mnt.mount()
    else:  # pragma: no cover - the campaign model only admits the above
        raise ValueError(f"no recovery procedure for {fsname}")
    if r.mount_error is None:
        r.lost_found_entries = _count_lost_found(mnt.path)
    return r
