"""Which cells (file size x record size) `iozone -a` runs, by iozone's own rules.

- File sizes go from the minimum (-n, 64 KiB by default; iozone raises it to at least 4 KiB)
  to the maximum (-g, 512 MiB), doubling; record sizes from the minimum (-y, 4 KiB) to the
  maximum (-q, 16 MiB), doubling. Sizes are whole KiB, as iozone counts them.
- A record never exceeds its file: for each file size the record sizes stop at the first one
  larger than the file.
- The crossover: for files larger than 16 MiB iozone skips records under 64 KiB ("it takes
  forever and becomes very un-interesting"), unless -z is given, or a record bound (-y, -q) or an
  explicit size (-r, -s) was given. Once switched, the large-record list stays for every larger
  file; a maximum record under 64 KiB therefore leaves the large files without any cell.
- Explicit lists (-s or -r, here `file_sizes` / `record_sizes`) replace the doubling ranges and
  switch the crossover off; iozone walks each list taking, at every step, the next entry larger
  than the last one.

tests/data/iozone/ holds the cell sets the real iozone printed for several grids;
tests/families/iozone/test_grid.py checks these rules against them.
"""

from __future__ import annotations

from collections.abc import Iterable

KiB = 1024
#: iozone's defaults (KILOBYTES_START, KILOBYTES_END, RECLEN_START, RECLEN_END / MAXBUFFERSIZE).
MIN_FILE_KB = 64
MAX_FILE_KB = 512 * 1024
MIN_RECORD = 4 * KiB
MAX_RECORD = 16 * KiB * KiB
#: Above this file size (KiB) -a skips small records (CROSSOVER) ...
CROSSOVER_KB = 16 * 1024
#: ... starting the records at this size (LARGE_REC).
LARGE_RECORD = 64 * KiB


def _doubling(lo: int, hi: int) -> list[int]:
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return out


def _ascending(values: Iterable[int]) -> list[int]:
    """iozone's get_next_*_size walk: from 0, repeatedly the first entry larger than the last."""
    vals, out, last = list(values), [], 0
    while True:
        nxt = next((v for v in vals if v > last), None)
        if nxt is None:
            return out
        out.append(nxt)
        last = nxt


def auto_cells(
    min_file_kb: int = MIN_FILE_KB,
    max_file_kb: int = MAX_FILE_KB,
    min_record: int | None = None,
    max_record: int | None = None,
    crossover: bool = True,
    file_sizes_kb: list[int] | None = None,
    record_sizes: list[int] | None = None,
) -> list[tuple[int, int]]:
    """The cells in iozone's run order: [(file size in KiB, record size in bytes)].

    ``min_record``/``max_record`` None mean -y/-q were not given (the crossover may apply).
    """
    bounded = min_record is not None or max_record is not None
    lo_rec = MIN_RECORD if min_record is None else min_record
    hi_rec = MAX_RECORD if max_record is None else max_record
    explicit = bool(file_sizes_kb) or bool(record_sizes)
    files = _ascending(file_sizes_kb) if file_sizes_kb else _doubling(min_file_kb, max_file_kb)
    records = _ascending(record_sizes) if record_sizes else _doubling(lo_rec, hi_rec)
    xover_on = crossover and not bounded and not explicit
    cells = []
    for f in files:
        if xover_on and f > CROSSOVER_KB:
            records = _doubling(LARGE_RECORD, hi_rec)
        for r in records:
            if r > f * KiB:
                break
            cells.append((f, r))
    return cells
