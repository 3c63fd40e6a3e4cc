"""The job files of tests/data/fio/counts under `fsmeter run`, held to fio 3.33's own counts: the bytes and I/Os
of each job and direction that fio did with the same file, recorded by bench/fio_counts.py into counts.json
(the command is in each record). The options are those users' job files carry and fsmeter once refused or
mapped to other work: sync=, fdatasync=, sync_file_range=, fsync_on_close, overwrite, clocksource, unit_base,
verify options without verify=, include, iodepth_batch*, iodepth=N*M, posixaio, bsrange, experimental_verify,
[global] name=, io_size beyond size and rw=read:N. No fio is needed here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from fsmeter_cli import fsm

DATA = Path(__file__).resolve().parents[2] / "data" / "fio" / "counts"
RECORD = json.loads((DATA / "counts.json").read_text())


def _run(name: str, tmp_path: Path) -> tuple:
    out = tmp_path / "out.json"
    work = tmp_path / "work"
    work.mkdir()
    r = fsm("run", DATA / name, "--dir", work, "-q", "--json", out, "--cache", "keep")
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text()), r


def _ops(doc: dict, job: str, kind: str) -> tuple:
    """A job's bytes and I/Os of one kind: its own phase, or its part of its group's phase (jobs run together)."""
    phase = doc["phases"].get(f"{job}:run")
    if phase is None:
        (phase,) = [p["jobs"][job] for name, p in doc["phases"].items() if name.endswith(":run") and job in p["jobs"]]
    o = phase["ops"].get(kind) or {}
    return o.get("bytes", 0), o.get("count", 0)


def slack(n: int, cv: float) -> float:
    """How far two runs' I/O counts for the same bytes may differ when each request's size is drawn: the
    number of requests filling B bytes is a renewal count, of standard deviation cv x sqrt(n) for large n
    (Feller vol. II, XI.5); two independent runs differ by sqrt(2) times that; allowed: three of those."""
    return 3 * math.sqrt(2) * cv * math.sqrt(n)


#: Files with tests of their own below: sizes or directions drawn, or work that differs from fio on purpose.
DRAWN = (
    "bsrange.fio",
    "bssplit_to_the_end.fio",
    "number_ios_bssplit.fio",
    "random_map_tail.fio",
    "rw_mix.fio",
    "experimental_verify_loops.fio",
)
EXACT = sorted(n for n in RECORD["files"] if n not in DRAWN)


@pytest.mark.parametrize("name", EXACT)
def test_fsmeter_does_fios_counts(name, tmp_path):
    doc, _ = _run(name, tmp_path)
    for job in RECORD["files"][name]["jobs"]:
        for kind in ("read", "write"):
            assert list(_ops(doc, job["name"], kind)) == job[kind], (job["name"], kind)


def test_bsrange_draws_fios_sizes(tmp_path):
    """fio draws min + max x u rounded down to a multiple of min, capped at max: 4k-16k gives 4, 8, 12 and 16 KiB
    a quarter each (mean 10 KiB, sd sqrt(20) KiB: cv 0.447); 4k-10k gives 4 KiB 40%, 8 KiB 40%, 10 KiB 20%
    (mean 6.8 KiB, sd 2.4 KiB: cv 0.353). The counts are draws: within the renewal slack of fio's. The bytes:
    at the end of the file both tools draw again until a size fits, so the writer's walk ends at 1 MiB exactly.
    The reader's sizes (multiples of 2 KiB from 4 KiB) can leave 2 KiB that no size fits: fio's pass ends there
    (1,046,528 bytes), and fsmeter starts the file again for one more request (docs/fio.md, bsrange)."""
    doc, r = _run("bsrange.fio", tmp_path)
    rec = {j["name"]: j for j in RECORD["files"]["bsrange.fio"]["jobs"]}
    wbytes, wcount = _ops(doc, "w", "write")
    assert wbytes == rec["w"]["write"][0] == 1 << 20
    assert abs(wcount - rec["w"]["write"][1]) <= slack(rec["w"]["write"][1], math.sqrt(20) / 10)
    rbytes, rcount = _ops(doc, "r", "read")
    assert abs(rbytes - rec["r"]["read"][0]) < 10 << 10  # fio stops where the next drawn size does not fit
    assert abs(rcount - rec["r"]["read"][1]) <= slack(rec["r"]["read"][1], 2.4 / 6.8)


def test_sequential_walks_with_drawn_sizes_end_at_the_end_of_the_file(tmp_path):
    """512 B, 1, 2 and 4 KiB a quarter each (mean 1,920 B, sd 1,406 B: cv 0.732), and 4k-16k (cv 0.447), walked
    from the start of a 1 MiB file: fio's bytes exactly (its last request fitted to the end), its counts within
    the renewal slack; trimwrite's writes pair with its trims, as fio's."""
    doc, r = _run("bssplit_to_the_end.fio", tmp_path)
    rec = {j["name"]: j for j in RECORD["files"]["bssplit_to_the_end.fio"]["jobs"]}
    for job, kind, cv in [("seqtw", "trim", 0.732), ("seqtw", "write", 0.732), ("seqread", "read", 0.732)]:
        nbytes, count = _ops(doc, job, kind)
        assert nbytes == rec[job][kind][0] == 1 << 20, (job, kind)
        assert abs(count - rec[job][kind][1]) <= slack(rec[job][kind][1], cv), (job, kind, count)
    assert _ops(doc, "seqtw", "trim")[1] == _ops(doc, "seqtw", "write")[1]
    nbytes, count = _ops(doc, "seqwrite", "write")
    assert nbytes == rec["seqwrite"]["write"][0] == 1 << 20
    assert abs(count - rec["seqwrite"]["write"][1]) <= slack(rec["seqwrite"]["write"][1], math.sqrt(20) / 10)


def test_bsrange_shares_by_hand():
    from fsmeter.interop.fio.pattern import range_split

    assert range_split(4096, 16384) == [(4096, 25.0), (8192, 25.0), (12288, 25.0), (16384, 25.0)]
    assert range_split(4096, 10240) == [(4096, 40.0), (8192, 40.0), (10240, 20.0)]
    assert range_split(512, 512) == [(512, 100.0)]


def test_number_ios_with_drawn_sizes_stops_after_fios_count(tmp_path):
    """fio did 100 requests (number_ios=100) of 4 or 16 KiB, reads or writes: the count is fio's exactly; the
    read share within three binomial standard deviations (n = 100, p = 0.5: 15), the bytes those sizes allow."""
    doc, r = _run("number_ios_bssplit.fio", tmp_path)
    (job,) = RECORD["files"]["number_ios_bssplit.fio"]["jobs"]
    (rb, rn), (wb, wn) = _ops(doc, "mail", "read"), _ops(doc, "mail", "write")
    assert rn + wn == job["read"][1] + job["write"][1] == 100
    assert abs(rn - job["read"][1]) <= 15
    assert 100 * 4096 <= rb + wb <= 100 * 16384


def test_a_full_random_map_ends_the_job_short_of_its_size(tmp_path):
    """fio's t/jobs t0001 on a file: 20,000 bytes hold 19 whole 1 KiB blocks; fio's random map has a bit per
    whole block and ends the job when it is full, so both jobs read 19,456 bytes, not 20,000 or more. The
    one-size job's count is fio's (19); the drawn job's (1 to 4 KiB, shortened at blocks already read) within
    the renewal slack of fio's 12 (cv of the sizes 0.447)."""
    doc, r = _run("random_map_tail.fio", tmp_path)
    rec = {j["name"]: j for j in RECORD["files"]["random_map_tail.fio"]["jobs"]}
    assert list(_ops(doc, "onesize", "read")) == rec["onesize"]["read"] == [19456, 19]
    nbytes, count = _ops(doc, "drawn", "read")
    assert nbytes == rec["drawn"]["read"][0] == 19456
    assert abs(count - rec["drawn"]["read"][1]) <= slack(rec["drawn"]["read"][1], math.sqrt(20) / 10)


def test_a_sequential_mix_walks_each_direction_from_the_start(tmp_path):
    """fio's t/jobs t0002-pre at 64 MiB: the mix job's reads and writes each walk the region from its start, so
    each moves about half of it in requests of 512 B or 1 MiB drawn half and half (cv of the sizes 0.998) and
    the job stops once the two together pass 64 MiB, a little past it as fio's does. With one walk shared by
    both directions the walk reaches the region's end and fills its last MiB with 512-byte requests: over a
    thousand of them in each direction, against fio's 48 reads and 49 writes."""
    doc, r = _run("rw_mix.fio", tmp_path)
    rec = {j["name"]: j for j in RECORD["files"]["rw_mix.fio"]["jobs"]}
    mix = rec["thread-mix0"]
    total = 0
    for kind in ("read", "write"):
        nbytes, count = _ops(doc, "thread-mix0", kind)
        total += nbytes
        assert abs(count - mix[kind][1]) <= slack(mix[kind][1], 0.998), (kind, count)
        assert 16 << 20 < nbytes < 48 << 20, (kind, nbytes)
    fio_total = mix["read"][0] + mix["write"][0]
    assert 64 << 20 <= total < (64 << 20) + (1 << 20) and 64 << 20 <= fio_total < (64 << 20) + (1 << 20)
    nbytes, count = _ops(doc, "thread0", "write")
    assert nbytes == rec["thread0"]["write"][0] == 64 << 20
    assert abs(count - rec["thread0"]["write"][1]) <= slack(rec["thread0"]["write"][1], 0.998)


def test_experimental_verify_with_loops_does_every_loop(tmp_path):
    """fio's t/jobs t0026 at two loops: fio does one pass of 256 writes and 256 reads (recorded from 3.33; a
    build of 3.42 does the same), whatever loops says; fsmeter does the two loops asked for, and says that fio
    does not."""
    doc, r = _run("experimental_verify_loops.fio", tmp_path)
    (job,) = RECORD["files"]["experimental_verify_loops.fio"]["jobs"]
    assert job["write"] == job["read"] == [1 << 20, 256]
    for kind in ("read", "write"):
        assert list(_ops(doc, "job1", kind)) == [2 * job[kind][0], 2 * job[kind][1]], kind
    assert "fio (3.33 to 3.42) does one pass" in " ".join(doc["jobs"]["job1"]["notes"])
