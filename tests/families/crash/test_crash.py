"""Crash and recovery: the write log, the cut models, the campaign file, and a whole crash cycle on ext4."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from fsmeter.crash.blocklog import FLUSH, RECORD, START, WRITE, ZERO, read_log
from fsmeter.crash.cut import CutBuilder
from fsmeter.errors import UserError
from repo_paths import ROOT


def _log(path, records):
    """Write a blocklog-format log: (kind, t_ns, offset, data-or-length)."""
    with open(path, "wb") as f:
        for seq, (kind, t, off, payload) in enumerate(records):
            data = payload if kind == WRITE else b""
            length = len(payload) if kind == WRITE else (payload or 0)
            f.write(RECORD.pack(kind, length, seq, t, off) + data)


@pytest.fixture
def logged(tmp_path):
    base = tmp_path / "base.img"
    base.write_bytes(b"\x11" * 16384)
    log = tmp_path / "w.log"
    _log(
        log,
        [
            (START, 100, 0, 0),
            (WRITE, 110, 0, b"A" * 4096),
            (FLUSH, 120, 0, 0),
            (WRITE, 130, 4096, b"B" * 4096),
            (ZERO, 140, 8192, 4096),
            (FLUSH, 150, 0, 0),
            (WRITE, 160, 12288, b"C" * 4096),
            (WRITE, 170, 0, b"D" * 4096),
        ],
    )
    return tmp_path, str(base), str(log)


def _blocks(path):
    data = open(path, "rb").read()
    return [data[i : i + 4096][:1] for i in range(0, len(data), 4096)]


def test_read_log_gives_records_in_order_and_stops_at_a_torn_tail(logged, tmp_path):
    _, _, log = logged
    recs = list(read_log(log))
    assert [r.kind for r in recs] == [START, WRITE, FLUSH, WRITE, ZERO, FLUSH, WRITE, WRITE]
    assert [r.t_ns for r in recs] == sorted(r.t_ns for r in recs)
    assert recs[4].offset == 8192 and recs[4].length == 4096
    torn = tmp_path / "torn.log"
    torn.write_bytes(open(log, "rb").read()[:-100])  # the daemon killed mid-record
    assert [r.kind for r in read_log(str(torn))][-1] == WRITE
    assert len(list(read_log(str(torn)))) == 7


def test_prefix_cut_keeps_exactly_what_arrived_before_the_instant(logged):
    d, base, log = logged
    b = CutBuilder(base, log, str(d / "work.img"), "prefix", seed=1)
    b.build(115, str(d / "c1.img"))
    assert _blocks(d / "c1.img") == [b"A", b"\x11", b"\x11", b"\x11"]
    info = b.build(145, str(d / "c2.img"))
    assert _blocks(d / "c2.img") == [b"A", b"B", b"\x00", b"\x11"]  # the zero range reads as zeros
    assert info.records_after_flush == 2 and info.kept_after_flush == 2
    b.build(175, str(d / "c3.img"))
    assert _blocks(d / "c3.img") == [b"D", b"B", b"\x00", b"C"]


def test_volatile_lost_cut_drops_every_write_since_the_last_flush(logged):
    d, base, log = logged
    b = CutBuilder(base, log, str(d / "work.img"), "volatile-lost", seed=1)
    info = b.build(145, str(d / "c.img"))
    assert _blocks(d / "c.img") == [b"A", b"\x11", b"\x11", b"\x11"]
    assert (info.flushes, info.kept_after_flush, info.records_after_flush) == (1, 0, 2)
    b.build(175, str(d / "c2.img"))  # the second flush made B and the zero range stable
    assert _blocks(d / "c2.img") == [b"A", b"B", b"\x00", b"\x11"]


def test_volatile_reorder_cut_is_a_seeded_subset(logged):
    d, base, log = logged
    outs = []
    for run in range(2):
        b = CutBuilder(base, log, str(d / f"w{run}.img"), "volatile-reorder", seed=7)
        b.build(175, str(d / f"r{run}.img"))
        outs.append(_blocks(d / f"r{run}.img"))
    assert outs[0] == outs[1]
    assert outs[0][1:3] == [b"B", b"\x00"]  # flushed: always kept
    assert outs[0][0] in (b"A", b"D") and outs[0][3] in (b"\x11", b"C")


def test_unknown_cut_model_is_refused(logged):
    d, base, log = logged
    with pytest.raises(ValueError, match="cut model"):
        CutBuilder(base, log, str(d / "w.img"), "lucky", seed=1)


# -- campaign files ----------------------------------------------------------------------------------


def test_named_campaigns_load_and_cover_the_journal_modes():
    from fsmeter.crash.model import campaign_names, load_campaign

    assert {"crash-1g", "crash-quick"} <= set(campaign_names())
    c, _, _ = load_campaign("crash-1g")
    assert [f.title for f in c.filesystem] == [
        "ext2",
        "ext3 data=ordered",
        "ext3 data=writeback",
        "ext3 data=journal",
        "ext4",
        "xfs",
        "btrfs",
    ]
    assert c.campaign.sizes == [1 << 30]


@pytest.mark.parametrize(
    "body, field",
    [
        ('[campaign]\nname="x"\ncrash_points=0\n[[filesystem]]\nname="ext4"\n', "campaign.crash_points"),
        ('[campaign]\nname="x"\n[[filesystem]]\nname="zfs"\n', "filesystem.0.name"),
        ('[campaign]\nname="x"\nsizes=["200M"]\n[[filesystem]]\nname="xfs"\n', "sizes"),
        ('[campaign]\nname="x"\n[[filesystem]]\nname="ext2"\nmount_options="data=journal"\n', "data="),
        ('[campaign]\nname="x"\ndirty=["1K"]\n[[filesystem]]\nname="ext4"\n', "dirty"),
    ],
)
def test_bad_campaign_names_the_field(tmp_path, body, field):
    from fsmeter.crash.model import load_campaign

    p = tmp_path / "c.toml"
    p.write_text(body)
    with pytest.raises(UserError) as e:
        load_campaign(str(p))
    assert field in e.value.message and "\n" not in e.value.message


def test_crash_instants_replay_with_the_seed():
    from fsmeter.crash.run import draw_cuts

    a = draw_cuts(1, "ext4-1G", 5, 1000, 2000)
    assert a == draw_cuts(1, "ext4-1G", 5, 1000, 2000)
    assert a != draw_cuts(2, "ext4-1G", 5, 1000, 2000)
    assert a == sorted(a) and all(1000 <= t < 2000 for t in a)


def test_cli_refuses_a_bad_set_in_one_line():
    from fsmeter.cli import main

    r = subprocess.run(
        [
            os.path.join(ROOT, ".venv", "bin", "fsmeter"),
            "crash",
            "run",
            "crash-quick",
            "--out",
            "/nonexistent/x",
            "--set",
            "crash_points=2",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "fsmeter: error: --set 'crash_points=2': use section.field=value, e.g. campaign.crash_points=2"
    ]
    assert main  # the entry point the console script wraps


# -- the recorded disk and a whole crash cycle (root) -----------------------------------------------


def _no_leftovers(scratch):
    from fsmeter.provision import sysinfo

    assert not [m for m in sysinfo.proc_mounts() if m.target.startswith(os.path.realpath(scratch))]
    for name in os.listdir("/sys/block"):
        if name.startswith("loop"):
            backing = sysinfo.loop_backing_file("/dev/" + name) or ""
            assert not backing.startswith(os.path.realpath(scratch)), backing


def test_blocklog_logs_each_write_before_the_flush_that_follows(root, scratch):
    from fsmeter.crash.blocklog import LoggedDisk
    from fsmeter.provision.state import StateFile

    state = StateFile(scratch)
    image = os.path.join(scratch, "disk.img")
    with open(image, "wb") as f:
        f.truncate(8 << 20)
    log = os.path.join(scratch, "w.log")
    with LoggedDisk(state, image, log, scratch) as disk:
        assert disk.direct_io() is True  # the host page cache does not absorb the loop device's writes
        payload = os.urandom(8192)
        fd = os.open(disk.device, os.O_WRONLY | os.O_DIRECT)
        try:
            import mmap

            buf = mmap.mmap(-1, 8192)
            buf.write(payload)
            os.pwrite(fd, buf, 1 << 20)
            os.fsync(fd)
        finally:
            os.close(fd)
    recs = list(read_log(log))
    writes = [r for r in recs if r.kind == WRITE and r.offset == 1 << 20]
    assert writes, [(r.kind, r.offset) for r in recs]
    with open(log, "rb") as f:
        f.seek(writes[0].data_at)
        assert f.read(8192) == payload
    assert any(r.kind == FLUSH and r.seq > writes[-1].seq for r in recs)
    assert open(image, "rb").read()[1 << 20 : (1 << 20) + 8192] == payload  # served image holds it too
    assert state.entries() == []
    _no_leftovers(scratch)


def test_a_killed_run_leaves_nothing_cleanup_cannot_remove(root, scratch):
    from fsmeter.crash.blocklog import LoggedDisk
    from fsmeter.provision.state import StateFile
    from fsmeter.provision.undo import undo_entries

    state = StateFile(scratch)
    image = os.path.join(scratch, "disk.img")
    with open(image, "wb") as f:
        f.truncate(8 << 20)
    disk = LoggedDisk(state, image, os.path.join(scratch, "w.log"), scratch)
    disk.open()
    proc = disk.proc
    # as after a SIGKILL of fsmeter: nothing closed, only the state file knows
    done, problems = undo_entries(state, state.entries())
    assert problems == []
    assert proc.wait(timeout=10) == 0  # unmounting ended the daemon
    assert state.entries() == []
    _no_leftovers(scratch)


def test_crash_cycle_on_ext4_keeps_every_fsync_promise(root, scratch, tmp_path):
    from fsmeter.crash.model import load_campaign
    from fsmeter.crash.report import rows, write_html
    from fsmeter.crash.run import CrashRunner
    from fsmeter.provision.state import StateFile

    c, text, _ = load_campaign("crash-quick")
    out = tmp_path / "out"
    db = tmp_path / "r.sqlite"
    doc = CrashRunner(c, text, str(out), scratch, say=lambda m: None, db=str(db)).run()
    assert doc["status"] == "done"
    (cell,) = doc["cells"]
    assert cell["status"] == "done", cell.get("cause")
    assert cell["loop_direct_io"] is True
    assert "rw" in cell["mount_options_in_effect"] and cell["mkfs_version"]
    assert cell["write"]["counters"]["fsync_calls"] > 0
    assert len(cell["points"]) == 2
    for p in cell["points"]:
        r, chk = p["recovery"], p["check"]["counters"]
        assert r["mount_error"] is None and not r["fsck_failed"], r
        assert r["fsck_s"] > 0 and r["mount_s"] > 0
        assert chk["blocks_lost_beyond_fsync"] == 0 and chk["files_lost_beyond_fsync"] == 0, p["check"]
        assert chk["entries_lost_beyond_fsync"] == 0
        assert p["finding"] is False and "evidence_image" not in p
    # a cut late in the run holds synced data, and all of it was checked intact
    last = cell["points"][-1]["check"]["counters"]
    assert last["blocks_promised"] > 0 and last["blocks_intact"] == last["blocks_promised"]
    # the results file is what the runner returned; the ledger stays as evidence
    assert json.loads((out / "results.json").read_text())["cells"][0]["points"] == cell["points"]
    assert (out / cell["slug"] / "ledger.jsonl").stat().st_size > 0
    page = write_html(doc, str(out / "report.html"))
    text = open(page).read()
    assert "Recovery time" in text and "Data lost beyond what fsync promised" in text
    assert rows(doc)[0]["bytes_lost_beyond_fsync"] == 0
    # every crash point is also a trial in the results store, its recovery time the headline
    from fsmeter.store import open_store, tidy

    df = tidy(db, doc["store"]["campaign_id"])
    assert sorted(set(df["trial"])) == [1, 2] and set(df["status"]) == {"ok"}
    check_s = df[(df["phase"] == "recovery") & (df["metric"] == "check_s")]["value"].tolist()
    assert check_s == [p["recovery"]["fsck_s"] for p in cell["points"]]
    assert set(df[df["metric"] == "bytes_lost_beyond_fsync"]["value"]) == {0.0}
    assert set(df["filesystem"]) == {"ext4"} and set(df["size"]) == {"256MiB"}
    with open_store(db, create=False) as st:
        assert st.campaign(str(doc["store"]["campaign_id"]))["status"] == "done"
    assert StateFile(scratch).entries() == []
    _no_leftovers(scratch)
    assert not [f for f in os.listdir(os.path.join(scratch, "images"))]


def test_report_marks_a_finding_and_names_its_evidence(tmp_path):
    from fsmeter.crash.report import rows, terminal_table, write_html

    point = {
        "index": 0,
        "cut_ns": 5,
        "cut_after_s": 1.5,
        "finding": True,
        "evidence_image": "/x/cut0.img",
        "recovery": {
            "fsck_s": 0.5,
            "mount_s": 0.1,
            "fsck_fixed": True,
            "fsck_failed": False,
            "mount_error": None,
            "lost_found_entries": 2,
        },
        "check": {
            "counters": {
                "blocks_promised": 10,
                "blocks_lost_beyond_fsync": 2,
                "bytes_lost_beyond_fsync": 8192,
                "files_truncated_beyond_fsync": 1,
            },
            "findings": [{"kind": "block_lost", "path": "crash-t0/f000001", "offset": 4096}],
        },
    }
    doc = {
        "format": "fsmeter-crash/1",
        "host": {},
        "elapsed_s": 3,
        "campaign": {
            "campaign": {"name": "t", "crash_points": 1, "cut": "prefix", "seed": 1, "runtime_s": 1, "threads": 1}
        },
        "cells": [
            {
                "title": "ext4",
                "filesystem": "ext4",
                "size_bytes": 1 << 30,
                "dirty_bytes": 1 << 20,
                "status": "done",
                "slug": "ext4-1G",
                "points": [point],
            }
        ],
    }
    (r,) = rows(doc)
    assert (r["bytes_lost_beyond_fsync"], r["files_lost_beyond_fsync"], r["lost_found"], r["findings"]) == (
        8192,
        1,
        2,
        1,
    )
    page = open(write_html(doc, str(tmp_path / "r.html"))).read()
    assert "/x/cut0.img" in page and "crash-t0/f000001" in page and 'class="finding"' in page
    assert terminal_table(doc).row_count == 1


def test_a_disk_cache_that_loses_unflushed_writes_under_nobarrier_is_a_finding_with_evidence(root, scratch, tmp_path):
    """ext4 mounted nobarrier sends no cache flushes, so a volatile cache lost at the cut takes data
    fsync had promised: the check must call it a finding and keep the image beside the ledger."""
    from fsmeter.crash.model import CrashCampaign
    from fsmeter.crash.report import rows
    from fsmeter.crash.run import CrashRunner

    c = CrashCampaign.model_validate(
        {
            "campaign": {
                "name": "nobarrier",
                "crash_points": 1,
                "cut": "volatile-lost",
                "sizes": ["128M"],
                "dirty": ["64K"],
                "runtime_s": 1.0,
                "threads": 1,
            },
            "workload": {"files_per_thread": 4, "file_size": "256K"},
            "filesystem": [{"name": "ext4", "mount_options": "nobarrier"}],
        }
    )
    out = tmp_path / "out"
    db = tmp_path / "r.sqlite"
    doc = CrashRunner(c, "", str(out), scratch, say=lambda m: None, db=str(db)).run()
    (cell,) = doc["cells"]
    assert cell["status"] == "done", cell.get("cause")
    (p,) = cell["points"]
    from fsmeter.store import tidy

    df = tidy(db, doc["store"]["campaign_id"])
    assert set(df["status"]) == {"corrupt"}  # a finding is a corrupt trial in the store, never ok
    assert p["cut"]["kept_after_flush"] == 0 and p["cut"]["records_after_flush"] > 0
    lost = p["check"]["counters"]
    assert lost["blocks_lost_beyond_fsync"] + lost["files_lost_beyond_fsync"] + lost["entries_lost_beyond_fsync"] > 0
    assert p["finding"] is True
    assert os.path.exists(p["evidence_image"]) and p["evidence_image"].startswith(str(out / cell["slug"]))
    assert p["check"]["findings"], "the first findings are listed"
    assert rows(doc)[0]["findings"] == 1
    _no_leftovers(scratch)


def test_run_crash_fsync_measures_syncs_and_checks_every_promise(tmp_path):
    """The family on its own, as `fsmeter run` runs it: no crash, so every promise must hold."""
    import sys

    out, d = tmp_path / "out.json", tmp_path / "d"
    d.mkdir()
    ledger = tmp_path / "ledger.jsonl"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsmeter",
            "run",
            "crash-fsync",
            "--dir",
            str(d),
            "--set",
            "runtime_s=0.5",
            "--set",
            "files_per_thread=4",
            "--set",
            "file_size=256K",
            "--set",
            f"ledger={ledger}",
            "--json",
            str(out),
            "-q",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    m = {k: v["value"] for k, v in doc["metrics"].items()}
    assert m["write.MiB_per_s"] > 0 and m["write.fsync_p99_us"] > 0 and m["write.fdatasync_p99_us"] > 0
    assert m["check.blocks_promised"] > 0 and m["check.bytes_lost_beyond_fsync"] == 0
    assert doc["phases"]["write"]["counters"]["ledger_lines"] == len(ledger.read_text().splitlines())
    assert list(d.iterdir()) == []  # the cleanup phase removed the files; the ledger stays


def test_a_cut_built_again_at_the_same_instant_is_the_same_image(logged):
    """The evidence of a finding is rebuilt after recovery changed the checked image: it must match."""
    d, base, log = logged
    for model in ("prefix", "volatile-lost", "volatile-reorder"):
        b = CutBuilder(base, log, str(d / f"w-{model}.img"), model, seed=3)
        b.build(165, str(d / "first.img"))
        b.build(165, str(d / "again.img"))
        assert open(d / "first.img", "rb").read() == open(d / "again.img", "rb").read(), model


def test_e2fsck_repairs_are_read_from_its_prompts_and_stale_counts_are_not_damage():
    from fsmeter.crash.recovery import _SUMMARY_ONLY, e2fsck_repairs

    out = """Pass 1: Checking inodes, blocks, and sizes
Inode 14 extent tree (at level 1) could be shorter.  Optimize? yes

Pass 5: Checking group summary information
Free blocks count wrong (235417, counted=219017).
Fix? yes

Free inodes count wrong (65525, counted=65507).
Fix? yes
"""
    rep = e2fsck_repairs(out)
    assert rep == [
        "Inode 14 extent tree (at level 1) could be shorter.",
        "Free blocks count wrong (235417, counted=219017).",
        "Free inodes count wrong (65525, counted=65507).",
    ]
    assert not all(r.startswith(_SUMMARY_ONLY) for r in rep)
    assert all(r.startswith(_SUMMARY_ONLY) for r in rep[1:])
    damage = "Pass 2: Checking directory structure\nEntry 'f000003' in /crash-t0 (12) has deleted/unused inode 15.  Clear? yes\n"
    assert e2fsck_repairs(damage) == ["Entry 'f000003' in /crash-t0 (12) has deleted/unused inode 15."]


def test_crash_write_series_adds_up_to_its_headline(tmp_path):
    """The per-interval MiB of the write phase, over the measured time, is the headline itself."""
    from fsmeter.phases import run_job
    from fsmeter.spec import build_job, load_workload
    from rich.console import Console

    job = build_job(
        load_workload("crash-fsync"),
        tmp_path,
        {
            "runtime_s": 0.5,
            "interval_s": 0.05,
            "files_per_thread": 4,
            "file_size": "256K",
            "ledger": str(tmp_path.parent / f"{tmp_path.name}-ledger.jsonl"),
        },
    )
    doc = run_job(job, Console(quiet=True), show_progress=False, cache="keep", min_phase_s=1)
    rep = doc["phases"]["write"]
    total = sum(job.workload.family.series["MiB_per_s"](iv) for iv in rep["intervals"])
    assert total / rep["elapsed_s"] == pytest.approx(doc["metrics"]["write.MiB_per_s"]["value"], rel=1e-9)


def test_sigterm_mid_run_tears_everything_down_and_keeps_the_results(root, scratch, tmp_path):
    import signal
    import sys
    import time

    out = tmp_path / "out"
    env = {**os.environ, "FSMETER_SCRATCH": scratch}
    # in tmp_path: the run's results store (fsmeter.sqlite by default) is made in the working folder
    p = subprocess.Popen(
        [sys.executable, "-m", "fsmeter", "crash", "run", "crash-quick", "--out", str(out)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the write phase has begun once the daemon serves the disk
            if any(e["kind"] == "fuse" for e in _entries(scratch)) and any(
                e["kind"] == "mount" for e in _entries(scratch)
            ):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the crash run never reached its write phase")
        time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 143, err  # 128 + SIGTERM, as a shell reports it
    doc = json.loads((out / "results.json").read_text())
    assert doc["status"] == "interrupted" and doc["cells"][0]["status"] == "interrupted"
    assert _entries(scratch) == []
    _no_leftovers(scratch)


def _entries(scratch):
    from fsmeter.provision.state import StateFile

    return StateFile(scratch).entries()


def test_report_draws_recovery_time_against_size_when_sizes_vary():
    from fsmeter.crash.report import figures

    def cell(size, fsck, mount):
        return {
            "title": "ext2",
            "filesystem": "ext2",
            "size_bytes": size,
            "dirty_bytes": 1 << 20,
            "status": "done",
            "slug": f"ext2-{size}",
            "points": [
                {
                    "index": 0,
                    "cut_after_s": 1.0,
                    "finding": False,
                    "recovery": {"fsck_s": fsck, "mount_s": mount},
                    "check": {"counters": {}},
                }
            ],
        }

    doc = {"campaign": {"campaign": {}}, "cells": [cell(1 << 29, 1.0, 0.5), cell(1 << 30, 2.0, 0.5)]}
    figs = {f["id"]: f for f in figures(doc)}
    assert set(figs) == {"recovery", "recovery-size", "loss", "unpromised"}
    median_line = figs["recovery-size"]["data"][0]
    assert median_line["x"] == [0.5, 1.0] and median_line["y"] == [1.5, 2.5]
    one_size = {"campaign": {"campaign": {}}, "cells": [cell(1 << 30, 2.0, 0.5)]}
    assert "recovery-size" not in {f["id"] for f in figures(one_size)}


def test_run_crash_fsync_without_a_ledger_leaves_nothing_in_the_temp_folder(tmp_path, monkeypatch):
    """With no `ledger=`, the ledger is a temporary file: once the check found every promise kept,
    the cleanup phase removes it, so trial after trial leaves nothing behind."""
    from fsmeter_cli import fsm

    out, d, tmp = tmp_path / "out.json", tmp_path / "d", tmp_path / "tmp"
    d.mkdir()
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    sets = ("--set", "runtime_s=0.3", "--set", "files_per_thread=2", "--set", "file_size=128K")
    r = fsm("run", "crash-fsync", "--dir", d, "--json", out, "-q", *sets)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["metrics"]["check.blocks_promised"]["value"] > 0
    assert doc["cleanup"]["counters"]["ledger_removed"] == 1
    assert list(tmp.iterdir()) == [] and list(d.iterdir()) == []
