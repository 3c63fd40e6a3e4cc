"""fio's file and directory engines (filecreate, filestat, filedelete, dircreate, dirstat, dirdelete), its
one-call engines (falloc, ftruncate, e4defrag) and cpp_null, from job files: mapped with fio's meaning, run
in the engine, counted as fio counts them (checked against fio itself when it is installed), and refused in
one line naming the job file's line where fio's meaning cannot be kept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from fsmeter.errors import UserError
from fsmeter_cli import fsm, job_of


def run_jobfile(tmp_path, text: str, *extra):
    """Run a job file with fsmeter under tmp_path/d; the result document."""
    d = tmp_path / "d"
    d.mkdir(exist_ok=True)
    f = tmp_path / "jobs.fio"
    f.write_text(text)
    out = tmp_path / "out.json"
    r = fsm("run", f, "--dir", d, "-q", "--json", out, "--cache", "keep", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def job_ops(doc: dict, name: str) -> dict:
    """A job's ops, from its group's run phase (jobs[NAME])."""
    phase = doc["phases"][f"{doc['jobs'][name]['phase']}:run"]
    return ((phase.get("jobs") or {}).get(name) or phase)["ops"]


def fio_calls(tmp_path, text: str):
    """fio's own run of the job file under tmp_path/fio: per job, its latency samples (one per create, stat or
    removal for the file and directory engines). None when fio is missing or has not the engine (the
    directory engines came after fio 3.33)."""
    if not shutil.which("fio"):
        return None
    d = tmp_path / "fio"
    d.mkdir()
    f = tmp_path / "fio.fio"
    f.write_text(text)
    r = subprocess.run(["fio", "--output-format=json", str(f)], capture_output=True, text=True, cwd=d, timeout=300)
    if "not loadable" in r.stderr:
        return None
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout[r.stdout.index("{") :])
    out: dict = {}
    for j in doc["jobs"]:
        out[j["jobname"]] = out.get(j["jobname"], 0) + sum(j[k]["clat_ns"]["N"] for k in ("read", "write"))
    return out


# -- the mapping ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ["filecreate", "filestat", "filedelete", "dircreate", "dirstat", "dirdelete"])
def test_file_and_directory_engines_map_to_the_engines_own_calls(engine):
    m = job_of(f"[t0]\nioengine={engine}\nfilesize=4k\nnrfiles=200\nnumjobs=2\niodepth=8\ndirect=1\n")
    assert m.params["fio_engine"] == engine
    assert m.settings["backend"] == "psync" and m.params["queue_depth"] == 1
    assert m.params["file_count"] == 400 and m.params["thread_files"], "each clone its own 200 names, as fio"
    assert m.params["direct"] is False
    assert any(f"ioengine={engine}: one" in n for n in m.notes)


def test_stat_type_is_taken_by_the_stat_engines_and_refused_by_the_others():
    assert job_of("[a]\nioengine=dirstat\nfilesize=4k\nstat_type=statx\n").params["stat_type"] == "statx"
    with pytest.raises(UserError, match=r"^t.fio line 3: option stat_type belongs to ioengine=filestat and dirstat"):
        job_of("[a]\nsize=1m\nstat_type=lstat\n")
    with pytest.raises(UserError, match=r"^t.fio line 4: stat_type=fstat: use stat, lstat or statx"):
        job_of("[a]\nioengine=filestat\nfilesize=4k\nstat_type=fstat\n")


def test_fios_example_options_of_the_create_engines_are_accepted_with_a_note():
    m = job_of("[t0]\ncreate_on_open=1\nnrfiles=30\nioengine=filecreate\nfallocate=none\nfilesize=4k\nopenfiles=1\n")
    assert any(n.startswith("fallocate=none:") for n in m.notes)
    assert any(n.startswith("openfiles=1:") for n in m.notes)
    assert not any(n.startswith("create_on_open") for n in m.notes), "the creation is what is timed, not laid out"
    with pytest.raises(UserError, match=r"^t.fio line 3: option openfiles is not supported"):
        job_of("[a]\nsize=1m\nopenfiles=1\n")


@pytest.mark.parametrize(
    "text,pattern",
    [
        (
            "ioengine=filecreate\nfilesize=4k\ntime_based\nruntime=2\n",
            r"^t.fio line 4: time_based=?: ioengine=filecreate "
            r"creates each file name once",
        ),
        ("ioengine=dirdelete\nfilesize=4k\nloops=2\n", r"^t.fio line 4: loops=2: ioengine=dirdelete removes each"),
        (
            "ioengine=filedelete\nfilesize=4k\nfilename=a:b\nnumjobs=2\n",
            r"^t.fio line 4: filename=a:b: with numjobs=2, "
            r"the clones of ioengine=filedelete would share",
        ),
        (
            "ioengine=ftruncate\nsize=1m\nrw=randrw\n",
            r"^t.fio line 4: rw=randrw: ioengine=ftruncate acts on writes only",
        ),
        ("ioengine=e4defrag\nsize=1m\nrw=write\n", r"^t.fio line 2: ioengine=e4defrag needs donorname="),
        ("ioengine=e4defrag\nsize=1m\nrw=write\ndonorname=../x\n", r"^t.fio line 5: donorname=../x: give a file name"),
        (
            "ioengine=falloc\nsize=1m\nrw=write\nverify=crc32c\n",
            r"^t.fio line 5: verify=crc32c: ioengine=falloc moves "
            r"no data",
        ),
        ("size=1m\ninplace=1\n", r"^t.fio line 3: option inplace belongs to ioengine=e4defrag"),
    ],
)
def test_what_cannot_keep_fios_meaning_is_refused_naming_the_line(text, pattern):
    with pytest.raises(UserError, match=pattern) as exc:
        job_of("[a]\n" + text)
    assert "\n" not in exc.value.message


def test_cpp_null_is_the_null_engine_and_time_based_without_runtime_is_dropped_as_fio_drops_it():
    # fio's examples/cpp_null.fio: fio says "time_based requires a runtime/timeout setting" and runs its bytes.
    m = job_of("[null]\nbs=4k\ngtod_reduce=1\nioengine=cpp_null\nsize=1m\nrw=randread\nnorandommap\ntime_based\n")
    assert m.settings["backend"] == "null"
    assert m.params["total_bytes"] == 1 << 20 and m.params["duration_s"] is None
    assert any("cpp_null is fio's null engine built as a C++ plugin" in n for n in m.notes)
    assert any("time_based without runtime" in n for n in m.notes)


def test_e4defrag_puts_its_donor_under_the_jobs_directory_as_fio_does():
    m = job_of("[a]\nioengine=e4defrag\nsize=1m\nrw=write\ndirectory=sub\ndonorname=file.def\ninplace=1\n")
    assert (m.params["donor_name"], m.params["donor_inplace"]) == ("sub/file.def", True)


# -- runs ----------------------------------------------------------------------------------------------------------
CREATE = (
    "[global]\ncreate_on_open=1\nnrfiles=40\nioengine={e}\nfallocate=none\nfilesize=4k\nopenfiles=1\n\n[t0]\n[t1]\n"
)


@pytest.mark.parametrize("engine,kind", [("filecreate", "create"), ("dircreate", "create")])
def test_create_engines_create_every_name_of_every_job_and_cleanup_removes_them(tmp_path, engine, kind):
    doc = run_jobfile(tmp_path, CREATE.format(e=engine))
    for job in ("t0", "t1"):
        assert job_ops(doc, job)[kind]["count"] == 40, f"{job}: one {kind} per file name"
        assert "read" not in job_ops(doc, job) and "write" not in job_ops(doc, job)
    assert os.listdir(tmp_path / "d") == [], "every file or directory removed at the end"
    assert fio_calls(tmp_path, CREATE.format(e=engine)) in (None, {"t0": 40, "t1": 40}), "fio's count of creates"


def test_create_engines_leave_what_they_created_with_keep_files(tmp_path):
    run_jobfile(tmp_path, CREATE.format(e="dircreate"), "--keep-files")
    made = sorted(os.listdir(tmp_path / "d"))
    assert len(made) == 80 and all((tmp_path / "d" / n).is_dir() for n in made)
    assert "t1.0.39" in made, "fio's names: $jobname.$jobnum.$filenum"


STAT = "[global]\nioengine={e}\nnumjobs=3\nfilesize=4k\nnrfiles=5\nthread\nstat_type={st}\n\n[t0]\n[t1]\n"


@pytest.mark.parametrize("engine,st", [("filestat", "stat"), ("filestat", "statx"), ("dirstat", "lstat")])
def test_stat_engines_stat_every_name_of_every_clone(tmp_path, engine, st):
    doc = run_jobfile(tmp_path, STAT.format(e=engine, st=st))
    for job in ("t0", "t1"):
        assert job_ops(doc, job)["stat"]["count"] == 15, "3 clones x 5 names"
    assert os.listdir(tmp_path / "d") == []
    assert fio_calls(tmp_path, STAT.format(e=engine, st=st)) in (None, {"t0": 15, "t1": 15})


DELETE = "[global]\nioengine={e}\nfilesize=4k\nnrfiles=25\nunlink=0\n\n[t0]\n[t1]\n[t2]\n"


@pytest.mark.parametrize("engine", ["filedelete", "dirdelete"])
def test_delete_engines_remove_every_name_in_the_run(tmp_path, engine):
    doc = run_jobfile(tmp_path, DELETE.format(e=engine), "--keep-files")
    for job in ("t0", "t1", "t2"):
        assert job_ops(doc, job)["delete"]["count"] == 25
    assert os.listdir(tmp_path / "d") == [], "the run removed them all (nothing for cleanup, even kept)"
    assert fio_calls(tmp_path, DELETE.format(e=engine)) in (None, {"t0": 25, "t1": 25, "t2": 25})


def test_falloc_punches_holes_that_seek_hole_finds_and_counts_as_fio(tmp_path):
    doc = run_jobfile(tmp_path, "[p]\nioengine=falloc\nfilename=frag\nsize=1m\nbs=64k\nrw=trim\n", "--keep-files")
    ops = job_ops(doc, "p")
    assert (ops["trim"]["count"], ops["trim"]["bytes"]) == (16, 1 << 20), "fio: 16 trims of 64 KiB"
    with open(tmp_path / "d" / "frag", "rb") as f:
        assert os.lseek(f.fileno(), 0, os.SEEK_HOLE) == 0, "the file starts with a hole"
        assert os.fstat(f.fileno()).st_size == 1 << 20, "KEEP_SIZE"
        assert os.fstat(f.fileno()).st_blocks == 0


def test_falloc_writes_allocate_without_writing(tmp_path):
    doc = run_jobfile(tmp_path, "[w]\nioengine=falloc\nfilename=f\nsize=1m\nbs=128k\nrw=randwrite\n")
    assert job_ops(doc, "w")["write"]["count"] == 8
    assert doc["phases"]["w:run"]["extra"]["fio_engine"] == "falloc"


def test_ftruncate_leaves_the_file_at_the_last_writes_offset(tmp_path):
    doc = run_jobfile(
        tmp_path, "[g]\nioengine=ftruncate\nfilename=truncate\nsize=1m\nbs=64k\nrw=write\n", "--keep-files"
    )
    assert job_ops(doc, "g")["write"]["count"] == 16, "one truncate per 64 KiB step, counted as fio's writes"
    assert os.stat(tmp_path / "d" / "truncate").st_size == (1 << 20) - (64 << 10)


@pytest.fixture
def tmpfs_dir(tmp_path):
    """A tmpfs (a filesystem without EXT4_IOC_MOVE_EXT) mounted under tmp_path, unmounted afterwards."""
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64m", "fsmeter-test", str(mnt)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("needs root to mount a tmpfs (the temporary directory may be ext4, where e4defrag would run)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


E4DEFRAG = "[global]\nioengine=e4defrag\nbs=32k\n\n[defrag]\nsize=1m\nfilename=file1\ndonorname=file.def\nrw=write\n"


def test_e4defrag_stops_in_one_line_naming_the_ioengine_line_off_ext4(tmp_path, tmpfs_dir):
    f = tmp_path / "e.fio"
    f.write_text(E4DEFRAG)
    r = fsm("run", f, "--dir", tmpfs_dir, "-q", "--cache", "keep")
    assert r.returncode == 2, r.stderr
    err = r.stderr.strip()
    assert "\n" not in err and err.startswith(f"fsmeter: error: {f} line 2: ioengine=e4defrag: "), err
    assert "EXT4_IOC_MOVE_EXT" in err and "run the job on ext4" in err
    assert sorted(os.listdir(tmpfs_dir)) == [], "the job's file and the donor it created are removed"


@pytest.mark.root
def test_e4defrag_moves_each_writes_range_to_the_donor_on_ext4(loop_disk, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mkfs.ext4", "-q", "-F", loop_disk], check=True)
    subprocess.run(["mount", loop_disk, str(mnt)], check=True)
    try:
        f = tmp_path / "e.fio"
        f.write_text(E4DEFRAG)
        out = tmp_path / "out.json"
        r = fsm("run", f, "--dir", mnt, "-q", "--json", out, "--cache", "keep", "--keep-files")
        assert r.returncode == 0, r.stderr
        ops = job_ops(json.loads(out.read_text()), "defrag")
        assert (ops["write"]["count"], ops["write"]["bytes"]) == (32, 1 << 20), "32 moves of 32 KiB, as fio's writes"
        assert os.stat(mnt / "file1").st_size == 1 << 20, "the file keeps its size and data blocks"
        assert os.stat(mnt / "file.def").st_size == 1 << 20, "the donor, allocated over the job's region"
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_cpp_null_runs_the_null_engine_with_fios_counts(tmp_path):
    text = (
        "[global]\nbs=4k\ngtod_reduce=1\n\n[null]\nioengine=cpp_null\nsize=4m\nrw=randread\nnorandommap\ntime_based\n"
    )
    doc = run_jobfile(tmp_path, text)
    ops = job_ops(doc, "null")
    assert (ops["read"]["count"], ops["read"]["bytes"]) == (1024, 4 << 20), "fio's null engine: 1024 reads of 4 KiB"
    assert doc["phases"]["null:run"]["extra"]["backend"] == "null"
