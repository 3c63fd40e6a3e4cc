"""The crash family: an fsync-heavy write load with a durability ledger, and the check against it.

Mirrors crates/engine/src/workload/crash/spec.rs (CrashSpec). Run on its own (`fsmeter run crash-fsync`,
or in a campaign) it measures write throughput and sync latency under frequent fsync, then checks
without a crash that every promise holds (a filesystem or device that loses synced data even
without a power cut shows here). The power cuts themselves are `fsmeter crash run` (fsmeter.crash).
"""

from __future__ import annotations

import itertools
import os
import tempfile
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from fsmeter.families import Family, Metric, Phase, bytes_series, op_latency_metric
from fsmeter.units import Size

_seq = itertools.count()


class CrashParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    family: Literal["crash"] = "crash"
    runtime_s: float = Field(10.0, gt=0, le=86400, description="how long the write phase runs")
    files_per_thread: int = Field(16, ge=1, le=1_000_000, description="files each thread grows")
    file_size: Size = Field(4 << 20, gt=0, description="size a file grows to (then only overwrites)")
    block_size: Size = Field(4096, description="the verified unit: each block carries a header")
    write_size: Size = Field(16 << 10, gt=0, description="bytes per write(2), a multiple of block_size")
    dirty_bytes: Size = Field(1 << 20, gt=0, description="the dirty set: bytes a thread writes between sync points")
    overwrite_pct: int = Field(25, ge=0, le=100, description="percent of writes that overwrite written blocks")
    sync: Literal["fsync", "fdatasync", "mixed"] = Field("mixed", description="the data sync call")
    checksum: Literal["crc32c", "xxh3", "sha256"] = "crc32c"
    ledger: str | None = Field(
        None,
        description="where the ledger goes (default: a new file in the temp folder, outside the filesystem under "
        "test, removed by the cleanup phase once the check found every promise kept)",
    )
    _ledger: str | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _check(self):
        if self.block_size % 512 or not self.block_size:
            raise ValueError("block_size: a multiple of 512, at least 512")
        if self.write_size % self.block_size:
            raise ValueError("write_size: must be a multiple of block_size")
        if self.file_size < self.write_size:
            raise ValueError("file_size: must be at least write_size")
        if self.dirty_bytes < self.write_size:
            raise ValueError("dirty_bytes: must be at least write_size")
        return self

    def ledger_path(self) -> str:
        if self.ledger:
            return self.ledger
        if self._ledger is None:
            self._ledger = os.path.join(tempfile.gettempdir(), f"fsmeter-ledger-{os.getpid()}-{next(_seq)}.jsonl")
        return self._ledger

    def engine_spec(self) -> dict:
        return {
            **self.model_dump(exclude={"ledger"}),
            "ledger": self.ledger_path(),
            "ledger_temporary": not self.ledger,
        }


def _metrics(p: CrashParams) -> list:
    counter = lambda name: lambda r: r.get("counters", {}).get(name)  # noqa: E731
    ms = [Metric("write", "MiB_per_s", "MiB/s", True, lambda r: r["total"]["bytes_per_s"] / (1 << 20))]
    if p.sync in ("fsync", "mixed"):
        ms.append(op_latency_metric("write", "fsync"))
    if p.sync in ("fdatasync", "mixed"):
        ms.append(op_latency_metric("write", "fdatasync"))
    ms += [
        Metric("check", "blocks_promised", "blocks", True, counter("blocks_promised")),
        Metric("check", "bytes_lost_beyond_fsync", "bytes", False, counter("bytes_lost_beyond_fsync")),
    ]
    return ms


FAMILY = Family(
    name="crash",
    params=CrashParams,
    phases=lambda p: [Phase("write"), Phase("check")],
    metrics=_metrics,
    description="fsync-heavy writes with verification headers and a durability ledger, checked afterwards "
    "(power cuts: `fsmeter crash run`)",
    series={"MiB_per_s": bytes_series(1 << 20)},
    default_mkfs="per-trial",  # the ledger describes one run's files: each trial starts empty
)
