"""fio jobs as fsmeter access workloads: every supported option mapped, every other option refused with one line
naming it, its line and whether fsmeter will support it (docs/fio.md lists the mapping)."""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from fsmeter.errors import UserError
from fsmeter.families.access import check_distribution, parse_buffer_pattern, verify_header_len
from fsmeter.interop import fio_exec
from fsmeter.interop.fio_jobfile import (
    FioJob,
    FioOption,
    is_percentage,
    parse_fio_bool,
    parse_fio_int,
    parse_fio_pct,
    parse_fio_range,
    parse_fio_size,
    parse_fio_time_s,
    read_jobfile,
    split_names,
    unset_message,
)
from fsmeter.units import MAX_COUNT, MAX_DURATION_S, MAX_SIZE_BYTES

#: Options fsmeter maps (the rest of the module says how).
SUPPORTED = {
    "name",
    "description",
    "rw",
    "readwrite",
    "bs",
    "blocksize",
    "bssplit",
    "rwmixread",
    "rwmixwrite",
    "ioengine",
    "iodepth",
    "direct",
    "buffered",
    "size",
    "filesize",
    "nrfiles",
    "numjobs",
    "filename",
    "directory",
    "runtime",
    "time_based",
    "ramp_time",
    "fsync",
    "end_fsync",
    "norandommap",
    "randrepeat",
    "randseed",
    "offset",
    "offset_increment",
    "blockalign",
    "ba",
    "stonewall",
    "wait_for_previous",
    "group_reporting",
    "thread",
    "kb_base",
    "percentage_random",
    "io_size",
    "io_limit",
    "unlink",
    "iomem",
    "mem",
    "threads",
    "nr_files",
    "filename_format",
    "number_ios",
    "write_bw_log",
    "write_iops_log",
    "log_avg_msec",
    "per_job_logs",
    "timeout",
    "loops",
    "bsrange",
    "blocksize_range",
    "random_distribution",
    "buffer_pattern",
    "verify",
    "do_verify",
    "verify_interval",
    "random_generator",
    "zonemode",
    "zonesize",
    "zonerange",
    "zoneskip",
    "random_sequence_stride",
    "verify_pattern",
    "stat_type",
    "donorname",
    "inplace",
    # fio's SanDisk preconditioning (_sprandom).
    "sprandom",
    "spr_op",
    "spr_num_regions",
    "spr_cs",
    # fio's verification options (_fio_access_opts, _verify_readback).
    "verify_backlog",
    "verify_backlog_batch",
    "verify_fatal",
    "verify_write_sequence",
    "verify_async",
    "verify_dump",
    # How fast and how long (_pace, map_job, map_jobfile).
    "rate",
    "rate_iops",
    "rate_min",
    "ratemin",
    "rate_iops_min",
    "rate_process",
    "rate_cycle",
    "ratecycle",
    "thinktime",
    "thinktime_spin",
    "thinktime_blocks",
    "startdelay",
    "wait_for",
    "exitall",
    "exit_what",
    "flow",
    "flow_id",
    "flow_sleep",
    "steadystate",
    "ss",
    "steadystate_duration",
    "ss_dur",
    "steadystate_ramp_time",
    "ss_ramp",
    "steadystate_check_interval",
    "ss_interval",
    "cpus_allowed",
    "cpumask",
    "cpus_allowed_policy",
    "numa_cpu_nodes",
    "numa_mem_policy",
    # What writes carry, and untorn writes (_content, _atomic).
    *(
        "dedupe_percentage",
        "dedupe_mode",
        "dedupe_working_set_percentage",
        "dedupe_global",
        "buffer_compress_percentage",
        "buffer_compress_chunk",
        "scramble_buffers",
        "refill_buffers",
        "zero_buffers",
        "atomic",
    ),
    # The mmap, libpmem, cpuio and libblkio engines (_engine_setup, _cpuio_job).
    "cpuload",
    "cpuchunks",
    "cpumode",
    "exit_on_io_done",
    "libblkio_driver",
    "libblkio_path",
    # fio's logs (_logs, _log_format).
    "write_lat_log",
    "log_offset",
    "log_max_value",
    "log_window_value",
    "log_prio",
    # I/O priorities (_ioprio).
    "prio",
    "prioclass",
    "priohint",
    "cmdprio_percentage",
    "cmdprio_class",
    "cmdprio",
    "cmdprio_hint",
    "cmdprio_bssplit",
    # Errors and filling (_on_error, _fill, _fallocate).
    "continue_on_error",
    "ignore_error",
    "error_dump",
    "fill_device",
    "fill_fs",
    "fallocate",
    # The search for a queue depth within a latency target (_latency_target).
    "latency_target",
    "latency_window",
    "latency_percentile",
    "latency_run",
}
#: Options accepted because they change nothing fsmeter measures (or counts): why, as the note printed.
ACCEPTED = {
    "thread": "fsmeter always runs a job's clones as threads of one process",
    "threads": "fsmeter always runs a job's clones as threads of one process",
    "create_on_open": "fio creates and opens each file when the job first does I/O to it; fsmeter lays its files "
    "out in the prepare phase, before the measured one: the same I/Os, file creation not timed",
    "io_submit_mode": "fio's offload mode submits from a pool of helper threads; fsmeter's threads submit their own "
    "requests (inline): the same I/Os",
    "gtod_reduce": "fio then reads the clock less and reports no latencies; fsmeter still times every request",
    "disable_lat": "fio then reports no total latency; fsmeter still times every request",
    "disable_clat": "fio then reports no completion latency; fsmeter still times every request",
    "disable_slat": "fio then reports no submission latency; fsmeter has none to report (it times each request "
    "from issue to completion)",
    "disable_bw_measurement": "fio then keeps no bandwidth samples; fsmeter still samples every interval",
    "new_group": "fio then reports the job in a group of its own; fsmeter reports every job on its own anyway",
    "clat_percentiles": "fsmeter reports its own latency percentiles (50 to 99.99) of every request, always",
    "lat_percentiles": "fsmeter reports its own latency percentiles (50 to 99.99) of every request, always",
    "percentile_list": "fsmeter reports its own latency percentiles (50 to 99.99); fio's export of a run carries "
    "them under fio's names",
    "invalidate": "fio drops the job's files from the page cache before it starts (1, its default) or not (0); "
    "fsmeter resets caches before each measured phase as --cache says (--cache keep: not at all)",
    "flow_watermark": "fio ignores it (deprecated): nothing to do",
    "create_serialize": "fio then lays out each job's files in the job itself as it starts, not all of them before "
    "the first job; fsmeter lays out each group's files before the group starts: the same files (a "
    "job sized by what a fill_device job of an earlier group wrote needs it, as in fio)",
    "exitall_on_error": "fio then stops the other jobs when this one fails; in fsmeter an error in any job stops "
    "every job and fails the run, always",
}
_ACCEPTED_VALUES = {"io_submit_mode": ("inline", "offload")}
#: Options fsmeter means to support later (the error says "planned"); any other is "not planned".
PLANNED = {
    "fdatasync",
    "sync",
    "file_service_type",
    "zipf",
    "pareto",
    "norandommap_percentage",
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_batch_complete",
    "iodepth_low",
    "overwrite",
    "fsync_on_close",
    "write_barrier",
    "bs_unaligned",
    "unified_rw_reporting",
    "allrandrepeat",
    "rwmixcycle",
    "opendir",
    "lockfile",
    "nice",
    "write_hist_log",
    "hipri",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "ioscheduler",
    "rate_ignore_thinktime",
}
#: What a planned option waits for, when it is more than the mapping (the error line says it).
PLANNED_WHY = {
    "write_hist_log": "the engine keeps no latency histogram per sample interval yet",
    "verify_only": "fio then only reads back what an earlier run of the job wrote, without writing; fsmeter lays "
    "its verified files out anew in each run",
    "verify_state_save": "fio then saves how far each job wrote, for a later verify_state_load run; fsmeter keeps no "
    "state between runs",
    "verify_state_load": "fio then verifies only what a saved state says was written; fsmeter keeps no state "
    "between runs",
    "verify_offset": "fio then swaps its header with data elsewhere in the block; fsmeter's header is always at the "
    "block's start",
    "verify_async_cpus": "fsmeter checks blocks in the thread that read them (verify_async is accepted: the same "
    "I/Os), so there are no verify threads to pin",
}
PLANNED |= set(PLANNED_WHY)
#: Why some options will never be in fsmeter.
NEVER = {
    "exec_prerun": "fsmeter does not run commands from job files",
    "exec_postrun": "fsmeter does not run commands from job files",
    "trim_percentage": "trim is not a filesystem data operation fsmeter measures",
    "cgroup": "use a campaign's page_cache_limit or cpus factor",
}
#: Options of fio's zoned block devices (zonemode=zbd).
for _o in (
    "zonecapacity",
    "max_open_zones",
    "job_max_open_zones",
    "zone_reset_threshold",
    "zone_reset_frequency",
    "read_beyond_wp",
    "ignore_zone_limits",
    "write_zone_remainder",
    "recover_zbd_write_error",
):
    NEVER[_o] = "an option of zoned block devices (zonemode=zbd): fsmeter measures filesystems, not zoned devices"
ENGINES = {
    "psync": "psync",
    "sync": "psync",
    "pvsync": "psync",
    "io_uring": "io_uring",
    "libaio": "io_uring",
    "null": "null",
    "cpp_null": "null",
    "filecreate": "psync",
    "filestat": "psync",
    "filedelete": "psync",
    "dircreate": "psync",
    "dirstat": "psync",
    "dirdelete": "psync",
    "falloc": "psync",
    "ftruncate": "psync",
    "e4defrag": "psync",
    "mmap": "mmap",
    "libpmem": "libpmem",
    "cpuio": "psync",
    "libblkio": "io_uring",
}
#: fio's engines that do one filesystem call per I/O instead of moving data (the engine's fio_engine): the
#: file and directory engines (one call per file name) and the one-call engines (one per request).
NAME_ENGINES = ("filecreate", "filestat", "filedelete", "dircreate", "dirstat", "dirdelete")
CALL_ENGINES = ("falloc", "ftruncate", "e4defrag")
#: Engine options fio takes only with these engines.
_ENGINE_OPTS = {
    "stat_type": ("filestat", "dirstat"),
    "donorname": ("e4defrag",),
    "inplace": ("e4defrag",),
    **{k: ("cpuio",) for k in ("cpuload", "cpuchunks", "cpumode", "exit_on_io_done")},
    **{k: ("libblkio",) for k in ("libblkio_driver", "libblkio_path")},
}
#: Options that change nothing for a file or directory engine (no data is laid out or moved): why, as the note.
_NAME_ENGINE_ACCEPTED = {
    "fallocate": "the file and directory engines lay out no data: fio's preallocation has nothing to do",
    "openfiles": "each file is opened (or stat'ed, removed) and closed in turn: at most one is open at a time",
}
ENGINE_NOTES = {
    "sync": "ioengine=sync: fsmeter issues pread/pwrite (fio: lseek + read/write): the same data, one system call "
    "less per I/O",
    "pvsync": "ioengine=pvsync: fsmeter issues pread/pwrite (fio: preadv/pwritev with one vector): the same data",
    "libaio": "ioengine=libaio runs on io_uring (fsmeter has no libaio backend): the same queue depth and O_DIRECT "
    "semantics, another kernel interface",
    "cpp_null": "ioengine=cpp_null is fio's null engine built as a C++ plugin: fsmeter runs its own null engine, "
    "which does the same (no I/O; every request completes at once)",
    "mmap": "ioengine=mmap: each file is mapped whole (MAP_SHARED) once per thread before the run and every I/O is "
    "a memcpy to or from the mapping, as fio's engine does on a 64-bit machine; fsync and end_fsync are an "
    "msync of the mapping, direct=1 msyncs each I/O's pages and drops them (MADV_DONTNEED), as in fio",
    "libpmem": "ioengine=libpmem runs on fsmeter's mmap backend with each write made durable before it completes, as "
    "fio's libpmem does (pmem_memcpy): CPU cache flushes and a fence; as fio, it stops when the files "
    "are not on DAX persistent memory",
    "libblkio": "ioengine=libblkio with libblkio_driver=io_uring runs on fsmeter's io_uring backend: the same "
    "io_uring reads and writes to libblkio_path, issued by fsmeter, not through the libblkio library",
}
_RW = {
    "read": (100, 0),
    "write": (0, 0),
    "randread": (100, 100),
    "randwrite": (0, 100),
    "rw": (None, 0),
    "readwrite": (None, 0),
    "randrw": (None, 100),
}
#: fio's trim patterns -> (random %, each trim followed by a write of the same range).
_TRIM = {"trim": (0, False), "randtrim": (100, False), "trimwrite": (0, True), "randtrimwrite": (100, True)}
#: fio's verify methods fsmeter's verification has (docs/verify.md); the others are refused naming them.
_VERIFY = {
    "crc32c": "crc32c",
    "crc32c-intel": "crc32c",
    "sha256": "sha256",
    "xxhash": "xxh3",
    "md5": "md5",
    "sha1": "sha1",
    "crc32": "crc32",
    "crc16": "crc16",
    "crc7": "crc7",
    "crc64": "crc64",
    "sha3-224": "sha3_224",
    "sha3-256": "sha3_256",
    "sha512": "sha512",
    "sha3-384": "sha3_384",
    "sha3-512": "sha3_512",
    "meta": "crc32c",
}
#: fio's options that go with a verify method (_verify_options).
_VERIFY_OPTS = (
    "verify_backlog",
    "verify_backlog_batch",
    "verify_fatal",
    "verify_async",
    "verify_write_sequence",
    "verify_dump",
)
SYNC_ENGINES = {"psync", "sync", "pvsync", "null", "cpp_null", "mmap", "libpmem", "cpuio", *NAME_ENGINES, *CALL_ENGINES}
#: Why fio's other engines are not a local filesystem's work for fsmeter (or not yet), by engine.
_ENGINE_WHY = {}
for _names, _why in (
    (
        (
            "net",
            "netsplice",
            "rdma",
            "http",
            "nbd",
            "nfs",
            "rados",
            "rbd",
            "gfapi",
            "gfapi_async",
            "dfs",
            "libiscsi",
            "libhdfs",
            "ime_psync",
            "ime_psyncv",
            "ime_aio",
            "xnvme",
            "windowsaio",
            "splice",
        ),
        "a network, object-store, cluster or remote-block engine: fsmeter measures a local filesystem, through "
        "its own system calls (not planned)",
    ),
    (
        ("io_uring_cmd", "sg", "libzbc", "mtd", "dev-dax", "pmemblk", "spdk"),
        "it talks to a device (NVMe or SCSI pass-through, zoned, flash, persistent memory) past any filesystem: "
        "fsmeter measures filesystems (not planned)",
    ),
    (("libcufile", "libhipfile", "cuda"), "GPU I/O is not supported by fsmeter (not planned)"),
    (
        ("external",),
        "it is a plugin fsmeter cannot load: fsmeter measures filesystems through its own engines (not planned)",
    ),
    (("exec",), fio_exec.REFUSAL),
    (
        ("page_fault", "posixaio", "solarisaio", "guasi"),
        "fsmeter has no such engine: its requests are pread/pwrite (psync), io_uring, or copies to and from a "
        "mapping (mmap) (not planned)",
    ),
):
    for _n in _names:
        _ENGINE_WHY[_n] = _why


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
    #: The directory the job file names (absolute directory= or filename=), when no --dir replaces it.
    dir: Path | None = None
    #: Leave the files in place after the run (they were there before it: the user's own).
    keep_files: bool = False
    #: fio logs to write after the run: (kind "bw", "iops", "lat", "clat" or "slat", file name).
    logs: list = field(default_factory=list)
    #: How the log lines are written (_log_format): offset and priority columns, average/max/both.
    log_format: dict = field(default_factory=dict)
    #: access parameter -> the job file's option it comes from, for errors: (line, name=value as written).
    sources: dict = field(default_factory=dict)
    group_reporting: bool = False
    #: Run control in a group of concurrent jobs (fio startdelay, wait_for, exitall/exit_what, new_group).
    start_delay_s: float = 0.0
    wait_for: str | None = None
    exit_what: str = "none"
    report_group: int = 0
    #: fio's fill_device: the job writes its file until the filesystem is full.
    fill: bool = False
    #: The fill_device job of an earlier group whose file this job works on (its size is what that job wrote).
    after_fill: str | None = None
    #: The job file's section, to map the job again once the fill_device job before it has run.
    fio_job: FioJob | None = None

    def group_entry(self) -> dict:
        """This job's run control as a member of an access_group workload."""
        return {
            "start_delay_s": self.start_delay_s,
            "wait_for": self.wait_for,
            "exit": self.exit_what,
            "report_group": self.report_group,
        }


@dataclass
class MappedGroup:
    """The jobs of one stonewall group that fio runs at the same time: one access_group workload, measured
    as one phase. `name` prefixes its phases in results (group<N>, N counting the file's groups from 0)."""

    name: str
    line: int
    group: int
    jobs: list
    group_reporting: bool = False

    @property
    def notes(self) -> list:
        return [f"{j.name}: {n}" for j in self.jobs for n in j.notes]

    @property
    def dir(self) -> Path | None:
        """The directory the jobs' file names (they share one: fio_workloads checks it; a job without files,
        cpuio, has none of its own)."""
        return next((j.dir for j in self.jobs if not _no_files(j)), self.jobs[0].dir)

    @property
    def keep_files(self) -> bool:
        return any(j.keep_files for j in self.jobs)

    @property
    def logs(self) -> list:
        """(job name, kind, file name) of every job's fio logs, written from the job's own samples."""
        return [(j.name, k, f) for j in self.jobs for k, f in j.logs]

    @property
    def exit_what(self) -> str:
        """ "all" when a job of the group ends everything (fio exitall with exit_what=all)."""
        return "all" if any(j.exit_what == "all" for j in self.jobs) else "group"


_FLOAT = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$")


def _fio_float(text: str) -> float:
    """A decimal number as fio's strtod reads one in these options: ASCII digits only (Python's float() also
    takes '٠.٥', '９９' and '1_0'). ValueError otherwise."""
    t = text.strip()
    if not _FLOAT.match(t):
        raise ValueError(f"{text!r} is not a number")
    return float(t)


def _shown(value: str, most: int = 80) -> str:
    """A value as an error line shows it: an 8 MiB verify_pattern is not repeated in full."""
    return value if len(value) <= most else f"{value[:most]}... ({len(value)} characters)"


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
        raise UserError(f"{self.where} line {opt.line}: {opt.name}={_shown(opt.value or '')}: {what}")

    def size(self, name: str, default: int | None = None, allow_range: bool = False) -> int | None:
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

    def int(self, name: str, default: int, lo: int = 0, hi: int | None = None) -> int:
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

    def time_s(self, name: str) -> float | None:
        opt = self.job.get(name)
        if opt is None:
            return None
        try:
            return parse_fio_time_s(opt.value or "")
        except ValueError as exc:
            self.fail(opt, str(exc))


def check_options(where: str, job: FioJob) -> None:
    """Every option of the job is one fsmeter maps, accepts or refuses (one line each). An engine fsmeter does
    not have is named first: the options that come with it (port=, cmd_type=, ...) say less."""
    eng = job.get("ioengine")
    if eng is not None and eng.unset is None and (eng.value or "").strip() not in ENGINES:
        engine = (eng.value or "").strip()
        raise UserError(
            f"{where} line {eng.line}: {eng.as_written}: ioengine {engine} is not supported: "
            f"{_ENGINE_WHY.get(engine, 'not planned')}; fsmeter runs {', '.join(ENGINES)}"
        )
    zm = job.get("zonemode")
    if zm is not None and (zm.value or "").strip() == "zbd":
        raise UserError(
            f"{where} line {zm.line}: {zm.as_written}: zoned block devices are not supported and fsmeter "
            "will not support them (fsmeter measures filesystems, not zoned devices): use "
            "zonemode=strided for zones of a file, or run this job with fio"
        )
    engine = (eng.value or "").strip() if eng is not None else "psync"
    for opt in sorted(job.options.values(), key=lambda o: o.line):
        if opt.name in _ENGINE_OPTS and engine not in _ENGINE_OPTS[opt.name]:
            if opt.line < job.line:
                continue  # from a [global] for another job's engine: fio leaves it to the jobs of that engine
            raise UserError(
                f"{where} line {opt.line}: option {opt.name} belongs to ioengine="
                f"{' and '.join(_ENGINE_OPTS[opt.name])} (fio refuses it with ioengine={engine}): remove it"
            )
        if opt.name in SUPPORTED or opt.name in ACCEPTED:
            continue
        if opt.name in _NAME_ENGINE_ACCEPTED and engine in NAME_ENGINES:
            continue
        if _engine_accepts(opt.name, engine):
            continue
        if opt.name in NEVER:
            raise UserError(
                f"{where} line {opt.line}: option {opt.name} is not supported and fsmeter will not "
                f"support it ({NEVER[opt.name]}): remove it, or run this job with fio"
            )
        if opt.name in PLANNED:
            why = f" ({PLANNED_WHY[opt.name]})" if opt.name in PLANNED_WHY else ""
            raise UserError(
                f"{where} line {opt.line}: option {opt.name} is not supported by fsmeter yet "
                f"(planned){why}: remove it, or run this job with fio"
            )
        raise UserError(
            f"{where} line {opt.line}: option {opt.name} is not supported by fsmeter (not planned): "
            "remove it, or run this job with fio"
        )
    for opt in sorted(job.options.values(), key=lambda o: o.line):
        if opt.unset is not None:
            raise UserError(unset_message(where, opt.line, opt.unset))


def _bs_pair(ctx: _Ctx, name: str) -> tuple | None:
    """bs=R or bs=R,W (a third, trim value is read by _trim_entries for the trim patterns)."""
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


def _bsrange(ctx: _Ctx) -> tuple | None:
    """bsrange (alias blocksize_range) whose ends are equal: one size, as bs (fio draws sizes between the ends;
    drawing them needs engine support, so a real range is refused)."""
    opt = ctx.job.get("bsrange") or ctx.job.get("blocksize_range")
    if opt is None:
        return None
    out = []
    for part in (opt.value or "").split(",")[:2]:
        lo, hi = ctx._range(FioOption(opt.name, part, opt.line, opt.written))
        if lo != hi:
            ctx.fail(
                opt,
                "request sizes drawn from a range are not supported by fsmeter yet (planned): give equal "
                "ends, or bs= or bssplit=",
            )
        if lo <= 0:
            ctx.fail(opt, "must be > 0")
        out.append(lo)
    return (out[0], out[-1])


def _bssplit(ctx: _Ctx) -> tuple | None:
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
_IOMEM = {
    "malloc": "heap",
    "mmap": "heap",
    "mmapshared": "heap",
    "shm": "heap",
    "mmaphuge": "hugetlb",
    "shmhuge": "hugetlb",
}


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
        ctx.fail(
            opt,
            "GPU memory is not supported by fsmeter (not planned)"
            if kind.startswith("cuda")
            else f"use one of {', '.join(_IOMEM)}",
        )
    if path and kind in ("mmap", "mmapshared"):
        notes.append(
            f"{opt.name}={kind}:{path}: fio maps that file for its buffers; fsmeter uses heap buffers "
            "(4 KiB pages) and does not touch the file"
        )
    elif path and kind == "mmaphuge":
        notes.append(
            f"{opt.name}={kind}:{path}: fsmeter maps anonymous hugetlb pages (MAP_HUGETLB) from the same "
            "pool instead of a file on hugetlbfs"
        )
    elif path:
        ctx.fail(opt, f"{kind} takes no file: remove ':{path}'")
    elif kind in ("mmap", "mmapshared", "shm"):
        notes.append(
            f"{opt.name}={kind}: fio's buffers then come from {'shmget' if kind == 'shm' else 'mmap'}: "
            "4 KiB pages, as fsmeter's heap buffers"
        )
    return _IOMEM[kind]


@dataclass
class _Placement:
    names: list  # file names relative to the job's directory
    thread_files: bool  # each clone its own files (fio's default names)
    dir: Path | None  # the job file's own absolute directory, or None: --dir
    existing: list | None  # sizes of the files when every one exists as a regular file
    opt: object | None  # the option the files come from, for error lines


#: The most files one job may have (nrfiles x numjobs, or the names of filename=).
MAX_FILES = 1 << 20

_FMT_KEY = re.compile(r"\$(jobname|jobnum|filenum|clientuid)", re.I)


def _format_names(ctx: _Ctx, opt, fmt: str, job: str, numjobs: int, nrfiles: int) -> list:
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


def _place_files(
    ctx: _Ctx, name: str, numjobs: int, target: Path | None, dir_given: bool, notes: list, file_name: str | None = None
) -> _Placement:
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
    return _Placement(names=full, thread_files=thread_files, dir=job_dir, existing=existing, opt=anchor)


def _check_target(ctx: _Ctx, opt, base: Path, files: list) -> None:
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


def _sizes(ctx: _Ctx, name: str, nrfiles: int, offset: int, place: _Placement, notes: list) -> tuple:
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


def _accepted_notes(ctx: _Ctx, notes: list) -> None:
    """A note for each option accepted because it changes nothing fsmeter measures (checked like fio checks it)."""
    for key, why in ACCEPTED.items():
        opt = ctx.job.get(key)
        if opt is None:
            continue
        allowed = _ACCEPTED_VALUES.get(key)
        if allowed is not None:
            v = (opt.value or "").strip()
            if v not in allowed:
                ctx.fail(opt, f"use one of {', '.join(allowed)}")
            if v == allowed[0]:
                continue  # fio's default: nothing to say
        elif key == "threads":
            ctx.int("threads", 1, 0)
        elif key in ("percentile_list", "flow_watermark"):
            pass
        elif key in ("clat_percentiles", "lat_percentiles"):
            ctx.flag(key)
        elif key == "create_serialize":
            if ctx.flag(key, True):
                continue  # fio's default: nothing to say
        elif key == "invalidate":
            ctx.flag(key)
        elif key != "thread" and not ctx.flag(key):
            continue
        notes.append(f"{opt.as_written}: {why}")


#: fio's log options -> the logs each writes (write_lat_log: total, submission and completion latency, in
#: fio's order; disable_lat/disable_slat/disable_clat leave one out, as in fio).
_LOG_KINDS = (("write_bw_log", ("bw",)), ("write_iops_log", ("iops",)), ("write_lat_log", ("lat", "slat", "clat")))


def _logs(ctx: _Ctx, name: str, numjobs: int, settings: dict, notes: list) -> list:
    """write_bw_log / write_iops_log / write_lat_log: fio's log files (named as fio names them, the job's number
    filled in by map_jobfile), one line per sample interval, as fio writes them with log_avg_msec (which sets the
    interval)."""
    from fsmeter.textfile import check_output_path

    out = []
    per_job = ctx.flag("per_job_logs", True)
    for key, kinds in _LOG_KINDS:
        opt = ctx.job.get(key)
        if opt is None:
            continue
        stem = (opt.value or "").strip() or name
        if any(c in stem for c in "\n\0"):
            ctx.fail(opt, "give a file name prefix")
        for kind in kinds:
            if kind != "bw" and kind != "iops" and ctx.flag(f"disable_{kind}"):
                continue
            out.append((kind, stem + f"_{kind}" + (".{n}.log" if per_job else ".log")))
            try:
                check_output_path(Path(stem + f"_{kind}.log"), f"{ctx.where} line {opt.line}: {key}")
            except UserError as exc:
                raise UserError(f"{exc.message}") from None
        _check_log_folder(ctx, opt, Path(stem + "_x.log").parent)
    if not out:
        return out
    avg = ctx.job.get("log_avg_msec")
    ms = ctx.int("log_avg_msec", 0, 0, 3_600_000) if avg is not None else 0
    if ms:
        settings["interval_s"] = ms / 1000.0
    elif {k for k, _ in out} & {"bw", "iops"}:
        notes.append(
            "write_bw_log/write_iops_log: fio logs every I/O unless log_avg_msec is set; fsmeter writes one "
            "line per sample interval (1 s; log_avg_msec=N sets it): the interval's average, as fio's "
            "log_avg_msec lines"
        )
    if numjobs > 1:
        notes.append(f"the logs cover the job's {numjobs} threads together (fio: one log per clone)")
    return out


def _check_log_folder(ctx: _Ctx, opt, folder: Path) -> None:
    """A log goes to a folder of a filesystem: not into /proc, /sys or /dev (root may write there, and a log
    named /proc/x failed only after the run, or /dev/null made /dev/null_bw.1.log)."""
    from fsmeter.provision.sysinfo import pseudo_filesystem

    pseudo = pseudo_filesystem(str(folder.resolve()))
    if pseudo:
        ctx.fail(opt, f"{folder} is a kernel interface ({pseudo}), not a folder for logs: name a file on a filesystem")


#: access parameter (or setting) -> the fio options it comes from, most specific first.
_SOURCES = {
    "entries": ("bssplit", "bs", "blocksize", "rw", "readwrite"),
    "record_size": ("bs", "blocksize"),
    "alignment": ("blockalign", "ba", "bs", "blocksize"),
    "file_size": ("filesize", "size"),
    "offset": ("offset",),
    "queue_depth": ("iodepth",),
    "threads": ("numjobs",),
    "direct": ("direct", "buffered"),
    "total_bytes": ("number_ios", "io_size", "io_limit", "size"),
    "duration_s": ("runtime", "timeout"),
    "warmup_s": ("ramp_time",),
    "fsync_every": ("fsync",),
    "file_count": ("nrfiles", "filename"),
    "file_names": ("filename", "filename_format", "directory"),
    "buffer_memory": ("iomem", "mem"),
    "backend": ("ioengine",),
    "seed": ("randseed",),
    "interval_s": ("log_avg_msec",),
    "random_distribution": ("random_distribution",),
    "seq_add": ("rw", "readwrite"),
    "zone_size": ("zonesize", "zonemode"),
    "zone_range": ("zonerange", "zonesize"),
    "zone_skip": ("zoneskip",),
    "random_sequence_stride": ("random_sequence_stride",),
    "fio_engine": ("ioengine",),
    "donor_name": ("donorname",),
    "stat_type": ("stat_type",),
}


def _sources(job: FioJob) -> dict:
    out = {}
    for param, names in _SOURCES.items():
        for n in names:
            o = job.get(n)
            if o is not None:
                out[param] = (o.line, o.as_written)
                break
    return out


#: fsmeter's words in a parameter error -> what a job file says instead.
_ADVICE = [
    (r"\s*\(the \*-4k workloads\)", ""),
    (r",? or allow_unaligned_direct=true to measure them anyway", ""),
    (r"--set backend=", "ioengine="),
    (r"\bdirect=false\b", "direct=0"),
    (r"\bdirect=true\b", "direct=1"),
    (r"\bentries(\[\d+\]|\.\d+)\.size\b", "bs"),
    (r"\bfile_size\b", "filesize"),
    (r"\bqueue_depth\b", "iodepth"),
    (r"\balignment\b", "blockalign"),
    (r"--set ", ""),
    (r"\bfsync_every\b", "fsync"),
    (r"use multiples of (\d+), direct=0$", r"make the sizes multiples of \1 bytes, or set direct=0"),
]


def job_error(where: str, m: MappedJob, message: str) -> str:
    """An error about the access parameters a job maps to, told in the job file's terms: the line and option
    the parameter comes from (as the user wrote it), and advice in options a job file can set."""
    mm = re.match(r"parameter ([A-Za-z_]+)(?:\[\d+\]|\.\d+)?(?:\.[A-Za-z_]+)?: (.*)$", message, re.S)
    if not mm:
        return message if message.startswith(where) else f"{where} line {m.line}: job {m.name}: {message}"
    rest = mm.group(2)
    for pat, rep in _ADVICE:
        rest = re.sub(pat, rep, rest)
    src = m.sources.get(mm.group(1))
    head = f"{where} line {src[0]}: {src[1]}" if src else f"{where} line {m.line}: job {m.name}"
    return f"{head}: {rest}"


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


def _filled_by(ctx: _Ctx, place: _Placement, fill_outputs: dict | None) -> tuple | None:
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


def _fill_sizes(
    ctx: _Ctx,
    rw: str,
    numjobs: int,
    nrfiles: int,
    offset: int,
    sizes: list,
    place: _Placement,
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


#: fio's error classes (continue_on_error) -> the access workload's continue_on lists.
_ERROR_CLASSES = {
    "none": (),
    "read": ("read",),
    "write": ("write",),
    "io": ("read", "write"),
    "verify": ("verify",),
    "all": ("read", "write", "verify"),
    "0": (),
    "1": ("read", "write", "verify"),
}
#: fio's errno names (its str2error), resolved on this machine; EWOULDBLOCK and EDEADLOCK are aliases.
_FIO_ERRNOS = (
    "EPERM ENOENT ESRCH EINTR EIO ENXIO E2BIG ENOEXEC EBADF ECHILD EAGAIN ENOMEM EACCES EFAULT ENOTBLK EBUSY EEXIST "
    "EXDEV ENODEV ENOTDIR EISDIR EINVAL ENFILE EMFILE ENOTTY ETXTBSY EFBIG ENOSPC ESPIPE EROFS EMLINK EPIPE EDOM "
    "ERANGE EDEADLK ENAMETOOLONG ENOLCK ENOSYS ENOTEMPTY ELOOP EWOULDBLOCK ENOMSG EIDRM ECHRNG EL2NSYNC EL3HLT "
    "EL3RST ELNRNG EUNATCH ENOCSI EL2HLT EBADE EBADR EXFULL ENOANO EBADRQC EBADSLT EDEADLOCK EBFONT ENOSTR ENODATA "
    "ETIME ENOSR ENONET ENOPKG EREMOTE ENOLINK EADV ESRMNT ECOMM EPROTO EMULTIHOP EDOTDOT EBADMSG EOVERFLOW ENOTUNIQ "
    "EBADFD EREMCHG ELIBACC ELIBBAD ELIBSCN ELIBMAX ELIBEXEC EILSEQ ERESTART ESTRPIPE EUSERS ENOTSOCK EDESTADDRREQ "
    "EMSGSIZE EPROTOTYPE ENOPROTOOPT EPROTONOSUPPORT ESOCKTNOSUPPORT EOPNOTSUPP EPFNOSUPPORT EAFNOSUPPORT EADDRINUSE "
    "EADDRNOTAVAIL ENETDOWN ENETUNREACH ENETRESET ECONNABORTED ECONNRESET ENOBUFS EISCONN ENOTCONN ESHUTDOWN "
    "ETOOMANYREFS ETIMEDOUT ECONNREFUSED EHOSTDOWN EHOSTUNREACH EALREADY EINPROGRESS ESTALE EUCLEAN ENOTNAM ENAVAIL "
    "EISNAM EREMOTEIO EDQUOT ENOMEDIUM EMEDIUMTYPE ECANCELED ENOKEY EKEYEXPIRED EKEYREVOKED EKEYREJECTED EOWNERDEAD "
    "ENOTRECOVERABLE ERFKILL EHWPOISON"
).split()


def _errno_list(ctx: _Ctx, opt, text: str) -> list:
    """One class's list of ignore_error: errno names (fio's) or numbers (decimal or 0x), separated by ':'."""
    import errno as _errno

    out = []
    for item in text.split(":"):
        item = item.strip()
        if not item:
            break  # fio stops at an empty name
        if item.startswith("E"):
            n = getattr(_errno, item, None) if item in _FIO_ERRNOS else None
            if not isinstance(n, int):
                ctx.fail(opt, f"{item} is not an error name fio knows: give its number")
        else:
            try:
                n = abs(int(item, 16) if item[:2].lower() == "0x" else int(item, 10))
            except ValueError:
                n = 0
            if not n:
                ctx.fail(opt, f"{item!r} is not an error: give a name such as ENOSPC or a number")
        out.append(n)
    return out


def _on_error(ctx: _Ctx, params: dict, notes: list) -> None:
    """fio's continue_on_error (which classes of errors a job goes on after: read, write, verify), ignore_error
    (READ,WRITE,VERIFY lists of errnos, each replacing the class's default EIO and EILSEQ, and turning the class
    on) and error_dump -> the access workload's continue_on."""
    import errno as _errno

    coe, ign = ctx.job.get("continue_on_error"), ctx.job.get("ignore_error")
    classes: set = set()
    if coe is not None:
        v = (coe.value or "").strip().lower()
        if v not in _ERROR_CLASSES:
            ctx.fail(coe, f"use one of {', '.join(_ERROR_CLASSES)}")
        classes = set(_ERROR_CLASSES[v])
    lists = {}
    if ign is not None:
        parts = (ign.value or "").split(",")
        if len(parts) > 3:
            ctx.fail(ign, "give READ_ERRORS,WRITE_ERRORS,VERIFY_ERRORS (each a ':' list)")
        for cls, text in zip(("read", "write", "verify"), parts):
            got = _errno_list(ctx, ign, text)
            if got:
                lists[cls] = got
        if coe is None or coe.line < ign.line:
            classes |= set(lists)  # fio: a list turns its class on (a later continue_on_error sets them anew)
    dump = ctx.flag("error_dump", True)
    if ctx.job.get("error_dump") is not None and not classes:
        notes.append(
            f"{ctx.job.get('error_dump').as_written}: without continue_on_error every error stops the job, "
            "and is always reported"
        )
    if not classes:
        return
    default = [_errno.EIO, _errno.EILSEQ]
    params["continue_on"] = {c: lists.get(c, default) for c in sorted(classes)}
    params["continue_on"]["dump"] = dump
    names = "; ".join(
        f"{c}: {', '.join(_errno.errorcode.get(n, str(n)) for n in params['continue_on'][c])}"
        for c in ("read", "write", "verify")
        if c in classes
    )
    notes.append(
        f"errors the job counts and goes on after ({names}), as fio's continue_on_error: the failed request "
        "is not measured, counts in the job's bytes, and the run reports the errors per direction and errno "
        "(fio's total_err, first_error)" + (" and the first 16 of each thread (error_dump)" if dump else "")
    )
    if "verify" in classes and not params.get("verify"):
        notes.append("continue_on_error for verify errors: the job verifies nothing (no verify=), so none can occur")
    elif "verify" in classes:
        notes.append(
            "continue_on_error for verify errors: fsmeter's verification counts every corrupt block and "
            "never stops the job on one"
        )


#: fio's fallocate modes (0 and 1 are its old names for none and posix).
_FALLOCATE = ("none", "native", "posix", "keep", "truncate", "0", "1")


def _fallocate(ctx: _Ctx, engine: str, notes: list) -> None:
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


def map_job(
    where: str,
    job: FioJob,
    group: int,
    target: Path | None = None,
    dir_given: bool = True,
    fill_outputs: dict | None = None,
) -> MappedJob:
    """One fio job -> access params and settings, with notes on what differs from fio. `target` is the
    directory the job runs in when known (--dir: for the size of files already there); `dir_given` says
    whether one is given at all: then it replaces the job file's absolute directory= and filename= paths
    (with a note), else those paths are the job's target and every other file needs one."""
    if job.get("ioengine") is not None and (job.get("ioengine").value or "").strip() == "exec":
        return _exec_job(_Ctx(where, job), group, target if dir_given else None)
    check_options(where, job)
    ctx = _Ctx(where, job)
    notes: list = []
    name = job.name
    _accepted_notes(ctx, notes)
    file_name = job_file_name(where, job, notes)
    first_engine = (job.get("ioengine").value or "").strip() if job.get("ioengine") is not None else "psync"
    if first_engine == "cpuio":
        return _cpuio_job(ctx, group, notes)
    if first_engine == "libblkio":
        job = ctx.job = _libblkio_job(ctx, notes)
    # -- pattern --------------------------------------------------------------------------------------------
    rw_opt = job.get("rw") or job.get("readwrite")
    rw = "read" if rw_opt is None else (rw_opt.value or "").strip()
    seq_add = 0
    if ":" in rw:
        rw, _, mod = rw.partition(":")
        rw, mod = rw.strip(), mod.strip()
        try:  # fio: the I/Os before a new random offset, or the bytes added to each sequential one
            n = parse_fio_size(mod.lstrip("+-"), ctx.kb_base)
        except ValueError:
            ctx.fail(rw_opt, f"{mod!r} after ':' is not a number: write rw={rw}:N")
        if rw.startswith("rand"):
            if n > 1 or mod.startswith("-"):
                ctx.fail(
                    rw_opt,
                    f"the modifier ':{mod}' (a new random offset every N I/Os, sequential ones between) "
                    f"is not supported by fsmeter yet (planned): write rw={rw} for the plain pattern, or "
                    "run this job with fio",
                )
        elif n and rw not in ("read", "write", "trim"):
            ctx.fail(
                rw_opt,
                f"the offset modifier ':{mod}' on a mix of directions (fio keeps one position per "
                "direction) is not supported by fsmeter yet (planned): use it with read, write or trim, "
                "or run this job with fio",
            )
        elif n:
            seq_add = -n if mod.startswith("-") else n
    if rw not in _RW and rw not in _TRIM:
        ctx.fail(rw_opt, f"use one of {', '.join([*_RW, *_TRIM])}")
    read_pct, random_pct = _RW.get(rw, (0, _TRIM.get(rw, (0,))[0]))
    if read_pct is None:
        mr, mw = job.get("rwmixread"), job.get("rwmixwrite")
        if (
            mr is not None
            and mw is not None
            and ctx.int("rwmixread", 50, 0, 100) + ctx.int("rwmixwrite", 50, 0, 100) != 100
        ):
            ctx.fail(mw, "rwmixread and rwmixwrite must add up to 100")
        read_pct = (
            ctx.int("rwmixread", 50, 0, 100)
            if mr is not None
            else (100 - ctx.int("rwmixwrite", 50, 0, 100) if mw is not None else 50)
        )
    pr = job.get("percentage_random")
    if pr is not None and random_pct:
        if "," in (pr.value or ""):
            ctx.fail(pr, "one percentage for both directions only (fsmeter: planned)")
        random_pct = ctx.int("percentage_random", 100, 0, 100)
    # -- request sizes: per direction [(size, pct)] ---------------------------------------------------------
    split = _bssplit(ctx)
    bs = _bsrange(ctx) or _bs_pair(ctx, "bs") or _bs_pair(ctx, "blocksize") or (4096, 4096)
    per_dir = split if split is not None else ([(bs[0], 100.0)], [(bs[1], 100.0)])
    entries = []
    if per_dir[0] == per_dir[1]:
        for size, pct in per_dir[0]:
            entries.append({"size": size, "weight": pct, "read_pct": float(read_pct), "random_pct": float(random_pct)})
    else:
        for d, share in ((0, read_pct), (1, 100 - read_pct)):
            for size, pct in per_dir[d]:
                if share > 0:
                    entries.append(
                        {
                            "size": size,
                            "weight": share * pct / 100.0,
                            "read_pct": 100.0 if d == 0 else 0.0,
                            "random_pct": float(random_pct),
                        }
                    )
    trim_then_write = False
    if rw in _TRIM:
        entries, trim_then_write = _trim_entries(ctx, rw, random_pct, notes)
    sizes = [e["size"] for e in entries]
    # -- engine and depth -----------------------------------------------------------------------------------
    eng_opt = job.get("ioengine")
    engine = (eng_opt.value or "").strip() if eng_opt is not None else "psync"
    if engine not in ENGINES:
        ctx.fail(
            eng_opt,
            f"ioengine {engine} is not supported: {_ENGINE_WHY.get(engine, 'not planned')}; "
            f"fsmeter runs {', '.join(ENGINES)}",
        )
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
    offset = ctx.size("offset", 0)
    place = _place_files(ctx, name, numjobs, target, dir_given, notes, file_name)
    file_names, thread_files, nrfiles = place.names, place.thread_files, len(place.names)
    if place.thread_files:
        nrfiles //= numjobs
    fill = ctx.flag(_alias(ctx, ("fill_device", "fill_fs")) or "fill_device")
    from_fill = None
    if fill:
        size, filesize, real = _fill_sizes(ctx, rw, numjobs, nrfiles, offset, sizes, place, target, notes)
    else:
        from_fill = _filled_by(ctx, place, fill_outputs)
        size, filesize, real = _sizes(ctx, name, nrfiles, offset, place, notes)
    io_per_job = ctx.size("io_size") or ctx.size("io_limit") or size
    ba_opt = job.get("blockalign") or job.get("ba")
    if ba_opt is not None and "," in (ba_opt.value or ""):
        ctx.fail(ba_opt, "one alignment for both directions only (fsmeter: planned)")
    align = ctx.size(ba_opt.name) if ba_opt is not None else min(sizes)
    if align <= 0:
        ctx.fail(ba_opt, "must be > 0 (a number of bytes every offset is a multiple of)")
    if offset % align and (random_pct or job.get("offset_increment") is None):  # fio: ba aligns random offsets
        ctx.fail(job.get("offset"), f"must be a multiple of the alignment ({align} bytes; set blockalign)")
    if max(sizes) > filesize:
        raise UserError(
            f"{where} line {job.line}: job {name}: a {max(sizes)}-byte request does not fit in a "
            f"{filesize}-byte file: make size/filesize larger or bs smaller"
        )
    # -- time, sync, randomness -----------------------------------------------------------------------------
    time_based = ctx.flag("time_based", False)
    runtime = ctx.time_s("runtime") if job.get("runtime") is not None else ctx.time_s("timeout")  # fio's alias
    ramp = ctx.time_s("ramp_time") or 0.0
    if time_based and not runtime:
        # fio: "time_based requires a runtime/timeout setting", and it runs the job without time_based.
        notes.append(
            f"time_based without runtime (line {job.get('time_based').line}): fio turns time_based off, and "
            "so does fsmeter: the job ends after its bytes"
        )
        time_based = False
    per_job = io_per_job
    distribution = _distribution(ctx, notes)
    dir_block = 0
    if rw not in _TRIM:
        dir_block = _dir_map_block(
            ctx, per_dir, _dir_min_bs(ctx, split, bs), read_pct, random_pct, distribution, nrfiles, time_based, notes
        )
    if dir_block:
        entries = _dir_entries(per_dir, read_pct, random_pct)
        sizes, align = [e["size"] for e in entries], dir_block
    shape = _shape(ctx, rw, seq_add, sizes, filesize, nrfiles, offset, random_pct, distribution, notes)
    if dir_block and not time_based:
        # fio's random map with per-direction block sizes: the job's bytes, unless its stop rule ends it first.
        per_job = io_per_job
    elif len(set(sizes)) == 1 and not time_based and shape.get("cap", 0) != 0:
        # An offset modifier, strided zones or a strided sequence: fio stops where the shape says (cap I/Os),
        # or goes on wrapping (cap None) until the job's bytes are done.
        whole = -(-io_per_job // sizes[0])
        per_job = (whole if shape["cap"] is None else min(whole, shape["cap"])) * sizes[0]
    elif len(set(sizes)) == 1 and not time_based:
        # fio stops a clone at the end of its files' regions (sequential) or when its random map is full, and
        # never issues a partial request: count whole requests as fio does.
        bsz = sizes[0]
        whole = -(-io_per_job // bsz)
        blocks = nrfiles * (filesize // bsz)
        capped = not random_pct or not (ctx.flag("norandommap", False) or distribution != "random")
        per_job = (min(whole, blocks) if capped else whole) * bsz
    elif _sized_map(sizes, align, random_pct, distribution, ctx) and not time_based:
        # fio's random map of smallest blocks: requests are shortened at blocks already done, so each pass moves
        # the files' bytes exactly, and an io_size beyond them starts another pass, as fio does.
        per_job = io_per_job
    elif random_pct and not ctx.flag("norandommap", False) and not time_based:
        notes.append(
            "several request sizes without norandommap: fio's random map shortens requests as blocks "
            "fill up (so it does more, smaller I/Os than bssplit says); fsmeter keeps the sizes asked for, "
            "as fio does with norandommap"
        )
    loops = ctx.int("loops", 1, 1, 1 << 32)
    total = None if time_based else per_job * numjobs * loops  # fio: the whole job again, `loops` times
    nio = job.get("number_ios")
    if nio is not None and ctx.int("number_ios", 0, 0) > 0:
        # fio: each clone stops after this many I/Os (reads and writes together), if nothing stops it before.
        if len(set(sizes)) > 1:
            ctx.fail(
                nio,
                "with several request sizes fsmeter cannot stop after a number of I/Os yet (planned): "
                "remove it, or give one bs",
            )
        cap = ctx.int("number_ios", 0, 0) * sizes[0]
        total = min(per_job * loops, cap) * numjobs if not time_based else cap * numjobs
    layout = filesize
    if real is not None and min(real) - offset > filesize:
        # The files were there before and are longer than the region: fio works inside them and leaves the rest;
        # fsmeter would lay out (truncate) a file of another length, so it keeps their length and stops after
        # the region's bytes instead.
        layout = min(real) - offset
        if total is None:
            ctx.fail(
                job.get("size"),
                "a region smaller than the existing files with time_based: fsmeter would "
                "spread the requests over the whole files; give size= equal to the files' size",
            )
        if random_pct:
            notes.append(
                f"the existing files are longer than the region ({filesize} bytes): fsmeter keeps them "
                f"whole and draws random offsets over {layout} bytes (fio: inside the region); the bytes "
                "and I/O counts are the same"
            )
    pace = _pace(ctx, entries, notes)
    params = {
        "entries": entries,
        "alignment": align,
        "file_count": len(file_names),
        "file_size": layout,
        "queue_depth": qd,
        "direct": direct,
        "fsync_every": ctx.int("fsync", 0, 0),
        "fsync_end": ctx.flag("end_fsync"),
        "warmup_s": ramp,
        "duration_s": runtime if runtime else None,
        "total_bytes": total,
        "file_names": file_names,
        "offset": offset,
        "thread_files": thread_files,
        "reuse_files": True,
        "buffer_memory": buffer_memory,
    }
    if job.get("offset_increment") is not None:
        per_job = (
            _offset_increment(
                ctx,
                params,
                notes,
                numjobs=numjobs,
                offset=offset,
                place=place,
                rw=rw,
                sizes=sizes,
                seq_add=seq_add,
                random_pct=random_pct,
                time_based=time_based,
                loops=loops,
                distribution=distribution,
                shape=shape,
            )
            or per_job
        )
    if pace:
        params["pace"] = pace
    steady = _steadystate(ctx, notes)
    if steady:
        params["steadystate"] = steady
    pinning = _place(ctx, notes)
    if pinning:
        params["place"] = pinning
    if trim_then_write:
        params["trim_then_write"] = True
        if params["total_bytes"] is not None:
            params["total_bytes"] *= 2  # fio's trimwrite: the trims cover io_size, and so do their writes
    params.update(shape.get("params", {}))
    _fio_access_opts(ctx, params, notes)
    _content(ctx, params, notes, size, nrfiles)
    _atomic(ctx, params, notes, engine)
    if ctx.flag("do_verify", True):
        _verify_readback(ctx, params, notes, per_job, time_based, loops)
    if distribution != "random":
        params["random_distribution"] = distribution
    if dir_block:
        params["random_map"], params["random_map_block"] = True, dir_block
    elif random_pct and not ctx.flag("norandommap", False) and distribution == "random":
        if (len(set(sizes)) == 1 and align == sizes[0]) or _sized_map(sizes, align, random_pct, distribution, ctx):
            params["random_map"] = True  # each block once per pass, as fio's random map
        else:
            notes.append(
                "random offsets are drawn with replacement (fio's norandommap): fsmeter keeps a random "
                "map only for one request size aligned to itself"
            )
    _sprandom(
        ctx,
        rw,
        sizes,
        align,
        numjobs,
        len(file_names),
        min(filesize, io_per_job),
        filesize,
        random_pct,
        distribution,
        time_based,
        loops,
        params,
        notes,
    )
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
    if fill:
        params["fill"] = True
    _on_error(ctx, params, notes)
    _fallocate(ctx, engine, notes)
    if from_fill is not None:
        notes[:] = [n for n in notes if not n.startswith("size from the existing files")]
        notes.append(
            f"size from what job {from_fill[0]} writes (fill_device): "
            + (f"{from_fill[1]} bytes" if from_fill[2] else "taken when that job has run")
        )
    elif real is not None:
        notes.append("its files were there before the run: fsmeter uses them as they are and leaves them in place")
    if engine in NAME_ENGINES or engine in CALL_ENGINES:
        _fio_engine(ctx, engine, rw, rw_opt, params, notes, numjobs, time_based, loops, ramp, place)
    _engine_setup(ctx, engine, params, notes)
    settings = {"threads": numjobs, "seed": seed, "backend": ENGINES[engine]}
    logs = _logs(ctx, file_name, numjobs, settings, notes)
    log_format = _log_format(ctx, logs, params, numjobs, notes)
    _latency_target(ctx, params, notes, numjobs)
    _ioprio(ctx, engine, params, notes)
    delay = ctx.job.get("startdelay")
    start_delay = 0.0
    if delay is not None:
        if "-" in (delay.value or "") or ":" in (delay.value or ""):
            ctx.fail(delay, "a random start delay (a range) is not supported by fsmeter (planned): give one time")
        start_delay = ctx.time_s("startdelay") or 0.0
        if start_delay > MAX_DURATION_S:
            ctx.fail(delay, f"at most {MAX_DURATION_S:.0f} s")
    exit_what = "group"  # fio's default; map_jobfile turns it off when no job of the file has exitall
    ew = job.get("exit_what")
    if ew is not None:
        exit_what = (ew.value or "").strip()
        if exit_what not in ("group", "stonewall", "all"):
            ctx.fail(ew, "use group, stonewall or all")
    ctx.flag("exitall")
    return MappedJob(
        name=name,
        line=job.line,
        group=group,
        params=params,
        settings=settings,
        notes=notes,
        fio_rw=rw,
        dir=place.dir,
        keep_files=real is not None and from_fill is None,
        logs=logs,
        log_format=log_format,
        sources=_sources(job),
        group_reporting=ctx.flag("group_reporting"),
        start_delay_s=start_delay,
        exit_what=exit_what,
        fill=fill,
        after_fill=from_fill[0] if from_fill is not None else None,
        fio_job=job,
    )


def _offset_increment(
    ctx: _Ctx,
    params: dict,
    notes: list,
    *,
    numjobs: int,
    offset: int,
    place: _Placement,
    rw: str,
    sizes: list,
    seq_add: int,
    random_pct: int,
    time_based: bool,
    loops: int,
    distribution: str,
    shape: dict,
) -> int | None:
    """fio's offset_increment: the clones share the named file and clone t (from 0) works on its own region,
    from offset + t * increment (filesetup.c get_start_offset; N% is N% of the file's size, and the start is then
    aligned up to the request size), for size= bytes, or without size= to the end of the file. Each clone does
    io_size (else its region's size) per pass, and a pass ends early at its region's end (io_u.c: an offset past
    the region ends it), then `loops` passes. -> the largest clone's bytes per pass (None: time-based)."""
    job = ctx.job
    opt = job.get("offset_increment")
    value = (opt.value or "").strip()
    if numjobs == 1:
        ctx.fail(opt, "moves the clones of a job (numjobs) apart, and this job has one: remove it, or set numjobs")
    why = None
    if place.thread_files:
        why = "with each clone on its own files (no filename=): name the one file the clones share with filename="
    elif len(place.names) > 1:
        why = "with several files: give one filename="
    elif len(set(sizes)) > 1:
        why = "with several request sizes: give one bs"
    elif rw not in ("read", "write", "randread", "randwrite", "randrw") or random_pct not in (0, 100):
        why = "with a sequential mix, trims or percentage_random: use read, write, randread, randwrite or randrw"
    elif seq_add < 0:
        why = "with a backwards walk (rw=...:-N)"
    elif distribution != "random" or shape.get("params", {}).get("zone_size"):
        why = "with zones or a random_distribution other than random"
    elif job.get("size") is not None and is_percentage(job.get("size").value or ""):
        why = "with size=N%: give a size"
    elif job.get("number_ios") is not None:
        why = "with number_ios"
    if why:
        ctx.fail(opt, f"offset_increment {why} is not supported by fsmeter yet (planned); or run this job with fio")
    bs = sizes[0]
    real = min(place.existing) if place.existing else None
    sized = job.get("size") is not None or job.get("filesize") is not None
    if is_percentage(value):
        pct = value[:-1].strip()
        if not (pct.isascii() and pct.isdigit()) or int(pct) > 100:  # str.isdigit() takes '²', int() does not
            ctx.fail(opt, "give a whole percentage from 0 to 100 (of the file's size), or a size")
        if real is None:
            ctx.fail(
                opt,
                "a percentage of the file's size needs the file there before the run (fio takes its "
                "size): create it, or give a size",
            )
        step, align = int(pct) * real // 100, bs  # fio: aligned up to the smallest block size
    else:
        step, align = ctx.size("offset_increment", 0), 1
    starts = [-(-(offset + t * step) // align) * align for t in range(numjobs)]
    if random_pct and any(s % params["alignment"] for s in starts):
        ctx.fail(
            opt,
            f"clone 1 would start at {starts[1]} bytes, not a multiple of the alignment "
            f"({params['alignment']} bytes): make offset_increment a multiple of it",
        )
    region = params["file_size"] if sized else None
    lens = []
    for t, start in enumerate(starts):
        n = region if region is not None else (real - start)
        if n < bs:
            ctx.fail(
                opt,
                f"clone {t} would start at {start} bytes, leaving {max(n, 0)} of the file's {real} bytes "
                f"for {bs}-byte requests (fio: 'you need to specify valid offset='): give a smaller "
                "offset_increment or fewer clones",
            )
        lens.append(n)
    io = ctx.size("io_size") or ctx.size("io_limit")
    if io and io > MAX_SIZE_BYTES:
        ctx.fail(
            job.get("io_size") or job.get("io_limit"),
            f"more than fsmeter's limit of {MAX_SIZE_BYTES} bytes (1 PiB): give a smaller size",
        )
    v_opt = job.get("verify")
    verifying = (
        (v_opt is not None and (v_opt.value or "").strip() not in ("", "0", "none"))
        or job.get("verify_pattern") is not None
    ) and ctx.flag("do_verify", True)
    # fio counts a verifying writer's read-back in the bytes its io_size is compared with (td->io_bytes).
    rw_per_io = 2 if verifying and rw in ("write", "randwrite") else 1
    if verifying and rw == "randrw" and io:
        ctx.fail(
            opt,
            "offset_increment with io_size on a verified randrw job is not supported by fsmeter yet "
            "(planned): remove io_size, or run this job with fio",
        )
    per_pass, passes = [], []
    for n in lens:
        whole = -(-(io or n) // bs)
        if random_pct and ctx.flag("norandommap", False):
            cap = whole
        elif random_pct:
            cap = n // params["alignment"]  # fio's random map: each block once, then the pass ends
        elif seq_add:
            cap = (n - bs) // (bs + seq_add) + 1  # holes: a request every bs + N bytes while one fits
        else:
            cap = n // bs
        k = min(whole, cap)
        # fio's thread_main: `loops` passes, then more while io_size is not done (keep_running: the clone's
        # reads and writes below io_size by at least a request). Each pass stops at io_size * its number
        # (io_bytes_exceeded) or at the region's end, so every pass does k requests.
        # The smallest p >= loops with io - p * k * bs * rw_per_io < bs, computed (a loop of passes would take
        # io_size / (k * bs) steps: 2^46 for an io_size of 2^64).
        p, per = loops, k * bs * rw_per_io
        if io and not time_based and per > 0 and io >= bs:
            p = max(loops, (io - bs) // per + 1)
        per_pass.append(k)
        passes.append(p)
    end = max(s + n for s, n in zip(starts, lens))
    params["offset"] = starts[0]
    params["file_size"] = max(end, real or 0) - starts[0]
    params["thread_regions"] = [
        {"start": s, "len": n, "bytes": 0 if time_based else k * bs * p, "pass_ios": 0 if time_based else k}
        for s, n, k, p in zip(starts, lens, per_pass, passes)
    ]
    if not time_based:
        params["total_bytes"] = sum(r["bytes"] for r in params["thread_regions"])
    notes[:] = [n for n in notes if not n.startswith("filename= with numjobs")]
    notes.append(
        f"{opt.as_written}: the {numjobs} threads share the file, thread t from {starts[0]} + t * {step} "
        f"bytes{' (aligned up to ' + str(align) + ')' if align > 1 else ''}, each on "
        + (f"{region} bytes" if region is not None else "the rest of the file")
        + ", as fio's clones"
    )
    return None if time_based else max(per_pass) * bs


def _sprandom(
    ctx: _Ctx,
    rw: str,
    sizes: list,
    align: int,
    numjobs: int,
    nfiles: int,
    logical: int,
    filesize: int,
    random_pct: int,
    distribution: str,
    time_based: bool,
    loops: int,
    params: dict,
    notes: list,
) -> None:
    """fio's sprandom (SanDisk's preconditioning): one job writing one file at random, norandommap and the lfsr
    generator, as fio's init.c and filesetup.c ask; the job writes the file's physical size (logical + op),
    region by region, rewriting the share of each region its steady-state model asks for (the engine's
    sprandom.rs). Refused where fio refuses it, or where fsmeter cannot do what fio does."""
    opt = ctx.job.get("sprandom")
    if opt is None or not ctx.flag("sprandom", False):
        return
    if rw != "randwrite" or random_pct != 100:
        ctx.fail(opt, "fio's sprandom needs random writes only: write rw=randwrite (and no percentage_random)")
    gen = ctx.job.get("random_generator")
    if gen is not None and (gen.value or "").strip() != "lfsr":
        ctx.fail(gen, "fio: sprandom requires random_generator=lfsr: write random_generator=lfsr or remove it")
    if gen is None:
        notes.append("sprandom sets random_generator=lfsr, as fio does")
    nrm = ctx.job.get("norandommap")
    if nrm is not None and not ctx.flag("norandommap", False):
        ctx.fail(nrm, "fio: sprandom requires norandommap=1: write norandommap=1 or remove it")
    if nrm is None:
        notes.append("sprandom sets norandommap=1, as fio does")
    if numjobs != 1:
        ctx.fail(ctx.job.get("numjobs"), "sprandom preconditions with one job: write numjobs=1")
    if nfiles != 1:
        ctx.fail(opt, f"fio's sprandom supports only one file ({nfiles} here): give one filename and nrfiles=1")
    if len(set(sizes)) != 1 or align != sizes[0]:
        ctx.fail(opt, "sprandom writes blocks of one size aligned to itself: give one bs and blockalign equal to it")
    if distribution != "random":
        ctx.fail(
            ctx.job.get("random_distribution"), "fio ignores it with sprandom, which picks its own offsets: remove it"
        )
    if time_based:
        ctx.fail(ctx.job.get("time_based"), "sprandom ends when its plan is written: remove time_based")
    if loops > 1:
        ctx.fail(ctx.job.get("loops"), "sprandom ends when its plan is written: remove loops")
    for name in ("zonesize", "zonerange", "zoneskip", "offset_increment"):
        if ctx.job.get(name) is not None:
            ctx.fail(ctx.job.get(name), "sprandom picks its own offsets over the whole file: remove it")
    ver = ctx.job.get("verify")
    if ver is not None and (ver.value or "").strip() not in ("", "0", "none"):
        ctx.fail(
            ver,
            "verifying sprandom's rewritten blocks is not supported by fsmeter yet (planned): remove "
            "verify, or run this job with fio",
        )
    op_opt = ctx.job.get("spr_op")
    op = 0.15
    if op_opt is not None:
        try:
            op = _fio_float(op_opt.value or "")
        except ValueError:
            ctx.fail(op_opt, "give the over-provisioning ratio as a number in (0, 1), e.g. spr_op=0.15")
        if not 0.0 < op < 1.0:
            ctx.fail(op_opt, "give the over-provisioning ratio as a number in (0, 1), e.g. spr_op=0.15")
    regions = ctx.int("spr_num_regions", 100, 1, 1 << 24)
    cache = ctx.size("spr_cs", 0) or 0
    bs = sizes[0]
    physical = logical + math.ceil(logical * op)
    physical -= physical % bs
    region = physical // regions
    if region < bs:
        ctx.fail(
            ctx.job.get("spr_num_regions") or opt,
            f"{regions} regions leave less than one {bs}-byte block per region of the {physical}-byte "
            "physical size: use fewer regions",
        )
    if cache > region:
        ctx.fail(
            ctx.job.get("spr_cs"),
            f"spr_cs must be smaller than the region size ({region} bytes), which "
            f"means at most {physical // cache} regions",
        )
    params.pop("random_map", None)
    params["sprandom"] = {
        "over_provisioning": op,
        "regions": regions,
        "cache_size": cache,
        "logical_size": logical if logical < filesize else 0,
    }
    nio = ctx.job.get("number_ios")
    cap = ctx.int("number_ios", 0, 0) * bs if nio is not None and ctx.int("number_ios", 0, 0) > 0 else None
    params["total_bytes"] = min(physical, cap) if cap else physical
    notes.append(
        f"sprandom: {physical} bytes ({physical // bs} writes) over {regions} regions of {region // bs} "
        "writes; fio draws its fresh offsets from its lfsr and its keep/skip choices from its own "
        "generator, fsmeter from its own: the counts and each region's share are the same, the offsets "
        "are not fio's"
    )


def _fio_engine(
    ctx: _Ctx,
    engine: str,
    rw: str,
    rw_opt,
    params: dict,
    notes: list,
    numjobs: int,
    time_based: bool,
    loops: int,
    ramp: float,
    place: _Placement,
) -> None:
    """ioengine=filecreate ... dirdelete, falloc, ftruncate, e4defrag: the engine's fio_engine, with fio's
    meaning of each (docs/fio.md), and their own options (stat_type, donorname, inplace)."""
    eng = ctx.job.get("ioengine")
    params["fio_engine"] = engine
    if params.get("verify"):
        ctx.fail(ctx.job.get("verify"), f"ioengine={engine} moves no data, so there is nothing to verify: remove it")
    if params["direct"]:
        notes.append(
            f"direct=1 with ioengine={engine}: no data moves through the page cache, so O_DIRECT changes "
            "nothing; fsmeter opens the files without it"
        )
        params["direct"] = False
    if engine in NAME_ENGINES:
        once = engine not in ("filestat", "dirstat")
        kind = "create" if "create" in engine else "stat" if "stat" in engine else "delete"
        what = {"create": "creates", "stat": "stats", "delete": "removes"}[kind]
        if once:
            for name, bad in (("time_based", time_based), ("loops", loops > 1), ("ramp_time", ramp > 0)):
                if bad:
                    ctx.fail(
                        ctx.job.get(name),
                        f"ioengine={engine} {what} each file name once (a second pass "
                        "would find the names already made or gone): remove it",
                    )
            if numjobs > 1 and not place.thread_files:
                ctx.fail(
                    place.opt or eng,
                    f"with numjobs={numjobs}, the clones of ioengine={engine} would share these "
                    f"names and each one {what[:-1]} them all: give each clone its own names "
                    "(no filename=, or $jobnum in filename_format)",
                )
        params["random_map"] = False
        notes[:] = [n for n in notes if not n.startswith("create_on_open")]  # the creation is what is timed here
        for key, why in _NAME_ENGINE_ACCEPTED.items():
            if ctx.job.get(key) is not None:
                notes.append(f"{ctx.job.get(key).as_written}: {why}")
        notes.append(
            f"ioengine={engine}: one {kind} call per {'directory' if engine.startswith('dir') else 'file'} "
            f"name, timed and counted as fio times its {'opens' if kind == 'create' else kind + 's'} (the "
            f"run's '{kind}' operations); fio also counts filesize/bs I/Os of bs bytes per name that do "
            "nothing"
        )
        st = ctx.job.get("stat_type")
        if st is not None:
            v = (st.value or "").strip()
            if v not in ("stat", "lstat", "statx"):
                ctx.fail(st, "use stat, lstat or statx")
            params["stat_type"] = v
        return
    if engine in ("ftruncate", "e4defrag") and rw not in ("write", "randwrite"):
        ctx.fail(
            rw_opt or eng,
            f"ioengine={engine} acts on writes only (fio fails its reads and trims with EINVAL): "
            "use rw=write or rw=randwrite",
        )
    if engine == "falloc":
        notes.append(
            "ioengine=falloc: each request is a fallocate over its range, as in fio: reads with KEEP_SIZE, "
            "writes with mode 0, trims punch a hole; no data moves"
        )
    elif engine == "ftruncate":
        notes.append(
            "ioengine=ftruncate: each write truncates its file to the write's offset, as in fio (bs only "
            "sets how far offsets move)"
        )
    else:
        donor = ctx.job.get("donorname")
        if donor is None or not (donor.value or "").strip():
            raise UserError(
                f"{ctx.where} line {(donor or eng).line}: ioengine=e4defrag needs donorname= (the donor "
                "file whose blocks each write's range is moved to): add donorname=NAME"
            )
        name = (donor.value or "").strip()
        if name.startswith("/") or ".." in name.split("/") or "\0" in name:
            ctx.fail(donor, "give a file name inside the job's directory (fio puts it under directory=)")
        d_opt = ctx.job.get("directory")
        directory = (d_opt.value or "").strip().rstrip("/") if d_opt is not None else ""
        params["donor_name"] = f"{directory}/{name}" if directory and not directory.startswith("/") else name
        params["donor_inplace"] = ctx.flag("inplace", False)
        notes.append(
            "ioengine=e4defrag: each write moves its range to the donor file's blocks (EXT4_IOC_MOVE_EXT), as "
            "in fio; it needs ext4, and stops in one line elsewhere"
        )


def _trim_entries(ctx: _Ctx, rw: str, random_pct: int, notes: list) -> tuple:
    """rw=trim/randtrim/trimwrite/randtrimwrite: hole punches of fio's trim block size (bs's third value, else
    its write value), each followed by a write of the same range for the *trimwrite kinds."""
    opt = ctx.job.get("bs") or ctx.job.get("blocksize")
    parts = [p.strip() for p in (opt.value or "").split(",")] if opt is not None else []
    size = 4096
    for p in reversed(parts[:3]):  # fio fills missing values forward: bs=8k,32k trims with 32k
        if p:
            try:
                size = parse_fio_size(p, ctx.kb_base)
            except ValueError as exc:
                ctx.fail(opt, str(exc))
            break
    if ctx.job.get("bssplit") is not None:
        ctx.fail(
            ctx.job.get("bssplit"), f"with rw={rw}, give one trim size with bs= (fsmeter: bssplit for trims is planned)"
        )
    if size <= 0:
        ctx.fail(opt, "must be > 0")
    then_write = _TRIM[rw][1]
    if then_write and len(parts) > 1 and parts[1] and parts[1] != parts[-1]:
        notes.append(f"rw={rw}: each write covers the range just trimmed ({size} bytes), whatever bs says for writes")
    notes.append(
        f"rw={rw}: a trim on a file is a hole punched over its range (fallocate PUNCH_HOLE|KEEP_SIZE); "
        "fio's own file engines issue a block-device discard there"
    )
    return [
        {"size": size, "weight": 100.0, "read_pct": 0.0, "random_pct": float(random_pct), "trim_pct": 100.0}
    ], then_write


def _per_dir(ctx: _Ctx, name: str, size: bool) -> tuple | None:
    """fio's READ[,WRITE[,TRIM]] values (bs's rules): one value for every direction; 'R,' or ',W' leaves the
    other unlimited. Sizes with fio's suffixes (size=True) or whole numbers. -> (read, write, trim)."""
    opt = ctx.job.get(name)
    if opt is None:
        return None
    parts = [p.strip() for p in (opt.value or "").split(",")]
    if len(parts) > 3 or not any(parts):
        ctx.fail(opt, "give one value, or READ,WRITE (each may be empty: no limit for that direction)")
    vals = []
    for p in parts:
        if not p:
            vals.append(0)
            continue
        try:
            v = parse_fio_size(p, ctx.kb_base) if size else parse_fio_int(p)
        except ValueError as exc:
            ctx.fail(opt, str(exc))
        top = MAX_SIZE_BYTES if size else MAX_COUNT  # the limits the job's parameters are held to
        if v < 0 or v > top:
            ctx.fail(opt, f"must be >= 0 and at most {top}")
        vals.append(v)
    if len(vals) == 1:
        vals = vals * 3
    while len(vals) < 3:
        vals.append(0)
    return tuple(vals)


def _time_us(ctx: _Ctx, name: str) -> int:
    """A time option whose plain number is microseconds (fio's thinktime)."""
    opt = ctx.job.get(name)
    if opt is None:
        return 0
    try:
        us = int(round(parse_fio_time_s(opt.value or "", default_unit="us") * 1e6))
    except ValueError as exc:
        ctx.fail(opt, str(exc))
    if us > 10**13:
        ctx.fail(opt, "at most 10^13 microseconds (about four months)")
    return us


def _pace(ctx: _Ctx, entries: list, notes: list) -> dict | None:
    """fio's rate, rate_iops, rate_min (ratemin), rate_iops_min, rate_process, rate_cycle (ratecycle) and
    thinktime, thinktime_spin, thinktime_blocks -> the access workload's pace (per thread: fio paces every clone
    of a job on its own)."""
    out: dict = {}
    trims = any(e.get("trim_pct") for e in entries)
    for keys, param, size in (
        (("rate",), "rate_bytes_per_s", True),
        (("rate_iops",), "rate_iops", False),
        (("rate_min", "ratemin"), "rate_min_bytes_per_s", True),
        (("rate_iops_min",), "rate_min_iops", False),
    ):
        given = [k for k in keys if ctx.job.get(k) is not None]
        if not given:
            continue
        key = max(given, key=lambda k: ctx.job.get(k).line)  # an alias: the later line wins, as in fio
        vals = _per_dir(ctx, key, size)
        if trims:
            ctx.fail(
                ctx.job.get(key),
                "pacing trims is not supported by fsmeter (planned): remove it, or run this job with fio",
            )
        if any(vals[:2]):
            out[param] = [vals[0], vals[1]]
    proc = ctx.job.get("rate_process")
    if proc is not None:
        p = (proc.value or "").strip()
        if p not in ("linear", "poisson"):
            ctx.fail(proc, "use linear or poisson")
        if p == "poisson":
            if not (out.get("rate_bytes_per_s") or out.get("rate_iops")):
                ctx.fail(proc, "poisson paces a rate: give rate= or rate_iops= too")
            out["rate_process"] = p
    cyc = [k for k in ("rate_cycle", "ratecycle") if ctx.job.get(k) is not None]
    if cyc:
        key = max(cyc, key=lambda k: ctx.job.get(k).line)
        out["rate_cycle_ms"] = ctx.int(key, 1000, 1, 1 << 31)
    think = _time_us(ctx, "thinktime")
    if think:
        out["thinktime_us"] = think
        spin = _time_us(ctx, "thinktime_spin")
        if spin > think:
            ctx.fail(ctx.job.get("thinktime_spin"), f"more than thinktime ({think} us): make it at most thinktime")
        if spin:
            out["thinktime_spin_us"] = spin
        blocks = ctx.int("thinktime_blocks", 1, 1, 1 << 31)
        if blocks > 1:
            out["thinktime_blocks"] = blocks
        if trims:
            ctx.fail(
                ctx.job.get("thinktime"),
                "thinktime with trims is not supported by fsmeter (planned): remove it, or run this job with fio",
            )
    flow = ctx.int("flow", 0, 0, 1000)
    if flow:
        if out:
            ctx.fail(
                ctx.job.get("flow"),
                "flow with a rate or thinktime in one job is not supported by fsmeter "
                "(planned): remove one, or run this job with fio",
            )
        if trims:
            ctx.fail(
                ctx.job.get("flow"),
                "flow with trims is not supported by fsmeter (planned): remove it, or run this job with fio",
            )
        out["flow"] = flow
        if ctx.job.get("flow_id") is not None:
            out["flow_id"] = ctx.int("flow_id", 0, 0, 1 << 31)
        if ctx.job.get("flow_sleep") is not None:
            out["flow_sleep_us"] = ctx.int("flow_sleep", 0, 0, 1 << 40)
        notes.append(
            "flow: the jobs of this group with the same flow_id keep their request counts in the ratio of "
            "their weights (each thread counts on its own, as fio's clones do); a job alone in its group "
            "has no one to keep pace with"
        )
        return out
    if not out:
        return None
    for d in (0, 1):
        r = out.get("rate_bytes_per_s", [0, 0])[d]
        if out.get("rate_process") == "poisson" and r:
            small = min(
                (e["size"] for e in entries if (e["read_pct"] > 0) == (d == 0) or 0 < e["read_pct"] < 100), default=0
            )
            if small and r < small:
                ctx.fail(
                    ctx.job.get("rate"),
                    f"{r} B/s is less than one {small}-byte request per second: a Poisson "
                    "process needs at least 1 IOPS (fio's too)",
                )
    if out.get("rate_bytes_per_s") or out.get("rate_iops"):
        notes.append(
            "rate: each thread paces its own requests (fio: each clone of the job) on the monotonic clock; "
            "a request not yet due waits once nothing is in flight (fio's inline submission), and the "
            "direction is the mix's draw (fio may switch to the other direction when that one is due first)"
        )
    if out.get("rate_min_bytes_per_s") or out.get("rate_min_iops"):
        notes.append(
            "rate_min: a thread below the minimum over a rate cycle (after 2 s) stops and the phase report "
            "warns (fio ends the job with an error)"
        )
    return out


_LAT_OPTS = ("latency_target", "latency_window", "latency_percentile", "latency_run")


def _latency_target(ctx: _Ctx, params: dict, notes: list, numjobs: int) -> None:
    """fio's latency_target (a time, microseconds without a unit), latency_window (the same), latency_percentile
    (0-100, default 100) and latency_run -> the access workload's latency_target (engine: access/lattarget.rs)."""
    opt = ctx.job.get("latency_target")
    target_ns = 0
    if opt is not None:
        try:
            target_ns = int(round(parse_fio_time_s(opt.value or "", default_unit="us") * 1e9))
        except ValueError as exc:
            ctx.fail(opt, str(exc))
        if target_ns >= 1 << 62:
            ctx.fail(opt, "at most 2^62 nanoseconds")
    if not target_ns:
        given = [ctx.job.get(o).as_written for o in _LAT_OPTS[1:] if ctx.job.get(o) is not None]
        if given:
            notes.append(f"{', '.join(given)}: without a latency_target fio searches no queue depth; nor does fsmeter")
        return
    out: dict = {"target_ns": target_ns}
    win = ctx.job.get("latency_window")
    if win is not None:
        try:
            out["window_ns"] = int(round(parse_fio_time_s(win.value or "", default_unit="us") * 1e9))
        except ValueError as exc:
            ctx.fail(win, str(exc))
        if out["window_ns"] >= 1 << 62:
            ctx.fail(win, "at most 2^62 nanoseconds")
    pct = ctx.job.get("latency_percentile")
    if pct is not None:
        try:
            v = _fio_float(pct.value or "")
        except ValueError:
            ctx.fail(pct, "give a percentage between 0 and 100 (e.g. 99.9)")
        if not 0.0 <= v <= 100.0:
            ctx.fail(pct, "give a percentage between 0 and 100 (e.g. 99.9)")
        out["percentile"] = v
    out["run"] = ctx.flag("latency_run")
    clash = None
    if ctx.int("loops", 1, 1) > 1:
        clash = (
            ctx.job.get("loops"),
            "with latency_target is not supported by fsmeter (planned): fio starts the "
            "search again at depth 1 on each loop, and fsmeter runs the loops as one pass; use loops=1 (or a "
            "larger size)",
        )
    elif numjobs > 1:
        clash = (
            ctx.job.get("numjobs"),
            f"numjobs={numjobs} with latency_target is not supported by fsmeter "
            "(planned): each clone searches its own depth and resets its own statistics; use numjobs=1",
        )
    else:
        for o in ("rate", "rate_iops", "rate_min", "ratemin", "rate_iops_min", "thinktime", "flow"):
            if ctx.job.get(o) is not None and params.get("pace"):
                clash = (ctx.job.get(o), "with latency_target is not supported by fsmeter (planned): remove one")
                break
        else:
            if params.get("steadystate"):
                clash = (
                    ctx.job.get(_alias(ctx, ("steadystate_duration", "ss_dur"))),
                    "with latency_target is not supported by fsmeter (planned): remove one",
                )
            elif params.get("interval_lat") or params.get("io_log"):
                clash = (
                    opt,
                    "with write_lat_log is not supported by fsmeter (planned): the final window restarts "
                    "the statistics mid-run; remove write_lat_log",
                )
    if clash is not None:
        ctx.fail(*clash)
    params["latency_target"] = out
    pct_v = out.get("percentile", 100.0)
    notes.append(
        f"latency_target: the queue depth is searched for between 1 and iodepth={params['queue_depth']} as "
        f"fio searches it (a window of {out.get('window_ns', 0) / 1e9:g} s judged by the share of requests "
        f"within {target_ns / 1e3:g} us, {pct_v:g}% needed; doubling, then bisecting, draining on a miss)"
        + (
            "; latency_run: it goes on adjusting until the job's size or runtime ends, and everything is reported"
            if out["run"]
            else "; once the depth stops changing the statistics are reset and one more window runs at it: only "
            "that window is reported, as fio reports it (unless the job's size or runtime ends first)"
        )
    )


def _id_list(ctx: _Ctx, opt, text: str, what: str, limit: int) -> list:
    """fio's CPU and node lists: 'all', or numbers and A-B ranges separated by commas."""
    if text.strip() == "all":
        return list(range(limit))
    out = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            a = parse_fio_int(lo)
            b = parse_fio_int(hi) if sep else a
        except ValueError:
            ctx.fail(opt, f"{part.strip()!r}: give {what} numbers and A-B ranges separated by commas, or all")
        if a < 0 or b < a:
            ctx.fail(opt, f"{part.strip()!r}: a range runs from a lower to a higher {what} number")
        out.extend(range(a, b + 1))
    return sorted(set(out))


def _numa_nodes() -> dict:
    """This machine's NUMA nodes -> their CPUs (Linux sysfs); one node 0 with every CPU when there is no NUMA."""
    base = Path("/sys/devices/system/node")
    nodes = {}
    for d in sorted(base.glob("node[0-9]*")) if base.is_dir() else []:
        try:
            text = (d / "cpulist").read_text().strip()
        except OSError:
            continue
        cpus = []
        for part in filter(None, text.split(",")):
            lo, _, hi = part.partition("-")
            cpus.extend(range(int(lo), int(hi or lo) + 1))
        nodes[int(d.name[4:])] = cpus
    return nodes or {0: sorted(os.sched_getaffinity(0))}


def _place(ctx: _Ctx, notes: list) -> dict | None:
    """cpus_allowed / cpumask / numa_cpu_nodes (with cpus_allowed_policy) and numa_mem_policy -> where the job's
    threads run (sched_setaffinity) and where their buffers' memory comes from (set_mempolicy)."""
    out: dict = {}
    allowed = sorted(os.sched_getaffinity(0))
    given = [k for k in ("cpus_allowed", "cpumask", "numa_cpu_nodes") if ctx.job.get(k) is not None]
    if len(given) > 1:
        ctx.fail(
            ctx.job.get(given[1]),
            f"give one of {', '.join(given)}: fsmeter does not combine them (fio lets the "
            "later one win in a way that depends on its build)",
        )
    if given:
        key = given[0]
        opt = ctx.job.get(key)
        value = (opt.value or "").strip()
        if key == "cpus_allowed":
            cpus = _id_list(ctx, opt, value, "CPU", os.cpu_count() or 1)
        elif key == "cpumask":
            try:
                mask = parse_fio_int(value)
            except ValueError:
                ctx.fail(opt, "give a bit mask of CPUs (a decimal or 0x number)")
            cpus = [c for c in range(mask.bit_length()) if mask >> c & 1]
        else:
            nodes = _numa_nodes()
            want = _id_list(ctx, opt, value, "node", max(nodes) + 1)
            missing = [n for n in want if n not in nodes]
            if missing:
                ctx.fail(
                    opt,
                    f"NUMA node {missing[0]} does not exist on this machine (its nodes: "
                    f"{', '.join(map(str, sorted(nodes)))}): name nodes it has",
                )
            cpus = sorted({c for n in want for c in nodes[n]})
        outside = [c for c in cpus if c not in allowed]
        if not cpus or outside:
            ctx.fail(
                opt,
                f"CPU {outside[0] if outside else '(none)'} is not one this process may run on (CPUs "
                f"{', '.join(map(str, allowed))}): name CPUs among them",
            )
        out["cpus"] = cpus
        pol = ctx.job.get("cpus_allowed_policy")
        if pol is not None:
            p = (pol.value or "").strip()
            if p not in ("shared", "split"):
                ctx.fail(pol, "use shared or split")
            if p == "split":
                out["split"] = True
        notes.append(
            f"{opt.as_written}: the job's threads run on CPUs {cpus}"
            + (" (one each, round robin)" if out.get("split") else "")
            + " (sched_setaffinity)"
        )
    mp = ctx.job.get("numa_mem_policy")
    if mp is not None:
        mode, _, nodelist = (mp.value or "").strip().partition(":")
        mode = mode.strip()
        if mode not in ("default", "prefer", "bind", "interleave", "local"):
            ctx.fail(mp, "use default, prefer:N, bind:NODES, interleave:NODES or local")
        nodes = _numa_nodes()
        want = _id_list(ctx, mp, nodelist, "node", max(nodes) + 1) if nodelist.strip() else []
        if mode in ("default", "local") and want:
            ctx.fail(mp, f"{mode} takes no nodes: write numa_mem_policy={mode}")
        if mode in ("prefer", "bind", "interleave") and not want:
            ctx.fail(mp, f"{mode} needs nodes: write numa_mem_policy={mode}:0")
        if mode == "prefer" and len(want) != 1:
            ctx.fail(mp, "prefer takes one node")
        missing = [n for n in want if n not in nodes]
        if missing:
            ctx.fail(
                mp,
                f"NUMA node {missing[0]} does not exist on this machine (its nodes: "
                f"{', '.join(map(str, sorted(nodes)))}): the policy cannot be honoured; name nodes it has",
            )
        out["mem_policy"] = {"mode": mode, "nodes": want}
        notes.append(f"{mp.as_written}: each thread's buffers are allocated under this policy (set_mempolicy)")
    return out or None


def _io_log_records(params: dict, threads: int) -> int:
    """Requests each thread's per-I/O log keeps (32 bytes each, allocated before the start): what a job with a
    byte total does (its smallest request size), else 2^22 records shared by its threads (128 MiB), at least
    2^16 and at most 2^20 each."""
    cap = max(1 << 16, min(1 << 20, (1 << 22) // max(threads, 1)))
    total, sizes = params.get("total_bytes"), [e["size"] for e in params.get("entries") or []]
    if total and sizes and params.get("thread_regions"):  # offset_increment: each thread its own bytes
        return max(16, min(cap, max(r["bytes"] for r in params["thread_regions"]) // min(sizes) + 16))
    if total and sizes:
        return max(16, min(cap, total // min(sizes) // max(threads, 1) + 16))
    return cap


def _log_format(ctx: _Ctx, logs: list, params: dict, threads: int, notes: list) -> dict:
    """How the job's log lines are written, as fio's flush_samples writes them: log_offset (an offset column),
    log_prio (the priority column as fio's 16-bit class and level in hex instead of 0/1), log_max_value /
    log_window_value (avg, max or both: the latency logs' value per window). write_lat_log has the engine keep
    each sample interval's latency (interval_lat) with log_avg_msec, and without it log every measured request
    (io_log: the engine writes the _lat and _clat files, fio's per-I/O lines)."""
    fmt = {"offset": ctx.flag("log_offset"), "prio": ctx.flag("log_prio"), "window": "avg"}
    key = _alias(ctx, ("log_max_value", "log_window_value"))
    if key is not None:
        opt = ctx.job.get(key)
        v = (opt.value or "").strip().lower()
        window = {"0": "avg", "avg": "avg", "1": "max", "max": "max", "both": "both"}.get(v)
        if window is None:
            ctx.fail(opt, "use avg, max or both (or 0 and 1, fio's old avg and max)")
        fmt["window"] = window
    kinds = {k for k, _ in logs}
    averaged = ctx.job.get("log_avg_msec") is not None and ctx.int("log_avg_msec", 0, 0, 3_600_000) > 0
    per_io = [k for k in ("offset", "prio") if fmt[k]]
    if per_io and ({"bw", "iops"} & kinds or (averaged and kinds)):
        notes.append(
            f"log_{'/log_'.join(per_io)}: fio's per-I/O lines (without log_avg_msec) carry each request's "
            f"{' and '.join(per_io)}; its averaged lines, as fsmeter writes them, carry 0 there"
            + ("; the requests given a priority are counted in counters.cmdprio_ios" if fmt["prio"] else "")
        )
    lat_files = [f for k, f in logs if k in ("lat", "clat")]
    if lat_files and not averaged:
        # fio's default: one line per request, written by the engine after the phase.
        fmt["per_io"] = True
        params["io_log"] = {
            "paths": [os.path.abspath(f) for f in lat_files],
            "offset": fmt["offset"],
            "prio_hex": fmt["prio"],
            "max_records": _io_log_records(params, threads),
        }
        if fmt["window"] != "avg":
            notes.append(
                f"{ctx.job.get(key).as_written}: fio uses it only with log_avg_msec; without it every "
                "request is logged, as in fio"
            )
    if kinds & {"lat", "clat", "slat"}:
        params["interval_lat"] = averaged
        backend = (ctx.job.get("ioengine").value or "").strip() if ctx.job.get("ioengine") is not None else "psync"
        if "slat" in kinds and backend in ("io_uring", "libaio"):
            notes.append(
                "write_lat_log: fsmeter times each request from its submission to its completion, with no "
                "separate submission time: the _lat and _clat logs carry that latency and the _slat log is "
                "empty (fio's _slat: the time to submit; with a synchronous engine fio's is empty too)"
            )
    return fmt


#: fio's option -> (lowest, highest) of each value (prio levels 0-7, classes 1 real-time, 2 best-effort, 3 idle,
#: hints 0-1023: the kernel's ioprio fields).
_PRIO_RANGES = {
    "prio": (0, 7),
    "prioclass": (0, 3),
    "priohint": (0, 1023),
    "cmdprio_percentage": (0, 100),
    "cmdprio_class": (1, 3),
    "cmdprio": (0, 7),
    "cmdprio_hint": (0, 1023),
}
_CMDPRIO_OPTS = ("cmdprio_percentage", "cmdprio_class", "cmdprio", "cmdprio_hint", "cmdprio_bssplit")


def _ioprio_value(cls: int, level: int, hint: int) -> int:
    """The kernel's 16-bit ioprio: class in bits 13-15 (no class: best-effort, as fio's ioprio_value), hint in
    bits 3-12, level in bits 0-2."""
    return ((cls or 2) << 13) | (hint << 3) | level


def _prio_pair(ctx: _Ctx, name: str, default: int) -> list:
    """An int[,int] option of fio's cmdprio: one value for reads and writes, or READ,WRITE (an empty side keeps
    the default)."""
    opt = ctx.job.get(name)
    if opt is None:
        return [default, default]
    lo, hi = _PRIO_RANGES[name]
    parts = [p.strip() for p in (opt.value or "").split(",")]
    if len(parts) == 1:
        parts = parts * 2
    if len(parts) != 2 or not any(parts):
        ctx.fail(opt, f"give a whole number from {lo} to {hi}, or READ,WRITE")
    out = []
    for p in parts:
        if p == "":
            out.append(default)
            continue
        try:
            v = parse_fio_int(p)
        except ValueError:
            v = -1
        if not lo <= v <= hi:
            ctx.fail(opt, f"{p!r}: give a whole number from {lo} to {hi}")
        out.append(v)
    return out


def _cmdprio_bssplit(ctx: _Ctx, cls: list, level: list, hint: list) -> list:
    """cmdprio_bssplit=BS/PCT[/CLASS/LEVEL[/HINT]]:...[,WRITE LIST] -> per direction, the engine's rules. An entry
    without its own class and level takes cmdprio_class, cmdprio and cmdprio_hint; one list covers both
    directions, as in fio."""
    opt = ctx.job.get("cmdprio_bssplit")
    lists = [x.strip() for x in (opt.value or "").split(",")]
    if len(lists) == 1:
        lists = lists * 2
    if len(lists) > 3 or not any(lists):
        ctx.fail(opt, "write BS/PCT[/CLASS/LEVEL[/HINT]]:... for reads, then ,LIST for writes")
    out = [[], []]
    for d in (0, 1):
        for ent in filter(None, (e.strip() for e in lists[d].split(":"))):
            f = [x.strip() for x in ent.split("/")]
            if len(f) not in (2, 4, 5):
                ctx.fail(opt, f"{ent!r}: write BS/PCT, BS/PCT/CLASS/LEVEL or BS/PCT/CLASS/LEVEL/HINT")
            try:
                size = parse_fio_size(f[0], ctx.kb_base)
                nums = [parse_fio_int(x) for x in f[1:]]
            except ValueError:
                ctx.fail(opt, f"{ent!r}: a size, then whole numbers")
            for v, (lo, hi), what in zip(
                nums, ((0, 100), (0, 3), (0, 7), (0, 1023)), ("percentage", "class", "level", "hint")
            ):
                if not lo <= v <= hi:
                    ctx.fail(opt, f"{ent!r}: the {what} must be from {lo} to {hi}")
            if not 0 < size < 1 << 32:
                ctx.fail(opt, f"{ent!r}: the block size must be above 0 and below 4 GiB")
            if len(nums) == 1:
                value = _ioprio_value(cls[d], level[d], hint[d])
            else:
                value = _ioprio_value(nums[1], nums[2], nums[3] if len(nums) == 4 else 0)
            out[d].append({"size": size, "pct": nums[0], "ioprio": value})
        for s in {r["size"] for r in out[d]}:
            total = sum(r["pct"] for r in out[d] if r["size"] == s)
            if total > 100:
                ctx.fail(opt, f"the percentages for block size {s} add up to {total}: at most 100")
    return out


def _ioprio(ctx: _Ctx, engine: str, params: dict, notes: list) -> None:
    """fio's I/O priorities. prio/prioclass/priohint: the priority of each thread of the job (ioprio_set, as fio
    sets it on each job). cmdprio_percentage or cmdprio_bssplit (with cmdprio_class, default real-time, cmdprio
    and cmdprio_hint): a per-request priority on that share of the requests, as fio's io_uring and libaio engines
    set it (engines/cmdprio.c); fio has these options only with those engines."""
    given = [k for k in ("prio", "prioclass", "priohint") if ctx.job.get(k) is not None]
    spec: dict = {}
    if given:
        v = {k: ctx.int(k, 0, *_PRIO_RANGES[k]) for k in ("prio", "prioclass", "priohint")}
        spec["thread"] = _ioprio_value(v["prioclass"], v["prio"], v["priohint"])
    cmd = [k for k in _CMDPRIO_OPTS if ctx.job.get(k) is not None]
    if cmd:
        opt = ctx.job.get(cmd[0])
        if engine not in ("io_uring", "libaio"):
            ctx.fail(
                opt,
                f"an option of fio's io_uring and libaio engines (fio refuses it with ioengine={engine}): "
                "use ioengine=io_uring, or prio/prioclass for every request of the job",
            )
        pct, cls = _prio_pair(ctx, "cmdprio_percentage", 0), _prio_pair(ctx, "cmdprio_class", 1)
        level, hint = _prio_pair(ctx, "cmdprio", 0), _prio_pair(ctx, "cmdprio_hint", 0)
        if ctx.job.get("cmdprio_bssplit") is not None:
            if ctx.job.get("cmdprio_percentage") is not None:
                ctx.fail(
                    ctx.job.get("cmdprio_percentage"),
                    "cmdprio_percentage and cmdprio_bssplit exclude each other (as in fio): keep one",
                )
            rules = _cmdprio_bssplit(ctx, cls, level, hint)
        else:
            rules = [
                [{"size": 0, "pct": pct[d], "ioprio": _ioprio_value(cls[d], level[d], hint[d])}] if pct[d] else []
                for d in (0, 1)
            ]
        if any(r["pct"] for d in rules for r in d):
            spec["cmd"] = rules
            notes.append(
                "cmdprio: each request's priority is drawn as fio draws it and set on its io_uring request "
                "(sqe.ioprio); counters.cmdprio_ios counts the measured requests that got one"
            )
    if spec:
        params["ioprio"] = spec
        notes.append(
            "I/O priorities take effect where the I/O scheduler or the device honours them (a tmpfs or "
            "page-cache hit has none to honour)"
        )


def _alias(ctx: _Ctx, names: tuple):
    """The option among fio's aliases that the job sets (the later line wins, as in fio), or None."""
    given = [n for n in names if ctx.job.get(n) is not None]
    return max(given, key=lambda n: ctx.job.get(n).line) if given else None


def _steadystate(ctx: _Ctx, notes: list) -> dict | None:
    """fio's steadystate (ss) = CRITERION:LIMIT[%], steadystate_duration (ss_dur), steadystate_ramp_time (ss_ramp),
    steadystate_check_interval (ss_interval); times in seconds unless a unit is given. Without a duration fio
    does not judge steady state (its default is 0)."""
    dur_key = _alias(ctx, ("steadystate_duration", "ss_dur"))
    crit_key = _alias(ctx, ("steadystate", "ss"))
    dur = 0.0
    if dur_key is not None:
        dur = ctx.time_s(dur_key) or 0.0
    if not dur:
        if crit_key is not None:
            notes.append(
                f"{ctx.job.get(crit_key).as_written}: without steadystate_duration (ss_dur) fio judges no "
                "steady state; nor does fsmeter"
            )
        return None
    crit_opt = ctx.job.get(crit_key) if crit_key else None
    text = (crit_opt.value or "").strip() if crit_opt is not None else "iops_slope:0.01%"
    kind, sep, lim = text.partition(":")
    kind = kind.strip()
    if kind not in ("iops", "iops_slope", "bw", "bw_slope", "lat", "lat_slope") or not sep:
        ctx.fail(
            crit_opt,
            "write CRITERION:LIMIT, CRITERION one of iops, iops_slope, bw, bw_slope, lat, lat_slope (e.g. iops:10%)",
        )
    lim = lim.strip()
    pct = lim.endswith("%")
    try:
        limit = _fio_float(lim[:-1] if pct else lim)
    except ValueError:
        ctx.fail(crit_opt, f"{lim!r} is not a number: write e.g. {kind}:10% or {kind}:2")
    if not (limit >= 0) or limit == float("inf"):
        ctx.fail(crit_opt, "the limit must be a number >= 0")
    ramp_key = _alias(ctx, ("steadystate_ramp_time", "ss_ramp"))
    iv_key = _alias(ctx, ("steadystate_check_interval", "ss_interval"))
    interval = (ctx.time_s(iv_key) if iv_key else None) or 1.0
    if dur / interval > 100_000:
        ctx.fail(
            ctx.job.get(iv_key) or ctx.job.get(dur_key),
            "more than 100,000 samples in the window: make the check interval longer",
        )
    if dur / interval < 2:
        ctx.fail(
            ctx.job.get(dur_key),
            f"the window holds fewer than two samples of {interval:g} s: make it at least twice the check interval",
        )
    out = {
        "criterion": kind,
        "limit": limit,
        "pct": pct,
        "dur_s": dur,
        "interval_s": interval,
        "ramp_s": (ctx.time_s(ramp_key) if ramp_key else None) or 0.0,
        "group": ctx.flag("group_reporting"),
    }
    for key, v in ((dur_key, dur), (ramp_key, out["ramp_s"]), (iv_key, interval)):
        if v > MAX_DURATION_S:
            ctx.fail(ctx.job.get(key), f"at most {MAX_DURATION_S:.0f} s")
    what = {"bw": "bandwidth", "la": "mean completion latency (ns)"}.get(kind[:2], "IOPS")
    notes.append(
        f"steadystate={kind}:{lim}: every {interval:g} s the {what} "
        f"of {'the reporting group' if out['group'] else 'each thread'} is sampled; once {dur:g} s of samples "
        "(after the ramp) meet the criterion, it stops, as fio's does"
    )
    return out


def _distribution(ctx: _Ctx, notes: list) -> str:
    """random_distribution=: fio's meanings, checked as the engine checks them (zoned kinds refused); and
    random_generator=, accepted with a note."""
    gen = ctx.job.get("random_generator")
    if gen is not None:
        g = (gen.value or "").strip()
        if g not in ("tausworthe", "lfsr", "tausworthe64"):
            ctx.fail(gen, "use tausworthe, lfsr or tausworthe64")
        notes.append(
            f"random_generator={g}: fsmeter draws its offsets from xoshiro256++ (the random map, when on, "
            "visits each block once per pass, as fio's lfsr does)"
        )
    opt = ctx.job.get("random_distribution")
    if opt is None:
        return "random"
    value = (opt.value or "").strip()
    kind = re.split(r"[:=]", value, maxsplit=1)[0].strip()
    if kind in ("zoned", "zoned_abs", "sequence") and value[len(kind) :].startswith("="):
        value = kind + ":" + value[len(kind) + 1 :]  # fio's documentation also writes zoned_abs=...
    if not value.isascii():  # float() reads other scripts' digits (zipf:١.٢), fio's strtod does not
        ctx.fail(opt, "write its numbers in ASCII digits")
    try:
        if kind in ("zoned", "zoned_abs"):
            from fsmeter.families.access import format_zoned, parse_zoned

            value = format_zoned(*parse_zoned(value, lambda z: parse_fio_size(z, ctx.kb_base)))
        else:
            value = check_distribution(value)
    except ValueError as exc:
        ctx.fail(opt, str(exc))
    if kind in ("zoned", "zoned_abs"):
        notes.append(
            f"random_distribution={(opt.value or '').strip()}: fio's zones: each random request picks a zone "
            "by its share of the accesses (per direction), then a block uniformly inside it; fio's random "
            "map is off, as in fio"
        )
    elif kind == "sequence":
        notes.append(
            f"random_distribution={value}: random requests visit these blocks in turn, as fio's sequence "
            "distribution (counted per direction and per thread)"
        )
    elif value != "random":
        notes.append(
            f"random_distribution={value}: fio's definition; the hot blocks are spread over each file by a "
            "permutation (fio: a multiplicative hash), and fio's random map is off, as in fio"
        )
    return value


def _shape(
    ctx: _Ctx,
    rw: str,
    seq_add: int,
    sizes: list,
    filesize: int,
    nrfiles: int,
    offset: int,
    random_pct: int,
    distribution: str,
    notes: list,
) -> dict:
    """rw=...:N, strided zones (zonemode=strided) and the sequence distribution's stride: {"params": access
    parameters, "cap": I/Os per clone fio does before the shape stops it, None when it never does} ({} without a
    shape: the plain pattern's count holds)."""
    job = ctx.job
    rw_opt = job.get("rw") or job.get("readwrite")
    out: dict = {}
    if seq_add:
        if nrfiles > 1:
            ctx.fail(
                rw_opt,
                f"the offset modifier with {nrfiles} files per job is not supported by fsmeter yet "
                "(planned): give the job one file, or run this job with fio",
            )
        if len(set(sizes)) > 1:
            ctx.fail(
                rw_opt,
                "the offset modifier with several request sizes is not supported by fsmeter yet "
                "(planned): give one bs, or run this job with fio",
            )
        if seq_add < 0 and offset:
            ctx.fail(
                rw_opt,
                "a backwards walk after offset= is not supported by fsmeter yet (planned): remove "
                "offset=, or run this job with fio",
            )
        if abs(seq_add) >= filesize:
            ctx.fail(rw_opt, f"the modifier moves {abs(seq_add)} bytes, not less than the {filesize}-byte file")
        # fio starts again at the file's start when a request would not fit, until the job's bytes are done.
        out = {"params": {"seq_add": seq_add}, "cap": None}
        notes.append(
            f"rw={rw}:{seq_add}: each request starts {abs(seq_add)} bytes "
            f"{'after' if seq_add > 0 else 'before'} the end of the one before it (fio's offset modifier), "
            "starting again at the beginning of the file where a request would not fit, as fio does; each "
            "thread walks its whole file, as each fio clone does"
        )
    zones = _zones(ctx, sizes, filesize, nrfiles, random_pct, notes)
    if zones is not None:
        if seq_add:
            ctx.fail(
                rw_opt,
                "the offset modifier with strided zones is not supported by fsmeter yet (planned): "
                "use one or the other, or run this job with fio",
            )
        out = {"params": dict(zip(("zone_size", "zone_range", "zone_skip"), zones)), "cap": None}
    stride = job.get("random_sequence_stride")
    if stride is not None:
        on = ctx.flag("random_sequence_stride")
        if not distribution.startswith("sequence"):
            ctx.fail(stride, "only with random_distribution=sequence:...: add one, or remove it")
        if on:
            out = {"params": {"random_sequence_stride": True}, "cap": None}
    if distribution.startswith("zoned_abs"):
        from fsmeter.families.access import parse_zoned

        covered = max(sum(z for _, z in d) for d in parse_zoned(distribution)[1])
        if covered > filesize:
            ctx.fail(
                job.get("random_distribution"),
                f"the zones cover {covered} bytes, more than the {filesize}-byte "
                "file (fio stops: zoned_abs sizes exceed file size): make them "
                "smaller",
            )
    if distribution.startswith("sequence"):
        dist_opt = job.get("random_distribution")
        if nrfiles > 1:
            ctx.fail(
                dist_opt,
                f"the sequence distribution with {nrfiles} files per job is not supported by fsmeter "
                "yet (planned): give the job one file, or run this job with fio",
            )
        if random_pct < 100:
            ctx.fail(
                dist_opt,
                "the sequence distribution with sequential requests in the mix (percentage_random) is "
                "not supported by fsmeter yet (planned): remove percentage_random",
            )
        from fsmeter.families.access import parse_sequence

        seq = parse_sequence(distribution)
        blocks = filesize // min(sizes)
        beyond = [b for b in seq if b >= blocks]
        if beyond:
            ctx.fail(
                dist_opt,
                f"block {beyond[0]} is beyond the file's {blocks} blocks of {min(sizes)} bytes (fio "
                "stops with an error): give block numbers below that",
            )
        if out.get("params", {}).get("random_sequence_stride"):
            if rw == "randrw":
                ctx.fail(
                    stride,
                    "a strided sequence over reads and writes together is not supported by fsmeter yet "
                    "(planned): use randread or randwrite",
                )
            # fio's request i goes to block (i // n) * n + seq[i % n] and stops at the first past the file.
            n = len(seq)
            g = max(0, (blocks - max(seq)) // n - 1)
            while True:
                hit = next((j for j in range(n) if g * n + seq[j] >= blocks), None)
                if hit is not None:
                    out["cap"] = g * n + hit
                    break
                g += 1
    return out


def _zones(ctx: _Ctx, sizes: list, filesize: int, nrfiles: int, random_pct: int, notes: list) -> tuple | None:
    """zonemode=strided (or zonesize= alone, as fio reads it) -> (zone_size, zone_range, zone_skip) bytes, or None.
    zonemode=zbd (zoned block devices) is refused."""
    job = ctx.job
    zm = job.get("zonemode")
    mode = (zm.value or "").strip() if zm is not None else None
    if mode not in (None, "none", "strided", "zbd"):
        ctx.fail(zm, "use none or strided (zbd is for zoned block devices)")
    if mode == "zbd":
        ctx.fail(
            zm,
            "zoned block devices are not supported and fsmeter will not support them (fsmeter measures "
            "filesystems, not zoned devices): use zonemode=strided for zones of a file, or run this job "
            "with fio",
        )
    zsize, zrange, zskip = ctx.size("zonesize", 0), ctx.size("zonerange", 0), ctx.size("zoneskip", 0)
    if mode is None and zsize:
        mode = "strided"  # fio: a zone size without a zone mode means strided zones
    if mode != "strided":
        return None
    anchor = zm or job.get("zonesize")
    if not zsize:
        ctx.fail(anchor, "strided zones need zonesize= (bytes transferred per zone): add it")
    if nrfiles > 1:
        notes.append(
            f"{anchor.as_written} with {nrfiles} files per job: fio turns strided zones off for a job with "
            "several files, and so does fsmeter"
        )
        return None
    zrange = zrange or zsize
    if random_pct and not ctx.flag("norandommap", False):
        ctx.fail(
            anchor,
            "random requests in strided zones with fio's random map (reset at every zone) are not "
            "supported by fsmeter yet (planned): add norandommap, or run this job with fio",
        )
    if random_pct and zrange > filesize:
        ctx.fail(
            anchor,
            f"random requests in a zone of {zrange} bytes, larger than the {filesize}-byte file, are "
            "not supported by fsmeter: make zonerange smaller",
        )
    notes.append(
        f"zonemode=strided: {zsize} bytes in each zone of {zrange} bytes, then {zskip} bytes skipped, back "
        "to the first zone after the end of the file or where a request would not fit (fio's strided "
        "zones); each thread walks its whole file, as each fio clone does"
    )
    return zsize, zrange, zskip


def _fio_access_opts(ctx: _Ctx, params: dict, notes: list) -> None:
    """buffer_pattern= and verify= (with do_verify, verify_interval) onto the access workload's own."""
    bp = ctx.job.get("buffer_pattern")
    if bp is not None:
        try:
            parse_buffer_pattern((bp.value or "").strip())
        except ValueError as exc:
            ctx.fail(bp, str(exc))
        params["buffer_pattern"] = (bp.value or "").strip()
    v = ctx.job.get("verify")
    if ctx.job.get("verify_pattern") is not None:
        _verify_pattern(ctx, params, notes)
        for name in _VERIFY_OPTS:
            if name != "verify_async" and ctx.job.get(name) is not None:
                ctx.fail(
                    ctx.job.get(name),
                    "with verify=pattern is not supported by fsmeter yet (planned): use it with "
                    "a checksum method (verify=crc32c ...), or run this job with fio",
                )
        if ctx.job.get("verify_async") is not None:
            notes.append(
                f"{ctx.job.get('verify_async').as_written}: fsmeter compares the pattern in the thread that "
                "read it: the same I/Os"
            )
        return
    if v is None:
        for name in ("do_verify", "verify_interval", *_VERIFY_OPTS):
            if ctx.job.get(name) is not None:
                ctx.fail(
                    ctx.job.get(name),
                    "has no effect without verify=: add verify=crc32c (or xxhash, sha256), or remove it",
                )
        return
    method = (v.value or "").strip()
    if method in ("null", "0", "none"):
        notes.append(f"verify={method}: nothing is verified, as in fio")
        for name in _VERIFY_OPTS:
            if ctx.job.get(name) is not None:
                notes.append(f"{ctx.job.get(name).as_written}: nothing to do without a verify method, as in fio")
        return
    if method not in _VERIFY:
        ctx.fail(
            v,
            f"fsmeter's verification has {', '.join(sorted(_VERIFY))}, not {method} (not planned): "
            "use one of those, or run this job with fio",
        )
    if not ctx.flag("do_verify", True):
        notes.append(
            f"verify={method} with do_verify=0: fio writes its headers and checks nothing; fsmeter leaves "
            "verification off"
        )
        for name in _VERIFY_OPTS:
            if ctx.job.get(name) is not None:
                notes.append(f"{ctx.job.get(name).as_written}: nothing is checked with do_verify=0, as in fio")
        return
    if any(e.get("trim_pct") for e in params["entries"]):
        ctx.fail(v, "cannot be combined with trims (a trimmed block reads back as zeros): remove one")
    if bp is not None:
        ctx.fail(
            v,
            "cannot be combined with buffer_pattern (fsmeter's verified blocks carry their own header and "
            "data): remove one",
        )
    params["verify"] = _VERIFY[method]
    params["reuse_files"] = False  # verified blocks are laid out with their headers
    block = ctx.size("verify_interval")
    if block is not None:
        params["verify_block"] = block
    header = verify_header_len(params["verify"])
    smallest = block if block is not None else min(e["size"] for e in params["entries"])
    if smallest < header + 8:
        src = next((ctx.job.get(n) for n in ("verify_interval", "bssplit", "bs", "blocksize") if ctx.job.get(n)), v)
        ctx.fail(
            src,
            f"with verify={method}, each {smallest}-byte block must hold fsmeter's {header}-byte header and "
            f"data: use {'verify_interval' if block is not None else 'bs'} >= {header + 8} bytes"
            + ("" if header == 80 else " (or a checksum of at most 32 bytes, whose header is 80 bytes)"),
        )
    if method == "xxhash":
        notes.append("verify=xxhash: fsmeter checks with XXH3 (64-bit) where fio uses XXH32; both checksum each block")
    if method == "meta":
        notes.append(
            "verify=meta: fio checks its block header only; fsmeter checks its header and a crc32c of the "
            "data after it (the same I/Os)"
        )
    _verify_options(ctx, params, notes)
    notes.append(
        f"verify={method}: every block written carries fsmeter's header and checksum, and reads check it "
        "(docs/verify.md)"
    )


def _content(ctx: _Ctx, params: dict, notes: list, size: int, nrfiles: int) -> None:
    """fio's buffer contents (its init-time fixups and fill_io_buffer): buffer_compress_percentage and
    buffer_compress_chunk, dedupe_percentage with dedupe_mode, dedupe_working_set_percentage and dedupe_global,
    refill_buffers, zero_buffers and scramble_buffers, onto the access workload's `content`."""
    job = ctx.job
    cp_opt, dp_opt = job.get("buffer_compress_percentage"), job.get("dedupe_percentage")
    cp = ctx.int("buffer_compress_percentage", 0, 0, 100)
    dp = ctx.int("dedupe_percentage", 0, 0, 100)
    for name in ("dedupe_mode", "dedupe_working_set_percentage", "dedupe_global"):
        if job.get(name) is not None and dp_opt is None:
            ctx.fail(job.get(name), "has no effect without dedupe_percentage: add dedupe_percentage=N, or remove it")
    if job.get("buffer_compress_chunk") is not None and cp_opt is None:
        ctx.fail(
            job.get("buffer_compress_chunk"),
            "has no effect without buffer_compress_percentage: add buffer_compress_percentage=N, or remove it",
        )
    chunk = ctx.size("buffer_compress_chunk", 512)
    if chunk > 1 << 30:
        ctx.fail(job.get("buffer_compress_chunk"), "at most 1 GiB")
    pattern = bool(params.get("buffer_pattern"))
    zero = ctx.flag("zero_buffers", False)
    refill_opt = job.get("refill_buffers")
    refill = ctx.flag("refill_buffers", False)
    verified = bool(params.get("verify") or params.get("verify_pattern"))
    # fio: a compress or dedupe option given turns its own scramble off (TD_F_COMPRESS); 100% compressible is
    # zero_buffers; another share, or any dedupe, refills every write unless refill_buffers says otherwise.
    compress_flag = cp_opt is not None or dp_opt is not None
    if cp == 100:
        zero, cp = True, 0
    elif cp and refill_opt is None:
        refill = True
    if dp:
        refill = True
    if (cp or dp) and verified:
        ctx.fail(
            cp_opt if cp else dp_opt,
            "cannot be combined with verify (fsmeter's verified blocks carry their own header and data): remove one",
        )
    if cp and not refill:
        ctx.fail(
            refill_opt,
            "refill_buffers=0 with buffer_compress_percentage (fio then fills each buffer once and "
            "writes it again and again) is not supported by fsmeter (planned): remove refill_buffers=0",
        )
    content: dict | None = None
    if cp or dp:
        content = {"compress_pct": cp, "compress_chunk": chunk, "dedupe_pct": dp}
        if zero and dp:
            notes.append(
                f"buffer_compress_percentage=100 with dedupe_percentage (line {cp_opt.line}): fio turns the "
                "100 into zero_buffers, which its dedupe fill does not use, so the blocks are random, not zero; "
                "fsmeter writes what fio writes"
            )
        if pattern and dp and not cp:
            notes.append(
                "buffer_pattern with dedupe_percentage alone: fio's dedupe fill writes random blocks, not the "
                "pattern; so does fsmeter"
            )
        if dp:
            content.update(_dedupe(ctx, params, dp, size, nrfiles))
        notes.append(
            "write contents: the compressible share, the chunks and which writes repeat which follow fio's "
            "definitions; the random bytes are fsmeter's own, so no block matches one fio writes"
        )
    elif verified:
        pass  # verified writes carry their own bytes
    elif zero and not pattern:
        content = {"zero": True}
    elif refill and not pattern:
        content = {"refill": True}
    elif job.get("scramble_buffers") is not None and ctx.flag("scramble_buffers", True) and not compress_flag:
        content = {"scramble": True}
    if content is not None:
        params["content"] = content
        if any(e.get("trim_pct") for e in params["entries"]) and not params.get("trim_then_write"):
            ctx.fail(
                cp_opt or dp_opt or job.get("zero_buffers") or refill_opt or job.get("scramble_buffers"),
                "trims write no data: remove it",
            )


def _dedupe(ctx: _Ctx, params: dict, dp: int, size: int, nrfiles: int) -> dict:
    """dedupe_mode, dedupe_working_set_percentage and dedupe_global, checked as fio checks them."""
    job = ctx.job
    mode_opt = job.get("dedupe_mode")
    mode = (mode_opt.value or "").strip() if mode_opt is not None else "repeat"
    if mode not in ("repeat", "working_set"):
        ctx.fail(mode_opt, "use repeat or working_set")
    out: dict = {"dedupe_mode": mode}
    if mode == "working_set":
        wsp_opt = job.get("dedupe_working_set_percentage")
        wsp = ctx.int("dedupe_working_set_percentage", 5, 0, 100)
        if job.get("size") is None:
            ctx.fail(
                mode_opt,
                "the working set is a share of size=, which the job does not set (fio refuses this too): add size=",
            )
        if nrfiles != 1:
            ctx.fail(
                mode_opt,
                f"the working set needs one file per job, and this job has {nrfiles} (fio refuses this "
                "too): use nrfiles=1",
            )
        if wsp + dp > 100:
            ctx.fail(
                wsp_opt or mode_opt,
                f"dedupe_working_set_percentage {wsp} + dedupe_percentage {dp} is more than "
                "100: the working set's blocks are unique, so that share cannot be copies "
                "(fio refuses this too)",
            )
        writes = [
            e["size"]
            for e in params["entries"]
            if e.get("read_pct", 0) + e.get("trim_pct", 0) < 100 or params.get("trim_then_write")
        ]
        min_write = min(writes) if writes else min(e["size"] for e in params["entries"])
        n = size * wsp // 100 // min_write
        if n < 1:
            ctx.fail(
                wsp_opt or mode_opt,
                f"the working set of {wsp}% of {size} bytes holds no {min_write}-byte block: "
                "raise dedupe_working_set_percentage or size",
            )
        if n > 1 << 32:
            ctx.fail(
                wsp_opt or mode_opt,
                f"a working set of {n} blocks: fsmeter keeps at most 2^32: lower "
                "dedupe_working_set_percentage, or raise bs",
            )
        out["working_set"] = n
    if ctx.flag("dedupe_global", False):
        out["global"] = True
    return out


def _atomic(ctx: _Ctx, params: dict, notes: list, engine: str) -> None:
    """fio's atomic=1: every write with RWF_ATOMIC (its pvsync2, libaio and io_uring engines), which the kernel takes
    with O_DIRECT only; the engine checks the file's untorn-write unit when it opens the files."""
    opt = ctx.job.get("atomic")
    if opt is None or not ctx.flag("atomic", False):
        return
    writes = params.get("trim_then_write") or any(
        e.get("read_pct", 0) + e.get("trim_pct", 0) < 100 for e in params["entries"]
    )
    if not writes:
        notes.append(f"atomic=1 (line {opt.line}) on a job without writes: fio turns it off, and so does fsmeter")
        return
    if engine not in ("io_uring", "libaio"):
        ctx.fail(
            opt, f"ioengine={engine} issues no untorn writes (fio refuses it too): use ioengine=io_uring or libaio"
        )
    if not params.get("direct"):
        ctx.fail(opt, "the kernel takes untorn writes (RWF_ATOMIC) with O_DIRECT only: add direct=1")
    params["atomic"] = True
    notes.append(
        "atomic=1: every write carries RWF_ATOMIC; the run stops at the start if the filesystem's atomic "
        "write unit (statx STATX_WRITE_ATOMIC) does not hold the write size"
    )


def _verify_pattern(ctx: _Ctx, params: dict, notes: list) -> None:
    """verify_pattern (with verify=pattern, or no verify=, which fio then sets to pattern): the layout and every
    write carry the pattern, every read and a verify phase check it. do_verify=0 writes it unchecked."""
    vp, v = ctx.job.get("verify_pattern"), ctx.job.get("verify")
    method = (v.value or "").strip() if v is not None else "pattern"
    meta = method == "meta"
    if method not in ("pattern", "meta"):
        ctx.fail(
            vp,
            f"with verify={method} (fio: {method}'s header and the pattern in each block) is not supported by "
            "fsmeter yet (planned): use verify=pattern (or no verify=) for the pattern alone, verify=meta for "
            "a header and the pattern, or run this job with fio",
        )
    text = (vp.value or "").strip()
    try:
        n = len(parse_buffer_pattern(text))
    except ValueError as exc:
        if "%o" in text and not re.search(r'"[^"]*%o[^"]*"', text):  # fio's, not a malformed pattern
            ctx.fail(
                vp,
                "%o (fio writes each block's offset into the pattern) is not supported by fsmeter yet "
                "(planned): write the pattern without it, or run this job with fio",
            )
        ctx.fail(vp, str(exc))
    if ctx.job.get("buffer_pattern") is not None:
        ctx.fail(vp, "cannot be combined with buffer_pattern (the verify pattern is what fio writes): remove one")
    if any(e.get("trim_pct") for e in params["entries"]):
        ctx.fail(vp, "cannot be combined with trims (a trimmed range reads back as zeros): remove one")
    block = ctx.size("verify_interval")
    for name, val in [("a request size", e["size"]) for e in params["entries"]] + [
        ("blockalign", params["alignment"]),
        ("offset", params["offset"]),
        ("verify_interval", block or 0),
        ("rw's offset modifier", abs(params.get("seq_add", 0))),
        ("1 MiB (fsmeter's layout writes)", 1 << 20),
    ]:
        if val % n:
            ctx.fail(
                vp,
                f"its {n} bytes do not divide {name} ({val} bytes): fsmeter checks each byte against its "
                "place in the pattern by file offset, so use a pattern of 1, 2, 4, 8 ... bytes",
            )
    if meta:
        _meta_pattern(ctx, params, notes, text, n, block)
        return
    if not ctx.flag("do_verify", True):
        params["buffer_pattern"] = text
        notes.append(
            f"verify_pattern={text} with do_verify=0: fio writes the pattern and checks nothing here; so "
            "does fsmeter (written as buffer_pattern)"
        )
        return
    params["verify_pattern"] = text
    notes.append(
        f"verify_pattern={text}: the layout and every write carry the pattern; every read and a verify "
        "phase after the run check each byte against it (fio's verify=pattern); files already there are "
        "read as they are, as fio reads them"
    )


def _dir_min_bs(ctx: _Ctx, split: tuple | None, bs: tuple) -> tuple:
    """fio's smallest block size per direction (read, write, trim): from bssplit (a list for each direction given;
    trims take the write list when two lists are given), else from bs/blocksize (a value not ended by a comma
    applies to the directions after it; an empty one is fio's 4 KiB)."""
    if split is not None:
        lists = (ctx.job.get("bssplit").value or "").split(",")
        trim = min(s for s, _ in split[1])
        if len(lists) > 2 and lists[2].strip():
            try:
                trim = min(parse_fio_size(item.partition("/")[0], ctx.kb_base) for item in lists[2].split(":"))
            except ValueError as exc:
                ctx.fail(ctx.job.get("bssplit"), str(exc))
        return min(s for s, _ in split[0]), min(s for s, _ in split[1]), trim
    opt = ctx.job.get("bs") or ctx.job.get("blocksize")
    parts = [p.strip() for p in (opt.value or "").split(",")] if opt is not None else []
    trim = bs[1]
    if len(parts) > 2:
        try:
            trim = parse_fio_size(parts[2], ctx.kb_base) if parts[2] else 4096
        except ValueError as exc:
            ctx.fail(opt, str(exc))
    return bs[0], bs[1], trim


def _dir_map_block(
    ctx: _Ctx,
    per_dir: tuple,
    mins: tuple,
    read_pct: int,
    random_pct: int,
    distribution: str,
    nrfiles: int,
    time_based: bool,
    notes: list,
) -> int:
    """fio's random map when a direction's smallest block is not the job's (rw_min_bs, over reads, writes and
    trims): fio keeps one map of rw_min_bs blocks, each direction draws and marks blocks in units of its own
    smallest size (io_u.c: last_block, __get_next_rand_offset, mark_random_map), and the job ends the first time a
    draw's next free block lies past the file (get_next_offset fails). The engine keeps that map and that stop
    (random_map_block). -> rw_min_bs when it applies, else 0 (with a note when fio's map would differ)."""
    job = ctx.job
    used = [d for d, on in ((0, read_pct > 0), (1, read_pct < 100)) if on]
    block = min(mins)
    if (
        not random_pct
        or ctx.flag("norandommap", False)
        or distribution != "random"
        or all(mins[d] == block for d in used)
    ):
        return 0
    gen = job.get("random_generator")
    why = None
    if job.get("blockalign") is not None or job.get("ba") is not None:
        return 0  # fio: any blockalign turns its random map off
    if gen is not None and (gen.value or "").strip() == "lfsr":
        why = "random_generator=lfsr (fio then keeps no map but an LFSR over the same blocks)"
    elif random_pct != 100:
        why = f"percentage_random={random_pct}"
    elif nrfiles != 1:
        why = f"{nrfiles} files per job"
    elif any(s % mins[d] or mins[d] % block for d in used for s, _ in per_dir[d]):
        why = "sizes that are not multiples of their direction's smallest"
    if why is not None:
        notes.append(
            f"per-direction block sizes under fio's random map with {why}: fio keeps one map of {block}-byte "
            "blocks that each direction indexes in units of its own smallest size, and may end the job "
            f"before its bytes are done; fsmeter keeps a map of {block}-byte blocks for every direction "
            "alike and moves the job's bytes"
        )
        return 0
    loops = job.get("loops")
    if loops is not None and ctx.int("loops", 1, 1, 1 << 32) > 1:
        ctx.fail(
            loops,
            "loops with per-direction block sizes under fio's random map is not supported by fsmeter "
            "(fio ends each loop where its draws say, and starts the next one afresh): remove loops, or "
            "add norandommap",
        )
    if time_based and ctx.flag("randrepeat", True):
        ctx.fail(
            job.get("time_based"),
            "time_based with per-direction block sizes under fio's random map: fio ends "
            "each pass where its draws say and, with randrepeat=1 (its default), seeds "
            "its random numbers again and repeats the same pass; fsmeter runs this only "
            "with randrepeat=0 (each pass drawn afresh): add randrepeat=0, or norandommap",
        )
    units = ", ".join(f"{('reads', 'writes')[d]} {mins[d]}" for d in used)
    notes.append(
        f"per-direction block sizes under fio's random map: fio keeps one map of {block}-byte blocks and "
        f"each direction draws and marks blocks in units of its own smallest size ({units} bytes), so a "
        "request of that size takes one block of the map; the job ends the first time a draw's next free "
        "block lies past the file, at a point that depends on the draws. fsmeter keeps the same map and "
        "the same stop, so its bytes and I/O counts vary with the seed as fio's do: compare them over "
        "seeds, not run by run (up to fio 3.34, randrepeat=1, its default, draws the same offsets whatever "
        "randseed says; randrepeat=0 with randseed=N varies them)"
    )
    return block


def _dir_entries(per_dir: tuple, read_pct: int, random_pct: int) -> list:
    """Each direction's sizes as entries of their own (read_pct 100 or 0), in fio's order: its bssplit sorted by
    percentage (options.c: bs_cmp), which decides the size taken when the drawn one does not fit."""
    entries = []
    for d, share in ((0, read_pct), (1, 100 - read_pct)):
        for size, pct in sorted(per_dir[d], key=lambda x: x[1]):
            if share > 0:
                entries.append(
                    {
                        "size": size,
                        "weight": share * pct / 100.0,
                        "read_pct": 100.0 if d == 0 else 0.0,
                        "random_pct": float(random_pct),
                    }
                )
    return entries


def _meta_pattern(ctx: _Ctx, params: dict, notes: list, text: str, n: int, block: int | None) -> None:
    """verify=meta with verify_pattern (fio's surface-scan): fio fills each verify_interval block with the pattern and
    writes its header over the block's start; a read checks the header's fields and each pattern byte after it. fsmeter
    writes its own header there (verify_pattern_meta)."""
    sizes = [e["size"] for e in params["entries"]]
    blk = block or min(sizes)
    opt = ctx.job.get("verify_interval") or ctx.job.get("verify")
    if blk < 88:
        ctx.fail(
            opt,
            f"{blk} bytes per header is too small for fsmeter's 80-byte header and a payload: use a "
            "verify_interval of at least 88 bytes (fio's own header is 48 bytes)",
        )
    for name, val in [("a request size", s) for s in sizes] + [
        ("blockalign", params["alignment"]),
        ("offset", params["offset"]),
    ]:
        if val % blk:
            ctx.fail(
                opt,
                f"{blk} bytes per header does not divide {name} ({val} bytes): fsmeter puts one header at "
                "the start of each block of a fixed grid: use a verify_interval that divides it",
            )
    if (1 << 20) % blk:
        ctx.fail(opt, f"{blk} bytes per header does not divide 1 MiB (fsmeter's layout writes): use a power of two")
    if blk % n:
        ctx.fail(opt, f"{blk} bytes per header is not a multiple of the {n}-byte verify_pattern: use one that is")
    params["verify_pattern"] = text
    params["verify_pattern_meta"] = True
    if block is not None:
        params["verify_block"] = block
    where = f"each {blk}-byte block (verify_interval) starts with fsmeter's 80-byte header (offset, length, writer, "
    where += "crc32c of the header) and holds the pattern in the rest, in the place fio puts it"
    if not ctx.flag("do_verify", True):
        params["verify_pattern_check"] = False
        notes.append(f"verify=meta, verify_pattern={text}, do_verify=0: {where}; nothing is checked here, as in fio")
        return
    notes.append(
        f"verify=meta, verify_pattern={text}: {where}; every read and a verify phase after the run check each "
        "header (magic, length, the block's offset, its crc32c) and every pattern byte, as fio checks its "
        "header and the pattern; fio's header is 48 bytes, so the two tools' files differ in bytes 48-79 of a "
        "block"
    )


def _sized_map(sizes: list, align: int, random_pct: float, distribution: str, ctx) -> bool:
    """fio's random map over several request sizes, which the engine keeps as fio does (a map of the smallest
    blocks; a request ends at the first block already done): every request random, the sizes multiples of the
    smallest, offsets aligned to it (fio's default blockalign)."""
    return (
        len(set(sizes)) > 1
        and random_pct == 100
        and distribution == "random"
        and align == min(sizes)
        and all(s % align == 0 for s in sizes)
        and not ctx.flag("norandommap", False)
    )


def _verify_options(ctx: _Ctx, params: dict, notes: list) -> None:
    """verify_backlog (and _batch), verify_fatal, verify_write_sequence and verify_async beside a verify method."""
    backlog = ctx.int("verify_backlog", 0, 0, 1 << 20)
    batch = ctx.int("verify_backlog_batch", 0, 0, 1 << 20)
    if batch and not backlog:
        ctx.fail(
            ctx.job.get("verify_backlog_batch"),
            "has no effect without verify_backlog: add verify_backlog=N, or remove it",
        )
    if backlog:
        params["verify_backlog"], params["verify_backlog_batch"] = backlog, batch
        notes.append(
            f"verify_backlog={backlog}: each thread reads back and checks its oldest written requests "
            f"whenever {backlog} wait, {batch or backlog} at a time, during the run (as fio does: counted as "
            "the job's reads), and those left once its writes are done"
        )
    if ctx.flag("verify_dump", False):
        params["verify_dump"] = True
        notes.append(
            "verify_dump=1: the first 16 corrupt blocks each thread reads are written as "
            "<file>.<offset>.received and .expected beside the job's file (fio: in its working directory)"
        )
    if ctx.flag("verify_fatal", False):
        params["verify_fatal"] = True
        notes.append("verify_fatal=1: a thread stops at its first corrupt block, as fio's job does")
    if not ctx.flag("verify_write_sequence", True):
        params["verify_write_sequence"] = False
        notes.append(
            "verify_write_sequence=0: write numbers are not compared (a block is checked for its own "
            "header and checksum only), as fio then skips its sequence number"
        )
    if ctx.int("numjobs", 1, 1, 4096) > 1 and not params.get("thread_files"):
        notes.append(
            "verify with clones sharing files: fio warns that they may overwrite each other's blocks and "
            "its check then fails (a block holds another clone's seed) and stops the clone; fsmeter checks "
            "such a block for its own header and checksum, so it reads every write back and reports no "
            "corruption for them"
        )
    if ctx.job.get("verify_async") is not None and ctx.int("verify_async", 0, 0, 1 << 16):
        notes.append(
            f"{ctx.job.get('verify_async').as_written}: fio checks completed reads in helper threads; "
            "fsmeter checks them in the thread that read them, inside the read's measured time: the same "
            "I/Os"
        )


def _verify_readback(ctx: _Ctx, params: dict, notes: list, per_job: int, time_based: bool, loops: int) -> None:
    """fio reads back what a job wrote once its writes are done (after each loop, and with time_based after each
    size= of I/O): each thread here reads back its own written requests in the run, counted as its reads, through
    the verify_backlog machinery with N = the writes of one pass; the verify phase of the whole files is dropped."""
    if not params.get("verify") or not any(e["read_pct"] < 100 for e in params["entries"]):
        return
    sizes = [e["size"] for e in params["entries"] if e["read_pct"] < 100]
    writes_only = all(e["read_pct"] == 0 for e in params["entries"])
    params["verify_phase"] = False
    if params.get("verify_backlog"):
        return
    pass_writes = -(-per_job // min(sizes))
    # Each thread keeps up to this many written requests (24 bytes each): about 100 MiB for the whole job.
    cap = min(1 << 20, max(1 << 12, (1 << 22) // ctx.int("numjobs", 1, 1, 4096)))
    if pass_writes > cap:
        pass_writes = cap
        notes.append(
            f"verify: more than {cap} writes per thread to read back: fsmeter reads back every {cap} "
            "writes instead of after all of them (the same reads, earlier)"
        )
    elif (time_based or loops > 1) and not writes_only:
        notes.append(
            "verify with a read/write mix: fio reads back after each pass of size= bytes; fsmeter after as "
            "many writes as a pass could hold (the same reads, at other moments)"
        )
    params["verify_backlog"] = pass_writes
    notes.append(
        "verify: as fio, each thread reads back every request it wrote once its writes are done"
        + (" (after each pass)" if time_based or loops > 1 else "")
        + ", as reads of the job; no separate verify phase"
    )


def map_jobfile(path: Path, target: Path | None = None, dir_given: bool = True) -> list:
    """Every job of a job file, in order, with its stonewall group: a job with stonewall (or
    wait_for_previous) starts a new group, the others run at the same time as the job before them.
    `target` and `dir_given` as for map_job."""
    jf = read_jobfile(path)
    where = str(path)
    out: list = []
    group = -1
    names: set = set()
    thread_no = 1
    report_group, exitall = 0, False
    fill_outputs: dict = {}  # (directory, file name) -> (fill_device job, size, known?, group)
    for i, job in enumerate(jf.jobs):
        wait = job.get("stonewall") or job.get("wait_for_previous")
        stonewall = wait is not None and _wait_flag(where, wait)
        if i == 0 or stonewall:
            group += 1
        new = job.get("new_group")
        if i > 0 and (stonewall or (new is not None and _wait_flag(where, new))):
            report_group += 1  # fio's groupid: a new one at each stonewall or new_group
        m = map_job(where, job, group, target, dir_given, {k: v for k, v in fill_outputs.items() if v[3] < group})
        if m.fill:
            for n in m.params["file_names"]:
                fill_outputs[(str(m.dir), n)] = (m.name, m.params["file_size"], False, group)
        if m.name in names:
            raise UserError(f"{where} line {job.line}: a second job named {m.name}: give each job its own name")
        names.add(m.name)
        m.logs = [(k, f.replace("{n}", str(thread_no))) for k, f in m.logs]  # fio numbers logs by thread, from 1
        if "io_log" in m.params:
            m.params["io_log"]["paths"] = [f.replace("{n}", str(thread_no)) for f in m.params["io_log"]["paths"]]
        thread_no += int(m.settings["threads"])
        m.report_group = report_group
        ea = job.get("exitall")
        exitall = exitall or (ea is not None and _wait_flag(where, ea))
        _wait_for(where, job, m, out)
        out.append(m)
    _content_threads(out, thread_no - 1)
    _check_exit_on_io_done(where, out)
    _check_latency_alone(where, out)
    for m in out:
        if not exitall:
            m.exit_what = "none"  # fio: exit_what only acts with exitall (set by any job, for every job)
        elif m.exit_what == "all":
            m.notes.append(
                "exitall with exit_what=all: when one of its threads ends, every job stops, and the "
                "groups after this one do not run"
            )
    return out


def _content_threads(jobs: list, total: int) -> None:
    """fio numbers every thread of the file; dedupe_global's working set rotates over all of them, each entry the
    bytes of that thread's stream. Each job's content gets its first thread's number and the count, and the jobs
    sharing a working set one seed (the first such job's), so that their streams are the same everywhere."""
    base, shared = 0, None
    for m in jobs:
        c = m.params.get("content")
        if c is not None:
            c["thread_base"], c["threads_total"] = base, total
            if c.get("global"):
                shared = m.settings["seed"] if shared is None else shared
                c["seed"] = shared
        base += int(m.settings["threads"])
    if shared is not None:
        for m in jobs:  # the streams the working sets name are those of every job's threads
            if m.params.get("content") is not None:
                m.params["content"]["seed"] = shared


def _wait_for(where: str, job, m: MappedJob, before: list) -> None:
    """fio's wait_for=NAME: the job starts once every clone of the earlier job NAME is done. In the same stonewall
    group that is the engine's wait; a job of an earlier group is done before this group starts anyway."""
    opt = job.get("wait_for")
    if opt is None:
        return
    name = (opt.value or "").strip()
    waitee = [b for b in before if b.name == name]
    if not waitee:
        raise UserError(
            f"{where} line {opt.line}: wait_for={name}: no job named {name} before this one (fio, too, "
            "waits only for a job defined earlier in the file): name an earlier job"
        )
    if waitee[0].group == m.group:
        m.wait_for = name
        if m.start_delay_s:
            m.notes.append(
                f"wait_for={name} with startdelay: the job starts when {name} is done, and not before its start delay"
            )
    else:
        m.notes.append(
            f"wait_for={name}: {name} runs in an earlier group (a stonewall between them), so it is done "
            "before this job starts"
        )


def _wait_flag(where: str, opt) -> bool:
    try:
        return parse_fio_bool(opt.value)
    except ValueError as exc:
        raise UserError(f"{where} line {opt.line}: {opt.name}={opt.value or ''}: {exc}") from None


def group_jobs(jobs: list, taken: set) -> list:
    """MappedJobs in file order -> one item per stonewall group: the MappedJob itself when it is alone,
    else a MappedGroup named group<N> (group<N>_ while a job has that name)."""
    out: list = []
    for m in jobs:
        if out and out[-1][0].group == m.group:
            out[-1].append(m)
        else:
            out.append([m])
    items = []
    for ms in out:
        # A job alone in its group is an access workload, unless exitall makes the end of one of its clones stop
        # the others (fio: the same reporting group), which only a group's harness does.
        if len(ms) == 1 and not (ms[0].exit_what != "none" and int(ms[0].settings["threads"]) > 1):
            m = ms[0]
            if m.start_delay_s:
                m.notes.append(
                    f"startdelay: fio starts the job {m.start_delay_s:g} s late; nothing runs beside it (a "
                    "group of its own), so fsmeter starts it at once: the same work"
                )
            items.append(m)
            continue
        name = f"group{ms[0].group}"
        while name in taken:
            name += "_"
        items.append(
            MappedGroup(
                name=name,
                line=ms[0].line,
                group=ms[0].group,
                jobs=ms,
                group_reporting=any(m.group_reporting for m in ms),
            )
        )
    return items


def split_ref(ref: str) -> tuple:
    """'dir/jobs.fio' -> (path, None); 'dir/jobs.fio:seq-read' -> (path, 'seq-read')."""
    m = re.match(r"^(.*\.fio)(?::([^/]+))?$", ref)
    if not m:
        raise UserError(f"{ref}: not a fio job file reference: write path/to/file.fio or path/to/file.fio:jobname")
    return Path(m.group(1)), m.group(2)


def is_fio_ref(ref: str) -> bool:
    return bool(re.match(r"^.*\.fio(:[^/]+)?$", str(ref)))


def fio_workloads(ref: str, target: Path | None = None, dir_given: bool = True) -> list:
    """(WorkloadDef, MappedJob or MappedGroup) per stonewall group of the file (or the one job named after
    ':', alone), in run order: a group of concurrent jobs is one access_group workload."""
    path, only = split_ref(ref)
    if not path.is_file():
        raise UserError(f"{path}: no such fio job file")
    jobs = map_jobfile(path, target, dir_given)
    if only is not None:
        jobs = [j for j in jobs if j.name == only]
        if not jobs:
            raise UserError(f"{path}: no job named {only}: the jobs are {', '.join(j.name for j in map_jobfile(path))}")
    out = []
    io_jobs = [j for j in jobs if j.params.get("fio_engine") != "exec"]
    for item in _split_execs(jobs, group_jobs(io_jobs, {j.name for j in jobs}), path):
        if isinstance(item, fio_exec.ExecGroup):
            if not dir_given and item.dir is None:
                raise UserError(
                    f"{path} line {item.line}: job {item.execs[0].name}: ioengine=exec runs its program "
                    "in the job's directory, and this one names none: give --dir D or an absolute "
                    "directory="
                )
            out.append((None, item))
            continue
        if not dir_given and item.dir is None:  # only jobs without files (cpuio) get here without a directory
            raise UserError(
                f"{path} line {item.line}: job {item.jobs[0].name if isinstance(item, MappedGroup) else item.name}"
                ": ioengine=cpuio works on no files, but fsmeter runs every job in a directory (the run "
                "records its filesystem): give --dir D"
            )
        if isinstance(item, MappedGroup):
            for j in item.jobs:
                if j.dir != item.dir and not _no_files(j):
                    first = next(f for f in item.jobs if not _no_files(f))
                    raise UserError(
                        f"{path} line {j.line}: job {j.name} runs in {j.dir or 'the --dir folder'} but "
                        f"job {first.name} of its group, at the same time, in "
                        f"{first.dir or 'the --dir folder'}: fsmeter runs the jobs of one group in "
                        "one directory (planned): give them one directory=, or put stonewall between them"
                    )
            d = group_def(path, item)
        else:
            d = access_def(path, item)
        out.append((d, item))
    return out


def group_def(path: Path, item: MappedGroup):
    """A group of concurrent fio jobs as one access_group WorkloadDef."""
    from fsmeter.families import FAMILIES, WorkloadDef

    params = {
        "jobs": [
            {
                "name": j.name,
                **{k: j.settings[k] for k in ("threads", "seed", "backend")},
                "params": dict(j.params),
                **j.group_entry(),
            }
            for j in item.jobs
        ]
    }
    return WorkloadDef(
        name=f"{path.name}:{item.name}",
        family=FAMILIES["access_group"],
        description=f"fio jobs {', '.join(j.name for j in item.jobs)} of {path} (line "
        f"{item.line}), run at the same time",
        params=params,
        settings={"threads": sum(j.settings["threads"] for j in item.jobs)},
        source=path,
    )


def access_def(path: Path, m: MappedJob):
    """One fio job as an access WorkloadDef."""
    from fsmeter.families import FAMILIES, WorkloadDef

    return WorkloadDef(
        name=f"{path.name}:{m.name}",
        family=FAMILIES["access"],
        description=f"fio job {m.name} of {path} (line {m.line}, rw={m.fio_rw})",
        params=dict(m.params),
        settings=dict(m.settings),
        source=path,
    )


def load_fio_workload(ref: str):
    """One job (or one group of concurrent jobs) of a fio job file as a WorkloadDef (campaigns: a file with
    several groups needs :jobname)."""
    pairs = fio_workloads(ref)
    if len(pairs) > 1:
        path, _ = split_ref(ref)
        names = ", ".join(j.name for _, j in pairs)
        raise UserError(
            f"{path} has {len(pairs)} jobs or groups of concurrent jobs ({names}): name one job as "
            f"{path}:JOBNAME (or run them all with fsmeter run {path})"
        )
    campaign_ready(ref, pairs[0][1])
    return pairs[0][0]


# -- the mmap, libpmem, cpuio, libblkio and exec engines ---------------------------------------------------------

#: fio's options that change nothing with these engines (the note is _engine_setup's).
_BATCH_OPTS = (
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_batch_complete",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
)


def _engine_accepts(name: str, engine: str) -> bool:
    """A planned option that changes nothing with this engine: batching with a synchronous engine (one I/O at a
    time, nothing to batch), sync with the mapping engines (see _engine_setup)."""
    return (name in _BATCH_OPTS and engine in SYNC_ENGINES) or (name == "sync" and engine in ("mmap", "libpmem"))


def _sync_mode(ctx: _Ctx) -> str | None:
    """fio's sync=: none (0), sync (1) or dsync; None when not set."""
    opt = ctx.job.get("sync")
    if opt is None:
        return None
    v = (opt.value if opt.value is not None else "1").strip().lower()
    modes = {
        "0": "none",
        "none": "none",
        "false": "none",
        "1": "sync",
        "sync": "sync",
        "true": "sync",
        "dsync": "dsync",
    }
    if v not in modes:
        ctx.fail(opt, "use 0, 1, none, sync or dsync")
    return modes[v]


def _engine_setup(ctx: _Ctx, engine: str, params: dict, notes: list) -> None:
    """What the mmap and libpmem engines make of direct=, sync= and fio's batching options, as fio does."""
    for name in _BATCH_OPTS:
        opt = ctx.job.get(name)
        if opt is not None and engine in SYNC_ENGINES:
            notes.append(
                f"{opt.as_written}: ioengine={engine} does one I/O at a time, so there is nothing to batch (fio's too)"
            )
    sync = _sync_mode(ctx)
    if engine == "mmap" and sync not in (None, "none"):
        notes.append(
            f"{ctx.job.get('sync').as_written}: fio opens the files O_SYNC, which stores to a mapping do "
            "not go through: nothing changes for ioengine=mmap, in fio or fsmeter (fsync= is what msyncs)"
        )
    if engine != "libpmem":
        return
    if params.get("direct"):
        notes.append(
            "direct=1 with ioengine=libpmem: fio copies with non-temporal stores (PMEM_F_MEM_NONTEMPORAL); "
            "fsmeter copies with memcpy and makes each write durable as above, without O_DIRECT"
        )
        params["direct"] = False
    if sync in (None, "none"):
        notes.append(
            "libpmem without sync=1: fio flushes each write but does not wait for it to drain; fsmeter "
            "makes each write durable before it completes, as fio's sync=1 does"
        )
    else:
        notes.append(
            f"{ctx.job.get('sync').as_written}: each write is durable before it completes (fio: "
            "pmem_drain after each write), as fsmeter's libpmem does for every write"
        )


def _libblkio_job(ctx: _Ctx, notes: list) -> FioJob:
    """ioengine=libblkio: with libblkio_driver=io_uring, the job's file is libblkio_path (fio gives libblkio that
    path and ignores filename= and directory=); other drivers reach a device past any filesystem and are refused."""
    job = ctx.job
    drv = job.get("libblkio_driver")
    driver = (drv.value or "").strip() if drv is not None else ""
    if not driver:
        eng = job.get("ioengine")
        raise UserError(
            f"{ctx.where} line {eng.line}: {eng.as_written}: needs libblkio_driver= (fio refuses the job "
            "without it): add libblkio_driver=io_uring and libblkio_path=FILE"
        )
    if driver != "io_uring":
        ctx.fail(
            drv,
            f"the libblkio driver {driver} reaches a device past any filesystem (vfio, vhost-user, "
            "virtio-blk or NVMe pass-through): fsmeter measures filesystems and runs only "
            "libblkio_driver=io_uring, on a file (not planned); run this job with fio",
        )
    path = job.get("libblkio_path")
    if path is None or not (path.value or "").strip():
        raise UserError(
            f"{ctx.where} line {(path or drv).line}: libblkio_driver=io_uring needs libblkio_path= (the "
            "file to read and write): add libblkio_path=FILE"
        )
    for name in ("filename", "directory", "filename_format", "nrfiles", "nr_files"):
        if job.get(name) is not None:
            notes.append(
                f"{job.get(name).as_written}: fio's libblkio engine works on libblkio_path only and ignores "
                "it, and so does fsmeter"
            )
    options = {
        k: v
        for k, v in job.options.items()
        if k not in ("filename", "directory", "filename_format", "nrfiles", "nr_files")
    }
    value = (path.value or "").strip().replace(":", "\\:")  # one name: a colon in it is not a separator
    options["filename"] = FioOption("filename", value, path.line, path.written)
    return FioJob(section=job.section, line=job.line, options=options)


def _no_files(m: MappedJob) -> bool:
    """A job that works on no files (cpuio)."""
    return m.params.get("fio_engine") in ("cpuio", "exec")


#: The options a cpuio job uses (the others of SUPPORTED describe I/O it does not do).
_CPUIO_OPTS = {
    "name",
    "description",
    "ioengine",
    "cpuload",
    "cpuchunks",
    "cpumode",
    "exit_on_io_done",
    "numjobs",
    "runtime",
    "timeout",
    "time_based",
    "ramp_time",
    "startdelay",
    "exit_what",
    "exitall",
    "group_reporting",
    "stonewall",
    "wait_for_previous",
    "wait_for",
    "thread",
    "threads",
    "cpus_allowed",
    "cpumask",
    "cpus_allowed_policy",
    "numa_cpu_nodes",
    "numa_mem_policy",
    "kb_base",
}


def _exec_job(ctx: _Ctx, group: int, target: Path | None) -> MappedJob:
    """ioengine=exec (with --allow-exec): a job that runs a program beside its group (fio_exec); it has no engine
    job, its spec rides in params["exec"] until fio_workloads takes it out of the group."""
    spec = fio_exec.exec_spec(ctx.where, ctx.job, group, 0.0, False, check_only=True)  # refused without the flag
    # The job's other options as any job's: one a fio job cannot have, or fsmeter refuses, is told in one line.
    check_options(
        ctx.where,
        FioJob(
            section=ctx.job.section,
            line=ctx.job.line,
            options={
                k: v
                for k, v in ctx.job.options.items()
                if k not in ("ioengine", "program", "arguments", "grace_time", "std_redirect")
            },
        ),
    )
    key = "runtime" if ctx.job.get("runtime") is not None else "timeout"
    runtime = ctx.time_s(key)
    if runtime and runtime > MAX_DURATION_S:  # a timer that long overflows (and no run lasts it)
        ctx.fail(
            ctx.job.get(key),
            f"longer than fsmeter's limit of {MAX_DURATION_S:.0f} s (about 116 days): give a shorter runtime",
        )
    spec = fio_exec.exec_spec(ctx.where, ctx.job, group, runtime or 0.0, ctx.flag("time_based", False))
    d = ctx.job.get("directory")
    if target is None and d is not None and (d.value or "").startswith("/"):
        spec.dir = Path(re.split(r"(?<!\\):", (d.value or "").strip())[0])  # fio's first directory
    return MappedJob(
        name=ctx.job.name,
        line=ctx.job.line,
        group=group,
        params={"fio_engine": "exec", "exec": spec},
        settings={"threads": 1, "seed": 0, "backend": "psync"},
        notes=spec.notes,
        fio_job=ctx.job,
    )


def _split_execs(jobs: list, items: list, path: Path) -> list:
    """The items of the file with its exec jobs attached to their group's item (`execs`), or an ExecGroup for a
    group of exec jobs only, in file order."""
    execs = [j.params["exec"] for j in jobs if j.params.get("fio_engine") == "exec"]
    if execs and len(execs) == len(jobs):
        raise UserError(
            f"{path} line {execs[0].line}: every job of the file is ioengine=exec: fsmeter measures "
            "filesystems, and these jobs do no I/O: add a job to measure, or run the programs yourself"
        )
    for item in items:
        item.execs = [e for e in execs if e.group == item.group]
    alone = {}
    for e in execs:
        if not any(item.group == e.group for item in items):
            alone.setdefault(e.group, []).append(e)
    for g, es in alone.items():
        items.append(fio_exec.ExecGroup(name=f"group{g}", line=es[0].line, group=g, execs=es, dir=es[0].dir))
    return sorted(items, key=lambda it: it.group)


def _cpuio_job(ctx: _Ctx, group: int, notes: list) -> MappedJob:
    """ioengine=cpuio: no I/O and no files; each clone burns cpuload percent of one CPU for the runtime, in bursts
    of cpuchunks microseconds of spinning (cpumode=noop) or a round of sorts (qsort), each followed by a sleep, as
    fio's engine does (the engine's fio_engine=cpuio)."""
    job, name = ctx.job, ctx.job.name
    load_opt = job.get("cpuload")
    if load_opt is None:
        raise UserError(
            f"{ctx.where} line {job.line}: job {name}: ioengine=cpuio needs cpuload= (the percent of one "
            "CPU to burn; fio refuses the job without it): add cpuload=N"
        )
    load = ctx.int("cpuload", 0, 0)
    if load == 0:
        ctx.fail(load_opt, "give the percent of one CPU to burn, 1 to 100 (fio refuses 0)")
    if load > 100:
        notes.append(f"{load_opt.as_written}: fio caps it at 100, and so does fsmeter")
        load = 100
    chunk = ctx.int("cpuchunks", 50_000, 1, 3_600_000_000)
    mode_opt = job.get("cpumode")
    mode = (mode_opt.value or "").strip() if mode_opt is not None else "noop"
    if mode not in ("noop", "qsort"):
        ctx.fail(mode_opt, "use noop or qsort")
    if mode == "qsort" and job.get("cpuchunks") is not None:
        notes.append(
            f"{job.get('cpuchunks').as_written} with cpumode=qsort: a burst is one round of sorts, however "
            "long it takes (fio sets the chunk to it too)"
        )
    runtime = ctx.time_s("runtime") if job.get("runtime") is not None else ctx.time_s("timeout")
    if not runtime or not ctx.flag("time_based", False):
        raise UserError(
            f"{ctx.where} line {job.line}: job {name}: ioengine=cpuio burns CPU for the job's runtime: "
            "give runtime= and time_based"
        )
    numjobs = ctx.int("numjobs", 1, 1, 4096)
    params = {
        "entries": [{"size": 4096, "weight": 100.0, "read_pct": 100.0, "random_pct": 0.0}],
        "file_size": 4096,
        "alignment": 4096,
        "fio_engine": "cpuio",
        "cpu_load": load,
        "cpu_chunk_us": chunk,
        "cpu_mode": mode,
        "cpu_exit_on_io_done": ctx.flag("exit_on_io_done"),
        "duration_s": runtime,
        "warmup_s": ctx.time_s("ramp_time") or 0.0,
        "total_bytes": None,
    }
    pinning = _place(ctx, notes)
    if pinning:
        params["place"] = pinning
    idle = [
        o.as_written
        for o in sorted(job.options.values(), key=lambda o: o.line)
        if o.name in SUPPORTED and o.name not in _CPUIO_OPTS
    ]
    if idle:
        notes.append(f"ioengine=cpuio does no I/O: {', '.join(idle)} change nothing for it (in fio too)")
    burst = f"{chunk} us of spinning" if mode == "noop" else "a round of sorts of 256 Ki integers"
    notes.append(
        f"ioengine=cpuio: no I/O; each of the job's {numjobs} thread(s) burns {load}% of one CPU: {burst}, "
        f"then a sleep {100 - load}/{load} as long, for {runtime:g} s, as fio's engine does; the run reports "
        "the share of the time spent in bursts and the CPU each thread got (extra.cpuio)"
    )
    delay = job.get("startdelay")
    start_delay = 0.0
    if delay is not None:
        if "-" in (delay.value or "") or ":" in (delay.value or ""):
            ctx.fail(delay, "a random start delay (a range) is not supported by fsmeter (planned): give one time")
        start_delay = ctx.time_s("startdelay") or 0.0
    exit_what = "group"
    ew = job.get("exit_what")
    if ew is not None:
        exit_what = (ew.value or "").strip()
        if exit_what not in ("group", "stonewall", "all"):
            ctx.fail(ew, "use group, stonewall or all")
    for key in ("write_bw_log", "write_iops_log", "write_lat_log"):
        if job.get(key) is not None:
            ctx.fail(job.get(key), "ioengine=cpuio does no I/O, so there is nothing to log: remove it")
    return MappedJob(
        name=name,
        line=job.line,
        group=group,
        params=params,
        settings={"threads": numjobs, "seed": 42, "backend": "psync"},
        notes=notes,
        fio_rw="cpuio",
        sources=_sources(job),
        group_reporting=ctx.flag("group_reporting"),
        start_delay_s=start_delay,
        exit_what=exit_what,
    )


def _check_exit_on_io_done(where: str, jobs: list) -> None:
    """fsmeter stops a cpuio job with exit_on_io_done when the I/O jobs of its group are done: it needs some."""
    for m in jobs:
        if m.params.get("cpu_exit_on_io_done") and not any(o.group == m.group and not _no_files(o) for o in jobs):
            raise UserError(
                f"{where} line {m.line}: job {m.name}: exit_on_io_done with no I/O job running beside it "
                "(fsmeter stops it when the I/O jobs of its group are done): put it in the group of the "
                "I/O jobs it is to run beside (no stonewall between them), or remove exit_on_io_done"
            )


def _check_latency_alone(where: str, jobs: list) -> None:
    """A latency_target job runs alone in its group: its final window resets the statistics of its phase."""
    for m in jobs:
        if m.params.get("latency_target") and any(o is not m and o.group == m.group for o in jobs):
            raise UserError(
                f"{where} line {m.line}: job {m.name}: latency_target in a job that runs at the same time "
                "as others is not supported by fsmeter (planned): its final window resets the statistics "
                "of the phase; put stonewall (or new_group) between it and the jobs beside it"
            )


def campaign_ready(ref: str, item) -> None:
    """A campaign runs each group of a job file as a workload of its own, on fresh filesystems: a job sized by what
    a fill_device job of an earlier group wrote cannot be (fsmeter run runs the groups in turn)."""
    for j in item.jobs if isinstance(item, MappedGroup) else [item]:
        if j.after_fill:
            raise UserError(
                f"{split_ref(ref)[0]} line {j.line}: job {j.name} takes its size from what the "
                f"fill_device job {j.after_fill} writes, which only fsmeter run {split_ref(ref)[0]} runs "
                "before it: give it size= to use it in a campaign"
            )
