"""The small scale's cells: a scale can leave out cells it has no time for (``leave_out``), each with
the claims it costs; Bryant, gus3 and Wettstein keep the cells their claims rest on."""

from __future__ import annotations

from collections import Counter

import pytest
from fsmeter.errors import UserError
from fsmeter.study import plan as plan_mod
from fsmeter.study.model import STUDY_DIR, load_study
from fsmeter.study.plan import DISK_BOUND_RATIO, changes_of, plan_study
from fsmeter.units import parse_size

#: Filesystems a kernel with everything the studies name still in it could make (reiserfs left in 6.13).
ALL_THERE = {"ext2", "ext3", "ext4", "xfs", "btrfs", "jfs", "nilfs2"}


@pytest.fixture
def full_kernel(monkeypatch):
    monkeypatch.setattr(
        plan_mod,
        "_filesystem_problem",
        lambda name: None if name in ALL_THERE else f"{name}: not supported by this kernel",
    )
    monkeypatch.setattr(plan_mod, "_offered_schedulers", lambda: {"none", "mq-deadline", "kyber", "bfq"})
    monkeypatch.setattr(plan_mod.os, "sched_getaffinity", lambda pid: {0, 1})


def _cells(plan):
    from fsmeter.campaign import parse_campaign
    from fsmeter.campaign import plan as expand

    return expand(parse_campaign(plan.text(), "test"))


def test_bryant_small_runs_the_cells_its_claims_rest_on(full_kernel):
    plan = plan_study(load_study("bryant2002"), "small")
    cells = _cells(plan)
    got = Counter((c.workload, c.fs_label, c.factors.get("threads"), c.factors.get("cpus")) for c in cells)
    assert not [c for c in cells if c.workload.startswith("pgmeter")]  # B01 is never comparable here
    five = ["ext2", "ext3-ordered", "ext3-writeback", "xfs", "jfs"]
    want = {("filemark-small-file", fs, 1, 1) for fs in five}
    want |= {("filemark-large-file", fs, 1, 1) for fs in five}
    want |= {("filemark-large-file", fs, 64, 1) for fs in ("ext2", "ext3-ordered", "ext3-writeback")}  # B07
    want |= {("aim7-shared", fs, 1, 2) for fs in ("ext2", "ext3-ordered", "ext3-writeback", "xfs")}  # B23, B25
    assert set(got) == want and set(got.values()) == {1}
    assert plan.cells == 17 and plan.trials_per_cell == 3  # the fewest a verdict accepts
    assert plan.est_s <= 11 * 60  # about ten minutes
    # Every cell left out is a change with its reason, and it travels with the campaign.
    left = [c for c in plan.changes if c.kind == "skipped" and "fewer cells" in c.why]
    assert len(left) == 5 and all(not c.affects for c in left)
    assert any("B01" in c.why and c.what.startswith("pgmeter-seq-read") for c in left)
    assert any(c.what == "filemark-large-file on xfs, jfs at threads = 64" for c in left)
    assert changes_of(plan.text()) == plan.changes
    # The paper scale leaves nothing out.
    paper = plan_study(load_study("bryant2002"), "paper")
    assert not [c for c in paper.changes if "fewer cells" in c.why]
    assert {c.workload for c in _cells(paper)} >= {"pgmeter-seq-read", "aim7-shared"}


def test_a_configuration_this_kernel_lacks_drops_out_of_leave_out_quietly(full_kernel, monkeypatch):
    monkeypatch.setattr(
        plan_mod,
        "_filesystem_problem",
        lambda name: None if name in ALL_THERE - {"jfs"} else f"{name}: not supported by this kernel",
    )
    plan = plan_study(load_study("bryant2002"), "small")
    cells = _cells(plan)
    assert not [c for c in cells if c.fs_label == "jfs"]
    assert not [c for c in cells if c.workload == "aim7-shared" and c.fs_label == "xfs" and c.factors["cpus"] == 1]
    assert plan.cells == 15


def test_gus3_small_leaves_cfq_out_and_keeps_noop_and_deadline(full_kernel):
    plan = plan_study(load_study("gus3-2008"), "small")
    assert plan.campaign["factors"]["scheduler"] == ["none", "mq-deadline"]
    assert plan.cells == 3 * 2 * 2 * 2
    assert "bfq" in plan_study(load_study("gus3-2008"), "paper").campaign["factors"]["scheduler"]


def test_wettstein_small_reads_a_file_long_enough_and_still_disk_bound(full_kernel):
    plan = plan_study(load_study("wettstein2002"), "small")
    params = plan.campaign["workloads"][0]["params"]
    size, cache = parse_size(params["size"]), parse_size(plan.campaign["factors"]["page_cache_limit"][0])
    assert size >= DISK_BOUND_RATIO * cache
    # At 3 GB/s, the fast end of the storage it was measured on, the block read lasts at least the minimum.
    assert size / 3e9 >= load_study("wettstein2002").study.min_phase_s
    assert parse_size(params["char_io_size"]) == 256 << 20  # no claim rests on the per-char phases
    assert size <= 0.8 * parse_size(plan.campaign["target"]["size"])


@pytest.mark.parametrize(
    "entry, says",
    [
        ('workloads = ["nope"]\nwhy = "x"', "scales.small.leave_out[0].workloads: 'nope' is not a workload"),
        (
            'configurations = ["ntfs"]\nwhy = "x"',
            "scales.small.leave_out[0].configurations: 'ntfs' is not a configuration",
        ),
        (
            'where = { threads = [3] }\nwhy = "x"',
            "scales.small.leave_out[0].where.threads: 3 is not a level of threads",
        ),
        ('where = { color = ["red"] }\nwhy = "x"', "scales.small.leave_out[0].where: 'color' is not a factor"),
        ('where = { threads = [] }\nwhy = "x"', "an empty list: name the levels to leave out"),
        ('workloads = ["aim7-shared"]', "scales.small.leave_out.0.why: Field required"),
    ],
)
def test_a_bad_leave_out_names_the_field(tmp_path, entry, says):
    text = (STUDY_DIR / "bryant2002.toml").read_text()
    cut = text.index("[[scales.small.leave_out]]")
    end = text.index("[[workloads]]")
    own = tmp_path / "mine.toml"
    own.write_text(text[:cut] + "[[scales.small.leave_out]]\n" + entry + "\n\n" + text[end:])
    with pytest.raises(UserError) as exc:
        load_study(str(own))
    assert says in exc.value.message


def test_the_dry_run_shows_what_the_estimate_is_made_of():
    import subprocess
    import sys

    study = load_study("gus3-2008")
    plan = plan_study(study, "small")
    assert sum(t for _, t in plan.est_by_workload.values()) == pytest.approx(plan.est_s)
    n, secs = plan.est_by_workload["dbench-60s"]
    each = study.workloads[0].est_trial_s["small"] + plan_mod.TRIAL_OVERHEAD_S
    assert n == plan.cells and secs == pytest.approx(plan.cells * plan.trials_per_cell * each)
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", "study", "run", "gus3-2008", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=300,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 0, r.stderr
    rows = [[x.strip() for x in line.split("│")[1:-1]] for line in r.stdout.splitlines() if "│" in line]
    assert ["dbench-60s", str(n), str(plan.trials_per_cell), f"{each:.1f}", f"{secs / 60:.0f} min"] in rows


def test_the_headline_counts_every_verdict_word_apart():
    from types import SimpleNamespace as NS

    from fsmeter.study.report import headline
    from fsmeter.study.verdict import INCONCLUSIVE, NOT_COMPARABLE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, REVERSED

    words = [REPRODUCED, REPRODUCED, REVERSED, INCONCLUSIVE, INCONCLUSIVE, INCONCLUSIVE, NOT_COMPARABLE]
    view = NS(
        verdicts=[NS(outcome=w) for w in words],
        paper={"X1": NS(paper_verdict="contradicted"), "X2": NS(paper_verdict="supported")},
    )
    line = headline(view)
    # Every word has its own count, zeros included, so that a reversal never hides among failures.
    assert line == (
        f"2 {REPRODUCED}, 1 {REVERSED}, 0 {NOT_REPRODUCED}, 3 {INCONCLUSIVE}, 1 {NOT_COMPARABLE}, "
        f"0 {NOT_TESTABLE}; contradicted by the paper's own data: X1"
    )


def test_page_cache_reads_void_a_claim_only_on_workloads_the_study_ran_from_disk():
    """B30 (ext3's two journal modes perform the same) is sensitive to cache residency for pgmeter, which
    ran from disk; its filemark cases ran from memory in the study too, so their cached reads void nothing."""
    import pandas as pd
    from fsmeter.study.claims import ClaimChecker

    s = load_study("bryant2002")
    b30 = next(c for c in s.claims if c.id == "B30")
    assert "cache_residency" in b30.sensitive_to

    def frame(workload, metric):
        return pd.DataFrame(
            [
                dict(
                    workload=workload,
                    metric_key=metric,
                    higher_is_better=True,
                    filesystem=fs,
                    trial=t,
                    value=1000.0 + (-1) ** t * (t // 2 + 1) * 2.0,
                    phase_s=5.0,
                    other_cpu_share=0.01,
                    cache_read_share=0.85,
                    threads=1,
                )
                for fs in ("ext3-ordered", "ext3-writeback")
                for t in range(8)
            ]
        )

    # The storage regime (B30 is bound by disk seeks, which needs a probe) and the edge rule (the
    # study's measured between-run wobble exceeds this made-up sample's margin) are tested elsewhere.
    b30 = b30.model_copy(update={"bound_by": []})
    rules = s.rules.model_copy(update={"between_run_pct": 0.0})
    only = s.model_copy(update={"claims": [b30], "rules": rules})
    v = ClaimChecker(only, frame("filemark-small-file", "transactions-1.transactions_per_s")).check_all()[0]
    assert v.outcome == "reproduced", (v.outcome, v.gates)
    v = ClaimChecker(only, frame("pgmeter-seq-read", "run.ops_per_s")).check_all()[0]
    assert v.outcome == "not comparable here" and "85%" in v.gates[0]


def test_a_claim_whose_subject_the_run_changed_is_not_comparable_even_without_its_data():
    """B01 (pgmeter on the study's IDE disk) has no cells at the small scale; it reads 'not comparable
    here' (the storage changed), not 'inconclusive' as if more data could decide it."""
    import pandas as pd
    from fsmeter.study.claims import ClaimChecker

    s = load_study("bryant2002")
    b01 = next(c for c in s.claims if c.id == "B01")
    frame = pd.DataFrame(
        [
            dict(
                workload="filemark-small-file",
                metric_key="transactions-1.transactions_per_s",
                higher_is_better=True,
                filesystem="ext2",
                trial=t,
                value=100.0 + t,
                phase_s=5.0,
            )
            for t in range(4)
        ]
    )
    only = s.model_copy(update={"claims": [b01]})
    storage = [c for c in plan_study(s, "small").changes if "storage_kind" in c.affects]
    v = ClaimChecker(only, frame, storage).check_all()[0]
    assert v.outcome == "not comparable here" and "storage_kind" in v.gates[0]
    assert any("no results for this claim" in n for n in v.notes)
    # without the change it is what the data say: its workloads did not run here, nothing to test
    v = ClaimChecker(only, frame, []).check_all()[0]
    assert v.outcome == "not testable here" and any(n.startswith("not run here: pgmeter") for n in v.notes)
