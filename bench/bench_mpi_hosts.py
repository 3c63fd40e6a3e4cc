"""Benchmark: fsmeter under MPI against IOR and mdtest across two hosts, on one GlusterFS volume.

`python bench/run.py --only mpi_hosts [--quick]` (root; Open MPI, mpi4py, GlusterFS).

The cluster: two network-namespace hosts h1 and h2 (fsmeter.provision.nshosts, two MPI slots each) and a
distribute volume (fsmeter.provision.gluster) with one brick on h2, an xfs made by fsmeter on a loop
image (FSMETER_BENCH_HOSTS_BRICK_FS=ext4 for another), the image on a tmpfs so that the device
under the brick is memory, a steady one, where this machine's virtual disk is not. Both hosts
mount the volume through their own FUSE client at one common path, the volume keeping Gluster's
default options. The bench makes it once and every run of either tool measures it: the same
hosts, the same volume, the same brick. Layouts: 1 and 2 ranks per host (2 and 4 ranks),
`mpirun --map-by ppr:K:node` launched from h1 through the harness's rsh agent, so ranks 0..K-1 run
on h1 and the next K on h2 (by slot: IOR's -C and fsmeter's --reorder-shift node both shift by K).

The peers are built from the public hpc/ior source (a bare git clone: $IOR_GIT, else
bench/peers/ior.git) as bench_mpi builds them (`git archive HEAD`, bootstrap, configure with the
Debian Open MPI's mpicc, make); the build is kept in bench/out/ior-COMMIT and reused while the
clone's HEAD stays the same.

Every command of either tool is `mpirun -n 2K --map-by ppr:K:node ...` on the hosts, with the same
Open MPI and the same mpirun arguments (the harness's: hostfile, rsh agent, TCP over the hosts'
private network only). Same work on both sides:
- Metadata, mdtest-style: `mdtest -n N -u -F -w 4096 -C -T -r -i 1 -d DIR` (each rank creates N
  files of 4 KiB in its own directory, stats them, removes them; the rate of each phase is mdtest's
  mean of its one iteration). fsmeter: `fsmeter run fdtree-quick` with the tree family as mdtest
  runs (levels=0, files_per_dir=N, file_blocks=1, names as long as mdtest's: bench_mpi's
  MDTEST_LIKE), phases create, stat, remove. Each tool in a directory of its own, made fresh on the
  volume for the run (bench_mpi gives each tool a fresh filesystem; a volume cannot be made fresh
  in seconds, so here each round starts in an empty directory of the one volume).
- Data, file per process: IOR-easy `-F -t 1m -b B`, buffered. A round: each tool lays its files
  out, unmeasured (IOR: `ior -w -k`; fsmeter: `seq-write --keep-files` with total_bytes 1M, whose
  prepare phase writes the whole file), then the two measured writes back to back (IOR:
  `ior -w -k -E -e`, rewriting the existing files, fsync at close; fsmeter: seq-write with
  reuse_files=true and fsync_end), then the two measured reads back to back (IOR: `ior -r -k -E`;
  fsmeter: seq-read with reuse_files=true). fsmeter: file_size = total_bytes = B, record_size 1M,
  duration none, warm-up 0, `--cache drop`; the bench drops the caches (sync, drop_caches: one
  kernel, so every client's and the brick's) before every measured run of either tool. IOR's rate
  is its Max(MiB) of one repetition; fsmeter's the merged run phase's MiB/s.
- Data, shared file: IOR without -F (rank r on block r of one file, one segment), its read with -C
  (each rank reads the block a rank of the other host wrote); fsmeter: the same seq-write /
  seq-read with `--shared-file --reorder-shift node`, its prepare laying its region out again
  before each of its runs (a shared file cannot be reused), unmeasured.

Every case runs `rounds` rounds (5; 1 with --quick; FSMETER_BENCH_HOSTS_ROUNDS=N), the tool going
first alternating from round to round; FSMETER_BENCH_HOSTS_CASE=TEXT runs only the cases whose
name holds TEXT. A row's ratio is the median over the rounds of the round's fsmeter / peer (a
paired ratio: two runs seconds apart on the same volume), its values each side's median, its CI
the sign test's interval for that median (bench/run.py paired_ci: with 5 rounds, min..max at
93.75%), as bench_mpi reports them. Targets: metadata >= 1.0, buffered data >= 0.95. The notes
give each side's range, fsmeter's per-rank imbalance and the hosts each tool reported running on.

Namespace hosts share one kernel, one page cache and the CPUs, and their network has no latency:
these rows compare what the two tools make a FUSE client, glusterd's bricks and the loop device do
on this machine, not how a cluster performs (docs: hosts.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from bench_mpi import DEFAULT_GIT, LINE_BUFFERED, MDTEST_LIKE, MPI_ENV, build_ior, drop_caches
from run import OUT, BenchError

#: Rounds a case runs (5; 1 with --quick): FSMETER_BENCH_HOSTS_ROUNDS=N to narrow an interval.
ROUNDS_ENV = "FSMETER_BENCH_HOSTS_ROUNDS"
CASE_ENV = "FSMETER_BENCH_HOSTS_CASE"
BRICK_FS_ENV = "FSMETER_BENCH_HOSTS_BRICK_FS"
#: Runs of IOR that printed their result and then had a rank exit improperly in MPI's teardown
#: (bench_mpi saw it on one host): the figure stands, and an info row counts them.
TEARDOWN_EXITS: list = []


def peers() -> tuple:
    """(ior, mdtest), built once per commit of the clone and kept under bench/out."""
    git = os.environ.get("IOR_GIT", DEFAULT_GIT)
    if not Path(git).exists():
        raise BenchError(f"IOR source not found at {git}: set IOR_GIT to a git directory of hpc/ior")
    head = subprocess.run(
        ["git", f"--git-dir={git}", "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    kept = OUT / f"ior-{head[:12]}"
    ior, mdtest = kept / "src" / "ior", kept / "src" / "mdtest"
    if not (ior.is_file() and mdtest.is_file()):
        OUT.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="ior-build-", dir=OUT))
        try:
            build_ior(scratch)
            shutil.rmtree(kept, ignore_errors=True)
            scratch.rename(kept)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return ior, mdtest


class Cluster:
    """The hosts and the volume, and the one way every command of the bench is launched on them."""

    def __init__(self, ctx, hosts, vol):
        self.ctx, self.hosts, self.vol = ctx, hosts, vol
        self.env = {**os.environ, **MPI_ENV}
        self.serial = 0

    def mpirun(self, per_host: int, argv: list) -> list:
        return self.hosts.mpirun(2 * per_host, [str(a) for a in argv], extra=["--map-by", f"ppr:{per_host}:node"])

    def run(self, per_host: int, argv: list, check: bool = True):
        return self.ctx.cmd(self.mpirun(per_host, argv), env=self.env, timeout=1800, check=check)

    def fresh(self, name: str) -> tuple:
        """A new empty folder on the volume: (as the hosts see it, as this process sees it)."""
        self.serial += 1
        rel = f"{name}-{self.serial}"
        here = Path(self.vol.mounts[self.hosts.names[0]]) / rel
        here.mkdir()
        return Path(self.vol.path) / rel, here


def fsmeter_mpi(cl: Cluster, per_host: int, workload: str, d: Path, sets: dict, extra: list = ()) -> dict:
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    try:
        argv = [
            cl.ctx.python,
            "-m",
            "fsmeter",
            "run",
            workload,
            "--dir",
            d,
            "-q",
            "--json",
            out,
            "--cache",
            "drop",
            "--min-phase-s",
            "0",
            *extra,
        ]
        for k, v in sets.items():
            argv += ["--set", f"{k}={v}"]
        cl.run(per_host, argv)
        doc = json.loads(out.read_text())
    finally:
        out.unlink()
    want = {"h1": list(range(per_host)), "h2": list(range(per_host, 2 * per_host))}
    if doc["mpi"]["layout"] != want:
        raise BenchError(f"fsmeter's ranks ran as {doc['mpi']['layout']}, not {want}")
    return doc


def _nodes(out: str, pattern: str) -> int:
    m = re.search(pattern, out, re.M)
    return int(m.group(1)) if m else 0


def mdtest_rates(cl: Cluster, mdtest: Path, per_host: int, n: int, d: Path) -> dict:
    res = cl.run(
        per_host, [*LINE_BUFFERED, mdtest, "-n", n, "-u", "-F", "-w", 4096, "-C", "-T", "-r", "-i", 1, "-d", d]
    )
    out = {"nodes": _nodes(res.stdout, r"launched with \d+ total task\(s\) on (\d+) node")}
    for name, key in (("File creation", "create"), ("File stat", "stat"), ("File removal", "remove")):
        m = re.search(rf"^\s*{name}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", res.stdout, re.M)
        if not m:
            raise BenchError(f"mdtest printed no '{name}' rate: {res.stdout[-400:]}")
        out[key] = float(m.group(3))  # the mean of its one iteration
    return out


def ior_rate(cl: Cluster, ior: Path, per_host: int, args: list, what: str) -> dict:
    argv = [*LINE_BUFFERED, ior, "-a", "POSIX", *args]
    res = cl.run(per_host, argv, check=False)
    m = re.search(rf"^{what}\s+([\d.]+)\s+", res.stdout.split("Summary of all tests:")[-1], re.M)
    if res.rc != 0:
        if not (m and re.search(r"^Finished\s+:", res.stdout, re.M)):
            cl.ctx.fail(cl.mpirun(per_host, argv), res)
        TEARDOWN_EXITS.append(" ".join(map(str, args)))
    if not m:
        raise BenchError(f"ior printed no {what} summary: {res.stdout[-400:]}")
    return {"rate": float(m.group(1)), "nodes": _nodes(res.stdout, r"^nodes\s*:\s*(\d+)")}


def _rounds(ctx) -> int:
    return int(os.environ.get(ROUNDS_ENV) or (1 if ctx.quick else 5))


def _in_turn(names: list, r: int) -> list:
    """The order the sides run in round r: reversed every other round."""
    return names if r % 2 == 0 else names[::-1]


def _hosts_note(fsm_docs: list, peer_nodes: list, peer: str) -> str:
    fh = sorted({len(d["mpi"]["hosts"]) for d in fsm_docs})
    return f"hosts: fsmeter {'/'.join(map(str, fh))}, {peer} {'/'.join(map(str, sorted(set(peer_nodes))))}"


def metadata_rows(cl: Cluster, mdtest: Path, per_host: int, n: int, brick: str) -> list:
    from statistics import median

    ctx = cl.ctx

    def peer():
        there, here = cl.fresh("mdtest")
        try:
            return mdtest_rates(cl, mdtest, per_host, n, there / "d")
        finally:
            shutil.rmtree(here, ignore_errors=True)

    def ours():
        there, here = cl.fresh("fsm-tree")
        try:
            return fsmeter_mpi(cl, per_host, "fdtree-quick", there, MDTEST_LIKE | {"files_per_dir": n})
        finally:
            shutil.rmtree(here, ignore_errors=True)

    got: dict = {"peer": [], "fsm": []}
    for r in range(_rounds(ctx)):
        for side in _in_turn(["peer", "fsm"], r):
            got[side].append(peer() if side == "peer" else ours())
    rows = []
    ranks = 2 * per_host
    for ph in ("create", "stat", "remove"):
        mine = [doc["phases"][ph]["total"]["ops_per_s"] for doc in got["fsm"]]
        theirs = [p[ph] for p in got["peer"]]
        imb = median(doc["phases"][ph]["mpi"]["imbalance_pct"] for doc in got["fsm"])
        rows.append(
            ctx.row(
                f"gluster {brick} brick, 2 hosts x {per_host}r, {n} files/rank",
                f"{ph} files/s",
                median(mine),
                median(theirs),
                "mdtest",
                target=1.0,
                pairs=[a / b for a, b in zip(mine, theirs)],
                notes=f"paired ratio, {len(mine)} rounds, {ranks} ranks; fsmeter "
                f"{min(mine):,.0f}..{max(mine):,.0f}, mdtest {min(theirs):,.0f}..{max(theirs):,.0f}; "
                f"imbalance {imb:.0f}%; " + _hosts_note(got["fsm"], [p["nodes"] for p in got["peer"]], "mdtest"),
            )
        )
    return rows


def data_rows(cl: Cluster, ior: Path, per_host: int, block: str, shared: bool, brick: str) -> list:
    """IOR-easy (file per process) or, with `shared`, IOR's shared file read back with -C; buffered."""
    from statistics import median

    ctx = cl.ctx
    sets = {
        "file_size": block,
        "total_bytes": block,
        "record_size": "1M",
        "duration_s": "none",
        "warmup_s": 0,
        "direct": "false",
        "direct_layout": "false",
    }
    reuse = {} if shared else {"reuse_files": "true"}
    mpi_args = ["--shared-file", "--reorder-shift", "node"] if shared else []

    def one_round(k: int) -> dict:
        order = _in_turn(["peer", "fsm"], k)
        got: dict = {"peer": {}, "fsm": {}}
        there, here = cl.fresh("data")
        try:
            d, f = there / "ior", there / "fsm"
            (here / "ior").mkdir()
            (here / "fsm").mkdir()
            common = ["-t", "1m", "-b", block.lower(), "-o", str(d / "f")]
            if not shared:
                common = ["-F", *common]
            ior_rate(cl, ior, per_host, ["-w", "-k", *common], "write")  # IOR's layout, unmeasured
            # fsmeter's layout: its prepare phase writes the whole file; a 1 MiB run, discarded.
            fsmeter_mpi(cl, per_host, "seq-write", f, {**sets, "total_bytes": "1M"}, [*mpi_args, "--keep-files"])
            measured = {
                "seq-write": {
                    "peer": lambda: ior_rate(cl, ior, per_host, ["-w", "-k", "-E", "-e", *common], "write"),
                    "fsm": lambda: fsmeter_mpi(
                        cl,
                        per_host,
                        "seq-write",
                        f,
                        {**sets, **reuse, "fsync_end": "true"},
                        [*mpi_args, "--keep-files"],
                    ),
                },
                "seq-read": {
                    "peer": lambda: ior_rate(
                        cl, ior, per_host, ["-r", "-k", "-E", *(["-C"] if shared else []), *common], "read"
                    ),
                    "fsm": lambda: fsmeter_mpi(
                        cl, per_host, "seq-read", f, {**sets, **reuse}, [*mpi_args, "--keep-files"]
                    ),
                },
            }
            for wl, sides in measured.items():
                for side in order:
                    drop_caches()  # fsmeter drops them again itself before its measured phase (--cache drop)
                    got[side][wl] = sides[side]()
        finally:
            shutil.rmtree(here, ignore_errors=True)
        return got

    rounds = [one_round(k) for k in range(_rounds(ctx))]
    got = {side: [r[side] for r in rounds] for side in ("peer", "fsm")}
    out = []
    layout = "shared file, read -C" if shared else "file/rank"
    for wl in ("seq-write", "seq-read"):
        mine = [doc[wl]["phases"]["run"]["total"]["bytes_per_s"] / 2**20 for doc in got["fsm"]]
        theirs = [p[wl]["rate"] for p in got["peer"]]
        imb = median(doc[wl]["phases"]["run"]["mpi"]["imbalance_pct"] for doc in got["fsm"])
        shift = ""
        if shared:
            shift = f"; fsmeter reorder_shift {got['fsm'][0][wl]['mpi']['files']['reorder_shift']}"
        out.append(
            ctx.row(
                f"gluster {brick} brick, 2 hosts x {per_host}r, {block}/rank {layout} buffered",
                f"{wl.split('-')[1]} MiB/s",
                median(mine),
                median(theirs),
                "ior",
                target=0.95,
                pairs=[a / b for a, b in zip(mine, theirs)],
                notes=f"paired ratio, {len(mine)} rounds, {2 * per_host} ranks; fsmeter "
                f"{min(mine):,.0f}..{max(mine):,.0f}, ior {min(theirs):,.0f}..{max(theirs):,.0f}; "
                f"imbalance {imb:.0f}%{shift}; "
                + _hosts_note([d[wl] for d in got["fsm"]], [p[wl]["nodes"] for p in got["peer"]], "ior"),
            )
        )
    return out


def run(ctx) -> list:
    if os.geteuid() != 0:
        raise BenchError("bench_mpi_hosts needs root (namespace hosts, loop bricks, drop_caches)")
    for tool, why in (
        ("mpirun", "run `make build` as root (it installs openmpi-bin)"),
        ("glusterd", "install the Debian packages glusterfs-server and glusterfs-client"),
    ):
        if shutil.which(tool) is None:
            raise BenchError(f"{tool} not found: {why}")
    from fsmeter.provision import FsConfig, Provisioner
    from fsmeter.provision.gluster import GlusterVolume
    from fsmeter.provision.nshosts import NsHosts
    from fsmeter.units import parse_size

    ior, mdtest = peers()
    # Quick: phases of a fraction of a second to a second or two on this machine's volume.
    n = 200 if ctx.quick else 1000
    block = "64M" if ctx.quick else "256M"
    brick_fs = os.environ.get(BRICK_FS_ENV, "xfs")
    # The brick holds both tools' files of the largest case (4 ranks), and room to spare.
    brick_bytes = 2 * 4 * parse_size(block) + (512 << 20)
    pick = os.environ.get(CASE_ENV, "")
    rows: list = []
    with ctx.tmpfs(str(brick_bytes + (256 << 20))) as ram:
        with Provisioner(scratch=str(ram)) as prov, NsHosts(2, slots=2) as hosts:
            with GlusterVolume(
                hosts,
                prov,
                servers=["h2"],
                clients=["h1", "h2"],
                brick_fs=FsConfig(name=brick_fs),
                brick_bytes=brick_bytes,
            ) as vol:
                cl = Cluster(ctx, hosts, vol)
                info = vol.info()

                def case(name: str, fn) -> None:
                    if pick not in name:
                        return
                    try:  # one case failing is an error row; the others still run
                        rows.extend(fn())
                    except Exception as exc:  # noqa: BLE001 - reported as a row, never lost
                        rows.append(ctx.row(name, "error", None, None, "-", notes=f"{type(exc).__name__}: {exc}"))

                for per_host in (1, 2):
                    case(f"{per_host}r/host metadata", lambda: metadata_rows(cl, mdtest, per_host, n, brick_fs))
                    case(
                        f"{per_host}r/host file per rank",
                        lambda: data_rows(cl, ior, per_host, block, shared=False, brick=brick_fs),
                    )
                    case(
                        f"{per_host}r/host shared file",
                        lambda: data_rows(cl, ior, per_host, block, shared=True, brick=brick_fs),
                    )
                rows.append(
                    ctx.row(
                        "volume",
                        "info",
                        None,
                        None,
                        "-",
                        notes=f"{info['volume_type']} volume, brick {brick_fs} on a loop image in RAM "
                        f"({brick_bytes >> 20} MiB) on h2, clients on h1 and h2; "
                        f"{info['client_version']}",
                    )
                )
    if TEARDOWN_EXITS:
        rows.append(
            ctx.row(
                "ior",
                "runs whose rank exited improperly after the result",
                float(len(TEARDOWN_EXITS)),
                None,
                "-",
                notes="figures kept (IOR printed Finished); " + "; ".join(TEARDOWN_EXITS[:4]),
            )
        )
    return rows
