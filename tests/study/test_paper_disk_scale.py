"""The paper-disk scale (fsmeter.study.plan): a study's filesystems on a model of the paper's disk, with
the paper's memory ratio, and a storage change that says which drive the model is."""

from __future__ import annotations

import pytest
from fsmeter.errors import UserError
from fsmeter.study.model import load_study, study_paths
from fsmeter.study.plan import DISK_BOUND_RATIO, plan_study
from fsmeter.units import parse_size

STUDIES = sorted(study_paths())


def _paper_disk_studies() -> list[str]:
    return [s for s in STUDIES if "paper-disk" in load_study(s).scales]


def test_wettstein_runs_on_the_cheetah_model_with_the_papers_memory_ratio():
    study = load_study("wettstein2002")
    plan = plan_study(study, "paper-disk")
    target = plan.campaign["target"]
    assert target["kind"] == "disk-model" and target["model"] == "seagate-st39102lw"
    params = plan.campaign["workloads"][0]["params"]
    limit = plan.campaign["factors"]["page_cache_limit"]
    # The study's 1 GiB file on 256 MB, a quarter of each: the file is still 4x the memory.
    assert parse_size(params["size"]) == 4 * parse_size(limit[0])
    storage = next(c for c in plan.changes if c.what == "storage")
    # The study's own drive, as modelled: the storage kind is the paper's (no stand-in).
    assert "seagate-st39102lw" in storage.why and storage.affects == ()
    assert not [c for c in plan.changes if "cache_residency" in c.affects]


@pytest.mark.parametrize("slug", _paper_disk_studies())
def test_every_paper_disk_scale_keeps_disk_bound_workloads_disk_bound(slug):
    study = load_study(slug)
    plan = plan_study(study, "paper-disk")
    assert plan.campaign["target"]["kind"] == "disk-model"
    assert study.scales["paper-disk"].disk_model in plan.campaign["target"]["model"]
    resident = [c.what for c in plan.changes if "cache_residency" in c.affects]
    assert resident == [], f"{slug}: under {DISK_BOUND_RATIO:g}x the page cache: {resident}"
    # Within the 30 minutes the scale is for, by the study's own per-trial estimate (measured times).
    assert plan.est_s <= 30 * 60, plan.est_s


def test_bryant_keeps_filemarks_files_and_memory_and_leaves_out_64_threads_instead():
    # Scaling filemark's 10,000 files and 128 MB down together changed XFS's verdicts (the files per
    # directory are not kept by the ratio of data to memory), so the scale keeps the paper's count and
    # memory and fits the half hour by leaving out the large files at 64 threads.
    plan = plan_study(load_study("bryant2002"), "paper-disk")
    filemark = [w for w in plan.campaign["workloads"] if w["name"].startswith("filemark")]
    assert filemark and all(w["params"]["files"] == 10000 for w in filemark)
    assert "128M" in plan.campaign["factors"]["page_cache_limit"]
    assert any(c.kind == "skipped" and "filemark-large-file at threads = 64" in c.what for c in plan.changes)


def test_gus3_paper_disk_runs_the_posts_dbench_and_leaves_out_cells_no_claim_can_use():
    # Every gus3 claim is sensitive to the run's length: a shorter run makes them all "not
    # comparable here", so the scale keeps the post's 60 s (and dbench's warm-up) and fits 30
    # minutes by leaving out the one-CPU cells, which pinning could never make comparable (a nosmp
    # boot is not pinning), and noop, whose claims are about elevators fsmeter replaces.
    plan = plan_study(load_study("gus3-2008"), "paper-disk")
    params = plan.campaign["workloads"][0]["params"]
    assert params["duration_s"] == 60.0 and "warmup_s" not in params
    assert not [c for c in plan.changes if "duration" in c.affects], plan.changes
    assert plan.campaign["factors"]["cpus"] == [2]
    assert plan.campaign["factors"]["scheduler"] == ["mq-deadline"]
    assert any(c.what == "cpus = UP" and c.kind == "skipped" for c in plan.changes), plan.changes


def test_paper_disk_refuses_a_device_and_puts_guests_on_the_model(monkeypatch):
    from fsmeter.guest import kernels

    study = load_study("wettstein2002")
    with pytest.raises(UserError, match="leave out --device"):
        plan_study(study, "paper-disk", {"kind": "device", "path": "/dev/sdz"})
    from fsmeter.study import plan as study_plan

    monkeypatch.setattr(kernels, "resolve", lambda lv, boot=None: kernels.Kernel(lv, "/boot/vmlinuz-x", "6.1.0-x"))
    real = study_plan._filesystem_problem
    lacks = lambda name: "not in this kernel" if name in ("jfs", "reiserfs") else real(name)  # noqa: E731
    monkeypatch.setattr(study_plan, "_filesystem_problem", lacks)
    plan = plan_study(study, "paper-disk", None, ["6.1"])
    assert plan.campaign["target"]["kind"] == "disk-model"
    assert plan.campaign["factors"]["kernel"] == ["host", "6.1"]  # JFS and ReiserFS in the guest, on the model


def test_a_study_without_the_scale_names_the_ones_it_has(tmp_path):
    from fsmeter.study.model import STUDY_DIR
    from fsmeter.study.model import load_study as load

    text = (STUDY_DIR / "gus3-2008.toml").read_text()
    start = text.index("[scales.paper-disk]")
    without = text[:start] + text[text.index("[[workloads]]", start) :]
    path = tmp_path / "g.toml"
    path.write_text(
        without.replace('paper-disk = { cfq = "skip", noop = "skip" }\n', "").replace(
            'paper-disk = { UP = "skip" }\n', ""
        )
    )
    with pytest.raises(UserError, match="defines no paper-disk scale"):
        plan_study(load(str(path)), "paper-disk")


def _with_scales(extra: str) -> str:
    from fsmeter.study.model import STUDY_DIR

    text = (STUDY_DIR / "wettstein2002.toml").read_text()
    return text.replace("[scales.quick]", extra + "\n[scales.quick]", 1)


@pytest.mark.parametrize(
    "extra, message",
    [
        ('[scales.paper-disc]\ntarget_size = "1G"\nrepetitions = { policy = "fixed", n = 3 }\n', "not a scale"),
        (
            '[scales.huge]\ntarget_size = "1G"\nrepetitions = { policy = "fixed", n = 3 }\n',
            "not a scale fsmeter knows",
        ),
    ],
)
def test_a_study_file_with_an_unknown_scale_is_refused_by_name(tmp_path, extra, message):
    from fsmeter.study.model import load_study as load

    path = tmp_path / "s.toml"
    path.write_text(_with_scales(extra))
    with pytest.raises(UserError, match=message):
        load(str(path))


def test_disk_model_belongs_to_the_paper_disk_scale_and_names_a_profile(tmp_path):
    from fsmeter.study.model import load_study as load

    text = _with_scales("").replace(
        '[scales.quick]\ntarget_size = "1G"', '[scales.quick]\ntarget_size = "1G"\ndisk_model = "seagate-st39102lw"', 1
    )
    path = tmp_path / "a.toml"
    path.write_text(text)
    with pytest.raises(UserError, match="only the paper-disk scale"):
        load(str(path))
    path.write_text(_with_scales("").replace('"seagate-st39102lw"', '"no-such-drive"', 1))
    with pytest.raises(UserError, match="not a disk-model profile"):
        load(str(path))


def test_a_scale_with_its_own_between_run_wobble_judges_its_runs_by_it(tmp_path):
    """A run at a scale with its own calibrated between_run_pct is judged by it; other scales keep the
    [rules]' figure, and a run mixing scales too. Wettstein's paper-disk scale carries the wobble of
    its two paper-disk runs."""
    import re

    from fsmeter.study.model import STUDY_DIR
    from fsmeter.study.model import load_study as load
    from fsmeter.study.view import run_scale

    study = load_study("wettstein2002")
    assert study.rules.between_run_pct == pytest.approx(18.22)
    at = study.at_scale("paper-disk")
    assert at.rules.between_run_pct == pytest.approx(3.66)
    assert "two paper-disk runs of this study" in at.rules.between_run_source
    assert at.rules.level == study.rules.level  # only the wobble changes
    assert study.at_scale("small") is study and study.at_scale(None) is study
    names = ["study-wettstein2002-paper-disk", "study-wettstein2002-paper-disk"]
    assert run_scale(study, names) == "paper-disk"
    assert run_scale(study, [*names, "study-wettstein2002-small"]) is None
    assert run_scale(study, ["my-own-campaign"]) is None
    text = (STUDY_DIR / "wettstein2002.toml").read_text()
    without = re.sub(r"\nbetween_run_source = \"fsmeter study calibrate over two paper-disk[^\n]*", "", text, count=1)
    assert without != text
    path = tmp_path / "s.toml"
    path.write_text(without)
    with pytest.raises(UserError, match="between_run_source"):
        load(str(path))


def _layton_create_rows(filesystems, value, extra=lambda fs, t: {}) -> list[dict]:
    """Rows of the 4 MiB trees' create rate, 3 trials per filesystem, on a quiet 2-CPU machine:
    `value(i, t)` for the i-th filesystem's trial t, `extra(fs, t)` more regime columns."""
    return [
        dict(
            workload=wl,
            metric_key="create.KiB_per_s",
            higher_is_better=True,
            filesystem=fs,
            trial=t,
            value=value(i, t),
            phase_s=30.0,
            other_cpu_share=0.0,
            cache_read_share=None,
            cache_write_share=0.1,
            cpus_online=2,
            cpu_mhz=2400.0,
            **extra(fs, t),
        )
        for wl in ("fdtree-medium-shallow", "fdtree-medium-deep")
        for i, fs in enumerate(filesystems)
        for t in (1, 2, 3)
    ]


def test_a_comparison_across_workloads_the_scale_left_out_is_not_testable_and_says_which():
    """Layton's LA02 divides the small-file trees' create rate by the 4 MiB trees'; the paper-disk scale
    leaves the small-file trees out: not testable here, naming them (not 'too little left')."""
    import pandas as pd
    from fsmeter.study.claims import ClaimChecker
    from fsmeter.study.verdict import NOT_TESTABLE

    study = load_study("layton2009")
    rows = _layton_create_rows(("xfs", "ext4"), lambda i, t: 50000.0 + 100 * t)
    verdicts = {v.claim.id: v for v in ClaimChecker(study, pd.DataFrame(rows)).check_all()}
    v = verdicts["LA02"]
    assert v.outcome == NOT_TESTABLE, (v.outcome, v.reason)
    assert v.reason == "not run here: fdtree-small-shallow, fdtree-small-deep, which the claim compares"


def test_a_workload_at_the_studys_own_ratio_of_data_to_memory_keeps_its_regime(tmp_path):
    """Lourdas's copy (1.9 GB under 4 GB, then sync) was disk-bound by its sync, not by its size: at the
    study's own ratio it is in the study's regime; below that ratio (and under 2x) it is cache-resident."""
    from fsmeter.study.model import STUDY_DIR
    from fsmeter.study.model import load_study as load

    plan = plan_study(load_study("lourdas2009"), "paper-disk")
    assert not [c for c in plan.changes if "cache_residency" in c.affects]
    text = (STUDY_DIR / "lourdas2009.toml").read_text()
    smaller = text.replace(
        'page_cache_limit = "4G"\n[[scales.paper-disk.leave_out]]',
        'page_cache_limit = "6G"\n[[scales.paper-disk.leave_out]]',
        1,
    )
    assert smaller != text
    path = tmp_path / "l.toml"
    path.write_text(smaller)
    resident = [c for c in plan_study(load(str(path)), "paper-disk").changes if "cache_residency" in c.affects]
    assert [c.what for c in resident] == ["cp-tar-rm: cache-resident"]


def test_a_stand_in_model_is_comparable_storage_and_the_verdict_says_it_is_one():
    """A documented stand-in of the paper's disk class changes no storage kind (the resource gates still
    compare its measured figures with the paper's); the note names it a stand-in, the own drive not."""
    from fsmeter.study.gates import model_note

    assert model_note(["disk-model:ata-80gb-2001"]).startswith("on a model of the paper's disk class (a stand-in")
    assert model_note(["disk-model:seagate-st39102lw"]) == (
        "on a model of the paper's disk (disk-model:seagate-st39102lw)"
    )
    assert model_note(["disk-model:no-such-drive"]).startswith("on a model of the paper's disk (")


def test_late_replies_name_the_steal_of_their_phases():
    """On a virtual machine the host's other guests take CPU time as steal, which no process owns: where a
    disk model's replies were late, the gate names the steal of the phases the claim rests on when it
    passed 1% of the CPUs' time, and says nothing of it below."""
    import pandas as pd
    from fsmeter.study.claims import ClaimChecker
    from fsmeter.study.gates import data_gates

    def gates(steal):
        return data_gates(
            min_trials=3,
            trials=3,
            min_phase_s=None,
            settle_s=None,
            max_other_cpu_share=0.1,
            regime={"disturbed": True, "other_cpu_share": 0.0, "steal_share": steal},
        )

    assert gates(0.022) == [
        "the disk model's replies were late in a phase it rests on: their lateness p99 exceeded 5% of the mean "
        "modelled service time, or all their lateness 5% of all their service, so this machine's scheduling is "
        "in the figures (the hypervisor took up to 2.2% of the CPUs' time, as steal, in a phase it rests on: "
        "work outside this machine: another guest's, or the host's own)"
    ]
    assert "steal" not in gates(0.005)[0] and "steal" not in gates(None)[0]

    study = load_study("layton2009")
    late_trial = ("ext4", 2)
    rows = _layton_create_rows(
        ("ext2", "ext3", "ext4", "xfs", "btrfs"),
        lambda i, t: 50000.0 + 1000 * i + 100 * t,
        lambda fs, t: dict(
            storage_class="disk-model:seagate-st3500641as",
            storage_read_mb_s=64.0,
            storage_write_mb_s=64.0,
            storage_read_latency_ms=15.0,
            storage_flush_ms=10.0,
            disturbed=1.0 if (fs, t) == late_trial else 0.0,
            steal_share=0.025 if (fs, t) == late_trial else 0.001,
        ),
    )
    late = [
        g
        for v in ClaimChecker(study, pd.DataFrame(rows)).check_all()
        for g in v.gates
        if g.startswith("the disk model's replies were late")
    ]
    # the claims resting on ext4's second trial (LA04, LA10, LA11) name its steal; the others have no gate
    assert len(late) == 3 and all("up to 2.5% of the CPUs' time, as steal" in g for g in late)
