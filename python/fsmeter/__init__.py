"""fsmeter: which filesystem, with which options, is fastest for this workload here — and how sure are we."""

__version__ = "0.1.0"

from fsmeter.errors import UserError  # noqa: E402

__all__ = ["UserError", "__version__", "load"]


def __getattr__(name: str):
    # Lazy: `fsmeter.load` needs pandas, which the CLI must not import at start-up.
    if name == "load":
        from fsmeter.store import load

        return load
    raise AttributeError(f"module 'fsmeter' has no attribute {name!r}")
