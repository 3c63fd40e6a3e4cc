"""Facts about the machine a result was measured on."""

from __future__ import annotations

import os
import platform


def host_info() -> dict:
    cpu_model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_bytes = mem_total_bytes()
    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "cpu_model": cpu_model,
        "cpus_online": os.cpu_count() or 0,
        "cpus_allowed": len(os.sched_getaffinity(0)),
        "mem_bytes": mem_bytes,
        "python": platform.python_version(),
    }


def cpu_clock_mhz() -> float | None:
    """This machine's CPU clock in MHz: the highest frequency cpufreq allows (cpuinfo_max_freq), else the
    highest "cpu MHz" of /proc/cpuinfo (a virtual machine's CPUs report the host's clock there), else None."""
    best = None
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            return int(f.read().strip()) / 1000.0
    except (OSError, ValueError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    v = float(line.split(":", 1)[1])
                    best = v if best is None else max(best, v)
    except (OSError, ValueError):
        pass
    return best


def _meminfo(field: str) -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def mem_total_bytes() -> int:
    """The machine's memory (MemTotal of /proc/meminfo), 0 when it cannot be read."""
    return _meminfo("MemTotal")


def mem_available_bytes() -> int:
    """The memory available without swapping (MemAvailable of /proc/meminfo), 0 when it cannot be read."""
    return _meminfo("MemAvailable")


def cpus_online() -> int:
    """The machine's online CPUs (at least 1)."""
    return os.cpu_count() or 1
