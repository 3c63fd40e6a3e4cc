"""A results store whose JSON columns parse but hold the wrong kind of document (a number where the
cell's factors object belongs, a list for a phase report), and an input to `fsmeter merge` with a NULL
where the schema forbids one: each command that reads them says in one line that the store is damaged
and how to recover it (exit 1 or 2), never a traceback; merge leaves no half-written output."""

from __future__ import annotations

import sqlite3

import pytest
from fsmeter_cli import fsm
from store_sample import fill


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "s.sqlite"
    fill(path)[0].close()
    return path


def set_first(path, table, column, value, loosen=False):
    conn = sqlite3.connect(path)
    try:
        if loosen:  # a store written by something else: its schema text lacks the NOT NULL
            conn.execute("PRAGMA writable_schema = 1")
            conn.execute("UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE name = ?", (table,))
            conn.commit()
            conn.close()
            conn = sqlite3.connect(path)
        conn.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = (SELECT min(rowid) FROM {table})", (value,))
        conn.commit()
    finally:
        conn.close()


def one_damaged_line(r, needle):
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode in (1, 2), (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fsmeter: error:"), r.stderr
    assert needle in lines[0] and "store recover" in lines[0], lines[0]


@pytest.mark.parametrize(
    "value,command",
    [
        *[
            (v, c)
            for v in ("-1", "1e400", '"ext4"')
            for c in (["export", "-f", "json"], ["export", "-f", "fio-json"], ["compare-runs", "1"])
        ],
        ("[]", ["export", "-f", "fio-json"]),
    ],
)
def test_cell_factors_that_are_not_an_object(sample, tmp_path, value, command):
    set_first(sample, "cells", "factors", value)
    extra = ["-o", tmp_path / "out"] if command[0] == "export" else []
    r = fsm(*command, "--db", sample, *extra, "1", timeout=120)
    one_damaged_line(r, "cells.factors is not a JSON object")


def test_a_phase_report_that_is_a_number_fails_the_html_report_in_one_line(sample, tmp_path):
    set_first(sample, "phases", "report", "7")
    r = fsm("report", "--db", sample, "-o", tmp_path / "r.html", "1", timeout=120)
    one_damaged_line(r, "phases.report is not a JSON object")
    assert not (tmp_path / "r.html").exists()


def test_store_check_names_the_column_of_the_wrong_shape(sample):
    set_first(sample, "cells", "factors", "[1, 2]")
    r = fsm("store", "check", sample, timeout=120)
    assert r.returncode == 1 and "cells.factors is not a JSON object" in r.stdout + r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("table,column", [("campaigns", "source"), ("cells", "factors"), ("phases", "report")])
def test_merge_refuses_an_input_with_a_null_where_the_schema_forbids_it(sample, tmp_path, table, column):
    set_first(sample, table, column, None, loosen=True)
    out = tmp_path / "merged.sqlite"
    r = fsm("merge", sample, "-o", out, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    line = r.stderr.strip()
    assert line.startswith("fsmeter: error:") and len(line.splitlines()) == 1, line
    assert f"{table}.{column}" in line and "store recover" in line, line
    assert not out.exists()


def test_merge_of_a_sound_store_still_copies_it(sample, tmp_path):
    out = tmp_path / "merged.sqlite"
    r = fsm("merge", sample, "-o", out, timeout=120)
    assert r.returncode == 0, r.stderr
    assert sqlite3.connect(out).execute("SELECT count(*) FROM trials").fetchone()[0] == 4


@pytest.mark.parametrize("value", ["x", "[]"])
def test_analyze_of_a_store_with_a_metric_value_that_is_text(sample, value):
    set_first(sample, "metrics", "value", value)
    r = fsm("analyze", "--campaign", "1", "--response", "ops_per_s", "--factors", "filesystem", sample, timeout=120)
    one_damaged_line(r, "metrics.value is not a number")
