"""Disk-model profiles: a drive described by numbers that each cite a source.

    p = load_profile("seagate-st39102lw")      # a name from python/fsmeter/data/diskmodels/, or a .toml file
    spec = drive_spec(p)                       # the JSON fsmeter-diskmodel takes (crates/diskmodel/src/spec.rs)
    fig = describe(p)                          # the model's derived figures (capacity, zones, seek curve...)
    exp = expected_figures(p, fig)             # what calibration should measure, from the sources

A profile file (TOML) has a head (name, drive, year, interface, what it stands for), a [sources]
table naming every source by a short key, and one table per part of the model, each with a
``source`` key (and ``field_sources`` for fields another source gave). A source whose key starts
with ``assumed`` is an assumption the profile states, never a figure tuned to a result: ``show``
lists them. The zones are listed (``[[geometry.zones]]``, e.g. from DiskSim) or made from two
published media rates (``[geometry.zoning]``, `make_zones`).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fsmeter.errors import UserError
from fsmeter.textfile import loads_toml, read_text

PROFILE_DIR = Path(__file__).resolve().parent.parent / "data" / "diskmodels"
DISKMODEL_PROGRAM = Path(__file__).resolve().parent.parent / "_bin" / "fsmeter-diskmodel"
SECTOR = 512


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: The key (in [sources]) of the source of this table's numbers.
    source: str
    #: Fields whose numbers come from another source: field name -> source key.
    field_sources: dict[str, str] = Field(default_factory=dict)


class Zone(BaseModel):
    model_config = ConfigDict(extra="forbid")
    first_cylinder: int = Field(ge=0)
    last_cylinder: int = Field(ge=0)
    sectors_per_track: int = Field(gt=0, le=100_000)
    track_skew: int = Field(0, ge=0)
    cylinder_skew: int = Field(0, ge=0)


class Zoning(BaseModel):
    """Zones made from published figures (`make_zones`)."""

    model_config = ConfigDict(extra="forbid")
    zones: int = Field(gt=0, le=1000)
    #: Instantaneous media rate (one track per revolution) of the outermost and innermost zone, MB/s.
    outer_track_mb_s: float = Field(gt=0)
    inner_track_mb_s: float = Field(gt=0)
    #: The sustained rate of the outermost zone (head and cylinder switches included), MB/s: gives the
    #: switch time, and so the skews. Without it, the skews follow head_switch_ms and the
    #: track-to-track seek.
    outer_sustained_mb_s: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _order(self) -> Zoning:
        if self.inner_track_mb_s > self.outer_track_mb_s:
            raise ValueError("inner_track_mb_s: the inner zone cannot be faster than the outer one")
        if self.outer_sustained_mb_s is not None and self.outer_sustained_mb_s > self.outer_track_mb_s:
            raise ValueError("outer_sustained_mb_s: a sustained rate cannot exceed the track rate")
        return self


class Geometry(_Part):
    rpm: float = Field(gt=0, le=100_000)
    surfaces: int = Field(ge=1, le=64)
    capacity_sectors: int | None = Field(None, gt=0)
    zones: list[Zone] | None = None
    zoning: Zoning | None = None

    @model_validator(mode="after")
    def _one_way(self) -> Geometry:
        if (self.zones is None) == (self.zoning is None):
            raise ValueError("zones: give either [[geometry.zones]] or [geometry.zoning], one of them")
        if self.zoning is not None and self.capacity_sectors is None:
            raise ValueError("capacity_sectors: zones made from [geometry.zoning] need the drive's capacity")
        return self


class Seek(_Part):
    table: list[tuple[int, float]] | None = None
    track_to_track_ms: float | None = Field(None, gt=0)
    average_ms: float | None = Field(None, gt=0)
    full_stroke_ms: float | None = Field(None, gt=0)
    write_settle_ms: float = Field(0.0, ge=0)
    head_switch_ms: float = Field(0.0, ge=0)


class Overhead(_Part):
    read_hit_ms: float = Field(0.0, ge=0)
    read_miss_ms: float = Field(0.0, ge=0)
    write_hit_ms: float = Field(0.0, ge=0)
    write_miss_ms: float = Field(0.0, ge=0)


class Interface(_Part):
    bus_mb_s: float = Field(gt=0)


class Cache(_Part):
    segments: int = Field(ge=0, le=1024)
    segment_sectors: int = Field(ge=0)
    read_ahead_sectors: int = Field(ge=0)
    #: A read at the end of a stopped read-ahead starts it again (DiskSim's "Read-ahead on idle hit").
    read_ahead_on_hit: bool = False
    write_cache: bool
    write_cache_sectors: int = Field(ge=0)


class Queue(_Part):
    policy: Literal["fifo", "satf"]
    depth: int = Field(ge=1, le=256)


class Datasheet(_Part):
    """Published figures shown beside the model's, and the average seek calibration expects."""

    average_seek_ms: float | None = Field(None, gt=0)
    track_to_track_ms: float | None = Field(None, gt=0)
    full_stroke_ms: float | None = Field(None, gt=0)
    outer_sustained_mb_s: float | None = Field(None, gt=0)
    inner_sustained_mb_s: float | None = Field(None, gt=0)
    cache_bytes: int | None = Field(None, gt=0)


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]{0,62}$")
    drive: str = Field(max_length=200)
    year: int = Field(ge=1950, le=2100)
    interface: str = Field(max_length=200)
    description: str = Field(max_length=4000)
    #: The studies whose disk this is (or stands in for).
    studies: list[str] = Field(default_factory=list)
    #: Empty for the paper's own disk; else which disk it stands in for and why this one.
    stand_in_for: str = Field("", max_length=2000)
    sources: dict[str, str]
    geometry: Geometry
    seek: Seek
    overhead: Overhead
    interface_rate: Interface
    cache: Cache
    queue: Queue
    datasheet: Datasheet | None = None

    @model_validator(mode="after")
    def _sources_known(self) -> Profile:
        for part_name in ("geometry", "seek", "overhead", "interface_rate", "cache", "queue", "datasheet"):
            part = getattr(self, part_name)
            if part is None:
                continue
            for field, key in [("source", part.source), *part.field_sources.items()]:
                if key not in self.sources:
                    raise ValueError(
                        f"{part_name}.{field}: source {key!r} is not in [sources] (known: {', '.join(sorted(self.sources))})"
                    )
            for field in part.field_sources:
                if field not in type(part).model_fields or field in ("source", "field_sources"):
                    raise ValueError(f"{part_name}.field_sources: {field!r} is no field of [{part_name}]")
        return self

    def assumptions(self) -> list[str]:
        """'part.field: source text' for every number whose source is an assumption."""
        out = []
        for part_name in ("geometry", "seek", "overhead", "interface_rate", "cache", "queue", "datasheet"):
            part = getattr(self, part_name)
            if part is None:
                continue
            given = part.model_fields_set - {"source", "field_sources"}
            for field in sorted(given):
                key = part.field_sources.get(field, part.source)
                if key.startswith("assumed"):
                    out.append(f"{part_name}.{field}: {self.sources[key]}")
        return out


def profile_names() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def _errors(exc: ValidationError, where: str) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "missing: this field is required"
        parts.append(f"{where}: {loc}: {msg}" if loc else f"{where}: {msg}")
    return "; ".join(parts)


def load_profile(name_or_path: str) -> Profile:
    """A profile by name (``fsmeter disk-model list``) or from a .toml file; a UserError names the field."""
    path = Path(name_or_path)
    if not (path.suffix == ".toml" and path.is_file()):
        if "/" in name_or_path or name_or_path.endswith(".toml"):
            raise UserError(f"disk-model profile {name_or_path}: no such file")
        path = PROFILE_DIR / f"{name_or_path}.toml"
        if not path.is_file():
            raise UserError(
                f"unknown disk model {name_or_path!r}: use one of {', '.join(profile_names())} "
                "(fsmeter disk-model list), or a profile .toml file"
            )
    text = read_text(path, "disk-model profile")
    data = loads_toml(text, str(path))
    if "interface" in data and isinstance(data.get("interface"), dict):
        raise UserError(f"{path}: [interface] is the drive's interface name; its rate goes in [interface_rate]")
    try:
        p = Profile(**data)
    except ValidationError as exc:
        raise UserError(_errors(exc, str(path))) from None
    if path.parent == PROFILE_DIR and p.name != path.stem:
        raise UserError(f"{path}: name {p.name!r} differs from the file's name {path.stem!r}")
    return p


def make_zones(p: Profile) -> list[dict]:
    """Zones from [geometry.zoning]: ``zones`` bands of equal cylinder counts, their sectors per
    track falling linearly from the outer to the inner rate (constant linear density: the track's
    length, and so its sectors, is linear in its radius, and cylinders are evenly spaced in
    radius), with as many cylinders as the capacity needs. The skews are the smallest that let a
    switch finish before the next track's first block arrives: the switch time comes from the
    outer zone's sustained and instantaneous rates when both are published (Hitachi's definition:
    sustained = sectors per cylinder x 512 / (surfaces x revolution + (surfaces - 1) x head switch
    + cylinder switch), taking the two switches as equal), else from head_switch_ms and the
    track-to-track seek."""
    g, z = p.geometry, p.geometry.zoning
    assert z is not None and g.capacity_sectors is not None
    rev_s = 60.0 / g.rpm
    spt_outer = z.outer_track_mb_s * 1e6 * rev_s / SECTOR
    spt_inner = z.inner_track_mb_s * 1e6 * rev_s / SECTOR
    spts = [
        round(spt_outer + (spt_inner - spt_outer) * (i / (z.zones - 1) if z.zones > 1 else 0.0)) for i in range(z.zones)
    ]
    cyl_per_zone = math.ceil(g.capacity_sectors / (g.surfaces * sum(spts)))
    switch_ms = switch_time_ms(p)
    t2t_ms = p.seek.track_to_track_ms or (p.seek.table[0][1] if p.seek.table else 0.0)
    out = []
    for i, spt in enumerate(spts):
        track_skew = min(spt - 1, math.ceil(switch_ms / (rev_s * 1e3) * spt))
        cyl_skew = min(spt - 1, math.ceil(max(switch_ms, t2t_ms) / (rev_s * 1e3) * spt))
        out.append(
            {
                "first_cylinder": i * cyl_per_zone,
                "last_cylinder": (i + 1) * cyl_per_zone - 1,
                "sectors_per_track": spt,
                "track_skew": track_skew,
                "cylinder_skew": cyl_skew,
            }
        )
    return out


def switch_time_ms(p: Profile) -> float:
    """The head switch time the model uses (ms): from the published sustained rate when [geometry.zoning]
    has one, else [seek].head_switch_ms."""
    z = p.geometry.zoning
    if z is not None and z.outer_sustained_mb_s is not None:
        rev_ms = 60e3 / p.geometry.rpm
        return rev_ms * (z.outer_track_mb_s / z.outer_sustained_mb_s - 1.0)
    return p.seek.head_switch_ms


def drive_spec(p: Profile) -> dict[str, Any]:
    """The description fsmeter-diskmodel reads (numbers only)."""
    s = p.seek
    seek: dict[str, Any] = {}
    if s.table is not None:
        seek["table"] = [list(x) for x in s.table]
    else:
        seek.update(track_to_track_ms=s.track_to_track_ms, average_ms=s.average_ms, full_stroke_ms=s.full_stroke_ms)
    zones = [z.model_dump() for z in p.geometry.zones] if p.geometry.zones is not None else make_zones(p)
    spec: dict[str, Any] = {
        "name": p.name,
        "rpm": p.geometry.rpm,
        "surfaces": p.geometry.surfaces,
        "zones": zones,
        "seek": seek,
        "write_settle_ms": s.write_settle_ms,
        "head_switch_ms": switch_time_ms(p),
        "overhead": p.overhead.model_dump(exclude={"source", "field_sources"}),
        "bus_mb_s": p.interface_rate.bus_mb_s,
        "cache": p.cache.model_dump(exclude={"source", "field_sources"}),
        "queue": p.queue.model_dump(exclude={"source", "field_sources"}),
    }
    if p.geometry.capacity_sectors is not None:
        spec["capacity_sectors"] = p.geometry.capacity_sectors
    return spec


def diskmodel_program() -> str:
    if not DISKMODEL_PROGRAM.exists():
        raise UserError(f"{DISKMODEL_PROGRAM} is missing: reinstall fsmeter (`make build` or `pip install .`)")
    return str(DISKMODEL_PROGRAM)


def write_spec(p: Profile, path: str) -> None:
    with open(path, "w") as f:
        json.dump(drive_spec(p), f)


def describe(p: Profile) -> dict[str, Any]:
    """The model's derived figures (fsmeter-diskmodel describe), or a UserError with its one line."""
    fd, path = tempfile.mkstemp(prefix="fsmeter-drive-", suffix=".json")
    os.close(fd)
    try:
        write_spec(p, path)
        r = subprocess.run(
            [diskmodel_program(), "describe", path], capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
    finally:
        os.unlink(path)
    if r.returncode != 0:
        line = (r.stderr.strip().splitlines() or ["no message"])[-1]
        raise UserError(f"disk model {p.name}: {line.split(': ', 2)[-1]}")
    return json.loads(r.stdout)


def expected_figures(p: Profile, fig: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What calibration should measure, from the profile's sources: name -> {expected, unit, basis}.

    random_4k_read_iops: 1 / (read-miss overhead + average seek + half a revolution + 4 KiB
    transfer), the average seek being the datasheet's when the profile gives one, else the seek
    curve's mean over all cylinder pairs, and the transfer the slower of the media's and the
    interface's; the sequential rates are the zones' sustained media rates (track rate less the
    skews), or the interface's rate when that is lower; the seeks are the curve's."""
    ds = p.datasheet
    avg = ds.average_seek_ms if ds and ds.average_seek_ms else fig["seek"]["average_ms"]
    basis = "datasheet average seek" if ds and ds.average_seek_ms else "seek curve's mean over cylinder pairs"
    bus = p.interface_rate.bus_mb_s
    xfer = max(fig["transfer_4k_ms"], 4096 / (bus * 1e3))  # the slower of the media and the interface
    t = fig["read_miss_overhead_ms"] + avg + fig["revolution_ms"] / 2 + xfer
    return {
        "random_4k_read_iops": {
            "expected": 1000.0 / t,
            "unit": "IOPS",
            "basis": f"1 / (overhead + {basis} {avg:.2f} ms + half a revolution + 4 KiB transfer)",
        },
        "seq_outer_read_mb_s": {
            "expected": min(fig["outer_sustained_mb_s"], bus),
            "unit": "MB/s",
            "basis": "outer zone's sustained media rate"
            + (" (bounded by the interface)" if bus < fig["outer_sustained_mb_s"] else ""),
        },
        "seq_inner_read_mb_s": {
            "expected": min(fig["inner_sustained_mb_s"], bus),
            "unit": "MB/s",
            "basis": "inner zone's sustained media rate"
            + (" (bounded by the interface)" if bus < fig["inner_sustained_mb_s"] else ""),
        },
        "track_to_track_seek_ms": {
            "expected": fig["seek"]["track_to_track_ms"],
            "unit": "ms",
            "basis": "seek curve at 1 cylinder",
        },
        "full_stroke_seek_ms": {
            "expected": fig["seek"]["full_stroke_ms"],
            "unit": "ms",
            "basis": f"seek curve at {fig['seek']['full_stroke_cylinders']} cylinders",
        },
    }


__all__ = [
    "PROFILE_DIR",
    "Profile",
    "describe",
    "diskmodel_program",
    "drive_spec",
    "expected_figures",
    "load_profile",
    "make_zones",
    "profile_names",
    "switch_time_ms",
    "write_spec",
]
