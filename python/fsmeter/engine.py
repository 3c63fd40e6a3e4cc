"""The Python face of the Rust engine: run a job's phases one at a time with a
progress bar, turn Ctrl-C into a prompt stop, and map engine errors to messages.

The engine runs in a worker thread with the GIL released; the main thread keeps
the progress bar alive and receives SIGINT (and SIGTERM, SIGHUP: fsmeter.interrupt
raises all three as a KeyboardInterrupt), which it turns into `stop()` — the
engine then returns within about a second with what it measured, marked
interrupted.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

from fsmeter.errors import UserError


class EngineFailure(UserError):
    """The workload failed while running (a system call error): the run cannot go on."""

    def __init__(self, message: str, errno: int = 0):
        super().__init__(message, exit_code=1)
        self.errno = errno


def latency_measured(op: dict) -> bool:
    """False for an operation kind the engine counted without timing each one (iozone without
    latency = true times whole passes): its latency summary is empty, not zero."""
    return bool((op.get("lat") or {}).get("count")) or not op.get("count")


def _job_error(exc: Exception) -> str:
    """The engine's "field: message" as one line; a message that names its own source and line
    (a load file's "load file F line N: ...") stands alone."""
    text = str(exc)
    _field, sep, rest = text.partition(": ")
    if sep and rest.startswith("load file "):
        return rest
    return f"parameter {text}"


def _engine_module():
    try:
        from fsmeter import _engine
    except ImportError as exc:  # pragma: no cover - only without a build
        raise UserError(f"the Rust engine is not built ({exc}): run `make build`", exit_code=1) from None
    return _engine


class EngineSession:
    """One job in the engine; phases keep the workload's state between them."""

    def __init__(self, job_json: str, for_merge: bool = False):
        #: keep what a merge across MPI ranks needs (fsmeter.mpi.merge): each kind's full-precision
        #: HDR buckets (`lat.hdr`) and the measured window on CLOCK_MONOTONIC (`window_mono_ns`).
        #: Single-process results drop them (the buckets are large).
        self.for_merge = for_merge
        eng = _engine_module()
        try:
            self._s = eng.Session(job_json)
        except eng.JobError as exc:
            raise UserError(_job_error(exc)) from None

    def phases(self) -> list:
        return list(self._s.phases())

    def stop(self) -> None:
        self._s.stop()

    def reset_stop(self) -> None:
        """Clear a stop request so that the next phase runs (a stonewall stop is not a Ctrl-C)."""
        self._s.reset_stop()

    def run_phase(
        self,
        name: str,
        on_progress: Callable[[dict], None] | None = None,
        tick_s: float = 0.1,
        at_start: Callable[[], None] | None = None,
    ) -> dict:
        """Run phase `name`; returns the report (dict). Ctrl-C stops it and returns it marked interrupted.

        `at_start`: called once the phase's workers are ready (files open, buffers filled) and before
        its measured work starts, which waits until it returns (an MPI rank's barrier goes there, so
        that the ranks' set-up stays out of the common window). A phase that does not use the
        engine's measuring harness never calls it.
        """
        eng = _engine_module()
        box: dict = {}
        finished = threading.Event()
        hold = at_start is not None

        def target() -> None:
            try:
                box["json"] = self._s.run_phase(name, hold)
            except BaseException as exc:  # handed to the main thread
                box["error"] = exc
            finally:
                finished.set()

        worker = threading.Thread(target=target, name=f"fsmeter-engine-{name}", daemon=True)
        worker.start()
        interrupted = False
        waiting = hold  # for the hold: polled often, as the other ranks wait for this one
        # Wait on an Event, not Thread.join: a KeyboardInterrupt landing inside
        # join() can leave the thread looking finished while it still runs.
        while not finished.is_set():
            try:
                if waiting:
                    finished.wait(0.0005)
                    if self._s.holding():
                        waiting = False
                        try:
                            at_start()
                        except Exception:
                            self._s.stop()  # the phase must not run on alone
                            raise
                        finally:
                            self._s.release_start()
                    continue
                finished.wait(tick_s)
                if on_progress is not None:
                    on_progress(self._s.progress())
            except KeyboardInterrupt:
                interrupted = True
                self._s.stop()
        if on_progress is not None:
            on_progress(self._s.progress())
        err = box.get("error")
        if err is not None:
            if isinstance(err, eng.JobError):
                raise UserError(_job_error(err)) from None
            if isinstance(err, eng.IoFailure):
                errno, msg = err.args if len(err.args) == 2 else (0, str(err))
                raise EngineFailure(f"phase {name}: {msg}", errno=errno) from None
            raise err
        report = json.loads(box["json"])
        if not self.for_merge:
            # A group phase's jobs (several jobs measured together) are shaped as phases too.
            for rep in (report, *(report.get("jobs") or {}).values()):
                rep.pop("window_mono_ns", None)
                for op in (rep.get("ops") or {}).values():
                    (op.get("lat") or {}).pop("hdr", None)
        if interrupted:
            report["interrupted"] = True
        return report
