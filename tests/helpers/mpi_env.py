"""What the MPI tests share: where mpirun is, whether mpi4py imports, and the environment Open MPI
needs to run as root."""

from __future__ import annotations

import shutil

MPIRUN = shutil.which("mpirun")

#: Open MPI refuses root unless told twice; the tests may run as root.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "COLUMNS": "200"}


def have_mpi4py() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True
