"""Merge results databases: runs from other boots or machines meet in one store.

Every campaign of every input is copied whole (cells, factors, trials, phases, metrics,
intervals, histograms and the environment rows that say which kernel and host measured
them), under new ids. Inputs are never modified: each is copied to a temporary file and
brought to this fsmeter's schema version there. A campaign that is already in the output
(same name, creation time and source text) is not copied twice.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path

from fsmeter.errors import UserError


def _tables_in_order(conn: sqlite3.Connection) -> list[str]:
    """User tables, parents before children (by their foreign keys)."""
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    parents = {t: {r[2] for r in conn.execute(f"PRAGMA foreign_key_list({t})")} - {t} for t in names}
    out: list[str] = []
    while len(out) < len(names):
        ready = [t for t in names if t not in out and parents[t] <= set(out)]
        if not ready:  # pragma: no cover - a cycle would be a schema bug
            raise RuntimeError(f"foreign-key cycle among {set(names) - set(out)}")
        out += ready
    return out


def _has_id(conn: sqlite3.Connection, table: str) -> bool:
    return any(r[1] == "id" and r[5] for r in conn.execute(f"PRAGMA table_info({table})"))


def _prepared_copy(src: Path, tmp: str) -> Path:
    """A copy of `src` at this fsmeter's schema version (the original is left as it is)."""
    from fsmeter.store import open_store

    if not os.path.isfile(src):  # os.path: a name too long to look up is no file, not an OSError
        raise UserError(f"{src}: no such results database: check the path")
    # The input itself, read-only: not a store, damaged (integrity_check) or unsound in its tables,
    # columns or values, it is refused naming it, before anything is written.
    from fsmeter.store._sqlite import StoreError
    from fsmeter.store.health import check

    try:
        open_store(src, create=False).close()
    except StoreError as exc:
        raise UserError(f"merge: {exc.message} (nothing was merged)") from None
    why = check(src).problem(older_is_fine=True)  # every row read, as `store check` reads them
    if why is not None:
        from fsmeter.store._sqlite import damaged

        raise UserError(f"merge: {damaged(src, why).message} (nothing was merged)")
    dst = Path(tmp) / f"in-{len(os.listdir(tmp))}.sqlite"
    shutil.copyfile(src, dst)
    open_store(dst, create=False, writable=True).close()  # migrates the copy
    return dst


def merge_stores(inputs: Sequence[Path], out: Path) -> dict:
    """Copy every campaign of `inputs` into a new store `out`; returns counts per table and skipped duplicates."""
    from fsmeter.store import open_store

    out = Path(out)
    from fsmeter.userpaths import check_output_path

    check_output_path(out, "-o")
    if out.exists():
        raise UserError(f"-o {out}: the file exists: name a new file (merge never writes into an existing store)")
    if any(Path(i).resolve() == out.resolve() for i in inputs):
        raise UserError(f"-o {out}: the output is also an input: name a new file")
    counts: dict = {"campaigns": 0, "duplicates": []}
    with tempfile.TemporaryDirectory(prefix="fsmeter-merge-") as tmp:
        copies = [_prepared_copy(Path(i), tmp) for i in inputs]
        store = open_store(out)
        conn = store.conn
        src_path = Path()  # the input being copied (an IntegrityError comes from the loop below)
        try:
            try:
                tables = _tables_in_order(conn)
                for src_path, copy in zip(inputs, copies):
                    conn.execute("ATTACH DATABASE ? AS src", (str(copy),))
                    try:
                        with conn:
                            _copy_one(conn, tables, src_path, counts)
                    finally:
                        conn.execute("DETACH DATABASE src")
            finally:
                store.close()
        except sqlite3.IntegrityError as exc:
            # A row the store's own rules forbid (a NULL where a value must be, a status fsmeter
            # never writes): the input being copied is damaged. The output, made here, goes.
            out.unlink(missing_ok=True)
            raise _damaged_input(Path(src_path), exc) from None
    return counts


def _damaged_input(src: Path, exc: sqlite3.IntegrityError) -> UserError:
    from fsmeter.store._sqlite import recovered_name

    return UserError(
        f"{src}: a row breaks the store's rules ({' '.join(str(exc).split())}): the input is damaged; "
        f"run `fsmeter store recover {src} --to {recovered_name(src)}` and merge the recovered copy "
        "(nothing was written)"
    )


def _copy_one(conn: sqlite3.Connection, tables: list[str], src_path: Path, counts: dict) -> None:
    # Campaigns already in the output (merging a store with itself, or twice) are left out, with their rows.
    dup = [
        r[0]
        for r in conn.execute(
            "SELECT s.id FROM src.campaigns s WHERE EXISTS (SELECT 1 FROM main.campaigns m WHERE m.name = s.name "
            "AND m.created = s.created AND m.source = s.source)"
        )
    ]
    for cid in dup:
        name = conn.execute("SELECT name FROM src.campaigns WHERE id = ?", (cid,)).fetchone()[0]
        counts["duplicates"].append(f"{src_path}: campaign {cid} ({name})")
    offsets = {}
    for t in tables:
        if _has_id(conn, t):
            offsets[t] = conn.execute(f"SELECT coalesce(max(id), 0) FROM main.{t}").fetchone()[0]
    # Rows of a skipped campaign are left out table by table, following each table's foreign key.
    where = {"campaigns": f"id NOT IN ({','.join(map(str, dup))})"} if dup else {}
    for t in tables:
        cols = [r[1] for r in conn.execute(f"PRAGMA main.table_info({t})")]
        src_cols = {r[1] for r in conn.execute(f"PRAGMA src.table_info({t})")}
        fks = {r[3]: r[2] for r in conn.execute(f"PRAGMA main.foreign_key_list({t})")}
        exprs = []
        for c in cols:
            if c not in src_cols:
                exprs.append("NULL")  # a column the input's (migrated) schema does not have
            elif c == "id" and t in offsets:
                exprs.append(f"id + {offsets[t]}")
            elif c in fks and fks[c] in offsets:
                exprs.append(f"{c} + {offsets[fks[c]]}")
            else:
                exprs.append(c)
        for col, parent in fks.items():
            if parent in where:
                where[t] = f"{col} IN (SELECT id FROM src.{parent} WHERE {where[parent]})"
                break
        sql = f"INSERT INTO main.{t} ({', '.join(cols)}) SELECT {', '.join(exprs)} FROM src.{t}" + (
            f" WHERE {where[t]}" if t in where else ""
        )
        n = conn.execute(sql).rowcount
        counts[t] = counts.get(t, 0) + n
