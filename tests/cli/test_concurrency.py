"""Two fsmeter processes on one machine: the run lock (the second waits, or refuses with --no-wait),
campaign ownership (resume never takes a campaign a live process runs) and host-factor reverts of
the same sysfs file. Processes are coordinated by lines on pipes, never by sleeping."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from campaigns import FAST, dir_campaign, fsm
from fsmeter.store import open_store
from repo_paths import ROOT

TINY = ["--set", "backend=null", "--set", "file_size=1M", "--set", "warmup_s=0", "--set", "duration_s=0.05"]


class Child:
    """A Python child running ``code``; it and the test talk in lines (``expect`` / ``send``)."""

    def __init__(self, code: str, *args: str):
        env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
        self.p = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    def expect(self, word: str) -> str:
        line = self.p.stdout.readline()
        assert line.startswith(word), f"child said {line!r}; stderr: {self.p.stderr.read() if not line else ''}"
        return line

    def send(self, line: str = "go") -> None:
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def close(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.p.communicate(timeout=60)


#: Holds the run lock as a measuring command would, until told to stop.
HOLDER = """
    import sys
    from fsmeter.runlock import measuring
    with measuring("fsmeter campaign run holder.toml"):
        print("holding", flush=True)
        sys.stdin.readline()
    print("released", flush=True)
"""


@pytest.fixture
def holder():
    c = Child(HOLDER)
    try:
        c.expect("holding")
        yield c
    finally:
        c.close()


# -- the run lock -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [
        ["run", "seq-read", "--dir", "{tmp}", *TINY],
        ["campaign", "run", "{campaign}"],
        ["compare", "--dir", "{tmp}", "--workloads", "seq-read", "--trials", "1", "--db", "{tmp}/c.sqlite"],
        ["campaign", "resume", "--db", "{tmp}/none.sqlite"],
    ],
)
def test_no_wait_refuses_naming_the_holder(tmp_path, holder, command):
    campaign = tmp_path / "c.toml"
    campaign.write_text(
        dir_campaign(
            tmp_path,
            f"""\
        [[workloads]]
        name = "seq-read"
        params = {{ {FAST} }}
        """,
        )
    )
    args = [a.format(tmp=tmp_path, campaign=campaign) for a in command]
    r = fsm(*args, "--no-wait")
    assert r.returncode == 1, r.stdout + r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("fsmeter: error: another measuring fsmeter is running on this machine")
    assert f"pid {holder.p.pid}" in line and "fsmeter campaign run holder.toml" in line
    assert not (tmp_path / "c.sqlite").exists()  # nothing was started


def test_the_second_waits_for_the_first_then_runs(tmp_path, holder):
    out = tmp_path / "r.json"
    p = subprocess.Popen(
        [sys.executable, "-m", "fsmeter", "run", "seq-read", "--dir", str(tmp_path), *TINY, "-q", "--json", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = p.stderr.readline()  # the waiting message: it is waiting now
        assert first.startswith("fsmeter: waiting for the run lock") and f"pid {holder.p.pid}" in first
        assert p.poll() is None and not out.exists()
        holder.send()
        holder.expect("released")
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert json.loads(out.read_text())["metrics"]["run.ops_per_s"]["value"] > 0
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


def test_a_killed_holder_releases_the_lock(tmp_path, holder):
    os.kill(holder.p.pid, signal.SIGKILL)
    holder.p.wait(timeout=60)
    r = fsm("run", "seq-read", "--dir", tmp_path, *TINY, "-q", "--no-wait")
    assert r.returncode == 0, r.stderr


def test_the_lock_nests_within_one_process():
    from fsmeter.runlock import holder as who
    from fsmeter.runlock import measuring

    with measuring("outer") as path:
        with measuring("inner", wait=False):
            pass
        assert who(path)["command"] == "outer" and who(path)["pid"] == os.getpid()


# -- campaign owners ----------------------------------------------------------------------------------
#: Records itself as the owner of a campaign (as run_campaign does), then waits.
OWNER = """
    import sys
    from fsmeter.runner import claim_campaign
    from fsmeter.store import open_store
    with open_store(sys.argv[1]) as store:
        claim_campaign(store, int(sys.argv[2]))
    print("owning", flush=True)
    sys.stdin.readline()
"""


def _campaigns(tmp_path, n: int):
    f = tmp_path / "c.toml"
    f.write_text(
        dir_campaign(
            tmp_path,
            f"""\
        [[workloads]]
        name = "seq-read"
        params = {{ {FAST} }}
        [repetitions]
        policy = "fixed"
        n = 1
        """,
        )
    )
    db = tmp_path / "r.sqlite"
    from fsmeter.campaign import load_campaign
    from fsmeter.runner import start_campaign

    campaign, text = load_campaign(f)
    with open_store(db) as store:
        ids = [start_campaign(f, store, None, campaign=campaign, text=text) for _ in range(n)]
    return db, ids


def test_resume_never_takes_a_campaign_a_live_process_runs(tmp_path):
    db, (first, second) = _campaigns(tmp_path, 2)
    owner = Child(OWNER, str(db), str(second))
    try:
        owner.expect("owning")
        # `resume ID` refuses it, naming the owner.
        r = fsm("campaign", "resume", second, "--db", db)
        assert r.returncode == 1 and f"is being run by pid {owner.p.pid}" in r.stderr, r.stderr
        # `resume` without an id passes over it (the newest unfinished) and takes the other one.
        r = fsm("campaign", "resume", "--db", db, "-q")
        assert r.returncode == 0, r.stderr
        assert f"resuming campaign {first}" in r.stdout
        with open_store(db) as store:
            assert store.campaign(first)["status"] == "done" and store.campaign_owner(first) is None
            assert store.campaign(second)["status"] == "running"
        # Nothing else is left: it says who runs the remaining one.
        r = fsm("campaign", "resume", "--db", db)
        assert r.returncode == 2 and f"campaign {second} is still being run by pid {owner.p.pid}" in r.stderr
        r = fsm("campaign", "list", "--db", db)
        assert f"(pid {owner.p.pid})" in r.stdout
    finally:
        owner.close()
    # The owner is gone (killed without clearing its record): its campaign can be resumed now.
    r = fsm("campaign", "resume", "--db", db, "-q")
    assert r.returncode == 0, r.stderr
    assert f"resuming campaign {second}" in r.stdout
    with open_store(db) as store:
        assert store.campaign(second)["status"] == "done" and store.campaign_owner(second) is None


def _unfinish(store, cid: int) -> None:
    with store.conn:
        store.conn.execute("UPDATE campaigns SET status = 'running' WHERE id = ?", (cid,))
        store.conn.execute("UPDATE cells SET status = 'pending' WHERE campaign_id = ?", (cid,))


def test_a_recycled_pid_or_another_boot_is_not_the_owner(tmp_path):
    from fsmeter import runlock

    db, (cid,) = _campaigns(tmp_path, 1)
    me = runlock.identity("fsmeter campaign run c.toml")
    assert runlock.alive(me) is True
    # The recorded pid is alive (ours), but it started at another time: another process now.
    recycled = {**me, "start": str(int(me["start"]) + 1)}
    rebooted = {**me, "boot_id": "00000000-0000-0000-0000-000000000000"}
    elsewhere = {**me, "host": "another-host"}
    assert runlock.alive(recycled) is False and runlock.alive(rebooted) is False
    assert runlock.alive(elsewhere) is None
    for ghost in (recycled, rebooted):
        with open_store(db) as store:
            _unfinish(store, cid)
            assert store.claim_campaign(cid, ghost, store.campaign_owner(cid))
        r = fsm("campaign", "resume", "--db", db, "-q")
        assert r.returncode == 0 and f"resuming campaign {cid}" in r.stdout, r.stderr
        with open_store(db) as store:
            assert store.campaign_owner(cid) is None
    # On another host fsmeter cannot tell: it refuses unless told to take over.
    with open_store(db) as store:
        _unfinish(store, cid)
        assert store.claim_campaign(cid, elsewhere, None)
    r = fsm("campaign", "resume", str(cid), "--db", db)
    assert r.returncode == 1 and "--take-over" in r.stderr and "another-host" in r.stderr
    r = fsm("campaign", "resume", str(cid), "--db", db, "--take-over", "-q")
    assert r.returncode == 0, r.stderr


# -- host factors on the same sysfs file --------------------------------------------------------------
#: Sets a "sysfs" file (a plain file stands in) to a value, then reverts when told.
SETTER = """
    import sys
    from fsmeter.provision.host.base import SysfsSetting
    from fsmeter.provision.state import StateFile
    s = SysfsSetting(sys.argv[1], sys.argv[3], StateFile(sys.argv[2]), "test setting")
    s.apply()
    print("applied", flush=True)
    sys.stdin.readline()
    s.revert()
    print("reverted", flush=True)
"""


@pytest.mark.parametrize("first_out", ["first", "second"])
def test_two_processes_changing_one_setting_restore_the_original(tmp_path, first_out):
    knob, scratch = tmp_path / "read_ahead_kb", tmp_path / "scratch"
    knob.write_text("128\n")
    a = Child(SETTER, str(knob), str(scratch), "512")
    b = None
    try:
        a.expect("applied")
        assert knob.read_text() == "512"
        b = Child(SETTER, str(knob), str(scratch), "1024")
        b.expect("applied")
        assert knob.read_text() == "1024"
        if first_out == "first":
            a.send()
            a.expect("reverted")
            assert knob.read_text() == "1024"  # b still runs with its setting
            b.send()
            b.expect("reverted")
        else:
            b.send()
            b.expect("reverted")
            assert knob.read_text() == "512"  # a still runs with its setting
            a.send()
            a.expect("reverted")
        assert knob.read_text().strip() == "128"
    finally:
        a.close()
        if b is not None:
            b.close()
    from fsmeter.provision.state import StateFile

    assert StateFile(str(scratch)).entries() == []


def test_a_killed_process_does_not_make_the_other_lose_the_original(tmp_path):
    from fsmeter.provision.state import StateFile
    from fsmeter.provision.undo import cleanup_leftovers

    knob, scratch = tmp_path / "scheduler", tmp_path / "scratch"
    knob.write_text("[mq-deadline] none\n")
    a = Child(SETTER, str(knob), str(scratch), "none")
    b = None
    try:
        a.expect("applied")
        b = Child(SETTER, str(knob), str(scratch), "none")  # already in effect: recorded all the same
        b.expect("applied")
        os.kill(a.p.pid, signal.SIGKILL)
        a.p.wait(timeout=60)
        # The next start cleans the dead one's record up: b still relies on "none", so it stays.
        cleanup_leftovers(StateFile(str(scratch)))
        assert knob.read_text() == "none"
        b.send()
        b.expect("reverted")
        assert knob.read_text() == "mq-deadline"  # what was there before either of them
    finally:
        a.close()
        if b is not None:
            b.close()


def test_a_setting_changed_by_someone_else_is_left_alone(tmp_path):
    knob, scratch = tmp_path / "read_ahead_kb", tmp_path / "scratch"
    knob.write_text("128")
    a = Child(SETTER, str(knob), str(scratch), "512")
    try:
        a.expect("applied")
        knob.write_text("4096")  # an administrator, not fsmeter
        a.send()
        a.expect("reverted")
        assert knob.read_text() == "4096"
    finally:
        a.close()
