"""Study scales (fsmeter.study.plan): small keeps the study's regime, quick says it does not, and
every change names what it affects."""

from __future__ import annotations

import pytest
from fsmeter.errors import UserError
from fsmeter.study.model import SENSITIVITIES, load_study, study_paths
from fsmeter.study.plan import DISK_BOUND_RATIO, Change, changes_of, plan_study
from fsmeter.units import parse_size

STUDIES = sorted(study_paths())


def _affected(plan) -> set:
    return {a for c in plan.changes for a in c.affects}


def test_change_lines_keep_what_they_affect():
    c = Change("shrunk", "w: file_size 1G -> 256M", "quick scale | functional", ("file_size", "duration"))
    assert Change.parse(c.line()) == c
    old = "# study-change: skipped | configuration jfs | not in this kernel"  # before `affects` existed
    assert Change.parse(old) == Change("skipped", "configuration jfs", "not in this kernel")


@pytest.mark.parametrize("slug", STUDIES)
def test_every_study_has_a_small_scale_and_names_only_known_sensitivities(slug):
    study = load_study(slug)
    assert "small" in study.scales, f"{slug}: no [scales.small]"
    for scale in ("small", "quick", "paper"):
        plan = plan_study(study, scale)
        assert _affected(plan) <= set(SENSITIVITIES), (scale, _affected(plan) - set(SENSITIVITIES))
        assert changes_of(plan.text()) == plan.changes
        # Every re-run stands on other storage and another kernel than the study's.
        assert {"storage_kind", "kernel"} <= _affected(plan)


@pytest.mark.parametrize("slug", STUDIES)
def test_small_keeps_disk_bound_workloads_disk_bound_and_quick_says_it_does_not(slug):
    study = load_study(slug)
    small, quick = plan_study(study, "small"), plan_study(study, "quick")
    disk = [w for w in study.workloads if w.regime == "disk"]
    resident = lambda p: {c.what.split(":")[0] for c in p.changes if "cache_residency" in c.affects}  # noqa: E731
    assert resident(small) == set()
    # Quick shrinks data: what it leaves under twice its page cache (or cannot tell) it marks.
    assert resident(quick) <= {w.id for w in disk}
    if slug in ("layton2009", "lourdas2009"):
        assert resident(quick) == {w.id for w in disk} != set()
    for w in disk:
        if not w.footprint:
            continue
        params = next(x["params"] for x in small.campaign["workloads"] if x["label"] == w.id)
        from fsmeter.spec import load_workload

        data = parse_size(params.get(w.footprint, load_workload(w.base).params.get(w.footprint)))
        levels = small.campaign["factors"]["page_cache_limit"]
        limit = (
            parse_size(small.levels["page_cache_limit"][str(w.levels["page_cache_limit"])])
            if "page_cache_limit" in w.levels
            else max(parse_size(x) for x in levels)
        )
        assert data >= DISK_BOUND_RATIO * limit, (w.id, data, limit)


def test_small_keeps_the_file_sizes_claims_rest_on():
    """Layton's 4 MiB fdtree files stay 4 MiB at the small scale (counts shrink); quick shrinks them."""
    study = load_study("layton2009")
    small, quick = plan_study(study, "small"), plan_study(study, "quick")
    for p, kept in ((small, True), (quick, False)):
        for w in p.campaign["workloads"]:
            if w["label"].startswith("fdtree-medium"):
                assert (w["params"]["file_blocks"] == 1000) is kept
        sized = [c for c in p.changes if "file_size" in c.affects and "fdtree-medium" in c.what]
        assert bool(sized) is not kept
    assert small.campaign["factors"]["page_cache_limit"] == ["256M"]


def test_small_is_the_default_and_a_missing_scale_is_a_clear_error(tmp_path):
    from fsmeter.study.model import STUDY_DIR

    text = (STUDY_DIR / "gus3-2008.toml").read_text()
    cut = text.index("[scales.small]")
    end = text.index("[[workloads]]")
    own = tmp_path / "mine.toml"
    own.write_text(text[:cut] + text[end:])
    with pytest.raises(UserError, match="defines no small scale: use --scale paper or quick"):
        plan_study(load_study(str(own)), "small")
    import inspect

    from fsmeter.cli import study as cli_study

    src = " ".join(inspect.getsource(cli_study.run).split())
    assert '"small", "--scale"' in src


def test_a_scale_can_leave_factor_levels_out():
    p = plan_study(load_study("bryant2002"), "small")
    assert p.campaign["factors"]["queue_depth"] == [1]
    assert p.campaign["factors"]["threads"] == [1, 64]
    skipped = {c.what for c in p.changes if c.kind == "skipped"}
    assert {"queue_depth = 4", "queue_depth = 16", "queue_depth = 64", "threads = 8", "threads = 128"} <= skipped
    assert plan_study(load_study("bryant2002"), "paper").campaign["factors"]["queue_depth"] == [1, 4, 16, 64]


def test_page_cache_limit_too_large_for_the_data_makes_it_cache_resident():
    study = load_study("lourdas2009")
    # 1.9 GB copy < 2 x 8 GiB, and a smaller share of the memory than the study's 1.9 GB of 4 GB
    study.scales["small"].page_cache_limit = "8G"
    p = plan_study(study, "small")
    hit = [c for c in p.changes if "cache_residency" in c.affects]
    assert [c.what for c in hit] == ["cp-tar-rm: cache-resident"]
    assert "2x the 8GiB" in hit[0].why
    study.scales["small"].page_cache_limit = "1G"  # under 2x, but more than the study's own ratio
    assert not [c for c in plan_study(study, "small").changes if "cache_residency" in c.affects]
