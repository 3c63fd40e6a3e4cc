"""What a fio job becomes: a MappedJob (access params and settings, with notes on what differs from fio), and a
MappedGroup of the jobs fio runs at the same time; errors about the parameters told in the job file's terms."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from fsmeter.interop.fio_jobfile import FioJob


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
    #: How the log lines are written (log_format): offset and priority columns, average/max/both.
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
        return next((j.dir for j in self.jobs if not no_files(j)), self.jobs[0].dir)

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


def no_files(m: MappedJob) -> bool:
    """A job that works on no files (cpuio)."""
    return m.params.get("fio_engine") in ("cpuio", "exec")


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


def option_sources(job: FioJob) -> dict:
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
