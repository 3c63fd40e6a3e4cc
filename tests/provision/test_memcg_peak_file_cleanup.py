"""The page-cache limit's watcher removes its peak file when it stops, also when the fsmeter that
started it was killed with SIGKILL (no revert ran): killed runs leave no file in the temporary directory.

The watcher runs on a stand-in cgroup v2 folder (plain files with the names it reads and writes), so
no root or memory controller is needed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from repo_paths import ROOT

WATCH = str(ROOT / "python" / "fsmeter" / "provision" / "host" / "memcg_watch.py")

# Starts the watcher as PageCacheLimit.apply does (its stdin a pipe from this process), prints its pid, waits.
OWNER = textwrap.dedent("""
    import subprocess, sys, time
    w = subprocess.Popen([sys.executable, "-S"] + sys.argv[1:], stdin=subprocess.PIPE, close_fds=True)
    print(w.pid, flush=True)
    time.sleep(600)
""")


def _fake_cgroup(folder: str) -> None:
    os.mkdir(folder)
    with open(os.path.join(folder, "memory.current"), "w") as f:
        f.write("50000\n")
    with open(os.path.join(folder, "memory.stat"), "w") as f:
        f.write("anon 30000\nfile 10000\n")
    with open(os.path.join(folder, "memory.high"), "w") as f:
        f.write("max\n")


def _wait_for(condition, what: str, limit_s: float = 120.0) -> None:
    """Poll until ``condition()`` holds; the limit only bounds a hang, it is not what the test measures."""
    end = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < end, f"still waiting after {limit_s:.0f} s for {what}"
        time.sleep(0.05)


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def test_watcher_of_a_sigkilled_owner_removes_its_peak_file(tmp_path):
    cgroup = str(tmp_path / "cell")
    _fake_cgroup(cgroup)
    peak = str(tmp_path / "peak")
    open(peak, "w").close()
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, WATCH, cgroup, "2", str(1 << 20), "4096", "0.05", peak],
        stdout=subprocess.PIPE,
        text=True,
    )
    watcher_pid = None
    try:
        watcher_pid = int(owner.stdout.readline())
        # The watcher is working: other memory = 50000 - 10000 page cache, kept as the peak, limit raised.
        _wait_for(lambda: _read(peak) == "40000", "the watcher to record the peak")
        assert _read(os.path.join(cgroup, "memory.high")) == str((1 << 20) + 40000 + 4096)
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=60)
        _wait_for(
            lambda: (
                not os.path.exists(f"/proc/{watcher_pid}")
                or _read(f"/proc/{watcher_pid}/stat").split(") ")[-1].startswith("Z")
            ),
            "the watcher to stop after its owner died",
        )
        assert not os.path.exists(peak)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if watcher_pid is not None and WATCH in _read(f"/proc/{watcher_pid}/cmdline").replace("\0", " "):
            os.kill(watcher_pid, signal.SIGKILL)  # still our watcher: the test failed before it stopped
