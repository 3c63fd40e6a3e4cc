"""Studies: campaign generation from a study's design, substitutions, scale rules, the claim checker,
and the study report on a store filled through the store's own API."""

from __future__ import annotations

import random

import pandas as pd
import pytest
from chromium import CHROMIUM, load_charts
from fsmeter.errors import UserError
from fsmeter.study import plan as plan_mod
from fsmeter.study.claims import ClaimChecker
from fsmeter.study.model import Claim, load_study, study_paths
from fsmeter.study.plan import Change, changes_of, plan_study
from fsmeter.study.verdict import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, REVERSED

UNSUPPORTED = {"jfs", "reiserfs", "nilfs2", "f2fs"}


@pytest.fixture
def this_kernel(monkeypatch):
    """A kernel like this project's machine: no jfs/reiserfs/nilfs2; loop devices offer 4 schedulers."""
    monkeypatch.setattr(
        plan_mod,
        "_filesystem_problem",
        lambda name: (
            f"{name}: not supported by this kernel"
            if name in UNSUPPORTED
            else (None if name in {"ext2", "ext3", "ext4", "xfs", "btrfs"} else f"fsmeter has no {name} support")
        ),
    )
    monkeypatch.setattr(plan_mod, "_offered_schedulers", lambda: {"none", "mq-deadline", "kyber", "bfq"})


def test_shipped_studies_load():
    assert {"layton2009", "gus3-2008"} <= set(study_paths())
    for slug in study_paths():
        s = load_study(slug)
        assert s.slug == slug and s.claims and s.published.rows


def test_unknown_study_names_the_choices():
    with pytest.raises(UserError, match="unknown study 'nope'.*layton2009"):
        load_study("nope")


def test_layton_campaign_matches_the_design(this_kernel):
    s = load_study("layton2009")
    p = plan_study(s, "paper")
    c = p.campaign
    assert [f["label"] for f in c["filesystems"]] == ["xfs", "ext2", "ext3", "ext4", "btrfs"]
    wl = {w["label"]: w for w in c["workloads"]}
    assert list(wl) == [w.id for w in s.workloads]
    # paper scale = the study's own parameters, exactly
    for w in s.workloads:
        assert wl[w.id]["params"] == w.params
        assert wl[w.id]["name"] == "fdtree-quick"
    assert c["repetitions"] == {"policy": "fixed", "n": 10}
    assert p.cells == 5 * 4 and p.trials_per_cell == 10
    skipped = {ch.what for ch in p.changes if ch.kind == "skipped"}
    assert skipped == {"configuration jfs", "configuration reiserfs", "configuration reiser4", "configuration nilfs2"}
    # the stored text carries the changes and parses back
    assert changes_of(p.text()) == p.changes


def test_gus3_substitutions(this_kernel):
    p = plan_study(load_study("gus3-2008"), "quick")
    f = p.campaign["factors"]
    assert f["scheduler"] == ["none", "mq-deadline", "bfq"]
    assert f["threads"] == [5, 20] and f["cpus"] == [2, 1]
    assert "cpu_speed" not in f
    kinds = {(ch.kind, ch.what) for ch in p.changes}
    assert ("skipped", "elevator = anticipatory") in kinds
    assert ("substituted", "elevator = cfq -> bfq") in kinds
    assert any(k == "skipped" and w.startswith("factor cpu_speed") for k, w in kinds)
    assert ("skipped", "configuration jfs") in kinds
    xfs = next(x for x in p.campaign["filesystems"] if x["label"] == "xfs")
    assert xfs["external_journal"] and xfs["mount_options"] == "noatime,logbufs=8,logbsize=262144"
    assert p.levels["elevator"] == {"noop": "none", "deadline": "mq-deadline", "cfq": "bfq"}


def test_a_scheduler_the_kernel_lacks_is_skipped(this_kernel, monkeypatch):
    monkeypatch.setattr(plan_mod, "_offered_schedulers", lambda: {"none", "mq-deadline"})
    p = plan_study(load_study("gus3-2008"), "quick")
    assert p.campaign["factors"]["scheduler"] == ["none", "mq-deadline"]
    assert any(ch.what == "elevator = cfq" and "not offered" in ch.why for ch in p.changes)


def test_scale_rules(this_kernel):
    s = load_study("layton2009")
    quick = plan_study(s, "quick")
    wl = {w["label"]: w["params"] for w in quick.campaign["workloads"]}
    assert wl["fdtree-small-shallow"]["files_per_dir"] == 2
    assert wl["fdtree-small-shallow"]["levels"] == 3  # the shape stays
    assert quick.campaign["repetitions"]["n"] == 3
    assert any(ch.kind == "shrunk" and ch.what.startswith("fdtree-small-shallow") for ch in quick.changes)
    half = plan_study(s, "0.5")
    wl = {w["label"]: w["params"] for w in half.campaign["workloads"]}
    assert wl["fdtree-small-shallow"]["files_per_dir"] == 20
    assert wl["fdtree-medium-deep"]["files_per_dir"] == 1
    assert half.campaign["target"]["size"] == "12GiB"
    g = plan_study(load_study("gus3-2008"), "0.5")
    assert g.campaign["workloads"][0]["params"]["duration_s"] == 30.0
    assert quick.est_s < plan_study(s, "paper").est_s


@pytest.mark.parametrize("bad", ["fast", "0", "-1", "inf"])
def test_bad_scale(bad, this_kernel):
    with pytest.raises(UserError, match="--scale"):
        plan_study(load_study("layton2009"), bad)


def test_paper_scale_shrinks_to_the_disk(this_kernel, monkeypatch):
    import shutil
    from collections import namedtuple

    du = namedtuple("du", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: du(100 << 30, 90 << 30, 10 << 30))
    p = plan_study(load_study("layton2009"), "paper")
    assert p.campaign["target"]["size"] == "8GiB"
    assert any(ch.kind == "shrunk" and "loop image" in ch.what for ch in p.changes)


def test_change_lines_round_trip():
    c = Change("skipped", "configuration jfs", "not in this kernel | really")
    assert Change.parse(c.line()) == c


# -- the claim checker on synthetic data with known answers -------------------------------------------
def _frame(spec: dict, n: int = 6, noise: float = 0.02, seed: int = 3, **cols) -> pd.DataFrame:
    """spec: {(filesystem, extra...): mean}; one row per trial, metric 'run.x' (higher is better)."""
    rng = random.Random(seed)
    rows = []
    keys = list(cols.get("keys", ["filesystem"]))
    for key, mean in spec.items():
        key = key if isinstance(key, tuple) else (key,)
        for t in range(n):
            row = dict(zip(keys, key))
            row.update(
                workload=cols.get("workload", "w"),
                metric_key="run.x",
                higher_is_better=True,
                trial=t,
                value=mean * rng.gauss(1.0, noise),
                phase_s=30.0,  # a quiet machine and long phases: the data gates pass
                other_cpu_share=0.01,
            )
            rows.append(row)
    return pd.DataFrame(rows)


def _study_with(*claims: dict):
    """gus3-2008 with these claims; its rules without the measured between-run wobble (the edge rule's
    default applies: these tests are about the decision rules, test_edge.py about the wobble)."""
    s = load_study("gus3-2008")
    rules = s.rules.model_copy(update={"between_run_pct": None, "between_run_source": ""})
    return s.model_copy(update={"claims": [Claim.model_validate(c) for c in claims], "rules": rules})


def test_ordering_reproduced_reversed_not_reproduced_inconclusive():
    base = {"id": "C", "says": "xfs beats ext3", "kind": "ranking", "metrics": ["run.x"], "tiers": [["xfs"], ["ext3"]]}
    s = _study_with(base)
    assert ClaimChecker(s, _frame({"xfs": 200, "ext3": 100})).check_all()[0].outcome == REPRODUCED
    v = ClaimChecker(s, _frame({"xfs": 100, "ext3": 200})).check_all()[0]
    assert v.outcome == REVERSED and "reversed" in v.subs[0].detail
    # no difference, measured precisely enough to exclude a stated 10%: not reproduced (not "reversed")
    sized = _study_with({**base, "size_pct": 10.0})
    assert ClaimChecker(sized, _frame({"xfs": 100, "ext3": 100}, noise=0.01)).check_all()[0].outcome == NOT_REPRODUCED
    # "faster" with no size: a difference of 0.5% is still possible, so nothing is excluded
    assert ClaimChecker(s, _frame({"xfs": 100, "ext3": 100}, noise=0.01)).check_all()[0].outcome == INCONCLUSIVE
    # too noisy to tell
    assert ClaimChecker(s, _frame({"xfs": 115, "ext3": 100}, n=3, noise=0.4)).check_all()[0].outcome == INCONCLUSIVE


def test_a_configuration_not_run_here_is_named_and_the_claim_not_testable_here():
    s = _study_with({"id": "C", "says": "", "kind": "ranking", "metrics": ["run.x"], "tiers": [["jfs"], ["ext3"]]})
    v = ClaimChecker(s, _frame({"xfs": 200, "ext3": 100})).check_all()[0]
    assert v.outcome == NOT_TESTABLE and any("jfs" in n for n in v.notes)


def test_a_claim_whose_workload_or_whole_tier_did_not_run_is_not_testable_here_not_inconclusive():
    # a scale that leaves the claim's workload out, or a kernel without the one filesystem a tier holds,
    # leaves nothing to test: "not testable here", naming what is absent ("inconclusive" means too little data)
    s = _study_with(
        {
            "id": "C",
            "says": "",
            "kind": "ordering",
            "metrics": ["run.x"],
            "workloads": ["deep"],
            "tiers": [["xfs"], ["ext3"]],
        }
    )
    v = ClaimChecker(s, _frame({"xfs": 200, "ext3": 100})).check_all()[0]
    assert v.outcome == NOT_TESTABLE and any("not run here: deep" in n for n in v.notes)
    s = _study_with(
        {
            "id": "C",
            "says": "",
            "kind": "ordering",
            "metrics": ["run.x"],
            "workloads": ["w"],
            "tiers": [["xfs", "ext3"], ["reiserfs"]],
        }
    )
    v = ClaimChecker(s, _frame({"xfs": 200, "ext3": 100})).check_all()[0]
    assert v.outcome == NOT_TESTABLE and any("reiserfs" in n for n in v.notes)
    # with both present it is tested as before
    v = ClaimChecker(s, _frame({"xfs": 200, "ext3": 100, "reiserfs": 50})).check_all()[0]
    assert v.outcome == REPRODUCED


def test_phases_a_star_name_pools_count_once_per_trial():
    # two transaction phases per trial, back to back on one filesystem: the trial is the unit, so three
    # trials a side are n=3 (their phases' mean), not n=6
    from fsmeter.study.frames import _pick_metrics

    rows = []
    for fs, base in (("xfs", 200.0), ("ext3", 100.0)):
        for t in range(3):
            for ph, f in (("transactions-1", 1.0), ("transactions-2", 1.1)):
                rows.append(
                    {
                        "workload": "w",
                        "metric_key": f"{ph}.tps",
                        "higher_is_better": True,
                        "trial": t,
                        "filesystem": fs,
                        "value": base * f + t,
                        "phase_s": 5.0 + (ph == "transactions-2"),
                        "other_cpu_share": 0.01 * (t + 1),
                    }
                )
    df = _pick_metrics(pd.DataFrame(rows), ["transactions-*.tps"])
    assert len(df) == 6 and set(df["metric_key"]) == {"transactions-*.tps"}
    one = df[(df["filesystem"] == "xfs") & (df["trial"] == 1)].iloc[0]
    assert one["value"] == pytest.approx((200.0 + 1 + 220.0 + 1) / 2)
    assert one["phase_s"] == 5.0 and one["other_cpu_share"] == pytest.approx(0.02)  # shortest, busiest
    s = _study_with(
        {"id": "C", "says": "", "kind": "ordering", "metrics": ["transactions-*.tps"], "tiers": [["xfs"], ["ext3"]]}
    )
    v = ClaimChecker(s, pd.DataFrame(rows)).check_all()[0]
    assert "n=3" in v.evidence()[0] and "n=6" not in v.evidence()[0]


def test_equivalence():
    c = {
        "id": "E",
        "says": "",
        "kind": "equivalence",
        "metrics": ["run.x"],
        "tiers": [["xfs", "ext3"]],
        "margin_pct": 5,
    }
    s = _study_with(c)
    assert ClaimChecker(s, _frame({"xfs": 100, "ext3": 101}, noise=0.005)).check_all()[0].outcome == REPRODUCED
    assert ClaimChecker(s, _frame({"xfs": 150, "ext3": 100})).check_all()[0].outcome == NOT_REPRODUCED
    # +8% is beyond a 5% margin but within a 12% one: the margin is the claim's
    eight = _frame({"xfs": 108, "ext3": 100}, noise=0.005)
    assert ClaimChecker(s, eight).check_all()[0].outcome == NOT_REPRODUCED
    assert ClaimChecker(_study_with({**c, "margin_pct": 12}), eight).check_all()[0].outcome == REPRODUCED
    # within a 10% one too, but the interval's upper end (+8.2%) clears it by less than the run-to-run
    # wobble (2 points): the edge rule keeps it undecided and says how many trials would settle it
    edge = ClaimChecker(_study_with({**c, "margin_pct": 10}), eight).check_all()[0]
    assert edge.outcome == INCONCLUSIVE and "on the edge" in edge.evidence()[0]
    # no margin written down: no verdict
    v = ClaimChecker(_study_with({**c, "margin_pct": None}), eight).check_all()[0]
    assert v.outcome == INCONCLUSIVE and "margin_pct" in v.reason


def test_trend_per_context_and_where_on_an_unvaried_factor():
    c = {
        "id": "T",
        "says": "",
        "kind": "trend",
        "factor": "threads",
        "pairs": [[5, 20]],
        "direction": "up",
        "metrics": ["run.x"],
        "configurations": ["xfs"],
        "where": {"cpu_speed": "fastest"},
    }
    s = _study_with(c)
    up = _frame({("xfs", 5): 100, ("xfs", 20): 150, ("ext3", 5): 100, ("ext3", 20): 50}, keys=["filesystem", "threads"])
    v = ClaimChecker(s, up).check_all()[0]
    assert v.outcome == REPRODUCED and len(v.subs) == 1
    assert any("cpu_speed was not varied" in n for n in v.notes)
    down = _frame({("xfs", 5): 150, ("xfs", 20): 100}, keys=["filesystem", "threads"])
    assert ClaimChecker(s, down).check_all()[0].outcome == REVERSED


def test_except_drops_the_excepted_cells():
    c = {
        "id": "X",
        "says": "",
        "kind": "ranking",
        "metrics": ["run.x"],
        "tiers": [["xfs"], ["ext3"]],
        "except": [{"elevator": "cfq", "cpu_speed": "slowest"}],
    }
    s = _study_with(c)
    df = _frame(
        {("xfs", "noop"): 200, ("ext3", "noop"): 100, ("xfs", "cfq"): 100, ("ext3", "cfq"): 200},
        keys=["filesystem", "elevator"],
    )
    v = ClaimChecker(s, df).check_all()[0]
    assert v.outcome == REPRODUCED and [x.context for x in v.subs] == ["run.x, w"]


def test_ratio_claim():
    c = {
        "id": "R",
        "says": "",
        "kind": "ratio",
        "metric": "run.x",
        "numerator": {"workload": ["small"]},
        "denominator": {"workload": ["big"]},
        "ratio_range": [0.0, 0.3],
    }
    s = _study_with(c)
    df = pd.concat([_frame({"ext4": 10}, workload="small"), _frame({"ext4": 100}, workload="big")])
    assert ClaimChecker(s, df).check_all()[0].outcome == REPRODUCED
    df = pd.concat([_frame({"ext4": 90}, workload="small"), _frame({"ext4": 100}, workload="big")])
    assert ClaimChecker(s, df).check_all()[0].outcome == NOT_REPRODUCED


def test_untestable_claims_say_why():
    v = ClaimChecker(load_study("gus3-2008"), _frame({"xfs": 1})).check(load_study("gus3-2008").claims[2])
    assert v.outcome == NOT_TESTABLE and v.reason.startswith("needs the CPU clock")


# -- the report on a store filled through the store's API -----------------------------------------------
def _fill(store, p, fs_speed: dict, rng, n_trials: int = 6):
    from fsmeter.campaign import parse_campaign
    from fsmeter.campaign import plan as expand
    from report_synth import environment, phase_report

    cells = expand(parse_campaign(p.text(), "t"))
    cid = store.create_campaign(p.campaign["name"], p.text(), [(c.workload, c.factors) for c in cells])
    for row, cell in zip(store.cells(cid), cells):
        f = cell.factors
        for n in range(1, n_trials + 1):
            mb = 100 * fs_speed[f["filesystem"]] * (1.3 if f.get("threads") == 20 else 1) * rng.gauss(1, 0.02)
            rep = phase_report(
                mb, {"NTCreateX": (0.5, 2e4 / fs_speed[f["filesystem"]]), "ReadX": (0.5, 1e4)}, rng, elapsed_s=60.0
            )
            store.record_trial(
                row["id"],
                n,
                status="ok",
                started="2024-01-01T00:00:00Z",
                phases=[{"key": "run", "engine_phase": "run", "report": _quiet(rep)}],
                metrics=[
                    {
                        "phase": "run",
                        "name": "MB_per_s",
                        "unit": "MB/s",
                        "higher_is_better": True,
                        "value": mb,
                        "headline": True,
                    }
                ],
                environment=_two_cpus(environment(f["filesystem"], "replay", {})),
            )
        store.set_cell_status(row["id"], "done")
    store.set_campaign_status(cid, "done")
    return cid


def _quiet(report: dict) -> dict:
    """A synthetic phase report measured on a quiet machine, its reads from the device (the data gates pass)."""
    return {**report, "regime": {"other_cpu_share": 0.01, "cache_read_share": 0.0}}


def _two_cpus(env: dict) -> dict:
    """A 2-CPU machine: the post's SMP, so that claims about it are comparable."""
    return {**env, "cpus_online": 2}


def _fill_study(study, db, monkeypatch, rng):
    """A store with one synthetic run of `study` at the quick scale (any family: tree or replay shaped)."""
    from fsmeter.campaign import parse_campaign
    from fsmeter.campaign import plan as expand
    from fsmeter.store import open_store
    from report_synth import environment, phase_report

    monkeypatch.setattr(
        plan_mod,
        "_filesystem_problem",
        lambda n: None if n in {"ext2", "ext3", "ext4", "xfs", "btrfs"} else f"{n}: not supported by this kernel",
    )
    monkeypatch.setattr(plan_mod, "_offered_schedulers", lambda: {"none", "mq-deadline", "bfq"})
    p = plan_study(study, "quick")
    cells = expand(parse_campaign(p.text(), "t"))
    base_speed = {"xfs": 0.5, "ext2": 1.0, "ext3": 1.1, "ext4": 1.2, "btrfs": 1.5}
    speed = {
        k: base_speed[k.split("-")[0]] for k in {c.factors["filesystem"] for c in cells}
    }  # configuration ids such as ext3-ordered
    with open_store(db) as store:
        cid = store.create_campaign(p.campaign["name"], p.text(), [(c.workload, c.factors) for c in cells])
        for row, cell in zip(store.cells(cid), cells):
            fam = cell.definition.family.name
            for n in range(1, 9):  # enough trials for the power the claims want at 3% noise
                v = 100 * speed[cell.factors["filesystem"]] * rng.gauss(1, 0.03)
                if fam == "tree":
                    names = [
                        ("mkdir", "dirs_per_s", "dirs/s"),
                        ("create", "files_per_s", "files/s"),
                        ("create", "KiB_per_s", "KiB/s"),
                        ("remove", "files_per_s", "files/s"),
                        ("rmdir", "dirs_per_s", "dirs/s"),
                    ]
                    phases = [
                        {
                            "key": k,
                            "engine_phase": k,
                            "report": phase_report(
                                v, {k: (1.0, 1e4)}, rng, elapsed_s=10 / speed[cell.factors["filesystem"]]
                            ),
                        }
                        for k in ("mkdir", "create", "remove", "rmdir")
                    ]
                elif fam == "bonnie":
                    io = ("putc_write", "block_write", "rewrite", "getc_read", "block_read")
                    names = [(ph, "kbs", "KiB/s") for ph in io] + [("seeks", "per_s", "seeks/s")]
                    phases = [
                        {"key": ph, "engine_phase": ph, "report": phase_report(v, {ph: (1.0, 1e4)}, rng)}
                        for ph in (*io, "seeks")
                    ]
                elif fam == "access":
                    names = [("run", "MiB_per_s", "MiB/s"), ("run", "ops_per_s", "ops/s")]
                    phases = [
                        {"key": "run", "engine_phase": "run", "report": phase_report(v, {"read": (1.0, 1e4)}, rng)}
                    ]
                elif fam == "fileset":
                    names = [(f"transactions-{k}", "transactions_per_s", "transactions/s") for k in (1, 2, 3)]
                    phases = [
                        {
                            "key": ph,
                            "engine_phase": "transactions",
                            "report": phase_report(v, {"read": (1.0, 1e4)}, rng),
                        }
                        for ph, _, _ in names
                    ]
                elif fam == "mix":
                    names = [("subruns", "peak_jpm", "jobs/min")]
                    phases = [
                        {
                            "key": "subruns",
                            "engine_phase": "subruns",
                            "report": phase_report(v, {"job": (1.0, 1e6)}, rng),
                        }
                    ]
                elif fam == "macro":
                    names = [(ph, t, "s") for ph in ("cp", "untar", "rm") for t in ("real_s", "user_s", "sys_s")]
                    phases = [
                        {"key": ph, "engine_phase": ph, "report": phase_report(v, {"exec": (1.0, 1e6)}, rng)}
                        for ph in ("cp", "untar", "rm")
                    ]
                elif fam == "iozone":
                    names = [
                        ("grid", f"{t}[{f},{r}]", "ops/s")
                        for t in ("write", "read")
                        for f in ("64K", "1M")
                        for r in ("4K", "64K")
                    ]
                    phases = [
                        {"key": "grid", "engine_phase": "grid", "report": phase_report(v, {"write": (1.0, 1e4)}, rng)}
                    ]
                else:
                    names = [("run", "MB_per_s", "MB/s")]
                    phases = [
                        {
                            "key": "run",
                            "engine_phase": "run",
                            "report": phase_report(
                                v,
                                {"NTCreateX": (0.5, 2e4 / speed[cell.factors["filesystem"]]), "ReadX": (0.5, 1e4)},
                                rng,
                            ),
                        }
                    ]
                if fam == "macro":  # times: a faster filesystem takes less
                    v = 10.0 / speed[cell.factors["filesystem"]] * rng.gauss(1, 0.03)
                bump = {"block_read": 1.3}  # reads faster than writes, as the study found
                metrics = [
                    {
                        "phase": ph,
                        "name": nm,
                        "unit": u,
                        "higher_is_better": True,
                        "value": v * bump.get(ph, 1.0),
                        "headline": i == 0,
                    }
                    for i, (ph, nm, u) in enumerate(names)
                ]
                store.record_trial(
                    row["id"],
                    n,
                    status="ok",
                    started="2024-01-01T00:00:00Z",
                    phases=[{**ph, "report": _quiet(ph["report"])} for ph in phases],
                    metrics=metrics,
                    environment=_two_cpus(environment(cell.factors["filesystem"], fam, {})),
                )
            store.set_cell_status(row["id"], "done")
        store.set_campaign_status(cid, "done")


def _comparable(study):
    """The study with no claim sensitive to any change: a synthetic store tests the report's machinery,
    not whether the quick scale keeps each claim's regime (test_study_tests covers 'not comparable here')."""
    return study.model_copy(
        update={"claims": [c.model_copy(update={"sensitive_to": [], "bound_by": []}) for c in study.claims]}
    )


def test_layton_report_tables(tmp_path, monkeypatch):
    from fsmeter.study.report import build_study_view

    s = _comparable(load_study("layton2009"))
    db = tmp_path / "l.sqlite"
    _fill_study(s, db, monkeypatch, random.Random(4))
    view = build_study_view(s, db)
    by = {v.claim.id: v for v in view.verdicts}
    assert by["LA07"].outcome == REPRODUCED  # xfs half as fast as every other filesystem
    assert by["LA09"].outcome == REPRODUCED  # btrfs 3x xfs
    assert by["LA06"].outcome == NOT_REPRODUCED  # btrfs 1.5 vs ext2 1.0: not equal
    times = view.tables[0]
    assert times["title"] == "fdtree-small-shallow: phase times (s)"
    xfs_create = next(r for r in times["rows"] if r[0] == "create" and r[1] == "xfs")
    assert xfs_create[5] == "858"  # the published mean beside ours
    assert any(r[1] == "jfs" and r[4] == "0" for r in times["rows"])  # published only: not run here


def test_study_report_from_a_store(tmp_path, this_kernel):
    from fsmeter.store import open_store
    from fsmeter.study.report import build_study_view, write_study_report

    s = _comparable(load_study("gus3-2008"))
    p = plan_study(s, "quick")
    db = tmp_path / "s.sqlite"
    with open_store(db) as store:
        _fill(store, p, {"xfs": 2.0, "ext3": 1.0}, random.Random(5))
    view = build_study_view(s, db)
    by = {v.claim.id: v for v in view.verdicts}
    assert by["G13"].outcome == REPRODUCED  # xfs twice as fast everywhere
    assert by["G02"].outcome == REPRODUCED  # 20 clients 30% faster
    assert by["G08"].outcome == REVERSED  # says ext3 first with cfq, 5 clients: xfs is, significantly
    assert by["G04"].outcome == NOT_TESTABLE and "jfs" in " ".join(by["G04"].notes)
    out = tmp_path / "r.html"
    write_study_report(view, out)
    html = out.read_text()
    assert "G13" in html and "anticipatory" in html and "best and second-best" in html
    assert view.figures and all(f["data"] for f in view.figures)


# -- merge: runs from other boots or machines in one store ------------------------------------------------
def _digest(path) -> str:
    import hashlib

    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_merge_keeps_everything_and_kernels_become_a_factor(tmp_path, this_kernel):
    import sqlite3

    from fsmeter.store import open_store
    from fsmeter.store.merge import merge_stores
    from fsmeter.study.report import build_study_view

    s = load_study("gus3-2008")
    p = plan_study(s, "quick")
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    for path, kernel, speed in (
        (a, "2.6.27-old", {"xfs": 2.0, "ext3": 1.0}),
        (b, "6.1.0-new", {"xfs": 1.0, "ext3": 2.0}),
    ):
        with open_store(path) as store:
            _fill(store, p, speed, random.Random(9), n_trials=3)
            store.conn.execute("UPDATE environment SET kernel = ?", (kernel,))
            store.conn.commit()
    before = (_digest(a), _digest(b))
    out = tmp_path / "all.sqlite"
    counts = merge_stores([a, b], out)
    assert (_digest(a), _digest(b)) == before  # inputs untouched
    n_trials = 2 * 24 * 3
    assert counts["campaigns"] == 2 and counts["trials"] == n_trials and counts["environment"] == n_trials
    con = sqlite3.connect(out)
    assert con.execute("SELECT count(DISTINCT kernel) FROM environment").fetchone()[0] == 2
    assert con.execute("SELECT count(*) FROM metrics").fetchone()[0] == n_trials
    # every child row points at a parent of its own campaign
    assert (
        con.execute(
            "SELECT count(*) FROM trials t LEFT JOIN cells c ON c.id = t.cell_id WHERE c.id IS NULL"
        ).fetchone()[0]
        == 0
    )
    con.close()
    view = build_study_view(s, out)
    assert "kernel" in view.frame.columns
    g13 = next(v for v in view.verdicts if v.claim.id == "G13")
    assert {sub.outcome for sub in g13.subs} == {"holds", "reversed"}  # xfs wins on the old kernel only
    assert any("kernel=2.6.27-old" in sub.context for sub in g13.subs)


def test_merge_refuses_an_existing_output_and_skips_duplicates(tmp_path):
    from fsmeter.store.merge import merge_stores
    from report_synth import make_pair

    a = tmp_path / "a.sqlite"
    make_pair(a, 0.0, 2.0)
    out = tmp_path / "m.sqlite"
    counts = merge_stores([a, a], out)
    assert counts["campaigns"] == 2 and len(counts["duplicates"]) == 2
    with pytest.raises(UserError, match="exists"):
        merge_stores([a], out)
    with pytest.raises(UserError, match="no such results database"):
        merge_stores([tmp_path / "missing.sqlite"], tmp_path / "n.sqlite")


def test_variation_claims_on_a_known_design():
    """Access mode effect +-20, filesystem effect +-5, small noise: access mode dominates, no interaction."""
    rng = random.Random(11)
    rows = []
    for fs, fe in (("ext2", 5.0), ("ext3", -5.0)):
        for mode, me in (("block_read.kbs", 20.0), ("block_write.kbs", -20.0)):
            for t in range(10):
                rows.append(
                    dict(
                        workload="b",
                        metric_key=mode,
                        higher_is_better=True,
                        trial=t,
                        filesystem=fs,
                        value=100 + fe + me + rng.gauss(0, 1.0),
                        phase_s=30.0,
                        other_cpu_share=0.01,
                    )
                )
    df = pd.DataFrame(rows)
    base = {
        "says": "",
        "kind": "variation",
        "metrics": ["block_read.kbs", "block_write.kbs"],
        "design": ["filesystem", "access_mode"],
    }
    s = _study_with(
        {**base, "id": "V1", "larger": ["access_mode", "filesystem"]},
        {**base, "id": "V2", "larger": ["filesystem", "access_mode"]},
        {**base, "id": "V3", "below": {"filesystem:access_mode": 2.0}},
        {**base, "id": "V4", "significant": ["access_mode", "filesystem"], "level": 0.9},
        {**base, "id": "V5", "share_range": {"explained": [0.0, 50.0]}},
    )
    out = {v.claim.id: v for v in ClaimChecker(s, df).check_all()}
    # shares by hand: SSA (mode) = 40 * 20^2 = 16000, SSB (fs) = 40 * 5^2 = 1000, SSE ~ 36 * 1
    assert out["V1"].outcome == REPRODUCED and "access_mode 9" in out["V1"].subs[0].detail
    assert out["V2"].outcome == NOT_REPRODUCED
    assert out["V3"].outcome == REPRODUCED
    assert out["V4"].outcome == REPRODUCED
    assert out["V5"].outcome == NOT_REPRODUCED


def test_kernels_newest_against_oldest():
    c = {
        "id": "K",
        "says": "",
        "kind": "ranking",
        "compare": "kernel",
        "metrics": ["run.x"],
        "tiers": [["newest"], ["oldest"]],
    }
    s = _study_with(c)
    df = _frame({("ext2", "6.1.0-26-amd64"): 120, ("ext2", "4.19.0-9-amd64"): 100}, keys=["filesystem", "kernel"])
    v = ClaimChecker(s, df).check_all()[0]
    assert (
        v.outcome == REPRODUCED
        and v.subs[0].detail.startswith("6.1.0-26-amd64 (")
        and " vs 4.19.0-9-amd64 (" in v.subs[0].detail
    )
    one = ClaimChecker(s, _frame({"ext2": 100})).check_all()[0]
    assert one.outcome == NOT_TESTABLE and any("fsmeter merge" in n for n in one.notes)


def test_a_workload_whose_family_is_missing_is_skipped(this_kernel, monkeypatch):
    monkeypatch.setattr(plan_mod, "_workload_problem", lambda base: "no such family" if base == "dbench" else None)
    with pytest.raises(UserError, match="none of its workloads can run.*no such family"):
        plan_study(load_study("gus3-2008"), "quick")
    monkeypatch.setattr(plan_mod, "_workload_problem", lambda base: None)
    assert plan_study(load_study("gus3-2008"), "quick").campaign["workloads"]


def test_workload_levels_become_exclusions(this_kernel):
    """bryant2002: pgmeter runs at 1 thread and 512M, filemark at 128M: their other levels are excluded."""
    p = plan_study(load_study("bryant2002"), "paper")
    ex = p.campaign["exclusions"]
    assert {"workload": "pgmeter-seq-read", "threads": 8} in ex
    assert {"workload": "pgmeter-seq-read", "page_cache_limit": "128M"} in ex
    assert {"workload": "filemark-small-file", "page_cache_limit": "512M"} in ex
    assert not any(e["workload"] == "filemark-small-file" and "threads" in e for e in ex)
    from fsmeter.campaign import parse_campaign
    from fsmeter.campaign import plan as expand

    cells = expand(parse_campaign(p.text(), "t"))
    fm = [c for c in cells if c.workload == "filemark-small-file"]
    assert sorted({c.factors["threads"] for c in fm}) == [1, 8, 64, 128]
    assert {c.factors.get("page_cache_limit") for c in fm} == {"128M"}
    pg = [c for c in cells if c.workload == "pgmeter-oltp-8k"]
    assert len(pg) == 4 * 4 and {c.factors["threads"] for c in pg} == {1}  # 4 filesystems x 4 queue depths


def test_pooled_phases_are_one_sample_per_trial():
    c = {"id": "P", "says": "", "kind": "ranking", "metrics": ["transactions-*.tps"], "tiers": [["ext2"], ["xfs"]]}
    s = _study_with(c)

    def rows(trials):
        return [
            dict(
                workload="w",
                metric_key=f"transactions-{k}.tps",
                higher_is_better=True,
                trial=t,
                filesystem=fs,
                value=v * (1 + 0.01 * k + 0.005 * t),
                phase_s=30.0,
                other_cpu_share=0.01,
            )
            for fs, v in (("ext2", 200), ("xfs", 100))
            for k in (2, 3, 4)
            for t in trials
        ]

    v = ClaimChecker(s, pd.DataFrame(rows(range(4)))).check_all()[0]
    assert v.outcome == REPRODUCED and v.subs[0].context.startswith("transactions-*.tps")
    # three phases of one trial are one observation, not three: nothing to decide on
    assert ClaimChecker(s, pd.DataFrame(rows([1]))).check_all()[0].outcome == INCONCLUSIVE


def test_wettstein_report_tables(tmp_path, monkeypatch):
    from fsmeter.study.report import build_study_view

    s = _comparable(load_study("wettstein2002"))
    db = tmp_path / "w.sqlite"
    _fill_study(s, db, monkeypatch, random.Random(6))
    view = build_study_view(s, db)
    by = {v.claim.id: v for v in view.verdicts}
    assert by["W07"].outcome == REPRODUCED  # block read 30% above block write in every filesystem
    assert by["W08"].outcome == REPRODUCED  # ... so the access mode explains more than the filesystem
    assert by["W01"].outcome == NOT_TESTABLE and any("fsmeter merge" in n for n in by["W01"].notes)
    means = next(t for t in view.tables if t["title"].startswith("Bonnie block read and write"))
    ext2_read = next(r for r in means["rows"] if r[0] == "ext2" and r[1] == "block_read")
    assert "ext2-2.3.0: 12.89 [12.78, 13.00]" in ext2_read[-1]  # the report's Appendix A.3 beside ours
    anova = next(t for t in view.tables if t["title"].startswith("two-factor ANOVA"))
    assert [r[0] for r in anova["rows"]][:3] == ["filesystem", "access_mode", "filesystem:access_mode"]
    assert sum(f["title"].startswith("Q-Q") for f in view.figures) == 4
    # the paper's verdicts beside the run's: W09 and W10 are contradicted by the paper's own runs
    from fsmeter.study.report import headline, run_word

    assert headline(view).endswith("contradicted by the paper's own data: W09, W10")
    assert view.paper["W09"].paper_verdict == "contradicted"
    assert by["W09"].outcome == REPRODUCED  # the synthetic run has no interaction: it "reproduces" the wrong table
    assert run_word(view, by["W09"]) == "reproduced, but contradicted by its own data"
    # side by side, relative to ext2: the paper's ext3 reads at 0.95 of ext2 (12.42 / 13.14 MB/s on 2.4.17),
    # the synthetic run's at about 1.1 (its speeds: ext3 1.1 x ext2)
    rel = next(t for t in view.tables if t["title"].startswith("the paper and this run side by side"))
    row = next(r for r in rel["rows"] if r[1] == "block_read.kbs" and r[2] == "ext3")
    assert row[3] == "0.95" and 1.0 < float(row[4]) < 1.2
    # [study] reference picks the divisor: against ext3, the paper's ext2 reads at 13.14 / 12.42 = 1.06
    s3 = s.model_copy(update={"study": s.study.model_copy(update={"reference": "ext3"})})
    rel = next(t for t in build_study_view(s3, db).tables if t["title"].startswith("the paper and this run"))
    row = next(r for r in rel["rows"] if r[1] == "block_read.kbs" and r[2] == "ext2")
    assert row[3] == "1.06" and any(r[2] == "ext3 (reference)" for r in rel["rows"])


def test_bryant_report_figures_and_aim7_table(tmp_path, monkeypatch):
    """pgmeter against outstanding I/Os and filemark against threads, one line per filesystem; AIM7 vs ext2."""
    from fsmeter.study.report import build_study_view

    s = load_study("bryant2002")
    db = tmp_path / "b.sqlite"
    _fill_study(s, db, monkeypatch, random.Random(5))
    view = build_study_view(s, db)
    titles = [f["title"] for f in view.figures]
    assert "pgmeter-oltp-8k: MiB/s against outstanding I/Os" in titles
    assert "filemark-small-file: transactions/s against threads" in titles
    fig = next(f for f in view.figures if f["title"] == "filemark-small-file: transactions/s against threads")
    lines = {t["name"]: t for t in fig["data"]}
    assert set(lines) == {"ext2", "ext3-ordered", "ext3-writeback", "xfs"}  # reiserfs and jfs cannot run here
    assert lines["ext2"]["x"] == [1.0, 8.0, 64.0, 128.0]
    aim = next(t for t in view.tables if t["title"].startswith("AIM7"))
    rel = {r[0]: r[5] for r in aim["rows"] if r[1] == "2"}
    assert rel["ext2"] == "100%"
    # synthetic speeds: xfs 0.5, ext3 1.1 of ext2 (3% noise)
    assert 45 <= int(rel["xfs"].rstrip("%")) <= 55 and 100 <= int(rel["ext3-ordered"].rstrip("%")) <= 120
    assert any("65%" in r[6] for r in aim["rows"] if r[0] == "ext3-ordered")  # the paper's figure beside


def test_study_report_json_from_the_cli(tmp_path, monkeypatch):
    import json
    import subprocess
    import sys

    s = load_study("wettstein2002")
    db = tmp_path / "w.sqlite"
    _fill_study(s, db, monkeypatch, random.Random(6))
    out = tmp_path / "v.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsmeter",
            "study",
            "report",
            "wettstein2002",
            "--db",
            str(db),
            "-o",
            str(tmp_path / "r.html"),
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    rows = {x["claim"]: x for x in json.loads(out.read_text())}
    assert set(rows) == {c.id for c in s.claims}
    assert rows["W09"]["paper_verdict"] == "contradicted"
    assert rows["W01"]["verdict"] == NOT_TESTABLE
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsmeter",
            "study",
            "report",
            "wettstein2002",
            "--db",
            str(db),
            "--json",
            str(tmp_path / "no" / "v.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 2 and r.stderr.startswith("fsmeter: error: --json")


@pytest.mark.parametrize(
    "column,value,says",
    [("other_cpu_share", 0.6, "the machine was busy"), ("elapsed_s", 0.05, "under the study's minimum")],
)
def test_a_busy_or_short_run_in_the_store_reads_inconclusive(tmp_path, monkeypatch, column, value, says):
    """The store's per-phase regime reaches the gates: the same synthetic run reproduces W07 when quiet
    and long enough, and is inconclusive when other processes took the CPUs or the phases were short."""
    import sqlite3

    from fsmeter.study.report import build_study_view

    s = _comparable(load_study("wettstein2002"))  # the data gates here; the regime gates have tests of their own
    db = tmp_path / "w.sqlite"
    _fill_study(s, db, monkeypatch, random.Random(6))
    con = sqlite3.connect(db)
    con.execute("UPDATE phases SET elapsed_s = 30, other_cpu_share = 0.01")
    con.commit()
    quiet = {v.claim.id: v for v in build_study_view(s, db).verdicts}
    assert quiet["W07"].outcome == REPRODUCED and not quiet["W07"].gates
    con.execute(f"UPDATE phases SET {column} = ? WHERE key = 'block_read'", (value,))
    con.commit()
    con.close()
    noisy = {v.claim.id: v for v in build_study_view(s, db).verdicts}
    assert noisy["W07"].outcome == INCONCLUSIVE and says in noisy["W07"].gates[0]
    assert "on the numbers alone: reproduced" in noisy["W07"].notes
    assert noisy["W08"].outcome == INCONCLUSIVE  # the variation claims rest on the same phases


@pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed: `make sysdeps` as root installs Debian's chromium"
)
@pytest.mark.parametrize("slug", ["gus3-2008", "layton2009", "wettstein2002", "lourdas2009", "bryant2002"])
def test_study_report_renders_in_chromium(tmp_path, slug, monkeypatch):
    """A study report (figures beside the published numbers, verdict table) draws in Chromium too."""
    import random

    from fsmeter.study.model import load_study
    from fsmeter.study.report import build_study_view, write_study_report

    study = load_study(slug)
    db = tmp_path / "s.sqlite"
    _fill_study(study, db, monkeypatch, random.Random(2))
    view = build_study_view(study, db)
    page = tmp_path / "study.html"
    write_study_report(view, page)
    p = load_charts(tmp_path, page)
    assert p.status["data-errors"] == "[]", p.status["data-errors"]
    assert len(p.svgs) == len(view.figures) > 0 and p.status["data-done"] == "true"
    assert not [c for c, k in p.svgs.items() if k == 0]
    assert "confirmed" in page.read_text() or "refuted" in page.read_text()


@pytest.mark.parametrize("slug", ["wettstein2002", "layton2009", "lourdas2009", "bryant2002", "gus3-2008"])
def test_on_storage_much_faster_than_the_papers_every_disk_bound_claim_is_not_comparable(tmp_path, monkeypatch, slug):
    """A run whose probe found a virtual machine's disk (a random 4 KiB read in 0.09 ms, 2.1 GB/s reads,
    0.9 GB/s writes): every claim its paper's disk bound reads 'not comparable here' naming both
    figures (or 'not testable here' when what it compares is absent), and none 'reversed' or 'not
    reproduced', whatever the synthetic numbers say."""
    from fsmeter.store import open_store
    from fsmeter.study.report import build_study_view

    s = load_study(slug)
    db = tmp_path / "s.sqlite"
    _fill_study(s, db, monkeypatch, random.Random(3))
    with open_store(db) as store:
        cid = store.campaigns()[0]["id"]
        store.record_storage_probe(
            cid,
            {
                "storage_class": "loop-image",
                "random_read_ms_p50": 0.09,
                "seq_read_mb_s": 2100.0,
                "seq_write_mb_s": 900.0,
                "flush_ms_p50": 1.0,
                "cpu_mhz": 2445.0,
                "cpus_online": 2,
            },
        )
    disk = {"disk_seeks", "disk_bandwidth"}
    checked = 0
    for v in build_study_view(s, db).verdicts:
        if not disk & set(v.claim.bound_by):
            continue
        assert v.outcome in ("not comparable here", "not testable here"), (v.claim.id, v.outcome, v.gates)
        if v.outcome == "not comparable here":
            checked += 1
            storage = [g for g in v.gates if "this storage" in g]
            assert storage and "the paper's" in storage[0] and "faster" in storage[0], (v.claim.id, v.gates)
    assert checked or not any(disk & set(c.bound_by) for c in s.claims)  # gus3's dbench was cache-bound
