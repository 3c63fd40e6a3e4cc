"""fio's verify=meta with verify_pattern (its surface-scan.fio): every verify_interval block starts with a header and
holds the pattern in the rest; a later read job checks both. fsmeter writes its own 80-byte header where fio writes
its 48-byte one; the pattern bytes after the header are in the same places (checked against a file fio writes)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from fsmeter.errors import UserError
from fsmeter.families.access import AccessParams
from fsmeter_cli import fsm, job_of

PATTERN = bytes.fromhex("aa555aa5")
HEAD = "[global]\nthread\nbs=64k\nverify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\n"
WRITE = HEAD + "[w]\nfilename=datafile.tmp\nsize=1m\nrw=write\ndo_verify=0\n"
READ = HEAD + "[r]\nfilename=datafile.tmp\nsize=1m\nrw=read\ndo_verify=1\n"


def test_the_write_job_carries_headers_unchecked_and_the_read_job_checks_them():
    w = job_of(WRITE)
    assert (w.params["verify_pattern_meta"], w.params["verify_pattern_check"], w.params["verify_block"]) == (
        True,
        False,
        512,
    )
    assert "buffer_pattern" not in w.params and w.params.get("verify") is None
    r = job_of(READ)
    assert r.params["verify_pattern_meta"] is True and r.params.get("verify_pattern_check", True) is True
    assert r.params["verify_pattern"] == "0xaa555aa5"
    AccessParams(**w.params)
    AccessParams(**r.params)
    assert any("starts with fsmeter's 80-byte header" in n for n in r.notes)


@pytest.mark.parametrize(
    "change,pattern",
    [
        (
            "verify_interval=512\n",
            "verify_interval=64\n",
        ),
        ("verify_interval=512\n", "verify_interval=96\n"),
        ("verify=meta\n", "verify=md5\n"),
    ],
)
def test_what_cannot_be_done_is_refused_in_one_line(change, pattern):
    text = READ.replace(change, pattern)
    with pytest.raises(UserError) as exc:
        job_of(text)
    msg = exc.value.message
    assert "\n" not in msg and msg.startswith("t.fio line ")
    if pattern == "verify_interval=64\n":
        assert "too small for fsmeter's 80-byte header" in msg
    elif pattern == "verify_interval=96\n":
        assert "does not divide" in msg
    else:
        assert "verify=md5" in msg and "verify=meta for a header and the pattern" in msg


def _run(tmp_path, text: str, name: str, keep=True) -> dict:
    job = tmp_path / f"{name}.fio"
    job.write_text(text)
    out = tmp_path / f"{name}.json"
    r = fsm("run", job, "--dir", tmp_path / "d", "-q", "--json", out, *(["--keep-files"] if keep else []))
    assert out.exists(), r.stderr
    return json.loads(out.read_text())


def _mismatches(doc: dict, phase: str) -> list:
    return doc["phases"][phase]["extra"]["verify"]["mismatches"]


def test_a_wrong_pattern_byte_and_a_wrong_header_field_are_each_caught_at_their_offset(tmp_path):
    (tmp_path / "d").mkdir()
    _run(tmp_path, WRITE, "w")
    data = tmp_path / "d" / "datafile.tmp"
    b = bytearray(data.read_bytes())
    assert len(b) == 1 << 20
    for blk in range(0, len(b), 512):
        assert b[blk : blk + 4] == b"FSMV" and int.from_bytes(b[blk + 16 : blk + 24], "little") == blk
        assert b[blk + 80 : blk + 512] == PATTERN * 108  # fio's place: byte o of a block is pattern[o % 4]
    clean = _run(tmp_path, READ, "clean")
    assert clean["phases"]["r:run"]["counters"]["verify_mismatches"] == 0
    assert clean["phases"]["r:run"]["counters"]["verify_blocks_checked"] == 2048
    b[5 * 512 + 200] ^= 0xFF  # a pattern byte
    b[70 * 512 + 16] ^= 0x01  # the block's offset in its header
    b[300 * 512 + 13] ^= 0x01  # the writer's thread: only the header's crc32c tells
    data.write_bytes(bytes(b))
    doc = _run(tmp_path, READ, "bad", keep=False)
    for phase in ("r:run", "r:verify"):
        found = [(m["offset"], m["first_diff_offset"], m["field"].split(" ")[0]) for m in _mismatches(doc, phase)]
        assert found == [
            (5 * 512, 5 * 512 + 200, "pattern"),
            (70 * 512, 70 * 512 + 16, "offset"),
            (300 * 512, 300 * 512 + 72, "header_crc"),
        ], phase
        assert doc["phases"][phase]["counters"]["verify_mismatches"] == 3


def test_the_pattern_is_where_fio_puts_it(tmp_path):
    fio = shutil.which("fio")
    if fio is None:
        pytest.skip("fio is not installed")
    (tmp_path / "d").mkdir()
    (tmp_path / "f").mkdir()
    job = tmp_path / "fio-w.fio"
    job.write_text(WRITE)
    r = subprocess.run(
        [fio, "--directory", str(tmp_path / "f"), str(job)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )  # fio leaves its verify state file in its working directory
    assert r.returncode == 0, r.stderr
    theirs = (tmp_path / "f" / "datafile.tmp").read_bytes()
    _run(tmp_path, WRITE, "w")
    ours = (tmp_path / "d" / "datafile.tmp").read_bytes()
    assert len(ours) == len(theirs) == 1 << 20
    for blk in range(0, len(ours), 512):
        assert theirs[blk : blk + 2] == b"\xca\xac"  # fio's header magic 0xacca, little-endian
        assert theirs[blk + 48 : blk + 80] == PATTERN * 8  # fio's header is 48 bytes: the pattern goes on after it
        assert ours[blk + 80 : blk + 512] == theirs[blk + 80 : blk + 512]
    # fio's own check of its file passes (its read job with do_verify=1), so the layout compared is fio's.
    job.write_text(READ)
    r = subprocess.run(
        [fio, "--directory", str(tmp_path / "f"), str(job)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )  # fio leaves its verify state file in its working directory
    assert r.returncode == 0 and "verify:" not in r.stderr, r.stderr


# fio's t/jobs t0006 (verify=meta, verify_pattern, verify_backlog=1024, verify_fatal=1 on a random read/write
# mix), at 4 MiB instead of 4 GiB and buffered (the test's directory may not take O_DIRECT).
T0006 = (
    "[global]\nrw=randrw\nbs=4k\nioengine=libaio\niodepth=32\nverify=meta\nverify_backlog=1024\nverify_fatal=1\n"
    "[ver-test]\nfilename=foo\nsize=4m\nverify_pattern=0xaaa\n"
)


def test_t0006_maps_verify_backlog_and_verify_fatal_beside_the_pattern():
    m = job_of(T0006)
    p = m.params
    assert (p["verify_pattern"], p["verify_pattern_meta"], p["verify_backlog"], p["verify_fatal"]) == (
        "0xaaa",
        True,
        1024,
        True,
    )
    assert p["verify_phase"] is False, "fio reads back what its backlog left, not the whole file again"
    AccessParams(**p)
    assert any(n.startswith("verify_backlog=1024: each thread reads back") for n in m.notes)


def test_t0006_reads_back_every_write_as_fio_counts_it(tmp_path):
    (tmp_path / "d").mkdir()
    doc = _run(tmp_path, T0006, "t0006", keep=False)
    run = doc["phases"]["ver-test:run"]
    reads, writes = run["ops"]["read"], run["ops"]["write"]
    # fio 3.33, this job (direct=1 on ext4): read 4096 KiB in 1,024 requests, write 2,112 KiB in 528. Its mix
    # moves size= bytes (4 MiB: mix reads + writes) and then every write is read back once, so the reads
    # always come to size= bytes, whatever the mix drew: run-fio-tests.py's read/write ratio of about 2.
    assert (reads["count"], reads["bytes"]) == (1024, 4 << 20)
    assert run["counters"]["verify_backlog_reads"] == writes["count"] > 0
    assert run["counters"]["verify_mismatches"] == 0
    assert "ver-test:verify" not in doc["phases"]


def test_verify_fatal_stops_a_pattern_reader_at_its_first_corrupt_block(tmp_path):
    (tmp_path / "d").mkdir()
    _run(tmp_path, WRITE, "w")
    data = tmp_path / "d" / "datafile.tmp"
    b = bytearray(data.read_bytes())
    b[5 * 512 + 200] ^= 0xFF  # a pattern byte in the first 64 KiB read
    data.write_bytes(bytes(b))
    doc = _run(tmp_path, READ.replace("do_verify=1\n", "do_verify=1\nverify_fatal=1\n"), "fatal")
    run = doc["phases"]["r:run"]
    assert run["counters"]["verify_mismatches"] == 1
    assert run["ops"]["read"]["count"] == 1, "fio's job stops at its first corrupt read"
