"""Safety, as a user meets it: a real device only with --device X --destroy-data-on X,
refused when it carries a filesystem (unless --force) or is mounted (always); a campaign formats
the device again cell after cell, since what it finds there is its own filesystem."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys


def fsmeter(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600
    )


def one_line_error(r, code):
    assert r.returncode == code, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("fsmeter: error:") and "Traceback" not in r.stderr, r.stderr
    return lines[-1]


SMOKE = ("--workloads", "seq-read", "--quick-scale", "0.2", "--trials", "1", "-q")


def test_device_needs_to_be_named_twice(scratch, loop_disk, tmp_path):
    msg = one_line_error(fsmeter("compare", "--device", loop_disk, *SMOKE, "--db", tmp_path / "r.db"), 2)
    assert f"--destroy-data-on {loop_disk}" in msg
    msg = one_line_error(
        fsmeter("compare", "--device", loop_disk, "--destroy-data-on", "/dev/null", *SMOKE, "--db", tmp_path / "r.db"),
        2,
    )
    assert "different devices" in msg
    assert not (tmp_path / "r.db").exists()  # refused before any campaign was stored


def test_device_with_a_filesystem_refused_unless_forced(scratch, loop_disk, tmp_path):
    subprocess.run(["mkfs.ext4", "-q", "-F", loop_disk], check=True)
    msg = one_line_error(
        fsmeter(
            "compare",
            "--device",
            loop_disk,
            "--destroy-data-on",
            loop_disk,
            *SMOKE,
            "--filesystems",
            "ext4",
            "--db",
            tmp_path / "r.db",
        ),
        1,
    )
    assert "ext4" in msg and "--force" in msg


def test_mounted_device_refused_even_with_force(scratch, loop_disk, tmp_path):
    subprocess.run(["mkfs.ext4", "-q", "-F", loop_disk], check=True)
    mnt = tmp_path / "m"
    mnt.mkdir()
    subprocess.run(["mount", loop_disk, mnt], check=True)
    try:
        msg = one_line_error(
            fsmeter(
                "compare",
                "--device",
                loop_disk,
                "--destroy-data-on",
                loop_disk,
                "--force",
                *SMOKE,
                "--filesystems",
                "ext4",
                "--db",
                tmp_path / "r.db",
            ),
            1,
        )
        assert "mounted" in msg and "even with --force" in msg
    finally:
        subprocess.run(["umount", mnt], check=False)


def test_blank_device_named_twice_is_formatted_for_every_cell(scratch, loop_disk, tmp_path):
    db = tmp_path / "r.db"
    r = fsmeter(
        "compare",
        "--device",
        loop_disk,
        "--destroy-data-on",
        loop_disk,
        "--filesystems",
        "ext4,xfs",
        *SMOKE,
        "--db",
        db,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    con = sqlite3.connect(db)
    assert [s for (s,) in con.execute("SELECT status FROM cells ORDER BY id")] == ["done", "done"]
    devices = {d for (d,) in con.execute("SELECT device FROM environment")}
    assert devices == {os.path.realpath(loop_disk)}
    fss = {f for (f,) in con.execute("SELECT fs FROM environment")}
    assert fss == {"ext4", "xfs"}
    assert not any(loop_disk in line.split()[0] for line in open("/proc/mounts"))
