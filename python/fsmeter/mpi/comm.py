"""MPI plumbing: is this process a rank of mpirun, mpi4py imported only then, and collectives
that give up after a timeout and abort every rank with a message naming who and where.

Nothing here runs per operation: an MPI run talks at phase boundaries only (a barrier before
each phase, one gather of the phase reports after it) and, with stonewalling, one message per
rank that finishes first.
"""
from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any, Optional

from fsmeter.errors import UserError

#: Variables the common MPI launchers (Open MPI, MPICH/Hydra, PMIx, Slurm's PMI) set in every rank.
LAUNCHER_ENV = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "MPI_LOCALNRANKS")

INSTALL_HINT = ("install Open MPI and mpi4py: as root run `make sysdeps build` in the fsmeter checkout "
                "(Debian packages openmpi-bin and libopenmpi-dev, then `MPICC=mpicc pip install mpi4py` "
                "into fsmeter's Python environment)")

#: Default for how long a rank waits at a barrier or gather for the others (seconds).
DEFAULT_TIMEOUT_S = 600.0


def launched_under_mpi() -> bool:
    """True when this process was started by an MPI launcher (mpirun, mpiexec, srun with PMI)."""
    return any(k in os.environ for k in LAUNCHER_ENV)


def load_mpi():
    """mpi4py's MPI module, imported now (never at fsmeter's import), or a one-line error."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise UserError(f"MPI is not available ({exc}): {INSTALL_HINT}", exit_code=1) from None
    return MPI


class World:
    """COMM_WORLD with this rank's identity, timed collectives and abort-with-message."""

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.MPI = load_mpi()
        self.comm = self.MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.host = socket.gethostname()
        self.timeout_s = float(timeout_s)
        # Ranks sharing this host (a shared-memory split): the first of them does host-wide work
        # (the run lock, drop_caches).
        self.local = self.comm.Split_type(self.MPI.COMM_TYPE_SHARED, key=self.rank)
        self.local_rank = self.local.Get_rank()

    # -- failure ----------------------------------------------------------------------------------
    def who(self) -> str:
        return f"rank {self.rank} of {self.size} on {self.host}"

    def abort(self, message: str, code: int = 1) -> None:
        """Print one line naming this rank, then MPI_Abort: every rank of the job ends within seconds."""
        print(f"fsmeter: error: {self.who()}: {message}; aborting all {self.size} ranks", file=sys.stderr, flush=True)
        self.comm.Abort(code)

    def wait_all(self, where: str) -> None:
        """Block until every rank reached this point, or abort after the timeout naming where."""
        req = self.comm.Ibarrier()
        deadline = time.monotonic() + self.timeout_s
        pause = 0.0002
        while not req.Test():
            if time.monotonic() > deadline:
                self.abort(f"waited {self.timeout_s:g} s {where} for the other ranks (one is stuck, or much "
                           "slower than this one: raise the MPI timeout if that is expected)")
            time.sleep(pause)
            pause = min(pause * 2, 0.01)

    # -- timed collectives ------------------------------------------------------------------------
    def barrier(self, where: str) -> int:
        """Timed arrival, then a plain barrier for a tight common release; returns CLOCK_MONOTONIC ns
        at the release (the common clock's zero for this rank)."""
        self.wait_all(where)
        self.comm.Barrier()
        return time.monotonic_ns()

    def gather(self, obj: Any, where: str) -> Optional[list]:
        self.wait_all(where)
        return self.comm.gather(obj, root=0)

    def allgather(self, obj: Any, where: str) -> list:
        self.wait_all(where)
        return self.comm.allgather(obj)

    def bcast(self, obj: Any, where: str) -> Any:
        self.wait_all(where)
        return self.comm.bcast(obj, root=0)


__all__ = ["DEFAULT_TIMEOUT_S", "INSTALL_HINT", "World", "launched_under_mpi", "load_mpi"]
