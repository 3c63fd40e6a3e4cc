"""`fsmeter claim check`'s two user files as hostile input: any CLAIM.toml and any TRIALS.csv give
verdicts or one `fsmeter: error:` line, never another exception or a hang; and what the checker gets from
a CSV it accepted is what the rows said."""

from __future__ import annotations

import io

from fsmeter.study.claimfile import frame_from_csv, load_claim_file
from fsmeter.study.claims import ClaimChecker
from fsmeter.study.verdict import RUN_WORDS
from fuzz_common import SLOW, mutate, result_or_user_error
from hypothesis import given
from hypothesis import strategies as st

CLAIM = """[rules]
level = 0.95
min_difference_pct = 10
intervals = "no_overlap"
min_phase_s = 5

[[claims]]
id = "X1"
says = "xfs is at least 10% faster than ext4"
kind = "ordering"
metrics = ["run.MiB_per_s"]
tiers = [["xfs"], ["ext4"]]
sensitive_to = ["cache_residency"]

[[claims]]
id = "X2"
says = "ext4 and btrfs are the same within 5%"
kind = "equivalence"
metrics = ["run.MiB_per_s"]
tiers = [["ext4", "btrfs"]]
margin_pct = 5
where = { threads = [1, 4] }

[[claims]]
id = "X3"
says = "xfs runs 1.2 to 2 times as fast as btrfs"
kind = "magnitude"
metrics = ["run.MiB_per_s"]
tiers = [["xfs"], ["btrfs"]]
ratio_range = [1.2, 2.0]
"""

CSV = "config,metric,value,trial,threads,phase_s,cache_read_share\n" + "".join(
    f"{fs},run.MiB_per_s,{base + (t % 3) - 1},{t},{th},30,0.1\n"
    for fs, base in (("xfs", 150), ("ext4", 100), ("btrfs", 101))
    for th in (1, 4)
    for t in range(1, 5)
)


def check(claim_path, csv_path):
    cf = load_claim_file(claim_path)
    return ClaimChecker(cf, frame_from_csv(csv_path, cf)).check_all()


def test_the_seed_files_give_verdicts(tmp_path):
    (tmp_path / "c.toml").write_text(CLAIM)
    (tmp_path / "t.csv").write_text(CSV)
    v = {x.claim.id: x.outcome for x in check(tmp_path / "c.toml", tmp_path / "t.csv")}
    assert v == {"X1": "reproduced", "X2": "reproduced", "X3": "reproduced"}


@SLOW
@given(st.randoms(use_true_random=False), st.integers(1, 6))
def test_a_mutated_claim_file_checks_or_fails_in_one_line(tmp_path, rnd, edits):
    (tmp_path / "c.toml").write_text(mutate(CLAIM, rnd, edits), encoding="utf-8", errors="surrogateescape")
    (tmp_path / "t.csv").write_text(CSV)
    out, _ = result_or_user_error(check, tmp_path / "c.toml", tmp_path / "t.csv")
    assert out is None or all(v.outcome in RUN_WORDS for v in out)


@SLOW
@given(st.randoms(use_true_random=False), st.integers(1, 8))
def test_a_mutated_trials_file_checks_or_fails_in_one_line(tmp_path, rnd, edits):
    (tmp_path / "c.toml").write_text(CLAIM)
    (tmp_path / "t.csv").write_text(mutate(CSV, rnd, edits), encoding="utf-8", errors="surrogateescape")
    out, _ = result_or_user_error(check, tmp_path / "c.toml", tmp_path / "t.csv")
    assert out is None or all(v.outcome in RUN_WORDS for v in out)


_cell = st.one_of(
    st.sampled_from(["", "nan", "inf", "-1", "0", "1", "2", "1e308", "xfs", "ext4", "run.MiB_per_s", '"', "１"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@SLOW
@given(st.lists(st.tuples(_cell, _cell, _cell, _cell), min_size=1, max_size=15))
def test_any_small_table_checks_or_fails_in_one_line(tmp_path, body):
    buf = io.StringIO()
    buf.write("config,metric,value,trial\n")
    for row in body:
        buf.write(",".join(f'"{c}"' if "," in c or '"' in c else c for c in row) + "\n")
    (tmp_path / "c.toml").write_text(CLAIM)
    (tmp_path / "t.csv").write_text(buf.getvalue())
    out, _ = result_or_user_error(check, tmp_path / "c.toml", tmp_path / "t.csv")
    if out is not None:  # accepted: every value the checker saw was a finite number of a trial >= 1
        cf = load_claim_file(tmp_path / "c.toml")
        f = frame_from_csv(tmp_path / "t.csv", cf)
        assert f["value"].map(lambda x: x == x and abs(x) != float("inf")).all() and (f["trial"] >= 1).all()
