"""A phase whose threads the system refuses fails with the reason; it neither panics nor hangs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PIDS = "/sys/fs/cgroup/pids"


def test_refused_thread_fails_the_phase_with_its_reason(root, tmp_path):
    """In a pids cgroup that allows only a few tasks, a 64-thread run must stop with a clear error."""
    if not os.path.isdir(PIDS) or not os.access(PIDS, os.W_OK):
        pytest.skip("no writable cgroup v1 pids hierarchy to limit threads with")
    cg = os.path.join(PIDS, f"fsmeter-test-{os.getpid()}")
    os.mkdir(cg)
    try:

        def enter() -> None:  # in the child, before exec: only it and its threads are limited
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

        # the interpreter and the run's own helper threads fit in 24 tasks; 64 workers do not
        with open(os.path.join(cg, "pids.max"), "w") as f:
            f.write("24")
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "fsmeter",
                "run",
                "filemark-small",
                "--dir",
                str(tmp_path),
                "--set",
                "files=200",
                "--set",
                "transaction_phases=1",
                "--set",
                "duration_s=0.2",
                "--set",
                "warmup_s=0",
                "--set",
                "threads=64",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=enter,
            env={**os.environ, "FSMETER_LOCK_DIR": str(tmp_path / "lock")},
        )
        out = r.stdout + r.stderr
        assert r.returncode == 1, out[-2000:]
        assert "panicked" not in out and "Traceback" not in out, out[-2000:]
        assert "the system refused a new thread" in out and "of 64" in out, out[-2000:]
    finally:
        os.rmdir(cg)
