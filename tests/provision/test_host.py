"""Host factors are applied, visible while in effect, and always reverted; cache reset picks its method."""

from __future__ import annotations

import os
import threading

import pytest
from fsmeter.provision import FsConfig, HostFactorError, HostFactors, Provisioner, StateFile, TargetSpec
from fsmeter.provision import mounted as mounted_mod
from fsmeter.provision.host import find_memory_cgroup, offered_schedulers
from fsmeter.provision.host.memcg import SLACK_BYTES, cache_bytes, hard_limit, other_bytes

MiB = 1 << 20


def _memory_cgroup_line() -> str:
    with open("/proc/self/cgroup") as f:
        lines = [line.strip() for line in f]
    return next((line for line in lines if ":memory:" in line), lines[-1])


@pytest.fixture
def loop_fs(root, scratch):
    with Provisioner(scratch) as prov:
        yield prov, prov.create(TargetSpec(size_bytes=300 * MiB), FsConfig(name="ext2"))


def test_scheduler_and_readahead_set_then_reverted(loop_fs):
    prov, mnt = loop_fs
    before = mnt.info()
    offered = offered_schedulers(mnt.device)
    other = next((s for s in offered if s != before["scheduler"]), None)
    if other is None:
        pytest.skip(f"{mnt.device} offers only {offered}")
    ra = before["readahead_kb"] + 64
    with prov.host(HostFactors(scheduler=other, readahead_kb=ra), mnt) as host:
        assert mnt.info()["scheduler"] == other
        assert mnt.info()["readahead_kb"] == ra
        assert host.info() == {"scheduler": other, "readahead_kb": ra}
        kinds = [e["kind"] for e in StateFile(prov.scratch).entries()]
        assert kinds.count("sysfs") == 2  # a SIGKILL now would still get them restored
    after = mnt.info()
    assert (after["scheduler"], after["readahead_kb"]) == (before["scheduler"], before["readahead_kb"])
    assert "sysfs" not in [e["kind"] for e in StateFile(prov.scratch).entries()]


def test_unknown_scheduler_lists_the_offered_ones(loop_fs):
    prov, mnt = loop_fs
    before = mnt.info()["scheduler"]
    with pytest.raises(HostFactorError) as err:
        with prov.host(HostFactors(scheduler="cfq-of-2005"), mnt):
            pass
    for s in offered_schedulers(mnt.device):
        assert s in str(err.value)
    assert mnt.info()["scheduler"] == before


def test_host_factors_reverted_when_the_block_raises(loop_fs):
    prov, mnt = loop_fs
    before = mnt.info()["readahead_kb"]
    with pytest.raises(RuntimeError):
        with prov.host(HostFactors(readahead_kb=before + 4), mnt):
            raise RuntimeError("workload failed")
    assert mnt.info()["readahead_kb"] == before


def test_cpu_affinity_restricted_on_every_thread_then_restored(scratch):
    old = os.sched_getaffinity(0)
    if len(old) < 2:
        pytest.skip("needs at least 2 CPUs to restrict to 1")
    started, stop = threading.Event(), threading.Event()
    seen = {}

    def worker():  # a thread that exists before the change, like an engine thread
        started.set()
        stop.wait()

    t = threading.Thread(target=worker)
    t.start()
    started.wait()
    try:
        with Provisioner(scratch) as prov, prov.host(HostFactors(cpus=1)) as host:
            seen["main"] = os.sched_getaffinity(0)
            seen["thread"] = os.sched_getaffinity(t.native_id)
            assert host.info()["cpus"] == 1
        assert seen == {"main": {min(old)}, "thread": {min(old)}}
        assert os.sched_getaffinity(0) == old and os.sched_getaffinity(t.native_id) == old
    finally:
        stop.set()
        t.join()


def test_more_cpus_than_available_is_refused(scratch):
    n = len(os.sched_getaffinity(0))
    with Provisioner(scratch) as prov:
        with pytest.raises(HostFactorError, match=f"use cpus <= {n}"):
            with prov.host(HostFactors(cpus=n + 1)):
                pass
    assert len(os.sched_getaffinity(0)) == n


def test_page_cache_limit_cgroup_created_entered_left_removed(root, scratch):
    try:
        cg = find_memory_cgroup()
    except HostFactorError as exc:
        pytest.skip(str(exc))
    before = _memory_cgroup_line()
    with Provisioner(scratch) as prov, prov.host(HostFactors(page_cache_limit_bytes=128 * MiB)) as host:
        child = host.info()["memory_cgroup"]
        assert os.path.dirname(child) == cg.path  # inside our own cgroup
        with open(os.path.join(child, "cgroup.procs")) as f:
            assert str(os.getpid()) in f.read().split()
        with open(os.path.join(child, cg.limit_file)) as f:
            # page cache limit + anonymous memory charged since the move (a little) + the slack
            assert 128 * MiB + SLACK_BYTES <= int(f.read()) <= 128 * MiB + SLACK_BYTES + 64 * MiB
        assert _memory_cgroup_line().endswith(os.path.basename(child))
        assert [e["path"] for e in StateFile(scratch).entries() if e["kind"] == "cgroup"] == [child]
    assert not os.path.exists(child)
    assert _memory_cgroup_line() == before
    assert StateFile(scratch).entries() == []


def test_tmpfs_has_no_scheduler_to_set(root, scratch):
    with Provisioner(scratch) as prov:
        mnt = prov.create(TargetSpec(kind="tmpfs", size_bytes=16 * MiB))
        with pytest.raises(HostFactorError, match="has no block device"):
            prov.host(HostFactors(scheduler="none"), mnt)


def test_dir_target_cache_reset_drop_caches_as_root_else_fadvise(scratch, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    (work / "a").write_bytes(b"x" * 8192)
    with Provisioner(scratch) as prov:
        mnt = prov.create(TargetSpec(kind="dir", path=str(work)))
        assert mnt.path == str(work) and not mnt.owns_mount
        assert mnt.info()["proc_mounts_line"]  # the filesystem holding the directory
        with pytest.raises(Exception, match="did not mount it"):
            mnt.remount()
        if os.geteuid() == 0:
            assert mnt.reset_cache() == "drop_caches"
        monkeypatch.setattr(mounted_mod, "is_root", lambda: False)
        assert mnt.reset_cache([str(work / "a")]) == "fadvise"
        prov.destroy(mnt)
    assert (work / "a").exists()  # a dir target's files are never removed by fsmeter


def test_other_memory_and_hard_limit_hand_checked():
    v1 = "cache 1048576\nrss 1048576\nrss_huge 2097152\nshmem 0\n"
    v2 = "anon 3145728\nfile 1048576\nanon_thp 2097152\n"
    assert cache_bytes(v1, 1) == cache_bytes(v2, 2) == 1 * MiB
    # usage 5 MiB of which 1 MiB page cache: 4 MiB of anonymous and kernel memory
    assert other_bytes(5 * MiB, v1, 1) == other_bytes(5 * MiB, v2, 2) == 4 * MiB
    assert other_bytes(0, v1, 1) == 0
    assert hard_limit(32 * MiB, 3 * MiB) == 32 * MiB + 3 * MiB + 8 * MiB


_ALLOC_UNDER_LIMIT = r"""
import os, sys, time
from fsmeter.provision import HostFactors, Provisioner
from pathlib import Path
MiB = 1 << 20
with Provisioner(Path(sys.argv[1])) as prov, prov.host(HostFactors(page_cache_limit_bytes=16 * MiB)) as host:
    child = host.info()["memory_cgroup"]
    hog = [bytearray(os.urandom(48 * MiB))]  # a burst: 3x the limit at once, faster than the watcher looks
    for _ in range(12):  # then 48 MiB more, 4 MiB at a time
        hog.append(bytearray(os.urandom(4 * MiB)))
        time.sleep(0.03)
    time.sleep(0.1)
    # Then 64 MiB of page cache: it must stay near the 16 MiB limit.
    with open(os.path.join(sys.argv[2], "f"), "wb") as f:
        for _ in range(64):
            f.write(os.urandom(MiB))
    with open(os.path.join(child, "memory.stat")) as f:
        st = dict(l.split() for l in f)
    cache = int(st.get("cache", st.get("file", 0)))
    print(cache, host.info()["memory_cgroup_other_peak_bytes"])
"""


def test_page_cache_limit_survives_anonymous_memory_and_still_bounds_the_cache(root, scratch, tmp_path):
    """A run whose own memory grows past the limit is not killed; its page cache stays at the limit."""
    import subprocess
    import sys

    try:
        find_memory_cgroup()
    except HostFactorError as exc:
        pytest.skip(str(exc))
    r = subprocess.run(
        [sys.executable, "-c", _ALLOC_UNDER_LIMIT, str(scratch), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, f"killed or failed (rc {r.returncode}): {r.stderr[-800:]}"
    cache, other_peak = map(int, r.stdout.split())
    assert other_peak >= 90 * MiB
    assert cache <= 16 * MiB + SLACK_BYTES + 4 * MiB, cache
