#!/usr/bin/env python3
"""fsmeter benchmarks, side by side with the real peers (fio, postmark, fs_mark,
dbench, ...) in one run, reported as ratios. Not tests: timings are noisy, so
nothing here fails a build; it prints the figures and writes bench/out/results.json.

Each bench/bench_*.py defines run(ctx) -> list of rows (ctx.row(...)).
Usage: python bench/run.py [--quick] [--only NAME[,NAME]]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
#: Peers that are not Debian packages are built from git directories (bare clones) under here by default.
PEERS = REPO / "bench" / "peers"


@dataclass
class CmdResult:
    rc: int
    stdout: str
    stderr: str
    wall_s: float
    #: Peak resident set of the child, from wait4's rusage.
    maxrss_kb: int


class BenchError(RuntimeError):
    pass


class Ctx:
    def __init__(self, quick: bool):
        self.quick = quick
        self.python = sys.executable
        #: Whether the last loopfs() device does direct I/O on its image (None before any).
        self.loop_dio: bool | None = None

    def seconds(self, full: float, quick: float) -> float:
        return quick if self.quick else full

    def rounds(self, env: str, full: int, quick: int) -> int:
        """Paired rounds for a bench: `full` (`quick` with --quick), or the whole number 3 to 99 that the
        environment variable `env` gives, for a tighter interval on a row whose rounds swing."""
        raw = os.environ.get(env, "").strip()
        if not raw:
            return quick if self.quick else full
        if not raw.isdigit() or not 3 <= int(raw) <= 99:
            raise SystemExit(f"{env}: {raw!r}: give a whole number of rounds from 3 to 99")
        return int(raw)

    def cmd(
        self, args: list, cwd=None, timeout: float | None = None, env=None, check: bool = True, stdin: str | None = None
    ) -> CmdResult:
        """Run a command; its peak RSS comes from wait4 (per child, unlike RUSAGE_CHILDREN)."""
        args = [str(a) for a in args]
        with (
            tempfile.TemporaryFile("w+") as out,
            tempfile.TemporaryFile("w+") as err,
            tempfile.TemporaryFile("w+") as inp,
        ):
            if stdin is not None:
                inp.write(stdin)
                inp.seek(0)
            t0 = time.monotonic()
            p = subprocess.Popen(args, cwd=cwd, env=env, stdout=out, stderr=err, stdin=inp, text=True)
            deadline = None if timeout is None else t0 + timeout
            while True:
                pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                if deadline is not None and time.monotonic() > deadline:
                    p.kill()
                    os.wait4(p.pid, 0)
                    raise BenchError(f"timed out after {timeout} s: {' '.join(args)}")
                time.sleep(0.01)
            wall = time.monotonic() - t0
            p.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            res = CmdResult(p.returncode, out.read(), err.read(), wall, ru.ru_maxrss)
        if check and res.rc != 0:
            self.fail(args, res)
        return res

    @staticmethod
    def fail(args: list, res: CmdResult) -> None:
        """Raise for a failed command; its whole output goes to a file, since a peer's reason can
        sit anywhere in it."""
        args = [str(a) for a in args]
        OUT.mkdir(parents=True, exist_ok=True)
        log = OUT / f"failed-{time.strftime('%H%M%S')}-{os.getpid()}-{res.rc}.log"
        log.write_text(f"$ {' '.join(args)}\nexit {res.rc}\n--- stdout\n{res.stdout}\n--- stderr\n{res.stderr}\n")
        raise BenchError(f"{' '.join(args)} exited {res.rc}: {_why(res)} (whole output: {log})")

    def fsmeter(self, workload: str, dir, sets: dict, keep_files: bool = False, cache: str = "auto") -> dict:
        """`fsmeter run` as a subprocess; its JSON document plus _wall_s and _maxrss_kb."""
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            out = f.name
        try:
            args = [
                self.python,
                "-m",
                "fsmeter",
                "run",
                workload,
                "--dir",
                str(dir),
                "-q",
                "--json",
                out,
                "--cache",
                cache,
            ]
            for k, v in sets.items():
                args += ["--set", f"{k}={v}"]
            if keep_files:
                args.append("--keep-files")
            res = self.cmd(args)
            doc = json.loads(Path(out).read_text())
        finally:
            os.unlink(out)
        doc["_wall_s"] = res.wall_s
        doc["_maxrss_kb"] = res.maxrss_kb
        return doc

    @contextlib.contextmanager
    def tmpfs(self, size: str = "2G") -> Iterator[Path]:
        """A fresh tmpfs (root only), unmounted and removed afterwards whatever happens."""
        if os.geteuid() != 0:
            raise BenchError("tmpfs benchmarks need root")
        d = tempfile.mkdtemp(prefix="fsmeter-bench-tmpfs-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "fsmeter-bench", d], check=True)
        try:
            yield Path(d)
        finally:
            # A ring of io_uring lets go of its files after its process has exited (the kernel's
            # workqueue does it): an umount right after can find the tmpfs busy. Tried again, as
            # fsmeter's own unmounts are.
            for attempt in range(6):
                if subprocess.run(["umount", d], check=False, capture_output=True).returncode == 0:
                    break
                time.sleep(0.5 * (attempt + 1))
            os.rmdir(d)

    @contextlib.contextmanager
    def loopfs(self, fs: str = "ext4", size: str = "1G", in_ram: bool = False) -> Iterator[Path]:
        """A fresh filesystem on a loop image in a private scratch folder, torn down afterwards.
        `in_ram`: the image lives on a tmpfs of its own (the loop device still does direct I/O on
        it), so the "device" is memory: a steady one where the virtual disk's speed swings."""
        from fsmeter.units import parse_size

        with self.tmpfs(str(parse_size(size) + (256 << 20))) if in_ram else contextlib.nullcontext() as ram:
            with self._loopfs(fs, parse_size(size), ram) as d:
                yield d

    @contextlib.contextmanager
    def _loopfs(self, fs: str, size: int, ram: Path | None) -> Iterator[Path]:
        from fsmeter.provision import FsConfig, Provisioner, TargetSpec

        scratch = tempfile.mkdtemp(prefix="fsmeter-bench-scratch-", dir=ram or "/var/tmp")
        try:
            with Provisioner(scratch=scratch) as prov:
                mnt = prov.create(TargetSpec(kind="loop", size_bytes=size), FsConfig(name=fs))
                try:
                    # The loop device must do direct I/O on its image (losetup --direct-io=on), else the
                    # host's page cache sits under the "device" and a device-bound case measures memory.
                    self.loop_dio = loop_direct_io(mnt.device)
                    yield Path(mnt.path)
                finally:
                    prov.destroy(mnt)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    @staticmethod
    def row(
        case: str,
        metric: str,
        fsmeter_value: float | None,
        peer_value: float | None,
        peer_name: str,
        target: float | None = None,
        higher_is_better: bool = True,
        notes: str = "",
        target_max: float | None = None,
        ratio: float | None = None,
        pairs: list | None = None,
    ) -> dict:
        """`target`: the lowest ratio that meets the target; `target_max`, when given, the highest
        (a two-sided target such as "within 10%": fsmeter much faster than the peer on a
        device-bound case means the two did not do the same work). `ratio`, when given, is the
        row's ratio instead of fsmeter_value / peer_value. `pairs`, when given, are paired ratios
        (each round's fsmeter / peer, the two runs made back to back, which the host's drift moves
        less than a ratio of two medians), oriented as the row's ratio (above 1: fsmeter better):
        the row's ratio is their median, and `ci` a confidence interval for it at `ci_level`
        (see paired_ci)."""
        ci = None
        if pairs:
            ratio = statistics.median(pairs)
            ci = paired_ci(pairs)
        if ratio is None and fsmeter_value is not None and peer_value:
            ratio = fsmeter_value / peer_value if higher_is_better else peer_value / fsmeter_value
        met = None
        if target is not None and ratio is not None:
            met = ratio >= target and (target_max is None or ratio <= target_max)
        # A miss whose interval still reaches the target range: the rounds spread too widely to
        # tell the median from the target (more rounds, or a steadier machine, would decide it).
        within = None
        if met is False and ci is not None:
            within = ci[1] >= target and (target_max is None or ci[0] <= target_max)
        return {
            "case": case,
            "metric": metric,
            "fsmeter": fsmeter_value,
            "peer": peer_value,
            "peer_name": peer_name,
            "ratio": ratio,
            "target": target,
            "target_max": target_max,
            "met": met,
            "pairs": pairs,
            "ci": ci[:2] if ci else None,
            "ci_level": ci[2] if ci else None,
            "miss_within_ci": within,
            "notes": notes,
        }


#: Confidence level of a paired row's interval for its median ratio.
CI_LEVEL = 0.90


def paired_ci(pairs: list) -> list | None:
    """A distribution-free interval for the median of `pairs` at CI_LEVEL or more, and the level
    it reaches: the order statistics of the binomial sign test (scipy.stats.quantile_test). It
    needs no normality, which a handful of noisy rounds cannot show, but it does take the rounds
    as independent draws of one distribution (the machine's drift between rounds weakens that).
    With 5 rounds it is [min, max] at 93.75% (each round falls below the median with probability
    1/2, so all 5 land on one side with probability 2/32); fewer than 5 rounds cannot reach 90%,
    and give None. Returns [low, high, level]."""
    from scipy.stats import binom, quantile_test

    ci = quantile_test(pairs, q=statistics.median(pairs), p=0.5).confidence_interval(CI_LEVEL)
    if math.isnan(ci.low) or math.isnan(ci.high):
        return None
    k = sorted(pairs).index(ci.low)  # the interval is [x(k+1), x(n-k)]: k rounds left out on each side
    level = 1.0 - 2.0 * float(binom.cdf(k, len(pairs), 0.5))  # P(more than k rounds on neither side)
    return [float(ci.low), float(ci.high), level]


def _why(res: CmdResult) -> str:
    """What a failed command said: its lines naming an error (an MPI job's own message comes
    before mpirun's long abort notice, which would fill a plain tail), else stderr's tail."""
    lines = [ln.strip() for ln in (res.stderr + "\n" + res.stdout).splitlines()]
    named = [ln for ln in lines if re.search(r"ERROR|[Ee]rror:|errno|[Ff]ailed", ln)]
    return " | ".join(named[:6])[:800] if named else res.stderr.strip()[-800:]


def loop_direct_io(device: str | None) -> bool:
    """True when the loop device does direct I/O on its backing file; switches it on if it does not."""
    if not device:
        return False
    flag = Path(f"/sys/block/{os.path.basename(device)}/loop/dio")
    try:
        if flag.read_text().strip() != "1":
            subprocess.run(["losetup", "--direct-io=on", device], check=False, capture_output=True)
        return flag.read_text().strip() == "1"
    except OSError:
        return False


@contextlib.contextmanager
def hugetlb_pages(extra: int):
    """`extra` more 2 MiB hugetlb pages reserved, the machine's own setting put back afterwards."""
    knob = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
    before = int(knob.read_text())
    knob.write_text(str(before + extra))
    try:
        if int(knob.read_text()) < before + extra:
            raise RuntimeError(f"could reserve only {int(knob.read_text()) - before} of {extra} huge pages")
        yield
    finally:
        knob.write_text(str(before))


def loop_reads(d: Path) -> int:
    """Read requests completed so far by the loop device holding the filesystem at `d`
    (/sys/block/loopN/stat, first field)."""
    dev = subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE", "--target", str(d)], capture_output=True, text=True
    ).stdout.strip()
    return int((Path("/sys/block") / Path(dev).name / "stat").read_text().split()[0])


def _modules(only: set | None) -> list:
    mods = []
    for path in sorted((REPO / "bench").glob("bench_*.py")):
        name = path.stem[len("bench_") :]
        if only and name not in only:
            continue
        spec = importlib.util.spec_from_file_location(f"fsmeter_bench_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mods.append((name, mod))
    return mods


def _target(r: dict) -> str:
    if r.get("target_max") is not None:
        return f"{_fmt(r['target'])}..{_fmt(r['target_max'])}"
    return _fmt(r["target"])


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 100 else f"{v:,.0f}"
    return str(v)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shorter runs (figures are less stable)")
    ap.add_argument("--only", default="", help="comma-separated bench names (access, fileset, tree, replay, ...)")
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    console = Console()
    # Timed start-ups are a user's second run: the package's bytecode written. A shell with
    # PYTHONDONTWRITEBYTECODE (or a fresh editable install) would otherwise compile every changed
    # module from source in each timed fsmeter process.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parent.parent / "python" / "fsmeter")],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    ctx = Ctx(quick=args.quick)
    only = {s.strip() for s in args.only.split(",") if s.strip()} or None
    rows = []
    for name, mod in _modules(only):
        console.print(f"[bold]bench {name}[/] ...")
        t0 = time.monotonic()
        try:
            got = mod.run(ctx)
        except Exception as exc:  # one bench failing must not lose the others' figures
            traceback.print_exc()
            got = [Ctx.row(name, "error", None, None, "-", notes=f"{type(exc).__name__}: {exc}")]
        for r in got:
            r["bench"] = name
        rows += got
        console.print(f"  {len(got)} row(s) in {time.monotonic() - t0:.0f} s")
    t = Table(title="fsmeter vs peers (ratio > 1: fsmeter better)")
    for col in ("bench", "case", "metric", "fsmeter", "peer", "ratio", "CI (level)", "target", "met", "notes"):
        t.add_column(col, overflow="fold")
    for r in rows:
        met = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[r["met"]]
        if r.get("miss_within_ci"):
            met = "[yellow]no, CI reaches it[/]"
        ci = f"{_fmt(r['ci'][0])}..{_fmt(r['ci'][1])} ({r['ci_level']:.1%})" if r.get("ci") else "-"
        t.add_row(
            r["bench"],
            r["case"],
            r["metric"],
            _fmt(r["fsmeter"]),
            f"{_fmt(r['peer'])} ({r['peer_name']})",
            _fmt(r["ratio"]),
            ci,
            _target(r),
            met,
            r["notes"],
        )
    console.print(t)
    if any(r.get("ci") for r in rows):
        console.print(
            f"CI: a paired row's confidence interval (at {CI_LEVEL:.0%} or more; its level in brackets) for "
            "its median ratio, from the rounds' paired ratios (sign-test order statistics; with 5 rounds, "
            'their min..max at 93.75%). "no, CI reaches it": the median missed the target, but the '
            "interval reaches it."
        )
    OUT.mkdir(parents=True, exist_ok=True)
    doc = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": platform.node(),
        "kernel": platform.release(),
        "quick": args.quick,
        "rows": rows,
    }
    (OUT / "results.json").write_text(json.dumps(doc, indent=1))
    console.print(f"wrote {OUT / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
