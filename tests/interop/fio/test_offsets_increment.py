"""fio's offset_increment: the clones of a job share one file and clone t (from 0) works on its own region, from
offset + t * offset_increment (a percentage of the file's size, then aligned up to bs), for size= bytes or to the
file's end. Checked against fio itself when it is installed: each clone's I/O count and the offsets every I/O
touched (fio's per-clone latency logs with log_offset=1 against fsmeter's log of the same job); and the one-line
refusals of what fsmeter does not map."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter

import pytest
from fsmeter.errors import UserError
from fsmeter_cli import fsm, job_of

#: Disjoint stripes: 4 clones of 64 KiB, 128 KiB apart, after 8 KiB.
BYTES_JOB = """[global]
bs=4k
rw=write
filename=striped
size=64k
offset=8k
offset_increment=128k
numjobs=4
write_lat_log=lg
log_offset=1
[stripes]
"""

#: Overlapping regions to the file's end: 3 clones, 25% of a 1 MiB file apart, offset 2k aligned up to 4k, holes
#: of 4 KiB between writes (rw=write:4k), two loops.
PCT_JOB = """[global]
bs=4k
rw=write:4k
filename=striped
offset=2k
offset_increment=25%
numjobs=3
loops=2
write_lat_log=lg
log_offset=1
[quarters]
"""


def _offsets(log_text: str) -> list:
    """The offsets of a per-I/O latency log (time, latency, direction, size, offset, ...)."""
    return [int(line.split(",")[4]) for line in log_text.splitlines() if line.strip()]


def _run_fsmeter(tmp_path, text: str, file_size: int = 0) -> tuple:
    """fsmeter's run of the job file: (write count, offsets of its I/Os)."""
    d = tmp_path / "fsm"
    d.mkdir()
    if file_size:
        (d / "striped").write_bytes(b"\0" * file_size)
    (tmp_path / "fsm.fio").write_text(text)
    out = tmp_path / "fsm.json"
    r = fsm("run", tmp_path / "fsm.fio", "--dir", d, "-q", "--json", out, "--cache", "keep", cwd=d)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    (phase,) = [v for k, v in doc["phases"].items() if k.endswith(":run")]
    return phase["ops"]["write"]["count"], _offsets((d / "lg_clat.1.log").read_text())


def _run_fio(tmp_path, text: str, numjobs: int, file_size: int = 0):
    """fio's run of the same job file: per clone, (write count, offsets); None without fio."""
    if not shutil.which("fio"):
        return None
    d = tmp_path / "fio"
    d.mkdir()
    if file_size:
        (d / "striped").write_bytes(b"\0" * file_size)
    (tmp_path / "fio.fio").write_text(text)
    r = subprocess.run(
        ["fio", "--output-format=json", str(tmp_path / "fio.fio")], capture_output=True, text=True, cwd=d, timeout=120
    )
    assert r.returncode == 0, r.stderr
    clones = [_offsets((d / f"lg_clat.{n}.log").read_text()) for n in range(1, numjobs + 1)]
    doc = json.loads(r.stdout[r.stdout.index("{") :])
    counts = sorted(j["write"]["total_ios"] for j in doc["jobs"])
    assert counts == sorted(len(c) for c in clones)
    return clones


def test_offset_increment_in_bytes_gives_each_clone_its_stripe_as_fio(tmp_path):
    m = job_of(BYTES_JOB)
    regions = m.params["thread_regions"]
    assert [(r["start"], r["len"], r["bytes"]) for r in regions] == [
        (8192 + t * 131072, 65536, 65536) for t in range(4)
    ]
    assert m.params["total_bytes"] == 4 * 65536
    assert m.params["offset"] + m.params["file_size"] == 8192 + 3 * 131072 + 65536, "laid out to the last stripe"
    count, offsets = _run_fsmeter(tmp_path, BYTES_JOB)
    stripes = [[8192 + t * 131072 + k * 4096 for k in range(16)] for t in range(4)]
    assert count == 64
    assert sorted(offsets) == sorted(o for s in stripes for o in s)
    fio = _run_fio(tmp_path, BYTES_JOB, 4)
    if fio is None:
        pytest.skip("fio is not installed: checked against the stripes fio's documentation gives")
    assert sorted(fio) == stripes, "each fio clone walks its own stripe, in order"
    assert Counter(offsets) == Counter(o for c in fio for o in c)


def test_offset_increment_as_a_percentage_runs_each_clone_to_the_files_end_as_fio(tmp_path):
    # The file is there before the run (1 MiB): clone t starts at 2k + t * 256k aligned up to 4k, and works to the
    # file's end, a write every 8 KiB; each loop starts its region again.
    jf = tmp_path / "t.fio"
    (tmp_path / "striped").write_bytes(b"\0" * (1 << 20))
    jf.write_text(PCT_JOB)
    from fsmeter.interop.fio.load import map_jobfile

    (m,) = map_jobfile(jf, tmp_path, True)
    starts = [4096, 4096 + 262144, 4096 + 524288]
    per_pass = [((1 << 20) - s - 4096) // 8192 + 1 for s in starts]
    assert per_pass == [128, 96, 64]
    assert [(r["start"], r["len"], r["pass_ios"], r["bytes"]) for r in m.params["thread_regions"]] == [
        (s, (1 << 20) - s, k, 2 * k * 4096) for s, k in zip(starts, per_pass)
    ]
    count, offsets = _run_fsmeter(tmp_path, PCT_JOB, 1 << 20)
    expect = [[s + k * 8192 for k in range(n)] * 2 for s, n in zip(starts, per_pass)]
    assert count == 2 * sum(per_pass)
    assert Counter(offsets) == Counter(o for c in expect for o in c)
    fio = _run_fio(tmp_path, PCT_JOB, 3, 1 << 20)
    if fio is None:
        pytest.skip("fio is not installed: checked against the regions fio's source gives")
    assert sorted(fio) == sorted(expect), "fio's clones: the same regions, passes and offsets"


#: io_size twice each clone's region: fio starts the region again until io_size is done (keep_running).
IO_SIZE_JOB = """[global]
bs=4k
rw=write
filename=striped
size=64k
io_size=128k
offset_increment=64k
numjobs=2
write_lat_log=lg
log_offset=1
[twice]
"""


def test_io_size_beyond_the_region_walks_each_clones_region_again_as_fio(tmp_path):
    m = job_of(IO_SIZE_JOB)
    assert [(r["start"], r["bytes"], r["pass_ios"]) for r in m.params["thread_regions"]] == [
        (0, 131072, 16),
        (65536, 131072, 16),
    ]
    count, offsets = _run_fsmeter(tmp_path, IO_SIZE_JOB)
    expect = [[s + k * 4096 for k in range(16)] * 2 for s in (0, 65536)]
    assert count == 64
    assert Counter(offsets) == Counter(o for c in expect for o in c)
    fio = _run_fio(tmp_path, IO_SIZE_JOB, 2)
    if fio is None:
        pytest.skip("fio is not installed: checked against the passes fio's source gives")
    assert sorted(fio) == sorted(expect)


@pytest.mark.parametrize(
    "text, match",
    [
        (
            "[a]\nsize=64k\nnumjobs=2\noffset_increment=64k\n",
            r"^t.fio line 4: offset_increment=64k: offset_increment with each clone on its own files \(no filename=\): "
            r"name the one file the clones share with filename= is not supported by fsmeter yet \(planned\)",
        ),
        (
            "[a]\nfilename=f\nsize=64k\noffset_increment=64k\n",
            r"^t.fio line 4: offset_increment=64k: moves the clones of a job \(numjobs\) apart, and this job has one",
        ),
        (
            "[a]\nfilename=f\nsize=64k\nnumjobs=2\nbssplit=4k/50:8k/50\noffset_increment=64k\n",
            r"^t.fio line 6: offset_increment=64k: offset_increment with several request sizes",
        ),
        (
            "[a]\nfilename=f\nsize=64k\nnumjobs=2\nrw=rw\noffset_increment=64k\n",
            r"^t.fio line 6: offset_increment=64k: offset_increment with a sequential mix",
        ),
        (
            "[a]\nfilename=f\nsize=64k\nnumjobs=2\noffset_increment=50%\n",
            r"^t.fio line 5: offset_increment=50%: a percentage of the file's size needs the file there before the run",
        ),
    ],
)
def test_offset_increment_shapes_fsmeter_does_not_map_are_refused_in_one_line(text, match):
    with pytest.raises(UserError, match=match):
        job_of(text)


def test_a_clone_starting_past_the_files_end_is_refused_as_fio_refuses_it(tmp_path):
    (tmp_path / "striped").write_bytes(b"\0" * (256 << 10))
    jf = tmp_path / "t.fio"
    jf.write_text("[a]\nfilename=striped\nrw=write\noffset_increment=128k\nnumjobs=3\n")
    from fsmeter.interop.fio.load import map_jobfile

    with pytest.raises(
        UserError,
        match=r"line 4: offset_increment=128k: clone 2 would start at 262144 bytes, "
        r"leaving 0 of the file's 262144 bytes .*valid offset=",
    ):
        map_jobfile(jf, tmp_path, True)
