"""The replay family (dbench 4): replay a dbench load file, one client per thread.

Mirrors crates/engine/src/workload/replay/spec.rs (ReplaySpec). Clients are the
`threads` setting; client N works in ``clients/clientN`` (every "client1" of the
load file is replaced by its own name, as dbench does). The headline is dbench's
MB/s: requested ReadX + WriteX bytes per second of the measured run, in 10^6 B/s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fsmeter.errors import UserError
from fsmeter.families import Family, Metric, Phase, bytes_series, ops_series

DEFAULT_LOADFILE = "/usr/share/dbench/client.txt"

#: Operation kinds as the engine reports them: dbench's own latency-table names.
KINDS = [
    "NTCreateX",
    "Close",
    "Rename",
    "Unlink",
    "Deltree",
    "Rmdir",
    "Mkdir",
    "Qpathinfo",
    "Qfileinfo",
    "Qfsinfo",
    "Sfileinfo",
    "Find",
    "WriteX",
    "ReadX",
    "LockX",
    "UnlockX",
    "Flush",
]


class ReplayParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    family: Literal["replay"] = "replay"
    loadfile: str = Field(DEFAULT_LOADFILE, description="dbench load file (client.txt format); dbench -c")
    duration_s: float | None = Field(60.0, gt=0, description="measured seconds after the warm-up (dbench -t)")
    passes: int | None = Field(None, ge=1, description="stop each client after this many passes of the load file")
    warmup_s: float | None = Field(
        None, ge=0, description="unmeasured seconds first; default as dbench: duration_s/5 in whole seconds"
    )
    resolve_names: bool = Field(
        True, description="simulate Samba's case-insensitive lookup when stat fails (false = dbench --no-resolve)"
    )
    verify: Literal["off", "pattern"] = Field(
        "off",
        description="data verification (docs/verify.md): clients write a pattern of (client, offset) instead of "
        "dbench's zeros, reads check the bytes written since each file was created, and a verify phase re-reads them "
        "all; dbench's unaligned writes leave no room for block headers, hence no checksum choice",
    )

    @model_validator(mode="after")
    def _check(self):
        if self.duration_s is None and self.passes is None:
            raise ValueError("duration_s: give duration_s or passes (or both: whichever comes first)")
        return self

    def check_settings(self, settings) -> None:
        if not Path(self.loadfile).is_file():
            raise UserError(
                f"parameter loadfile: {self.loadfile} does not exist: install Debian package dbench "
                "or give loadfile=PATH"
            )
        if settings.backend != "psync":
            raise UserError("parameter backend: replay issues dbench's system calls directly: use --set backend=psync")

    def engine_spec(self) -> dict:
        d = self.model_dump()
        d["loadfile"] = str(Path(self.loadfile).resolve())
        d["verify"] = self.verify == "pattern"
        return d


def _phases(p: ReplayParams) -> list:
    phases = [Phase("setup", measured=False), Phase("run")]
    if p.verify != "off":
        # Re-read what the clients wrote, from the storage rather than the page cache when it can be dropped.
        phases.append(Phase("verify", measured=False, cold_cache=True))
    return phases


def mb_per_s(r: dict) -> float | None:
    """dbench's Throughput: requested ReadX + WriteX bytes / measured seconds / 10^6."""
    return r["total"]["bytes_per_s"] / 1e6


def _mean_ms(op: str) -> Metric:
    def get(r: dict) -> float | None:
        o = r.get("ops", {}).get(op)
        return None if o is None else o["lat"]["mean_ns"] / 1e6

    return Metric("run", f"{op}_mean_ms", "ms", False, get)


def _metrics(p: ReplayParams) -> list:
    return [
        Metric("run", "MB_per_s", "MB/s", True, mb_per_s),
        Metric("run", "ops_per_s", "ops/s", True, lambda r: r["total"]["ops_per_s"]),
        Metric(
            "run",
            "max_latency_ms",
            "ms",
            False,
            lambda r: max((o["lat"]["max_ns"] for o in r["ops"].values()), default=0) / 1e6,
        ),
        _mean_ms("NTCreateX"),
        _mean_ms("ReadX"),
        _mean_ms("WriteX"),
        Metric("run", "mismatches", "count", False, lambda r: r["counters"].get("mismatches", 0)),
    ]


FAMILY = Family(
    name="replay",
    params=ReplayParams,
    phases=_phases,
    metrics=_metrics,
    description="dbench 4: replay a load file (client.txt) with N clients; MB/s as dbench counts it",
    # Only ReadX and WriteX carry bytes (their requested sizes), so interval bytes are dbench's.
    series={"MB_per_s": bytes_series(1e6), "ops_per_s": ops_series},
)
