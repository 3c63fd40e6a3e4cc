"""SQLite errors of a results store as one line a user can act on.

Every connection :func:`fsmeter.store.open_store` makes is a :class:`StoreConnection`: each
statement, fetch and commit on it turns an SQLite failure into a :class:`StoreError` (a
``UserError``) that names the store and says what to do: damaged (a corrupt page, text that is
not UTF-8), read-only, disk full, locked by another process, or an I/O error. Constraint
violations (``sqlite3.IntegrityError``) and mistakes in fsmeter's own SQL
(``sqlite3.ProgrammingError``) stay what they are: they are not the store's fault.

The SQLite result codes are the ones of sqlite.org/rescode.html.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import cast

from fsmeter.errors import UserError

#: Primary result codes (the low byte of an extended code), sqlite.org/rescode.html.
_PERM, _BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 5, 6, 8, 10, 11, 13, 14, 26


class StoreError(UserError):
    """The results store cannot be used as asked. ``kind``: damaged, readonly, full, locked, io."""

    def __init__(self, message: str, kind: str, exit_code: int = 1):
        super().__init__(message, exit_code=exit_code)
        self.kind = kind


def recovered_name(path: Path) -> Path:
    """Where `store recover` is suggested to write: beside the store, ``<stem>-recovered<suffix>``."""
    return path.with_name(f"{path.stem}-recovered{path.suffix or '.sqlite'}")


def read_only_uri(path: Path) -> str:
    """The URI that opens ``path`` read-only (sqlite.org/uri.html): the file is never written, and a
    missing one is not created. The path is quoted, so that a ``?`` or ``#`` in a name stays a name."""
    from urllib.parse import quote

    return f"file:{quote(str(Path(path).absolute()))}?mode=ro"


def integrity_summary(path: Path, limit: int = 160) -> str | None:
    """The first lines of ``PRAGMA integrity_check`` on ``path`` (a fresh, read-only connection): "ok"
    for a sound file, else what it found or the error that stopped it; None when it could not be
    run for a reason that says nothing about the file (locked by a writer, cannot be opened)."""
    try:
        conn = sqlite3.connect(read_only_uri(path), uri=True, timeout=30)
    except sqlite3.Error:
        return None
    try:
        conn.text_factory = lambda b: b.decode("utf-8", "replace")
        lines = [r[0] for r in conn.execute("PRAGMA integrity_check(20)").fetchall()]
    except UnicodeDecodeError:  # SQLite's message quotes bytes of a damaged schema entry
        return "malformed database schema (text that is not UTF-8)"
    except sqlite3.Error as exc:
        if _code(exc) in (_BUSY, _LOCKED, _READONLY, _CANTOPEN, _PERM):
            return None
        return " ".join(str(exc).split())
    finally:
        conn.close()
    text = "; ".join(" ".join(str(x).split()) for x in lines)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_damage(summary: str | None) -> bool:
    return summary is not None and summary != "ok"


def damaged(path: Path, detail: str) -> StoreError:
    """The message for a store whose content cannot be read: what was found and the way out."""
    return StoreError(
        f"store {path} is damaged ({detail}): run `fsmeter store recover {path} --to "
        f"{recovered_name(path)}` to copy out every readable trial, or restore it from a backup",
        "damaged",
    )


def _code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def is_decode_error(exc: BaseException) -> bool:
    """sqlite3 reports a TEXT value that is not UTF-8 as an OperationalError with this wording."""
    return isinstance(exc, sqlite3.OperationalError) and "Could not decode to UTF-8" in str(exc)


def store_error(path: Path, exc: sqlite3.Error) -> StoreError | None:
    """The StoreError for an SQLite failure on the store at ``path``, or None when it is not the
    store's fault (a constraint, a bug in a query): then the original error should propagate."""
    if isinstance(exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError)):
        return None
    code, text = _code(exc), str(exc)
    if code == _READONLY or (code is None and "readonly database" in text):
        return StoreError(
            f"store {path} is read-only ({text}): make it and its folder writable, or name "
            "another store with --db (reading commands work on a read-only store)",
            "readonly",
        )
    if code == _FULL or (code is None and "database or disk is full" in text):
        return StoreError(f"store {path}: its filesystem is full ({text}): free space there", "full")
    if code in (_BUSY, _LOCKED) or (code is None and "database is locked" in text):
        return StoreError(
            f"store {path} is locked by another process ({text}): wait for it to finish and retry", "locked"
        )
    if code == _NOTADB:
        return StoreError(
            f"{path} is not a usable fsmeter results database ({text}): give the right --db, "
            "or restore it from a backup",
            "damaged",
        )
    if code == _CORRUPT or is_decode_error(exc) or (code is None and "malformed" in text):
        what = (
            "text that is not UTF-8"
            if is_decode_error(exc)
            else f"PRAGMA integrity_check: {integrity_summary(path) or text}"
        )
        return damaged(path, what)
    if code == _IOERR:
        summary = integrity_summary(path)
        if is_damage(summary):
            return damaged(path, f"{text}; PRAGMA integrity_check: {summary}")
        return StoreError(f"store {path}: disk I/O error ({text}): check the disk and free space, then retry", "io")
    if code in (_CANTOPEN, _PERM):
        return StoreError(
            f"store {path} cannot be opened ({text}): check that it and its folder are readable and writable", "io"
        )
    # Anything else ("no such table" in a store whose schema page is damaged, ...): damage if the
    # file says so; otherwise a genuine fsmeter error, left alone.
    summary = integrity_summary(path)
    return damaged(path, f"{text}; PRAGMA integrity_check: {summary}") if is_damage(summary) else None


def _mapped(path: Path, exc: sqlite3.Error | UnicodeDecodeError) -> BaseException:
    if isinstance(exc, UnicodeDecodeError):
        # SQLite's own message quoted bytes of the file that are not UTF-8 (a damaged schema entry): the
        # message cannot even be read, the store is damaged.
        return damaged(
            path,
            f"text that is not UTF-8 where SQLite reads its schema; PRAGMA integrity_check: "
            f"{integrity_summary(path) or 'could not run'}",
        )
    return store_error(path, exc) or exc


class StoreCursor(sqlite3.Cursor):
    """A cursor whose SQLite failures are StoreErrors (see the module's docstring)."""

    def _path(self) -> Path:
        return cast("StoreConnection", self.connection).store_path

    def execute(self, *args, **kwargs):
        try:
            return super().execute(*args, **kwargs)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise _mapped(self._path(), exc) from None

    def executemany(self, *args, **kwargs):
        try:
            return super().executemany(*args, **kwargs)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise _mapped(self._path(), exc) from None

    def executescript(self, *args, **kwargs):
        try:
            return super().executescript(*args, **kwargs)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise _mapped(self._path(), exc) from None

    def fetchone(self):
        try:
            return super().fetchone()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise _mapped(self._path(), exc) from None

    def fetchmany(self, *args, **kwargs):
        try:
            return super().fetchmany(*args, **kwargs)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise _mapped(self._path(), exc) from None

    def fetchall(self):
        try:
            return super().fetchall()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise _mapped(self._path(), exc) from None

    def __next__(self):
        try:
            return super().__next__()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise _mapped(self._path(), exc) from None


class StoreConnection(sqlite3.Connection):
    """``sqlite3.connect(path, factory=StoreConnection)``: statements go through StoreCursor, and
    commits (also the one of ``with conn:``) map their failures the same way."""

    def __init__(self, database, *args, **kwargs):
        super().__init__(database, *args, **kwargs)
        self.store_path = Path(database)

    # Connection.cursor's stub has overloads by factory; this one only changes the default.
    def cursor(self, factory=StoreCursor):  # pyright: ignore[reportIncompatibleMethodOverride]
        return super().cursor(factory)

    def execute(self, *args, **kwargs):
        return self.cursor().execute(*args, **kwargs)

    def executemany(self, *args, **kwargs):
        return self.cursor().executemany(*args, **kwargs)

    def executescript(self, *args, **kwargs):
        return self.cursor().executescript(*args, **kwargs)

    def commit(self):
        try:
            return super().commit()
        except sqlite3.Error as exc:
            raise _mapped(self.store_path, exc) from None

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                self.commit()
            except BaseException:
                self._rollback_quietly()
                raise
        else:
            self._rollback_quietly()
        return False

    def _rollback_quietly(self) -> None:
        try:
            super().rollback()
        except sqlite3.Error:
            pass  # a damaged or full store: the transaction is abandoned either way


__all__ = [
    "StoreConnection",
    "StoreCursor",
    "StoreError",
    "damaged",
    "integrity_summary",
    "is_damage",
    "is_decode_error",
    "read_only_uri",
    "recovered_name",
    "store_error",
]
