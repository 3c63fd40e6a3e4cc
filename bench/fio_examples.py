"""fio's own example job files under `fsmeter run`, scaled down, compared with fio job by job.

    python bench/fio_examples.py [FIO_CHECKOUT] [--dir examples|t/jobs] [--only NAME ...] [--no-fio]
                                 [--fio PATH ...] [--blockers] [--json OUT] [--timeout S] [--fio-timeout S]

FIO_CHECKOUT is a clone of axboe/fio, bare or not (default: $FIO_GIT, else bench/peers/fio.git); its
`examples/*.fio` (or, with --dir t/jobs, the job files of fio's own regression tests) are read from it, never
copied into this project. Each file is scaled down before it runs:
sizes above 64 MiB become 64m (in a file with rate= or rate_iops=, at most what the slowest rate moves in 2 s,
and at least 64 KiB: a 64 MiB job at 50 IOPS would run for minutes), runtime at most 2 s, ramp_time and
startdelay at most 1 s, loops at most 2 (fsx.fio asks for 500,000), nrfiles at most 4096, ${FIO_DIR} is the
scratch folder, and every absolute path (a device, a mount point) moves into a scratch folder (a tmpfs as
root), where each named file is created at 64 MiB first, as a device of that size would be. A file a tmpfs cannot
run goes, under both programs, on a filesystem that can do its work, made for that file on a 1 GiB loop image in
the scratch folder by fsmeter's own provisioning and torn down after it (REAL_FS): ioengine=e4defrag on ext4
(EXT4_IOC_MOVE_EXT), atomic=1 on xfs (an atomic write unit); not root, or no loop device: the tmpfs, and the
file's line says so. A file striped across
its clones with offset_increment (cross-stripe-verify.fio: 30 clones 124g apart) keeps its shape: the increment
becomes the stripe 30 clones fit in 64 MiB (2 MiB) and its sizes shrink in the same proportion (io_size=120g:
1920 KiB).

Then the file runs under `fsmeter run`, and under fio in a scratch folder of its own: every file, also those
fsmeter refuses, so the summary can say which refusals are fsmeter's gaps and which files fio itself cannot
run here (it lacks the engine, fails, hangs). --fio (repeatable) or $FIO (colon-separated) names the fios: a
file whose engine one lacks runs under the next. cpp_null.fio's plugin engine (fio's null engine built as C++)
runs as fio's built-in null engine, and a fio older than 3.42 runs io_submit_mode=offload inline (it hangs).

Per file the report says: ran, refused (the error line), fails (the run stopped at an error of the filesystem's,
told in one line, exit 1), or crashed (any other exit, a traceback, a timeout);
fio's outcome; and for a file both ran, whether the bytes and I/O counts of each job (or, with
group_reporting, each reporting group, as fio merges it) and direction are fio's. Read/write mixes (random or
sequential, both draw each request's direction):
the total within 2%, each direction within 5% of the total or three binomial standard deviations; several
request sizes: the count within 2% or three standard deviations of two renewal counts (count_slack). A file
of time-based jobs is "time-based: compared rates not work", with the bandwidth ratio per job. A job that fio's
random map ends where its draws say (per-direction block sizes: fsmeter's random_map_block) is one draw per run:
both sides run again over --seeds seeds (randseed=1..N, fio with randrepeat=0) and its mean bytes and I/Os per
direction are compared ("random-map stop: fsmeter mean X (sd), fio mean Y (sd)", alike within three standard
errors of the difference); such a file that matches is "same work (random-map stop over seeds)".

--blockers also counts what stops the refused files: it removes each refused line in turn (a job header the
concurrency refusal names counts as "concurrent jobs") until the file plans, and counts each option once per
file, as the totals of a to-do list.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCALE_BYTES = 64 << 20
MAX_FILES = 4096
SIZE_OPTS = ("size", "filesize", "io_size", "io_limit", "offset", "offset_increment")
ENV = {"FIO_BS": "4k", "FIO_IODEPTH": "1", "FIO_RW": "randread"}
#: fio's file and directory engines -> the operation fsmeter counts for each of their I/Os.
NAME_ENGINES = {
    "filecreate": "create",
    "filestat": "stat",
    "filedelete": "delete",
    "dircreate": "create",
    "dirstat": "stat",
    "dirdelete": "delete",
}


#: Examples whose usage comment names the target on fio's command line (--filename=DEVICE) rather than in the
#: file: the bench writes that filename into [global], and scale() then puts a 64 MiB sparse file in its place.
CMDLINE_TARGET = {"sprandom.fio": "/dev/nvme0n1"}


def with_target(name: str, text: str) -> str:
    """The example with its command-line target (CMDLINE_TARGET) as filename= in [global]."""
    target = CMDLINE_TARGET.get(name)
    if target is None or re.search(r"^\s*filename\s*=", text, re.M):
        return text
    return re.sub(r"^\[global\]\s*$", f"[global]\nfilename={target}", text, count=1, flags=re.M)


def examples(checkout: Path, folder: str = "examples") -> dict:
    """name -> text of FOLDER/*.fio (examples, or t/jobs), from a bare clone (git show) or a work tree."""
    if (checkout / folder).is_dir():
        return {p.name: p.read_text(errors="replace") for p in sorted((checkout / folder).glob("*.fio"))}
    git = ["git", "--git-dir", str(checkout)]
    names = subprocess.run(
        [*git, "ls-tree", "--name-only", "HEAD", f"{folder.rstrip('/')}/"], capture_output=True, text=True, check=True
    ).stdout.split()
    return {
        Path(n).name: subprocess.run(
            [*git, "show", f"HEAD:{n}"], capture_output=True, text=True, errors="replace", check=True
        ).stdout
        for n in names
        if n.endswith(".fio")
    }


def _bytes(v: str):
    from fsmeter.interop.fio_jobfile import parse_fio_size

    try:
        return parse_fio_size(v)
    except ValueError:
        return None


def _secs(v: str):
    from fsmeter.interop.fio_jobfile import parse_fio_time_s

    try:
        return parse_fio_time_s(v)
    except ValueError:
        return None


def _moved(path: str, root: Path) -> str:
    """An absolute path of the example -> its place in the scratch folder (one flat name per path)."""
    return str(root / ("x" + path.replace("/", "_")))


RATED_S = 2


def _rate_cap(text: str) -> int:
    """The most bytes a job of a rated file may move: what its slowest rate (rate=, or rate_iops= times the file's
    first bs, default 4 KiB) moves in RATED_S seconds, at least 64 KiB; SCALE_BYTES in a file without a rate."""
    bs, rates = 4096, []
    for raw in text.splitlines():
        key, sep, value = raw.strip().partition("=")
        value = value.split("#")[0].split(";")[0].strip()
        first = next((p for p in value.split(",") if p.strip()), "")
        if not sep or not first:
            continue
        if key.strip() in ("bs", "blocksize") and _bytes(first) and bs == 4096:
            bs = _bytes(first)
        elif key.strip() == "rate" and _bytes(first):
            rates.append(_bytes(first))
        elif key.strip() == "rate_iops" and first.strip().isdigit() and int(first):
            rates.append(("iops", int(first)))
    if not rates:
        return SCALE_BYTES
    per_s = min(r[1] * bs if isinstance(r, tuple) else r for r in rates)
    return min(SCALE_BYTES, max(64 << 10, per_s * RATED_S // (64 << 10) * (64 << 10)))


def _values(text: str, key: str) -> list:
    """The values of every `key=` line of a job file (comments cut off)."""
    out = []
    for raw in text.splitlines():
        k, sep, v = raw.strip().partition("=")
        if sep and k.strip() == key:
            out.append(v.split("#")[0].split(";")[0].strip())
    return out


def _stripe_ratio(text: str):
    """A file whose clones each start offset_increment further on (one file striped across numjobs clones) and
    whose stripes do not fit in SCALE_BYTES: (the stripe that fits, the file's stripe). Its offset_increment
    becomes that stripe (a multiple of 1 MiB, or of 64 KiB when smaller), and its sizes shrink in the same
    proportion, so that the clones' stripes keep their shape in the 64 MiB file. None: not such a file."""
    incs = [b for b in map(_bytes, _values(text, "offset_increment")) if b]
    jobs = [int(v) for v in _values(text, "numjobs") if v.isdigit()]
    if not incs or not jobs or max(jobs) < 2:
        return None
    inc, n = max(incs), max(jobs)
    offset = max([b for b in map(_bytes, _values(text, "offset")) if b is not None] or [0])
    if offset + n * inc <= SCALE_BYTES:
        return None
    stripe = SCALE_BYTES // n
    grain = 1 << 20 if stripe >= 1 << 20 else 64 << 10
    return max(grain, stripe // grain * grain), inc


def scale(text: str, root: Path) -> tuple:
    """(scaled text, files to create at 64 MiB, directories to create)."""
    out, files, dirs = [], set(), set()
    cap = _rate_cap(text)
    stripes = _stripe_ratio(text)
    for raw in text.splitlines():
        line = raw.strip()
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.split("#")[0].split(";")[0].strip() if sep else value
        if not sep or line[:1] in "#;[":
            out.append(raw)
            continue
        if key in SIZE_OPTS and stripes is not None and _bytes(value) is not None and key != "offset":
            b = _bytes(value)  # a striped file (cross-stripe-verify.fio): offset_increment and sizes in proportion
            value = str(
                stripes[0]
                if key == "offset_increment"
                else max(64 << 10, b * stripes[0] // stripes[1] // (64 << 10) * (64 << 10))
            )
        elif key in SIZE_OPTS:
            b = _bytes(value)
            limit = cap if key not in ("offset", "offset_increment") else SCALE_BYTES
            if b is not None and b > limit:
                value = str(limit)
        elif key in ("runtime", "timeout"):
            s = _secs(value)
            value = "2s" if s is None or s > 2 else value
        elif key == "loops" and value.isdigit() and int(value) > 2:
            value = "2"
        elif key in ("nrfiles", "nr_files") and value.isdigit() and int(value) > MAX_FILES:
            value = str(MAX_FILES)  # filecreate-ioengine.fio: 16 jobs of 31,250 files, minutes on a busy machine
        elif key in ("ramp_time", "startdelay"):
            s = _secs(value)
            value = "1s" if s is None or s > 1 else value
        elif key in ("filename", "libblkio_path"):  # libblkio's file (its io_uring driver's target)
            parts = re.split(r"(?<!\\):", value)
            new = []
            for p in parts:
                if p.startswith("/"):
                    p = _moved(p.replace("\\:", "_"), root)
                    files.add(p)
                new.append(p)
            value = ":".join(new)
        elif key == "directory":
            new = []
            for p in re.split(r"(?<!\\):", value):
                if p.startswith("/"):
                    p = _moved(p, root)
                    dirs.add(p)
                elif p and ".." not in p.split("/"):
                    dirs.add(str(root / p))  # fio wants a relative directory to exist too (fsmeter makes it)
                new.append(p)
            value = ":".join(new)
        elif key == "filename_format" and value.startswith("/"):
            value = _moved(value, root)
        out.append(f"{key}={value}")
    return "\n".join(out) + "\n", files, dirs


def prepare_root(root: Path, files: set, dirs: set) -> None:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for d in dirs:
        Path(d).mkdir(parents=True, exist_ok=True)
    for f in files:
        with open(f, "wb") as fh:  # sparse, as an unwritten device of that size
            fh.truncate(SCALE_BYTES)


#: What a tmpfs cannot do and the filesystem that can: a file with such a line runs, under fsmeter and under fio,
#: on that filesystem made on a loop image in the scratch folder (root), else on the tmpfs, as the report says.
REAL_FS = (
    (re.compile(r"(?m)^\s*ioengine\s*=\s*e4defrag\s*$"), "ext4", "ioengine=e4defrag needs ext4's EXT4_IOC_MOVE_EXT"),
    (
        re.compile(r"(?m)^\s*atomic\s*=\s*(1|true|on)\s*$"),
        "xfs",
        "atomic=1 needs an atomic write unit (statx STATX_WRITE_ATOMIC), which xfs has and tmpfs has not",
    ),
)
REAL_FS_BYTES = 1 << 30


def real_fs(text: str) -> tuple | None:
    """(filesystem, why) for a file a tmpfs cannot run, else None."""
    return next(((fs, why) for pattern, fs, why in REAL_FS if pattern.search(text)), None)


@contextlib.contextmanager
def file_home(text: str, scratch: Path, res: dict) -> Iterator[Path]:
    """The folder a file's runs (fsmeter's and fio's) go under: the scratch tmpfs, or for a file that needs a
    real filesystem (REAL_FS) a fresh one on a loop image of REAL_FS_BYTES in the scratch folder, made, mounted
    and torn down (also on failure or an interrupt) by fsmeter's own provisioning. Not root, or no loop
    device: the tmpfs, and res["where"] says so."""
    need = real_fs(text)
    if need is None:
        yield scratch
        return
    fs, why = need
    if os.geteuid() != 0:
        res["where"] = f"the scratch folder (no tmpfs either): {why}, and a {fs} loop image needs root"
        yield scratch
        return
    from fsmeter.provision import FsConfig, Provisioner, TargetSpec
    from fsmeter.provision.errors import ProvisionError

    with Provisioner(scratch=str(scratch / "provision")) as prov:
        try:
            mnt = prov.create(TargetSpec(kind="loop", size_bytes=REAL_FS_BYTES), FsConfig(name=fs))
        except ProvisionError as exc:
            res["where"] = f"tmpfs: {why}, and no {fs} loop image here ({exc.message})"
            yield scratch
            return
        res["where"] = f"{fs} on a {REAL_FS_BYTES >> 20} MiB loop image: {why}"
        yield Path(mnt.path)


def fsmeter_cmd() -> list:
    venv = ROOT / ".venv" / "bin" / "fsmeter"
    return [str(venv)] if venv.exists() else [sys.executable, "-m", "fsmeter"]


def _kill_escaped(marker: str) -> None:
    """Kill what a timed-out run left outside its session: fio's job processes may start sessions of their own
    (fio 3.42's vsock jobs did), so the group kill misses them and they keep the output pipes open. They are
    found by the job file in their command line, a path inside this run's own scratch folder."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            args = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in args:
            try:
                os.kill(int(d.name), 9)
            except (ProcessLookupError, PermissionError):
                pass


def _run(cmd: list, timeout: int, marker: str, **kw) -> subprocess.CompletedProcess:
    """subprocess.run in a session of its own: on a timeout the whole process group is killed, so the
    job processes fio forks (which outlive their parent when it alone is killed) do not stay behind,
    holding the scratch mount busy; then those that left the group (`marker`: the job file they run)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, 9)
        except ProcessLookupError:
            pass
        _kill_escaped(marker)
        try:
            p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            for pipe in (p.stdout, p.stderr):
                pipe.close()
            p.wait()
        raise
    except BaseException:
        # The bench itself was stopped (Ctrl-C, SIGTERM): the run goes too, before the scratch filesystems it works
        # on are unmounted (a run still in them keeps them busy).
        try:
            os.killpg(p.pid, 9)
        except ProcessLookupError:
            pass
        _kill_escaped(marker)
        p.wait()
        raise
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def run_fsmeter(job: Path, root: Path, out: Path, timeout: int) -> dict:
    text = job.read_text()
    absolute = re.search(r"^(directory|filename|libblkio_path)=/", text, re.M) is not None
    cmd = [*fsmeter_cmd(), "run", str(job), "-q", "--json", str(out), "--cache", "keep"]
    if not absolute:
        cmd += ["--dir", str(root)]
    if re.search(r"(?m)^\s*ioengine\s*=\s*exec\s*$", text):
        cmd.append("--allow-exec")  # fio's own examples: their programs (turbostat, sleep) are trusted
    try:
        r = _run(cmd, timeout, str(job), cwd=root, env={**os.environ, **ENV, "FIO_DIR": str(root), "COLUMNS": "200"})
    except subprocess.TimeoutExpired:
        return {"status": "crashed", "why": f"no answer in {timeout} s"}
    err = r.stderr.strip()
    if r.returncode == 0:
        return {"status": "ran", "doc": json.loads(out.read_text())}
    if r.returncode == 2 and err.startswith("fsmeter: error:") and "\n" not in err:
        return {"status": "refused", "why": err[len("fsmeter: error: ") :].replace(str(job), job.name)}
    last = err.splitlines()[-1] if err else ""
    if r.returncode == 1 and last.startswith("fsmeter: error:"):
        # The run started and stopped at an error of the filesystem's (ENOSPC, EBUSY ...), told in one line: it
        # fails as fio fails on such an error, not a crash.
        return {"status": "fails", "why": last[len("fsmeter: error: ") :].replace(str(job), job.name)}
    return {"status": "crashed", "why": f"exit {r.returncode}: {err[-400:]}"}


FIO_FIXED_OFFLOAD = (3, 42)  # fio's io_submit_mode=offload hangs at start-up before 3.42 (a race in its workqueue)


def fio_binaries(given: list | None) -> list:
    """The fios to compare with, in order: --fio (repeatable), else $FIO (colon-separated), else fio on PATH.
    A file whose engine one fio lacks runs under the next (Debian's fio has no dircreate; a fio built from
    source without libaio-dev has no libaio)."""
    names = given or [x for x in os.environ.get("FIO", "").split(":") if x] or [shutil.which("fio") or "fio"]
    return [shutil.which(n) or n for n in names]


def fio_version(fio: str) -> tuple:
    """(3, 33) from `fio --version` ("fio-3.33"), () when it does not answer."""
    try:
        out = subprocess.run([fio, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    m = re.search(r"fio-(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else ()


def fio_copy(scaled: str, version: tuple) -> tuple:
    """(the job file fio runs, notes on what differs from fsmeter's copy). cpp_null is fio's null engine built
    as a C++ plugin, which a stock fio cannot load: fio runs the same engine built in (ioengine=null), as fsmeter
    does. A fio older than 3.42 hangs at the start of a job with io_submit_mode=offload (its submit workers can
    miss their start signal): that fio runs the job inline, the same I/Os submitted by the job itself."""
    notes = []
    text = re.sub(r"(?m)^ioengine=cpp_null\s*$", "ioengine=null", scaled)
    if version and version < FIO_FIXED_OFFLOAD and re.search(r"(?m)^io_submit_mode=offload\s*$", text):
        text = re.sub(r"(?m)^io_submit_mode=offload\s*$", "io_submit_mode=inline", text)
        notes.append(
            f"fio {version[0]}.{version[1]} hangs with io_submit_mode=offload (fixed in fio 3.42): fio ran it inline"
        )
    return text, notes


#: Where a scaled file would send packets beyond this machine (a multicast group): fio is not run on it.
REMOTE = re.compile(r"(?m)^hostname=((22[4-9]|23\d)\.\S*)\s*$")


def errno_text(n) -> str:
    """What an errno in fio's JSON means; fio also reports values that are no errno (large unsigned ones)."""
    try:
        return os.strerror(int(n))
    except (ValueError, OverflowError, TypeError):
        return "not an errno"


def fio_error(stderr: str, doc: dict | None) -> str:
    """fio's own error, in one line: the first failed job's errno (a warning fio prints, such as "time_based
    requires a runtime/timeout setting", is not why it failed), then its last error lines."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip()]
    bad = [x for x in lines if x.startswith("fio:") or "error" in x.lower() or "fail" in x.lower()]
    failed = next(
        (
            f"job {j.get('jobname')}: error {j['error']} ({errno_text(j['error'])})"
            for j in (doc or {}).get("jobs", [])
            if j.get("error")
        ),
        None,
    )
    if failed or bad:
        return "; ".join(dict.fromkeys(([failed] if failed else []) + bad[-3:]))[:300]
    return lines[-1][:300] if lines else "no output"


def fio_outcome(status: str, why: str) -> str:
    """What fio does with the file here: runs, lacks the engine, hangs, fails, not run."""
    if status == "ran":
        return "runs"
    m = re.search(r"engine (\S+) not loadable", why)
    if m:
        return f"lacks the engine {m.group(1)}"
    return status


def read_fio_json(path: Path) -> dict | None:
    try:
        text = _without_error_log(path.read_text())
        return json.loads(text[text.find("{") :])  # fio may log a warning ahead of its JSON in the same file
    except (OSError, ValueError):
        return None


def fio_entries(doc: dict) -> list:
    """fio's JSON -> one entry per job name and reporting group, in fio's order: clones of a job without
    group_reporting (entries of the same name and groupid) are added up; with group_reporting fio has already
    merged a reporting group into one entry, named after its first job."""
    out: list = []
    index: dict = {}
    for j in doc.get("jobs", []):
        key = (j["jobname"], j.get("groupid", 0))
        if key not in index:
            index[key] = len(out)
            out.append(
                {
                    "name": key[0],
                    "groupid": key[1],
                    "dirs": {d: [0, 0] for d in ("read", "write", "trim")},
                    "calls": 0,
                    "bw": 0.0,
                    "error": 0,
                }
            )
        e = out[index[key]]
        for d in ("read", "write", "trim"):
            r = j.get(d) or {}
            e["dirs"][d][0] += r.get("io_bytes", 0)
            e["dirs"][d][1] += r.get("total_ios", 0)
            # The file and directory engines time their create/stat/delete as the I/O's latency: one sample each.
            e["calls"] += (r.get("clat_ns") or {}).get("N") or 0
            e["bw"] += r.get("bw_bytes", 0) or 0
        e["error"] = e["error"] or j.get("error", 0)
        if j.get("latency_target"):
            e["latency_depth"] = j.get("latency_depth")  # fio prints it for every job; it means something with a target
    return out


def run_fio(fio: str, job: Path, root: Path, out: Path, timeout: int) -> dict:
    try:
        r = _run(
            [fio, "--output-format=json", f"--output={out}", str(job)],
            timeout,
            str(job),
            cwd=root,
            env={**os.environ, **ENV, "FIO_DIR": str(root)},
        )
    except subprocess.TimeoutExpired:
        return {"status": "hangs", "why": f"no answer in {timeout} s"}
    doc = read_fio_json(out)
    if doc is None:
        return {"status": "fails", "why": f"exit {r.returncode}: {fio_error(r.stderr, None)}"}
    return {
        "status": "ran" if r.returncode == 0 else "fails",
        "entries": fio_entries(doc),
        "why": f"exit {r.returncode}: {fio_error(r.stderr, doc)}" if r.returncode else "",
    }


def size_cv(entries: list) -> float:
    """The coefficient of variation (sd / mean) of one request's size, drawn from the mix's weighted entries."""
    w = sum(e["weight"] for e in entries) or 1.0
    mean = sum(e["weight"] * e["size"] for e in entries) / w
    var = sum(e["weight"] * (e["size"] - mean) ** 2 for e in entries) / w
    return math.sqrt(var) / mean if mean else 0.0


def count_slack(n: int, cv: float) -> float:
    """How far two runs' I/O counts for the same bytes may differ when each request's size is drawn (bssplit).
    The number of requests that fill B bytes is a renewal count: for large n its mean is B/mu and its standard
    deviation n * cv / sqrt(n) (the renewal central limit theorem, Feller vol. II, XI.5); the difference of two
    independent runs has sqrt(2) times that. Allowed: three of those, or 2% of n, whichever is larger."""
    return max(0.02 * n, 3 * math.sqrt(2) * cv * math.sqrt(max(n, 0)))


def _units(doc: dict, fio: dict, groups: dict) -> list:
    """(label, fsmeter job names, fio entry or None) per compared unit: a job, or with group_reporting the
    reporting group fio merged into one entry (its fsmeter jobs added up)."""
    entries = fio.get("entries", [])
    by_name = {}
    for e in entries:
        by_name.setdefault(e["name"], e)
    units, done = [], set()
    for name in doc.get("jobs", {}):
        if name in done:
            continue
        rg, merged = groups.get(name, (None, False))
        members = (
            [n for n in doc["jobs"] if groups.get(n, (None, False))[0] == rg] if merged and rg is not None else [name]
        )
        done.update(members)
        if len(members) > 1:
            e = next((x for x in entries if x["groupid"] == rg), None)
            units.append((f"{name} (group_reporting: {', '.join(members)})", members, e))
        else:
            units.append((name, members, by_name.get(name)))
    # A job fio names otherwise (fio takes the section's name over name= in [global]): matched by position
    # when fio has one entry per unit and that entry's name is nobody else's.
    if len(units) == len(entries):
        names = {n for _, ms, _ in units for n in ms}
        for i, (label, members, e) in enumerate(units):
            if e is None and entries[i]["name"] not in names:
                units[i] = (f"{label} (fio names it {entries[i]['name']})", members, entries[i])
    return units


def _job_rep(doc: dict, name: str) -> dict:
    """A job's run report: its group phase's jobs[NAME], or its own phase."""
    info = doc["jobs"][name]
    phase = doc.get("phases", {}).get(f"{info.get('phase') or name}:run", {})
    return (phase.get("jobs") or {}).get(name) or phase


def _job_ops(doc: dict, name: str) -> dict:
    """A job's `ops`: under its group phase's jobs[NAME], or its own phase."""
    return _job_rep(doc, name).get("ops", {})


def _job_rate(doc: dict, name: str) -> float | None:
    """fsmeter's bytes per second for a job: its bytes over its own measured time."""
    info = doc["jobs"][name]
    phase = doc.get("phases", {}).get(f"{info.get('phase') or name}:run", {})
    jr = (phase.get("jobs") or {}).get(name) or phase
    el = jr.get("elapsed_s") or 0
    return (jr.get("total") or {}).get("bytes", 0) / el if el else None


def _latency_target(doc: dict, members: list, want: dict, params: list) -> tuple | None:
    """A job with a latency target (fio's latency_target): (depths agree, line, note) when both reset their statistics
    for a final window (then each reports that window only, and its bytes are not the job's work: the depth found is
    compared instead); (depths agree, "", note) when the job's size ended the search first (its work is compared as
    any job's, the note gives the depths). None: no latency target."""
    # A latency-target job runs alone in its phase: the phase's own report carries the search.
    phases = [doc.get("phases", {}).get(f"{doc['jobs'][n].get('phase') or n}:run", {}) for n in members]
    lts = [(p.get("extra") or {}).get("latency_target") for p in phases]
    if not any(lts):
        return None
    depth, fd = lts[0]["depth"], want.get("latency_depth")
    same = depth == fd
    fio_bytes = sum(v[0] for v in want["dirs"].values())
    size = sum(p.get("total_bytes") or 0 for p in params)
    if lts[0].get("stats_reset") or fio_bytes < size:
        return (
            same,
            (
                f"latency target: depth {'same' if same else 'DIFFERENT'} fsmeter {depth} fio {fd}; the "
                "statistics were reset for a final window at that depth, so its bytes are not the job's work"
            ),
            "",
        )
    return same, "", f" (latency_depth fsmeter {depth} fio {fd})"


def compare(doc: dict, fio: dict, groups: dict | None = None) -> tuple:
    """(verdict, details) of fsmeter's work against fio's, per job (or per group_reporting group) and direction.
    `groups`: job name -> (fio's groupid, whether fio merges that group: group_reporting)."""
    out, ok, compared, timed = [], True, 0, 0
    for label, members, want in _units(doc, fio, groups or {}):
        params = [((doc["jobs"][n].get("job") or {}).get("workload") or {}) for n in members]
        if any(p.get("total_bytes") is None for p in params):
            timed += 1
            rate = sum(_job_rate(doc, n) or 0 for n in members)
            if want is not None and want["bw"] > 0 and rate:
                out.append(
                    f"{label}: time-based, fsmeter/fio bandwidth {rate / want['bw']:.2f} "
                    f"({rate / 2**20:.1f} vs {want['bw'] / 2**20:.1f} MiB/s)"
                )
            else:
                out.append(f"{label}: time-based")
            continue
        if want is None:
            out.append(f"{label}: not in fio's output")
            ok = False
            continue
        ops = [_job_ops(doc, n) for n in members]
        engine = params[0].get("fio_engine")
        compared += 1
        lat = _latency_target(doc, members, want, params)
        if lat is not None:
            good, line, _ = lat
            ok &= good
            if line:
                out.append(f"{label}: {line}")
                continue
        if engine in NAME_ENGINES:
            # fio's file and directory engines: one create, stat or removal per name, each timed (a latency sample);
            # fsmeter counts them as its create, stat and delete operations.
            kind = NAME_ENGINES[engine]
            n, fn = sum(o.get(kind, {}).get("count", 0) for o in ops), want["calls"]
            ok &= n == fn
            out.append(f"{label}: {'same' if n == fn else 'DIFFERENT'} fsmeter {n} {kind} fio {fn}")
            continue
        dirs = ("read", "write") + (("trim",) if any(o.get("trim") for o in ops) or want["dirs"]["trim"][1] else ())
        got = {d: [sum(o.get(d, {}).get(k, 0) for o in ops) for k in ("bytes", "count")] for d in dirs}
        for d in dirs:  # fio counts failed requests (continue_on_error, a fill's ENOSPC) in total_ios
            got[d][1] += sum(_failed_ios(_job_rep(doc, n), d) for n in members)
        fw = {d: want["dirs"][d] for d in dirs}
        entries = [e for p in params for e in p.get("entries", [])]
        # A mix draws each request's direction whether its offsets are random or sequential (fio's rw=rw too).
        mix = sum(1 for d in dirs if got[d][1]) > 1 and any(0 < e.get("read_pct", 0) < 100 for e in entries)
        sized = len({e["size"] for e in entries}) > 1
        if mix or sized:
            tot = [sum(got[d][i] for d in dirs) for i in (0, 1)]
            tw = [sum(fw[d][i] for d in dirs) for i in (0, 1)]
            # Each request's direction is a draw (fsmeter) or a run of draws (fio): the split of n requests with
            # read share p varies by sqrt(n p (1 - p)) on each side; allowed: 5% of n or three of those,
            # whichever is larger (a file with 128 I/Os may differ by 17, one with 100,000 by 5,000).
            w = sum(e["weight"] for e in entries) or 1e-9
            p = sum(e["weight"] * e["read_pct"] for e in entries) / w / 100
            slack = max(0.05 * tw[1], 3 * math.sqrt(tw[1] * p * (1 - p)))
            good = (
                abs(tot[0] - tw[0]) <= 0.02 * max(tw[0], 1)
                and abs(tot[1] - tw[1]) <= count_slack(tw[1], size_cv(entries) if sized else 0.0)
                and (not mix or all(abs(got[d][1] - fw[d][1]) <= slack for d in dirs))
            )
        else:
            good = got == fw
        ok &= good
        depth = lat[2] if lat is not None else ""
        out.append(f"{label}: {'same' if good else 'DIFFERENT'} fsmeter {got} fio {fw}{depth}")
    if not compared:
        verdict = "time-based: compared rates not work" if timed else "no comparable job"
    else:
        verdict = "same work" if ok else "different work"
    return verdict, out


def dir_map_jobs(doc: dict) -> list:
    """The jobs fsmeter ran under fio's random map with per-direction block sizes (random_map_block): fio ends
    them where its draws say, so one run of each side is one draw, and they are compared over seeds."""
    return [
        n
        for n, j in doc.get("jobs", {}).items()
        if ((j.get("job") or {}).get("workload") or {}).get("random_map_block")
    ]


def with_seed(text: str, seed: int, fio: bool) -> str:
    """The job file with randseed=SEED in its [global] section (one made first when it has none); fio's copy
    also gets randrepeat=0, without which fio up to 3.34 seeds its offsets by the job's number alone."""
    extra = f"randseed={seed}\n" + ("randrepeat=0\n" if fio else "")
    m = re.search(r"(?m)^\[global\][ \t]*$", text)
    if m is None:
        return "[global]\n" + extra + text
    head = text[: m.end()] + "\n"
    return head + extra + text[m.end() :].lstrip("\n")


def _mean_sd(xs: list) -> tuple:
    n = len(xs)
    m = sum(xs) / n if n else 0.0
    return m, (math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0)


def stop_compare(fs: dict, fio: dict) -> tuple:
    """(all alike, lines) for jobs run over seeds on each side: {job: [(read bytes, read I/Os, write bytes,
    write I/Os) per seed]}. Per job, the mean bytes and the mean I/Os of each direction are alike when their
    difference is at most three standard errors of a difference of two means, sqrt(s1^2/n1 + s2^2/n2) (Welch's
    two-sample statistic; about 0.3% of comparisons of one law fail it, normal approximation)."""
    ok, out = True, []
    for job, a in fs.items():
        b = fio.get(job) or []
        if not a or not b:
            out.append(f"{job}: random-map stop: no runs to compare (fsmeter {len(a)}, fio {len(b)})")
            ok = False
            continue
        parts, good = [], True
        for label, f, scale in (
            ("bytes", lambda r: r[0] + r[2], 2**20),
            ("read I/Os", lambda r: r[1], 1),
            ("write I/Os", lambda r: r[3], 1),
        ):
            (ma, sa), (mb, sb) = _mean_sd([f(r) for r in a]), _mean_sd([f(r) for r in b])
            tol = 3 * math.sqrt(sa**2 / len(a) + sb**2 / len(b))
            alike = abs(ma - mb) <= tol
            good &= alike
            unit = " MiB" if scale > 1 else ""
            parts.append(
                f"{label} fsmeter mean {ma / scale:.2f}{unit} ({sa / scale:.2f}), fio mean {mb / scale:.2f}"
                f"{unit} ({sb / scale:.2f}){'' if alike else ' DIFFERENT'}"
            )
        ok &= good
        out.append(
            f"{job}: random-map stop over {len(a)}/{len(b)} seeds: {'same' if good else 'DIFFERENT'} "
            "distribution: " + "; ".join(parts)
        )
    return ok, out


def seed_rows(doc: dict, names: list) -> dict:
    """fsmeter's (read bytes, read I/Os, write bytes, write I/Os) per job of one run."""
    out = {}
    for n in names:
        o = _job_ops(doc, n)
        rd, wr = o.get("read", {}), o.get("write", {})
        out[n] = (rd.get("bytes", 0), rd.get("count", 0), wr.get("bytes", 0), wr.get("count", 0))
    return out


def fio_seed_rows(entries: list, names: list) -> dict:
    by = {e["name"]: e for e in entries}
    return {n: (*by[n]["dirs"]["read"], *by[n]["dirs"]["write"]) for n in names if n in by}


def report_groups(job: Path, root: Path) -> dict:
    """job name -> (fio's reporting group, group_reporting), as fsmeter mapped the file (fio's groupid: a new one
    at each stonewall or new_group)."""
    from fsmeter.errors import UserError
    from fsmeter.interop.fio.load import map_jobfile

    text = job.read_text()
    absolute = re.search(r"^(directory|filename)=/", text, re.M) is not None
    try:
        ms = map_jobfile(job, None if absolute else root, not absolute)
    except (UserError, OSError, ValueError):
        return {}
    return {m.name: (m.report_group, bool(m.group_reporting)) for m in ms}


def _without_error_log(text: str) -> str:
    """fio's JSON output file without the error lines fio writes into it while it runs (a failed request: "fio:
    io_u error on file ..."), which can land inside the JSON, mid-line (fill_device's ENOSPC does)."""
    return re.sub(r"fio: (io_u error|pid=\d+, err=)[^\n]*\n", "", text)


def _failed_ios(job_rep: dict, direction: str) -> int:
    """Requests of a direction that failed and that fio counts in its total_ios: those gone on after
    (continue_on_error, fsmeter's `errors`) and, for writes, the one that met ENOSPC in a fill_device job (two when
    that was a short write: fio counts the short write, and then the write of its rest, which fails)."""
    errs = (job_rep.get("extra") or {}).get("errors") or {}
    n = sum((errs.get("by_errno") or {}).get(direction, {}).values())
    if direction != "write":
        return n
    if errs:
        return n + errs.get("filled", 0) + errs.get("filled_short_write", 0)
    return n + (job_rep.get("fill") or {}).get("failed_writes", 0)  # a job of a group: its run entry has no extra


def _kind(why: str) -> str:
    """What a refusal line is about: the engine, concurrent jobs, an unset variable, or the option it names."""
    rest = re.sub(r"^\S+ line \d+: ", "", why)
    if rest.startswith("ioengine="):
        return "its ioengine"
    if "would run at the same time" in rest:
        return "concurrent jobs"
    if "is not set in the environment" in rest:
        return "an unset variable"
    m = re.match(r"option (\S+)", rest) or re.match(r"([a-z_]+)=", rest)
    return m.group(1) if m else rest[:40]


def blockers(scaled: str, root: Path) -> list:
    """What stops the file, removing each refused line in turn (at most 40 rounds)."""
    from fsmeter.errors import UserError
    from fsmeter.interop.fio_run import plan_jobfile

    lines = scaled.splitlines()
    found: list = []
    root.mkdir(parents=True, exist_ok=True)
    for _ in range(40):
        f = root / "blockers.fio"
        f.write_text("\n".join(lines) + "\n")
        try:
            text = "\n".join(lines)
            absolute = re.search(r"^(directory|filename)=/", text, re.M) is not None
            plan_jobfile(str(f), None if absolute else root, {})
            return found
        except UserError as exc:
            msg = exc.message
        m = re.search(r"line (\d+)", msg)
        if not m:
            found.append(f"(no line) {msg[:60]}")
            return found
        n = int(m.group(1))
        text = lines[n - 1].strip()
        if text.startswith("["):
            key = "concurrent jobs" if "same time" in msg else f"job {text}: {msg.split(': ', 2)[-1][:50]}"
        else:
            key = text.split("=")[0].strip()
            if key in ("ioengine", "rw", "readwrite"):
                key = text
        if key not in found:
            found.append(key)
        lines[n - 1] = "# removed: " + lines[n - 1] if not text.startswith("[") else lines[n - 1] + "\nstonewall"
        lines = "\n".join(lines).splitlines()
        if text.startswith("[") and "same time" not in msg:
            return found
    return found


def summary(results: dict) -> list:
    """The report's closing lines: N files; fio runs F here; fsmeter runs R; of the F, fsmeter refuses X (each
    with its line), and what fio does with the files it does not run."""
    n = len(results)
    counts = Counter(r["fsmeter"] for r in results.values())
    lines = [f"{n} files: " + ", ".join(f"{k} {c}" for k, c in counts.most_common())]
    here = {k: r["fio_here"] for k, r in results.items() if "fio_here" in r}
    if here:
        runs = [k for k, h in here.items() if h["status"] == "runs"]
        gaps = [k for k in runs if results[k]["fsmeter"] != "ran"]
        both = [k for k in runs if results[k]["fsmeter"] == "ran"]
        lines.append(
            f"{n} files; fio runs {len(runs)} here; fsmeter runs {counts.get('ran', 0)}; of the "
            f"{len(runs)}, fsmeter runs {len(both)} and refuses {len(gaps)}" + (":" if gaps else "")
        )
        lines += [f"  {k}: {results[k]['fsmeter']}: {results[k]['why'][:160]}" for k in gaps]
        other = Counter(
            re.sub(r" \S+$", "", h["status"]) if h["status"].startswith("lacks") else h["status"]
            for h in here.values()
            if h["status"] != "runs"
        )
        if other:
            lines.append(
                "fio here does not run the other "
                + str(sum(other.values()))
                + ": "
                + ", ".join(f"{c} {k}" for k, c in other.most_common())
            )
        ran_not_fio = [k for k in here if results[k]["fsmeter"] == "ran" and k not in runs]
        if ran_not_fio:
            lines.append(
                "fsmeter runs, fio here does not: " + ", ".join(f"{k} ({here[k]['status']})" for k in ran_not_fio)
            )
    work = Counter(r["fio"] for r in results.values() if "fio" in r)
    if work:
        lines.append("against fio: " + ", ".join(f"{c} {k}" for k, c in work.most_common()))
    return lines


def _over_seeds(
    text: str,
    name: str,
    stopped: list,
    lines: list,
    fio: str,
    fs_root: Path,
    fio_root: Path,
    jobs: Path,
    outs: Path,
    args,
) -> tuple:
    """Jobs that fio's random map ends where its draws say: both sides again over args.seeds seeds (randseed=1..N;
    fio with randrepeat=0), compared by their means (stop_compare). -> (verdict, compare lines with those jobs'
    lines replaced, the seed rows)."""
    fs_rows: dict = {n: [] for n in stopped}
    fio_rows: dict = {n: [] for n in stopped}
    for seed in range(1, args.seeds + 1):
        for fio_side, rows in ((False, fs_rows), (True, fio_rows)):
            root = fio_root if fio_side else fs_root
            scaled, made, dirs = scale(with_seed(text, seed, fio_side), root)
            prepare_root(root, made, dirs)
            job = jobs / (("fio-seed-" if fio_side else "seed-") + name)
            job.write_text(scaled)
            out = outs / ("fio-seed.json" if fio_side else "fsm-seed.json")
            out.unlink(missing_ok=True)
            if fio_side:
                f = run_fio(fio, job, root, out, args.timeout)
                got = fio_seed_rows(f.get("entries") or [], stopped) if f["status"] == "ran" else {}
            else:
                r = run_fsmeter(job, root, out, args.timeout)
                got = seed_rows(r["doc"], stopped) if r["status"] == "ran" else {}
            for n, row in got.items():
                rows[n].append(row)
            shutil.rmtree(root, ignore_errors=True)
    alike, stop_lines = stop_compare(fs_rows, fio_rows)
    kept = [x for x in lines if not any(x.startswith(f"{n}:") for n in stopped)]
    others_same = all(": same " in x or ": time-based" in x for x in kept)
    verdict = "same work (random-map stop over seeds)" if alike and others_same else "different work"
    return verdict, kept + stop_lines, {"fsmeter": fs_rows, "fio": fio_rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", nargs="?", default=os.environ.get("FIO_GIT", str(HERE / "peers" / "fio.git")))
    ap.add_argument(
        "--dir",
        default="examples",
        choices=("examples", "t/jobs"),
        help="the checkout's folder of job files: fio's examples, or its regression tests' t/jobs",
    )
    ap.add_argument("--only", nargs="*", default=None, help="example file names to run")
    ap.add_argument("--no-fio", action="store_true", help="do not run fio")
    ap.add_argument(
        "--fio",
        action="append",
        default=None,
        help="a fio to compare with; repeat it: a file whose engine one lacks runs under the next "
        "(default: $FIO, colon-separated, else fio on PATH)",
    )
    ap.add_argument("--blockers", action="store_true", help="count what stops the refused files")
    ap.add_argument("--json", default=None, help="write every file's outcome here")
    ap.add_argument("--timeout", type=int, default=120, help="seconds for each run of a file fsmeter runs")
    ap.add_argument(
        "--seeds",
        type=int,
        default=20,
        help="runs of each side, one seed each, for jobs fio's random map ends where its draws say "
        "(per-direction block sizes)",
    )
    ap.add_argument(
        "--fio-timeout",
        type=int,
        default=60,
        help="seconds for fio on a file fsmeter does not run (a server job waits for its client)",
    )
    args = ap.parse_args()
    from fsmeter.interrupt import STOP_SIGNALS, raise_interrupted

    for signum in STOP_SIGNALS:  # SIGTERM and SIGHUP too unwind through the finally blocks that unmount
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, raise_interrupted)
    checkout = Path(args.checkout)
    if not checkout.exists():
        print(f"no fio checkout at {checkout}: clone axboe/fio there or set FIO_GIT", file=sys.stderr)
        return 2
    files = examples(checkout, args.dir)
    os.environ.update(ENV)  # for --blockers, which plans in this process
    if args.only:
        files = {k: v for k, v in files.items() if k in args.only or k.removesuffix(".fio") in args.only}
    fios = [] if args.no_fio else [(f, v) for f in fio_binaries(args.fio) if (v := fio_version(f))]
    have_fio = bool(fios)
    for f, v in fios:
        print(f"fio: {f} ({'.'.join(map(str, v))})", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="fsmeter-fio-examples-"))
    # The results go beside the scratch tmpfs, not on it: a job that fills its filesystem (fill_device) would
    # leave no room for them.
    outs = Path(tempfile.mkdtemp(prefix="fsmeter-fio-examples-out-"))
    mounted = False
    if os.geteuid() == 0:
        mounted = (
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=3g", "fsmeter-fio-examples", str(scratch)], capture_output=True
            ).returncode
            == 0
        )
    results: dict = {}
    homes = contextlib.ExitStack()  # the filesystem a file runs on when the tmpfs cannot run it
    try:
        for name, text in files.items():
            text = with_target(name, text)
            res: dict = {}
            home = homes.enter_context(file_home(text, scratch, res))
            fs_root, fio_root, jobs = home / "fsm", home / "fio", scratch / "jobs"
            jobs.mkdir(exist_ok=True)
            scaled, made, dirs = scale(text, fs_root)
            prepare_root(fs_root, made, dirs)
            job = jobs / name
            job.write_text(scaled)
            r = run_fsmeter(job, fs_root, outs / "fsm.json", args.timeout)
            res["fsmeter"] = r["status"]
            res["why"] = r.get("why", "")
            if r["status"] == "refused" and args.blockers:
                os.environ["FIO_DIR"] = str(fs_root)
                res["blockers"] = blockers(scaled, scratch / "plan")
            groups = report_groups(job, fs_root) if r["status"] == "ran" else {}
            if r["status"] == "ran":
                res["jobs"] = sorted(r["doc"].get("jobs", {}))
            shutil.rmtree(fs_root, ignore_errors=True)
            if have_fio:
                # fio runs every file, those fsmeter refuses too: which refusals are fsmeter's gaps, and which
                # files no local run can do.
                fscaled, fmade, fdirs = scale(text, fio_root)
                prepare_root(fio_root, fmade, fdirs)
                fjob = jobs / ("fio-" + name)
                tried = []
                for fio, version in fios:
                    ftext, notes = fio_copy(fscaled, version)
                    fjob.write_text(ftext)
                    remote = REMOTE.search(ftext)
                    if remote:
                        f = {"status": "not run", "why": f"it sends to {remote.group(1)}, beyond this machine"}
                    else:
                        limit = args.timeout if r["status"] == "ran" else args.fio_timeout
                        (outs / "fio.json").unlink(missing_ok=True)
                        f = run_fio(fio, fjob, fio_root, outs / "fio.json", limit)
                    here = {
                        "status": fio_outcome(f["status"], f.get("why", "")),
                        "why": f.get("why", ""),
                        "fio": f"{fio} ({'.'.join(map(str, version))})",
                    }
                    if notes:
                        here["notes"] = notes
                    tried.append((f, here))
                    # The next fio may have the engine, or parse an option this one does not know; a hang is
                    # not tried again (it costs the timeout).
                    if here["status"] in ("runs", "hangs", "not run"):
                        break
                    prepare_root(fio_root, fmade, fdirs)
                # The fio that runs the file, else the first that has its engine, else the first.
                f, res["fio_here"] = next((t for t in tried if t[1]["status"] == "runs"), None) or next(
                    (t for t in tried if not t[1]["status"].startswith("lacks")), tried[0]
                )
                others = [h for _, h in tried if h is not res["fio_here"]]
                if others:
                    res["fio_here"]["others"] = [f"{h['fio']}: {h['status']}: {h['why'][:150]}" for h in others]
                if r["status"] == "ran":
                    if f.get("entries") is None:
                        res["fio"] = f"fio here {res['fio_here']['status']}"  # not fsmeter's failure
                    else:
                        res["fio"], res["compare"] = compare(r["doc"], f, groups)
                        stopped = dir_map_jobs(r["doc"])
                        if stopped and args.seeds > 1:
                            fio_bin = next(b for b, v in fios if res["fio_here"]["fio"].startswith(b))
                            res["fio"], res["compare"], res["stop"] = _over_seeds(
                                text, name, stopped, res["compare"], fio_bin, fs_root, fio_root, jobs, outs, args
                            )
                shutil.rmtree(fio_root, ignore_errors=True)
            homes.close()
            results[name] = res
            line = f"{name:40s} {res['fsmeter']:8s} {res.get('fio', '')}"
            if res["fsmeter"] != "ran":
                line += f" {res['why'][:150]}"
            if "where" in res:
                line += f"\n    runs on {res['where']}"
            if "fio_here" in res and res["fsmeter"] != "ran":
                h = res["fio_here"]
                line += f"\n    fio here: {h['status']}" + (f": {h['why'][:150]}" if h["status"] != "runs" else "")
            print(line, flush=True)
            shown = res.get("fio") == "different work" or res.get("fio", "").startswith("time-based") or "stop" in res
            for c in res.get("compare", []) if shown else []:
                print(f"    {c}", flush=True)
    finally:
        homes.close()
        if mounted:
            subprocess.run(["umount", str(scratch)], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(outs, ignore_errors=True)
    print()
    for line in summary(results):
        print(line)
    first = Counter(_kind(r["why"]) for r in results.values() if r["fsmeter"] == "refused")
    if first:
        print("refused first for: " + ", ".join(f"{n} {k}" for k, n in first.most_common()))
        conc = [k for k, r in results.items() if "concurrent jobs" in r.get("blockers", [])]
        if args.blockers:
            print(f"files that also need concurrent jobs (a stonewall group of several jobs): {len(conc)}")
    if args.blockers:
        tally = Counter(b for r in results.values() for b in r.get("blockers", []))
        print("what stops the refused files (files per option):")
        for k, n in tally.most_common():
            print(f"  {n:3d}  {k}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "python"))
    try:
        sys.exit(main())
    except KeyboardInterrupt as exc:  # fsmeter.interrupt.Interrupted too: everything the bench made is gone
        print(f"fio_examples: {exc or 'interrupted'}: scratch folders and filesystems removed", file=sys.stderr)
        sys.exit(128 + getattr(exc, "signum", signal.SIGINT))
