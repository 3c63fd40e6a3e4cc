"""fio's verify=sha512, sha3-384 and sha3-512 in job files: their 64- and 48-byte digests go in fsmeter's version-2
block header (96 or 112 bytes, its length in bytes 6..8), checked here with Python's hashlib; a block too small for
that header is refused in one line naming bs and verify; a torn write is found at its byte; and fio, when installed,
does the same work (bytes written and read back). The header bytes are fsmeter's own, not fio's."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess

import pytest
from fsmeter.errors import UserError
from fsmeter.families.access import AccessParams
from fsmeter_cli import fsm, job_of

#: fio's name -> (fsmeter's name, hashlib's name, digest bytes, header bytes).
LONG = {
    "sha512": ("sha512", "sha512", 64, 112),
    "sha3-384": ("sha3_384", "sha3_384", 48, 96),
    "sha3-512": ("sha3_512", "sha3_512", 64, 112),
}


@pytest.mark.parametrize("method", sorted(LONG))
def test_the_long_digests_map_onto_the_engines_checksums(method):
    m = job_of(f"[a]\nsize=1m\nbs=512\nrw=randwrite\nverify={method}\n")
    assert m.params["verify"] == LONG[method][0]
    AccessParams(**m.params)


@pytest.mark.parametrize(
    "text,pattern",
    [
        (
            "bs=64\nverify=sha512\n",
            r"^t.fio line 4: bs=64: with verify=sha512, each 64-byte block must hold fsmeter's "
            r"112-byte header and data: use bs >= 120 bytes",
        ),
        (
            "bs=100\nverify=sha3-384\n",
            r"^t.fio line 4: bs=100: with verify=sha3-384, each 100-byte block must hold "
            r"fsmeter's 96-byte header and data: use bs >= 104 bytes",
        ),
        (
            "bs=4k\nverify=sha3-512\nverify_interval=112\n",
            r"^t.fio line 6: verify_interval=112: with verify=sha3-512, "
            r"each 112-byte block .* use verify_interval >= 120 bytes",
        ),
        (
            "bs=64\nverify=crc32c\n",
            r"^t.fio line 4: bs=64: with verify=crc32c, each 64-byte block must hold fsmeter's "
            r"80-byte header and data: use bs >= 88 bytes$",
        ),
    ],
)
def test_a_block_too_small_for_its_header_is_refused_in_one_line(text, pattern):
    with pytest.raises(UserError, match=pattern) as exc:
        job_of("[a]\nsize=1m\nrw=randwrite\n" + text)
    assert "\n" not in exc.value.message


def test_the_access_familys_own_parameter_takes_them():
    p = AccessParams(entries=[{"size": 512, "weight": 100, "read_pct": 0}], verify="sha3_384")
    assert p.verify == "sha3_384"
    with pytest.raises(
        ValueError,
        match=r"verify_block: 100 bytes is too small for verify=sha512's 112-byte header "
        r"and data: use >= 120 bytes",
    ):
        AccessParams(entries=[{"size": 100, "weight": 100, "read_pct": 0}], verify="sha512")


JOB = "[v]\nfilename=data\nsize=256k\nbs=512\nrw=randwrite\nverify={method}\n"


def run_job(tmp_path, text: str, *extra: str, rc: int = 0) -> dict:
    work = tmp_path / "w"
    work.mkdir(exist_ok=True)
    f = tmp_path / "j.fio"
    f.write_text(text)
    out = tmp_path / "out.json"
    r = fsm("run", f, "--dir", work, "--json", out, "--keep-files", "-q", "--cache", "keep", *extra)
    assert r.returncode == rc, r.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("method", sorted(LONG))
def test_512_byte_blocks_carry_the_whole_digest_of_their_data(tmp_path, method):
    _, hname, dlen, hlen = LONG[method]
    doc = run_job(tmp_path, JOB.format(method=method))
    run = doc["phases"]["v:run"]
    # fio's work: 256 KiB in 512 writes of 512 bytes, then each read back once, in the job's counts.
    assert (run["ops"]["write"]["count"], run["ops"]["write"]["bytes"]) == (512, 256 << 10)
    assert (run["ops"]["read"]["count"], run["ops"]["read"]["bytes"]) == (512, 256 << 10)
    assert run["counters"]["verify_blocks_checked"] == 512 and run["counters"]["verify_mismatches"] == 0
    data = (tmp_path / "w" / "data").read_bytes()
    assert len(data) == 256 << 10
    for off in range(0, len(data), 512):
        b = data[off : off + 512]
        assert b[:4] == b"FSMV" and b[4] == 2, off
        assert int.from_bytes(b[6:8], "little") == hlen and int.from_bytes(b[16:24], "little") == off
        assert b[40 : 40 + dlen] == hashlib.new(hname, b[hlen:]).digest(), off
        assert b[40 + dlen : hlen - 8] == bytes(hlen - 8 - 40 - dlen)


@pytest.mark.parametrize("method", sorted(LONG))
def test_a_torn_write_is_found_at_its_first_lost_byte(tmp_path, method):
    # The sixth write keeps only its first 2000 bytes (the engine's fault injection); the rest of the block is the
    # one laid out before, so the read back finds the data wrong from byte 2000 on, past the header.
    text = "[v]\nfilename=data\nsize=64k\nbs=4k\nrw=write\nverify=" + method + "\n"
    doc = run_job(tmp_path, text, "-s", 'fault={"kind":"torn_write","after":5,"count":1,"keep_bytes":2000}', rc=1)
    run = doc["phases"]["v:run"]
    assert run["counters"]["verify_mismatches"] == 1 and run["counters"]["faults_injected"] == 1
    (m,) = run["extra"]["verify"]["mismatches"]
    assert (m["kind"], m["offset"]) == ("bad_checksum", 5 * 4096)
    # The first byte that differs is the first lost one, unless the old block has the same byte there by chance.
    assert 5 * 4096 + 2000 <= m["first_diff_offset"] < 5 * 4096 + 4096
    assert m["first_diff_offset"] < 5 * 4096 + 2008
    assert m["found"]["version"] == 2 and m["found"]["header_len"] == LONG[method][3]
    assert len(m["found"]["checksum"]) == 2 * LONG[method][2]


@pytest.mark.parametrize("method", sorted(LONG))
def test_fio_does_the_same_work(tmp_path, method):
    fio = shutil.which("fio")
    if fio is None:
        pytest.skip("fio is not installed")
    (tmp_path / "f").mkdir()
    job = tmp_path / "fio.fio"
    job.write_text(JOB.format(method=method))
    r = subprocess.run(
        [fio, "--directory", str(tmp_path / "f"), "--output-format=json", str(job)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    theirs = json.loads(r.stdout[r.stdout.index("{") :])["jobs"][0]
    ours = run_job(tmp_path, JOB.format(method=method))["phases"]["v:run"]
    assert (theirs["write"]["io_bytes"], theirs["write"]["total_ios"]) == (ours["ops"]["write"]["bytes"], 512)
    assert (theirs["read"]["io_bytes"], theirs["read"]["total_ios"]) == (ours["ops"]["read"]["bytes"], 512)
    assert ours["counters"]["verify_blocks_checked"] == 512
