"""Two runs of a study: the claims whose word changed (study compare-runs) and the between-run wobble
(study calibrate), on synthetic runs and stores whose answer is known."""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import sqlite3
import subprocess
import sys

import pytest
from claim_data import runs_frame, study
from fsmeter.study.claims import ClaimChecker
from fsmeter.study.repeat import between_run, case_diffs, word_changes, word_pairs

ORDER = {"kind": "ordering", "tiers": [["xfs"], ["ext3"]]}


def _shape(m: float) -> list[float]:
    return [m - 2, m - 1, m, m + 1, m + 2]


def _run(xfs: float):
    s = study([ORDER, {**ORDER, "id": "D", "tiers": [["ext3"], ["xfs"]]}], rules={"between_run_pct": 2.0})
    return ClaimChecker(s, runs_frame({("xfs", "a"): _shape(xfs), ("ext3", "a"): _shape(100)})).check_all()


def test_a_flip_is_found_with_both_words_and_intervals():
    """Run a: xfs 110 against 100 (C0 reproduced, D reversed); run b: xfs 90 (C0 reversed, D reproduced)."""
    a, b = _run(110), _run(90)
    ch = word_changes("test", a, b)
    assert [(c.claim, c.word_a, c.word_b, c.flip) for c in ch] == [
        ("C0", "reproduced", "reversed", True),
        ("D", "reversed", "reproduced", True),
    ]
    assert "+10.0% [+8.1, +11.9]" in ch[0].intervals_a[0] and "-10.0% [-11.9, -8.1]" in ch[0].intervals_b[0]
    assert word_pairs(ch) == {"flips": 2, "via inconclusive": 0, "other": 0}
    # through inconclusive is a change, not a flip
    c = word_changes("test", a, _run(102.5))
    assert c and not any(x.flip for x in c) and word_pairs(c)["via inconclusive"] == len(c)
    assert word_changes("test", a, _run(110)) == []


def test_the_between_run_wobble_by_hand():
    """One comparison per claim. C0 (xfs vs ext3, % of ext3's 100): +10% then -10%, se 1.0 each: d = -20,
    z = -20 / sqrt(2) = -14.1, d^2 - se_a^2 - se_b^2 = 400 - 2 = 398. D (ext3 vs xfs, % of xfs's mean):
    -10/110 = -9.0909% (se 100/110 = 0.9091) then +10/90 = +11.1111% (se 1.1111): d^2 = 20.2020^2 =
    408.12, less 0.8264 + 1.2346: 406.06. B^2 = (398 + 406.06) / 2 = 402.03, B = 20.051."""
    diffs = case_diffs("test", _run(110), _run(90))
    assert len(diffs) == 2
    d = diffs[0]
    assert (d.effect_a, d.effect_b, d.se_a, d.se_b) == pytest.approx((10.0, -10.0, 1.0, 1.0))
    assert d.z == pytest.approx(-20 / math.sqrt(2))
    b = between_run(diffs)
    assert b.estimate_pct == pytest.approx(20.051, abs=1e-3)
    assert b.estimate_pct <= b.upper_pct <= math.sqrt(406.07)  # resampling two claims: at most D's alone
    # the same run twice: no difference, no between-run part
    same = between_run(case_diffs("test", _run(110), _run(110)))
    assert same.estimate_pct == 0.0 and same.rms_diff == 0.0


def test_a_claim_gated_in_either_run_is_left_out_of_the_wobble():
    """A stalled trial in run a (one xfs trial at 0.6 where the others are near 110, as a disk model
    that stopped serving gives) makes that run's standard error huge: with it, C0's d^2 - se^2 is far
    below 0 and would pull B down. A gate on C0 in run a leaves C0 out; D, ungated, stays."""
    a, b = _run(110), _run(110)
    stalled = {**ORDER, "id": "C0"}
    s = study([stalled], rules={"between_run_pct": 2.0})
    a_bad = ClaimChecker(
        s, runs_frame({("xfs", "a"): [108, 109, 0.6, 111, 112], ("ext3", "a"): _shape(100)})
    ).check_all()
    assert between_run(case_diffs("test", a_bad, b[:1])).estimate_pct == 0.0  # the stall drags B to 0
    a[0].gates.append("the disk model's replies were late in a phase it rests on")
    from fsmeter.study.repeat import gated_claims

    g = gated_claims(a, b)
    assert g == {"C0": ["the disk model's replies were late in a phase it rests on"]}
    kept = case_diffs("test", a, b, leave_out=set(g))
    assert [d.claim for d in kept] == ["D"]
    # a comparability gate ("not comparable here": the paper's regime differs) leaves the two runs'
    # figures as good a measure of the wobble as any: D stays
    b[1].outcome = "not comparable here"
    b[1].gates.append("this run changed what the claim is about: storage")
    assert gated_claims(a, b) == g
    assert case_diffs("test", a, b, leave_out=set()) and len(case_diffs("test", a, b)) == 2


def test_a_known_between_run_sd_is_recovered():
    """Synthetic pairs with se 1 in each run and a between-run part of sd 3: the moment estimate of B
    from 400 comparisons lies near 3 (its sampling error is about 0.2 here)."""
    from fsmeter.study.repeat import CaseDiff

    rng = random.Random(7)
    diffs = []
    for i in range(400):
        e = rng.uniform(-20, 20)
        ea, eb = e + rng.gauss(0, 1), e + rng.gauss(0, 1) + rng.gauss(0, 3)
        diffs.append(CaseDiff("s", f"C{i}", "", "x", "y", "%", ea, 1.0, eb, 1.0))
    b = between_run(diffs)
    assert 2.5 < b.estimate_pct < 3.5 and b.upper_pct >= b.estimate_pct


def _cli(*args, timeout=900):
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", "study", *args], capture_output=True, text=True, timeout=timeout
    )


def test_compare_runs_and_calibrate_on_two_stores(tmp_path, monkeypatch):
    """Two synthetic stores of one study; in the second every xfs cell is 4x faster. compare-runs lists
    the claims whose word changed (exit 3 on a flip between decisive words), calibrate every comparison
    in both runs; both refuse the same run twice."""
    import importlib.util
    from pathlib import Path

    from fsmeter.study.model import load_study

    spec = importlib.util.spec_from_file_location("study_fill", Path(__file__).with_name("test_study.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # the synthetic study store the report tests fill
    _fill_study = mod._fill_study

    s = load_study("layton2009")
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    _fill_study(s, a, monkeypatch, random.Random(4))
    shutil.copy(a, b)
    con = sqlite3.connect(b)
    con.execute(
        "UPDATE metrics SET value = value * 4 WHERE trial_id IN (SELECT t.id FROM trials t JOIN cells c "
        "ON c.id = t.cell_id WHERE c.factors LIKE '%\"xfs%')"
    )
    con.commit()
    con.close()
    out = tmp_path / "changes.json"
    r = _cli("compare-runs", "layton2009", "--db", str(a), "--db-b", str(b), "--json", str(out))
    assert r.returncode in (0, 3), r.stderr
    changes = json.loads(out.read_text())
    assert "claim(s) changed their word" in r.stdout
    assert (r.returncode == 3) == any(c["flip"] for c in changes)
    for c in changes:
        assert c["run_a"] != c["run_b"] and set(c) >= {"intervals_a", "intervals_b"}
    cal = tmp_path / "cal.json"
    r = _cli("calibrate", "layton2009", "--db", str(a), "--db-b", str(b), "--json", str(cal))
    assert r.returncode == 0, r.stderr
    doc = json.loads(cal.read_text())
    xfs = [c for c in doc["comparisons"] if "xfs" in (c["a"], c["b"])]
    other = [c for c in doc["comparisons"] if "xfs" not in (c["a"], c["b"])]
    assert xfs and all(abs(c["difference"]) > 50 for c in xfs)  # 4x: far beyond sampling
    assert other and all(c["difference"] == pytest.approx(0.0, abs=1e-9) for c in other)
    assert "between_run_pct = " in r.stdout
    # the report: the summary grid links every claim to its section; the terminal's compact table first,
    # the evidence tables behind -v
    html = tmp_path / "r.html"
    r = _cli("report", "layton2009", "--db", str(a), "-o", str(html))
    assert r.returncode == 0, r.stderr
    assert "layton2009:" in r.stdout and "evidence per comparison" not in r.stdout
    page = html.read_text()
    grid = page[page.index('id="verdict-grid"') : page.index('id="verdicts"')]
    ids = re.findall(r'href="#claim-([^"]+)"', grid)
    assert sorted(ids) == sorted(c.id for c in s.claims)
    assert all(f'id="claim-{i}"' in page for i in ids)
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="forest"') >= 1
    assert "<th>adjusted p</th>" in page
    r = _cli("report", "layton2009", "--db", str(a), "-o", str(html), "-v")
    assert r.returncode == 0 and "evidence per comparison" in r.stdout
    r = _cli("compare-runs", "layton2009", "--db", str(a))
    assert r.returncode == 2 and r.stderr.startswith("fsmeter: error: study compare-runs: run a and run b are the same")
    r = _cli("calibrate", "layton2009", "--db", str(a), "--db-b", str(tmp_path / "none.sqlite"))
    assert r.returncode == 2 and "--db-b" in r.stderr
