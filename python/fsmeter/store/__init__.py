"""The results store: one SQLite file (stdlib sqlite3) holding every campaign, cell, trial and sample.

    store = open_store("fsmeter.sqlite")          # creates or migrates the schema
    cid = store.create_campaign(name, source_text, cells=[("seq-read", {"filesystem": "ext4"})])
    store.record_trial(cell_id, number, status="ok", ...)   # one transaction per trial
    df = tidy("fsmeter.sqlite", campaign=cid)     # one row per trial x metric (pandas)

The schema is ``schema.sql`` (version 1) plus ``migrate_N.sql`` files, each bringing the
database to version N; ``PRAGMA user_version`` holds the version. ``HISTORY.md`` says what
each version changed. pandas is imported only by :func:`tidy` and :func:`load`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fsmeter.engine import latency_measured
from fsmeter.errors import UserError
from fsmeter.store._sqlite import StoreConnection, StoreError, damaged, integrity_summary, is_damage, store_error
from fsmeter.store.schema_check import HERE  # noqa: F401  (the folder of schema.sql, as before)
from fsmeter.store.schema_check import migrations as _migrations

DEFAULT_DB = "fsmeter.sqlite"


SCHEMA_VERSION = _migrations()[-1][0]

#: Columns of tidy() before the factor columns (the analyze CLI and the report rely on them).
TIDY_COLUMNS = [
    "campaign_id",
    "campaign",
    "cell_id",
    "trial",
    "status",
    "discarded",
    "workload",
    "phase",
    "metric",
    "unit",
    "higher_is_better",
    "value",
]

_ENV_COLUMNS = [
    "hostname",
    "kernel",
    "cpu_model",
    "mem_bytes",
    "cpus_online",
    "cpus_used",
    "target_kind",
    "device",
    "fs",
    "mkfs_command",
    "mkfs_options",
    "mkfs_tool",
    "mkfs_tool_version",
    "mount_options",
    "proc_mounts_line",
    "scheduler",
    "readahead_kb",
    "cache_method",
    "seed",
    "fsmeter_version",
]


#: The largest row id SQLite holds (a signed 64-bit integer).
MAX_ROW_ID = (1 << 63) - 1


def _utf8(text: str) -> bool:
    """Whether ``text`` can be stored as UTF-8 (a command-line argument of bytes that are not UTF-8 holds
    surrogates, which sqlite3 refuses to bind)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def default_db_path(db: os.PathLike | str | None = None) -> Path:
    """--db, else $FSMETER_DB, else ./fsmeter.sqlite."""
    return Path(db or os.environ.get("FSMETER_DB") or DEFAULT_DB)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def _new_id(cur: sqlite3.Cursor) -> int:
    """The id of the row an INSERT just made (sqlite3 types ``lastrowid`` as ``int | None``; it is None
    only when the statement inserted no row, which an INSERT that returned does not)."""
    rowid = cur.lastrowid
    if rowid is None:
        raise RuntimeError("an INSERT made no row: no id to return")
    return rowid


def _json(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


class Store:
    """An open results database. Use :func:`open_store`."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn = conn
        self.path = path

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    # -- campaigns and cells --------------------------------------------------------------
    def create_campaign(self, name: str, source: str, cells: Sequence[tuple], source_path: str | None = None) -> int:
        """Insert a campaign and its matrix: ``cells`` is [(workload, {factor: level})] in run order."""
        import fsmeter

        with self.conn:
            cur = self.conn.execute(
                "INSERT INTO campaigns (name, source, source_path, created, status, fsmeter_version) "
                "VALUES (?, ?, ?, ?, 'running', ?)",
                (name, source, source_path, now_iso(), fsmeter.__version__),
            )
            cid = _new_id(cur)
            for idx, (workload, factors) in enumerate(cells):
                cc = self.conn.execute(
                    "INSERT INTO cells (campaign_id, idx, workload, factors) VALUES (?, ?, ?, ?)",
                    (cid, idx, workload, _json(factors)),
                )
                self.conn.executemany(
                    "INSERT INTO cell_factors (cell_id, name, value) VALUES (?, ?, ?)",
                    [(_new_id(cc), k, _json(v)) for k, v in factors.items()],
                )
        return cid

    def campaign(self, ref: int | str) -> sqlite3.Row:
        """A campaign by id, or by name (the newest of that name)."""
        row = None
        text = str(ref)
        # An id is ASCII digits within SQLite's integer; a name must be text SQLite can hold (UTF-8).
        if isinstance(ref, int) or (text.isascii() and text.isdigit()):
            if int(ref) <= MAX_ROW_ID:
                row = self.conn.execute("SELECT * FROM campaigns WHERE id = ?", (int(ref),)).fetchone()
        if row is None and _utf8(text):
            row = self.conn.execute(
                "SELECT * FROM campaigns WHERE name = ? ORDER BY id DESC LIMIT 1", (text,)
            ).fetchone()
        if row is None:
            shown = repr(ref) if _utf8(text) else ascii(text)  # bytes that are not UTF-8, escaped
            raise UserError(f"no campaign {shown} in {self.path}: see `fsmeter campaign list --db {self.path}`")
        return row

    def campaign_id(self, ref: int | str | None = None) -> int:
        """The id of campaign ``ref`` (id or name), or of the newest campaign when ``ref`` is None."""
        if ref is not None:
            return int(self.campaign(ref)["id"])
        rows = self.campaigns()
        if not rows:
            raise UserError(f"no campaign in {self.path}: run one with `fsmeter campaign run FILE --db {self.path}`")
        return int(rows[-1]["id"])

    def campaigns(self) -> list:
        return self.conn.execute(
            "SELECT c.*, (SELECT count(*) FROM cells WHERE campaign_id = c.id) AS n_cells,"
            " (SELECT count(*) FROM cells WHERE campaign_id = c.id AND status IN ('done', 'failed')) AS n_finished,"
            " (SELECT count(*) FROM trials t JOIN cells e ON t.cell_id = e.id WHERE e.campaign_id = c.id) AS n_trials"
            " FROM campaigns c ORDER BY c.id"
        ).fetchall()

    def cells(self, campaign_id: int) -> list:
        return self.conn.execute("SELECT * FROM cells WHERE campaign_id = ? ORDER BY idx", (campaign_id,)).fetchall()

    def trials(self, cell_id: int) -> list:
        return self.conn.execute("SELECT * FROM trials WHERE cell_id = ? ORDER BY number", (cell_id,)).fetchall()

    def headline_values(self, cell_id: int) -> list:
        """[(trial number, headline value)] of the cell's ok trials, in order (for the adaptive rule)."""
        return self.conn.execute(
            "SELECT t.number, m.value FROM trials t JOIN metrics m ON m.trial_id = t.id AND m.headline = 1 "
            "WHERE t.cell_id = ? AND t.status = 'ok' ORDER BY t.number",
            (cell_id,),
        ).fetchall()

    def campaign_owner(self, campaign_id: int) -> dict | None:
        """The identity (fsmeter.runlock.identity) of the process running the campaign, or None."""
        row = self.conn.execute("SELECT owner FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()
        try:
            return json.loads(row["owner"]) if row is not None and row["owner"] else None
        except ValueError:
            return None

    def claim_campaign(self, campaign_id: int, me: dict, expected: dict | None) -> bool:
        """Record ``me`` as the campaign's owner if its owner is still ``expected`` (compare and set,
        so of two processes claiming at once only one wins). Returns whether the claim held."""
        old = _json(expected) if expected is not None else None
        raw = self.conn.execute("SELECT owner FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()
        if raw is None:
            return False
        stored = raw["owner"]
        same = (stored is None and old is None) or (
            stored is not None and old is not None and json.loads(stored) == expected
        )
        if not same:
            return False
        with self.conn:
            cur = self.conn.execute(
                "UPDATE campaigns SET owner = ? WHERE id = ? AND owner IS ?", (_json(me), campaign_id, stored)
            )
        return cur.rowcount == 1

    def release_campaign(self, campaign_id: int, me: dict) -> None:
        """Clear the owner, if it is still ``me``."""
        with self.conn:
            self.conn.execute("UPDATE campaigns SET owner = NULL WHERE id = ? AND owner = ?", (campaign_id, _json(me)))

    def set_campaign_status(self, campaign_id: int, status: str) -> None:
        with self.conn:
            self.conn.execute(
                "UPDATE campaigns SET status = ?, finished = ? WHERE id = ?",
                (status, now_iso() if status != "running" else None, campaign_id),
            )

    def set_cell_status(
        self, cell_id: int, status: str, cause: str | None = None, stop_reason: str | None = None
    ) -> None:
        with self.conn:
            self.conn.execute(
                "UPDATE cells SET status = ?, cause = ?, stop_reason = coalesce(?, stop_reason) WHERE id = ?",
                (status, cause, stop_reason, cell_id),
            )

    # -- the storage under the target -----------------------------------------------------
    def record_storage_probe(self, campaign_id: int, probe: Mapping) -> int:
        """Store one probe of the campaign's target (fsmeter.provision.storage_probe.StorageProbe.as_dict(),
        optionally with ``cpu_mhz``, ``cpus_online`` and ``hostname``); returns its id."""
        row = dict(probe)
        with self.conn:
            cur = self.conn.execute(
                "INSERT INTO storage_probes (campaign_id, probed, hostname, storage_class, span_bytes, "
                "random_read_ms_p50, random_read_ms_mean, seq_read_mb_s, seq_write_mb_s, flush_ms_p50, cpu_mhz, "
                "cpus_online, report) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    campaign_id,
                    now_iso(),
                    row.get("hostname"),
                    str(row.get("storage_class") or "unknown"),
                    row.get("span_bytes"),
                    row.get("random_read_ms_p50"),
                    row.get("random_read_ms_mean"),
                    row.get("seq_read_mb_s"),
                    row.get("seq_write_mb_s"),
                    row.get("flush_ms_p50"),
                    row.get("cpu_mhz"),
                    row.get("cpus_online"),
                    json.dumps(row, default=str),
                ),
            )
        return _new_id(cur)

    def storage_probes(self, campaign_id: int) -> list:
        return self.conn.execute(
            "SELECT * FROM storage_probes WHERE campaign_id = ? ORDER BY id", (campaign_id,)
        ).fetchall()

    # -- trials ---------------------------------------------------------------------------
    def record_trial(
        self,
        cell_id: int,
        number: int,
        *,
        status: str,
        started: str,
        ended: str | None = None,
        cause: str | None = None,
        discarded: bool = False,
        stop_reason: str | None = None,
        half_width_pct: float | None = None,
        phases: Iterable[Mapping] = (),
        metrics: Iterable[Mapping] = (),
        environment: Mapping | None = None,
    ) -> int:
        """Store one trial with everything measured in it, in one transaction; returns the trial id.

        ``phases``: dicts with key, engine_phase, measured, discarded, cache_method and report (the
        engine's phase report). ``metrics``: dicts with phase, name, unit, higher_is_better, value
        and optionally headline and keys (a dict, for one value of a grid). ``environment``: keys named like the environment columns; any
        other key goes into its ``extra`` JSON.
        """
        with self.conn:
            cur = self.conn.execute(
                "INSERT INTO trials (cell_id, number, status, cause, started, ended, discarded, stop_reason, "
                "half_width_pct) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    cell_id,
                    number,
                    status,
                    cause,
                    started,
                    ended or now_iso(),
                    int(bool(discarded)),
                    stop_reason,
                    half_width_pct,
                ),
            )
            tid = _new_id(cur)
            for seq, ph in enumerate(phases):
                rep = ph.get("report") or {}
                reg = rep.get("regime") or {}  # fsmeter.regime: others' CPU, page-cache reads
                pc = self.conn.execute(
                    "INSERT INTO phases (trial_id, seq, key, engine_phase, measured, discarded, elapsed_s, warmup_s,"
                    " interrupted, cache_method, report, other_cpu_share, cache_read_share, cache_write_share)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        tid,
                        seq,
                        ph["key"],
                        ph.get("engine_phase", ph["key"]),
                        int(bool(ph.get("measured", True))),
                        int(bool(ph.get("discarded", False))),
                        rep.get("elapsed_s"),
                        rep.get("warmup_s"),
                        int(bool(rep.get("interrupted", False))),
                        ph.get("cache_method"),
                        _json(rep),
                        reg.get("other_cpu_share"),
                        reg.get("cache_read_share"),
                        reg.get("cache_write_share"),
                    ),
                )
                pid = _new_id(pc)
                self.conn.executemany(
                    "INSERT INTO intervals (phase_id, t_s, dur_s, ops, bytes) VALUES (?, ?, ?, ?, ?)",
                    [(pid, iv["t_s"], iv["dur_s"], iv["ops"], iv["bytes"]) for iv in rep.get("intervals") or []],
                )
                hist = []
                for op, o in (rep.get("ops") or {}).items():
                    if not latency_measured(o):
                        continue  # counted, not timed one by one: no latency to store
                    lat = o.get("lat") or {}
                    hist.append(
                        (
                            pid,
                            op,
                            lat.get("count"),
                            lat.get("min_ns"),
                            lat.get("mean_ns"),
                            lat.get("stdev_ns"),
                            lat.get("p50_ns"),
                            lat.get("p90_ns"),
                            lat.get("p99_ns"),
                            lat.get("p999_ns"),
                            lat.get("p9999_ns"),
                            lat.get("max_ns"),
                            json.dumps(lat.get("buckets") or []),
                        )
                    )
                self.conn.executemany(
                    "INSERT INTO histograms (phase_id, op, count, min_ns, mean_ns, stdev_ns, p50_ns, p90_ns, p99_ns,"
                    " p999_ns, p9999_ns, max_ns, buckets) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    hist,
                )
            self.conn.executemany(
                "INSERT INTO metrics (trial_id, phase_key, name, unit, higher_is_better, headline, value, keys) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        tid,
                        m["phase"],
                        m["name"],
                        m["unit"],
                        int(bool(m["higher_is_better"])),
                        int(bool(m.get("headline", False))),
                        None if m["value"] is None else float(m["value"]),
                        None if m.get("keys") is None else _json(m["keys"]),
                    )
                    for m in metrics
                ],
            )
            if environment is not None:
                env = dict(environment)
                row = {k: env.pop(k, None) for k in _ENV_COLUMNS}
                if isinstance(row["mkfs_options"], (list, tuple)):
                    row["mkfs_options"] = json.dumps(list(row["mkfs_options"]))
                cols = ["trial_id", *_ENV_COLUMNS, "extra"]
                self.conn.execute(
                    f"INSERT INTO environment ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    (tid, *row.values(), _json(env)),
                )
        return tid

    def delete_trial(self, trial_id: int) -> None:
        with self.conn:
            self.conn.execute("DELETE FROM trials WHERE id = ?", (trial_id,))


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    have = conn.execute("PRAGMA user_version").fetchone()[0]
    if have > SCHEMA_VERSION:
        raise UserError(
            f"{path}: results database version {have} is newer than this fsmeter knows "
            f"({SCHEMA_VERSION}): upgrade fsmeter",
            exit_code=1,
        )
    for version, sql in _migrations():
        if version <= have:
            continue
        # A step that rebuilds a table others point at says so on its first line: foreign keys are
        # off around it (they cannot change inside a transaction), then checked.
        fk_off = sql.startswith("-- fsmeter: foreign_keys off")
        if fk_off:
            conn.execute("PRAGMA foreign_keys = OFF")
        # executescript commits first; the version bump is inside the script's own transaction.
        try:
            conn.executescript(f"BEGIN;\n{sql}\nPRAGMA user_version = {version};\nCOMMIT;")
        finally:
            if fk_off:
                conn.execute("PRAGMA foreign_keys = ON")
        if fk_off and conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
            raise UserError(
                f"{path}: migrating to version {version} broke a foreign key: restore a backup", exit_code=1
            )


def open_store(path: os.PathLike | str | None = None, *, create: bool = True, writable: bool | None = None) -> Store:
    """Open the results database at ``path`` (default: see default_db_path).

    ``writable`` (default: ``create``): the caller will store results. The store is created (``create``) or
    migrated to this fsmeter's schema, and a store that cannot take results is refused now, before
    anything is measured: one that is read-only (or in a read-only folder), damaged (``PRAGMA
    integrity_check``), another program's SQLite database, or not of fsmeter's shape (:mod:`schema_check`).

    Not ``writable``: the caller only reads. The file is opened read-only (it is never changed, not even
    migrated: an older store is migrated in a copy in memory), and refused in one line when it is not an
    fsmeter store or differs from a sound one (a table or column missing, a value of the wrong type or
    kind), naming the damage and the `store recover` command. Every SQLite failure later on the
    connection is a :class:`StoreError` (see ``_sqlite.py``)."""
    path = default_db_path(path)
    writable = create if writable is None else writable
    if not writable:
        return _open_reading(path)
    if not create and not os.path.isfile(path):  # os.path: a name too long is no file, not an OSError
        raise UserError(f"no such results database: {path}: give --db or set FSMETER_DB")
    if not os.path.isdir(path.parent):
        raise UserError(f"--db {path}: the folder {path.parent} does not exist")
    if create and not os.path.lexists(path):  # a new store is an output: the rules of every output path
        from fsmeter.userpaths import check_output_path

        check_output_path(path, "--db")
    existed = os.path.isfile(path) and path.stat().st_size > 0
    try:
        conn = sqlite3.connect(str(path), timeout=30, isolation_level="DEFERRED", factory=StoreConnection)
    except sqlite3.Error as exc:
        raise (store_error(path, exc) or UserError(f"{path}: cannot open it ({exc})", exit_code=1)) from None
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = FULL")
        if writable:
            _check_writable(conn, path, existed)
        _refuse_foreign(conn, path)
        _migrate(conn, path)
        if existed:
            _refuse_unsound(conn, path)
    except StoreError:
        conn.close()
        raise
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise UserError(f"{path}: not a usable fsmeter results database ({exc})", exit_code=1) from None
    except BaseException:
        conn.close()
        raise
    return Store(conn, path)


def _not_a_store(path: Path, why: str) -> StoreError:
    return StoreError(
        f"{path} is not an fsmeter results store ({why}): name the store with --db (or $FSMETER_DB)", "foreign"
    )


def _refuse_foreign(conn: sqlite3.Connection, path: Path) -> None:
    """An SQLite file of another program (version 0, tables of its own) is not made a store: fsmeter
    would add its tables beside the other program's."""
    if conn.execute("PRAGMA user_version").fetchone()[0] != 0:
        return
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")]
    if tables:
        shown = ", ".join(sorted(tables)[:3]) + (" ..." if len(tables) > 3 else "")
        raise _not_a_store(path, f"an SQLite database with other tables: {shown}")


#: {(path, device, inode, size, mtime): the store's first problem, or None}: a store read several
#: times by one command (a report reads it per chart) is checked once while it is unchanged.
_CHECKED: dict = {}


def _refuse_unsound(conn: sqlite3.Connection, path: Path, identity: tuple | None = None) -> None:
    """Refuse a store that differs from a sound one (schema_check.store_problem), naming the damage."""
    from fsmeter.store.schema_check import store_problem

    if identity is None:
        st = path.stat()
        identity = (str(path.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if identity not in _CHECKED:
        _CHECKED[identity] = store_problem(conn)
    if _CHECKED[identity] is not None:
        raise damaged(path, _CHECKED[identity])


def _open_reading(path: Path) -> Store:
    """The store at ``path``, opened read-only for a command that only reads it (see open_store)."""
    from fsmeter.store._sqlite import read_only_uri

    try:
        st = path.stat()
    except OSError:
        st = None
    if st is None or not os.path.isfile(path):
        raise UserError(f"no such results database: {path}: give --db or set FSMETER_DB")
    if st.st_size == 0:
        raise _not_a_store(path, "an empty file; a command that only reads never makes one")
    identity = (str(path.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    try:
        conn = sqlite3.connect(read_only_uri(path), uri=True, timeout=30, factory=StoreConnection)
    except sqlite3.Error as exc:
        raise (store_error(path, exc) or UserError(f"{path}: cannot open it ({exc})", exit_code=1)) from None
    conn.store_path = path
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            raise _not_a_store(path, "an SQLite database without fsmeter's tables" if tables else "no tables")
        if version < SCHEMA_VERSION:  # an older store: migrated in memory, the file left as it is
            mem = sqlite3.connect(":memory:", isolation_level="DEFERRED", factory=StoreConnection)
            conn.backup(mem)
            conn.close()
            conn = mem
            conn.store_path = path
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA foreign_keys = ON")
        _migrate(conn, path)
        _refuse_unsound(conn, path, identity)
    except StoreError:
        conn.close()
        raise
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise UserError(f"{path}: not a usable fsmeter results database ({exc})", exit_code=1) from None
    except BaseException:
        conn.close()
        raise
    return Store(conn, path)


def _check_writable(conn: sqlite3.Connection, path: Path, existed: bool) -> None:
    """Refuse a store that cannot take results: damaged, or read-only. The probe rewrites the
    version number with its own value inside a transaction that is rolled back: SQLite refuses
    that write on a read-only file or folder (and as root, where permissions do not, on a
    read-only mount), and it changes nothing otherwise."""
    if existed:
        summary = integrity_summary(path)
        if is_damage(summary):
            raise damaged(path, f"PRAGMA integrity_check: {summary}")
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(f"PRAGMA user_version = {int(version)}")
    finally:
        if conn.in_transaction:
            conn.rollback()


# -- reading for analysis (pandas) ----------------------------------------------------------
def _campaign_ids(store: Store, campaign: Any) -> list:
    if campaign is None:
        return [r["id"] for r in store.conn.execute("SELECT id FROM campaigns ORDER BY id")]
    if isinstance(campaign, (list, tuple)):
        return [store.campaign(c)["id"] for c in campaign]
    return [store.campaign(campaign)["id"]]


def _factor_frame(store: Store, ids: list):
    import pandas as pd

    q = (
        "SELECT f.cell_id, f.name, f.value FROM cell_factors f JOIN cells c ON c.id = f.cell_id "
        f"WHERE c.campaign_id IN ({','.join('?' * len(ids))})"
    )
    rows = store.conn.execute(q, ids).fetchall()
    data: dict = {}
    for r in rows:
        data.setdefault(r["cell_id"], {})[r["name"]] = json.loads(r["value"])
    if not data:
        return pd.DataFrame({"cell_id": pd.Series(dtype="int64")})
    fr = pd.DataFrame.from_dict(data, orient="index")
    fr.index.name = "cell_id"
    return fr.reset_index()


def tidy(db_path, campaign: Any = None):
    """One row per trial x metric: TIDY_COLUMNS plus one column per factor (levels as in the file).

    ``campaign``: an id, a name (newest of that name), a list of those, or None for all.
    Failed and interrupted trials are included (status tells); their missing metrics are absent.
    """
    import pandas as pd

    with open_store(db_path, create=False) as store:
        ids = _campaign_ids(store, campaign)
        if not ids:
            return pd.DataFrame(columns=TIDY_COLUMNS)
        q = (
            "SELECT k.id AS campaign_id, k.name AS campaign, c.id AS cell_id, t.number AS trial, t.status,"
            " t.discarded, c.workload, m.phase_key AS phase, m.name AS metric, m.unit, m.higher_is_better, m.value"
            " FROM metrics m JOIN trials t ON t.id = m.trial_id JOIN cells c ON c.id = t.cell_id"
            " JOIN campaigns k ON k.id = c.campaign_id"
            f" WHERE k.id IN ({','.join('?' * len(ids))}) ORDER BY k.id, c.idx, t.number, m.rowid"
        )
        df = pd.read_sql_query(q, store.conn, params=ids)
        factors = _factor_frame(store, ids)
    df["discarded"] = df["discarded"].astype(bool)
    df["higher_is_better"] = df["higher_is_better"].astype(bool)
    df["value"] = df["value"].astype(float)
    fac_cols = [c for c in factors.columns if c != "cell_id" and c not in TIDY_COLUMNS]
    return df.merge(factors[["cell_id", *fac_cols]], on="cell_id", how="left")[TIDY_COLUMNS + fac_cols]


def load(path=None, campaign: Any = None) -> dict:
    """Every table as pandas DataFrames, joined for convenience; see docs/store.md.

    Keys: campaigns, cells (with factor columns), trials (with cell factors), metrics (= tidy()),
    phases (without the report JSON), intervals (with trial/phase/cell ids), histograms, environment,
    storage (the probes of the campaigns' targets, without their JSON).
    """
    import pandas as pd

    path = default_db_path(path)
    metrics = tidy(path, campaign)
    with open_store(path, create=False) as store:
        ids = _campaign_ids(store, campaign)
        ph = ",".join("?" * len(ids)) or "NULL"
        sel = lambda q: pd.read_sql_query(q, store.conn, params=ids)  # noqa: E731
        factors = _factor_frame(store, ids)
        out = {
            "campaigns": sel(
                f"SELECT id AS campaign_id, name, created, finished, status, fsmeter_version, source "
                f"FROM campaigns WHERE id IN ({ph})"
            ),
            "cells": sel(
                f"SELECT campaign_id, id AS cell_id, idx, workload, status, cause, stop_reason FROM cells "
                f"WHERE campaign_id IN ({ph}) ORDER BY campaign_id, idx"
            ),
            "trials": sel(
                "SELECT c.campaign_id, t.cell_id, t.id AS trial_id, t.number AS trial, c.workload, t.status,"
                " t.cause, t.started, t.ended, t.discarded, t.stop_reason, t.half_width_pct"
                f" FROM trials t JOIN cells c ON c.id = t.cell_id WHERE c.campaign_id IN ({ph})"
                " ORDER BY c.campaign_id, c.idx, t.number"
            ),
            "metrics": metrics,
            "phases": sel(
                "SELECT c.campaign_id, t.cell_id, t.number AS trial, p.id AS phase_id, p.seq, p.key AS phase,"
                " p.engine_phase, p.measured, p.discarded, p.elapsed_s, p.warmup_s, p.interrupted,"
                " p.cache_method, p.other_cpu_share, p.cache_read_share, p.cache_write_share,"
                # a disk model's late replies (fsmeter.regime): 1, 0, or NULL off a disk model
                " CASE WHEN json_valid(p.report) THEN json_extract(p.report, '$.regime.disturbed') END AS disturbed,"
                # ... and whether it set the pace (fsmeter.regime.disk_bound): 1, 0, or NULL off a disk model
                " CASE WHEN json_valid(p.report) THEN json_extract(p.report, '$.regime.disk_bound') END AS disk_bound,"
                # ... and the share of the machine's CPU time the hypervisor took (steal): NULL when not recorded
                " CASE WHEN json_valid(p.report) AND p.elapsed_s > 0"
                " AND json_extract(p.report, '$.regime.cpus') > 0 THEN"
                " json_extract(p.report, '$.regime.steal_cpu_s') / (p.elapsed_s * json_extract(p.report, '$.regime.cpus'))"
                " END AS steal_share"
                " FROM phases p JOIN trials t ON t.id = p.trial_id"
                f" JOIN cells c ON c.id = t.cell_id WHERE c.campaign_id IN ({ph})"
            ),
            "intervals": sel(
                "SELECT c.campaign_id, t.cell_id, t.number AS trial, c.workload, p.key AS phase,"
                " i.t_s, i.dur_s, i.ops, i.bytes FROM intervals i JOIN phases p ON p.id = i.phase_id"
                " JOIN trials t ON t.id = p.trial_id JOIN cells c ON c.id = t.cell_id"
                f" WHERE c.campaign_id IN ({ph}) ORDER BY i.rowid"
            ),
            "histograms": sel(
                "SELECT c.campaign_id, t.cell_id, t.number AS trial, p.key AS phase, h.*"
                " FROM histograms h JOIN phases p ON p.id = h.phase_id JOIN trials t ON t.id = p.trial_id"
                f" JOIN cells c ON c.id = t.cell_id WHERE c.campaign_id IN ({ph})"
            ),
            "environment": sel(
                "SELECT c.campaign_id, t.cell_id, t.number AS trial, e.* FROM environment e"
                " JOIN trials t ON t.id = e.trial_id JOIN cells c ON c.id = t.cell_id"
                f" WHERE c.campaign_id IN ({ph})"
            ),
            "storage": sel(
                "SELECT campaign_id, probed, hostname, storage_class, span_bytes, random_read_ms_p50,"
                " random_read_ms_mean, seq_read_mb_s, seq_write_mb_s, flush_ms_p50, cpu_mhz, cpus_online"
                f" FROM storage_probes WHERE campaign_id IN ({ph}) ORDER BY id"
            ),
        }
    fac_cols = [c for c in factors.columns if c != "cell_id"]
    for key in ("cells", "trials", "intervals"):
        out[key] = out[key].merge(factors, on="cell_id", how="left") if fac_cols else out[key]
    return out


__all__ = [
    "DEFAULT_DB",
    "SCHEMA_VERSION",
    "Store",
    "StoreError",
    "TIDY_COLUMNS",
    "default_db_path",
    "load",
    "open_store",
    "tidy",
]
