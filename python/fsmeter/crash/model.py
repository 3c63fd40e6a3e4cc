"""Crash campaign files: which filesystems to crash, how big, how dirty, how often, and how to cut.

    [campaign]                      # name, seed, crash_points, cut, sizes, dirty, runtime_s, threads
    [workload]                      # the crash family's knobs (file_size, write_size, sync, checksum...)
    [[filesystem]]                  # one per configuration: name, mount_options, mkfs_options, label

The matrix is filesystem x size x dirty set; each cell is crashed at ``crash_points`` instants drawn
(seeded) uniformly over its write phase, so a campaign replays with the same seed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from fsmeter.errors import UserError
from fsmeter.units import Size, format_size

CAMPAIGNS_DIR = Path(__file__).resolve().parent / "campaigns"
RECOVERABLE = ("ext2", "ext3", "ext4", "xfs", "btrfs")


class CrashFs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Literal["ext2", "ext3", "ext4", "xfs", "btrfs"]
    mount_options: str = ""
    mkfs_options: list[str] = Field(default_factory=list)
    label: str | None = None

    @property
    def title(self) -> str:
        if self.label:
            return self.label
        data = [o[5:] for o in self.mount_options.split(",") if o.startswith("data=")]
        return f"{self.name} data={data[0]}" if data else self.name


class CrashWorkload(BaseModel):
    """The crash family's parameters (the engine's CrashSpec), less those the runner sets."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    files_per_thread: int = Field(16, ge=1)
    file_size: Size = 4 << 20
    block_size: Size = 4096
    write_size: Size = 16 << 10
    overwrite_pct: int = Field(25, ge=0, le=100)
    sync: Literal["fsync", "fdatasync", "mixed"] = "mixed"
    checksum: Literal["crc32c", "xxh3", "sha256"] = "crc32c"


class CrashSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    seed: int = 1
    crash_points: int = Field(3, ge=1, le=1000)
    cut: Literal["prefix", "volatile-lost", "volatile-reorder"] = "prefix"
    sizes: list[Size] = Field(default_factory=lambda: [1 << 30])
    dirty: list[Size] = Field(default_factory=lambda: [1 << 20])
    runtime_s: float = Field(6.0, gt=0, le=3600)
    threads: int = Field(2, ge=1, le=64)
    #: Keep every cut image, not only those with a finding (large: one image per crash point).
    keep_images: bool = False
    #: The cut image's loop device does direct I/O (recovery reads and writes reach the scratch disk, as
    #: a rebooted machine's would reach its disk); false puts the host's page cache under it.
    recovery_direct_io: bool = True

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, v: list[int]) -> list[int]:
        if not v:
            raise ValueError('sizes: give at least one image size, e.g. ["1G"]')
        for s in v:
            if s < 128 << 20:
                raise ValueError(f"sizes: {format_size(s)} is too small: at least 128M (xfs needs 300M)")
        return v

    @field_validator("dirty")
    @classmethod
    def _dirty(cls, v: list[int]) -> list[int]:
        if not v:
            raise ValueError('dirty: give at least one dirty-set size, e.g. ["1M"]')
        return v


class CrashCampaign(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    campaign: CrashSettings
    workload: CrashWorkload = Field(default_factory=CrashWorkload)
    filesystem: list[CrashFs]

    @model_validator(mode="after")
    def _check(self) -> CrashCampaign:
        if not self.filesystem:
            raise ValueError("filesystem: list at least one [[filesystem]]")
        for fs in self.filesystem:
            if fs.name == "xfs" and min(self.campaign.sizes) < 300 << 20:
                raise ValueError("sizes: xfs needs images of at least 300M")
            if fs.name != "ext3" and fs.name != "ext4" and "data=" in fs.mount_options:
                raise ValueError(f"filesystem {fs.name}: data= is an ext3/ext4 journal mode")
        w = self.workload
        if w.write_size % w.block_size or w.file_size < w.write_size:
            raise ValueError("workload: write_size must be a multiple of block_size and at most file_size")
        for d in self.campaign.dirty:
            if d < w.write_size:
                raise ValueError(f"dirty: {format_size(d)} is below write_size ({format_size(w.write_size)})")
        titles = [f.title for f in self.filesystem]
        if len(set(titles)) != len(titles):
            raise ValueError("filesystem: two configurations share a label: give each a distinct label")
        return self

    def cells(self) -> list[tuple[CrashFs, int, int]]:
        """(filesystem, size_bytes, dirty_bytes) in run order."""
        return [
            (fs, size, dirty) for size in self.campaign.sizes for dirty in self.campaign.dirty for fs in self.filesystem
        ]


def campaign_names() -> list[str]:
    return sorted(p.stem for p in CAMPAIGNS_DIR.glob("*.toml"))


def load_campaign(name_or_path: str) -> tuple[CrashCampaign, str, str]:
    """A named campaign (``crash-1g``) or a file; returns (campaign, its text, where it came from)."""
    path = Path(name_or_path)
    if not path.exists():
        named = CAMPAIGNS_DIR / f"{name_or_path}.toml"
        if not named.exists():
            raise UserError(
                f"crash campaign {name_or_path!r}: no such file or named campaign "
                f"(named: {', '.join(campaign_names())})"
            )
        path = named
    from fsmeter.textfile import loads_toml, read_text

    text = read_text(path, "crash campaign file")
    data = loads_toml(text, str(path))
    try:
        return CrashCampaign.model_validate(data), text, os.fspath(path)
    except ValidationError as exc:
        raise UserError(f"{path}: {validation_message(exc)}") from None


def validation_message(exc: ValidationError) -> str:
    """The first error, as `field.path: message` (a check across fields names its field in the message)."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg
