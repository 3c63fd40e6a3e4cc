"""fsmeter: which filesystem, with which options, is fastest for this workload here — and how sure are we."""

import os as _os
from importlib.metadata import PackageNotFoundError as _NotInstalled
from importlib.metadata import version as _version

# One source: Cargo.toml's workspace version, which maturin writes into the package's metadata.
try:
    __version__ = _version("fsmeter")
except _NotInstalled:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

# numpy's BLAS (OpenBLAS) starts a pool of threads that busy-wait for work after each call. fsmeter's
# arrays are small, and on a machine with few cores those spinning threads take CPU time from the
# engine's workers: perf showed 8.6% of a cached iozone run in blas_thread_server. One BLAS thread,
# unless the user chose otherwise. Set before anything imports numpy.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")

from fsmeter.errors import UserError  # noqa: E402

__all__ = ["UserError", "__version__", "load"]


def __getattr__(name: str):
    # Lazy: `fsmeter.load` needs pandas, which the CLI must not import at start-up.
    if name == "load":
        from fsmeter.store import load

        return load
    raise AttributeError(f"module 'fsmeter' has no attribute {name!r}")
