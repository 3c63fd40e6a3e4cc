"""[target] kind = "disk-model" in a campaign file: its fields, its refusals before any cell, and (root)
a campaign and `fsmeter run --disk-model` on a modelled disk that record the profile and the
lateness."""

from __future__ import annotations

import json
import sqlite3

import pytest
from campaigns import fsm
from fsmeter.campaign import parse_campaign
from fsmeter.errors import UserError

HEAD = """
name = "dm"
workloads = [{ name = "seq-write", params = { file_size = "8M", duration_s = 1, warmup_s = 0 } }]
[[filesystems]]
name = "ext2"
[repetitions]
policy = "fixed"
n = 2
"""


def test_a_disk_model_target_maps_to_the_target_spec():
    c = parse_campaign(HEAD + '[target]\nkind = "disk-model"\nmodel = "seagate-st39102lw"\nsize = "256M"\n')
    spec = c.target.spec()
    assert (spec.kind, spec.model, spec.size_bytes, spec.model_offset_bytes) == (
        "disk-model",
        "seagate-st39102lw",
        256 << 20,
        0,
    )


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ('kind = "disk-model"', "model: kind = 'disk-model' needs model"),
        ('kind = "disk-model"\nmodel = "x"\npath = "/tmp"', "a disk-model target has no path"),
        ('kind = "loop"\nmodel = "seagate-st39102lw"', "a loop target has no model"),
    ],
)
def test_a_bad_disk_model_target_is_one_line(target, message):
    with pytest.raises(UserError) as exc:
        parse_campaign(HEAD + "[target]\n" + target + "\n")
    assert message in exc.value.message


def test_an_unknown_model_or_a_size_larger_than_the_drive_runs_no_cell():
    from fsmeter.runner import check_target

    c = parse_campaign(HEAD + '[target]\nkind = "disk-model"\nmodel = "no-such-drive"\n')
    with pytest.raises(UserError) as exc:
        check_target(c)
    assert "target.model: unknown disk model 'no-such-drive'" in exc.value.message
    c = parse_campaign(HEAD + '[target]\nkind = "disk-model"\nmodel = "seagate-st39102lw"\nsize = "20G"\n')
    with pytest.raises(UserError) as exc:
        check_target(c)
    assert "does not fit on seagate-st39102lw" in exc.value.message


@pytest.mark.slow
def test_a_campaign_on_a_disk_model_records_profile_and_lateness(root, scratch, tmp_path):
    camp = tmp_path / "dm.toml"
    camp.write_text(HEAD + '[target]\nkind = "disk-model"\nmodel = "seagate-st39102lw"\nsize = "128M"\n')
    db = tmp_path / "r.sqlite"
    r = fsm("campaign", "run", camp, "--db", db, "-q", timeout=900)
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(db) as conn:
        envs = [json.loads(x) for (x,) in conn.execute("SELECT extra FROM environment")]
        regimes = [
            json.loads(x)["regime"]
            for (x,) in conn.execute("SELECT p.report FROM phases p WHERE p.measured = 1 AND p.discarded = 0")
        ]
    assert len(envs) == 2
    for env in envs:
        dm = env["disk_model"]
        assert dm["profile"] == "seagate-st39102lw" and len(dm["profile_sha256"]) == 64
        assert dm["storage_class"] == "disk-model:seagate-st39102lw"
        assert dm["trial"]["requests"] > 0 and dm["trial"]["lateness_p99_ms"] is not None
        assert dm["disturbed"] in (True, False)
        assert env["storage_class"] == "disk-model:seagate-st39102lw"
    for reg in regimes:
        assert reg["disk_model"]["requests"] > 0
        assert reg["disturbed"] == reg["disk_model"]["disturbed"]
    rep = fsm("report", "--db", db, timeout=300)
    assert rep.returncode == 0, rep.stderr
    if any(reg["disturbed"] for reg in regimes):  # on a busy machine the note says so
        assert "disk model disturbed" in rep.stdout


@pytest.mark.slow
def test_run_with_a_disk_model_makes_and_removes_its_own_target(root, scratch, tmp_path):
    out = tmp_path / "run.json"
    r = fsm(
        "run",
        "seq-write",
        "--disk-model",
        "ibm-dnes-309170w",
        "--fs",
        "ext2",
        "--size",
        "128M",
        "--set",
        "file_size=8M",
        "--set",
        "duration_s=1",
        "--set",
        "warmup_s=0",
        "-q",
        "--json",
        out,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["target"]["storage_class"] == "disk-model:ibm-dnes-309170w"
    assert doc["disk_model"]["trial"]["kinds"]["write"]["count"] > 0
    assert "disk model:" in r.stdout
    from fsmeter.provision import StateFile

    assert StateFile(scratch).entries() == []


def test_run_refuses_disk_model_options_that_do_not_fit():
    r = fsm("run", "seq-read", "--dir", "/tmp", "--disk-model", "seagate-st39102lw")
    assert r.returncode == 2 and "--disk-model and --dir exclude each other" in r.stderr
    r = fsm("run", "seq-read", "--dir", "/tmp", "--fs", "xfs")
    assert r.returncode == 2 and "--fs applies to --disk-model only" in r.stderr
    r = fsm("run", "seq-read", "--disk-model", "nope")
    assert r.returncode == 2 and "unknown disk model 'nope'" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_disk_model_commands_list_and_show():
    r = fsm("disk-model", "list")
    assert r.returncode == 0, r.stderr
    assert "seagate-st39102lw" in r.stdout and "wettstein2002" in r.stdout
    r = fsm("disk-model", "show", "seagate-st39102lw")
    assert r.returncode == 0, r.stderr
    assert "random_4k_read_iops" in r.stdout and "DiskSim" in r.stdout
    r = fsm("disk-model", "show", "wdc-wd2500ks")
    assert "are assumptions, not from a source" in r.stdout
    r = fsm("disk-model", "show", "nope")
    assert r.returncode == 2 and r.stderr.startswith("fsmeter: error: unknown disk model 'nope'")


def test_compare_with_a_disk_model_refuses_what_does_not_fit_before_running(tmp_path):
    r = fsm("compare", "--disk-model", "nope", "--db", tmp_path / "c.sqlite")
    assert r.returncode == 2 and "unknown disk model 'nope'" in r.stderr
    r = fsm("compare", "--disk-model", "seagate-st39102lw", "--dir", tmp_path, "--db", tmp_path / "c.sqlite")
    assert r.returncode == 2 and "--disk-model and --dir exclude each other" in r.stderr
    assert not (tmp_path / "c.sqlite").exists()
