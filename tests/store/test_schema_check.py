"""The store's schema check: a store altered in its structure or values in ways SQLite accepts (a dropped
column, a renamed table, text in a numeric column, a blob in a text column, JSON that does not parse, a status
fsmeter never writes) is named in one line by `store check` and by every command that reads it, which never
changes it; `merge` refuses it and writes nothing; `store recover` keeps the sound trials."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from fsmeter.store import open_store
from fsmeter.store._sqlite import StoreError
from fsmeter.store.schema_check import ALLOWED, migrations, store_problem
from fsmeter_cli import fsm
from store_damage import DAMAGES, set_first
from store_sample import fill


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "s.sqlite"
    fill(path)[0].close()
    return path


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line(r) -> str:
    assert "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("fsmeter: error:"), r.stderr
    return lines[0]


def test_a_sound_store_has_no_problem(sample):
    conn = sqlite3.connect(sample)
    assert store_problem(conn) is None
    conn.close()
    r = fsm("store", "check", sample)
    assert r.returncode == 0 and "healthy" in r.stdout


def test_allowed_statuses_are_the_schemas_own():
    """ALLOWED names the values the schema's CHECK constraints allow: each passes, one more does not."""
    conn = sqlite3.connect(":memory:")
    for version, sql in migrations():
        conn.executescript(f"BEGIN;\n{sql}\nPRAGMA user_version = {version};\nCOMMIT;")
    conn.execute("PRAGMA foreign_keys = OFF")
    rows = {
        "campaigns": "INSERT INTO campaigns (name, source, created, fsmeter_version, status) VALUES ('a','s','t','v',?)",
        "cells": "INSERT INTO cells (campaign_id, idx, workload, factors, status) VALUES (1, ?2, 'w', '{}', ?1)",
        "trials": "INSERT INTO trials (cell_id, number, started, ended, status) VALUES (1, ?2, 't', 't', ?1)",
    }
    for (table, column), allowed in ALLOWED.items():
        if column != "status":
            continue
        for i, value in enumerate(allowed):
            conn.execute(rows[table], (value, i) if "?2" in rows[table] else (value,))
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(rows[table], ("bogus", 99) if "?2" in rows[table] else ("bogus",))


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_store_check_and_open_name_the_damage(sample, damage):
    alter, words = DAMAGES[damage]
    alter(sample)
    before = digest(sample)
    with pytest.raises(StoreError) as e:
        open_store(sample, create=False)
    assert words in e.value.message and "store recover" in e.value.message
    r = fsm("store", "check", sample)
    assert r.returncode == 1 and words in r.stdout, r.stdout + r.stderr
    assert "healthy" not in r.stdout
    assert digest(sample) == before


READERS = [
    ["report", "1"],
    ["export", "1", "-f", "json", "-o", "-"],
    ["compare-runs", "1", "1"],
    ["campaign", "show", "1"],
    ["campaign", "list"],
    ["analyze", "--campaign", "1", "--response", "ops_per_s", "--factors", "filesystem"],
]


@pytest.mark.parametrize("damage", ["dropped metrics.unit", "renamed trials", "blob in cells.workload"])
@pytest.mark.parametrize("command", READERS, ids=lambda c: " ".join(c[:2]))
def test_every_reading_command_names_the_damage_and_changes_nothing(sample, damage, command):
    alter, words = DAMAGES[damage]
    alter(sample)
    before = digest(sample)
    args = [*command, "--db", sample] if command[0] != "analyze" else [*command, sample]
    r = fsm(*args)
    assert r.returncode in (1, 2)
    line = one_line(r)
    assert words in line and "store recover" in line, line
    assert digest(sample) == before


def test_merge_refuses_damage_and_writes_nothing(sample, tmp_path):
    for damage in ("dropped phases.report", "trials.status bogus", "text in metrics.value"):
        fresh = tmp_path / f"{damage.replace(' ', '_')}.sqlite"
        fill(fresh)[0].close()
        alter, words = DAMAGES[damage]
        alter(fresh)
        out = tmp_path / "merged.sqlite"
        r = fsm("merge", sample, fresh, "-o", out)
        line = one_line(r)
        assert r.returncode == 2 and words in line and "nothing was merged" in line and "store recover" in line
        assert "merged 2" not in r.stdout and not out.exists()


def test_recover_keeps_the_sound_trials_beside_a_bogus_status(sample, tmp_path):
    set_first(sample, "trials", "status", "bogus")
    out = tmp_path / "r.sqlite"
    r = fsm("store", "recover", sample, "--to", out)
    assert r.returncode == 0, r.stderr
    conn = sqlite3.connect(out)
    assert conn.execute("SELECT count(*) FROM trials").fetchone()[0] == 3  # of 4: the bogus one is lost
    assert conn.execute("SELECT count(*) FROM trials WHERE status = 'bogus'").fetchone()[0] == 0
    conn.close()
    assert fsm("store", "check", out).returncode == 0


@pytest.mark.parametrize(
    "command",
    [
        ["report"],
        ["export", "-f", "csv", "-o", "-"],
        ["compare-runs", "1", "2"],
        ["campaign", "list"],
        ["study", "report", "wettstein2002"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
@pytest.mark.parametrize("kind", ["empty", "other program's"])
def test_a_file_that_is_not_a_store_is_refused_and_left_as_it_is(tmp_path, command, kind):
    path = tmp_path / "x.sqlite"
    if kind == "empty":
        path.write_bytes(b"")
    else:
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE notes (text TEXT)")
        conn.commit()
        conn.close()
    before = digest(path)
    r = fsm(*command, "--db", path)
    assert r.returncode in (1, 2)
    assert "not an fsmeter results store" in one_line(r)
    assert digest(path) == before and path.stat().st_size == (0 if kind == "empty" else path.stat().st_size)


def test_compare_runs_never_writes_into_either_store(sample, tmp_path):
    empty = tmp_path / "b.sqlite"
    empty.write_bytes(b"")
    before = digest(sample)
    r = fsm("compare-runs", "1", "1", "--db", sample, "--db-b", empty)
    assert "not an fsmeter results store" in one_line(r)
    assert empty.stat().st_size == 0 and digest(sample) == before


def test_a_writing_command_refuses_another_programs_database(tmp_path):
    path = tmp_path / "x.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.commit()
    conn.close()
    before = digest(path)
    with pytest.raises(StoreError, match="not an fsmeter results store"):
        open_store(path)
    assert digest(path) == before


def test_an_older_store_is_read_without_being_migrated(tmp_path):
    """A version-4 store (before the phase regime columns): reading commands migrate a copy in memory."""
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    for version, sql in migrations():
        if version <= 4:
            conn.executescript(f"BEGIN;\n{sql}\nPRAGMA user_version = {version};\nCOMMIT;")
    conn.execute(
        "INSERT INTO campaigns (name, source, created, fsmeter_version) VALUES ('old', 'name = \"old\"', 't', '0.1')"
    )
    conn.commit()
    conn.close()
    before = digest(path)
    with open_store(path, create=False) as store:
        assert [r["name"] for r in store.campaigns()] == ["old"]
    r = fsm("campaign", "list", "--db", path)
    assert r.returncode == 0 and "old" in r.stdout, r.stderr
    assert digest(path) == before
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 4


def test_a_schema_entry_that_is_not_utf8_is_damage_in_one_line(sample, tmp_path):
    """A flipped bit in a CREATE statement can leave bytes that are not UTF-8: SQLite's own message then
    quotes them, and Python cannot even decode the error."""
    conn = sqlite3.connect(sample)
    conn.text_factory = bytes
    conn.execute("PRAGMA writable_schema = ON")
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'campaigns'").fetchone()
    # Three bits flipped: a quote opens an identifier that runs on past a byte that is not UTF-8.
    sql = sql.replace(
        b"          -- ISO 8601, UTC\n    finished        TEXT,\n",
        b'         "-- ISO 8601, UTC\n    finished      $ TEXT,\x8a',
        1,
    )
    conn.execute("UPDATE sqlite_master SET sql = CAST(? AS TEXT) WHERE name = 'campaigns'", (sql,))
    conn.commit()
    conn.close()
    before = digest(sample)
    for command in (["export", "1", "-f", "json", "-o", "-"], ["campaign", "list"], ["report"]):
        line = one_line(fsm(*command, "--db", sample))
        assert "damaged" in line and "store recover" in line
    r = fsm("store", "check", sample)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    r = fsm("merge", sample, "-o", tmp_path / "m.sqlite")
    assert "nothing was merged" in one_line(r)
    assert digest(sample) == before
