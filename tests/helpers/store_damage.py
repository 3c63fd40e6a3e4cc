"""Ways a results store's structure or values can be altered that SQLite itself accepts (a dropped column, a
renamed table, text in a numeric column, a blob in a text column, JSON that does not parse, a status fsmeter
never writes), each applied to a store file in place; shared by the store tests and the CLI fuzz."""

from __future__ import annotations

import sqlite3


def _exec(path, *statements, ignore_checks=False) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        if ignore_checks:
            conn.execute("PRAGMA ignore_check_constraints = ON")
        for sql, *args in statements:
            conn.execute(sql, *args)
        conn.commit()
    finally:
        conn.close()


def drop_column(path, table, column) -> None:
    _exec(path, (f'ALTER TABLE "{table}" DROP COLUMN "{column}"',))


def rename_table(path, table, new) -> None:
    _exec(path, (f'ALTER TABLE "{table}" RENAME TO "{new}"',))


def set_first(path, table, column, value) -> None:
    """``column`` of the first row of ``table`` becomes ``value`` (CHECK constraints ignored while it is
    written, as a program that does not know them might)."""
    _exec(
        path,
        (f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = (SELECT min(rowid) FROM "{table}")', (value,)),
        ignore_checks=True,
    )


#: name -> (how to alter a store at a path, the words that name the damage in one line).
DAMAGES = {
    "dropped metrics.unit": (lambda p: drop_column(p, "metrics", "unit"), "table metrics has no column unit"),
    "dropped phases.report": (lambda p: drop_column(p, "phases", "report"), "table phases has no column report"),
    "renamed trials": (lambda p: rename_table(p, "trials", "trials_old"), "table trials is missing"),
    "text in metrics.value": (lambda p: set_first(p, "metrics", "value", "fast"), "metrics.value is not a number"),
    "text in intervals.ops": (lambda p: set_first(p, "intervals", "ops", "many"), "intervals.ops is not an integer"),
    "blob in cells.workload": (
        lambda p: set_first(p, "cells", "workload", b"\x00\xff"),
        "cells.workload is not text",
    ),
    "broken JSON in cell_factors.value": (
        lambda p: set_first(p, "cell_factors", "value", '{"broken'),
        "cell_factors.value is not valid JSON",
    ),
    "trials.status bogus": (lambda p: set_first(p, "trials", "status", "bogus"), "trials.status is 'bogus'"),
    "phases.measured 7": (lambda p: set_first(p, "phases", "measured", 7), "phases.measured is 7"),
}
