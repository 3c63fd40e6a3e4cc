"""One way to stop: SIGINT (Ctrl-C), SIGTERM (kill, systemd, a batch system) and SIGHUP (the
terminal went away) all raise ``Interrupted``, a KeyboardInterrupt, in the main thread.

Every place that handles Ctrl-C therefore handles the other two the same way: the engine is
stopped and returns what it measured marked interrupted, data files are removed, finished trials
stay stored, a campaign is marked interrupted (resumable), provisioned filesystems are torn down
and the run lock is released. The process then exits with 128 + the signal's number (130 for
SIGINT, 143 for SIGTERM, 129 for SIGHUP), as a shell reports a process the signal ended.
"""

from __future__ import annotations

import signal
import threading

#: The signals that stop a run cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_received: list[int] = []


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived; ``signum`` says which."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


def note_signal(signum: int) -> None:
    """Remember a stop signal (for the exit status) in a handler of one's own."""
    _received.append(signum)


def raise_interrupted(signum: int, frame: object = None) -> None:
    """Signal handler: note the signal and raise it as Interrupted in the main thread."""
    note_signal(signum)
    raise Interrupted(signum)


def install() -> None:
    """Make SIGINT, SIGTERM and SIGHUP raise Interrupted for the rest of the process (main thread only;
    a signal left ignored by the parent, as nohup leaves SIGHUP, stays ignored)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is signal.SIG_IGN:
            continue
        signal.signal(signum, raise_interrupted)


def received() -> bool:
    """Whether a stop signal has arrived in this process."""
    return bool(_received)


def last_signal(exc: BaseException | None = None) -> int:
    """The stop signal behind ``exc`` (or the latest one received); SIGINT when none is known."""
    signum = getattr(exc, "signum", None)
    if signum:
        return int(signum)
    return _received[-1] if _received else int(signal.SIGINT)


def exit_status(exc: BaseException | None = None) -> int:
    """The exit status of a process a stop signal ended: 128 + its number."""
    return 128 + last_signal(exc)
