"""A kernel-like source tree generated from a fixed seed, written straight into its .tar,
.tar.gz and .tar.bz2 archives as it is generated (the tree is never held in memory, nor
written out as files).

Shape (defaults fitted to linux-2.6.32, the tree Lourdas (2009) extracted and removed:
30,786 files in 1,657 directories, about 380 MB):

- directories: grown one at a time under a parent picked by preferential attachment (a
  directory with many subdirectories attracts more, as drivers/ and arch/ do), accepted with a
  weight that falls with depth (``DEPTH_WEIGHT``), never deeper than ``max_depth``, at most
  ``top_dirs`` at the top;
- files: every directory but the root gets a Makefile; the rest go to directories in proportion
  to a lognormal weight drawn per directory (a few directories hold hundreds of files, most a
  handful), the root a few;
- sizes: lognormal with median ``median_size`` and shape ``size_sigma``, redrawn above
  ``max_size``; ``empty_pct`` % are empty;
- names: syllables joined by ``_`` or ``-`` with C-tree extensions (``EXTENSIONS``); directory
  names are shorter;
- content: lines of C-like tokens drawn from a pool of 100,000 lines, which compresses about as
  kernel source does (gzip ~4x, bzip2 ~6x).

Structure and content use separate random streams, so :func:`shape_stats` (structure and sizes
only, no content) gives exactly the statistics a full generation records.
"""

from __future__ import annotations

import bisect
import bz2
import dataclasses
import gzip
import hashlib
import io
import json
import math
import random
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

#: Bumped whenever the same parameters would produce different bytes.
GENERATOR_VERSION = 1
#: linux-2.6.32's release date: every member's mtime.
MTIME = 1259798400
#: Relative chance to accept a new directory under a parent at depth d (index d).
DEPTH_WEIGHT = (1.0, 0.9, 0.75, 0.5, 0.28, 0.12, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001)
#: File extensions and their shares (the kernel tree: mostly .c and .h).
EXTENSIONS = (
    (".c", 46.0),
    (".h", 38.0),
    (".S", 3.5),
    (".txt", 3.0),
    ("", 3.0),
    (".sh", 0.6),
    (".pl", 0.5),
    (".py", 0.3),
    (".awk", 0.1),
    (".lds", 0.3),
    (".dts", 0.2),
    (".xml", 0.2),
    (".conf", 0.3),
    (".tmpl", 0.1),
    (".cocci", 0.1),
    ("_defconfig", 3.8),
)
POOL_LINES = 100_000
BLOCK = 4096


@dataclass(frozen=True)
class TreeShape:
    """The generator's parameters (published in docs/macro.md)."""

    files: int = 30786
    dirs: int = 1657
    median_size: int = 4608
    size_sigma: float = 1.4
    max_size: int = 4 << 20
    empty_pct: float = 0.3
    max_depth: int = 8
    top_dirs: int = 20
    seed: int = 42
    root_name: str = "srctree"

    def check(self) -> None:
        """ValueError naming the parameter (tree_<name>) when the shape is impossible."""
        if self.dirs < 1:
            raise ValueError("tree_dirs: must be >= 1 (the root counts)")
        if self.files < 0:
            raise ValueError("tree_files: must be >= 0")
        if self.max_depth < 1 and self.dirs > 1:
            raise ValueError("tree_max_depth: must be >= 1 when there is more than one directory")
        if self.median_size < 1 or self.max_size < self.median_size:
            raise ValueError("tree_median_size: must be >= 1 and <= max_size")
        if not 0 < self.size_sigma <= 5:
            raise ValueError("tree_size_sigma: must be in (0, 5]")

    def key(self) -> str:
        """Short digest naming this shape's cache entry."""
        d = {**dataclasses.asdict(self), "generator_version": GENERATOR_VERSION}
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


# -- statistics ---------------------------------------------------------------------------------
def _quantile(sorted_vals: list, q: float) -> float:
    """Linear-interpolation quantile (numpy's default method 7) of a sorted list."""
    if not sorted_vals:
        return 0.0
    pos = (len(sorted_vals) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


class ShapeStats:
    """Accumulates the shape of a tree as it is walked (one int per file kept, for quantiles)."""

    def __init__(self) -> None:
        self.sizes: list = []
        self.file_depths: list = []
        self.name_lens: list = []
        self.dir_name_lens: list = []
        self.path_len_max = 0
        self.path_len_sum = 0
        self.dir_depth_max = 0
        self.dirs = 0
        self.per_dir: dict = {}
        self.ext: dict = {}

    def add_dir(self, rel: str) -> None:
        self.dirs += 1
        depth = rel.count("/")
        self.dir_depth_max = max(self.dir_depth_max, depth)
        if depth:
            self.dir_name_lens.append(len(rel.rsplit("/", 1)[-1]))
        self.per_dir.setdefault(rel, 0)

    def add_file(self, rel: str, size: int) -> None:
        parent, _, name = rel.rpartition("/")
        self.sizes.append(size)
        self.file_depths.append(rel.count("/"))
        self.name_lens.append(len(name))
        self.path_len_max = max(self.path_len_max, len(rel))
        self.path_len_sum += len(rel)
        self.per_dir[parent] = self.per_dir.get(parent, 0) + 1
        dot = name.rfind(".")
        ext = name[dot:] if dot > 0 else ("_defconfig" if name.endswith("_defconfig") else "(none)")
        self.ext[ext] = self.ext.get(ext, 0) + 1

    def summary(self) -> dict:
        s = sorted(self.sizes)
        n = len(s)
        per_dir = sorted(self.per_dir.values())
        mean = lambda xs: (sum(xs) / len(xs)) if xs else 0.0  # noqa: E731
        return {
            "files": n,
            "dirs": self.dirs,
            "bytes": sum(s),
            "footprint_bytes": sum(-(-x // BLOCK) * BLOCK for x in s) + self.dirs * BLOCK,
            "size_mean": mean(s),
            "size_p10": _quantile(s, 0.10),
            "size_p25": _quantile(s, 0.25),
            "size_median": _quantile(s, 0.5),
            "size_p75": _quantile(s, 0.75),
            "size_p90": _quantile(s, 0.90),
            "size_p99": _quantile(s, 0.99),
            "size_max": s[-1] if s else 0,
            "empty_files": sum(1 for x in s if x == 0),
            "files_per_dir_median": _quantile(per_dir, 0.5),
            "files_per_dir_p90": _quantile(per_dir, 0.9),
            "files_per_dir_max": per_dir[-1] if per_dir else 0,
            "dir_depth_max": self.dir_depth_max,
            "file_depth_mean": mean(self.file_depths),
            "file_depth_max": max(self.file_depths, default=0),
            "file_name_len_mean": mean(self.name_lens),
            "dir_name_len_mean": mean(self.dir_name_lens),
            "path_len_mean": self.path_len_sum / n if n else 0.0,
            "path_len_max": self.path_len_max,
            "extensions": dict(sorted(self.ext.items(), key=lambda kv: -kv[1])[:8]),
        }


# -- structure ----------------------------------------------------------------------------------
_CONS = "bcdfghjklmnprstvwxz"
_VOW = "aeiou"


def _syllable(rng: random.Random) -> str:
    s = rng.choice(_CONS) + rng.choice(_VOW)
    return s + rng.choice(_CONS) if rng.random() < 0.45 else s


def _stem(rng: random.Random, parts: tuple) -> str:
    n = rng.choices((1, 2, 3, 4), weights=parts)[0]
    words = []
    for _ in range(n):
        words.append("".join(_syllable(rng) for _ in range(rng.choice((1, 1, 2)))))
    return rng.choice(("_", "_", "-")).join(words)


def _unique(name: str, taken: set) -> str:
    out, i = name, 1
    while out in taken or out in ("Makefile", "Kconfig"):
        i += 1
        out = f"{name}{i}"
    taken.add(out)
    return out


class _Skeleton:
    """Directory structure (parents, children) and files per directory: O(dirs) integers."""

    def __init__(self, shape: TreeShape, rng: random.Random):
        parent, depth, nchild = [-1], [0], [0]
        slots = [0]  # each directory appears 1 + (its subdirectories) times: preferential attachment
        while len(parent) < shape.dirs:
            p = slots[rng.randrange(len(slots))]
            d = depth[p]
            if d >= shape.max_depth or (p == 0 and nchild[0] >= shape.top_dirs):
                continue
            if rng.random() >= DEPTH_WEIGHT[min(d, len(DEPTH_WEIGHT) - 1)]:
                continue
            parent.append(p)
            depth.append(d + 1)
            nchild.append(0)
            nchild[p] += 1
            slots.append(p)
            slots.append(len(parent) - 1)
        self.children: list = [[] for _ in parent]
        for i, p in enumerate(parent):
            if p >= 0:
                self.children[p].append(i)
        n = shape.dirs
        self.makefile = [False] * n
        files = [0] * n
        rest = shape.files
        if shape.files >= n - 1:
            for i in range(1, n):
                self.makefile[i] = True
                files[i] = 1
            rest -= n - 1
        weights = [rng.lognormvariate(0.0, 1.3) for _ in range(n)]
        weights[0] = 0.1
        cum, acc = [], 0.0
        for w in weights:
            acc += w
            cum.append(acc)
        for _ in range(rest):
            files[bisect.bisect_right(cum, rng.random() * acc)] += 1
        self.files = files


def _size(shape: TreeShape, rng: random.Random) -> int:
    if rng.random() * 100 < shape.empty_pct:
        return 0
    mu = math.log(shape.median_size)
    while True:
        s = int(rng.lognormvariate(mu, shape.size_sigma))
        if 1 <= s <= shape.max_size:
            return s


def walk(shape: TreeShape) -> Iterator[tuple]:
    """Yields ("dir", relpath, 0) and ("file", relpath, size) in archive order (a directory, its
    files, then its subdirectories), from the structure stream of `shape.seed`."""
    shape.check()
    rng = random.Random(shape.seed)
    sk = _Skeleton(shape, rng)
    ext_names = [e for e, _ in EXTENSIONS]
    ext_cum = []
    acc = 0.0
    for _, w in EXTENSIONS:
        acc += w
        ext_cum.append(acc)

    def visit(i: int, rel: str) -> Iterator[tuple]:
        yield ("dir", rel, 0)
        taken: set = set()
        nfiles = sk.files[i]
        names = []
        if sk.makefile[i]:
            names.append("Makefile")
            nfiles -= 1
            if nfiles >= 2 and rng.random() < 0.5:
                names.append("Kconfig")
                nfiles -= 1
        for _ in range(nfiles):
            ext = ext_names[bisect.bisect_right(ext_cum, rng.random() * acc)]
            stem = _stem(rng, (30, 40, 22, 8))
            names.append(_unique(stem + ext, taken))
        for name in names:
            yield ("file", f"{rel}/{name}", _size(shape, rng))
        sub_taken: set = set(names)
        subs = [(c, _unique(_stem(rng, (45, 40, 15, 0)), sub_taken)) for c in sk.children[i]]
        for c, name in subs:
            yield from visit(c, f"{rel}/{name}")

    yield from visit(0, shape.root_name)


def shape_stats(shape: TreeShape) -> dict:
    """The statistics of the tree `shape` generates, without generating any content."""
    st = ShapeStats()
    for kind, rel, size in walk(shape):
        st.add_dir(rel) if kind == "dir" else st.add_file(rel, size)
    return st.summary()


# -- content ------------------------------------------------------------------------------------
_KEYWORDS = (
    "int",
    "static",
    "struct",
    "return",
    "if",
    "else",
    "for",
    "while",
    "unsigned",
    "long",
    "void",
    "const",
    "char",
    "u32",
    "u8",
    "#define",
    "#include",
    "case",
    "break",
    "goto",
    "sizeof",
    "NULL",
    "err",
    "dev",
    "inline",
    "switch",
    "default:",
    "/*",
    "*/",
    "*",
)
_OPS = ("=", "==", "!=", "+", "-", "->", ".", "&", "|", "<<", ">>", "&&", "||", "<", ">", "+=", "(", ")", ",")


def _line_pool(seed: int) -> list:
    """POOL_LINES lines of C-like text; identifiers follow a Pareto (Zipf-like) popularity."""
    rng = random.Random(seed ^ 0x5EED_C0DE)
    idents = []
    for _ in range(8000):
        n = rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
        idents.append("_".join(_syllable(rng) + (_syllable(rng) if rng.random() < 0.5 else "") for _ in range(n)))
    pool = []
    for _ in range(POOL_LINES):
        if rng.random() < 0.12:
            pool.append("\n")
            continue
        toks = []
        for _ in range(rng.randint(2, 9)):
            x = rng.random()
            if x < 0.25:
                toks.append(rng.choice(_KEYWORDS))
            elif x < 0.45:
                toks.append(rng.choice(_OPS))
            elif x < 0.5:
                toks.append(str(rng.choice((0, 1, 2, 4, 8, 16, 32, 0x100, 0xFF, rng.randint(0, 9999)))))
            else:
                toks.append(idents[min(int(rng.paretovariate(0.9)), len(idents)) - 1])
        pool.append(
            "\t" * rng.choice((0, 1, 1, 1, 2, 2, 3))
            + " ".join(toks)
            + rng.choice((";", ";", ";", " {", "", "}", ")", " */"))
            + "\n"
        )
    return pool


class _Content:
    def __init__(self, seed: int):
        self.pool = _line_pool(seed)
        self.rng = random.Random(seed ^ 0xC0_47E7)
        self.avg = sum(len(x) for x in self.pool) / len(self.pool)

    def make(self, size: int) -> bytes:
        if size == 0:
            return b""
        out = b""
        while len(out) < size:
            k = int((size - len(out)) / self.avg) + 2
            out += "".join(self.rng.choices(self.pool, k=k)).encode()
        return out[:size]


# -- archives -----------------------------------------------------------------------------------
class _Hashing:
    """A binary writer that also hashes and counts what goes through it."""

    def __init__(self, f):
        self.f = f
        self.h = hashlib.sha256()
        self.n = 0

    def write(self, b) -> int:
        self.f.write(b)
        self.h.update(b)
        self.n += len(b)
        return len(b)

    def flush(self) -> None:
        self.f.flush()


class _Tee:
    def __init__(self, outs: list):
        self.outs = outs

    def write(self, b) -> int:
        for o in self.outs:
            o.write(b)
        return len(b)


ARCHIVES = ("tar", "tar.gz", "tar.bz2")


def _tarinfo(kind: str, rel: str, size: int) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(rel)
    ti.mtime = MTIME
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = "root"
    if kind == "dir":
        ti.type, ti.mode = tarfile.DIRTYPE, 0o755
    else:
        ti.size, ti.mode = size, (0o755 if rel.endswith((".sh", ".pl", ".py")) else 0o644)
    return ti


def write_archives(shape: TreeShape, out_dir: Path, progress: Callable[[int, int], None] | None = None) -> dict:
    """Generate the tree of `shape` straight into out_dir/tree.tar, .tar.gz and .tar.bz2 (GNU format,
    gzip -6 with no name or time in its header, bzip2 -9: byte-for-byte reproducible).
    Returns {"stats": ..., "archives": {ext: {"path", "bytes", "sha256"}}}. `progress(files_done, files)`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    st = ShapeStats()
    content = _Content(shape.seed)
    raw_f = open(out_dir / "tree.tar", "wb")
    gz_f = open(out_dir / "tree.tar.gz", "wb")
    bz_f = open(out_dir / "tree.tar.bz2", "wb")
    try:
        h_raw, h_gz, h_bz = _Hashing(raw_f), _Hashing(gz_f), _Hashing(bz_f)
        gz = gzip.GzipFile(filename="", mode="wb", fileobj=h_gz, compresslevel=6, mtime=0)
        bzw = bz2.BZ2File(h_bz, "wb", compresslevel=9)
        tee = _Tee([h_raw, gz, bzw])
        done = 0
        with tarfile.open(fileobj=tee, mode="w|", format=tarfile.GNU_FORMAT) as tar:
            for kind, rel, size in walk(shape):
                ti = _tarinfo(kind, rel, size)
                if kind == "dir":
                    st.add_dir(rel)
                    tar.addfile(ti)
                else:
                    st.add_file(rel, size)
                    tar.addfile(ti, io.BytesIO(content.make(size)))
                    done += 1
                    if progress is not None and done % 500 == 0:
                        progress(done, shape.files)
        gz.close()
        bzw.close()
    finally:
        raw_f.close()
        gz_f.close()
        bz_f.close()
    archives = {}
    for ext, h in (("tar", h_raw), ("tar.gz", h_gz), ("tar.bz2", h_bz)):
        archives[ext] = {"file": f"tree.{ext}", "bytes": h.n, "sha256": h.h.hexdigest()}
    return {"stats": st.summary(), "archives": archives}


def scan_tree_source(path: Path) -> ShapeStats:
    """Shape of a user's directory or tarball (streamed), for sizing and the statistics docs/macro.md gives."""
    st = ShapeStats()
    if path.is_dir():
        base = path.name
        st.add_dir(base)
        for p in sorted(path.rglob("*")):
            rel = f"{base}/{p.relative_to(path).as_posix()}"
            if p.is_symlink():
                st.add_file(rel, 0)
            elif p.is_dir():
                st.add_dir(rel)
            elif p.is_file():
                st.add_file(rel, p.stat().st_size)
        return st
    with tarfile.open(path, mode="r|*") as tar:
        for m in tar:
            rel = m.name.rstrip("/")
            if m.isdir():
                st.add_dir(rel)
            else:
                st.add_file(rel, m.size if m.isfile() else 0)
    return st


def archive_directory(src: Path, out_dir: Path) -> dict:
    """A user's directory streamed into out_dir/tree.tar, .tar.gz and .tar.bz2 (top member: its name)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = [open(out_dir / f"tree.{ext}", "wb") for ext in ARCHIVES]
    try:
        hs = [_Hashing(f) for f in files]
        gz = gzip.GzipFile(filename="", mode="wb", fileobj=hs[1], compresslevel=6, mtime=0)
        bzw = bz2.BZ2File(hs[2], "wb", compresslevel=9)
        with tarfile.open(fileobj=_Tee([hs[0], gz, bzw]), mode="w|", format=tarfile.GNU_FORMAT) as tar:
            tar.add(str(src), arcname=src.name)
        gz.close()
        bzw.close()
    finally:
        for f in files:
            f.close()
    return {ext: {"file": f"tree.{ext}", "bytes": h.n, "sha256": h.h.hexdigest()} for ext, h in zip(ARCHIVES, hs)}
