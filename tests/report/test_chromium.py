"""The HTML report in a real browser: headless Chromium loads it offline, no script error, every chart drawn."""
from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

import report_synth as rs
from fsmeter.report.html import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed: `make sysdeps` as root "
                                                         "installs Debian's chromium")


def _chromium(tmp: Path, url: str, *extra: str) -> subprocess.CompletedProcess:
    """Headless, no network services, a private profile; virtual time lets every chart finish drawing."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={tmp / 'profile'}", "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=10000", *extra, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


class _Charts(HTMLParser):
    """Per chart div (class fsm-chart): how many svg.main-svg elements it holds; plus the status element."""

    VOID = {"br", "img", "input", "meta", "link", "hr", "col", "area", "base", "wbr", "source"}

    def __init__(self):
        super().__init__()
        self.stack: list = []  # open elements: chart id or None
        self.svgs: dict = {}
        self.status: dict = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if a.get("id") == "fsm-status":
            self.status = a
        chart = a.get("id") if "fsm-chart" in classes else None
        if chart:
            self.svgs[chart] = 0
        if tag == "svg" and "main-svg" in classes:
            owner = next((c for c in reversed(self.stack) if c), None)
            if owner:
                self.svgs[owner] += 1
        if tag not in self.VOID:
            self.stack.append(chart)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.stack:
            self.stack.pop()


def _load(tmp: Path, page: Path) -> _Charts:
    r = _chromium(tmp, page.as_uri(), "--dump-dom")
    assert r.returncode == 0, r.stderr[-2000:]
    p = _Charts()
    p.feed(r.stdout)
    assert p.status, "the report's status element is missing from the DOM"
    return p


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
    p = _load(tmp, page)
    assert p.status["data-errors"] == "[]", p.status["data-errors"]
    n = len(p.svgs)
    assert n == 17 and p.status["data-expected"] == str(n)
    assert p.status["data-rendered"] == str(n) and p.status["data-done"] == "true"
    empty = [c for c, k in p.svgs.items() if k == 0]
    assert not empty, f"charts without a plot: {empty}"
    shot = tmp / "report.png"
    r = _chromium(tmp, page.as_uri(), f"--screenshot={shot}", "--window-size=1280,3000")
    assert r.returncode == 0 and shot.stat().st_size > 10_000, r.stderr[-2000:]


def test_a_script_error_is_caught(report):
    """The check can fail: the same page with a broken script reports the error and the chart it broke."""
    tmp, page = report
    html = page.read_text()
    bad = tmp / "broken.html"
    bad.write_text(html.replace("</body>", "<script>noSuchFunction();</script></body>")
                   .replace("Plotly.newPlot(f.id", "Plotly.newPlot(f.id === 'w0-bar' ? 'no-such-div' : f.id", 1))
    p = _load(tmp, bad)
    errors = p.status["data-errors"]
    assert "noSuchFunction" in errors and "w0-bar" in errors
    assert int(p.status["data-rendered"]) == int(p.status["data-expected"]) - 1
    assert p.svgs["w0-bar"] == 0


@pytest.mark.parametrize("slug", ["gus3-2008", "layton2009", "wettstein2002", "lourdas2009", "bryant2002"])
def test_study_report_renders(tmp_path, slug, monkeypatch):
    """A study report (figures beside the published numbers, verdict table) draws in Chromium too."""
    import random

    from test_study import _fill_study
    from fsmeter.study.model import load_study
    from fsmeter.study.report import build_study_view, write_study_report

    study = load_study(slug)
    db = tmp_path / "s.sqlite"
    _fill_study(study, db, monkeypatch, random.Random(2))
    view = build_study_view(study, db)
    page = tmp_path / "study.html"
    write_study_report(view, page)
    p = _load(tmp_path, page)
    assert p.status["data-errors"] == "[]", p.status["data-errors"]
    assert len(p.svgs) == len(view.figures) > 0 and p.status["data-done"] == "true"
    assert not [c for c, k in p.svgs.items() if k == 0]
    assert "confirmed" in page.read_text() or "refuted" in page.read_text()
