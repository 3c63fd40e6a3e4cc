"""The HTML report in headless Chromium: load a page offline and count, per chart, the plots drawn, with
the report's status element (script errors, charts expected and rendered)."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

#: The browser, or None where it is not installed (`make sysdeps` as root installs Debian's chromium).
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def run_chromium(tmp: Path, url: str, *extra: str) -> subprocess.CompletedProcess:
    """Headless, no network services, a private profile; virtual time lets every chart finish drawing."""
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=10000",
        *extra,
        url,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


class Charts(HTMLParser):
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


def load_charts(tmp: Path, page: Path) -> Charts:
    r = run_chromium(tmp, page.as_uri(), "--dump-dom")
    assert r.returncode == 0, r.stderr[-2000:]
    p = Charts()
    p.feed(r.stdout)
    assert p.status, "the report's status element is missing from the DOM"
    return p
