"""fsmeter: which filesystem, with which options, is fastest for this workload here — and how sure are we."""

__version__ = "0.1.0"

from fsmeter.errors import UserError  # noqa: E402

__all__ = ["UserError", "__version__"]
