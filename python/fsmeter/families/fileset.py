"""The fileset family: PostMark 1.5 (faithful: same generator, same call order,
same counts as Debian's postmark 1.53) and filemark (threads, time-based
transaction phases with warm-up and cold caches, biases in percent).

Mirrors crates/engine/src/workload/fileset/spec.rs (FilesetSpec). The engine phases
are create, transactions, verify (with `verify` only), delete (and an unmeasured cleanup); filemark runs the
transactions phase `transaction_phases` times, labelled transactions-1..K, the
first discarded, each after a cache reset.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fsmeter.errors import UserError
from fsmeter.families import Family, Metric, Phase, kind_series, op_latency_metric
from fsmeter.units import Size


class Location(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    path: str = Field(
        min_length=1, description="directory: relative to --dir (made when missing) or absolute (must exist)"
    )
    weight: int = Field(1, ge=1, description="share of new files, as PostMark's `set location DIR WEIGHT`")

    @field_validator("path")
    @classmethod
    def _below_dir(cls, v: str) -> str:
        if not v.startswith("/") and ".." in v.split("/"):
            raise ValueError(f"{v!r} climbs out of --dir with '..': name a directory below --dir, or an absolute one")
        return v


class FilesetParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    family: Literal["fileset"] = "fileset"
    mode: Literal["postmark", "filemark"] = Field(
        "postmark", description="postmark: biases 0..10 (RND(10) < bias); filemark: biases in percent"
    )
    files: int = Field(500, ge=1, description="files the create phase makes, all threads (PostMark `set number`)")
    transactions: int | None = Field(
        None,
        ge=1,
        description="transactions per transactions phase, all threads (postmark default 500 unless duration_s is set)",
    )
    duration_s: float | None = Field(None, gt=0, description="measured seconds per transactions phase (filemark)")
    warmup_s: float = Field(0.0, ge=0, description="unmeasured transactions before each transactions phase")
    transaction_phases: int = Field(
        1, ge=1, le=1000, description="transactions phases after the create phase (filemark: first discarded)"
    )
    delete: bool = Field(
        True, description="run the measured delete phase (else files are removed unmeasured at the end)"
    )
    size_low: Size = Field(500, gt=0, description="smallest new file, bytes")
    size_high: Size = Field(10000, gt=0, le=1 << 30, description="largest file, bytes (appends stop there)")
    read_block: Size = Field(512, gt=0, le=1 << 30, description="bytes per read request (PostMark `set read`)")
    write_block: Size = Field(512, gt=0, le=1 << 30, description="bytes per write request (PostMark `set write`)")
    subdirectories: int = Field(0, ge=0, le=1_000_000, description="used when > 1: files go to s0..s<n-1>")
    locations: list[Location] = Field(
        default_factory=list, description="weighted directories (PostMark `set location`); empty: --dir"
    )
    bias_read: int = Field(
        5, ge=-1, description="chance of read over append: 0..10 (postmark) or 0..100 (filemark); -1 disables"
    )
    bias_create: int = Field(5, ge=-1, description="chance of create over delete, same scale; -1 disables")
    buffering: bool = Field(True, description="stdio-like buffered I/O (PostMark's default) or plain read/write")
    verify: Literal["off", "crc32c", "xxh3", "sha256"] = Field(
        "off",
        description="data verification (docs/verify.md): file contents carry a header per verify block, every "
        "read is checked, a verify phase re-reads every live file; off by default (PostMark's text bytes)",
    )
    verify_block: Size = Field(
        0, ge=0, le=1 << 30, description="bytes per verified block (one header each); 0: write_block"
    )

    @model_validator(mode="after")
    def _check(self):
        scale = 10 if self.mode == "postmark" else 100
        for name in ("bias_read", "bias_create"):
            v = getattr(self, name)
            if v > scale:
                raise ValueError(f"{name}: {v} is past the {self.mode} scale: use -1 (disabled) or 0..{scale}")
        if self.size_high < self.size_low:
            raise ValueError(f"size_high: {self.size_high} bytes is below size_low ({self.size_low} bytes)")
        if self.transactions is None and self.duration_s is None and self.mode == "postmark":
            self.transactions = 500  # PostMark's default
        if self.transactions is None and self.duration_s is None:
            raise ValueError("transactions: give transactions or duration_s (or both: whichever ends first)")
        if sum(loc.weight for loc in self.locations) > 1_000_000:
            raise ValueError("locations: the weights must add up to <= 1000000")
        if self.verify != "off":
            block = self.verify_block or self.write_block
            if block < 88:
                field = "verify_block" if self.verify_block else "write_block"
                raise ValueError(
                    f"{field}: {block} bytes: with verify, each block holds an 80-byte header and data: "
                    "set verify_block >= 88 bytes"
                )
        return self

    def check_settings(self, settings) -> None:
        if settings.backend != "psync":
            raise UserError(
                "parameter backend: the fileset family issues plain system calls (open, read, write, unlink): "
                "use --set backend=psync"
            )
        if settings.threads > self.files:
            raise UserError(
                f"parameter files: {self.files} files cannot be shared by {settings.threads} threads: "
                "use files >= threads"
            )

    def engine_spec(self) -> dict:
        # transaction_phases and delete only shape the phase list Python runs.
        spec = self.model_dump(exclude={"transaction_phases", "delete"})
        spec["verify"] = None if self.verify == "off" else self.verify
        return spec


def tx_labels(p: FilesetParams) -> list:
    """Result names of the transactions phases."""
    if p.transaction_phases == 1:
        return ["transactions"]
    return [f"transactions-{k}" for k in range(1, p.transaction_phases + 1)]


def _phases(p: FilesetParams) -> list:
    filemark = p.mode == "filemark"
    phases = [Phase("create")]
    labels = tx_labels(p)
    for k, label in enumerate(labels):
        phases.append(
            Phase(
                "transactions",
                label=label if len(labels) > 1 else "",
                # filemark remounts (or drops caches) before every transactions phase.
                cold_cache=filemark,
                discard=filemark and len(labels) > 1 and k == 0,
            )
        )
    if p.verify != "off":
        # Unmeasured, after a cache reset: every live file is read back from the filesystem.
        phases.append(Phase("verify", measured=False, cold_cache=True))
    if p.delete:
        phases.append(Phase("delete"))
    return phases


def _rate(key: str):
    return lambda r: (r.get("extra") or {}).get("rates", {}).get(key)


def _mib(key: str):
    def get(r: dict):
        v = _rate(key)(r)
        return None if v is None else v / (1 << 20)

    return get


def _metrics(p: FilesetParams) -> list:
    labels = tx_labels(p)
    kept = labels[1:] if p.mode == "filemark" and len(labels) > 1 else labels
    ms = [Metric(label, "transactions_per_s", "tx/s", True, _rate("transactions_per_s")) for label in kept]
    ms += [
        Metric(label, "transactions_per_s", "tx/s", True, _rate("transactions_per_s"))
        for label in labels
        if label not in kept
    ]
    ms.append(Metric("create", "files_created_per_s", "files/s", True, _rate("files_created_per_s")))
    main = kept[0]
    ms += [
        Metric(main, "MiB_read_per_s", "MiB/s", True, _mib("bytes_read_per_s")),
        Metric(main, "MiB_written_per_s", "MiB/s", True, _mib("bytes_written_per_s")),
        op_latency_metric(main, "read"),
        op_latency_metric(main, "append"),
    ]
    if p.delete:
        ms.append(Metric("delete", "files_deleted_per_s", "files/s", True, _rate("files_deleted_per_s")))
    return ms


FAMILY = Family(
    name="fileset",
    params=FilesetParams,
    phases=_phases,
    metrics=_metrics,
    description="PostMark/filemark small-file mail-server load: create, read/append + create/delete transactions, delete",
    # A transaction is one or two operations, so transactions/s has its own count per interval
    # (`units`, transactions started in the measured window: the engine's transactions_measured).
    series={
        "transactions_per_s": lambda iv: iv.get("units"),
        "files_created_per_s": kind_series("create"),
        "files_deleted_per_s": kind_series("delete"),
    },
)
