#!/usr/bin/env python3
"""Fuzz fsmeter's input parsers through the real command line.

Mutates seed inputs (a campaign file, fio job files, a dbench load file, a CSV for `analyze`, `--set`
values), runs each through the matching `fsmeter` command as a subprocess with a timeout, and sorts the
outcomes:

  error            exit 1 or 2 with one `fsmeter: error: ...` line and no traceback (what bad input gets)
  ran              exit 0 (or 130/1 for a run that started and reported)
  traceback        a Python traceback on stderr
  panic            a Rust panic
  hang             no exit within the timeout
  accepted-invalid exit 0 for an input the mutator knows to be invalid (a value past a limit, a bad byte,
                   a row with more fields than the header, ...)

Usage: scripts/fuzz_inputs.py [--count N] [--seed S] [--jobs J] [--timeout T] [--keep DIR]
Runs use a directory target under a temporary folder and a lock folder of their own; a run is a fraction
of a second of I/O. Every input that is not `error` or `ran` is saved under --keep to reproduce it.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
sys.path.insert(0, str(REPO / "tests" / "helpers"))
from fuzz_common import mutate  # noqa: E402  (tests/helpers is not a package)

#: Fragments that broke parsers before, or might: bytes and digits of other scripts, numbers past every limit.
NASTY = [
    "\x00",
    "１２８",
    "٣",
    "-1",
    "0",
    "1e30",
    "1e308",
    "inf",
    "-inf",
    "nan",
    "18446744073709551616",
    "9" * 30,
    "[",
    "]",
    "{",
    "}",
    "=",
    '"',
    "'",
    "\\",
    "\\:",
    ":",
    ",",
    "/",
    "..",
    "#",
    ";",
    "\n",
    "\t",
    " ",
    "%",
    "k",
    "G",
    "0x",
    "_",
    "[/b]",
    "x" * 300,
]
#: Values that no size or count may take: the oracle expects each to be refused. (Never a large but valid
#: size: 1.85e10 bytes is a legal file_size, and a run would write 18 GB.)
INVALID_NUMBERS = ["1e30", "inf", "nan", "-1", "18446744073709551616", "１２８", "1e400", "9" * 40]
#: ... and no duration: 1.85e10 s is where a duration in nanoseconds passes 2^64.
INVALID_DURATIONS = INVALID_NUMBERS + ["1.85e10", "1e7.5", "10000001"]

CAMPAIGN = """name = "fuzz"
target = { kind = "dir", path = "{work}/d" }
min_phase_s = 0
[repetitions]
policy = "fixed"
n = 1
[[workloads]]
name = "seq-read"
params = { duration_s = 0.2, warmup_s = 0, file_size = "1M" }
"""
LOADFILE = """Deltree "\\clients\\client1" NT_STATUS_OK
Mkdir "\\clients" NT_STATUS_OK
NTCreateX "\\clients\\client1" 0x1 0x2 16385 NT_STATUS_OK
Close 16385 NT_STATUS_OK
NTCreateX "\\clients\\client1\\filler.000" 0x40 0x2 9938 NT_STATUS_OK
WriteX 9938 0 65536 65536 NT_STATUS_OK
ReadX 9938 0 65536 65536 NT_STATUS_OK
Close 9938 NT_STATUS_OK
Unlink "\\clients\\client1\\filler.000" 0x6 NT_STATUS_OK
"""
LOADFILE_ARGS = [
    "run",
    "dbench-quick",
    "--dir",
    "{work}/d",
    "-q",
    "--no-wait",
    "--set",
    "loadfile={work}/load.txt",
    "--set",
    "passes=1",
    "--set",
    "threads=1",
    "--set",
    "duration_s=2",
    "--set",
    "warmup_s=0",
    "--min-phase-s",
    "0",
]
FIO_SEED = "[j]\nrw=randrw\nbs=4k\nsize=1m\nruntime=1\nrwmixread=70\n"


@dataclass
class Case:
    kind: str
    how: str
    files: dict  # name -> bytes
    args: list  # command line after `fsmeter`, {work} replaced by the case's folder
    invalid: str = ""  # why the mutator knows the input must be refused ("" = no opinion)
    outcome: str = ""
    detail: str = field(default="", repr=False)


def mutate_text(s: str, rnd: random.Random, n: int) -> str:
    """The property tests' edits (tests/helpers/fuzz_common.py), with this script's fragments."""
    return mutate(s, rnd, n, NASTY)


def heavy(text: str) -> bool:
    """An edit that asks for a long run or much data (n = 1111 trials, numjobs=4444, size=1111m): a fuzz
    input should take seconds, so such an edit is drawn again rather than run."""
    return bool(
        re.search(
            r"(?m)^\s*n\s*=\s*\d{2,}|(numjobs|nrfiles|iodepth|loops)\s*=\s*\d{3,}|"
            r"(size|filesize|io_size|io_limit)\s*=\s*(\d{2,}\s*[mMgGtTpP]|\d{9,})",
            text,
        )
    )


def edits(seed: str, rnd: random.Random) -> str:
    while True:
        text = mutate_text(seed, rnd, rnd.randrange(1, 5))
        if not heavy(text):
            return text


def with_bad_byte(data: bytes, rnd: random.Random) -> bytes:
    i = rnd.randrange(len(data) + 1)
    return data[:i] + bytes([rnd.choice([0x80, 0xC3, 0xFF, 0xFE, 0xED])]) + data[i:]


def campaign_cases(rnd: random.Random, n: int) -> list:
    out = [
        Case(
            "campaign",
            "the seed itself",
            {"c.toml": CAMPAIGN.encode()},
            ["campaign", "run", "{work}/c.toml", "--db", "{work}/s.sqlite", "-q", "--no-wait"],
        )
    ]
    for _ in range(n - 1):
        text = CAMPAIGN
        r = rnd.random()
        if r < 0.35:
            data, how, invalid = edits(text, rnd).encode(), "text edits", ""
        elif r < 0.55:
            field_ = rnd.choice(["duration_s = 0.2", "warmup_s = 0", 'file_size = "1M"'])
            bad = rnd.choice(INVALID_DURATIONS if field_.startswith(("duration", "warmup")) else INVALID_NUMBERS)
            value = f'"{bad}"' if not re.fullmatch(r"-?[0-9.e]+|inf|nan|-inf", bad) else bad
            data = text.replace(field_, f"{field_.split(' =')[0]} = {value}").encode()
            how, invalid = f"{field_.split(' =')[0]} = {value}", "a value past fsmeter's limits"
        elif r < 0.7:
            data, how, invalid = with_bad_byte(text.encode(), rnd), "a non-UTF-8 byte", "not UTF-8"
        elif r < 0.8:
            depth = rnd.choice([40, 3000, 100_000])
            data = (text + "x = " + "[" * depth + "]" * depth + "\n").encode()
            how, invalid = f"arrays nested {depth} deep", "nested too deeply"
        elif r < 0.9:
            name = rnd.choice(["x" * rnd.choice([201, 5000, 100_000]), "a[/b]", "tab\there"])
            data = text.replace('name = "fuzz"', f'name = "{name}"').encode()
            how = f"a name of {len(name)} characters" if len(name) > 20 else f"name {name!r}"
            invalid = (
                "a name too long"
                if len(name) > 200
                else "a control character"
                if "\t" in name
                else "a '[' in a name"
                if "[" in name
                else ""
            )
        else:
            data = (
                text.replace("[[workloads]]", "[factors]\nthreads = [1, 2]\n[[workloads]]").replace(
                    "warmup_s = 0", "warmup_s = 0, threads = 3"
                )
            ).encode()
            how, invalid = "threads as a factor and in params", "a setting in two places"
        out.append(
            Case(
                "campaign",
                how,
                {"c.toml": data},
                ["campaign", "run", "{work}/c.toml", "--db", "{work}/s.sqlite", "-q", "--no-wait"],
                invalid,
            )
        )
    return out


def fio_cases(rnd: random.Random, n: int) -> list:
    # The test suite's job files, shrunk to 1 MiB files so that a run is quick.
    seeds = [re.sub(r"(?m)^(size|filesize)=.*$", r"\1=1m", p.read_text()) for p in sorted((DATA / "fio").glob("*.fio"))]
    seeds.append(FIO_SEED)
    options = {
        "blockalign": (["0"], "a zero alignment"),
        "bssplit": (["4k/-10:8k/110", "4k/nan:8k/50", "0/100", "4k/50:8k/60"], "bssplit percentages fio refuses"),
        "bs": (["１２８k", "0", "4k-8k", "1e3"], "a size fio would not read"),
        "runtime": (["18446744073709551616", "99999999999d", "1e30"], "a runtime past the limit"),
        "iodepth": (["１", "-1", "0"], "a depth fio would not read"),
        "size": (["9" * 40, "0"], "a size past the limit"),
    }
    out = []
    for _ in range(n):
        seed = rnd.choice(seeds)
        r = rnd.random()
        cap = []
        if r < 0.45:
            cap = ["--set", "duration_s=2"]  # an edit may ask for a long run: at most 2 s of it
            text, how, invalid = edits(seed, rnd), "text edits", ""
            data = text.encode()
        elif r < 0.8:
            opt = rnd.choice(sorted(options))
            values, why = options[opt]
            value = rnd.choice(values)
            extra = "time_based\n" if opt == "runtime" else ""
            data = (FIO_SEED.replace("runtime=1\n", "") + extra + f"{opt}={value}\n").encode()
            how, invalid = f"{opt}={value}", why
        elif r < 0.9:
            data, how, invalid = with_bad_byte(seed.encode(), rnd), "a non-UTF-8 byte", "not UTF-8"
        else:
            data, how, invalid = (FIO_SEED + "filename=a\\:b\n").encode(), "filename=a\\:b", ""
        # Capped at a second per job: a mutated seed may ask for minutes of I/O.
        out.append(
            Case(
                "fio",
                how,
                {"j.fio": data},
                [
                    "run",
                    "{work}/j.fio",
                    "--dir",
                    "{work}/d",
                    "-q",
                    "--no-wait",
                    "--json",
                    "{work}/o.json",
                    "--min-phase-s",
                    "0",
                    *cap,
                ],
                invalid,
            )
        )
    return out


def loadfile_cases(rnd: random.Random, n: int) -> list:
    out = [Case("loadfile", "the seed itself", {"load.txt": LOADFILE.encode()}, LOADFILE_ARGS)]
    for _ in range(n - 1):
        r = rnd.random()
        if r < 0.7:
            data, how = mutate_text(LOADFILE, rnd, rnd.randrange(1, 6)).encode("utf-8", "surrogateescape"), "text edits"
        elif r < 0.85:
            data, how = with_bad_byte(LOADFILE.encode(), rnd), "a non-UTF-8 byte (paths are bytes: may run)"
        else:
            data, how = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 200))), "random bytes"
        out.append(Case("loadfile", how, {"load.txt": data}, LOADFILE_ARGS))
    return out


def csv_cases(rnd: random.Random, n: int) -> list:
    rows = list(csv.reader((DATA / "bonnie-1024mb-10runs.csv").read_text().splitlines()))
    out = []
    for _ in range(n):
        rs = [r[:] for r in rows]
        r = rnd.random()
        args = ["analyze", "--csv", "{work}/t.csv", "--response", "block_read_kbs", "--factors", "filesystem"]
        invalid = ""
        if r < 0.3:
            i = rnd.randrange(1, len(rs))
            rs[i] = rs[i] + ["7"] * rnd.randrange(1, 3)
            how, invalid = f"line {i + 1} with more fields than the header", "a row longer than the header"
        elif r < 0.45:
            i, j = rnd.randrange(1, len(rs)), rnd.choice([0, 12])
            rs[i][j] = rnd.choice(["", "nan", "1e308", "inf"])
            how, invalid = f"line {i + 1} column {j + 1} = {rs[i][j]!r}", "an empty or non-finite value"
            if rnd.random() < 0.5:
                args[-1] = "filesystem+kernel"
        elif r < 0.55:
            rs[0][rnd.randrange(1, len(rs[0]))] = "filesystem"
            how, invalid = "a repeated column", "a repeated column"
        elif r < 0.62:
            rs = rs[:1]
            how, invalid = "a header only", "no rows"
        elif r < 0.7:
            level = rnd.choice(["0.5", "nan", "1", "0.951"])
            args += ["--level", level]
            how, invalid = f"--level {level}", "a level other than 0.90, 0.95, 0.99"
        else:
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows(rs)
            text = mutate_text(buf.getvalue(), rnd, rnd.randrange(1, 6))
            out.append(Case("csv", "text edits", {"t.csv": text.encode("utf-8", "surrogateescape")}, args))
            continue
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rs)
        out.append(Case("csv", how, {"t.csv": buf.getvalue().encode()}, args, invalid))
    return out


def set_cases(rnd: random.Random, n: int) -> list:
    keys = [
        "duration_s",
        "warmup_s",
        "file_size",
        "file_count",
        "queue_depth",
        "record_size",
        "interval_s",
        "threads",
        "seed",
        "entries",
        "alignment",
    ]
    out = []
    for _ in range(n):
        key = rnd.choice(keys)
        r = rnd.random()
        if r < 0.5:
            value = rnd.choice(INVALID_DURATIONS if key.endswith("_s") else INVALID_NUMBERS)
            invalid = "a value past fsmeter's limits" if key != "seed" or value not in ("0",) else ""
            if key == "entries":
                invalid = ""  # a bare number for entries is refused for its type, not its size
        else:  # odd but possibly valid: never a value that could mean a long run or a full disk
            value = rnd.choice(
                [
                    "0",
                    "1",
                    "3",
                    "0.5",
                    "1K",
                    "4K ",
                    " 2",
                    "none",
                    "[1, 2]",
                    "[]",
                    "{}",
                    "1_0",
                    "0x10",
                    "+1",
                    "1.0",
                    "true",
                    "psync",
                    "null",
                    "64K",
                    "1M",
                    "4KiB",
                    "1.5K",
                    "",
                    "=",
                    "[{}]",
                ]
            )
            invalid = ""
        sets = ["duration_s=0.2", "warmup_s=0", "file_size=1M"]
        sets = [s for s in sets if not s.startswith(key + "=")] + [f"{key}={value}"]
        args = ["run", "seq-read", "--dir", "{work}/d", "-q", "--no-wait", "--min-phase-s", "0"]
        for s in sets:
            args += ["--set", s]
        out.append(Case("set", f"--set {key}={value!r}", {}, args, invalid))
    if n:
        out.append(
            Case(
                "set",
                "--json naming a directory",
                {},
                [
                    "run",
                    "seq-read",
                    "--dir",
                    "{work}/d",
                    "-q",
                    "--no-wait",
                    "--set",
                    "duration_s=0.2",
                    "--json",
                    "{work}/d",
                ],
                "an output path that is a folder",
            )
        )
        out.append(
            Case(
                "set",
                "--min-phase-s -1",
                {},
                [
                    "run",
                    "seq-read",
                    "--dir",
                    "{work}/d",
                    "-q",
                    "--no-wait",
                    "--set",
                    "duration_s=0.2",
                    "--min-phase-s",
                    "-1",
                ],
                "a negative --min-phase-s",
            )
        )
    return out


def run_case(case: Case, root: Path, timeout: float, env: dict) -> Case:
    work = Path(tempfile.mkdtemp(prefix=f"{case.kind}-", dir=root))
    try:
        (work / "d").mkdir()
        for name, data in case.files.items():  # {work} in a seed is this case's folder
            (work / name).write_bytes(data.replace(b"{work}", str(work).encode()))
        args = [a.replace("{work}", str(work)) for a in case.args]
        try:
            p = subprocess.run(
                [sys.executable, "-m", "fsmeter", *args],
                capture_output=True,
                timeout=timeout,
                env=env,
                cwd=work,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            case.outcome, case.detail = "hang", f"no exit in {timeout:g} s"
            return case
        err = p.stderr.decode("utf-8", "replace")
        errors = [ln for ln in err.splitlines() if ln.startswith("fsmeter: error:")]
        if "panicked at" in err or "PanicException" in err:
            case.outcome = "panic"
        elif "Traceback (most recent call last)" in err:
            case.outcome = "traceback"
        elif p.returncode == 0 and case.invalid:
            case.outcome = "accepted-invalid"
        elif p.returncode in (1, 2) and len(errors) == 1:
            case.outcome = "error"
        elif p.returncode in (0, 1, 130):
            case.outcome = "ran"
        else:
            case.outcome = "traceback"  # no clean message: as bad as one for the user
        last = err.strip().splitlines()[-1] if err.strip() else f"exit {p.returncode}"
        case.detail = (errors[0] if errors else last)[:300]
        return case
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=300, help="inputs in all, shared among the five kinds")
    ap.add_argument("--seed", type=int, default=1, help="the same seed gives the same inputs")
    ap.add_argument("--jobs", type=int, default=2, help="inputs run at a time")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before a run counts as a hang")
    ap.add_argument("--keep", type=Path, default=Path("fuzz-findings"), help="folder for inputs that failed")
    ap.add_argument("--kinds", default="campaign,fio,loadfile,csv,set")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every input's outcome")
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    makers = {
        "campaign": campaign_cases,
        "fio": fio_cases,
        "loadfile": loadfile_cases,
        "csv": csv_cases,
        "set": set_cases,
    }
    kinds = [k for k in a.kinds.split(",") if k in makers]
    cases = [c for k in kinds for c in makers[k](rnd, a.count // len(kinds))]
    root = Path(tempfile.mkdtemp(prefix="fsmeter-fuzz-"))
    env = {
        **os.environ,
        "FSMETER_LOCK_DIR": str(root / "lock"),
        "FSMETER_DB": str(root / "default.sqlite"),
        "PYTHONPATH": str(REPO / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    (root / "lock").mkdir()
    counts: dict = {}
    bad = []
    try:
        with cf.ThreadPoolExecutor(a.jobs) as pool:
            for case in pool.map(lambda c: run_case(c, root, a.timeout, env), cases):
                if a.verbose:
                    print(f"  {case.outcome}: {case.kind}: {case.how[:80]!r}: {case.detail[:200]}", flush=True)
                counts.setdefault(case.kind, {}).setdefault(case.outcome, 0)
                counts[case.kind][case.outcome] += 1
                if case.outcome not in ("error", "ran"):
                    bad.append(case)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    outcomes = ["error", "ran", "traceback", "panic", "hang", "accepted-invalid"]
    print(f"{'kind':10}" + "".join(f"{o:>18}" for o in outcomes))
    for k in kinds:
        print(f"{k:10}" + "".join(f"{counts.get(k, {}).get(o, 0):>18}" for o in outcomes))
    total = {o: sum(c.get(o, 0) for c in counts.values()) for o in outcomes}
    print(f"{'all':10}" + "".join(f"{total[o]:>18}" for o in outcomes) + f"   ({len(cases)} inputs, seed {a.seed})")
    if bad:
        a.keep.mkdir(parents=True, exist_ok=True)
        for i, c in enumerate(bad):
            d = a.keep / f"{i:03d}-{c.kind}-{c.outcome}"
            d.mkdir(exist_ok=True)
            for name, data in c.files.items():
                (d / name).write_bytes(data)
            (d / "case.json").write_text(
                json.dumps(
                    {"args": c.args, "how": c.how, "invalid": c.invalid, "outcome": c.outcome, "detail": c.detail},
                    indent=1,
                )
            )
            print(f"  {c.outcome}: {c.kind}: {c.how[:80]}: {c.detail[:160]}")
        print(f"inputs saved under {a.keep}/ (case.json: the command line, with {{work}} = that folder)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
