"""Guest kernels: the `kernel` campaign factor, run in a virtual machine (fsmeter.guest).

The first tests need no virtual machine: kernel levels, the [guest] section, the accelerator
choice and the journal that carries a guest's trials into the store. The last one boots a real
guest (software emulation, TCG) and runs one trial of a filesystem this host's kernel lacks; it
skips, saying why, where QEMU, virtme-ng, a kernel image or root is missing.
"""

from __future__ import annotations

import json
import os

import pytest
from fsmeter.campaign import parse_campaign, plan
from fsmeter.errors import UserError
from fsmeter.guest import kernels
from guest_boot import guest_skip_reason, run_guest_campaign, usable_guest_filesystem

CAMPAIGN = """
name = "g"
min_phase_s = 0
[target]
kind = "loop"
size = "256M"
[[filesystems]]
name = "{fs}"
[factors]
kernel = [{levels}]
[[workloads]]
name = "seq-write"
params = {{ file_size = "4M", duration_s = 1, warmup_s = 0 }}
[repetitions]
policy = "fixed"
n = 1
"""


#: A file with the x86 boot header a kernel image carries ("HdrS" at 0x202), and nothing else: enough for
#: the checks made before a guest boots; a boot of it fails as a real boot of a broken image would.
STAND_IN_IMAGE = bytes(kernels.BOOT_MAGIC_OFFSET) + kernels.BOOT_MAGIC + bytes(512)


def _boot(tmp_path, names):
    boot = tmp_path / "boot"
    boot.mkdir()
    for n in names:
        (boot / f"vmlinuz-{n}").write_bytes(STAND_IN_IMAGE)
    return str(boot)


def test_short_level_resolves_to_newest_of_its_series(tmp_path):
    boot = _boot(tmp_path, ["6.1.0-9-amd64", "6.1.0-50-amd64", "6.12.117+deb12-amd64"])
    k = kernels.resolve("6.1", boot)
    assert k.version == "6.1.0-50-amd64"  # 50 > 9 as numbers, not as text
    assert k.image == os.path.join(boot, "vmlinuz-6.1.0-50-amd64")
    assert kernels.resolve("6.12", boot).version == "6.12.117+deb12-amd64"  # "6.1" does not take 6.12
    assert kernels.resolve("6.1.0-9-amd64", boot).version == "6.1.0-9-amd64"


def test_absent_kernel_is_refused_naming_what_is_installed(tmp_path):
    boot = _boot(tmp_path, ["6.1.0-50-amd64"])
    with pytest.raises(UserError) as exc:
        kernels.resolve("5.10", boot)
    assert "'5.10'" in exc.value.message and "6.1.0-50-amd64" in exc.value.message
    with pytest.raises(UserError, match="no such kernel image"):
        kernels.resolve(str(tmp_path / "nope" / "bzImage"), boot)


def test_kernel_levels_must_be_strings_and_guest_needs_the_factor():
    with pytest.raises(UserError, match='"6.1", not 6.1'):
        parse_campaign(CAMPAIGN.format(fs="jfs", levels="6.1"))
    text = CAMPAIGN.format(fs="jfs", levels='"6.1"').replace('[factors]\nkernel = ["6.1"]', "[guest]\nvcpus = 2")
    with pytest.raises(UserError, match="^g.toml:9: guest: the \\[guest\\] section needs a kernel factor"):
        parse_campaign(text, "g.toml")  # the line of [guest], not a bare ': :'
    with pytest.raises(UserError, match="^g.toml:10: guest_vcpus, guest_memory: guest factors need a kernel"):
        parse_campaign(
            CAMPAIGN.format(fs="jfs", levels='"6.1"').replace("kernel = [", "guest_vcpus = [1, 2]\nx = ["), "g.toml"
        )


def test_guest_defaults_are_raw_uncached_and_auto():
    c = parse_campaign(CAMPAIGN.format(fs="jfs", levels='"6.1"'))
    assert (c.guest.disk_cache, c.guest.accelerator, c.guest.vcpus) == ("none", "auto", 1)
    with pytest.raises(UserError, match="guest.disk_cache"):
        parse_campaign(CAMPAIGN.format(fs="jfs", levels='"6.1"') + '[guest]\ndisk_cache = "fast"\n')


def test_missing_kernel_level_is_refused_with_the_file_not_when_its_guest_boots(monkeypatch, tmp_path):
    monkeypatch.setattr(kernels, "BOOT", _boot(tmp_path, ["6.1.0-50-amd64"]))
    with pytest.raises(UserError, match=r"g.toml:9: factors: kernel: '4.19': no such kernel installed"):
        parse_campaign(CAMPAIGN.format(fs="jfs", levels='"6.1", "4.19"'), "g.toml")
    assert [x.kernel for x in plan(parse_campaign(CAMPAIGN.format(fs="jfs", levels='"6.1"')))] == ["6.1"]


def test_host_level_runs_on_the_host_and_the_others_in_guests(monkeypatch, tmp_path):
    monkeypatch.setattr(kernels, "BOOT", _boot(tmp_path, ["6.1.0-50-amd64"]))
    text = CAMPAIGN.format(fs="ext4", levels='"host", "6.1"').replace(
        '[[filesystems]]\nname = "ext4"', '[[filesystems]]\nname = "ext4"\n[[filesystems]]\nname = "jfs"'
    )
    text = text.replace(
        "min_phase_s = 0\n",
        'min_phase_s = 0\nexclusions = [{ filesystem = "jfs", kernel = "host" }, '
        '{ filesystem = "ext4", kernel = "6.1" }]\n',
    )
    cells = plan(parse_campaign(text))
    assert [(x.fs_label, x.factors["kernel"], x.kernel) for x in cells] == [
        ("ext4", "host", None),
        ("jfs", "6.1", "6.1"),
    ]


def test_kvm_is_refused_with_the_reason_where_it_cannot_boot(monkeypatch):
    monkeypatch.setattr(kernels, "kvm_problem", lambda: "/dev/kvm cannot boot a stock kernel (test)")
    with pytest.raises(UserError, match="guest.accelerator: 'kvm' cannot be used here"):
        kernels.choose("kvm")
    a = kernels.choose("auto")
    assert a.name == "tcg" and a.emulated and "guests will be emulated" in a.reason
    monkeypatch.setattr(kernels, "kvm_problem", lambda: None)
    assert kernels.choose("auto").name == "kvm" and not kernels.choose("auto").emulated
    assert kernels.choose("tcg").emulated


def test_journal_trials_land_in_the_store_with_the_guest_recorded(tmp_path):
    from fsmeter.guest.host import _replay
    from fsmeter.guest.inside import JournalStore
    from fsmeter.store import open_store

    store = open_store(tmp_path / "r.sqlite")
    cid = store.create_campaign("g", "", [("seq-write", {"filesystem": "jfs", "kernel": "6.1"})])
    cell = store.cells(cid)[0]["id"]
    journal = str(tmp_path / "journal.jsonl")
    guest = {"kernel_level": "6.1", "accelerator": "tcg", "emulated": True}
    js = JournalStore(journal, {}, guest)
    js.record_trial(
        cell,
        1,
        status="ok",
        started="2026-01-01T00:00:00+00:00",
        ended="2026-01-01T00:00:05+00:00",
        metrics=[
            {
                "phase": "run",
                "name": "write_MBps",
                "unit": "MB/s",
                "higher_is_better": True,
                "value": 12.5,
                "headline": True,
            }
        ],
        environment={"kernel": "6.1.0-50-amd64", "hostname": "virtme-ng"},
    )
    with open(journal, "a") as f:
        f.write('{"op": "cell", "cell_id": ' + str(cell) + ', "status": "do')  # torn: the guest is still writing it
    seen, counts = {"lines": 0}, {"done": 0, "failed": 0, "skipped": 0}
    by_id = {cell: (None, None)}
    _replay(journal, store, seen, by_id, counts, final=False, campaign_id=cid)
    assert [tuple(x) for x in store.headline_values(cell)] == [(1, 12.5)]
    assert store.cells(cid)[0]["status"] == "pending"  # the torn line is not taken
    with open(journal, "a") as f:
        f.write('ne", "cause": null, "stop_reason": "fixed-n"}\n')
    _replay(journal, store, seen, by_id, counts, final=True, campaign_id=cid)
    assert store.cells(cid)[0]["status"] == "done" and counts["done"] == 1
    extra = json.loads(store.conn.execute("SELECT extra FROM environment").fetchone()[0])
    assert extra["guest"]["emulated"] is True and extra["guest"]["kernel_level"] == "6.1"
    assert store.conn.execute("SELECT kernel FROM environment").fetchone()[0] == "6.1.0-50-amd64"
    store.close()


def test_the_guests_storage_probe_lands_in_the_campaigns_store(tmp_path):
    """The runner inside a guest probes its scratch disk; the journal carries it to the host's store."""
    from fsmeter.guest.host import _replay
    from fsmeter.guest.inside import JournalStore
    from fsmeter.store import open_store

    store = open_store(tmp_path / "r.sqlite")
    cid = store.create_campaign("g", "", [("seq-write", {"filesystem": "jfs", "kernel": "6.1"})])
    cell = store.cells(cid)[0]["id"]
    journal = str(tmp_path / "journal.jsonl")
    js = JournalStore(journal, {}, {"kernel_level": "6.1", "emulated": True})
    js.record_storage_probe(cid, {"storage_class": "virtual-disk", "span_bytes": 1 << 20, "random_read_ms_p50": 0.5})
    with open(journal, "a") as f:
        f.write('{"op": "storage-probe", "probe": 7}\n')  # not a probe this fsmeter wrote: reported, skipped
    seen, counts = {"lines": 0}, {"done": 0, "failed": 0, "skipped": 0}
    _replay(journal, store, seen, {cell: (None, None)}, counts, final=True, campaign_id=cid)
    rows = store.conn.execute(
        "SELECT campaign_id, storage_class, random_read_ms_p50, report FROM storage_probes"
    ).fetchall()
    assert len(rows) == 1 and rows[0][0] == cid and rows[0][1] == "virtual-disk" and rows[0][2] == 0.5
    assert json.loads(rows[0][3])["guest"]["emulated"] is True
    store.close()


# -- a real guest ------------------------------------------------------------------------------------
def test_a_guest_runs_one_trial_of_a_filesystem_the_host_lacks(tmp_path, monkeypatch, scratch):
    reason = guest_skip_reason()
    if reason:
        pytest.skip(reason)
    from fsmeter.store import open_store

    fs = usable_guest_filesystem()
    level = kernels.installed()[0]
    campaign = tmp_path / "g.toml"
    campaign.write_text(
        CAMPAIGN.format(fs=fs, levels=f'"{level}"')
        + '[guest]\naccelerator = "tcg"\nmemory = "1G"\ndisk_size = "1G"\nboot_timeout_s = 900\n'
    )
    db = tmp_path / "r.sqlite"
    r, leftovers = run_guest_campaign(campaign, db, scratch)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert not leftovers, f"QEMU still running after the campaign: {leftovers}"
    assert not [n for n in os.listdir(scratch) if n.startswith("guest-")], "the guest folder was left behind"
    with open_store(db, create=False) as store:
        cid = store.campaign_id()
        [cell] = store.cells(cid)
        assert cell["status"] == "done", cell["cause"]
        [trial] = store.trials(cell["id"])
        assert trial["status"] == "ok", trial["cause"]
        row = store.conn.execute(
            "SELECT kernel, fs, extra FROM environment WHERE trial_id = ?", (trial["id"],)
        ).fetchone()
    assert row["kernel"] == level and row["fs"] == fs  # measured under the guest's kernel, on its filesystem
    guest = json.loads(row["extra"])["guest"]
    assert guest["accelerator"] == "tcg" and guest["emulated"] is True
    assert (guest["disk_cache"], guest["disk_format"], guest["kernel_level"]) == ("none", "raw", level)
    assert "emulated" in r.stdout


# -- reports: emulated guests are never ranked, guests never against the host -----------------------
def _pair(tmp_path, guest_a, guest_b, drop=0.5):
    """Campaigns A and B of ext4 and xfs; B's figures are ``drop`` times A's. guest_*: the guest record of
    that side's ext4 trials (None: on the host)."""
    import random

    import report_synth as rs
    from fsmeter.store import open_store

    db = tmp_path / "r.sqlite"
    store = open_store(db)
    rng = random.Random(3)
    for name, guest, scale in (("A", guest_a, 1.0), ("B", guest_b, drop)):
        cid = store.create_campaign(name, "", [("seq-read", {"filesystem": fs}) for fs in ("ext4", "xfs")])
        for c in store.cells(cid):
            fs = json.loads(c["factors"])["filesystem"]
            rs.add_trials(store, c["id"], [100.0 * scale * rng.gauss(1, 0.01) for _ in range(4)], "access", fs, {}, rng)
            if fs == "ext4" and guest is not None:
                for row in store.conn.execute(
                    "SELECT e.trial_id, e.extra FROM environment e JOIN trials t ON "
                    "t.id = e.trial_id WHERE t.cell_id = ?",
                    (c["id"],),
                ).fetchall():
                    extra = {**json.loads(row["extra"]), "guest": guest}
                    with store.conn:
                        store.conn.execute(
                            "UPDATE environment SET extra = ? WHERE trial_id = ?", (json.dumps(extra), row["trial_id"])
                        )
    store.close()
    return db


def test_emulated_configurations_are_listed_not_tested_and_not_ranked(tmp_path):
    from fsmeter.report.compare_runs import compare_runs, load_side
    from fsmeter.report.data import build_view, verdicts

    tcg = {"kernel_level": "6.1", "accelerator": "tcg", "emulated": True}
    db = _pair(tmp_path, tcg, tcg)
    res = compare_runs(load_side("A", db), load_side("B", db))
    ext4 = {r.verdict for r in res.rows if r.config == "ext4"}
    assert ext4 == {"not tested (emulated)"}  # halved, yet no regression: the emulator was measured
    assert {r.config for r in res.regressions} == {"xfs"}
    view = build_view(db, "A")
    w = view.workloads[0]
    assert w.emulated == ["ext4"] and [e.name for e in w.headline.ranking] == ["xfs"]
    [v] = verdicts(view)
    assert any(n.startswith("emulated: not a performance measurement: ext4") for n in v["notes"])


def test_a_guest_configuration_is_not_compared_or_ranked_against_the_host(tmp_path):
    from fsmeter.report.compare_runs import compare_runs, load_side
    from fsmeter.report.data import build_view

    kvm = {"kernel_level": "6.1", "accelerator": "kvm", "emulated": False}
    db = _pair(tmp_path, None, kvm)
    res = compare_runs(load_side("A", db), load_side("B", db))
    assert [(w, c) for w, c, _ in res.mismatches] == [("seq-read", "ext4")]
    assert "ran in a guest" in res.mismatches[0][2]
    assert {r.config for r in res.rows} == {"xfs"}
    w = build_view(db, "B").workloads[0]  # ext4 in a guest, xfs on the host: only the host's is ranked
    assert w.in_guest_apart == ["ext4"] and [e.name for e in w.headline.ranking] == ["xfs"]


def test_kvm_asked_where_it_cannot_boot_is_refused_before_any_cell(monkeypatch, tmp_path):
    from fsmeter import runner
    from fsmeter.guest import vm

    monkeypatch.setattr(kernels, "BOOT", _boot(tmp_path, ["6.1.0-50-amd64"]))
    monkeypatch.setattr(kernels, "kvm_problem", lambda: "/dev/kvm cannot boot a stock kernel (test)")
    monkeypatch.setattr(vm, "missing_tools", lambda: [])
    c = parse_campaign(CAMPAIGN.format(fs="jfs", levels='"6.1"') + '[guest]\naccelerator = "kvm"\n')
    with pytest.raises(UserError, match="guest.accelerator: 'kvm' cannot be used here"):
        runner.check_target(c)
    monkeypatch.setattr(vm, "missing_tools", lambda: ["vng (pip install virtme-ng, in fsmeter's venv)"])
    with pytest.raises(UserError, match="guests cannot run here: missing vng"):
        runner.check_target(parse_campaign(CAMPAIGN.format(fs="jfs", levels='"6.1"')))


def test_a_guest_that_cannot_set_up_fails_its_cells_with_the_cause(tmp_path):
    from fsmeter.guest.host import _replay

    journal = tmp_path / "journal.jsonl"
    journal.write_text('{"op": "setup-failed", "cause": "no block device with serial fsmeter-scratch"}\n')
    seen = {"lines": 0}
    _replay(str(journal), None, seen, {}, {"done": 0, "failed": 0}, final=True, campaign_id=1)
    assert seen["setup"] == "the guest could not set up: no block device with serial fsmeter-scratch"


def test_one_boot_per_kernel_and_guest_factor_levels_not_per_cell(monkeypatch, tmp_path):
    from fsmeter.guest import host, vm
    from fsmeter.store import open_store
    from rich.console import Console

    monkeypatch.setattr(kernels, "BOOT", _boot(tmp_path, ["6.1.0-50-amd64", "6.12.117+deb12-amd64"]))
    monkeypatch.setenv("FSMETER_SCRATCH", str(tmp_path / "scratch"))
    monkeypatch.setattr(vm, "missing_tools", lambda: [])
    monkeypatch.setattr(vm, "vng_path", lambda: "/bin/true")
    boots = []

    def fake_run(cmd, boot_timeout_s, on_line=None, pass_fds=(), keep=200):
        boots.append(cmd)  # no guest: its cells end failed, saying the guest stopped
        return vm.Boot(rc=0, boot_s=1.0, wall_s=1.0, lines=["bye"])

    monkeypatch.setattr(vm, "run", fake_run)
    text = (
        CAMPAIGN.format(fs="jfs", levels='"6.1", "6.12"')
        .replace('[[filesystems]]\nname = "jfs"', '[[filesystems]]\nname = "jfs"\n[[filesystems]]\nname = "f2fs"')
        .replace("[factors]\n", "[factors]\nguest_vcpus = [1, 2]\n")
    )
    c = parse_campaign(text)
    cells = plan(c)
    assert len(cells) == 8  # 2 filesystems x 2 kernels x 2 vCPU counts
    store = open_store(tmp_path / "r.sqlite")
    cid = store.create_campaign("g", text, [(x.workload, x.factors) for x in cells])
    counts = host.run_guest_levels(c, cells, store.cells(cid), store, cid, Console(file=open(os.devnull, "w")), text)
    got = {(os.path.basename(cmd[cmd.index("--run") + 1]), cmd[cmd.index("--cpus") + 1]) for cmd in boots}
    assert len(boots) == 4 and got == {
        (f"vmlinuz-{v}", n) for v in ("6.1.0-50-amd64", "6.12.117+deb12-amd64") for n in ("1", "2")
    }
    assert counts["failed"] == 8
    assert "the guest stopped" in store.cells(cid)[0]["cause"] and "bye" in store.cells(cid)[0]["cause"]
    assert not os.listdir(tmp_path / "scratch")  # every guest's folder and disk image removed
    store.close()


# -- studies --------------------------------------------------------------------------------------
def test_study_run_kernel_puts_what_the_host_lacks_in_a_guest_and_the_rest_on_the_host(monkeypatch, tmp_path):
    from fsmeter.study import plan as study_plan
    from fsmeter.study.model import load_study

    monkeypatch.setattr(kernels, "BOOT", _boot(tmp_path, ["6.1.0-50-amd64"]))
    lacks = {"jfs", "nilfs2", "reiserfs"}
    from fsmeter.provision import FILESYSTEMS

    monkeypatch.setattr(
        study_plan,
        "_filesystem_problem",  # this host as the study sees it, whatever it runs
        lambda name: f"{name}: not supported by this kernel" if name in lacks or name not in FILESYSTEMS else None,
    )
    p = study_plan.plan_study(load_study("layton2009"), "quick", None, ["6.1"])
    camp = p.campaign
    assert camp["factors"]["kernel"] == ["host", "6.1"]
    labels = [f["label"] for f in camp["filesystems"]]
    assert lacks <= set(labels) and "reiser4" not in labels  # never merged into Linux: no guest has it
    for lab in labels:
        other = "host" if lab in lacks else "6.1"
        assert {"filesystem": lab, "kernel": other} in camp["exclusions"]
    assert any(c.what.startswith("configuration jfs in a guest") and "kernel" in c.affects for c in p.changes)


def test_study_frame_takes_the_trials_kernel_over_the_campaigns_kernel_factor():
    import pandas as pd
    from fsmeter.study.frames import study_frame
    from fsmeter.study.model import load_study

    rows = [
        {
            "workload": "fdtree-small-shallow",
            "phase": "create",
            "metric": "files_per_s",
            "value": v,
            "higher_is_better": True,
            "filesystem": fs,
            "kernel": lv,
            "trial": t,
            "cell_id": cid,
            "status": "ok",
            "discarded": False,
        }
        for cid, fs, lv, v in ((1, "xfs", "host", 100.0), (2, "jfs", "6.1", 50.0))
        for t in (1, 2)
    ]
    env = pd.DataFrame(
        [
            {"cell_id": 1, "kernel": "6.18.0", "hostname": "h", "extra": "{}"},
            {
                "cell_id": 2,
                "kernel": "6.1.0-50-amd64",
                "hostname": "virtme-ng",
                "extra": json.dumps({"guest": {"emulated": True}}),
            },
        ]
    )
    df = study_frame(load_study("layton2009"), pd.DataFrame(rows), env)
    assert sorted(set(df["kernel"])) == ["6.1.0-50-amd64", "6.18.0"]
    assert dict(zip(df["filesystem"], df["emulated"])) == {"xfs": 0.0, "jfs": 1.0}
