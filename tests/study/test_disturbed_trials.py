"""Trials whose disk-model replies left late (`disturbed`): left out of a claim when their cell keeps
enough on-time trials, else the claim is inconclusive. Checked on samples whose answer is known."""

from __future__ import annotations

from fsmeter.study.claimfile import frame_from_csv, load_claim_file
from fsmeter.study.claims import ClaimChecker
from fsmeter.study.verdict import INCONCLUSIVE, REPRODUCED

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
"""


def _check(tmp_path, late: set[int]):
    """xfs 150 MiB/s and ext4 100 (a known 50% lead), 5 trials each; ext4's trials in `late` had late
    replies, and their figure is what late replies can make of it: 160, past xfs."""
    rows = [
        f"{fs},run.MiB_per_s,{160 if fs == 'ext4' and t in late else base + (t % 3) - 1},{t},30,0,"
        f"{1 if fs == 'ext4' and t in late else 0}\n"
        for fs, base in (("xfs", 150), ("ext4", 100))
        for t in range(1, 6)
    ]
    (tmp_path / "c.toml").write_text(CLAIM)
    (tmp_path / "t.csv").write_text("config,metric,value,trial,phase_s,other_cpu_share,disturbed\n" + "".join(rows))
    cf = load_claim_file(tmp_path / "c.toml")
    [v] = ClaimChecker(cf, frame_from_csv(tmp_path / "t.csv", cf)).check_all()
    return v


def test_on_time_trials_decide_a_claim(tmp_path):
    v = _check(tmp_path, set())
    assert v.outcome == REPRODUCED and not v.gates


def test_one_late_trial_is_left_out_when_its_cell_keeps_three_on_time(tmp_path):
    v = _check(tmp_path, {2})
    assert v.outcome == REPRODUCED, (v.outcome, v.reason, v.gates)
    assert not v.gates
    assert any(n.startswith("1 trial(s) whose disk-model replies left late") for n in v.notes)


def test_three_on_time_trials_are_enough(tmp_path):
    v = _check(tmp_path, {2, 3})
    assert v.outcome == REPRODUCED and not v.gates
    assert any(n.startswith("2 trial(s) whose disk-model replies left late") for n in v.notes)


def test_a_cell_with_fewer_than_three_on_time_trials_keeps_them_all_and_is_gated(tmp_path):
    v = _check(tmp_path, {2, 3, 4})
    assert v.outcome == INCONCLUSIVE
    assert any(g.startswith("the disk model's replies were late") for g in v.gates)
    assert not any("left late (disturbed) left out" in n for n in v.notes)
