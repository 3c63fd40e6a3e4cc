"""Campaign reports: terminal ranking tables, verdicts, the HTML file, and campaigns that went wrong."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import report_synth as rs
from fsmeter.report.data import build_view, verdicts
from fsmeter.report.html import render_html, write_report
from fsmeter.report.terminal import phase_table, print_campaign, print_ranking
from fsmeter.store import open_store
from rich.console import Console


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    path = tmp_path_factory.mktemp("synth") / "r.sqlite"
    rs.make_store(path)
    return path


def _text(view) -> str:
    con = Console(record=True, width=250)
    print_campaign(view, con)
    return con.export_text()


def test_ranking_order_groups_and_markers(synth):
    view = build_view(synth)
    seq = next(w for w in view.workloads if w.workload == "seq-read")
    assert seq.varying == ["filesystem", "threads"]
    r = seq.headline.ranking
    # ext4 and xfs at 4 threads are 3% apart (same group); btrfs at 1 thread is 40% of them.
    assert {r[0].name, r[1].name} == {"ext4, threads=4", "xfs, threads=4"}
    assert r[1].group == 1 and r[-1].name == "btrfs, threads=1" and r[-1].group > 1
    assert seq.headline.marker(r[0].name) == "best"
    assert seq.headline.marker(r[1].name) == "same"
    assert seq.headline.marker("btrfs, threads=1") == "worse"
    text = _text(view)
    row = next(line for line in text.splitlines() if "btrfs, threads=1" in line and "▼" in line)
    assert row.replace("│", " ").split()[0] == "9"  # ranked last of nine
    assert "★" in text and "(+1 failed)" in text


def test_per_operation_best_second_and_ascending(synth):
    view = build_view(synth)
    db = next(w for w in view.workloads if w.workload == "dbench-quick")
    assert db.family == "replay"
    assert sorted(o.op for o in db.per_op) == sorted(rs.REPLAY_OPS)
    # xfs is 30% slower on Close, WriteX and Find (synthetic store), so ext4 wins those in a group of its own.
    close = next(o for o in db.per_op if o.op == "Close")
    assert close.ranking[0].name == "ext4" and close.ranking[1].group == 2
    text = _text(view)
    assert "best and second-best configuration per operation" in text
    asc = text[text.index("ascending") :]
    assert asc.index("xfs") < asc.index("ext4")  # ascending throughput: the slower xfs first
    # Access workloads with two op kinds get no per-op table.
    assert next(w for w in view.workloads if w.workload == "seq-read").per_op == []


def test_verdict_in_plain_words(synth):
    v = {x["workload"]: x for x in verdicts(build_view(synth, level=0.90, practical_pct=5))}
    text = v["seq-read"]["text"]
    assert text.startswith("seq-read: best is ext4, threads=4") or text.startswith("seq-read: best is xfs, threads=4")
    assert "90% confidence intervals" in text and "threshold of 5%" in text and "3 trials per configuration" in text
    assert "Significantly worse" in text and "btrfs, threads=1" in text
    assert "btrfs (failed: every trial failed)" in v["dbench-quick"]["notes"][0]


def test_failures_listed_with_cause(synth):
    fails = build_view(synth).failures()
    causes = {(f["workload"], f["configuration"]): f["cause"] for f in fails}
    assert "No space left on device" in causes[("seq-read", "xfs, threads=4")]
    assert "device busy" in causes[("dbench-quick", "btrfs")]


def test_html_is_self_contained_with_every_section(synth, tmp_path):
    out = tmp_path / "report.html"
    write_report(out, synth)
    html = out.read_text()
    from plotly.offline import get_plotlyjs

    assert get_plotlyjs() in html  # plotly.js inlined, whole
    ours = html.replace(get_plotlyjs(), "")
    assert not re.search(r"<script[^>]+src=", ours) and "<link " not in ours, "no external scripts or styles"
    assert not re.search(r"(src|href)=\"(https?:)?//", ours), "nothing fetched from the network"
    assert "Plotly.newPlot" in html and len(html) > 1_000_000  # plotly.js inlined
    for needle in (
        "Verdict",
        "Environment",
        "6.1.0-test",
        "Test CPU",
        "8.0 GiB",
        "mkfs.ext4 -q /dev/loop7",
        "rw,relatime",
        "ANOVA of",
        "Latency percentiles",
        "No space left on device",
        "Per operation: best and second-best",
        "normal Q-Q plot",
        "against threads",
        "by file_size x record_size",
        "interval throughput",
    ):
        assert needle in html, needle
    n_charts = len(re.findall(r'<div class="fsm-chart"', html))
    assert re.search(rf'data-expected="{n_charts}"', html)
    # 3 workloads: bar, trials and intervals each; Q-Q each; a line per numeric factor; iozone heatmaps per fs.
    assert n_charts == 3 * 4 + 1 + 2 + 2


def test_single_cell_and_all_failed_campaigns(tmp_path):
    path = tmp_path / "one.sqlite"
    store = open_store(path)
    cid = store.create_campaign("one", "", [("seq-read", {"filesystem": "ext4"})])
    cell = store.cells(cid)[0]
    rs.add_trials(store, cell["id"], [100.0], "access", "ext4", {}, __import__("random").Random(1))
    cid2 = store.create_campaign(
        "dead", "", [("seq-read", {"filesystem": "ext4"}), ("seq-read", {"filesystem": "xfs"})]
    )
    for c in store.cells(cid2):
        store.record_trial(c["id"], 1, status="interrupted", started="t", cause="interrupted (SIGINT)")
        store.set_cell_status(c["id"], "interrupted", cause="interrupted (SIGINT)")
    store.close()
    one = build_view(path, "one")
    assert "1 trial" in _text(one) and "nothing can be claimed" in verdicts(one)[0]["text"]
    html = render_html(one)
    assert "ext4" in html
    dead = build_view(path, "dead")
    assert len(dead.failures()) == 2 and "SIGINT" in _text(dead)
    assert 'data-expected="0"' in render_html(dead)


def test_report_cli(synth, tmp_path):
    exe = [sys.executable, "-m", "fsmeter"]
    r = subprocess.run([*exe, "report", "synth", "--db", str(synth)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "seq-read" in r.stdout and "verdict" in r.stdout
    out = tmp_path / "r.html"
    r = subprocess.run([*exe, "report", "--db", str(synth), "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0 and out.stat().st_size > 1_000_000
    r = subprocess.run([*exe, "report", "nope", "--db", str(synth)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("fsmeter: error: no campaign 'nope'")
    r = subprocess.run([*exe, "report", "--db", str(tmp_path / "missing.sqlite")], capture_output=True, text=True)
    assert r.returncode == 2 and "no such results database" in r.stderr


def test_print_ranking_and_phase_table_still_work(synth):
    con = Console(record=True, width=200)
    print_ranking(synth, "synth", con)
    assert "iozone-grid" in con.export_text()
    rep = rs.phase_report(100.0, {"read": (1.0, 1000)}, __import__("random").Random(0))
    con.print(phase_table("x", rep))
    assert "read" in con.export_text()
