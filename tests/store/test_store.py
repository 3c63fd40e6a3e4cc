"""The results store: schema version and history, one transaction per trial, tidy() and load()."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from fsmeter.errors import UserError
from fsmeter.store import HERE, SCHEMA_VERSION, TIDY_COLUMNS, open_store, tidy
from store_sample import REPORT, fill


def test_schema_version_and_history(tmp_path):
    store = open_store(tmp_path / "r.sqlite")
    assert store.version == SCHEMA_VERSION >= 1
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {
        "campaigns",
        "cells",
        "cell_factors",
        "trials",
        "phases",
        "metrics",
        "intervals",
        "histograms",
        "environment",
    } <= tables
    history = (HERE / "HISTORY.md").read_text()
    assert f"## Version {SCHEMA_VERSION}" in history
    store.close()
    # Reopening does not re-run the schema (it would fail on existing tables).
    assert open_store(tmp_path / "r.sqlite").version == SCHEMA_VERSION


def test_newer_database_refused(tmp_path):
    path = tmp_path / "r.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(UserError, match="newer"):
        open_store(path)


def test_not_a_database(tmp_path):
    path = tmp_path / "r.sqlite"
    path.write_text("this is not sqlite" * 100)
    with pytest.raises(UserError, match="not a usable"):
        open_store(path)


def test_migration_step_applied(tmp_path, monkeypatch):
    """A migrate_N.sql next to schema.sql brings an existing version N-1 database to N."""
    import fsmeter.store as st

    path = tmp_path / "r.sqlite"
    open_store(path).close()
    extra = st._migrations() + [(SCHEMA_VERSION + 1, "ALTER TABLE campaigns ADD COLUMN note TEXT;")]
    monkeypatch.setattr(st, "_migrations", lambda: extra)
    monkeypatch.setattr(st, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    store = st.open_store(path)
    assert store.version == SCHEMA_VERSION + 1
    cols = [r[1] for r in store.conn.execute("PRAGMA table_info(campaigns)")]
    assert "note" in cols


def test_record_trial_stores_everything(tmp_path):
    store, cid = fill(tmp_path / "r.sqlite")
    q = lambda sql: store.conn.execute(sql).fetchone()[0]  # noqa: E731
    assert q("SELECT count(*) FROM trials") == 4
    assert q("SELECT count(*) FROM phases") == 4
    assert q("SELECT count(*) FROM intervals") == 8
    assert q("SELECT count(*) FROM histograms") == 4
    assert q("SELECT count(*) FROM metrics") == 8
    assert q("SELECT count(*) FROM cell_factors") == 4
    env = store.conn.execute("SELECT * FROM environment LIMIT 1").fetchone()
    assert env["proc_mounts_line"].startswith("/dev/loop0")
    assert json.loads(env["extra"]) == {"something_else": 7}
    assert json.loads(env["mkfs_options"]) == ["-q"]
    cell = store.cells(cid)[1]
    assert [v for _, v in store.headline_values(cell["id"])] == [201.0, 202.0]


def test_trial_is_one_transaction(tmp_path):
    """A trial whose data cannot be stored leaves nothing behind (no half trial)."""
    store, cid = fill(tmp_path / "r.sqlite")
    cell = store.cells(cid)[0]
    bad_metric = {"phase": "run", "name": "x", "unit": "u", "higher_is_better": True, "value": "not a number"}
    with pytest.raises(ValueError):
        store.record_trial(
            cell["id"], 3, status="ok", started="t", phases=[{"key": "run", "report": REPORT}], metrics=[bad_metric]
        )
    assert store.conn.execute("SELECT count(*) FROM trials WHERE number = 3").fetchone()[0] == 0
    assert store.conn.execute("SELECT count(*) FROM phases").fetchone()[0] == 4
    # Status values are checked by the schema.
    with pytest.raises(sqlite3.IntegrityError):
        store.record_trial(cell["id"], 4, status="great", started="t")


def test_tidy_columns_and_values(tmp_path):
    path = tmp_path / "r.sqlite"
    store, cid = fill(path)
    store.close()
    df = tidy(path, campaign=cid)
    assert list(df.columns) == TIDY_COLUMNS + ["filesystem", "threads"]
    assert len(df) == 8
    head = df[df.metric == "ops_per_s"]
    assert head[head.filesystem == "xfs"].value.tolist() == [201.0, 202.0]
    assert head.threads.tolist() == [1, 1, 4, 4]
    assert head.discarded.tolist() == [True, False, True, False]
    assert df.higher_is_better.dtype == bool
    # By name too, and an unknown campaign is a clear error.
    assert len(tidy(path, campaign="demo")) == 8
    with pytest.raises(UserError, match="no campaign"):
        tidy(path, campaign="nope")


def test_load_returns_frames(tmp_path):
    import fsmeter

    path = tmp_path / "r.sqlite"
    fill(path)[0].close()
    data = fsmeter.load(path)
    assert {"trials", "metrics", "intervals", "environment"} <= set(data)
    assert len(data["trials"]) == 4 and "filesystem" in data["trials"].columns
    assert len(data["intervals"]) == 8
    assert data["environment"].seed.tolist() == [42] * 4


def test_cli_start_does_not_import_pandas():
    code = "import sys, fsmeter, fsmeter.cli; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
