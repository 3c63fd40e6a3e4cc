"""bench/limits: each family's bare loop builds, says what it does, and does the family's work.

The loops are the limit fsmeter's results are held against (docs/bare-loops.md), so a loop that
did less, or other, work than its family would make every ratio wrong. These check that each
loop builds warning-free with the system compiler, that each family has its loop and its case,
that the bench alternates the order of its rounds, that the system-call counter tells what is on
the measured filesystem, and, for the fixed-work families, that a loop and fsmeter do the same
count of operations and bytes from the same seed (and, under strace, the same calls).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest
from repo_paths import ROOT

BENCH = ROOT / "bench"
LIMITS = BENCH / "limits"
#: Issue 47's list: every family fsmeter runs, each with its bare loop.
FAMILIES = ("access", "fileset", "tree", "replay", "bonnie", "iozone", "mix", "macro", "crash")


def _load(name: str):
    sys.path.insert(0, str(BENCH))  # the bench modules import each other by bare name
    try:
        spec = importlib.util.spec_from_file_location(f"fsmeter_test_{name}", BENCH / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # dataclasses look their module up while the class is made
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def cases():
    return _load("limits_cases")


@pytest.fixture(scope="module")
def loops(cases, tmp_path_factory):
    if not shutil.which("cc"):
        pytest.skip("no C compiler (cc)")
    return cases.build_loops(tmp_path_factory.mktemp("loops"))


def test_every_loop_builds_without_a_warning(tmp_path):
    if not shutil.which("cc"):
        pytest.skip("no C compiler (cc)")
    for src in sorted(LIMITS.glob("*.c")):
        p = subprocess.run(
            ["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", str(tmp_path / src.stem), str(src)],
            capture_output=True,
            text=True,
        )
        assert p.returncode == 0, f"{src.name}: {p.stderr}"


def test_every_family_has_a_loop_that_says_what_it_does(cases):
    readme = (LIMITS / "README.md").read_text()
    for fam in FAMILIES:
        src = LIMITS / f"{fam}.c"
        assert src.is_file(), f"no bare loop for {fam}"
        first = src.read_text().splitlines()[0]
        assert first.startswith(f"/* {fam}: ") and len(first) > 30, f"{src.name} starts without saying what it does"
        assert f"`{fam}.c`" in readme, f"bench/limits/README.md does not list {fam}.c"
        assert any(c.family == fam for c in cases.CASES), f"no case runs {fam} against its loop"
    for c in cases.CASES:
        assert (LIMITS / f"{c.loop}.c").is_file(), c.name
        assert c.figures and c.phases, c.name


#: The calls on files the loops make through bare.h's inline `syscall` (as the engine's crate::sys),
#: never through glibc's wrapper of the same name.
INLINE_CALLS = (
    "read",
    "write",
    "pread",
    "pwrite",
    "open",
    "openat",
    "close",
    "fsync",
    "fdatasync",
    "lseek",
    "ftruncate",
    "creat",
    "unlink",
    "unlinkat",
    "rmdir",
    "mkdir",
    "mkdirat",
    "rename",
    "stat",
    "fstat",
    "fstatat",
)


def test_the_loops_make_their_file_calls_inline_not_through_glibc():
    import re

    call = re.compile(r"(?<![\w.>])(" + "|".join(INLINE_CALLS) + r")\(")
    found = []
    for src in sorted(LIMITS.glob("*.c")):
        text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), src.read_text(), flags=re.S)
        for n, line in enumerate(text.splitlines(), 1):
            if call.search(line.split("//")[0]) and '"' not in line.split("(")[0]:
                found.append(f"{src.name}:{n}: {line.strip()}")
    assert not found, "use bare.h's sc_* calls:\n" + "\n".join(found)
    bare = (LIMITS / "bare.h").read_text()
    assert '__asm__ volatile("syscall"' in bare, "bare.h no longer makes its calls inline"


def test_rounds_alternate_which_side_goes_first():
    bench = _load("bench_limits")
    orders = bench.alternating(4, ["fsmeter", "bare"])
    assert orders == [["fsmeter", "bare"], ["bare", "fsmeter"]] * 2


def test_limits_and_limits_cases_select_rows(cases, monkeypatch):
    bench = _load("bench_limits")
    monkeypatch.setenv("LIMITS", "access")
    monkeypatch.setenv("LIMITS_CASES", "qd1, randread psync")
    names = [c.name for c in bench.selected(cases.CASES)]
    assert names == [
        "access 4K randread psync",
        "access 4K randread psync, latency = false",
        "access 4K randread io_uring qd1 O_DIRECT",
    ]
    monkeypatch.setenv("LIMITS_CASES", "no such case")
    with pytest.raises(SystemExit, match="no case matches"):
        bench.selected(cases.CASES)


def test_the_counter_tells_calls_on_the_target_from_a_process_working_there():
    sc = _load("limits_syscalls")
    mnt = "/m/mnt"
    on = [
        'openat(AT_FDCWD</m/mnt/tree>, "srctree/a.c", O_WRONLY|O_CREAT|O_EXCL, 0600) = 4</m/mnt/tree/srctree/a.c>',
        'pread64(3</m/mnt/f>, ""..., 4096, 8192) = 4096',
        'unlink("/m/mnt/x") = 0',
        'newfstatat(AT_FDCWD</elsewhere>, "/m/mnt", {...}, 0) = 0',
    ]
    off = [
        'openat(AT_FDCWD</m/mnt>, "/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY|O_CLOEXEC) = 3</usr/lib/libc.so.6>',
        'execve("/usr/bin/cp", ["cp", "/src", "/m/mnt/dst"], 0x7ff /* 30 vars */) = 0',
        'openat(AT_FDCWD</m/mntx>, "a", O_RDONLY) = 3</m/mntx/a>',
        'read(3</etc/passwd>, "/m/mnt/in-the-data"..., 64) = 64',
    ]
    assert [t for t in on if not sc.touches(t, mnt)] == []
    assert [t for t in off if sc.touches(t, mnt)] == []


def test_a_loop_prints_its_phases_and_refuses_bad_arguments(loops, tmp_path):
    p = subprocess.run(
        [loops["tree"], f"dir={tmp_path}", "threads=2", "levels=1", "dirs_per_level=3", "files_per_dir=2"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert [ln.split()[1] for ln in lines if ln.startswith("phase ")] == ["mkdir", "create", "stat", "remove", "rmdir"]
    res = _load("limits_cases").parse_results(p.stdout)
    # 2 trees of 4 directories (the root and 3 below) holding 2 files each
    assert res["mkdir"][0] == res["rmdir"][0] == 8
    assert res["create"][:2] == (16, 16 * 4096) and res["remove"][0] == 16
    assert not any(tmp_path.iterdir()), "the tree loop leaves nothing behind"
    bad = subprocess.run([loops["tree"], f"dir={tmp_path}", "levels=x"], capture_output=True, text=True)
    assert bad.returncode == 1 and "levels=x" in bad.stderr
    usage = subprocess.run([loops["tree"], "threads=1"], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage" in usage.stderr


#: Fixed-work cases whose operations and bytes both sides count alike: (family, fsmeter phase,
#: loop phase, fsmeter's count of operations, fsmeter's bytes or None).
SAME_WORK = [
    ("fileset", "create", "create", lambda d: d["phases"]["create"]["total"]["ops"], "bytes_create"),
    (
        "fileset",
        "transactions",
        "transactions",
        lambda d: d["phases"]["transactions"]["counters"]["transactions"],
        None,
    ),
    ("fileset", "delete", "delete", lambda d: d["phases"]["delete"]["total"]["ops"], None),
    ("tree", "create", "create", lambda d: d["phases"]["create"]["total"]["ops"], "bytes"),
    ("iozone", "grid", "grid", lambda d: d["phases"]["grid"]["total"]["ops"], "bytes"),
    ("bonnie", "seeks", "seeks", lambda d: d["phases"]["seeks"]["counters"]["seeks"], None),
    ("bonnie", "ran_create", "ran_create", lambda d: d["phases"]["ran_create"]["counters"]["files"], "bytes"),
    ("mix", "subruns", "subruns", lambda d: d["phases"]["subruns"]["total"]["ops"], None),
]


def _fsmeter(case, mode: str, d, scratch) -> dict:
    out = scratch / f"{case.family}.json"
    cmd = [sys.executable, "-m", "fsmeter", "run", case.workload, "--dir", str(d), "-q", "--cache", "keep"]
    for k, v in case.fsm_sets(mode, 1, scratch).items():
        cmd += ["--set", f"{k}={v}"]
    env = dict(os.environ, FSMETER_LOCK_DIR=str(scratch / "lock"))
    (scratch / "lock").mkdir(exist_ok=True)
    p = subprocess.run(cmd + ["--json", str(out)], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(out.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted({w[0] for w in SAME_WORK}))
def test_a_fixed_work_loop_does_what_fsmeter_does_from_the_same_seed(family, cases, loops, tmp_path):
    """The loop's random draws are the engine's: the same files, sizes and offsets, so the same
    counts and bytes (PostMark's sizes come from its MT19937, bonnie++'s from SplitMix64, ...)."""
    case = next(c for c in cases.CASES if c.family == family)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    a, b = tmp_path / "fsmeter", tmp_path / "bare"
    a.mkdir()
    b.mkdir()
    doc = _fsmeter(case, "trace", a, scratch)
    p = subprocess.run([loops[case.loop], *case.loop_args("trace", 1, b, scratch)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    res = cases.parse_results(p.stdout)
    for fam, fph, bph, ops, nbytes in SAME_WORK:
        if fam != family:
            continue
        assert ops(doc) == res[bph][0], f"{family} {fph}: fsmeter {ops(doc)} operations, the loop {res[bph][0]}"
        if nbytes == "bytes_create":
            assert doc["phases"][fph]["total"]["bytes"] == res[bph][1]
        elif nbytes == "bytes":
            assert doc["phases"][fph]["total"]["bytes"] == res[bph][1]


@pytest.mark.slow
def test_tree_and_fileset_make_the_same_calls_as_their_loops(root, tmp_path):
    """Under strace, phase by phase: every call on the filesystem, per operation, alike, with
    its flags, modes and sizes."""
    if not shutil.which("strace") or not shutil.which("cc"):
        pytest.skip("needs strace and cc")
    p = subprocess.run(
        [sys.executable, str(BENCH / "limits_syscalls.py"), "--only", "tree,fileset", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert set(summary) == {"tree fdtree", "fileset postmark"}
    for name, case in summary.items():
        for ph in case["phases"]:
            assert ph["fsmeter_calls"] > 0 and ph["fsmeter_ops"] == ph["bare_ops"], (name, ph["phase"])
            assert ph["differ"] == [], (name, ph["phase"], ph["differ"])
            assert ph["shapes_differ"] == [], (name, ph["phase"], ph["shapes_differ"])
            assert ph["fsmeter_calls"] == ph["bare_calls"], (name, ph["phase"])
    assert not os.path.ismount(tmp_path / "o" / "mnt")
