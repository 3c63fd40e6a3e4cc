"""bench/fio_examples.py's filesystems for the files a tmpfs cannot run: an ext4 (ioengine=e4defrag) or xfs
(atomic=1) loop image made for the file, and nothing of it left afterwards, also when the file's runs fail."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bench_module import load_bench

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fe():
    return load_bench("fio_examples.py", "fio_examples_realfs_bench")


def _fstype(path: Path) -> str:
    from fsmeter.provision.sysinfo import mount_containing

    return mount_containing(str(path)).fstype


def _ours_left(scratch: str) -> list:
    from fsmeter.provision.sysinfo import loop_backing_file, proc_mounts

    left = [m.target for m in proc_mounts() if m.target.startswith(scratch + "/")]
    for name in os.listdir("/sys/block"):
        if name.startswith("loop"):
            backing = loop_backing_file("/dev/" + name)
            if backing and os.path.realpath(backing).startswith(scratch + "/"):
                left.append("/dev/" + name)
    return left


@pytest.mark.root
def test_an_e4defrag_file_runs_on_its_own_ext4_and_it_is_gone_after(fe, scratch):
    base = Path(os.path.realpath(scratch))
    res: dict = {}
    with fe.file_home("[a]\nioengine=e4defrag\ndonorname=d\nrw=write\n", base, res) as home:
        assert home != base and _fstype(home) == "ext4"
        (home / "fsm").mkdir()
        assert res["where"].startswith("ext4 on a 1024 MiB loop image: ioengine=e4defrag")
    assert _ours_left(str(base)) == []
    assert not home.exists()


@pytest.mark.root
def test_an_atomic_file_gets_xfs_and_a_failing_run_still_leaves_nothing(fe, scratch):
    base = Path(os.path.realpath(scratch))
    res: dict = {}
    with pytest.raises(RuntimeError):
        with fe.file_home("[a]\nrw=randwrite\natomic=1\ndirect=1\n", base, res) as home:
            assert _fstype(home) == "xfs"
            (home / "busy").write_bytes(b"x" * 4096)
            raise RuntimeError("the run failed")
    assert _ours_left(str(base)) == []


def test_other_files_run_on_the_scratch_folder_itself(fe, tmp_path):
    res: dict = {}
    with fe.file_home("[a]\nrw=read\nsize=1m\n", tmp_path, res) as home:
        assert home == tmp_path
    assert res == {}
