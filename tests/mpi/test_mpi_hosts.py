"""`mpirun fsmeter run` across several hosts: network-namespace hosts on the machine running the tests
(fsmeter.provision.nshosts), each with its own network, host name and /run/lock, Open MPI launching
through an rsh agent over the hosts' private network.

Root only; skipped with the reason without root, Open MPI or mpi4py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from mpi_env import MPI_ENV, MPIRUN, have_mpi4py
from procstat import wait_until_gone
from repo_paths import ROOT

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="namespace hosts need root"),
    pytest.mark.skipif(
        MPIRUN is None or not have_mpi4py(), reason="needs Open MPI (mpirun) and mpi4py: run `make build` as root"
    ),
    pytest.mark.skipif(
        shutil.which("ip") is None or shutil.which("unshare") is None,
        reason="needs iproute2 (ip) and util-linux (unshare)",
    ),
]

QUICK = ["-q", "--min-phase-s", "0"]
SMALL_TREE = ["--set", "levels=1", "--set", "dirs_per_level=3", "--set", "files_per_dir=20"]


@pytest.fixture(scope="module")
def hosts():
    """Two hosts, h1 and h2, two MPI slots each."""
    from fsmeter.provision.nshosts import NsHosts

    with NsHosts(2, slots=2) as h:
        yield h


def mpirun(hosts, n: int, *args, extra=(), env=None, timeout: int = 150) -> subprocess.CompletedProcess:
    cmd = hosts.mpirun(n, [sys.executable, "-m", "fsmeter", *map(str, args)], extra=extra)
    return subprocess.run(cmd, capture_output=True, text=True, env=env or {**os.environ, **MPI_ENV}, timeout=timeout)


def error_line(r: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("fsmeter: error:")]
    assert lines, r.stderr
    return lines[0]


def test_harness_hosts_have_their_own_name_network_and_lock_folder(hosts):
    (open(os.path.join(hosts.lock_dir("h2"), "mark"), "w")).close()
    try:
        r = hosts.run("h2", ["sh", "-c", "hostname; ip -o -4 addr show dev eth0; ls /run/lock; cat /etc/hosts"])
    finally:
        os.unlink(os.path.join(hosts.lock_dir("h2"), "mark"))
    assert r.returncode == 0, r.stderr
    name, addr, lock, *etc_hosts = r.stdout.splitlines()
    assert name == "h2" and "10.199.0.2/24" in addr
    assert lock == "mark"  # h2's /run/lock is its own folder
    assert "10.199.0.1 h1" in etc_hosts
    # the machine's own network and hosts file know nothing of the harness
    assert "h1" not in open("/etc/hosts").read().split()
    own = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    assert "10.199.0." not in own
    # h1 reaches h2 over the private network, by name
    r = hosts.run("h1", [sys.executable, "-c", "import socket; s = socket.create_connection(('h2', 9), 2)"])
    assert "ConnectionRefused" in r.stderr, r.stderr  # h2 answered (nothing listens on port 9)


def test_one_rank_per_host_tree_counts_add_up_and_layout_is_recorded(hosts, tmp_path):
    out = tmp_path / "out.json"
    r = mpirun(
        hosts,
        2,
        "run",
        "fdtree-quick",
        "--dir",
        tmp_path,
        *SMALL_TREE,
        "--json",
        out,
        *QUICK,
        extra=["--map-by", "node"],
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    files = (1 + 3) * 20
    assert doc["mpi"]["layout"] == {"h1": [0], "h2": [1]} and doc["mpi"]["hosts"] == ["h1", "h2"]
    create = doc["phases"]["create"]
    assert create["total"]["ops"] == 2 * files
    assert [(x["rank"], x["host"], x["ops"]) for x in create["mpi"]["per_rank"]] == [(0, "h1", files), (1, "h2", files)]
    assert "2 ranks on 2 host(s)" in r.stdout
    assert sorted(os.listdir(tmp_path)) == ["out.json"]  # every rank removed its files and folder


def test_several_ranks_per_host_file_per_rank_bytes_add_up(hosts, tmp_path):
    out = tmp_path / "out.json"
    r = mpirun(
        hosts,
        4,
        "run",
        "seq-write",
        "--dir",
        tmp_path,
        "--set",
        "file_size=4M",
        "--set",
        "total_bytes=4M",
        "--set",
        "duration_s=none",
        "--set",
        "warmup_s=0",
        "--json",
        out,
        *QUICK,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["mpi"]["layout"] == {"h1": [0, 1], "h2": [2, 3]}
    run = doc["phases"]["run"]
    per = run["mpi"]["per_rank"]
    assert [x["host"] for x in per] == ["h1", "h1", "h2", "h2"]
    assert [x["bytes"] for x in per] == [4 << 20] * 4
    assert run["total"]["bytes"] == 16 << 20


def test_shared_file_across_hosts_reorder_shift_node_is_one_host_on(hosts, tmp_path):
    """IOR's -C across hosts: with two ranks per host, `node` is a shift of two ranks, so each rank
    reads back what a rank of the other host wrote."""
    out = tmp_path / "out.json"
    region = 2 << 20
    r = mpirun(
        hosts,
        4,
        "run",
        "seq-write",
        "--dir",
        tmp_path,
        "--shared-file",
        "--reorder-shift",
        "node",
        "--keep-files",
        "--set",
        f"file_size={region}",
        "--set",
        f"total_bytes={region}",
        "--set",
        "duration_s=none",
        "--set",
        "warmup_s=0",
        "--set",
        "verify=crc32c",
        "--json",
        out,
        *QUICK,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["mpi"]["files"]["reorder_shift"] == 2
    assert (tmp_path / "fsmeter.access.0").stat().st_size == 4 * region
    assert doc["phases"]["run"]["total"]["bytes"] == 4 * region
    assert doc["phases"]["verify"]["counters"]["verify_mismatches"] == 0
    assert doc["phases"]["verify"]["counters"]["verify_blocks_checked"] == 4 * region // 65536


def test_each_host_takes_its_own_run_lock(hosts, tmp_path):
    """Default lock folder (/run/lock, private to each host): each host's first rank locks its own."""
    env = {k: v for k, v in os.environ.items() if k != "FSMETER_LOCK_DIR"}
    r = mpirun(hosts, 4, "run", "fdtree-quick", "--dir", tmp_path, *SMALL_TREE, *QUICK, env={**env, **MPI_ENV})
    assert r.returncode == 0, r.stderr
    assert os.listdir(hosts.lock_dir("h1")) == ["fsmeter-run.h1.lock"]
    assert os.listdir(hosts.lock_dir("h2")) == ["fsmeter-run.h2.lock"]
    assert not os.path.exists("/run/lock/fsmeter-run.h1.lock")


def hold_lock(hosts, host: str, lock_dir: str) -> subprocess.Popen:
    """A process on HOST that holds HOST's run lock (in LOCK_DIR) until killed."""
    code = textwrap.dedent("""\
        import os, sys, time
        from fsmeter import runlock
        with runlock.measuring(command="fsmeter campaign run other.toml"):
            print("held", flush=True)
            time.sleep(600)
        """)
    p = subprocess.Popen(
        hosts.enter(host, [sys.executable, "-c", code]),
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "FSMETER_LOCK_DIR": lock_dir},
    )
    assert p.stdout.readline().strip() == "held"
    return p


def test_shared_lock_folder_is_per_host_and_a_busy_host_aborts_the_job_soon(hosts, tmp_path):
    """A lock folder all hosts share (as on a network filesystem): ranks on different hosts do not
    queue behind each other. When another measurement holds one host's lock, that host's first
    rank gives up after the lock bound (10 s) and aborts every rank, naming the holder."""
    shared = tmp_path / "locks"
    shared.mkdir()
    env = {**os.environ, **MPI_ENV, "FSMETER_LOCK_DIR": str(shared)}
    d = tmp_path / "d"
    d.mkdir()
    r = mpirun(hosts, 2, "run", "fdtree-quick", "--dir", d, *SMALL_TREE, *QUICK, extra=["--map-by", "node"], env=env)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(shared)) == ["fsmeter-run.h1.lock", "fsmeter-run.h2.lock"]

    holder = hold_lock(hosts, "h2", str(shared))
    try:
        t = time.monotonic()
        r = mpirun(
            hosts,
            2,
            "run",
            "fdtree-quick",
            "--dir",
            d,
            *SMALL_TREE,
            *QUICK,
            extra=["--map-by", "node"],
            env=env,
            timeout=120,
        )
        took = time.monotonic() - t
    finally:
        holder.kill()
        holder.wait()
    assert r.returncode != 0
    line = error_line(r)
    assert "rank 1 of 2 on h2" in line and "fsmeter-run.h2.lock is still held by" in line, line
    assert "fsmeter campaign run other.toml" in line and "after 10 s" in line and "aborting all 2 ranks" in line
    assert "Traceback" not in r.stderr
    print(f"busy lock: mpirun ended after {took:.1f} s")


def test_failing_rank_on_the_second_host_aborts_every_rank(hosts, tmp_path):
    # rank 1 (on h2) cannot build its tree: a plain file sits where its tree's root goes
    (tmp_path / "rank-00001").mkdir()
    (tmp_path / "rank-00001" / "tree-0").write_text("in the way")
    r = mpirun(
        hosts, 2, "run", "fdtree-quick", "--dir", tmp_path, *SMALL_TREE, *QUICK, extra=["--map-by", "node"], timeout=120
    )
    assert r.returncode != 0
    line = error_line(r)
    assert "rank 1 of 2 on h2" in line and "aborting all 2 ranks" in line
    assert "Traceback" not in r.stderr


def _pids_on(hosts, host: str) -> list:
    ns = hosts.ns[host]
    r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


def test_hung_rank_on_the_second_host_is_given_up_after_the_timeout(hosts, tmp_path):
    """Rank 1's process on h2 is stopped (SIGSTOP) in the middle of a run: rank 0 waits at the
    gather after the phase for the timeout (or its own phase's length), then aborts every rank,
    the stopped one too."""
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
            tmp_path,
            "--set",
            "file_size=4M",
            "--set",
            "duration_s=3",
            "--set",
            "warmup_s=0",
            "--mpi-timeout-s",
            "2",
            "--json",
            out,
            *QUICK,
        ],
        extra=["--map-by", "node"],
    )
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **MPI_ENV})
    stopped = None
    try:
        deadline = time.monotonic() + 60
        while stopped is None and time.monotonic() < deadline and p.poll() is None:
            for pid in _pids_on(hosts, "h2"):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv = f.read().split(b"\0")
                except OSError:
                    continue
                if b"fsmeter" in argv and b"seq-write" in argv and (tmp_path / "rank-00001").is_dir():
                    os.kill(pid, signal.SIGSTOP)
                    stopped = pid
                    break
            time.sleep(0.05)
        assert stopped is not None, "rank 1 never started on h2"
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode != 0
    lines = [ln for ln in err.splitlines() if ln.startswith("fsmeter: error:")]
    assert lines, err
    assert "rank 0 of 2 on h1" in lines[0] and "for the other ranks" in lines[0] and "aborting all 2" in lines[0]
    # The abort reached the stopped rank (continued, then signalled) before mpirun exited, but on a busy
    # machine its exit may come after: wait for it (bounded); a rank that stays stopped fails here.
    assert wait_until_gone(stopped), f"the stopped rank (pid {stopped}) is still there"
    assert not out.exists()


def test_three_hosts_torn_down_after_use(tmp_path):
    from fsmeter.provision.nshosts import NsHosts, namespaces

    with NsHosts(3) as h:
        names = [*h.ns.values(), h.switch]
        state = h.state
        r = subprocess.run(
            h.mpirun(3, ["hostname"]), capture_output=True, text=True, env={**os.environ, **MPI_ENV}, timeout=60
        )
        assert r.returncode == 0, r.stderr
        assert sorted(r.stdout.split()) == ["h1", "h2", "h3"]
        assert all(n in namespaces() for n in names)
    assert not any(n in namespaces() for n in names)
    assert not state.exists()
    # torn down too when the block ends with an error
    with pytest.raises(RuntimeError):
        with NsHosts(2) as h:
            names = [*h.ns.values(), h.switch]
            raise RuntimeError("a failing test")
    assert not any(n in namespaces() for n in names)


def test_hosts_of_a_killed_test_run_are_removed_by_the_next_harness(tmp_path):
    """A harness whose process was SIGKILLed (no teardown ran) leaves namespaces and a state folder;
    the next harness removes them, and leaves another live harness alone."""
    from fsmeter.provision.nshosts import NsHosts, namespaces

    code = textwrap.dedent(f"""\
        import sys, time
        sys.path.insert(0, {str(ROOT / "python")!r})
        from fsmeter.provision.nshosts import NsHosts
        h = NsHosts(2).__enter__()
        print(h.tag, h.state, flush=True)
        time.sleep(600)
        """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        tag, state = p.stdout.readline().split()
    finally:
        p.kill()
        p.wait()
    left = [n for n in namespaces() if n.startswith(tag + "-")]
    assert len(left) == 3 and os.path.isdir(state)  # two hosts and the switch, never torn down
    with NsHosts(1) as live:
        assert not any(n.startswith(tag + "-") for n in namespaces()) and not os.path.exists(state)
        with NsHosts(1) as other:  # a second harness of a live process: both stay
            assert live.ns["h1"] in namespaces() and other.ns["h1"] in namespaces()
            assert live.addr["h1"] == other.addr["h1"]  # each on its own switch: the same addresses coexist
