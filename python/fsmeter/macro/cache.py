"""The source cache: generated trees, their archives and the large file to copy, kept outside
the target between trials and verified by SHA-256 before use.

Layout under the cache directory (default ``$XDG_CACHE_HOME/fsmeter/macro``, i.e.
``~/.cache/fsmeter/macro``):

- ``tree-<key>/``: tree.tar, tree.tar.gz, tree.tar.bz2 and manifest.json (generator parameters
  and version, shape statistics, size and SHA-256 of each archive); ``key`` digests the parameters;
- ``dir-<key>/``: the same for a user's directory (``key`` digests its path; a changed directory
  is archived again);
- ``cpfile-s<seed>-<bytes>.bin`` and ``.json``: the file the cp phase copies (seeded random bytes).

Each entry is built in a temporary name and renamed into place, so a killed generation never
leaves a half-written entry that looks valid. A file whose size or checksum does not match its
manifest is generated again (with a note). Checksums are computed once per process and file
version (path, size, mtime).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from fsmeter.macro.tree_gen import (
    ARCHIVES,
    GENERATOR_VERSION,
    TreeShape,
    archive_directory,
    scan_tree_source,
    write_archives,
)

Note = Callable[[str], None]
_verified: dict = {}


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fsmeter" / "macro"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 22)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def verify(path: Path, sha256: str, size: int) -> bool:
    """True when `path` has `size` bytes and that SHA-256 (memoised per file version)."""
    try:
        st = path.stat()
    except OSError:
        return False
    if st.st_size != size:
        return False
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _verified:
        _verified[key] = sha256_file(path)
    return _verified[key] == sha256


def _read_manifest(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _install(tmp: Path, final: Path) -> None:
    if final.exists():
        shutil.rmtree(final) if final.is_dir() else final.unlink()
    os.replace(tmp, final)


def _entry_ok(d: Path, m: dict | None, note: Note) -> bool:
    if m is None:
        return False
    for a in m["archives"].values():
        if not verify(d / a["file"], a["sha256"], a["bytes"]):
            note(f"source cache: {d / a['file']} does not match its checksum: making it again")
            return False
    return True


def ensure_tree(shape: TreeShape, cache_dir: Path, note: Note) -> dict:
    """The generated tree's manifest (with "dir"), generating and caching it when needed."""
    d = cache_dir / f"tree-{shape.key()}"
    m = _read_manifest(d / "manifest.json")
    if _entry_ok(d, m, note):
        return {**m, "dir": str(d)}
    cache_dir.mkdir(parents=True, exist_ok=True)
    note(
        f"generating the source tree ({shape.files:,} files in {shape.dirs:,} directories, seed {shape.seed}) "
        f"and its .tar, .tar.gz and .tar.bz2 into {d}: once, then cached"
    )
    tmp = cache_dir / f".tree-{shape.key()}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        out = write_archives(shape, tmp)
        import dataclasses

        m = {
            "kind": "generated",
            "generator_version": GENERATOR_VERSION,
            "params": dataclasses.asdict(shape),
            "root": shape.root_name,
            **out,
        }
        (tmp / "manifest.json").write_text(json.dumps(m, indent=1))
        _install(tmp, d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for a in m["archives"].values():  # just written: remember the checksums
        p = d / a["file"]
        st = p.stat()
        _verified[(str(p), st.st_size, st.st_mtime_ns)] = a["sha256"]
    return {**m, "dir": str(d)}


def _dir_fingerprint(src: Path) -> dict:
    st = scan_tree_source(src)
    s = st.summary()
    mt = max((p.stat().st_mtime_ns for p in src.rglob("*") if not p.is_symlink()), default=0)
    return {"files": s["files"], "dirs": s["dirs"], "bytes": s["bytes"], "max_mtime_ns": mt}, s


def ensure_directory(src: Path, cache_dir: Path, note: Note) -> dict:
    """Archives of a user's directory (rebuilt when its files change), as ensure_tree."""
    src = src.resolve()
    key = hashlib.sha256(str(src).encode()).hexdigest()[:16]
    d = cache_dir / f"dir-{key}"
    fp, stats = _dir_fingerprint(src)
    m = _read_manifest(d / "manifest.json")
    if m is not None and m.get("fingerprint") == fp and _entry_ok(d, m, note):
        return {**m, "dir": str(d)}
    cache_dir.mkdir(parents=True, exist_ok=True)
    note(f"archiving {src} ({stats['files']:,} files) into {d}: once, then cached")
    tmp = cache_dir / f".dir-{key}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        archives = archive_directory(src, tmp)
        m = {
            "kind": "directory",
            "source": str(src),
            "fingerprint": fp,
            "root": src.name,
            "stats": stats,
            "archives": archives,
        }
        (tmp / "manifest.json").write_text(json.dumps(m, indent=1))
        _install(tmp, d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {**m, "dir": str(d)}


def scan_tarball(path: Path, cache_dir: Path) -> dict:
    """Shape statistics and top directory of a user's tarball (scanned once per file version)."""
    path = path.resolve()
    st = path.stat()
    key = hashlib.sha256(f"{path}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    f = cache_dir / f"scan-{key}.json"
    m = _read_manifest(f)
    if m is not None:
        return m
    shape = scan_tree_source(path)
    m = {"kind": "tarball", "source": str(path), "stats": shape.summary()}
    cache_dir.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(m, indent=1))
    return m


CHUNK = 4 << 20


def ensure_cp_file(seed: int, size: int, cache_dir: Path, note: Note) -> Path:
    """The file the cp phase copies: `size` bytes of seeded random data (incompressible, so no
    filesystem can shortcut it), cached and verified."""
    import numpy as np

    p = cache_dir / f"cpfile-s{seed}-{size}.bin"
    mf = p.with_suffix(".json")
    m = _read_manifest(mf)
    if m is not None and verify(p, m["sha256"], m["bytes"]):
        return p
    if m is not None:
        note(f"source cache: {p} does not match its checksum: making it again")
    cache_dir.mkdir(parents=True, exist_ok=True)
    note(f"generating the {size / 1e6:,.0f} MB file to copy into {p}: once, then cached")
    rng = np.random.Generator(np.random.PCG64(seed))
    h = hashlib.sha256()
    tmp = p.with_name(p.name + f".tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            left = size
            while left:
                b = rng.bytes(min(CHUNK, left))
                f.write(b)
                h.update(b)
                left -= len(b)
        os.replace(tmp, p)
    finally:
        if tmp.exists():
            tmp.unlink()
    m = {"kind": "cp-file", "seed": seed, "bytes": size, "sha256": h.hexdigest(), "generator": "numpy PCG64 bytes"}
    mf.write_text(json.dumps(m, indent=1))
    st = p.stat()
    _verified[(str(p), st.st_size, st.st_mtime_ns)] = m["sha256"]
    return p


__all__ = [
    "ARCHIVES",
    "default_cache_dir",
    "ensure_cp_file",
    "ensure_directory",
    "ensure_tree",
    "scan_tarball",
    "sha256_file",
    "verify",
]
