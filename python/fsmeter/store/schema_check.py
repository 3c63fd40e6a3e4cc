"""What a sound results store holds, and where a store differs from it.

The reference is the schema this fsmeter makes (``schema.sql`` and the ``migrate_N.sql`` steps, run in
memory): its tables, their columns and declared types. On top of what SQLite enforces, a row fsmeter wrote
has values of its column's type (SQLite stores text in an INTEGER column without a word), JSON that parses
and is the kind of document fsmeter writes (an object for a cell's factors, a list for histogram
buckets), and, where the schema lists them, allowed values (a trial's status; 0 or 1 for a flag).

Two ways to look, one set of rules:

- :func:`store_problem`: a whole store at once, in SQL (``typeof``, ``json_valid``, ``json_type``), fast
  enough for every command that reads a store to run it first: one line naming the first damage found;
- :func:`row_problem`: one row at a time, for `store check` and `store recover`, which count and skip
  the rows that are not sound.

SQLite's own damage (a page that is not a b-tree page, text that is not UTF-8) is found by reading and by
``PRAGMA integrity_check`` (``_sqlite.py``); this module is about what SQLite accepts and fsmeter would not.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent

#: The tables, parents before children, with the column naming each row's parent and that parent.
TABLES = [
    ("campaigns", None, None),
    ("cells", "campaign_id", "campaigns"),
    ("cell_factors", "cell_id", "cells"),
    ("trials", "cell_id", "cells"),
    ("phases", "trial_id", "trials"),
    ("metrics", "trial_id", "trials"),
    ("intervals", "phase_id", "phases"),
    ("histograms", "phase_id", "phases"),
    ("environment", "trial_id", "trials"),
    ("storage_probes", "campaign_id", "campaigns"),
]

#: Columns holding JSON text that must parse (NULL allowed where the schema allows it).
JSON_COLUMNS = {
    "cells": ("factors",),
    "cell_factors": ("value",),
    "phases": ("report",),
    "histograms": ("buckets",),
    "environment": ("extra",),
    "metrics": ("keys",),
    "campaigns": ("owner",),
    "storage_probes": ("report",),
}

#: The JSON type each of those documents has when fsmeter wrote it (a column not named here may hold any).
JSON_SHAPES = {
    ("cells", "factors"): dict,
    ("phases", "report"): dict,
    ("histograms", "buckets"): list,
    ("environment", "extra"): dict,
    ("metrics", "keys"): dict,
    ("campaigns", "owner"): dict,
    ("storage_probes", "report"): dict,
}
_SHAPE_NAMES = {dict: "a JSON object", list: "a JSON list"}
_SQL_SHAPES = {dict: "object", list: "array"}

#: The values a column may hold, where the schema lists them (its CHECK constraints) or fsmeter writes
#: only these (flags: 0 or 1). tests/store/test_schema_check.py holds these to the schema's own CHECKs.
ALLOWED = {
    ("campaigns", "status"): ("running", "done", "interrupted", "failed"),
    ("cells", "status"): ("pending", "running", "done", "failed", "interrupted"),
    ("trials", "status"): ("ok", "failed", "interrupted", "corrupt"),
    ("trials", "discarded"): (0, 1),
    ("phases", "measured"): (0, 1),
    ("phases", "discarded"): (0, 1),
    ("phases", "interrupted"): (0, 1),
    ("metrics", "higher_is_better"): (0, 1),
    ("metrics", "headline"): (0, 1),
}


@dataclass(frozen=True)
class Column:
    name: str
    decltype: str
    notnull: bool


def migrations() -> list:
    """[(version, sql)] in order: schema.sql is version 1, migrate_N.sql brings N-1 to N."""
    steps = [(1, (HERE / "schema.sql").read_text())]
    for p in sorted(HERE.glob("migrate_*.sql"), key=lambda p: int(p.stem.split("_")[1])):
        steps.append((int(p.stem.split("_")[1]), p.read_text()))
    return steps


@functools.cache
def expected_schema(version: int | None = None) -> tuple:
    """({table: [Column]}, {table: CREATE statement}) of a store made by this fsmeter, or, with
    ``version``, of one at that schema version (a table that version did not have: no columns, None)."""
    conn = sqlite3.connect(":memory:")
    try:
        for step, sql in migrations():
            if version is not None and step > version:
                break
            conn.executescript(f"BEGIN;\n{sql}\nPRAGMA user_version = {step};\nCOMMIT;")
        cols, creates = {}, {}
        for table, _, _ in TABLES:
            cols[table] = [
                Column(r[1], (r[2] or "").upper(), bool(r[3]) and not r[5])
                for r in conn.execute(f"PRAGMA table_info({table})")
            ]
            made = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
            creates[table] = made[0] if made else None
        return cols, creates
    finally:
        conn.close()


def _ok_json(table: str, column: str, v: str) -> str | None:
    try:
        doc = json.loads(v)
    except (ValueError, RecursionError):
        return f"{table}.{column} is not valid JSON"
    shape = JSON_SHAPES.get((table, column))
    if shape is not None and not isinstance(doc, shape):
        return f"{table}.{column} is not {_SHAPE_NAMES[shape]}"
    return None


def row_problem(table: str, columns: list, row: tuple) -> str | None:
    """Why a row read from ``table`` cannot be a row fsmeter wrote (wrong type, NULL where the schema
    forbids it, JSON that does not parse or is of the wrong kind, a value the column does not allow), or
    None."""
    json_cols = JSON_COLUMNS.get(table, ())
    for col, v in zip(columns, row):
        if v is None:
            if col.notnull:
                return f"{table}.{col.name} is NULL"
            continue
        t = col.decltype
        if t == "INTEGER" and (not isinstance(v, int) or isinstance(v, bool)):
            return f"{table}.{col.name} is not an integer"
        if t == "REAL" and not isinstance(v, (int, float)):
            return f"{table}.{col.name} is not a number"
        if t == "TEXT":
            if not isinstance(v, str):
                return f"{table}.{col.name} is not text"
            if col.name in json_cols:
                why = _ok_json(table, col.name, v)
                if why:
                    return why
        allowed = ALLOWED.get((table, col.name))
        if allowed is not None and v not in allowed:
            return f"{table}.{col.name} is {_shown(v)}, not one of {', '.join(map(str, allowed))}"
    return None


def _shown(v) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:40] + "..."


def _columns_of(conn: sqlite3.Connection, table: str, schema: str = "main") -> dict:
    """{column name: declared type} of ``table`` in the store, {} when there is no such table."""
    return {r[1]: (r[2] or "").upper() for r in conn.execute(f'PRAGMA "{schema}".table_info("{table}")')}


def _older_version(conn: sqlite3.Connection, schema: str) -> int | None:
    """The store's schema version when it is an earlier one this fsmeter knows, else None (the latest)."""
    v = conn.execute(f'PRAGMA "{schema}".user_version').fetchone()[0]
    latest = migrations()[-1][0]
    return v if isinstance(v, int) and 1 <= v < latest else None


def structure_problems(conn: sqlite3.Connection, schema: str = "main") -> list:
    """What differs in the store's tables and columns from this fsmeter's: a table or column missing, a
    column of another declared type. Extra tables and columns are let be. A store of an earlier schema
    version (one this fsmeter has not migrated: it was opened by an older fsmeter, or read as it is) is
    held to that version's tables and columns."""
    cols, _ = expected_schema(_older_version(conn, schema))
    out = []
    for table, _, _ in TABLES:
        if not cols[table]:
            continue  # a table the store's version did not have yet
        have = _columns_of(conn, table, schema)
        if not have:
            out.append(f"table {table} is missing")
            continue
        for c in cols[table]:
            if c.name not in have:
                out.append(f"table {table} has no column {c.name}")
            elif have[c.name] != c.decltype:
                out.append(f"{table}.{c.name} is declared {have[c.name] or 'without a type'}, not {c.decltype}")
    return out


def _bad_value_sql(table: str, c: Column, with_json: bool) -> list:
    """[(SQL condition true for a row whose value in column c is not sound, what it means)]."""
    q = f'"{c.name}"'
    out = []
    if c.notnull:
        out.append((f"{q} IS NULL", f"{table}.{c.name} is NULL"))
    kinds = {"INTEGER": "'integer'", "REAL": "'real', 'integer'", "TEXT": "'text'"}.get(c.decltype)
    if kinds is not None:
        word = {"INTEGER": "an integer", "REAL": "a number", "TEXT": "text"}[c.decltype]
        out.append((f"typeof({q}) NOT IN ({kinds}, 'null')", f"{table}.{c.name} is not {word}"))
    allowed = ALLOWED.get((table, c.name))
    if allowed is not None:
        listed = ", ".join(f"'{a}'" if isinstance(a, str) else str(a) for a in allowed)
        out.append((f"{q} IS NOT NULL AND {q} NOT IN ({listed})", None))  # named from the value, below
    if with_json and c.name in JSON_COLUMNS.get(table, ()):
        shape = JSON_SHAPES.get((table, c.name))
        # A candidate only: SQLite's JSON is RFC 8259, Python's (and fsmeter's) also takes NaN; the row
        # is read and judged by row_problem.
        cond = f"typeof({q}) = 'text' AND NOT json_valid({q})"
        if shape is not None:
            cond = f"({cond}) OR (typeof({q}) = 'text' AND CASE WHEN json_valid({q}) THEN json_type({q}) != '{_SQL_SHAPES[shape]}' ELSE 0 END)"
        out.append((cond, None))
    return out


def _has_json1(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT json_valid('{}')").fetchone()
    except sqlite3.OperationalError:
        return False
    return True


def value_problems(conn: sqlite3.Connection, schema: str = "main", first_only: bool = True) -> list:
    """The rows that are not sound, table by table: [(table, rowid, what)], the first of each table (or
    of the store, with ``first_only``). The tables' columns as far as the store has them."""
    cols, _ = expected_schema()
    with_json = _has_json1(conn)
    out = []
    for table, _, _ in TABLES:
        have = _columns_of(conn, table, schema)
        present = [c for c in cols[table] if c.name in have]
        conds = [cw for c in present for cw in _bad_value_sql(table, c, with_json)]
        json_by_python = [] if with_json else [c for c in present if c.name in JSON_COLUMNS.get(table, ())]
        if not conds and not json_by_python:
            continue
        names = ", ".join(f'"{c.name}"' for c in present)
        where = " OR ".join(f"({sql})" for sql, _ in conds) or "1"
        q = f'SELECT rowid, {names} FROM "{schema}"."{table}" WHERE {where} ORDER BY rowid'
        for row in conn.execute(q):
            why = row_problem(table, present, row[1:])
            if why is not None:
                out.append((table, row[0], why))
                break
        if out and first_only:
            return out
    return out


def store_problem(conn: sqlite3.Connection, schema: str = "main") -> str | None:
    """The first way the store differs from a sound one (structure, then values), in a few words, or
    None. Read-only; SQLite's own errors (a damaged page) propagate."""
    structure = structure_problems(conn, schema)
    if structure:
        more = f" (and {len(structure) - 1} more)" if len(structure) > 1 else ""
        return structure[0] + more
    bad = value_problems(conn, schema)
    if bad:
        table, rowid, why = bad[0]
        return f"{why} (row {rowid} of {table})"
    return None


__all__ = [
    "ALLOWED",
    "JSON_COLUMNS",
    "JSON_SHAPES",
    "TABLES",
    "Column",
    "expected_schema",
    "migrations",
    "row_problem",
    "store_problem",
    "structure_problems",
    "value_problems",
]
