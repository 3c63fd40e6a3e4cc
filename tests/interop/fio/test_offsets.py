"""Where fio job files send their I/O: zoned and zoned_abs distributions, strided zones (zonemode=strided),
offset modifiers (rw=read:-8k, rw=write:112k) and the sequence distribution, mapped with fio's meanings and
byte counts; and the one-line refusals of what fsmeter does not do (zoned devices, sprandom on sequential writes, verify_pattern,
verify_backlog without verify, atomic writes on a synchronous engine, dedupe options without
dedupe_percentage). The offsets themselves are checked against fio's definitions in
the engine (crates/engine/tests/access_shapes.rs); here a zoned trim job's holes show the shape on disk."""

from __future__ import annotations

import json

import pytest
from fsmeter.errors import UserError
from fsmeter.families.access import AccessParams
from fsmeter.families.access_params import format_zoned, parse_zoned
from fsmeter_cli import fsm, job_of


def refused(text: str, pattern: str) -> str:
    with pytest.raises(UserError, match=pattern) as exc:
        job_of(text)
    assert "\n" not in exc.value.message
    return exc.value.message


# -- zoned distributions ------------------------------------------------------------------------------------------
def test_zoned_lists_are_read_as_fio_reads_them():
    # rand-zones.fio: the last zone's size left out takes what is left (80%), for every direction.
    absolute, dirs = parse_zoned("zoned:50/5:30/15:20/")
    assert not absolute and dirs == [[[50, 5], [30, 15], [20, 80]]] * 3
    # READS,WRITES: trims take the writes' list; two sizes left out share the rest in whole percents.
    _, dirs = parse_zoned("zoned:50/5:30/15:20/,60/10:20:20")
    assert dirs[1] == dirs[2] == [[60, 10], [20, 45], [20, 45]]
    assert format_zoned(*parse_zoned("zoned:100/")) == "zoned:100/100,100/100,100/100"
    for bad in ("zoned:50/5:30/15", "zoned:50/60:50/60", "zoned:x/5:100/", "zoned_abs:50/1g:50/", "zoned:"):
        with pytest.raises(ValueError):
            parse_zoned(bad)


def test_a_zoned_job_maps_with_fios_sizes_and_byte_count():
    m = job_of("[z]\nsize=64m\nbs=4k\nrw=randread\nnorandommap\nrandom_distribution=zoned:50/5:30/15:20/\n")
    assert m.params["random_distribution"] == "zoned:50/5:30/15:20/80,50/5:30/15:20/80,50/5:30/15:20/80"
    assert m.params["total_bytes"] == 64 << 20 and not m.params.get("random_map")
    assert any("fio's zones" in n for n in m.notes)
    # zoned_abs sizes in the job file's units (kb_base), also in the zoned_abs= form of fio's documentation.
    m = job_of("[z]\nsize=64m\nrw=randwrite\nrandom_distribution=zoned_abs=60/1m:40/10m\n")
    assert m.params["random_distribution"] == "zoned_abs:" + ",".join(["60/1048576:40/10485760"] * 3)
    # The access workload takes the same form (and refuses what the engine would).
    AccessParams(entries=[{"size": 4096, "weight": 100, "read_pct": 100}], random_distribution="zoned:80/10:20/")
    with pytest.raises(ValueError, match="add up to 90"):
        AccessParams(entries=[{"size": 4096, "weight": 100, "read_pct": 100}], random_distribution="zoned:80/10:10/")


@pytest.mark.parametrize(
    "text,pattern",
    [
        ("random_distribution=zoned:60/10:30/90\n", r"line 5: random_distribution=zoned:60/10:30/90: .*add up to 90"),
        (
            "random_distribution=zoned_abs:50/1m:50/2m\n",
            r"line 5: random_distribution=zoned_abs:50/1m:50/2m: the zones "
            r"cover 3145728 bytes, more than the 1048576-byte file",
        ),
        (
            "random_distribution=sequence:2,300\n",
            r"line 5: random_distribution=sequence:2,300: block 300 is beyond the "
            r"file's 256 blocks",
        ),
        ("random_sequence_stride=1\n", r"line 5: random_sequence_stride=1: only with random_distribution=sequence"),
    ],
)
def test_bad_shapes_name_the_line_and_option(text, pattern):
    refused("[a]\nsize=1m\nbs=4k\nrw=randread\n" + text, pattern)


def test_a_zoned_trim_job_punches_its_holes_where_the_zones_say(tmp_path):
    # 4 MiB = 1024 blocks; 80% of 256 random trims in the first 10% of the file (blocks 0..101, fio's
    # 1024 * 10 / 100), 20% in the other 90% (blocks 102..1022). Each trim punches one 4 KiB block.
    # Expected distinct punched blocks: zone 1: 102 (1 - (1 - 1/102)^204.8) = 88; zone 2: about 50
    # (51 trims over 921 blocks rarely meet). Bounds: 4 binomial sd of the trims per zone (sd 6.4).
    work = tmp_path / "w"
    work.mkdir()
    f = tmp_path / "z.fio"
    f.write_text(
        "[z]\nfilename=data\nsize=4m\nio_size=1m\nbs=4k\nrw=randtrim\nnorandommap\n"
        "random_distribution=zoned:80/10:20/90\n"
    )
    out = tmp_path / "r.json"
    r = fsm("run", f, "--dir", work, "--json", out, "--keep-files", "-q")
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["phases"]["z:run"]["ops"]["trim"]["count"] == 256
    data = (work / "data").read_bytes()
    zero = bytes(4096)
    holes = [data[i * 4096 : (i + 1) * 4096] == zero for i in range(1024)]
    first, rest = sum(holes[:102]), sum(holes[102:])
    assert 70 <= first <= 102, (first, rest)
    assert 24 <= rest <= 76, (first, rest)
    assert first / 102 > 5 * rest / 922, "the first zone is not the hot one"


# -- strided zones ------------------------------------------------------------------------------------------------
def test_strided_zones_map_and_zoned_devices_stay_refused():
    m = job_of("[z]\nsize=4m\nbs=64k\nrw=read\nzonemode=strided\nzonesize=256k\nzoneskip=1m\n")
    assert (m.params["zone_size"], m.params["zone_range"], m.params["zone_skip"]) == (256 << 10, 256 << 10, 1 << 20)
    # fio wraps to the first zone and goes on until the job's bytes are done: the whole size, not one pass.
    assert m.params["total_bytes"] == 4 << 20
    # zonesize alone means strided zones, as in fio.
    assert job_of("[z]\nsize=4m\nbs=64k\nzonesize=1m\nzoneskip=1m\n").params["zone_size"] == 1 << 20
    # A zone larger than the file (disk-zone-profile.fio scaled down): fio reads the file and starts again.
    m = job_of("[z]\nsize=64m\nbs=64k\nrw=read\nzonemode=strided\nzonesize=256m\nzoneskip=2g\n")
    assert m.params["zone_size"] == 256 << 20 and m.params["total_bytes"] == 64 << 20
    # Several files per job: fio turns the zones off, and so does fsmeter, saying so.
    m = job_of("[z]\nsize=4m\nnrfiles=2\nbs=64k\nrw=read\nzonemode=strided\nzonesize=1m\n")
    assert "zone_size" not in m.params and any("turns strided zones off" in n for n in m.notes)
    refused(
        "[z]\nsize=4m\nrw=randread\nzonemode=strided\nzonesize=1m\n",
        r"line 4: zonemode=strided: random "
        r"requests in strided zones with fio's random map",
    )
    refused(
        "[z]\nsize=4m\nzonemode=zbd\n",
        r"^t.fio line 3: zonemode=zbd: zoned block devices are not supported and "
        r"fsmeter will not support them",
    )
    refused("[z]\nsize=4m\nmax_open_zones=4\n", r"line 3: option max_open_zones is not supported .*zoned block")


# -- offset modifiers ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "rw,bs,size,add",
    [
        ("read:-8k", "4k", "128k", -8192),  # backwards-read.fio: from the end down, round again
        ("write:112k", "16k", "1m", 112 << 10),  # cross-stripe-verify.fio: 8 writes a pass, again from the start
        ("read:8k", "4k", "38k", 8192),  # 0, 12k, 24k, then 36k would not fit: fio 3.33 starts again at 0
        ("read:-2k", "4k", "32k", -2048),  # overlapping steps forward by 2k, then again from 0
    ],
)
def test_offset_modifiers_do_fios_count(rw, bs, size, add):
    # fio never stops early here: where a request would not fit it starts the file again (its I/O log shows
    # 0 12k 24k 0 12k ... for read:8k on 38k), so the job does io_size in whole requests.
    m = job_of(f"[a]\nrw={rw}\nbs={bs}\nsize={size}\nio_size=128k\n")
    assert m.params["seq_add"] == add
    assert m.params["total_bytes"] == 128 << 10


def test_a_backwards_read_runs_and_reads_its_size(tmp_path):
    f = tmp_path / "b.fio"
    f.write_text("[back]\nfilename=data\nbs=4k\nrw=read:-8k\nsize=1m\n")
    out = tmp_path / "r.json"
    r = fsm("run", f, "--dir", tmp_path, "--json", out, "-q")
    assert r.returncode == 0, r.stderr
    ops = json.loads(out.read_text())["phases"]["back:run"]["ops"]
    assert ops["read"]["count"] == 256 and ops["read"]["bytes"] == 1 << 20


# -- the sequence distribution ------------------------------------------------------------------------------------
def test_the_sequence_distribution_stops_where_fio_does():
    # sequence-distribution.fio: 48k file, 24k of I/O: 6 requests either way.
    base = "[a]\nioengine=null\nrw=randread\nbs=4k\nsize=48k\nio_size=24k\nrandom_distribution=sequence:2,0,1\n"
    assert job_of(base).params["total_bytes"] == 24 << 10
    m = job_of(base + "random_sequence_stride=1\n")
    assert m.params["random_sequence_stride"] and m.params["total_bytes"] == 24 << 10
    # With the stride the walk reaches block 12 (past the 12 blocks) at its 13th request: 12 requests at most.
    m = job_of(base.replace("io_size=24k", "io_size=1m") + "random_sequence_stride=1\n")
    assert m.params["total_bytes"] == 12 * 4096
    # Without it the blocks repeat until the bytes are done.
    assert job_of(base.replace("io_size=24k", "io_size=1m")).params["total_bytes"] == 1 << 20


# -- verify_pattern ------------------------------------------------------------------------------------------------
def test_verify_pattern_maps_as_fios_verify_pattern():
    m = job_of("[w]\nsize=1m\nbs=64k\nrw=write\nverify_pattern=0xaa555aa5\n")
    assert m.params["verify_pattern"] == "0xaa555aa5"
    # do_verify=0: fio writes the pattern and checks nothing (surface-scan.fio's write phase).
    m = job_of("[w]\nsize=1m\nbs=64k\nrw=write\nverify_pattern=0xaa555aa5\ndo_verify=0\n")
    assert m.params["buffer_pattern"] == "0xaa555aa5" and "verify_pattern" not in m.params


def test_verify_pattern_is_written_checked_and_a_corrupted_byte_is_caught(tmp_path):
    # A write job lays the file out and writes the pattern; its verify phase re-reads every byte. A read job on
    # the same file then checks every read; one byte changed between the two is reported, by offset.
    work = tmp_path / "w"
    work.mkdir()
    pattern = bytes([0xAA, 0x55, 0x5A, 0xA5])
    f = tmp_path / "p.fio"
    f.write_text("[w]\nfilename=data\nsize=1m\nbs=64k\nrw=randwrite\nverify_pattern=0xaa555aa5\n")
    out = tmp_path / "w.json"
    r = fsm("run", f, "--dir", work, "--json", out, "--keep-files", "-q")
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert (work / "data").read_bytes() == pattern * (1 << 18)
    ver = doc["phases"]["w:verify"]
    assert ver["counters"]["verify_mismatches"] == 0 and ver["counters"]["verify_blocks_checked"] == 1
    # Corrupt one byte and read the file back with the pattern checked.
    with open(work / "data", "r+b") as fh:
        fh.seek(300_001)
        fh.write(b"\x00")
    g = tmp_path / "r.fio"
    g.write_text("[r]\nfilename=data\nsize=1m\nbs=4k\nrw=read\nverify_pattern=0xaa555aa5\n")
    out = tmp_path / "r.json"
    r = fsm("run", g, "--dir", work, "--json", out, "-q")
    doc = json.loads(out.read_text())
    run = doc["phases"]["r:run"]
    assert run["counters"]["verify_mismatches"] == 1, run["counters"]
    (m,) = run["extra"]["verify"]["mismatches"]
    assert m["first_diff_offset"] == 300_001 and m["phase"] == "run"
    assert run["counters"]["verify_blocks_checked"] == 256
    assert "corrupt" in (r.stdout + r.stderr).lower() or r.returncode != 0


# -- refused, one line each ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,pattern",
    [
        ("sprandom=1\n", r"line 5: sprandom=1: fio's sprandom needs random writes only: write rw=randwrite"),
        (
            "verify=sha1\nverify_pattern=0xaa555aa5\n",
            r"line 6: verify_pattern=0xaa555aa5: with verify=sha1 \(fio: sha1's "
            r"header and the pattern",
        ),
        ('verify_pattern="abc"\n', r"line 5: verify_pattern=\"abc\": its 3 bytes do not divide a request size"),
        ("atomic=1\n", r"line 5: atomic=1: ioengine=psync issues no untorn writes \(fio refuses it too\)"),
        ("dedupe_mode=working_set\n", r"line 5: dedupe_mode=working_set: has no effect without dedupe_percentage"),
    ],
)
def test_what_fsmeter_does_not_do_is_refused_saying_why(text, pattern):
    refused("[a]\nsize=1m\nbs=4k\nrw=write\n" + text, pattern)
