"""Where the access family's request buffers get their pages (buffer_memory): heap by default,
transparent huge pages or hugetlb on request, what the kernel gave recorded with the phase; a short
hugetlb pool refused before anything runs; fio's iomem mapped onto it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fsmeter.errors import UserError
from fsmeter.interop.fio.job import map_job
from fsmeter.interop.fio_jobfile import parse_jobfile
from fsmeter.mpi.merge import access_extra

MIB = 1 << 20
SETS = [
    "--set",
    "file_size=4M",
    "--set",
    "total_bytes=8M",
    "--set",
    "record_size=1M",
    "--set",
    "duration_s=none",
    "--set",
    "warmup_s=0",
    "--set",
    "threads=2",
]


def fsm(*args):
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def run_phase(tmp_path: Path, *sets) -> tuple:
    out = tmp_path / "out.json"
    r = fsm("run", "seq-read", "--dir", tmp_path, *SETS, *sets, "-q", "--min-phase-s", "0", "--json", out)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())["phases"]["run"], " ".join(r.stdout.split())  # rich wraps at 80 columns


POOL = Path("/sys/kernel/mm/hugepages/hugepages-2048kB")


def pool(key: str) -> int:
    return int((POOL / key).read_text())


def available_2m() -> int:
    """2 MiB hugetlb pages this process could map now (free, less others' reservations, plus overcommit)."""
    return (
        pool("free_hugepages")
        - pool("resv_hugepages")
        + max(0, pool("nr_overcommit_hugepages") - pool("surplus_hugepages"))
    )


def thp_never() -> bool:
    try:
        return "[never]" in Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return True


def test_heap_buffers_are_the_default_and_count_no_huge_pages(tmp_path):
    rep, out = run_phase(tmp_path)
    assert rep["extra"]["buffer_memory"] == {"kind": "heap", "bytes": 2 * MIB, "mapped_bytes": 2 * MIB, "huge_bytes": 0}
    assert "request buffers" not in out


def test_thp_buffers_sit_in_whole_huge_pages_and_say_how_many_are_huge(tmp_path):
    rep, out = run_phase(tmp_path, "--set", "buffer_memory=thp")
    b = rep["extra"]["buffer_memory"]
    assert (b["kind"], b["bytes"], b["mapped_bytes"]) == ("thp", 2 * MIB, 4 * MIB)  # one 2 MiB page per thread
    assert b["huge_bytes"] is not None and 0 <= b["huge_bytes"] <= b["mapped_bytes"]
    assert b["huge_bytes"] % (2 * MIB) == 0
    if thp_never():
        assert b["huge_bytes"] == 0
    assert "transparent huge pages" in out
    assert rep["total"]["bytes"] == 8 * MIB  # the same work as with heap buffers


def test_a_short_hugetlb_pool_is_refused_before_anything_runs(tmp_path):
    r = fsm(
        "run",
        "seq-read",
        "--dir",
        tmp_path,
        *SETS,
        "--set",
        "buffer_memory=hugetlb",
        "--set",
        "queue_depth=3",
        "--set",
        "backend=io_uring",
        "-q",
    )
    if not POOL.is_dir():
        assert r.returncode == 2 and "this kernel shows none" in r.stderr, r.stderr
        return
    if available_2m() >= 4:
        pytest.skip("this machine has huge pages to spare; the refusal needs a short pool")
    # 2 threads x (3 buffers of 1 MiB in whole 2 MiB pages: 2 pages)
    assert r.returncode == 2, r.stderr
    assert (
        "parameter buffer_memory: hugetlb buffers need 4 huge page(s) of 2 MiB (2 thread(s) x 2 for queue_depth 3 "
        "x 1048576 bytes)"
    ) in " ".join(r.stderr.split())
    assert f"vm.nr_hugepages={pool('nr_hugepages') + 4 - max(available_2m(), 0)}" in r.stderr
    assert "Traceback" not in r.stderr
    assert not list(tmp_path.iterdir()), "nothing laid out"


@pytest.fixture
def hugetlb_pool(root):
    """Four more 2 MiB pages reserved for the test, the machine's own setting put back after."""
    knob = POOL / "nr_hugepages"
    if not POOL.is_dir():
        pytest.skip("no 2 MiB hugetlb pool in this kernel")
    before = int(knob.read_text())
    try:
        knob.write_text(str(before + 4))
    except OSError as exc:
        pytest.skip(f"cannot grow the hugetlb pool here: {exc}")
    try:
        if available_2m() < 4:
            pytest.skip("the kernel could not reserve 4 huge pages (memory too fragmented, or others took them)")
        yield
    finally:
        knob.write_text(str(before))


def test_hugetlb_buffers_come_from_the_reserved_pool(hugetlb_pool, tmp_path):
    rep, out = run_phase(tmp_path, "--set", "buffer_memory=hugetlb")
    assert rep["extra"]["buffer_memory"] == {
        "kind": "hugetlb",
        "bytes": 2 * MIB,
        "mapped_bytes": 4 * MIB,
        "huge_bytes": 4 * MIB,
    }
    assert "hugetlb pages" in out


def jobs(text: str):
    return [map_job("t.fio", j, i) for i, j in enumerate(parse_jobfile(text, "t.fio", {}).jobs)]


@pytest.mark.parametrize(
    "value,kind,note",
    [
        ("malloc", "heap", None),
        ("mmap", "heap", "come from mmap"),
        ("shm", "heap", "shmget"),
        ("mmaphuge", "hugetlb", None),
        ("shmhuge", "hugetlb", None),
        ("mmaphuge:/hugepages/buf", "hugetlb", "instead of a file on hugetlbfs"),
        ("mmap:/dev/shm/buf", "heap", "fio maps that file"),
        ("mmapshared:/dev/shm/buf", "heap", "does not touch the file"),
    ],
)
def test_fio_iomem_maps_onto_buffer_memory(value, kind, note):
    for opt in ("iomem", "mem"):
        [j] = jobs(f"[a]\nrw=read\nsize=1m\n{opt}={value}\n")
        assert j.params["buffer_memory"] == kind
        assert any(note in n for n in j.notes) if note else not any(opt in n for n in j.notes)


def test_fio_iomem_the_later_of_iomem_and_mem_wins_as_in_fio():
    [j] = jobs("[a]\nrw=read\nsize=1m\nmem=mmaphuge\niomem=malloc\n")
    assert j.params["buffer_memory"] == "heap"
    [j] = jobs("[a]\nrw=read\nsize=1m\niomem=malloc\nmem=shmhuge\n")
    assert j.params["buffer_memory"] == "hugetlb"


def test_fio_iomem_without_a_match_is_refused_naming_the_line():
    with pytest.raises(UserError, match=r"line 4: iomem=shmhuge:/x: shmhuge takes no file"):
        jobs("[a]\nrw=read\nsize=1m\niomem=shmhuge:/x\n")
    with pytest.raises(UserError, match=r"t.fio line 4: iomem=cudamalloc: GPU memory is not supported"):
        jobs("[a]\nrw=read\nsize=1m\niomem=cudamalloc\n")
    with pytest.raises(UserError, match=r"line 4: iomem=hugemmap: use one of malloc, mmap"):
        jobs("[a]\nrw=read\nsize=1m\niomem=hugemmap\n")


def test_merged_ranks_add_up_buffers_mixes_and_direct_io_checks():
    def rank(huge, added, reads, unaligned=False):
        return {
            "backend": "psync",
            "buffer_memory": {"kind": "thp", "bytes": MIB, "mapped_bytes": 2 * MIB, "huge_bytes": huge},
            "direct_io": {
                "offset_align": 512,
                "unaligned_requests": unaligned,
                "page_cache_pages_added": added,
                "buffered_fallback_possible": unaligned or added > 0,
            },
            "mix": [{"size": MIB, "weight": 100, "reads": reads, "writes": 0, "random": 0, "sequential": reads}],
        }

    m = access_extra([rank(2 * MIB, 0, 10), rank(0, 3, 12)])
    assert m["buffer_memory"] == {"kind": "thp", "bytes": 2 * MIB, "mapped_bytes": 4 * MIB, "huge_bytes": 2 * MIB}
    assert m["direct_io"]["page_cache_pages_added"] == 3 and m["direct_io"]["buffered_fallback_possible"] is True
    assert m["direct_io"]["unaligned_requests"] is False
    assert m["mix"] == [{"size": MIB, "weight": 100, "reads": 22, "writes": 0, "random": 0, "sequential": 22}]
    assert access_extra([rank(0, 0, 1), rank(0, 0, 1, unaligned=True)])["direct_io"]["unaligned_requests"] is True
    # Ranks sharing a file each count all of its cached pages: the largest count, not the sum.
    assert access_extra([rank(0, 5, 1), rank(0, 3, 1)], shared_file=True)["direct_io"]["page_cache_pages_added"] == 5
    assert access_extra([rank(None, 0, 1), rank(0, 0, 1)])["buffer_memory"]["huge_bytes"] is None
    assert access_extra([None, None]) is None
