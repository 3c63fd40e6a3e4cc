"""The default target: a sparse image file in the scratch folder on a loop device with direct I/O
(so the host's page cache does not cache the image a second time)."""

from __future__ import annotations

import os
from typing import Any

from fsmeter.provision import sysinfo
from fsmeter.provision._run import run
from fsmeter.provision.errors import ProvisionError
from fsmeter.provision.state import StateFile
from fsmeter.provision.targets.base import Target
from fsmeter.provision.undo import loop_identity, undo_image


class LoopTarget(Target):
    kind = "loop"
    overwrite = True  # our own fresh image

    def __init__(
        self,
        state: StateFile,
        ident: str,
        size_bytes: int,
        *,
        journal_size_bytes: int | None = None,
        preallocate: bool = False,
    ):
        self.state = state
        self.ident = ident
        self.size_bytes = size_bytes
        self.journal_size_bytes = journal_size_bytes
        self.preallocate = preallocate
        self.images: list[dict[str, Any]] = []  # state entries: image then its loop
        self.image: str | None = None
        self.journal_image: str | None = None

    def setup(self) -> None:
        if not os.path.exists("/dev/loop-control"):
            raise ProvisionError(
                "loop devices unavailable (/dev/loop-control missing): run as root with the "
                "loop module, or use --target dir:/path"
            )
        images_dir = os.path.join(self.state.scratch, "images")
        os.makedirs(images_dir, mode=0o700, exist_ok=True)
        self.image, self.device = self._attach(os.path.join(images_dir, f"{self.ident}.img"), self.size_bytes)
        if self.journal_size_bytes:
            self.journal_image, self.journal_device = self._attach(
                os.path.join(images_dir, f"{self.ident}-journal.img"), self.journal_size_bytes
            )

    def _attach(self, image: str, size_bytes: int) -> tuple[str, str]:
        free = os.statvfs(os.path.dirname(image))
        free_bytes = free.f_bavail * free.f_frsize
        if free_bytes < size_bytes:
            raise ProvisionError(
                f"scratch folder {self.state.scratch} has {free_bytes >> 20} MiB free, the image "
                f"needs {size_bytes >> 20} MiB: free space or set FSMETER_SCRATCH elsewhere"
            )
        image_id = self.state.add("image", path=image)  # recorded before it exists
        entry: dict[str, Any] = {"image": image, "image_id": image_id, "device": None, "loop_id": None}
        self.images.append(entry)
        fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            st = os.fstat(fd)  # what proves it is ours at cleanup time
            self.state.update(image_id, dev=st.st_dev, ino=st.st_ino)
            if self.preallocate:
                os.posix_fallocate(fd, 0, size_bytes)
            else:
                os.ftruncate(fd, size_bytes)  # sparse
        finally:
            os.close(fd)
        out = run(
            ["losetup", "--direct-io=on", "--find", "--show", image],
            what="losetup",
            hint="are loop devices available? (fsmeter doctor)",
        )
        device = out.strip().splitlines()[-1]
        entry["device"] = device
        entry["loop_id"] = self.state.add("loop", device=device, image=image, **loop_identity(device))
        return image, device

    def teardown(self) -> None:
        errors = []
        for entry in reversed(self.images):
            try:
                undo_image({"path": entry["image"]})  # detaches the loop(s) over it, then deletes it
            except Exception as exc:  # noqa: BLE001 - keep tearing down the others
                errors.append(exc)
                continue
            for key in ("loop_id", "image_id"):
                if entry[key]:
                    self.state.remove(entry[key])
        self.images.clear()
        if errors:
            raise errors[0]

    def info(self) -> dict[str, Any]:
        dio = None
        if self.device:
            try:
                with open(f"/sys/block/{os.path.basename(self.device)}/loop/dio") as f:
                    dio = f.read().strip() == "1"
            except OSError:
                pass
        return {
            **super().info(),
            "image": self.image,
            "journal_image": self.journal_image,
            "size_bytes": self.size_bytes,
            "loop_direct_io": dio,
            "backing_fs": getattr(sysinfo.mount_containing(self.state.scratch), "fstype", None),
        }
