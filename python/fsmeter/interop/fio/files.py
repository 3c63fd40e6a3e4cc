"""Where a fio job's files are and how large: filename= or fio's generated names under directory=, absolute paths
against --dir, files already there, fill_device, and what fallocate= changes."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from fsmeter.errors import UserError
from fsmeter.interop.fio.options import NAME_ENGINES
from fsmeter.interop.fio.values import Ctx
from fsmeter.interop.fio_jobfile import FioJob, is_percentage, parse_fio_pct, split_names
from fsmeter.units import MAX_SIZE_BYTES

#: What a job's name becomes in the file names fio derives from it ($jobname): characters that are not letters,
#: digits or . _ + - become '_' ('/' too: a name is never a path).
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._+-]")


def job_file_name(where: str, job: FioJob, notes: list | None = None) -> str:
    """The job's name as it appears in file names (fio's $jobname), safe as one file name. fio takes any name; a
    name that would leave the directory ('..', '/' at its start, '.') or is empty is refused."""
    name = job.name
    o = job.get("name")
    line = o.line if o else job.line
    if (
        not name.strip()
        or name.strip() in (".", "..")
        or name.startswith("/")
        or ".." in name.split("/")
        or "\0" in name
    ):
        raise UserError(
            f"{where} line {line}: job name {name!r} would name files outside the job's directory: "
            "give the job a name without '/' at its start and without '..'"
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in name) or len(name) > 256:
        raise UserError(
            f"{where} line {line}: job name {name[:60]!r}: fsmeter takes a name of at most 256 "
            "characters without control characters: rename the job"
        )
    safe = _UNSAFE_NAME.sub("_", name)
    if safe != name and notes is not None and not job.get("filename"):
        notes.append(f"job name {name!r}: its files are named {safe!r} (fio's $jobname); results keep the name")
    return safe


@dataclass
class Placement:
    names: list  # file names relative to the job's directory
    thread_files: bool  # each clone its own files (fio's default names)
    dir: Path | None  # the job file's own absolute directory, or None: --dir
    existing: list | None  # sizes of the files when every one exists as a regular file
    opt: object | None  # the option the files come from, for error lines


#: The most files one job may have (nrfiles x numjobs, or the names of filename=).
MAX_FILES = 1 << 20


_FMT_KEY = re.compile(r"\$(jobname|jobnum|filenum|clientuid)", re.I)


def _format_names(ctx: Ctx, opt, fmt: str, job: str, numjobs: int, nrfiles: int) -> list:
    """fio's filename_format keywords (matched in any case, as fio does) -> each clone's file names. The format is
    split at its keywords once, not searched again for every one of up to 2^20 names."""
    pieces = _FMT_KEY.split(fmt)  # literal, keyword, literal, ...
    keys = [k.lower() for k in pieces[1::2]]
    if "clientuid" in keys:
        ctx.fail(opt, "$clientuid names fio's client/server mode, which fsmeter does not have: remove it")
    out = []
    for clone in range(numjobs):
        per = []
        for filenum in range(nrfiles):
            value = {"jobname": job, "jobnum": str(clone), "filenum": str(filenum)}
            parts = pieces[:]
            parts[1::2] = [value[k] for k in keys]
            per.append("".join(parts))
        out.append(per)
    return out


def place_files(
    ctx: Ctx, name: str, numjobs: int, target: Path | None, dir_given: bool, notes: list, file_name: str | None = None
) -> Placement:
    """Where the job's files are: filename= (shared by the clones) or fio's generated names (filename_format,
    default $jobname.$jobnum.$filenum: one set per clone unless the format shares them), under directory=.
    Absolute paths are the job's target unless --dir is given, which replaces them (a note says so)."""
    job = ctx.job
    file_name = file_name or name
    names_opt = job.get("filename")
    names = split_names(names_opt.value or "") if names_opt is not None else []  # fio: '\\:' is a colon
    if names_opt is not None and (not names or any(not n for n in names)):
        ctx.fail(names_opt, "give one or more file names separated by ':'")
    if len(names) > MAX_FILES:
        ctx.fail(names_opt, f"{len(names)} file names, more than fsmeter's limit of {MAX_FILES} in a job: name fewer")
    d_opt = job.get("directory")
    directory = ""
    if d_opt is not None:
        dirs = split_names(d_opt.value or "")
        if len(dirs) > 1:
            ctx.fail(d_opt, "several directories are not supported by fsmeter yet (planned): give one")
        directory = dirs[0].strip()
        directory = directory if directory == "/" else directory.rstrip("/")
        if not directory:
            ctx.fail(d_opt, "give a directory")
    if names:
        src, thread_files = names_opt, False
        if numjobs > 1:
            notes.append(
                f"filename= with numjobs={numjobs}: the {numjobs} threads share the named file(s); "
                "sequential threads each walk their own part of it (fio: each clone walks all of it)"
            )
    else:
        fmt_opt = job.get("filename_format")
        fmt = (fmt_opt.value or "").strip() if fmt_opt is not None else "$jobname.$jobnum.$filenum"
        if not fmt:
            ctx.fail(fmt_opt, "give a name pattern, e.g. $jobname.$jobnum.$filenum")
        nr_opt = "nrfiles" if job.get("nrfiles") is not None else "nr_files"  # fio's alias
        nrfiles = ctx.int(nr_opt, 1, 1, MAX_FILES)
        if nrfiles * numjobs > MAX_FILES:  # before making the names: 4096 clones of 2^20 files never ended
            ctx.fail(
                job.get(nr_opt) or job.get("numjobs"),
                f"{numjobs} clones of {nrfiles} files each make "
                f"{nrfiles * numjobs} files, more than fsmeter's limit of {MAX_FILES} in a job: use fewer files "
                "or clones",
            )
        per_clone = _format_names(ctx, fmt_opt, fmt, file_name, numjobs, nrfiles)
        flat = [n for clone in per_clone for n in clone]
        src = fmt_opt or names_opt
        if len(set(flat)) == len(flat):
            names, thread_files = flat, True
        else:  # the format gives several clones (or files) one name: they share those files, as in fio
            names, thread_files = list(dict.fromkeys(flat)), False
            notes.append(
                f"filename_format={fmt}: {len(flat)} file slots share {len(names)} file name(s); the job's "
                "threads share them"
            )
    full = [n if n.startswith("/") else (f"{directory}/{n}" if directory else n) for n in names]
    anchor = d_opt if directory.startswith("/") else (src or d_opt)
    absolute = [p for p in full if p.startswith("/")]
    job_dir = None
    if absolute:
        if len(absolute) != len(full):
            ctx.fail(anchor, "some of its files are absolute paths and some relative ones: name them all one way")
        if directory.startswith("/") and all(p.startswith(directory.rstrip("/") + "/") for p in full):
            base = directory
        else:
            base = os.path.commonpath([os.path.dirname(p) for p in full])
        rel = [os.path.relpath(p, base) for p in full]
        if dir_given:
            notes.append(
                f"--dir replaces the job file's {anchor.as_written} (line {anchor.line}): its files go under --dir"
            )
            full = rel
        else:
            job_dir = Path(base)
            _check_target(ctx, anchor, job_dir, [job_dir / r for r in rel])
            full = rel
    elif not dir_given:
        raise UserError(
            f"{ctx.where} line {ctx.job.line}: job {name}: its files are relative (fio: to the current "
            "directory): give --dir D, or an absolute directory= in the job file"
        )
    for p in full:
        if "\0" in p:
            ctx.fail(anchor, "a file name cannot hold a NUL byte: remove it")
        parts = p.split("/")
        if parts[-1] in ("", "."):  # '.', '/', 'a/': the job's directory or a folder, which no request can open
            ctx.fail(src or anchor, f"{p!r} names a directory, not a file: give a file name")
        if any(len(c.encode("utf-8", "surrogateescape")) > 255 for c in parts):
            ctx.fail(
                src or anchor,
                "a part of a file name is longer than 255 bytes (the longest name a Linux filesystem "
                "takes): give a shorter name",
            )
        if ".." in p.split("/"):  # named where the '..' is written: directory= or the file names
            ctx.fail(
                d_opt if d_opt is not None and ".." in directory.split("/") else anchor,
                "'..' would leave the job's directory: give a name inside it",
            )
    root = job_dir if job_dir is not None else target
    existing = None
    if root is not None:
        sizes = []
        for p in full:
            try:
                st = os.stat(Path(root) / p)
            except OSError:
                break
            if not stat.S_ISREG(st.st_mode):
                break
            sizes.append(st.st_size)
        else:
            existing = sizes
    return Placement(names=full, thread_files=thread_files, dir=job_dir, existing=existing, opt=anchor)


def _check_target(ctx: Ctx, opt, base: Path, files: list) -> None:
    """What fsmeter refuses for --dir, it refuses for a job file's own directory: kernel interfaces
    (/proc, /sys, /dev, cgroup...), devices, and directories that do not exist (fio wants them too)."""
    from fsmeter.provision.sysinfo import pseudo_filesystem

    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode) or stat.S_ISCHR(st.st_mode):
            ctx.fail(
                opt,
                f"{f} is a device: fsmeter measures filesystems, not raw devices: name a file on the "
                "filesystem to measure (or give --dir)",
            )
    probe = base
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    pseudo = pseudo_filesystem(str(probe))
    if pseudo:
        ctx.fail(
            opt,
            f"{base} is a kernel interface ({pseudo}), not a filesystem to measure: name a directory on "
            "a real filesystem (or give --dir)",
        )
    if not base.is_dir():
        ctx.fail(opt, f"{base} is not an existing directory: create it (fio wants it to exist too), or give --dir")


def file_sizes(ctx: Ctx, name: str, nrfiles: int, offset: int, place: Placement, notes: list) -> tuple:
    """(size per job, region per file, sizes of the files already there or None). As fio: without size= (or
    with size=N%) the size comes from the existing files, less the offset."""
    job = ctx.job
    size_opt = job.get("size")
    pct = None
    if size_opt is not None and is_percentage(size_opt.value or ""):
        try:
            pct = parse_fio_pct((size_opt.value or "").strip()[:-1])
        except ValueError:
            pct = None
        if pct is None or pct < 1:
            ctx.fail(size_opt, "give a percentage from 1 to 100 (of the files' size), or a size")
    size = None if pct is not None else ctx.size("size")
    filesize = ctx.size("filesize")
    real = place.existing
    if (size is None and filesize is None) or pct is not None:
        if real is None:
            if pct is not None:
                ctx.fail(
                    size_opt,
                    "a percentage of the files' size needs files that exist: create them (as fio "
                    "would need them), or give a size",
                )
            raise UserError(
                f"{ctx.where} line {job.line}: job {name}: give size= (or filesize=): its files do "
                "not exist yet, so there is no size to take from them (fio needs one too)"
            )
        smallest = min(real)
        if len(set(real)) > 1:
            notes.append(
                f"the files have different sizes ({min(real)} to {max(real)} bytes): fsmeter uses the smallest for each"
            )
        region = smallest - offset
        if pct is not None:
            region = min(region, smallest * int(pct * 1000) // 100_000)
        if region <= 0:
            raise UserError(
                f"{ctx.where} line {job.line}: job {name}: its files ({smallest} bytes) leave nothing "
                f"after offset {offset}: give size="
            )
        notes.append(
            f"size from the existing files: {region} bytes per file"
            + (f" ({size_opt.as_written})" if pct is not None else "")
        )
        return region * nrfiles, region, real
    if size is None:
        size = filesize * nrfiles
    if filesize is None:
        filesize = size // nrfiles
        if size % nrfiles:
            notes.append(f"size {size} is not a multiple of nrfiles={nrfiles}: each file has {filesize} bytes")
    return size, filesize, real


def filled_by(ctx: Ctx, place: Placement, fill_outputs: dict | None) -> tuple | None:
    """(fill_device job, size, known?) when every file of this job, which gives no size, is the file of a
    fill_device job of an earlier group: fio then takes the size that job wrote. The files stand as existing ones."""
    if not fill_outputs or ctx.job.get("size") or ctx.job.get("filesize"):
        return None
    if ctx.flag("create_serialize", True):
        return None  # fio sets the file up before the fill has run, and asks for size= (as fsmeter then does)
    got = [fill_outputs.get((str(place.dir), n)) for n in place.names]
    if not got or any(g is None for g in got) or len({g[0] for g in got}) > 1:
        return None
    if place.existing is not None and not got[0][2]:
        return None  # there before the run (the fill_device job refuses to write over it)
    place.existing = [g[1] for g in got]
    return got[0][:3]


def fill_sizes(
    ctx: Ctx,
    rw: str,
    numjobs: int,
    nrfiles: int,
    offset: int,
    sizes: list,
    place: Placement,
    target: Path | None,
    notes: list,
) -> tuple:
    """fio's fill_device (fill_fs): write until the filesystem is full (ENOSPC or EDQUOT), which ends the job as its
    end, not an error; size= bounds it (fio: else no bound). -> (size, region per file, None)."""
    opt = ctx.job.get("fill_device") or ctx.job.get("fill_fs")
    if rw != "write":
        ctx.fail(
            opt,
            f"with rw={rw} is not supported by fsmeter yet (planned; fio: it makes sense with sequential "
            "writes only): use rw=write, or run this job with fio",
        )
    if numjobs > 1 or nrfiles > 1 or offset:
        ctx.fail(
            opt,
            "fsmeter fills with one thread writing one file from its start (planned: more): use numjobs=1, "
            "one file and no offset, or run this job with fio",
        )
    if place.existing is not None:
        ctx.fail(opt, f"{place.names[0]} exists already: filling would write over it; remove it, or name another file")
    root = place.dir if place.dir is not None else target
    bs = max(sizes)
    cap = ctx.size("size") or ctx.size("filesize")
    free = None
    if root is not None:
        try:
            st = os.statvfs(root)
            free = st.f_bavail * st.f_frsize
            # Twice the filesystem: a file cannot grow that far, so the filesystem is full before (a bound all the same).
            cap = cap or 2 * st.f_blocks * st.f_frsize
        except OSError:
            pass
    cap = min(-(-(cap or MAX_SIZE_BYTES) // bs) * bs, MAX_SIZE_BYTES // bs * bs)
    where_to = str(root) if root is not None else "the directory"
    notes.append(
        f"{opt.as_written}: writes {place.names[0]} under {where_to} until the filesystem is full (ENOSPC or "
        f"EDQUOT ends the job, as in fio)"
        + (f", {free} bytes free now" if free is not None else "")
        + f", at most {cap} bytes; the run says how many it wrote, and the file is removed at the end "
        "unless --keep-files"
    )
    return cap, cap, None


#: fio's fallocate modes (0 and 1 are its old names for none and posix).
_FALLOCATE = ("none", "native", "posix", "keep", "truncate", "0", "1")


def fallocate(ctx: Ctx, engine: str, notes: list) -> None:
    """fio's fallocate: how fio preallocates a file it lays out. fsmeter writes every byte of every file in its
    prepare phase, which allocates every block whatever the mode: the note says what differs."""
    opt = ctx.job.get("fallocate")
    if opt is None or engine in NAME_ENGINES:
        return  # the file and directory engines say it in their own note
    v = (opt.value or "").strip().lower()
    if v not in _FALLOCATE:
        ctx.fail(opt, f"use one of {', '.join(_FALLOCATE)}")
    notes.append(
        f"{opt.as_written}: fsmeter writes every file in full before measuring, so its blocks are allocated "
        "whatever the mode (as fio's own layout for jobs that read); for a job that only writes, fio lays "
        "out no data and its first writes fill "
        + ("holes" if v in ("none", "0", "truncate") else "preallocated, unwritten extents")
        + " where fsmeter's overwrite written blocks"
    )
