"""A disk served by one of fsmeter's FUSE daemons, under a direct-I/O loop device.

    with ServedDisk(state, argv, fuse_dir, source="fsmeter-x", what="the x daemon") as disk:
        disk.device        # the loop device to put a filesystem on (or read raw)
        disk.direct_io()   # whether the loop device really does direct I/O to the served file

``argv`` starts the daemon (fsmeter-blocklog, fsmeter-diskmodel: crates/fusedisk), whose last
argument is ``fuse_dir``; it prints ``ready`` once it serves ``fuse_dir/disk.img``. The mount and the
loop device are in the state file before they exist; ``close`` (and the state file's undo after a
SIGKILL: loop devices first, then the FUSE mount, which ends the daemon) removes both and the mount
point.
"""

from __future__ import annotations

import os
import select
import subprocess
import time

from fsmeter.provision import sysinfo
from fsmeter.provision._run import run
from fsmeter.provision.errors import ProvisionError
from fsmeter.provision.state import StateFile
from fsmeter.provision.undo import detach_loop, undo_fuse

#: The name of the served file in the daemon's mount.
DISK_NAME = "disk.img"


def helper_program(path: str, what: str) -> str:
    """The path of a helper daemon, after checking it and /dev/fuse exist."""
    if not os.path.exists(path):
        raise ProvisionError(f"{path} is missing: reinstall fsmeter (`make build` or `pip install .`)", exit_code=1)
    if not os.path.exists("/dev/fuse"):
        raise ProvisionError(
            f"{what} needs FUSE (/dev/fuse is missing): load the fuse module (modprobe fuse)", exit_code=1
        )
    return path


class ServedDisk:
    """A FUSE daemon serving ``fuse_dir/disk.img`` and a loop device (``--direct-io=on``) over it."""

    READY_TIMEOUT_S = 15.0

    def __init__(
        self,
        state: StateFile,
        argv: list[str],
        fuse_dir: str,
        *,
        source: str,
        what: str,
        ready_timeout_s: float = READY_TIMEOUT_S,
    ):
        self.state = state
        self.ready_timeout_s = ready_timeout_s
        self.argv = argv
        self.fuse_dir = fuse_dir
        self.source = source
        self.what = what
        self.device: str | None = None
        self.proc: subprocess.Popen | None = None
        self._ids: list[str] = []

    @property
    def served_file(self) -> str:
        return os.path.join(self.fuse_dir, DISK_NAME)

    def __enter__(self) -> ServedDisk:
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        self._ids.append(self.state.add("fuse", target=self.fuse_dir, source=self.source))
        os.makedirs(self.fuse_dir, mode=0o700)
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        ready, _, _ = select.select([self.proc.stdout], [], [], self.ready_timeout_s)
        line = self.proc.stdout.readline().decode(errors="replace").strip() if ready else ""
        if line != "ready":
            err = self._stop_daemon() or f"no answer in {self.ready_timeout_s:g} s"
            raise ProvisionError(f"{self.what} did not start: {err}", exit_code=1)
        out = run(["losetup", "--direct-io=on", "--find", "--show", self.served_file], what=f"losetup ({self.what})")
        self.device = out.strip().splitlines()[-1]
        self._ids.append(self.state.add("loop", device=self.device, image=self.served_file))

    def direct_io(self) -> bool | None:
        """The loop device's dio flag (sysfs): True when it opens the served file with O_DIRECT."""
        if not self.device:
            return None
        try:
            with open(f"/sys/block/{os.path.basename(self.device)}/loop/dio") as f:
                return f.read().strip() == "1"
        except OSError:
            return None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

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
                    undo_fuse({"target": self.fuse_dir, "source": self.source})
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


__all__ = ["DISK_NAME", "ServedDisk", "helper_program"]
