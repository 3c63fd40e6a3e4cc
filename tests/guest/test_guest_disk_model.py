"""Guests on a disk model: the host serves the model, the guest puts its filesystem on it.

The first tests need no virtual machine: the campaign rules, the QEMU drive, the guest-side target's
checks, the disk-bound rule (fsmeter.regime.disk_bound) and how a verdict resting on an emulated guest
is gated or marked. The last one boots a real guest (TCG) on a model of the Cheetah 9LP and runs one
trial of a filesystem this host's kernel lacks; it skips, saying why, where QEMU, virtme-ng, a kernel
image or root is missing.
"""

from __future__ import annotations

import json
import os

import pytest
from claim_data import QUIET, runs_frame, study
from fsmeter.campaign import parse_campaign
from fsmeter.errors import UserError
from fsmeter.guest import kernels, vm
from guest_boot import guest_skip_reason, run_guest_campaign, usable_guest_filesystem

CAMPAIGN = """
name = "gm"
min_phase_s = 0
[target]
kind = "{kind}"
size = "512M"
{target_extra}
[[filesystems]]
name = "{fs}"
{fs_extra}
[factors]
kernel = [{levels}]
[[workloads]]
name = "seq-write"
params = {{ file_size = "8M", duration_s = 2, warmup_s = 0, direct = true }}
[repetitions]
policy = "fixed"
n = 1
"""


def _campaign(kind="disk-model", fs="ext4", levels='"host"', target_extra='model = "seagate-st39102lw"', fs_extra=""):
    return CAMPAIGN.format(kind=kind, fs=fs, levels=levels, target_extra=target_extra, fs_extra=fs_extra)


def test_a_guest_campaign_takes_a_disk_model_target_and_refuses_other_kinds():
    c = parse_campaign(_campaign())
    assert c.target.kind == "disk-model" and c.guest is not None
    assert parse_campaign(_campaign(fs_extra="external_journal = true")).filesystems[0].external_journal
    with pytest.raises(UserError, match="'loop' or 'disk-model' \\(got 'tmpfs'\\)"):
        parse_campaign(_campaign(kind="tmpfs", target_extra=""))


def test_the_model_drive_goes_to_qemu_uncached_with_its_serial(monkeypatch):
    monkeypatch.setattr(vm, "vng_path", lambda: "/usr/bin/vng")
    cmd = vm.command(
        "/boot/k", "tcg", 1, 1 << 30, "/s/scratch.img", "writeback", "/s", "true", model_device="/dev/loop7"
    )
    opts = next(a for a in cmd if a.startswith("--qemu-opts="))
    assert "file=/dev/loop7,format=raw,if=none,id=fsmmodel,cache=none" in opts
    assert f"serial={vm.MODEL_SERIAL}" in opts
    assert "file=/s/scratch.img,format=raw,if=none,id=fsmscratch,cache=writeback" in opts  # the scratch disk's own
    both = vm.command(
        "/boot/k",
        "tcg",
        1,
        1 << 30,
        "/s/s.img",
        "none",
        "/s",
        "true",
        model_device="/dev/loop7",
        model_journal_device="/dev/loop8",
    )
    opts = next(a for a in both if a.startswith("--qemu-opts="))
    assert "file=/dev/loop8,format=raw,if=none,id=fsmjournal,cache=none" in opts
    assert f"serial={vm.MODEL_JOURNAL_SERIAL}" in opts
    plain = vm.command("/boot/k", "tcg", 1, 1 << 30, "/s/scratch.img", "none", "/s", "true")
    assert "fsmmodel" not in " ".join(plain)


def test_the_guest_side_target_formats_only_the_drive_with_the_hosts_serial(monkeypatch, tmp_path):
    from fsmeter.provision.errors import ProvisionError
    from fsmeter.provision.targets import guestmodel

    stats = tmp_path / "stats.json"
    stats.write_text("{}")
    passed = {
        "device": "/dev/vdb",
        "serial": vm.MODEL_SERIAL,
        "info": {"disk_model": "seagate-st39102lw", "storage_class": "disk-model:seagate-st39102lw"},
        "stats_paths": [str(stats)],
    }
    monkeypatch.setenv(guestmodel.ENV, json.dumps(passed))
    got = guestmodel.passed_disk()
    assert got == passed
    t = guestmodel.GuestModelTarget(got, "seagate-st39102lw")
    monkeypatch.setattr(guestmodel, "_mounted", lambda dev: False)
    monkeypatch.setattr(guestmodel, "device_serial", lambda dev: "something-else")
    with pytest.raises(ProvisionError, match="does not carry the serial 'fsmeter-model'"):
        t.setup()
    monkeypatch.setattr(guestmodel, "device_serial", lambda dev: vm.MODEL_SERIAL)
    t.setup()
    assert t.info()["storage_class"] == "disk-model:seagate-st39102lw" and t.info()["device"] == "/dev/vdb"
    assert isinstance(t.watch(), guestmodel.GuestModelWatch)
    with pytest.raises(ProvisionError, match="model of seagate-st39102lw, the cell asks for ibm-dnes-309170w"):
        guestmodel.GuestModelTarget(got, "ibm-dnes-309170w").setup()
    with pytest.raises(ProvisionError, match="the host passed no journal drive"):
        guestmodel.GuestModelTarget(got, "seagate-st39102lw", journal=True)
    with_journal = {**got, "journal_device": "/dev/vdc", "journal_serial": vm.MODEL_JOURNAL_SERIAL}
    j = guestmodel.GuestModelTarget(with_journal, "seagate-st39102lw", journal=True)
    assert j.journal_device == "/dev/vdc"
    with pytest.raises(ProvisionError, match="/dev/vdc does not carry the serial 'fsmeter-model-journal'"):
        j.setup()  # the data drive's serial is right, the journal's is not
    assert guestmodel.GuestModelTarget(with_journal, "seagate-st39102lw").journal_device is None
    monkeypatch.setattr(guestmodel, "_mounted", lambda dev: True)
    with pytest.raises(ProvisionError, match="is mounted"):
        t.setup()
    monkeypatch.setenv(guestmodel.ENV, "{not json")
    with pytest.raises(ProvisionError, match="set by fsmeter's guest setup only"):
        guestmodel.passed_disk()
    monkeypatch.delenv(guestmodel.ENV)
    assert guestmodel.passed_disk() is None


def test_a_model_the_host_cannot_serve_fails_the_levels_cells_with_the_cause(monkeypatch, tmp_path, scratch):
    from fsmeter.campaign import plan
    from fsmeter.guest import host
    from fsmeter.provision.errors import ProvisionError
    from fsmeter.provision.targets import DiskModelTarget

    def refuse(self):
        raise ProvisionError("fsmeter-diskmodel is missing: reinstall fsmeter")

    monkeypatch.setattr(DiskModelTarget, "setup", refuse)
    monkeypatch.setattr(host, "_one_level", lambda *a, **k: pytest.fail("booted without its disk"))
    monkeypatch.setattr(vm, "missing_tools", lambda: [])
    monkeypatch.setattr(kernels, "choose", lambda asked: kernels.Accel("tcg", "a test"))
    monkeypatch.setattr(kernels, "resolve", lambda lv, boot=None: kernels.Kernel("6.1", "/boot/vmlinuz-x", "6.1.0-x"))
    c = parse_campaign(_campaign())  # the level does not matter here: no guest boots
    cells = plan(c)

    class Store:
        def __init__(self):
            self.status = {}

        def set_cell_status(self, cid, status, cause=None, stop_reason=None):
            self.status[cid] = (status, cause)

        def set_campaign_status(self, cid, status):
            pass

    class Console:
        def print(self, *a, **k):
            pass

    store = Store()
    counts = host.run_guest_levels(c, cells[:1], [{"id": 7, "status": "new"}], store, 1, Console(), "")
    assert counts["failed"] == 1
    status, cause = store.status[7]
    assert status == "failed" and "could not be set up: fsmeter-diskmodel is missing" in cause
    assert not host.mounted_under(scratch)
    assert not [n for n in os.listdir(scratch) if n.startswith("guest-")], "the guest folder was left behind"


def _service(ms_total: float) -> dict:
    """What fsmeter.diskmodel.stats.since gives for one drive busy ``ms_total`` ms."""
    return {
        "kinds": {"write": {"count": 100, "service_ns": int(ms_total * 1e6)}},
        "drive_busy_s": [ms_total / 1000.0],
        "idle_poll_cpu_s": 0.0,
    }


@pytest.mark.parametrize(
    ("service_ms", "cpu_busy", "disturbed", "bound"),
    [
        (9_000.0, 0.20, False, True),  # the disk busy 90% of 10 s, the CPUs 20%: the disk set the pace
        (7_000.0, 0.20, False, False),  # the disk idle 30% of the time: something else waited too
        (9_000.0, 0.55, False, False),  # the CPUs over half busy: the (emulated) CPU had its share
        (9_000.0, 0.20, True, False),  # the model's replies were late: this machine's noise
        (20_000.0, 0.10, False, True),  # more service than wall time (a queue): busy all along
    ],
)
def test_disk_bound_needs_a_busy_model_idle_cpus_and_replies_on_time(service_ms, cpu_busy, disturbed, bound):
    from fsmeter import regime

    out = {"wall_s": 10.0, "cpu_busy_share": cpu_busy, "disturbed": disturbed}
    dm = _service(service_ms)
    regime.disk_bound(out, dm, cpus=2)
    assert out["disk_bound"] is bound
    assert dm["busy_share"] == min(service_ms / 10_000.0, 1.0)


def test_the_hosts_idle_pollers_are_taken_out_of_a_host_runs_cpu_share():
    from fsmeter import regime

    out = {"wall_s": 10.0, "cpu_busy_share": 0.60, "disturbed": False}
    dm = {**_service(9_000.0), "idle_poll_cpu_s": 4.0}  # 4 CPU-seconds of 20: 0.2 of the machine
    regime.disk_bound(out, dm, cpus=2)
    assert out["cpu_busy_share"] == pytest.approx(0.40) and out["disk_bound"] is True


def test_with_a_journal_drive_the_busy_share_is_the_busier_drives_not_the_sum():
    from fsmeter import regime
    from fsmeter.diskmodel import stats

    def doc(ns):
        kinds = {"write": {"count": 10, "service_ns": ns // 10}}  # cached writes: their write-back is not here
        return {"format": "fsmeter-diskmodel-stats", "kinds": kinds, "state": {"busy_ns": ns}}

    before = stats.merge([doc(0), doc(0)])
    after = stats.merge([doc(5 * 10**9), doc(4 * 10**9)])  # data drive 5 s, journal 4 s of a 10 s phase
    dm = stats.since(before, after)
    assert dm["drive_busy_s"] == [5.0, 4.0]  # the model's own busy time, not the requests' service
    out = {"wall_s": 10.0, "cpu_busy_share": 0.1, "disturbed": False}
    regime.disk_bound(out, dm, cpus=2)
    assert dm["busy_share"] == 0.5 and out["disk_bound"] is False  # 90% summed, but neither drive was busy


ORDER = {"kind": "ordering", "tiers": [["xfs"], ["ext3"]]}
CLEAR = {("xfs", "a"): [150.0, 151.0, 149.0, 150.5], ("ext3", "a"): [100.0, 101.0, 99.0, 100.5]}


def test_an_emulated_guest_is_functional_only_unless_every_phase_was_disk_bound():
    from fsmeter.study.claims import ClaimChecker
    from fsmeter.study.gates import EMULATED_DISK_BOUND

    s = study([ORDER])
    [v] = ClaimChecker(s, runs_frame(CLEAR, {**QUIET, "emulated": 1.0})).check_all()
    assert v.outcome == "inconclusive", (v.outcome, v.reason)
    assert "left out as functional only: ext3, xfs, run in a guest under software emulation" in v.reason
    bound = {**QUIET, "emulated": 0.0, "emulated_disk_bound": 1.0}
    [v] = ClaimChecker(s, runs_frame(CLEAR, bound)).check_all()
    assert v.outcome == "reproduced", (v.outcome, v.gates)
    assert EMULATED_DISK_BOUND in v.reason


def test_emulated_rows_of_another_configuration_take_no_verdict_away():
    """A claim about xfs and ext3 run on the host is judged as if the emulated btrfs guest had not run
    (as without --kernel, where btrfs would be skipped); a claim about btrfs has too little left."""
    import pandas as pd
    from fsmeter.study.claims import ClaimChecker

    host = runs_frame(CLEAR, {**QUIET, "emulated": 0.0})
    guest = runs_frame({("btrfs", "a"): [300.0, 301.0, 299.0, 300.5]}, {**QUIET, "emulated": 1.0})
    frame = pd.concat([host, guest], ignore_index=True)
    about_btrfs = {"kind": "ordering", "tiers": [["btrfs"], ["ext3"]]}
    v, b = ClaimChecker(study([ORDER, about_btrfs]), frame).check_all()
    assert v.outcome == "reproduced" and not v.gates, (v.outcome, v.reason, v.gates)
    assert b.outcome == "inconclusive" and "left out as functional only: btrfs" in b.reason, (b.outcome, b.reason)


def test_study_frame_splits_emulated_rows_by_their_phases_disk_bound():
    import pandas as pd
    from fsmeter.study.frames import study_frame
    from fsmeter.study.model import load_study

    rows = [
        {
            "workload": "fdtree-small-shallow",
            "phase": "create",
            "metric": "files_per_s",
            "value": 10.0 + t,
            "higher_is_better": True,
            "filesystem": fs,
            "trial": t,
            "cell_id": cid,
            "status": "ok",
            "discarded": False,
        }
        for cid, fs in ((1, "jfs"), (2, "reiserfs"), (3, "nilfs2"))
        for t in (1, 2)
    ]
    env = pd.DataFrame(
        [
            {
                "cell_id": c,
                "kernel": "6.1.0-50-amd64",
                "hostname": "virtme-ng",
                "extra": json.dumps({"guest": {"emulated": True}}),
            }
            for c in (1, 2, 3)
        ]
    )
    phases = pd.DataFrame(
        [
            {"cell_id": cid, "trial": t, "phase": "create", "elapsed_s": 30.0, "disturbed": 0, "disk_bound": b[t - 1]}
            for cid, b in ((1, (1, 1)), (2, (0, 0)), (3, (1, 0)))  # nilfs2: one trial bound, one not
            for t in (1, 2)
        ]
    )
    df = study_frame(load_study("layton2009"), pd.DataFrame(rows), env, phases)
    got = df.groupby("filesystem")[["emulated", "emulated_disk_bound"]].max().to_dict("index")
    assert got == {
        "jfs": {"emulated": 0.0, "emulated_disk_bound": 1.0},
        "reiserfs": {"emulated": 1.0, "emulated_disk_bound": 0.0},
        "nilfs2": {"emulated": 1.0, "emulated_disk_bound": 0.0},
    }
    # a cell is decided over all its trials: nilfs2's disk-bound trial is not kept apart from the other
    assert set(df.loc[df["filesystem"] == "nilfs2", "emulated"]) == {1.0}
    assert "disk_bound" not in df.columns  # not a factor


def test_a_kernel_that_ran_only_emulated_is_gone_not_replaced_by_the_next():
    """newest/oldest are resolved among every kernel that ran: the oldest, emulated only, is left out,
    and the claim is inconclusive saying why (not the newest kernel tested against itself)."""
    import pandas as pd
    from fsmeter.study.claims import ClaimChecker

    rows = []
    for kernel, emulated, base in (("6.1.0", 1.0, 100.0), ("6.12.0", 0.0, 120.0), ("6.18.0", 0.0, 121.0)):
        for t, d in enumerate((0.0, 1.0, -1.0, 0.5)):
            rows.append(
                dict(
                    workload="w",
                    metric_key="run.x",
                    higher_is_better=True,
                    filesystem="ext3",
                    kernel=kernel,
                    trial=t + 1,
                    value=base + d,
                    emulated=emulated,
                    **QUIET,
                )
            )
    claim = {"kind": "ordering", "compare": "kernel", "tiers": [["newest"], ["oldest"]]}
    [v] = ClaimChecker(study([claim]), pd.DataFrame(rows)).check_all()
    assert v.outcome == "inconclusive", (v.outcome, v.reason)
    assert "left out as functional only" in v.reason and "not run here" not in v.reason, v.reason


# -- a real guest on a disk model ---------------------------------------------------------------------------
def _fuse_mounts_under(path: str) -> list:
    with open("/proc/self/mountinfo") as f:
        return [ln.split()[4] for ln in f if ln.split()[4].startswith(path)]


def test_a_guest_runs_a_trial_on_a_disk_model_the_host_serves(tmp_path, scratch):
    reason = guest_skip_reason()
    if reason:
        pytest.skip(reason)
    from fsmeter.store import open_store

    fs = usable_guest_filesystem()
    level = kernels.installed()[0]
    campaign = tmp_path / "gm.toml"
    campaign.write_text(
        _campaign(fs=fs, levels=f'"{level}"')
        + '[guest]\naccelerator = "tcg"\nvcpus = 1\nmemory = "512M"\ndisk_size = "1G"\nboot_timeout_s = 900\n'
    )
    db = tmp_path / "r.sqlite"
    r, leftovers = run_guest_campaign(campaign, db, scratch)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert not leftovers, f"QEMU still running after the campaign: {leftovers}"
    assert not _fuse_mounts_under(scratch), "the model's FUSE mount was left behind"
    assert not [n for n in os.listdir(scratch) if n.startswith("guest-")], "the guest folder was left behind"
    with open_store(db, create=False) as store:
        [cell] = store.cells(store.campaign_id())
        assert cell["status"] == "done", cell["cause"]
        [trial] = store.trials(cell["id"])
        assert trial["status"] == "ok", trial["cause"]
        row = store.conn.execute("SELECT fs, extra FROM environment WHERE trial_id = ?", (trial["id"],)).fetchone()
        reports = [
            json.loads(x["report"])
            for x in store.conn.execute("SELECT report FROM phases WHERE trial_id = ? AND measured = 1", (trial["id"],))
        ]
    assert row["fs"] == fs
    extra = json.loads(row["extra"])
    assert extra["guest"]["disk_model"] == "seagate-st39102lw" and extra["guest"]["emulated"] is True
    # The phase's regime holds what the host's model served while the guest wrote (read through the
    # shared folder), the guest's CPU share, and the disk-bound word.
    # (O_DIRECT writes: the guest's page cache keeps none of them from the model during the phase.)
    reg = next(rep["regime"] for rep in reports if rep.get("ops", {}).get("write") and rep.get("regime"))
    dm = reg["disk_model"]
    assert dm["requests"] > 0 and dm["kinds"].get("write", {}).get("count", 0) > 0, dm
    assert 0.0 <= reg["cpu_busy_share"] <= 1.0 and isinstance(reg["disk_bound"], bool)
