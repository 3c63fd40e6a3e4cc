"""Data verification on the Python side: the access family's `verify` parameter, the `corrupt`
trial status (store, kept trials, runner, terminal report) and `fsmeter run` end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fsmeter.families.access import AccessParams
from fsmeter.stats.kept import is_kept, kept_mask
from fsmeter.verify import corruption, describe, mismatches
from store_sample import REPORT, fill, metric

MISMATCH = {
    "offset": 151552,
    "len": 4096,
    "kind": "bad_checksum",
    "file": "/d/fsmeter.access.1",
    "phase": "verify",
    "first_diff": 1234,
    "first_diff_offset": 152786,
    "window_start": 1218,
    "expected_bytes": "00ff",
    "found_bytes": "00df",
    "found": {"offset": 151552, "len": 4096, "thread": 0, "generation": 7},
    "expected": {"offset": 151552, "len": 4096, "thread": 0, "generation": 7},
}


def _report(n: int) -> dict:
    rep = json.loads(json.dumps(REPORT))
    rep["counters"] = {"verify_mismatches": n, "verify_blocks_checked": 512}
    rep["extra"] = {"verify": {"mismatches": [MISMATCH] if n else []}}
    return rep


def _params(**kw):
    base = {"entries": [{"size": "4K", "weight": 100, "read_pct": 50}], "file_size": "1M"}
    base.update(kw)
    return AccessParams(**base)


def test_verify_is_off_by_default_and_passed_to_the_engine():
    p = _params()
    assert p.verify == "off" and p.engine_spec()["verify"] is None
    assert [ph.name for ph in __import__("fsmeter.families.access", fromlist=["x"]).FAMILY.phases(p)] == [
        "prepare",
        "run",
    ]
    v = _params(verify="xxh3")
    assert v.engine_spec()["verify"] == "xxh3"
    assert v.alignment == 4096, "an unset alignment follows the verify block, as fio aligns to the block size"
    from fsmeter.families.access import FAMILY

    assert [ph.name for ph in FAMILY.phases(v)] == ["prepare", "run", "verify"]


def test_verify_settings_that_cannot_work_name_their_field():
    with pytest.raises(ValueError, match="alignment: 512 bytes: with verify"):
        _params(verify="crc32c", alignment=512)
    with pytest.raises(ValueError, match=r"entries\[1\].size: 6144 bytes"):
        _params(
            verify="crc32c",
            entries=[{"size": "4K", "weight": 50, "read_pct": 50}, {"size": 6144, "weight": 50, "read_pct": 50}],
        )
    with pytest.raises(ValueError, match="reuse_files"):
        _params(verify="sha256", reuse_files=True)
    with pytest.raises(ValueError):
        _params(verify="sha384")
    with pytest.raises(ValueError, match=r"verify_block: 64 bytes is too small for verify=sha512's 112-byte header"):
        _params(verify="sha512", entries=[{"size": 64, "weight": 100, "read_pct": 50}])
    with pytest.raises(ValueError, match="verify_backlog: needs verify"):
        _params(verify_backlog=8)


def test_corruption_summary_names_file_offset_and_bytes():
    assert corruption([("run", _report(0)), ("verify", REPORT)]) is None
    text = corruption([("run", _report(0)), ("verify", _report(3))])
    assert text.startswith("data verification found 3 corrupt block(s) (verify: 3)")
    assert "/d/fsmeter.access.1 offset 151552" in text and "file offset 152786" in text
    assert "expected 00ff found 00df" in text
    assert mismatches(_report(2)) == 2 and mismatches({}) == 0
    assert "generation 7" in describe(MISMATCH)


def test_store_keeps_corrupt_trials_apart_from_statistics(tmp_path):
    store, cid = fill(tmp_path / "r.sqlite")
    cell = store.cells(cid)[0]
    store.record_trial(
        cell["id"],
        3,
        status="corrupt",
        cause="data verification found 1 corrupt block(s)",
        started="t0",
        phases=[{"key": "run", "engine_phase": "run", "report": _report(1)}],
        metrics=[metric(999.0)],
        environment={"seed": 42},
    )
    assert [v for _, v in store.headline_values(cell["id"])] == [101.0, 102.0], "corrupt values never count"
    assert not is_kept("corrupt", False, 1.0)
    from fsmeter.store import tidy

    df = tidy(store.path, cid)
    assert set(df[~kept_mask(df)]["status"]) >= {"corrupt"}


def _version_3_copy(path, tmp_path):
    """A version 3 store holding what store_sample.fill writes: filled at today's schema, then each table's
    version 3 columns copied into a store made by the migrations up to 3 (today's code writes
    columns that a version 3 store does not have)."""
    import sqlite3

    import fsmeter.store as st

    current, cid = fill(tmp_path / "current.sqlite")
    current.close()
    conn = sqlite3.connect(path)
    for version, sql in st._migrations():
        if version <= 3:
            conn.executescript(f"BEGIN;\n{sql}\nPRAGMA user_version = {version};\nCOMMIT;")
    conn.execute("ATTACH DATABASE ? AS cur", (str(tmp_path / "current.sqlite"),))
    tables = [
        r[0]
        for r in conn.execute("SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    ]
    with conn:
        for t in tables:
            cols = ", ".join(r[1] for r in conn.execute(f"PRAGMA main.table_info({t})"))
            conn.execute(f"INSERT INTO main.{t} ({cols}) SELECT {cols} FROM cur.{t}")
    conn.execute("DETACH DATABASE cur")
    conn.close()
    return cid


def test_a_version_3_store_is_migrated_without_losing_rows(tmp_path, monkeypatch):
    import fsmeter.store as st

    path = tmp_path / "r.sqlite"
    full = st._migrations()
    cid = _version_3_copy(path, tmp_path)
    monkeypatch.setattr(st, "_migrations", lambda: [m for m in full if m[0] <= 3])
    monkeypatch.setattr(st, "SCHEMA_VERSION", 3)
    store = st.open_store(path)
    assert store.version == 3
    with pytest.raises(Exception, match="CHECK"):
        store.record_trial(
            store.cells(cid)[0]["id"], 9, status="corrupt", started="t0", phases=[], metrics=[], environment={}
        )
    before = {
        t: store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("trials", "phases", "metrics", "intervals", "environment")
    }
    store.close()
    monkeypatch.setattr(st, "_migrations", lambda: full)
    monkeypatch.setattr(st, "SCHEMA_VERSION", full[-1][0])
    store = st.open_store(path)
    assert store.version >= 4
    after = {t: store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in before}
    assert after == before
    assert store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    store.record_trial(
        store.cells(cid)[0]["id"], 9, status="corrupt", started="t0", phases=[], metrics=[], environment={}
    )
    # Deleting a campaign still cascades through the rebuilt table.
    store.conn.execute("DELETE FROM campaigns WHERE id = ?", (cid,))
    assert store.conn.execute("SELECT count(*) FROM phases").fetchone()[0] == 0


def test_terminal_failures_table_says_corrupt():
    from fsmeter.report.terminal import failures_table

    class View:
        def failures(self):
            return [{"workload": "w", "configuration": "ext4", "trial": 3, "status": "corrupt", "cause": "x"}]

    t = failures_table(View())
    assert "corrupt" in t.title


def test_fsmeter_run_with_verify_reports_checked_blocks(tmp_path):
    out = tmp_path / "r.json"
    d = tmp_path / "d"
    d.mkdir()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsmeter",
            "run",
            "rand-write-4k",
            "--dir",
            str(d),
            "-q",
            "--set",
            "verify=crc32c",
            "--set",
            "file_size=2M",
            "--set",
            "duration_s=0.3",
            "--set",
            "warmup_s=0",
            "--cache",
            "keep",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verified:" in r.stdout and "none corrupt" in r.stdout
    doc = json.loads(out.read_text())
    assert doc["corrupt"] is None
    assert doc["phases"]["verify"]["counters"]["verify_blocks_checked"] == 512
    assert doc["phases"]["run"]["counters"]["verify_blocks_written"] > 0


def test_bonnie_verify_parameter_adds_the_verify_phase():
    from fsmeter.families.bonnie import FAMILY, BonnieParams

    p = BonnieParams(size="1M", chunk="8K", verify="xxh3")
    assert p.engine_spec()["verify"] == "xxh3"
    assert [ph.name for ph in FAMILY.phases(p)][-1] == "verify" or "verify" in [ph.name for ph in FAMILY.phases(p)]
    assert BonnieParams(size="1M").engine_spec()["verify"] is None
    with pytest.raises(ValueError, match="char_io_size: 5000 bytes"):
        BonnieParams(size="1M", chunk="8K", char_io_size=5000, verify="crc32c")


def test_iozone_verify_parameter():
    from fsmeter.families.iozone import IozoneParams

    p = IozoneParams(file_sizes=["64K"], record_sizes=["4K"], verify="crc32c")
    assert p.engine_spec()["verify"] == "crc32c"
    assert IozoneParams(file_sizes=["64K"], record_sizes=["4K"]).engine_spec()["verify"] is None


def test_a_campaign_marks_a_trial_with_a_lost_write_corrupt_and_reports_it(tmp_path, scratch):
    import os
    import textwrap

    work = tmp_path / "work"
    work.mkdir()
    fast = 'file_size = "1M", duration_s = 0.2, warmup_s = 0, interval_s = 0.05'
    f = tmp_path / "c.toml"
    f.write_text(
        'name = "v"\n'
        + textwrap.dedent(f"""\
        [factors]
        verify = ["off", "crc32c"]
        [[workloads]]
        name = "rand-write-4k"
        label = "good"
        params = {{ {fast} }}
        [[workloads]]
        name = "rand-write-4k"
        label = "lossy"
        params = {{ {fast}, fault = {{ kind = "lost_write", after = 5, count = 1000000000 }} }}
        [repetitions]
        policy = "fixed"
        n = 2
        discard_first = 0
        """)
        + f'\n[target]\nkind = "dir"\npath = "{work}"\n'
    )
    db = tmp_path / "r.sqlite"
    env = {**os.environ, "COLUMNS": "250"}
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", "campaign", "run", f, "--db", db, "-q"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    from fsmeter.store import open_store

    store = open_store(db)
    rows = store.conn.execute(
        "SELECT c.workload, c.status, t.status, t.cause FROM trials t JOIN cells c ON c.id = t.cell_id ORDER BY t.id"
    ).fetchall()
    by = {}
    for wl, cstat, tstat, cause in rows:
        by.setdefault((wl, cstat), []).append((tstat, cause))
    # good x {off, crc32c}: ok trials; lossy x off: ok (nobody checks); lossy x crc32c: corrupt, cell failed.
    corrupt = [(t, c) for (wl, cs), ts in by.items() for t, c in ts if t == "corrupt"]
    assert len(corrupt) == 1, rows
    assert "stale" in corrupt[0][1] and "fsmeter.access.0 offset" in corrupt[0][1], corrupt
    assert sum(1 for _, cs, ts, _ in rows if ts == "ok") == 6
    assert [cs for wl, cs, ts, _ in rows if ts == "corrupt"] == ["failed"]
    show = subprocess.run(
        [sys.executable, "-m", "fsmeter", "campaign", "show", "1", "--db", db], capture_output=True, text=True, env=env
    ).stdout
    assert "corrupt" in show
    rep = subprocess.run(
        [sys.executable, "-m", "fsmeter", "report", "1", "--db", db], capture_output=True, text=True, env=env
    )
    assert "corrupt" in rep.stdout, rep.stdout + rep.stderr
    html = tmp_path / "r.html"
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", "report", "1", "--db", db, "-o", html],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    page = html.read_text()
    assert "corrupt)" in page and "Failed, corrupt or interrupted" in page


def test_fileset_verify_parameter_adds_the_verify_phase_before_delete():
    from fsmeter.families.fileset import FAMILY, FilesetParams

    p = FilesetParams(verify="xxh3", verify_block="1K")
    assert p.engine_spec()["verify"] == "xxh3" and p.engine_spec()["verify_block"] == 1024
    assert [ph.name for ph in FAMILY.phases(p)] == ["create", "transactions", "verify", "delete"]
    assert FilesetParams().engine_spec()["verify"] is None
    assert "verify" not in [ph.name for ph in FAMILY.phases(FilesetParams())]
    with pytest.raises(ValueError, match="write_block: 64 bytes: with verify"):
        FilesetParams(verify="crc32c", write_block=64)
    FilesetParams(verify="crc32c", write_block=64, verify_block=512)


def _postmark_cmd(d, *extra):
    return [
        "run",
        "postmark",
        "--dir",
        str(d),
        "-q",
        "--set",
        "verify=crc32c",
        "--set",
        "files=40",
        "--set",
        "transactions=200",
        "--cache",
        "fadvise",
        *extra,
    ]


def test_fsmeter_run_postmark_with_verify_reports_verified(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "r.json"
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", *_postmark_cmd(d, "--json", str(out))], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verified:" in r.stdout and "none corrupt" in r.stdout
    doc = json.loads(out.read_text())
    assert doc["corrupt"] is None and list(doc["phases"]) == ["create", "transactions", "verify", "delete"]
    assert doc["phases"]["verify"]["counters"]["verify_blocks_checked"] > 0
    assert doc["phases"]["transactions"]["counters"]["verify_blocks_checked"] > 0, "reads are checked"
    assert not list(d.iterdir()), "the files are gone"


def test_fsmeter_run_postmark_with_a_changed_byte_exits_1_corrupt(tmp_path, monkeypatch):
    """A byte changed behind the engine's back before the verify phase (in the cache reset that precedes it)."""
    import fsmeter.phases as run_mod
    from fsmeter.cli import app
    from typer.testing import CliRunner

    d = tmp_path / "d"
    d.mkdir()
    real = run_mod.reset_cache

    def poke(method, directory):
        victim = min((p for p in directory.iterdir() if p.stat().st_size > 300), key=lambda p: int(p.name))
        with open(victim, "r+b") as f:
            f.seek(300)
            b = f.read(1)
            f.seek(300)
            f.write(bytes([b[0] ^ 0xFF]))
        poke.victim = victim
        return real(method, directory)

    monkeypatch.setattr(run_mod, "reset_cache", poke)
    out = tmp_path / "r.json"
    r = CliRunner().invoke(app, _postmark_cmd(d, "--json", str(out)), env={"COLUMNS": "300"})
    assert r.exit_code == 1, r.output
    assert "corrupt" in r.output
    doc = json.loads(out.read_text())
    assert f"{poke.victim} offset 0" in doc["corrupt"] and "file offset 300" in doc["corrupt"], doc["corrupt"]
    assert doc["phases"]["verify"]["counters"]["verify_mismatches"] == 1


def test_tree_verify_parameter_adds_the_verify_phase_before_remove():
    from fsmeter.families.tree import FAMILY, TreeParams

    p = TreeParams(verify="sha256")
    assert p.engine_spec()["verify"] == "sha256" and TreeParams().engine_spec()["verify"] is None
    assert [ph.name for ph in FAMILY.phases(p)] == ["mkdir", "create", "stat", "verify", "remove", "rmdir"]
    assert "verify" not in [ph.name for ph in FAMILY.phases(TreeParams())]
    with pytest.raises(ValueError, match="verify: the files are empty"):
        TreeParams(verify="crc32c", file_blocks=0)


def test_fsmeter_run_fdtree_with_verify_reports_verified(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "r.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsmeter",
            "run",
            "fdtree-quick",
            "--dir",
            str(d),
            "-q",
            "--set",
            "verify=xxh3",
            "--set",
            "levels=1",
            "--set",
            "dirs_per_level=3",
            "--set",
            "files_per_dir=4",
            "--set",
            "file_blocks=2",
            "--cache",
            "fadvise",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verified:" in r.stdout and "none corrupt" in r.stdout
    doc = json.loads(out.read_text())
    assert doc["phases"]["verify"]["counters"]["verify_blocks_checked"] == 4 * 4 * 2
    assert doc["phases"]["create"]["counters"]["verify_blocks_written"] == 4 * 4 * 2
