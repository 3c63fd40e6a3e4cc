"""Campaign files (TOML) and their matrix of cells.

A campaign names a target, filesystems, factors with levels, workloads and a repetition
policy; :func:`plan` expands it into cells: filesystems x factor levels x workloads, minus
the exclusions. Everything is validated here, before anything is provisioned, and errors
name the field (and its line in the file where it can be found) and the allowed values.

Factor kinds (see docs/campaign-file.md):
- job settings every workload takes: threads, seed, backend, interval_s;
- workload parameters (queue_depth, file_size, ...): a factor applies to the workloads whose
  family has that parameter; for the others it is *not* a dimension (one cell, the factor
  column left empty). A factor that no workload takes is an error;
- host factors: scheduler, readahead_kb, cpus, page_cache_limit;
- ranks: MPI ranks per trial (with the [mpi] section's launcher settings);
- kernel: the kernel a trial runs under, each level booted once in a virtual machine (with the
  [guest] section's settings; fsmeter.guest); guest_vcpus and guest_memory: that machine's CPUs
  and memory (one boot per combination).
"""

from __future__ import annotations

import itertools
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from fsmeter.errors import UserError
from fsmeter.mpi.options import STONEWALL_PHASES, parse_reorder_shift, parse_stonewall
from fsmeter.textfile import loads_toml, read_text
from fsmeter.units import MAX_DURATION_S, MAX_SIZE_BYTES, Size

HOST_FACTORS = {"scheduler", "readahead_kb", "cpus", "page_cache_limit"}
#: Factors about how a trial is launched rather than what it runs: ranks = MPI processes (mpirun -n).
LAUNCH_FACTORS = {"ranks"}
#: The guest-kernel factor: each level is a kernel image booted in a virtual machine (fsmeter.guest).
KERNEL_FACTOR = "kernel"
#: With a kernel factor: the guest's own CPUs and memory as factors (one boot per combination of levels).
GUEST_FACTORS = {"guest_vcpus": "vcpus", "guest_memory": "memory"}
RESERVED = {"filesystem", "workload"}
Scalar = bool | int | float | str
#: The longest name or label (campaign, filesystem, workload label, factor, level) a campaign may use:
#: names are printed in headers and tables and stored with every cell.
MAX_NAME_CHARS = 200
#: The longest description and the longest path (workload file, target path) a campaign may give.
MAX_TEXT_CHARS = 10000
MAX_PATH_CHARS = 4096
#: The most cells one campaign may expand to (each cell is several trials of at least seconds each).
MAX_CELLS = 100000


#: A name is printed on one line: no control characters (newlines, escapes, NUL).
def _one_line(v: str) -> str:
    if re.search(r"[\x00-\x1f\x7f]", v):
        raise ValueError("a control character (newline, tab, escape): write the name on one line")
    if "[" in v:  # rich, which draws every table, reads [x] as a style: 'ext4[dax]' printed as 'ext4'
        raise ValueError(f"{v[:60]!r} has a '[', which fsmeter's tables would take for formatting: use ( ) instead")
    return v


Name = Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS), AfterValidator(_one_line)]


#: The fields each target kind takes besides `kind`; any other is refused, naming it.
TARGET_FIELDS = {
    "loop": ("size", "journal_size", "preallocate"),
    "tmpfs": ("size",),
    "dir": ("path",),
    "device": ("device", "destroy_data_on", "force"),
    "glusterfs": ("size", "hosts", "servers", "clients", "volume_type", "bricks_per_server", "volume_options"),
    "disk-model": ("size", "model", "offset"),
}


class TargetModel(BaseModel):
    """Where the filesystems go (see fsmeter.provision.TargetSpec)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["loop", "dir", "tmpfs", "device", "glusterfs", "disk-model"] = "loop"
    size: Size = Field(1 << 30, gt=0, description="image / tmpfs size")
    model: str | None = Field(
        None, max_length=MAX_PATH_CHARS, description="kind=disk-model: the disk-model profile (fsmeter disk-model list)"
    )
    offset: Size = Field(0, ge=0, description="kind=disk-model: where the image starts on the modelled drive")
    path: str | None = Field(None, max_length=MAX_PATH_CHARS, description="kind=dir: the existing directory to measure")
    device: str | None = Field(None, max_length=MAX_PATH_CHARS)
    destroy_data_on: str | None = Field(
        None, max_length=MAX_PATH_CHARS, description="kind=device: repeat the device path to confirm"
    )
    force: bool = False
    journal_size: Size = Field(128 << 20, gt=0, description="external journal image size")
    preallocate: bool = False
    hosts: int = Field(
        2, ge=1, le=16, strict=True, description="kind=glusterfs: namespace hosts h1..hN on this machine"
    )
    servers: list[str] | None = Field(
        None, max_length=16, description="kind=glusterfs: server hosts (default: the last host)"
    )
    clients: list[str] | None = Field(
        None,
        max_length=16,
        description="kind=glusterfs: client hosts, each mounting through its own client (default: every host)",
    )
    volume_type: Literal["distribute", "replicate"] = "distribute"
    bricks_per_server: int = Field(1, ge=1, le=8, strict=True)
    volume_options: dict[str, str] = Field(
        default_factory=dict, description="kind=glusterfs: gluster volume set OPTION VALUE, before the volume starts"
    )

    @field_validator(
        "size",
        "path",
        "device",
        "destroy_data_on",
        "force",
        "journal_size",
        "preallocate",
        "hosts",
        "servers",
        "clients",
        "volume_type",
        "bricks_per_server",
        "volume_options",
        "model",
        "offset",
    )
    @classmethod
    def _belongs_to_kind(cls, v: Any, info: ValidationInfo) -> Any:
        # Only fields given are checked; `kind` comes first, so it is known here.
        kind = info.data.get("kind")
        takes = TARGET_FIELDS.get(kind)
        if takes is not None and info.field_name not in takes:
            raise ValueError(
                f"a {kind} target has no {info.field_name}: remove it "
                f"(kind = '{kind}' takes {', '.join(takes) or 'no other field'})"
            )
        return v

    @field_validator("volume_options")
    @classmethod
    def _volume_options(cls, v: dict) -> dict:
        from fsmeter.provision.gluster import volume_option_problem

        for key, value in v.items():
            why = volume_option_problem(key, value)
            if why is not None:
                raise ValueError(why)
        return v

    @model_validator(mode="after")
    def _check(self) -> TargetModel:
        if self.kind == "dir" and not self.path:
            raise ValueError("path: kind = 'dir' needs path, the existing directory to measure")
        if self.kind == "device" and not self.device:
            raise ValueError("device: kind = 'device' needs device (and destroy_data_on naming it again)")
        if self.kind == "disk-model" and not self.model:
            raise ValueError("model: kind = 'disk-model' needs model, a disk-model profile (fsmeter disk-model list)")
        names = [f"h{i + 1}" for i in range(self.hosts)]
        for side in ("servers", "clients"):
            bad = [h for h in getattr(self, side) or [] if h not in names]
            if bad:
                raise ValueError(f"{side}: {bad[0]!r} is not one of the {self.hosts} hosts ({', '.join(names)})")
        if self.kind == "device" and not self.destroy_data_on:
            raise ValueError(
                f"destroy_data_on: {self.device} would be formatted, destroying its data: confirm "
                f"with destroy_data_on = {self.device!r}"
            )
        if self.kind == "device" and os.path.realpath(self.device) != os.path.realpath(self.destroy_data_on):
            raise ValueError(
                f"destroy_data_on: {self.destroy_data_on!r} names another device than "
                f"device = {self.device!r}: name the same device twice"
            )
        return self

    def spec(self):
        from fsmeter.provision import TargetSpec

        return TargetSpec(
            kind=self.kind,
            size_bytes=self.size,
            path=self.path,
            device=self.device,
            destroy_data_on=self.destroy_data_on,
            force=self.force,
            journal_size_bytes=self.journal_size,
            preallocate=self.preallocate,
            hosts=self.hosts,
            servers=tuple(self.servers or ()),
            clients=tuple(self.clients or ()),
            volume_type=self.volume_type,
            bricks_per_server=self.bricks_per_server,
            volume_options=tuple(sorted(self.volume_options.items())),
            model=self.model,
            model_offset_bytes=self.offset,
        )


class FsModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(max_length=MAX_NAME_CHARS)
    label: Name | None = Field(None, description="name in results (default: name, or name-N if repeated)")
    mkfs_options: str | list[str] = Field(default_factory=list)
    mount_options: str = ""
    external_journal: bool = False

    @field_validator("name")
    @classmethod
    def _known(cls, v: str) -> str:
        from fsmeter.provision import FILESYSTEMS

        if v not in FILESYSTEMS:
            raise ValueError(f"unknown filesystem {v!r}: use one of {', '.join(FILESYSTEMS)}")
        return v

    def config(self):
        from fsmeter.provision import FsConfig

        return FsConfig(
            name=self.name,
            mkfs_options=self.mkfs_options,
            mount_options=self.mount_options,
            external_journal=self.external_journal,
        )


class WorkloadModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(
        min_length=1,
        max_length=MAX_PATH_CHARS,
        description="a named workload (fsmeter list), a workload .toml file, or a fio job file "
        "(.fio: every job; FILE.fio:JOB: one)",
    )
    label: Name | None = Field(None, description="name in results (default: name)")
    params: dict[str, Any] = Field(default_factory=dict, description="parameter and setting overrides")


class Repetitions(BaseModel):
    """How many trials per cell. adaptive (default): until the CI half-width of the headline
    metric is within target_pct % of the mean, or a cap. fixed: exactly n trials."""

    model_config = ConfigDict(extra="forbid")
    policy: Literal["adaptive", "fixed"] = "adaptive"
    n: int = Field(3, ge=1, le=10000, description="fixed: trials per cell")
    target_pct: float = Field(10.0, gt=0)
    level: float = Field(0.95, description="confidence level: 0.90, 0.95 or 0.99")
    discard_first: int | None = Field(None, ge=0, description="default 1 (adaptive), 0 (fixed)")
    min_trials: int = Field(3, ge=2)
    max_trials: int = Field(10, ge=1)
    max_time_s: float | None = Field(None, gt=0)

    @field_validator("level")
    @classmethod
    def _level(cls, v: float) -> float:
        if v not in (0.90, 0.95, 0.99):
            raise ValueError(f"level: use 0.90, 0.95 or 0.99 (got {v})")
        return v

    @property
    def discard(self) -> int:
        return self.discard_first if self.discard_first is not None else (1 if self.policy == "adaptive" else 0)

    @model_validator(mode="after")
    def _check(self) -> Repetitions:
        if self.policy == "fixed" and self.discard >= self.n:
            raise ValueError(
                f"discard_first: {self.discard} discarded of n = {self.n} trials leaves none: "
                "lower discard_first or raise n"
            )
        if self.policy == "adaptive":
            self.rule()  # raises UserError with the field
        return self

    def rule(self):
        from fsmeter.stats.adaptive import AdaptiveRule

        try:
            return AdaptiveRule(
                target_pct=self.target_pct,
                level=self.level,
                discard_first=self.discard,
                min_trials=self.min_trials,
                max_trials=self.max_trials,
                max_time_s=self.max_time_s,
            )
        except UserError as exc:
            raise ValueError(exc.message) from None


class MpiModel(BaseModel):
    """[mpi]: run every trial as `mpirun -n RANKS fsmeter run ...` (fsmeter.mpi.launch)."""

    model_config = ConfigDict(extra="forbid")
    ranks: int = Field(1, ge=1, le=100000, strict=True, description="ranks per trial when there is no `ranks` factor")
    mpirun: str = Field("mpirun", description="the launcher (Open MPI's mpirun)")
    hostfile: str | None = Field(None, description="mpirun --hostfile: the hosts and their slots")
    oversubscribe: bool | None = Field(
        None,
        description="mpirun --oversubscribe: more ranks than cores; "
        "default: on without a hostfile (one machine), off with one",
    )
    extra_args: list[str] = Field(default_factory=list, description="more mpirun arguments, passed as they are")
    timeout_s: float = Field(
        60.0,
        gt=0,
        description="longest wait of a rank for the others at a barrier (or "
        "as long as it worked itself since the last one, when that is longer)",
    )
    stonewall: str | None = Field(
        None,
        description="first-done, or seconds: stop every rank's measured phases when the first finishes / at that time",
    )

    stonewall_wearout: bool = Field(
        False,
        description="with stonewall: every rank then goes on to the busiest "
        "rank's count of requests (access) or of files per tree (tree create): "
        "IO500's wear-out",
    )
    shared_file: bool = Field(
        False,
        description="access workloads: every rank on its own region of the same "
        "files (IOR without -F), instead of a folder per rank",
    )
    reorder_shift: str | None = Field(
        None,
        description="with shared_file: each rank's measured phase works on "
        "the region of rank r + K (a number), or one host further on (node: IOR -C)",
    )

    @field_validator("reorder_shift", mode="before")
    @classmethod
    def _reorder(cls, v):
        if v is None:
            return v
        try:
            parse_reorder_shift(str(v))
        except UserError as exc:
            raise ValueError(exc.message.replace("--reorder-shift", "reorder_shift")) from None
        return str(v)

    @model_validator(mode="after")
    def _wearout_needs_stonewall(self):
        if self.stonewall_wearout and not self.stonewall:
            raise ValueError("stonewall_wearout: needs stonewall (first-done or seconds)")
        return self

    @model_validator(mode="after")
    def _reorder_needs_shared(self):
        if self.reorder_shift is not None and not self.shared_file:
            raise ValueError(
                "reorder_shift: needs shared_file = true (with a folder per rank there is no other "
                "rank's region to work on)"
            )
        return self

    @field_validator("stonewall")
    @classmethod
    def _stonewall(cls, v: str | None) -> str | None:
        try:
            parse_stonewall(v)
        except UserError as exc:
            raise ValueError(exc.message.replace("--stonewall", "stonewall")) from None
        return v


def guest_vcpus_problem(v: Any, host_cpus: int | None = None) -> str | None:
    """Why ``v`` is not a guest's CPU count (a whole number, not a boolean, 1 to 256; with ``host_cpus``, at
    most that many: the host's, checked on the host before a guest is started), or None."""
    if not isinstance(v, int) or isinstance(v, bool):
        return f"{_short(v)} is not a whole number of CPUs"
    most = min(256, host_cpus or 256)
    if not 1 <= v <= most:
        return f"{v}: give 1 to {most}" + (", the CPUs of this host" if host_cpus and host_cpus < 256 else "")
    return None


def guest_memory_problem(v: Any, host_bytes: int | None = None) -> str | None:
    """Why ``v`` is not a guest's memory (a size of at least 256M; with ``host_bytes``, at most that: the
    host's memory, checked on the host before a guest is started), or None."""
    from fsmeter.units import format_size, parse_size

    try:
        n = parse_size(v)
    except (ValueError, TypeError):
        return f'{_short(v)} is not a size: write it as "1G"'
    if n < 256 << 20 or n > MAX_SIZE_BYTES or (host_bytes and n > host_bytes):
        most = f"{format_size(host_bytes)}, this host's memory" if host_bytes else "1 PiB"
        return f"{_short(v)}: give at least 256M and at most {most}"
    return None


class GuestModel(BaseModel):
    """[guest]: the virtual machine each level of the `kernel` factor is booted in (fsmeter.guest)."""

    model_config = ConfigDict(extra="forbid")
    vcpus: int = Field(1, ge=1, le=256, description="virtual CPUs of the guest (at most the host's CPUs)")
    memory: Size = Field(
        2 << 30, ge=256 << 20, description="the guest's memory (at least 256M, at most the host's memory)"
    )
    disk_size: Size = Field(
        4 << 30,
        ge=256 << 20,
        le=MAX_SIZE_BYTES,
        description="the guest's scratch disk (a sparse raw image on the host), where its loop images go",
    )
    disk_cache: Literal["none", "writethrough", "writeback", "directsync", "unsafe"] = Field(
        "none", description="QEMU's cache mode for the scratch disk (none: the host's page cache is bypassed)"
    )
    accelerator: Literal["auto", "kvm", "tcg"] = Field(
        "auto",
        description="kvm: hardware virtualisation; tcg: software emulation (functional results only); "
        "auto: kvm where it can boot a stock kernel, else tcg",
    )
    boot_timeout_s: float = Field(600.0, gt=0, le=MAX_DURATION_S, description="longest wait for a guest to boot")

    @field_validator("vcpus", mode="before")
    @classmethod
    def _vcpus(cls, v: Any) -> Any:
        why = guest_vcpus_problem(v)
        if why is not None:
            raise ValueError(why)
        return v

    @field_validator("memory", mode="before")
    @classmethod
    def _memory(cls, v: Any) -> Any:
        why = guest_memory_problem(v)
        if why is not None:
            raise ValueError(why)
        return v


class CampaignFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name = Field(min_length=1)
    description: str = Field("", max_length=MAX_TEXT_CHARS)
    target: TargetModel = Field(default_factory=TargetModel)
    filesystems: list[FsModel] = Field(default_factory=list)
    factors: dict[Name, list[Scalar]] = Field(default_factory=dict)
    workloads: list[WorkloadModel] = Field(min_length=1)
    repetitions: Repetitions = Field(default_factory=Repetitions)
    #: None: as the workload's family asks (per-cell, except macro: per-trial).
    mkfs: Literal["per-cell", "per-trial"] | None = None
    #: cells: every trial of a cell, then the next cell. interleaved: the cells of one workload take turns,
    #: one trial each, in alternating order (ABC CBA ...), so a drift in the machine's load or state spreads
    #: over every configuration instead of landing on whichever ran during it.
    order: Literal["cells", "interleaved"] = "cells"
    exclusions: list[dict[Name, Scalar]] = Field(default_factory=list)
    #: Measured phases shorter than this are flagged "too short to trust" (60 s for claims; lower for smoke runs).
    min_phase_s: float = Field(60.0, ge=0)
    #: Present (or a `ranks` factor): every trial runs under mpirun, one fsmeter per rank.
    mpi: MpiModel | None = None
    #: Present with a `kernel` factor: the guest's settings (defaults without it).
    guest: GuestModel | None = None

    @field_validator("workloads", mode="before")
    @classmethod
    def _names(cls, v: Any) -> Any:
        return [{"name": w} if isinstance(w, str) else w for w in v] if isinstance(v, list) else v

    @field_validator("factors")
    @classmethod
    def _levels(cls, v: dict) -> dict:
        for k, levels in v.items():
            if k in RESERVED:
                raise ValueError(f"{k}: reserved; list filesystems in [[filesystems]] and workloads in [[workloads]]")
            if not levels:
                raise ValueError(f"{k}: give at least one level")
            if len(set(map(repr, levels))) != len(levels):
                raise ValueError(f"{k}: a level is repeated ({_short(levels)})")
            for lv in levels:
                if isinstance(lv, float) and not math.isfinite(lv):
                    raise ValueError(f"{k}: level {lv!r} is not a finite number: give a number or a name")
                if isinstance(lv, str) and len(lv) > MAX_NAME_CHARS:
                    raise ValueError(f"{k}: a level of {len(lv)} characters: at most {MAX_NAME_CHARS}")
                if isinstance(lv, str):
                    try:
                        _one_line(lv)
                    except ValueError as exc:
                        raise ValueError(f"{k}: level {_short(lv)}: {exc}") from None
            if k == "ranks" and not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in levels):
                raise ValueError(f"ranks: levels are numbers of MPI ranks, whole numbers >= 1 (got {levels})")
            if k == KERNEL_FACTOR and not all(isinstance(x, str) for x in levels):
                raise ValueError(
                    f"kernel: levels are kernel versions or image paths, written as strings "
                    f'("6.1", not 6.1; got {levels})'
                )
            if k == "guest_vcpus":
                for lv in levels:
                    why = guest_vcpus_problem(lv)
                    if why is not None:
                        raise ValueError(f"guest_vcpus: levels are the guest's CPU counts: level {why}")
            if k == "guest_memory":
                for lv in levels:
                    why = guest_memory_problem(lv)
                    if why is not None:
                        raise ValueError(f"guest_memory: level {why}")
            if k == KERNEL_FACTOR:  # an absent kernel is refused now, not when its guest would boot
                from fsmeter.guest.kernels import HOST_LEVEL, resolve

                for lv in levels:
                    if lv != HOST_LEVEL:
                        try:
                            resolve(lv)
                        except UserError as exc:
                            raise ValueError(exc.message) from None
        return v

    @model_validator(mode="after")
    def _guest(self) -> CampaignFile:
        if KERNEL_FACTOR in self.factors:
            if self.mpi is not None or "ranks" in self.factors:
                raise ValueError(
                    "kernel: trials in a guest are not run under MPI: leave out [mpi] or the kernel factor"
                )
            if self.target.kind not in ("loop", "disk-model"):
                raise ValueError(
                    "kernel: a guest makes its own loop images, or runs on a disk model the host serves: use "
                    f"target.kind = 'loop' or 'disk-model' (got {self.target.kind!r})"
                )
            if self.guest is None:
                self.guest = GuestModel()
        elif self.guest is not None or any(k in self.factors for k in GUEST_FACTORS):
            if self.guest is None:
                raise ValueError(
                    "guest_vcpus, guest_memory: guest factors need a kernel factor (factors.kernel = "
                    '["6.1", ...]): add one, or remove them'
                )
            raise ValueError(
                'guest: the [guest] section needs a kernel factor (factors.kernel = ["6.1", ...]): '
                "add one, or remove [guest]"
            )
        return self


def _short(value: Any, limit: int = 120) -> str:
    """repr(value), cut to ``limit`` characters: an error message stays one readable line."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


# -- loading --------------------------------------------------------------------------------
_SECTION_MODELS = {
    "target": TargetModel,
    "filesystems": FsModel,
    "workloads": WorkloadModel,
    "repetitions": Repetitions,
    "mpi": MpiModel,
    "guest": GuestModel,
}


def _line_of(text: str, loc: tuple) -> int | None:
    """Best-effort line of the field at ``loc`` in the TOML text (1-based), for error messages."""
    lines = text.splitlines()
    keys = [k for k in loc if isinstance(k, str)]
    if not keys:
        return None
    start = 0
    if len(keys) > 1:  # find the section header or inline table first
        want = re.compile(rf"^\s*\[\[?\s*{re.escape(keys[0])}\s*\]\]?\s*$|^\s*{re.escape(keys[0])}\s*=")
        nth = next((k for k in loc[1:] if isinstance(k, int)), 0)
        hits = [i for i, ln in enumerate(lines) if want.match(ln)]
        if hits:
            start = hits[min(nth, len(hits) - 1)]
    key = re.compile(rf"(^|[\s{{,]){re.escape(keys[-1])}\s*=|^\s*\[\[?\s*{re.escape(keys[-1])}\s*\]\]?\s*$")
    for i in range(start, len(lines)):
        if key.search(lines[i]):
            return i + 1
    return start + 1 if start else None


def _fmt_errors(exc: ValidationError, text: str, where: str) -> str:
    parts = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        name = ".".join(_key_text(x) if isinstance(x, str) else f"[{x}]" for x in loc).replace(".[", "[")
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            model = _SECTION_MODELS.get(loc[0]) if len(loc) > 1 else CampaignFile
            allowed = ", ".join(model.model_fields) if model else ""
            msg = f"unknown field; allowed are {allowed}" if allowed else "unknown field"
        elif err["type"] == "missing":
            msg = "missing: this field is required"
        got = err.get("input")
        if err["type"] not in ("extra_forbidden", "missing") and not isinstance(got, (dict, list)) and got is not None:
            msg += f" (got {_short(got)})"
        if len(name) > MAX_NAME_CHARS:
            name = name[:MAX_NAME_CHARS] + "..."
        if not loc:  # a check across sections: its message starts with the field it is about
            head = msg.split(":", 1)[0].split(",")[0].strip()
            line = _line_of(text, (head,)) if re.fullmatch(r"\w+", head) else None
            parts.append(f"{where}{f':{line}' if line else ''}: {msg}")
            continue
        line = _line_of(text, loc)
        parts.append(f"{where}{f':{line}' if line else ''}: {name}: {msg}")
    # One line, whatever the file holds: a key or value with a line break is shown escaped.
    return "; ".join(parts).replace("\n", "\\n").replace("\r", "\\r")


def _key_text(key: str) -> str:
    """A key of the file as an error names it: as written when it is a plain name, quoted otherwise."""
    return key if re.fullmatch(r"[\w.+-]+", key) else _short(key, 60)


def parse_campaign(text: str, where: str = "campaign") -> CampaignFile:
    """Validate campaign TOML text; a UserError (exit 2) names the field, line and allowed values."""
    data = loads_toml(text, where)  # syntax errors and absurd nesting: one line each
    try:
        return CampaignFile(**data)
    except ValidationError as exc:
        raise UserError(_fmt_errors(exc, text, where)) from None
    except UserError as exc:
        raise UserError(f"{where}: {exc.message}") from None


def load_campaign(path: str | Path) -> tuple:
    """(CampaignFile, source text) from a file; errors as parse_campaign (and non-UTF-8 bytes name their line)."""
    text = read_text(path, "campaign file")
    return parse_campaign(text, str(path)), text


# -- the matrix -----------------------------------------------------------------------------
@dataclass
class Cell:
    index: int
    workload: str  # label used in results
    definition: Any  # fsmeter.spec.WorkloadDef
    overrides: dict  # workload params + job settings (incl. factor levels) for build_job
    fs: Any  # FsConfig, or None for a dir target
    fs_label: str
    host: Any  # HostFactors
    factors: dict  # everything recorded as a factor: filesystem + applicable factor levels
    headline: str | None = None  # "phase.metric"
    notes: list[str] = field(default_factory=list)
    ranks: int | None = None  # MPI ranks (mpirun -n) when the campaign runs under MPI, else None
    kernel: str | None = None  # the kernel level (fsmeter.guest) this cell runs under in a guest, else None
    guest: dict = field(default_factory=dict)  # guest factor levels: {"vcpus": 2, "memory": "1G"}

    def describe(self) -> str:
        """The cell in one line of rich markup (names and levels escaped: a '[' in a label is text)."""
        from rich.markup import escape

        rest = ", ".join(f"{k}={v}" for k, v in self.factors.items() if k != "filesystem")
        return escape(f"{self.fs_label} / {self.workload}" + (f" ({rest})" if rest else ""))


def _fs_labels(c: CampaignFile) -> list:
    """[(label, FsConfig|None)]: labels are unique."""
    from fsmeter.provision.sysinfo import mount_containing

    if c.target.kind == "dir":
        if c.filesystems:
            raise UserError(
                "filesystems: a dir target measures the directory's own filesystem (no mkfs): "
                "remove [[filesystems]], or use target.kind = 'loop'"
            )
        from fsmeter.userpaths import check_dir

        path = check_dir(c.target.path or ".", "target.path:")  # the rules of `fsmeter run --dir`
        m = mount_containing(str(path.resolve()))
        return [(m.fstype if m else "dir", None)]
    fss = c.filesystems or [FsModel(name="tmpfs" if c.target.kind == "tmpfs" else "ext4")]
    out, seen = [], {}
    for f in fss:
        seen[f.name] = seen.get(f.name, 0) + 1
    counts: dict = {}
    for i, f in enumerate(fss):
        label = f.label
        if label is None:
            counts[f.name] = counts.get(f.name, 0) + 1
            label = f.name if seen[f.name] == 1 else f"{f.name}-{counts[f.name]}"
        if any(label == lab for lab, _ in out):
            raise UserError(f"filesystems[{i}].label: {label!r} is used twice: give each configuration its own label")
        out.append((label, f.config()))
    return out


def _check_host_level(name: str, level: Any, target_kind: str) -> dict:
    from fsmeter.provision import HostFactors
    from fsmeter.units import parse_size

    try:
        if name == "page_cache_limit":
            HostFactors(page_cache_limit_bytes=parse_size(level))
            return {"page_cache_limit_bytes": parse_size(level)}
        if name in ("scheduler", "readahead_kb") and target_kind in ("dir", "tmpfs"):
            raise ValueError(
                f"a {target_kind} target has no block device of fsmeter's own: use target.kind = 'loop' or 'device'"
            )
        HostFactors(**{name: level})
        return {name: level}
    except (ValidationError, ValueError) as exc:
        msg = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise UserError(f"factors.{name}: level {level!r}: {msg}") from None


def plan(c: CampaignFile) -> list:
    """Expand the campaign into cells (filesystem x factor levels x workload, minus exclusions),
    validating every job so a bad level fails now, not in the middle of the campaign."""
    from fsmeter.provision import HostFactors
    from fsmeter.spec import build_job

    fss = _fs_labels(c)
    defs = _workload_defs(c)
    labels = [lab for lab, _, _ in defs]
    takes = _check_factors(c, defs, len(fss))
    _check_exclusions(c, {"filesystem": [lab for lab, _ in fss], "workload": labels, **c.factors})
    host_levels = {
        k: [_check_host_level(k, lv, c.target.kind) for lv in levels]
        for k, levels in c.factors.items()
        if k in HOST_FACTORS
    }
    if KERNEL_FACTOR in c.factors:
        from fsmeter.guest.kernels import HOST_LEVEL, resolve

        for lv in c.factors[KERNEL_FACTOR]:
            if lv == HOST_LEVEL:
                continue
            try:
                resolve(lv)
            except UserError as exc:
                raise UserError(f"factors.{exc.message}") from None
    scratch = tempfile.gettempdir()
    cells: list = []
    seen_keys: set = set()
    for fs_label, fs in fss:
        for wlab, d, w in defs:
            names = [
                k
                for k in c.factors
                if k in HOST_FACTORS
                or k in LAUNCH_FACTORS
                or k == KERNEL_FACTOR
                or k in GUEST_FACTORS
                or k in takes[wlab]
            ]
            _check_mpi(c, w, d, wlab)
            for combo in itertools.product(*(c.factors[k] for k in names)):
                levels = dict(zip(names, combo))
                factors = {"filesystem": fs_label, **levels}
                probe = {**factors, "workload": wlab}
                if any(all(probe.get(k, object()) == v for k, v in ex.items()) for ex in c.exclusions):
                    continue
                key = (fs_label, wlab, tuple(sorted(levels.items(), key=lambda kv: kv[0])))
                if key in seen_keys:
                    continue
                seen_keys.add(key)
                host: dict = {}
                overrides = dict(w.params)
                ranks = (c.mpi.ranks if c.mpi is not None else None) if "ranks" not in levels else levels["ranks"]
                for k, v in levels.items():
                    if k in HOST_FACTORS:
                        host.update(host_levels[k][c.factors[k].index(v)])
                    elif k in LAUNCH_FACTORS or k == KERNEL_FACTOR or k in GUEST_FACTORS:
                        pass
                    else:
                        overrides[k] = v
                try:
                    job = build_job(d, Path(scratch), overrides)
                except UserError as exc:
                    where = ", ".join(f"factors.{k} = {v!r}" for k, v in levels.items() if k not in HOST_FACTORS)
                    raise UserError(f"workload {wlab}{' with ' + where if where else ''}: {exc.message}") from None
                ms = job.metrics()
                headline = f"{ms[0].phase}.{ms[0].name}" if ms else None
                cells.append(
                    Cell(
                        index=len(cells),
                        workload=wlab,
                        definition=d,
                        overrides=overrides,
                        fs=fs,
                        fs_label=fs_label,
                        host=HostFactors(**host),
                        factors=factors,
                        headline=headline,
                        ranks=ranks,
                        kernel=_guest_level(levels.get(KERNEL_FACTOR)),
                        guest={GUEST_FACTORS[k]: v for k, v in levels.items() if k in GUEST_FACTORS},
                    )
                )
    if not cells:
        raise UserError("exclusions: they exclude every cell of the matrix: nothing to run")
    return cells


def _workload_defs(c: CampaignFile) -> list:
    """(label, WorkloadDef, the campaign's workload entry) of every workload, a fio job file's jobs one each in
    file order; the labels checked (short, without '[', each once)."""
    from fsmeter.spec import load_workload

    defs = []
    for i, w in enumerate(c.workloads):
        try:
            if w.name.endswith(".fio"):  # every job of a fio job file, one workload each, in file order
                from fsmeter.interop.fio.load import campaign_ready, fio_workloads

                for d, job in fio_workloads(w.name):
                    campaign_ready(w.name, job)
                    defs.append((f"{w.label}:{job.name}" if w.label else d.name, d, w))
                continue
            d = load_workload(w.name)
        except UserError as exc:
            raise UserError(f"workloads[{i}].name: {exc.message}") from None
        defs.append((w.label or d.name, d, w))
    labels = [lab for lab, _, _ in defs]
    for lab in labels:  # a label taken from a file name, not checked as a field
        if "[" in lab or len(lab) > MAX_NAME_CHARS:
            raise UserError(
                f"workloads: {_short(lab)} as a label: at most {MAX_NAME_CHARS} characters and no '[': "
                "give the workload a label"
            )
    if len(set(labels)) != len(labels):
        raise UserError(f"workloads: a workload appears twice ({', '.join(labels)}): give one a label")
    return defs


def _check_factors(c: CampaignFile, defs: list, n_fs: int) -> dict:
    """Every factor is a host, launch, kernel or guest factor, a job setting, or a parameter some workload
    takes (and not also set in a workload's params); the matrix is at most MAX_CELLS cells. -> the names each
    workload takes, by label."""
    from fsmeter.spec import JobSettings

    settings = set(JobSettings.model_fields)
    takes = {lab: settings | (set(d.family.params.model_fields) - {"family"}) for lab, d, _ in defs}
    for name in c.factors:
        for lab, _, w in defs:
            if name in w.params:
                raise UserError(f"factors.{name}: also set in workload {lab}'s params: set it in one place")
        if (
            name in HOST_FACTORS
            or name in settings
            or name in LAUNCH_FACTORS
            or name == KERNEL_FACTOR
            or name in GUEST_FACTORS
        ):
            continue
        if not any(name in t for t in takes.values()):
            allowed = sorted(HOST_FACTORS | set().union(*takes.values()))
            raise UserError(
                f"factors.{name}: no workload in this campaign takes it: use a job setting, a parameter "
                f"of the workloads ({', '.join(allowed)})"
            )
    n_cells = n_fs * len(defs) * math.prod(len(levels) for levels in c.factors.values())
    if n_cells > MAX_CELLS:
        raise UserError(
            f"factors: the matrix has {n_cells:,} cells (filesystems x workloads x factor levels): at "
            f"most {MAX_CELLS:,}; split the campaign or drop levels"
        )
    return takes


def _check_exclusions(c: CampaignFile, dims: dict) -> None:
    """Exclusions name factors and levels that exist (`dims`: the levels of each factor, filesystem and
    workload included)."""
    for i, ex in enumerate(c.exclusions):
        if not ex:
            raise UserError(f"exclusions[{i}]: empty: name at least one factor and level")
        for k, v in ex.items():
            if k not in dims:
                raise UserError(f"exclusions[{i}].{k}: not a factor: use one of {', '.join(dims)}")
            if not any(v == lv for lv in dims[k]):
                raise UserError(
                    f"exclusions[{i}].{k} = {v!r}: not a level of {k}: levels are {', '.join(map(repr, dims[k]))}"
                )


def _check_mpi(c: CampaignFile, w, d, wlab: str) -> None:
    """What a campaign run under MPI refuses of a workload: fio job files, a stonewall it cannot honour, a shared
    file outside the access family."""
    if (c.mpi is not None or "ranks" in c.factors) and w.name.endswith(".fio"):
        raise UserError(
            f"workloads: {w.name}: fio job files are not run under MPI: use a named workload or a workload .toml"
        )
    if c.mpi is not None and c.mpi.stonewall:
        if d.family.name not in STONEWALL_PHASES:
            raise UserError(
                f"mpi.stonewall: workload {wlab} ({d.family.name} family) cannot be stopped early "
                f"and go on: stonewall works with the {', '.join(sorted(STONEWALL_PHASES))} "
                "families; leave it out or run this workload in another campaign"
            )
    if c.mpi is not None and c.mpi.shared_file and d.family.name != "access":
        raise UserError(
            f"mpi.shared_file: workload {wlab} ({d.family.name} family) keeps a file or tree per "
            "rank; a shared file is for the access family's workloads: leave it out or run this "
            "workload in another campaign"
        )


def _guest_level(level: str | None) -> str | None:
    """The kernel level a cell boots a guest for; None for no kernel factor or the level "host"."""
    return None if level is None or level == "host" else level


# -- writing campaign TOML (for campaigns built in code, e.g. `fsmeter compare`) -------------
def dump_toml(data: dict) -> str:
    """Campaign dict -> TOML text that parse_campaign reads back (scalars, lists, tables, arrays of tables).

    Written by tomli-w, the writing half of the TOML library the parser's tomllib comes from."""
    import tomli_w

    return tomli_w.dumps(data)


__all__ = [
    "CampaignFile",
    "Cell",
    "GUEST_FACTORS",
    "GuestModel",
    "HOST_FACTORS",
    "KERNEL_FACTOR",
    "dump_toml",
    "load_campaign",
    "parse_campaign",
    "plan",
]
