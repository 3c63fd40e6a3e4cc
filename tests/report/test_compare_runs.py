"""compare-runs: a 20% regression fails the gate (exit 3), a 2% change in noisy data does not (exit 0)."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
import report_synth as rs
from fsmeter.errors import UserError
from fsmeter.report.compare_runs import EXIT_REGRESSION, compare_runs, load_side
from fsmeter.report.export import export
from fsmeter.store import open_store


class _Done:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def _cli(capsys):
    """`fsmeter compare-runs ARGS` in this process (the console-script entry, exit code and all)."""
    from fsmeter.cli import main

    def run(*args):
        capsys.readouterr()
        try:
            main(["compare-runs", *map(str, args)])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        out, err = capsys.readouterr()
        return _Done(code, out, err)

    return run


def test_cli_subprocess_exit_code(tmp_path):
    """The real console entry point, once: exit status 3 reaches the shell."""
    db = tmp_path / "r.sqlite"
    rs.make_pair(db, change_pct=-20, noise_pct=5, n=8)
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", "compare-runs", "A", "B", "--db", str(db)], capture_output=True, text=True
    )
    assert r.returncode == 3, r.stdout + r.stderr


def test_20pct_regression_exits_3(tmp_path, _cli):
    db = tmp_path / "r.sqlite"
    rs.make_pair(db, change_pct=-20, noise_pct=5, n=8)
    r = _cli("A", "B", "--db", db)
    assert r.returncode == EXIT_REGRESSION == 3, r.stdout + r.stderr
    assert "regression" in r.stdout and "run.MiB_per_s" in r.stdout
    res = compare_runs(load_side("A", db), load_side("B", db))
    regs = {(x.config, x.key) for x in res.regressions}
    assert {("ext4", "run.MiB_per_s"), ("xfs", "run.MiB_per_s")} <= regs
    assert all(x.change_pct < -10 for x in res.regressions)
    # Latency did not change: never a regression.
    assert not any(x.key == "run.read_p99_us" for x in res.regressions)


def test_2pct_change_in_noisy_data_exits_0(tmp_path, _cli):
    db = tmp_path / "r.sqlite"
    rs.make_pair(db, change_pct=-2, noise_pct=5, n=8)
    r = _cli("A", "B", "--db", db)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no significant regression" in r.stdout


def test_improvement_is_not_a_regression_and_direction_counts(tmp_path, _cli):
    db = tmp_path / "r.sqlite"
    rs.make_pair(db, change_pct=+20, noise_pct=5, n=8)
    assert _cli("A", "B", "--db", db).returncode == 0
    # The other way round the same data is a regression; a loose threshold lets it pass.
    assert _cli("B", "A", "--db", db).returncode == 3
    assert _cli("B", "A", "--db", db, "--threshold", "30").returncode == 0


def test_lower_is_better_metric_regresses_when_it_rises(tmp_path):
    db = tmp_path / "r.sqlite"
    store = open_store(db)
    rng = random.Random(3)
    for name, scale in (("A", 1.0), ("B", 1.5)):
        cid = store.create_campaign(name, "", [("seq-read", {"filesystem": "ext4"})])
        rs.add_trials(
            store,
            store.cells(cid)[0]["id"],
            [1000.0 * rng.gauss(1, 0.01) for _ in range(6)],
            "access",
            "ext4",
            {},
            rng,
            lat_scale=scale,
        )
    store.close()
    res = compare_runs(load_side("A", db), load_side("B", db))
    assert [x.key for x in res.regressions] == ["run.read_p99_us"]


def test_parameter_mismatch_is_reported_not_merged(tmp_path, _cli):
    db = tmp_path / "r.sqlite"
    store = open_store(db)
    rng = random.Random(5)
    for name, fsize in (("A", 1 << 20), ("B", 2 << 20)):
        cid = store.create_campaign(
            name, "", [("seq-read", {"filesystem": "ext4"}), ("seq-read", {"filesystem": "xfs"})]
        )
        for c in store.cells(cid):
            fs = json.loads(c["factors"])["filesystem"]
            params = {"file_size": fsize if fs == "ext4" else 1 << 20}
            rs.add_trials(
                store,
                c["id"],
                [100.0 * rng.gauss(1, 0.01) * (0.5 if name == "B" else 1) for _ in range(4)],
                "access",
                fs,
                params,
                rng,
            )
    cid = store.create_campaign("C", "", [("rand-read-4k", {"filesystem": "ext4"})])
    rs.add_trials(store, store.cells(cid)[0]["id"], [1.0, 2.0], "access", "ext4", {}, rng)
    store.close()
    res = compare_runs(load_side("A", db), load_side("B", db))
    assert [(w, c) for w, c, _ in res.mismatches] == [("seq-read", "ext4")]
    assert "workload.file_size: 1048576 -> 2097152" in res.mismatches[0][2]
    assert {x.config for x in res.rows} == {"xfs"}  # ext4 was not compared
    r = _cli("A", "B", "--db", db)
    assert "parameters differ" in r.stdout and r.returncode == 3  # xfs really halved
    with pytest.raises(UserError, match="nothing to compare"):
        compare_runs(load_side("A", db), load_side("C", db))
    r = _cli("A", "C", "--db", db)
    assert r.returncode == 2 and r.stderr.startswith("fsmeter: error: nothing to compare")


def test_exported_json_files_compare_like_the_store(tmp_path, _cli):
    db = tmp_path / "r.sqlite"
    rs.make_pair(db, change_pct=-20, noise_pct=5, n=8)
    for name in ("A", "B"):
        (tmp_path / f"{name}.json").write_text(export("json", db, name))
    r = _cli(tmp_path / "A.json", tmp_path / "B.json")
    assert r.returncode == 3, r.stdout + r.stderr
    run_doc = tmp_path / "run.json"
    run_doc.write_text(json.dumps({"format": "fsmeter-run", "version": 1}))
    r = _cli(run_doc, tmp_path / "B.json")
    assert r.returncode == 2 and "significance needs at least 2" in r.stderr


def test_holm_adjusted_p_values_hand_checked():
    """Holm: sort p ascending, multiply the i-th smallest by (m - i), keep the running maximum, cap at 1."""
    from fsmeter.report.compare_runs import Row, _correct

    def row(p, verdict):
        return Row("w", "ext4", "run", f"m{p}", "MiB/s", True, 5, 5, 1.0, 1.0, 0.1, 0.1, -20.0, p, verdict)

    rows = [
        row(0.01, "regression"),
        row(0.04, "regression"),
        row(0.03, "improvement"),
        row(0.2, "no significant change"),
    ]
    _correct(rows, 0.05, "holm")
    # by hand: 0.01*4 = 0.04; 0.03*3 = 0.09; 0.04*2 = 0.08 -> running max 0.09; 0.2*1 = 0.2
    assert [round(r.p_adj, 10) for r in rows] == [0.04, 0.09, 0.09, 0.2]
    assert [r.verdict for r in rows] == [
        "regression",
        "no significant change",
        "no significant change",
        "no significant change",
    ]
    rows = [row(0.01, "regression"), row(0.04, "regression")]
    _correct(rows, 0.05, "none")
    assert [r.p_adj for r in rows] == [0.01, 0.04] and [r.verdict for r in rows] == ["regression"] * 2


def test_many_unchanged_metrics_are_not_flagged_by_chance(tmp_path, _cli):
    """60 configurations, same distribution in A and B: uncorrected Welch flags some, Holm none."""
    db = tmp_path / "r.sqlite"
    store = open_store(db)
    rng = random.Random(11)
    cells = [("seq-read", {"filesystem": "ext4", "bs": f"{k}K"}) for k in range(1, 61)]
    for name in ("A", "B"):
        cid = store.create_campaign(name, "", cells)
        for cell in store.cells(cid):
            rs.add_trials(
                store,
                cell["id"],
                [1000.0 * rng.gauss(1, 0.15) for _ in range(4)],
                "access",
                "ext4",
                {"bs": json.loads(cell["factors"])["bs"]},
                rng,
            )
    store.close()
    raw = compare_runs(load_side("A", db), load_side("B", db), threshold_pct=10, correction="none")
    assert raw.regressions or [r for r in raw.rows if r.verdict == "improvement"], "the data must tempt a raw test"
    holm = compare_runs(load_side("A", db), load_side("B", db), threshold_pct=10)
    assert not holm.regressions and not [r for r in holm.rows if r.verdict == "improvement"]
    assert _cli("A", "B", "--db", db).returncode == 0
    assert _cli("A", "B", "--db", db, "--correction", "none").returncode in (0, 3)
    r = _cli("A", "B", "--db", db, "--correction", "bonferroni")
    assert r.returncode == 2 and "--correction bonferroni" in (r.stdout + r.stderr)


def test_paths_under_the_trial_folder_do_not_count_as_a_parameter_change():
    """The macro workloads carry their trial folder inside command lines; another mount path is the same job."""
    from fsmeter.report.compare_runs import _jobs_from

    def job(d):
        return {
            "job": {"dir": d, "threads": 1, "workload": {"family": "macro", "cp": {"argv": ["cp", "/c/f", f"{d}/x"]}}}
        }

    a = _jobs_from([("macro-quick", {"filesystem": "xfs"}, job("/m/xfs-1-0/trial-1"))])
    b = _jobs_from([("macro-quick", {"filesystem": "xfs"}, job("/m/xfs-2-0/trial-1"))])
    c = _jobs_from([("macro-quick", {"filesystem": "xfs"}, job("/m/xfs-2-0/trial-2"))])
    assert a == b == c
    assert list(a.values())[0]["workload"]["cp"]["argv"] == ["cp", "/c/f", "{dir}/x"]
    d = _jobs_from(
        [
            (
                "macro-quick",
                {"filesystem": "xfs"},
                {"job": {"dir": "/m/a", "threads": 2, "workload": {"family": "macro"}}},
            )
        ]
    )
    assert d != a
