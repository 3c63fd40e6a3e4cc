"""The bonnie family (Bonnie 1.x / bonnie++): per-char and block I/O, rewrite, random seeks, small files.

Mirrors crates/engine/src/workload/bonnie/mod.rs (BonnieSpec). Every phase stores two metrics named so
that ``<phase>_<metric>`` is Bonnie's column: putc_write_kbs, putc_write_cpu, ..., seeks_per_s, seeks_cpu
(and bonnie++'s seq_create_per_s, seq_create_cpu, ...). :data:`IO_COLUMNS` and :data:`FILE_COLUMNS` are
that column set, in Bonnie's order; the CSV export of a bonnie campaign writes them (see docs/bonnie.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fsmeter.errors import UserError
from fsmeter.families import Family, Metric, Phase, bytes_series
from fsmeter.units import Size

#: Bonnie's I/O phases in its order, with the unit of their rate metric.
IO_PHASES = ("putc_write", "block_write", "rewrite", "getc_read", "block_read", "seeks")
#: bonnie++'s file tests in its order (names as in its CSV: seq_create, ..., ran_del).
FILE_PHASES = ("seq_create", "seq_stat", "seq_del", "ran_create", "ran_stat", "ran_del")
_FILE_OP = {"create": "create", "stat": "stat", "del": "delete"}


def rate_name(phase: str) -> str:
    return "kbs" if phase in IO_PHASES[:5] else "per_s"


#: The stable column names of a Bonnie row (the seed data set's columns, in its order).
IO_COLUMNS = tuple(c for p in IO_PHASES for c in (f"{p}_{rate_name(p)}", f"{p}_cpu"))
FILE_COLUMNS = tuple(c for p in FILE_PHASES for c in (f"{p}_per_s", f"{p}_cpu"))


class BonnieParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    family: Literal["bonnie"] = "bonnie"
    size: Size = Field(1 << 30, ge=0, description="data file size (Bonnie -s; 0: file tests only)")
    chunk: Size = Field(8192, gt=0, le=64 << 20, description="block size of the block, rewrite and seek phases")
    char_io: Literal["stdio", "syscall"] = Field(
        "stdio", description="per-char I/O: stdio putc/getc (Bonnie 1.x) or one write(2)/read(2) per byte (bonnie++ 2)"
    )
    char_io_size: Size | None = Field(
        None, ge=0, description="bytes moved by the per-char phases (default: the whole file; bonnie++: 3M; 0: skip)"
    )
    seeks: int = Field(4000, ge=0, le=1 << 40, description="seeks shared by the seekers (Bonnie 4000, bonnie++ 8192)")
    seek_procs: int = Field(3, ge=1, le=1024, description="seeker threads (Bonnie 3, bonnie++ 5)")
    fsync: bool = Field(False, description="end each I/O phase with fsync inside its time (bonnie++ does)")
    direct: bool = Field(False, description="O_DIRECT for the block, rewrite and seek phases (bonnie++ -D)")
    sync_writes: bool = Field(
        False, description="fsync after every write: seek write-backs, created files (bonnie++ -b)"
    )
    files: int = Field(
        0, ge=0, le=50_000_000, description="small-file tests: number of files (bonnie++ -n N means N x 1024; 0: none)"
    )
    file_max_size: Size = Field(0, ge=0, le=1 << 30, description="small-file size, or the top of its range")
    file_min_size: Size = Field(0, ge=0, description="bottom of the small-file size range")
    file_dirs: int = Field(1, ge=1, le=99_999, description="directories the small files are spread over")
    file_chunk: Size = Field(8192, gt=0, le=64 << 20, description="write/read size for the small files' data")
    latency: bool = Field(
        True,
        description="time every chunk, seek and file and keep latency percentiles (bonnie++ reports a latency "
        "per phase); false: each phase timed whole, its operations counted, no clock read per operation "
        "(two clock reads and a histogram update cost tens of nanoseconds: a few percent of a stat of a "
        "cached file)",
    )
    verify: Literal["off", "crc32c", "xxh3", "sha256"] = Field(
        "off",
        description="data verification of the data file (docs/verify.md): every chunk carries a header and a "
        "checksum, reading phases check them, a verify phase re-reads the file; off by default",
    )

    @model_validator(mode="after")
    def _check(self):
        if self.size == 0 and self.files == 0:
            raise ValueError("size: size and files are both 0: give a file size, small files, or both")
        if self.size > 0:
            if self.size < self.chunk:
                raise ValueError(
                    f"size ({self.size} bytes) is smaller than chunk ({self.chunk} bytes): "
                    "use a larger size or a smaller chunk"
                )
            if self.size % self.chunk:
                raise ValueError(
                    f"size ({self.size} bytes) is not a whole number of chunks of {self.chunk} bytes: round it"
                )
            if self.direct and self.chunk % 512:
                raise ValueError(
                    f"chunk: {self.chunk} bytes does not fit O_DIRECT, which needs multiples of 512 "
                    "bytes: use a multiple of 512, or direct=false"
                )
            if self.char_io_size is not None and self.char_io_size > self.size:
                raise ValueError(f"char_io_size ({self.char_io_size} bytes) is larger than size ({self.size} bytes)")
            if self.seeks == 0:
                raise ValueError("seeks: must be >= 1 (Bonnie 4000, bonnie++ 8192)")
            if self.verify != "off":
                if self.chunk < 88:
                    raise ValueError(f"chunk: {self.chunk} bytes is too small for verify's 80-byte header: use >= 88")
                char = self.size if self.char_io_size is None else self.char_io_size
                if char % self.chunk:
                    raise ValueError(
                        f"char_io_size: {char} bytes: with verify, the per-char phases move whole "
                        f"chunks: use a multiple of chunk ({self.chunk} bytes)"
                    )
        elif self.verify != "off":
            raise ValueError("verify: size is 0: there is no data file to verify")
        if self.file_min_size > self.file_max_size:
            raise ValueError(
                f"file_min_size ({self.file_min_size}) is larger than file_max_size ({self.file_max_size})"
            )
        return self

    def check_settings(self, settings) -> None:
        if settings.threads != 1:
            raise UserError(
                "setting threads: bonnie runs one file in one process; leave threads at 1 and set "
                "seek_procs for the seek phase"
            )

    def per_char(self) -> bool:
        return self.size > 0 and self.char_io_size != 0

    def engine_spec(self) -> dict:
        spec = self.model_dump()
        spec["verify"] = None if self.verify == "off" else self.verify
        return spec


def _phases(p: BonnieParams) -> list:
    out = []
    if p.size > 0:
        out += [Phase(n) for n in IO_PHASES if p.per_char() or n not in ("putc_write", "getc_read")]
        if p.verify != "off":
            out.append(Phase("verify", measured=False, cold_cache=True))
    if p.files > 0:
        out += [Phase(n) for n in FILE_PHASES]
    return out


def _kib_per_s(r: dict) -> float | None:
    return r["total"]["bytes_per_s"] / 1024.0


def _count_per_s(op: str):
    def get(r: dict) -> float | None:
        n = (r.get("ops") or {}).get(op, {}).get("count")
        el = r.get("elapsed_s") or 0.0
        return None if n is None or el <= 0 else n / el

    return get


def _cpu(r: dict) -> float | None:
    return r["cpu"]["process_pct"]


def _metrics(p: BonnieParams) -> list:
    ms = []
    for ph in _phases(p):
        n = ph.name
        if n in IO_PHASES[:5]:
            ms.append(Metric(n, "kbs", "KiB/s", True, _kib_per_s))
        elif n == "seeks":
            ms.append(Metric(n, "per_s", "seeks/s", True, _count_per_s("seek")))
        else:
            ms.append(Metric(n, "per_s", "files/s", True, _count_per_s(_FILE_OP[n.split("_")[1]])))
        ms.append(Metric(n, "cpu", "%", False, _cpu))
    # The headline (first) ranks configurations: block write, as the study's first measure.
    head = next((m for m in ms if m.phase == "block_write" and m.name == "kbs"), ms[0])
    return [head] + [m for m in ms if m is not head]


def _counted_series(iv: dict) -> float | None:
    """The counted operation of whichever per_s phase this interval belongs to: seeks, or the file
    test's creates, stats or deletes (a phase does only one of them; the closing sync is not counted)."""
    if "ops" not in iv:
        return None
    by = iv.get("ops_by_kind") or {}
    return sum(by.get(k, 0) for k in ("seek", "create", "stat", "delete"))


FAMILY = Family(
    name="bonnie",
    params=BonnieParams,
    phases=_phases,
    metrics=_metrics,
    description="Bonnie / bonnie++: per-char and block write, rewrite, per-char and block read, random seeks; "
    "bonnie++'s small-file create/stat/delete",
    series={"kbs": bytes_series(1024.0), "per_s": _counted_series},
    charts="fsmeter.report.bonnie_charts:workload_charts",
)
