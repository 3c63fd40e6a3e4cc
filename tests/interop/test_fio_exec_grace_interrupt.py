"""ioengine=exec's grace_time as hostile input: a program that ignores SIGTERM, with a grace time of hours, does not
keep an interrupted run waiting (the stop kills it at once); and grace_time takes ASCII whole seconds up to
fsmeter's longest time, refused in one line otherwise."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from fsmeter.interop.fio_run import plan_jobfile
from fuzz_common import result_or_user_error

READER = "[rd]\nrw=read\nsize=256k\nbs=4k\ntime_based\nruntime=1\n"


def _sleepers() -> list:
    out = []
    for d in (d for d in os.listdir("/proc") if d.isdigit()):
        try:
            with open(f"/proc/{d}/cmdline") as f:
                if f.read().startswith("sleep\x00317"):
                    out.append(d)
        except OSError:
            pass
    return out


def test_a_stop_signal_during_the_grace_time_kills_the_program_at_once(tmp_path):
    (tmp_path / "d").mkdir()
    script = tmp_path / "deaf.sh"
    # Says when SIGTERM came (fsmeter is then in the grace time) and goes on waiting for its sleep, which ignores
    # SIGTERM too (fsmeter signals the program's whole process group).
    script.write_text(
        "#!/bin/sh\ntrap 'echo term' TERM\necho started\nsh -c \"trap '' TERM; exec sleep 317\" &\nwait\nwait\n"
    )
    script.chmod(0o755)
    job = tmp_path / "e.fio"
    job.write_text(f"[deaf]\nioengine=exec\nprogram={script}\ntime_based\nruntime=1\ngrace_time=100000\n{READER}")
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
            "--min-phase-s",
            "0",
            "--allow-exec",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out = tmp_path / "d" / "deaf.stdout"
    try:
        for _ in range(1200):  # until the program got its SIGTERM (not a timing bound: it waits for the line)
            if out.exists() and "term" in out.read_text():
                break
            time.sleep(0.1)
        assert out.read_text() == "started\nterm\n"
        p.send_signal(signal.SIGTERM)
        # Before, the stop waited behind the grace time (100000 s here): the run never ended.
        stdout, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 143 and "Traceback" not in stderr
    said = " ".join(stdout.split())  # the console wraps long lines
    assert "deaf.sh: killed by SIGKILL, stopped at its interrupt" in said
    for _ in range(300):  # SIGKILL was sent to the program's group; on a busy machine it may take a moment
        if not _sleepers():
            break
        time.sleep(0.1)
    assert _sleepers() == []


@pytest.mark.parametrize("grace", ["²", "１２", "٣", "99999999999999999999999", "10000001", "-1", "1.5", ""])
def test_grace_time_other_than_ascii_whole_seconds_is_one_line(tmp_path, grace):
    job = tmp_path / "g.fio"
    job.write_text(f"[x]\nioengine=exec\nprogram=true\ntime_based\nruntime=1\ngrace_time={grace}\n{READER}")
    _jobs, err = result_or_user_error(plan_jobfile, str(job), tmp_path, {}, allow_exec=True)
    assert err is not None and f"line 6: grace_time={grace}" in err.message


def test_grace_time_up_to_the_longest_time_is_taken(tmp_path):
    job = tmp_path / "g.fio"
    job.write_text(f"[x]\nioengine=exec\nprogram=true\ntime_based\nruntime=1\ngrace_time=10000000\n{READER}")
    jobs, err = result_or_user_error(plan_jobfile, str(job), tmp_path, {}, allow_exec=True)
    assert err is None


@pytest.mark.parametrize("runtime", ["99999999999", "10000001", "1000000000d"])
def test_an_exec_runtime_past_the_longest_time_is_one_line(tmp_path, runtime):
    # Its timer overflowed in its thread (a traceback) and the run never ended.
    job = tmp_path / "r.fio"
    job.write_text(f"[x]\nioengine=exec\nprogram=true\ntime_based\nruntime={runtime}\n{READER}")
    _jobs, err = result_or_user_error(plan_jobfile, str(job), tmp_path, {}, allow_exec=True)
    assert err is not None and f"line 5: runtime={runtime}: longer than" in err.message
