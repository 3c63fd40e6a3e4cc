"""The forest plot of a claim (fsmeter.study.forest): positions read back from the SVG, not by eye."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest
from claim_data import runs_frame, study, summary_frame
from fsmeter.study.claims import ClaimChecker
from fsmeter.study.forest import forest_svg

NS = {"s": "http://www.w3.org/2000/svg"}


def _shape(m: float) -> list[float]:
    return [m - 2, m - 1, m, m + 1, m + 2]


def _svg(claim: dict, run: dict, paper: dict | None = None):
    s = study([claim], rules={"between_run_pct": 2.0})
    v = ClaimChecker(s, runs_frame(run)).check_all()[0]
    pv = ClaimChecker(s, summary_frame(paper), paper=True).check_all()[0] if paper else None
    return v, ET.fromstring(forest_svg(v, pv))


def _value(root, x: float) -> float:
    """An x position back to an effect, by the scale the SVG states."""
    x0, x1 = float(root.get("data-x0")), float(root.get("data-x1"))
    lo, hi = float(root.get("data-lo")), float(root.get("data-hi"))
    if root.get("data-scale") == "log":
        return 10 ** (math.log10(lo) + (x - x0) / (x1 - x0) * (math.log10(hi) - math.log10(lo)))
    return lo + (x - x0) / (x1 - x0) * (hi - lo)


def test_an_ordering_claims_interval_claimed_region_and_paper_marker():
    """xfs 120 against ext3 100 (sd 1.58, n 5 each): +20% with the 90% interval 20 +- 1.86; the claim
    says at least 10% better: shaded from 10% to the right edge. The paper printed 130 against 100: its
    own effect +30%, the diamond."""
    claim = {"kind": "ordering", "tiers": [["xfs"], ["ext3"]], "size_pct": 10.0}
    v, root = _svg(
        claim,
        {("xfs", "a"): _shape(120), ("ext3", "a"): _shape(100)},
        {("xfs", "a"): (130, 1.5, 5), ("ext3", "a"): (100, 1.5, 5)},
    )
    assert v.outcome == "reproduced" and root.get("data-scale") == "linear"
    line = root.find("s:line[@class='interval']", NS)
    lo, hi = _value(root, float(line.get("x1"))), _value(root, float(line.get("x2")))
    assert lo == pytest.approx(20 - 1.8595, abs=0.02) and hi == pytest.approx(20 + 1.8595, abs=0.02)
    dot = root.find("s:circle[@class='estimate']", NS)
    assert _value(root, float(dot.get("cx"))) == pytest.approx(20.0, abs=0.02)
    band = root.find("s:rect[@class='claimed']", NS)
    x, w = float(band.get("x")), float(band.get("width"))
    assert _value(root, x) == pytest.approx(10.0, abs=0.02)
    assert x + w == pytest.approx(float(root.get("data-x1")))  # "at least": open to the right
    diamond = root.find("s:path[@class='paper']", NS)
    xs = [float(p.split(",")[0].lstrip("MLZ ")) for p in diamond.get("d").replace("Z", "").split(" ") if p]
    assert _value(root, (min(xs) + max(xs)) / 2) == pytest.approx(30.0, abs=0.05)
    words = [t.text for t in root.findall("s:text[@class='word']", NS)]
    assert words == ["holds"]
    assert root.find("s:text[@class='claim-word']", NS).text == "reproduced"
    # the interval lies inside the shaded region: the picture says "reproduced"
    assert float(line.get("x1")) > x


def test_an_equivalence_margin_is_shaded_both_ways_and_an_edge_row_says_so():
    """TOST at 5%: shaded from -5% to +5%. xfs 102.2 against 100: [0.34, 4.06], inside the margin but
    within the wobble of it: the row reads "unclear (edge)"."""
    claim = {"kind": "equivalence", "tiers": [["xfs", "ext3"]], "margin_pct": 5.0}
    v, root = _svg(claim, {("xfs", "a"): _shape(102.2), ("ext3", "a"): _shape(100)})
    band = root.find("s:rect[@class='claimed']", NS)
    x, w = float(band.get("x")), float(band.get("width"))
    assert _value(root, x) == pytest.approx(-5.0, abs=0.02) and _value(root, x + w) == pytest.approx(5.0, abs=0.02)
    assert [t.text for t in root.findall("s:text[@class='word']", NS)] == ["unclear (edge)"]
    assert v.outcome == "inconclusive"


def test_a_magnitude_is_drawn_on_a_log_axis():
    """Ratio claimed in [1.5, 3]: xfs 200 against ext3 100, ratio 2.0 inside; the band from 1.5 to 3 on
    a log axis."""
    claim = {"kind": "magnitude", "tiers": [["xfs"], ["ext3"]], "ratio_range": [1.5, 3.0]}
    v, root = _svg(claim, {("xfs", "a"): _shape(200), ("ext3", "a"): _shape(100)})
    assert root.get("data-scale") == "log"
    band = root.find("s:rect[@class='claimed']", NS)
    x, w = float(band.get("x")), float(band.get("width"))
    assert _value(root, x) == pytest.approx(1.5, rel=1e-3) and _value(root, x + w) == pytest.approx(3.0, rel=1e-3)
    dot = root.find("s:circle[@class='estimate']", NS)
    assert _value(root, float(dot.get("cx"))) == pytest.approx(2.0, rel=1e-3)


def test_a_claim_without_comparisons_has_no_plot():
    s = study([{"kind": "untestable", "why": "a judgement"}])
    assert forest_svg(ClaimChecker(s, runs_frame({("xfs", "a"): [1, 2, 3]})).check_all()[0]) == ""
