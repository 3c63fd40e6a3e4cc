#!/usr/bin/env python3
"""Count the system calls fsmeter and each family's bare loop make per operation, side by side.

Each case of limits_cases.py (a family's workload and its loop in bench/limits/), at its `trace`
size, runs twice under ``strace -f -y``: fsmeter, then the bare loop, each on a fresh filesystem
(tmpfs, or a 1 GiB ext4 loop image with ``--fs ext4``) mounted at the same path (the access
family's loop reads the file fsmeter laid out, on the same filesystem). The calls on that
filesystem (a path argument under it, or a descriptor strace resolves into it) are counted per
phase: fsmeter's phases by thread, as bench/syscall_diff.py tells them apart; the loop's between
the `phase NAME` and `result NAME` lines it writes to stdout. Each count is divided by the
phase's operations on its side (the counts of limits_cases.Phase), so a timed case (access,
crash), whose two sides do different numbers of operations, compares per operation as well.

System-call counts do not depend on the machine's load: this runs on a busy machine as well as
on a quiet one. Usage (root: it mounts its own filesystems, in a mount namespace of its own;
strace must be installed)::

    python bench/limits_syscalls.py [--only access,tree] [--fs ext4] [--threads 2] [--out DIR]

It prints, per case and phase, every system call either side made on the filesystem, per
operation, and marks the ones that differ; then whether the calls also agree in their flags,
modes and sizes (`openat O_RDONLY|O_CLOEXEC`, `pread64 4096`: SHAPE_ARGS), listing the shapes
that do not; everything is written under OUT (default
bench/out/limits-syscalls): each run's trace (with --keep-traces), result and the report.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from limits_cases import CASES, build_loops, parse_results  # noqa: E402
from syscall_diff import Target, count, parse_trace  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
MARK = re.compile(r'^write\(1(?:<[^>]*>)?, "(phase|result) ([^ \\"]+)')
#: A difference per operation smaller than this is rounding (a call per phase over many operations).
NOISE = 0.002
#: Calls counted wherever they go: io_uring's submissions and waits are on the ring's descriptor,
#: not on a file of the target, and sync(2) names no file at all.
ALWAYS = ("io_uring_enter", "sync")
#: Calls that do the same work under another name: counted together in the "as work" totals.
SAME_WORK = {
    "openat2": "openat",
    "unlinkat": "unlink",
    "renameat": "rename",
    "renameat2": "rename",
    "mkdirat": "mkdir",
    "fstat": "newfstatat",
}


#: Calls whose strings are data, not names (what is read or written, a directory's entries).
DATA_CALLS = {"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2", "pwritev2"}
DATA_CALLS |= {"getdents64", "sendto", "recvfrom", "sendmsg", "recvmsg"}


def under(path: str, mnt: str) -> bool:
    return path == mnt or path.startswith(mnt + "/")


def touches(text: str, mnt: str) -> bool:
    """Whether a traced call works on the target: a path under it, a descriptor strace resolves
    into it, or a relative name given from a working directory inside it (AT_FDCWD<...>: the tools
    of the macro family run there). A process merely working there (its library loads, its PATH
    search, all naming AT_FDCWD) is not on the target; nor is a program started with the target in
    its arguments (execve: its first string only is a path), nor data that reads like a path."""
    name = text[: text.find("(")]
    strings = [] if name in DATA_CALLS else re.findall(r'"((?:[^"\\]|\\.)*)"', text)
    if name == "execve":
        strings = strings[:1]
    if any(under(p, mnt) for p in strings):
        return True
    for m in re.finditer(r"(AT_FDCWD)?<([^>]*)>(, \"([^\"]*)\")?", text):
        fd_dir, where, name = m.group(1), m.group(2).removesuffix(" (deleted)"), m.group(4)
        if under(where, mnt) and (not fd_dir or (name is not None and not name.startswith("/"))):
            return True
    return False


def parse_on_target(path: str, mnt: str):
    """syscall_diff.parse_trace, with `touches` deciding what is on the target."""
    for tid, name, text, ret, err, _ in parse_trace(path, mnt):
        yield tid, name, text, ret, err, touches(text, mnt)


STRING = re.compile(r'"(?:[^"\\]|\\.)*"(?:\.\.\.)?')
#: Per call, the arguments that say how it works (flags, modes, sizes), by position: what the
#: shapes compare besides the names. Paths, descriptors and offsets are left out.
SHAPE_ARGS = {
    "openat": (2, 3),
    "openat2": (2,),
    "open": (1, 2),
    "creat": (1,),
    "read": (2,),
    "write": (2,),
    "pread64": (2,),
    "pwrite64": (2,),
    "mkdir": (1,),
    "mkdirat": (2,),
    "unlinkat": (2,),
    "newfstatat": (3,),
    "fcntl": (1,),
    "lseek": (2,),
    "getdents64": (2,),
    "utimensat": (3,),
    "fchmod": (1,),
    "io_uring_enter": (3,),
}


def args_of(text: str) -> list:
    """A traced call's arguments at the top level, strings and descriptors' paths blanked."""
    body = text[text.find("(") + 1 :]
    ends = list(re.finditer(r"\)\s+= ", body))  # strace pads short calls before " = "
    body = body[: ends[-1].start()] if ends else body.rstrip(")")
    body = re.sub(r"<[^>]*>", "", STRING.sub("S", body))
    out, depth, cur = [], 0, ""
    for ch in body:
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + [cur.strip()]


def shape(name: str, text: str) -> str:
    """The call with the arguments of SHAPE_ARGS: `openat O_RDONLY|O_CLOEXEC`, `pread64 4096`.
    O_LARGEFILE is left out: the kernel sets it on every open of a 64-bit process, whether the
    caller passes it (rustix, the engine's) or not (glibc, the loops')."""
    pos = SHAPE_ARGS.get(name)
    if not pos:
        return name
    a = args_of(text)
    shown = [re.sub(r"\|O_LARGEFILE\b|\bO_LARGEFILE\|", "", a[i]) for i in pos if i < len(a)]
    return " ".join([name] + shown)


def parse_shapes(path: str, mnt: str):
    """As parse_on_target, each call named by its shape."""
    for tid, name, text, ret, err, on in parse_on_target(path, mnt):
        yield tid, shape(name, text), text, ret, err, on


def strace_cmd(trace: Path) -> list:
    return ["strace", "-f", "-qq", "-y", "-s", "64", "-o", str(trace), "--"]


def env_for(out: Path) -> dict:
    for k in ("lock", "tmp"):
        (out / k).mkdir(exist_ok=True)
    return dict(
        os.environ,
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        FSMETER_LOCK_DIR=str(out / "lock"),
        TMPDIR=str(out / "tmp"),
        PYTHONHASHSEED="0",
    )


def run_fsmeter(case, threads: int, mnt: Path, d: Path, out: Path, fsmeter: str, traced: bool = True) -> dict:
    """fsmeter under strace; its result document and per-phase counts on the target."""
    trace, res = d / "fsmeter.strace", d / "fsmeter.json"
    cmd = [fsmeter, "run", case.workload, "--dir", str(mnt), "-q", "--cache", "keep", "--json", str(res)]
    for k, v in case.fsm_sets("trace", threads, out).items():
        cmd += ["--set", f"{k}={v}"]
    if case.layout:
        cmd.append("--keep-files")
    with open(d / "fsmeter.out", "w") as f:
        pre = strace_cmd(trace) if traced else []
        rc = subprocess.run(pre + cmd, env=env_for(out), stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise SystemExit(f"limits_syscalls: fsmeter exited {rc} on {case.name}: see {d / 'fsmeter.out'}")
    if not traced:
        return {}
    doc = json.loads(res.read_text())
    c = count(str(trace), str(mnt), list(doc["phases"]), parse=parse_on_target)
    per_phase = collections.defaultdict(collections.Counter)
    for (label, call), n in c["target"].items():
        per_phase[label][call] += n
    for (label, call), n in c["other"].items():
        if call.split(" ")[0] in ALWAYS:
            per_phase[label][call] += n
    c = count(str(trace), str(mnt), list(doc["phases"]), parse=parse_shapes)
    shapes = collections.defaultdict(collections.Counter)
    for (label, call), n in c["target"].items():
        shapes[label][call] += n
    for (label, call), n in c["other"].items():
        if call.split(" ")[0] in ALWAYS:
            shapes[label][call] += n
    return {"doc": doc, "calls": per_phase, "shapes": shapes, "trace": trace}


def count_loop(trace: Path, mnt: str, shapes: bool = False) -> dict:
    """The loop's calls on the target, per phase: between its `phase X` and `result X` lines
    (with `shapes`, each call named by its shape)."""
    per_phase = collections.defaultdict(collections.Counter)
    current = None
    for _tid, name, text, _ret, err, on_target in parse_on_target(str(trace), mnt):
        m = MARK.match(text) if name == "write" else None
        if m:
            if m.group(1) == "phase":
                current = m.group(2)
            elif m.group(2) == current:
                current = None
            continue
        always = name in ALWAYS
        if shapes:
            name = shape(name, text)
        if on_target or always:
            per_phase[current or "outside"][name if err is None else f"{name} !{err}"] += 1
    return per_phase


def run_loop(case, threads: int, mnt: Path, d: Path, out: Path, exe: Path) -> dict:
    trace = d / "bare.strace"
    cmd = [str(exe), *case.loop_args("trace", threads, mnt, out)]
    p = subprocess.run(strace_cmd(trace) + cmd, capture_output=True, text=True)
    (d / "bare.out").write_text(p.stdout + p.stderr)
    if p.returncode != 0:
        raise SystemExit(f"limits_syscalls: {exe.name} exited {p.returncode} on {case.name}: {p.stderr.strip()}")
    return {
        "res": parse_results(p.stdout),
        "calls": count_loop(trace, str(mnt)),
        "shapes": count_loop(trace, str(mnt), shapes=True),
        "trace": trace,
    }


def per_op(counts: collections.Counter, ops: int) -> dict:
    return {k: v / ops for k, v in counts.items()} if ops else {}


def compare_phase(ph, fsm: dict, bare: dict) -> dict:
    """One phase side by side: per call, each side's count per operation."""
    f_ops, b_ops = ph.fsm_units(fsm["doc"]), ph.bare_units(bare["res"])
    f, b = fsm["calls"].get(ph.fsm, collections.Counter()), bare["calls"].get(ph.bare, collections.Counter())
    fp, bp = per_op(f, f_ops), per_op(b, b_ops)
    rows = []
    for call in sorted(set(fp) | set(bp), key=lambda k: (-max(fp.get(k, 0), bp.get(k, 0)), k)):
        x, y = fp.get(call, 0.0), bp.get(call, 0.0)
        rows.append({"call": call, "fsmeter": x, "bare": y, "fsmeter_n": f.get(call, 0), "bare_n": b.get(call, 0)})
    extra = [r for r in rows if abs(r["fsmeter"] - r["bare"]) > NOISE]
    work_f, work_b = collections.Counter(), collections.Counter()
    for side, counts in ((work_f, fp), (work_b, bp)):
        for call, v in counts.items():
            name, _, err = call.partition(" ")
            side[" ".join([SAME_WORK.get(name, name), err]).strip()] += v
    as_work = [
        {"call": k, "fsmeter": work_f.get(k, 0.0), "bare": work_b.get(k, 0.0)}
        for k in sorted(set(work_f) | set(work_b))
        if abs(work_f.get(k, 0.0) - work_b.get(k, 0.0)) > NOISE
    ]
    # The same, call by call with its flags, modes and sizes; only the differences are kept.
    fs = per_op(fsm["shapes"].get(ph.fsm, collections.Counter()), f_ops)
    bs = per_op(bare["shapes"].get(ph.bare, collections.Counter()), b_ops)
    shapes = [
        {"call": k, "fsmeter": fs.get(k, 0.0), "bare": bs.get(k, 0.0)}
        for k in sorted(set(fs) | set(bs))
        if abs(fs.get(k, 0.0) - bs.get(k, 0.0)) > NOISE
    ]
    return {
        "phase": ph.fsm,
        "fsmeter_ops": f_ops,
        "bare_ops": b_ops,
        "fsmeter_calls": sum(f.values()),
        "bare_calls": sum(b.values()),
        "rows": rows,
        "differ": extra,
        "as_work": as_work,
        "shapes_differ": shapes,
    }


def report(case, threads: int, phases: list) -> str:
    out = [f"== {case.name} ({case.workload}, {threads} thread(s); loop bench/limits/{case.loop}.c)"]
    for p in phases:
        same = "the same calls per operation" if not p["differ"] else f"{len(p['differ'])} call(s) differ"
        out.append(
            f"  phase {p['phase']}: fsmeter {p['fsmeter_calls']:,} calls over {p['fsmeter_ops']:,} ops, "
            f"bare loop {p['bare_calls']:,} over {p['bare_ops']:,}: {same}"
        )
        width = max([len(r["call"]) for r in p["rows"]] + [12])
        out.append(f"    {'system call':<{width}}  {'fsmeter/op':>11}  {'bare/op':>11}  {'diff':>9}")
        for r in p["rows"]:
            flag = "  <-" if abs(r["fsmeter"] - r["bare"]) > NOISE else ""
            out.append(
                f"    {r['call']:<{width}}  {r['fsmeter']:>11.4f}  {r['bare']:>11.4f}  "
                f"{r['fsmeter'] - r['bare']:>+9.4f}{flag}"
            )
        if p["differ"]:
            named = ", ".join(f"{r['call']} {r['fsmeter'] - r['bare']:+.4f}" for r in p["as_work"]) or "none"
            out.append(f"    as work (openat2 counted as openat, unlinkat as unlink, ...): fsmeter beyond: {named}")
        sd = p["shapes_differ"]
        if not sd:
            out.append("    flags, modes and sizes: the same")
        else:
            out.append(f"    flags, modes and sizes differ ({len(sd)}; fsmeter vs bare per op):")
            out += [f"      {r['call']}: {r['fsmeter']:.4f} vs {r['bare']:.4f}" for r in sd]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated families (access, fileset, tree, ...)")
    ap.add_argument("--fs", choices=("tmpfs", "ext4"), default="tmpfs", help="the fresh filesystem of each run")
    ap.add_argument("--threads", type=int, default=1, help="threads (clients) where the family runs several")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "limits-syscalls"), help="where traces go")
    ap.add_argument("--fsmeter", default=str(Path(sys.executable).parent / "fsmeter"), help="the fsmeter to trace")
    ap.add_argument("--keep-traces", action="store_true", help="keep each run's strace output")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("limits_syscalls: run as root (each run mounts a fresh filesystem)", file=sys.stderr)
        return 2
    for tool in ("strace", "cc"):
        if not shutil.which(tool):
            print(f"limits_syscalls: {tool} is not installed", file=sys.stderr)
            return 2
    if os.environ.get("FSMETER_LIMITS_NS") != "1" and shutil.which("unshare"):
        # In a mount namespace of its own: what it mounts is seen by no other process and goes
        # away with it however it ends.
        env = dict(os.environ, FSMETER_LIMITS_NS="1")
        cmd = ["unshare", "--mount", "--propagation", "private", sys.executable, os.path.abspath(__file__)]
        return subprocess.run(cmd + (sys.argv[1:] if argv is None else list(argv)), env=env).returncode
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    exes = build_loops(out / "bin")
    want = {w for w in args.only.split(",") if w}
    mnt, image = out / "mnt", out / "fs.img"
    summary = {}
    for case in CASES:
        if want and case.family not in want:
            continue
        threads = args.threads if args.threads in case.threads else case.threads[0]
        d = out / case.name.replace(" ", "_").replace(",", "")
        d.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        if case.prime:  # an untraced run fills what the loop needs (the macro family's source cache)
            with Target(args.fs, mnt, image):
                run_fsmeter(case, threads, mnt, d, out, args.fsmeter, traced=False)
        with Target(args.fs, mnt, image):
            fsm = run_fsmeter(case, threads, mnt, d, out, args.fsmeter)
            if case.layout:
                bare = run_loop(case, threads, mnt, d, out, exes[case.loop])
        if not case.layout:
            with Target(args.fs, mnt, image):
                bare = run_loop(case, threads, mnt, d, out, exes[case.loop])
        phases = [compare_phase(ph, fsm, bare) for ph in case.phases]
        text = report(case, threads, phases) + f"\n  ({time.monotonic() - t0:.0f} s under strace)"
        print(text + "\n", flush=True)
        (d / "report.txt").write_text(text + "\n")
        summary[case.name] = {"threads": threads, "fs": args.fs, "phases": phases}
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
        if not args.keep_traces:
            for side in (fsm, bare):
                Path(side["trace"]).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
