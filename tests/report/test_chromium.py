"""The HTML report in a real browser: headless Chromium loads it offline, no script error, every chart drawn."""

from __future__ import annotations

import pytest
import report_synth as rs
from chromium import CHROMIUM, load_charts, run_chromium
from fsmeter.report.html import write_report

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed: `make sysdeps` as root installs Debian's chromium"
)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("chromium")
    db = tmp / "r.sqlite"
    rs.make_store(db)
    out = tmp / "report.html"
    write_report(out, db)
    return tmp, out


def test_every_chart_renders_without_script_errors(report):
    tmp, page = report
    p = load_charts(tmp, page)
    assert p.status["data-errors"] == "[]", p.status["data-errors"]
    n = len(p.svgs)
    assert n == 17 and p.status["data-expected"] == str(n)
    assert p.status["data-rendered"] == str(n) and p.status["data-done"] == "true"
    empty = [c for c, k in p.svgs.items() if k == 0]
    assert not empty, f"charts without a plot: {empty}"
    shot = tmp / "report.png"
    r = run_chromium(tmp, page.as_uri(), f"--screenshot={shot}", "--window-size=1280,3000")
    assert r.returncode == 0 and shot.stat().st_size > 10_000, r.stderr[-2000:]


def test_a_script_error_is_caught(report):
    """The check can fail: the same page with a broken script reports the error and the chart it broke."""
    tmp, page = report
    html = page.read_text()
    bad = tmp / "broken.html"
    bad.write_text(
        html.replace("</body>", "<script>noSuchFunction();</script></body>").replace(
            "Plotly.newPlot(f.id", "Plotly.newPlot(f.id === 'w0-bar' ? 'no-such-div' : f.id", 1
        )
    )
    p = load_charts(tmp, bad)
    errors = p.status["data-errors"]
    assert "noSuchFunction" in errors and "w0-bar" in errors
    assert int(p.status["data-rendered"]) == int(p.status["data-expected"]) - 1
    assert p.svgs["w0-bar"] == 0
