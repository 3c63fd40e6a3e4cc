"""`fsmeter` run as a user runs it (a child process of this interpreter, wide output for one-line errors), a job
file's text run by `fsmeter run` to its result JSON, and a one-job fio job file mapped as `fsmeter run` maps it:
shared by the tests of fio job files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def fsm(*args, cwd=None, timeout=300, prefix=()) -> subprocess.CompletedProcess:
    """`python -m fsmeter ARGS...` with its output captured (200 columns, so an error stays on one line);
    ``prefix``: a program that runs it (e.g. strace and its options)."""
    return subprocess.run(
        [*prefix, sys.executable, "-m", "fsmeter", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        cwd=cwd,
        timeout=timeout,
    )


def run_jobfile(tmp_path: Path, text: str, *args) -> dict:
    """Write ``text`` as a job file under ``tmp_path`` and run it with `fsmeter run` on ``tmp_path``/w (``args``:
    more options); it must succeed. -> the result JSON."""
    work = tmp_path / "w"
    work.mkdir(exist_ok=True)
    f = tmp_path / "j.fio"
    f.write_text(text)
    out = tmp_path / "out.json"
    r = fsm("run", f, "--dir", work, "--json", out, "-q", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def run_jobfile_in(tmp_path: Path, text: str) -> dict:
    """Like run_jobfile, but from inside ``tmp_path`` with relative names (the job file j.fio, the directory d,
    `--cache keep`), as a user in that folder would: relative log names (write_iolog=, read_iolog=) then mean
    files of ``tmp_path``. -> the result JSON."""
    (tmp_path / "d").mkdir(exist_ok=True)
    (tmp_path / "j.fio").write_text(text)
    r = fsm("run", "j.fio", "--dir", "d", "-q", "--json", "out.json", "--cache", "keep", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return json.loads((tmp_path / "out.json").read_text())


def job_of(text: str):
    """The one job of a job file's text, mapped onto fsmeter's workload (raises UserError as `fsmeter run` would)."""
    from fsmeter.interop.fio.job import map_job
    from fsmeter.interop.fio_jobfile import parse_jobfile

    (j,) = parse_jobfile(text, "t.fio", {}).jobs
    return map_job("t.fio", j, 0)
