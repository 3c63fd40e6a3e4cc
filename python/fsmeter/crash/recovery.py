"""Recovering a crashed image the way a machine boots after a power cut, with each step timed.

- ext2/3/4: ``e2fsck -fy`` (for ext3/4 it replays the journal first), then ``mount``.
- xfs: ``mount`` (replays the log: xfs_repair refuses a dirty log), ``umount``, then ``xfs_repair -e``
  (its full check; exit 4 says it repaired something), then the verifying mount (not timed).
- btrfs: ``btrfs check --readonly`` (nothing to replay: btrfs is copy-on-write; the tree log of
  fsynced files is replayed by the mount), then ``mount``.

The check's exit code says whether it found (and fixed) damage; entries in ``lost+found`` are what
it could not put back.
"""

from __future__ import annotations

import os
import re
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
    fsck_fixed: bool = False  # the check found damage and repaired it (beyond stale free counts)
    fsck_repairs: list[str] = field(default_factory=list)  # e2fsck: each problem it fixed
    fsck_failed: bool = False  # the check could not repair, or could not run
    fsck_output: str = ""  # its last lines
    journal_replay_s: float | None = None  # ext3/4: the journal replay, part of fsck_s
    mount_s: float | None = None
    mount_error: str | None = None
    lost_found_entries: int = 0
    steps: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


_PROMPT = re.compile(r"^[A-Z][\w ]*\? yes$")
_TRAILING_PROMPT = re.compile(r"\s+[A-Z][\w ]*\? yes$")
# What e2fsck -f reports after every crash of a healthy ext4: the superblock's free counts are not
# journaled (the kernel recomputes them at mount), so they are stale on disk by design.
_SUMMARY_ONLY = ("Free blocks count wrong", "Free inodes count wrong", "Padding at end of inode bitmap")


def e2fsck_repairs(output: str) -> list[str]:
    """The problems e2fsck -y answered yes to, in order: the text before a prompt on the same line
    ("... inode 15.  Clear? yes"), or the line before a prompt that stands alone ("Fix? yes")."""
    lines = output.splitlines()
    found = []
    for i, line in enumerate(lines):
        text = line.strip()
        if not text.endswith("? yes"):
            continue
        if _PROMPT.match(text):
            if i > 0 and lines[i - 1].strip():
                found.append(lines[i - 1].strip())
        else:
            found.append(_TRAILING_PROMPT.sub("", text))
    return found


def _timed(argv: list[str], full: list[str] | None = None) -> tuple[float, int, str]:
    exe = which(argv[0]) or argv[0]
    t0 = time.monotonic()
    try:
        p = subprocess.run(
            [exe, *argv[1:]], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return time.monotonic() - t0, -1, f"{argv[0]} did not finish in {CHECK_TIMEOUT_S} s"
    dt = time.monotonic() - t0
    if full is not None:
        full.append(p.stdout + p.stderr)
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
        # The journal is replayed on its own first, so that the full check's exit code says whether it
        # found damage (a replay alone makes e2fsck exit 1, "filesystem modified"); both are timed.
        if fsname != "ext2":
            r.journal_replay_s, rc, out = _timed(["e2fsck", "-y", "-E", "journal_only", device])
            if rc < 0 or rc >= 4:
                r.fsck_s, r.fsck_rc, r.fsck_output, r.fsck_failed = r.journal_replay_s, rc, out, True
        if not r.fsck_failed:
            full: list[str] = []
            dt, r.fsck_rc, r.fsck_output = _timed(["e2fsck", "-fy", device], full)
            r.fsck_s = dt + (r.journal_replay_s or 0.0)
            # e2fsck: 0 clean, 1/2 errors corrected, 4 left uncorrected, 8+ could not run
            r.fsck_repairs = e2fsck_repairs(full[0])[:50]
            r.fsck_fixed = r.fsck_rc in (1, 2, 3) and not all(x.startswith(_SUMMARY_ONLY) for x in r.fsck_repairs)
            r.fsck_failed = r.fsck_rc < 0 or r.fsck_rc >= 4
        r.steps = (["e2fsck -E journal_only (timed, in fsck_s)"] if fsname != "ext2" else []) + [
            "e2fsck -fy (timed)",
            "mount (timed)",
        ]
        r.mount_s, r.mount_error = mnt.mount()
    elif fsname == "xfs":
        r = Recovery(fsck_tool="xfs_repair")
        r.mount_s, r.mount_error = mnt.mount()
        if r.mount_error is None:
            mnt.umount()
        # -e: exit 4 when it repaired metadata, 0 when it found nothing to repair
        r.fsck_s, r.fsck_rc, r.fsck_output = _timed(["xfs_repair", "-e", device])
        r.fsck_failed = r.fsck_rc not in (0, 4)
        r.fsck_fixed = r.fsck_rc == 4
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
