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
from typing import Any

from fsmeter.errors import UserError

#: Variables the common MPI launchers (Open MPI, MPICH/Hydra, PMIx, Slurm's PMI) set in every rank.
LAUNCHER_ENV = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "MPI_LOCALNRANKS")

INSTALL_HINT = (
    "install Open MPI and mpi4py: as root run `make sysdeps build` in the fsmeter checkout "
    "(Debian packages openmpi-bin and libopenmpi-dev, then `MPICC=mpicc pip install mpi4py` "
    "into fsmeter's Python environment)"
)

#: Default for how long a rank waits at a barrier or gather for the others (seconds), beyond the
#: time it worked itself since the ranks last met (World.wait_all): one minute notices a hung or
#: dead rank soon, and is far longer than any step in which the ranks do the same work should
#: stagger (set-up barriers: milliseconds; a cache drop or a slow client: seconds).
DEFAULT_TIMEOUT_S = 60.0
#: Longest wait of a rank for its host's run lock (seconds) before the job aborts: the ranks of a
#: job just ended exit in well under a second; anything holding it longer is another measurement,
#: which the others must not spin at a barrier waiting for.
LOCK_WAIT_S = 10.0


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
        self.last_met = time.monotonic()  # when this rank last left a collective

    # -- failure ----------------------------------------------------------------------------------
    def who(self) -> str:
        return f"rank {self.rank} of {self.size} on {self.host}"

    def abort(self, message: str, code: int = 1) -> None:
        """Print one line naming this rank, then MPI_Abort: every rank of the job ends within seconds."""
        print(f"fsmeter: error: {self.who()}: {message}; aborting all {self.size} ranks", file=sys.stderr, flush=True)
        self.comm.Abort(code)

    def bound_s(self) -> float:
        """How long this rank now waits for the others: the timeout, or as long as it worked itself
        since the ranks last met when that is longer (so a rank twice as slow as this one on a long
        step is waited for, and a hung one is given up after that step's length at most)."""
        return max(self.timeout_s, time.monotonic() - self.last_met)

    def wait_all(self, where: str) -> None:
        """Block until every rank reached this point, or abort after bound_s() naming where."""
        bound = self.bound_s()
        self._poll(self.comm.Ibarrier(), where, bound, time.monotonic() + bound)

    def _poll(self, req, where: str, bound: float, deadline: float, spin: bool = False) -> None:
        """Wait for a non-blocking operation, giving up (abort) at the deadline. Every collective
        here is non-blocking and polled so: a rank stopped between two of them (after the others
        saw it arrive) must not leave them blocked for ever in a plain MPI call."""
        pause = 0.0002
        while not req.Test():
            if time.monotonic() > deadline:
                longer = "" if bound == self.timeout_s else " (as long as this rank's own work since the last barrier)"
                self.abort(
                    f"waited {bound:g} s{longer} {where} for the other ranks (one is stuck, or much "
                    "slower than this one: raise --mpi-timeout-s if that is expected)"
                )
            if not spin:
                time.sleep(pause)
                pause = min(pause * 2, 0.01)

    def _then(self, req, where: str) -> None:
        """The second step of a collective whose ranks all arrived: milliseconds, bounded by the timeout."""
        self._poll(req, where, self.timeout_s, time.monotonic() + self.timeout_s)

    # -- timed collectives ------------------------------------------------------------------------
    def barrier(self, where: str) -> int:
        """Timed arrival, then a second barrier polled without pauses for a tight common release;
        returns CLOCK_MONOTONIC ns at the release (the common clock's zero for this rank)."""
        self.wait_all(where)
        self._poll(self.comm.Ibarrier(), where, self.timeout_s, time.monotonic() + self.timeout_s, spin=True)
        now = time.monotonic_ns()
        self.last_met = now / 1e9
        return now

    def _exchange(self, obj: Any, where: str, to_all: bool) -> list | None:
        """Every rank's pickled object to rank 0 (gather) or to every rank (allgather): the sizes
        first, then the bytes, both non-blocking and timed."""
        import pickle

        import numpy as np

        data = np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8)
        sizes = np.zeros(self.size, dtype=np.int64)
        self._then(self.comm.Iallgather(np.array([data.size], dtype=np.int64), sizes), where)
        displs = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        mine = [data, data.size, self.MPI.BYTE]
        if to_all or self.rank == 0:
            out = np.empty(int(sizes.sum()), dtype=np.uint8)
            spec = [out, (sizes.astype(np.int32), displs.astype(np.int32)), self.MPI.BYTE]
        if to_all:
            self._then(self.comm.Iallgatherv(mine, spec), where)
        else:
            self._then(self.comm.Igatherv(mine, spec if self.rank == 0 else None, root=0), where)
        self.last_met = time.monotonic()
        if not to_all and self.rank != 0:
            return None
        return [pickle.loads(out[int(o) : int(o) + int(n)].tobytes()) for o, n in zip(displs, sizes)]

    def gather(self, obj: Any, where: str) -> list | None:
        self.wait_all(where)
        return self._exchange(obj, where, to_all=False)

    def allgather(self, obj: Any, where: str) -> list:
        self.wait_all(where)
        return self._exchange(obj, where, to_all=True)

    def bcast(self, obj: Any, where: str) -> Any:
        import pickle

        import numpy as np

        self.wait_all(where)
        n = np.zeros(1, dtype=np.int64)
        data = None
        if self.rank == 0:
            data = np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8).copy()
            n[0] = data.size
        self._then(self.comm.Ibcast(n, root=0), where)
        if self.rank != 0:
            data = np.empty(int(n[0]), dtype=np.uint8)
        self._then(self.comm.Ibcast([data, self.MPI.BYTE], root=0), where)
        self.last_met = time.monotonic()
        return pickle.loads(data.tobytes())


__all__ = ["DEFAULT_TIMEOUT_S", "INSTALL_HINT", "LOCK_WAIT_S", "World", "launched_under_mpi", "load_mpi"]
