"""fio's exec engine (`ioengine=exec`): a job that runs a program beside the other jobs of its group, for the
job's runtime. A job file is input, so this runs only when the user says it may (`fsmeter run --allow-exec`).

As fio's engine does: the argument line gets `%r` (the runtime in whole seconds) and `%n` (the job's name)
replaced, `program arguments` is split at spaces (no shell, no quoting), the program is looked up on PATH
(execvp), it starts with its group and at the job's runtime gets SIGTERM, then SIGKILL `grace_time` seconds
later if it is still there. It runs in the job's directory, and with `std_redirect=1` (the default) its output
goes to `<job>.stdout` and `<job>.stderr` there (fio's program runs in fio's current directory, where fio
writes those files). A program that cannot be
started is reported in one line and its job still takes its runtime, as fio's does.
"""

from __future__ import annotations

import contextvars
import ctypes
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from fsmeter.errors import UserError
from fsmeter.units import MAX_DURATION_S

#: Whether this planning may map exec jobs (fsmeter run --allow-exec); refused otherwise.
ALLOW_EXEC: contextvars.ContextVar = contextvars.ContextVar("fsmeter_allow_exec", default=False)

#: The options an exec job uses; any other option of fio's I/O is moot (the engine moves no data).
EXEC_OPTS = {
    "name",
    "description",
    "ioengine",
    "program",
    "arguments",
    "grace_time",
    "std_redirect",
    "runtime",
    "timeout",
    "time_based",
    "stonewall",
    "wait_for_previous",
    "new_group",
    "group_reporting",
    "directory",
    "thread",
    "threads",
    "kb_base",
}

REFUSAL = (
    "fsmeter runs the program a job file names only when told to (a job file is input: running its "
    "program= unasked would let any job file run anything): add --allow-exec to `fsmeter run` if you trust "
    "this file, or remove the job"
)


def _create_own(path: Path):
    """Creates (or truncates) an output file of the job's under the run's directory without following a
    symbolic link planted there under its name (O_NOFOLLOW): a link gives one line, never a write through it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError:
        if os.path.islink(path):
            raise UserError(
                f"{path} is a symbolic link fsmeter did not make: remove it or use an empty --dir"
            ) from None
        raise
    return os.fdopen(fd, "wb")


@dataclass
class ExecSpec:
    """One exec job: what to run, for how long, where its output goes."""

    name: str
    line: int
    group: int
    argv: list
    runtime_s: float
    grace_s: int
    std_redirect: bool
    dir: Path | None = None
    notes: list = field(default_factory=list)


def split_argv(program: str, arguments: str | None, runtime_s: float, name: str) -> list:
    """fio's argv: `%r` -> whole seconds of runtime, `%n` -> the job name, in the arguments only; then
    "program arguments" split at spaces (empty pieces dropped, no quoting)."""
    line = program
    if arguments is not None:
        line += " " + arguments.replace("%r", str(int(runtime_s))).replace("%n", name)
    return [p for p in line.split(" ") if p]


def exec_spec(
    where: str, job, group: int, runtime_s: float, time_based: bool, check_only: bool = False
) -> ExecSpec | None:
    """An exec job's spec from its fio options, or one line saying why not (`check_only`: only whether exec jobs
    may run at all)."""
    eng = job.get("ioengine")
    if not ALLOW_EXEC.get():
        raise UserError(f"{where} line {eng.line}: {eng.as_written}: {REFUSAL}")
    if check_only:
        return None
    prog = job.get("program")
    program = (prog.value or "").strip() if prog is not None else ""
    if not program:
        raise UserError(
            f"{where} line {job.line}: job {job.name}: ioengine=exec needs program= (fio refuses the job "
            "without it): add program=PATH"
        )
    if not runtime_s or not time_based:
        raise UserError(
            f"{where} line {job.line}: job {job.name}: ioengine=exec runs its program for the job's "
            "runtime: give runtime= and time_based"
        )
    args = job.get("arguments")
    grace = 1
    opt = job.get("grace_time")
    if opt is not None:
        text = (opt.value or "").strip()
        # ASCII digits only: str.isdigit() also takes '²' and other scripts' digits, which int() refuses or fio does
        # not read; and no more than any other time fsmeter takes.
        if not (text.isascii() and text.isdigit()) or len(text) > 20 or int(text) > MAX_DURATION_S:
            raise UserError(
                f"{where} line {opt.line}: {opt.as_written}: give whole seconds, from 0 to {int(MAX_DURATION_S)}"
            )
        grace = int(text)
    redirect = True
    opt = job.get("std_redirect")
    if opt is not None:
        v = (opt.value if opt.value is not None else "1").strip().lower()
        if v not in ("0", "1", "true", "false", "on", "off", "yes", "no"):
            raise UserError(f"{where} line {opt.line}: {opt.as_written}: use 0 or 1")
        redirect = v in ("1", "true", "on", "yes")
    if redirect and ("/" in job.name or job.name in (".", "..") or "\0" in job.name):
        raise UserError(
            f"{where} line {job.line}: job {job.name}: with std_redirect=1 its output goes to "
            f"{job.name}.stdout and .stderr, which would not be files of the job's directory: give the "
            "job a name without '/', or std_redirect=0"
        )
    notes = [
        f"{o.as_written}: moot for ioengine=exec, which moves no data (fio's too)"
        for o in sorted(job.options.values(), key=lambda o: o.line)
        if o.name not in EXEC_OPTS
    ]
    argv = split_argv(program, args.value if args is not None else None, runtime_s, job.name)
    return ExecSpec(
        name=job.name,
        line=job.line,
        group=group,
        argv=argv,
        runtime_s=runtime_s,
        grace_s=grace,
        std_redirect=redirect,
        notes=notes,
    )


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when fsmeter goes (PR_SET_PDEATHSIG), so a killed run leaves no program."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


class Running:
    """One exec job's program, from start() to finish(): stopped at its runtime by a timer thread."""

    def __init__(self, spec: ExecSpec, place: Path | None):
        self.spec = spec
        self.place = Path(place) if place is not None else Path.cwd()
        self.proc = None
        self.record: dict = {"job": spec.name, "line": spec.line, "argv": spec.argv, "status": "not started"}
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()  # held only to signal and record, never while waiting
        self._killed = threading.Event()  # set once SIGKILL is sent: a stop() in its grace time ends its wait
        self._t0 = 0.0

    def start(self) -> None:
        import subprocess

        out = err = None
        if self.spec.std_redirect:
            paths = [self.place / f"{self.spec.name}.{k}" for k in ("stdout", "stderr")]
            self.record["stdout"], self.record["stderr"] = str(paths[0]), str(paths[1])
        self._t0 = time.monotonic()
        try:
            if self.spec.std_redirect:
                out, err = (_create_own(p) for p in paths)
            self.proc = subprocess.Popen(
                self.spec.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=self.place,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except OSError as exc:
            why = exc.strerror or str(exc)
            self.record.update(status="not started", error=f"cannot run {self.spec.argv[0]}: {why}")
            if err is not None:
                err.write(f"fsmeter: cannot run {self.spec.argv[0]}: {why}\n".encode())
            return
        finally:
            for f in (out, err):
                if f is not None:
                    f.close()
        self.record.update(status="running", pid=self.proc.pid)
        self._timer = threading.Timer(self.spec.runtime_s, self.stop, kwargs={"why": "runtime"})
        self._timer.daemon = True
        self._timer.start()

    def stop(self, why: str = "end of its group") -> None:
        """SIGTERM to the program's process group, SIGKILL grace_time seconds later if it is still there. The wait
        holds no lock, so an interrupt (finish(interrupted=True), from another thread or from a signal handler's
        exception in this one) kills the program at once instead of waiting out the grace time behind it."""
        with self._lock:
            p = self.proc
            if p is None or p.poll() is not None:
                return
            if "stopped_by" not in self.record:
                self.record["stopped_by"] = why
                self.record["stopped_at_s"] = round(time.monotonic() - self._t0, 3)
                _signal_group(p.pid, signal.SIGTERM)
        end = time.monotonic() + self.spec.grace_s
        while p.poll() is None and not self._killed.is_set():
            left = end - time.monotonic()
            if left <= 0:
                break
            self._killed.wait(min(0.1, left))
        if p.poll() is None:  # still there after grace_time
            self._kill("sigkill_sent")
        p.wait()

    def _kill(self, *flags: str, **record) -> None:
        self._killed.set()
        with self._lock:
            _signal_group(self.proc.pid, signal.SIGKILL)
            self.record.update({f: True for f in flags}, **record)

    def finish(self, interrupted: bool = False) -> dict:
        """Stop the program if it still runs (at once with SIGKILL when the run was interrupted), its record."""
        if self._timer is not None:
            self._timer.cancel()
        p = self.proc
        if p is not None:
            if interrupted and p.poll() is None:
                self._kill("sigkill_sent", stopped_by="interrupt")
                p.wait()
            self.stop()
            code = p.wait()
            # Its own process group may still hold children it started: gone with it, as fio's job ends.
            _signal_group(p.pid, signal.SIGKILL)
            self.record["status"] = "exited" if code >= 0 else "killed by signal"
            self.record["exit_status" if code >= 0 else "signal"] = code if code >= 0 else signal.Signals(-code).name
        return self.record

    def wait_runtime(self, stop_event: threading.Event | None = None) -> None:
        """A group of exec jobs only: wait out the job's runtime (and the stop), as fio's job lasts its runtime."""
        end = self._t0 + self.spec.runtime_s
        while time.monotonic() < end:
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))
        if self._timer is not None:
            self._timer.join()


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def line(rec: dict) -> str:
    """One line for the text output: which program ran and how it ended."""
    prog = " ".join(rec["argv"])
    if rec.get("error"):
        return f"exec: job {rec['job']} (line {rec['line']}): {rec['error']}; the job took its runtime, as in fio"
    end = f"exit status {rec['exit_status']}" if "exit_status" in rec else f"killed by {rec.get('signal')}"
    how = f", stopped at its {rec['stopped_by']}" if rec.get("stopped_by") else ""
    out = f", output in {rec['stdout']} and {rec['stderr']}" if rec.get("stdout") else ""
    return f"exec: job {rec['job']} (line {rec['line']}) ran {prog}: {end}{how}{out}"


@dataclass
class ExecGroup:
    """A stonewall group of exec jobs only: its programs run for their runtime, no engine phase."""

    name: str
    line: int
    group: int
    execs: list
    dir: Path | None = None
    fill: bool = False
    after_fill: str | None = None
    keep_files: bool = False
    exit_what: str = "none"
    logs: list = field(default_factory=list)

    @property
    def notes(self) -> list:
        return [f"{e.name}: {n}" for e in self.execs for n in e.notes]


def start_all(execs: list, place: Path | None) -> list:
    runs = [Running(e, e.dir if e.dir is not None else place) for e in execs]
    for r in runs:
        r.start()
    return runs
