"""The tree family (fdtree, with an mdtest-like stat phase): metadata rates of a regular directory tree.

Mirrors crates/engine/src/workload/tree/mod.rs (TreeSpec). Directories per tree =
sum over i = 0..levels of dirs_per_level**i (root included); files = directories x
files_per_dir; each thread builds its own tree (`tree-<tid>` under --dir).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fsmeter.families import Family, Metric, Phase, bytes_series, op_latency_metric, ops_series
from fsmeter.units import Size

#: fdtree's unit of file size (dd bs=4096).
BLOCK = 4096
PATH_MAX = 4096


class TreeParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    family: Literal["tree"] = "tree"
    levels: int = Field(4, ge=0, le=1000, description="depth below the root directory (fdtree -l)")
    dirs_per_level: int = Field(
        10, ge=1, description="subdirectories of each directory above the last level (fdtree -d)"
    )
    files_per_dir: int = Field(10, ge=0, description="files in every directory, root included (fdtree -f)")
    file_blocks: int = Field(10, ge=0, le=1 << 28, description="file size in 4 KiB blocks (fdtree -s)")
    file_bytes: Size | None = Field(
        None,
        ge=0,
        le=1 << 40,
        description="file size in bytes, instead of file_blocks (mdtest -w; IO500's mdtest-hard: 3901)",
    )
    write_size: Size = Field(
        BLOCK, gt=0, le=64 << 20, description="bytes per write(2) when creating a file (dd bs=4096)"
    )
    fsync: bool = Field(
        False, description="fsync each file before closing it, inside the create time (fdtree does not)"
    )
    file_prefix: str = Field(
        "",
        max_length=200,
        description="put before every file's name (fdtree: none); a name's length sets how many "
        "directory entries share a block, so match another tool's name length to do its work "
        '(mdtest\'s file.mdtest.R.N: file_prefix = "file.mdtest")',
    )
    stat: bool = Field(True, description="run the mdtest-like stat phase (stat every file) between create and remove")
    read: bool = Field(
        False, description="run a read phase after stat: open, read the whole file, close, file by file (mdtest -e)"
    )
    verify: Literal["off", "crc32c", "xxh3", "sha256"] = Field(
        "off",
        description="data verification (docs/verify.md): every 4 KiB block of every file carries a header, "
        "a verify phase re-reads every file before remove; off by default (files of zeros, as fdtree)",
    )

    @field_validator("file_prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if "/" in v or "\x00" in v:
            raise ValueError("must not contain '/' or a NUL byte: it is put before each file's name in its directory")
        return v

    @model_validator(mode="after")
    def _check(self):
        dirs = self.directories()
        if dirs > 1_000_000_000:
            raise ValueError(
                f"levels: the tree would have {dirs:.3g} directories (over a billion): use fewer levels or dirs_per_level"
            )
        if dirs * self.files_per_dir > 10_000_000_000:
            raise ValueError("files_per_dir: the tree would have over ten billion files: use fewer")
        if self.verify != "off" and self.file_bytes is not None:
            raise ValueError("file_bytes: not with verify (verified files are whole 4 KiB blocks): use file_blocks")
        if self.verify != "off" and (self.file_blocks == 0 or self.files_per_dir == 0):
            raise ValueError(
                "verify: the files are empty (file_blocks or files_per_dir is 0): there is no data to verify"
            )
        return self

    def directories(self) -> int:
        """Directories in one tree, root included."""
        if self.levels > 64 and self.dirs_per_level > 1:
            return 1 << 64  # anything this deep and branching is far past the limit
        return sum(self.dirs_per_level**i for i in range(self.levels + 1))

    def files(self) -> int:
        return self.directories() * self.files_per_dir

    def file_size(self) -> int:
        return self.file_blocks * BLOCK if self.file_bytes is None else int(self.file_bytes)

    def engine_spec(self) -> dict:
        # `stat` only chooses the phases Python runs; the engine always has a stat phase.
        spec = self.model_dump(exclude={"stat", "read"})
        spec["verify"] = None if self.verify == "off" else self.verify
        return spec


def _phases(p: TreeParams) -> list:
    names = ["mkdir", "create"] + (["stat"] if p.stat else []) + (["read"] if p.read else [])
    phases = [Phase(n) for n in names]
    if p.verify != "off":
        # Unmeasured, after a cache reset: every file is read back from the filesystem.
        phases.append(Phase("verify", measured=False, cold_cache=True))
    return phases + [Phase("remove"), Phase("rmdir")]


def _kib_per_s(r: dict) -> float | None:
    return r["total"]["bytes_per_s"] / 1024.0


def _metrics(p: TreeParams) -> list:
    ms = [
        Metric("create", "files_per_s", "files/s", True, lambda r: r["total"]["ops_per_s"]),
        Metric("mkdir", "dirs_per_s", "dirs/s", True, lambda r: r["total"]["ops_per_s"]),
    ]
    if p.file_size() > 0:
        ms.append(Metric("create", "KiB_per_s", "KiB/s", True, _kib_per_s))
    if p.stat and p.files_per_dir > 0:
        ms.append(Metric("stat", "files_per_s", "files/s", True, lambda r: r["total"]["ops_per_s"]))
    if p.read and p.files_per_dir > 0:
        ms.append(Metric("read", "files_per_s", "files/s", True, lambda r: r["total"]["ops_per_s"]))
    ms += [
        Metric("remove", "files_per_s", "files/s", True, lambda r: r["total"]["ops_per_s"]),
        Metric("rmdir", "dirs_per_s", "dirs/s", True, lambda r: r["total"]["ops_per_s"]),
        op_latency_metric("create", "create"),
    ]
    if p.files_per_dir == 0:
        ms = [m for m in ms if m.phase not in ("create", "remove", "read")]
    return ms


FAMILY = Family(
    name="tree",
    params=TreeParams,
    phases=_phases,
    metrics=_metrics,
    description="fdtree/mdtest-class metadata: mkdir, create, stat, remove, rmdir of a regular directory tree",
    # Each phase does one kind of operation, one per file or directory.
    series={"files_per_s": ops_series, "dirs_per_s": ops_series, "KiB_per_s": bytes_series(1024.0)},
)
