"""The macro family (Lourdas 2009): real tools on real data, timed with `sync` included.

Phases `cp` (copy a large file from a source filesystem onto the target), `untar` (extract a
source-tree archive) and `rm` (`rm -rf` the extracted tree). Each runs its tool as a child of
the engine (crates/engine/src/workload/macro_tools/mod.rs), which times it with wait4's rusage;
this module validates the parameters, readies the source data (fsmeter.macro.cache), sizes the
run to the target and builds every argv. Metric names follow the study's tables: real, user and
sys seconds per operation and MB/s (10^6 bytes/s) for cp.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from fsmeter.errors import UserError
from fsmeter.families import Family, Metric, Phase
from fsmeter.units import Size, format_size

PHASES = ("cp", "untar", "rm")
#: Placeholders each tool may use.
PLACEHOLDERS = {
    "cp_tool": ("src", "dst", "target"),
    "untar_tool": ("archive", "dest", "target"),
    "rm_tool": ("tree", "target"),
    "sync_tool": ("target",),
}
#: tar's flag per archive kind, for untar_tool = "auto" (the study ran `tar xjf`).
TAR_FLAGS = {"tar.bz2": "xjf", "tar.gz": "xzf", "tar": "xf", "tar.xz": "xJf"}
#: GNU tar's decompression option per archive kind (verify's tar --compare).
DECOMPRESS = {"tar.bz2": ["-j"], "tar.gz": ["-z"], "tar": [], "tar.xz": ["-J"]}
USER_SUFFIXES = {
    ".tar.bz2": "tar.bz2",
    ".tbz2": "tar.bz2",
    ".tbz": "tar.bz2",
    ".tar.gz": "tar.gz",
    ".tgz": "tar.gz",
    ".tar": "tar",
    ".tar.xz": "tar.xz",
    ".txz": "tar.xz",
}
MiB = 1 << 20
#: The extracted tree takes its file blocks plus this share for metadata (inodes, extents, journal).
TREE_OVERHEAD = 1.15
#: Never plan to fill more than this share of the target's free space.
FREE_USE = 0.9
MIN_CP = 16 * MiB

# Files the run creates in the job directory.
CP_NAME = "macro-cp.bin"
TREE_DIR = "macro-tree"


def _argv(template: str, field: str) -> list:
    try:
        argv = shlex.split(template)
    except ValueError as exc:
        raise ValueError(f"{field}: {exc}: quote it as a shell would") from None
    if not argv:
        raise ValueError(f"{field}: empty: give the tool and its arguments")
    allowed = PLACEHOLDERS[field]
    import string

    for tok in argv:
        try:
            parsed = list(string.Formatter().parse(tok))
        except ValueError as exc:
            raise ValueError(f"{field}: {exc} in {tok!r} (a literal brace is {{{{ or }}}})") from None
        for _, name, _, _ in parsed:
            if name is not None and name not in allowed:
                raise ValueError(
                    f"{field}: unknown placeholder {{{name}}}: use "
                    + ", ".join("{" + a + "}" for a in allowed)
                    + " (a literal brace is {{ or }})"
                )
    return argv


def _fill(argv: list, **values: str) -> list:
    return [tok.format(**values) for tok in argv]


def archive_kind(path: Path) -> str | None:
    name = path.name.lower()
    return next((k for suf, k in USER_SUFFIXES.items() if name.endswith(suf)), None)


_probed: dict = {}


def _probe(field: str, argv: list, cwd: Path) -> None:
    """Run a tool once on tiny inputs; a failure (an unknown option...) is a one-line UserError."""
    import subprocess

    try:
        r = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise UserError(f"parameter {field}: cannot run `{shlex.join(argv)}`: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        raise UserError(
            f"parameter {field}: `{shlex.join(argv)}` did not finish within 60 s on a tiny test input"
        ) from None
    if r.returncode != 0:
        err = " ".join((r.stderr or r.stdout or "").split())[-300:]
        raise UserError(
            f"parameter {field}: `{shlex.join(argv)}` failed on a tiny test input (exit {r.returncode}): "
            f"{err or 'no message'}: fix the tool's options"
        )


def _gnu_tar() -> bool:
    """GNU tar on PATH (verify compares the extracted tree with `tar --compare`)."""
    tar = shutil.which("tar")
    if tar is None:
        return False
    try:
        out = subprocess.run([tar, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "GNU tar" in out


class MacroParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    family: Literal["macro"] = "macro"
    phases: list[Literal["cp", "untar", "rm"]] = Field(
        default_factory=lambda: list(PHASES), description="operations in run order"
    )
    cp_source: str = Field("generated", description="file to copy: 'generated' (seeded random bytes) or a path")
    cp_size: Size = Field(2 << 30, gt=0, description="size of the generated file to copy (upper bound)")
    cp_max_fraction: float = Field(
        0.25, gt=0, le=0.9, description="the generated copy is at most this share of the target's size"
    )
    source: str = Field("generated", description="tree to extract: 'generated', or a tarball or directory path")
    archive: Literal["tar.bz2", "tar.gz", "tar"] = Field(
        "tar.bz2", description="which archive of the tree untar extracts"
    )
    tree_files: int = Field(30786, ge=0, le=5_000_000)
    tree_dirs: int = Field(1657, ge=1, le=500_000)
    tree_median_size: Size = Field(4608, gt=0)
    tree_size_sigma: float = Field(1.4, gt=0, le=5)
    tree_max_size: Size = Field(4 << 20, gt=0)
    tree_max_depth: int = Field(8, ge=1, le=64)
    cp_tool: str = Field("cp {src} {dst}", description="the copy command ({src}, {dst}, {target})")
    untar_tool: str = Field(
        "auto", description="extract command ({archive}, {dest}, {target}); auto: tar x[j|z|J]f {archive} -C {dest}"
    )
    rm_tool: str = Field("rm -rf {tree}", description="remove command ({tree}, {target})")
    sync_tool: str | None = Field(
        "sync -f {target}", description="run after each tool, inside the timing; none: no sync"
    )
    source_read: Literal["warm", "cold", "keep"] = Field(
        "warm", description="source files read before each operation (warm), evicted (cold), or left as they are"
    )
    source_cache: str | None = Field(None, description="cache directory (default ~/.cache/fsmeter/macro)")
    fit: Literal["shrink", "fail"] = Field(
        "shrink", description="data larger than the target: shrink it with a note, or fail"
    )
    verify: Literal["off", "crc32c", "xxh3", "sha256"] = Field(
        "off",
        description="after cp and untar, outside the timing: compare the copy with its source byte for byte "
        "(reporting both checksums with this algorithm) and the extracted tree with its archive (GNU tar --compare); "
        "a difference marks the run corrupt",
    )

    _dir: Path | None = PrivateAttr(None)
    _spec: dict | None = PrivateAttr(None)
    _failed: bool = PrivateAttr(False)
    _resolved: dict = PrivateAttr(default_factory=dict)
    _job_seed: int = PrivateAttr(42)

    @field_validator("phases")
    @classmethod
    def _phases(cls, v: list) -> list:
        if not v:
            raise ValueError("phases: give at least one of cp, untar, rm")
        if len(set(v)) != len(v):
            raise ValueError(f"phases: a phase is repeated ({', '.join(v)})")
        if "rm" in v and ("untar" not in v or v.index("untar") > v.index("rm")):
            raise ValueError("phases: rm removes the tree untar extracted: put untar before rm")
        return v

    @model_validator(mode="after")
    def _check(self) -> MacroParams:
        for f in ("cp_tool", "rm_tool") + (("untar_tool",) if self.untar_tool != "auto" else ()):
            _argv(getattr(self, f), f)
        if self.sync_tool is not None:
            _argv(self.sync_tool, "sync_tool")
        if self.tree_max_size < self.tree_median_size:
            raise ValueError("tree_max_size: must be >= tree_median_size")
        return self

    # -- checks that touch the system (no target needed) --------------------------------------------
    def source_kind(self) -> str:
        """'generated', 'directory' or an archive kind (tar.bz2, tar.gz, tar, tar.xz)."""
        if self.source == "generated":
            return "generated"
        p = Path(self.source).expanduser()
        if p.is_dir():
            return "directory"
        if not p.exists():
            raise UserError(
                f"parameter source: {self.source} does not exist: give a tarball or a directory, or source=generated"
            )
        kind = archive_kind(p)
        if kind is None or not p.is_file():
            raise UserError(
                f"parameter source: {self.source} is neither a directory nor a .tar, .tar.gz, .tgz, "
                ".tar.bz2, .tbz2 or .tar.xz file"
            )
        return kind

    def untar_kind(self) -> str:
        k = self.source_kind()
        return self.archive if k in ("generated", "directory") else k

    def untar_argv(self) -> list:
        if self.untar_tool == "auto":
            return ["tar", TAR_FLAGS[self.untar_kind()], "{archive}", "-C", "{dest}"]
        return _argv(self.untar_tool, "untar_tool")

    def check_settings(self, settings) -> None:
        if "untar" in self.phases or "rm" in self.phases:
            self.source_kind()
        if "cp" in self.phases and self.cp_source != "generated":
            p = Path(self.cp_source).expanduser()
            if not p.is_file():
                raise UserError(
                    f"parameter cp_source: {self.cp_source} is not an existing file: give a file to "
                    "copy, or cp_source=generated"
                )
        if self.source_cache is not None:
            c = Path(self.source_cache).expanduser()
            if c.exists() and not c.is_dir():
                raise UserError(f"parameter source_cache: {self.source_cache} is not a directory")
        tools = [("sync_tool", _argv(self.sync_tool, "sync_tool"))] if self.sync_tool is not None else []
        if "cp" in self.phases:
            tools.append(("cp_tool", _argv(self.cp_tool, "cp_tool")))
        if "untar" in self.phases:
            tools.append(("untar_tool", self.untar_argv()))
        if "rm" in self.phases:
            tools.append(("rm_tool", _argv(self.rm_tool, "rm_tool")))
        if self.verify != "off" and "untar" in self.phases and not _gnu_tar():
            raise UserError(
                "parameter verify: checking the extracted tree needs GNU tar (tar --compare) on PATH: "
                "install it, or leave untar out of phases, or set verify=off"
            )
        for field, argv in tools:
            if shutil.which(argv[0]) is None:
                raise UserError(f"parameter {field}: `{argv[0]}` is not found on PATH: install it or name another tool")
        self._probe_tools(tools)

    def _probe_tools(self, tools: list) -> None:
        key = (tuple((f, tuple(a)) for f, a in tools), self.untar_kind() if "untar" in self.phases else None)
        if key in _probed:
            return
        import tarfile
        import tempfile

        with tempfile.TemporaryDirectory(prefix="fsmeter-macro-probe-") as td:
            t = Path(td)
            for field, argv in tools:
                if field == "cp_tool":
                    (t / "src").write_bytes(b"x" * 4096)
                    _probe(field, _fill(argv, src=str(t / "src"), dst=str(t / "dst"), target=td), t)
                elif field == "untar_tool":
                    kind = self.untar_kind()
                    arch = t / f"probe.{kind}"
                    (t / "in").mkdir()
                    (t / "in" / "f.c").write_text("int x;\n")
                    mode = {"tar.bz2": "w:bz2", "tar.gz": "w:gz", "tar": "w", "tar.xz": "w:xz"}[kind]
                    with tarfile.open(arch, mode) as tf:
                        tf.add(t / "in", arcname="in")
                    (t / "dest").mkdir()
                    _probe(field, _fill(argv, archive=str(arch), dest=str(t / "dest"), target=td), t)
                elif field == "rm_tool":
                    (t / "tree" / "a").mkdir(parents=True)
                    (t / "tree" / "a" / "f").write_text("x")
                    _probe(field, _fill(argv, tree=str(t / "tree"), target=td), t)
                    if (t / "tree").exists():
                        raise UserError(
                            f"parameter rm_tool: `{shlex.join(_fill(argv, tree='TREE', target='T'))}` "
                            "left a test tree in place: it must remove {tree} and everything in it"
                        )
                else:
                    _probe(field, _fill(argv, target=td), t)
        _probed[key] = True

    # -- binding to the target, sizing, the engine spec ------------------------------------------------
    def bind_job(self, directory: Path, settings) -> None:
        """fsmeter.spec.build_job tells the params where the job runs; nothing is read until engine_spec."""
        self._dir = Path(directory)
        self._job_seed = settings.seed
        self._spec = None

    def engine_spec(self) -> dict:
        if self._spec is not None:
            return self._spec
        if self._dir is None or self._failed:
            return {**self.model_dump(), "family": "macro"}
        try:
            self._spec = self._build_spec(self._dir)
        except UserError:
            self._failed = True  # the caller reports it; later calls (environment records) get the plain dump
            raise
        return self._spec

    def _cache_dir(self) -> Path:
        from fsmeter.macro.cache import default_cache_dir

        return Path(self.source_cache).expanduser() if self.source_cache else default_cache_dir()

    def shape(self, files: int | None = None, dirs: int | None = None, seed: int = 42):
        from fsmeter.macro.tree_gen import TreeShape

        s = TreeShape(
            files=self.tree_files if files is None else files,
            dirs=self.tree_dirs if dirs is None else dirs,
            median_size=self.tree_median_size,
            size_sigma=self.tree_size_sigma,
            max_size=self.tree_max_size,
            max_depth=self.tree_max_depth,
            seed=seed,
        )
        try:
            s.check()
        except ValueError as exc:
            raise UserError(f"parameter {exc}") from None
        return s

    def _build_spec(self, d: Path) -> dict:
        from fsmeter.macro import blockdev, cache
        from fsmeter.macro.tree_gen import shape_stats

        notes: list = []

        def note(msg: str) -> None:
            notes.append(msg)
            print(f"fsmeter: note: {msg}", file=sys.stderr, flush=True)

        seed = self._seed
        cdir = self._cache_dir()
        try:
            cdir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"parameter source_cache: cannot create {cdir}: {exc.strerror}") from None
        if os.stat(cdir).st_dev == os.stat(d).st_dev:
            note(
                f"the source cache {cdir} is on the target's filesystem: cp and untar read and write the same "
                "filesystem (set source_cache to a directory elsewhere to avoid it)"
            )
        vfs = os.statvfs(d)
        free = vfs.f_bavail * vfs.f_frsize
        base = blockdev.device_bytes(str(d)) or vfs.f_blocks * vfs.f_frsize
        uses_tree = "untar" in self.phases
        kind = self.source_kind() if uses_tree else None

        # The tree: its statistics first (cheap), shrunk to fit when allowed, then the archive.
        tree_stats, archive = None, None
        shape = None
        if uses_tree:
            if kind == "generated":
                shape = self.shape(seed=seed)
                tree_stats = shape_stats(shape)
                need = tree_stats["footprint_bytes"] * TREE_OVERHEAD
                room = FREE_USE * free - (MIN_CP if "cp" in self.phases else 0)
                if need > room:
                    if self.fit == "fail" or room <= 0:
                        raise UserError(self._no_fit("tree", need, free))
                    r = room / need
                    shape = self.shape(files=int(self.tree_files * r), dirs=max(1, int(self.tree_dirs * r)), seed=seed)
                    old = tree_stats
                    tree_stats = shape_stats(shape)
                    note(
                        f"the target has {free / 1e6:,.0f} MB free: the tree shrinks from {old['files']:,} files "
                        f"({old['bytes'] / 1e6:,.0f} MB) to {tree_stats['files']:,} files in {shape.dirs:,} "
                        f"directories ({tree_stats['bytes'] / 1e6:,.0f} MB)"
                    )
                entry = cache.ensure_tree(shape, cdir, note)
                archive = Path(entry["dir"]) / entry["archives"][self.archive]["file"]
            elif kind == "directory":
                entry = cache.ensure_directory(Path(self.source).expanduser(), cdir, note)
                tree_stats = entry["stats"]
                archive = Path(entry["dir"]) / entry["archives"][self.archive]["file"]
            else:
                archive = Path(self.source).expanduser().resolve()
                tree_stats = cache.scan_tarball(archive, cdir)["stats"]
            need = tree_stats["footprint_bytes"] * TREE_OVERHEAD
            if need > FREE_USE * free:
                raise UserError(self._no_fit("tree", need, free))
        tree_need = tree_stats["footprint_bytes"] * TREE_OVERHEAD if tree_stats else 0.0

        spec: dict = {
            "family": "macro",
            "source_cache": self.source_read,
            "notes": notes,
            "cleanup": [],
            "verify": None if self.verify == "off" else self.verify,
        }
        target = str(d)
        if "cp" in self.phases:
            room = FREE_USE * free - tree_need
            dst = d / CP_NAME
            if self.cp_source == "generated":
                size = min(self.cp_size, int(self.cp_max_fraction * base) // MiB * MiB)
                if size > room:
                    if self.fit == "fail" or room < MIN_CP:
                        raise UserError(self._no_fit("cp", size + tree_need, free))
                    size = int(room) // MiB * MiB
                if size < self.cp_size:
                    note(
                        f"cp copies {size / 1e6:,.0f} MB instead of {self.cp_size / 1e6:,.0f} MB: at most "
                        f"{self.cp_max_fraction:g} of the target's {base / 1e6:,.0f} MB"
                        + (
                            " and what its free space leaves"
                            if size < int(self.cp_max_fraction * base) // MiB * MiB
                            else ""
                        )
                    )
                src = cache.ensure_cp_file(seed, size, cdir, note)
            else:
                src = Path(self.cp_source).expanduser().resolve()
                size = src.stat().st_size
                if size > room:
                    raise UserError(self._no_fit("cp", size + tree_need, free))
            spec["cp"] = {
                "argv": _fill(_argv(self.cp_tool, "cp_tool"), src=str(src), dst=str(dst), target=target),
                "sources": [str(src)],
                "bytes": size,
                "files": 1,
                "check": str(dst),
            }
            spec["cleanup"].append(str(dst))
            self._resolved.update(cp_bytes=size, cp_source=str(src))
        if uses_tree:
            dest = d / TREE_DIR
            files = int(tree_stats["files"])
            spec["untar"] = {
                "argv": _fill(self.untar_argv(), archive=str(archive), dest=str(dest), target=target),
                "sources": [str(archive)],
                "bytes": int(tree_stats["bytes"]),
                "files": files,
                "check": str(dest),
                "mkdir": str(dest),
            }
            if self.verify != "off":
                spec["untar"]["compare"] = [
                    "tar",
                    "--compare",
                    *DECOMPRESS[self.untar_kind()],
                    "-f",
                    str(archive),
                    "-C",
                    str(dest),
                ]
            if "rm" in self.phases:
                spec["rm"] = {
                    "argv": _fill(_argv(self.rm_tool, "rm_tool"), tree=str(dest), target=target),
                    "bytes": int(tree_stats["bytes"]),
                    "files": files,
                    "check": str(dest),
                }
            spec["cleanup"].append(str(dest))
            self._resolved.update(archive=str(archive), tree=tree_stats, shape=shape.__dict__ if shape else None)
        spec["sync"] = _fill(_argv(self.sync_tool, "sync_tool"), target=target) if self.sync_tool else []
        bs = blockdev.stat_path(target)
        spec["block_stat"] = str(bs) if bs else None
        return spec

    @property
    def _seed(self) -> int:
        return self._job_seed

    def _no_fit(self, what: str, need: float, free: float) -> str:
        hint = "a larger target, or fewer tree_files" if what == "tree" else "a larger target, or a smaller cp_size"
        return (
            f"parameter {'source' if what == 'tree' else 'cp_size'}: the {what} needs about {need / 1e6:,.0f} MB "
            f"but the target has {free / 1e6:,.0f} MB free: use {hint}"
            + (" (or fit=shrink)" if self.fit == "fail" else "")
        )


def _phases(p: MacroParams) -> list:
    return [Phase(name) for name in p.phases]


def _extra(key: str):
    def get(r: dict) -> float | None:
        v = (r.get("extra") or {}).get(key)
        return None if v is None else float(v)

    return get


def _dev_mb(field: str):
    def get(r: dict) -> float | None:
        c = r.get("counters") or {}
        return c[f"dev_{field}"] * 512 / 1e6 if f"dev_{field}" in c else None

    return get


def _metrics(p: MacroParams) -> list:
    last = p.phases[-1]
    out = [Metric(last, "total_real_s", "s", False, _extra("session_real_s"))]
    for ph in p.phases:
        out.append(Metric(ph, "real_s", "s", False, _extra("real_s")))
        out.append(Metric(ph, "user_s", "s", False, _extra("user_s")))
        out.append(Metric(ph, "sys_s", "s", False, _extra("sys_s")))
        if ph == "cp":
            out.append(Metric(ph, "MB_per_s", "MB/s", True, _extra("MB_per_s")))
        out.append(Metric(ph, "dev_write_MB", "MB", False, _dev_mb("write_sectors")))
        out.append(Metric(ph, "dev_read_MB", "MB", False, _dev_mb("read_sectors")))
    return out


def run_summary(doc: dict):
    """The study's table for one `fsmeter run`: one row per operation."""
    from rich.table import Table

    t = Table(title=f"{doc['workload']}: real tools, sync included (seconds; MB = 10^6 bytes)", title_justify="left")
    for col in ("operation", "real s", "user s", "sys s", "MB/s", "data", "files", "dev read MB", "dev write MB"):
        t.add_column(col, justify="left" if col == "operation" else "right")
    total = 0.0
    tools = []
    source_read = "-"
    for name, rep in doc["phases"].items():
        x = rep.get("extra") or {}
        if not x or "real_s" not in x:
            continue
        c = rep.get("counters") or {}
        dev = lambda f: f"{c[f'dev_{f}'] * 512 / 1e6:,.1f}" if f"dev_{f}" in c else "-"  # noqa: E731
        total += x["real_s"]
        t.add_row(
            name,
            f"{x['real_s']:.3f}",
            f"{x['user_s']:.3f}",
            f"{x['sys_s']:.3f}",
            f"{x['MB_per_s']:,.1f}" if name == "cp" else "-",
            format_size(x.get("bytes", 0)),
            f"{x.get('files', 0):,}",
            dev("read_sectors"),
            dev("write_sectors"),
        )
        tools.append(
            f"{name}: {shlex.join((x.get('tool') or {}).get('argv', []))}"
            + (f" + {shlex.join(x['sync']['argv'])}" if x.get("sync") else "")
        )
        source_read = x.get("source_cache", "-")
    t.caption = "\n".join([f"total real {total:.3f} s; source read {source_read}", *tools])
    t.caption_justify = "left"
    return t


FAMILY = Family(
    name="macro",
    params=MacroParams,
    phases=_phases,
    metrics=_metrics,
    default_mkfs="per-trial",
    run_summary=run_summary,
    charts="fsmeter.report.macro_charts:workload_charts",
    interval_chart=False,  # one operation per phase: its interval samples say nothing
    description="cp / tar / rm: real tools as child processes, timed with sync (real, user, sys as Lourdas 2009)",
)
