"""The iozone family: iozone's tests over a file size x record size grid, as `iozone -a` runs it.

Mirrors crates/engine/src/workload/iozone/mod.rs (IozoneSpec): Python works out the cells with
iozone's rules (fsmeter.families.iozone_grid) and the engine runs them. One `grid` phase is one
whole grid; every cell's result is stored as a keyed metric (test, file size, record size).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fsmeter.errors import UserError
from fsmeter.families import Family, Metric, Phase
from fsmeter.families.iozone_grid import CROSSOVER_KB, auto_cells
from fsmeter.units import Size, format_size

#: Result columns per iozone test number, in iozone's order; names as the engine's op kinds.
COLUMNS = {
    0: ["write", "rewrite"],
    1: ["read", "reread"],
    2: ["random_read", "random_write"],
    3: ["bkwd_read"],
    4: ["record_rewrite"],
    5: ["stride_read"],
    6: ["fwrite", "frewrite"],
    7: ["fread", "freread"],
    8: ["mix"],
}
#: The title iozone gives each column's table in its -R report.
REPORT_TITLES = {
    "write": "Writer report",
    "rewrite": "Re-writer report",
    "read": "Reader report",
    "reread": "Re-Reader report",
    "random_read": "Random read report",
    "random_write": "Random write report",
    "bkwd_read": "Backward read report",
    "record_rewrite": "Record rewrite report",
    "stride_read": "Stride read report",
    "fwrite": "Fwrite report",
    "frewrite": "Re-Fwrite report",
    "fread": "Fread report",
    "freread": "Re-Fread report",
    "mix": "Mixed workload report",
}
KiB = 1024


def _kib(field: str, v: int | None) -> None:
    if v is not None and v % KiB:
        raise ValueError(f"{field}: {v} bytes is not a whole number of KiB (iozone counts sizes in KiB)")


class IozoneParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    family: Literal["iozone"] = "iozone"
    tests: list[int] = Field(
        default_factory=lambda: list(range(8)),
        description="iozone test numbers (-i): 0 write/rewrite, 1 read/reread, 2 random read/write, "
        "3 backward read, 4 record rewrite, 5 stride read, 6 fwrite/refwrite, "
        "7 fread/refread, 8 random mix",
    )
    min_file_size: Size = Field(64 * KiB, description="smallest file of the grid (-n); raised to 4K as iozone does")
    max_file_size: Size = Field(512 << 20, description="largest file of the grid (-g)")
    min_record_size: Size | None = Field(None, description="smallest record (-y); none = 4K, crossover allowed")
    max_record_size: Size | None = Field(None, description="largest record (-q); none = 16M, crossover allowed")
    crossover: bool = Field(True, description="skip records under 64K for files over 16M, as -a does (false = -z)")
    file_sizes: list[Size] | None = Field(None, description="explicit file sizes instead of the range (-s ...)")
    record_sizes: list[Size] | None = Field(None, description="explicit record sizes instead of the range (-r ...)")
    ops: bool = Field(False, description="report operations/s instead of KB/s (-O)")
    fsync: bool = Field(False, description="include fsync in the timing (-e)")
    close: bool = Field(False, description="include close in the timing (-c)")
    direct: bool = Field(False, description="O_DIRECT (-I); records must be multiples of 512")
    purge: bool = Field(False, description="read a separate buffer before every record to evict the CPU cache (-p)")
    cache_size: Size = Field(1 << 20, description="processor cache size for the purge (-S)")
    cache_line: Size = Field(32, gt=0, description="cache line size for the purge (-L)")
    stride: int = Field(17, ge=1, description="stride read distance, in records (-j)")
    mix_threads: int = Field(2, ge=1, le=256, description="threads of test 8 (even read, odd write)")
    file_name: str = Field("iozone.tmp", description="the test file, in --dir (-f)")
    latency: bool = Field(
        False,
        description="time every record and keep per-column latency histograms (-Q); off, "
        "as iozone by default, only each pass is timed (the clock costs about "
        "a tenth of a cached 4K read)",
    )
    verify: Literal["off", "crc32c", "xxh3", "sha256"] = Field(
        "off",
        description="data verification (docs/verify.md): every record written carries a header and a "
        "checksum, reads check them, each cell's file is re-read before it is removed; off by default",
    )

    @field_validator("tests")
    @classmethod
    def _tests(cls, v: list[int]) -> list[int]:
        if not v:
            raise ValueError("give at least one iozone test number 0..8")
        for t in v:
            if not 0 <= t <= 8:
                raise ValueError(f"test {t} does not exist: iozone's tests are 0..8")
        if len(set(v)) != len(v):
            raise ValueError("a test is listed twice")
        if 0 not in v and any(t in v for t in (1, 2, 3, 5, 7, 8)):
            raise ValueError("tests 1, 2, 3, 5, 7 and 8 read the file test 0 (write) makes: include test 0")
        return sorted(v)

    @model_validator(mode="after")
    def _check(self):
        for f in ("min_file_size", "max_file_size", "min_record_size", "max_record_size"):
            _kib(f, getattr(self, f))
        for i, s in enumerate(self.file_sizes or []):
            _kib(f"file_sizes[{i}]", s)
        if self.min_file_size > self.max_file_size:
            raise ValueError(
                f"min_file_size ({format_size(self.min_file_size)}) is larger than max_file_size "
                f"({format_size(self.max_file_size)})"
            )
        lo = 4 * KiB if self.min_record_size is None else self.min_record_size
        hi = (16 << 20) if self.max_record_size is None else self.max_record_size
        if lo <= 0 or hi > (16 << 20):
            raise ValueError("max_record_size: records go up to 16M (iozone's largest buffer)")
        if lo > hi:
            raise ValueError(f"min_record_size ({format_size(lo)}) is larger than max_record_size ({format_size(hi)})")
        for i, r in enumerate(self.record_sizes or []):
            if r <= 0 or r > (16 << 20):
                raise ValueError(f"record_sizes[{i}]: {r} bytes: records go from 1 byte to 16M")
        first_file = min(self.file_sizes) if self.file_sizes else max(self.min_file_size, 4 * KiB)
        first_rec = min(self.record_sizes) if self.record_sizes else lo
        if first_rec > first_file:
            field = "record_sizes" if self.record_sizes else "min_record_size"
            raise ValueError(
                f"{field}: the record size ({format_size(first_rec)}) is larger than the file size "
                f"({format_size(first_file)}): use a record size <= file size"
            )
        if self.direct:
            recs = self.record_sizes or [lo]
            for i, r in enumerate(recs):
                if r % 512:
                    field = f"record_sizes[{i}]" if self.record_sizes else "min_record_size"
                    raise ValueError(
                        f"{field}: {r} bytes is not a multiple of 512, which O_DIRECT needs: "
                        "use a multiple of 512, or direct=false"
                    )
        if self.purge and (self.cache_size & (self.cache_size - 1) or not 0 < self.cache_line <= self.cache_size):
            raise ValueError("cache_size: the purge needs a power-of-two cache size and a cache line no larger")
        if self.verify != "off":
            small = [r for r in (self.record_sizes or [lo]) if r < 88]
            if small:
                field = "record_sizes" if self.record_sizes else "min_record_size"
                raise ValueError(
                    f"{field}: {small[0]} bytes: with verify, each record holds an 80-byte header and "
                    "data: use records >= 88 bytes"
                )
        if not self.file_name or "/" in self.file_name or self.file_name in (".", ".."):
            raise ValueError("file_name: a plain file name, without '/'")
        if not self.cells():
            raise ValueError(
                "max_record_size: this grid has no cell (every record is larger than every file, "
                "or the crossover left none): widen the bounds or set crossover=false"
            )
        return self

    def cells(self) -> list:
        """[(file size in bytes, record size in bytes)] in run order."""
        min_kb = max(self.min_file_size // KiB, 4)
        return [
            (f * KiB, r)
            for f, r in auto_cells(
                min_kb,
                max(self.max_file_size // KiB, 4),
                self.min_record_size,
                self.max_record_size,
                self.crossover,
                [s // KiB for s in self.file_sizes] if self.file_sizes else None,
                self.record_sizes,
            )
        ]

    def columns(self) -> list[str]:
        return [c for t in self.tests for c in COLUMNS[t]]

    def check_settings(self, settings) -> None:
        if settings.threads != 1:
            raise UserError("setting threads: the iozone grid is one stream (test 8 has mix_threads): use threads=1")
        if settings.backend != "psync":
            raise UserError("setting backend: the iozone family makes its own system calls: use backend=psync")

    def engine_spec(self) -> dict:
        return {
            "family": "iozone",
            "cells": [list(c) for c in self.cells()],
            "tests": self.tests,
            "fsync": self.fsync,
            "close": self.close,
            "direct": self.direct,
            "purge": self.purge,
            "cache_size": self.cache_size,
            "cache_line": self.cache_line,
            "stride": self.stride,
            "mix_threads": self.mix_threads,
            "file_name": self.file_name,
            "latency": self.latency,
            "verify": None if self.verify == "off" else self.verify,
            "params": self.model_dump(mode="json", exclude={"family"}),
        }


def _phases(p: IozoneParams) -> list:
    return [Phase("grid")]


def cell_metric_name(col: str, file_size: int, record_size: int) -> str:
    """The stored name of one cell's value, e.g. 'write[64K,4K]'."""
    return f"{col}[{_short(file_size)},{_short(record_size)}]"


def _short(n: int) -> str:
    for suffix, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % mult == 0:
            return f"{n // mult}{suffix}"
    return str(n)


def _cell_value(col: str, f: int, r: int, key: str):
    def get(rep: dict) -> float | None:
        for c in rep["extra"]["cells"]:
            if c["file_size"] == f and c["record_size"] == r:
                res = c["results"].get(col)
                return None if res is None else res[key]
        return None

    return get


def _gmean(col: str, key: str):
    """Geometric mean over the grid's finished cells (one number per column to rank by)."""

    def get(rep: dict) -> float | None:
        vals = [c["results"][col][key] for c in rep["extra"]["cells"] if col in c["results"]]
        vals = [v for v in vals if v > 0]
        return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else None

    return get


def _metrics(p: IozoneParams) -> list:
    key, unit, uname = ("ops_per_s", "ops/s", "ops_per_s") if p.ops else ("KB_per_s", "KB/s", "KB_per_s")
    ms = [Metric("grid", f"{c}_{uname}_gmean", unit, True, _gmean(c, key)) for c in p.columns()]
    for f, r in p.cells():
        for c in p.columns():
            ms.append(
                Metric(
                    "grid",
                    cell_metric_name(c, f, r),
                    unit,
                    True,
                    _cell_value(c, f, r, key),
                    keys={"test": c, "file_size": f, "record_size": r},
                )
            )
    return ms


FAMILY = Family(
    name="iozone",
    params=IozoneParams,
    phases=_phases,
    metrics=_metrics,
    description="iozone -a: write/rewrite, read/reread, random, backward, record rewrite, stride, fwrite, fread, "
    "mix over a file size x record size grid",
    run_summary="fsmeter.report.iozone:run_summary_of_doc",
    charts="fsmeter.report.iozone:workload_charts",
)

__all__ = ["FAMILY", "IozoneParams", "COLUMNS", "REPORT_TITLES", "CROSSOVER_KB", "cell_metric_name"]
