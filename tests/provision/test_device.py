"""A real block device is formatted only when named twice, blank or forced, and never when in use.

A loop device over an image in the test's scratch folder stands in for the disk.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from fsmeter.provision import DeviceRefused, FsConfig, Provisioner, TargetSpec, sysinfo


def _blkid(dev: str) -> str:
    return subprocess.run(["blkid", "-p", "-o", "export", dev], capture_output=True, text=True).stdout


def _write_mbr(path: str, sectors: int) -> None:
    """A DOS partition table with one Linux partition from sector 2048 to the end (no sfdisk needed)."""
    entry = bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + (sectors - 2048).to_bytes(4, "little")
    with open(path, "r+b") as f:
        f.seek(446)
        f.write(entry)
        f.seek(510)
        f.write(b"\x55\xaa")


def _device(dev: str, confirm: str | None = "same", force: bool = False) -> TargetSpec:
    return TargetSpec(kind="device", device=dev, destroy_data_on=dev if confirm == "same" else confirm, force=force)


@pytest.mark.root
def test_blank_device_needs_the_same_device_named_twice(scratch, loop_disk):
    with Provisioner(scratch) as prov:
        with pytest.raises(DeviceRefused, match=f"confirm with --destroy-data-on {loop_disk}"):
            prov.create(_device(loop_disk, confirm=None), FsConfig(name="ext4"))
        with pytest.raises(DeviceRefused, match="name different devices"):
            prov.create(_device(loop_disk, confirm="/dev/loop-control"), FsConfig(name="ext4"))
        assert _blkid(loop_disk) == ""  # still blank: nothing was written
        mnt = prov.create(_device(loop_disk), FsConfig(name="ext4", mount_options="noatime"))
        assert mnt.info()["device"] == loop_disk and " -F " not in mnt.info()["mkfs_command"]
        assert "noatime" in mnt.info()["mount_options"]
        with open(os.path.join(mnt.path, "f"), "w") as f:
            f.write("data")
        prov.destroy(mnt)
    assert not sysinfo.mounts_at(mnt.path)
    # Not ours to detach: the device is still there, now carrying the filesystem we were allowed to make.
    assert sysinfo.loop_backing_file(loop_disk) == os.path.join(scratch, "disk.img")
    assert "TYPE=ext4" in _blkid(loop_disk)


@pytest.mark.root
def test_device_with_a_filesystem_refused_unless_forced(scratch, loop_disk):
    subprocess.run(["mkfs.ext2", "-q", "-L", "precious", loop_disk], check=True)
    before = _blkid(loop_disk)
    with Provisioner(scratch) as prov:
        with pytest.raises(DeviceRefused, match="carries a ext2 signature \\(label precious\\).*--force"):
            prov.create(_device(loop_disk), FsConfig(name="xfs"))
        assert _blkid(loop_disk) == before  # untouched
        mnt = prov.create(_device(loop_disk, force=True), FsConfig(name="xfs"))
        assert "TYPE=xfs" in _blkid(loop_disk)
        assert " -f " in mnt.info()["mkfs_command"]  # overwrite flag only because forced


@pytest.mark.root
def test_device_with_a_partition_table_refused_unless_forced(scratch, loop_disk):
    _write_mbr(loop_disk, (300 << 20) // 512)
    with Provisioner(scratch) as prov:
        with pytest.raises(DeviceRefused, match="dos partition table"):
            prov.create(_device(loop_disk), FsConfig(name="ext4"))


@pytest.mark.root
def test_mounted_device_refused_even_with_force(scratch, loop_disk):
    subprocess.run(["mkfs.ext2", "-q", loop_disk], check=True)
    where = os.path.join(scratch, "in-use")
    os.mkdir(where)
    subprocess.run(["mount", loop_disk, where], check=True)
    try:
        with Provisioner(scratch) as prov:
            with pytest.raises(DeviceRefused, match=f"mounted on {where}: refusing even with --force"):
                prov.create(_device(loop_disk, force=True), FsConfig(name="ext4"))
        assert sysinfo.mounts_at(where)  # still mounted, still ext2
        assert "TYPE=ext2" in _blkid(loop_disk)
    finally:
        subprocess.run(["umount", where], check=True)


@pytest.mark.root
def test_device_holding_a_mounted_partition_refused_even_with_force(scratch):
    image = os.path.join(scratch, "parted.img")
    with open(image, "wb") as f:
        f.truncate(64 << 20)
    _write_mbr(image, (64 << 20) // 512)
    dev = subprocess.run(
        ["losetup", "--partscan", "--find", "--show", image], check=True, capture_output=True, text=True
    ).stdout.strip()
    where = os.path.join(scratch, "part")
    os.mkdir(where)
    try:
        part = dev + "p1"
        for _ in range(50):  # devtmpfs creates the node shortly after the partition scan
            if os.path.exists(part):
                break
            time.sleep(0.1)
        else:
            pytest.skip(f"{part} did not appear: this kernel did not partition-scan the loop device")
        subprocess.run(["mkfs.ext2", "-q", part], check=True)
        subprocess.run(["mount", part, where], check=True)
        with Provisioner(scratch) as prov:
            with pytest.raises(DeviceRefused, match=f"holds mounted partition {part}"):
                prov.create(_device(dev, force=True), FsConfig(name="ext4"))
    finally:
        subprocess.run(["umount", where], capture_output=True)
        subprocess.run(["losetup", "--detach", dev], capture_output=True)


def test_not_a_block_device_refused(scratch):
    with Provisioner(scratch) as prov:
        with pytest.raises(DeviceRefused, match="not a block device"):
            prov.create(_device("/etc/hostname"), FsConfig(name="ext4"))
