"""Campaign files, the matrix, and campaigns on a directory target (no root needed: null backend)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from campaigns import FAST, dir_campaign, fsm, wait_for_trials
from fsmeter.campaign import dump_toml, parse_campaign, plan
from fsmeter.errors import UserError
from fsmeter.store import TIDY_COLUMNS, open_store, tidy
from procstat import wait_for_worker_cpu


# -- the matrix ---------------------------------------------------------------------------
def test_matrix_is_product_minus_exclusions(tmp_path):
    c = parse_campaign(
        dir_campaign(
            tmp_path,
            f"""\
        exclusions = [{{ workload = "seq-write", threads = 4 }}, {{ threads = 2, seed = 7 }}]
        [factors]
        threads = [1, 2, 4]
        seed = [1, 7]
        [[workloads]]
        name = "seq-read"
        params = {{ {FAST} }}
        [[workloads]]
        name = "seq-write"
        params = {{ {FAST} }}
        """,
        )
    )
    cells = plan(c)
    # 3 x 2 x 2 = 12; minus seq-write x threads=4 (2 cells) and threads=2 x seed=7 (2 cells)
    assert len(cells) == 8
    combos = {(x.workload, x.factors["threads"], x.factors["seed"]) for x in cells}
    assert ("seq-write", 4, 1) not in combos and ("seq-read", 2, 7) not in combos
    assert ("seq-read", 4, 7) in combos
    assert all(x.overrides["threads"] == x.factors["threads"] for x in cells)
    assert [x.index for x in cells] == list(range(8))


def test_factor_applies_only_to_workloads_that_take_it(tmp_path):
    """A workload parameter factor is a dimension only for the families that have it."""
    c = parse_campaign(
        dir_campaign(
            tmp_path,
            """\
        [factors]
        queue_depth = [1, 4]
        [[workloads]]
        name = "seq-read"
        params = { backend = "io_uring" }
        [[workloads]]
        name = "fdtree-quick"
        """,
        )
    )
    cells = plan(c)
    assert [(x.workload, x.factors.get("queue_depth")) for x in cells] == [
        ("seq-read", 1),
        ("seq-read", 4),
        ("fdtree-quick", None),
    ]


def test_factor_no_workload_takes_is_an_error(tmp_path):
    c = parse_campaign(
        dir_campaign(
            tmp_path,
            """\
        [factors]
        levels = [2, 3]
        [[workloads]]
        name = "seq-read"
        """,
        )
    )
    with pytest.raises(UserError, match=r"factors\.levels: no workload in this campaign takes it: .*queue_depth"):
        plan(c)


@pytest.mark.parametrize(
    "body,pattern",
    [
        # unknown top-level field: named, with its line and the allowed fields
        ('nmae = "x"\n[[workloads]]\nname = "seq-read"\n', r":1: nmae: unknown field; allowed are name, description"),
        # unknown field inside a section, with its line
        (
            'name = "x"\n[repetitions]\npolicy = "fixed"\ncount = 3\n[[workloads]]\nname = "seq-read"\n',
            r":4: repetitions\.count: unknown field; allowed are policy, n, ",
        ),
        # a literal: the allowed values
        (
            'name = "x"\n[repetitions]\npolicy = "sometimes"\n[[workloads]]\nname = "seq-read"\n',
            r":3: repetitions\.policy: Input should be 'adaptive' or 'fixed'",
        ),
        (
            'name = "x"\n[[filesystems]]\nname = "zfs"\n[[workloads]]\nname = "seq-read"\n',
            r"filesystems\[0\]\.name: unknown filesystem 'zfs': use one of ext2, ext3, ext4, xfs, btrfs",
        ),
        (
            'name = "x"\nmkfs = "sometimes"\n[[workloads]]\nname = "seq-read"\n',
            r":2: mkfs: Input should be 'per-cell' or 'per-trial'",
        ),
        (
            'name = "x"\n[[workloads]]\nname = "seq-read"\n[repetitions]\nlevel = 0.5\n',
            r"repetitions\.level: level: use 0\.90, 0\.95 or 0\.99",
        ),
        ('name = "x"\nworkloads = []\n', r"workloads: List should have at least 1 item"),
        ('name = "x"\n[[workloads\nname = "seq-read"\n', r"TOML syntax error: .*line 2"),
    ],
)
def test_bad_campaign_file_errors(body, pattern):
    with pytest.raises(UserError, match=pattern) as info:
        parse_campaign(body, "c.toml")
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    "body,pattern",
    [
        (
            '[[workloads]]\nname = "no-such-workload"\n',
            r"workloads\[0\]\.name: unknown workload 'no-such-workload': use one of",
        ),
        (
            '[factors]\nthreads = [1, 0]\n[[workloads]]\nname = "seq-read"\n',
            r"workload seq-read with factors\.threads = 0: parameter threads: Input should be greater than or equal to 1",
        ),
        (
            '[factors]\nbackend = ["psync", "spdk"]\n[[workloads]]\nname = "seq-read"\n',
            r"factors\.backend = 'spdk': parameter backend: Input should be 'psync', 'io_uring', 'libaio', 'null', 'mmap' or 'libpmem'",
        ),
        (
            '[factors]\nscheduler = ["none"]\n[[workloads]]\nname = "seq-read"\n',
            r"factors\.scheduler: level 'none': a dir target has no block device",
        ),
        (
            'exclusions = [{ threads = 3 }]\n[factors]\nthreads = [1, 2]\n[[workloads]]\nname = "seq-read"\n',
            r"exclusions\[0\]\.threads = 3: not a level of threads: levels are 1, 2",
        ),
        (
            '[[workloads]]\nname = "seq-read"\nparams = { queue_depht = 4 }\n',
            r"unknown parameter queue_depht for seq-read: allowed are",
        ),
    ],
)
def test_bad_matrix_errors(tmp_path, body, pattern):
    with pytest.raises(UserError, match=pattern):
        plan(parse_campaign(dir_campaign(tmp_path, body)))


def test_cli_bad_file_is_one_line_exit_2(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('name = "x"\n[[workloads]]\nname = "seq-read"\nthreads = 2\n')
    r = fsm("campaign", "run", f, "--db", tmp_path / "r.sqlite")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr
    assert "workloads[0].threads: unknown field; allowed are name, label, params" in r.stderr


def test_dump_toml_round_trip(tmp_path):
    data = {
        "name": "x",
        "mkfs": "per-trial",
        "target": {"kind": "dir", "path": str(tmp_path)},
        "factors": {"threads": [1, 2], "backend": ["null"]},
        "exclusions": [{"threads": 2}],
        "workloads": [{"name": "seq-read", "params": {"duration_s": 0.5, "file_size": "4M"}}],
        "repetitions": {"policy": "fixed", "n": 2},
    }
    c = parse_campaign(dump_toml(data))
    assert c.model_dump(include=set(data), exclude_defaults=True)["factors"] == data["factors"]
    assert c.mkfs == "per-trial" and c.exclusions == [{"threads": 2}] and c.repetitions.n == 2


# -- running on a directory ---------------------------------------------------------------
def test_fixed_n_campaign_on_dir_stores_everything(tmp_path, scratch):
    work = tmp_path / "work"
    work.mkdir()
    f = tmp_path / "c.toml"
    f.write_text(
        dir_campaign(
            work,
            f"""\
        [factors]
        threads = [1, 2]
        [[workloads]]
        name = "seq-read"
        params = {{ {FAST} }}
        [repetitions]
        policy = "fixed"
        n = 2
        discard_first = 1
        """,
        )
    )
    db = tmp_path / "r.sqlite"
    r = fsm("campaign", "run", f, "--db", db, "-q")
    assert r.returncode == 0, r.stderr
    assert os.listdir(work) == []  # the campaign's files are removed
    store = open_store(db)
    q = lambda s: [tuple(r) for r in store.conn.execute(s).fetchall()]  # noqa: E731
    assert q("SELECT status FROM campaigns") == [("done",)]
    assert q("SELECT status, stop_reason FROM cells") == [("done", "fixed-n")] * 2
    assert q("SELECT number, status, discarded FROM trials ORDER BY id") == [(1, "ok", 1), (2, "ok", 0)] * 2
    assert q("SELECT count(*) FROM intervals")[0][0] >= 4 * 2  # 0.2 s / 0.05 s, four trials
    assert q("SELECT count(*) FROM histograms WHERE op = 'read'")[0][0] == 4
    env = q("SELECT fs, cache_method, seed, proc_mounts_line, cpus_used FROM environment")
    assert len(env) == 4 and all(e[2] == 42 and e[3] and e[1] in ("fadvise", "drop_caches") for e in env)
    assert sorted(e[4] for e in env) == [1, 1, 2, 2]
    df = tidy(db)
    assert list(df.columns) == TIDY_COLUMNS + ["filesystem", "threads"]
    assert set(df.metric) >= {"ops_per_s", "MiB_per_s"} and (df.value > 0).all()
    assert sorted(df[df.metric == "ops_per_s"].threads) == [1, 1, 2, 2]
    # list and show name it
    out = fsm("campaign", "list", "--db", db).stdout
    assert " t " in out and "2/2" in out
    out = fsm("campaign", "show", "1", "--db", db).stdout
    assert "fixed-n" in out and "threads=2" in out


def test_adaptive_policy_records_its_stop_reason(tmp_path, scratch):
    work = tmp_path / "work"
    work.mkdir()
    f = tmp_path / "c.toml"
    # Two campaigns: a target anything meets, and one nothing meets (null-backend rates vary).
    db = tmp_path / "r.sqlite"
    for name, target, expect, n in (("easy", 1000, "target-met", 3), ("hard", 1e-9, "trial-cap", 4)):
        f.write_text(
            dir_campaign(
                work,
                f"""\
            [[workloads]]
            name = "seq-read"
            params = {{ {FAST} }}
            [repetitions]
            target_pct = {target}
            min_trials = 2
            max_trials = 4
            """,
                name=name,
            )
        )
        r = fsm("campaign", "run", f, "--db", db, "-q")
        assert r.returncode == 0, r.stderr
        store = open_store(db)
        cid = store.campaign(name)["id"]
        cell = store.cells(cid)[0]
        trials = store.trials(cell["id"])
        assert cell["stop_reason"] == expect and len(trials) == n
        assert [t["stop_reason"] for t in trials] == [None] * (n - 1) + [expect]
        assert [t["discarded"] for t in trials] == [1] + [0] * (n - 1)  # adaptive discards the first
        assert trials[-1]["half_width_pct"] > 0


@pytest.mark.parametrize("signame,status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_stop_signal_then_resume_completes_the_matrix(tmp_path, scratch, signame, status):
    work = tmp_path / "work"
    work.mkdir()
    f = tmp_path / "c.toml"
    f.write_text(
        dir_campaign(
            work,
            f"""\
        [factors]
        threads = [1, 2]
        [[workloads]]
        name = "seq-read"
        params = {{ {FAST.replace("duration_s = 0.2", "duration_s = 1.0")} }}
        [repetitions]
        policy = "fixed"
        n = 3
        """,
        )
    )
    db = tmp_path / "r.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fsmeter", "campaign", "run", str(f), "--db", str(db), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_trials(db, 1, proc)
        # Inside trial 2: its engine workers (trial 1's have exited) have used CPU, however slow the machine.
        wait_for_worker_cpu(proc, 0.05, poll_s=0.01)
        proc.send_signal(getattr(signal, signame))
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, err
    assert "campaign resume 1" in out
    store = open_store(db)
    assert store.campaign(1)["status"] == "interrupted"
    before = store.conn.execute("SELECT id, number, status, started FROM trials ORDER BY id").fetchall()
    assert [tuple(r)[2] for r in before][:1] == ["ok"]
    assert before[-1]["status"] == "interrupted"
    assert store.cells(1)[0]["status"] == "interrupted"
    store.close()

    r = fsm("campaign", "resume", "--db", db, "-q")
    assert r.returncode == 0, r.stderr
    store = open_store(db)
    assert store.campaign(1)["status"] == "done"
    after = store.conn.execute("SELECT id, number, status, started FROM trials ORDER BY id").fetchall()
    assert [tuple(r) for r in after[: len(before)]] == [tuple(r) for r in before]  # finished trials intact
    for cell in store.cells(1):
        assert cell["status"] == "done"
        assert len([t for t in store.trials(cell["id"]) if t["status"] == "ok"]) == 3
    assert os.listdir(work) == []


def test_compare_on_a_directory(tmp_path, scratch):
    work = tmp_path / "work"
    work.mkdir()
    db = tmp_path / "r.sqlite"
    r = fsm(
        "compare", "--dir", work, "--workloads", "seq-read", "--quick-scale", "0.1", "--trials", "2", "--db", db, "-q"
    )
    assert r.returncode == 0, r.stderr
    assert "which filesystem is fastest here" in r.stdout and "trade confidence for time" in r.stdout
    assert f"HTML report: {tmp_path / 'r-report.html'}" in r.stdout and (tmp_path / "r-report.html").is_file()
    assert "headline (mean ± 95% CI)" not in r.stdout  # the per-cell table needs -v
    r = fsm(
        "compare",
        "--dir",
        work,
        "--workloads",
        "seq-read",
        "--quick-scale",
        "0.1",
        "--trials",
        "2",
        "--db",
        db,
        "-q",
        "-v",
        "--report",
        tmp_path / "other.html",
    )
    assert r.returncode == 0, r.stderr
    assert "headline (mean ± 95% CI)" in r.stdout and "ranked per workload" in r.stdout
    assert (tmp_path / "other.html").is_file()
    df = tidy(db)
    assert set(df.workload) == {"seq-read"} and len(set(df.trial)) == 2
