"""The regime a phase ran in (fsmeter.regime): others' CPU and page-cache reads, stored per phase."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from fsmeter import regime
from fsmeter.regime import BUSY_SHARE, PhaseWatch, cache_read_share, other_cpu


def test_task_ticks_are_user_nice_system_and_irq_softirq_steal_are_charged_to_no_task():
    # cpu  user nice system idle iowait irq softirq steal guest guest_nice
    line = "cpu  100 20 30 5000 400 7 8 9 50 60\ncpu0 1 2 3 4 5 6 7 8 9 10\n"
    assert regime._cpu_ticks(line) == (100 + 20 + 30, 7 + 8 + 9, 9)


def test_steal_and_interrupts_are_recorded_but_do_not_make_a_quiet_phase_busy():
    # A quiet virtual machine writing through its virtual disk: 10 s on 2 CPUs, fsmeter's tree 9 s, the
    # loop worker 1 s, nobody else; the host took 3.4 s as steal and interrupts took 0.6 s (17% and 3%
    # of the machine, as measured during tar xjf and a direct-I/O write on one). Counted as others',
    # that read 20% busy; it is nobody's work we can name, so the share is 0 and the ticks are kept.
    tick = regime._TICK_S
    before = {"running": 0, "own": 0, "kernel": {9: 0}, "unattributed": 0, "steal": 0, "mono": 0.0}
    after = {
        "running": round(10 / tick),
        "own": round(9 / tick),
        "kernel": {9: round(1 / tick)},
        "unattributed": round(4 / tick),
        "steal": round(3.4 / tick),
        "mono": 10.0,
    }
    r = other_cpu(before, after, cpus=2)
    assert r["other_cpu_share"] == 0.0
    assert r["unattributed_cpu_s"] == pytest.approx(4.0) and r["steal_cpu_s"] == pytest.approx(3.4)
    # Everyone's CPU (the disk-bound rule's): 10 s of tasks and 0.6 s of interrupts, not the 3.4 s of
    # steal, over 10 s x 2 CPUs.
    assert r["cpu_busy_share"] == pytest.approx(0.53)
    # Another process's 3 s on top of the same: seen (15% of the machine), steal still not counted.
    after["running"] += round(3 / tick)
    assert other_cpu(before, after, cpus=2)["other_cpu_share"] == pytest.approx(0.15)


def test_other_cpu_share_hand_checked():
    # 4 s on 2 CPUs = 8 CPU-seconds of capacity. The machine was busy 500 ticks (5 s): fsmeter's
    # tree used 120 ticks, kernel threads 30, so others used 350 ticks = 3.5 s = 43.75% of it.
    tick = regime._TICK_S
    before = {"running": 1000, "own": 200, "kernel": 50, "mono": 10.0}
    after = {
        "running": 1000 + round(5 / tick),
        "own": 200 + round(1.2 / tick),
        "kernel": 50 + round(0.3 / tick),
        "mono": 14.0,
    }
    r = other_cpu(before, after, cpus=2)
    assert r["other_cpu_s"] == pytest.approx(3.5)
    assert r["other_cpu_share"] == pytest.approx(0.4375)
    assert r["own_cpu_s"] == pytest.approx(1.2) and r["kernel_cpu_s"] == pytest.approx(0.3)


def test_other_cpu_never_negative_nor_above_one():
    # Tick sampling can make our own ticks exceed the machine's busy delta by one: not negative.
    r = other_cpu(
        {"running": 100, "own": 0, "kernel": 0, "mono": 0.0},
        {"running": 101, "own": 3, "kernel": 0, "mono": 1.0},
        cpus=2,
    )
    assert r["other_cpu_share"] == 0.0
    r = other_cpu(
        {"running": 0, "own": 0, "kernel": 0, "mono": 0.0},
        {"running": 10_000, "own": 0, "kernel": 0, "mono": 1.0},
        cpus=1,
    )
    assert r["other_cpu_share"] == 1.0


def test_a_kernel_thread_that_exits_during_the_phase_does_not_make_others_busy():
    # Found on a quiet run: a kworker with 35 s of CPU behind it exited during a 9 s phase; summed over
    # all kernel threads, the kernel's delta came out at -35 s and others' CPU at 100% of the machine.
    tick = regime._TICK_S
    before = {"running": 10_000, "own": 0, "kernel": {2: 0, 41: round(35 / tick), 42: 100}, "mono": 0.0}
    after = {
        "running": 10_000 + round(11 / tick),
        "own": round(10.5 / tick),
        "kernel": {2: 0, 42: 100 + round(0.5 / tick), 77: round(0.01 / tick)},
        "mono": 9.0,
    }
    r = other_cpu(before, after, cpus=2)
    assert r["kernel_cpu_s"] == pytest.approx(0.51)  # 42's 0.5 s and the new thread 77's 0.01 s
    assert r["other_cpu_s"] == pytest.approx(0.0, abs=0.02)
    assert r["other_cpu_share"] < 0.01


def test_cache_read_share_hand_checked():
    mib = 1 << 20
    assert cache_read_share(100 * mib, 25 * mib) == pytest.approx(0.75)  # a quarter from the device
    assert cache_read_share(100 * mib, 0) == 1.0  # all from the page cache
    assert cache_read_share(100 * mib, 130 * mib) == 0.0  # readahead read more than asked: none cached
    assert cache_read_share(mib // 2, 0) is None  # too little read to say
    assert cache_read_share(100 * mib, None) is None  # no block device


def _burn(cpu_s: float) -> subprocess.Popen:
    """A child that uses `cpu_s` of CPU time (however long that takes) and then sleeps."""
    code = (
        f"import time\nt=time.process_time()\nwhile time.process_time()-t<{cpu_s!r}: pass\n"
        "print('done', flush=True)\ntime.sleep(60)\n"
    )
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_own_children_count_as_ours_not_others():
    """CPU that fsmeter's own child processes use during a phase is its own, never 'others'."""
    watch = PhaseWatch()
    watch.start()
    child = _burn(0.5)
    try:
        assert child.stdout.readline().strip() == "done"
        reg = watch.stop({})
    finally:
        child.kill()
        child.wait()
    # The child's 0.5 s of CPU shows up in fsmeter's own tree (ticks are sampled: a tick or two of slack).
    assert reg["own_cpu_s"] >= 0.5 - 3 * regime._TICK_S
    assert set(reg) >= {"other_cpu_share", "busy", "wall_s", "cpus", "cache_read_share"}
    assert reg["busy"] == (reg["other_cpu_share"] > BUSY_SHARE)


def test_a_detached_process_counts_as_others(tmp_path):
    """A process outside fsmeter's tree (here re-parented away by a double fork) counts as others' CPU.
    /proc/stat samples each CPU once a tick, so a second of busy work shows as 100 ticks give or take
    the other tasks sharing its CPU on a busy machine: the bound leaves room for that, and a process
    wrongly counted as fsmeter's would still show about none."""
    code = (
        "import os,sys,time\nif os.fork(): sys.exit(0)\nos.setsid()\n"
        "t=time.process_time()\nwhile time.process_time()-t<1.0: pass\n"
        "open(sys.argv[1]+'.tmp','w').write(str(os.getpid()))\nos.rename(sys.argv[1]+'.tmp',sys.argv[1])\n"
        "time.sleep(60)\n"
    )
    flag = tmp_path / "pid"
    before = regime.cpu_snapshot()
    subprocess.run([sys.executable, "-c", code, str(flag)], check=True)
    try:
        while not flag.exists():
            time.sleep(0.05)
        after = regime.cpu_snapshot()
    finally:
        for _ in range(200):
            if flag.exists():
                os.kill(int(flag.read_text()), 9)
                break
            time.sleep(0.05)
    r = other_cpu(before, after, cpus=os.sysconf("SC_NPROCESSORS_ONLN"))
    assert r["other_cpu_s"] >= 0.6


@pytest.mark.root
def test_reads_from_the_device_then_from_the_cache(loop_disk, tmp_path):
    """A file read right after a drop of the caches comes from the loop device (share about 0); read
    again at once, it comes from the page cache (share about 1)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mkfs.ext4", "-q", "-F", loop_disk], check=True)
    subprocess.run(["mount", loop_disk, str(mnt)], check=True)
    try:
        assert regime.device_of(mnt) == loop_disk
        data = mnt / "f"
        with open(data, "wb") as fh:
            fh.write(os.urandom(1 << 20) * 16)
        os.sync()
        subprocess.run(["umount", str(mnt)], check=True)  # nothing of the file stays cached
        subprocess.run(["mount", loop_disk, str(mnt)], check=True)

        def read_all() -> dict:
            watch = PhaseWatch(loop_disk)
            watch.start()
            n = 0
            with open(data, "rb") as fh:
                while True:
                    chunk = fh.read(1 << 20)
                    if not chunk:
                        break
                    n += len(chunk)
            # What the engine's report says of a phase that read n bytes.
            return watch.stop({"ops": {"read": {"count": n >> 20, "bytes": n}, "fsync": {"count": 1, "bytes": 0}}})

        cold, warm = read_all(), read_all()
        assert cold["read_bytes"] == 16 << 20 and cold["device_read_bytes"] >= 16 << 20
        assert cold["process_read_bytes"] >= 16 << 20
        assert cold["cache_read_share"] == 0.0
        assert warm["device_read_bytes"] < 1 << 20 and warm["cache_read_share"] > 0.9
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_reads_outside_the_target_are_not_counted_as_cached():
    """A phase whose only reads are of files elsewhere (a warm source file a tool copies onto the
    target) has no cache share: the engine reported no read operations."""
    watch = PhaseWatch(None)
    watch.start()
    with open(sys.executable, "rb") as fh:
        fh.read()
    reg = watch.stop({"ops": {"cp": {"count": 1, "bytes": 5 << 20}}})
    assert reg["read_bytes"] == 0 and reg["process_read_bytes"] > 0
    assert reg["cache_read_share"] is None


def test_cache_write_share_hand_checked():
    from fsmeter.regime import cache_write_share

    mib = 1 << 20
    assert cache_write_share(100 * mib, 75 * mib) == pytest.approx(0.25)  # a quarter still dirty at the end
    assert cache_write_share(100 * mib, 0) == 1.0  # nothing reached the device
    assert cache_write_share(100 * mib, 180 * mib) == 0.0  # journal and metadata wrote more: none held back
    assert cache_write_share(mib // 2, 0) is None  # too little written to say
    assert cache_write_share(100 * mib, None) is None  # no block device


def test_an_older_store_gets_the_write_share_from_its_phase_reports(tmp_path):
    """Migration 7 adds phases.cache_write_share and fills it from each report's regime byte counts."""
    import json
    import sqlite3

    from fsmeter.store import open_store

    db = tmp_path / "old.sqlite"
    store = open_store(db)
    cid = store.create_campaign("c", "", [("w", {"filesystem": "ext4"})])
    cell = store.cells(cid)[0]["id"]
    mib = 1 << 20
    phases = [
        {
            "key": "wrote",
            "report": {"elapsed_s": 1.0, "regime": {"write_bytes": 256 * mib, "device_write_bytes": 192 * mib}},
        },
        {"key": "little", "report": {"elapsed_s": 1.0, "regime": {"write_bytes": 4096, "device_write_bytes": 0}}},
        {
            "key": "nodev",
            "report": {"elapsed_s": 1.0, "regime": {"write_bytes": 256 * mib, "device_write_bytes": None}},
        },
        {"key": "none", "report": {"elapsed_s": 1.0}},
    ]
    store.record_trial(cell, 1, status="ok", started="2026-01-01T00:00:00+00:00", phases=phases)
    store.close()
    # Back to version 6: the column dropped, as a store written before it.
    conn = sqlite3.connect(db)
    conn.executescript("ALTER TABLE phases DROP COLUMN cache_write_share; PRAGMA user_version = 6;")
    conn.close()
    store = open_store(db)
    rows = dict(store.conn.execute("SELECT key, cache_write_share FROM phases").fetchall())
    assert rows == {"wrote": 0.25, "little": None, "nodev": None, "none": None}
    assert json.loads(store.conn.execute("SELECT report FROM phases WHERE key = 'wrote'").fetchone()[0])
    store.close()


def test_store_keeps_the_regime_columns(tmp_path):
    from fsmeter.store import open_store

    store = open_store(tmp_path / "r.sqlite")
    cid = store.create_campaign("c", "", [("w", {"filesystem": "ext4"})])
    cell = store.cells(cid)[0]["id"]
    reg = {"other_cpu_share": 0.25, "busy": True, "cache_read_share": 0.5, "cache_write_share": 0.125}
    rep = {"elapsed_s": 1.0, "regime": reg}
    store.record_trial(
        cell,
        1,
        status="ok",
        started="2026-01-01T00:00:00+00:00",
        phases=[{"key": "run", "report": rep}, {"key": "old", "report": {"elapsed_s": 1.0}}],
    )
    rows = store.conn.execute(
        "SELECT key, other_cpu_share, cache_read_share, cache_write_share FROM phases ORDER BY seq"
    ).fetchall()
    assert [tuple(r) for r in rows] == [("run", 0.25, 0.5, 0.125), ("old", None, None, None)]
    store.close()


def test_report_flags_busy_phases_and_says_how_much_the_cache_served(tmp_path):
    import random

    from fsmeter.report.data import build_view, verdicts
    from fsmeter.store import open_store
    from report_synth import add_trials

    db = tmp_path / "s.sqlite"
    rng = random.Random(3)
    store = open_store(db)
    cid = store.create_campaign("q", "name = 'q'\n", [("seq-read", {"filesystem": fs}) for fs in ("ext4", "xfs")])
    for c in store.cells(cid):
        add_trials(store, c["id"], [500.0 * rng.gauss(1, 0.02) for _ in range(3)], "access", "ext4", {}, rng)
        store.set_cell_status(c["id"], "done", stop_reason="fixed-n")
    quiet = build_view(db, str(cid))
    assert not any("busy machine" in n for n in verdicts(quiet)[0]["notes"])  # nothing recorded: no flag
    with store.conn:  # xfs's three run phases ran while others used 40% of the CPUs; 30% of reads were cached
        store.conn.execute(
            "UPDATE phases SET other_cpu_share = CASE WHEN trial_id IN (SELECT t.id FROM trials t "
            "JOIN cells c ON c.id = t.cell_id WHERE c.factors LIKE '%xfs%') THEN 0.4 ELSE 0.02 END, "
            "cache_read_share = 0.3 WHERE key = 'run'"
        )
    store.close()
    w = build_view(db, str(cid)).workloads[0]
    assert (w.phases_busy, w.phases_measured, w.max_other_cpu_share) == (3, 6, 0.4)
    notes = " ".join(verdicts(build_view(db, str(cid)))[0]["notes"])
    assert "busy machine: 3 of 6 measured phases" in notes and "up to 40%" in notes
    assert "page cache: median 30%" in notes


def test_campaign_and_run_json_carry_each_phase_regime(tmp_path):
    """A campaign stores every phase's regime (a dir target: busyness, no block device so no cache
    share); `fsmeter run --json` has it in each phase report."""
    import json
    import textwrap

    fast = 'backend = "null", file_size = "4M", warmup_s = 0.05, duration_s = 0.2, interval_s = 0.05'
    camp = tmp_path / "c.toml"
    camp.write_text(
        'name = "r"\n'
        + textwrap.dedent(f"""\
        [[workloads]]
        name = "seq-read"
        params = {{ {fast} }}
        [repetitions]
        policy = "fixed"
        n = 1
        [target]
        kind = "dir"
        path = "{tmp_path}"
        """)
    )
    env = {**os.environ, "COLUMNS": "200"}
    db = tmp_path / "r.sqlite"
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", "campaign", "run", str(camp), "--db", str(db), "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    from fsmeter.store import open_store

    with open_store(db, create=False) as store:
        rows = store.conn.execute("SELECT key, other_cpu_share, cache_read_share, report FROM phases").fetchall()
    run = next(r for r in rows if r["key"] == "run")
    assert 0.0 <= run["other_cpu_share"] <= 1.0 and run["cache_read_share"] is None
    assert json.loads(run["report"])["regime"]["other_cpu_share"] == run["other_cpu_share"]
    out = tmp_path / "o.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsmeter",
            "run",
            "seq-read",
            "--dir",
            str(tmp_path),
            "--json",
            str(out),
            *sum((["--set", kv] for kv in fast.replace(" ", "").replace('"', "").split(",")), []),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    reg = doc["phases"]["run"]["regime"]
    assert {"other_cpu_share", "busy", "cache_read_share", "read_bytes", "device_read_bytes"} <= set(reg)
    assert f"others used {reg['other_cpu_share']:.0%} of the" in r.stdout


def test_a_disk_models_idle_pollers_are_taken_out_of_the_machines_busy_time():
    """Pollers spinning 1.5 CPU-s over a 1 s phase of 2 CPUs are 75% of the machine: moved from user to
    idle, and recorded; never more than the user time there was."""
    from fsmeter.regime import discount_idle_poll

    report = {"cpu": {"sys_user_pct": 80.0, "sys_system_pct": 10.0, "sys_idle_pct": 5.0, "sys_iowait_pct": 5.0}}
    discount_idle_poll(report, 1.5, 1.0, 2)
    cpu = report["cpu"]
    assert cpu["sys_user_pct"] == 5.0 and cpu["sys_idle_pct"] == 80.0 and cpu["idle_poll_pct"] == 75.0
    assert cpu["sys_system_pct"] == 10.0
    capped = {"cpu": {"sys_user_pct": 10.0, "sys_idle_pct": 0.0}}
    discount_idle_poll(capped, 1.5, 1.0, 2)
    assert capped["cpu"]["sys_user_pct"] == 0.0 and capped["cpu"]["idle_poll_pct"] == 10.0
    untouched = {"cpu": {"sys_user_pct": 10.0, "sys_idle_pct": 0.0}}
    discount_idle_poll(untouched, 0.0, 1.0, 2)  # no pollers
    discount_idle_poll(untouched, 1.0, None, 2)  # no wall time
    assert untouched == {"cpu": {"sys_user_pct": 10.0, "sys_idle_pct": 0.0}}
