"""The iozone family through `fsmeter run`, campaigns, the report and the iozone export:
cells stored as keyed metrics, one-line errors naming the parameter, a full filesystem failing
only its cells."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fsmeter.families.iozone import IozoneParams
from fsmeter.spec import build_job, load_workload
from repo_paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from iozone_peer import parse_cells, parse_excel  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def fsm(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)], capture_output=True, text=True, env=env, timeout=600
    )


def test_named_workloads_are_the_documented_command_lines(tmp_path):
    lourdas = build_job(load_workload("iozone-lourdas"), tmp_path).params
    assert lourdas.tests == [0, 1, 2, 4, 6, 7, 8] and lourdas.purge and lourdas.ops
    assert (lourdas.min_file_size, lourdas.max_file_size) == (4 << 10, 64 << 20)
    # iozone -a -n 4k -g 64m printed these 109 cells (tests/data/iozone/lourdas.txt).
    assert len(lourdas.cells()) == 109
    auto = build_job(load_workload("iozone-auto"), tmp_path).params
    assert auto.tests == list(range(8)) and not auto.ops and not auto.purge
    cells = auto.cells()
    assert cells[0] == (64 << 10, 4 << 10) and cells[-1] == (512 << 20, 16 << 20)
    assert (512 << 20, 32 << 10) not in cells and (16 << 20, 4 << 10) in cells


def test_run_stores_every_cell_as_a_keyed_metric(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "o.json"
    r = fsm("run", "iozone-lourdas-quick", "--dir", work, "-q", "--json", out, "--set", "max_file_size=64K")
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    p = IozoneParams(tests=[0, 1, 2, 4, 6, 7, 8], min_file_size="4K", max_file_size="64K", purge=True, ops=True)
    cells = p.cells()
    assert len(cells) == 15
    rep = doc["phases"]["grid"]
    assert [(c["file_size"], c["record_size"]) for c in rep["extra"]["cells"]] == cells
    cols = [
        "write",
        "rewrite",
        "read",
        "reread",
        "random_read",
        "random_write",
        "record_rewrite",
        "fwrite",
        "frewrite",
        "fread",
        "freread",
        "mix",
    ]
    assert rep["extra"]["columns"] == cols
    m = doc["metrics"]
    assert m["grid.write_ops_per_s_gmean"]["unit"] == "ops/s"
    assert m["grid.write[4K,4K]"]["value"] == rep["extra"]["cells"][0]["results"]["write"]["ops_per_s"]
    assert sum(1 for k in m if "[" in k) == len(cells) * len(cols)
    # The printed table is iozone's: one line per cell, kB and reclen first.
    assert parse_cells(r.stdout) == [(f // 1024, r_ // 1024) for f, r_ in cells]
    assert os.listdir(work) == []


def test_latency_is_per_record_only_when_asked(tmp_path):
    """Without latency = true only passes are timed, as iozone: the table says "–" and the store keeps no
    histogram; with it, every record has a latency."""
    from fsmeter.store import open_store

    work = tmp_path / "work"
    work.mkdir()
    with open_store(tmp_path / "s.sqlite") as st:
        cid = st.create_campaign("lat", "test", [("iozone-quick", {})])
        cell = st.cells(cid)[0]["id"]
        for n, lat in enumerate(("false", "true"), 1):
            out = tmp_path / f"{lat}.json"
            r = fsm(
                "run",
                "iozone-quick",
                "--dir",
                work,
                "-q",
                "--json",
                out,
                "--set",
                "file_sizes=[65536]",
                "--set",
                "record_sizes=[4096]",
                "--set",
                "tests=[0, 1]",
                "--set",
                f"latency={lat}",
            )
            assert r.returncode == 0, r.stderr
            rep = json.loads(out.read_text())["phases"]["grid"]
            assert rep["ops"]["read"]["count"] == 16
            assert rep["ops"]["read"]["lat"]["count"] == (16 if lat == "true" else 0)
            read_row = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("read "))
            assert ("–" in read_row) == (lat == "false"), read_row
            tid = st.record_trial(
                cell, n, status="ok", started="2026-01-01T00:00:00Z", phases=[{"key": "grid", "report": rep}]
            )
            rows = st.conn.execute(
                "SELECT COUNT(*) FROM histograms h JOIN phases p ON p.id = h.phase_id "
                "WHERE p.trial_id = ? AND h.op = 'read'",
                (tid,),
            ).fetchone()[0]
            assert rows == (1 if lat == "true" else 0)


def test_numpy_gets_one_blas_thread_unless_the_user_says(tmp_path):
    """OpenBLAS's spinning threads took CPU from the engine on a 2-core machine."""
    code = "import fsmeter, os, numpy; print(os.environ['OPENBLAS_NUM_THREADS'])"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    env["PYTHONPATH"] = str(ROOT / "python")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "1"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**env, "OPENBLAS_NUM_THREADS": "2"},
    )
    assert out.stdout.strip() == "2"


@pytest.mark.parametrize(
    "sets, pattern",
    [
        (
            ["min_file_size=64K", "min_record_size=128K"],
            "min_record_size: the record size (128KiB) is larger than the file",
        ),
        (["direct=true", "record_sizes=[1000, 4096]"], "record_sizes[0]: 1000 bytes is not a multiple of 512"),
        (["tests=[1, 2]"], "tests: tests 1, 2, 3, 5, 7 and 8 read the file test 0"),
        (["tests=[9]"], "test 9 does not exist"),
        (["max_record_size=32M"], "max_record_size: records go up to 16M"),
        (["min_file_size=3000"], "min_file_size: 3000 bytes is not a whole number of KiB"),
        (["threads=2"], "setting threads: the iozone grid is one stream"),
        (["min_file_size=1M", "max_file_size=64K"], "min_file_size (1MiB) is larger than max_file_size"),
        (["file_name=.."], "file_name: a plain file name"),  # the parent of --dir is not a file name
    ],
)
def test_bad_input_is_one_line_naming_the_parameter(tmp_path, sets, pattern):
    args = [x for s in sets for x in ("--set", s)]
    r = fsm("run", "iozone-quick", "--dir", tmp_path, "-q", *args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fsmeter: error: ") and pattern in lines[0], r.stderr


@pytest.mark.root
def test_a_full_filesystem_fails_its_cells_and_the_grid_goes_on(tmp_path, scratch):
    mnt = Path(scratch) / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], check=True)
    try:
        out = tmp_path / "o.json"
        r = fsm(
            "run",
            "iozone-quick",
            "--dir",
            mnt,
            "-q",
            "--json",
            out,
            "--set",
            "tests=[0, 1]",
            "--set",
            "min_file_size=1M",
            "--set",
            "max_file_size=8M",
            "--set",
            "min_record_size=1M",
        )
        assert r.returncode == 0, r.stderr
        rep = json.loads(out.read_text())["phases"]["grid"]
        status = {(c["file_kb"], c["record_kb"]): c["status"] for c in rep["extra"]["cells"]}
        assert status[(1024, 1024)] == "ok" and status[(2048, 1024)] == "ok"
        assert status[(4096, 1024)] == "failed" and status[(8192, 8192)] == "failed"
        failed = [c for c in rep["extra"]["cells"] if c["status"] == "failed"]
        assert all("No space left on device" in c["error"] for c in failed)
        assert rep["counters"]["cells_failed"] == len(failed) and rep["warnings"]
        assert "failed: test 0: write" in r.stdout
        assert os.listdir(mnt) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_campaign_report_and_iozone_export(tmp_path, scratch):
    work = tmp_path / "work"
    work.mkdir()
    camp = tmp_path / "c.toml"
    camp.write_text(
        textwrap.dedent(f"""\
        name = "ioz"
        [[workloads]]
        name = "iozone-lourdas-quick"
        params = {{ max_file_size = "32K" }}
        [repetitions]
        policy = "fixed"
        n = 2
        discard_first = 0
        [target]
        kind = "dir"
        path = "{work}"
        """)
    )
    db = tmp_path / "r.sqlite"
    r = fsm("campaign", "run", camp, "--db", db, "-q")
    assert r.returncode == 0, r.stderr
    from fsmeter.report.data import build_view
    from fsmeter.store import open_store

    with open_store(db) as store:
        keyed = store.conn.execute(
            "SELECT count(*), count(DISTINCT trial_id) FROM metrics WHERE keys IS NOT NULL"
        ).fetchone()
        k = json.loads(store.conn.execute("SELECT keys FROM metrics WHERE name = 'write[8K,4K]' LIMIT 1").fetchone()[0])
    cells = IozoneParams(min_file_size="4K", max_file_size="32K").cells()
    assert keyed[0] == 2 * len(cells) * 12 and keyed[1] == 2
    assert k == {"test": "write", "file_size": 8192, "record_size": 4096}
    # Rankings hold the summary metrics only; the cells are charted.
    view = build_view(db)
    names = [m.name for m in view.workloads[0].metrics]
    assert names[0] == "write_ops_per_s_gmean" and not any("[" in n for n in names)
    html = tmp_path / "r.html"
    r = fsm("report", "--db", db, "-o", html)
    assert r.returncode == 0, r.stderr
    text = html.read_text()
    for col in ("write", "random_read", "freread", "mix"):
        assert f"w0-ioz-heat-{col}" in text and f"w0-ioz-lines-{col}" in text
    # The export is iozone's output: its table and its -R reports, readable by iozone's own parsers.
    exp = tmp_path / "ioz.txt"
    r = fsm("export", "--db", db, "--format", "iozone", "-o", exp)
    assert r.returncode == 0, r.stderr
    out = exp.read_text()
    assert parse_cells(out) == [(f // 1024, r_ // 1024) for f, r_ in cells]
    reports = parse_excel(out)
    assert list(reports)[:2] == ["Writer report", "Re-writer report"] and "Mixed workload report" in reports
    header, rows = reports["Reader report"]
    assert header == [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    assert [f for f, _ in rows] == [4, 8, 16, 32] and [len(v) for _, v in rows] == [1, 2, 3, 4]
    assert all(v > 0 for _, vals in rows for v in vals)
    # A campaign without iozone has nothing to export in that format.
    if CHROMIUM:
        prof = tmp_path / "profile"
        res = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                f"--user-data-dir={prof}",
                "--virtual-time-budget=10000",
                "--dump-dom",
                html.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert 'data-errors="[]"' in res.stdout
        import re

        m = re.search(r'data-rendered="(\d+)" data-expected="(\d+)"', res.stdout)
        assert m and m.group(1) == m.group(2), res.stdout[-500:]
