"""The audit of the shipped studies stays complete and its published data stay consistent.

Every claim says where it stands and what its paper's data say; the raw runs that ship with
Wettstein's study are the runs its [published] rows hold, and recomputing the report's ANOVA from
them gives the numbers docs/study-audit.md quotes (checked by hand: Jain's SSAB = r x sum of the
squared interaction effects = 10 x 3.4147 = 34.15 (MB/s)^2 of SST = 174.73, i.e. 19.5%; SSE =
174.73 - 103.15 - 36.25 - 34.15 = 1.19, i.e. 0.68%).
"""

from __future__ import annotations

import csv
import re

import pandas as pd
import pytest
from fsmeter.study.model import STUDY_DIR, load_study, study_paths
from repo_paths import ROOT

FIVE = ("bryant2002", "wettstein2002", "lourdas2009", "layton2009", "gus3-2008")
RUNS = STUDY_DIR / "published" / "wettstein2002-bonnie-runs.csv"


@pytest.mark.parametrize("slug", FIVE)
def test_every_claim_says_where_it_stands_and_what_its_paper_says(slug):
    study = load_study(slug)
    ids = [c.id for c in study.claims]
    assert len(ids) == len(set(ids)), f"{slug}: duplicate claim ids"
    for c in study.claims:
        assert c.source, f"{slug} {c.id}: source (section, table or figure) is missing"
        assert c.expect_paper, f"{slug} {c.id}: expect_paper is missing"
        if c.test != "untestable":
            assert c.reading, f"{slug} {c.id}: reading (how the words became the test) is missing"
        if c.expect_paper == "contradicted":
            assert c.paper_says and c.paper_says.evidence, f"{slug} {c.id}: a contradicted claim shows its evidence"


def test_the_audit_page_lists_every_claim():
    page = (ROOT / "docs" / "study-audit.md").read_text()
    rows = set(re.findall(r"^\| ([A-Z]+[0-9]+[a-z]?) \|", page, flags=re.M))
    for slug in FIVE:
        missing = [c.id for c in load_study(slug).claims if c.id not in rows]
        assert not missing, f"docs/study-audit.md lacks {slug}: {', '.join(missing)}"


def _runs_in_study_file():
    out = {}
    for r in load_study("wettstein2002").published.rows:
        run = (r.get("where") or {}).get("run")
        if run is not None and r.get("metric") == "KB_per_s":
            fs, kernel = r["configuration"].split("-", 1)
            out[(fs, kernel, int(run), r["phase"])] = r["value"]
    return out


def test_packaged_raw_runs_are_the_published_rows():
    rows = list(csv.DictReader(RUNS.open()))
    assert len(rows) == 40
    published = _runs_in_study_file()
    phases = ("putc_write", "block_write", "rewrite", "getc_read", "block_read")
    assert len(published) == 40 * len(phases)
    for r in rows:
        for ph in phases:
            key = (r["filesystem"], r["kernel"], int(r["run"]), ph)
            assert float(r[f"{ph}_kbs"]) == published[key], key


def test_the_reports_anova_recomputed_from_its_runs():
    from fsmeter.stats.anova import ERROR_TERM, factorial_anova

    long = []
    for r in csv.DictReader(RUNS.open()):
        for mode in ("block_read", "block_write"):
            long.append(
                {
                    "setup": f"{r['filesystem']}-{r['kernel']}",
                    "access_mode": mode,
                    "mb_s": float(r[f"{mode}_kbs"]) / 1024.0,
                }
            )
    res = factorial_anova(pd.DataFrame(long), "mb_s", ["access_mode", "setup"], level=0.90)
    share = {t.term: t.pct_variation for t in res.table}
    assert share["access_mode"] == pytest.approx(59.03, abs=0.01)
    assert share["setup"] == pytest.approx(20.74, abs=0.01)
    # the report printed 1.95% and 18.27%
    assert share["access_mode:setup"] == pytest.approx(19.54, abs=0.01)
    assert share[ERROR_TERM] == pytest.approx(0.68, abs=0.01)


def test_the_raw_runs_ship_in_the_wheel():
    text = (ROOT / "pyproject.toml").read_text()
    assert '"python/fsmeter/data/studies/published/*"' in text
    assert "wettstein2002" in study_paths()
