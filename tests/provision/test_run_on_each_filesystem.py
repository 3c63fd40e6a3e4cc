"""For each filesystem, mkfs on a loop image, mount with options, run a real 1-second
workload through the engine, remount between phases, then tear down without leftovers."""

from __future__ import annotations

import os

import pytest
from fsmeter.engine import EngineSession
from fsmeter.provision import FsConfig, Provisioner, TargetSpec, sysinfo
from fsmeter.spec import build_job, load_workload, parse_set

MiB = 1 << 20

CASES = [
    ("ext2", "", 256 * MiB),
    ("ext3", "data=writeback", 256 * MiB),
    ("ext4", "noatime", 256 * MiB),
    ("xfs", "noatime", 320 * MiB),
    ("btrfs", "noatime", 256 * MiB),
    ("tmpfs", "", 256 * MiB),
]


@pytest.mark.root
@pytest.mark.parametrize("name,options,size", CASES, ids=[c[0] for c in CASES])
def test_one_second_workload_on_each_filesystem(scratch, name, options, size):
    with Provisioner(scratch) as prov:
        mnt = prov.create(TargetSpec(kind="loop", size_bytes=size), FsConfig(name=name, mount_options=options))
        line = mnt.info()["proc_mounts_line"]
        assert line.split()[1] == os.path.realpath(mnt.path) and line.split()[2] == name
        for opt in filter(None, options.split(",")):
            assert opt in line.split()[3].split(","), line
        job = build_job(
            load_workload("fileserver"),
            mnt.path,
            parse_set(["file_size=32M", "warmup_s=0.2", "duration_s=1", "fsync_end=true"]),
        )
        s = EngineSession(job.engine_json())
        prep = s.run_phase("prepare")
        assert prep["ops"]["write"]["bytes"] == 32 * MiB
        assert mnt.reset_cache() == ("none" if name == "tmpfs" else "remount")
        rep = s.run_phase("run")
        assert rep["interrupted"] is False
        assert rep["elapsed_s"] >= 1.0  # its whole duration; how much longer depends on the load
        assert sum(i["ops"] for i in rep["intervals"]) == rep["total"]["ops"]
        assert rep["ops"]["read"]["count"] > 0 and rep["ops"]["write"]["count"] > 0
        assert rep["ops"]["fsync"]["count"] == 1
        s.run_phase("cleanup")
        assert os.listdir(mnt.path) in ([], ["lost+found"])
        info = mnt.info()
        prov.destroy(mnt)
    assert not sysinfo.mounts_at(info["path"])
    if info.get("device"):
        assert sysinfo.loop_backing_file(info["device"]) is None
