"""fio's error handling from job files: continue_on_error / ignore_error (a failed request of a class the job goes
on after is counted per direction and errno, and the job goes on), the one-line stop of an error it does not go
on after, fill_device (write until the filesystem is full, then the next group reads what was written), and job
names fio allows but no file could carry (a space). ENOSPC comes from a small tmpfs mounted for the test;
fio's own figures are compared when fio is installed."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess

import pytest
from fsmeter.errors import UserError
from fsmeter_cli import fsm, job_of

MiB = 1 << 20


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 4 MiB tmpfs under tmp_path (a filesystem that is full after 4 MiB), unmounted afterwards."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=4m", "fsmeter-test-enospc", str(mnt)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("needs root to mount a small tmpfs (ENOSPC on purpose)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def run(tmp_path, d, text: str, *extra):
    f = tmp_path / "jobs.fio"
    f.write_text(text)
    out = tmp_path / "out.json"
    r = fsm("run", f, "--dir", d, "-q", "--json", out, "--cache", "keep", *extra)
    return r, (json.loads(out.read_text()) if r.returncode == 0 else None)


def fio_jobs(tmp_path, d, text: str):
    """fio's JSON jobs for the same file in directory d, or None without fio."""
    if not shutil.which("fio"):
        return None
    f = tmp_path / "fio.fio"
    f.write_text(text)
    r = subprocess.run(["fio", "--output-format=json", str(f)], capture_output=True, text=True, cwd=d, timeout=300)
    return {j["jobname"]: j for j in json.loads(r.stdout[r.stdout.find("{") :])["jobs"]}


# A sparse 8 MiB file on a 4 MiB tmpfs: fsmeter and fio use a file that is there as it is (no layout), so the
# sequential writes fill the filesystem halfway through it, and the other half fail with ENOSPC.
GO_ON = "[my writer]\nbs=64k\nrw=write\nfilename=sparse\ncontinue_on_error=write\nignore_error=,ENOSPC\n"


def test_enospc_of_a_class_the_job_goes_on_after_is_counted_and_the_job_goes_on(tmp_path, small_tmpfs):
    (small_tmpfs / "sparse").write_bytes(b"")
    os.truncate(small_tmpfs / "sparse", 8 * MiB)
    r, doc = run(tmp_path, small_tmpfs, GO_ON)
    assert r.returncode == 0, r.stderr
    phase = doc["phases"]["my writer:run"]
    errs = phase["errors"]
    # 128 requests of 64 KiB: the first 64 fill the 4 MiB, each of the other 64 meets ENOSPC and is gone on after.
    assert phase["ops"]["write"]["count"] == 64 and phase["ops"]["write"]["bytes"] == 4 * MiB
    assert errs["total_err"] == 64 and errs["first_error"] == errno.ENOSPC and errs["first_error_name"] == "ENOSPC"
    assert errs["by_errno"] == {"write": {"ENOSPC": 64}}
    assert phase["jobs"]["my writer"]["errors"] == errs  # the job's own entry, as in a group
    assert errs["first"]["offset"] == 4 * MiB and errs["first"]["file"].endswith("sparse")
    assert len(errs["dumped"]) == 16 and errs["not_dumped"] == 48  # error_dump: the first 16 of the thread
    assert "64 failed request(s) counted and gone on after (write: 64 ENOSPC)" in " ".join(r.stdout.split())
    (small_tmpfs / "sparse").unlink()
    (small_tmpfs / "sparse").write_bytes(b"")
    os.truncate(small_tmpfs / "sparse", 8 * MiB)
    fio = fio_jobs(tmp_path, small_tmpfs, GO_ON)
    if fio is not None:
        j = fio["my writer"]
        assert j["write"]["io_bytes"] == 4 * MiB
        assert j["total_err"] == errs["total_err"] and j["first_error"] == errs["first_error"]
        # fio's total_ios counts the failed requests too.
        assert j["write"]["total_ios"] == phase["ops"]["write"]["count"] + errs["total_err"]


def test_an_error_the_job_does_not_go_on_after_stops_it_naming_job_errno_and_offset(tmp_path, small_tmpfs):
    (small_tmpfs / "sparse").write_bytes(b"")
    os.truncate(small_tmpfs / "sparse", 8 * MiB)
    # continue_on_error alone goes on after EIO and EILSEQ only (fio's default list): ENOSPC stops the job.
    r, _ = run(tmp_path, small_tmpfs, "[my writer]\nbs=64k\nrw=write\nfilename=sparse\ncontinue_on_error=write\n")
    assert r.returncode == 1
    err = r.stderr.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "jobs.fio line 1: job my writer: write of 65536 bytes at offset 4194304 of" in err
    assert "[ENOSPC]" in err and "ignore_error=" in err


def test_continue_on_error_and_ignore_error_are_fio_s_classes_and_lists():
    m = job_of("[j]\nsize=1m\nfilename=f\ndirectory=/tmp\ncontinue_on_error=io\nignore_error=EAGAIN,ENOSPC:122\n")
    assert m.params["continue_on"] == {"read": [errno.EAGAIN], "write": [errno.ENOSPC, 122], "dump": True}
    # Without a list, a class goes on after fio's default EIO and EILSEQ; 1 is all three classes.
    m = job_of("[j]\nsize=1m\nfilename=f\ndirectory=/tmp\ncontinue_on_error=1\nerror_dump=0\n")
    assert m.params["continue_on"] == {c: [errno.EIO, errno.EILSEQ] for c in ("read", "verify", "write")} | {
        "dump": False
    }
    # A list turns its class on; a later continue_on_error sets the classes anew.
    assert job_of("[j]\nsize=1m\nfilename=f\ndirectory=/tmp\nignore_error=,0x1c\n").params["continue_on"] == {
        "write": [errno.ENOSPC],
        "dump": True,
    }
    assert (
        "continue_on"
        not in job_of("[j]\nsize=1m\nfilename=f\ndirectory=/tmp\nignore_error=,ENOSPC\ncontinue_on_error=none\n").params
    )
    for bad, words in (
        ("continue_on_error=sometimes", "use one of none, read"),
        ("ignore_error=,ENOTANERROR", "ENOTANERROR is not an error name fio knows"),
        ("ignore_error=,x12", "is not an error"),
    ):
        with pytest.raises(UserError) as e:
            job_of(f"[j]\nsize=1m\nfilename=f\ndirectory=/tmp\n{bad}\n")
        assert e.value.message.startswith("t.fio line 5: ") and words in e.value.message


FILL = (
    "[global]\nbs=64k\nioengine=sync\n[write-phase]\nfilename=datafile.tmp\nrw=write\nfill_device=1\n"
    "[verify-phase]\nstonewall\ncreate_serialize=0\nfilename=datafile.tmp\nrw=read\n"
)


def test_fill_device_stops_at_enospc_and_the_next_group_reads_what_was_written(tmp_path, small_tmpfs):
    r, doc = run(tmp_path, small_tmpfs, FILL)
    assert r.returncode == 0, r.stderr
    w = doc["phases"]["write-phase:run"]
    rd = doc["phases"]["verify-phase:run"]
    assert w["fill"]["filesystem_full"] is True
    assert w["ops"]["write"]["bytes"] == w["fill"]["file_bytes"] == 4 * MiB  # a 4 MiB tmpfs holds 4 MiB of data
    assert rd["ops"]["read"]["bytes"] == 4 * MiB and rd["ops"]["read"]["count"] == 64
    assert "fill_device: 4194304 bytes written" in " ".join(r.stdout.split())
    assert list(small_tmpfs.iterdir()) == []  # removed at the end
    fio = fio_jobs(tmp_path, small_tmpfs, FILL)
    if fio is not None:
        assert fio["write-phase"]["write"]["io_bytes"] == w["ops"]["write"]["bytes"]
        # fio counts the write that met ENOSPC among its I/Os.
        assert fio["write-phase"]["write"]["total_ios"] == w["ops"]["write"]["count"] + 1
        assert fio["verify-phase"]["read"]["io_bytes"] == rd["ops"]["read"]["bytes"]
        assert fio["verify-phase"]["read"]["total_ios"] == rd["ops"]["read"]["count"]


def test_fill_device_refusals_name_the_line(tmp_path, small_tmpfs):
    (small_tmpfs / "mine").write_bytes(b"x" * 4096)
    for text, words in (
        ("[f]\nbs=64k\nrw=read\nfill_device=1\nfilename=new\n", "with rw=read is not supported by fsmeter yet"),
        ("[f]\nbs=64k\nrw=write\nfill_device=1\nnumjobs=2\n", "one thread writing one file"),
        ("[f]\nbs=64k\nrw=write\nfill_device=1\nfilename=mine\n", "mine exists already"),
        # Without create_serialize=0 fio sets the file up before the fill has run, and asks for a size.
        (FILL.replace("create_serialize=0\n", ""), "job verify-phase: give size="),
    ):
        r, _ = run(tmp_path, small_tmpfs, text)
        assert r.returncode == 2, r.stdout
        assert r.stderr.count("\n") == 1 and words in r.stderr and "jobs.fio line " in r.stderr
    assert (small_tmpfs / "mine").read_bytes() == b"x" * 4096


def test_a_job_name_with_a_space_runs_and_the_results_keep_it(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    text = (
        "[global]\nsize=256k\nbs=4k\n[punch hole-fuzzer]\nrw=randtrim\nnorandommap\n"
        "[sequential buffered read]\nrw=read\n"
    )
    r, doc = run(tmp_path, d, text, "--keep-files")
    assert r.returncode == 0, r.stderr
    assert list(doc["jobs"]) == ["punch hole-fuzzer", "sequential buffered read"]
    jobs = doc["phases"]["group0:run"]["jobs"]
    assert jobs["punch hole-fuzzer"]["ops"]["trim"]["count"] == 64
    assert jobs["sequential buffered read"]["ops"]["read"]["bytes"] == 256 << 10
    # fio's $jobname in the file names becomes a safe file name.
    assert sorted(p.name for p in d.iterdir()) == ["punch_hole-fuzzer.0.0", "sequential_buffered_read.0.0"]


def test_a_job_name_that_would_leave_the_directory_is_refused_in_one_line(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    r, _ = run(tmp_path, d, "[x]\nname=../escape\nsize=64k\nrw=write\n")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "jobs.fio line 2: job name '../escape' would name files outside" in r.stderr
    assert list(d.iterdir()) == [] and not (tmp_path / "escape.0.0").exists()


def test_fallocate_is_accepted_with_what_it_changes_and_refused_when_fio_would():
    m = job_of("[j]\nsize=1m\nfilename=f\ndirectory=/tmp\nrw=randwrite\nfallocate=none\n")
    assert any(n.startswith("fallocate=none: fsmeter writes every file in full") and "fill holes" in n for n in m.notes)
    m = job_of("[j]\nsize=1m\nfilename=f\ndirectory=/tmp\nrw=randwrite\nfallocate=keep\n")
    assert any("preallocated, unwritten extents" in n for n in m.notes)
    with pytest.raises(UserError) as e:
        job_of("[j]\nsize=1m\nfilename=f\ndirectory=/tmp\nfallocate=sometimes\n")
    assert e.value.message.startswith("t.fio line 5: fallocate=sometimes: use one of none, native, posix")


def test_a_job_sized_by_a_fill_device_job_is_refused_in_a_campaign(tmp_path):
    from fsmeter.interop.fio.load import load_fio_workload

    f = tmp_path / "fill.fio"
    f.write_text(FILL)
    with pytest.raises(UserError) as e:
        load_fio_workload(f"{f}:verify-phase")
    assert e.value.message == (
        f"{f} line 8: job verify-phase takes its size from what the fill_device job write-phase "
        f"writes, which only fsmeter run {f} runs before it: give it size= to use it in a "
        "campaign"
    )
