"""What to provision: the target (where), the filesystem configuration (what) and host factors (how).

Pydantic models so a campaign file can embed them and get errors that name the field.
"""

from __future__ import annotations

import shlex
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

GiB = 1 << 30
MiB = 1 << 20


class TargetSpec(BaseModel):
    """Where the filesystem goes.

    - ``loop``: a sparse image of ``size_bytes`` in the scratch folder on a loop device (root).
    - ``device``: a real block device; needs ``device`` and ``destroy_data_on`` naming the same
      node. Refused when mounted or in use; refused when it carries a filesystem or partition
      table unless ``force``.
    - ``dir``: an existing directory ``path``; no mkfs, works without root.
    - ``tmpfs``: a tmpfs of ``size_bytes``.
    - ``disk-model``: a sparse image of ``size_bytes`` served with the timing of the disk-model profile
      ``model`` (fsmeter.provision.targets.diskmodel), starting ``model_offset_bytes`` into the
      modelled drive, on a loop device (root).
    - ``glusterfs``: a GlusterFS volume on ``hosts`` namespace hosts of this machine (root): bricks
      of ``size_bytes`` on fsmeter's own loop filesystems (the filesystem configuration is the
      bricks'), ``bricks_per_server`` on each of ``servers``, mounted by each of ``clients`` through
      its own client (fsmeter.provision.gluster); runs under [mpi] only.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["loop", "device", "dir", "tmpfs", "glusterfs", "disk-model"] = "loop"
    size_bytes: int = Field(default=GiB, gt=0)
    device: str | None = None
    destroy_data_on: str | None = None
    force: bool = False
    path: str | None = None
    journal_size_bytes: int = Field(default=128 * MiB, gt=0)
    preallocate: bool = False  # fallocate the image instead of leaving it sparse
    hosts: int = Field(default=2, ge=1, le=16)  # glusterfs: namespace hosts h1..hN
    servers: tuple = ()  # glusterfs: server hosts (default: the last host)
    clients: tuple = ()  # glusterfs: client hosts (default: every host)
    volume_type: Literal["distribute", "replicate"] = "distribute"
    bricks_per_server: int = Field(default=1, ge=1, le=8)
    volume_options: tuple = ()  # glusterfs: (option, value) pairs for `volume set`
    model: str | None = None  # disk-model: the profile's name (or a profile .toml file)
    model_offset_bytes: int = Field(default=0, ge=0)  # disk-model: where the image starts on the drive

    @model_validator(mode="after")
    def _check_kind_fields(self) -> TargetSpec:
        if self.kind == "dir" and not self.path:
            raise ValueError("kind='dir' needs path: the existing directory to benchmark")
        if self.kind == "device" and not self.device:
            raise ValueError("kind='device' needs device: the block device to format")
        if self.kind == "disk-model" and not self.model:
            raise ValueError("kind='disk-model' needs model: a disk-model profile (fsmeter disk-model list)")
        return self


class FsConfig(BaseModel):
    """One filesystem configuration: its name, extra mkfs options, mount options, journal placement."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    mkfs_options: list[str] = Field(default_factory=list)
    mount_options: str = ""
    external_journal: bool = False

    @field_validator("mkfs_options", mode="before")
    @classmethod
    def _split(cls, v: object) -> object:
        return shlex.split(v) if isinstance(v, str) else v

    @field_validator("mount_options")
    @classmethod
    def _strip(cls, v: str) -> str:
        return ",".join(o.strip() for o in v.split(",") if o.strip())


class HostFactors(BaseModel):
    """Host settings for one cell; None leaves the host as it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scheduler: str | None = None
    readahead_kb: int | None = Field(default=None, ge=0)
    cpus: int | None = Field(default=None, ge=1)
    page_cache_limit_bytes: int | None = Field(default=None, gt=0)
