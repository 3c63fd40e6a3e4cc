"""fio's verification options in job files: the checksum methods fio names (md5, sha1, crc64 ...), the read-back
of what a job wrote counted as the job's reads (as fio counts it), verify_backlog and its batch, verify_fatal,
verify_write_sequence and verify_async; the one-line refusals of what fsmeter does not do. The checksums are
checked against published test vectors in the engine (src/verify/header.rs); here the blocks a run leaves are
checked with Python's own hashlib."""

from __future__ import annotations

import hashlib

import pytest
from fsmeter.errors import UserError
from fsmeter.families.access import AccessParams
from fsmeter_cli import job_of, run_jobfile


def refused(text: str, pattern: str) -> None:
    with pytest.raises(UserError, match=pattern) as exc:
        job_of(text)
    assert "\n" not in exc.value.message


# -- the mapping ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "method,want",
    [
        ("md5", "md5"),
        ("sha1", "sha1"),
        ("crc32", "crc32"),
        ("crc16", "crc16"),
        ("crc7", "crc7"),
        ("crc64", "crc64"),
        ("sha3-224", "sha3_224"),
        ("sha3-256", "sha3_256"),
        ("meta", "crc32c"),
    ],
)
def test_fios_checksum_methods_map_onto_the_same_checksums(method, want):
    m = job_of(f"[a]\nsize=1m\nbs=4k\nrw=randwrite\nverify={method}\n")
    assert m.params["verify"] == want
    AccessParams(**m.params)
    if method == "meta":
        assert any("checks its block header only" in n for n in m.notes)


def test_the_read_back_of_a_write_job_is_in_the_run_as_fio_counts_it():
    # fio (basic-verify.fio) writes size= and then reads every written request back, counted as the job's reads:
    # 256 writes and 256 reads of 4 KiB for size=1m. Here: the backlog holds one pass (256 writes), no verify phase.
    m = job_of("[a]\nsize=1m\nbs=4k\nrw=randwrite\nverify=crc32c\n")
    assert m.params["verify_backlog"] == 256 and m.params["verify_phase"] is False
    assert any("reads back every request it wrote" in n for n in m.notes)
    # loops=2: fio reads back after each loop; one pass is still 256 writes.
    assert job_of("[a]\nsize=1m\nbs=4k\nrw=write\nloops=2\nverify=md5\n").params["verify_backlog"] == 256
    # A read job has nothing to read back; do_verify=0 checks nothing.
    assert "verify_backlog" not in job_of("[a]\nsize=1m\nrw=read\nverify=crc32c\n").params
    assert "verify" not in job_of("[a]\nsize=1m\nrw=write\nverify=crc32c\ndo_verify=0\nverify_backlog=4\n").params


def test_experimental_verify_notes_fios_single_pass_when_fsmeter_makes_several():
    """fio does one pass with experimental_verify whatever loops says (test_fio_counts has its counts): the note
    comes with every job fsmeter runs more than once, time_based without runtime included (fio and fsmeter
    then turn time_based off and run the loops), and not with one pass or a time-based job."""
    base = "[a]\nsize=1m\nrw=randwrite\nverify=md5\nexperimental_verify=1\n"

    def noted(extra: str) -> bool:
        return any("does one pass whatever loops says" in n for n in job_of(base + extra).notes)

    assert noted("loops=2\n") and noted("loops=2\ntime_based\n")
    assert not noted("") and not noted("loops=2\ntime_based\nruntime=1\n")


def test_the_read_back_of_long_and_time_based_jobs():
    # time_based: fio writes size= then reads it back, again and again: one pass is size/bs writes.
    m = job_of("[a]\nsize=1m\nbs=4k\nrw=randwrite\nverify=crc32c\ntime_based\nruntime=1\n")
    assert m.params["verify_backlog"] == 256 and m.params["total_bytes"] is None
    # 16 GiB of 4 KiB writes per clone: each keeps at most 2^22 / numjobs requests, read back in rounds.
    m = job_of("[a]\nsize=16g\nbs=4k\nrw=write\nverify=crc32c\nnumjobs=8\n")
    assert m.params["verify_backlog"] == 1 << 19
    assert any("reads back every 524288 writes" in n for n in m.notes)
    # Clones sharing a file: what fio does with them is said.
    m = job_of("[a]\nfilename=f\nsize=1m\nrw=randwrite\nverify=crc32c\nnumjobs=2\n")
    assert any("fio warns that they may overwrite each other's blocks" in n for n in m.notes)


def test_verify_backlog_batch_fatal_sequence_and_async_map():
    m = job_of(
        "[a]\nsize=1m\nbs=4k\nrw=write\nverify=crc32c-intel\nverify_backlog=1024\nverify_backlog_batch=16\n"
        "verify_fatal=1\nverify_write_sequence=0\nverify_async=4\nverify_dump=1\n"
    )
    p = m.params
    assert p["verify_dump"] is True
    assert (p["verify_backlog"], p["verify_backlog_batch"], p["verify_fatal"], p["verify_write_sequence"]) == (
        1024,
        16,
        True,
        False,
    )
    assert p["verify_phase"] is False
    assert any(n.startswith("verify_async=4: fio checks completed reads in helper threads") for n in m.notes)
    AccessParams(**p)


@pytest.mark.parametrize(
    "text,pattern",
    [
        (
            "verify=crc32c\nverify_backlog_batch=4\n",
            r"^t.fio line 6: verify_backlog_batch=4: has no effect without "
            r"verify_backlog",
        ),
        ("verify=crc32c\nverify_backlog=2000000\n", r"^t.fio line 6: verify_backlog=2000000: must be between 0 and"),
        ("verify=crc32c\nverify_only=1\n", r"^t.fio line 6: option verify_only is not supported by fsmeter yet"),
        (
            "verify_pattern=0xff\nverify_dump=1\n",
            r"^t.fio line 6: verify_dump=1: with verify_pattern is not supported by fsmeter yet",
        ),
        (
            "verify_pattern=0xff\nverify_backlog_batch=4\n",
            r"^t.fio line 6: verify_backlog_batch=4: has no effect without verify_backlog",
        ),
    ],
)
def test_what_fsmeter_does_not_do_is_refused_in_one_line(text, pattern):
    refused("[a]\nsize=1m\nbs=4k\nrw=write\n" + text, pattern)


# -- end to end ----------------------------------------------------------------------------------------------------
def run_job(tmp_path, text: str) -> dict:
    return run_jobfile(tmp_path, text, "--keep-files", "--cache", "keep")


def test_a_verified_write_job_does_fios_work_writes_and_reads_back(tmp_path):
    doc = run_job(tmp_path, "[v]\nfilename=data\nsize=1m\nbs=4k\nrw=randwrite\nverify=md5\n")
    run = doc["phases"]["v:run"]
    # fio: write 1 MiB in 256 requests, then read the 256 back: both in the job's counts.
    assert (run["ops"]["write"]["count"], run["ops"]["write"]["bytes"]) == (256, 1 << 20)
    assert (run["ops"]["read"]["count"], run["ops"]["read"]["bytes"]) == (256, 1 << 20)
    assert run["counters"]["verify_backlog_reads"] == 256 and run["counters"]["verify_mismatches"] == 0
    assert "v:verify" not in doc["phases"], "no second read-back: fio reads each written block once"
    # The blocks carry md5 (algo code 4) of their data, as Python's hashlib computes it.
    data = (tmp_path / "w" / "data").read_bytes()
    for off in (0, 4096 * 17, (1 << 20) - 4096):
        block = data[off : off + 4096]
        assert block[:4] == b"FSMV" and block[5] == 4
        assert block[40:56] == hashlib.md5(block[80:]).digest()
        assert block[56:72] == bytes(16)


def test_verify_backlog_reads_back_during_the_writes(tmp_path):
    doc = run_job(
        tmp_path,
        "[v]\nfilename=data\nsize=512k\nbs=8k\nrw=write\nverify=sha1\nverify_backlog=4\nverify_backlog_batch=2\n",
    )
    run = doc["phases"]["v:run"]
    assert run["ops"]["write"]["count"] == 64
    # Batches of 2 whenever 4 writes wait, then the 2 left at the end: every write read back once.
    assert run["ops"]["read"]["count"] == 64 and run["counters"]["verify_blocks_checked"] == 64
    assert run["counters"]["verify_mismatches"] == 0
    block = (tmp_path / "w" / "data").read_bytes()[8192 * 5 : 8192 * 6]
    assert block[5] == 5 and block[40:60] == hashlib.sha1(block[80:]).digest()
