"""fio's exec engine under `fsmeter run --allow-exec`: the program runs beside its group, is stopped at the job's
runtime, gets %r and %n substituted, writes <job>.stdout/.stderr with std_redirect; without the flag, and with a
program that cannot run, one line."""

from __future__ import annotations

import json
import os

from fsmeter_cli import fsm

READER = "[rd]\nioengine=psync\nrw=read\nsize=256k\nbs=4k\n"


def _run(tmp_path, text: str, *flags):
    (tmp_path / "d").mkdir(exist_ok=True)
    job = tmp_path / "e.fio"
    job.write_text(text)
    out = tmp_path / "o.json"
    r = fsm("run", job, "--dir", tmp_path / "d", "-q", "--cache", "keep", "--json", out, *flags, timeout=120)
    return r, (json.loads(out.read_text()) if r.returncode == 0 else None)


def test_exec_is_refused_without_allow_exec_and_nothing_runs(tmp_path):
    marker = tmp_path / "ran"
    r, _ = _run(
        tmp_path, f"[x]\nioengine=exec\nprogram=/bin/touch\narguments={marker}\ntime_based\nruntime=1\n" + READER
    )
    assert r.returncode == 2
    err = r.stderr.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith("fsmeter: error: ") and "line 2: ioengine=exec" in err and "--allow-exec" in err
    assert not marker.exists()


def test_runtime_stops_the_program_and_r_n_are_substituted(tmp_path):
    # sleep would take 30 s: runtime=1 stops it with SIGTERM; the script echoes its arguments first.
    script = tmp_path / "prog.sh"
    script.write_text('#!/bin/sh\necho "args:$1:$2"\necho oops >&2\nexec sleep 30\n')
    script.chmod(0o755)
    r, doc = _run(
        tmp_path,
        f"[global]\ntime_based\nruntime=1\n[mon]\nioengine=exec\nprogram={script}\n"
        "arguments=%r  %n\ngrace_time=1\n" + READER,
        "--allow-exec",
    )
    assert r.returncode == 0, r.stderr
    (rec,) = doc["exec"]
    assert rec["argv"] == [str(script), "1", "mon"]  # fio splits at spaces, empty pieces dropped
    assert rec["stopped_by"] == "runtime" and rec["signal"] == "SIGTERM"
    d = tmp_path / "d"
    assert (d / "mon.stdout").read_text() == "args:1:mon\n"
    assert (d / "mon.stderr").read_text() == "oops\n"
    assert "exec: job mon (line 4) ran" in r.stdout and "SIGTERM" in r.stdout
    assert not os.path.exists(f"/proc/{rec['pid']}")  # stopped and reaped: nothing of it is left


def test_program_ending_early_reports_its_exit_status_without_redirect(tmp_path):
    r, doc = _run(
        tmp_path,
        "[global]\ntime_based\nruntime=1\n[sl]\nioengine=exec\nprogram=/bin/sh\n"
        "arguments=-c exit_3\nstd_redirect=0\n" + READER,
        "--allow-exec",
    )
    assert r.returncode == 0, r.stderr
    (rec,) = doc["exec"]
    assert rec["status"] == "exited" and rec["exit_status"] == 127  # sh: "exit_3" is no command
    assert "stopped_by" not in rec
    assert not (tmp_path / "d" / "sl.stdout").exists()


def test_a_group_of_exec_jobs_only_lasts_its_runtime(tmp_path):
    r, doc = _run(
        tmp_path,
        "[sl]\nioengine=exec\nprogram=true\narguments=%r\ntime_based\nruntime=1\ngrace_time=0\n"
        "[rd]\nstonewall\nioengine=psync\nrw=read\nsize=256k\nbs=4k\n",
        "--allow-exec",
    )
    assert r.returncode == 0, r.stderr
    (rec,) = doc["exec"]
    assert rec["argv"] == ["true", "1"] and rec["exit_status"] == 0 and "stopped_by" not in rec
    assert list(doc["jobs"]) == ["rd"]


def test_a_missing_program_is_one_line_and_the_run_goes_on(tmp_path):
    r, doc = _run(
        tmp_path,
        "[global]\ntime_based\nruntime=1\n[m]\nioengine=exec\nprogram=/nonexistent/prog\n" + READER,
        "--allow-exec",
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    (rec,) = doc["exec"]
    assert rec["status"] == "not started" and "No such file or directory" in rec["error"]
    assert "cannot run /nonexistent/prog: No such file or directory" in r.stdout
    assert doc["jobs"]["rd"]  # the reader still ran
    assert "cannot run /nonexistent/prog" in (tmp_path / "d" / "m.stderr").read_text()


def test_exec_without_program_or_runtime_is_one_line(tmp_path):
    r, _ = _run(tmp_path, "[m]\nioengine=exec\ntime_based\nruntime=1\n" + READER, "--allow-exec")
    assert r.returncode == 2 and "needs program=" in r.stderr and "\n" not in r.stderr.strip()
    r, _ = _run(tmp_path, "[m]\nioengine=exec\nprogram=sleep\n" + READER, "--allow-exec")
    assert r.returncode == 2 and "give runtime= and time_based" in r.stderr


def test_an_interrupted_run_leaves_no_program_behind(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "d").mkdir()
    script = tmp_path / "long.sh"
    script.write_text("#!/bin/sh\necho started\nexec sleep 120\n")
    script.chmod(0o755)
    job = tmp_path / "e.fio"
    job.write_text(f"[global]\ntime_based\nruntime=20\n[lng]\nioengine=exec\nprogram={script}\n{READER}")
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsmeter",
            "run",
            str(job),
            "--dir",
            str(tmp_path / "d"),
            "-q",
            "--cache",
            "keep",
            "--allow-exec",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out = tmp_path / "d" / "lng.stdout"
    try:
        for _ in range(600):  # until the program has started (not a timing bound: it waits for the file)
            if out.exists() and out.read_text():
                break
            time.sleep(0.1)
        assert out.read_text() == "started\n"
        p.send_signal(signal.SIGTERM)  # handled as Ctrl-C is (SIGINT may be ignored in a background test run)
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    # The program was signalled before fsmeter exited; on a busy machine it may take a moment to die, so wait
    # for it (bounded), then nothing may be left.
    for _ in range(300):
        # The whole command line: a prefix would also match another program's `sleep 1200`.
        left = [d for d in os.listdir("/proc") if d.isdigit() and _cmdline(d) == "sleep\x00120\x00"]
        if not left:
            break
        time.sleep(0.1)
    assert left == []


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read()
    except OSError:
        return ""


def test_the_program_runs_beside_its_group_until_its_runtime_after_the_io_jobs_end(tmp_path):
    # The reader is sized (256 KiB, done at once); the program still runs to the exec job's runtime, and it was
    # started before the reader's files were removed (it sees the reader's file while it runs).
    script = tmp_path / "look.sh"
    script.write_text("#!/bin/sh\nls\nexec sleep 30\n")
    script.chmod(0o755)
    r, doc = _run(
        tmp_path,
        f"[mon]\nioengine=exec\nprogram={script}\ntime_based\nruntime=1\ngrace_time=0\n"
        "[rd]\nioengine=psync\nrw=read\nsize=256k\nbs=4k\nfilename=seen.dat\n",
        "--allow-exec",
    )
    assert r.returncode == 0, r.stderr
    (rec,) = doc["exec"]
    assert rec["stopped_by"] == "runtime"
    assert "seen.dat" in (tmp_path / "d" / "mon.stdout").read_text().split()


def test_an_option_no_fio_job_has_is_refused_in_an_exec_job(tmp_path):
    r, _ = _run(
        tmp_path, "[m]\nioengine=exec\nprogram=true\ntime_based\nruntime=1\nprogam=x\n" + READER, "--allow-exec"
    )
    assert r.returncode == 2 and "line 6" in r.stderr and "progam" in r.stderr and "\n" not in r.stderr.strip()


def test_output_files_stay_in_the_jobs_directory(tmp_path):
    r, _ = _run(tmp_path, "[../escape]\nioengine=exec\nprogram=true\ntime_based\nruntime=1\n" + READER, "--allow-exec")
    assert r.returncode == 2 and "line 1" in r.stderr and "std_redirect=0" in r.stderr
    assert not (tmp_path / "escape.stdout").exists()
    # a group of exec jobs only, with no directory named anywhere: refused, not run in the current directory
    job = tmp_path / "nodir.fio"
    job.write_text(
        "[m]\nioengine=exec\nprogram=true\ntime_based\nruntime=1\n[rd]\nstonewall\nrw=read\n"
        f"size=64k\nfilename={tmp_path}/f\n"
    )
    r = fsm("run", job, "-q", "--allow-exec", cwd=tmp_path)
    assert r.returncode == 2 and "give --dir D or an absolute directory=" in r.stderr
    assert not (tmp_path / "m.stdout").exists()


def test_allow_exec_is_refused_where_there_is_no_exec_job_to_run(tmp_path):
    (tmp_path / "d").mkdir()
    r = fsm("run", "seq-read", "--dir", tmp_path / "d", "--allow-exec")
    assert r.returncode == 2 and "--allow-exec runs the programs of a fio job file" in r.stderr
