"""What fio job files make writes carry, and untorn writes: dedupe_percentage (repeat and working_set, global),
buffer_compress_percentage and buffer_compress_chunk, refill_buffers, zero_buffers and scramble_buffers read back
from the files written; atomic=1 refused where the filesystem has no atomic write unit and run on a loop-mounted
XFS where it has one; and the one-line refusals of this part, in the job file's words."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import zlib

import pytest
from fsmeter.errors import UserError
from fsmeter.interop.fio.job import map_job
from fsmeter.interop.fio.load import map_jobfile
from fsmeter.interop.fio_jobfile import parse_jobfile
from fsmeter_cli import fsm


def jobs_of(text: str):
    jf = parse_jobfile(text, "t.fio", {}, {})
    return [map_job("t.fio", j, i) for i, j in enumerate(jf.jobs)]


def refused(text: str, pattern: str) -> str:
    with pytest.raises(UserError, match=pattern) as exc:
        jobs_of(text)
    assert "\n" not in exc.value.message
    return exc.value.message


def run_keep(tmp_path, text: str, name: str = "j.fio"):
    """Run the job file in tmp_path/d and keep its files; the written files' paths by job name."""
    job = tmp_path / name
    job.write_text(text)
    d = tmp_path / "d"
    d.mkdir(exist_ok=True)
    r = fsm("run", job, "--dir", d, "--keep-files", "--cache", "keep")
    assert r.returncode == 0, r.stderr + r.stdout
    return d, r


def blocks(path, bs=4096) -> list:
    data = path.read_bytes()
    return [hashlib.sha1(data[i : i + bs]).digest() for i in range(0, len(data), bs)]


def within(observed: float, n: int, p: float, sds: float = 5.0) -> bool:
    """Binomial: `observed` successes of n trials at p, within `sds` standard deviations."""
    return abs(observed - n * p) <= sds * math.sqrt(n * p * (1 - p)) + 1


# -- dedupe -----------------------------------------------------------------------------------------------------
def test_dedupe_percentage_makes_that_share_of_4k_blocks_copies(tmp_path):
    # 2048 sequential 4 KiB writes, 40% copies: distinct blocks = the unique writes, 60% within binomial error.
    d, _ = run_keep(tmp_path, "[w]\nrw=write\nbs=4k\nsize=8m\ndedupe_percentage=40\nfilename=f\n")
    b = blocks(d / "f")
    assert len(b) == 2048
    distinct = len(set(b))
    assert within(distinct, 2048, 0.6), distinct
    # Copies are whole-block repeats of other blocks of the file, never partial.
    assert distinct < 2048 - 600


def test_without_dedupe_every_refilled_block_is_unique_and_zero_buffers_are_zero(tmp_path):
    d, _ = run_keep(tmp_path, "[w]\nrw=write\nbs=4k\nsize=1m\nrefill_buffers\nfilename=f\n")
    assert len(set(blocks(d / "f"))) == 256
    d, _ = run_keep(tmp_path, "[z]\nrw=write\nbs=4k\nsize=1m\nzero_buffers\nfilename=g\n", "z.fio")
    assert (d / "g").read_bytes() == bytes(1 << 20)
    # buffer_compress_percentage=100 is fio's zero_buffers.
    d, _ = run_keep(tmp_path, "[c]\nrw=write\nbs=4k\nsize=1m\nbuffer_compress_percentage=100\nfilename=h\n", "c.fio")
    assert (d / "h").read_bytes() == bytes(1 << 20)


def test_working_set_copies_come_from_the_set_and_converge_to_the_share(tmp_path):
    # fio's dedupe-global.fio, smaller: two jobs, 50% copies drawn from a working set of 50% of each file,
    # shared by both jobs. Unique writes are ~50% of each file; copies repeat working-set blocks (the first unique
    # blocks of either job), so across both files the distinct blocks are ~50% too.
    text = (
        "[global]\nioengine=libaio\niodepth=8\nsize=4m\ndedupe_mode=working_set\ndedupe_global=1\n"
        "dedupe_percentage=50\nblocksize=4k\nrw=write\ndedupe_working_set_percentage=50\n[a]\n[b]\n"
    )
    d, r = run_keep(tmp_path, text)
    a, b = blocks(d / "a.0.0"), blocks(d / "b.0.0")
    assert len(a) == len(b) == 1024
    both = a + b
    distinct = len(set(both))
    assert within(distinct, 2048, 0.5), distinct
    # Global: some blocks of a appear in b (copies from the other job's share of the working set).
    assert set(a) & set(b)


def test_working_set_without_global_stays_inside_each_job(tmp_path):
    text = (
        "[global]\nsize=2m\ndedupe_mode=working_set\ndedupe_percentage=60\nbs=4k\nrw=write\n"
        "dedupe_working_set_percentage=20\n[a]\n[b]\n"
    )
    d, _ = run_keep(tmp_path, text)
    a, b = blocks(d / "a.0.0"), blocks(d / "b.0.0")
    assert not set(a) & set(b)
    for x in (a, b):
        # 512 writes, 60% copies from 102 working-set entries that unique writes also hold: distinct ~ 40%.
        assert within(len(set(x)), 512, 0.4), len(set(x))


# -- compression ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("pct, chunk", [(60, None), (30, "0"), (80, "1k")])
def test_compressibility_follows_buffer_compress_percentage(tmp_path, pct, chunk):
    text = f"[w]\nrw=write\nbs=16k\nsize=4m\nbuffer_compress_percentage={pct}\nfilename=f\n"
    if chunk is not None:
        text += f"buffer_compress_chunk={chunk}\n"
    d, _ = run_keep(tmp_path, text)
    data = (d / "f").read_bytes()
    ratio = len(zlib.compress(data, 6)) / len(data)
    # The random part is incompressible; the zeros nearly vanish: compressed ~ (100 - pct)% of the bytes.
    assert (100 - pct) / 100 <= ratio <= (100 - pct) / 100 + 0.03, ratio
    step = 16384 if chunk == "0" else 1024 if chunk == "1k" else 512
    zeros = step * pct // 100
    for off in range(0, 64 * step, step):
        assert data[off + step - zeros : off + step] == bytes(zeros)  # each chunk ends in its fixed part
        assert data[off : off + 8] != bytes(8)


def test_compress_with_a_pattern_fills_the_fixed_part_with_it(tmp_path):
    d, _ = run_keep(
        tmp_path, '[w]\nrw=write\nbs=4k\nsize=1m\nbuffer_compress_percentage=50\nbuffer_pattern="ab"\nfilename=f\n'
    )
    data = (d / "f").read_bytes()
    assert data[256:512] == b"ab" * 128


def test_scramble_buffers_stamps_each_sector_with_its_offset(tmp_path):
    d, _ = run_keep(tmp_path, "[w]\nrw=write\nbs=8k\nsize=1m\nscramble_buffers=1\nfilename=f\n")
    data = (d / "f").read_bytes()
    for off in range(0, 1 << 20, 512 * 37):
        off -= off % 512
        sector = data[off : off + 512]
        stamps = [int.from_bytes(sector[k * 64 : k * 64 + 8], "little") for k in range(8)]
        assert off in stamps, (off, stamps)


# -- the mapping and its refusals -------------------------------------------------------------------------------
def test_mapping_of_the_content_options():
    (m,) = jobs_of(
        "[w]\nrw=randwrite\nbs=4k\nsize=1m\ndedupe_percentage=30\nbuffer_compress_percentage=40\n"
        "buffer_compress_chunk=1k\n"
    )
    assert m.params["content"] == {
        "compress_pct": 40,
        "compress_chunk": 1024,
        "dedupe_pct": 30,
        "dedupe_mode": "repeat",
    }
    (m,) = jobs_of("[w]\nrw=write\nsize=1m\nscramble_buffers=0\n")
    assert "content" not in m.params
    # fio: a compress or dedupe option turns its scramble off; verify too.
    (m,) = jobs_of("[w]\nrw=write\nsize=1m\nscramble_buffers=1\nbuffer_compress_percentage=0\n")
    assert "content" not in m.params
    jobs = map_jobfile_text(
        "[global]\nrw=write\nsize=1m\n[a]\nnumjobs=2\ndedupe_percentage=10\ndedupe_global=1\n"
        "dedupe_mode=working_set\n[b]\nrefill_buffers\n"
    )
    a, b = jobs
    assert (a.params["content"]["thread_base"], a.params["content"]["threads_total"]) == (0, 3)
    assert (b.params["content"]["thread_base"], b.params["content"]["threads_total"]) == (2, 3)
    assert a.params["content"]["seed"] == b.params["content"]["seed"]
    assert a.params["content"]["working_set"] == (1 << 20) * 5 // 100 // 4096


def map_jobfile_text(text: str) -> list:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as t:
        p = Path(t) / "t.fio"
        p.write_text(text)
        return map_jobfile(p, Path(t), True)


@pytest.mark.parametrize(
    "text, pattern",
    [
        (
            "[w]\nrw=write\nsize=1m\ndedupe_mode=working_set\n",
            r"^t.fio line 4: dedupe_mode=working_set: has no effect "
            r"without dedupe_percentage",
        ),
        (
            "[w]\nrw=write\nfilesize=1m\ndedupe_percentage=10\ndedupe_mode=working_set\n",
            r"line 5: dedupe_mode="
            r"working_set: .*size=.*add size=",
        ),
        (
            "[w]\nrw=write\nsize=1m\ndedupe_percentage=60\ndedupe_mode=working_set\ndedupe_working_set_percentage=50\n",
            r"line 6: dedupe_working_set_percentage=50: .*more than 100",
        ),
        (
            "[w]\nrw=write\nsize=100t\nbs=512\ndedupe_percentage=10\ndedupe_mode=working_set\n"
            "dedupe_working_set_percentage=90\n",
            r"line 7: dedupe_working_set_percentage=90: a working set of \d+ blocks",
        ),
        (
            "[w]\nrw=write\nsize=1m\ndedupe_percentage=10\ndedupe_mode=lots\n",
            r"line 5: dedupe_mode=lots: use repeat or "
            r"working_set",
        ),
        (
            "[w]\nrw=write\nsize=1m\ndedupe_percentage=101\n",
            r"line 4: dedupe_percentage=101: must be between 0 and 100",
        ),
        (
            "[w]\nrw=write\nsize=1m\nverify=crc32c\ndedupe_percentage=10\n",
            r"line 5: dedupe_percentage=10: cannot be "
            r"combined with verify",
        ),
        ("[w]\nrw=write\nsize=1m\nbuffer_compress_chunk=1k\n", r"line 4: buffer_compress_chunk=1k: has no effect"),
        (
            "[w]\nrw=write\nsize=1m\nbuffer_compress_percentage=50\nrefill_buffers=0\n",
            r"line 5: refill_buffers=0: .*"
            r"planned",
        ),
        (
            "[w]\nrw=write\nsize=1m\natomic=1\nioengine=psync\ndirect=1\n",
            r"line 4: atomic=1: ioengine=psync issues no "
            r"untorn writes .*io_uring or libaio",
        ),
        ("[w]\nrw=write\nsize=1m\natomic=1\nioengine=io_uring\n", r"line 4: atomic=1: .*O_DIRECT only: add direct=1"),
        ("[w]\nrw=randread\nsize=1m\nlatency_target=500\nnumjobs=2\n", r"line 5: numjobs=2: .*latency_target"),
    ],
)
def test_refusals_name_the_line_and_the_option(text, pattern):
    refused(text, pattern)


def test_atomic_on_a_read_job_is_off_with_a_note():
    (m,) = jobs_of("[r]\nrw=randread\nsize=1m\natomic=1\nioengine=io_uring\ndirect=1\n")
    assert not m.params.get("atomic")
    assert any("atomic=1 (line 4)" in n for n in m.notes)


# -- atomic writes ----------------------------------------------------------------------------------------------
ATOMIC = "[w]\nrw=randwrite\nbs={bs}\nsize=2m\nioengine=io_uring\niodepth=4\ndirect=1\natomic=1\nfilename=f\n"


def test_atomic_is_refused_in_one_line_on_a_filesystem_without_a_unit(tmp_path, root):
    # tmpfs reports no atomic write unit (statx STATX_WRITE_ATOMIC).
    mnt = tmp_path / "tm"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "none", str(mnt)], check=True)
    try:
        job = tmp_path / "a.fio"
        job.write_text(ATOMIC.format(bs="4k"))
        r = fsm("run", job, "--dir", mnt)
        assert r.returncode != 0
        err = [x for x in r.stderr.splitlines() if x.startswith("fsmeter: error:")]
        assert len(err) == 1 and "tmpfs" in err[0] and "atomic write unit" in err[0] and "unit 0 bytes" in err[0], (
            r.stderr
        )
        assert "Traceback" not in r.stderr
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_atomic_writes_run_on_xfs_inside_its_unit_and_are_refused_outside(tmp_path, loop_disk):
    if subprocess.run(["which", "mkfs.xfs"], capture_output=True).returncode:
        pytest.skip("mkfs.xfs is not installed")
    subprocess.run(["mkfs.xfs", "-q", "-f", loop_disk], check=True, capture_output=True)
    mnt = tmp_path / "x"
    mnt.mkdir()
    subprocess.run(["mount", loop_disk, str(mnt)], check=True)
    try:
        probe = mnt / "probe"
        probe.write_bytes(b"")
        unit = atomic_unit(probe)
        if unit[1] == 0:
            pytest.skip(f"this kernel's xfs reports no atomic write unit ({os.uname().release})")
        job = tmp_path / "a.fio"
        job.write_text(ATOMIC.format(bs="16k"))
        out = tmp_path / "out.json"
        r = fsm("run", job, "--dir", mnt, "--json", out)
        assert r.returncode == 0, r.stderr + r.stdout
        import json

        doc = json.loads(out.read_text())
        ph = doc["phases"]["w:run"]
        assert ph["ops"]["write"]["count"] == 128
        assert ph["extra"]["atomic"] is True
        big = unit[1] * 2
        job.write_text(ATOMIC.format(bs=str(big)).replace("size=2m", f"size={big * 4}"))
        r = fsm("run", job, "--dir", mnt)
        assert r.returncode != 0
        err = [x for x in r.stderr.splitlines() if x.startswith("fsmeter: error:")]
        assert len(err) == 1 and f"{big}-byte writes" in err[0] and f"{unit[0]} to {unit[1]} bytes" in err[0], r.stderr
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def atomic_unit(path) -> tuple:
    """statx STATX_WRITE_ATOMIC of a file: (unit min, unit max), by the kernel's struct layout."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(256)
    fd = os.open(path, os.O_RDONLY)
    try:
        r = libc.syscall(332, fd, b"", 0x1000, 0x10000, buf)  # SYS_statx on x86-64, AT_EMPTY_PATH
    finally:
        os.close(fd)
    raw = buf.raw
    mask = int.from_bytes(raw[0:4], "little")
    if r != 0 or not mask & 0x10000:
        return (0, 0)
    return (int.from_bytes(raw[0xA8:0xAC], "little"), int.from_bytes(raw[0xAC:0xB0], "little"))
