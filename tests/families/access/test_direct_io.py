"""O_DIRECT that is really direct: requests the filesystem cannot do directly are refused, naming
the parameter, and every direct phase records whether the page cache could have been used.

btrfs does direct I/O only in multiples of its 4 KiB sector and quietly serves smaller O_DIRECT
requests through its page cache; ext4 and xfs do 512 B directly.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fsmeter.engine import EngineSession
from fsmeter.provision import FsConfig, Provisioner, TargetSpec
from fsmeter.spec import build_job, load_workload, parse_set

MiB = 1 << 20
SMALL = ["file_size=8M", "warmup_s=0", "duration_s=0.3", "direct=true"]


def fsmeter(*args):
    return subprocess.run([sys.executable, "-m", "fsmeter", *map(str, args)], capture_output=True, text=True)


def run_direct(mnt, workload, sets):
    s = EngineSession(build_job(load_workload(workload), mnt.path, parse_set(SMALL + sets)).engine_json())
    s.run_phase("prepare")
    try:
        mnt.reset_cache()  # as before every cold-cache phase: the layout's pages leave the cache
        return s.run_phase("run")
    finally:
        s.run_phase("cleanup")


def test_the_quick_suite_is_direct_on_4k_sectors():
    """Every access workload of `fsmeter compare` uses O_DIRECT with 4 KiB multiples throughout."""
    import tomllib

    from fsmeter.cli.compare import STUDY

    suite = tomllib.loads(STUDY.read_text())
    for w in suite["workloads"]:
        wl = load_workload(w["name"])
        if wl.family.name != "access":
            continue
        params = wl.family.params(**{**wl.params, **w.get("params", {})})
        assert params.direct, w["name"]
        assert all(e.size % 4096 == 0 for e in params.entries), w["name"]
        if any(e.random_pct > 0 for e in params.entries):
            assert params.alignment % 4096 == 0, w["name"]


@pytest.mark.root
def test_btrfs_refuses_512_byte_direct_requests_and_flags_the_fallback(scratch, tmp_path):
    with Provisioner(scratch) as prov:
        mnt = prov.create(TargetSpec(kind="loop", size_bytes=300 * MiB), FsConfig(name="btrfs"))
        try:
            # Iometer's file-server mix has 512 B requests: refused, one line naming the parameter.
            r = fsmeter("run", "fileserver", "--dir", mnt.path, "-q", *sum((["--set", s] for s in SMALL), []))
            assert r.returncode == 2, r.stdout + r.stderr
            err = r.stderr.strip()
            assert len(err.splitlines()) == 1 and "Traceback" not in err, err
            assert "entries[0].size: 512 bytes" in err and "4096" in err and "btrfs" in err, err
            # The 4 KiB variant fits: its requests are aligned to btrfs's sector. (btrfs may still put
            # a few aligned direct *writes* through its page cache; the phase then says so.)
            rep = run_direct(mnt, "fileserver-4k", [])
            d = rep["extra"]["direct_io"]
            assert d["offset_align"] == 4096 and d["unaligned_requests"] is False, d
            assert d["buffered_fallback_possible"] is (d["page_cache_pages_added"] > 0), d
            # Aligned 4 KiB direct reads are direct: nothing entered the page cache.
            rep = run_direct(mnt, "rand-read-4k", [])
            d = rep["extra"]["direct_io"]
            assert d["buffered_fallback_possible"] is False and d["page_cache_pages_added"] == 0, d
            assert not rep["warnings"]
            # Asked to measure 512 B reads anyway: they run, and the phase says they may be buffered.
            # Whether the pages btrfs reads through its cache are still there when the phase ends is the
            # kernel's choice (seen both ways on one machine, minutes apart), so only the count is checked.
            wl = tmp_path / "read-512.toml"
            wl.write_text(
                'family = "access"\ndescription = "512 B random reads"\n[params]\n'
                'entries = [{ size = "512", weight = 100, read_pct = 100, random_pct = 100 }]\n'
            )
            rep = run_direct(mnt, str(wl), ["allow_unaligned_direct=true"])
            d = rep["extra"]["direct_io"]
            assert d["unaligned_requests"] is True and d["buffered_fallback_possible"] is True, d
            assert isinstance(d["page_cache_pages_added"], int) and d["page_cache_pages_added"] >= 0, d
            assert any("not entirely direct" in w for w in rep["warnings"])
        finally:
            prov.destroy(mnt)


@pytest.mark.root
def test_ext4_does_512_byte_direct_requests_directly(scratch):
    with Provisioner(scratch) as prov:
        mnt = prov.create(TargetSpec(kind="loop", size_bytes=256 * MiB), FsConfig(name="ext4"))
        try:
            out = mnt.path + "/../run.json"
            r = fsmeter(
                "run", "fileserver", "--dir", mnt.path, "-q", "--json", out, *sum((["--set", s] for s in SMALL), [])
            )
            assert r.returncode == 0, r.stderr
            d = json.loads(open(out).read())["phases"]["run"]["extra"]["direct_io"]
            assert d["offset_align"] == 512 and d["align_source"] == "statx STATX_DIOALIGN", d
            assert d["buffered_fallback_possible"] is False and d["page_cache_pages_added"] == 0, d
            assert "O_DIRECT, truly direct" in r.stdout
        finally:
            prov.destroy(mnt)


@pytest.mark.root
def test_direct_layout_writes_the_files_past_the_page_cache(scratch):
    """direct_layout: prepare writes O_DIRECT (as IOR's write phase leaves its files), so none of
    the layout stays in the page cache; the default buffered layout leaves it there (clean, after
    its fsync) until the cache is reset."""
    with Provisioner(scratch) as prov:
        mnt = prov.create(TargetSpec(kind="loop", size_bytes=256 * MiB), FsConfig(name="ext4"))
        try:
            layouts = {}
            for direct_layout in (False, True):
                job = build_job(
                    load_workload("seq-read"),
                    mnt.path,
                    parse_set(SMALL + [f"direct_layout={str(direct_layout).lower()}"]),
                )
                s = EngineSession(job.engine_json())
                try:
                    layouts[direct_layout] = s.run_phase("prepare")["counters"]
                finally:
                    s.run_phase("cleanup")
            assert layouts[True]["direct_layout"] == 1 and layouts[True]["layout_cached_pages"] == 0, layouts
            # 8 MiB of 4 KiB pages: the buffered layout stays cached (all of it, on an idle machine).
            assert layouts[False]["direct_layout"] == 0 and layouts[False]["layout_cached_pages"] > 1024, layouts
        finally:
            prov.destroy(mnt)


@pytest.mark.parametrize(
    "sets, field",
    [
        (["direct_layout=true", "file_size=1000000"], "file_size: 1000000 bytes: with direct_layout"),
        (["direct_layout=true", "verify=crc32c"], "direct_layout: cannot be combined with verify"),
    ],
)
def test_direct_layout_bad_input_names_the_field(tmp_path, sets, field):
    r = fsmeter("run", "seq-read", "--dir", tmp_path, "-q", *sum((["--set", s] for s in sets), []))
    assert r.returncode == 2, r.stdout + r.stderr
    err = r.stderr.strip()
    assert field in err and "Traceback" not in err and len(err.splitlines()) == 1, err
