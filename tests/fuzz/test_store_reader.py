"""The results store as hostile input: a store altered in any column of any table (a value of another type,
NaN, text that is not UTF-8, JSON of the wrong kind, a status fsmeter never writes), or in its structure (a
column dropped, a table renamed), is read by the commands' reader (open, tidy, load, the JSON export) to a
result or one UserError naming the damage; the file is never changed; and the fast check every reading
command runs first never calls sound what `store check` calls damaged."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3

import pytest
from fsmeter.errors import UserError
from fsmeter.store import load, open_store, tidy
from fsmeter.store.health import check, guard
from fsmeter.store.schema_check import TABLES, expected_schema
from fuzz_common import SLOW, result_or_user_error
from hypothesis import given
from hypothesis import strategies as st
from store_damage import drop_column, rename_table, set_first
from store_sample import fill

COLUMNS = [(t, c.name) for t, _, _ in TABLES for c in expected_schema()[0][t]]

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.binary(max_size=30),
    st.sampled_from(
        [
            "",
            "{",
            "[]",
            "{}",
            "7",
            '"x"',
            '{"a": NaN}',
            "null",
            "bogus",
            "ok",
            "corrupt",
            "[[1, 2]]",
            '{"filesystem": "ext4"}',
            "9" * 40,
            "1e400",
        ]
    ),
)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "pristine.sqlite"
    fill(path)[0].close()
    return path


def read_everything(path):
    """What reading commands do with a store: open it, the tidy frame, every table, the JSON export."""
    from fsmeter.report.export import campaign_document

    with guard(path):
        with open_store(path, create=False) as store:
            store.campaigns()
            cid = store.campaign_id()
        tidy(path, cid)
        load(path, cid)
        campaign_document(path, str(cid))


def check_store(path):
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    _, err = result_or_user_error(read_everything, path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before, "a reading command changed the store"
    report = check(path)
    if err is not None and "damaged" in err.message:
        assert not report.healthy, f"read refused it ({err.message}) but store check calls it healthy"
    if err is None:
        # read through: the fast check found nothing, and nothing the reader met was damage
        assert report.problem() is None or report.healthy is False
    return err, report


@SLOW
@given(st.sampled_from(COLUMNS), VALUES)
def test_any_value_in_any_column(tmp_path_factory, pristine, column, value):
    path = tmp_path_factory.mktemp("v") / "s.sqlite"
    shutil.copyfile(pristine, path)
    table, name = column
    if isinstance(value, str) and value.startswith("\udc80"):
        value = value.encode("utf-8", "surrogatepass")
    try:
        set_first(path, table, name, value)
    except (sqlite3.Error, OverflowError, UnicodeEncodeError):
        return  # SQLite itself refuses to store it (a NOT NULL, a unique key, a surrogate)
    err, report = check_store(path)
    if not report.healthy:
        # damage that store check sees is never read through silently by open_store's check
        with pytest.raises(UserError):
            read_everything(path)


@SLOW
@given(st.sampled_from(COLUMNS), st.binary(min_size=1, max_size=8))
def test_text_that_is_not_utf8(tmp_path_factory, pristine, column, junk):
    path = tmp_path_factory.mktemp("u") / "s.sqlite"
    shutil.copyfile(pristine, path)
    table, name = column
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute(
            f'UPDATE "{table}" SET "{name}" = CAST(? AS TEXT) WHERE rowid = (SELECT min(rowid) FROM "{table}")',
            (b"\xff" + junk,),
        )
        conn.commit()
    except sqlite3.Error:
        return
    finally:
        conn.close()
    check_store(path)


@SLOW
@given(st.sampled_from(COLUMNS), st.booleans())
def test_a_column_dropped_or_its_table_renamed(tmp_path_factory, pristine, column, rename):
    path = tmp_path_factory.mktemp("s") / "s.sqlite"
    shutil.copyfile(pristine, path)
    table, name = column
    try:
        if rename:
            rename_table(path, table, f"{table}_old")
        else:
            drop_column(path, table, name)
    except sqlite3.Error:
        return  # a key or indexed column: SQLite will not drop it
    err, report = check_store(path)
    assert err is not None and "store recover" in err.message, "an altered structure was read as sound"
    assert not report.healthy
