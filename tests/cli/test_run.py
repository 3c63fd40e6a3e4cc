"""`fsmeter run` as a user runs it: the result JSON, bad input in one line, Ctrl-C and other signals."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fsmeter.spec import build_job, load_workload, parse_set
from procstat import wait_for_worker_cpu


def fsmeter(*args, check=False):
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)], capture_output=True, text=True, check=check
    )


def test_run_fileserver_writes_documented_json(tmp_path):
    out = tmp_path / "out.json"
    d = tmp_path / "d"
    d.mkdir()
    r = fsmeter(
        "run",
        "fileserver",
        "--dir",
        d,
        "--set",
        "duration_s=1",
        "--set",
        "warmup_s=0.2",
        "--set",
        "file_size=16M",
        "--json",
        out,
        "-q",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    for key in (
        "format",
        "version",
        "fsmeter_version",
        "workload",
        "family",
        "job",
        "started_at",
        "host",
        "phases",
        "metrics",
        "interrupted",
    ):
        assert key in doc, key
    assert doc["workload"] == "fileserver" and doc["interrupted"] is False
    assert doc["phases"]["run"]["cache_reset"] in ("drop_caches", "fadvise")
    run = doc["phases"]["run"]
    # It ran for its whole duration (how much longer depends on the machine's load, so no upper bound).
    assert run["elapsed_s"] >= 1.0
    for key in ("total", "ops", "intervals", "cpu", "counters", "extra", "warmup_s", "threads"):
        assert key in run, key
    for op in ("read", "write"):
        lat = run["ops"][op]["lat"]
        assert lat["count"] == run["ops"][op]["count"] > 0
        assert lat["min_ns"] <= lat["p50_ns"] <= lat["p90_ns"] <= lat["p99_ns"] <= lat["p999_ns"] <= lat["max_ns"]
    assert sum(i["ops"] for i in run["intervals"]) == run["total"]["ops"]
    for key in ("user_s", "sys_s", "process_pct", "sys_user_pct", "sys_system_pct", "sys_iowait_pct"):
        assert key in run["cpu"]
    assert doc["metrics"]["run.ops_per_s"]["value"] == pytest.approx(run["total"]["ops_per_s"])
    # Files are removed afterwards unless --keep-files.
    assert list(d.iterdir()) == []
    assert "fileserver / run" in r.stdout and "ops/s" in r.stdout


@pytest.mark.parametrize(
    "setting, fragment",
    [
        ("queue_depth=0", "queue_depth"),
        ("bogus=1", "unknown parameter bogus"),
        ("file_size=12Q", "file_size"),
        ("queue_depth=8", "io_uring"),
        ("set", "key=value"),
    ],
)
def test_bad_set_exits_2_with_one_line(tmp_path, setting, fragment):
    r = fsmeter("run", "fileserver", "--dir", tmp_path, "--set", setting)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fsmeter: error:"), r.stderr
    assert fragment in lines[0]
    assert "Traceback" not in r.stderr


def test_direct_misalignment_is_refused_before_running(tmp_path):
    r = fsmeter("run", "seq-read", "--dir", tmp_path, "--set", "direct=true", "--set", "record_size=1000")
    assert r.returncode == 2
    assert "O_DIRECT" in r.stderr and "multiples of 512" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_unknown_workload_and_missing_dir_are_clear(tmp_path):
    r = fsmeter("run", "nosuch", "--dir", tmp_path)
    assert r.returncode == 2 and "unknown workload 'nosuch'" in r.stderr and "fileserver" in r.stderr
    r = fsmeter("run", "fileserver", "--dir", tmp_path / "missing")
    assert r.returncode == 2 and "not an existing directory" in r.stderr


def test_ctrl_c_stops_the_run_and_keeps_what_was_measured(tmp_path):
    import signal

    out = tmp_path / "out.json"
    d = tmp_path / "d"
    d.mkdir()
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsmeter",
            "run",
            "rand-read-4k",
            "--dir",
            str(d),
            "-q",
            "--set",
            "backend=null",
            "--set",
            "file_size=1M",
            "--set",
            "warmup_s=0",
            "--set",
            "duration_s=120",
            "--json",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The run phase is measuring once a thread other than the main one has used 0.2 s of CPU:
        # prepare (a 1 MiB file, null backend) uses a few milliseconds, imports run on the main thread.
        wait_for_worker_cpu(p, 0.2)
        p.send_signal(signal.SIGINT)
        # Far less than the 120 s the run would last: only the signal can have stopped it in time.
        stdout, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, stderr
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True
    run = doc["phases"]["run"]
    assert run["interrupted"] is True and run["total"]["ops"] > 0
    assert run["elapsed_s"] < 120  # stopped before its deadline
    assert "interrupted" in stdout


@pytest.mark.parametrize("signame,status", [("SIGTERM", 143), ("SIGHUP", 129)])
def test_sigterm_and_sighup_stop_like_ctrl_c_and_remove_the_data_files(tmp_path, signame, status):
    import signal

    out = tmp_path / "out.json"
    d = tmp_path / "d"
    d.mkdir()
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsmeter",
            "run",
            "rand-read-4k",
            "--dir",
            str(d),
            "-q",
            "--set",
            "file_size=1M",
            "--set",
            "warmup_s=0",
            "--set",
            "duration_s=120",
            "--cache",
            "keep",
            "--json",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal, even when the tests themselves run under nohup
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    try:
        # Into the measured phase, however slow the machine: a worker has used 0.2 s of CPU (the
        # 1 MiB file's layout takes milliseconds), not a fixed sleep after the file appeared.
        wait_for_worker_cpu(p, 0.2)
        p.send_signal(getattr(signal, signame))
        stdout, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == status, stderr
    assert "Traceback" not in stderr, stderr
    doc = json.loads(out.read_text())  # written, with what was measured before the stop
    assert doc["interrupted"] is True
    assert list(d.iterdir()) == []  # the data files are gone, as after Ctrl-C


def test_run_loads_only_what_it_uses(tmp_path):
    """Start-up: `fsmeter run` of a short phase loads no other subcommand (campaigns, reports) and no
    numpy (under 10 interval samples there is nothing to compute on); help still lists every command."""
    code = (
        "import sys\nfrom fsmeter.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print(sorted(m for m in sys.modules if m.startswith('fsmeter.cli.') or m == 'numpy'))\n"
    )
    d = tmp_path / "d"
    d.mkdir()
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "run",
            "seq-read",
            "--dir",
            str(d),
            "--set",
            "duration_s=0.3",
            "--set",
            "warmup_s=0",
            "--set",
            "file_size=1M",
            "-q",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    loaded = eval(r.stdout.strip().splitlines()[-1])
    assert "fsmeter.cli.run" in loaded
    assert not {"numpy", "fsmeter.cli.campaign", "fsmeter.cli.report", "fsmeter.cli.compare"} & set(loaded), loaded
    helptext = fsmeter("--help", check=True).stdout
    for cmd in ("analyze", "campaign", "cleanup", "compare-runs", "crash", "doctor", "export", "list", "run", "study"):
        assert cmd in helptext, cmd
    r = fsmeter("compare-runs", "--help", check=True)
    assert "Usage: fsmeter compare-runs" in r.stdout
    r = fsmeter("frobnicate")
    assert r.returncode == 2 and "No such command" in r.stderr


def test_set_takes_comma_separated_lists(tmp_path):
    """`--set tests=0,1` works as `--set tests=[0,1]` for a list parameter."""
    defn = load_workload("iozone-auto")
    plain = build_job(defn, tmp_path, parse_set(["tests=0,1", "file_sizes=64K,128K", "record_sizes=4K"]))
    as_json = build_job(defn, tmp_path, parse_set(["tests=[0,1]", 'file_sizes=["64K","128K"]', 'record_sizes=["4K"]']))
    assert plain.params.tests == as_json.params.tests == [0, 1]
    assert plain.params.file_sizes == as_json.params.file_sizes == [64 << 10, 128 << 10]
    assert plain.params.record_sizes == [4 << 10]
    with pytest.raises(Exception) as err:
        build_job(defn, tmp_path, parse_set(["tests=0,x"]))
    assert "tests" in str(err.value)
    # A parameter that takes a list or a word is left to its own parser.
    aim = load_workload("aim7-shared")
    assert build_job(aim, tmp_path, parse_set(["tasks=peak"])).params.tasks == "peak"
    assert build_job(aim, tmp_path, parse_set(["tasks=1,2,4"])).params.tasks == [1, 2, 4]


@pytest.mark.parametrize("where", ["/proc", "/sys/kernel", "/dev"])
def test_a_kernel_interface_as_dir_is_one_line(where):
    r = subprocess.run(
        [sys.executable, "-m", "fsmeter", "run", "seq-read", "--dir", where, "-q", "--set", "duration_s=0.1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"fsmeter: error: --dir {where} is a kernel interface ("), r.stderr
    assert lines[0].endswith("not a filesystem to measure: name a directory on a real filesystem"), r.stderr
