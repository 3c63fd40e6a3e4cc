"""fio job files as hostile input: any text or bytes gives mapped, validated jobs or one `fsmeter: error:`
line, never another exception or a hang; and the values fio itself refuses (percentages outside 0..100,
digits of other scripts, a zero alignment, times past every clock) are refused here too."""

from __future__ import annotations

from pathlib import Path

import pytest
import repo_paths
from fsmeter.interop.fio.job import map_job
from fsmeter.interop.fio.load import fio_workloads
from fsmeter.interop.fio.options import SUPPORTED
from fsmeter.interop.fio_jobfile import parse_jobfile, split_names
from fsmeter.interop.fio_run import plan_jobfile
from fsmeter.units import MAX_DURATION_S, MAX_SIZE_BYTES
from fuzz_common import FAST, NASTY, SLOW, mutate, result_or_user_error, splice_bytes
from hypothesis import assume, given
from hypothesis import strategies as st

DATA = repo_paths.DATA / "fio"
SEEDS = sorted(p.read_text() for p in DATA.glob("*.fio"))


def map_and_build(text: str, directory: Path) -> list:
    """Every job of the text, mapped and validated as `fsmeter run FILE.fio` does before it runs."""
    path = directory / "fuzz.fio"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    return plan_jobfile(str(path), directory, {})


def assert_job_sane(job) -> None:
    # A group of concurrent jobs holds each job's access parameters.
    for p in [j.params for j in job.params.jobs] if hasattr(job.params, "jobs") else [job.params]:
        assert p.alignment > 0 and all(e.size > 0 for e in p.entries)
        assert all(0 <= e.read_pct <= 100 and 0 <= e.random_pct <= 100 and e.weight >= 0 for e in p.entries)
        for v in (p.duration_s, p.warmup_s):
            assert v is None or 0 <= v <= MAX_DURATION_S
        assert 0 < p.file_size <= MAX_SIZE_BYTES and p.offset % p.alignment == 0


@FAST
@given(st.text(max_size=300))
def test_any_text_parses_or_fails_in_one_line(text):
    jf, err = result_or_user_error(parse_jobfile, text, "t.fio", {})
    if jf is not None:
        for i, job in enumerate(jf.jobs):
            result_or_user_error(map_job, "t.fio", job, i)


@SLOW
@given(st.sampled_from(SEEDS), st.randoms(use_true_random=False), st.integers(1, 5))
def test_mutated_job_files_map_or_fail_in_one_line(tmp_path, seed, rnd, edits):
    jobs, _ = result_or_user_error(map_and_build, mutate(seed, rnd, edits), tmp_path)
    for job, _m in jobs or []:
        assert_job_sane(job)


_value = st.one_of(
    st.sampled_from(NASTY),
    st.text(max_size=12),
    st.builds(lambda a, b: f"{a}{b}", st.sampled_from(NASTY), st.sampled_from(NASTY)),
)


@SLOW
@given(st.sampled_from(sorted(SUPPORTED - {"name", "description", "directory", "filename"})), _value)
def test_any_value_of_any_option_maps_or_fails_in_one_line(tmp_path, option, value):
    assume("\n" not in value and "\r" not in value)
    text = f"[j]\nrw=randrw\nsize=1m\n{option}={value}\n"
    jobs, _ = result_or_user_error(map_and_build, text, tmp_path)
    for job, _m in jobs or []:
        assert_job_sane(job)


@FAST
@given(st.lists(st.tuples(st.sampled_from(["4k", "8k", "16k"]), st.integers(-200, 300)), min_size=1, max_size=4))
def test_bssplit_percentages_follow_fio(tmp_path, split):
    text = "[j]\nrw=randread\nsize=1m\nbssplit=" + ":".join(f"{s}/{p}" for s, p in split) + "\n"
    jobs, err = result_or_user_error(map_and_build, text, tmp_path)
    pcts = [p for _, p in split]
    valid = all(0 <= p <= 100 for p in pcts) and sum(pcts) == 100
    assert (jobs is not None) == valid, (split, err)


@FAST
@given(st.text(alphabet="0123456789０１２３４５６７８９٠١٢kKmM", min_size=1, max_size=6))
def test_only_ascii_digits_make_a_size(tmp_path, bs):
    jobs, err = result_or_user_error(map_and_build, f"[j]\nrw=read\nsize=1m\nbs={bs}\n", tmp_path)
    if any(c not in "0123456789kKmM" for c in bs):
        assert err is not None


@pytest.mark.parametrize("runtime", ["18446744073709551616", "1e30", str(int(MAX_DURATION_S) + 1), "99999999999d"])
def test_a_runtime_past_the_limit_is_refused(tmp_path, runtime):
    _, err = result_or_user_error(map_and_build, f"[j]\nrw=read\nsize=1m\ntime_based\nruntime={runtime}\n", tmp_path)
    assert err is not None and ("runtime" in err.message or "duration_s" in err.message)


@pytest.mark.parametrize("option", ["blockalign=0", "ba=0", "bssplit=0/100", "bs=0"])
def test_a_zero_size_or_alignment_is_refused(tmp_path, option):
    _, err = result_or_user_error(map_and_build, f"[j]\nrw=randread\nsize=1m\n{option}\n", tmp_path)
    assert err is not None and option.split("=")[0] in err.message


@FAST
@given(st.lists(st.text(alphabet="ab:.-_", min_size=1, max_size=6), min_size=1, max_size=4))
def test_escaped_colons_stay_in_file_names(names):
    escaped = ":".join(n.replace(":", "\\:") for n in names)
    assert split_names(escaped) == names


def test_an_escaped_colon_is_one_file(tmp_path):
    ((job, _m),) = map_and_build("[j]\nrw=read\nsize=1m\nfilename=a\\:b\n", tmp_path)
    assert job.params.file_names == ["a:b"] and job.params.file_count == 1


@FAST
@given(st.binary(min_size=1, max_size=64), st.integers(0, 200))
def test_non_utf8_bytes_name_their_line(tmp_path, junk, at):
    data, line = splice_bytes(SEEDS[0].encode(), junk, at)
    path = tmp_path / "b.fio"
    path.write_bytes(data)
    if line is not None:
        _, err = result_or_user_error(fio_workloads, str(path))
        assert err is not None and f"line {line}" in err.message and "UTF-8" in err.message
    else:
        result_or_user_error(fio_workloads, str(path))
