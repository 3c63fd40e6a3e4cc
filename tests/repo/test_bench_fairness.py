"""bench/ compares fsmeter with its peers doing the same work, in an order that favours neither.

These check how the benchmark builds its peer commands and schedules its rounds; the timings
themselves live in `make bench`.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest
from repo_paths import ROOT

BENCH = str(ROOT / "bench")


@pytest.fixture(scope="module")
def bench_access():
    sys.path.insert(0, BENCH)  # bench modules import the runner as `run`
    try:
        spec = importlib.util.spec_from_file_location("fsmeter_bench_access", os.path.join(BENCH, "bench_access.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.path.remove(BENCH)


def test_fio_draws_random_offsets_with_replacement_like_fsmeter(bench_access):
    args = bench_access.fio_args("/f", "randread", "4k", 3)
    # fsmeter keeps no map of visited blocks: neither may fio.
    assert "--norandommap" in args and "--randrepeat=0" in args
    uring = bench_access.fio_args("/f", "randread", "4k", 3, engine="io_uring", depth=32, direct=True)
    # fsmeter registers its files and buffers with the ring.
    assert {"--norandommap", "--registerfiles", "--fixedbufs", "--iodepth=32", "--direct=1"} <= set(uring)
    seq = bench_access.fio_args("/f", "read", "1M", 3, direct=True)
    assert "--norandommap" not in seq and "--rw=read" in seq and "--bs=1M" in seq


def test_rounds_alternate_which_tool_goes_first(bench_access):
    calls = []
    got = bench_access.interleaved(
        4,
        {
            "fsmeter": lambda r: calls.append(("fsmeter", r)) or 10 + r,
            "fio": lambda r: calls.append(("fio", r)) or 20 + r,
        },
    )
    assert calls == [
        ("fsmeter", 0),
        ("fio", 0),
        ("fio", 1),
        ("fsmeter", 1),
        ("fsmeter", 2),
        ("fio", 2),
        ("fio", 3),
        ("fsmeter", 3),
    ]
    assert got == {"fsmeter": [10, 11, 12, 13], "fio": [20, 21, 22, 23]}
    firsts = [order[0] for order in bench_access.alternating(6, ["a", "b", "c"])]
    assert firsts.count("a") == firsts.count("c") == 3


class _FakeCtx:
    """Records what the bench runs instead of running it."""

    quick = True

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.log = []
        self.loop_dio = True

    def seconds(self, full, quick):
        return quick

    def _place(self, kind):
        import contextlib

        @contextlib.contextmanager
        def cm(*a, **k):
            d = self.tmp_path / kind
            d.mkdir(exist_ok=True)
            yield d

        return cm()

    def tmpfs(self, size="2G"):
        return self._place("tmpfs")

    def loopfs(self, fs="ext4", size="1G", in_ram=False):
        return self._place("loop-ram" if in_ram else "loop")

    def fsmeter(self, workload, d, sets, keep_files=False, cache="auto"):
        self.log.append(
            ("fsmeter", d.name, workload, sets.get("duration_s"), sets.get("seed"), sets.get("buffer_memory", "heap"))
        )
        return {"phases": {"run": {"total": {"ops_per_s": 100.0, "bytes_per_s": 100.0 * (1 << 20), "bytes": 1 << 30}}}}

    def cmd(self, args, **k):
        import json
        import types

        if args[0] == "fio":
            self.log.append(("fio", os.path.basename(os.path.dirname(args[2].split("=", 1)[1])), args))
            side = {"iops": 100.0, "bw_bytes": 100.0 * (1 << 20), "io_bytes": 1 << 30}
            return types.SimpleNamespace(stdout=json.dumps({"jobs": [{"read": side, "write": side}]}))
        return types.SimpleNamespace(stdout="100\n")

    @staticmethod
    def row(case, metric, f, p, peer, target=None, higher_is_better=True, notes=""):
        return {"case": case, "fsmeter": f, "peer": p, "notes": notes}


def test_device_cases_run_interleaved_rounds_in_alternating_order(bench_access, tmp_path, monkeypatch):
    import contextlib

    monkeypatch.setattr(bench_access, "bare_exe", lambda: None)
    monkeypatch.setattr(bench_access, "hugetlb_pages", lambda n: contextlib.nullcontext())
    monkeypatch.setattr(bench_access, "loop_reads", lambda d: 0)
    ctx = _FakeCtx(tmp_path)
    rows = bench_access.run(ctx)
    measured = [e for e in ctx.log if e[0] == "fio" or e[3] != 0.2]  # leave out the layout runs
    on_loop = [e[0] for e in measured if e[1] == "loop"]
    # (b), (c) read, (c) write: 2 rounds each, fsmeter first then fio first.
    assert on_loop == ["fsmeter", "fio", "fio", "fsmeter"] * 3
    for r in rows:
        if r["case"].startswith(("(b)", "(c)")):
            assert "interleaved rounds, order alternating" in r["notes"] and "loop direct I/O on" in r["notes"]
            assert ".." in r["notes"], "the spread of each side is shown"
    # Random-read rounds give fsmeter a new seed per round, as fio --randrepeat=0 draws anew.
    seeds = [e[4] for e in measured if e[0] == "fsmeter" and e[1] == "tmpfs" and e[2] == "rand-read-4k"]
    assert len(set(seeds)) == len(seeds)
    # (f): four sides taking turns, the order reversed each round; each fio side with its iomem.
    on_ram = [e for e in measured if e[1] == "loop-ram"]
    kinds = [e[5] if e[0] == "fsmeter" else next(a for a in e[2] if a.startswith("--iomem=")) for e in on_ram]
    first = ["heap", "--iomem=malloc", "hugetlb", "--iomem=mmaphuge"]
    assert kinds == first + first[::-1]
    f_rows = [r for r in rows if r["case"].startswith("(f)")]
    assert len(f_rows) == 2 and all("device requests per MiB" in r["notes"] for r in f_rows)
    fio_random = [e[2] for e in measured if e[0] == "fio" and "--rw=randread" in e[2]]
    assert fio_random and all("--norandommap" in a and "--randrepeat=0" in a for a in fio_random)
