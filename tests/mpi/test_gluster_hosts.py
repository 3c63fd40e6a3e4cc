"""A GlusterFS volume fsmeter makes on namespace hosts (fsmeter.provision.gluster): bricks on its own
loop filesystems, each host mounting through its own client, MPI ranks on two hosts measuring it.

Root only; skipped with the reason without root, loop devices, Open MPI, mpi4py or GlusterFS.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from mpi_env import MPI_ENV, MPIRUN, have_mpi4py

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(
        MPIRUN is None or not have_mpi4py(), reason="needs Open MPI (mpirun) and mpi4py: run `make build` as root"
    ),
    pytest.mark.skipif(
        shutil.which("glusterd") is None or shutil.which("glusterfs") is None,
        reason="needs GlusterFS: Debian packages glusterfs-server and glusterfs-client",
    ),
]

QUICK = ["-q", "--min-phase-s", "0"]


def _gluster_processes() -> set:
    """Live gluster processes (zombies are dead, waiting for their parent to notice)."""
    out = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            name, state = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()[0]
            if name.startswith("gluster") and state not in ("Z", "X"):
                out.add(int(pid))
    return out


def _mounts_under(folder: str) -> list:
    with open("/proc/self/mounts") as f:
        return [ln.split()[1] for ln in f if ln.split()[1].startswith(folder)]


def test_two_host_volume_file_per_rank_and_shared_file_runs_and_teardown(scratch, tmp_path):
    from fsmeter.provision import Provisioner
    from fsmeter.provision.gluster import GlusterVolume
    from fsmeter.provision.nshosts import NsHosts
    from fsmeter.provision.specs import FsConfig

    before = _gluster_processes()
    with Provisioner(scratch) as prov, NsHosts(2) as hosts:
        state = str(hosts.state)
        with GlusterVolume(
            hosts,
            prov,
            servers=["h2"],
            clients=["h1", "h2"],
            brick_fs=FsConfig(name="ext4", mkfs_options=["-I", "256"]),
            brick_bytes=256 << 20,
            options={"performance.write-behind": "off"},
        ) as vol:
            info = vol.info()
            assert info["servers"] == {"h2": "10.199.0.2"} and info["volume_type"] == "distribute"
            assert [b["fs"] for b in info["bricks"]] == ["ext4"] and info["bricks"][0]["mkfs_options"] == ["-I", "256"]
            assert info["bricks"][0]["device"].startswith("/dev/loop")
            assert info["volume_options"].get("performance.write-behind") == "off"
            assert info["client_version"].startswith("glusterfs ")
            # each host's own client at the one common path: a file written on h1 is read on h2
            w = hosts.run("h1", ["sh", "-c", f"echo from-h1 > {vol.path}/probe && grep -c glusterfs /proc/mounts"])
            assert w.returncode == 0, w.stderr
            r = hosts.run("h2", ["cat", f"{vol.path}/probe"])
            assert r.stdout.strip() == "from-h1"
            os.unlink(os.path.join(vol.mounts["h1"], "probe"))

            out = tmp_path / "out.json"
            cmd = hosts.mpirun(
                2,
                [
                    sys.executable,
                    "-m",
                    "fsmeter",
                    "run",
                    "seq-write",
                    "--dir",
                    vol.path,
                    "--set",
                    "file_size=2M",
                    "--set",
                    "total_bytes=2M",
                    "--set",
                    "duration_s=none",
                    "--set",
                    "warmup_s=0",
                    "--json",
                    out,
                    *QUICK,
                ],
                extra=["--map-by", "node"],
            )
            p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **MPI_ENV}, timeout=180)
            assert p.returncode == 0, p.stderr
            doc = json.loads(out.read_text())
            assert doc["mpi"]["layout"] == {"h1": [0], "h2": [1]}
            per = doc["phases"]["run"]["mpi"]["per_rank"]
            assert [(x["host"], x["bytes"]) for x in per] == [("h1", 2 << 20), ("h2", 2 << 20)]

            cmd = hosts.mpirun(
                2,
                [
                    sys.executable,
                    "-m",
                    "fsmeter",
                    "run",
                    "seq-write",
                    "--dir",
                    vol.path,
                    "--shared-file",
                    "--reorder-shift",
                    "node",
                    "--set",
                    "file_size=1M",
                    "--set",
                    "total_bytes=1M",
                    "--set",
                    "duration_s=none",
                    "--set",
                    "warmup_s=0",
                    "--set",
                    "verify=crc32c",
                    "--json",
                    out,
                    *QUICK,
                ],
                extra=["--map-by", "node"],
            )
            p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **MPI_ENV}, timeout=180)
            assert p.returncode == 0, p.stderr
            doc = json.loads(out.read_text())
            assert doc["mpi"]["files"]["reorder_shift"] == 1  # one rank per host: the next host's region
            assert doc["phases"]["run"]["total"]["bytes"] == 2 << 20
            assert doc["phases"]["verify"]["counters"]["verify_mismatches"] == 0
            assert os.listdir(vol.mounts["h2"]) == []  # every rank's files gone
    assert _mounts_under(state) == [] and not os.path.exists(state)
    assert _gluster_processes() - before == set()
    assert _mounts_under(os.path.realpath(scratch)) == []


def test_replicated_volume_on_two_servers_writes_every_brick(scratch):
    from fsmeter.provision import Provisioner
    from fsmeter.provision.gluster import GlusterVolume
    from fsmeter.provision.nshosts import NsHosts
    from fsmeter.provision.specs import FsConfig

    with Provisioner(scratch) as prov, NsHosts(2) as hosts:
        with GlusterVolume(
            hosts,
            prov,
            servers=["h1", "h2"],
            clients=["h1"],
            volume_type="replicate",
            brick_fs=FsConfig(name="xfs"),
            brick_bytes=320 << 20,
        ) as vol:
            r = hosts.run("h1", ["sh", "-c", f"head -c 65536 /dev/zero > {vol.path}/f && sync"])
            assert r.returncode == 0, r.stderr
            bricks = vol.info()["bricks"]
            assert [b["server"] for b in bricks] == ["h1", "h2"] and {b["fs"] for b in bricks} == {"xfs"}
            assert [os.path.getsize(os.path.join(b["path"], "f")) for b in bricks] == [65536, 65536]


def test_unknown_host_and_volume_type_are_refused(scratch):
    from fsmeter.errors import UserError
    from fsmeter.provision import Provisioner
    from fsmeter.provision.gluster import GlusterVolume
    from fsmeter.provision.nshosts import NsHosts

    with Provisioner(scratch) as prov, NsHosts(1) as hosts:
        with pytest.raises(UserError, match="host 'h9' is not one of the hosts"):
            GlusterVolume(hosts, prov, servers=["h9"], clients=["h1"])
        with pytest.raises(UserError, match="use one of distribute, replicate"):
            GlusterVolume(hosts, prov, servers=["h1"], clients=["h1"], volume_type="stripe")


def _fsm(*args, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **MPI_ENV, "COLUMNS": "200"},
        timeout=timeout,
    )


CAMPAIGN = """\
name = "gluster-bricks"
min_phase_s = 0
[[filesystems]]
name = "ext4"
[[filesystems]]
name = "xfs"
[[workloads]]
name = "seq-write"
params = {{ file_size = "4M", duration_s = 0.5, warmup_s = 0 }}
[repetitions]
policy = "fixed"
n = 1
{mpi}
[target]
kind = "glusterfs"
size = "320M"
hosts = 2
servers = [{servers}]
volume_options = {{ "performance.write-behind" = "off" }}
"""


def test_campaign_brick_filesystem_factor_on_a_two_host_volume(scratch, tmp_path):
    import sqlite3

    from fsmeter.provision.nshosts import namespaces

    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN.format(mpi="[mpi]\nranks = 2", servers='"h2"'))
    db = tmp_path / "r.sqlite"
    before, before_ns = _gluster_processes(), set(namespaces())
    r = _fsm("campaign", "run", f, "--db", db, "-q")
    assert r.returncode == 0, r.stdout + r.stderr
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT c.factors, t.status, e.target_kind, e.fs, e.extra FROM cells c JOIN trials t ON "
        "t.cell_id = c.id JOIN environment e ON e.trial_id = t.id ORDER BY c.idx"
    ).fetchall()
    assert [(json.loads(fa)["filesystem"], st, kind, fs) for fa, st, kind, fs, _ in rows] == [
        ("ext4", "ok", "glusterfs", "ext4"),
        ("xfs", "ok", "glusterfs", "xfs"),
    ]
    for _, _, _, fs, extra in rows:
        ex = json.loads(extra)
        assert ex["mpi"]["layout"] == {"h1": [0], "h2": [1]}
        g = ex["mount"]["gluster"]
        assert g["servers"] == {"h2": "10.199.0.2"} and sorted(g["clients"]) == ["h1", "h2"]
        assert [b["fs"] for b in g["bricks"]] == [fs] and g["client_version"].startswith("glusterfs ")
        assert g["volume_options"].get("performance.write-behind") == "off"
    rates = con.execute(
        "SELECT m.value FROM metrics m JOIN trials t ON m.trial_id = t.id WHERE m.phase_key = 'run' "
        "AND m.name = 'ops_per_s'"
    ).fetchall()
    assert len(rates) == 2 and all(v > 0 for (v,) in rates)
    rep = _fsm("report", "--db", db, "-o", tmp_path / "r.html")
    assert rep.returncode == 0, rep.stderr
    assert "xfs" in (tmp_path / "r.html").read_text()
    assert set(namespaces()) - before_ns == set()  # the campaign's hosts are gone
    assert _gluster_processes() - before == set()


def test_campaign_glusterfs_target_input_errors(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN.format(mpi="", servers='"h2"'))
    r = _fsm("campaign", "run", f, "--db", tmp_path / "r.sqlite", "-q")
    assert r.returncode == 2 and "add an [mpi] section" in r.stderr, r.stderr
    f.write_text(CAMPAIGN.format(mpi="[mpi]\nranks = 2", servers='"h5"'))
    r = _fsm("campaign", "run", f, "--db", tmp_path / "r.sqlite", "-q")
    assert r.returncode == 2 and "'h5' is not one of the 2 hosts" in r.stderr, r.stderr


def test_campaign_interrupted_mid_trial_leaves_no_hosts_volume_or_bricks(scratch, tmp_path):
    """Ctrl-C (SIGINT) while a glusterfs cell runs: the clients, servers, bricks and hosts are all
    removed, as for any other target."""
    import signal
    import time

    from fsmeter.provision.nshosts import namespaces

    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN.format(mpi="[mpi]\nranks = 2", servers='"h2"').replace("duration_s = 0.5", "duration_s = 60"))
    import glob

    states = set(glob.glob("/tmp/fsmeter-nshosts-*"))
    before, before_ns = _gluster_processes(), set(namespaces())
    p = subprocess.Popen(
        [sys.executable, "-m", "fsmeter", "campaign", "run", f, "--db", tmp_path / "r.sqlite", "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **MPI_ENV},
    )
    try:
        deadline = time.monotonic() + 120
        running = False
        while time.monotonic() < deadline and p.poll() is None and not running:
            running = bool(_fsmeter_ranks())  # the trial's ranks run on the hosts
            time.sleep(0.2)
        assert running, "the trial never started"
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert set(namespaces()) - before_ns == set()
    assert _gluster_processes() - before == set()
    assert _mounts_under(os.path.realpath(scratch)) == []
    assert set(glob.glob("/tmp/fsmeter-nshosts-*")) - states == set()  # nor the harness's folder and mounts


def _fsmeter_ranks() -> list:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if argv[1:3] == [b"-m", b"fsmeter"] and b"--mpi-timeout-s" in argv:  # a rank, not mpirun
                out.append(pid)
    return out
