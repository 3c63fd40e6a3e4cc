"""The target contract: where a filesystem lives. A target yields a block device (or none) and
takes it back; the Provisioner does mkfs and mount on top."""

from __future__ import annotations

from typing import Any


class Target:
    kind: str = ""
    owns_mount: bool = True  # fsmeter mounts it, so it may unmount/remount it
    needs_mkfs: bool = True
    overwrite: bool = False  # may mkfs use its force-overwrite flags here
    device: str | None = None
    journal_device: str | None = None
    path: str | None = None  # set by targets that come already mounted (dir)

    def setup(self) -> None:
        """Prepare the device(s). Everything created is recorded in the state file first."""

    def teardown(self) -> None:
        """Undo setup; only what setup created."""

    def watch(self) -> Any:
        """What watches the target's own device over a phase (fsmeter.regime.PhaseWatch ``disk``):
        None, but for a disk model (its lateness and service times)."""
        return None

    def info(self) -> dict[str, Any]:
        return {"target": self.kind, "device": self.device, "journal_device": self.journal_device}
