"""Each supported filesystem is made, mounted with its options, used, and leaves nothing behind."""

from __future__ import annotations

import os
import subprocess

import pytest
from fsmeter.errors import UserError
from fsmeter.provision import (
    FILESYSTEMS,
    FilesystemUnsupported,
    FsConfig,
    MkfsError,
    MountError,
    Provisioner,
    ProvisionError,
    TargetSpec,
    get_filesystem,
    sysinfo,
)

MiB = 1 << 20

CASES = [
    # (filesystem, mount options, an option /proc/mounts must show, image size)
    ("ext2", "noatime", "noatime", 300 * MiB),
    ("ext3", "data=journal", "data=journal", 300 * MiB),
    ("ext4", "noatime,data=writeback", "data=writeback", 300 * MiB),
    ("xfs", "noatime,logbsize=64k", "logbsize=64k", 320 * MiB),
    ("btrfs", "noatime,compress=zstd:1", "compress=zstd:1", 300 * MiB),
    ("tmpfs", "mode=0700", "mode=700", 64 * MiB),
]


def _losetup_all() -> str:
    return subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout


def _assert_gone(info: dict) -> None:
    assert not sysinfo.mounts_at(info["path"]), f"{info['path']} still mounted"
    assert not os.path.exists(info["path"])
    for key in ("image", "journal_image"):
        if info.get(key):
            assert not os.path.exists(info[key]), f"{info[key]} not deleted"
            assert info[key] not in _losetup_all(), f"a loop device still backs {info[key]}"
    for key in ("device", "journal_device"):
        if info.get(key):
            assert sysinfo.loop_backing_file(info[key]) is None, f"{info[key]} still attached"


@pytest.mark.root
@pytest.mark.parametrize("name,options,shown,size", CASES, ids=[c[0] for c in CASES])
def test_make_mount_use_and_destroy(scratch, name, options, shown, size):
    with Provisioner(scratch) as prov:
        mnt = prov.create(TargetSpec(kind="loop", size_bytes=size), FsConfig(name=name, mount_options=options))
        info = mnt.info()
        line = info["proc_mounts_line"]
        assert line is not None and line.split()[2] == name
        assert shown in line.split()[3].split(","), line
        assert info["fs"] == name
        if name != "tmpfs":
            assert info["device"].startswith("/dev/loop")
            assert info["image"].startswith(scratch)
            assert info["mkfs_tool_version"]
            assert info["mkfs_command"].endswith(info["device"])
        data = os.urandom(1 << 20)
        with open(os.path.join(mnt.path, "f"), "wb") as f:
            f.write(data)
        method = mnt.reset_cache()
        assert method == ("none" if name == "tmpfs" else "remount")
        with open(os.path.join(mnt.path, "f"), "rb") as f:
            assert f.read() == data  # survives the remount: really on the filesystem
        prov.destroy(mnt)
        _assert_gone(info)
    with open(os.path.join(scratch, "state.json")) as f:
        assert '"entries": []' in f.read()


@pytest.mark.root
@pytest.mark.parametrize("name", ["ext4", "xfs"])
def test_external_journal_on_second_image(scratch, name):
    with Provisioner(scratch) as prov:
        mnt = prov.create(TargetSpec(size_bytes=320 * MiB), FsConfig(name=name, external_journal=True))
        info = mnt.info()
        assert info["journal_device"] and info["journal_device"] != info["device"]
        assert info["journal_image"].endswith("-journal.img")
        if name == "ext4":
            assert "journal_dev" in info["journal_mkfs_command"]
            assert f"device={info['journal_device']}" in info["mkfs_command"]
            out = subprocess.run(["dumpe2fs", "-h", info["device"]], capture_output=True, text=True).stdout
            assert "Journal device:" in out  # the journal really is external
        else:
            assert f"logdev={info['journal_device']}" in info["proc_mounts_line"]
        with open(os.path.join(mnt.path, "f"), "w") as f:
            f.write("x")
        mnt.remount()
        assert open(os.path.join(mnt.path, "f")).read() == "x"
    _assert_gone(info)


@pytest.mark.root
def test_free_form_mkfs_options_are_used(scratch):
    with Provisioner(scratch) as prov:
        mnt = prov.create(TargetSpec(size_bytes=300 * MiB), FsConfig(name="ext4", mkfs_options="-b 2048 -I 256"))
        out = subprocess.run(["dumpe2fs", "-h", mnt.device], capture_output=True, text=True).stdout
        assert "Block size:               2048" in out
        assert " -b 2048 -I 256 " in mnt.info()["mkfs_command"]
        # defaults and user -E options merged into the single -E mke2fs honours
        assert mnt.info()["mkfs_command"].count(" -E ") == 1


@pytest.mark.root
def test_mkfs_failure_is_a_user_error_with_stderr_and_leaves_nothing(scratch):
    with Provisioner(scratch) as prov:
        with pytest.raises(MkfsError) as err:
            prov.create(TargetSpec(size_bytes=320 * MiB), FsConfig(name="xfs", mkfs_options=["-b", "size=3"]))
        assert isinstance(err.value, UserError)
        assert "mkfs.xfs" in str(err.value) and err.value.stderr
        assert not os.listdir(os.path.join(scratch, "images"))
        assert scratch not in _losetup_all()


@pytest.mark.root
def test_bad_mount_option_is_a_mount_error_and_leaves_nothing(scratch):
    with Provisioner(scratch) as prov:
        with pytest.raises(MountError) as err:
            prov.create(TargetSpec(size_bytes=300 * MiB), FsConfig(name="ext2", mount_options="no_such_option"))
        assert "mount ext2 failed" in str(err.value)
        assert not os.listdir(os.path.join(scratch, "mnt"))
        assert scratch not in _losetup_all()


@pytest.mark.parametrize("name", ["jfs", "reiserfs", "f2fs", "nilfs2"])
def test_filesystems_missing_from_kernel_say_so(name):
    if name in sysinfo.kernel_filesystems():
        pytest.skip(f"this kernel has {name}")
    with pytest.raises(
        FilesystemUnsupported, match=f"^{name}: not supported by this kernel \\(not in /proc/filesystems\\)"
    ):
        get_filesystem(name).check_available()


def test_missing_mkfs_tool_names_the_debian_package(monkeypatch):
    fs = get_filesystem("xfs")
    monkeypatch.setattr(type(fs), "kernel_supported", lambda self: True)
    monkeypatch.setattr(type(fs), "mkfs_tool", "mkfs.xfs-not-installed")
    with pytest.raises(FilesystemUnsupported, match="mkfs tool missing: install Debian package xfsprogs"):
        fs.check_available()


def test_unsupported_filesystem_refused_before_anything_is_created(scratch):
    if "jfs" in sysinfo.kernel_filesystems():
        pytest.skip("this kernel has jfs")
    with Provisioner(scratch) as prov:
        with pytest.raises(FilesystemUnsupported):
            prov.create(TargetSpec(size_bytes=300 * MiB), FsConfig(name="jfs"))
    assert not os.path.exists(os.path.join(scratch, "images"))


def test_configuration_errors_name_the_fix(scratch):
    with Provisioner(scratch) as prov:
        with pytest.raises(ProvisionError, match="use one of ext2, ext3"):
            prov.create(TargetSpec(), FsConfig(name="ntfs"))
        with pytest.raises(ProvisionError, match="data=ordered\\|writeback\\|journal"):
            prov.create(TargetSpec(), FsConfig(name="ext3", mount_options="data=fast"))
        with pytest.raises(ProvisionError, match="at least 300 MiB"):
            prov.create(TargetSpec(size_bytes=100 * MiB), FsConfig(name="xfs"))
        with pytest.raises(ProvisionError, match="external journal"):
            prov.create(TargetSpec(), FsConfig(name="btrfs", external_journal=True))


def test_every_declared_filesystem_has_a_package_and_kernel_name():
    for name in ("ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "jfs", "reiserfs", "f2fs", "nilfs2"):
        fs = FILESYSTEMS[name]()
        assert fs.proc_name
        assert fs.mkfs_tool is None or fs.debian_package, name
