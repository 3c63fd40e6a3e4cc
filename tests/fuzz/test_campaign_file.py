"""Campaign files as hostile input: any text, bytes or structure gives a planned campaign or one
`fsmeter: error:` line, never another exception or a hang; and the invalid inputs that once passed
(non-finite or overflowing values, endless names, nesting, a setting in two places) are refused."""

from __future__ import annotations

import pytest
from fsmeter.campaign import MAX_NAME_CHARS, dump_toml, load_campaign, parse_campaign, plan
from fsmeter.units import MAX_DURATION_S, MAX_SIZE_BYTES
from fuzz_common import FAST, SLOW, mutate, result_or_user_error, splice_bytes
from hypothesis import given
from hypothesis import strategies as st

SEED = """name = "fuzz"
description = "seed campaign"
target = {{ kind = "dir", path = "{dir}" }}
min_phase_s = 0
[repetitions]
policy = "fixed"
n = 2
[factors]
seed = [1, 2]
[[workloads]]
name = "seq-read"
params = {{ duration_s = 1, file_size = "1M" }}
[[workloads]]
name = "rand-read-4k"
label = "rr"
"""


def parse_and_plan(text: str):
    c = parse_campaign(text, "fuzz.toml")
    return plan(c)


def assert_cells_sane(cells) -> None:
    """What a planned campaign hands the engine is within fsmeter's limits."""
    for cell in cells:
        for k, v in cell.overrides.items():
            if isinstance(v, float):
                assert v == v and abs(v) != float("inf"), (k, v)
            if k.endswith("_s") and isinstance(v, (int, float)):
                assert v <= MAX_DURATION_S
        assert len(cell.workload) <= 4096 and len(cell.fs_label) <= MAX_NAME_CHARS


@FAST
@given(st.text(max_size=400))
def test_any_text_is_a_campaign_or_one_error_line(text):
    result_or_user_error(parse_campaign, text, "fuzz.toml")


@SLOW
@given(st.randoms(use_true_random=False), st.integers(1, 6))
def test_mutated_campaigns_plan_or_fail_in_one_line(tmp_path, rnd, edits):
    text = mutate(SEED.format(dir=tmp_path), rnd, edits)
    cells, err = result_or_user_error(parse_and_plan, text)
    if cells is not None:
        assert_cells_sane(cells)


_hostile_number = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(1 << 70), 1 << 70),
    st.sampled_from([1e30, 1.85e10, 18446744073709551616, -1, 0]),
)


@SLOW
@given(
    st.sampled_from(
        ["duration_s", "warmup_s", "file_size", "file_count", "queue_depth", "threads", "interval_s", "record_size"]
    ),
    _hostile_number,
)
def test_hostile_workload_values_are_refused_up_front_or_within_limits(tmp_path, key, value):
    data = {
        "name": "x",
        "target": {"kind": "dir", "path": str(tmp_path)},
        "workloads": [{"name": "seq-read", "params": {key: value}}],
    }
    cells, err = result_or_user_error(parse_and_plan, dump_toml(data))
    if cells is not None:
        assert_cells_sane(cells)
        got = cells[0].overrides[key]
        if key.endswith("_s"):
            assert 0 <= got <= MAX_DURATION_S
        if key in ("file_size", "record_size"):
            assert 0 <= got <= MAX_SIZE_BYTES
    if key == "duration_s" and not (isinstance(value, (int, float)) and 0 < value <= MAX_DURATION_S):
        assert err is not None and "duration_s" in err.message


@pytest.mark.parametrize(
    "value, word", [("inf", "finite"), ("nan", "duration_s"), ("1e30", "limit"), ("1.85e10", "limit")]
)
def test_a_duration_beyond_the_limit_names_the_field(tmp_path, value, word):
    text = SEED.format(dir=tmp_path).replace("duration_s = 1,", f"duration_s = {value},")
    _, err = result_or_user_error(parse_and_plan, text)
    assert err is not None and "duration_s" in err.message and word in err.message


def test_a_size_past_64_bits_names_the_field(tmp_path):
    text = SEED.format(dir=tmp_path).replace('file_size = "1M"', "file_size = 18446744073709551616")
    _, err = result_or_user_error(parse_and_plan, text)
    assert err is not None and "file_size" in err.message


@FAST
@given(st.binary(min_size=1, max_size=200), st.integers(0, 400))
def test_non_utf8_bytes_name_their_line(tmp_path, junk, at):
    data, line = splice_bytes(SEED.format(dir=tmp_path).encode(), junk, at)
    path = tmp_path / "c.toml"
    path.write_bytes(data)
    _, err = result_or_user_error(load_campaign, path)
    if line is not None:
        assert err is not None and f"line {line}" in err.message and "UTF-8" in err.message


@SLOW
@given(st.integers(33, 100_000), st.sampled_from(["[", "{a="]))
def test_deep_nesting_is_one_line(depth, opener):
    closer = "]" if opener == "[" else "}"
    inner = "1" if opener != "[" else ""
    text = 'name = "x"\nworkloads = ["seq-read"]\nv = ' + opener * depth + inner + closer * depth
    _, err = result_or_user_error(parse_campaign, text, "deep.toml")
    assert err is not None and "deep" in err.message


@SLOW
@given(st.text(min_size=MAX_NAME_CHARS + 1, max_size=100_000))
def test_long_names_are_refused(name):
    data = {"name": name, "workloads": ["seq-read"]}
    _, err = result_or_user_error(parse_campaign, dump_toml(data), "long.toml")
    assert err is not None and "name" in err.message and len(err.message) < 2000


@pytest.mark.parametrize("setting", ["threads", "seed", "backend"])
def test_a_setting_as_factor_and_in_params_is_refused(tmp_path, setting):
    level = {"threads": [1, 2], "seed": [1, 2], "backend": ["psync", "null"]}[setting]
    data = {
        "name": "x",
        "target": {"kind": "dir", "path": str(tmp_path)},
        "factors": {setting: level},
        "workloads": [{"name": "seq-read", "params": {setting: level[0]}}],
    }
    _, err = result_or_user_error(parse_and_plan, dump_toml(data))
    assert err is not None and f"factors.{setting}" in err.message and "params" in err.message


def test_a_matrix_too_large_to_run_is_refused_before_expanding(tmp_path):
    data = {
        "name": "x",
        "target": {"kind": "dir", "path": str(tmp_path)},
        "factors": {"queue_depth": list(range(1, 101)), "seed": list(range(100)), "threads": list(range(1, 101))},
        "workloads": ["seq-read"],
    }
    _, err = result_or_user_error(parse_and_plan, dump_toml(data))
    assert err is not None and "1,000,000 cells" in err.message


@pytest.mark.parametrize("where", ["name", "label", "level"])
def test_a_bracket_in_a_name_is_refused(tmp_path, where):
    """rich draws every table and reads [x] as a style: 'ext4[dax]' printed as 'ext4', '[/b]' raised."""
    data = {
        "name": "a[/b]" if where == "name" else "a",
        "target": {"kind": "dir", "path": str(tmp_path)},
        "workloads": [{"name": "seq-read", **({"label": "w[dax]"} if where == "label" else {})}],
        "factors": {"seed": [1, 2]} if where != "level" else {"backend": ["psync[x]", "null"]},
    }
    _, err = result_or_user_error(parse_and_plan, dump_toml(data))
    assert err is not None and "'['" in err.message


def test_seed_campaign_itself_plans(tmp_path):
    cells = parse_and_plan(SEED.format(dir=tmp_path))
    assert len(cells) == 4  # 2 workloads x 2 seeds: the mutations start from a campaign that plans
