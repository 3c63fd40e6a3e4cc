"""An existing shared mount as a plain `dir` target across hosts: a GlusterFS volume mounted on every
namespace host by its own client (as a cluster's hosts mount their shared filesystem), a campaign
started on the first host with a hostfile and a launcher, as on a cluster, measuring the volume's
directory on every host. fsmeter must measure it, record where it ran and what it measured, and
leave the mount alone: never unmount, remount or format it.

Root only; skipped with the reason without root, loop devices, Open MPI, mpi4py or GlusterFS.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

import pytest
from mpi_env import MPI_ENV, MPIRUN, have_mpi4py

needs_mpi = pytest.mark.skipif(
    MPIRUN is None or not have_mpi4py(), reason="needs Open MPI (mpirun) and mpi4py: run `make build` as root"
)
needs_gluster = pytest.mark.skipif(
    shutil.which("glusterd") is None or shutil.which("glusterfs") is None,
    reason="needs GlusterFS: Debian packages glusterfs-server and glusterfs-client",
)

FILES = (1 + 3) * 20  # fdtree-quick below: the root folder and 3 sub-folders of 20 files each, per rank

CAMPAIGN = """\
name = "shared-mount"
min_phase_s = 0
[[workloads]]
name = "fdtree-quick"
params = {{ levels = 1, dirs_per_level = 3, files_per_dir = 20 }}
[[workloads]]
name = "seq-write"
params = {{ file_size = "2M", total_bytes = "2M", duration_s = 30, warmup_s = 0 }}
[repetitions]
policy = "fixed"
n = 1
[target]
kind = "dir"
path = "{path}"
[mpi]
ranks = 2
hostfile = "{hostfile}"
extra_args = {extra}
"""


def _mountinfo(target: str) -> list:
    """(mount id, source, type) of every mount at TARGET, as this process sees them."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for ln in f:
            left, right = ln.split(" - ")
            fields = left.split()
            if fields[4] == target:
                fstype, source = right.split()[:2]
                out.append((fields[0], source, fstype))
    return out


def _uuid(device: str) -> str:
    return subprocess.run(["blkid", "-s", "UUID", "-o", "value", device], capture_output=True, text=True).stdout.strip()


@pytest.mark.root
@needs_mpi
@needs_gluster
def test_shared_mount_as_dir_target_on_two_hosts_counts_record_and_mount_left_alone(scratch, tmp_path):
    from fsmeter.provision import Provisioner
    from fsmeter.provision.gluster import GlusterVolume
    from fsmeter.provision.nshosts import NsHosts
    from fsmeter.provision.specs import FsConfig

    with Provisioner(scratch) as prov, NsHosts(2) as hosts:
        with GlusterVolume(
            hosts, prov, servers=["h2"], clients=["h1", "h2"], brick_fs=FsConfig(name="ext4"), brick_bytes=256 << 20
        ) as vol:
            server = f"{hosts.addr['h2']}:/{vol.name}"
            brick_dev = vol.info()["bricks"][0]["device"]
            before = {h: _mountinfo(m) for h, m in vol.mounts.items()}
            brick_before = (_uuid(brick_dev), _mountinfo(os.path.dirname(vol.bricks[0]["path"])))
            assert all(len(m) == 1 and m[0][1:] == (server, "fuse.glusterfs") for m in before.values()), before
            with open(os.path.join(vol.mounts["h1"], "keep-me"), "w") as f:
                f.write("the user's file\n")

            f = tmp_path / "c.toml"
            extra = hosts.mpi_args()[2:]  # the rsh agent and the private network; the hostfile is its own field
            assert hosts.mpi_args()[:2] == ["--hostfile", hosts.hostfile]
            f.write_text(CAMPAIGN.format(path=vol.path, hostfile=hosts.hostfile, extra=json.dumps(extra)))
            db = tmp_path / "r.sqlite"
            # The campaign runs on the first host, as on a cluster's login or first node: it sees the
            # volume at vol.path through h1's client, and mpirun reaches h2 through the hostfile.
            r = hosts.run(
                "h1",
                [sys.executable, "-m", "fsmeter", "campaign", "run", f, "--db", db, "-q"],
                env={**os.environ, **MPI_ENV},
                timeout=600,
            )
            assert r.returncode == 0, r.stdout + r.stderr

            # never unmounted, remounted or formatted: the same mounts (same ids), the brick's
            # filesystem the same, the user's file still there and nothing else left behind
            assert {h: _mountinfo(m) for h, m in vol.mounts.items()} == before
            assert (_uuid(brick_dev), _mountinfo(os.path.dirname(vol.bricks[0]["path"]))) == brick_before
            assert os.listdir(vol.mounts["h2"]) == ["keep-me"]
            r = hosts.run("h2", ["cat", os.path.join(vol.path, "keep-me")])
            assert r.stdout == "the user's file\n"

    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT c.workload, t.status, e.target_kind, e.fs, e.extra, t.id FROM cells c JOIN trials t "
        "ON t.cell_id = c.id JOIN environment e ON e.trial_id = t.id ORDER BY c.idx"
    ).fetchall()
    assert [(wl, st, kind, fs) for wl, st, kind, fs, _, _ in rows] == [
        ("fdtree-quick", "ok", "dir", "fuse.glusterfs"),
        ("seq-write", "ok", "dir", "fuse.glusterfs"),
    ]
    for _, _, _, _, extra, _ in rows:
        ex = json.loads(extra)
        # where the ranks ran, and the mount each host measured
        assert ex["mpi"]["layout"] == {"h1": [0], "h2": [1]}
        assert ex["mpi"]["mounts"] == {
            h: {"fstype": "fuse.glusterfs", "source": server, "mount_point": vol.path} for h in ("h1", "h2")
        }
        assert ex["mpi"].get("mounts_note") is None
        # the campaign's own view of the target: a directory on a mount it did not make
        m = ex["mount"]
        assert (m["target"], m["owns_mount"], m["mkfs_command"]) == ("dir", False, None)
        assert (m["mount_type"], m["mount_source"], m["mount_point"]) == ("fuse.glusterfs", server, vol.path)

    def report(trial_id: int, phase: str) -> dict:
        (rep,) = con.execute("SELECT report FROM phases WHERE trial_id = ? AND key = ?", (trial_id, phase)).fetchone()
        return json.loads(rep)

    create = report(rows[0][5], "create")
    assert create["total"]["ops"] == 2 * FILES
    assert [(x["rank"], x["host"], x["ops"]) for x in create["mpi"]["per_rank"]] == [(0, "h1", FILES), (1, "h2", FILES)]
    run = report(rows[1][5], "run")
    assert run["total"]["bytes"] == 2 * (2 << 20)
    assert [(x["host"], x["bytes"]) for x in run["mpi"]["per_rank"]] == [("h1", 2 << 20), ("h2", 2 << 20)]


@pytest.mark.root
@needs_mpi
def test_hosts_seeing_different_filesystems_at_dir_are_named_in_a_note(scratch, tmp_path):
    """A host whose shared mount is missing measures whatever lies under the path (its local disk):
    the run says so, naming each host's filesystem, and records them."""
    from fsmeter.provision.nshosts import NsHosts

    mem = os.path.join(scratch, "mem")
    os.mkdir(mem)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "fsmeter-test-mem", mem], check=True)
    try:
        d = tmp_path / "d"
        d.mkdir()
        with NsHosts(2) as hosts:
            # h2 sees the tmpfs at d; h1 (where mpirun runs, whose mounts the processes it starts on
            # the other hosts inherit under their own) sees the folder itself
            hosts.bind("h2", mem, str(d))
            out = tmp_path / "out.json"
            cmd = hosts.mpirun(
                2,
                [
                    sys.executable,
                    "-m",
                    "fsmeter",
                    "run",
                    "fdtree-quick",
                    "--dir",
                    d,
                    "--set",
                    "levels=0",
                    "--set",
                    "files_per_dir=10",
                    "-q",
                    "--min-phase-s",
                    "0",
                    "--json",
                    out,
                ],
            )
            r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **MPI_ENV}, timeout=150)
            assert r.returncode == 0, r.stderr
        doc = json.loads(out.read_text())
        mounts = doc["mpi"]["mounts"]
        assert mounts["h2"] == {"fstype": "tmpfs", "source": "fsmeter-test-mem", "mount_point": str(d)}
        assert mounts["h1"]["source"] != "fsmeter-test-mem" and mounts["h1"]["mount_point"] != str(d), mounts
        note = doc["mpi"]["mounts_note"]
        h1 = f"h1: {mounts['h1']['fstype']} {mounts['h1']['source']}"
        assert note.startswith(f"the hosts see --dir on different filesystems ({h1}; h2: tmpfs fsmeter-test-mem)")
        printed = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", r.stdout).split())  # rich's colours, line breaks
        assert "note: the hosts see --dir on different filesystems" in printed
        assert doc["phases"]["create"]["total"]["ops"] == 2 * 10
    finally:
        subprocess.run(["umount", mem], capture_output=True)


def test_mounts_note_only_when_the_filesystems_differ():
    from fsmeter.mpi.run import mounts_note

    gv = {"fstype": "fuse.glusterfs", "source": "10.0.0.2:/vol", "mount_point": "/mnt/gv"}
    assert mounts_note({"n1": gv, "n2": dict(gv)}) == {}
    # the same filesystem type from another server is another filesystem
    other = {**gv, "source": "10.0.0.3:/vol"}
    note = mounts_note({"n2": other, "n1": gv})["mounts_note"]
    assert note.startswith(
        "the hosts see --dir on different filesystems (n1: fuse.glusterfs 10.0.0.2:/vol; "
        "n2: fuse.glusterfs 10.0.0.3:/vol)"
    )
    assert mounts_note({"n1": gv}) == {}
