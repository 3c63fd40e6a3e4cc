"""fio jobs as fsmeter access workloads: every supported option mapped, every other option refused with one line
naming it, its line and whether fsmeter will support it (docs/fio.md lists the mapping)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from fsmeter.errors import UserError
from fsmeter.interop.fio_jobfile import (FioJob, is_percentage, parse_fio_bool, parse_fio_int, parse_fio_pct,
                                         parse_fio_range, parse_fio_size, parse_fio_time_s, read_jobfile,
                                         split_names)

#: Options fsmeter maps (the rest of the module says how).
SUPPORTED = {
    "name", "description", "rw", "readwrite", "bs", "blocksize", "bssplit", "rwmixread", "rwmixwrite", "ioengine",
    "iodepth", "direct", "buffered", "size", "filesize", "nrfiles", "numjobs", "filename", "directory", "runtime",
    "time_based", "ramp_time", "fsync", "end_fsync", "norandommap", "randrepeat", "randseed", "offset",
    "blockalign", "ba", "stonewall", "wait_for_previous", "group_reporting", "thread", "kb_base",
    "percentage_random", "io_size", "io_limit", "unlink", "iomem", "mem",
}
#: Options fsmeter means to support later (the error says "planned"); any other is "not planned".
PLANNED = {
    "bsrange", "blocksize_range", "rate", "rate_iops", "rate_min", "rate_iops_min", "fdatasync", "sync",
    "loops", "file_service_type", "random_distribution", "zipf", "pareto", "norandommap_percentage",
    "random_generator", "iodepth_batch", "iodepth_batch_submit", "iodepth_batch_complete", "iodepth_low",
    "startdelay", "new_group", "create_on_open", "fallocate", "overwrite", "invalidate", "fsync_on_close",
    "write_barrier", "number_ios", "bs_unaligned", "unified_rw_reporting", "steadystate", "ss", "ss_dur",
    "ss_ramp", "allrandrepeat", "rwmixcycle", "random_distribution", "filename_format", "opendir", "lockfile",
    "cpus_allowed", "cpumask", "nice", "prio", "write_bw_log", "write_lat_log", "write_iops_log", "log_avg_msec",
    "per_job_logs", "write_hist_log", "percentile_list", "clat_percentiles", "lat_percentiles", "hipri",
    "fixedbufs", "registerfiles", "sqthread_poll", "exitall", "exitall_on_error", "continue_on_error",
    "ioscheduler", "disable_lat", "disable_clat", "disable_slat", "disable_bw_measurement", "gtod_reduce",
}
#: Why some options will never be in fsmeter.
NEVER = {
    "verify": "fsmeter measures, it does not check data",
    "do_verify": "fsmeter measures, it does not check data",
    "verify_pattern": "fsmeter measures, it does not check data",
    "exec_prerun": "fsmeter does not run commands from job files",
    "exec_postrun": "fsmeter does not run commands from job files",
    "trim_percentage": "trim is not a filesystem data operation fsmeter measures",
    "zonemode": "fsmeter measures filesystems, not zoned devices",
    "cgroup": "use a campaign's page_cache_limit or cpus factor",
}
ENGINES = {"psync": "psync", "sync": "psync", "pvsync": "psync", "io_uring": "io_uring", "libaio": "io_uring",
           "null": "null"}
ENGINE_NOTES = {
    "sync": "ioengine=sync: fsmeter issues pread/pwrite (fio: lseek + read/write): the same data, one system call "
            "less per I/O",
    "pvsync": "ioengine=pvsync: fsmeter issues pread/pwrite (fio: preadv/pwritev with one vector): the same data",
    "libaio": "ioengine=libaio runs on io_uring (fsmeter has no libaio backend): the same queue depth and O_DIRECT "
              "semantics, another kernel interface",
}
_RW = {"read": (100, 0), "write": (0, 0), "randread": (100, 100), "randwrite": (0, 100), "rw": (None, 0),
       "readwrite": (None, 0), "randrw": (None, 100)}
_TRIM = {"trim", "randtrim", "trimwrite", "randtrimwrite"}
SYNC_ENGINES = {"psync", "sync", "pvsync", "null"}


@dataclass
class MappedJob:
    """One fio job as an access workload: params for AccessParams, settings for JobSettings."""
    name: str
    line: int
    group: int
    params: dict
    settings: dict
    notes: list = field(default_factory=list)
    fio_rw: str = "read"


class _Ctx:
    def __init__(self, where: str, job: FioJob):
        self.where, self.job = where, job
        kb = job.get("kb_base")
        self.kb_base = 1024
        if kb is not None:
            if kb.value not in ("1024", "1000"):
                self.fail(kb, "use 1024 or 1000")
            self.kb_base = int(kb.value)

    def fail(self, opt, what: str):
        raise UserError(f"{self.where} line {opt.line}: {opt.name}={opt.value or ''}: {what}")

    def size(self, name: str, default: Optional[int] = None, allow_range: bool = False) -> Optional[int]:
        opt = self.job.get(name)
        if opt is None:
            return default
        if opt.value is None or opt.value == "":
            self.fail(opt, "give a size")
        if is_percentage(opt.value):
            self.fail(opt, "a percentage of a device is not supported by fsmeter (not planned): give a size")
        if any(c in opt.value for c in "-:") and not opt.value.startswith("0x"):
            lo_hi = self._range(opt)
            if lo_hi[0] != lo_hi[1]:
                self.fail(opt, "a range is not supported for this option by fsmeter (planned): give one size")
            return lo_hi[0]
        try:
            return parse_fio_size(opt.value, self.kb_base)
        except ValueError as exc:
            self.fail(opt, str(exc))

    def _range(self, opt):
        try:
            return parse_fio_range(opt.value, self.kb_base)
        except ValueError as exc:
            self.fail(opt, str(exc))

    def int(self, name: str, default: int, lo: int = 0, hi: Optional[int] = None) -> int:
        opt = self.job.get(name)
        if opt is None:
            return default
        try:
            v = parse_fio_int(opt.value or "")
        except ValueError:
            self.fail(opt, "give a whole number (ASCII digits)")
        if v < lo or (hi is not None and v > hi):
            self.fail(opt, f"must be between {lo} and {hi}" if hi is not None else f"must be >= {lo}")
        return v

    def flag(self, name: str, default: bool = False) -> bool:
        opt = self.job.get(name)
        if opt is None:
            return default
        try:
            return parse_fio_bool(opt.value)
        except ValueError as exc:
            self.fail(opt, str(exc))

    def time_s(self, name: str) -> Optional[float]:
        opt = self.job.get(name)
        if opt is None:
            return None
        try:
            return parse_fio_time_s(opt.value or "")
        except ValueError as exc:
            self.fail(opt, str(exc))


def check_options(where: str, job: FioJob) -> None:
    for opt in sorted(job.options.values(), key=lambda o: o.line):
        if opt.name in SUPPORTED:
            continue
        if opt.name in NEVER:
            raise UserError(f"{where} line {opt.line}: option {opt.name} is not supported and fsmeter will not "
                            f"support it ({NEVER[opt.name]}): remove it, or run this job with fio")
        if opt.name in PLANNED:
            raise UserError(f"{where} line {opt.line}: option {opt.name} is not supported by fsmeter yet "
                            "(planned): remove it, or run this job with fio")
        raise UserError(f"{where} line {opt.line}: option {opt.name} is not supported by fsmeter (not planned): "
                        "remove it, or run this job with fio")


def _bs_pair(ctx: _Ctx, name: str) -> Optional[tuple]:
    """bs=R or bs=R,W (a third, trim value is ignored only when equal or absent: trims are refused anyway)."""
    opt = ctx.job.get(name)
    if opt is None:
        return None
    parts = [p.strip() for p in (opt.value or "").split(",")]
    if len(parts) > 3 or not any(parts):
        ctx.fail(opt, "give bs=SIZE or bs=READ,WRITE")
    out = []
    for p in parts[:2]:
        if not p:
            out.append(4096)
            continue
        if "-" in p or ":" in p:
            ctx.fail(opt, "a block size range is not supported by fsmeter (planned, as bsrange): give one size")
        try:
            out.append(parse_fio_size(p, ctx.kb_base))
        except ValueError as exc:
            ctx.fail(opt, str(exc))
    if len(out) == 1:
        out.append(out[0])
    if min(out) <= 0:
        ctx.fail(opt, "must be > 0")
    return tuple(out)


def _bssplit(ctx: _Ctx) -> Optional[tuple]:
    """bssplit=4k/10:64k/90 (one list for both directions) or READLIST,WRITELIST -> per direction [(size, pct)]."""
    opt = ctx.job.get("bssplit")
    if opt is None:
        return None
    lists = [p for p in (opt.value or "").split(",")]
    if len(lists) > 3 or not lists[0].strip():
        ctx.fail(opt, "give SIZE/PCT:SIZE/PCT..., or READLIST,WRITELIST")
    out = []
    for lst in lists[:2]:
        if not lst.strip():
            out.append(None)
            continue
        entries, free = [], 0
        for item in lst.split(":"):
            size_s, sep, pct_s = item.partition("/")
            try:
                size = parse_fio_size(size_s, ctx.kb_base)
            except ValueError as exc:
                ctx.fail(opt, str(exc))
            if size <= 0:
                ctx.fail(opt, f"{size_s.strip()!r}: a block size must be > 0")
            if sep and pct_s.strip():
                try:  # fio: each percentage 0..100, and together at most 100
                    pct = parse_fio_pct(pct_s)
                except ValueError as exc:
                    ctx.fail(opt, str(exc))
            else:
                pct, free = None, free + 1
            entries.append([size, pct])
        given = sum(p for _, p in entries if p is not None)
        if given > 100 or (free == 0 and abs(given - 100) > 1e-9):
            ctx.fail(opt, f"the percentages add up to {given:g}, not 100")
        for e in entries:  # fio shares what is left equally among the sizes without a percentage
            if e[1] is None:
                e[1] = (100.0 - given) / free
        out.append([(s, p) for s, p in entries if p > 0])
    if len(out) == 1:
        out.append(out[0])
    return tuple(x if x is not None else out[0] for x in out)


#: fio's iomem (alias mem) -> the access family's buffer_memory.
_IOMEM = {"malloc": "heap", "mmap": "heap", "mmapshared": "heap", "shm": "heap", "mmaphuge": "hugetlb",
          "shmhuge": "hugetlb"}


def _iomem(ctx: _Ctx, notes: list) -> str:
    """fio's iomem (or mem; the later line wins, as in fio): where the I/O buffers come from. Plain
    pages (malloc, mmap, mmapshared, shm) are heap buffers here; huge pages (mmaphuge, shmhuge) are
    hugetlb buffers, from the same vm.nr_hugepages pool."""
    given = [o for o in (ctx.job.get("iomem"), ctx.job.get("mem")) if o is not None]
    if not given:
        return "heap"
    opt = max(given, key=lambda o: o.line)
    kind, _, path = (opt.value or "").strip().partition(":")
    if kind not in _IOMEM:
        ctx.fail(opt, "GPU memory is not supported by fsmeter (not planned)" if kind.startswith("cuda")
                 else f"use one of {', '.join(_IOMEM)}")
    if path and kind in ("mmap", "mmapshared"):
        notes.append(f"{opt.name}={kind}:{path}: fio maps that file for its buffers; fsmeter uses heap buffers "
                     "(4 KiB pages) and does not touch the file")
    elif path and kind == "mmaphuge":
        notes.append(f"{opt.name}={kind}:{path}: fsmeter maps anonymous hugetlb pages (MAP_HUGETLB) from the same "
                     "pool instead of a file on hugetlbfs")
    elif path:
        ctx.fail(opt, f"{kind} takes no file: remove ':{path}'")
    elif kind in ("mmap", "mmapshared", "shm"):
        notes.append(f"{opt.name}={kind}: fio's buffers then come from {'shmget' if kind == 'shm' else 'mmap'}: "
                     "4 KiB pages, as fsmeter's heap buffers")
    return _IOMEM[kind]


def map_job(where: str, job: FioJob, group: int) -> MappedJob:
    """One fio job -> access params and settings, with notes on what differs from fio."""
    check_options(where, job)
    ctx = _Ctx(where, job)
    notes: list = []
    name = job.name
    if not re.fullmatch(r"[A-Za-z0-9._+-]+", name):
        o = job.get("name")
        raise UserError(f"{where} line {o.line if o else job.line}: job name {name!r}: fsmeter names files after "
                        "the job, so use letters, digits and . _ + -")
    # -- pattern --------------------------------------------------------------------------------------------
    rw_opt = job.get("rw") or job.get("readwrite")
    rw = "read" if rw_opt is None else (rw_opt.value or "").strip()
    if ":" in rw:
        ctx.fail(rw_opt, "an offset modifier (rw=...:N) is not supported by fsmeter (planned)")
    if rw in _TRIM:
        ctx.fail(rw_opt, "trim is not supported and fsmeter will not support it (not a filesystem data operation)")
    if rw not in _RW:
        ctx.fail(rw_opt, f"use one of {', '.join(_RW)}")
    read_pct, random_pct = _RW[rw]
    if read_pct is None:
        mr, mw = job.get("rwmixread"), job.get("rwmixwrite")
        if mr is not None and mw is not None and ctx.int("rwmixread", 50, 0, 100) + ctx.int("rwmixwrite", 50, 0, 100) != 100:
            ctx.fail(mw, "rwmixread and rwmixwrite must add up to 100")
        read_pct = ctx.int("rwmixread", 50, 0, 100) if mr is not None else (
            100 - ctx.int("rwmixwrite", 50, 0, 100) if mw is not None else 50)
    pr = job.get("percentage_random")
    if pr is not None and random_pct:
        if "," in (pr.value or ""):
            ctx.fail(pr, "one percentage for both directions only (fsmeter: planned)")
        random_pct = ctx.int("percentage_random", 100, 0, 100)
    # -- request sizes: per direction [(size, pct)] ---------------------------------------------------------
    split = _bssplit(ctx)
    bs = _bs_pair(ctx, "bs") or _bs_pair(ctx, "blocksize") or (4096, 4096)
    per_dir = split if split is not None else ([(bs[0], 100.0)], [(bs[1], 100.0)])
    entries = []
    if per_dir[0] == per_dir[1]:
        for size, pct in per_dir[0]:
            entries.append({"size": size, "weight": pct, "read_pct": float(read_pct), "random_pct": float(random_pct)})
    else:
        for d, share in ((0, read_pct), (1, 100 - read_pct)):
            for size, pct in per_dir[d]:
                if share > 0:
                    entries.append({"size": size, "weight": share * pct / 100.0, "read_pct": 100.0 if d == 0 else 0.0,
                                    "random_pct": float(random_pct)})
    sizes = [e["size"] for e in entries]
    # -- engine and depth -----------------------------------------------------------------------------------
    eng_opt = job.get("ioengine")
    engine = (eng_opt.value or "").strip() if eng_opt is not None else "psync"
    if engine not in ENGINES:
        ctx.fail(eng_opt, f"ioengine {engine} is not supported by fsmeter (not planned): use one of "
                          f"{', '.join(ENGINES)}")
    if engine in ENGINE_NOTES:
        notes.append(ENGINE_NOTES[engine])
    qd = ctx.int("iodepth", 1, 1, 4096)
    if qd > 1 and engine in SYNC_ENGINES:
        notes.append(f"iodepth={qd} with the synchronous ioengine {engine}: queue depth capped at 1, as fio does")
        qd = 1
    direct = ctx.flag("direct", False)
    if job.get("buffered") is not None:
        direct = not ctx.flag("buffered", True)
    buffer_memory = _iomem(ctx, notes)
    # -- data set -------------------------------------------------------------------------------------------
    numjobs = ctx.int("numjobs", 1, 1, 4096)
    names_opt = job.get("filename")
    names = split_names(names_opt.value or "") if names_opt is not None else []  # fio: '\\:' is a colon
    if names_opt is not None and (not names or any(not n for n in names)):
        ctx.fail(names_opt, "give one or more file names separated by ':'")
    for n in names:
        if n.startswith("/"):
            ctx.fail(names_opt, "an absolute path is not supported by fsmeter (not planned): it measures the "
                                "filesystem under --dir; give a name relative to it")
        if ".." in n.split("/"):
            ctx.fail(names_opt, "'..' would leave --dir: give a name inside it")
    nrfiles = len(names) if names else ctx.int("nrfiles", 1, 1, 1 << 20)
    size = ctx.size("size")
    filesize = ctx.size("filesize")
    if size is None and filesize is None:
        raise UserError(f"{where} line {job.line}: job {name}: give size= (or filesize=): fsmeter lays out its own "
                        "files and needs their size")
    if size is None:
        size = filesize * nrfiles
    if filesize is None:
        filesize = size // nrfiles
        if size % nrfiles:
            notes.append(f"size {size} is not a multiple of nrfiles={nrfiles}: each file has {filesize} bytes")
    io_per_job = ctx.size("io_size") or ctx.size("io_limit") or size
    offset = ctx.size("offset", 0)
    ba_opt = job.get("blockalign") or job.get("ba")
    if ba_opt is not None and "," in (ba_opt.value or ""):
        ctx.fail(ba_opt, "one alignment for both directions only (fsmeter: planned)")
    align = ctx.size(ba_opt.name) if ba_opt is not None else min(sizes)
    if align <= 0:
        ctx.fail(ba_opt, "must be > 0 (a number of bytes every offset is a multiple of)")
    if offset % align:
        ctx.fail(job.get("offset"), f"must be a multiple of the alignment ({align} bytes; set blockalign)")
    if max(sizes) > filesize:
        raise UserError(f"{where} line {job.line}: job {name}: a {max(sizes)}-byte request does not fit in a "
                        f"{filesize}-byte file: make size/filesize larger or bs smaller")
    directory = ""
    d_opt = job.get("directory")
    if d_opt is not None:
        directory = (d_opt.value or "").strip().rstrip("/")
        if ":" in directory:
            ctx.fail(d_opt, "several directories are not supported by fsmeter (planned)")
        if directory.startswith("/"):
            ctx.fail(d_opt, "an absolute directory is not supported by fsmeter (not planned): it measures the "
                            "filesystem under --dir; give a directory relative to it")
        if ".." in directory.split("/"):
            ctx.fail(d_opt, "'..' would leave --dir: give a directory inside it")
    prefix = f"{directory}/" if directory else ""
    if names:
        file_names = [prefix + n for n in names]
        thread_files = False
        if numjobs > 1:
            notes.append(f"filename= with numjobs={numjobs}: the {numjobs} threads share the named file(s); "
                         "sequential threads each walk their own part of it (fio: each clone walks all of it)")
    else:
        # fio's default names: <job name>.<clone>.<file number>, one set per clone.
        file_names = [f"{prefix}{name}.{c}.{f}" for c in range(numjobs) for f in range(nrfiles)]
        thread_files = True
    # -- time, sync, randomness -----------------------------------------------------------------------------
    time_based = ctx.flag("time_based", False)
    runtime = ctx.time_s("runtime")
    ramp = ctx.time_s("ramp_time") or 0.0
    if time_based and not runtime:
        raise UserError(f"{where} line {job.get('time_based').line}: time_based needs runtime=: give one")
    per_job = io_per_job
    if len(set(sizes)) == 1 and not time_based:
        # fio stops a clone at the end of its files' regions (sequential) or when its random map is full, and
        # never issues a partial request: count whole requests as fio does.
        bsz = sizes[0]
        whole = -(-io_per_job // bsz)
        blocks = nrfiles * (filesize // bsz)
        capped = not random_pct or not ctx.flag("norandommap", False)
        per_job = (min(whole, blocks) if capped else whole) * bsz
    elif random_pct and not ctx.flag("norandommap", False) and not time_based:
        notes.append("several request sizes without norandommap: fio's random map shortens requests as blocks "
                     "fill up (so it does more, smaller I/Os than bssplit says); fsmeter keeps the sizes asked for, "
                     "as fio does with norandommap")
    params = {
        "entries": entries, "alignment": align, "file_count": len(file_names), "file_size": filesize,
        "queue_depth": qd, "direct": direct, "fsync_every": ctx.int("fsync", 0, 0), "fsync_end": ctx.flag("end_fsync"),
        "warmup_s": ramp, "duration_s": runtime if runtime else None,
        "total_bytes": None if time_based else per_job * numjobs, "file_names": file_names, "offset": offset,
        "thread_files": thread_files, "reuse_files": True, "buffer_memory": buffer_memory,
    }
    if random_pct and not ctx.flag("norandommap", False):
        if len(set(sizes)) == 1 and align == sizes[0]:
            params["random_map"] = True  # each block once per pass, as fio's random map
        else:
            notes.append("random offsets are drawn with replacement (fio's norandommap): fsmeter keeps a random "
                         "map only for one request size aligned to itself")
    seed = 42
    if job.get("randseed") is not None:
        seed = ctx.int("randseed", 42, 0)
    if not ctx.flag("randrepeat", True) and job.get("randseed") is None:
        import time as _time

        seed = int(_time.time_ns() % (1 << 63))
        notes.append(f"randrepeat=0: seed {seed} from the clock")
    if rw in ("rw", "readwrite"):
        notes.append("sequential mix: reads and writes share one position per thread (fio keeps one per direction)")
    if ctx.flag("unlink", False) is False and job.get("unlink") is not None:
        notes.append("unlink=0: fsmeter run removes its files at the end unless --keep-files")
    settings = {"threads": numjobs, "seed": seed, "backend": ENGINES[engine]}
    return MappedJob(name=name, line=job.line, group=group, params=params, settings=settings, notes=notes,
                     fio_rw=rw)


def map_jobfile(path: Path) -> list:
    """Every job of a job file, in order, with its stonewall group; refuses jobs that would run concurrently."""
    jf = read_jobfile(path)
    where = str(path)
    out: list = []
    group = -1
    prev: Optional[MappedJob] = None
    names: set = set()
    for i, job in enumerate(jf.jobs):
        wait = job.get("stonewall") or job.get("wait_for_previous")
        starts_group = i == 0 or (wait is not None and parse_fio_bool(wait.value))
        if not starts_group:
            raise UserError(f"{where} line {job.line}: job {job.name} would run at the same time as job "
                            f"{prev.name} (no stonewall between them): concurrent jobs are not supported by fsmeter "
                            "yet (planned): add stonewall to it, or fold the two into one job with rwmixread")
        group += 1
        m = map_job(where, job, group)
        if m.name in names:
            raise UserError(f"{where} line {job.line}: a second job named {m.name}: give each job its own name")
        names.add(m.name)
        out.append(m)
        prev = m
    return out


def split_ref(ref: str) -> tuple:
    """'dir/jobs.fio' -> (path, None); 'dir/jobs.fio:seq-read' -> (path, 'seq-read')."""
    m = re.match(r"^(.*\.fio)(?::([^/]+))?$", ref)
    if not m:
        raise UserError(f"{ref}: not a fio job file reference: write path/to/file.fio or path/to/file.fio:jobname")
    return Path(m.group(1)), m.group(2)


def is_fio_ref(ref: str) -> bool:
    return bool(re.match(r"^.*\.fio(:[^/]+)?$", str(ref)))


def fio_workloads(ref: str) -> list:
    """(WorkloadDef, MappedJob) per job of the file (or the one job named after ':'), in run order."""
    from fsmeter.families import FAMILIES, WorkloadDef

    path, only = split_ref(ref)
    if not path.is_file():
        raise UserError(f"{path}: no such fio job file")
    jobs = map_jobfile(path)
    if only is not None:
        jobs = [j for j in jobs if j.name == only]
        if not jobs:
            raise UserError(f"{path}: no job named {only}: the jobs are {', '.join(j.name for j in map_jobfile(path))}")
    out = []
    for j in jobs:
        d = WorkloadDef(name=f"{path.name}:{j.name}", family=FAMILIES["access"],
                        description=f"fio job {j.name} of {path} (line {j.line}, rw={j.fio_rw})",
                        params=dict(j.params), settings=dict(j.settings), source=path)
        out.append((d, j))
    return out


def load_fio_workload(ref: str):
    """One job of a fio job file as a WorkloadDef (campaigns: a file with several jobs needs :jobname)."""
    pairs = fio_workloads(ref)
    if len(pairs) > 1:
        path, _ = split_ref(ref)
        raise UserError(f"{path} has {len(pairs)} jobs ({', '.join(j.name for _, j in pairs)}): name one as "
                        f"{path}:JOBNAME (or run them all with fsmeter run {path})")
    return pairs[0][0]
