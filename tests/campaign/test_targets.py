"""A campaign's target is checked as a whole before its first cell: a field that belongs to another
kind, a device not named twice or in use, a directory that is a kernel interface are one line and
exit 2, with no cell run and no campaign stored. Device tests use a loop device of their own."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest
from fsmeter.campaign import parse_campaign
from fsmeter.errors import UserError
from fsmeter.provision import sysinfo

WORKLOAD = (
    '[[workloads]]\nname = "seq-read"\nparams = { backend = "null", file_size = "1M", warmup_s = 0, '
    'duration_s = 0.1 }\n[repetitions]\npolicy = "fixed"\nn = 1\n'
)


def campaign(target: str) -> str:
    return f'name = "t"\n{WORKLOAD}[target]\n{target}\n'


def run_campaign(tmp_path, target: str):
    f = tmp_path / "c.toml"
    f.write_text(campaign(target))
    db = tmp_path / "r.sqlite"
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", "campaign", "run", str(f), "--db", str(db), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return r, db


def stored_campaigns(db) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM campaigns").fetchone()[0]


def one_line(r) -> str:
    err = r.stderr.strip()
    assert r.returncode == 2, (r.stdout, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("fsmeter: error: "), err
    return err


@pytest.mark.parametrize(
    "target,field,kind",
    [
        ('kind = "tmpfs"\nsize = "64M"\npath = "/tmp"', "target.path", "tmpfs"),
        ('kind = "loop"\ndevice = "/dev/loop0"', "target.device", "loop"),
        ('kind = "dir"\npath = "/tmp"\nsize = "1G"', "target.size", "dir"),
        (
            'kind = "device"\ndevice = "/dev/x"\ndestroy_data_on = "/dev/x"\npreallocate = true',
            "target.preallocate",
            "device",
        ),
        ('size = "1G"\ndestroy_data_on = "/dev/sda"', "target.destroy_data_on", "loop"),  # kind defaults to loop
    ],
)
def test_a_field_of_another_target_kind_is_refused_by_name(target, field, kind):
    with pytest.raises(UserError) as e:
        parse_campaign(campaign(target))
    assert f"{field}: a {kind} target has no {field.split('.')[1]}: remove it" in e.value.message
    assert e.value.exit_code == 2


def test_fields_of_the_kind_itself_are_accepted():
    for target in (
        'kind = "loop"\nsize = "1G"\njournal_size = "64M"\npreallocate = true',
        'kind = "tmpfs"\nsize = "1G"',
        'kind = "device"\ndevice = "/dev/x"\ndestroy_data_on = "/dev/x"\nforce = false',
    ):
        assert parse_campaign(campaign(target)).target is not None


@pytest.mark.parametrize("path", ["/proc", "/sys", "/proc/self"])
def test_a_kernel_interface_as_dir_target_is_one_line_and_no_campaign(tmp_path, path):
    r, db = run_campaign(tmp_path, f'kind = "dir"\npath = "{path}"')
    err = one_line(r)
    assert f"target.path: {path} is a kernel interface" in err, err
    assert stored_campaigns(db) == 0


@pytest.mark.parametrize(
    "confirm,what",
    [
        (None, "destroy_data_on: /dev/fsmeter-no-such-disk would be formatted"),
        ("/dev/fsmeter-other-disk", "names another device"),
    ],
)
def test_device_not_named_twice_refuses_the_whole_campaign(tmp_path, confirm, what):
    target = 'kind = "device"\ndevice = "/dev/fsmeter-no-such-disk"'
    if confirm:
        target += f'\ndestroy_data_on = "{confirm}"'
    r, db = run_campaign(tmp_path, target)
    err = one_line(r)
    assert what in err, err
    assert stored_campaigns(db) == 0


@pytest.mark.root
def test_mounted_device_refuses_the_whole_campaign_before_the_first_cell(tmp_path, loop_disk):
    subprocess.run(["mkfs.ext2", "-q", "-F", loop_disk], check=True, capture_output=True)
    where = tmp_path / "mine"
    where.mkdir()
    subprocess.run(["mount", loop_disk, str(where)], check=True)
    try:
        (where / "data.txt").write_text("keep")
        r, db = run_campaign(tmp_path, f'kind = "device"\ndevice = "{loop_disk}"\ndestroy_data_on = "{loop_disk}"')
        err = one_line(r)
        assert f"target: {loop_disk} is mounted on {where}" in err and "no cell was run" in err, err
        assert stored_campaigns(db) == 0
        assert [m.source for m in sysinfo.mounts_at(str(where))] == [loop_disk]
        assert (where / "data.txt").read_text() == "keep"
    finally:
        subprocess.run(["umount", str(where)], capture_output=True)
