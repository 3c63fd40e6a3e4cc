"""fio options the access engine carries out: trims (hole punches), random_distribution, buffer_pattern and
verify, as job-file options and as the access workload's own parameters."""

from __future__ import annotations

import json
import os

import pytest
from fsmeter.errors import UserError
from fsmeter.families.access import AccessParams
from fsmeter.families.access_params import parse_buffer_pattern
from fsmeter_cli import fsm, job_of, run_jobfile


# -- the mapping ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "rw,random_pct,then_write,total",
    [
        ("trim", 0, False, 1 << 20),
        ("randtrim", 100, False, 1 << 20),
        ("trimwrite", 0, True, 2 << 20),
        ("randtrimwrite", 100, True, 2 << 20),
    ],
)
def test_trim_patterns_map_to_hole_punches_with_fios_byte_counts(rw, random_pct, then_write, total):
    # fio (ioengine=null, size=1m, bs=4k) issues 256 trims for trim/randtrim, and 256 trims plus 256 writes
    # of the same ranges for trimwrite/randtrimwrite.
    m = job_of(f"[a]\nsize=1m\nbs=4k\nrw={rw}\n")
    (e,) = m.params["entries"]
    assert (e["size"], e["read_pct"], e["trim_pct"], e["random_pct"]) == (4096, 0.0, 100.0, random_pct)
    assert bool(m.params.get("trim_then_write")) is then_write
    assert m.params["total_bytes"] == total
    assert any("hole punched" in n for n in m.notes)


def test_trims_take_fios_trim_block_size():
    # bs=R,W,T; a missing value is filled forward (bs=8k,32k trims with 32k).
    assert job_of("[a]\nsize=1m\nbs=8k,16k,64k\nrw=trim\n").params["entries"][0]["size"] == 64 << 10
    assert job_of("[a]\nsize=1m\nbs=8k,32k\nrw=trim\n").params["entries"][0]["size"] == 32 << 10


def test_trims_take_bssplit_and_bsrange_as_fio_fills_them():
    # fio's t/jobs t0023: one list or range serves reads, writes and trims; a third is the trims'; a missing one
    # is the write's (filled forward, as bs= is).
    def sizes(text):
        return [
            (e["size"], round(e["weight"], 3))
            for e in job_of(f"[a]\nsize=1m\nrw=randtrimwrite\n{text}\n").params["entries"]
        ]

    assert sizes("bssplit=512/25:1k/:2k/:4k/") == [(512, 25), (1024, 25), (2048, 25), (4096, 25)]
    assert sizes("bssplit=4k/100,8k/50:16k/50") == [(8192, 50), (16384, 50)]
    assert sizes("bssplit=4k/100,8k/100,1k/100") == [(1024, 100)]
    # bsrange=512-2k: fio draws 512 + 2048 x u rounded down to a multiple of 512, capped at 2048.
    assert sizes("bsrange=512-2k") == [(512, 25), (1024, 25), (1536, 25), (2048, 25)]
    assert sizes("bsrange=1k-1k,512-1k") == [(512, 50), (1024, 50)]
    m = job_of("[a]\nsize=1m\nrw=randtrimwrite\nbssplit=512/25:1k/:2k/:4k/\n")
    assert all(e["trim_pct"] == 100.0 for e in m.params["entries"]) and m.params["trim_then_write"]


@pytest.mark.parametrize(
    "value,want",
    [
        ("zipf:1.2", "zipf:1.2"),
        ("pareto:0.3:0.5", "pareto:0.3:0.5"),
        ("normal:5", "normal:5"),
        ("gauss:2:0.1", "gauss:2:0.1"),
    ],
)
def test_random_distribution_maps_and_turns_the_random_map_off(value, want):
    m = job_of(f"[a]\nsize=1m\nbs=4k\nrw=randread\nrandom_distribution={value}\n")
    assert m.params["random_distribution"] == want
    assert not m.params.get("random_map")
    # fio draws with replacement here, so it does the whole io_size (256 requests), not one pass of a map.
    assert m.params["total_bytes"] == 1 << 20


@pytest.mark.parametrize(
    "text,pattern",
    [
        ("random_distribution=zipf:1\n", r"^t.fio line 5: random_distribution=zipf:1: .*theta must be > 0 and not 1"),
        ("random_distribution=pareto:1.5\n", r"^t.fio line 5: random_distribution=pareto:1.5: .*between 0 and 1"),
        ("random_distribution=normal:5:2\n", r"^t.fio line 5: .*center must be between 0 and 1"),
        (
            "random_distribution=zoned:60/10:30/90\n",
            r"^t.fio line 5: random_distribution=zoned:60/10:30/90: .*add up to "
            "90, not 100",
        ),
        (
            "verify=sha512\nverify_interval=64\n",
            r"^t.fio line 6: verify_interval=64: with verify=sha512, each 64-byte "
            r"block must hold fsmeter's 112-byte header and data",
        ),
        ("verify=sha384\n", r"^t.fio line 5: verify=sha384: fsmeter's verification has .*not sha384"),
        ("verify=pattern\n", r"^t.fio line 5: verify=pattern: .*not pattern"),
        (
            "verify_pattern=0xff\nverify=md5\n",
            r"^t.fio line 5: verify_pattern=0xff: with verify=md5 .*not supported by "
            "fsmeter yet",
        ),
        ("buffer_pattern='file'\n", r"^t.fio line 5: buffer_pattern='file': a file's contents"),
        ("buffer_pattern=zz\n", r"^t.fio line 5: buffer_pattern=zz: cannot read 'zz'"),
    ],
)
def test_bad_values_name_the_job_file_line_and_option(text, pattern):
    with pytest.raises(UserError, match=pattern) as exc:
        job_of("[a]\nsize=1m\nbs=4k\nrw=randwrite\n" + text)
    assert "\n" not in exc.value.message


@pytest.mark.parametrize(
    "method,want",
    [
        ("crc32c", "crc32c"),
        ("crc32c-intel", "crc32c"),
        ("xxhash", "xxh3"),
        ("sha256", "sha256"),
        ("md5", "md5"),
        ("crc64", "crc64"),
        ("meta", "crc32c"),
    ],
)
def test_verify_maps_onto_fsmeters_own_checksums(method, want):
    m = job_of(f"[a]\nsize=1m\nbs=4k\nrw=randwrite\nverify={method}\nverify_interval=1k\n")
    assert m.params["verify"] == want and m.params["verify_block"] == 1024
    assert m.params["reuse_files"] is False
    AccessParams(**m.params)  # the access workload takes it as mapped
    assert "verify" not in job_of(f"[a]\nsize=1m\nrw=write\nverify={method}\ndo_verify=0\n").params


def test_buffer_pattern_is_read_in_fios_forms():
    # Hand-checked: hex bytes in written order (an odd digit count puts the lone digit first), decimals as their
    # 32-bit value's bytes, least significant first, up to the last non-zero one (-12 = 0xfffffff4), strings as is.
    assert parse_buffer_pattern("0xdeadface") == bytes([0xDE, 0xAD, 0xFA, 0xCE])
    assert parse_buffer_pattern("0xabc") == bytes([0x0A, 0xBC])
    assert parse_buffer_pattern("-12") == bytes([0xF4, 0xFF, 0xFF, 0xFF])
    assert parse_buffer_pattern("258") == bytes([0x02, 0x01])
    assert parse_buffer_pattern("0") == b"\0"
    assert parse_buffer_pattern('0xff0x14"ab"-12') == bytes([0xFF, 0x14]) + b"ab" + bytes([0xF4, 0xFF, 0xFF, 0xFF])
    m = job_of('[a]\nsize=1m\nrw=write\nbuffer_pattern="xy"\n')
    assert AccessParams(**m.params).engine_spec()["buffer_pattern"] == [ord("x"), ord("y")]


@pytest.mark.parametrize(
    "text, fio_wrote",
    [
        # The first bytes of the file fio 3.33 wrote with rw=write and this buffer_pattern (xxd), recorded from
        # fio, not derived: a decimal number ends at the next 0x (fio's t/jobs t0028 is the first).
        ('"abcd"-120xdeadface', "61626364f4ffffffdeadface"),
        ('10x5"z"', "01057a"),
        ("0xf00x1", "f001"),
    ],
)
def test_buffer_pattern_reads_a_decimal_up_to_the_next_hex_as_fio(text, fio_wrote):
    assert parse_buffer_pattern(text) == bytes.fromhex(fio_wrote)
    m = job_of(f"[test]\nsize=16k\nreadwrite=write\nbuffer_pattern={text}\n")
    assert AccessParams(**m.params).engine_spec()["buffer_pattern"] == list(bytes.fromhex(fio_wrote))


def test_access_parameters_refuse_what_the_engine_would():
    base = {"entries": [{"size": 4096, "weight": 100, "read_pct": 50}]}
    for extra, field in [
        ({"random_distribution": "zipf:0"}, "random_distribution"),
        ({"random_distribution": "zipf:1.2", "random_map": True, "alignment": 4096}, "random_map"),
        ({"entries": [{"size": 4096, "weight": 100, "read_pct": 80, "trim_pct": 30}]}, "trim_pct"),
        ({"trim_then_write": True}, "trim_then_write"),
        ({"buffer_pattern": "0xgg"}, "buffer_pattern"),
    ]:
        with pytest.raises(ValueError, match=field):
            AccessParams(**{**base, **extra})


# -- end to end ----------------------------------------------------------------------------------------------------
def test_a_trim_job_punches_the_file_and_reports_trims_apart(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    f = tmp_path / "t.fio"
    f.write_text(
        "[global]\nsize=1m\nbs=4k\n[punch]\nfilename=data\nrw=trim\n"
        "[tw]\nstonewall\nfilename=data2\nrw=randtrimwrite\nbuffer_pattern=0x5aa5\n"
    )
    out = tmp_path / "r.json"
    r = fsm("run", f, "--dir", work, "--json", out, "--keep-files", "-q")
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    ops = doc["phases"]["punch:run"]["ops"]
    assert set(ops) == {"trim"} and ops["trim"]["count"] == 256 and ops["trim"]["bytes"] == 1 << 20
    st = os.stat(work / "data")
    assert st.st_size == 1 << 20 and st.st_blocks == 0
    assert (work / "data").read_bytes() == bytes(1 << 20)
    ops = doc["phases"]["tw:run"]["ops"]
    assert ops["trim"]["count"] == ops["write"]["count"] == 256
    assert (work / "data2").read_bytes() == bytes([0x5A, 0xA5]) * (1 << 19)


@pytest.mark.parametrize(
    "job, fio_pairs, fio_bytes",
    [
        # Recorded from fio 3.33 (ioengine=null, filesize=1M, rw=randtrimwrite): with norandommap the trim
        # that reaches the megabyte is still followed by the write of its range, so trims and writes pair up.
        ("bs=3k\nnorandommap=1", 342, 1050624),
        ("bs=3k", 341, 1047552),
    ],
)
def test_trimwrite_writes_the_range_of_the_trim_that_reached_the_size(tmp_path, job, fio_pairs, fio_bytes):
    doc = run_jobfile(tmp_path, f"[tw]\nfilesize=1M\nrw=randtrimwrite\nrandrepeat=0\n{job}\n")
    ops = doc["phases"]["tw:run"]["ops"]
    assert (ops["trim"]["count"], ops["trim"]["bytes"]) == (fio_pairs, fio_bytes)
    assert (ops["write"]["count"], ops["write"]["bytes"]) == (fio_pairs, fio_bytes)


def test_trimwrite_pairs_every_trim_with_its_write(tmp_path):
    # fio 3.33 on t0023's [bsrange_no_rm] job: 447 trims and 447 writes of 1,050,112 bytes each; its counts are
    # drawn, its pairs always whole. With these seeds the trim that reaches the megabyte is not the last request
    # of a pair (fsmeter stopped there, one write short, until 2026-11-29).
    jobs = "".join(f"[s{n}]\nrandseed={n}\n" for n in (1, 2, 3))
    doc = run_jobfile(tmp_path, f"[global]\nfilesize=1M\nrw=randtrimwrite\nnorandommap=1\nbsrange=512-4k\n{jobs}")
    for name, job in doc["phases"]["group0:run"]["jobs"].items():
        ops = job["ops"]
        assert ops["trim"]["count"] == ops["write"]["count"], name
        assert ops["trim"]["bytes"] == ops["write"]["bytes"] >= 1 << 20, name


def test_trimwrite_with_bssplit_moves_fios_bytes(tmp_path):
    # t0023's [bssplit] job: fio 3.33 trims and writes 1,048,576 bytes each (its counts are drawn: 694 to 791 in
    # four runs of fio here), every write the size of the trim before it.
    doc = run_jobfile(tmp_path, "[ts]\nfilesize=1M\nrw=randtrimwrite\nrandrepeat=0\nbssplit=512/25:1k/:2k/:4k/\n")
    ops = doc["phases"]["ts:run"]["ops"]
    assert ops["trim"]["bytes"] == ops["write"]["bytes"] == 1 << 20
    assert ops["trim"]["count"] == ops["write"]["count"] > 1 << 20 >> 12


def test_set_random_distribution_on_a_named_workload(tmp_path):
    out = tmp_path / "r.json"
    r = fsm(
        "run",
        "rand-read-4k",
        "--dir",
        tmp_path,
        "--json",
        out,
        "-q",
        "--set",
        "random_distribution=zipf:1.2",
        "--set",
        "file_size=8M",
        "--set",
        "duration_s=0.3",
        "--set",
        "warmup_s=0",
    )
    assert r.returncode == 0, r.stderr
    run = json.loads(out.read_text())["phases"]["run"]
    assert run["extra"]["random_distribution"] == "zipf:1.2" and run["ops"]["read"]["count"] > 0
    r = fsm("run", "rand-read-4k", "--dir", tmp_path, "-q", "--set", "random_distribution=zipf:1")
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0
    assert "random_distribution" in r.stderr and "Traceback" not in r.stderr


def test_fio_json_export_carries_trims_in_their_own_direction():
    from fsmeter.interop.fio_export import fio_job

    lat = {
        "count": 4,
        "mean_ns": 2000.0,
        "min_ns": 1000,
        "max_ns": 3000,
        "p50_ns": 2000,
        "p90_ns": 3000,
        "p99_ns": 3000,
        "p99_9_ns": 3000,
        "buckets": [[2048, 2], [4096, 2]],
    }
    report = {
        "elapsed_s": 2.0,
        "warmup_s": 0.0,
        "intervals": [],
        "ops": {"trim": {"count": 4, "bytes": 16384, "ops_per_s": 2.0, "bytes_per_s": 8192.0, "lat": lat}},
    }
    job = fio_job("punch", 0, {}, [report], False)
    assert (job["trim"]["total_ios"], job["trim"]["io_bytes"], job["trim"]["bw_bytes"]) == (4, 16384, 8192)
    assert job["read"]["total_ios"] == job["write"]["total_ios"] == 0


def test_random_generator_is_accepted_with_a_note_and_checked():
    m = job_of("[a]\nsize=1m\nrw=randread\nrandom_generator=lfsr\n")
    assert any("random_generator=lfsr" in n for n in m.notes)
    with pytest.raises(UserError, match=r"^t.fio line 4: random_generator=mt: use tausworthe, lfsr or tausworthe64"):
        job_of("[a]\nsize=1m\nrw=randread\nrandom_generator=mt\n")
