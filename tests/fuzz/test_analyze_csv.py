"""CSV for `fsmeter analyze` as hostile input: any file gives an analysis or one `fsmeter: error:` line,
never another exception or a hang; and the files that once gave silently wrong figures (a row with more
fields than the header, a repeated column) or tracebacks (empty factor cells, nan, 1e308, a header alone)
are refused naming the line or column."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from fsmeter.stats.analyze import analyze_frame, check_cli_level, combine_factors, load_csv, stack_responses
from fuzz_common import SLOW, mutate, result_or_user_error, splice_bytes
from hypothesis import given
from hypothesis import strategies as st
from repo_paths import DATA

BONNIE = DATA / "bonnie-1024mb-10runs.csv"
ROWS = list(csv.reader(BONNIE.read_text().splitlines()))


def analyze_file(path: Path, response: str, factors: list, level: float = 0.95):
    """What `fsmeter analyze --csv` does with the file, without printing."""
    df = load_csv(path)
    target = response
    if "," in response:
        df, target = stack_responses(df, response.split(",")), "value"
        factors = [*factors, "response"]
    names = []
    for f in factors:
        df, name = combine_factors(df, f)
        names.append(name)
    return analyze_frame(df, target, names, level=level)


def write(tmp_path: Path, rows: list) -> Path:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    p = tmp_path / "t.csv"
    p.write_text(buf.getvalue())
    return p


def test_the_seed_file_analyses_to_wettsteins_means(tmp_path):
    a = analyze_file(write(tmp_path, ROWS), "block_read_kbs", ["filesystem"])
    means = {c.levels["filesystem"]: c.summary.mean for c in a.cells}
    assert round(means["ext3"]) == 12723 and round(means["ext2"]) == 13330


def test_a_row_with_an_extra_field_is_refused_naming_its_line(tmp_path):
    rows = [r[:] for r in ROWS]
    rows[5] = rows[5] + ["7"]  # pandas took the first field as an index and shifted every column
    _, err = result_or_user_error(analyze_file, write(tmp_path, rows), "block_read_kbs", ["filesystem"])
    assert err is not None and "line 6" in err.message and "fields" in err.message


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda r: r[0].__setitem__(2, "filesystem"), ["filesystem", "twice"]),
        (lambda r: r[3].__setitem__(0, ""), ["filesystem", "line 4"]),
        (lambda r: r[3].__setitem__(0, "nan"), ["filesystem", "line 4"]),
        (lambda r: r[3].__setitem__(12, "nan"), ["block_read_kbs", "line 4"]),
        (lambda r: r[3].__setitem__(12, "1e308"), ["line 4"]),
        (lambda r: r[3].__setitem__(12, "inf"), ["line 4"]),
        (lambda r: r.__delitem__(slice(1, None)), ["no rows"]),
    ],
)
def test_known_bad_files_are_refused_naming_the_place(tmp_path, edit, words):
    rows = [r[:] for r in ROWS]
    edit(rows)
    for factors in (["filesystem"], ["filesystem+kernel"]):
        for response in ("block_read_kbs", "block_read_kbs,block_write_kbs"):
            _, err = result_or_user_error(analyze_file, write(tmp_path, rows), response, factors)
            assert err is not None and all(w in err.message for w in words), (factors, response, err)


@pytest.mark.parametrize("level", [0.5, float("nan"), 1.0, 0.0, -1.0, 0.951])
def test_only_the_three_levels_are_taken(level):
    _, err = result_or_user_error(check_cli_level, level)
    assert err is not None and "--level" in err.message


@SLOW
@given(
    st.randoms(use_true_random=False),
    st.integers(1, 6),
    st.sampled_from(["block_read_kbs", "seeks_per_s", "block_read_kbs,block_write_kbs", "filesystem"]),
    st.sampled_from([["filesystem"], ["kernel"], ["filesystem", "kernel"], ["filesystem+kernel"], []]),
)
def test_mutated_csv_analyses_or_fails_in_one_line(tmp_path, rnd, edits, response, factors):
    text = mutate(BONNIE.read_text(), rnd, edits)
    p = tmp_path / "m.csv"
    p.write_text(text, encoding="utf-8", errors="surrogateescape")
    result_or_user_error(analyze_file, p, response, factors)


_cell = st.one_of(
    st.sampled_from(["", "nan", "NA", "inf", "-inf", "1e308", "-1e308", "0", "1", "2", "a", "b", '"', ",", "１２"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers().map(str),
)


@SLOW
@given(st.lists(st.lists(_cell, min_size=1, max_size=4), min_size=1, max_size=12))
def test_any_small_table_analyses_or_fails_in_one_line(tmp_path, body):
    p = write(tmp_path, [["fs", "k", "v"], *body])
    a, err = result_or_user_error(analyze_file, p, "v", ["fs"])
    if a is not None:  # an analysis is only ever of rows that had exactly the header's three fields
        assert all(len(r) == 3 for r in body)
        assert sum(c.summary.n for c in a.cells) == len(body)


@SLOW
@given(st.binary(min_size=1, max_size=40), st.integers(0, 2000))
def test_non_utf8_bytes_name_their_line(tmp_path, junk, at):
    data, line = splice_bytes(BONNIE.read_bytes(), junk, at, "utf-8-sig")
    p = tmp_path / "b.csv"
    p.write_bytes(data)
    if line is not None:
        _, err = result_or_user_error(load_csv, p)
        assert err is not None and f"line {line}" in err.message
    else:
        result_or_user_error(analyze_file, p, "block_read_kbs", ["filesystem"])
