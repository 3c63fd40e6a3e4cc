"""`fsmeter doctor` reports what is there and the fix for what is not."""

from __future__ import annotations

import typer
from fsmeter.cli import doctor
from typer.testing import CliRunner


def _app() -> typer.Typer:
    app = typer.Typer()
    doctor.register(app)
    app.command("noop")(lambda: None)  # two commands keep typer in group mode
    return app


def test_doctor_runs_and_exits_0():
    result = CliRunner().invoke(_app(), ["doctor"])
    assert result.exit_code == 0, result.output
    for word in ("root", "loop devices", "fs ext4", "fs xfs", "io_uring", "cgroups", "fio"):
        assert word in result.output


def test_missing_pieces_come_with_their_fix(monkeypatch):
    monkeypatch.setattr(doctor, "which", lambda tool: None)
    monkeypatch.setattr("fsmeter.provision.filesystems.base.which", lambda tool: None)
    monkeypatch.setattr(doctor, "kernel_filesystems", lambda: {"ext4", "tmpfs"})
    by_name = {c.what: c for c in doctor.checks()}
    assert by_name["bench fio"].fix == "apt-get install fio"
    assert by_name["bench fs_mark"].fix == "apt-get install fsmark"
    assert by_name["fs ext4"].fix == "apt-get install e2fsprogs"
    assert by_name["fs tmpfs"].ok
    assert not by_name["fs xfs"].ok and "not supported by this kernel" in by_name["fs xfs"].detail
    assert "xfsprogs" in by_name["fs xfs"].fix
    assert by_name["losetup"].fix.startswith("apt-get install util-linux")


def test_io_uring_probe_answers():
    ok, detail = doctor.io_uring_probe()
    assert isinstance(ok, bool) and detail
