"""The disk-model target (root): a filesystem on a loop device over fsmeter-diskmodel's FUSE file,
nothing cached below the filesystem, everything removed afterwards, also after a SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from fsmeter.diskmodel.stats import read_stats


def _no_leftovers(scratch: str) -> None:
    from fsmeter.provision import sysinfo

    assert not [m for m in sysinfo.proc_mounts() if m.target.startswith(os.path.realpath(scratch))]
    for name in os.listdir("/sys/block"):
        if name.startswith("loop"):
            backing = sysinfo.loop_backing_file("/dev/" + name) or ""
            assert not backing.startswith(os.path.realpath(scratch)), backing
    images = os.path.join(scratch, "images")
    assert not os.path.isdir(images) or os.listdir(images) == []


def _drive_policies(scratch: str, thread: str = "drive") -> list[int]:
    """The scheduling policy of every thread named ``thread`` of the fsmeter-diskmodel daemons serving under
    scratch."""
    return [policy for policy, _ in _threads(scratch, thread)]


def _threads(scratch: str, thread: str) -> list[tuple[int, int]]:
    """(policy, real-time priority) of every thread named ``thread`` of the daemons serving under scratch."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if not argv[0].endswith(b"fsmeter-diskmodel") or not any(
                os.path.realpath(scratch).encode() in a for a in argv
            ):
                continue
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    if f.read().strip() == thread:
                        out.append((os.sched_getscheduler(int(tid)), os.sched_getparam(int(tid)).sched_priority))
        except (FileNotFoundError, ProcessLookupError):
            continue
    return out


def _daemon_rss_bytes(scratch: str) -> list[int]:
    """The resident memory of each fsmeter-diskmodel daemon serving under scratch."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if argv[0].endswith(b"fsmeter-diskmodel") and any(os.path.realpath(scratch).encode() in a for a in argv):
                with open(f"/proc/{pid}/status") as f:
                    rss = next(line for line in f if line.startswith("VmRSS:"))
                out.append(int(rss.split()[1]) * 1024)
        except (FileNotFoundError, ProcessLookupError, StopIteration):
            continue
    return out


def _reads(stats: dict) -> tuple[int, int]:
    r = stats["kinds"]["read"]
    return r["count"], r["service_ns"]


def test_a_filesystem_on_the_model_reads_each_block_from_the_model_every_time(root, scratch):
    from fsmeter.provision import FsConfig, Provisioner, TargetSpec

    with Provisioner(scratch) as prov:
        mnt = prov.create(
            TargetSpec(kind="disk-model", model="seagate-st39102lw", size_bytes=128 << 20), FsConfig(name="ext2")
        )
        info = mnt.info()
        assert info["storage_class"] == "disk-model:seagate-st39102lw"
        assert info["loop_direct_io"] is True  # this kernel's loop driver does direct I/O to the FUSE file
        assert info["fuse_direct_io"] is True
        assert info["image_store"] == "memory"  # 128 MiB fit in half of any test machine's free memory
        # ... and committed when the daemon started (every page written once, so that no request pays
        # a page's first write), kept through mkfs's discard of the whole device.
        [rss] = _daemon_rss_bytes(scratch)
        assert rss >= 128 << 20, f"the image in memory is not committed: the daemon holds {rss >> 20} MiB"
        path = os.path.join(mnt.path, "f")
        with open(path, "wb") as f:
            f.write(os.urandom(1 << 20))
            os.fsync(f.fileno())
        stats = mnt.target.stats_path
        # The drive thread runs under SCHED_FIFO, so the workload's threads do not delay its replies.
        assert _drive_policies(scratch) == [os.SCHED_FIFO]
        # The image thread too, below the drive: a reply due preempts a copy of the image.
        [(policy, image_prio)] = _threads(scratch, "image")
        [(_, drive_prio)] = _threads(scratch, "drive")
        assert policy == os.SCHED_FIFO and drive_prio > image_prio
        # One idle poller per CPU of the daemon's, at the lowest priority there is, keeps the CPUs out of
        # their idle state (a halted CPU wakes the drive late); their CPU time is in stats.json.
        pollers = _threads(scratch, "idle-poll")
        assert pollers and len(pollers) == len(os.sched_getaffinity(0))
        assert {p for p, _ in pollers} == {os.SCHED_IDLE}
        state = read_stats(stats)["state"]
        assert state["idle_poll_threads"] == len(pollers) and state["idle_poll_cpu_ns"] >= 0
        # The same 4 KiB of the file, read twice with the filesystem's cache of it dropped before each
        # (fadvise DONTNEED on the file: the caches below the filesystem, if any, keep their pages, as
        # drop_caches would not): both reads reach the modelled disk, so nothing below caches it.
        os.sync()
        for _ in range(2):
            with open(path, "rb") as f:
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                n0, s0 = _reads(read_stats(stats))
                f.seek(512 << 10)
                assert len(f.read(4096)) == 4096
            n1, s1 = _reads(read_stats(stats))
            assert n1 > n0, "the read never reached the modelled disk: something below the filesystem cached it"
            assert s1 > s0
        prov.destroy(mnt)
        assert prov.state.entries() == []
    _no_leftovers(scratch)


def test_a_killed_run_leaves_nothing_cleanup_cannot_remove(root, scratch):
    # A process makes a disk-model target and is SIGKILLed: only the state file knows what it made.
    code = textwrap.dedent(
        f"""
        import sys, time
        from fsmeter.provision import FsConfig, Provisioner, TargetSpec
        prov = Provisioner({scratch!r}).__enter__()
        prov.create(TargetSpec(kind="disk-model", model="ibm-dnes-309170w", size_bytes=64 << 20), FsConfig(name="ext2"))
        print("made", flush=True)
        time.sleep(600)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "made"
        daemons = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    from fsmeter.provision import StateFile
    from fsmeter.provision.undo import cleanup_leftovers

    state = StateFile(scratch)
    assert {e["kind"] for e in state.entries()} >= {"mount", "loop", "fuse", "image"}
    done, problems = cleanup_leftovers(state)
    assert problems == []
    assert state.entries() == []
    _no_leftovers(scratch)
    for pid in daemons:  # unmounting the FUSE file system ended the daemon
        for _ in range(50):
            if not os.path.exists(f"/proc/{pid}"):
                break
            time.sleep(0.1)
        assert not os.path.exists(f"/proc/{pid}"), f"daemon {pid} still runs"


def test_an_external_journal_goes_on_a_second_modelled_drive(root, scratch):
    """ext3 with its journal outside: the journal is a second drive of the same profile (its own daemon,
    loop device and actuator); a commit reaches it, the data drive gets the data, and the per-phase
    view counts both drives."""
    from fsmeter.provision import FsConfig, Provisioner, TargetSpec

    with Provisioner(scratch) as prov:
        mnt = prov.create(
            TargetSpec(kind="disk-model", model="ibm-dnes-309170w", size_bytes=96 << 20, journal_size_bytes=16 << 20),
            FsConfig(name="ext3", external_journal=True),
        )
        target = mnt.target
        info = mnt.info()
        assert info["journal_size_bytes"] == 16 << 20 and info["journal_loop_direct_io"] is True
        assert target.journal_device and target.journal_device != target.device
        assert len(target.stats_paths) == 2 and len(_drive_policies(scratch)) == 2
        # One set of idle pollers for the machine, the data drive's: not one per drive.
        assert len(_threads(scratch, "idle-poll")) == len(os.sched_getaffinity(0))
        watch = target.watch()
        before = watch.snapshot()
        data0, journal0 = (read_stats(p)["kinds"]["write"]["count"] for p in target.stats_paths)
        with open(os.path.join(mnt.path, "f"), "wb") as f:
            f.write(os.urandom(256 << 10))
            os.fsync(f.fileno())
        data1, journal1 = (read_stats(p)["kinds"]["write"]["count"] for p in target.stats_paths)
        assert data1 > data0, "the file's data never reached the data drive"
        assert journal1 > journal0, "the fsync's commit never reached the journal's drive"
        phase = watch.since(before)
        assert phase["kinds"]["write"]["count"] == (data1 - data0) + (journal1 - journal0)
        assert phase["lateness_p99_ms"] is not None and phase["disturbed"] in (True, False)
        prov.destroy(mnt)
        assert prov.state.entries() == []
    _no_leftovers(scratch)
