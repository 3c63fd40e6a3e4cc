"""fio's include (files next to the job file only, cycles and hostile files refused in one line), fio's reading of
N*M in integer options, the refusal of the splice engine, and the options accepted with a note."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fsmeter.errors import UserError
from fsmeter.interop.fio.job import map_job
from fsmeter.interop.fio.load import map_jobfile
from fsmeter.interop.fio_jobfile import parse_jobfile, read_jobfile

KEYWORDS = {"$pagesize": "4096", "$mb_memory": "2048", "$ncpus": "3"}


def jobs_of(text: str):
    jf = parse_jobfile(text, "t.fio", {}, KEYWORDS)
    return [map_job("t.fio", j, i, Path("/nonexistent-target"), True) for i, j in enumerate(jf.jobs)]


def refused_file(path: Path, pattern: str) -> str:
    with pytest.raises(UserError, match=pattern) as exc:
        read_jobfile(path, {})
    assert "\n" not in exc.value.message
    return exc.value.message


def test_include_reads_options_in_place(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "a.fio").write_text("size=1m\n; comment\ninclude b.fio\n")
    (tmp_path / "inc" / "b.fio").write_text("bs=8k\n")
    (tmp_path / "b.fio").write_text("rw=write\n")
    job = tmp_path / "j.fio"
    job.write_text("[global]\ninclude inc/a.fio\n[x]\nrw=read\n")
    (x,) = read_jobfile(job, {}).jobs
    assert (x.get("size").value, x.get("rw").value) == ("1m", "read")
    # a nested include is relative to the job file's folder, as the first one
    assert x.get("bs") is None and read_jobfile(job, {}).jobs[0].get("rw").value == "read"


def test_include_confined_to_the_job_files_folder(tmp_path):
    outside = tmp_path / "outside.fio"
    outside.write_text("size=1m\n")
    d = tmp_path / "d"
    d.mkdir()
    (d / "link.fio").symlink_to(outside)
    for target in ("../outside.fio", str(outside), "link.fio"):
        (d / "j.fio").write_text(f"[x]\ninclude {target}\n")
        msg = refused_file(d / "j.fio", "outside the job file's folder")
        assert msg.startswith(f"{d / 'j.fio'} line 2: include")


def test_include_cycles_sections_and_odd_files_refused(tmp_path):
    (tmp_path / "a.fio").write_text("include b.fio\n")
    (tmp_path / "b.fio").write_text("include a.fio\n")
    (tmp_path / "j.fio").write_text("[x]\ninclude a.fio\n")
    refused_file(tmp_path / "j.fio", r"b.fio line 1 \(included at .*j.fio line 2\): include a.fio: .*a cycle")
    (tmp_path / "j.fio").write_text("[x]\ninclude j.fio\n")
    refused_file(tmp_path / "j.fio", "a cycle")
    (tmp_path / "s.fio").write_text("[y]\n")
    (tmp_path / "j.fio").write_text("[x]\ninclude s.fio\n")
    refused_file(tmp_path / "j.fio", "options only")
    (tmp_path / "j.fio").write_text("[x]\ninclude missing.fio\n")
    refused_file(tmp_path / "j.fio", "cannot read it")
    (tmp_path / "dir").mkdir()
    (tmp_path / "j.fio").write_text("[x]\ninclude dir\n")
    refused_file(tmp_path / "j.fio", "not a regular file")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "j.fio").write_text("[x]\ninclude fifo\n")
    refused_file(tmp_path / "j.fio", "not a regular file")
    (tmp_path / "j.fio").write_text("[x]\ninclude\n")
    refused_file(tmp_path / "j.fio", "names no file")
    (tmp_path / "bad.fio").write_bytes(b"\xff\xfe=1\n")
    (tmp_path / "j.fio").write_text("[x]\ninclude bad.fio\n")
    with pytest.raises(UserError):
        read_jobfile(tmp_path / "j.fio", {})


def test_include_chain_too_deep_refused(tmp_path):
    for i in range(40):
        (tmp_path / f"{i}.fio").write_text(f"include {i + 1}.fio\n")
    (tmp_path / "40.fio").write_text("bs=4k\n")
    (tmp_path / "j.fio").write_text("[x]\ninclude 0.fio\n")
    refused_file(tmp_path / "j.fio", "nest more than")


def test_include_from_text_has_no_folder():
    with pytest.raises(UserError, match="no folder to include from"):
        parse_jobfile("[x]\ninclude a.fio\n", "t.fio", {}, KEYWORDS)


def test_include_runs_the_jobs_of_the_recorded_file():
    data = Path(__file__).resolve().parents[2] / "data" / "fio" / "counts" / "include.fio"
    r, w = map_jobfile(data, Path("/nonexistent-target"))
    assert [e["size"] for e in r.params["entries"]] == [4096] and r.params["total_bytes"] == 256 << 10
    assert [e["size"] for e in w.params["entries"]] == [8192]


def test_arithmetic_outside_parentheses_is_read_as_fio_reads_it():
    (m,) = jobs_of("[a]\nrw=randread\nioengine=io_uring\niodepth=128*1\nsize=1m\n")
    assert m.params["queue_depth"] == 128
    assert any("iodepth=128*1: fio reads the number before the arithmetic (128)" in n for n in m.notes)
    (m,) = jobs_of("[a]\nrw=randread\nioengine=io_uring\niodepth=(4*2+1)\nsize=1m\n")
    assert m.params["queue_depth"] == 9
    with pytest.raises(UserError, match=r"line 4: iodepth=4\*x"):
        jobs_of("[a]\nrw=randread\nioengine=io_uring\niodepth=4*x\nsize=1m\n")


def test_splice_refusal_says_it_is_local():
    with pytest.raises(UserError, match="splice.*a local engine") as exc:
        jobs_of("[a]\nrw=read\nioengine=splice\nsize=1m\n")
    assert "network" not in exc.value.message


def test_verify_options_without_verify_run_with_a_note():
    (m,) = jobs_of("[a]\nrw=read\nsize=1m\ndo_verify=0\nverify_fatal=0\nverify_backlog=16\n")
    assert "verify" not in m.params or not m.params.get("verify")
    assert any(n.startswith("verify_backlog=16 without verify=") for n in m.notes)
    assert not any("verify_fatal" in n for n in m.notes)  # fio's default: nothing to say


def test_sync_file_range_flags_refused_when_unknown():
    with pytest.raises(UserError, match="line 4: sync_file_range=flush:8: use one or more of"):
        jobs_of("[a]\nrw=write\nsize=1m\nsync_file_range=flush:8\n")
