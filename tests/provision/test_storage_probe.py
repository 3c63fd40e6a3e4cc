"""The storage probe: on a loop image, through a file in a directory, on tmpfs, and for a campaign's
target (function, never speed: the figures are checked for presence and sense, not for values)."""

from __future__ import annotations

import os
import subprocess

import pytest
from fsmeter.provision.storage_probe import probe_directory, probe_path, probe_target, storage_class_of


def _sane(p):
    assert p.random_reads > 0 and p.random_read_ms_p50 > 0 and p.random_read_ms_mean > 0
    assert p.seq_read_mb_s > 0 and p.seq_write_mb_s > 0 and p.flush_ms_p50 > 0 and p.flushes > 0
    assert p.seq_bytes > 0 and p.span_bytes > p.seq_bytes
    assert "storage:" in p.line() and "random 4 KiB read" in p.line()


def test_a_loop_image_is_probed_over_its_whole_span(root, scratch):
    image = os.path.join(scratch, "probe.img")
    with open(image, "wb") as f:
        f.truncate(256 << 20)  # sparse: the probe must write what it reads
    dev = subprocess.run(
        ["losetup", "--direct-io=on", "--find", "--show", image], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        p = probe_path(dev, storage_class="loop-image", seq_bytes=16 << 20, reads=64, flushes=4)
    finally:
        subprocess.run(["losetup", "--detach", dev], capture_output=True)
    _sane(p)
    assert p.storage_class == "loop-image" and p.span_bytes == 256 << 20
    assert p.random_reads == 64 and p.flushes == 4 and p.seq_bytes == 16 << 20
    # the blocks read were written: the image is no longer all holes where they lie
    assert os.stat(image).st_blocks * 512 >= (16 << 20)


def test_a_directory_is_probed_through_a_file_it_then_removes(tmp_path):
    before = set(os.listdir(tmp_path))
    p = probe_directory(str(tmp_path), probe_bytes=64 << 20, seq_bytes=8 << 20, reads=32, flushes=2)
    assert set(os.listdir(tmp_path)) == before
    if p.note:  # a filesystem without O_DIRECT (the test machine's /tmp could be one): said, not timed
        assert "O_DIRECT" in p.note and p.random_read_ms_p50 is None
        return
    _sane(p)
    assert p.storage_class == "file" and p.path == str(tmp_path)


def test_tmpfs_is_memory_and_nothing_is_timed():
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    p = probe_directory("/dev/shm")
    assert p.storage_class == "memory" and p.random_read_ms_p50 is None and "memory" in p.note
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(".fsmeter-storage-probe")]


def test_storage_classes_of_targets():
    from fsmeter.provision import TargetSpec

    assert storage_class_of(TargetSpec(kind="loop")) == "loop-image"
    assert storage_class_of(TargetSpec(kind="tmpfs")) == "memory"

    class Model:  # a modelled disk's target names its model
        kind = "disk-model"
        model = "seagate-st39102lw"

    assert storage_class_of(Model()) == "disk-model:seagate-st39102lw"


def test_a_loop_target_is_probed_and_left_behind_clean(root, scratch):
    from fsmeter.provision import Provisioner, TargetSpec

    with Provisioner() as prov:
        p = probe_target(prov, TargetSpec(kind="loop", size_bytes=256 << 20), seq_bytes=16 << 20, reads=32, flushes=2)
        assert prov.state.entries() == []  # the image and its loop device were recorded, then removed
    _sane(p)
    assert p.storage_class == "loop-image" and p.details.get("loop_direct_io") is True
    images = os.path.join(scratch, "images")
    assert not os.path.isdir(images) or not os.listdir(images)
    assert scratch not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout


def test_a_disk_model_target_is_probed_through_the_model(root, scratch):
    """The probe of a disk-model target times the modelled drive, not the host's disk under it: a random
    read waits for a seek and part of a revolution (the Cheetah 9LP turns at 10,000 rpm, 6 ms a turn),
    where this host's own disk answers in well under a millisecond."""
    from fsmeter.provision import Provisioner, TargetSpec

    with Provisioner(scratch) as prov:
        spec = TargetSpec(kind="disk-model", model="seagate-st39102lw", size_bytes=128 << 20)
        p = probe_target(prov, spec, seq_bytes=4 << 20, reads=24, flushes=2)
        assert prov.state.entries() == []
    _sane(p)
    assert p.storage_class == "disk-model:seagate-st39102lw" and p.span_bytes == 128 << 20
    assert p.random_read_ms_mean > 1.0, p.line()
    assert p.seq_read_mb_s < 40, p.line()  # the 9LP's media rate is at most 21 MB/s
    images = os.path.join(scratch, "images")
    assert not os.path.isdir(images) or not os.listdir(images)


def _campaign_probes(tmp_path, target: str):
    """Run a one-trial seq-read campaign on ``target`` (the TOML lines of its [target] and what follows
    it) and return its output and the store's storage probes."""
    from fsmeter.store import load
    from fsmeter_cli import fsm

    camp = tmp_path / "c.toml"
    camp.write_text(
        f"""name = "p"
[target]
{target}
[[workloads]]
name = "seq-read"
params = {{ file_size = "4M", duration_s = 0.2, warmup_s = 0.0 }}
[repetitions]
policy = "fixed"
n = 1
"""
    )
    db = tmp_path / "s.sqlite"
    r = fsm("campaign", "run", str(camp), "--db", str(db), "--quiet")
    assert r.returncode == 0, r.stderr
    return r, load(db)["storage"]


def test_a_campaign_records_its_probe(tmp_path):
    """A campaign on a directory target records one probe of the directory's storage in the store."""
    target = tmp_path / "t"
    target.mkdir()
    r, st = _campaign_probes(tmp_path, f'kind = "dir"\npath = "{target}"')
    assert len(st) == 1 and st["storage_class"].iloc[0] in ("file", "memory")
    assert "storage:" in r.stdout


def test_a_loop_campaign_probes_again_at_its_end(root, scratch, tmp_path):
    """A loop target is probed when the campaign starts and again when its trials are done, so the gates
    have more than one sample of the host's storage (they take the fastest)."""
    _, st = _campaign_probes(tmp_path, 'kind = "loop"\nsize = "256M"\n[[filesystems]]\nname = "ext4"')
    assert len(st) == 2 and set(st["storage_class"]) == {"loop-image"}
    assert st["random_read_ms_p50"].notna().all()
