"""Exports round-trip: tidy CSV equals store.tidy(), campaign JSON keeps every count, fio-json matches the store."""

from __future__ import annotations

import json
import subprocess
import sys

import fsmeter
import pandas as pd
import pytest
import report_synth as rs
from fsmeter.errors import UserError
from fsmeter.report.export import (
    CAMPAIGN_FORMAT,
    CAMPAIGN_VERSION,
    FIO_PERCENTILES,
    export,
    fio_document,
    tidy_from_document,
)
from fsmeter.store import open_store, tidy


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "r.sqlite"
    rs.make_store(path)
    return path


def test_csv_round_trip_equals_tidy(synth, tmp_path):
    out = tmp_path / "t.csv"
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", "export", "--db", str(synth), "--format", "csv", "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    back = pd.read_csv(out)
    want = tidy(synth, "synth")
    assert list(back.columns) == list(want.columns)
    assert {"filesystem", "threads", "file_size", "record_size"} <= set(back.columns)
    assert len(back) == len(want) > 0
    pd.testing.assert_frame_equal(back, want.reset_index(drop=True), check_dtype=False)


def test_json_has_every_row_and_loads_back(synth):
    text = export("json", synth, "synth")
    doc = json.loads(text)
    assert doc["format"] == CAMPAIGN_FORMAT and doc["version"] == CAMPAIGN_VERSION
    with open_store(synth, create=False) as st:
        count = lambda q: st.conn.execute(q).fetchone()[0]  # noqa: E731
        assert len(doc["cells"]) == count("SELECT count(*) FROM cells") == 20
        assert len(doc["trials"]) == count("SELECT count(*) FROM trials")
        assert len(doc["phases"]) == count("SELECT count(*) FROM phases")
        assert len(doc["metrics"]) == count("SELECT count(*) FROM metrics")
        assert len(doc["environment"]) == count("SELECT count(*) FROM environment")
        n_int = count("SELECT count(*) FROM intervals")
    assert sum(len(p["report"].get("intervals") or []) for p in doc["phases"]) == n_int
    assert doc["factors"] == ["filesystem", "threads", "file_size", "record_size"]
    failed = [t for t in doc["trials"] if t["status"] == "failed"]
    assert any("No space left" in t["cause"] for t in failed)
    env = doc["environment"][0]
    assert env["mkfs_options"] == ["-q"] and env["extra"]["job"]["workload"]["family"] == "access"
    # The document converts back to the same tidy frame as the store gives.
    back = tidy_from_document(doc)
    pd.testing.assert_frame_equal(
        back.reset_index(drop=True), tidy(synth, "synth").reset_index(drop=True), check_dtype=False
    )


def test_fio_json_fields_and_values(synth):
    doc = fio_document(synth, "synth")
    assert doc["fio version"].startswith("fsmeter-")
    assert doc["fsmeter"]["skipped_workloads"] == ["dbench-quick", "iozone-grid"]
    jobs = doc["jobs"]
    # seq-read: 9 cells x 3 kept trials (the failed one is not a job).
    assert len(jobs) == 27 and {j["jobname"] for j in jobs} == {"seq-read"}
    with open_store(synth, create=False) as st:
        row = st.conn.execute(
            "SELECT p.report, t.number, c.factors FROM phases p JOIN trials t ON t.id = p.trial_id "
            "JOIN cells c ON c.id = t.cell_id WHERE c.workload = 'seq-read' AND p.key = 'run' "
            "ORDER BY c.idx DESC, t.number DESC LIMIT 1"
        ).fetchone()
    rep, factors = json.loads(row["report"]), json.loads(row["factors"])
    job = next(
        j
        for j in jobs
        if j["job options"]["trial"] == str(row["number"])
        and j["job options"]["filesystem"] == factors["filesystem"]
        and j["job options"]["threads"] == str(factors["threads"])
    )
    for direction in ("read", "write"):
        o, got = rep["ops"][direction], job[direction]
        assert got["io_bytes"] == o["bytes"] and got["total_ios"] == o["count"]
        assert got["bw_bytes"] == round(o["bytes_per_s"]) and got["bw"] == round(o["bytes_per_s"]) // 1024
        assert got["iops"] == pytest.approx(o["ops_per_s"])
        assert got["runtime"] == round(rep["elapsed_s"] * 1000)
        clat = got["clat_ns"]
        assert (clat["min"], clat["max"], clat["mean"], clat["stddev"]) == (
            o["lat"]["min_ns"],
            o["lat"]["max_ns"],
            o["lat"]["mean_ns"],
            o["lat"]["stdev_ns"],
        )
        assert clat["percentile"]["50.000000"] == o["lat"]["p50_ns"]
        assert clat["percentile"]["99.000000"] == o["lat"]["p99_ns"]
        assert set(clat["percentile"]) == set(FIO_PERCENTILES)
    assert job["trim"]["io_bytes"] == 0


def test_fio_json_refuses_campaign_without_access_workloads(tmp_path):
    path = tmp_path / "r.sqlite"
    store = open_store(path)
    cid = store.create_campaign("replay-only", "", [("dbench-quick", {"filesystem": "ext4"})])
    rs.add_trials(store, store.cells(cid)[0]["id"], [1.0, 2.0], "replay", "ext4", {}, __import__("random").Random(0))
    store.close()
    with pytest.raises(UserError, match="not an access workload"):
        fio_document(path)


def test_export_cli_errors_and_stdout(synth, tmp_path):
    exe = [sys.executable, "-m", "fsmeter", "export", "--db", str(synth)]
    r = subprocess.run([*exe, "--format", "xml", "-o", str(tmp_path / "x")], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown export format" in r.stderr
    r = subprocess.run([*exe, "--format", "csv", "-o", str(tmp_path / "no" / "x.csv")], capture_output=True, text=True)
    assert r.returncode == 2 and "does not exist" in r.stderr
    r = subprocess.run([*exe, "--format", "fio-json", "-o", "-"], capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["jobs"]


def test_fsmeter_load_returns_frames(synth):
    frames = fsmeter.load(synth, "synth")
    assert set(frames) == {
        "campaigns",
        "cells",
        "trials",
        "metrics",
        "phases",
        "intervals",
        "histograms",
        "environment",
        "storage",
    }
    assert all(isinstance(f, pd.DataFrame) for f in frames.values())
    assert len(frames["cells"]) == 20 and "filesystem" in frames["cells"].columns
    pd.testing.assert_frame_equal(frames["metrics"], tidy(synth, "synth"))
