"""A damaged results store: find out what is readable (`fsmeter store check`), copy it out
(`fsmeter store recover`), and turn damage met by a reading command into one line (:func:`guard`).

Damage comes in two kinds. SQLite sees some itself (a page that is not a b-tree page, a broken
index): ``PRAGMA integrity_check`` lists it and reading it raises ``sqlite3.DatabaseError``. Other
damage SQLite cannot see, because it does not know what a value should be: a TEXT value that is no
longer UTF-8, a number turned into text, a JSON document that no longer parses. The row check
here (:func:`row_problem`) finds those, column by column, against the schema this fsmeter creates.

Reading a damaged table walks it by rowid, in batches; a batch that fails is read again row by
row, and a stretch of the b-tree that cannot be read is stepped over by searching for the next
readable rowid at growing distances (1, 2, 4, ... past the last good one), so the rows after a
damaged page are still found. Recovery reads a private copy of the store whose schema text is
replaced by this fsmeter's own (``PRAGMA writable_schema``, sqlite.org/pragma.html), so a bit
flipped in a CREATE statement does not hide a whole table; the store itself is never written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fsmeter.errors import UserError
from fsmeter.store import SCHEMA_VERSION, open_store
from fsmeter.store._sqlite import StoreError, damaged, integrity_summary, is_damage, read_only_uri, recovered_name
from fsmeter.store.schema_check import TABLES, Column, row_problem, structure_problems
from fsmeter.store.schema_check import expected_schema as _expected_schema

_BATCH = 256


@dataclass
class TableScan:
    """What reading one table found."""

    table: str
    present: bool = True
    read: int = 0  # rows read and sound
    unreadable: int = 0  # rows SQLite could not return (decode error, damaged cell)
    invalid: int = 0  # rows returned but not sound (row_problem)
    skipped_regions: int = 0  # stretches of the b-tree that could not be read at all
    first_problem: str | None = None

    @property
    def lost(self) -> int:
        return self.unreadable + self.invalid

    def note(self, why: str) -> None:
        if self.first_problem is None:
            m = re.match(r"Could not decode to UTF-8 column '([^']*)'", why)
            self.first_problem = f"{self.table}.{m.group(1)} is not UTF-8 text" if m else " ".join(why.split())[:200]


#: A query that runs this many thousand SQLite VM steps is abandoned: a damaged b-tree can send a
#: lookup round in circles, while reading a batch of sound rows takes a few thousand steps at most.
_STEP_BUDGET_K = 20_000


def _fetch(conn: sqlite3.Connection, q: str, args: tuple) -> list:
    """One query, abandoned (as sqlite3.OperationalError) when it exceeds the step budget."""
    steps = [0]

    def budget() -> int:
        steps[0] += 1
        return steps[0] > _STEP_BUDGET_K

    conn.set_progress_handler(budget, 1000)
    try:
        return conn.execute(q, args).fetchall()
    finally:
        conn.set_progress_handler(None, 0)


def scan(conn: sqlite3.Connection, table: str, columns: list, result: TableScan) -> Iterator[tuple]:
    """Yield every sound row of ``table`` (its columns in ``columns`` order, rowid first), counting
    the rest in ``result``. Never raises for damage."""
    names = ", ".join(f'"{c.name}"' for c in columns)
    batch_q = f'SELECT rowid, {names} FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT {_BATCH}'
    next_q = f'SELECT rowid FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT 1'
    one_q = f'SELECT rowid, {names} FROM "{table}" WHERE rowid = ?'
    last = -(1 << 63)

    def emit(row):
        why = row_problem(table, columns, row[1:])
        if why is None:
            result.read += 1
            return row
        result.invalid += 1
        result.note(why)
        return None

    while True:
        try:
            rows = _fetch(conn, batch_q, (last,))
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            result.note(str(exc))
        else:
            if not rows:
                return
            # A damaged b-tree can return rowids out of order: only ever move forward.
            moved = False
            for row in rows:
                if row[0] <= last:
                    break
                last, moved = row[0], True
                got = emit(row)
                if got is not None:
                    yield got
            if moved and last == rows[-1][0]:
                continue
        # The batch failed: step row by row.
        try:
            nxt = _fetch(conn, next_q, (last,))
        except (sqlite3.DatabaseError, UnicodeDecodeError):
            nxt = None
        if nxt and nxt[0][0] <= last:
            nxt = None  # out of order: treat like a stretch that cannot be walked
        if nxt is None:  # the b-tree cannot be walked past `last`: look further on
            step, found = 1, None
            while step < (1 << 40) and found is None:
                try:
                    r = _fetch(conn, next_q, (last + step,))
                except (sqlite3.DatabaseError, UnicodeDecodeError):
                    step *= 2
                    continue
                if r and r[0][0] <= last + step:
                    step *= 2  # out of order: not a way forward
                    continue
                found = r[0][0] if r else False
            result.skipped_regions += 1
            if not found:
                return
            last = found - 1
            continue
        if not nxt:
            return
        rid = nxt[0][0]
        try:
            row = _fetch(conn, one_q, (rid,))
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            result.unreadable += 1
            result.note(str(exc))
        else:
            got = emit(row[0]) if row else None
            if got is not None:
                yield got
        last = rid


@dataclass
class CheckReport:
    path: Path
    integrity: str | None  # "ok", what integrity_check found, or None (could not run)
    version: int | None
    tables: list = field(default_factory=list)  # [TableScan]
    fatal: str | None = None  # the store could not be read at all
    structure: list = field(default_factory=list)  # tables and columns unlike this fsmeter's (schema_check)
    foreign: bool = False  # not an fsmeter store at all (an empty file, another program's database)

    @property
    def healthy(self) -> bool:
        return (
            self.fatal is None
            and self.integrity == "ok"
            and self.version == SCHEMA_VERSION
            and not self.structure
            and all(t.present and t.lost == 0 and t.skipped_regions == 0 for t in self.tables)
        )

    def problem(self, older_is_fine: bool = False) -> str | None:
        """The first thing wrong, in a few words (for one line), or None. ``older_is_fine``: a store of
        an older schema version is not wrong for that alone (it can be migrated)."""
        if self.fatal:
            return self.fatal
        if is_damage(self.integrity):
            return f"PRAGMA integrity_check: {self.integrity}"
        if self.structure:
            more = f" (and {len(self.structure) - 1} more)" if len(self.structure) > 1 else ""
            return self.structure[0] + more
        for t in self.tables:
            if not t.present:
                return f"table {t.table} is missing or unreadable"
            if t.lost or t.skipped_regions:
                return f"table {t.table}: {t.lost} row(s) unreadable ({t.first_problem})"
        if self.version != SCHEMA_VERSION and not (
            older_is_fine and self.version is not None and 0 < self.version < SCHEMA_VERSION
        ):
            return f"schema version {self.version}, this fsmeter writes {SCHEMA_VERSION}"
        return None


def _open_ro(path: Path, *, schema_tolerant: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(read_only_uri(path), uri=True, timeout=30)
    if schema_tolerant:
        conn.execute("PRAGMA writable_schema = ON")  # a schema entry that does not parse is skipped
    return conn


def _tables_of(conn: sqlite3.Connection, expected: dict) -> dict:
    """{table: [Column]} for the tables present, with the expected columns the store has."""
    out = {}
    for table, cols in expected.items():
        try:
            have = {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}
        except (sqlite3.DatabaseError, UnicodeDecodeError):
            continue
        if have:
            out[table] = [c for c in cols if c.name in have]
    return out


def check(path: os.PathLike | str) -> CheckReport:
    """Read the whole store at ``path`` (read-only): integrity_check, schema version, and per table
    how many rows are sound."""
    path = Path(path)
    if not os.path.isfile(path):  # os.path: a name too long to look up is no file, not an OSError
        raise UserError(f"no such results database: {path}: check the path")
    integrity = integrity_summary(path)
    try:
        conn = _open_ro(path, schema_tolerant=True)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        return CheckReport(path, integrity, None, fatal=f"cannot read it at all: {exc}")
    rep = CheckReport(path, integrity, version)
    try:
        expected, _ = _expected_schema()
        present = _tables_of(conn, expected)
        if version == 0 and not present:
            rep.fatal, rep.foreign = "not an fsmeter results store (no fsmeter tables, schema version 0)", True
            return rep
        if version == SCHEMA_VERSION:  # an older store lacks the newer columns: its version says so
            try:
                rep.structure = structure_problems(conn)
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                rep.structure = [f"its tables cannot be listed: {exc}"]
        for table, _, _ in TABLES:
            res = TableScan(table, present=table in present)
            rep.tables.append(res)
            if res.present:
                for _ in scan(conn, table, present[table], res):
                    pass
    finally:
        conn.close()
    return rep


@dataclass
class RecoverReport:
    source: Path
    target: Path
    copied: dict = field(default_factory=dict)  # table -> rows written
    lost: dict = field(default_factory=dict)  # table -> rows unreadable, unsound or orphaned
    skipped_regions: dict = field(default_factory=dict)
    schema_repaired: list = field(default_factory=list)


def _private_copy(src: Path, folder: Path, creates: dict) -> tuple:
    """A copy of ``src`` in ``folder`` whose table definitions are this fsmeter's (see the module
    docstring); returns (copy path, [tables whose definition was replaced]). The schema table is
    read and changed row by row, so a damaged page of it costs only the entries on that page."""
    fd, tmp = tempfile.mkstemp(prefix=".fsmeter-recover-", suffix=".sqlite", dir=folder)
    os.close(fd)
    shutil.copyfile(src, tmp)
    repaired = []
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.text_factory = bytes
        conn.execute("PRAGMA writable_schema = ON")
        cols = [Column("type", "", False), Column("name", "", False), Column("sql", "", False)]
        entries = list(scan(conn, "sqlite_master", cols, TableScan("sqlite_master")))
        for rowid, kind, name, sql in entries:
            name = bytes(name or b"").decode("utf-8", "replace")
            if kind == b"table" and name in creates and sql != creates[name].encode():
                change = ("UPDATE sqlite_master SET sql = ? WHERE rowid = ?", (creates[name], rowid))
            elif kind in (b"index", b"trigger", b"view") and sql is not None:
                # Not needed to read by rowid; a damaged CREATE INDEX would stop the schema loading.
                change = ("DELETE FROM sqlite_master WHERE rowid = ?", (rowid,))
            else:
                continue
            try:
                conn.execute(*change)
            except (sqlite3.DatabaseError, UnicodeDecodeError):
                continue  # on a page that cannot be written: the entry stays as it is
            if change[0].startswith("UPDATE"):
                repaired.append(name)
    finally:
        conn.close()
    return Path(tmp), repaired


def recover(src: os.PathLike | str, dst: os.PathLike | str) -> RecoverReport:
    """Copy every sound campaign, cell, trial and sample row of the store ``src`` into a new store
    ``dst`` (ids kept), skipping what cannot be read and rows whose parent was lost."""
    src, dst = Path(src), Path(dst)
    if not os.path.isfile(src):
        raise UserError(f"no such results database: {src}: check the path")
    from fsmeter.userpaths import check_output_path

    check_output_path(dst, "--to")
    if dst.exists():
        raise UserError(f"--to {dst}: already exists: name a new file (recover never writes over a file)")
    if dst.resolve() == src.resolve():
        raise UserError("--to: name a new file, not the damaged store itself")
    expected, creates = _expected_schema()
    report = RecoverReport(src, dst)
    tmp, report.schema_repaired = _private_copy(src, dst.parent, creates)
    kept_ids: dict = {}
    try:
        out = open_store(dst)
        try:
            conn = _open_ro(tmp, schema_tolerant=True)
            try:
                present = _tables_of(conn, expected)
                with out.conn:
                    for table, parent_col, parent in TABLES:
                        scan_res = TableScan(table, present=table in present)
                        cols = present.get(table, [])
                        ids, n = set(), 0
                        orphans = 0
                        if scan_res.present:
                            names = [c.name for c in cols]
                            pidx = names.index(parent_col) if parent_col in names else None
                            ins = f'INSERT INTO "{table}" ({", ".join(names)}) VALUES ({", ".join("?" * len(names))})'
                            for row in scan(conn, table, cols, scan_res):
                                vals = list(row)
                                if table == "campaigns" and "owner" in names:
                                    vals[1 + names.index("owner")] = None  # no process runs the copy
                                if parent is not None and (pidx is None or vals[1 + pidx] not in kept_ids[parent]):
                                    orphans += 1
                                    continue
                                try:
                                    out.conn.execute(ins, vals[1:])  # in rowid order, so order is kept
                                except sqlite3.IntegrityError:
                                    orphans += 1  # breaks a constraint (a status out of range, a duplicate)
                                    continue
                                n += 1
                                ids.add(vals[1 + names.index("id")] if "id" in names else None)
                        kept_ids[table] = ids
                        report.copied[table] = n
                        report.lost[table] = scan_res.lost + orphans
                        report.skipped_regions[table] = scan_res.skipped_regions + (0 if scan_res.present else 1)
                        if table == "cell_factors":
                            refilled = _refill_cell_factors(out.conn)
                            report.copied[table] += refilled
                            report.lost[table] = max(0, report.lost[table] - refilled)
            finally:
                conn.close()
        finally:
            out.close()
    except BaseException:
        with contextlib.suppress(OSError):
            dst.unlink()
        raise
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return report


def _refill_cell_factors(conn: sqlite3.Connection) -> int:
    """cell_factors repeats cells.factors one level a row: rows lost from it are written again from
    the cell's own copy. Returns how many."""
    n = 0
    for cell_id, factors in conn.execute("SELECT id, factors FROM cells").fetchall():
        levels = json.loads(factors)
        for name, value in levels.items() if isinstance(levels, dict) else ():
            n += conn.execute(
                "INSERT OR IGNORE INTO cell_factors (cell_id, name, value) VALUES (?, ?, ?)",
                (cell_id, name, json.dumps(value, sort_keys=True, default=str)),
            ).rowcount
    return n


def _user_error_inside(exc: BaseException | None) -> UserError | None:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, UserError):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


_NOT_DAMAGE = ("click.", "typer.")


@contextlib.contextmanager
def guard(db: os.PathLike | str | None):
    """Around a command that reads the store ``db``: an error that damage in the store explains
    (SQLite's own are StoreErrors already; this catches the rest: JSON that does not parse, a
    number that became text, a row whose parent is gone) becomes one line saying the store is
    damaged and how to recover it. An error the store does not explain propagates unchanged."""
    try:
        yield
    except (UserError, KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except Exception as exc:
        if type(exc).__module__.split(".")[0] + "." in _NOT_DAMAGE:
            raise
        inner = _user_error_inside(exc)
        if inner is not None:  # a library wrapped it (pandas re-raises what a cursor raised as its own)
            raise inner from None
        from fsmeter.store import default_db_path

        path = default_db_path(db)
        if not os.path.isfile(path):
            raise
        try:
            rep = check(path)
        except Exception:
            raise exc from None
        why = rep.problem()
        if why is None:
            raise
        raise damaged(path, why) from None


__all__ = [
    "CheckReport",
    "RecoverReport",
    "StoreError",
    "TABLES",
    "check",
    "guard",
    "recover",
    "recovered_name",
    "row_problem",
    "scan",
]
