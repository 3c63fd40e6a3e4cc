"""One hostile input run through the real command line, and what became of it (scripts/fuzz_surfaces.py).

A case is a command line after `fsmeter`, the files it needs in a folder of its own (`{work}` in its arguments
and files is that folder; `{work}/d` is an empty directory to measure), what the input is known to be
(``invalid``: a reason it must be refused, "" for no opinion), and what the command may write. The run is
sorted into one outcome:

  error      exit 1 or 2 with one `fsmeter: error: ...` line (what bad input gets)
  ran        exit 0 (or 1 or 130 after a run that started and reported)
  unclean    an exit without a one-line error where one was due (click's usage box, a bare exit 2)
  traceback  a Python traceback on stderr
  panic      a Rust panic
  hang       no exit within the timeout (the process group is killed)
  escape     a file outside `{work}/d` appeared or changed that the command was not named to write, or an
             input it only reads (a store, a kernel image) changed
  acted-on   an input known to be invalid was acted on: exit 0, or a stand-in program (mpirun, QEMU) was
             started, or the case's own detector found work done (a campaign stored, an image made)

Stand-in programs: a case may ask for `mpirun`, `qemu-system-x86_64`, ... on PATH that only leave a mark in
``{work}/started-<name>`` and exit 1, so that nothing long or heavy runs and starting one is seen.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

OUTCOMES = ["error", "ran", "unclean", "traceback", "panic", "hang", "escape", "acted-on"]
#: Outcomes that are defects.
BAD = {"unclean", "traceback", "panic", "hang", "escape", "acted-on"}
#: Folders of a case that fsmeter may use for itself (its lock folder, its scratch folder).
INTERNAL = ("lock", "scratch", "bin")


@dataclass
class Case:
    surface: str
    how: str
    args: list
    files: dict = field(default_factory=dict)  # name -> bytes ({work} replaced)
    setup: Callable | None = None  # fn(work: Path) after the files are written: links, stores, ...
    invalid: str = ""  # why the input must be refused ("" = no opinion)
    allowed: tuple = ()  # names under {work} the command may create or change (its outputs)
    watch: tuple = ()  # names under {work} it only reads: they must not change
    stand_ins: tuple = ()  # programs replaced on PATH by ones that leave a mark and exit 1
    acted: Callable | None = None  # fn(work, proc) -> why the invalid input counts as acted on, or ""
    check: Callable | None = None  # fn(work, proc) -> a defect found whatever the input ("" = none;
    # "escape: ..." for a write outside the case's folder, anything else counts as acted on)
    timeout: float = 120.0
    outcome: str = ""
    detail: str = field(default="", repr=False)


def _snapshot(work: Path) -> dict:
    """{relative path: what it is} of everything under ``work`` but the measured directory and fsmeter's own
    folders: content digests of files, targets of links."""
    out = {}
    for root, dirs, files in os.walk(work):
        rel_root = Path(root).relative_to(work)
        if rel_root == Path("."):
            dirs[:] = [d for d in dirs if d not in ("d", *INTERNAL)]
        for name in dirs + files:
            p = Path(root) / name
            rel = str(rel_root / name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    out[rel] = ("file", hashlib.sha256(f.read()).hexdigest())
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir",)
            else:
                out[rel] = ("other", st.st_mode)
    return out


def _stand_in(bindir: Path, name: str, work: Path) -> None:
    script = bindir / name
    script.write_text(f"#!/bin/sh\necho \"$0 $*\" >> '{work}/started-{name}'\necho '{name}: a stand-in' >&2\nexit 1\n")
    script.chmod(0o755)


def _mounted_under(path: Path) -> list:
    real = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        return [ln.split()[1] for ln in f if ln.split()[1] == real or ln.split()[1].startswith(real + "/")]


def run_case(case: Case, root: Path, env: dict) -> Case:
    """Run ``case`` in a new folder under ``root`` and set its outcome; the folder is removed after (unless
    something is still mounted there, which is said in the detail)."""
    work = Path(tempfile.mkdtemp(prefix=f"{case.surface}-", dir=root))
    try:
        return _run(case, work, env)
    finally:
        left = _mounted_under(work)
        if left:
            subprocess.run(
                [sys.executable, "-m", "fsmeter", "cleanup", "--scratch", str(work / "scratch")],
                capture_output=True,
                env=env,
            )
            left = _mounted_under(work)
        if left:
            case.detail += f" [still mounted, folder kept: {left[0]}]"
        else:
            shutil.rmtree(work, ignore_errors=True)


def _run(case: Case, work: Path, env: dict) -> Case:
    (work / "d").mkdir()
    (work / "lock").mkdir()
    (work / "scratch").mkdir()
    bindir = work / "bin"
    bindir.mkdir()
    for name in case.stand_ins:
        _stand_in(bindir, name, work)
    for name, data in case.files.items():
        (work / name).write_bytes(data.replace(b"{work}", str(work).encode()))
    if case.setup is not None:
        case.setup(work)
    before = _snapshot(work)
    args = [a.replace("{work}", str(work)) if isinstance(a, str) else a for a in case.args]
    run_env = {
        **env,
        "PATH": f"{bindir}{os.pathsep}{env.get('PATH', '')}",
        "FSMETER_LOCK_DIR": str(work / "lock"),
        "FSMETER_SCRATCH": str(work / "scratch"),
        "FSMETER_DB": str(work / "default.sqlite"),
        "COLUMNS": "200",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "fsmeter", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=run_env,
        cwd=work,
        start_new_session=True,  # a hang is killed with everything it started
    )
    try:
        out, err = proc.communicate(timeout=case.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        case.outcome, case.detail = "hang", f"no exit in {case.timeout:g} s"
        return case
    proc_result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    err_text = err.decode("utf-8", "replace")
    errors = [ln for ln in err_text.splitlines() if ln.startswith("fsmeter: error:")]
    last = err_text.strip().splitlines()[-1] if err_text.strip() else f"exit {proc.returncode}"
    case.detail = (errors[0] if errors else last)[:300]
    after = _snapshot(work)
    allowed = {a.replace("{work}/", "") for a in case.allowed}
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p) and not _allowed(p, allowed))
    touched_inputs = [w for w in case.watch if before.get(w) != after.get(w)]
    started = sorted(p.name.removeprefix("started-") for p in work.glob("started-*"))
    changed = [p for p in changed if not p.startswith("started-")]
    extra = case.check(work, proc_result) if case.check is not None else ""
    if "panicked at" in err_text or "PanicException" in err_text:
        case.outcome = "panic"
    elif "Traceback (most recent call last)" in err_text:
        case.outcome = "traceback"
    elif touched_inputs:
        case.outcome, case.detail = "escape", f"an input it only reads changed: {touched_inputs[0]}"
    elif changed:
        case.outcome, case.detail = "escape", f"wrote outside what it was named: {changed[0]}"
    elif extra:
        case.outcome = "escape" if extra.startswith("escape: ") else "acted-on"
        case.detail = extra.removeprefix("escape: ")
    elif case.invalid and proc.returncode == 0:
        case.outcome, case.detail = "acted-on", f"exit 0 for {case.invalid}"
    elif case.invalid and started:
        case.outcome, case.detail = "acted-on", f"started {started[0]} for {case.invalid}"
    elif case.invalid and case.acted is not None and case.acted(work, proc_result):
        case.outcome, case.detail = "acted-on", f"{case.acted(work, proc_result)} for {case.invalid}"
    elif proc.returncode in (1, 2) and len(errors) == 1:
        case.outcome = "error"
    elif proc.returncode in (1, 2) and errors:
        case.outcome, case.detail = "unclean", f"{len(errors)} error lines: {case.detail}"
    elif proc.returncode in (0, 1, 130):
        case.outcome = "ran"
    else:
        case.outcome = "unclean"  # exit 2 (or another) without the one line: click's box, a bare exit
        case.detail = f"exit {proc.returncode} without one error line: {last[:200]}"
    return case


def _allowed(rel: str, allowed: set) -> bool:
    return any(rel == a or rel.startswith(a.rstrip("/") + "/") for a in allowed)


__all__ = ["BAD", "OUTCOMES", "Case", "run_case"]
