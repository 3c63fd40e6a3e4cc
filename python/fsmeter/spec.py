"""Jobs: a named workload (data in fsmeter/data/workloads/*.toml) plus settings and
overrides, validated with pydantic before anything crosses into the engine.

The engine's serde types (crates/engine/src/job.rs, settings.rs and each workload's spec)
mirror these models; Python validates first so errors name the parameter.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fsmeter.errors import UserError
from fsmeter.families import FAMILIES, WorkloadDef
from fsmeter.textfile import loads_toml, read_text, toml_depth_error
from fsmeter.units import MAX_COUNT, MAX_DURATION_S, MAX_SIZE_BYTES

WORKLOAD_DIR = Path(__file__).parent / "data" / "workloads"


class JobSettings(BaseModel):
    """Settings every family shares."""

    model_config = ConfigDict(extra="forbid")
    threads: int = Field(1, ge=1, le=4096, description="worker threads (clients)")
    seed: int = Field(42, ge=0, lt=1 << 64, description="the same seed gives the same operations")
    backend: Literal["psync", "io_uring", "libaio", "null", "mmap", "libpmem"] = Field(
        "psync", description="I/O backend"
    )
    interval_s: float = Field(1.0, gt=0, le=3600, description="throughput sampling interval")


def list_workloads() -> list:
    """All named workloads, sorted by family then name."""
    defs = [load_workload(p.stem) for p in sorted(WORKLOAD_DIR.glob("*.toml"))]
    return sorted(defs, key=lambda d: (d.family.name, d.name))


def load_workload(name_or_path: str) -> WorkloadDef:
    """A named workload ('fileserver') or a TOML file of the same format (or one job of a fio job file)."""
    if str(name_or_path).endswith(".fio") or ".fio:" in str(name_or_path):
        from fsmeter.interop.fio.load import load_fio_workload

        return load_fio_workload(str(name_or_path))
    path = Path(name_or_path)
    if not (path.suffix == ".toml" and os.path.isfile(path)):  # os.path: a name too long is no file
        path = WORKLOAD_DIR / f"{name_or_path}.toml"
        if not os.path.isfile(path):
            names = ", ".join(sorted(p.stem for p in WORKLOAD_DIR.glob("*.toml")))
            raise UserError(f"unknown workload {name_or_path!r}: use one of {names} (fsmeter list), or a .toml file")
    data = loads_toml(read_text(path, "workload file"), str(path))
    fam_name = data.get("family")
    if not isinstance(fam_name, str) or fam_name not in FAMILIES:
        raise UserError(f"{path}: family = {str(fam_name)[:100]!r}: use one of {', '.join(sorted(FAMILIES))}")
    for key in ("params", "settings"):
        if not isinstance(data.get(key, {}), dict):
            raise UserError(f"{path}: {key} must be a table ([{key}]), not a {type(data[key]).__name__}")
    if not isinstance(data.get("description", ""), str):
        raise UserError(f"{path}: description must be a string")
    unknown = set(data) - {"family", "description", "params", "settings"}
    if unknown:
        raise UserError(
            f"{path}: unknown key(s) {', '.join(sorted(unknown))}: allowed are family, description, params, settings"
        )
    return WorkloadDef(
        name=path.stem,
        family=FAMILIES[fam_name],
        description=data.get("description", ""),
        params=dict(data.get("params", {})),
        settings=dict(data.get("settings", {})),
        source=path,
    )


def parse_set(items: list) -> dict:
    """`--set key=value` items -> dict. JSON lists and tables ([..], {..}) are decoded; "none" is None."""
    out: dict = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UserError(f"--set {item!r}: write it as key=value, e.g. --set duration_s=30")
        raw = raw.strip()
        value: Any = raw
        if raw.lower() == "none":
            value = None
        elif raw[:1] in "[{":
            try:
                value = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise UserError(f"--set {key}: {_short(raw)} is not valid JSON ({exc.msg})") from None
            except RecursionError:
                value = None  # refused just below, with the same message as a deep but readable value
            if value is None or toml_depth_error(value, 8):
                raise UserError(f"--set {key}: lists and tables nested more than 8 deep: flatten the value")
        out[key] = value
    return out


def _short(value: Any, limit: int = 120) -> str:
    """repr(value) cut to ``limit`` characters, so that an error stays one readable line."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _limit_kind(name: str) -> str:
    """Which limit a parameter's number is held to, from its name (units are in the names)."""
    if name.endswith("_per_s"):  # a rate (rate_bytes_per_s, ...), not a duration: held to the size or count limit
        return "size" if re.search(r"bytes|kib", name) else "count"
    if name.endswith("_s"):
        return "duration"
    if name.endswith("_ns"):
        return "duration_ns"
    if re.search(r"size|bytes|offset|align|block|chunk", name):
        return "size"
    return "count"


def check_limits(values: Mapping[str, Any], where: str = "parameter ") -> None:
    """Every number in ``values`` (nested lists and tables too) finite and within fsmeter's limits: a
    duration (``*_s``, or ``*_ns`` in nanoseconds) at most MAX_DURATION_S, a size at most MAX_SIZE_BYTES, any other whole number
    at most MAX_COUNT (the seed excepted: it is a 64-bit value). UserError naming the parameter."""
    stack = [(str(k), str(k), v) for k, v in values.items()]
    while stack:
        path, name, v = stack.pop()
        if isinstance(v, dict):
            if name == "replay":
                continue  # a replayed I/O log: its parser checked every line's numbers (interop/fio/replay.py)
            stack += [(f"{path}.{k}", str(k), x) for k, x in v.items()]
            continue
        if isinstance(v, (list, tuple)):
            stack += [(f"{path}[{i}]", name, x) for i, x in enumerate(v)]
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or name == "seed":
            continue
        if isinstance(v, float) and not math.isfinite(v):
            raise UserError(f"{where}{path}: {v!r} is not a finite number: give a number")
        kind = _limit_kind(name)
        if kind == "duration" and abs(v) > MAX_DURATION_S:
            raise UserError(
                f"{where}{path}: {v:g} s is longer than fsmeter's limit of {MAX_DURATION_S:.0f} s "
                "(about 116 days): give a shorter duration"
            )
        if kind == "duration_ns" and abs(v) > MAX_DURATION_S * 1e9:
            raise UserError(
                f"{where}{path}: {v:g} ns is longer than fsmeter's limit of {MAX_DURATION_S:.0f} s "
                "(about 116 days): give a shorter duration"
            )
        if kind == "size" and abs(v) > MAX_SIZE_BYTES:
            raise UserError(
                f"{where}{path}: {_short(v)} bytes is larger than fsmeter's limit of "
                f"{MAX_SIZE_BYTES} bytes (1 PiB): give a smaller size"
            )
        if kind == "count" and abs(v) > MAX_COUNT:
            raise UserError(
                f"{where}{path}: {_short(v)} is larger than fsmeter's limit of {MAX_COUNT}: give a smaller number"
            )


def _engine_check(job: Job) -> None:
    """The engine's own reading of the job (its serde types), without starting it: a value Python let
    through but the engine cannot take is refused now, naming the parameter, not when the job runs."""
    try:
        from fsmeter import _engine
    except ImportError:  # pragma: no cover - only without a build; running the job says so
        return
    check = getattr(_engine, "check_job", None)
    if check is None:  # pragma: no cover - an extension built before check_job
        return
    text = json.dumps(job.engine_dict(), indent=1, allow_nan=True)
    try:
        check(text)
    except _engine.JobError as exc:
        msg = str(exc)
        reason = re.sub(r" at line \d+ column \d+$", "", msg).split(": ", 1)[-1]
        # serde's position is no help inside the workload (its family tag makes serde buffer the whole
        # table first), but its message quotes the value: the line of the JSON (one value per line)
        # holding that value names the parameter.
        value = re.search(r"`([^`]+)`", reason)
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if value and re.search(rf"(^|: )\s*{re.escape(value.group(1))},?$", line.strip()):
                while i > 0 and '":' not in lines[i]:
                    i -= 1
                key = re.search(r'"([^"]*)":', lines[i])
                if key:
                    raise UserError(f"parameter {key.group(1)}: {reason}: give a value in range") from None
        raise UserError(f"parameter {msg}") from None


def _fmt_validation(exc: ValidationError, where: str) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        got = err.get("input")
        tail = f" (got {_short(got)})" if loc and not isinstance(got, (dict, list)) and got is not None else ""
        parts.append(f"{where}{loc}: {msg}{tail}" if loc else f"{where}{msg}")
    return "; ".join(parts)


@dataclass
class Job:
    workload: WorkloadDef
    settings: JobSettings
    params: BaseModel
    dir: Path

    def engine_json(self) -> str:
        return json.dumps(self.engine_dict())

    def engine_dict(self) -> dict:
        spec = self.params.engine_spec() if hasattr(self.params, "engine_spec") else self.params.model_dump()
        return {"dir": str(self.dir), **self.settings.model_dump(), "workload": spec}

    def phases(self) -> list:
        return self.workload.family.phases(self.params)

    def metrics(self) -> list:
        return self.workload.family.metrics(self.params)


def _is_list_field(annotation: Any) -> bool:
    """A list, or an optional list; not a union that also takes text (such as ``tasks = peak``)."""
    origin = get_origin(annotation)
    if origin in (list, tuple, set):
        return True
    args = [a for a in get_args(annotation) if a is not type(None)]
    return origin is not None and len(args) == 1 and _is_list_field(args[0])


def _split_lists(model: type, values: dict) -> dict:
    """A --set value given as plain text for a list parameter, such as ``tests=0,1,2`` or
    ``file_sizes=4M,8M``, becomes the list of its comma-separated items (JSON lists pass as they are)."""
    out = dict(values)
    for key, value in values.items():
        field = model.model_fields.get(key)
        if field is not None and isinstance(value, str) and _is_list_field(field.annotation):
            out[key] = [item.strip() for item in value.split(",") if item.strip()]
    return out


def build_job(defn: WorkloadDef, directory: Path, overrides: Mapping[str, Any] | None = None) -> Job:
    """Merge the workload's params with overrides and validate; errors name the parameter."""
    overrides = dict(overrides or {})
    setting_keys = set(JobSettings.model_fields)
    param_keys = set(defn.family.params.model_fields) - {"family"}
    unknown = set(overrides) - setting_keys - param_keys
    if unknown:
        allowed = ", ".join(sorted(setting_keys | param_keys))
        raise UserError(f"unknown parameter {', '.join(sorted(unknown))} for {defn.name}: allowed are {allowed}")
    overrides = _split_lists(JobSettings, _split_lists(defn.family.params, overrides))
    settings_in = {**defn.settings, **{k: v for k, v in overrides.items() if k in setting_keys}}
    params_in = {**defn.params, **{k: v for k, v in overrides.items() if k in param_keys}}
    try:
        settings = JobSettings(**settings_in)
    except ValidationError as exc:
        raise UserError(_fmt_validation(exc, "parameter ")) from None
    try:
        params = defn.family.params(**params_in)
    except ValidationError as exc:
        raise UserError(_fmt_validation(exc, "parameter ")) from None
    check_limits(settings.model_dump())
    check_limits(params.model_dump())
    check = getattr(params, "check_settings", None)
    if check is not None:
        check(settings)
    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(f"--dir {directory}: not an existing directory: create it, or name another")
    bind = getattr(params, "bind_job", None)  # families that size their data to the target (macro)
    if bind is not None:
        bind(directory.resolve(), settings)
    job = Job(workload=defn, settings=settings, params=params, dir=directory.resolve())
    if bind is None:  # a bound family sizes its spec against the target, which a campaign's scratch dir is not
        _engine_check(job)
    return job
