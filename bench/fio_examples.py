"""fio's own example job files under `fsmeter run`, scaled down, compared with fio job by job.

    python bench/fio_examples.py [FIO_CHECKOUT] [--only NAME ...] [--no-fio] [--blockers] [--json OUT]

FIO_CHECKOUT is a clone of axboe/fio, bare or not (default: $FIO_GIT, else bench/peers/fio.git); its
`examples/*.fio` are read from it, never copied into this project. Each file is scaled down before it runs:
sizes above 64 MiB become 64m (in a file with rate= or rate_iops=, at most what the slowest rate moves in 2 s,
and at least 64 KiB: a 64 MiB job at 50 IOPS would run for minutes), runtime at most 2 s, ramp_time and startdelay at most 1 s, loops at most 2
(fsx.fio asks for 500,000), ${FIO_DIR} is the scratch folder, and every absolute
path (a device, a mount point) moves into a scratch folder (a tmpfs as root), where each named file is created
at 64 MiB first, as a device of that size would be. Then the file runs under `fsmeter run` and, when fio is
installed, under fio in a scratch folder of its own (cpp_null.fio's plugin engine, fio's null engine built
as C++, runs there as fio's built-in null engine). Per file the report says: ran, refused (the error line),
or crashed (any other exit, a traceback, a timeout); and, for runs that are not time-based, whether the bytes
and I/O counts of each job and direction are fio's (random read/write mixes: the total within 2%, and each
direction within 5% of the total or three binomial standard deviations, whichever is larger).

--blockers also counts what stops the refused files: it removes each refused line in turn (a job header the
concurrency refusal names counts as "concurrent jobs") until the file plans, and counts each option once per
file, as the totals of a to-do list.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCALE_BYTES = 64 << 20
SIZE_OPTS = ("size", "filesize", "io_size", "io_limit", "offset", "offset_increment")
ENV = {"FIO_BS": "4k", "FIO_IODEPTH": "1", "FIO_RW": "randread"}
#: fio's file and directory engines -> the operation fsmeter counts for each of their I/Os.
NAME_ENGINES = {"filecreate": "create", "filestat": "stat", "filedelete": "delete", "dircreate": "create",
                "dirstat": "stat", "dirdelete": "delete"}


def examples(checkout: Path) -> dict:
    """name -> text of examples/*.fio, from a bare clone (git show) or a work tree."""
    if (checkout / "examples").is_dir():
        return {p.name: p.read_text(errors="replace") for p in sorted((checkout / "examples").glob("*.fio"))}
    git = ["git", "--git-dir", str(checkout)]
    names = subprocess.run([*git, "ls-tree", "--name-only", "HEAD", "examples/"], capture_output=True, text=True,
                           check=True).stdout.split()
    return {Path(n).name: subprocess.run([*git, "show", f"HEAD:{n}"], capture_output=True, text=True,
                                         errors="replace", check=True).stdout
            for n in names if n.endswith(".fio")}


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


def scale(text: str, root: Path) -> tuple:
    """(scaled text, files to create at 64 MiB, directories to create)."""
    out, files, dirs = [], set(), set()
    cap = _rate_cap(text)
    for raw in text.splitlines():
        line = raw.strip()
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.split("#")[0].split(";")[0].strip() if sep else value
        if not sep or line[:1] in "#;[":
            out.append(raw)
            continue
        if key in SIZE_OPTS:
            b = _bytes(value)
            limit = cap if key not in ("offset", "offset_increment") else SCALE_BYTES
            if b is not None and b > limit:
                value = str(limit)
        elif key in ("runtime", "timeout"):
            s = _secs(value)
            value = "2s" if s is None or s > 2 else value
        elif key == "loops" and value.isdigit() and int(value) > 2:
            value = "2"
        elif key in ("ramp_time", "startdelay"):
            s = _secs(value)
            value = "1s" if s is None or s > 1 else value
        elif key == "filename":
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


def fsmeter_cmd() -> list:
    venv = ROOT / ".venv" / "bin" / "fsmeter"
    return [str(venv)] if venv.exists() else [sys.executable, "-m", "fsmeter"]


def _run(cmd: list, timeout: int, **kw) -> subprocess.CompletedProcess:
    """subprocess.run in a session of its own: on a timeout the whole process group is killed, so the
    job processes fio forks (which outlive their parent when it alone is killed) do not stay behind,
    holding the scratch mount busy."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, 9)
        except ProcessLookupError:
            pass
        p.communicate()
        raise
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def run_fsmeter(job: Path, root: Path, out: Path, timeout: int) -> dict:
    text = job.read_text()
    absolute = re.search(r"^(directory|filename)=/", text, re.M) is not None
    cmd = [*fsmeter_cmd(), "run", str(job), "-q", "--json", str(out), "--cache", "keep"]
    if not absolute:
        cmd += ["--dir", str(root)]
    try:
        r = _run(cmd, timeout, cwd=root, env={**os.environ, **ENV, "FIO_DIR": str(root), "COLUMNS": "200"})
    except subprocess.TimeoutExpired:
        return {"status": "crashed", "why": f"no answer in {timeout} s"}
    err = r.stderr.strip()
    if r.returncode == 0:
        return {"status": "ran", "doc": json.loads(out.read_text())}
    if r.returncode == 2 and err.startswith("fsmeter: error:") and "\n" not in err:
        return {"status": "refused", "why": err[len("fsmeter: error: "):].replace(str(job), job.name)}
    return {"status": "crashed", "why": f"exit {r.returncode}: {err[-400:]}"}


def run_fio(job: Path, root: Path, out: Path, timeout: int) -> dict:
    try:
        r = _run(["fio", "--output-format=json", f"--output={out}", str(job)], timeout, cwd=root,
                 env={**os.environ, **ENV, "FIO_DIR": str(root)})
    except subprocess.TimeoutExpired:
        return {"status": "failed", "why": f"no answer in {timeout} s"}
    try:
        text = out.read_text()
        text = _without_error_log(text)
        doc = json.loads(text[text.find("{"):])  # fio may log a warning ahead of its JSON in the same file
    except (OSError, ValueError):
        return {"status": "failed", "why": f"exit {r.returncode}: {r.stderr.strip()[-300:]}"}
    per: dict = {}
    calls: dict = {}
    for j in doc.get("jobs", []):  # clones without group_reporting are jobs of their own
        acc = per.setdefault(j["jobname"], {"read": [0, 0], "write": [0, 0]})
        for d in ("read", "write"):
            acc[d][0] += j[d]["io_bytes"]
            acc[d][1] += j[d]["total_ios"]
            # The file and directory engines time their create/stat/delete as the I/O's latency: one sample each.
            calls[j["jobname"]] = calls.get(j["jobname"], 0) + ((j[d].get("clat_ns") or {}).get("N") or 0)
    return {"status": "ran" if r.returncode == 0 else "failed", "jobs": per, "calls": calls,
            "why": r.stderr.strip()[-300:] if r.returncode else ""}


def compare(doc: dict, fio: dict) -> tuple:
    """(verdict, details) of fsmeter's work against fio's, per job and direction."""
    out, ok, compared = [], True, 0
    for name, info in doc.get("jobs", {}).items():
        params = (info.get("job") or {}).get("workload") or {}
        if params.get("total_bytes") is None:
            out.append(f"{name}: time-based")
            continue
        want = fio["jobs"].get(name)
        if want is None:
            out.append(f"{name}: not in fio's output")
            ok = False
            continue
        # A job of a group of concurrent jobs is measured in its group's phase, under jobs[NAME].
        phase = doc["phases"].get(f"{info.get('phase') or name}:run", {})
        ops = ((phase.get("jobs") or {}).get(name) or phase).get("ops", {})
        if params.get("fio_engine") in NAME_ENGINES:
            # fio's file and directory engines: one create, stat or removal per name, each timed (a latency sample);
            # fsmeter counts them as its create, stat and delete operations.
            kind = NAME_ENGINES[params["fio_engine"]]
            n, fn = ops.get(kind, {}).get("count", 0), fio.get("calls", {}).get(name)
            compared += 1
            ok &= n == fn
            out.append(f"{name}: {'same' if n == fn else 'DIFFERENT'} fsmeter {n} {kind} fio {fn}")
            continue
        job_rep = (phase.get("jobs") or {}).get(name) or phase
        got = {d: [ops.get(d, {}).get("bytes", 0), ops.get(d, {}).get("count", 0) + _failed_ios(job_rep, d)]
               for d in ("read", "write")}
        mix = got["read"][1] and got["write"][1] and any(e.get("random_pct") for e in params.get("entries", []))
        compared += 1
        if mix:
            tot = [sum(got[d][i] for d in got) for i in (0, 1)]
            tw = [sum(want[d][i] for d in want) for i in (0, 1)]
            # Each request's direction is a draw (fsmeter) or a run of draws (fio): the split of n requests with
            # read share p varies by sqrt(n p (1 - p)) on each side; allowed: 5% of n or three of those,
            # whichever is larger (a file with 128 I/Os may differ by 17, one with 100,000 by 5,000).
            es = params.get("entries", [])
            p = sum(e["weight"] * e["read_pct"] for e in es) / max(sum(e["weight"] for e in es), 1e-9) / 100
            slack = max(0.05 * tw[1], 3 * math.sqrt(tw[1] * p * (1 - p)))
            good = all(abs(tot[i] - tw[i]) <= 0.02 * max(tw[i], 1) for i in (0, 1)) and all(
                abs(got[d][1] - want[d][1]) <= slack for d in got)
        else:
            good = got == want
        ok &= good
        out.append(f"{name}: {'same' if good else 'DIFFERENT'} fsmeter {got} fio {want}")
    verdict = "no comparable job" if not compared else ("same work" if ok else "different work")
    return verdict, out


def _without_error_log(text: str) -> str:
    """fio's JSON output file without the error lines fio writes into it while it runs (a failed request: "fio:
    io_u error on file ..."), which can land inside the JSON, mid-line (fill_device's ENOSPC does)."""
    return re.sub(r"fio: (io_u error|pid=\d+, err=)[^\n]*\n", "", text)


def _failed_ios(job_rep: dict, direction: str) -> int:
    """Requests of a direction that failed and that fio counts in its total_ios: those gone on after
    (continue_on_error, fsmeter's `errors`) and, for writes, the one that met ENOSPC in a fill_device job."""
    errs = (job_rep.get("extra") or {}).get("errors") or {}
    n = sum((errs.get("by_errno") or {}).get(direction, {}).values())
    return n + (errs.get("filled", 0) if direction == "write" else 0)


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", nargs="?", default=os.environ.get("FIO_GIT", str(HERE / "peers" / "fio.git")))
    ap.add_argument("--only", nargs="*", default=None, help="example file names to run")
    ap.add_argument("--no-fio", action="store_true", help="do not run fio")
    ap.add_argument("--blockers", action="store_true", help="count what stops the refused files")
    ap.add_argument("--json", default=None, help="write every file's outcome here")
    ap.add_argument("--timeout", type=int, default=120)
    args = ap.parse_args()
    checkout = Path(args.checkout)
    if not checkout.exists():
        print(f"no fio checkout at {checkout}: clone axboe/fio there or set FIO_GIT", file=sys.stderr)
        return 2
    files = examples(checkout)
    os.environ.update(ENV)  # for --blockers, which plans in this process
    if args.only:
        files = {k: v for k, v in files.items() if k in args.only or k.removesuffix(".fio") in args.only}
    have_fio = shutil.which("fio") is not None and not args.no_fio
    scratch = Path(tempfile.mkdtemp(prefix="fsmeter-fio-examples-"))
    mounted = False
    if os.geteuid() == 0:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3g", "fsmeter-fio-examples", str(scratch)],
                                 capture_output=True).returncode == 0
    results: dict = {}
    try:
        for name, text in files.items():
            fs_root, fio_root, jobs = scratch / "fsm", scratch / "fio", scratch / "jobs"
            jobs.mkdir(exist_ok=True)
            res: dict = {}
            scaled, made, dirs = scale(text, fs_root)
            prepare_root(fs_root, made, dirs)
            job = jobs / name
            job.write_text(scaled)
            r = run_fsmeter(job, fs_root, scratch / "fsm.json", args.timeout)
            res["fsmeter"] = r["status"]
            res["why"] = r.get("why", "")
            if r["status"] == "refused" and args.blockers:
                os.environ["FIO_DIR"] = str(fs_root)
                res["blockers"] = blockers(scaled, scratch / "plan")
            if r["status"] == "ran":
                res["jobs"] = sorted(r["doc"].get("jobs", {}))
                if have_fio:
                    fscaled, fmade, fdirs = scale(text, fio_root)
                    prepare_root(fio_root, fmade, fdirs)
                    fjob = jobs / ("fio-" + name)
                    # cpp_null is fio's null engine built as a C++ plugin, which a stock fio cannot load: fio runs
                    # the same engine built in (ioengine=null), as fsmeter does.
                    fjob.write_text(re.sub(r"(?m)^ioengine=cpp_null\s*$", "ioengine=null", fscaled))
                    f = run_fio(fjob, fio_root, scratch / "fio.json", args.timeout)
                    if f["status"] != "ran" and not f.get("jobs"):
                        res["fio"] = f"fio failed: {f['why']}"
                    else:
                        res["fio"], res["compare"] = compare(r["doc"], f)
                    shutil.rmtree(fio_root, ignore_errors=True)
            shutil.rmtree(fs_root, ignore_errors=True)
            results[name] = res
            line = f"{name:40s} {res['fsmeter']:8s} {res.get('fio', '')}"
            if res["fsmeter"] != "ran":
                line += f" {res['why'][:150]}"
            print(line, flush=True)
            for c in res.get("compare", []) if res.get("fio") == "different work" else []:
                print(f"    {c}", flush=True)
    finally:
        if mounted:
            subprocess.run(["umount", str(scratch)], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    counts = Counter(r["fsmeter"] for r in results.values())
    work = Counter(r["fio"] for r in results.values() if "fio" in r)
    print(f"\n{len(results)} files: " + ", ".join(f"{n} {k}" for k, n in counts.most_common()))
    if work:
        print("against fio: " + ", ".join(f"{n} {k}" for k, n in work.most_common()))
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
    sys.exit(main())
