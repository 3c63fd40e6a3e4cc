"""filemark in a campaign on a loop target (root): every transactions phase is cold-cache, so the
runner unmounts and mounts the filesystem between phases while the engine session is alive. The
engine must not keep a directory of the filesystem open across phases, or the unmount fails (EBUSY)
and the trial is recorded failed."""

from __future__ import annotations

import textwrap

import pytest
from campaigns import fsm, ours
from fsmeter.store import open_store

pytestmark = pytest.mark.root

# Small and quick: 300 files, three transactions phases of 200 transactions or 0.3 s (the first
# discarded), 2 threads, files in subdirectories of two locations so that every kind of directory the
# engine opens exists. A count bound, not only a time: on a fast machine 0.3 s of transactions walks a
# 150-file share down to no file at all (create and delete are even odds), and the phase stops empty.
FILEMARK = (
    'mode = "filemark", files = 300, size_low = 512, size_high = 4096, bias_read = 75, '
    "bias_create = 50, subdirectories = 3, buffering = false, warmup_s = 0.0, duration_s = 0.3, "
    "transactions = 200, "
    "transaction_phases = 3, delete = true, interval_s = 0.05, threads = 2, "
    'locations = [{ path = "a", weight = 1 }, { path = "b", weight = 2 }]'
)


def test_filemark_campaign_on_a_loop_target_remounts_between_transaction_phases(tmp_path, scratch):
    f = tmp_path / "c.toml"
    f.write_text(
        'name = "filemark-loop"\n'
        + textwrap.dedent(f"""\
        [[filesystems]]
        name = "ext4"
        [[workloads]]
        name = "filemark-small"
        params = {{ {FILEMARK} }}
        [repetitions]
        policy = "fixed"
        n = 2
        [target]
        kind = "loop"
        size = "256M"
        """)
    )
    db = tmp_path / "r.sqlite"
    r = fsm("campaign", "run", f, "--db", db, "-q", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    store = open_store(db)
    trials = store.conn.execute("SELECT status, cause FROM trials ORDER BY id").fetchall()
    assert [t["status"] for t in trials] == ["ok", "ok"], [t["cause"] for t in trials]
    phases = store.conn.execute(
        "SELECT p.key, p.cache_method, p.report FROM phases p JOIN trials t ON t.id = p.trial_id ORDER BY p.id"
    ).fetchall()
    keys = [p["key"] for p in phases]
    assert keys == ["create", "transactions-1", "transactions-2", "transactions-3", "delete"] * 2
    # A remount before every transactions phase, and none elsewhere.
    assert [p["cache_method"] for p in phases[:5]] == [None, "remount", "remount", "remount", None]
    import json

    for p in phases:
        rep = json.loads(p["report"])
        if p["key"].startswith("transactions"):
            assert rep["counters"]["transactions_measured"] > 0  # the phase worked on the remounted files
    last = json.loads(phases[4]["report"])
    assert last["extra"]["files_live"] == 0  # delete found every file after three remounts
    assert store.conn.execute("SELECT count(*) FROM metrics WHERE headline = 1 AND value > 0").fetchone()[0] == 2
    assert ours(scratch) == ([], [])
