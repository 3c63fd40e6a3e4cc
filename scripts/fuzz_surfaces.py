#!/usr/bin/env python3
"""Fuzz the command-line surfaces added since the first fuzz (scripts/fuzz_inputs.py): output paths, results
stores altered in structure and values, io500's options, guest kernels and settings, GlusterFS compare values,
compare-runs ids, thresholds and export files, and usage errors of every command. Each input runs through the
real `fsmeter` in a folder of its own and is sorted into an outcome (tests/helpers/fuzz_cli.py): error, ran,
unclean, traceback, panic, hang, escape, acted-on (an input known to be invalid that was acted on).

Usage: scripts/fuzz_surfaces.py [--count N] [--seed S] [--jobs J] [--surfaces a,b] [--keep DIR] [-v]

The same seed gives the same inputs. Nothing long or heavy runs: mpirun and QEMU are stand-ins that leave a
mark and exit 1, and a GlusterFS compare stops at an unknown brick filesystem once its own values passed. Some
surfaces need root (io500 on loop and tmpfs targets, compare --target glusterfs). The surfaces `fio` and
`symlink` (fio job files' log paths and value arithmetic; links planted in --dir under the names a family
writes) belong to the engine's and the fio mapping's own hardening: `--surfaces all` adds them.
Every input whose outcome is a defect is saved under --keep with its command line.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import copy
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "helpers"))
from fuzz_cli import BAD, OUTCOMES, Case, run_case  # noqa: E402  (tests/helpers is not a package)
from store_damage import DAMAGES, drop_column, rename_table, set_first  # noqa: E402

QUICK_RUN = ["--set", "duration_s=0.2", "--set", "warmup_s=0", "--set", "file_size=1M", "--min-phase-s", "0"]
IO500_SMALL = [
    "--stonewall-s",
    "1",
    "--ior-easy-block",
    "4M",
    "--ior-hard-segments",
    "10",
    "--mdtest-easy-files",
    "10",
    "--mdtest-hard-files",
    "10",
]
#: A file that carries the x86 boot header (what the kernel check reads) and nothing else.
STAND_IN_KERNEL = bytes(0x202) + b"HdrS" + bytes(512)


# -- shared inputs ---------------------------------------------------------------------------------------------
def _sample_store(folder: Path) -> Path:
    """A small sound store (tests/helpers/store_sample.py), made once and copied into each case."""
    from store_sample import fill

    path = folder / "sample.sqlite"
    fill(path)[0].close()
    return path


def _copy_store(sample: Path, name: str = "s.sqlite"):
    return lambda work: shutil.copyfile(sample, work / name)


def _other_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.commit()
    conn.close()


def _store_healthy(path: Path) -> bool:
    from fsmeter.store.health import check

    try:
        return check(path).healthy
    except Exception:  # noqa: BLE001  (a file store check cannot read at all is not healthy)
        return False


def _outside_check(*paths: str):
    """A check that the named paths outside the case's folder were not created (and removes them if they were)."""

    def check(work, proc):
        for p in paths:
            if os.path.lexists(p):
                try:
                    os.unlink(p)
                except OSError:
                    pass
                return f"created {p}"
        return ""

    return check


# -- usage errors ----------------------------------------------------------------------------------------------
def usage_cases(rnd: random.Random, n: int, ctx: dict) -> list:
    typed = [
        ["run", "seq-read", "--dir", "{work}/d", "--min-phase-s", "x"],
        ["io500", "--ranks", "x"],
        ["io500", "--ranks", "0"],
        ["io500", "--hosts", "99"],
        ["io500", "--stonewall-s", "soon"],
        ["io500", "--ior-hard-segments", "1.5"],
        ["io500", "--mpi-timeout-s", "x"],
        ["compare", "--trials", "x"],
        ["compare", "--ranks", "0"],
        ["compare", "--hosts", "17"],
        ["compare", "--quick-scale", "0"],
        ["compare-runs", "1", "2", "--threshold", "x"],
        ["compare-runs", "1", "2", "--alpha", "x"],
        ["report", "--level", "x"],
        ["report", "--threshold", "-1"],
        ["analyze", "--level", "x"],
    ]
    missing = [
        ["merge", "a.sqlite"],
        ["store", "recover", "a.sqlite"],
        ["crash", "run", "x"],
        ["run"],
        ["campaign", "show"],
        ["store", "check"],
        ["campaign", "run"],
        ["study", "report"],
        ["export", "--db"],
        ["run", "seq-read", "--dir"],
        ["io500", "--json"],
        ["compare-runs", "1"],
    ]
    extra = [["list", "extra"], ["doctor", "extra"], ["study", "list", "extra"], ["cleanup", "extra"]]
    words = ctx["commands"]
    out = []
    for _ in range(n):
        r = rnd.random()
        if r < 0.45:
            cmd = list(rnd.choice(words))
            bad = rnd.choice(["--no-such-option", "-Z", "--dirr", "--json=", "--db=", "--" + "x" * 300])
            args, how = [*cmd, bad], f"{' '.join(cmd)} {bad[:40]}"
        elif r < 0.7:
            args = rnd.choice(typed)
            how = " ".join(args)
        elif r < 0.92:
            args = rnd.choice(missing)
            how = " ".join(args) + " (missing)"
        else:
            args = rnd.choice(extra)
            how = " ".join(args)
        out.append(Case("usage", how, list(args), invalid="a usage error", stand_ins=("mpirun",)))
    return out


# -- output paths ----------------------------------------------------------------------------------------------
def output_cases(rnd: random.Random, n: int, ctx: dict) -> list:
    sample = ctx["sample"]
    # (command before the path, option, may it be '-', what it writes when valid, setup)
    commands = [
        (["run", "seq-read", "--dir", "{work}/d", "-q", "--no-wait", *QUICK_RUN], "--json", True, None),
        (["io500", "--dir", "{work}/d", "--no-wait", "--no-store", *IO500_SMALL], "--json", True, None),
        (["export", "1", "--db", "{work}/s.sqlite", "-f", "json"], "-o", True, "store"),
        (["export", "1", "--db", "{work}/s.sqlite", "-f", "fio-json"], "--split", False, "store"),
        (["report", "1", "--db", "{work}/s.sqlite"], "-o", True, "store"),
        (["study", "check", "wettstein2002"], "--json", False, None),
        (["study", "report", "wettstein2002", "--db", "{work}/s.sqlite"], "-o", False, "store"),
        (["merge", "{work}/s.sqlite"], "-o", False, "store"),
        (["store", "recover", "{work}/s.sqlite"], "--to", False, "store"),
        (
            ["compare", "--dir", "{work}/d", "--no-wait", "-q", "-w", "seq-read", "--trials", "2"],
            "--report",
            False,
            None,
        ),
    ]
    out = []
    for i in range(n):
        cmd, opt, dash_ok, needs = rnd.choice(commands)
        kind = rnd.choice(
            [
                "valid",
                "dash",
                "proc",
                "sys",
                "dev",
                "shm",
                "dir",
                "nofolder",
                "long",
                "longpath",
                "link",
                "underfile",
                "fifo",
            ]
        )
        shm = f"/dev/shm/fsmeter-fuzz-{os.getpid()}-{i}"
        path = {
            "valid": "{work}/out.x",
            "dash": "-",
            "proc": "/proc/fsmeter-fuzz",
            "sys": "/sys/fsmeter-fuzz",
            "dev": "/dev/fsmeter-fuzz",
            "shm": shm,
            "dir": "{work}/d",
            "nofolder": "{work}/no/such/out.x",
            "long": "{work}/" + "x" * 300,
            "longpath": "{work}/" + "a/" * 2100 + "x",
            "link": "{work}/link.x",
            "underfile": "{work}/afile/out.x",
            "fifo": "{work}/fifo.x",
        }[kind]
        if cmd[0] == "compare" and kind in ("valid", "dash"):
            kind, path = "proc", "/proc/fsmeter-fuzz"  # a compare that passes its check runs the quick suite
        setups = []
        if needs == "store":
            setups.append(_copy_store(sample))
        if kind == "link":
            setups.append(lambda w: os.symlink("/proc/fsmeter-fuzz", w / "link.x"))
        if kind == "underfile":
            setups.append(lambda w: (w / "afile").write_text("a file\n"))
        if kind == "fifo":
            setups.append(lambda w: os.mkfifo(w / "fifo.x"))
        valid = kind == "valid" or (kind == "dash" and dash_ok) or (opt == "--split" and kind == "dir")
        stand = ("mpirun",)
        if cmd[0] == "io500" and valid:
            stand = ()  # a real, small suite: it writes the result where asked
        case = Case(
            "output",
            f"{cmd[0]} {opt} {kind}",
            [*cmd, opt, path],
            setup=(lambda w, s=tuple(setups): [f(w) for f in s]) if setups else None,
            invalid="" if valid else f"{opt} {kind}",
            allowed=("out.x", "s-recovered.sqlite", "s.sqlite-journal") if valid else (),
            watch=("s.sqlite",) if needs == "store" else (),
            stand_ins=stand,
            check=_outside_check(path) if kind in ("shm", "dev") else None,
            timeout=300 if cmd[0] == "io500" and valid else 120,
        )
        out.append(case)
    return out


# -- stores ----------------------------------------------------------------------------------------------------
READERS = [
    ["report", "1", "--db", "{work}/s.sqlite"],
    ["report", "1", "--db", "{work}/s.sqlite", "-o", "{work}/r.html"],
    ["export", "1", "--db", "{work}/s.sqlite", "-f", "json", "-o", "-"],
    ["export", "1", "--db", "{work}/s.sqlite", "-f", "csv", "-o", "{work}/e.csv"],
    ["export", "1", "--db", "{work}/s.sqlite", "-f", "fio-json", "-o", "{work}/e.json"],
    ["compare-runs", "1", "2", "--db", "{work}/s.sqlite"],
    ["compare-runs", "1", "1", "--db", "{work}/good.sqlite", "--db-b", "{work}/s.sqlite"],
    ["campaign", "list", "--db", "{work}/s.sqlite"],
    ["campaign", "show", "1", "--db", "{work}/s.sqlite"],
    ["analyze", "{work}/s.sqlite", "--campaign", "1", "--response", "ops_per_s", "--factors", "filesystem"],
    ["study", "report", "wettstein2002", "--db", "{work}/s.sqlite", "-o", "{work}/st.html"],
    ["store", "check", "{work}/s.sqlite"],
]
_STORE_VALUES = [
    None,
    "fast",
    b"\x00\xff",
    float("nan"),
    1e308,
    -1,
    1 << 62,
    "",
    "{",
    "[]",
    "7",
    '"x"',
    '{"a": NaN}',
    "bogus",
    "corrupt",
    7,
    "x" * 5000,
]


def _damage(rnd: random.Random):
    """(how, fn(path)) of one alteration of a store."""
    from fsmeter.store.schema_check import TABLES, expected_schema

    r = rnd.random()
    if r < 0.3:
        name = rnd.choice(sorted(DAMAGES))
        return name, DAMAGES[name][0]
    if r < 0.6:
        table, _, _ = rnd.choice(TABLES)
        col = rnd.choice(expected_schema()[0][table]).name
        value = rnd.choice(_STORE_VALUES)
        return f"{table}.{col} = {str(value)[:20]!r}", lambda p: set_first(p, table, col, value)
    if r < 0.7:
        table, _, _ = rnd.choice(TABLES)
        col = rnd.choice(expected_schema()[0][table]).name
        return f"drop {table}.{col}", lambda p: drop_column(p, table, col)
    if r < 0.75:
        table, _, _ = rnd.choice(TABLES)
        return f"rename {table}", lambda p: rename_table(p, table, table + "_x")
    if r < 0.85:
        seed = rnd.randrange(1 << 30)

        def flip(p, seed=seed):
            data = bytearray(p.read_bytes())
            g = random.Random(seed)
            for _ in range(g.choice([1, 20, 200])):
                i = g.randrange(len(data))
                data[i] ^= 1 << g.randrange(8)
            p.write_bytes(bytes(data))

        return "bits flipped", flip
    if r < 0.9:
        cut = rnd.choice([0, 100, 4096, 20000])
        return f"truncated to {cut} bytes", lambda p: p.write_bytes(p.read_bytes()[:cut])
    if r < 0.95:
        return "another program's database", lambda p: (p.unlink(), _other_sqlite(p))
    return "text, not a database", lambda p: p.write_text("name,value\nx,1\n" * 50)


def store_cases(rnd: random.Random, n: int, ctx: dict) -> list:
    sample = ctx["sample"]
    out = []
    for _ in range(n):
        how, alter = _damage(rnd)

        def setup(work, alter=alter):
            shutil.copyfile(sample, work / "s.sqlite")
            shutil.copyfile(sample, work / "good.sqlite")
            try:
                alter(work / "s.sqlite")
            except (sqlite3.Error, OverflowError):
                pass  # SQLite refuses this alteration: the store stays sound

        r = rnd.random()
        if r < 0.7:
            cmd = rnd.choice(READERS)
            allowed = ("r.html", "e.csv", "e.json", "st.html")
            out.append(
                Case(
                    "store",
                    f"{cmd[0]} {cmd[1]}: {how}",
                    cmd,
                    setup=setup,
                    allowed=allowed,
                    watch=("s.sqlite", "good.sqlite"),
                    check=_damaged_must_be_refused(cmd),
                )
            )
        elif r < 0.85:
            out.append(
                Case(
                    "store",
                    f"merge: {how}",
                    ["merge", "{work}/good.sqlite", "{work}/s.sqlite", "-o", "{work}/m.sqlite"],
                    setup=setup,
                    allowed=("m.sqlite",),
                    watch=("s.sqlite", "good.sqlite"),
                    check=_merge_check,
                )
            )
        else:
            out.append(
                Case(
                    "store",
                    f"store recover: {how}",
                    ["store", "recover", "{work}/s.sqlite", "--to", "{work}/r.sqlite"],
                    setup=setup,
                    allowed=("r.sqlite",),
                    watch=("s.sqlite",),
                    check=_recover_check,
                )
            )
    return out


def _damaged_must_be_refused(cmd: list):
    def check(work, proc):
        if proc.returncode == 0 and not _store_healthy(work / "s.sqlite"):
            return f"{cmd[0]} exited 0 over a store that store check calls damaged"
        return ""

    return check


def _merge_check(work, proc):
    if proc.returncode == 0:
        if not _store_healthy(work / "s.sqlite"):
            return "merge said merged over a damaged input"
        if not _store_healthy(work / "m.sqlite"):
            return "merge wrote a store that store check calls damaged"
    elif (work / "m.sqlite").exists():
        return "a refused merge left its output behind"
    return ""


def _recover_check(work, proc):
    if proc.returncode == 0 and not _store_healthy(work / "r.sqlite"):
        return "store recover wrote a store that store check calls damaged"
    return ""


# -- io500 -----------------------------------------------------------------------------------------------------
def io500_cases(rnd: random.Random, n: int, ctx: dict) -> list:
    out = []
    for _ in range(n):
        args, bad = ["io500", "--no-wait"], []

        def pick(opt, choices, invalid_ones):
            v = rnd.choice(choices)
            if v is None:
                return
            args.extend([opt, v])
            if v in invalid_ones:
                bad.append(f"{opt} {v[:30]}")

        target = rnd.choice(["dir", "dir", "dir", "loop", "tmpfs", "nosuch"])
        args += ["--target", target]
        if target == "nosuch":
            bad.append("--target nosuch")
        if target == "dir":
            pick(
                "--dir",
                ["{work}/d"] * 4
                + ["/dev/shm", "/proc", "/sys/kernel", "{work}/none", "{work}/afile", "{work}/shmlink"],
                {"/dev/shm", "/proc", "/sys/kernel", "{work}/none", "{work}/afile", "{work}/shmlink"},
            )
        else:
            pick(
                "--size",
                ["64M", "64M", "0", "1", "15M", "9999999999999999999999G", "lots", "２G", "-1", None],
                {"0", "1", "15M", "9999999999999999999999G", "lots", "２G", "-1"},
            )
            pick("--fs", [None, None, "ext4", "nosuchfs", "tmpfs"], {"nosuchfs"})
        pick("--ranks", ["1", "2", "2", "16", "17", "1000000", "0", "-1", "x", None], {"17", "1000000", "0", "-1", "x"})
        pick(
            "--db",
            [
                None,
                "{work}/new.sqlite",
                "{work}/garbage.sqlite",
                "{work}/empty.sqlite",
                "{work}/other.sqlite",
                "{work}/no/s.sqlite",
            ],
            {"{work}/garbage.sqlite", "{work}/other.sqlite", "{work}/no/s.sqlite"},
        )
        pick("--json", [None, None, "{work}/r.json", "-", "/proc/x.json", "{work}/d"], {"/proc/x.json", "{work}/d"})
        pick("--stonewall-s", [None, None, "1", "nan", "inf", "-1", "0"], {"nan", "inf", "-1", "0"})
        small = list(IO500_SMALL)
        if rnd.random() < 0.15:
            small[3] = rnd.choice(["1P", "0", "3M"])  # --ior-easy-block
            bad.append(f"--ior-easy-block {small[3]} (cannot fit, or not a multiple of the 2M transfer)")
        args += small[2:] if "--stonewall-s" in args else small
        if "--db" not in args and rnd.random() < 0.5:
            args.append("--no-store")

        def setup(work):
            (work / "afile").write_text("x\n")
            os.symlink("/dev/shm", work / "shmlink")
            (work / "garbage.sqlite").write_bytes(b"garbage " * 512)
            (work / "empty.sqlite").write_bytes(b"")
            _other_sqlite(work / "other.sqlite")

        out.append(
            Case(
                "io500",
                " ".join(a for a in args[1:] if not a.startswith("{work}")),
                args,
                setup=setup,
                invalid="; ".join(bad),
                allowed=("new.sqlite", "r.json", "empty.sqlite", "default.sqlite"),
                watch=("garbage.sqlite", "other.sqlite", "afile"),
                stand_ins=("mpirun",),
                acted=_scratch_used,
            )
        )
    return out


def _scratch_used(work, proc):
    made = [p.name for p in (work / "scratch").iterdir() if p.name not in ("state.lock",)]
    return f"provisioned in the scratch folder ({made[0]})" if made else ""


# -- guests ----------------------------------------------------------------------------------------------------
GUEST_CAMPAIGN = """name = "g"
min_phase_s = 0
[target]
kind = "loop"
size = "256M"
[[filesystems]]
name = "ext4"
[factors]
kernel = [{kernel}]
{factors}
[[workloads]]
name = "seq-write"
params = {{ file_size = "1M", duration_s = 0.2, warmup_s = 0 }}
[repetitions]
policy = "fixed"
n = 1
[guest]
boot_timeout_s = 20
{guest}
"""


def guest_cases(rnd: random.Random, n: int, ctx: dict) -> list:
    cpus, mem = os.cpu_count() or 1, _mem_bytes()
    kernels = {
        '"{work}/passwd"': "a text file",
        f'"{sys.executable}"': "a program",
        '"/proc/self/exe"': "a program",
        '"{work}/empty"': "an empty file",
        '"{work}/zeros"': "zeros",
        '"{work}/notes.txt"': "text holding HdrS elsewhere",
        '"{work}"': "a directory",
        '"nosuch-9.9"': "no such kernel",
        '"{work}/bzImage"': "",
        '"host"': "",
    }
    values = {
        "vcpus": [
            ("1", ""),
            ("true", "a boolean"),
            ('"2"', "a string"),
            ("0", "zero"),
            ("-1", "negative"),
            (str(cpus + 1), "more than the host's CPUs"),
            ("1e9", "a float"),
            ("99999999999999999999", "huge"),
        ],
        "memory": [
            ('"256M"', ""),
            ('"9999999999999999999999G"', "huge"),
            ('"1K"', "too small"),
            ("true", "boolean"),
            ('"lots"', "not a size"),
            (f'"{(mem >> 20) + 4096}M"', "more than the host's memory"),
        ],
        "disk_size": [('"1G"', ""), ('"9999999999999999999999G"', "huge"), ("0", "zero")],
        "boot_timeout_s": [("20", ""), ("inf", "infinite"), ("nan", "nan"), ("-1", "negative")],
    }
    out = []
    for _ in range(n):
        kernel = rnd.choice(list(kernels))
        bad = [f"kernel {kernels[kernel]}"] if kernels[kernel] else []
        guest, factors = [], ""
        in_guest = kernel != '"host"'  # the host's own limits matter only for a guest that boots
        for key in rnd.sample(sorted(values), rnd.randrange(0, 3)):
            v, why = rnd.choice(values[key])
            if key == "boot_timeout_s" and not why:
                continue
            guest.append(f"{key} = {v}")
            if why and (in_guest or "host's" not in why):
                bad.append(f"{key} {why}")
        if rnd.random() < 0.2:
            lv, why = rnd.choice([("[1, true]", "a boolean"), (f"[1, {cpus + 1}]", "more CPUs than the host's")])
            factors = f"guest_vcpus = {lv}"
            if in_guest or "host's" not in why:
                bad.append(f"guest_vcpus {why}")
        text = GUEST_CAMPAIGN.format(kernel=kernel, factors=factors, guest="\n".join(guest))
        if rnd.random() < 0.15 and kernels[kernel]:  # compare --kernel: the same check from the command line
            level = kernel.strip('"')
            args = [
                "compare",
                "--kernel",
                level,
                "--db",
                "{work}/s.sqlite",
                "--no-wait",
                "-q",
                "-w",
                "seq-read",
                "-f",
                "ext4",
                "--trials",
                "2",
            ]
            how = f"compare --kernel ({kernels[kernel]})"
        else:
            args = ["campaign", "run", "{work}/g.toml", "--db", "{work}/s.sqlite", "--no-wait", "-q"]
            how = "; ".join(bad) or "a valid guest campaign"
        out.append(
            Case(
                "guest",
                how,
                args,
                files={"g.toml": text.encode()},
                setup=_kernel_files,
                invalid="; ".join(bad),
                allowed=("s.sqlite", "s.sqlite-journal"),
                watch=("passwd", "bzImage"),
                stand_ins=("qemu-system-x86_64",),
                acted=_campaign_stored,
                timeout=240,
            )
        )
    return out


def _mem_bytes() -> int:
    from fsmeter.hostinfo import mem_total_bytes

    return mem_total_bytes()


def _kernel_files(work: Path) -> None:
    (work / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (work / "empty").write_bytes(b"")
    (work / "zeros").write_bytes(bytes(1 << 16))
    (work / "notes.txt").write_text("HdrS " * 500)
    (work / "bzImage").write_bytes(STAND_IN_KERNEL)


def _campaign_stored(work, proc):
    db = work / "s.sqlite"
    if db.exists() and db.stat().st_size:
        try:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            n = conn.execute("SELECT count(*) FROM campaigns").fetchone()[0]
            conn.close()
        except sqlite3.Error:
            return ""
        if n:
            return "a campaign was stored"
    guests = [p.name for p in (work / "scratch").iterdir() if p.name.startswith("guest-")]
    return f"a guest folder was made ({guests[0]})" if guests else ""


# -- GlusterFS compare ----------------------------------------------------------------------------------------
def gluster_cases(rnd: random.Random, n: int, ctx: dict) -> list:
    from fsmeter.mpi.launch import local_ranks_limit

    most = local_ranks_limit()
    options = [
        ("performance.write-behind=off", ""),
        ("network.ping-timeout=10", ""),
        ("performance.wirte-behind=off", "an unknown key"),
        ("no.such-option=1", "an unknown key"),
        ("performance.write-behind=off\nrm -rf /", "a newline in the value"),
        ("performance.write-behind=a\tb", "a tab in the value"),
        ("performance.write-behind=", "an empty value"),
        ("x y=1", "a key that is not a name"),
        ("=off", "no key"),
        ("performance.write-behind=" + "x" * 5000, "a value too long"),
    ]
    out = []
    for _ in range(n):
        args, bad = ["compare", "--target", "glusterfs", "--db", "{work}/s.sqlite", "--no-wait", "-q"], []
        hosts = rnd.choice([None, "1", "2", "3", "16"])
        if hosts:
            args += ["--hosts", hosts]
        ranks = rnd.choice([None, "1", "2", str(most), str(most + 1), "64"])
        if ranks:
            args += ["--ranks", ranks]
            if int(ranks) > most:
                bad.append(f"--ranks {ranks} (more than {most} on this machine)")
        if rnd.random() < 0.3:
            vt = rnd.choice(["distribute", "replicate", "raid0"])
            args += ["--volume-type", vt]
            if vt == "raid0":
                bad.append("--volume-type raid0")
        for _ in range(rnd.randrange(0, 3)):
            opt, why = rnd.choice(options)
            args += ["--volume-option", opt]
            if why:
                bad.append(f"--volume-option {why}")
        # A compare whose gluster values pass stops here, before any host or brick is made.
        args += ["--filesystems", "nosuchfs"]
        out.append(
            Case(
                "gluster",
                "; ".join(bad) or "valid gluster values (stopped by --filesystems nosuchfs)",
                args,
                invalid="; ".join(bad),
                acted=_refused_for_the_filesystem,
                check=_no_store,
            )
        )
    return out


def _refused_for_the_filesystem(work, proc):
    err = proc.stderr.decode("utf-8", "replace")
    return "the gluster values passed (refused only for --filesystems)" if "nosuchfs" in err else ""


def _no_store(work, proc):
    return "the store was made" if (work / "s.sqlite").exists() else ""


# -- compare-runs ----------------------------------------------------------------------------------------------
def compare_runs_cases(rnd: random.Random, n: int, ctx: dict) -> list:
    sample, export = ctx["sample"], ctx["export"]
    out = []
    for _ in range(n):
        r = rnd.random()
        files, invalid = {}, ""
        if r < 0.3:
            a = rnd.choice(["1", str(1 << 63), "9" * 30, "²", "-1", "0", "demo", "nosuch", "1.5", " 1", "\udcff"])
            b = rnd.choice(["1", "2", "demo"])
            opts = []
            if rnd.random() < 0.5:
                opt, v, bad = rnd.choice(
                    [
                        ("--threshold", "nan", True),
                        ("--threshold", "inf", True),
                        ("--threshold", "-1", True),
                        ("--threshold", "1e308", False),
                        ("--threshold", "5", False),
                        ("--alpha", "nan", True),
                        ("--alpha", "0", True),
                        ("--alpha", "0.01", False),
                        ("--correction", "bonferroni", True),
                    ]
                )
                opts = [opt, v]
                invalid = f"{opt} {v}" if bad else ""
            args = ["compare-runs", a, b, "--db", "{work}/s.sqlite", *opts]
            how = f"{a[:20]!r} {b} {' '.join(opts)}"
        else:
            doc, how, invalid = _mutated_export(rnd, export)
            files = {"a.json": doc}
            args = ["compare-runs", "{work}/a.json", "{work}/a.json"]
        out.append(
            Case(
                "compare-runs",
                how,
                args,
                files=files,
                setup=_copy_store(sample),
                invalid=invalid,
                watch=("s.sqlite", "a.json"),
            )
        )
    return out


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _known_id(v) -> bool:
    return _int(v) and v < 1 << 60  # 1 << 70 names no cell or trial of the export


#: The fields compare-runs reads from an export, and whether a value is one it can take.
_EXPORT_FIELDS = {
    ("cells", "id"): _known_id,
    ("cells", "workload"): lambda v: isinstance(v, str),
    ("cells", "factors"): lambda v: isinstance(v, dict),
    ("trials", "id"): _known_id,
    ("trials", "cell_id"): _known_id,
    ("trials", "number"): _int,
    ("trials", "status"): lambda v: isinstance(v, str),
    ("trials", "discarded"): lambda v: isinstance(v, bool),
    ("metrics", "trial_id"): _known_id,
    ("metrics", "phase"): lambda v: isinstance(v, str),
    ("metrics", "name"): lambda v: isinstance(v, str),
    ("metrics", "unit"): lambda v: isinstance(v, str),
    ("metrics", "higher_is_better"): lambda v: isinstance(v, bool),
    ("metrics", "value"): lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)),
}


def _mutated_export(rnd: random.Random, export: dict) -> tuple:
    """(bytes, how, why it is invalid or "") of an export document altered."""
    r = rnd.random()
    if r < 0.1:
        depth = rnd.choice([65, 1000, 100_000])
        return (b"[" * depth + b"]" * depth), f"nested {depth} deep", "nesting too deep"
    if r < 0.15:
        return rnd.choice([b"", b"{", b"\xff\xfe", b"null", b"[1, 2]", b'"x"']), "not an export", "not an export"
    doc = copy.deepcopy(export)
    targeted = [
        ("cells", "x", "cells a string"),
        ("trials", {}, "trials an object"),
        ("metrics", [1], "a metric a number"),
        ("version", True, "version a boolean"),
        ("version", 99, "a newer version"),
        ("campaign", [], "campaign a list"),
        ("format", "fsmeter-run", "a run result"),
    ]
    if r < 0.45:
        key, value, why = rnd.choice(targeted)
        doc[key] = value
        return json.dumps(doc).encode(), why, why
    if r < 0.75:
        table = rnd.choice(["cells", "trials", "metrics"])
        if not doc[table]:
            return json.dumps(doc).encode(), "unchanged", ""
        row = rnd.choice(doc[table])
        key = rnd.choice(sorted(row))
        value = rnd.choice([None, "x", 1.5, True, [], {}, 1 << 70, float("nan")])
        row[key] = value
        ok = _EXPORT_FIELDS.get((table, key), lambda v: True)(value)
        why = "" if ok else f"{table}.{key} = {str(value)[:20]}"
        return json.dumps(doc).encode(), f"{table}.{key} = {str(value)[:20]}", why
    # a random node anywhere replaced: no opinion, but never a traceback
    node, path = doc, []
    while isinstance(node, (dict, list)) and node and rnd.random() < 0.8:
        k = rnd.choice(sorted(node)) if isinstance(node, dict) else rnd.randrange(len(node))
        path.append(k)
        if not isinstance(node[k], (dict, list)):
            node[k] = rnd.choice([None, "x", -1, [], {}, 1e308])
            break
        node = node[k]
    return json.dumps(doc).encode(), f"random node at {'.'.join(map(str, path))[:60]}", ""


# -- part 2: fio job files and links planted in --dir -----------------------------------------------------------
def fio_cases(rnd: random.Random, n: int, ctx: dict) -> list:
    base = "[j]\nrw=write\nbs=4k\nsize=64k\n"
    kinds = [
        ("write_bw_log=../x", "a log path out of --dir"),
        ("write_lat_log=../../y", "a log path out of the case's folder"),
        ("size=$pagesize" + "-" * 3000 + "1", "value arithmetic 3000 deep"),
        ("size=" + "(" * 500 + "4k" + ")" * 500, "500 nested parentheses"),
        ("write_iops_log={work}/abs", ""),  # an absolute path the user named: honoured as an output
        ("offset_increment=25%", ""),  # valid; the check below: the existing file must not grow
    ]
    out = []
    for _ in range(n):
        line, why = rnd.choice(kinds)
        text, setup, check = (
            base + line + "\n",
            None,
            _written_outside("x_bw.1.log", "../x_bw.1.log", "../y_lat.1.log", "../../y_lat.1.log"),
        )
        if line.startswith("offset_increment"):
            # No size: each clone writes from its offset to the existing file's end (fio 3.33: 256, 192, 128
            # and 64 writes, the file stays 1 MiB). A valid input: what is checked is that the file does not
            # grow. With size=1m fio itself grows it (to 1,966,080 bytes), so that case is left out.
            text = "[j]\nrw=write\nbs=4k\nfilename=f\nnumjobs=4\n" + line + "\n"

            def setup(work):
                (work / "d" / "f").write_bytes(bytes(1 << 20))

            check = _grew("d/f", 1 << 20)
        out.append(
            Case(
                "fio",
                line[:60],
                ["run", "{work}/j.fio", "--dir", "{work}/d", "-q", "--no-wait", "--min-phase-s", "0"],
                files={"j.fio": text.encode()},
                setup=setup,
                invalid=why,
                allowed=("abs_iops.1.log",),
                check=check,
            )
        )
    return out


def _written_outside(*names: str):
    """A check that none of ``names`` (relative to the case's folder) was written: a log path that leaves it."""

    def check(work, proc):
        for name in names:
            p = (work / name).resolve()
            if p.exists():
                if not p.is_relative_to(work):
                    p.unlink()  # outside the case's folder: remove it now
                return f"escape: {name} was written"
        return ""

    return check


def _grew(name: str, size: int):
    def check(work, proc):
        got = (work / name).stat().st_size if (work / name).exists() else size
        return f"{name} grew from {size} to {got} bytes" if got != size else ""

    return check


#: Workloads of each family that write files, with settings that keep a run short.
SYMLINK_WORKLOADS = {
    "seq-write": ["--set", "duration_s=0.3", "--set", "file_size=1M"],
    "postmark-quick": [],
    "fdtree-quick": [],
    "dbench-quick": ["--set", "duration_s=1"],
    "iozone-quick": [],
    "bonnie-quick": [],
}


def symlink_cases(rnd: random.Random, n: int, ctx: dict) -> list:
    out = []
    for _ in range(n):
        wl = rnd.choice(sorted(SYMLINK_WORKLOADS))
        args = ["run", wl, "--dir", "{work}/d", "-q", "--no-wait", "--min-phase-s", "0", *SYMLINK_WORKLOADS[wl]]

        def setup(work, wl=wl, args=args):
            # Learn the names the family writes (a run that keeps its files), then plant links under them.
            import subprocess

            learn = [a.replace("{work}", str(work)) for a in args] + ["--keep-files"]
            env = {**os.environ, "FSMETER_LOCK_DIR": str(work / "lock"), "FSMETER_SCRATCH": str(work / "scratch")}
            subprocess.run([sys.executable, "-m", "fsmeter", *learn], capture_output=True, env=env, timeout=300)
            names = sorted(p for p in (work / "d").rglob("*") if p.is_file())
            shutil.rmtree(work / "d")
            (work / "d").mkdir()
            (work / "outside").mkdir()
            for i, p in enumerate(names[:50]):
                target = work / "outside" / f"victim-{i}"
                target.write_text("7 bytes")
                link = work / "d" / p.relative_to(work / "d")
                link.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(target, link)

        out.append(Case("symlink", f"{wl} with links planted under its file names", args, setup=setup, timeout=300))
    return out


# -- main ------------------------------------------------------------------------------------------------------
SURFACES = {
    "usage": (usage_cases, 0.11),
    "output": (output_cases, 0.19),
    "store": (store_cases, 0.25),
    "io500": (io500_cases, 0.125),
    "guest": (guest_cases, 0.10),
    "gluster": (gluster_cases, 0.075),
    "compare-runs": (compare_runs_cases, 0.15),
}
PART2 = {"fio": (fio_cases, 0.05), "symlink": (symlink_cases, 0.05)}


def _commands() -> list:
    import typer.main
    from fsmeter.cli import app

    def walk(group, path=()):
        for name, cmd in sorted(group.commands.items()):
            if getattr(cmd, "commands", None):
                yield from walk(cmd, (*path, name))
            else:
                yield (*path, name)

    return list(walk(typer.main.get_command(app)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=800, help="inputs in all, shared among the surfaces")
    ap.add_argument("--seed", type=int, default=46, help="the same seed gives the same inputs")
    ap.add_argument("--jobs", type=int, default=2, help="inputs run at a time")
    ap.add_argument("--surfaces", default=",".join(SURFACES), help=f"some of {', '.join([*SURFACES, *PART2])}, or all")
    ap.add_argument("--keep", type=Path, default=Path("fuzz-findings-46"), help="folder for inputs that failed")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every input's outcome")
    a = ap.parse_args()
    makers = {**SURFACES, **PART2}
    names = list(makers) if a.surfaces == "all" else [s for s in a.surfaces.split(",") if s in makers]
    share = sum(makers[s][1] for s in names)
    rnd = random.Random(a.seed)
    root = Path(tempfile.mkdtemp(prefix="fsmeter-fuzz46-"))
    env = {**os.environ, "PYTHONPATH": str(REPO / "python") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    counts: dict = {}
    bad = []
    try:
        shared = root / "shared"
        shared.mkdir()
        ctx = {"sample": _sample_store(shared), "commands": _commands()}
        from fsmeter.report.export import campaign_document

        ctx["export"] = json.loads(json.dumps(campaign_document(ctx["sample"], "1"), default=str))
        cases = []
        for s in names:
            fn, weight = makers[s]
            cases += fn(rnd, max(1, round(a.count * weight / share)), ctx)
        with cf.ThreadPoolExecutor(a.jobs) as pool:
            for case in pool.map(lambda c: run_case(c, root, env), cases):
                if a.verbose:
                    print(f"  {case.outcome}: {case.surface}: {case.how[:80]!r}: {case.detail[:200]}", flush=True)
                counts.setdefault(case.surface, {}).setdefault(case.outcome, 0)
                counts[case.surface][case.outcome] += 1
                if case.outcome in BAD:
                    bad.append(case)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{'surface':13}" + "".join(f"{o:>11}" for o in OUTCOMES) + f"{'inputs':>9}")
    for s in names:
        c = counts.get(s, {})
        print(f"{s:13}" + "".join(f"{c.get(o, 0):>11}" for o in OUTCOMES) + f"{sum(c.values()):>9}")
    total = {o: sum(c.get(o, 0) for c in counts.values()) for o in OUTCOMES}
    print(f"{'all':13}" + "".join(f"{total[o]:>11}" for o in OUTCOMES) + f"{len(cases):>9}   (seed {a.seed})")
    if bad:
        a.keep.mkdir(parents=True, exist_ok=True)
        for i, c in enumerate(bad):
            d = a.keep / f"{i:03d}-{c.surface}-{c.outcome}"
            d.mkdir(exist_ok=True)
            for name, data in c.files.items():
                (d / name).write_bytes(data)
            (d / "case.json").write_text(
                json.dumps(
                    {"args": c.args, "how": c.how, "invalid": c.invalid, "outcome": c.outcome, "detail": c.detail},
                    indent=1,
                )
            )
            print(f"  {c.outcome}: {c.surface}: {c.how[:80]}: {c.detail[:160]}")
        print(f"inputs saved under {a.keep}/ (case.json: the command line, with {{work}} = the case's folder)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
