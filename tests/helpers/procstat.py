"""What a test process can see of another process without timing it: CPU used by its threads."""

from __future__ import annotations

import os
import time


def busiest_thread_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of the busiest live thread of ``pid`` other than its main one;
    0 when it has none (or has exited). Engine workers are such threads, and they live only while a
    phase runs: a value that grows says a phase is measuring, however slow the machine is."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tids = [t for t in os.listdir(f"/proc/{pid}/task") if t != str(pid)]
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    best = 0.0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        best = max(best, (int(fields[11]) + int(fields[12])) / tick)  # utime, stime: stat fields 14, 15
    return best


def wait_for_worker_cpu(proc, cpu_s: float, poll_s: float = 0.05) -> None:
    """Wait until a thread of ``proc`` other than its main one has used ``cpu_s`` of CPU (an engine
    phase is measuring), however slow the machine; fail if the process exits first."""
    while busiest_thread_cpu_s(proc.pid) < cpu_s:
        assert proc.poll() is None, proc.communicate()
        time.sleep(poll_s)


def is_gone(pid: int) -> bool:
    """True when ``pid`` has exited: no longer in /proc, or a zombie waiting for its parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True


def wait_until_gone(pid: int, limit_s: float = 120.0, poll_s: float = 0.05) -> bool:
    """Wait until ``pid`` has exited (see ``is_gone``); False if it is still there after ``limit_s``.
    A process that was sent a signal may take a while to die on a busy machine (a handler runs, the
    scheduler is late): the limit only bounds a hang, the caller asserts that the process went."""
    end = time.monotonic() + limit_s
    while not is_gone(pid):
        if time.monotonic() >= end:
            return False
        time.sleep(poll_s)
    return True
