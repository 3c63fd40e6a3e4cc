"""`fsmeter study check`: every claim of the five shipped studies on its own paper's numbers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fsmeter.study.model import STUDY_DIR, load_study, study_paths
from fsmeter.study.paper import check_paper, paper_frame

STUDIES = ["bryant2002", "gus3-2008", "layton2009", "lourdas2009", "wettstein2002"]


def test_the_five_studies_are_shipped():
    assert set(STUDIES) <= set(study_paths())


@pytest.mark.parametrize("slug", STUDIES)
def test_no_claim_is_misjudged_on_its_own_papers_data(slug):
    """The study file writes down what the paper's data say of each claim (expect_paper); the check must agree."""
    results = check_paper(load_study(slug))
    missing = [r.claim.id for r in results if r.expected is None]
    assert not missing, f"{slug}: claims without expect_paper: {', '.join(missing)}"
    wrong = [
        f"{r.claim.id}: expected {r.expected}, got {r.paper_verdict} ({r.why[:300]})" for r in results if r.misjudged
    ]
    assert not wrong, "\n".join(wrong)


def test_wettstein_anova_claims_are_contradicted_by_the_raw_runs():
    """The printed ANOVA forgot the replications: from the 40 raw runs the interaction is ~19.5% of the
    variation and the error ~0.7%, so 'interaction under 2%' and 'about 18% error' fail on the paper's data."""
    study = load_study("wettstein2002")
    by = {r.claim.id: r for r in check_paper(study)}
    for cid in ("W09", "W10"):
        assert by[cid].paper_verdict == "contradicted", by[cid].why
    # the paper's own design: four setups (ext2 on 2.3.0 and 2.4.17, ext3, ReiserFS) x access mode, 10 runs each
    w09 = next(c for c in study.claims if c.id == "W09")
    setups = study.model_copy(
        update={
            "claims": [w09.model_copy(update={"design": ["setup", "access_mode"], "below": {"setup:access_mode": 2.0}})]
        }
    )
    r = check_paper(setups)[0]
    assert r.paper_verdict == "contradicted"
    assert "setup:access_mode 19.5% >= 2%" in r.verdict.subs[0].detail


def test_raw_runs_win_over_the_summary_rows_of_the_same_cell():
    f = paper_frame(load_study("wettstein2002"))
    cell = f[(f["metric_key"] == "block_read.kbs") & (f["filesystem"] == "ext3")]
    assert len(cell) == 10 and cell["sd"].isna().all()  # the ten runs, not the printed mean in MB/s


def test_cli_check_all_writes_json(tmp_path):
    out = tmp_path / "v.json"
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", "study", "check", "--all", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode in (0, 1), r.stderr
    rows = json.loads(out.read_text())
    assert {"claim", "paper_verdict", "why"} <= set(rows[0])
    assert {x["study"] for x in rows} >= set(STUDIES)
    assert {x["paper_verdict"] for x in rows} <= {
        "supported",
        "contradicted",
        "inconclusive",
        "no data",
        "not testable",
    }


@pytest.mark.parametrize(
    "args", [["study", "check"], ["study", "check", "wettstein2002", "--all"], ["study", "check", "nosuch"]]
)
def test_cli_check_bad_input_is_one_line(args, tmp_path):
    r = subprocess.run([sys.executable, "-m", "fsmeter", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "fsmeter: error:" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "old,new,says",
    [
        ("value = 392.2", 'value = "fast"', "published.rows[5].value: 'fast' is not a number"),
        ("stddev = 0.75", "stddev = -0.75", "published.rows[5].stddev: -0.75 is negative"),
        ('n = 10, source = "Table 1"', 'n = 0, source = "Table 1"', "published.rows[0].n: 0: the number of runs"),
    ],
)
def test_a_hostile_study_file_gets_one_line_naming_the_row(tmp_path, old, new, says):
    from fsmeter.errors import UserError

    src = (STUDY_DIR / "layton2009.toml").read_text()
    assert old in src
    bad = tmp_path / "bad.toml"
    bad.write_text(src.replace(old, new, 1))
    with pytest.raises(UserError) as exc:
        load_study(str(bad))
    assert exc.value.message.startswith(f"{bad}: {says}") and "\n" not in exc.value.message
    if "fast" in new:  # and through the command line: exit status 2, one line, no traceback
        r = subprocess.run(
            [sys.executable, "-m", "fsmeter", "study", "check", str(bad)], capture_output=True, text=True, timeout=120
        )
        assert r.returncode == 2 and r.stderr == f"fsmeter: error: {exc.value.message}\n"


def test_population_spreads_become_sample_ones():
    s = load_study("layton2009")
    pop = s.model_copy(update={"published": s.published.model_copy(update={"stddev": "population"})})
    a, b = (
        paper_frame(s.model_copy(update={"published": s.published.model_copy(update={"stddev": "sample"})})),
        paper_frame(pop),
    )
    both = a.assign(sd_pop=b["sd"]).dropna(subset=["sd"])
    both = both[both["sd"] > 0]
    # n = 10 everywhere in Layton's tables: sd x sqrt(10 / 9) = sd x 1.0541
    assert (both["sd_pop"] / both["sd"]).round(4).eq(1.0541).all()
