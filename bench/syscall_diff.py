"""Compare the system calls two fsmeter installs make for the same workloads.

A refactor that changes no behaviour leaves every family making the same system calls on the
filesystem it measures, the same number of operations and bytes in its result, and the same
files. This script shows it: each case below (one named workload per family, the access family's
five shapes, and verification) runs once with each install under ``strace -f``, on a fresh
filesystem of its own (tmpfs, or a 1 GiB ext4 loop image with ``--fs ext4``) mounted at the same
path, with the same seed and the same ``--set`` overrides, and the two traces are counted side by
side.

Usage (root: it mounts its own filesystems under OUT, in a mount namespace of its own; strace must
be installed)::

    python bench/syscall_diff.py --before OLD/.venv/bin/fsmeter --after .venv/bin/fsmeter
    python bench/syscall_diff.py --before ... --after ... --only access,verify --fs ext4 --out /tmp/sd

It prints, per case:

* the result JSON's operation counts: each phase's ops and bytes, and each operation kind's count;
* **the workload's calls**: calls on a path under the target filesystem (a path argument, or a
  descriptor strace's ``-y`` resolves to such a path), per phase and system call, before, after
  and the difference. A failed call is counted apart, with its errno (``unlinkat !ENOENT``);
* **the phase threads' other calls**: everything else the threads that ran each engine phase did
  (futex, mmap, clone3, ...; the Python thread that calls into the engine included), where they
  differ. Their counts follow timing (a wait polls until work ends), so small differences are noise;
* **the main thread**: Python's start-up, imports, the cache resets between phases, per-phase
  bookkeeping such as reading /proc; its calls on the target in full, the rest as totals and the
  largest differences;
* the files: how many distinct target paths each run named, and any named by one run only.

Phases are told apart by thread: the Python side runs each engine phase on a thread of its own,
started by the main thread, and the engine's workers and the programs they start descend from it;
the n-th such thread is the result's n-th phase (the engine's cleanup, last, is not in the
result). Cases whose work is bounded by time rather than count (``timed``) differ in counts by
design; for them the per-operation rate (calls / the phase's ops) is printed as well.

Counts that differ between two runs of the same install, so not between installs either:

* mix (aim7-quick): a statx or two in ``subruns``: two tasks run at once, and the programs a job
  starts list the directory the other task is writing its temporary files into;
* macro on ext4: the ``rm`` phase's calls by a few (rm -rf walks the tree in readdir order, which
  ext4 takes from a hash seeded anew by each mkfs); on tmpfs they are exact;
* crash (timed): every count of its ``write`` phase; the calls per write stay the same.

The workloads are the named quick ones, made smaller where a full run under strace would take
minutes (``--full`` runs them as named). Everything is written under OUT (default
bench/out/syscall-diff): each run's trace, result JSON and output, and ``summary.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DBENCH_LOADFILE = Path("/usr/share/dbench/client.txt")
#: Lines of dbench's client.txt the replay case replays once per client (the whole file is 25 MB).
DBENCH_LINES = 20_000

# A fixed amount of work instead of a duration: the same count of operations on both sides.
ACCESS_FIXED = ["file_size=16M", "total_bytes=16M", "duration_s=none", "warmup_s=0"]
ACCESS_RANDOM = ["file_size=16M", "total_bytes=4M", "duration_s=none", "warmup_s=0"]


class Case:
    def __init__(
        self, family: str, workload: str, sets=(), small=(), timed: bool = False, prime: bool = False, note: str = ""
    ):
        self.family, self.workload = family, workload
        self.sets, self.small = list(sets), list(small)
        self.timed, self.prime, self.note = timed, prime, note

    @property
    def name(self) -> str:
        return f"{self.family}-{self.workload}"

    def settings(self, full: bool, out: Path) -> list:
        sets = [s.replace("{out}", str(out)) for s in self.sets]
        return sets + ([] if full else [s.replace("{out}", str(out)) for s in self.small])


CASES = [
    Case("access", "seq-read", ACCESS_FIXED),
    Case("access", "seq-write", ACCESS_FIXED),
    Case("access", "rand-read-4k", ACCESS_RANDOM),
    Case("access", "rand-write-4k", ACCESS_RANDOM),
    Case("access", "fileserver", ACCESS_RANDOM),
    Case("fileset", "postmark-quick", small=["files=1000", "transactions=5000"]),
    Case("tree", "fdtree-quick", small=["files_per_dir=5"]),
    Case(
        "replay",
        "dbench-quick",
        ["loadfile={out}/client-head.txt", "passes=1", "duration_s=none", "warmup_s=0"],
        note=f"the first {DBENCH_LINES:,} lines of client.txt, once per client",
    ),
    Case("bonnie", "bonnie-quick"),
    Case("iozone", "iozone-quick"),
    Case("mix", "aim7-quick"),
    Case(
        "macro",
        "macro-quick",
        ["source_cache={out}/macro-cache"],
        small=["cp_size=16M", "tree_files=500"],
        prime=True,
        note="the source cache is made by an untimed run first, so both read it",
    ),
    Case("crash", "crash-fsync", small=["runtime_s=2"], timed=True),
    Case("verify", "seq-write", ACCESS_FIXED + ["verify=crc32c"]),
    Case("verify", "rand-write-4k", ACCESS_RANDOM + ["verify=xxh3"]),
    Case("verify", "postmark-quick", ["verify=crc32c"], small=["files=1000", "transactions=5000"]),
]

# -- running --------------------------------------------------------------------------------------


def sh(*cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, **kw)


class Target:
    """A fresh filesystem at `mnt`, made and removed by us only."""

    def __init__(self, kind: str, mnt: Path, image: Path):
        self.kind, self.mnt, self.image, self.loop = kind, mnt, image, None

    def __enter__(self) -> Path:
        if os.path.ismount(self.mnt):
            raise SystemExit(f"syscall_diff: {self.mnt} is already a mount point: unmount it or use another --out")
        self.mnt.mkdir(parents=True, exist_ok=True)
        if any(self.mnt.iterdir()):
            raise SystemExit(f"syscall_diff: {self.mnt} is not empty: remove it or use another --out")
        if self.kind == "tmpfs":
            sh("mount", "-t", "tmpfs", "-o", "size=1g,mode=0755", "fsmeter-syscall-diff", self.mnt)
        else:
            with open(self.image, "wb") as f:
                f.truncate(1 << 30)
            self.loop = sh("losetup", "--find", "--show", self.image).stdout.strip()
            sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.loop)
            sh("mount", self.loop, self.mnt)
        return self.mnt

    def __exit__(self, *exc) -> None:
        for _ in range(50):
            if subprocess.run(["umount", str(self.mnt)], capture_output=True).returncode == 0 or not os.path.ismount(
                self.mnt
            ):
                break
            time.sleep(0.2)
        if self.loop:
            for _ in range(50):  # busy for a moment after the unmount
                if subprocess.run(["losetup", "-d", self.loop], capture_output=True).returncode == 0:
                    break
                time.sleep(0.2)
        if self.kind != "tmpfs":
            self.image.unlink(missing_ok=True)


def run_one(fsmeter: str, case: Case, side: str, out: Path, args) -> dict:
    """One traced run; returns {"trace": path, "json": path, "rc": int, "seconds": float}."""
    d = out / case.name
    d.mkdir(parents=True, exist_ok=True)
    trace, res, log = d / f"{side}.strace", d / f"{side}.json", d / f"{side}.out"
    for p in (trace, res):
        p.unlink(missing_ok=True)
    cmd = [fsmeter, "run", case.workload, "--dir", str(out / "mnt"), "-q", "--cache", "fadvise", "--json", str(res)]
    for s in case.settings(args.full, out):
        cmd += ["--set", s]
    env = dict(
        os.environ,
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        FSMETER_LOCK_DIR=str(out / "lock"),
        TMPDIR=str(out / "tmp"),
        PYTHONHASHSEED="0",
    )
    for k in ("lock", "tmp"):
        (out / k).mkdir(exist_ok=True)
    if case.prime and side == "before":  # an untraced run on a filesystem of its own fills a cache both read
        with Target(args.fs, out / "mnt", out / "fs.img"):
            subprocess.run(cmd, cwd=d, env=env, capture_output=True)
    with Target(args.fs, out / "mnt", out / "fs.img"):
        t0 = time.monotonic()
        strace = ["strace", "-f", "-qq", "-y", "-s", "1", "-o", str(trace), "--"]
        with open(log, "w") as f:
            rc = subprocess.run(strace + cmd, cwd=d, env=env, stdout=f, stderr=subprocess.STDOUT).returncode
        secs = time.monotonic() - t0
    return {"trace": str(trace), "json": str(res), "rc": rc, "seconds": round(secs, 1), "cmd": cmd}


# -- counting -------------------------------------------------------------------------------------

LINE = re.compile(r"^(\d+)\s+(.*)$")
CALL = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(")
RESUMED = re.compile(r"^<\.\.\. ([A-Za-z0-9_]+) resumed>(.*)$")
RET = re.compile(r"\)\s+=\s+(-?\d+|0x[0-9a-f]+|\?)(?:<[^>]*>)?(?:\s+([A-Z][A-Z0-9_]+))?")


def parse_trace(path: str, mnt: str):
    """Yields (tid, syscall, full text, return value or None, errno name or None, touches the target)."""
    target = re.compile(r"[<\"]" + re.escape(mnt) + r"(?:[/>\"]| \(deleted\))")
    pending: dict = {}
    with open(path, errors="replace") as f:
        for raw in f:
            m = LINE.match(raw.rstrip("\n"))
            if not m:
                continue
            tid, rest = int(m.group(1)), m.group(2)
            if rest.startswith(("---", "+++")):
                continue
            if rest.endswith("<unfinished ...>"):
                pending[tid] = rest[: -len("<unfinished ...>")]
                continue
            r = RESUMED.match(rest)
            if r:
                rest = pending.pop(tid, r.group(1) + "(") + r.group(2)
            c = CALL.match(rest)
            if not c:
                continue
            rets = RET.findall(rest)
            ret_m = rets[-1] if rets else None
            ret = ret_m[0] if ret_m else None
            err = (ret_m[1] or None) if ret_m and ret == "-1" else None
            yield tid, c.group(1), rest, ret, err, bool(target.search(rest))
    for tid, rest in pending.items():  # a call its thread never came back from (the process ended)
        c = CALL.match(rest)
        if c:
            yield tid, c.group(1), rest, None, None, bool(target.search(rest))


def count(path: str, mnt: str, phase_keys: list, parse=parse_trace) -> dict:
    """Counts of one trace: per label (phase, or 'main') and call: on-target and other calls.
    `parse` reads the trace (parse_trace, or one that decides otherwise what is on the target)."""
    parent: dict = {}
    is_thread: dict = {}
    main = None
    order = []  # threads the main thread started, in order
    calls = []
    paths = set()
    path_re = re.compile(r"\"(" + re.escape(mnt) + r"(?:/[^\"]*)?)\"")
    fd_re = re.compile(r"<(" + re.escape(mnt) + r"(?:/[^>]*)?)>")
    for tid, name, text, ret, err, on_target in parse(path, mnt):
        if main is None:
            main = tid
        if name in ("clone", "clone3", "fork", "vfork") and ret and ret.isdigit() and int(ret) > 0:
            child = int(ret)
            parent[child] = tid
            is_thread[child] = "CLONE_THREAD" in text
            if tid == main and is_thread[child]:
                order.append(child)
        key = name if err is None else f"{name} !{err}"
        calls.append((tid, key, on_target))
        if on_target:
            for p in path_re.findall(text) + fd_re.findall(text):
                paths.add(p.removesuffix(" (deleted)"))
    labels = labels_for(order, phase_keys)
    top: dict = {}

    def label(tid: int) -> str:
        if tid in top:
            return top[tid]
        t, seen = tid, set()
        while t in parent and parent[t] != main and t not in seen:
            seen.add(t)
            t = parent[t]
        lab = labels.get(t, "main") if t != main else "main"
        top[tid] = lab
        return lab

    target, other = collections.Counter(), collections.Counter()
    for tid, key, on_target in calls:
        (target if on_target else other)[(label(tid), key)] += 1
    rel = sorted(p[len(mnt) :] or "/" for p in paths)
    return {
        "target": target,
        "other": other,
        "phase_threads": len(order),
        "labels": [labels[t] for t in order],
        "paths": rel,
    }


def labels_for(order: list, phase_keys: list) -> dict:
    """The main thread's n-th thread ran the result's n-th phase (then the engine's cleanup)."""
    if len(order) == len(phase_keys) + 1:
        names = phase_keys + ["cleanup"]
    elif len(order) == len(phase_keys):
        names = list(phase_keys)
    else:
        names = [f"thread{i + 1}" for i in range(len(order))]
    return dict(zip(order, names))


def result_counts(doc: dict) -> dict:
    """Per phase: ops, bytes, and each operation kind's count, from a result JSON."""
    out = {}
    for key, rep in (doc.get("phases") or {}).items():
        tot = rep.get("total") or {}
        out[key] = {
            "ops": tot.get("ops"),
            "bytes": tot.get("bytes"),
            "kinds": {k: (v or {}).get("count") for k, v in (rep.get("ops") or {}).items()},
            # times (elapsed_us...) differ from run to run: only counts are compared
            "counters": {
                k: v
                for k, v in (rep.get("counters") or {}).items()
                if isinstance(v, int) and not k.endswith(("_us", "_ns", "_ms", "_s"))
            },
        }
    return out


# -- printing -------------------------------------------------------------------------------------


def fmt(v) -> str:
    return "-" if v is None else f"{v:,}" if isinstance(v, int) else str(v)


def table(rows: list, head: list) -> str:
    cells = [head] + [[fmt(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in cells) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w[i]) if i < 2 else c.rjust(w[i]) for i, c in enumerate(r)) for r in cells]
    return "\n".join("    " + ln for ln in lines)


def diff_rows(a: collections.Counter, b: collections.Counter, only_diff: bool, phase_order: list) -> list:
    keys = set(a) | set(b)
    order = {p: i for i, p in enumerate(phase_order)}
    rows = []
    for k in sorted(keys, key=lambda k: (order.get(k[0], len(order)), k[0], k[1])):
        x, y = a.get(k, 0), b.get(k, 0)
        if only_diff and x == y:
            continue
        rows.append([k[0], k[1], x, y, y - x])
    return rows


def report(case: Case, res: dict) -> str:
    b, a = res["before"], res["after"]
    out = [f"== {case.family}: {case.workload}  ({' '.join(res['sets']) or 'as named'})"]
    if case.note:
        out.append(f"   {case.note}")
    out.append(
        f"   exit status before {b['rc']}, after {a['rc']}; traced run {b['seconds']} s / {a['seconds']} s; "
        f"phase threads {b['count']['labels']} / {a['count']['labels']}"
    )
    rb, ra = b["result"], a["result"]
    rows = []
    for ph in list(dict.fromkeys(list(rb) + list(ra))):
        x, y = rb.get(ph, {}), ra.get(ph, {})
        rows.append(
            [
                ph,
                "ops",
                x.get("ops"),
                y.get("ops"),
                None if None in (x.get("ops"), y.get("ops")) else y["ops"] - x["ops"],
            ]
        )
        rows.append(
            [
                ph,
                "bytes",
                x.get("bytes"),
                y.get("bytes"),
                None if None in (x.get("bytes"), y.get("bytes")) else y["bytes"] - x["bytes"],
            ]
        )
        for kind in sorted(set(x.get("kinds", {})) | set(y.get("kinds", {}))):
            p, q = x.get("kinds", {}).get(kind), y.get("kinds", {}).get(kind)
            rows.append([ph, f"  {kind}", p, q, None if None in (p, q) else q - p])
        for c in sorted(set(x.get("counters", {})) | set(y.get("counters", {}))):
            p, q = x.get("counters", {}).get(c), y.get("counters", {}).get(c)
            if p != q:
                rows.append([ph, f"  counter {c}", p, q, None if None in (p, q) else q - p])
    out.append("  result JSON (per phase):")
    out.append(table(rows, ["phase", "count", "before", "after", "diff"]))
    phases = b["count"]["labels"] + ["main"]
    tb, ta = b["count"]["target"], a["count"]["target"]
    rows = diff_rows(tb, ta, False, phases)
    same = all(r[4] == 0 for r in rows if r[0] != "main")
    same_main = all(r[4] == 0 for r in rows if r[0] == "main")
    head = ["phase", "syscall on the target", "before", "after", "diff"]
    if case.timed:
        for r in rows:
            ob, oa = (rb.get(r[0]) or {}).get("ops"), (ra.get(r[0]) or {}).get("ops")
            r += [f"{r[2] / ob:.3f}" if ob else "-", f"{r[3] / oa:.3f}" if oa else "-"]
        head += ["per op before", "per op after"]
    eng_b = sum(v for k, v in tb.items() if k[0] != "main")
    eng_a = sum(v for k, v in ta.items() if k[0] != "main")
    out.append(
        f"  the workload's calls (on the target): engine phases {'IDENTICAL' if same else 'DIFFER'} "
        f"({eng_b:,} before, {eng_a:,} after); main thread {'the same' if same_main else 'differs'} "
        f"({sum(tb.values()) - eng_b:,} before, {sum(ta.values()) - eng_a:,} after)"
    )
    out.append(table(rows, head))
    ob, oa = b["count"]["other"], a["count"]["other"]
    ph_b = collections.Counter({k: v for k, v in ob.items() if k[0] != "main"})
    ph_a = collections.Counter({k: v for k, v in oa.items() if k[0] != "main"})
    rows = diff_rows(ph_b, ph_a, True, phases)
    out.append(
        f"  the phase threads' other calls: {sum(ph_b.values()):,} before, {sum(ph_a.values()):,} after; "
        f"{'same counts' if not rows else 'where they differ:'}"
    )
    if rows:
        out.append(table(rows, ["phase", "syscall (not on the target)", "before", "after", "diff"]))
    mb = collections.Counter({k: v for k, v in ob.items() if k[0] == "main"})
    ma = collections.Counter({k: v for k, v in oa.items() if k[0] == "main"})
    rows = sorted(diff_rows(mb, ma, True, phases), key=lambda r: -abs(r[4]))
    out.append(
        f"  the main thread's other calls (start-up, imports, /proc): {sum(mb.values()):,} before, "
        f"{sum(ma.values()):,} after; the largest differences:"
    )
    if rows:
        out.append(table(rows[:12], ["", "syscall", "before", "after", "diff"]))
    pb, pa = set(b["count"]["paths"]), set(a["count"]["paths"])
    out.append(
        f"  files: {len(pb):,} target paths named before, {len(pa):,} after"
        + (
            "; the same"
            if pb == pa
            else f"; only before: {sorted(pb - pa)[:5]} ({len(pb - pa)}), only after: {sorted(pa - pb)[:5]} "
            f"({len(pa - pb)})"
        )
    )
    return "\n".join(out)


def serial(c: dict) -> dict:
    return {
        "target": [[*k, v] for k, v in sorted(c["target"].items())],
        "other": [[*k, v] for k, v in sorted(c["other"].items())],
        "labels": c["labels"],
        "paths": len(c["paths"]),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the fsmeter executable of the install before")
    ap.add_argument("--after", required=True, help="the fsmeter executable of the install after")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "syscall-diff"), help="where traces go")
    ap.add_argument("--only", default="", help="comma-separated families or case names (access, tree-fdtree-quick)")
    ap.add_argument("--fs", choices=("tmpfs", "ext4"), default="tmpfs", help="the fresh filesystem of each run")
    ap.add_argument("--full", action="store_true", help="the named workloads at their own sizes")
    ap.add_argument("--keep-traces", action="store_true", help="keep each run's strace output")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("syscall_diff: run as root (each run mounts a fresh filesystem)", file=sys.stderr)
        return 2
    if not shutil.which("strace"):
        print("syscall_diff: strace is not installed (apt-get install strace)", file=sys.stderr)
        return 2
    if os.environ.get("FSMETER_SYSCALL_DIFF_NS") != "1" and shutil.which("unshare"):
        # Again in a mount namespace of its own: the filesystems it mounts are seen by no other
        # process (a namespace someone makes meanwhile would keep a copy, and with it the loop
        # device), and go away with it however it ends.
        env = dict(os.environ, FSMETER_SYSCALL_DIFF_NS="1")
        cmd = ["unshare", "--mount", "--propagation", "private", sys.executable, os.path.abspath(__file__)]
        return subprocess.run(cmd + (sys.argv[1:] if argv is None else list(argv)), env=env).returncode
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if DBENCH_LOADFILE.is_file():
        with open(DBENCH_LOADFILE) as f, open(out / "client-head.txt", "w") as g:
            for _, line in zip(range(DBENCH_LINES), f):
                g.write(line)
    want = {w for w in args.only.split(",") if w}
    cases = [c for c in CASES if not want or c.family in want or c.name in want]
    mnt = str(out / "mnt")
    summary = {}
    for case in cases:
        res = {"sets": case.settings(args.full, out)}
        for side, exe in (("before", os.path.abspath(args.before)), ("after", os.path.abspath(args.after))):
            r = run_one(exe, case, side, out, args)
            try:
                doc = json.loads(Path(r["json"]).read_text())
            except (OSError, ValueError):
                doc = {}
            r["result"] = result_counts(doc)
            r["count"] = count(r["trace"], mnt, list((doc.get("phases") or {}).keys()))
            if not args.keep_traces:
                Path(r["trace"]).unlink(missing_ok=True)
            res[side] = r
        text = report(case, res)
        print(text + "\n", flush=True)
        (out / case.name / "report.txt").write_text(text + "\n")
        summary[case.name] = {
            s: {"rc": res[s]["rc"], "result": res[s]["result"], "count": serial(res[s]["count"])}
            for s in ("before", "after")
        }
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
