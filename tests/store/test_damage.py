"""A damaged, read-only or full results store: one line and an exit code, never a traceback; what
can be read is recovered (`fsmeter store check|recover`); finished trials survive a full disk."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
from fsmeter.cli import main

FAST = 'backend = "null", file_size = "4M", warmup_s = 0.05, duration_s = 0.2, interval_s = 0.05'
PAGE = 4096


def fsm(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=timeout,
    )


def campaign_file(folder, work, name="t", n=3, workloads=("seq-read", "seq-write")) -> str:
    f = folder / f"{name}.toml"
    wl = "".join(f'[[workloads]]\nname = "{w}"\nparams = {{ {FAST} }}\n' for w in workloads)
    f.write_text(
        f'name = "{name}"\n[repetitions]\npolicy = "fixed"\nn = {n}\n'
        + wl
        + textwrap.dedent(f"""\
        [target]
        kind = "dir"
        path = "{work}"
        """)
    )
    return str(f)


@pytest.fixture(scope="module")
def real_store(tmp_path_factory):
    """A store written by a real campaign: 2 cells x 3 trials on a directory target."""
    d = tmp_path_factory.mktemp("store")
    (d / "work").mkdir()
    db = d / "s.sqlite"
    p = fsm("campaign", "run", campaign_file(d, d / "work"), "--db", db, "-q")
    assert p.returncode == 0, p.stderr
    return db


@contextlib.contextmanager
def connect(db, timeout=5):
    """A plain SQLite connection, committed and closed on leaving (a store on a mount of the test's
    own must be closed before that mount can be changed)."""
    conn = sqlite3.connect(db, timeout=timeout)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def copy(src, tmp_path, name="d.sqlite"):
    dst = tmp_path / name
    shutil.copyfile(src, dst)
    return dst


def root_page(db, name) -> int:
    with connect(db) as conn:
        return conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0]


def garbage_page(db, page: int, seed: int = 0) -> None:
    """Overwrite page ``page`` (1-based, as SQLite numbers them) with random bytes."""
    r = random.Random(seed)
    with open(db, "r+b") as f:
        f.seek((page - 1) * PAGE)
        f.write(bytes(r.randrange(256) for _ in range(PAGE)))


def flip_bits(db, n: int, seed: int) -> None:
    """Flip ``n`` random bits past the first page (page 1 damaged is simply "not a database")."""
    data = bytearray(db.read_bytes())
    r = random.Random(seed)
    for _ in range(n):
        data[r.randrange(PAGE, len(data))] ^= 1 << r.randrange(8)
    db.write_bytes(bytes(data))


def cli(capsys, *args) -> tuple:
    """Run the fsmeter command line in this process; (exit code, stdout, stderr). An exception other
    than the exit itself is a traceback the user would have seen: it fails the test."""
    capsys.readouterr()
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out, err = capsys.readouterr()
    return code, out, err


def read_commands(db, tmp_path) -> list:
    return [
        ("campaign", "show", "1", "--db", db),
        ("report", "1", "--db", db),
        ("report", "1", "--db", db, "-o", tmp_path / "r.html"),
        ("export", "1", "--db", db, "-f", "json", "-o", tmp_path / "e.json"),
        ("export", "1", "--db", db, "-o", tmp_path / "e.csv"),
        ("compare-runs", "1", "1", "--db", db),
    ]


def assert_one_line(code, err, args):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fsmeter: error: "), (args, err)
    assert "Traceback" not in err and code != 0, (args, code)


# -- damage: one line, never a traceback ----------------------------------------------------------
@pytest.mark.parametrize("table", ["trials", "cells", "metrics"])
def test_a_garbage_page_fails_every_read_command_with_one_line(real_store, tmp_path, capsys, table):
    """Every read command reads these tables."""
    db = copy(real_store, tmp_path)
    garbage_page(db, root_page(db, table))
    for args in read_commands(db, tmp_path):
        code, _, err = cli(capsys, *args)
        assert_one_line(code, err, args)
        assert "is damaged" in err and "fsmeter store recover" in err, err


def test_a_garbage_page_of_phases_fails_the_commands_that_read_them(real_store, tmp_path, capsys):
    """The tidy CSV is made of metrics alone and stays right; the others read phase reports."""
    db = copy(real_store, tmp_path)
    garbage_page(db, root_page(db, "phases"))
    failed = []
    for args in read_commands(db, tmp_path):
        code, _, err = cli(capsys, *args)
        if code != 0:
            assert_one_line(code, err, args)
            failed.append(args[0] if args[0] != "export" else f"export {args[-3] if '-f' in args else 'csv'}")
    assert "export json" in failed and "report" in failed


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("bits", [20, 200])
def test_flipped_bits_give_one_line_or_a_result_never_a_traceback(real_store, tmp_path, capsys, seed, bits):
    """Bits flipped at random: a command that meets the damage says so in one line; one that does
    not meet it (the bits hit space no query reads) may succeed. Whichever: no traceback."""
    db = copy(real_store, tmp_path)
    flip_bits(db, bits, seed)
    failed = 0
    for args in read_commands(db, tmp_path):
        code, _, err = cli(capsys, *args)
        if code != 0:
            assert_one_line(code, err, args)
            failed += 1
    if bits == 200:
        assert failed > 0  # 200 flipped bits in a store this small always reach something read
    # Whatever was hit, check says so and recovery ends with a sound store.
    assert cli(capsys, "store", "check", db)[0] == 1
    new = tmp_path / "new.sqlite"
    code, _, err = cli(capsys, "store", "recover", db, "--to", new)
    assert code == 0, err
    assert cli(capsys, "store", "check", new)[0] == 0


def test_text_that_is_not_utf8_and_json_that_does_not_parse(real_store, tmp_path, capsys):
    """Damage SQLite cannot see: the row check names the column."""
    db = copy(real_store, tmp_path)
    with connect(db) as conn:
        conn.execute("UPDATE cells SET factors = '{\"filesystem\": ' WHERE idx = 0")
    code, _, err = cli(capsys, "campaign", "show", "1", "--db", db)
    assert_one_line(code, err, "show")
    assert "cells.factors is not valid JSON" in err
    db = copy(real_store, tmp_path, "u.sqlite")
    with connect(db) as conn:
        conn.execute("UPDATE phases SET report = CAST(x'7b22ff22' AS TEXT) WHERE id = 1")
    code, _, err = cli(capsys, "export", "1", "--db", db, "-f", "json", "-o", tmp_path / "e.json")
    assert_one_line(code, err, "export")
    assert "is damaged (text that is not UTF-8)" in err


# -- store check / store recover ------------------------------------------------------------------
def test_store_check_healthy_and_damaged(real_store, tmp_path, capsys):
    code, out, _ = cli(capsys, "store", "check", real_store)
    assert code == 0 and "healthy" in out and "integrity_check: ok" in out
    db = copy(real_store, tmp_path)
    garbage_page(db, root_page(db, "intervals"))
    code, out, _ = cli(capsys, "store", "check", db)
    assert code == 1 and "damaged:" in out and "store recover" in out


def test_store_recover_keeps_every_readable_trial(real_store, tmp_path, capsys):
    db = copy(real_store, tmp_path)
    garbage_page(db, root_page(db, "phases"))  # every phase report (and so its samples) is lost
    before = db.read_bytes()
    new = tmp_path / "new.sqlite"
    code, out, err = cli(capsys, "store", "recover", db, "--to", new)
    assert code == 0, err
    assert db.read_bytes() == before  # the damaged store is only read
    assert "6 trial(s) in 1 campaign(s) kept" in out
    with connect(new) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM trials").fetchone()[0] == 6
        assert conn.execute("SELECT count(*) FROM phases").fetchone()[0] == 0
        with connect(real_store) as orig:
            q = "SELECT trial_id, phase_key, name, value FROM metrics ORDER BY 1, 2, 3"
            assert conn.execute(q).fetchall() == orig.execute(q).fetchall()  # every headline survives
    assert cli(capsys, "store", "check", new)[0] == 0
    code, out, err = cli(capsys, "report", "1", "--db", new)
    assert code == 0, err
    # Never over an existing file.
    code, _, err = cli(capsys, "store", "recover", db, "--to", new)
    assert code == 2 and "already exists" in err


def test_store_recover_reads_past_a_damaged_table_definition(real_store, tmp_path, capsys):
    """A bit flipped in a CREATE TABLE statement hides the table from SQLite: recovery reads it with
    this fsmeter's own definition."""
    db = copy(real_store, tmp_path)
    with connect(db) as conn:
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("UPDATE sqlite_master SET sql = replace(sql, 'cell_id', 'cell_iX') WHERE name = 'trials'")
    code, _, err = cli(capsys, "campaign", "show", "1", "--db", db)
    assert_one_line(code, err, "show")
    new = tmp_path / "new.sqlite"
    code, out, err = cli(capsys, "store", "recover", db, "--to", new)
    assert code == 0, err
    with connect(new) as conn:
        assert conn.execute("SELECT count(*) FROM trials").fetchone()[0] == 6
        assert conn.execute("SELECT count(*) FROM intervals").fetchone()[0] > 0


def test_resume_refuses_a_damaged_store_and_leaves_the_campaign_as_it_was(real_store, tmp_path, capsys):
    db = copy(real_store, tmp_path)
    with connect(db) as conn:
        conn.execute("UPDATE campaigns SET status = 'interrupted'")
        conn.execute("UPDATE cells SET status = 'pending' WHERE idx = 1")
    garbage_page(db, root_page(db, "trials_cell"))  # an index: the campaign row itself stays readable
    code, _, err = cli(capsys, "campaign", "resume", "1", "--db", db)
    assert_one_line(code, err, "resume")
    assert "is damaged" in err
    with connect(db) as conn:
        assert conn.execute("SELECT status, owner FROM campaigns").fetchone() == ("interrupted", None)


# -- read-only store, full disk (a tmpfs of the test's own) ----------------------------------------
def _tmpfs(folder, size: str):
    os.makedirs(folder)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", folder], check=True)
    return folder


@pytest.mark.root
def test_read_only_store_is_refused_before_measuring(real_store, tmp_path, scratch):
    mnt = _tmpfs(os.path.join(scratch, "ro"), "4M")
    try:
        db = os.path.join(mnt, "s.sqlite")
        shutil.copyfile(real_store, db)
        with connect(db) as conn:
            conn.execute("UPDATE campaigns SET status = 'interrupted'")
            conn.execute("UPDATE cells SET status = 'pending' WHERE idx = 1")
        subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
        before = open(db, "rb").read()
        work = tmp_path / "work"
        work.mkdir()
        for args in (
            ("campaign", "resume", "1", "--db", db),
            ("campaign", "run", campaign_file(tmp_path, work), "--db", db),
        ):
            p = fsm(*args)
            assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
            assert p.stderr.startswith(f"fsmeter: error: store {db} is read-only"), p.stderr
        assert os.listdir(work) == []  # nothing measured
        assert open(db, "rb").read() == before
        p = fsm("campaign", "show", "1", "--db", db)  # reading still works
        assert p.returncode == 0, p.stderr
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


@pytest.mark.root
def test_full_disk_keeps_finished_trials_and_the_campaign_resumes(tmp_path, scratch):
    mnt = _tmpfs(os.path.join(scratch, "full"), "2M")
    try:
        db = os.path.join(mnt, "s.sqlite")
        work = tmp_path / "work"
        work.mkdir()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fsmeter",
                "campaign",
                "run",
                campaign_file(tmp_path, work, n=20, workloads=("seq-read",)),
                "--db",
                db,
                "-q",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            kept = 0
            while kept < 2:  # two of the twenty trials are stored: stop the run there, however fast it is
                assert proc.poll() is None, proc.communicate()
                try:
                    with connect(db, timeout=30) as conn:
                        kept = conn.execute("SELECT count(*) FROM trials").fetchone()[0]
                except sqlite3.OperationalError:
                    pass  # not created yet
                if kept < 2:
                    time.sleep(0.05)
            proc.send_signal(signal.SIGSTOP)
            try:
                with open(os.path.join(mnt, "filler"), "wb") as f:
                    try:
                        while True:
                            f.write(b"\0" * 65536)
                            f.flush()
                    except OSError:
                        pass
            finally:
                proc.send_signal(signal.SIGCONT)
            _, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 1 and err.count("\n") == 1 and "Traceback" not in err, err
        assert "its filesystem is full" in err and "fsmeter campaign resume 1" in err, err
        with connect(db) as conn:
            stored = conn.execute("SELECT count(*) FROM trials").fetchone()[0]
            assert stored >= 2
            assert conn.execute("SELECT count(*) FROM cells WHERE status = 'failed'").fetchone()[0] == 0
        os.unlink(os.path.join(mnt, "filler"))
        p = fsm("campaign", "resume", "1", "--db", db, "-q")
        assert p.returncode == 0, p.stderr
        with connect(db) as conn:
            assert conn.execute("SELECT status, owner FROM campaigns").fetchone() == ("done", None)
            assert conn.execute("SELECT count(*) FROM trials").fetchone()[0] > stored
            assert {r[0] for r in conn.execute("SELECT status FROM cells")} == {"done"}
    finally:
        subprocess.run(["umount", mnt], capture_output=True)
