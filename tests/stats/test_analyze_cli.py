"""`fsmeter analyze`: CSV and store paths, and one-line errors with exit code 2 for bad input."""

import contextlib
import subprocess
import sys
import types

import pandas as pd
import pytest
from fsmeter.cli import main
from repo_paths import DATA, ROOT

BONNIE = str(DATA / "bonnie-1024mb-10runs.csv")


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(["analyze", *args])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_csv_one_factor(capsys):
    code, out, err = run(capsys, "--csv", BONNIE, "--response", "block_read_kbs", "--factors", "filesystem")
    assert code == 0, err
    assert "ANOVA" in out and "reiserfs" in out and "Shapiro-Wilk" in out
    assert "95% CI" in out


def test_csv_two_factors_stacked_log(capsys):
    code, out, err = run(
        capsys,
        "--csv",
        BONNIE,
        "--response",
        "block_read_kbs,block_write_kbs",
        "--factors",
        "filesystem+kernel",
        "--level",
        "0.99",
        "--log",
    )
    assert code == 0, err
    assert "log(value)" in out and "filesystem+kernel:response" in out and "ratio" in out
    assert "ext2/2.3.0" in out


def one_line_error(code, err, expected_code=2):
    lines = err.strip().splitlines()
    assert code == expected_code
    assert len(lines) == 1 and lines[0].startswith("fsmeter: error: ")
    assert "Traceback" not in err
    return lines[0]


def test_bad_column_is_one_line(capsys):
    code, _, err = run(capsys, "--csv", BONNIE, "--response", "nope", "--factors", "filesystem")
    line = one_line_error(code, err)
    assert "'nope'" in line and "block_read_kbs" in line  # lists the available columns


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--csv", "/nonexistent.csv", "--response", "x", "--factors", "f"], "no such file"),
        (["--csv", BONNIE, "--response", "filesystem", "--factors", "kernel"], "not a number"),
        (["--csv", BONNIE, "--response", "block_read_kbs", "--factors", "size_mb"], "only one level"),
        (["--csv", BONNIE, "--response", "block_read_kbs", "--factors", "filesystem,kernel"], "empty cells"),
        (["--csv", BONNIE, "--response", "block_read_kbs", "--factors", "filesystem,nope"], "'nope'"),
        (["--csv", BONNIE, "--response", "block_read_kbs", "--level", "95", "--factors", "filesystem"], "0.95"),
        (["--csv", BONNIE, "--factors", "filesystem"], "--response"),
        (["--response", "x"], "--csv"),
    ],
)
def test_bad_input_is_one_line(capsys, args, expected):
    code, _, err = run(capsys, *args)
    assert expected in one_line_error(code, err)


def test_unbalanced_two_factor_csv(capsys, tmp_path):
    p = tmp_path / "u.csv"
    p.write_text(
        "a,b,y\n"
        + "".join(
            f"{a},{b},{i}\n"
            for i, (a, b) in enumerate([("x", "p")] * 3 + [("x", "q")] * 2 + [("z", "p")] * 2 + [("z", "q")] * 2)
        )
    )
    code, _, err = run(capsys, "--csv", str(p), "--response", "y", "--factors", "a,b")
    assert "unbalanced" in one_line_error(code, err)


def test_store_missing_is_a_user_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "fsmeter.store", None)  # import fails as if not written yet
    db = tmp_path / "r.db"
    db.write_bytes(b"")
    code, _, err = run(capsys, str(db), "--campaign", "c1", "--response", "mb_s", "--factors", "filesystem")
    assert "store is not available" in one_line_error(code, err)


@pytest.fixture
def fake_store(monkeypatch):
    rows = []
    for fs, base in (("ext4", 100.0), ("xfs", 120.0)):
        for trial in range(4):
            for phase, metric, val in (
                ("write", "mb_s", base + trial),
                ("read", "mb_s", 2 * base + trial),
                ("write", "lat_ns", 1000.0 + trial),
            ):
                rows.append(
                    dict(
                        campaign_id="c1",
                        cell_id=fs,
                        trial=trial,
                        status="ok",
                        discarded=False,
                        workload="seq",
                        phase=phase,
                        metric=metric,
                        value=val,
                        filesystem=fs,
                    )
                )
    seen = {}

    def tidy(db_path, campaign=None):
        seen["args"] = (db_path, campaign)
        df = pd.DataFrame(rows)
        return df[df.campaign_id == campaign] if campaign else df

    mod = types.ModuleType("fsmeter.store")
    mod.tidy = tidy
    monkeypatch.setitem(sys.modules, "fsmeter.store", mod)
    health = types.ModuleType("fsmeter.store.health")  # the stand-in store is never damaged
    health.guard = lambda _db: contextlib.nullcontext()
    monkeypatch.setitem(sys.modules, "fsmeter.store.health", health)
    return seen


def test_store_campaign_path(capsys, fake_store, tmp_path):
    db = tmp_path / "r.db"
    db.write_bytes(b"")
    code, out, err = run(
        capsys, str(db), "--campaign", "c1", "--response", "mb_s", "--factors", "filesystem", "--phase", "write"
    )
    assert code == 0, err
    assert fake_store["args"][1] == "c1"
    assert "xfs" in out and "ANOVA" in out
    # Without --phase the metric mixes phases: refused with advice.
    code, _, err = run(capsys, str(db), "--campaign", "c1", "--response", "mb_s", "--factors", "filesystem")
    assert "--phase" in one_line_error(code, err)
    code, _, err = run(capsys, str(db), "--campaign", "c1", "--response", "iops", "--factors", "filesystem")
    assert "lat_ns, mb_s" in one_line_error(code, err)
    code, out, err = run(capsys, str(db), "--campaign", "c1", "--response", "mb_s", "--factors", "filesystem,phase")
    assert code == 0, err


def test_python_m_fsmeter_subprocess():
    env_path = str(ROOT / "python")
    p = subprocess.run(
        [sys.executable, "-m", "fsmeter", "analyze", "--csv", BONNIE, "--response", "bogus", "--factors", "filesystem"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("fsmeter: error: no column 'bogus'")
