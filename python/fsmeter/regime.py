"""The regime a measured phase ran in: how busy the machine was with other work, and how much
of what the workload read came from the page cache instead of the device.

    watch = PhaseWatch(device="/dev/loop3")   # the target's block device, or None
    watch.start()                             # (disk=...: a disk-model target's watch, see below)
    report = session.run_phase(...)
    report["regime"] = watch.stop(report)

Nothing here runs per operation: two snapshots per phase, before and after it.

Machine busyness (``other_cpu_share``), method: the clock ticks every CPU spent running tasks over
the phase (/proc/stat, first line: user + nice + system; idle and iowait are not busy), minus the
ticks of fsmeter's own process tree (utime + stime + reaped children's cutime +
cstime of this process and every descendant, /proc/PID/stat), minus the ticks of kernel threads
(a loop device's worker and the block layer's kworkers do the workload's I/O on its behalf; they
cannot be told apart from kernel work done for others, so all of it counts as ours), summed per
thread so that a kernel thread exiting during the phase takes only its own last ticks with it. What is left
is the CPU other processes used, divided by the phase's wall time x the online CPUs: 0 is a quiet
machine, 1 every core busy with others' work. Granularity: one clock tick (1/USER_HZ, 10 ms on
Linux) per CPU at each end, and the kernel charges ticks by sampling, so on a 1 s phase of a
2-CPU machine the share is known to about +-0.01. Interrupt time (irq, softirq) and a virtual
machine's steal time are charged to no task: they are recorded beside the share
(``unattributed_cpu_s``, of which ``steal_cpu_s``) and counted as no one's. Measured on a quiet
virtual machine, the workload's own I/O brings them: a direct-I/O write of 3 GB to the VM's disk
came with steal of 4.6% and softirq of 3% of the machine, and ``tar xjf`` of a source tree with
steal of 17%, where a CPU-bound process alone brought under 1%. Counted as others', they flagged
quiet I/O phases as busy. The price: a neighbour of this virtual machine on its host, which shows
as steal only, is not seen by the share (look at ``steal_cpu_s``). A process of ours that started
and ended within the phase without being reaped by a process of ours is counted as others'
(fsmeter reaps what it starts).

A disk-model target (fsmeter.provision.targets.diskmodel) passes ``disk``, an object with
``snapshot()`` and ``since(snapshot)``: the regime then holds ``disk_model``, what the model served
during the phase (requests, mean modelled service time, reply lateness p50/p99), and
``disturbed``: True when the lateness p99 exceeded 5% of the mean service time, or all the replies'
lateness 5% of all their service (fsmeter.diskmodel.stats), so the phase's figures carry this
machine's noise, not only the modelled disk's. Like ``busy``, it flags the phase; the phase is kept.

Cache residency (``cache_read_share``), method: the bytes the workload read from its files (the
bytes of the engine's read operations: kinds named like read, and getc) against the bytes read
from the target's block device over the phase (/sys/class/block/DEV/stat, sectors read x 512).
This process's ``rchar`` (/proc/self/io, reaped children included) is recorded beside it as
``process_read_bytes`` but not used: it also counts reads of files outside the target (the macro
family's warm source file and archive), and misses reads made through io_uring. fsmeter's loop targets use direct
I/O to their image, so this kernel's page cache does not hold the image a second time; that does not make what
lies below a disk: on a virtual machine the "disk" is a file or volume of the host, whose own cache can answer the
loop device's reads at memory speed. The share therefore measures this kernel's page cache only; what the target
itself answers with is the storage probe's business (fsmeter.provision.storage_probe, recorded per campaign).
Share = 1 - device / workload, clamped to [0, 1]: 1 means every byte came from the page
cache, 0 that the device delivered at least as much as was read (readahead can make it more).
Unknown (None) when the phase read under READ_FLOOR_BYTES (metadata phases: the device reads
inodes and directories, which no read call asks for), when the target has no block device of its
own (a directory target, or the system's root disk, whose counters mix every process's reads), or
with the null backend (no real I/O).

Write-back (``cache_write_share``), method: the bytes the workload wrote (the engine's write
operations: kinds named like write, putc, append, rewrite, and create, whose bytes are the new
files' data) against the bytes written to the target's
block device over the phase. Share = 1 - device / workload, clamped to [0, 1]: the share of what the
phase wrote that had not reached the device when it ended (still dirty in the page cache, or
overwritten there before write-back). A write phase whose share is high measured the page cache's
speed, not the storage's; one whose data was at least twice the page cache it may use has most of
it written back during the phase, which this share shows. Journal, metadata and a filesystem's
own copies make the device write more than the workload (the share is then 0); a discard is not a
write. Unknown under WRITE_FLOOR_BYTES written, and where the read share is unknown for want of a
device.
"""

from __future__ import annotations

import os
import time

#: A phase is busy when others used more than this share of the machine's CPUs (0.10 on 2 CPUs:
#: a fifth of one core) on average over the phase.
BUSY_SHARE = 0.10
#: A phase on a disk model is disk-bound when the modelled disk was busy for at least this share of it...
DISK_BOUND_SHARE = 0.8
#: ... while the machine's CPUs (all of them, every task's) were busy for less than this share of it.
CPU_FREE_SHARE = 0.5
#: Below this many bytes read, the cache share of a phase is not computed.
READ_FLOOR_BYTES = 1 << 20
#: Below this many bytes written, the write-back share of a phase is not computed.
WRITE_FLOOR_BYTES = 1 << 20
_PF_KTHREAD = 0x00200000
_TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") or 100)


def _cpu_ticks(stat_text: str) -> tuple[int, int, int]:
    """From /proc/stat's first line, the clock ticks of all CPUs: (running tasks: user + nice +
    system; charged to no task: irq + softirq + steal; of which steal)."""
    f = stat_text.split("\n", 1)[0].split()
    vals = [int(x) for x in f[1:]] + [0] * 10
    user, nice, system, _idle, _iowait, irq, softirq, steal = vals[:8]
    return user + nice + system, irq + softirq + steal, steal


def _proc_stat(pid: str) -> tuple | None:
    """(ppid, flags, utime + stime, cutime + cstime) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except OSError:
        return None
    rest = text[text.rfind(")") + 2 :].split()  # after "pid (comm) "
    try:
        return int(rest[1]), int(rest[6]), int(rest[11]) + int(rest[12]), int(rest[13]) + int(rest[14])
    except (IndexError, ValueError):
        return None


def cpu_snapshot(own_pids=None) -> dict:
    """Busy ticks of the machine, of fsmeter's process tree, and of kernel threads, right now.
    ``own_pids``: more processes whose trees are fsmeter's (the other MPI ranks on this host)."""
    with open("/proc/stat") as fh:
        running, unattributed, steal = _cpu_ticks(fh.read())
    me = os.getpid()
    procs = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _proc_stat(name)
            if st is not None:
                procs[int(name)] = st
    children: dict = {}
    for pid, (ppid, _, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    own, todo, seen = 0, [me, *(own_pids or ())], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        st = procs.get(pid)
        if st is not None:
            own += st[2] + st[3]
        todo.extend(children.get(pid, []))
    # Per kernel thread, so that one which exits during the phase (a kworker retiring with minutes of
    # CPU behind it) does not make the kernel's delta negative and others' CPU look huge.
    kernel = {pid: st[2] for pid, st in procs.items() if st[1] & _PF_KTHREAD or pid == 2}
    return {
        "running": running,
        "own": own,
        "kernel": kernel,
        "unattributed": unattributed,
        "steal": steal,
        "mono": time.monotonic(),
    }


def _kernel_ticks(before, after) -> int:
    """Kernel threads' ticks between two snapshots: per thread alive at the end, what it added (all of
    it for a thread started during the phase). A thread that exited during the phase is left out: its
    last ticks count as others' (a few at most), never the whole life it had before the phase."""
    if isinstance(after, dict):
        before = before if isinstance(before, dict) else {}
        return sum(max(0, t - before.get(pid, 0)) for pid, t in after.items())
    return after - before


def other_cpu(before: dict, after: dict, cpus: int) -> dict:
    """Others' CPU between two snapshots: seconds and share of the machine (see the module's method)."""
    wall = max(after["mono"] - before["mono"], 1e-9)
    d = {k: after[k] - before[k] for k in ("running", "own")}
    d["kernel"] = _kernel_ticks(before["kernel"], after["kernel"])
    other_ticks = max(0, d["running"] - d["own"] - d["kernel"])
    share = other_ticks * _TICK_S / (wall * max(cpus, 1))
    out = {
        "wall_s": round(wall, 3),
        "cpus": cpus,
        "own_cpu_s": round(d["own"] * _TICK_S, 3),
        "kernel_cpu_s": round(d["kernel"] * _TICK_S, 3),
        "other_cpu_s": round(other_ticks * _TICK_S, 3),
        "other_cpu_share": round(min(share, 1.0), 4),
    }
    for key in ("unattributed", "steal"):  # a snapshot built without them (the tests' own) records none
        if key in before and key in after:
            out[f"{key}_cpu_s"] = round(max(0, after[key] - before[key]) * _TICK_S, 3)
    # Everyone's CPU, ours included: tasks' ticks and interrupt time, not a hypervisor's steal.
    busy = d["running"] + (out.get("unattributed_cpu_s", 0.0) - out.get("steal_cpu_s", 0.0)) / _TICK_S
    out["cpu_busy_share"] = round(min(max(busy, 0) * _TICK_S / (wall * max(cpus, 1)), 1.0), 4)
    return out


def _device_bytes(device: str | None) -> tuple | None:
    """(bytes read, bytes written) by a block device since boot, or None."""
    if not device:
        return None
    try:
        with open(f"/sys/class/block/{os.path.basename(os.path.realpath(device))}/stat") as fh:
            f = fh.read().split()
        return int(f[2]) * 512, int(f[6]) * 512
    except (OSError, IndexError, ValueError):
        return None


def device_of(path) -> str | None:
    """The block device holding ``path`` (/dev/NAME), or None (tmpfs, btrfs' anonymous devices...)."""
    try:
        st = os.stat(path)
        name = os.path.basename(os.path.realpath(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}"))
    except OSError:
        return None
    return f"/dev/{name}" if os.path.exists(f"/sys/class/block/{name}/stat") else None


def own_device(directory, backend: str | None = None) -> str | None:
    """The block device whose read counters can stand for a job's reads in ``directory``: None with
    the null backend (no real I/O) or when the directory lies on the system's root filesystem, whose
    disk every process on the machine shares (its counters would mix their reads with the job's)."""
    if backend == "null":
        return None
    dev = device_of(directory)
    return dev if dev is not None and dev != device_of("/") else None


def _io_chars() -> tuple:
    """(rchar, wchar) of this process: bytes passed to read and write calls, pipes and /proc included."""
    try:
        with open("/proc/self/io") as fh:
            f = dict(line.split(": ", 1) for line in fh.read().splitlines() if ": " in line)
        return int(f.get("rchar", 0)), int(f.get("wchar", 0))
    except (OSError, ValueError):
        return 0, 0


def _engine_bytes(report: dict) -> tuple:
    """(read, written) bytes of the engine's operations, by kind name."""
    rd = wr = 0
    for kind, op in (report.get("ops") or {}).items():
        name = kind.lower()
        b = int(op.get("bytes") or 0)
        if "read" in name or name == "getc":
            rd += b
        elif "write" in name or name in ("putc", "append", "rewrite", "create"):
            wr += b
    return rd, wr


def _device_missed(workload_bytes: int, device_bytes: int | None, floor: int) -> float | None:
    """1 - device / workload bytes, clamped to [0, 1] and rounded; None without a device or under floor."""
    if device_bytes is None or workload_bytes < floor:
        return None
    return round(min(1.0, max(0.0, 1.0 - device_bytes / workload_bytes)), 4)


def cache_read_share(read_bytes: int, device_read_bytes: int | None) -> float | None:
    """Share of ``read_bytes`` not read from the device (see the module's method), or None."""
    return _device_missed(read_bytes, device_read_bytes, READ_FLOOR_BYTES)


def cache_write_share(write_bytes: int, device_write_bytes: int | None) -> float | None:
    """Share of ``write_bytes`` not written to the device during the phase (see the module's method),
    or None."""
    return _device_missed(write_bytes, device_write_bytes, WRITE_FLOOR_BYTES)


class PhaseWatch:
    """Snapshots around one phase; ``stop`` returns the phase's regime dict."""

    def __init__(self, device: str | None = None, own_pids=None, disk=None):
        self.device = device
        self.disk = disk
        self._disk: dict | None = None
        #: Processes besides this one whose trees count as fsmeter's own CPU (an MPI rank's siblings).
        self.own_pids = tuple(own_pids or ())
        self._cpu: dict | None = None
        self._dev: tuple | None = None
        self._io = (0, 0)

    def start(self) -> None:
        try:
            self._cpu = cpu_snapshot(self.own_pids)
        except OSError:
            self._cpu = None
        self._dev = _device_bytes(self.device)
        self._io = _io_chars()
        self._disk = self.disk.snapshot() if self.disk is not None else None

    def stop(self, report: dict | None = None) -> dict:
        io = _io_chars()
        dev = _device_bytes(self.device)
        out: dict = {"device": self.device}
        cpus = os.sysconf("SC_NPROCESSORS_ONLN") or os.cpu_count() or 1
        if self._cpu is not None:
            try:
                out.update(other_cpu(self._cpu, cpu_snapshot(self.own_pids), cpus))
            except OSError:
                pass
        share = out.get("other_cpu_share")
        out["busy"] = None if share is None else share > BUSY_SHARE
        eng_rd, eng_wr = _engine_bytes(report or {})
        out["read_bytes"], out["write_bytes"] = eng_rd, eng_wr
        out["process_read_bytes"], out["process_write_bytes"] = io[0] - self._io[0], io[1] - self._io[1]
        both = dev is not None and self._dev is not None
        out["device_read_bytes"] = dev[0] - self._dev[0] if both else None
        out["device_write_bytes"] = dev[1] - self._dev[1] if both else None
        out["cache_read_share"] = cache_read_share(out["read_bytes"], out["device_read_bytes"])
        out["cache_write_share"] = cache_write_share(out["write_bytes"], out["device_write_bytes"])
        if self.disk is not None:
            dm = self.disk.since(self._disk)
            out["disk_model"] = dm
            out["disturbed"] = dm.get("disturbed") if dm else None
            if dm and report is not None:
                discount_idle_poll(report, dm.get("idle_poll_cpu_s") or 0.0, out.get("wall_s"), cpus)
            if dm:
                disk_bound(out, dm, cpus)
        return out


def disk_bound(out: dict, dm: dict, cpus: int) -> None:
    """Whether the phase was bound by the modelled disk, in ``out`` (the phase's regime).

    ``disk_model.busy_share``: the time a drive was busy over the phase (serving a request, or writing
    its cache back: the model's own count), over the phase's wall time, at most 1; of the busier
    drive when the target has two (data and journal). ``cpu_busy_share`` loses the model's idle
    pollers (host runs: their spinning is no one's work). ``disk_bound``: the modelled disk was busy
    for at least DISK_BOUND_SHARE of the phase while this machine's CPUs were busy for under
    CPU_FREE_SHARE of it, and the model's replies were on time: the CPU (an emulated guest's
    included) did not set the pace. Method and bounds: docs/guests.md, "Guests on a disk model"."""
    wall = out.get("wall_s")
    per_drive = dm.get("drive_busy_s")  # fsmeter.diskmodel.stats.since
    if not wall or not per_drive:
        return
    dm["busy_share"] = round(min(max(per_drive) / wall, 1.0), 4)
    busy = out.get("cpu_busy_share")
    if busy is not None:
        poll = (dm.get("idle_poll_cpu_s") or 0.0) / (wall * max(cpus, 1))
        out["cpu_busy_share"] = busy = round(max(busy - poll, 0.0), 4)
    out["disk_bound"] = (
        None
        if busy is None or out.get("disturbed") is None
        else bool(dm["busy_share"] >= DISK_BOUND_SHARE and busy < CPU_FREE_SHARE and not out["disturbed"])
    )


def discount_idle_poll(report: dict, poll_s: float, wall_s: float | None, cpus: int) -> None:
    """Take a disk model's idle pollers out of the phase's machine-wide CPU shares.

    The pollers spin at the lowest priority on CPUs nothing else wants (fsmeter-diskmodel
    ``--idle-poll``): the kernel counts that as user time, so the phase's ``cpu`` report would show
    an idle machine as busy. Their CPU seconds over the phase (their own thread clocks) are moved from
    ``sys_user_pct`` back to ``sys_idle_pct``, and recorded as ``idle_poll_pct``. The pollers
    belong to fsmeter's process tree, so ``other_cpu_share`` never counted them."""
    cpu = report.get("cpu")
    if not isinstance(cpu, dict) or poll_s <= 0 or not wall_s or "sys_user_pct" not in cpu:
        return
    pct = min(100.0 * poll_s / (wall_s * max(cpus, 1)), float(cpu["sys_user_pct"]))
    cpu["sys_user_pct"] = float(cpu["sys_user_pct"]) - pct
    cpu["sys_idle_pct"] = float(cpu.get("sys_idle_pct", 0.0)) + pct
    cpu["idle_poll_pct"] = round(pct, 3)


def describe(reg: dict) -> str:
    """One line for a terminal: others' CPU (flagged when busy) and the page-cache shares of the reads and
    of the writes."""
    parts = []
    share = reg.get("other_cpu_share")
    if share is not None:
        txt = f"others used {share:.0%} of the {reg.get('cpus', '?')} CPUs"
        parts.append(
            f"busy machine: {txt} (> {BUSY_SHARE:.0%}): figures may not be the filesystem's" if reg.get("busy") else txt
        )
    dm = reg.get("disk_model")
    if dm and dm.get("requests"):
        txt = (
            f"disk model {dm.get('model', '')}: {dm['requests']} requests, mean modelled service "
            f"{dm['mean_service_ms']:.2f} ms, reply lateness p99 {dm['lateness_p99_ms']:.3f} ms"
        )
        parts.append(
            f"disturbed: {txt} (> 5% of the service time): this machine's noise is in the figures"
            if reg.get("disturbed")
            else txt
        )
    cached = reg.get("cache_read_share")
    if cached is not None:
        parts.append(f"{cached:.0%} of {reg['read_bytes'] / (1 << 20):.0f} MiB read came from the page cache")
    unwritten = reg.get("cache_write_share")
    if unwritten is not None:
        parts.append(
            f"{unwritten:.0%} of {reg['write_bytes'] / (1 << 20):.0f} MiB written had not reached the device at its end"
        )
    return "; ".join(parts)


def phase_disturbed(report: dict) -> bool | None:
    """Whether a stored phase report ran on a disk model whose replies were late (None: no disk model)."""
    reg = report.get("regime") or {}
    return reg.get("disturbed")


def phase_busy(report: dict) -> bool | None:
    """Whether a stored phase report ran on a busy machine (None: not recorded)."""
    reg = report.get("regime") or {}
    return reg.get("busy")


__all__ = [
    "BUSY_SHARE",
    "CPU_FREE_SHARE",
    "DISK_BOUND_SHARE",
    "READ_FLOOR_BYTES",
    "PhaseWatch",
    "cache_read_share",
    "cpu_snapshot",
    "describe",
    "device_of",
    "disk_bound",
    "other_cpu",
    "own_device",
    "phase_busy",
    "phase_disturbed",
]
