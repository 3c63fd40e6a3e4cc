"""Shared pytest fixtures. Append yours below; keep each fixture's cleanup in a finally block.

Provisioning fixtures:
- ``root``: skips the test, with the reason, unless running as root with /dev/loop-control.
  Also applied to every test marked ``@pytest.mark.root``; a test using it is marked ``root``.
- ``scratch``: a temporary fsmeter scratch folder (also set as $FSMETER_SCRATCH). Whatever the
  test does, its teardown unmounts every mount under it, detaches every loop device over an
  image under it, and undoes every record of its state file.
- ``loop_disk``: a blank 300 MiB loop device over an image in ``scratch``: a stand-in for a disk.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

# A suite started in the background by a shell without job control (`make test &` in a script, nohup)
# inherits SIGINT ignored, and every fsmeter process a test starts would too (an ignored signal stays
# ignored across exec, and Python then installs no Ctrl-C handler). The tests that stop a run as a
# user's Ctrl-C does need it delivered: a handler here is reset to the default in each child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def _root_skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (mkfs, mount, loop devices): run the tests as root"
    if not os.path.exists("/dev/loop-control"):
        return "needs loop devices: /dev/loop-control is missing (modprobe loop)"
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("root"):
        reason = _root_skip_reason()
        if reason:
            pytest.skip(reason)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A test that asks for the root fixture (directly or through loop_disk) is a root test, so that
    # `-m "not root"` (make check) leaves it out as it leaves out those marked by hand.
    for item in items:
        if "root" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.root)


@pytest.fixture
def root() -> None:
    """Skip unless root with loop devices."""
    reason = _root_skip_reason()
    if reason:
        pytest.skip(reason)


def _sweep_scratch(folder: str) -> None:
    """Remove everything of ours under ``folder``: state records, then anything still mounted or
    attached there (ours by construction: the folder is unique to this test)."""
    from fsmeter.provision import StateFile
    from fsmeter.provision.sysinfo import loop_backing_file, proc_mounts
    from fsmeter.provision.undo import undo_entries

    folder = os.path.realpath(folder)
    if os.path.exists(os.path.join(folder, "state.json")):
        state = StateFile(folder)
        undo_entries(state, state.entries())
    if os.geteuid() != 0:
        return
    for m in reversed(proc_mounts()):
        if m.target.startswith(folder + "/"):
            subprocess.run(["umount", m.target], capture_output=True)
    for name in os.listdir("/sys/block"):
        if name.startswith("loop"):
            backing = loop_backing_file("/dev/" + name)
            if backing and os.path.realpath(backing).startswith(folder + "/"):
                subprocess.run(["losetup", "--detach", "/dev/" + name], capture_output=True)


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A temporary scratch folder; cleaned of every mount and loop device even when the test fails."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setenv("FSMETER_SCRATCH", str(folder))
    try:
        yield str(folder)
    finally:
        _sweep_scratch(str(folder))


@pytest.fixture
def loop_disk(root, scratch):
    """A blank loop device standing in for a disk, over an image in ``scratch``; detached afterwards."""
    image = os.path.join(scratch, "disk.img")
    with open(image, "wb") as f:
        f.truncate(300 << 20)
    dev = subprocess.run(
        ["losetup", "--find", "--show", image], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["umount", dev], capture_output=True)  # only ever mounted by the test itself
        subprocess.run(["losetup", "--detach", dev], capture_output=True)


# -- the machine-wide run lock (fsmeter.runlock) ----------------------------------------------------
# The suite gets a lock folder of its own, so that its measuring commands never wait for (or block)
# a real fsmeter run on this machine, nor another checkout's test suite. Subprocesses inherit it.
_LOCK_DIR = None


def pytest_configure(config) -> None:
    global _LOCK_DIR
    import tempfile

    _LOCK_DIR = tempfile.mkdtemp(prefix="fsmeter-test-lock-")
    os.environ["FSMETER_LOCK_DIR"] = _LOCK_DIR


def pytest_unconfigure(config) -> None:
    import shutil

    if _LOCK_DIR:
        shutil.rmtree(_LOCK_DIR, ignore_errors=True)


@pytest.fixture(autouse=True)
def _run_lock_left_free():
    """Every test leaves the run lock free: a test that left it held would make the next one wait."""
    yield
    import fcntl

    from fsmeter.runlock import lock_path

    path = lock_path()
    if not _LOCK_DIR or not os.path.exists(path):
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        # A process the test ended (an MPI rank killed by an abort) may still be exiting when the test
        # returns: the lock is free once its descriptors are closed. Wait for that, within a bound.
        deadline = time.monotonic() + 30
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.fail(f"the test left the run lock {path} held (a measuring fsmeter still running?)")
                time.sleep(0.1)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
