"""The fio options fsmeter knows: those it maps, those it accepts because they change nothing it measures, and
those it refuses (planned or not, and why); the engines it runs. `check_options` refuses every other option of a
job in one line naming it, its line and whether fsmeter will support it (docs/fio.md lists the mapping)."""

from __future__ import annotations

from fsmeter.errors import UserError
from fsmeter.interop import fio_exec
from fsmeter.interop.fio.values import Ctx
from fsmeter.interop.fio_jobfile import FioJob, unset_message

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
    # fio's SanDisk preconditioning (offsets.sprandom).
    "sprandom",
    "spr_op",
    "spr_num_regions",
    "spr_cs",
    # fio's verification options (content.buffer_pattern_and_verify, content.verify_readback).
    "verify_backlog",
    "verify_backlog_batch",
    "verify_fatal",
    "verify_write_sequence",
    "verify_async",
    "verify_dump",
    # How fast and how long (pacing.pace, job.map_job, load.map_jobfile).
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
    # What writes carry, and untorn writes (content.write_contents, content.atomic).
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
    # The mmap, libpmem, cpuio and libblkio engines (engines.engine_setup, engines.cpuio_job).
    "cpuload",
    "cpuchunks",
    "cpumode",
    "exit_on_io_done",
    "libblkio_driver",
    "libblkio_path",
    # fio's logs (logs.job_logs, logs.log_format) and its untimed requests (logs.gtod_reduce).
    "write_lat_log",
    "gtod_reduce",
    "log_offset",
    "log_max_value",
    "log_window_value",
    "log_prio",
    # I/O priorities (pacing.ioprio).
    "prio",
    "prioclass",
    "priohint",
    "cmdprio_percentage",
    "cmdprio_class",
    "cmdprio",
    "cmdprio_hint",
    "cmdprio_bssplit",
    # Errors and filling (on_error.on_error, files.fill_sizes, files.fallocate).
    "continue_on_error",
    "ignore_error",
    "error_dump",
    "fill_device",
    "fill_fs",
    "fallocate",
    # Durable writes (syncs.write_syncs), batching and serialize_overlap (engines.engine_setup).
    "sync",
    "fdatasync",
    "sync_file_range",
    "fsync_on_close",
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_batch_complete",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "iodepth_low",
    "serialize_overlap",
    # fio's I/O log (iolog.write_iolog) and its replay (replay.py, IOLOG_OPTS).
    "write_iolog",
    # fio's verify without its log of written blocks (content.verify_readback says what it changes).
    "experimental_verify",
    # The search for a queue depth within a latency target (pacing.latency_target).
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
    "clocksource": "fio's clock for its own timing (gettimeofday, clock_gettime or the CPU's counter); fsmeter "
    "always times with clock_gettime(CLOCK_MONOTONIC): the same I/Os",
    "unit_base": "fio then prints bandwidth in bits (8) or bytes (1); fsmeter reports bytes, always",
    "overwrite": "fio then lays the files out before the job writes them, as fsmeter does for every job: the same "
    "I/Os, over files already written",
    "exitall_on_error": "fio then stops the other jobs when this one fails; in fsmeter an error in any job stops "
    "every job and fails the run, always",
}


_ACCEPTED_VALUES = {
    "io_submit_mode": ("inline", "offload"),
    "clocksource": ("gettimeofday", "clock_gettime", "cpu"),
    "unit_base": ("0", "1", "8"),
}


#: Options fsmeter means to support later (the error says "planned"); any other is "not planned".
PLANNED = {
    "file_service_type",
    "zipf",
    "pareto",
    "norandommap_percentage",
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
    "merge_blktrace_file": "it merges blktrace traces of a block device; fsmeter replays fio's text I/O logs",
    "merge_blktrace_scalars": "it merges blktrace traces of a block device; fsmeter replays fio's text I/O logs",
    "merge_blktrace_iters": "it merges blktrace traces of a block device; fsmeter replays fio's text I/O logs",
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
    "libaio": "libaio",
    "posixaio": "io_uring",
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
NAME_ENGINE_ACCEPTED = {
    "fallocate": "the file and directory engines lay out no data: fio's preallocation has nothing to do",
    "openfiles": "each file is opened (or stat'ed, removed) and closed in turn: at most one is open at a time",
}


ENGINE_NOTES = {
    "sync": "ioengine=sync: fsmeter issues pread/pwrite (fio: lseek + read/write): the same data, one system call "
    "less per I/O",
    "pvsync": "ioengine=pvsync: fsmeter issues pread/pwrite (fio: preadv/pwritev with one vector): the same data",
    "posixaio": "ioengine=posixaio runs on io_uring (fsmeter has no POSIX AIO backend; glibc's "
    "POSIX AIO is a pool of threads doing pread/pwrite): the same requests and queue depth, another kernel "
    "interface",
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


SYNC_ENGINES = {"psync", "sync", "pvsync", "null", "cpp_null", "mmap", "libpmem", "cpuio", *NAME_ENGINES, *CALL_ENGINES}


#: Why fio's other engines are not a local filesystem's work for fsmeter (or not yet), by engine.
ENGINE_WHY = {}


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
        ("splice",),
        "fio's splice engine moves each request through a pipe (splice and vmsplice): a local engine, but "
        "not one fsmeter has (not planned): use ioengine=psync for the same reads and writes",
    ),
    (
        ("page_fault", "solarisaio", "guasi"),
        "fsmeter has no such engine: its requests are pread/pwrite (psync), io_uring, or copies to and from a "
        "mapping (mmap) (not planned)",
    ),
):
    for _n in _names:
        ENGINE_WHY[_n] = _why


#: fio's replay of an I/O log (replay.py): read_iolog and the options that only act with it.
IOLOG_OPTS = (
    "read_iolog",
    "read_iolog_chunked",
    "replay_align",
    "replay_no_stall",
    "replay_redirect",
    "replay_scale",
    "replay_skip",
    "replay_time_scale",
)
SUPPORTED |= set(IOLOG_OPTS)

#: fio's options that change nothing with these engines (the note is engines.engine_setup's).
BATCH_OPTS = (
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_batch_complete",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
)


def _engine_accepts(name: str, engine: str) -> bool:
    """A planned option that changes nothing with this engine: batching with a synchronous engine (one I/O at a
    time, nothing to batch), sync with the mapping engines (see engines.engine_setup)."""
    return (name in BATCH_OPTS and engine in SYNC_ENGINES) or (name == "sync" and engine in ("mmap", "libpmem"))


def check_options(where: str, job: FioJob) -> None:
    """Every option of the job is one fsmeter maps, accepts or refuses (one line each). An engine fsmeter does
    not have is named first: the options that come with it (port=, cmd_type=, ...) say less."""
    eng = job.get("ioengine")
    if eng is not None and eng.unset is None and (eng.value or "").strip() not in ENGINES:
        engine = (eng.value or "").strip()
        raise UserError(
            f"{where} line {eng.line}: {eng.as_written}: ioengine {engine} is not supported: "
            f"{ENGINE_WHY.get(engine, 'not planned')}; fsmeter runs {', '.join(ENGINES)}"
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
        if opt.name in NAME_ENGINE_ACCEPTED and engine in NAME_ENGINES:
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


def accepted_notes(ctx: Ctx, notes: list) -> None:
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
            if v == allowed[0] and key == "io_submit_mode":
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
