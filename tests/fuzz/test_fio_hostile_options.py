"""fio job files that broke fsmeter before, with the options added lately (offset_increment, latency_target,
sprandom, verify=meta patterns, exec, logs, pacing): each gives a planned job with the values fio means, or one
`fsmeter: error:` line naming the job file's line and option, never another exception or a hang."""

from __future__ import annotations

from pathlib import Path

import pytest
from fsmeter.errors import UserError
from fsmeter.interop.fio_run import plan_jobfile
from fsmeter.units import MAX_SIZE_BYTES
from fuzz_common import FAST, result_or_user_error
from hypothesis import given
from hypothesis import strategies as st


def plan(text: str, directory: Path) -> list:
    path = directory / "hostile.fio"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    return plan_jobfile(str(path), directory, {})


def refusal(text: str, directory: Path) -> UserError:
    jobs, err = result_or_user_error(plan, text, directory)
    assert err is not None, f"accepted: {text!r}"
    return err


STRIPES = "[j]\nrw=randwrite\nfilesize=256k\noffset_increment=64k\nnumjobs=4\nfilename=s\nio_size={io}\n"


def test_an_io_size_past_every_limit_with_offset_increment_is_refused_on_its_line(tmp_path):
    # Counting the passes one by one took io_size / (request size * requests per pass) steps: 2^46 here.
    err = refusal(STRIPES.format(io="18446744073709551615"), tmp_path)
    assert "line 7: io_size=18446744073709551615" in err.message and "limit" in err.message


def test_offset_increment_passes_for_a_large_io_size_are_counted_as_fio_counts_them(tmp_path):
    # 4 clones 64 KiB apart, each on filesize=256k (64 random 4 KiB writes per pass); io_size=1 GiB: fio goes on
    # while the clone is at least one request short of io_size, so 1 GiB / 256 KiB = 4096 passes.
    ((job, _m),) = plan(STRIPES.format(io="1g"), tmp_path)
    regions = job.params.thread_regions
    assert [r.start for r in regions] == [0, 65536, 131072, 196608]
    assert all(r.len == 262144 and r.pass_ios == 64 and r.bytes == 4096 * 64 * 4096 for r in regions)


def test_offset_increment_with_io_size_just_under_a_pass_adds_no_pass(tmp_path):
    # io_size = one pass (256 KiB) + 4095 bytes: less than a request left after the first pass, so one pass;
    # a byte more leaves a whole request, so a second pass.
    ((job, _m),) = plan(STRIPES.format(io=str(262144 + 4095)), tmp_path)
    assert all(r.bytes == 262144 for r in job.params.thread_regions)
    ((job, _m),) = plan(STRIPES.format(io=str(262144 + 4096)), tmp_path)
    assert all(r.bytes == 2 * 262144 for r in job.params.thread_regions)


def test_an_io_size_of_the_limit_with_offset_increment_plans_at_once(tmp_path):
    _jobs, err = result_or_user_error(plan, STRIPES.format(io=str(MAX_SIZE_BYTES)), tmp_path)
    assert err is None or "line" in err.message


def test_an_offset_increment_percentage_in_other_digits_is_one_line(tmp_path):
    # str.isdigit() takes '²' and '١', which int() refuses or fio does not read.
    (tmp_path / "s").write_bytes(b"\0" * 262144)
    for pct in ("²", "١٠", "１０"):
        err = refusal(f"[j]\nrw=read\noffset_increment={pct}%\nnumjobs=2\nfilename=s\n", tmp_path)
        assert f"line 3: offset_increment={pct}%" in err.message


def test_a_rate_above_ten_million_bytes_per_second_is_a_rate_not_a_duration(tmp_path):
    # rate_bytes_per_s ends in _s, and was held to the 10^7 s limit of durations: rate=100m was refused as
    # "1.04858e+08 s is longer than fsmeter's limit".
    ((job, _m),) = plan("[j]\nrw=randrw\nsize=256k\nrate=100m,20m\nrate_min=20m\n", tmp_path)
    assert list(job.params.pace.rate_bytes_per_s) == [100 << 20, 20 << 20]
    assert list(job.params.pace.rate_min_bytes_per_s) == [20 << 20, 20 << 20]


def test_a_rate_past_the_limits_is_refused_on_its_line(tmp_path):
    err = refusal("[j]\nrw=read\nsize=256k\nrate=2p\n", tmp_path)
    assert "line 4: rate=2p: must be >= 0 and at most 1125899906842624" in err.message
    err = refusal("[j]\nrw=read\nsize=256k\nrate_iops=1,4294967296\n", tmp_path)
    assert "line 4: rate_iops=1,4294967296: must be >= 0 and at most 4294967295" in err.message


def test_a_directory_that_climbs_out_is_refused_on_the_directory_line(tmp_path):
    for d in ("..", "a/../..", "../x"):
        err = refusal(f"[j]\nrw=write\nsize=256k\ndirectory={d}\nfilename=x\n", tmp_path)
        assert f"line 4: directory={d}: '..' would leave" in err.message
    err = refusal("[j]\nrw=write\nsize=256k\ndirectory=sub\nfilename_format=../$jobname\n", tmp_path)
    assert "line 5: filename_format=../$jobname: '..' would leave" in err.message


# -- the options added lately, with values and neighbours drawn at random ----------------------------------------
#: option -> the options it needs beside it to be read at all (else the job is refused before the value matters).
RECENT = {
    "latency_target": [],
    "latency_window": ["latency_target=10ms"],
    "latency_percentile": ["latency_target=10ms"],
    "latency_run": ["latency_target=10ms"],
    "offset_increment": ["numjobs=2", "filename=s"],
    "bssplit": ["norandommap=0"],
    "sprandom": ["rw=randwrite"],
    "spr_num_regions": ["rw=randwrite", "sprandom=1"],
    "spr_op": ["rw=randwrite", "sprandom=1"],
    "spr_cs": ["rw=randwrite", "sprandom=1"],
    "verify_pattern": ["verify=meta", "rw=write"],
    "verify": ["rw=randwrite"],
    "random_distribution": [],
    "filename_format": ["nrfiles=2", "numjobs=2"],
    "rw": [],
    "number_ios": [],
    "rate": [],
    "rate_iops": [],
    "rate_min": [],
    "rate_process": ["rate_iops=100"],
    "flow": [],
    "thinktime": [],
    "thinktime_spin": ["thinktime=9"],
    "thinktime_blocks": ["thinktime=9"],
    "steadystate": ["ss_dur=2", "time_based", "runtime=1"],
    "steadystate_duration": ["steadystate=iops:5%", "time_based", "runtime=1"],
    "write_lat_log": [],
    "log_avg_msec": ["write_bw_log=b"],
    "log_max_value": ["write_lat_log=l"],
    "log_offset": ["write_lat_log=l"],
    "buffer_pattern": ["rw=write"],
    "io_submit_mode": [],
    "cmdprio_percentage": ["ioengine=io_uring"],
    "cmdprio_bssplit": ["ioengine=io_uring"],
    "cmdprio_class": ["ioengine=io_uring", "cmdprio_percentage=5"],
}
#: Pieces the values are made of: numbers past every limit, units and separators in the wrong places, bytes and
#: digits of other scripts, fio's pattern syntax.
PIECES = [
    "0",
    "1",
    "-1",
    "4k",
    "64k",
    "1g",
    "18446744073709551616",
    "1e400",
    "nan",
    "inf",
    "100",
    "101",
    "50%",
    "100%",
    "1000000%",
    "%",
    ":",
    "::",
    ",",
    ",,",
    "/",
    "//",
    "\x00",
    "１２",
    "²",
    "٣",
    "0x",
    "0xff",
    '"ab"',
    '"',
    "%o",
    "ms",
    "us",
    "s",
    "zipf",
    "pareto",
    "zoned",
    "zoned_abs",
    "normal",
    "iops",
    "bw",
    "_slope",
    ".",
    "e",
    "read",
    "randwrite",
    "1.5",
    " ",
    "$jobnum",
    "$filenum",
    "..",
    "${X}",
]


@FAST
@given(
    st.sampled_from(sorted(RECENT)),
    st.lists(st.sampled_from(PIECES), min_size=0, max_size=5),
    st.sampled_from(["randread", "randwrite", "randrw", "write", "read"]),
)
def test_recent_options_with_any_value_plan_or_fail_in_one_line(tmp_path, option, pieces, rw):
    value = "".join(pieces)
    text = "\n".join(["[j]", f"rw={rw}", "size=256k", *RECENT[option], f"{option}={value}"]) + "\n"
    jobs, err = result_or_user_error(plan, text, tmp_path)
    if err is not None:
        # One line, naming the job file's line: the option's own, a neighbour's, or the job's header.
        assert " line " in err.message, err.message
    for job, _m in jobs or []:
        p = job.params
        assert 0 < p.file_size <= MAX_SIZE_BYTES and all(e.size > 0 for e in p.entries)


def test_a_log_in_a_kernel_interface_is_refused_before_the_run(tmp_path):
    # /proc/x failed with a traceback after the run; /dev/null made /dev/null_bw.1.log in /dev (as root).
    for key, stem in (("write_bw_log", "/proc/x"), ("write_lat_log", "/dev/null"), ("write_iops_log", "/sys/x")):
        err = refusal(f"[j]\nrw=randread\nsize=256k\n{key}={stem}\n", tmp_path)
        assert f"line 4: {key}={stem}:" in err.message and "kernel interface" in err.message


def test_a_log_that_cannot_be_written_after_the_run_is_one_line(tmp_path):
    from fsmeter.interop.fio_run import write_fio_log

    with pytest.raises(UserError) as exc:
        write_fio_log(tmp_path / "gone" / "x_bw.1.log", {"intervals": []}, "bw")
    assert exc.value.exit_code == 1 and "x_bw.1.log" in exc.value.message and "\n" not in exc.value.message


@pytest.mark.parametrize(
    "option",
    [
        "filename_format=.",
        "filename_format=/",
        "filename=.",
        "filename=a/",
        "filename_format=sub/$jobname/.",
        "filename=" + "x" * 256,
        "filename_format=" + "é" * 128 + "$jobnum",
    ],
)
def test_a_name_no_request_can_open_is_refused_on_its_line(tmp_path, option):
    # These ran and failed in the engine (EISDIR, ENAMETOOLONG) with exit 1 and no job-file line.
    err = refusal(f"[j]\nrw=randread\nsize=256k\n{option}\n", tmp_path)
    assert f"line 4: {option[:60]}" in err.message  # a long value is shortened in the line


def test_a_file_name_of_255_bytes_is_taken(tmp_path):
    ((job, _m),) = plan("[j]\nrw=randread\nsize=256k\nfilename=" + "é" * 127 + "x\n", tmp_path)
    assert job.params.file_names == ["é" * 127 + "x"]


@pytest.mark.parametrize("opts, line", [("numjobs=4096\nnrfiles=4096", 5), ("nrfiles=1048576\nnumjobs=2", 4)])
def test_more_files_than_the_limit_are_refused_before_their_names_are_made(tmp_path, opts, line):
    # 4096 clones of 4096 files: the 16.7 million names were made one by one before anything was checked.
    err = refusal(f"[j]\nrw=randread\nsize=256k\n{opts}\n", tmp_path)
    assert f"line {line}: nrfiles=" in err.message and "limit of 1048576" in err.message


def test_filename_format_keywords_in_any_case_fill_each_clone_and_file(tmp_path):
    ((job, _m),) = plan(
        "[j]\nrw=read\nfilesize=8k\nnumjobs=2\nnrfiles=2\nfilename_format=$JOBname.$jobNUM/$$filenum\n", tmp_path
    )
    assert job.params.file_names == ["j.0/$0", "j.0/$1", "j.1/$0", "j.1/$1"]


def test_a_long_value_is_shortened_in_its_error_line(tmp_path):
    # An 8 MiB verify_pattern was repeated in full in the one line that refused it.
    err = refusal("[j]\nrw=write\nsize=256k\nverify=meta\nverify_pattern=0x" + "ab" * (1 << 20) + "\n", tmp_path)
    assert err.message.startswith(f"{tmp_path / 'hostile.fio'} line 5: verify_pattern=0xabab")
    assert "... (2097154 characters)" in err.message and len(err.message) < 400


def test_a_group_of_more_jobs_than_threads_is_refused_with_a_short_line(tmp_path):
    # 20000 jobs without stonewall were each built before the group's 4096 threads were counted, and the line
    # named all 20000.
    err = refusal("".join(f"[j{i}]\nrw=read\nsize=4k\n" for i in range(5000)), tmp_path)
    assert "line 1: the jobs of group 0 (j0, j1, j2, j3, j4, j5, ... (5000 jobs))" in err.message
    assert len(err.message) < 400


@pytest.mark.parametrize("pattern", ["%o", '0xff%o"abcd"-12', "%o%o"])
def test_fios_offset_in_a_verify_pattern_is_refused_as_not_supported(tmp_path, pattern):
    # It was refused as unreadable ("cannot read '%o'"), as if fio had no %o.
    err = refusal(f"[j]\nrw=write\nsize=256k\nverify=meta\nverify_pattern={pattern}\n", tmp_path)
    assert f"line 5: verify_pattern={pattern}: %o" in err.message and "not supported by fsmeter yet" in err.message


def test_a_percent_o_inside_a_quoted_string_is_text(tmp_path):
    ((job, _m),) = plan('[j]\nrw=write\nsize=256k\nverify=meta\nverify_pattern="a%ob"\n', tmp_path)
    assert job.params.verify is not None


@pytest.mark.parametrize(
    "opts, line, option",
    [
        ("rw=randwrite\nsprandom=1\nspr_op=٠.٥", 6, "spr_op"),
        ("latency_target=10ms\nlatency_percentile=９９", 5, "latency_percentile"),
        ("random_distribution=zipf:١.٢", 4, "random_distribution"),
        ("steadystate=iops:５%\nss_dur=2\ntime_based\nruntime=1", 4, "steadystate"),
        ("latency_target=10ms\nlatency_percentile=9_9", 5, "latency_percentile"),
    ],
)
def test_decimal_numbers_take_ascii_digits_only(tmp_path, opts, line, option):
    # Python's float() reads other scripts' digits and '_' (fio's strtod does not): these were taken.
    err = refusal(f"[j]\nrw=randread\nsize=1m\n{opts}\n", tmp_path)
    assert f"line {line}: {option}=" in err.message


def test_decimal_numbers_in_ascii_are_taken(tmp_path):
    ((job, _m),) = plan("[j]\nrw=randread\nsize=1m\nlatency_target=10ms\nlatency_percentile=99.5\n", tmp_path)
    assert job.params.latency_target.percentile == 99.5


@pytest.mark.parametrize(
    "value",
    [
        "$pagesize" + "-" * 2000 + "1",  # a sign chain past the parser's stack (RecursionError before)
        "$pagesize*" + "(" * 500 + "1" + ")" * 500,  # 500 nested parentheses
        "$pagesize" + "-" * 70 + "1",  # short, but nested deeper than the bound
        "$pagesize+" + "1+" * 600 + "1",  # a flat expression longer than the bound
    ],
)
def test_hostile_value_arithmetic_is_one_line_naming_the_option(tmp_path, value):
    err = refusal(f"[j]\nrw=read\nsize={value}\n", tmp_path)
    assert err.message.startswith(f"{tmp_path / 'hostile.fio'} line 3: size=$pagesize")
    assert "\n" not in err.message and len(err.message) < 400


def test_value_arithmetic_within_the_bounds_is_computed_as_bc_does():
    from fsmeter.interop.fio_jobfile import ARITH_MAX_DEPTH, eval_int_arith

    assert eval_int_arith("4096*2+(3-1)") == 8194
    assert eval_int_arith("--5") == 5 and eval_int_arith("-(2+3)*4") == -20 and eval_int_arith("-7/2") == -3
    deep = "(" * ARITH_MAX_DEPTH + "4096" + ")" * ARITH_MAX_DEPTH
    assert eval_int_arith(deep) == 4096
    with pytest.raises(ValueError, match="nested"):
        eval_int_arith("(" + deep + ")")


@given(st.text(alphabet="0123456789+-*/%() $", max_size=3000))
@FAST
def test_value_arithmetic_property_never_raises_but_a_user_error(text):
    from fsmeter.interop.fio_jobfile import eval_int_arith

    try:
        eval_int_arith(text)
    except ValueError:
        pass


@pytest.mark.parametrize("key", ["write_bw_log", "write_iops_log", "write_lat_log"])
@pytest.mark.parametrize("name", ["../x", "a/../../x", "../../../../tmp/x", "./../x"])
def test_a_log_name_climbing_out_of_the_current_directory_is_refused_on_its_line(tmp_path, key, name):
    err = refusal(f"[j]\nrw=read\nsize=64k\n{key}={name}\n", tmp_path)
    assert f"line 4: {key}={name}" in err.message and "leaves the current directory" in err.message
    assert "\n" not in err.message


@pytest.mark.parametrize("name", ["a/..", "sub/../x", "x"])
def test_a_log_name_that_stays_in_the_current_directory_is_planned(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)  # fio's logs go to the current directory
    (tmp_path / "sub").mkdir()
    (tmp_path / "a").mkdir()
    jobs, err = result_or_user_error(plan, f"[j]\nrw=read\nsize=64k\nwrite_bw_log={name}\n", tmp_path)
    assert err is None, err.message


def test_an_absolute_log_name_is_a_user_named_output_checked_up_front_with_a_note(tmp_path):
    out = tmp_path / "logs"
    out.mkdir()
    jobs, err = result_or_user_error(plan, f"[j]\nrw=read\nsize=64k\nwrite_lat_log={out}/lat\n", tmp_path)
    assert err is None, err.message
    notes = " ".join(n for _job, m in jobs for n in m.notes)
    assert f"write_lat_log={out}/lat: an absolute name" in notes
    for bad, why in ((f"{tmp_path}/missing/lat", "does not exist"), ("/proc/self/lat", "kernel interface")):
        err = refusal(f"[j]\nrw=read\nsize=64k\nwrite_lat_log={bad}\n", tmp_path)
        assert why in err.message and "line 4: write_lat_log" in err.message and "\n" not in err.message
