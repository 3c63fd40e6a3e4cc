"""Type stubs for the Rust extension (crates/pyext). Private: use fsmeter.engine.EngineSession."""

from typing import TypedDict

__version__: str

class JobError(ValueError):
    """The job spec is wrong; the message starts with the field."""

class IoFailure(OSError):
    """A system call failed while running the workload; args = (errno, message)."""

class Progress(TypedDict):
    state: str  # "idle" | "preparing" | "warmup" | "measuring"
    elapsed_s: float
    warmup_s: float
    duration_s: float
    ops: int
    bytes: int
    work_total: int

class Session:
    """One job, run a named phase at a time; stop() and progress() work from other threads."""

    def __init__(self, job_json: str) -> None: ...
    def phases(self) -> list[str]: ...
    def run_phase(self, phase: str, hold_start: bool = False) -> str:
        """Runs the phase with the GIL released; returns the phase report as JSON. With hold_start,
        the measured work waits, once the workers are ready, for release_start()."""
    def holding(self) -> bool: ...
    def release_start(self) -> None: ...
    def stop(self) -> None: ...
    def reset_stop(self) -> None: ...
    def stop_requested(self) -> bool: ...
    def progress(self) -> Progress: ...
