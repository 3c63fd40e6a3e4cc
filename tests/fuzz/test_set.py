"""`fsmeter run --set key=value` as hostile input: any items give a validated job or one `fsmeter: error:`
line, never another exception or a hang; durations, sizes and counts past fsmeter's limits (which once
wrapped the engine's clock: 1e30 s measured one operation and exited 0) are refused naming the key."""

from __future__ import annotations

import pytest
from fsmeter.cli import main
from fsmeter.spec import build_job, load_workload, parse_set
from fsmeter.units import MAX_COUNT, MAX_DURATION_S, MAX_SIZE_BYTES
from fuzz_common import FAST, NASTY, SLOW, result_or_user_error
from hypothesis import given
from hypothesis import strategies as st

WORKLOADS = [
    "seq-read",
    "rand-write-4k",
    "fileserver",
    "postmark-quick",
    "fdtree-quick",
    "bonnie-quick",
    "iozone-quick",
    "dbench-quick",
    "aim7-quick",
]


def set_and_build(workload: str, items: list, directory):
    return build_job(load_workload(workload), directory, parse_set(items))


def numbers(value, path=""):
    """(name, number) for every number in a dumped model, nested lists and tables too."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from numbers(v, str(k))
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from numbers(v, path)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, value


def assert_within_limits(job) -> None:
    for name, v in [*numbers(job.params.model_dump()), *numbers(job.settings.model_dump())]:
        assert v == v and abs(v) != float("inf"), (name, v)
        if name.endswith("_s"):
            assert abs(v) <= MAX_DURATION_S, (name, v)
        elif name != "seed":
            assert abs(v) <= max(MAX_SIZE_BYTES, MAX_COUNT), (name, v)


_key = st.one_of(
    st.sampled_from(
        [
            "duration_s",
            "warmup_s",
            "file_size",
            "file_count",
            "queue_depth",
            "threads",
            "record_size",
            "entries",
            "seed",
            "interval_s",
            "passes",
            "size",
            "files",
            "backend",
            "tasks",
            "loadfile",
        ]
    ),
    st.text(max_size=8),
)
_raw = st.one_of(
    st.sampled_from(
        NASTY + ["none", "[1,2]", "{}", "[" * 50_000, '[{"size": "4K"}]', "4K", "0.5", "4096", "2", "1.85e10", "1e-300"]
    ),
    st.text(max_size=16),
)


@SLOW
@given(st.sampled_from(WORKLOADS), st.lists(st.tuples(_key, _raw).map(lambda kv: f"{kv[0]}={kv[1]}"), max_size=3))
def test_any_set_items_build_a_job_within_limits_or_fail_in_one_line(tmp_path, workload, items):
    job, _ = result_or_user_error(set_and_build, workload, items, tmp_path)
    if job is not None:
        assert_within_limits(job)


@FAST
@given(st.text(max_size=40))
def test_any_item_text_parses_or_fails_in_one_line(item):
    result_or_user_error(parse_set, [item])


@pytest.mark.parametrize(
    "item, key",
    [
        ("duration_s=1e30", "duration_s"),
        ("duration_s=1.85e10", "duration_s"),
        ("duration_s=inf", "duration_s"),
        ("duration_s=nan", "duration_s"),
        ("warmup_s=1e300", "warmup_s"),
        ("file_size=18446744073709551616", "file_size"),
        ("file_count=5000000000", "file_count"),
        ("record_size=１２８K", "record_size"),
        ("queue_depth=１", "queue_depth"),
        ("interval_s=inf", "interval_s"),
        ("file_size=" + "9" * 400, "file_size"),
    ],
)
def test_values_past_the_limits_are_refused_naming_the_key(tmp_path, item, key):
    _, err = result_or_user_error(set_and_build, "seq-read", [item], tmp_path)
    assert err is not None and key in err.message


def test_deep_json_is_one_line():
    _, err = result_or_user_error(parse_set, ["entries=" + "[" * 100_000])
    assert err is not None and "entries" in err.message


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_min_phase_s_must_be_a_number_of_seconds(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as exc:
        main(["run", "seq-read", "--dir", str(tmp_path), f"--min-phase-s={value}", "--no-wait", "-q"])
    assert exc.value.code == 2 and "--min-phase-s" in capsys.readouterr().err


@pytest.mark.parametrize("make", [lambda p: p, lambda p: p / "missing" / "out.json", lambda p: p / "f" / "x.json"])
def test_an_unusable_json_path_is_refused_before_measuring(tmp_path, capsys, make):
    (tmp_path / "f").write_text("a file, not a folder")
    with pytest.raises(SystemExit) as exc:
        main(["run", "seq-read", "--dir", str(tmp_path), "--json", str(make(tmp_path)), "--no-wait", "-q"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--json" in err and err.count("\n") == 1
    assert not list(tmp_path.glob("fsmeter.access.*"))  # refused before any file was laid out


def test_a_value_the_engine_cannot_hold_is_refused_before_the_run_naming_it(tmp_path):
    items = ['entries=[{"size": "8G", "weight": 100, "read_pct": 0, "random_pct": 100}]', "file_size=16G"]
    _, err = result_or_user_error(set_and_build, "rand-write-4k", items, tmp_path)
    assert err is not None and err.message.startswith("parameter size:") and "8589934592" in err.message
