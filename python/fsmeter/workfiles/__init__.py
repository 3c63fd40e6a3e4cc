"""AIM7 / re-aim workfiles: job weights for the mix family.

A workfile has one ``<hits> <job>`` line per job (its weight), ``#`` comments,
blank lines, and optional ``FILESIZE <n>K|M`` / ``POOLSIZE <n>K|M`` lines (a
colon after the label is allowed, as in re-aim). fsmeter ships its own copies
of re-aim's ``shared`` and ``disk`` weights in this folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from fsmeter.errors import UserError

HERE = Path(__file__).parent
BUILTIN = ("shared", "disk")

#: Jobs the engine implements (crates/engine/src/workload/mix/catalog.rs; a test keeps them equal).
JOBS = (
    "disk_rr",
    "disk_rw",
    "disk_rd",
    "disk_wrt",
    "disk_cp",
    "sync_disk_rw",
    "sync_disk_wrt",
    "sync_disk_cp",
    "sync_disk_update",
    "disk_dio_rr",
    "disk_dio_rw",
    "disk_dio_rd",
    "disk_dio_wrt",
    "disk_dio_cp",
    "disk_brr",
    "disk_brw",
    "disk_brd",
    "disk_bwrt",
    "disk_bcp",
    "disk_src",
    "creat_clo",
    "link_test",
    "dir_rtns_1",
    "fork_test",
    "exec_test",
    "shell_rtns_1",
    "shell_rtns_2",
    "shell_rtns_3",
    "pipe_cpy",
    "stream_pipe",
    "dgram_pipe",
    "fifo_test",
    "tcp_test",
    "udp_test",
    "shared_memory",
    "signal_test",
    "add_double",
    "add_float",
    "add_int",
    "add_long",
    "add_short",
    "mul_double",
    "mul_float",
    "mul_int",
    "mul_long",
    "mul_short",
    "div_double",
    "div_float",
    "div_int",
    "div_long",
    "div_short",
    "array_rtns",
    "matrix_rtns",
    "new_raph",
    "num_rtns_1",
    "series_1",
    "sieve",
    "sort_rtns_1",
    "string_rtns",
    "trig_rtns",
    "mem_rtns_1",
    "mem_rtns_2",
    "misc_rtns_1",
    "ram_copy",
    "brk_test",
    "page_test",
    "jmp_test",
    "fun_cal",
    "fun_cal1",
    "fun_cal2",
    "fun_cal15",
)
#: re-aim jobs fsmeter does not implement (libaio builds only).
NOT_IMPLEMENTED = ("disk_aio_rr", "disk_aio_rw", "disk_aiodio_rr", "disk_aiodio_rw")

_WEIGHT = re.compile(r"^(\d+)\s+(\S+)\s*$")
_SIZE = re.compile(r"^(FILESIZE|POOLSIZE):?\s+(\d+)([KkMm])\s*$", re.IGNORECASE)


@dataclass
class Workfile:
    source: str
    weights: list = field(default_factory=list)  # [(job, hits)] in file order
    file_kib: int | None = None
    pool_kib: int | None = None

    @property
    def total_hits(self) -> int:
        return sum(h for _, h in self.weights)


def parse(text: str, source: str = "workfile") -> Workfile:
    """Parse workfile text; a bad line raises UserError naming the file and line."""
    wf = Workfile(source=source)
    seen: dict = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source} line {no}"
        m = _WEIGHT.match(line)
        if m:
            hits, job = int(m.group(1)), m.group(2)
            if job in NOT_IMPLEMENTED:
                raise UserError(f"{where}: job {job!r} (libaio) is not implemented by fsmeter: remove the line")
            if job not in JOBS:
                raise UserError(f"{where}: unknown job {job!r}: see the mix family's job list in docs/mix.md (Jobs)")
            if hits == 0:
                raise UserError(f"{where}: job {job!r} has 0 hits: give it a weight >= 1 or remove the line")
            if job in seen:
                raise UserError(f"{where}: job {job!r} already weighted on line {seen[job]}: keep one line per job")
            seen[job] = no
            wf.weights.append((job, hits))
            continue
        m = _SIZE.match(line)
        if m:
            kib = int(m.group(2)) * (1024 if m.group(3) in "Mm" else 1)
            if m.group(1).upper() == "FILESIZE":
                wf.file_kib = kib
            else:
                wf.pool_kib = kib
            continue
        raise UserError(
            f"{where}: {line!r} is neither '<hits> <job>' nor 'FILESIZE|POOLSIZE <n>K|M': fix or comment it out with #"
        )
    if not wf.weights:
        raise UserError(f"{source}: no '<hits> <job>' line: a workfile needs at least one job")
    return wf


def load(name_or_path: str) -> Workfile:
    """A built-in workfile ('shared', 'disk') or a file path."""
    if name_or_path in BUILTIN:
        path = HERE / name_or_path
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise UserError(
                f"parameter workfile: {name_or_path!r} is neither a built-in workfile "
                f"({', '.join(BUILTIN)}) nor an existing file"
            )
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"parameter workfile: cannot read {path}: {exc}") from None
    return parse(text, str(path) if name_or_path not in BUILTIN else f"workfile {name_or_path}")
