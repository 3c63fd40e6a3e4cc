"""The replay (dbench) family through `fsmeter run`: a full pass of Debian's client.txt moves
exactly the bytes the file asks for, the quick preset runs, bad load files are one-line errors."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import ROOT

CLIENT_TXT = Path("/usr/share/dbench/client.txt")
needs_client_txt = pytest.mark.skipif(
    not CLIENT_TXT.is_file(), reason=f"{CLIENT_TXT} missing: install Debian package dbench (make test does)"
)


def fsmeter(*args):
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *args], capture_output=True, text=True, env=env, timeout=600
    )


def requested_bytes(path: Path) -> dict:
    """Sum the size field of every ReadX and WriteX line, independently of the engine's parser:
    `ReadX handle offset size ret_size status` (dbench counts `size`)."""
    sums = {"ReadX": 0, "WriteX": 0}
    for line in path.read_text().splitlines():
        f = shlex.split(line.replace("\\", "/"))
        if f and f[0] in sums:
            sums[f[0]] += int(f[3], 0)
    return sums


@needs_client_txt
def test_one_full_pass_of_client_txt_moves_exactly_its_bytes(tmp_path):
    want = requested_bytes(CLIENT_TXT)
    assert want["ReadX"] > 10**9 and want["WriteX"] > 10**8  # the file really is Debian's client.txt
    out = tmp_path / "out.json"
    work = tmp_path / "work"
    work.mkdir()
    r = fsmeter(
        "run",
        "dbench",
        "--dir",
        str(work),
        "-q",
        "--json",
        str(out),
        "--set",
        "passes=1",
        "--set",
        "duration_s=none",
        "--set",
        "threads=1",
    )
    assert r.returncode == 0, r.stderr
    run = json.loads(out.read_text())["phases"]["run"]
    assert run["ops"]["ReadX"]["bytes"] == want["ReadX"]
    assert run["ops"]["WriteX"]["bytes"] == want["WriteX"]
    assert run["total"]["bytes"] == want["ReadX"] + want["WriteX"]
    assert run["counters"]["passes_completed"] == 1
    assert run["counters"]["mismatches"] == 0, run["warnings"]
    assert run["warmup_s"] == 0
    assert list(work.iterdir()) == []


@needs_client_txt
def test_dbench_quick_runs_and_reports_dbench_mb_per_s(tmp_path):
    out = tmp_path / "out.json"
    r = fsmeter("run", "dbench-quick", "--dir", str(tmp_path), "--set", "duration_s=2", "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert list(doc["phases"]) == ["setup", "run"]
    run = doc["phases"]["run"]
    assert run["threads"] == 2 and run["warmup_s"] == 0  # dbench: 2 s / 5 in whole seconds
    m = doc["metrics"]
    assert next(iter(m)) == "run.MB_per_s"
    assert m["run.MB_per_s"]["value"] == pytest.approx(
        (run["ops"]["ReadX"]["bytes"] + run["ops"]["WriteX"]["bytes"]) / run["elapsed_s"] / 1e6
    )
    assert set(run["ops"]) <= {
        "NTCreateX",
        "Close",
        "Rename",
        "Unlink",
        "Deltree",
        "Rmdir",
        "Mkdir",
        "Qpathinfo",
        "Qfileinfo",
        "Qfsinfo",
        "Sfileinfo",
        "Find",
        "WriteX",
        "ReadX",
        "LockX",
        "UnlockX",
        "Flush",
    }
    assert not (tmp_path / "clients").exists()


def test_malformed_load_file_exits_2_naming_the_line(tmp_path):
    lf = tmp_path / "bad.txt"
    lf.write_text(
        'Deltree "\\clients\\client1" NT_STATUS_OK\n'
        'NTCreateX "\\clients\\client1\\f" 0x40 0x2 7 NT_STATUS_OK\n'
        "WriteX 7 0 lots 10 NT_STATUS_OK\n"
    )
    r = fsmeter("run", "dbench-quick", "--dir", str(tmp_path), "-q", "--set", f"loadfile={lf}")
    assert r.returncode == 2, r.stderr
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert f"{lf} line 3:" in err and '"lots" is not a number' in err, err


@pytest.mark.parametrize(
    "line",
    [
        'Deltree "\\..\\victim" NT_STATUS_OK',
        'NTCreateX "\\..\\planted.txt" 0x40 0x5 7 NT_STATUS_OK',
        'NTCreateX "/tmp/planted.txt" 0x40 0x5 7 NT_STATUS_OK',
    ],
    ids=["deltree-dotdot", "create-dotdot", "create-absolute"],
)
def test_load_file_path_leaving_dir_is_refused_with_its_line_and_nothing_outside_touched(tmp_path, line):
    # --dir and, next to it, what a load file must never reach: a victim tree and a planted file's place.
    work = tmp_path / "work"
    work.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    lf = tmp_path / "load.txt"
    lf.write_text(f'Deltree "\\clients\\client1" NT_STATUS_OK\nMkdir "\\clients" NT_STATUS_OK\n{line}\n')
    r = fsmeter(
        "run",
        "dbench-quick",
        "--dir",
        str(work),
        "-q",
        "--set",
        f"loadfile={lf}",
        "--set",
        "passes=1",
        "--set",
        "threads=1",
    )
    assert r.returncode == 2, r.stderr
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"fsmeter: error: load file {lf} line 3: path "), err
    assert "leaves the client directory" in err, err
    assert (victim / "keep.txt").read_text() == "precious"
    assert not (tmp_path / "planted.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["load.txt", "victim", "work"]
    assert list(work.iterdir()) == []


def test_missing_load_file_says_install_dbench(tmp_path):
    r = fsmeter("run", "dbench-quick", "--dir", str(tmp_path), "-q", "--set", f"loadfile={tmp_path / 'none.txt'}")
    assert r.returncode == 2
    assert "install Debian package dbench or give loadfile=PATH" in r.stderr


def test_unexpected_unlink_result_fails_the_run_as_in_dbench(tmp_path):
    lf = tmp_path / "load.txt"
    lf.write_text('Unlink "\\clients\\client1\\nothere" 0x6 NT_STATUS_OK\n')
    work = tmp_path / "work"
    work.mkdir()
    r = fsmeter(
        "run",
        "dbench-quick",
        "--dir",
        str(work),
        "-q",
        "--set",
        f"loadfile={lf}",
        "--set",
        "passes=1",
        "--set",
        "threads=1",
    )
    assert r.returncode == 1, r.stderr
    assert "line 1: client0 Unlink clients/client0/nothere failed, but the load file expects NT_STATUS_OK" in r.stderr
    assert list(work.iterdir()) == []  # cleanup still ran


@needs_client_txt
def test_verify_pattern_on_client_txt(tmp_path):
    """Debian's client.txt with verify=pattern: every read of written bytes is checked during the
    run, the verify phase re-reads what the clients kept when the run stopped (mid-pass: a whole
    pass ends with a Deltree), and nothing is reported corrupt (renames, unlinks, deltrees and
    truncations are followed)."""
    out = tmp_path / "out.json"
    r = fsmeter(
        "run",
        "dbench-quick",
        "--dir",
        str(tmp_path),
        "--set",
        "duration_s=3",
        "--set",
        "warmup_s=0",
        "--set",
        "verify=pattern",
        "--set",
        "threads=2",
        "-q",
        "--json",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["corrupt"] is None and "verified:" in r.stdout
    run, ver = doc["phases"]["run"], doc["phases"]["verify"]
    assert run["counters"]["verify_mismatches"] == 0 and run["counters"]["verify_blocks_checked"] > 1000
    assert ver["counters"]["verify_mismatches"] == 0 and ver["counters"]["files_checked"] > 0
    assert ver["extra"]["verify"]["algo"] == "pattern"
    bad = fsmeter("run", "dbench-quick", "--dir", str(tmp_path), "--set", "verify=crc32c")
    assert bad.returncode == 2 and "verify" in bad.stderr and "pattern" in bad.stderr
