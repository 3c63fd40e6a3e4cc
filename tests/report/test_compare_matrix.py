"""The compare matrix (workloads x filesystems) and outlier trials: synthetic stores, no timing."""

from __future__ import annotations

import json
import random
import re

import pytest
from fsmeter.report.data import build_view
from fsmeter.report.matrix import build_matrix, cell_text, fmt_short, print_matrix
from fsmeter.stats.outliers import find_outliers, modified_z_scores
from fsmeter.store import open_store
from report_synth import phase_report
from rich.console import Console

FS = ["ext2", "ext3", "ext4", "xfs", "btrfs"]
SEQ = [{"size": 65536, "weight": 100, "read_pct": 100, "random_pct": 0}]
RAND = [{"size": 4096, "weight": 100, "read_pct": 80, "random_pct": 100}]
#: workload -> (family, metrics [(phase, name, unit)], headline first; job params)
SUITE = {
    "seq-read": ("access", [("run", "ops_per_s", "ops/s"), ("run", "MiB_per_s", "MiB/s")], {"entries": SEQ}),
    "seq-write": ("access", [("run", "ops_per_s", "ops/s"), ("run", "MiB_per_s", "MiB/s")], {"entries": SEQ}),
    "fileserver-4k": ("access", [("run", "ops_per_s", "ops/s"), ("run", "MiB_per_s", "MiB/s")], {"entries": RAND}),
    "oltp-8k": ("access", [("run", "ops_per_s", "ops/s"), ("run", "MiB_per_s", "MiB/s")], {"entries": RAND}),
    "postmark-quick": ("fileset", [("transactions", "transactions_per_s", "tx/s")], {"mode": "postmark"}),
    "fdtree-quick": ("tree", [("create", "files_per_s", "files/s")], {"levels": 3}),
    "dbench-quick": ("replay", [("run", "MB_per_s", "MB/s")], {}),
}
#: Means per filesystem (headline units), chosen so every verdict is known in advance.
MEANS = {
    "seq-read": {"ext2": 2000, "ext3": 1950, "ext4": 2100, "xfs": 2050, "btrfs": 1155},  # 4 tie, btrfs 45% slower
    "seq-write": {"ext2": 1000, "ext3": 1500, "ext4": 3050, "xfs": 2990, "btrfs": 600},
    "fileserver-4k": {"ext2": 51_000, "ext3": 50_000, "ext4": 80_000, "xfs": 123_456, "btrfs": 40_000},
    "oltp-8k": {"ext2": 9000, "ext3": 9100, "ext4": 9050, "xfs": 8950, "btrfs": 9020},  # all tie
    "postmark-quick": {"ext2": 9000, "ext3": 6000, "ext4": 6500, "xfs": 5000, "btrfs": 3000},
    "fdtree-quick": {"ext2": 33_500, "ext3": 20_000, "ext4": 21_000, "xfs": 15_000, "btrfs": 9000},
    "dbench-quick": {"ext2": 300, "ext3": 250, "ext4": 260, "xfs": 240, "btrfs": 120},
}
NOISE = 0.01


def _env(fs: str, family: str, params: dict, busy_other_pct: float = 0.0) -> dict:
    return {
        "hostname": "h",
        "kernel": "6.1",
        "cpu_model": "cpu",
        "mem_bytes": 8 << 30,
        "cpus_online": 2,
        "cpus_used": 1,
        "target_kind": "loop",
        "device": "/dev/loop7",
        "fs": fs,
        "cache_method": "remount",
        "seed": 42,
        "fsmeter_version": "0.1.0",
        "job": {
            "dir": "/x",
            "threads": 1,
            "seed": 42,
            "backend": "psync",
            "interval_s": 1.0,
            "workload": {"family": family, **params},
        },
    }


def _trial(store, cell_id: int, number: int, wl: str, fs: str, value: float, rng, busy_pct: float = 5.0) -> None:
    family, metrics, params = SUITE[wl]
    rep = phase_report(10.0, {"read": (1.0, 50_000)}, rng, elapsed_s=1.0, n_int=4)
    # sys_* are shares of all (2) CPUs; fsmeter itself used 3% of one CPU.
    rep["cpu"].update({"sys_user_pct": busy_pct / 2, "sys_system_pct": busy_pct / 2, "sys_idle_pct": 100 - busy_pct})
    phase = metrics[0][0]
    ms = []
    for i, (ph, name, unit) in enumerate(metrics):
        v = value if i == 0 else value * 64 / 1024  # 64 KiB records: MiB/s = ops/s / 16
        ms.append({"phase": ph, "name": name, "unit": unit, "higher_is_better": True, "value": v, "headline": i == 0})
    store.record_trial(
        cell_id,
        number,
        status="ok",
        started=f"2024-01-01T00:00:{number:02d}Z",
        phases=[{"key": phase, "engine_phase": phase, "cache_method": "remount", "report": rep}],
        metrics=ms,
        environment=_env(fs, family, params),
    )


def make_suite_store(path, overrides: dict | None = None, n: int = 4, seed: int = 3) -> int:
    """The quick suite's shape: 7 workloads x 5 filesystems, ``n`` trials per cell near MEANS.
    overrides: (workload, fs) -> explicit list of trial values, or a (values, busy_pct per trial) pair."""
    rng = random.Random(seed)
    overrides = overrides or {}
    store = open_store(path)
    cells = [(wl, {"filesystem": fs}) for fs in FS for wl in SUITE]
    cid = store.create_campaign("quick-compare", "name = 'quick-compare'\nmin_phase_s = 1\n", cells)
    for c in store.cells(cid):
        fs = json.loads(c["factors"])["filesystem"]
        wl = c["workload"]
        spec = overrides.get((wl, fs))
        busy = None
        if isinstance(spec, tuple):
            spec, busy = spec
        values = spec if spec is not None else [MEANS[wl][fs] * rng.gauss(1.0, NOISE) for _ in range(n)]
        for i, v in enumerate(values, 1):
            _trial(store, c["id"], i, wl, fs, v, rng, busy_pct=busy[i - 1] if busy else 5.0)
        store.set_cell_status(c["id"], "done", stop_reason="time-cap" if spec is not None else "target-met")
    store.set_campaign_status(cid, "done")
    store.close()
    return cid


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    db = tmp_path_factory.mktemp("matrix") / "m.sqlite"
    # ext2 / postmark: a wide, unresolved cell; btrfs / dbench: one trial only; xfs / fdtree: an outlier trial
    # during which the rest of the machine was busy (95% of 2 CPUs against 5%).
    overrides = {
        ("postmark-quick", "ext2"): [9000, 1200, 1300, 9100],
        ("dbench-quick", "btrfs"): [120],
        ("fdtree-quick", "xfs"): ([15_000, 15_100, 14_900, 15_050, 4000], [5, 5, 5, 5, 95]),
    }
    make_suite_store(db, overrides)
    return db


_RENDERED: dict = {}


def render(db, width: int = 100) -> tuple:
    """The matrix of ``db`` and its text at ``width`` columns (built once per store)."""
    if db not in _RENDERED:
        mx = build_matrix(build_view(db))
        con = Console(width=width, record=True, color_system=None)
        print_matrix(mx, con)
        _RENDERED[db] = (mx, con.export_text())
    return _RENDERED[db]


def test_matrix_fits_100_columns_without_wrapping_or_cutting(suite):
    mx, text = render(suite)
    lines = text.splitlines()
    assert all(len(line) <= 100 for line in lines)
    assert "…" not in text
    header = next(line for line in lines if line.startswith("workload"))
    assert header.split() == ["workload", "unit", *FS]
    for r in mx.rows:  # each workload is one table line holding every one of its cells whole
        row_lines = [line for line in lines if line.startswith(r.workload + " ")]
        assert len(row_lines) == 2  # the table row and its verdict line
        table_line = row_lines[0]
        for fs in FS:
            assert cell_text(r.cells[fs]) in table_line, (r.workload, fs, table_line)
    units = {r.workload: r.unit for r in mx.rows}
    assert units == {
        "seq-read": "MiB/s",
        "seq-write": "MiB/s",
        "fileserver-4k": "IOPS",
        "oltp-8k": "IOPS",
        "postmark-quick": "tx/s",
        "fdtree-quick": "files/s",
        "dbench-quick": "MB/s",
    }


def test_natural_units_show_the_right_figures(suite):
    mx, _ = render(suite)
    row = {r.workload: r for r in mx.rows}
    # seq-read shows MiB/s (ops/s / 16 here), not the ops/s headline
    assert row["seq-read"].metric == "run.MiB_per_s"
    assert row["seq-read"].cells["ext4"].mean == pytest.approx(2100 / 16, rel=0.03)
    assert row["fileserver-4k"].metric == "run.ops_per_s"
    assert cell_text(row["fileserver-4k"].cells["xfs"]).startswith("★ 124k ±")


def test_best_tied_and_verdicts(suite):
    mx, _ = render(suite)
    row = {r.workload: r for r in mx.rows}
    seq = row["seq-read"]
    assert seq.cells["ext4"].mark == "best"
    assert {fs for fs in FS if seq.cells[fs].mark == "tied"} == {"ext2", "ext3", "xfs"}
    assert seq.cells["btrfs"].mark == ""
    assert seq.verdict == "ext4, xfs, ext2 and ext3 tie; btrfs 45% slower"
    assert row["oltp-8k"].verdict == "all 5 tie"
    assert re.fullmatch(
        r"xfs best; ext4 35% slower, ext2 5\d% slower, ext3 (59|60)% slower, btrfs 68% slower",
        row["fileserver-4k"].verdict,
    ), row["fileserver-4k"].verdict
    assert row["seq-write"].verdict.startswith("ext4 and xfs tie; ext3 51% slower")


def test_unresolved_cells_are_marked_with_their_reason_and_not_ranked(suite):
    mx, text = render(suite)
    row = {r.workload: r for r in mx.rows}
    pm = row["postmark-quick"].cells["ext2"]
    assert pm.mark == "unresolved" and pm.half_width_pct > 25
    assert row["postmark-quick"].cells["ext4"].mark == "best"  # ext2's higher but loose mean does not win
    assert row["postmark-quick"].verdict.endswith("; unresolved: ext2")
    db = row["dbench-quick"].cells["btrfs"]
    assert db.mark == "unresolved" and "1 usable trial" in db.reason
    notes = dict(mx.footnotes)
    assert "ext2 / postmark-quick: unresolved: " in notes[pm.footnotes[0]]
    assert "wider than the ±25% a ranking needs; the cell's time cap stopped it" in notes[pm.footnotes[0]]
    assert cell_text(pm) in text and cell_text(pm).startswith("unresolved")


def test_outlier_trial_is_shown_explained_and_kept(suite):
    mx, text = render(suite)
    row = {r.workload: r for r in mx.rows}
    cell = row["fdtree-quick"].cells["xfs"]
    assert [o.trial for o in cell.outliers] == [5]
    o = cell.outliers[0]
    assert o.score < -3.5 and "machine was loaded" in o.explanation
    # kept: the mean includes the outlier
    assert cell.mean == pytest.approx((15_000 + 15_100 + 14_900 + 15_050 + 4000) / 5)
    note = dict(mx.footnotes)[cell.footnotes[-1]]
    assert "trial 5 is an outlier" in note and "modified z-score" in note and "kept in the mean" in note
    assert "1.9 CPUs busy" in note  # 95% of 2 CPUs minus fsmeter's own 3% of one
    assert cell_text(cell) == "unresolved†"
    assert cell_text(row["fdtree-quick"].cells["ext4"]).endswith("%")  # no outlier: no mark


def test_campaign_show_lists_outliers(suite):
    from fsmeter.cli.campaign import trial_outliers_table

    t = trial_outliers_table(suite, 1)
    con = Console(width=200, record=True, color_system=None)
    con.print(t)
    out = con.export_text()
    assert "fdtree-quick" in out and "xfs" in out and "4,000 files/s" in out


def test_html_report_has_matrix_and_outlier_notes(suite, tmp_path):
    from fsmeter.report.html import write_report

    out = tmp_path / "r.html"
    write_report(out, suite, None)
    html = out.read_text()
    assert 'id="matrix"' in html and "trial 5 is an outlier" in html and "unresolved" in html


@pytest.mark.parametrize(
    "v,expected",
    [
        (0.1234, "0.123"),
        (85.34, "85.3"),
        (512.2, "512"),
        (999.7, "1,000"),
        (1234.4, "1,234"),
        (12_345, "12.3k"),
        (123_456, "123k"),
        (1_234_567, "1.23M"),
        (None, "-"),
    ],
)
def test_fmt_short(v, expected):
    assert fmt_short(v) == expected


# -- outlier method, hand-checked ---------------------------------------------------------------------------


def test_modified_z_score_hand_checked():
    # median 11; |x - 11| = 1, 0, 1, 0, 19 -> MAD = 1; M(30) = 0.6745 * 19 / 1 = 12.8155
    scores = modified_z_scores([10, 11, 12, 11, 30])
    assert scores == pytest.approx([-0.6745, 0.0, 0.6745, 0.0, 12.8155])
    out = find_outliers([10, 11, 12, 11, 30])
    assert [(o.index, o.value) for o in out] == [(4, 30.0)]
    assert out[0].median == 11


def test_modified_z_score_mad_zero_uses_mean_absolute_deviation():
    # median 5, MAD 0; MeanAD = (0+0+0+0+4)/5 = 0.8; M(9) = 4 / (1.253314 * 0.8) = 3.98939
    assert modified_z_scores([5, 5, 5, 5, 9])[4] == pytest.approx(3.98939, rel=1e-5)
    assert [o.index for o in find_outliers([5, 5, 5, 5, 9])] == [4]
    assert find_outliers([5, 5, 5]) == []


def test_no_outliers_judged_below_three_values_or_in_a_tight_sample():
    assert find_outliers([1, 100]) == []
    assert find_outliers([100, 101, 99, 102, 98]) == []
    # 102 scores 0.6745 * 2 / 0.1 = 13.5 against three near-equal trials, but is 2% from the median: not far
    assert modified_z_scores([100.0, 100.1, 99.9, 102.0])[3] > 3.5
    assert find_outliers([100.0, 100.1, 99.9, 102.0]) == []
    assert len(find_outliers([100.0, 100.1, 99.9, 102.0], min_rel_pct=0)) == 1
    # 3 values: median 10, MAD = min(0.5, 20) ... = 0.5 -> M(30) = 0.6745 * 20 / 0.5 = 26.98
    assert [o.index for o in find_outliers([10, 10.5, 30])] == [2]


def test_busy_machine_is_noted(tmp_path):
    from fsmeter.report.matrix import machine_load

    quiet_db, busy_db = tmp_path / "q.sqlite", tmp_path / "b.sqlite"
    make_suite_store(quiet_db, n=3)
    over = {(wl, fs): ([MEANS[wl][fs] * f for f in (0.99, 1.0, 1.01)], [96, 96, 96]) for wl in SUITE for fs in FS}
    over[("oltp-8k", "xfs")] = ([9000, 9100, 8900, 9000, 2000], [96, 97, 96, 96, 97])
    make_suite_store(busy_db, over, n=3)
    assert build_matrix(build_view(quiet_db)).load_note == ""
    other, cpus = machine_load(build_view(busy_db))
    assert cpus == 2 and other == pytest.approx(0.96 * 2 - 0.03)
    con = Console(width=100, record=True, color_system=None)
    print_matrix(build_matrix(build_view(busy_db)), con)
    assert "other processes kept a median of 1.9 of its 2 CPUs busy" in " ".join(con.export_text().split())
    (o,) = build_matrix(build_view(busy_db)).outliers
    assert o.trial == 5 and "saturated during it and its siblings" in o.explanation


def test_worst_case_every_cell_unresolved_with_an_outlier_still_fits(tmp_path):
    db = tmp_path / "w.sqlite"
    over = {(wl, fs): [MEANS[wl][fs] * f for f in (1.0, 1.01, 0.99, 1.0, 3.0)] for wl in SUITE for fs in FS}
    make_suite_store(db, over)
    mx, text = render(db)
    assert all(c.mark == "unresolved" and c.outliers for r in mx.rows for c in r.cells.values())
    lines = text.splitlines()
    assert all(len(line) <= 100 for line in lines) and "…" not in text
    for r in mx.rows:
        line = next(line for line in lines if line.startswith(r.workload + " "))
        assert line.split()[1:] == [r.unit] + ["unresolved†"] * 5
    assert "nothing resolved: ext2, ext3, ext4, xfs, btrfs" in text


def test_html_verdict_speaks_the_matrix_metric_unit_and_judgement(tmp_path):
    from fsmeter.report.html import build_context, write_report

    db = tmp_path / "v.sqlite"
    # xfs / seq-read: a mean near the best but an interval far wider than ±25%: unresolved in the matrix,
    # where a verdict on the ops/s headline would call it "not significantly worse" than the best
    make_suite_store(db, {("seq-read", "xfs"): [1200, 2900, 1500, 2800]})
    view = build_view(db)
    seq_row = {r.workload: r for r in build_matrix(view).rows}["seq-read"]
    assert seq_row.cells["xfs"].mark == "unresolved"
    seq = {v["workload"]: v["text"] for v in build_context(view)["verdicts"]}["seq-read"]
    assert re.match(
        r"seq-read: best is ext4 at 131\.\d ± [\d.]+ MiB/s on run\.MiB_per_s \(MiB/s, higher is better\)", seq
    ), seq
    assert "ops/s" not in seq and "not significantly worse" not in seq
    tied = seq.split("Tied with the best: ")[1].split(". ")[0]
    assert {t.split(" (")[0] for t in tied.split(", ")} == {fs for fs in FS if seq_row.cells[fs].mark == "tied"}
    assert "Significantly worse: btrfs (-45" in seq
    assert "Unresolved, so not ranked: xfs (" in seq and "wider than the ±25% a ranking needs" in seq
    write_report(tmp_path / "r.html", db)
    page = (tmp_path / "r.html").read_text()
    verdict_section = page.split('id="verdict"')[1].split('id="matrix"')[0]
    assert "seq-read: best is ext4 at 131." in verdict_section and "not significantly worse" not in verdict_section
