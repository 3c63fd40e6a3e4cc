"""The families' cases against their bare loops: how each side runs and where its figures are.

A case is one named workload of a family and the bare loop in bench/limits/ that makes the same
system calls (limits/README.md lists the loops). For each it says:

* how fsmeter runs it (`fsmeter run WORKLOAD --set ...`) and how the loop runs (its key=value
  arguments), at three sizes: `full` (the quiet-machine benchmark), `quick` (bench --quick) and
  `trace` (small enough to run under strace);
* its figures: each a rate read from fsmeter's result document and from the loop's result lines
  (`result NAME OPS BYTES SECONDS`), in the same unit;
* its phases for the system-call comparison: fsmeter's phase, the loop's phase, and the count of
  operations each side did there (calls per operation are counts over these).

bench_limits.py times the two sides; limits_syscalls.py counts their system calls.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

LIMITS = Path(__file__).resolve().parent / "limits"
#: dbench's load file, as Debian's dbench installs it.
DBENCH_LOADFILE = Path("/usr/share/dbench/client.txt")

#: A loop's results: phase or pass name -> (operations, bytes, seconds).
Results = dict


def parse_results(stdout: str) -> Results:
    """The `result NAME OPS BYTES SECONDS` lines a bare loop prints."""
    out = {}
    for line in stdout.splitlines():
        f = line.split()
        if len(f) == 5 and f[0] == "result":
            out[f[1]] = (int(f[2]), int(f[3]), float(f[4]))
    return out


def build_loops(into: Path | None = None) -> dict:
    """Every bench/limits/*.c built with the system compiler (cc -O2) into a scratch folder:
    name -> executable. Raises RuntimeError with the compiler's message when one does not build."""
    out = Path(into or tempfile.mkdtemp(prefix="fsmeter-limits-"))
    out.mkdir(parents=True, exist_ok=True)
    exes = {}
    for src in sorted(LIMITS.glob("*.c")):
        exe = out / src.stem
        p = subprocess.run(
            ["cc", "-O2", "-Wall", "-Wextra", "-pthread", "-o", str(exe), str(src)], capture_output=True, text=True
        )
        if p.returncode != 0:
            raise RuntimeError(f"cc could not build {src.name}: {p.stderr.strip()[-2000:]}")
        exes[src.stem] = exe
    return exes


# -- reading figures --------------------------------------------------------------------------------


def fsm_total(phase: str, what: str = "ops") -> Callable[[dict], float]:
    """fsmeter's rate of a phase from its totals: operations or bytes per second."""
    return lambda doc: doc["phases"][phase]["total"][f"{what}_per_s"]


def fsm_extra(phase: str, *keys) -> Callable[[dict], float]:
    """A rate the family puts in its phase's `extra`."""

    def get(doc):
        v = doc["phases"][phase]["extra"]
        for k in keys:
            v = v[k]
        return v

    return get


def bare_rate(name: str, what: str = "ops") -> Callable[[Results], float]:
    """The loop's rate of a phase or pass: operations or bytes per second."""

    def get(res):
        ops, nbytes, secs = res[name]
        return (ops if what == "ops" else nbytes) / secs if secs > 0 else 0.0

    return get


def per_mib(f: Callable) -> Callable:
    return lambda x: f(x) / (1 << 20)


def fsm_counter(phase: str, name: str) -> Callable[[dict], int]:
    return lambda doc: doc["phases"][phase]["counters"][name]


def fsm_ops(phase: str) -> Callable[[dict], int]:
    return lambda doc: doc["phases"][phase]["total"]["ops"]


def bare_ops(name: str) -> Callable[[Results], int]:
    return lambda res: res[name][0]


@dataclass
class Figure:
    label: str
    unit: str
    fsm: Callable[[dict], float]
    bare: Callable[[Results], float]


@dataclass
class Phase:
    """One phase of the system-call comparison: fsmeter's phase key, the loop's phase name, and
    each side's count of the operations the calls are divided by."""

    fsm: str
    bare: str
    fsm_units: Callable[[dict], int]
    bare_units: Callable[[Results], int]


@dataclass
class Case:
    family: str
    name: str
    workload: str
    loop: str
    #: mode ("full", "quick", "trace"), threads, scratch folder -> fsmeter's --set values
    fsm_sets: Callable[[str, int, Path], dict]
    #: mode, threads, directory, scratch folder -> the loop's arguments
    loop_args: Callable[[str, int, Path, Path], list]
    figures: list
    phases: list
    threads: tuple = (1, 2)
    #: bound by time (both sides run for the same seconds) rather than by a count of work
    timed: bool = False
    #: the loop works on the file fsmeter lays out (the access family's): fsmeter runs first once
    layout: bool = False
    #: the loop needs what a first fsmeter run makes in the scratch folder (the macro family's
    #: source cache): fsmeter runs once, untimed, before the rounds
    prime: bool = False
    #: why a thread count is not run, for the rows (bonnie and iozone run one stream)
    note: str = ""
    #: what fsmeter does that the loop leaves out, for the rows' notes
    beyond: str = ""


def size(mode: str, full, quick, trace):
    return {"full": full, "quick": quick, "trace": trace}[mode]


# -- access -------------------------------------------------------------------------------------------

ACCESS_FILE = "fsmeter.access.0"
#: The access file's size: every access case reads and writes the same file.
ACCESS_BYTES = {"full": 512 << 20, "quick": 256 << 20, "trace": 16 << 20}


def access_case(name: str, workload: str, rw: str, random: bool, size_b: int, **io) -> Case:
    """One access shape: psync, or io_uring at a depth with O_DIRECT (`io`); `io["latency"] = False` runs
    fsmeter with `latency = false` (requests counted, the clock read once per batch)."""
    uring = io.get("backend") == "io_uring"
    timed = io.get("latency", True)

    def secs(mode):
        return size(mode, 5.0, 3.0, 0.5)

    def warm(mode):
        return size(mode, 1.0, 0.5, 0.0)

    def sets(mode, threads, scratch):
        s = {
            "file_size": ACCESS_BYTES[mode],
            "reuse_files": "true",
            "duration_s": secs(mode),
            "warmup_s": warm(mode),
            "seed": 42,
            "threads": threads,
        }
        if not random:
            s["record_size"] = size_b
        if uring:
            s.update(backend="io_uring", queue_depth=io["depth"], direct="true")
        if not timed:
            s["latency"] = "false"
        return s

    def args(mode, threads, d, scratch):
        a = [
            f"dir={d}",
            f"file={ACCESS_FILE}",
            f"file_size={ACCESS_BYTES[mode]}",
            f"size={size_b}",
            f"rw={rw}",
            f"random={int(random)}",
            f"align={size_b}",
            f"threads={threads}",
            f"seconds={secs(mode)}",
            f"warmup={warm(mode)}",
            "seed=42",
        ]
        if uring:
            a += ["engine=io_uring", f"depth={io['depth']}", "direct=1"]
        return a

    unit, what = ("IOPS", "ops") if size_b <= 4096 else ("MiB/s", "bytes")
    conv = (lambda f: f) if what == "ops" else per_mib
    return Case(
        "access",
        name,
        workload,
        "access",
        sets,
        args,
        [Figure("run", unit, conv(fsm_total("run", what)), conv(bare_rate("run", what)))],
        [Phase("run", "run", fsm_ops("run"), bare_ops("run"))],
        timed=True,
        layout=True,
        beyond="per request: two clock reads and a latency histogram update"
        if timed
        else "per request: no clock read (one per batch of up to 64) and no histogram",
    )


ACCESS = [
    access_case("access 4K randread psync", "rand-read-4k", "read", True, 4096),
    access_case("access 4K randwrite psync", "rand-write-4k", "write", True, 4096),
    access_case("access 64K read psync", "seq-read", "read", False, 64 << 10),
    access_case("access 64K write psync", "seq-write", "write", False, 64 << 10),
    access_case("access 4K randread psync, latency = false", "rand-read-4k", "read", True, 4096, latency=False),
    access_case("access 4K randwrite psync, latency = false", "rand-write-4k", "write", True, 4096, latency=False),
    access_case(
        "access 4K randread io_uring qd1 O_DIRECT", "rand-read-4k", "read", True, 4096, backend="io_uring", depth=1
    ),
    access_case(
        "access 4K randread io_uring qd32 O_DIRECT", "rand-read-4k", "read", True, 4096, backend="io_uring", depth=32
    ),
]

# -- fileset (PostMark) -----------------------------------------------------------------------------


def fileset_sizes(mode):
    return size(mode, (20000, 100000), (5000, 20000), (500, 2000))


FILESET = Case(
    "fileset",
    "fileset postmark",
    "postmark-quick",
    "fileset",
    lambda mode, t, scratch: {
        "files": fileset_sizes(mode)[0],
        "transactions": fileset_sizes(mode)[1],
        "threads": t,
        "seed": 42,
    },
    lambda mode, t, d, scratch: [
        f"dir={d}",
        f"threads={t}",
        f"files={fileset_sizes(mode)[0]}",
        f"transactions={fileset_sizes(mode)[1]}",
        "size_low=500",
        "size_high=10000",
        "read_block=512",
        "write_block=512",
        "bias_read=5",
        "bias_create=5",
        "buffering=1",
        "seed=42",
    ],
    [
        Figure("create", "files/s", fsm_total("create"), bare_rate("create")),
        Figure(
            "transactions",
            "transactions/s",
            fsm_extra("transactions", "rates", "transactions_per_s"),
            bare_rate("transactions"),
        ),
        Figure("delete", "files/s", fsm_total("delete"), bare_rate("delete")),
    ],
    [
        Phase("create", "create", fsm_ops("create"), bare_ops("create")),
        Phase("transactions", "transactions", fsm_counter("transactions", "transactions"), bare_ops("transactions")),
        Phase("delete", "delete", fsm_ops("delete"), bare_ops("delete")),
    ],
    beyond="per file operation: two clock reads and a latency histogram update",
)

# -- tree (fdtree) ----------------------------------------------------------------------------------


def tree_shape(mode, threads):
    """levels, dirs_per_level, files_per_dir: fdtree-quick's tree (1,885 directories), its files
    shared out so that the trees of all threads fit a 1 GiB ext4 image's inodes."""
    return size(mode, (3, 12, 24 // threads), (3, 12, 6 // threads), (2, 5, 5))


TREE_PHASES = ("mkdir", "create", "stat", "remove", "rmdir")

TREE = Case(
    "tree",
    "tree fdtree",
    "fdtree-quick",
    "tree",
    lambda mode, t, scratch: {
        "levels": tree_shape(mode, t)[0],
        "dirs_per_level": tree_shape(mode, t)[1],
        "files_per_dir": tree_shape(mode, t)[2],
        "file_blocks": 1,
        "threads": t,
    },
    lambda mode, t, d, scratch: [
        f"dir={d}",
        f"threads={t}",
        f"levels={tree_shape(mode, t)[0]}",
        f"dirs_per_level={tree_shape(mode, t)[1]}",
        f"files_per_dir={tree_shape(mode, t)[2]}",
        "file_blocks=1",
        "phases=" + ",".join(TREE_PHASES),
    ],
    [Figure(p, "ops/s", fsm_total(p), bare_rate(p)) for p in TREE_PHASES],
    [Phase(p, p, fsm_ops(p), bare_ops(p)) for p in TREE_PHASES],
    beyond="per directory or file: two clock reads and a latency histogram update",
)

# -- replay (dbench) --------------------------------------------------------------------------------


def replay_lines(mode):
    """Lines of client.txt replayed (once per client): its head (the whole file has 458,344)."""
    return size(mode, 200_000, 100_000, 5_000)


def replay_loadfile(mode: str, scratch: Path) -> Path:
    n = replay_lines(mode)
    if n is None:
        return DBENCH_LOADFILE
    head = scratch / f"client-head-{n}.txt"
    if not head.exists():
        with open(DBENCH_LOADFILE) as f, open(head, "w") as g:
            for _, line in zip(range(n), f):
                g.write(line)
    return head


REPLAY = Case(
    "replay",
    "replay dbench client.txt",
    "dbench-quick",
    "replay",
    lambda mode, t, scratch: {
        "loadfile": replay_loadfile(mode, scratch),
        "passes": 1,
        "duration_s": "none",
        "warmup_s": 0,
        "threads": t,
    },
    lambda mode, t, d, scratch: [f"dir={d}", f"threads={t}", "passes=1", f"loadfile={replay_loadfile(mode, scratch)}"],
    [Figure("run", "ops/s", fsm_total("run"), bare_rate("run"))],
    [Phase("run", "run", fsm_ops("run"), bare_ops("run"))],
    beyond="every name resolved below the job's directory: openat2(RESOLVE_BENEATH) for opens, and the parent "
    "directory opened (O_PATH) and closed around each call on a name in a subdirectory",
)

# -- bonnie -----------------------------------------------------------------------------------------

BONNIE_IO = ("putc_write", "block_write", "rewrite", "getc_read", "block_read")
BONNIE_FILES = ("seq_create", "seq_stat", "seq_del", "ran_create", "ran_stat", "ran_del")


def bonnie_sizes(mode):
    """size, char_io_size, seeks, files: bonnie++'s 16,384 files (-n 16) at full size, where a stat phase
    lasts about 20 ms; with 4,096 (6 ms) the medians stayed below the loop's by a fixed part of the phase."""
    return size(mode, (256 << 20, 32 << 20, 8000, 16384), (64 << 20, 8 << 20, 4000, 1024), (4 << 20, 1 << 20, 400, 100))


BONNIE = Case(
    "bonnie",
    "bonnie",
    "bonnie-quick",
    "bonnie",
    lambda mode, t, scratch: {
        "size": bonnie_sizes(mode)[0],
        "char_io_size": bonnie_sizes(mode)[1],
        "seeks": bonnie_sizes(mode)[2],
        "files": bonnie_sizes(mode)[3],
    },
    lambda mode, t, d, scratch: [
        f"dir={d}",
        f"size={bonnie_sizes(mode)[0]}",
        f"char_size={bonnie_sizes(mode)[1]}",
        f"seeks={bonnie_sizes(mode)[2]}",
        f"files={bonnie_sizes(mode)[3]}",
        "chunk=8192",
        "seek_procs=3",
        "fsync=1",
        "seed=42",
    ],
    [Figure(p, "MiB/s", per_mib(fsm_total(p, "bytes")), per_mib(bare_rate(p, "bytes"))) for p in BONNIE_IO]
    + [Figure("seeks", "seeks/s", fsm_extra("seeks", "seeks_per_s"), bare_rate("seeks"))]
    + [Figure(p, "files/s", fsm_extra(p, "files_per_s"), bare_rate(p)) for p in BONNIE_FILES],
    [Phase(p, p, fsm_counter(p, "blocks"), bare_ops(p)) for p in BONNIE_IO]
    + [Phase("seeks", "seeks", fsm_counter("seeks", "seeks"), bare_ops("seeks"))]
    + [Phase(p, p, fsm_counter(p, "files"), bare_ops(p)) for p in BONNIE_FILES],
    threads=(1,),
    note="one stream (bonnie's data file; its seeks run seek_procs=3 seekers)",
    beyond="per chunk, seek or file: two clock reads and a latency histogram update; putc and getc through "
    "the engine's own buffer (an out-of-line call per byte) where the loop uses glibc's",
)

#: The small-file tests again with `latency = false` (no clock read per file): what the per-file timing
#: costs beside a stat of a cached file, measured rather than guessed. The data-file phases are left out
#: (size 0): their chunks of 8 KiB make the timing's cost small, as the row above shows.
BONNIE_UNTIMED = Case(
    "bonnie",
    "bonnie small files, latency = false",
    "bonnie-quick",
    "bonnie",
    lambda mode, t, scratch: {"size": 0, "files": bonnie_sizes(mode)[3], "latency": "false"},
    lambda mode, t, d, scratch: [
        f"dir={d}",
        "size=0",
        f"files={bonnie_sizes(mode)[3]}",
        "fsync=1",
        "seed=42",
        "phases=" + ",".join(BONNIE_FILES),
    ],
    [Figure(p, "files/s", fsm_extra(p, "files_per_s"), bare_rate(p)) for p in BONNIE_FILES],
    [Phase(p, p, fsm_counter(p, "files"), bare_ops(p)) for p in BONNIE_FILES],
    threads=(1,),
    note="one stream",
    beyond="nothing per file (latency = false: each phase timed whole)",
)

# -- iozone -----------------------------------------------------------------------------------------

IOZONE_COLUMNS = (
    "write",
    "rewrite",
    "read",
    "reread",
    "random_read",
    "random_write",
    "bkwd_read",
    "record_rewrite",
    "stride_read",
    "fwrite",
    "frewrite",
    "fread",
    "freread",
    "mix",
)


def iozone_cell(mode):
    """file size, record size: one cell, records of 4 KiB (where the calls cost most)."""
    return size(mode, (256 << 20, 4096), (64 << 20, 4096), (4 << 20, 4096))


def _iozone_fsm(col):
    return lambda doc: doc["phases"]["grid"]["extra"]["cells"][0]["results"][col]["KB_per_s"] / 1024


IOZONE = Case(
    "iozone",
    "iozone one cell, 4K records",
    "iozone-quick",
    "iozone",
    lambda mode, t, scratch: {
        "file_sizes": f"[{iozone_cell(mode)[0]}]",
        "record_sizes": f"[{iozone_cell(mode)[1]}]",
        "crossover": "false",
        "tests": "[0,1,2,3,4,5,6,7,8]",
    },
    lambda mode, t, d, scratch: [
        f"dir={d}",
        f"file_size={iozone_cell(mode)[0]}",
        f"record={iozone_cell(mode)[1]}",
        "tests=0,1,2,3,4,5,6,7,8",
        "seed=42",
    ],
    [Figure(c, "MiB/s", _iozone_fsm(c), per_mib(bare_rate(c, "bytes"))) for c in IOZONE_COLUMNS],
    [Phase("grid", "grid", lambda doc: doc["phases"]["grid"]["total"]["ops"], bare_ops("grid"))],
    threads=(1,),
    note="one stream (iozone's grid; its mix test runs 2 threads)",
    beyond="nothing per record (iozone times passes, not records, unless latency=true)",
)

# -- crash ------------------------------------------------------------------------------------------

CRASH = Case(
    "crash",
    "crash fsync",
    "crash-fsync",
    "crash",
    lambda mode, t, scratch: {"runtime_s": size(mode, 5, 3, 0.5), "threads": t, "seed": 42},
    lambda mode, t, d, scratch: [f"dir={d}", f"threads={t}", f"seconds={size(mode, 5, 3, 0.5)}", "seed=42"],
    [Figure("write", "writes/s", fsm_total("write"), bare_rate("write"))],
    [Phase("write", "write", fsm_ops("write"), bare_ops("write"))],
    timed=True,
    beyond="per write: every 4 KiB block filled with its verified header and checksum (crc32c, from tables "
    "made before the phase), and a ledger line per sync; two clock reads and a histogram update per write and "
    "per sync",
)

# -- mix (AIM7) ------------------------------------------------------------------------------------


def mix_jobs(mode):
    """Jobs per task (re-aim -j), a multiple of the 20 disk jobs."""
    return size(mode, 200, 40, 20)


def _mix_fsm(doc):
    return doc["phases"]["subruns"]["extra"]["subruns"][0]["jpm"]


MIX = Case(
    "mix",
    "mix aim7 disk tasks",
    "aim7-disk",
    "mix",
    lambda mode, t, scratch: {"tasks": f"[{t}]", "jobs_per_task": mix_jobs(mode), "sync": "none", "seed": 42},
    lambda mode, t, d, scratch: [f"dir={d}", f"tasks={t}", f"jobs_per_task={mix_jobs(mode)}", "sync=none", "seed=42"],
    [Figure("subrun", "jobs/min", _mix_fsm, lambda res: bare_rate("subruns")(res) * 60)],
    [Phase("subruns", "subruns", fsm_ops("subruns"), bare_ops("subruns"))],
    note="",
    beyond="per job: two clock reads and its counters; the tasks are the family's task program, started with "
    "fork and exec before the subrun",
)

# -- macro (cp, tar, rm) ----------------------------------------------------------------------------


def macro_sizes(mode):
    """cp_size, tree_files, tree_dirs."""
    return size(mode, (256 << 20, 5000, 275), (64 << 20, 2000, 110), (16 << 20, 500, 40))


def macro_inputs(mode: str, scratch: Path) -> tuple:
    """The file cp copies and a manifest of the archive tar extracts (its members in archive
    order: `d MODE PATH` or `f MODE SIZE PATH`), from the source cache a primed fsmeter run made."""
    import tarfile

    cp_size, files, dirs = macro_sizes(mode)
    cache = scratch / "macro-cache"
    src = next(cache.glob(f"cpfile-s42-{cp_size}.bin"))
    manifest = scratch / f"macro-manifest-{files}-{dirs}.txt"
    if not manifest.exists():
        trees = [p for p in cache.glob("tree-*/manifest.json") if f'"files": {files}' in p.read_text()]
        with tarfile.open(trees[0].parent / "tree.tar") as t, open(manifest, "w") as f:
            for m in t:
                if m.isdir():
                    f.write(f"d {m.mode:o} {m.name}\n")
                elif m.isfile():
                    f.write(f"f {m.mode:o} {m.size} {m.name}\n")
    return src, manifest


def _macro_rate(phase, what):
    def get(doc):
        x = doc["phases"][phase]["extra"]
        return x[what] / x["real_s"] / (1 << 20 if what == "bytes" else 1)

    return get


MACRO = Case(
    "macro",
    "macro cp, tar xjf, rm -rf",
    "macro-quick",
    "macro",
    lambda mode, t, scratch: {
        "source_cache": scratch / "macro-cache",
        "cp_size": macro_sizes(mode)[0],
        "tree_files": macro_sizes(mode)[1],
        "tree_dirs": macro_sizes(mode)[2],
    },
    lambda mode, t, d, scratch: [
        f"dir={d}",
        f"cp_src={macro_inputs(mode, scratch)[0]}",
        f"manifest={macro_inputs(mode, scratch)[1]}",
    ],
    [
        Figure("cp", "MiB/s", _macro_rate("cp", "bytes"), per_mib(bare_rate("cp", "bytes"))),
        Figure("untar", "files/s", _macro_rate("untar", "files"), bare_rate("untar")),
        Figure("rm", "files/s", _macro_rate("rm", "files"), bare_rate("rm")),
    ],
    [
        Phase("cp", "cp", lambda doc: 1, bare_ops("cp")),
        Phase("untar", "untar", fsm_counter("untar", "files"), bare_ops("untar")),
        Phase("rm", "rm", fsm_counter("rm", "files"), bare_ops("rm")),
    ],
    threads=(1,),
    prime=True,
    note="one tool at a time",
    beyond="the tools themselves: a program start per tool and per sync (fork, exec, dynamic loading), bzip2's "
    "decompression inside tar xjf, cp's and tar's own work",
)

CASES = [*ACCESS, FILESET, TREE, REPLAY, BONNIE, BONNIE_UNTIMED, IOZONE, MIX, MACRO, CRASH]
