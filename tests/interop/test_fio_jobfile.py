"""fio job files in: parsing as fio parses (checked against fio --parse-only and real fio runs), the option
mapping, and the one-line refusal of everything else."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import repo_paths
from fsmeter.errors import UserError
from fsmeter.interop.fio.job import map_job
from fsmeter.interop.fio.load import map_jobfile
from fsmeter.interop.fio_jobfile import parse_fio_range, parse_fio_size, parse_fio_time_s, parse_jobfile
from hypothesis import given
from hypothesis import strategies as st

DATA = repo_paths.DATA / "fio"
JOBFILES = sorted(DATA.glob("*.fio"))
ENV = {"FSM_SIZE": "16m"}


def fsm(*args, env=None, cwd=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


def jobs_of(text: str, env=None):
    return [map_job("t.fio", j, i) for i, j in enumerate(parse_jobfile(text, "t.fio", env or {}).jobs)]


# -- fio's number syntax -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,want",
    [
        ("4096", 4096),
        ("4k", 4096),
        ("4K", 4096),
        ("4kb", 4096),
        ("4kB", 4096),
        ("4ki", 4096),
        ("1m", 1 << 20),
        ("1g", 1 << 30),
        ("0x1000", 4096),
        ("4b", 4),
        # kb_base=1024 is fio's compatibility mode: the IEC spellings are powers of 1000 (checked with fio 3.33).
        ("4KiB", 4000),
        ("1mib", 1_000_000),
    ],
)
def test_sizes_read_as_fio_reads_them(text, want):
    assert parse_fio_size(text) == want


def test_kb_base_1000_swaps_the_prefixes():
    assert parse_fio_size("4k", 1000) == 4000 and parse_fio_size("4KiB", 1000) == 4096


@given(st.integers(0, 1 << 20), st.sampled_from(["", "k", "m", "g", "K", "M", "kb", "MB", "ki"]))
def test_size_suffix_property(n, suffix):
    mult = {"": 1, "k": 1024, "m": 1 << 20, "g": 1 << 30}[suffix[:1].lower()]
    assert parse_fio_size(f"{n}{suffix}") == n * mult


@pytest.mark.parametrize("bad", ["1.5m", "4x", "(1+1)k", "k", "10%", ""])
def test_sizes_fio_would_not_read_the_same_are_refused(bad):
    with pytest.raises(ValueError):
        parse_fio_size(bad)


def test_times_and_ranges():
    assert parse_fio_time_s("30") == 30 and parse_fio_time_s("2m") == 120 and parse_fio_time_s("500ms") == 0.5
    assert parse_fio_range("4k-1k") == (1024, 4096) and parse_fio_range("1k:4k") == (1024, 4096)


# -- the file format -----------------------------------------------------------------------------------------------
def test_sections_comments_global_and_env():
    jf = parse_jobfile(
        "; top\n# also\n[global]\nbs = 8k   # inline\nsize=${S}\n[a]\nrw=read\n"
        "[global]\nbs=16k\n[b]\nname=bee\nrw=write;x\nstonewall\n",
        "t.fio",
        {"S": "1m"},
    )
    a, b = jf.jobs
    assert (a.name, a.get("bs").value, a.get("size").value, a.get("rw").value) == ("a", "8k", "1m", "read")
    # A later [global] changes the defaults of the jobs after it only; name= renames the job.
    assert (b.name, b.get("bs").value, b.get("rw").value, b.get("stonewall").value) == ("bee", "16k", "write", None)
    assert a.get("bs").line == 4 and b.get("rw").line == 12


@pytest.mark.parametrize(
    "text,pattern",
    [
        ("[${NOPE}]\nsize=1m\n", r"t.fio line 1: \$\{NOPE\} is not set"),
        ("size=1m\n[a]\n", "t.fio line 1: option 'size=1m' outside of a \\[job\\] section"),
        ("[a\n", "line 1: '\\[a' is not a section header"),
        ("# nothing\n", "no job section"),
    ],
)
def test_format_errors_name_the_line(text, pattern):
    with pytest.raises(UserError, match=pattern):
        parse_jobfile(text, "t.fio", {})


# -- the mapping ---------------------------------------------------------------------------------------------------
def test_mapping_of_a_mixed_job():
    (m,) = jobs_of(
        "[global]\nioengine=libaio\niodepth=16\ndirect=1\n[db]\nrw=randrw\nrwmixwrite=30\n"
        "bssplit=4k/50:8k/:16k/\nsize=64m\nnumjobs=2\nfsync=8\nend_fsync=1\nramp_time=2\n"
        "randseed=7\nnorandommap\noffset=1m\n"
    )
    p, s = m.params, m.settings
    assert s == {"threads": 2, "seed": 7, "backend": "libaio"}
    assert [(e["size"], e["weight"], e["read_pct"], e["random_pct"]) for e in p["entries"]] == [
        (4096, 50.0, 70.0, 100.0),
        (8192, 25.0, 70.0, 100.0),
        (16384, 25.0, 70.0, 100.0),
    ]
    assert p["queue_depth"] == 16 and p["direct"] and p["fsync_every"] == 8 and p["fsync_end"]
    assert p["warmup_s"] == 2 and p["offset"] == 1 << 20 and p["alignment"] == 4096
    assert p["file_names"] == ["db.0.0", "db.1.0"] and p["thread_files"] and p["file_size"] == 64 << 20
    assert p["total_bytes"] == 2 * (64 << 20) and p["duration_s"] is None


def test_mapping_of_per_direction_sizes_time_based_and_shared_files():
    (m,) = jobs_of(
        "[seq]\nrw=rw\nrwmixread=60\nbs=16k,32k\nfilename=a:b\ndirectory=sub\nsize=8m\n"
        "time_based\nruntime=1m\nnumjobs=2\n"
    )
    p = m.params
    assert [(e["size"], e["weight"], e["read_pct"], e["random_pct"]) for e in p["entries"]] == [
        (16384, 60.0, 100.0, 0.0),
        (32768, 40.0, 0.0, 0.0),
    ]
    assert p["file_names"] == ["sub/a", "sub/b"] and not p["thread_files"] and p["file_size"] == 4 << 20
    assert p["duration_s"] == 60 and p["total_bytes"] is None


def test_whole_requests_as_fio_counts_them():
    """fio ends a sequential pass at the end of the file and never issues a partial request."""
    (m,) = jobs_of("[w]\nrw=write\nbs=64KiB\nsize=16m\n")
    assert m.params["entries"][0]["size"] == 64000 and m.params["total_bytes"] == 262 * 64000


def test_random_map_unless_norandommap_or_sizes_fio_cannot_map():
    (m,) = jobs_of("[a]\nrw=randread\nbs=8k\nsize=1m\n")
    assert m.params.get("random_map") is True and m.params["alignment"] == 8192
    (m,) = jobs_of("[a]\nrw=randread\nbs=8k\nsize=1m\nnorandommap\n")
    assert not m.params.get("random_map")
    # Several sizes, multiples of the smallest: fio's map of the smallest blocks; io_size beyond the file is
    # more passes (fio 3.33 moves 3 MiB here).
    (m,) = jobs_of("[a]\nrw=randrw\nbssplit=4k/50:8k/50\nsize=1m\nio_size=3m\n")
    assert m.params.get("random_map") is True and m.params["alignment"] == 4096
    assert m.params["total_bytes"] == 3 << 20
    (m,) = jobs_of("[a]\nrw=randrw\nbssplit=4k/50:6k/50\nsize=1m\n")
    assert not m.params.get("random_map") and any("shortens requests" in n for n in m.notes)


def test_sync_engine_caps_the_queue_depth_with_a_note():
    (m,) = jobs_of("[a]\nrw=randread\nsize=1m\niodepth=32\n")
    assert m.params["queue_depth"] == 1 and m.settings["backend"] == "psync"
    assert any("capped at 1" in n for n in m.notes)


@pytest.mark.parametrize(
    "text,pattern",
    [
        (
            "[a]\nsize=1m\nbs=100\nverify=sha3-384\n",
            r"^t.fio line 3: bs=100: with verify=sha3-384, each 100-byte block "
            r"must hold fsmeter's 96-byte header and data",
        ),
        ("[a]\nsize=1m\nzipf=8\n", r"^t.fio line 3: option zipf is not supported by fsmeter yet \(planned\)"),
        (
            "[a]\nsize=1m\nflux_capacitor=1\n",
            r"^t.fio line 3: option flux_capacitor is not supported by fsmeter "
            r"\(not planned\)",
        ),
        (
            "[a]\nsize=1m\nioengine=solarisaio\n",
            r"^t.fio line 3: ioengine=solarisaio: ioengine solarisaio is not supported",
        ),
        ("[a]\nsize=20%\n", r"line 2: size=20%: a percentage of the files' size needs files that exist"),
        ("[a]\nsize=1m\nbs=4k-8k\n", r"line 3: bs=4k-8k: a block size range is not supported by fsmeter \(planned"),
        ("[a]\nsize=1m\ndirectory=../up\n", r"line 3: directory=../up: '..' would leave the job's directory"),
        ("[a]\nrw=read\n", r"line 1: job a: give size="),
        ("[a]\nsize=1m\nbssplit=4k/50:8k/40\n", r"line 3: bssplit=4k/50:8k/40: the percentages add up to 90"),
    ],
)
def test_unsupported_or_bad_options_stop_with_one_line(text, pattern):
    with pytest.raises(UserError, match=pattern) as exc:
        jobs_of(text)
    assert "\n" not in exc.value.message


def test_jobs_without_stonewall_share_a_group(tmp_path):
    f = tmp_path / "two.fio"
    f.write_text("[global]\nsize=1m\n[r]\nrw=read\n[w]\nrw=write\n[s]\nstonewall\nrw=read\n")
    assert [(j.name, j.group) for j in map_jobfile(f)] == [("r", 0), ("w", 0), ("s", 1)]


def test_cli_refusal_is_one_line_exit_2(tmp_path):
    f = tmp_path / "bad.fio"
    f.write_text("[a]\nsize=1m\nrw=read\nzonemode=zbd\n")
    r = fsm("run", f, "--dir", tmp_path, "-q")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr
    assert "line 4: zonemode=zbd: zoned block devices are not supported and fsmeter will not support them" in r.stderr


# -- against real fio ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", JOBFILES, ids=[p.name for p in JOBFILES])
def test_every_test_job_file_is_valid_fio(path):
    r = subprocess.run(["fio", "--parse-only", str(path)], capture_output=True, text=True, env={**os.environ, **ENV})
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def fast_dir(tmp_path_factory):
    """A tmpfs as root (unmounted afterwards), else a temporary directory."""
    base = tmp_path_factory.mktemp("fio-x")
    mnt = base / "tmpfs"
    mnt.mkdir()
    mounted = False
    if os.geteuid() == 0:
        mounted = (
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=1200m", "fsmeter-test", str(mnt)], capture_output=True
            ).returncode
            == 0
        )
    try:
        yield mnt
    finally:
        if mounted:
            subprocess.run(["umount", str(mnt)], capture_output=True)


#: Jobs whose split between reads and writes depends on the random generator: within 2% per direction.
RANDOM_MIX = {"oltp", "mailserver", "seq-mix", "rand-mix"}


@pytest.mark.parametrize("path", JOBFILES, ids=[p.name for p in JOBFILES])
def test_same_work_as_fio(path, fast_dir, tmp_path):
    import json
    import shutil

    for sub in ("fio", "fsm"):
        d = fast_dir / sub
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
    (fast_dir / "fio" / "data").mkdir()  # fio wants directory= to exist; fsmeter creates it
    out = tmp_path / "fio.json"
    r = subprocess.run(
        ["fio", "--output-format=json", f"--output={out}", str(path)],
        cwd=fast_dir / "fio",
        capture_output=True,
        text=True,
        env={**os.environ, **ENV},
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    fio: dict = {}
    for j in json.loads(out.read_text())["jobs"]:  # clones without group_reporting are separate jobs
        acc = fio.setdefault(j["jobname"], {"read": [0, 0], "write": [0, 0]})
        for d in ("read", "write"):
            acc[d][0] += j[d]["io_bytes"]
            acc[d][1] += j[d]["total_ios"]
    shutil.rmtree(fast_dir / "fio")
    res = tmp_path / "fsm.json"
    r = fsm("run", path, "--dir", fast_dir / "fsm", "-q", "--json", res, "--cache", "keep", env=ENV)
    assert r.returncode == 0, r.stderr
    doc = json.loads(res.read_text())
    # Every job's own figures sit under its group's run phase (a lone job is a group of one).
    ran = {n: j for k, p in doc["phases"].items() if k.endswith(":run") for n, j in p["jobs"].items()}
    assert set(ran) == set(fio), (set(ran), set(fio))
    for name, want in fio.items():
        ops = ran[name]["ops"]
        got = {d: [ops.get(d, {}).get("bytes", 0), ops.get(d, {}).get("count", 0)] for d in ("read", "write")}
        tot_got = [got["read"][i] + got["write"][i] for i in (0, 1)]
        tot_want = [want["read"][i] + want["write"][i] for i in (0, 1)]
        if name in RANDOM_MIX:
            for d in ("read", "write"):
                for i in (0, 1):
                    assert got[d][i] == pytest.approx(want[d][i], rel=0.02), (name, d, got, want)
            assert tot_got[0] == pytest.approx(tot_want[0], rel=0.02) and tot_got[1] == pytest.approx(
                tot_want[1], rel=0.02
            ), (name, got, want)
        else:
            assert got == want, (name, got, want)
    shutil.rmtree(fast_dir / "fsm")
