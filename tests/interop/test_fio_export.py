"""fio-shaped JSON out, read by the real consumers: fio-plot draws a filesystem comparison from a --split export,
fio's fio_jsonplus_clat2csv converts (and validates) a json+ export, and a campaign that ran a fio job file
exports the same way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import report_synth as rs
from fsmeter.interop.fio_export import fio_options
from fsmeter.store import open_store
from fsmeter_cli import fsm

FIO_PLOT = Path(sys.executable).parent / "fio-plot"
CLAT2CSV = shutil.which("fio_jsonplus_clat2csv")


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    path = tmp_path_factory.mktemp("fio-export") / "r.sqlite"
    rs.make_store(path)
    return path


def fio_plot(args: list, cwd: Path) -> list:
    """Runs fio-plot and returns the PNGs it wrote."""
    assert FIO_PLOT.exists(), "fio-plot is a test dependency (make pydeps installs it)"
    before = set(cwd.glob("*.png"))
    r = subprocess.run(
        [str(FIO_PLOT), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    new = sorted(set(cwd.glob("*.png")) - before)
    assert new and all(p.stat().st_size > 10_000 for p in new), r.stdout
    return new


def test_split_layout_and_fio_plot_compares_filesystems(synth, tmp_path):
    out = tmp_path / "split"
    r = fsm("export", "--db", synth, "-f", "fio-json", "--split", out)
    assert r.returncode == 0, r.stderr
    assert "note: dbench-quick left out: not an access workload" in r.stderr
    names = sorted(str(p.relative_to(out)) for p in out.rglob("*.json") if p.name != "fsmeter-index.json")
    assert len(list(out.rglob("*_bw.1.log"))) == len(names)
    assert names == [f"{fs}/read-iodepth-1-numjobs-{n}.json" for fs in ("btrfs", "ext4", "xfs") for n in (1, 2, 4)]
    doc = json.loads((out / "xfs" / "read-iodepth-1-numjobs-4.json").read_text())
    (job,) = doc["jobs"]
    o = job["job options"]
    assert (o["rw"], o["bs"], o["iodepth"], o["numjobs"], o["ioengine"], o["direct"]) == (
        "read",
        "64k",
        "1",
        "4",
        "psync",
        "0",
    )
    # Pooled over the kept trials of the cell (the failed fourth trial is not there).
    assert doc["fsmeter"]["trials"] == [1, 2, 3]
    with open_store(synth, create=False) as st:
        reps = [
            json.loads(r[0])
            for r in st.conn.execute(
                "SELECT p.report FROM phases p JOIN trials t ON t.id = p.trial_id JOIN cells c ON c.id = t.cell_id "
                "WHERE c.workload = 'seq-read' AND c.factors LIKE '%\"xfs\"%' AND c.factors LIKE '%: 4%' "
                "AND p.key = 'run' AND t.status = 'ok'"
            )
        ]
    assert len(reps) == 3
    for d in ("read", "write"):
        assert job[d]["io_bytes"] == sum(r["ops"][d]["bytes"] for r in reps)
        assert job[d]["total_ios"] == sum(r["ops"][d]["count"] for r in reps)
        assert job[d]["runtime"] == round(sum(r["elapsed_s"] for r in reps) * 1000)
        assert sum(job[d]["clat_ns"]["bins"].values()) == job[d]["total_ios"]
    pngs = fio_plot(
        ["-i", out / "ext4", out / "xfs", out / "btrfs", "-T", "filesystems", "-C", "-r", "read", "-d", "1", "-n", "4"],
        tmp_path,
    )
    assert len(pngs) == 1
    fio_plot(["-i", out / "ext4", "-T", "ext4 numjobs", "-N", "-r", "read", "-d", "1", "-n", "1", "2", "4"], tmp_path)
    fio_plot(["-i", out / "xfs", "-T", "xfs depth", "-l", "-r", "read", "-d", "1", "-n", "2"], tmp_path)
    # fio's bw/iops logs from the interval samples: fio-plot -g draws them over time.
    log = (out / "ext4" / "read-iodepth-1-numjobs-2_iops.1.log").read_text().splitlines()
    assert log and all(len(line.split(", ")) == 5 for line in log)
    fio_plot(
        [
            "-i",
            out / "ext4",
            out / "xfs",
            "-T",
            "over time",
            "-g",
            "-t",
            "bw",
            "iops",
            "-r",
            "read",
            "-d",
            "1",
            "-n",
            "2",
        ],
        tmp_path,
    )


def test_jsonplus_is_read_by_fio_jsonplus_clat2csv(synth, tmp_path):
    assert CLAT2CSV, "fio_jsonplus_clat2csv ships with Debian's fio (make sysdeps)"
    plus = tmp_path / "plus.json"
    r = fsm("export", "--db", synth, "-f", "fio-jsonplus", "-o", plus)
    assert r.returncode == 0, r.stderr
    doc = json.loads(plus.read_text())

    def run(*a):
        return subprocess.run(
            [sys.executable, CLAT2CSV, str(plus), str(tmp_path / "lat.csv"), *a],
            capture_output=True,
            text=True,
            timeout=300,
        )

    r = run()
    assert r.returncode == 0, r.stderr
    r = run("--validate")
    assert r.returncode == 0 and r.stdout.count("validated") == len(doc["jobs"]), r.stdout + r.stderr
    # The CSV's counts are the engine's buckets: first job, read clat column.
    lines = (tmp_path / "lat_job0.csv").read_text().splitlines()
    cols = [c.strip() for c in lines[0].split(",")]
    ci = cols.index("read_clat_ns_count")
    csv_bins = {int(row.split(",")[0]): int(row.split(",")[ci]) for row in lines[1:] if row.split(",")[ci].strip()}
    assert csv_bins == {int(k): v for k, v in doc["jobs"][0]["read"]["clat_ns"]["bins"].items()}
    assert sum(csv_bins.values()) == doc["jobs"][0]["read"]["total_ios"]


def test_workloads_fio_cannot_express_are_left_out_with_the_reason():
    entries = [
        {"size": 4096, "weight": 50, "read_pct": 100, "random_pct": 100},
        {"size": 8192, "weight": 50, "read_pct": 0, "random_pct": 100},
    ]
    opts, why = fio_options({"entries": entries, "file_size": 1 << 20}, {})
    assert opts is None and "different read percentages" in why
    entries = [{"size": 4096, "weight": 60, "read_pct": 80, "random_pct": 80}]
    opts, why = fio_options(
        {"entries": entries, "file_size": 1 << 20, "queue_depth": 8}, {"threads": 2, "backend": "io_uring"}
    )
    assert why is None
    assert (
        opts["rw"],
        opts["rwmixread"],
        opts["percentage_random"],
        opts["iodepth"],
        opts["numjobs"],
        opts["ioengine"],
    ) == ("randrw", "80", "80", "8", "2", "io_uring")


def test_campaign_of_a_fio_job_file_exports_for_fio_plot(tmp_path, scratch):
    """workload = "path/job.fio" in a campaign (one workload per job); the stored cells export as fio jobs with
    the file's options."""
    job = tmp_path / "jobs.fio"
    job.write_text(
        "[global]\nsize=4m\nbs=4k\nioengine=psync\n[rr]\nrw=randread\nnorandommap\n[sw]\nstonewall\nrw=write\nbs=64k\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    camp = tmp_path / "c.toml"
    camp.write_text(
        textwrap.dedent(f"""\
        name = "fio-jobs"
        [[workloads]]
        name = "{job}"
        [repetitions]
        policy = "fixed"
        n = 2
        [target]
        kind = "dir"
        path = "{work}"
        """)
    )
    db = tmp_path / "r.sqlite"
    r = fsm("campaign", "run", camp, "--db", db, "-q")
    assert r.returncode == 0, r.stderr
    assert os.listdir(work) == []
    out = tmp_path / "split"
    r = fsm("export", "--db", db, "-f", "fio-json", "--split", out)
    assert r.returncode == 0, r.stderr
    (cfg,) = [p for p in out.iterdir() if p.is_dir()]  # the filesystem the dir target is on
    rr = json.loads((cfg / "randread-iodepth-1-numjobs-1.json").read_text())["jobs"][0]
    sw = json.loads((cfg / "write-iodepth-1-numjobs-1.json").read_text())["jobs"][0]
    assert (rr["job options"]["bs"], rr["job options"]["size"]) == ("4k", "4m")
    assert rr["read"]["total_ios"] == 2 * 1024 and rr["write"]["total_ios"] == 0  # two trials of 4m in 4k
    assert sw["write"]["io_bytes"] == 2 * (4 << 20) and sw["write"]["total_ios"] == 2 * 64
    fio_plot(["-i", cfg, "-T", "job file", "-l", "-r", "randread", "-d", "1", "-n", "1"], tmp_path)


def test_split_refuses_other_formats_and_output(synth, tmp_path):
    r = fsm("export", "--db", synth, "-f", "csv", "--split", tmp_path / "x")
    assert r.returncode == 2 and "--split goes with --format fio-json" in r.stderr
    r = fsm("export", "--db", synth, "-f", "fio-json", "--split", tmp_path / "x", "-o", tmp_path / "y")
    assert r.returncode == 2 and "give one of them" in r.stderr


def test_campaign_names_one_job_of_a_file(tmp_path):
    from fsmeter.campaign import parse_campaign, plan

    job = tmp_path / "jobs.fio"
    job.write_text("[global]\nsize=4m\n[rr]\nrw=randread\n[sw]\nstonewall\nrw=write\n")
    text = f'name = "x"\n[[workloads]]\nname = "{job}:sw"\n[target]\nkind = "dir"\npath = "{tmp_path}"\n'
    cells = plan(parse_campaign(text))
    assert [c.workload for c in cells] == ["jobs.fio:sw"]
    text = text.replace(":sw", ":nope")
    from fsmeter.errors import UserError

    with pytest.raises(UserError, match="workloads\\[0\\].name: .*no job named nope: the jobs are rr, sw"):
        plan(parse_campaign(text))
