"""fio's sprandom (SanDisk's preconditioning): the job file maps onto the engine's sprandom plan with fio's byte
count (the physical size: the file plus spr_op, aligned to bs), fio's refusals and fsmeter's own come as one line
naming the option's line, and a run writes what fio 3.42 writes (when the fio on PATH has sprandom). The region
plan itself (per-region counts and shares, the order of rewrites) is tested in the engine
(crates/engine/src/workload/access/sprandom.rs)."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess

import pytest
from fsmeter.errors import UserError
from fsmeter_cli import fsm, job_of

EXAMPLE = """[global]
ioengine=io_uring
rw=randwrite
bs=4k
blockalign=4k
norandommap=1
iodepth=8
size={size}
[preconditioning]
sprandom=1
spr_op={op}
spr_num_regions={regions}
"""


def physical(size: int, op: float, bs: int = 4096) -> int:
    """fio's physical size: size + ceil(size * op), aligned down to bs (sprandom.c's sprandom_physical_size)."""
    p = size + math.ceil(size * op)
    return p - p % bs


def test_the_example_maps_to_the_plan_with_fios_byte_count():
    m = job_of(EXAMPLE.format(size="64m", op="0.15", regions=100))
    assert m.params["sprandom"] == {"over_provisioning": 0.15, "regions": 100, "cache_size": 0, "logical_size": 0}
    # fio 3.42 on a 64 MiB file: 77172736 bytes in 18841 I/Os.
    assert m.params["total_bytes"] == 77172736 == physical(64 << 20, 0.15)
    assert "random_map" not in m.params
    assert any("sets random_generator=lfsr" in n for n in m.notes)


def test_norandommap_and_lfsr_are_set_when_not_given():
    text = EXAMPLE.format(size="8m", op="0.2", regions=10).replace("norandommap=1\n", "")
    m = job_of(text)
    assert "random_map" not in m.params
    assert any("sets norandommap=1" in n for n in m.notes)
    assert m.params["total_bytes"] == physical(8 << 20, 0.2)


def test_a_smaller_io_size_is_the_logical_size():
    m = job_of(EXAMPLE.format(size="8m", op="0.15", regions=10) + "io_size=4m\n")
    assert m.params["sprandom"]["logical_size"] == 4 << 20
    assert m.params["total_bytes"] == physical(4 << 20, 0.15)


@pytest.mark.parametrize(
    "extra,line,pattern",
    [
        ("rw=randread\n", 10, r"sprandom=1: fio's sprandom needs random writes only"),
        (
            "random_generator=tausworthe\n",
            13,
            r"random_generator=tausworthe: fio: sprandom requires random_generator=lfsr",
        ),
        ("norandommap=0\n", 13, r"norandommap=0: fio: sprandom requires norandommap=1"),
        ("numjobs=2\n", 13, r"numjobs=2: sprandom preconditions with one job"),
        ("nrfiles=2\n", 10, r"sprandom=1: fio's sprandom supports only one file \(2 here\)"),
        ("bssplit=4k/50:8k/50\n", 10, r"sprandom=1: sprandom writes blocks of one size"),
        ("random_distribution=zipf:1.2\n", 13, r"random_distribution=zipf:1.2: fio ignores it with sprandom"),
        (
            "spr_cs=1m\n",
            13,
            r"spr_cs=1m: spr_cs must be smaller than the region size \(964608 bytes\), which means at "
            r"most 9 regions",
        ),
        (
            "verify=crc32c\n",
            13,
            r"verify=crc32c: verifying sprandom's rewritten blocks is not supported by fsmeter yet",
        ),
        ("spr_op=1.5\n", 13, r"spr_op=1.5: give the over-provisioning ratio as a number in \(0, 1\)"),
    ],
)
def test_what_sprandom_cannot_take_is_refused_on_its_line(extra, line, pattern):
    with pytest.raises(UserError, match=rf"line {line}: {pattern}") as exc:
        job_of(EXAMPLE.format(size="8m", op="0.15", regions=10) + extra)
    assert "\n" not in exc.value.message


def test_too_many_regions_for_the_file_are_refused():
    with pytest.raises(
        UserError,
        match=r"line 12: spr_num_regions=5000: 5000 regions leave less than one 4096-byte "
        r"block per region",
    ):
        job_of(EXAMPLE.format(size="8m", op="0.15", regions=5000))


def _fsmeter_writes(tmp_path, text: str) -> tuple:
    job = tmp_path / "spr.fio"
    job.write_text(text)
    d = tmp_path / "d"
    d.mkdir(exist_ok=True)
    out = tmp_path / "fsm.json"
    r = fsm("run", job, "--dir", d, "--json", out, "--cache", "keep")
    assert r.returncode == 0, r.stderr + r.stdout
    ph = json.loads(out.read_text())["phases"]["preconditioning:run"]
    return ph["ops"]["write"]["count"], ph["ops"]["write"]["bytes"], ph["extra"]["sprandom"]


def _region_shares_hold(spr: dict) -> None:
    """Each region but the last two is written region_writes times; region r + 1 rewrites what region r kept; and
    what each ten regions keep is within 4 binomial sds of the model's share (fio keeps a write when a draw in
    [0, 10000] is <= the share in 1/10000)."""
    rw, kept, writes, rewrites = spr["region_writes"], spr["kept"], spr["writes"], spr["rewrites"]
    for r in range(spr["regions"] - 1):
        assert writes[r] == rw, r
        assert rewrites[r + 1] == kept[r], r
    for lo in range(0, spr["regions"], 10):
        ps = [(round(x * 10000) + 1) / 10001 for x in spr["invalid_share"][lo : lo + 10]]
        want = sum(rw * p for p in ps)
        sd = math.sqrt(sum(rw * p * (1 - p) for p in ps))
        assert abs(sum(kept[lo : lo + 10]) - want) <= 4 * sd + 1, (lo, kept[lo : lo + 10], want)


# spr_op=0.9: fresh blocks outlast the physical size by about 4% of the file (sprandom.rs), so the run ends at the
# physical size, for fio and fsmeter alike, whatever their random draws.
def test_a_run_writes_the_physical_size(tmp_path):
    n, b, spr = _fsmeter_writes(tmp_path, EXAMPLE.format(size="64m", op="0.9", regions=100))
    assert b == physical(64 << 20, 0.9) and n == b // 4096
    assert sum(spr["writes"]) == n and spr["physical_bytes"] == b and not spr["ended"]
    assert spr["fresh_writes"] < spr["file_blocks"] == 16384
    _region_shares_hold(spr)
    # The model's shares (sprandom.c): WA = 0.5 / 0.9 + 0.7, the least valid region's share 1 / WA, the last's 0.
    assert spr["invalid_share"][0] == round(1 / (0.5 / 0.9 + 0.7), 4) and spr["invalid_share"][-1] == 0


def _fio_with_sprandom():
    fio = shutil.which("fio")
    if fio is None:
        return None
    r = subprocess.run([fio, "--cmdhelp=sprandom"], capture_output=True, text=True, timeout=30)
    return fio if r.returncode == 0 and "sprandom" in r.stdout.lower() else None


def test_the_same_work_as_fio(tmp_path):
    fio = _fio_with_sprandom()
    if fio is None:
        pytest.skip("the fio on PATH has no sprandom (fio 3.41 or later has)")
    text = EXAMPLE.format(size="64m", op="0.9", regions=100)
    n, b, spr = _fsmeter_writes(tmp_path, text)
    fjob = tmp_path / "fio.fio"
    fjob.write_text(text.replace("[global]\n", f"[global]\nfilename={tmp_path / 'fio.dat'}\n"))
    out = tmp_path / "fio.json"
    r = subprocess.run(
        [fio, "--output-format=json", f"--output={out}", "--debug=sprandom", str(fjob)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    log = out.read_text() + r.stdout  # fio 3.42 writes its debug lines before the JSON
    start = 0 if log.startswith("{") else log.index("\n{") + 1
    w = json.JSONDecoder().raw_decode(log[start:])[0]["jobs"][0]["write"]
    assert (w["io_bytes"], w["total_ios"]) == (b, n)
    # fio's debug line "Invalidation[r] <region writes> <kept> ..." gives what region r - 1 kept.
    fio_kept = {int(m[1]) - 1: int(m[3]) for m in re.finditer(r"Invalidation\[(\d+)\] (\d+) (\d+)", log)}
    assert all(int(m[2]) == spr["region_writes"] for m in re.finditer(r"Invalidation\[(\d+)\] (\d+)", log))
    rw = spr["region_writes"]
    for lo in range(0, 90, 10):
        ps = [(round(x * 10000) + 1) / 10001 for x in spr["invalid_share"][lo : lo + 10]]
        sd = math.sqrt(2 * sum(rw * p * (1 - p) for p in ps))
        ours, theirs = sum(spr["kept"][lo : lo + 10]), sum(fio_kept[r] for r in range(lo, lo + 10))
        assert abs(ours - theirs) <= 4 * sd + 1, (lo, ours, theirs)


def test_the_fio_export_of_a_sprandom_job_is_a_sprandom_job():
    from fsmeter.interop.fio.job import map_job
    from fsmeter.interop.fio_export import fio_options
    from fsmeter.interop.fio_jobfile import parse_jobfile

    m = job_of(EXAMPLE.format(size="8m", op="0.2", regions=10) + "spr_cs=64k\n")
    opts, _ = fio_options(m.params, m.settings)
    assert (opts["sprandom"], opts["spr_op"], opts["spr_num_regions"], opts["spr_cs"]) == ("1", "0.2", "10", "65536")
    assert opts["norandommap"] == "1" and "io_size" not in opts
    # Mapped back, the exported job is the same plan with the same byte count.
    text = "[x]\n" + "".join(f"{k}={v}\n" for k, v in opts.items() if k not in ("name",))
    (j,) = parse_jobfile(text, "x.fio", {}).jobs
    again = map_job("x.fio", j, 0)
    assert again.params["sprandom"] == m.params["sprandom"]
    assert again.params["total_bytes"] == m.params["total_bytes"] == physical(8 << 20, 0.2)
