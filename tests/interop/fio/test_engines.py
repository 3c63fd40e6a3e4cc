"""fio's mmap, libpmem, cpuio and libblkio engines from job files, run end to end under `fsmeter run`: what a
mapped write leaves in the file, libpmem's note on a file that is not on persistent memory, the CPU a cpuio
job burns, libblkio's io_uring driver on a file; and one-line refusals for what fsmeter will not do (other
libblkio drivers, exec)."""

from __future__ import annotations

import json
import os

import pytest
from fsmeter.errors import UserError
from fsmeter.interop.fio.load import map_jobfile
from fsmeter_cli import fsm, job_of


def run_jobfile(tmp_path, text: str, *extra):
    """Run a job file with fsmeter under tmp_path/d; (the result document, stdout)."""
    d = tmp_path / "d"
    d.mkdir(exist_ok=True)
    f = tmp_path / "jobs.fio"
    f.write_text(text)
    out = tmp_path / "out.json"
    r = fsm("run", f, "--dir", d, "-q", "--json", out, "--cache", "keep", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text()), r.stdout


def run_phase(doc: dict, job: str) -> dict:
    """A job's run phase (its own entry in its group's phase when it ran beside others)."""
    phase = doc["phases"][f"{doc['jobs'][job]['phase']}:run"]
    own = (phase.get("jobs") or {}).get(job)
    return own if own and "extra" in own else phase  # a job alone: its phase is its own


PATTERN = "0xdeadbeef"


def test_mmap_writes_of_a_pattern_are_the_files_bytes_after_the_run(tmp_path):
    doc, out = run_jobfile(
        tmp_path,
        f"""
[w]
ioengine=mmap
rw=randwrite
bs=4k
size=1m
buffer_pattern={PATTERN}
fsync=64
end_fsync=1
""",
        "--keep-files",
    )
    r = run_phase(doc, "w")
    assert r["ops"]["write"]["count"] == 256 and r["ops"]["write"]["bytes"] == 1 << 20
    # fsync=64 over 256 writes, then end_fsync: each an msync of the mapping.
    assert r["ops"]["fsync"]["count"] == 256 // 64 + 1
    assert r["extra"]["mmap"]["backend"] == "mmap"
    data = (tmp_path / "d" / "w.0.0").read_bytes()
    assert len(data) == 1 << 20
    assert data == bytes.fromhex("deadbeef") * (len(data) // 4), "the file does not hold what was written"


def test_mmap_direct_needs_whole_pages_as_fio_asks(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    f = tmp_path / "j.fio"
    f.write_text("[w]\nioengine=mmap\nrw=write\nbs=512\nsize=1m\ndirect=1\n")
    r = fsm("run", f, "--dir", d, "-q", "--cache", "keep")
    assert r.returncode == 2
    line = r.stderr.strip()
    assert line.count("\n") == 0 and "line 4: bs=512" in line and "4096" in line and "direct or fsync " in line, line


def test_libpmem_on_a_file_not_on_persistent_memory_is_refused_as_fio_refuses_it(tmp_path):
    """fio's libpmem engine stops on a file that is not on DAX persistent memory; so does fsmeter, in one line
    naming the file and what to run instead, and nothing is written."""
    d = tmp_path / "d"
    d.mkdir()
    f = tmp_path / "j.fio"
    f.write_text("[global]\nioengine=libpmem\nbs=4k\nsize=1m\niodepth=1\ndirect=1\nsync=1\n\n[p]\nrw=write\n")
    r = fsm("run", f, "--dir", d, "-q", "--cache", "keep", "--json", tmp_path / "r.json")
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip()
    assert line.count("\n") == 0 and "not on DAX persistent memory" in line and "ioengine=mmap" in line, line
    assert "Traceback" not in r.stderr
    assert not any(p.is_file() and p.stat().st_size for p in d.rglob("*")), "a refused job wrote data"


def test_cpuio_burns_about_its_share_of_a_cpu_and_does_no_io(tmp_path):
    doc, _ = run_jobfile(
        tmp_path,
        """
[global]
ioengine=cpuio
time_based
runtime=1

[burn]
cpuload=50
cpuchunks=20000
numjobs=2
""",
    )
    r = run_phase(doc, "burn")
    assert r["total"]["ops"] == 0 and r["total"]["bytes"] == 0
    c = r["extra"]["cpuio"]
    assert c["threads"] == 2 and c["cpu_load_pct"] == 50
    # cpuload=50: bursts half of the time, bounds from the setting (half to one and a half times it); the CPU the
    # threads got in them is at most that (less when other work competes for the CPUs).
    assert 25 <= c["burst_pct_of_wall_per_thread"] <= 75, c
    assert 0 < c["cpu_pct_of_one_cpu_per_thread"] <= c["burst_pct_of_wall_per_thread"] * 1.05 + 1, c
    assert r["counters"]["cpu_ns"] > 0
    assert list((tmp_path / "d").iterdir()) == [], "cpuio made no files"


def test_cpuio_beside_a_reader_stops_with_it_on_exit_on_io_done(tmp_path):
    doc, _ = run_jobfile(
        tmp_path,
        """
[burn]
ioengine=cpuio
cpuload=30
cpumode=qsort
time_based
runtime=600
exit_on_io_done=1

[reader]
rw=read
bs=64k
size=4m
""",
    )
    group = doc["phases"][f"{doc['jobs']['reader']['phase']}:run"]
    assert group["jobs"]["reader"]["ops"]["read"]["bytes"] == 4 << 20
    assert group["jobs"]["burn"]["total"]["bytes"] == 0
    assert group["jobs"]["burn"]["extra"]["cpuio"]["cpu_mode"] == "qsort"
    assert group["elapsed_s"] < 600, "the burner ended with the reader, not at its runtime"


def test_cpuio_options_are_checked_as_fio_checks_them(tmp_path):
    with pytest.raises(UserError, match=r"line 1: job b: ioengine=cpuio needs cpuload="):
        job_of("[b]\nioengine=cpuio\ntime_based\nruntime=1\n")
    with pytest.raises(UserError, match=r"line 3: cpumode=hot: use noop or qsort"):
        job_of("[b]\nioengine=cpuio\ncpumode=hot\ncpuload=5\ntime_based\nruntime=1\n")
    with pytest.raises(UserError, match=r"give runtime= and time_based"):
        job_of("[b]\nioengine=cpuio\ncpuload=5\n")
    with pytest.raises(UserError, match=r"line 3: option cpuload belongs to ioengine=cpuio"):
        job_of("[b]\nrw=read\ncpuload=5\nsize=1m\n")
    f = tmp_path / "alone.fio"
    f.write_text("[b]\nioengine=cpuio\ncpuload=5\ntime_based\nruntime=1\nexit_on_io_done=1\n")
    with pytest.raises(UserError, match=r"line 1: job b: exit_on_io_done with no I/O job running beside it"):
        map_jobfile(f, tmp_path, True)


def test_libblkio_io_uring_runs_on_the_io_uring_backend_on_its_file(tmp_path):
    (tmp_path / "d").mkdir()
    target = tmp_path / "d" / "disk.img"  # under --dir, which replaces the job file's directory
    target.write_bytes(os.urandom(1 << 20))
    doc, _ = run_jobfile(
        tmp_path,
        f"""
[global]
ioengine=libblkio
libblkio_driver=io_uring
libblkio_path={target}
rw=randread
blocksize=4k
iodepth=4

[a]
[b]
numjobs=2
""",
    )
    for name, threads in (("a", 1), ("b", 2)):
        r = run_phase(doc, name)
        # Each clone reads the whole file once through its random map: the file's size from the file itself.
        assert r["ops"]["read"]["bytes"] == threads * (1 << 20), name
        assert r["extra"]["backend"] == "io_uring"
    assert target.stat().st_size == 1 << 20, "the file is left as it was"
    m = job_of(f"[a]\nioengine=libblkio\nlibblkio_driver=io_uring\nlibblkio_path={target}\nfilename=x\nsize=1m\n")
    assert m.settings["backend"] == "io_uring" and m.params["file_names"] == ["disk.img"]
    assert any("not through the libblkio library" in n for n in m.notes)
    assert any("filename=x" in n and "ignores" in n for n in m.notes)


def test_other_libblkio_drivers_and_exec_are_refused_in_one_line():
    with pytest.raises(
        UserError,
        match=r"line 3: libblkio_driver=virtio-blk-vfio-pci: the libblkio driver "
        r"virtio-blk-vfio-pci reaches a device past any filesystem",
    ):
        job_of("[a]\nioengine=libblkio\nlibblkio_driver=virtio-blk-vfio-pci\nlibblkio_path=/dev/vfio/1\n")
    with pytest.raises(
        UserError,
        match=r"line 2: ioengine=exec: fsmeter runs the program a job file names only "
        r"when told to.*add --allow-exec to `fsmeter run` if you trust this file",
    ):
        job_of("[a]\nioengine=exec\nprogram=/bin/sh\narguments=-c true\n")


def test_the_mapping_backends_keep_one_request_in_flight(tmp_path):
    m = job_of("[w]\nioengine=mmap\nrw=randwrite\nbs=4k\nsize=1m\niodepth=16\niodepth_batch=8\n")
    assert m.settings["backend"] == "mmap" and m.params["queue_depth"] == 1
    assert any("capped at 1" in n for n in m.notes)
    assert any("iodepth_batch=8: ioengine=mmap does one I/O at a time" in n for n in m.notes)
    # Outside job files: --set backend=mmap with a queue depth is refused, naming the parameter.
    r = fsm("run", "rand-read-4k", "--dir", tmp_path, "--set", "backend=mmap", "--set", "queue_depth=8", "-q")
    assert r.returncode == 2
    assert r.stderr.startswith("fsmeter: error: parameter queue_depth: the mmap backend copies one request at a time")


def test_a_file_of_cpuio_jobs_alone_asks_for_a_directory(tmp_path):
    f = tmp_path / "burn.fio"
    f.write_text("[b]\nioengine=cpuio\ncpuload=5\ntime_based\nruntime=1\n")
    r = fsm("run", f, "-q", "--cache", "keep")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (
        f"fsmeter: error: {f} line 1: job b: ioengine=cpuio works on no files, but fsmeter "
        "runs every job in a directory (the run records its filesystem): give --dir D"
    )


def test_options_these_engines_make_moot_are_noted_not_dropped_silently():
    m = job_of("[b]\nioengine=cpuio\ncpuload=5\ntime_based\nruntime=1\nrw=randread\nbs=8k\n")
    assert any(n.startswith("ioengine=cpuio does no I/O: rw=randread, bs=8k change nothing") for n in m.notes)
    m = job_of("[p]\nioengine=libpmem\nrw=write\nsize=1m\ndirect=1\nsync=1\n")
    assert m.params["direct"] is False and m.settings["backend"] == "libpmem"
    assert any("non-temporal stores" in n for n in m.notes) and any(n.startswith("sync=1: each write") for n in m.notes)
    m = job_of("[p]\nioengine=libpmem\nrw=write\nsize=1m\n")
    assert any(n.startswith("libpmem without sync=1") for n in m.notes)
    m = job_of("[m]\nioengine=mmap\nrw=write\nsize=1m\nsync=1\n")
    assert any("stores to a mapping do not go through" in n for n in m.notes)
    m = job_of("[m]\nsync=1\nrw=write\nsize=1m\n")
    assert m.params["open_sync"] == "sync"


def test_serialize_overlap_is_mapped_and_what_it_cannot_do_is_refused():
    m = job_of("[a]\nioengine=io_uring\niodepth=8\nsize=1m\nrw=randwrite\nserialize_overlap=1\n")
    assert m.params["serialize_overlap"] is True
    assert any(n.startswith("serialize_overlap=1: a request whose bytes overlap") for n in m.notes)
    # fio's t/jobs t0013: one request in flight, clones with files of their own, offload mode.
    t0013 = "[test]\nioengine=null\nthread=1\nsize=4K\nblocksize=4K\nio_submit_mode=offload\niodepth=1\n"
    t0013 += "serialize_overlap=1\nnumjobs=8\nloops=1000000\nruntime=10\n"
    m = job_of(t0013)
    assert m.params["serialize_overlap"] is True
    assert any("nothing to hold back" in n and "each clone has files of its own" in n for n in m.notes)
    assert "serialize_overlap" not in job_of("[a]\nsize=1m\nserialize_overlap=0\n").params
    with pytest.raises(UserError) as exc:
        job_of("[a]\nfilename=f\nsize=1m\nnumjobs=2\nio_submit_mode=offload\nserialize_overlap=1\n")
    msg = exc.value.message
    assert msg.startswith("t.fio line 6: serialize_overlap=1: with io_submit_mode=offload and clones sharing")
    assert "\n" not in msg
