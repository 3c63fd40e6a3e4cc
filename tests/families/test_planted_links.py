"""A symbolic link planted in --dir under the name of a file or directory fsmeter writes is never followed, for
every family: the link's target outside the run's folder keeps its size, bytes and mtime, and the run either goes
on without it (a family that removes the name first) or stops with one `fsmeter: error:` line.

Each family runs once with --keep-files to learn the names it writes (under strace, for a family that removes its
files before it ends: every name it creates), then again in a fresh folder where those names are links to files (and
its first directory a link to a directory) in a folder the test owns."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from fsmeter_cli import fsm

ACCESS = ["--set", "file_size=1M", "--set", "total_bytes=1M", "--set", "record_size=64k"]
ACCESS += ["--set", "duration_s=none", "--set", "warmup_s=0", "--min-phase-s", "0"]
EXEC_JOB = "[prog]\nioengine=exec\nprogram=echo\narguments=hello\nruntime=1\ntime_based\n[io]\nrw=write\nsize=64k\nruntime=1\ntime_based\n"

#: family -> the workload and settings that run it briefly.
FAMILIES = {
    "access": ["seq-write", *ACCESS],
    "fileset": ["postmark-quick", "--set", "files=20", "--set", "transactions=20"],
    "tree": ["fdtree-quick", *("--set", "levels=1", "--set", "dirs_per_level=2", "--set", "files_per_dir=2")],
    "bonnie": ["bonnie-quick", *("--set", "size=1M", "--set", "char_io_size=64K", "--set", "seeks=20")]
    + ["--set", "files=8"],
    "iozone": ["iozone-quick", "--set", "max_file_size=64K"],
    "mix": ["aim7-quick", "--set", "tasks=1", "--set", "jobs_per_task=2"],
    "macro": ["macro-quick", "--set", "cp_size=1M", "--set", "tree_files=20", "--set", "tree_dirs=2"],
    "replay": ["dbench-quick", "--set", "duration_s=1", "--set", "threads=1"],
    "exec": ["JOBFILE", "--allow-exec"],
}


def run(family: str, where: Path, *extra, prefix: tuple = ()) -> subprocess.CompletedProcess:
    args = list(FAMILIES[family])
    if args[0] == "JOBFILE":
        job = where.parent / f"{where.name}.fio"
        job.write_text(EXEC_JOB)
        args[0] = str(job)
    return fsm("run", *args, "--dir", where, "-q", "--cache", "keep", *extra, cwd=where, timeout=600, prefix=prefix)


#: strace -y: `openat(4</dir>, "name", O_WRONLY|O_CREAT...` or `mkdirat(4</dir>, "name", 0755)`.
CREATE = re.compile(r'^\d+\s+(open|openat|creat|mkdir|mkdirat)\((?:(-?\d+|AT_FDCWD)<([^>]*)>|AT_FDCWD), "([^"]*)"(.*)$')


def created(trace: Path, root: Path) -> tuple:
    """The regular files and directories the traced run created under root, relative, in the order made."""
    files: list = []
    dirs: list = []
    for line in trace.read_text(errors="replace").splitlines():
        m = CREATE.match(line)
        if not m:
            continue
        call, _fd, fd_path, name, rest = m.groups()
        is_dir = call.startswith("mkdir")
        if not is_dir and "O_CREAT" not in rest and call != "creat":
            continue
        if "= -1" in rest or "O_TMPFILE" in rest:
            continue
        p = Path(name) if name.startswith("/") else Path(fd_path or os.getcwd()) / name
        try:
            rel = p.relative_to(root)
        except ValueError:
            continue
        if rel.parts and rel not in files and rel not in dirs:
            (dirs if is_dir else files).append(rel)
    return files, dirs


def learn_names(family: str, learn: Path) -> tuple:
    """(files, first directory) the family writes: what --keep-files leaves, else what strace saw it create."""
    r = run(family, learn, "--keep-files")
    assert r.returncode == 0, r.stderr
    files, dirs = written(learn)
    if files or shutil.which("strace") is None:
        return files, dirs
    trace = learn.parent / f"{learn.name}.trace"
    again = learn.parent / f"{learn.name}-traced"
    again.mkdir()
    strace = ("strace", "-f", "-y", "-qq", "-e", "trace=open,openat,creat,mkdir,mkdirat", "-e", "signal=none")
    r = run(family, again, prefix=(*strace, "-o", str(trace)))
    assert r.returncode == 0, r.stderr
    files, dirs = created(trace, again)
    return spread(files), dirs[:1]


def written(root: Path) -> tuple:
    """The regular files (a few, spread over the walk) and the first directory fsmeter left under root."""
    files, dirs = [], []
    for d, dn, fn in os.walk(root):
        dn.sort()
        dirs += [Path(d, x).relative_to(root) for x in dn]
        files += [Path(d, x).relative_to(root) for x in sorted(fn)]
    return spread(files), dirs[:1]


def spread(files: list) -> list:
    """A few of the names, spread over the list: the first three, the middle one and the last two."""
    if len(files) <= 6:
        return files
    return files[:3] + files[len(files) // 2 : len(files) // 2 + 1] + files[-2:]


def one_error_line(r) -> None:
    assert "Traceback" not in r.stderr, r.stderr
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.splitlines() if ln.startswith("fsmeter: error:")]
        assert len(lines) == 1, r.stderr


def snapshot(p: Path) -> tuple:
    st = p.stat()
    return st.st_size, st.st_mtime_ns, p.read_bytes()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_planted_link_is_never_followed(tmp_path, family):
    learn = tmp_path / "learn"
    learn.mkdir()
    files, dirs = learn_names(family, learn)
    if not files:
        pytest.skip(f"{family} removes its files even with --keep-files, and strace is not installed to learn them")
    outside = tmp_path / "outside"
    outside.mkdir()

    # Every name a link to its own target outside the run's folder.
    work = tmp_path / "work"
    work.mkdir()
    targets = {}
    for i, rel in enumerate(files):
        target = outside / f"t{i}"
        target.write_bytes(b"7 bytes")
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, work / rel)
        targets[target] = snapshot(target)
    r = run(family, work)
    one_error_line(r)
    for target, before in targets.items():
        assert snapshot(target) == before, f"{family} wrote through a link to {target}: {r.stderr}"
    if r.returncode != 0 and family in ("access", "iozone", "exec", "macro"):
        assert "symbolic link fsmeter did not make" in r.stderr, r.stderr

    # The first directory fsmeter makes, a link to a directory outside.
    if dirs:
        away = tmp_path / "away"
        away.mkdir()
        work2 = tmp_path / "work2"
        work2.mkdir()
        (work2 / dirs[0]).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(away, work2 / dirs[0])
        r = run(family, work2)
        one_error_line(r)
        assert list(away.iterdir()) == [], f"{family} made files through a directory link: {r.stderr}"
