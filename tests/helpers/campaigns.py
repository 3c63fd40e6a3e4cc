"""Campaign files and the fsmeter command for the campaign tests: a campaign on a directory target,
the null-backend parameters that keep its trials short, waiting for trials to be stored, and the
mounts and loop devices a test left in its scratch folder."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time

from fsmeter.provision.sysinfo import loop_backing_file, proc_mounts

FAST = 'backend = "null", file_size = "4M", warmup_s = 0.05, duration_s = 0.2, interval_s = 0.05'


def fsm(*args, env=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        timeout=timeout,
    )


def dir_campaign(path, body: str, name: str = "t") -> str:
    """Top-level keys of ``body`` come first, so the [target] table goes last."""
    return f'name = "{name}"\n' + textwrap.dedent(body) + f'\n[target]\nkind = "dir"\npath = "{path}"\n'


def wait_for_trials(db, n, proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            with sqlite3.connect(db) as conn:
                if conn.execute("SELECT count(*) FROM trials").fetchone()[0] >= n:
                    return
        except sqlite3.OperationalError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"no {n} trials within {timeout} s")


def ours(scratch):
    """Mounts and loop devices whose mount point / backing image lies in the test's scratch folder."""
    folder = os.path.realpath(scratch) + "/"
    mounts = [m.target for m in proc_mounts() if m.target.startswith(folder)]
    loops = []
    for name in os.listdir("/sys/block"):
        if name.startswith("loop"):
            b = loop_backing_file("/dev/" + name)
            if b and os.path.realpath(b).startswith(folder):
                loops.append(name)
    return mounts, loops
