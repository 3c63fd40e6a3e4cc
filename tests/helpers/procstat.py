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
