"""The fileset family: fsmeter's PostMark against Debian's postmark 1.53, count for count.

PostMark reads its commands from standard input (`set number 500`, ..., `run`,
`quit`) and prints a report; for the same parameters and seed, fsmeter must
create (alone / mixed), read, append and delete exactly as many files.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fsmeter.errors import UserError
from fsmeter.families.fileset import FilesetParams
from fsmeter.phases import run_job
from fsmeter.spec import build_job, load_workload
from rich.console import Console

POSTMARK = shutil.which("postmark")
needs_postmark = pytest.mark.skipif(
    POSTMARK is None, reason="Debian's postmark is not installed (make test installs it)"
)

COUNT_KEYS = (
    "files_created_alone",
    "files_created_mixed",
    "files_read",
    "files_appended",
    "files_deleted_alone",
    "files_deleted_mixed",
)


def parse_postmark_report(text: str) -> dict:
    """The counts of PostMark's verbose report (see verbose_report() in postmark-1.53.c)."""

    def one(pattern: str, start: int = 0):
        m = re.compile(pattern, re.M).search(text, start)
        assert m, f"no {pattern!r} in PostMark's output:\n{text}"
        return m

    created = one(r"^\s*(\d+) created \(")
    alone = one(r"Creation alone: (\d+) files", created.end())
    mixed_c = one(r"Mixed with transactions: (\d+) files", alone.end())
    read = one(r"^\s*(\d+) read \(", mixed_c.end())
    appended = one(r"^\s*(\d+) appended \(", read.end())
    deleted = one(r"^\s*(\d+) deleted \(", appended.end())
    del_alone = one(r"Deletion alone: (\d+) files", deleted.end())
    mixed_d = one(r"Mixed with transactions: (\d+) files", del_alone.end())
    data = {}
    for what in ("read", "written"):
        m = one(rf"^\s*([\d.]+) (megabytes|kilobytes|bytes) {what} \(")
        mult = {"megabytes": 1 << 20, "kilobytes": 1 << 10, "bytes": 1}[m.group(2)]
        data[what] = float(m.group(1)) * mult
    out = {
        "files_created": int(created.group(1)),
        "files_created_alone": int(alone.group(1)),
        "files_created_mixed": int(mixed_c.group(1)),
        "files_read": int(read.group(1)),
        "files_appended": int(appended.group(1)),
        "files_deleted": int(deleted.group(1)),
        "files_deleted_alone": int(del_alone.group(1)),
        "files_deleted_mixed": int(mixed_d.group(1)),
        "bytes_read": data["read"],
        "bytes_written": data["written"],
    }
    tx = re.search(r"seconds of transactions \((\d+) per second\)", text)
    out["tx_per_s"] = int(tx.group(1)) if tx else None
    return out


def postmark_commands(p: dict, seed: int, location_lines: list) -> str:
    """The command script for PostMark equivalent to fsmeter parameters `p`."""
    lines = [
        f"set number {p.get('files', 500)}",
        f"set transactions {p.get('transactions', 500)}",
        f"set size {p.get('size_low', 500)} {p.get('size_high', 10000)}",
        f"set read {p.get('read_block', 512)}",
        f"set write {p.get('write_block', 512)}",
        f"set seed {seed}",
        f"set bias read {p.get('bias_read', 5)}",
        f"set bias create {p.get('bias_create', 5)}",
        f"set buffering {'true' if p.get('buffering', True) else 'false'}",
    ]
    if p.get("subdirectories", 0):
        lines.append(f"set subdirectories {p['subdirectories']}")
    lines += location_lines
    lines += ["run", "quit"]
    return "\n".join(lines) + "\n"


def run_postmark(workdir: Path, p: dict, seed: int, location_lines: list) -> dict:
    r = subprocess.run(
        [POSTMARK],
        input=postmark_commands(p, seed, location_lines),
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "Error" not in r.stderr, r.stderr
    return parse_postmark_report(r.stdout)


def run_fsmeter(workdir: Path, p: dict, seed: int, workload: str = "postmark", threads: int = 1) -> dict:
    job = build_job(load_workload(workload), workdir, {**p, "seed": seed, "threads": threads})
    doc = run_job(job, Console(quiet=True), show_progress=False, cache="keep")
    return doc


def fsmeter_counts(doc: dict) -> dict:
    out: dict = {}
    for rep in doc["phases"].values():
        for k, v in rep["counters"].items():
            out[k] = out.get(k, 0) + v
    return out


CASES = {
    "defaults": ({}, 42),
    "subdirectories-10": ({"subdirectories": 10}, 42),
    "bias-read-off": ({"bias_read": -1}, 42),
    "bias-create-off": ({"bias_create": -1}, 42),
    "other-seed": ({}, 7),
    "unbuffered-wide-sizes": (
        {"buffering": False, "size_low": 100, "size_high": 50000, "read_block": 4096, "write_block": 1000},
        42,
    ),
    "fixed-size": ({"size_low": 2000, "size_high": 2000, "transactions": 2000}, 3),
    "biases-8-3": ({"bias_read": 8, "bias_create": 3, "files": 1000, "transactions": 1500}, 11),
    "biases-0-10": ({"bias_read": 0, "bias_create": 10, "subdirectories": 3}, 5),
    "bigger": (
        {
            "files": 2000,
            "transactions": 10000,
            "subdirectories": 25,
            "size_low": 512,
            "size_high": 16384,
            "read_block": 4096,
            "write_block": 4096,
        },
        1234567,
    ),
}


@needs_postmark
@pytest.mark.parametrize("case", sorted(CASES))
def test_counts_match_postmark_exactly(tmp_path, case):
    params, seed = CASES[case]
    pm_dir, fs_dir = tmp_path / "pm", tmp_path / "fs"
    pm_dir.mkdir()
    fs_dir.mkdir()
    pm = run_postmark(pm_dir, params, seed, [f"set location {pm_dir}"])
    doc = run_fsmeter(fs_dir, params, seed)
    got = fsmeter_counts(doc)
    assert {k: got[k] for k in COUNT_KEYS} == {k: pm[k] for k in COUNT_KEYS}
    assert pm["files_created_alone"] == params.get("files", 500)
    # PostMark adds bytes in single-precision floats and prints 2 decimals of MB/KB: near, not exact.
    for k in ("bytes_read", "bytes_written"):
        assert got[k] == pytest.approx(pm[k], rel=0.005, abs=20_000), k
    # Both leave their directories as they found them.
    assert list(pm_dir.iterdir()) == [] and list(fs_dir.iterdir()) == []


@needs_postmark
def test_weighted_locations_match_postmark(tmp_path):
    """Several locations: PostMark draws one per create (RND(total weight)) before the subdirectory."""
    params = {"subdirectories": 4, "files": 800, "transactions": 3000}
    pm_dirs = [tmp_path / "pm-a", tmp_path / "pm-b", tmp_path / "pm-c"]
    fs_dirs = [tmp_path / "fs-a", tmp_path / "fs-b", tmp_path / "fs-c"]
    for d in pm_dirs + fs_dirs:
        d.mkdir()
    weights = [1, 3, 2]
    lines = [f"set location {pm_dirs[0]} {weights[0]}"] + [
        f"set location +{d} {w}" for d, w in zip(pm_dirs[1:], weights[1:])
    ]
    pm = run_postmark(tmp_path, params, 42, lines)
    locs = [{"path": str(d), "weight": w} for d, w in zip(fs_dirs, weights)]
    doc = run_fsmeter(tmp_path, {**params, "locations": locs}, 42)
    got = fsmeter_counts(doc)
    assert {k: got[k] for k in COUNT_KEYS} == {k: pm[k] for k in COUNT_KEYS}


def test_postmark_report_parser():
    text = """Files:
\t764 created (764 per second)
\t\tCreation alone: 500 files (500 per second)
\t\tMixed with transactions: 264 files (264 per second)
\t243 read (243 per second)
\t257 appended (257 per second)
\t764 deleted (764 per second)
\t\tDeletion alone: 528 files (528 per second)
\t\tMixed with transactions: 236 files (236 per second)

Data:
\t1.36 megabytes read (1.36 megabytes per second)
\t4.45 megabytes written (4.45 megabytes per second)
"""
    r = parse_postmark_report(text)
    assert (r["files_created_alone"], r["files_created_mixed"], r["files_deleted_alone"], r["files_deleted_mixed"]) == (
        500,
        264,
        528,
        236,
    )
    assert (r["files_read"], r["files_appended"]) == (243, 257)
    assert r["bytes_read"] == pytest.approx(1.36 * (1 << 20))


def test_defaults_reproduce_postmark_without_the_binary(tmp_path):
    """The counts Debian's postmark 1.53 prints for its defaults (`set location D`, `run`)."""
    got = fsmeter_counts(run_fsmeter(tmp_path, {}, 42))
    assert {k: got[k] for k in COUNT_KEYS} == {
        "files_created_alone": 500,
        "files_created_mixed": 264,
        "files_read": 243,
        "files_appended": 257,
        "files_deleted_alone": 528,
        "files_deleted_mixed": 236,
    }


def test_cli_run_postmark_writes_json(tmp_path):
    out = tmp_path / "out.json"
    d = tmp_path / "d"
    d.mkdir()
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", "run", "postmark", "--dir", str(d), "--json", str(out), "-q"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["family"] == "fileset" and list(doc["phases"]) == ["create", "transactions", "delete"]
    tx = doc["phases"]["transactions"]
    assert tx["counters"]["transactions"] == 500
    assert doc["metrics"]["transactions.transactions_per_s"]["value"] == pytest.approx(
        tx["extra"]["rates"]["transactions_per_s"]
    )
    assert doc["metrics"]["transactions.transactions_per_s"]["value"] > 0
    assert doc["metrics"]["create.files_created_per_s"]["value"] > 0
    assert list(d.iterdir()) == []


def test_filemark_phases_labels_discard_and_cold_cache(tmp_path):
    job = build_job(
        load_workload("filemark-small"), tmp_path, {"files": 2000, "duration_s": 0.3, "warmup_s": 0.1, "threads": 2}
    )
    phases = job.phases()
    assert [p.key for p in phases] == ["create", "transactions-1", "transactions-2", "transactions-3", "delete"]
    assert [p.discard for p in phases] == [False, True, False, False, False]
    assert all(p.cold_cache for p in phases if p.name == "transactions")
    assert job.metrics()[0].phase == "transactions-2"
    doc = run_job(job, Console(quiet=True), show_progress=False, cache="keep")
    assert doc["phases"]["transactions-1"]["measured"] is False
    for k in (2, 3):
        assert doc["metrics"][f"transactions-{k}.transactions_per_s"]["value"] > 0
        assert doc["phases"][f"transactions-{k}"]["threads"] == 2
    assert list(tmp_path.iterdir()) == []


def test_filemark_without_delete_phase_still_cleans_up(tmp_path):
    job = build_job(
        load_workload("filemark-large"),
        tmp_path,
        {"files": 200, "duration_s": 0.2, "warmup_s": 0, "transaction_phases": 2, "delete": False},
    )
    assert [p.key for p in job.phases()] == ["create", "transactions-1", "transactions-2"]
    run_job(job, Console(quiet=True), show_progress=False, cache="keep")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "over, fragment",
    [
        ({"bias_read": 11}, "bias_read"),
        ({"mode": "filemark", "bias_create": 101, "duration_s": 5}, "bias_create"),
        ({"size_low": 5000, "size_high": 100}, "size_high"),
        ({"mode": "filemark", "transactions": None}, "transactions"),
        ({"files": 1, "threads": 2}, "files"),
        ({"backend": "io_uring"}, "backend"),
    ],
)
def test_bad_parameters_name_the_field(tmp_path, over, fragment):
    with pytest.raises(UserError) as exc:
        build_job(load_workload("postmark"), tmp_path, over)
    assert fragment in str(exc.value)


def test_postmark_defaults_and_named_presets():
    p = FilesetParams()
    assert (p.files, p.transactions, p.size_low, p.size_high, p.read_block, p.write_block) == (
        500,
        500,
        500,
        10000,
        512,
        512,
    )
    assert (p.bias_read, p.bias_create, p.buffering, p.subdirectories) == (5, 5, True, 0)
    big = load_workload("postmark-big").params
    assert (big["files"], big["transactions"]) == (10000, 50000)
    for name in ("filemark-small", "filemark-large"):
        w = load_workload(name)
        assert (w.params["bias_read"], w.params["bias_create"], w.params["mode"]) == (75, 50, "filemark")


@pytest.mark.parametrize("location", ["../escaped", "sub/../../escaped"])
def test_a_relative_location_climbing_out_of_dir_is_refused(tmp_path, location):
    work = tmp_path / "work"
    work.mkdir()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsmeter",
            "run",
            "postmark",
            "--dir",
            str(work),
            "-q",
            "--set",
            f'locations=[{{"path": "{location}"}}]',
            "--set",
            "files=10",
            "--set",
            "transactions=10",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "climbs out of --dir" in lines[0], r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"] and list(work.iterdir()) == []
