"""The MPI run options a campaign file and `fsmeter run` under mpirun share: the stonewall (`first-done`
or seconds) and the families and phases it may stop, and the reorder shift (`node` or a number of ranks).

It imports nothing of fsmeter but `errors`, so that the campaign file (a lower level than `mpi`) checks
these options without importing the MPI runner (HACKING.md, the levels table).
"""

from __future__ import annotations

from fsmeter.errors import UserError

#: The phases a stonewall may stop early, per family: those after which the workload goes on
#: correctly with whatever a stopped rank completed. The tree family's create is one (mdtest -W):
#: its later phases then visit only the files each tree has (`file_range`).
STONEWALL_PHASES = {"access": {"run"}, "replay": {"run"}, "fileset": {"create", "transactions"}, "tree": {"create"}}
#: The families a wear-out can take on after a stonewall.
WEAROUT_FAMILIES = ("access", "tree")


def parse_stonewall(value: str | None):
    """None, "first-done", or a number of seconds (float)."""
    if value is None or value == "" or value == "none":
        return None
    if value == "first-done":
        return value
    try:
        s = float(value)
    except ValueError:
        s = -1.0
    if not s > 0:
        raise UserError(
            f"--stonewall {value!r}: use first-done (stop every rank when the first finishes) or a "
            "number of seconds > 0"
        )
    return s


def parse_reorder_shift(value: str | None):
    """None, "node" (the ranks of one host: IOR's -C), or a number of ranks >= 0 (int)."""
    if value is None or value == "":
        return None
    if value == "node":
        return value
    try:
        k = int(value)
    except ValueError:
        k = -1
    if k < 0:
        raise UserError(
            f"--reorder-shift {value!r}: use node (read the region of the rank one host further on, as "
            "IOR's -C does) or a number of ranks >= 0"
        )
    return k
