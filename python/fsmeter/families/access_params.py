"""The access family's parts: the parameter models AccessParams is made of (a request-mix entry, faults,
errors to go on after, pacing, steady state, latency target, priorities, the per-I/O log, sprandom, placement,
contents, thread regions), and the syntax of its values (random distributions, zones, sequences, buffer
patterns, verify header sizes), which fio job files share."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fsmeter.units import Size


class AccessEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    size: Size = Field(gt=0, description="request size in bytes (4K = 4096)")
    weight: float = Field(ge=0, description="share of requests, percent")
    read_pct: float = Field(ge=0, le=100)
    random_pct: float = Field(100.0, ge=0, le=100)
    trim_pct: float = Field(
        0.0,
        ge=0,
        le=100,
        description="share of requests that are trims (a hole punched over "
        "the request's range), percent; read_pct + trim_pct <= 100, the rest are writes",
    )


#: Bytes of the block header the engine writes for a checksum (crates/engine/src/verify/header.rs): 80 (version 1)
#: for every digest of up to 32 bytes, a version-2 header sized to the digest for the longer ones.
_VERIFY_HEADER_LONG = {"sha3_384": 96, "sha512": 112, "sha3_512": 112}


def verify_header_len(algo: str) -> int:
    """Bytes of the header in front of each block verified with `algo` (each block needs 8 more)."""
    return _VERIFY_HEADER_LONG.get(algo, 80)


#: fio's random_distribution kinds -> (default parameter, what the parameter is).
_DISTRIBUTIONS = {"zipf": (1.1, "THETA"), "pareto": (0.2, "H"), "normal": (0.0, "DEV%"), "gauss": (0.0, "DEV%")}


def check_distribution(text: str) -> str:
    """fio's random_distribution (random, zipf:THETA[:CENTER], pareto:H[:CENTER], normal:DEV%[:CENTER], gauss as
    normal, zoned:ACCESS%/SIZE%:..., zoned_abs:ACCESS%/BYTES:..., sequence:B0,B1,...) checked as the engine checks
    it; ValueError says what is allowed. Returns it stripped (zoned_abs sizes in bytes)."""
    text = text.strip()
    kind, *nums = text.split(":")
    if kind == "random" and not nums:
        return text
    if kind in ("zoned", "zoned_abs"):
        return format_zoned(*parse_zoned(text))
    if kind == "sequence":
        parse_sequence(text)
        return text
    if kind not in _DISTRIBUTIONS or len(nums) > 2:
        raise ValueError(
            f"{text!r}: use random, zipf:THETA, pareto:H or normal:DEV% (each with an optional "
            ":CENTER from 0 to 1), zoned:ACCESS%/SIZE%:..., zoned_abs:ACCESS%/SIZE:... or "
            "sequence:B0,B1,..."
        )
    try:
        vals = [float(n) for n in nums]
    except ValueError:
        raise ValueError(f"{text!r}: the parameters are numbers: {kind}:{_DISTRIBUTIONS[kind][1]}[:CENTER]") from None
    value = vals[0] if vals else _DISTRIBUTIONS[kind][0]
    if len(vals) == 2 and not 0 <= vals[1] <= 1:
        raise ValueError(f"{text!r}: the center must be between 0 and 1 (a fraction of the file)")
    if kind == "zipf" and (not value > 0 or value == 1):
        raise ValueError(f"{text!r}: zipf's theta must be > 0 and not 1 (fio's default is 1.1)")
    if kind == "pareto" and not 0 < value < 1:
        raise ValueError(f"{text!r}: pareto's h must be between 0 and 1, both excluded (fio's default is 0.2)")
    if kind in ("normal", "gauss") and not 0 <= value < 100:
        raise ValueError(f"{text!r}: normal's deviation is a percentage of the file, from 0 to below 100")
    return text


def parse_zoned(text: str, size=None) -> tuple:
    """fio's zoned (ACCESS%/SIZE% entries) and zoned_abs (ACCESS%/SIZE) distributions -> (absolute, [zones of
    reads, writes, trims]), each zone [access %, size % or bytes]. As fio: one list serves every direction,
    READS,WRITES gives trims the writes' list; an empty entry ends a list; a zoned size missing (or 0) gets an
    equal share of what the others leave of 100 (whole percents); the access shares of a list add up to 100.
    `size` reads a zoned_abs size (default: whole bytes or a size like 10G). ValueError says what is wrong."""
    text = text.strip()
    kind, sep, body = text.partition(":")
    if kind not in ("zoned", "zoned_abs") or not sep:
        raise ValueError(f"{text!r}: write zoned:ACCESS%/SIZE%:... or zoned_abs:ACCESS%/SIZE:...")
    absolute = kind == "zoned_abs"
    if size is None:
        from fsmeter.units import parse_size as size
    lists = body.split(",")
    if len(lists) > 3:
        raise ValueError(f"{text!r}: at most three lists (reads, writes, trims) separated by ','")
    dirs = []
    for d in range(3):
        zones = []
        for item in lists[min(d, len(lists) - 1)].split(":"):
            item = item.strip()
            if not item:
                break
            a, slash, z = item.partition("/")
            a, z = a.strip(), z.strip()
            if not (a.isascii() and a.isdigit()) or int(a) > 100:
                raise ValueError(f"{text!r}: {a!r} is not a whole percentage (0 to 100) of the accesses")
            if absolute:
                if not z:
                    raise ValueError(f"{text!r}: zoned_abs gives every zone a size: ACCESS%/SIZE")
                try:
                    zsize = int(size(z))
                except (ValueError, TypeError):
                    raise ValueError(f"{text!r}: {z!r} is not a size") from None
            elif z:
                if not (z.isascii() and z.isdigit()):
                    raise ValueError(f"{text!r}: {z!r} is not a whole percentage of the file")
                zsize = min(int(z), 100) or None  # fio reads 0 as not given
            else:
                zsize = None
            zones.append([int(a), zsize])
        if zones:
            access = sum(z[0] for z in zones)
            if access != 100:
                raise ValueError(f"{text!r}: the access percentages of a list add up to {access}, not 100")
            given = sum(z[1] for z in zones if z[1] is not None)
            missing = sum(1 for z in zones if z[1] is None)
            if not absolute and given > 100:
                raise ValueError(f"{text!r}: the size percentages of a list add up to {given}, more than 100")
            for z in zones:
                if z[1] is None:
                    z[1] = (100 - given) // missing
        dirs.append(zones)
    if not any(dirs):
        raise ValueError(f"{text!r}: give at least one zone, ACCESS%/SIZE")
    return absolute, dirs


def format_zoned(absolute: bool, dirs: list) -> str:
    """parse_zoned's result in the engine's form: three lists, sizes in whole percents or bytes."""
    return ("zoned_abs:" if absolute else "zoned:") + ",".join(":".join(f"{a}/{z}" for a, z in d) for d in dirs)


def parse_sequence(text: str) -> list:
    """fio's sequence distribution, sequence:B0,B1,...: the block numbers random requests visit in turn."""
    body = text.strip().partition(":")[2]
    out = []
    for t in body.split(","):
        t = t.strip()
        if not (t.isascii() and t.isdigit()):
            raise ValueError(f"{text.strip()!r}: {t!r} is not a block number (0, 1, 2 ...)")
        out.append(int(t))
    if len(out) > 65536:
        raise ValueError(f"{text.strip()!r}: at most 65536 blocks")
    return out


def parse_buffer_pattern(text: str) -> bytes:
    """fio's buffer_pattern: hex numbers (0xdeadface: those bytes in that order; an odd digit count puts the
    lone digit first), decimal numbers from -2^31 to 2^31-1 (the 32-bit value's bytes, least significant first,
    up to its last non-zero byte; 0 is one zero byte) and double-quoted strings, in any order and combination.
    A decimal number ends where the next 0x begins, as in fio: -120xdeadface is -12 then 0xdeadface, 10x5 is 1
    then 0x5. ValueError says what is wrong."""
    out = bytearray()
    pos = 0
    token = re.compile(r'0[xX](?P<hex>[0-9a-fA-F]+?)(?=0[xX]|[^0-9a-fA-F]|$)|(?P<dec>-?[0-9]+)|"(?P<str>[^"]*)"')
    next_hex = re.compile(r"0[xX]")
    while pos < len(text):
        if text[pos] == "'":
            raise ValueError(
                "a file's contents ('name') are not supported by fsmeter (not planned): write the bytes "
                'as 0x... or "..."'
            )
        # fio reads a decimal number only up to the first 0x after it (its parse_number looks ahead).
        m = token.match(text, pos)
        h = next_hex.search(text, pos) if m is not None and m.group("dec") is not None else None
        if h is not None and h.start() < m.end():
            m = token.match(text, pos, h.start())
        if m is None:
            raise ValueError(
                f"cannot read {text[pos:]!r}: use hex (0xdeadface), a decimal number or a "
                "double-quoted string, one after the other"
            )
        if m.group("hex") is not None:
            digits = m.group("hex")
            out += bytes.fromhex(("0" if len(digits) % 2 else "") + digits)
        elif m.group("dec") is not None:
            v = int(m.group("dec"))
            if not -(1 << 31) <= v < (1 << 31):
                raise ValueError(f"{m.group('dec')}: a decimal number must fit in 32 bits: write it in hex")
            v &= 0xFFFFFFFF
            b = v.to_bytes(4, "little").rstrip(b"\0") or b"\0"
            out += b
        else:
            out += m.group("str").encode()
        pos = m.end()
    if not out:
        raise ValueError("the pattern is empty: give at least one byte")
    if len(out) > 1 << 20:
        raise ValueError(f"{len(out)} bytes: at most 1 MiB")
    return bytes(out)


class FaultParams(BaseModel):
    """Testing verification: make chosen writes fail the way broken storage does (psync only)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    kind: Literal["torn_write", "short_write", "lost_write", "misdirected_write"]
    after: int = Field(0, ge=0, description="writes per thread let through before the first fault")
    count: int = Field(1, ge=1, description="faults per thread")
    keep_bytes: Size = Field(0, ge=0, description="bytes that reach the file (torn and short writes)")


class ContinueOnParams(BaseModel):
    """fio's continue_on_error, ignore_error and error_dump: per class, the errnos after which a thread counts the
    failed request and goes on with its next one (EILSEQ is a verify error, a read's error a read error, every
    other a write error, as in fio)."""

    model_config = ConfigDict(extra="forbid")
    read: list[int] = Field(default_factory=list, description="errnos of failed reads gone on after")
    write: list[int] = Field(default_factory=list, description="errnos of failed writes and trims gone on after")
    verify: list[int] = Field(default_factory=list, description="errnos of verify errors gone on after (EILSEQ)")
    dump: bool = Field(
        False,
        description="keep the details of the failed requests gone on after (up to 16 per thread; fio's error_dump)",
    )


class PaceParams(BaseModel):
    """How fast each thread may issue its requests (fio's rate options and thinktime; engine: access/pace.rs).
    Pairs are [read, write]; 0 is no limit."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    rate_bytes_per_s: tuple[int, int] = Field((0, 0), description="bytes per second per thread (fio rate)")
    rate_iops: tuple[int, int] = Field(
        (0, 0), description="requests per second per thread (fio rate_iops); a byte rate of the same direction wins"
    )
    rate_process: Literal["linear", "poisson"] = Field(
        "linear", description="linear: request k due at its share of the rate; poisson: exponential gaps of mean 1/IOPS"
    )
    rate_min_bytes_per_s: tuple[int, int] = Field(
        (0, 0), description="a thread below this over a rate cycle stops (fio rate_min)"
    )
    rate_min_iops: tuple[int, int] = Field((0, 0), description="the same in requests per second (fio rate_iops_min)")
    rate_cycle_ms: int = Field(1000, ge=1, description="the window of the minimum rates (fio rate_cycle)")
    thinktime_us: int = Field(0, ge=0, description="stall after every thinktime_blocks requests, once they complete")
    thinktime_spin_us: int = Field(0, ge=0, description="the first part of the stall spent spinning")
    thinktime_blocks: int = Field(1, ge=1)
    flow: int = Field(
        0,
        ge=0,
        le=1000,
        description="weight among the jobs of a group sharing flow_id: their "
        "request counts are kept in the ratio of their weights (fio flow); 0: none",
    )
    flow_id: int = Field(0, ge=0)
    flow_sleep_us: int = Field(0, ge=0, description="the stall of a thread ahead of its flow share (fio flow_sleep)")

    @model_validator(mode="after")
    def _check(self):
        for name in ("rate_bytes_per_s", "rate_iops", "rate_min_bytes_per_s", "rate_min_iops"):
            if min(getattr(self, name)) < 0:
                raise ValueError(f"pace.{name}: must be >= 0")
        if self.thinktime_spin_us > self.thinktime_us:
            raise ValueError("pace.thinktime_spin_us: more than thinktime_us")
        return self


class SteadyParams(BaseModel):
    """Stop a job once its rate is steady (fio's steadystate; engine: access/pace.rs, measure::Steady)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    criterion: Literal["iops", "iops_slope", "bw", "bw_slope", "lat", "lat_slope"]
    limit: float = Field(ge=0, description="the criterion's bound (an absolute value, or a % of the mean with pct)")
    pct: bool = False
    dur_s: float = Field(gt=0, description="the rolling window judged")
    ramp_s: float = Field(0.0, ge=0, description="time before the samples are kept")
    interval_s: float = Field(1.0, gt=0, description="one sample per interval")
    group: bool = Field(False, description="judge the threads of the reporting group together (group_reporting)")

    @model_validator(mode="after")
    def _check(self):
        if self.dur_s / self.interval_s < 2:
            raise ValueError("steadystate.dur_s: make it at least twice interval_s (two samples)")
        return self


class LatTargetParams(BaseModel):
    """fio's latency_target, latency_window, latency_percentile and latency_run: the queue depth is searched for,
    up to queue_depth, as fio searches it (engine: access/lattarget.rs; docs/fio.md)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    target_ns: int = Field(gt=0, lt=1 << 63, description="a request's total latency above this is late")
    window_ns: int = Field(0, ge=0, lt=1 << 63, description="how long each depth is tried before it is judged")
    percentile: float = Field(
        100.0, ge=0, le=100, description="the share of a window's requests (%) that must be within the target"
    )
    run: bool = Field(
        False,
        description="keep adjusting the depth until the job's size or runtime ends, instead "
        "of ending the job after a final window at the depth found",
    )


class CmdPrioRule(BaseModel):
    """pct percent of the requests of `size` bytes (0: any size) get the ioprio `ioprio` (engine: access/prio.rs)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    size: int = Field(0, ge=0, lt=1 << 32)
    pct: int = Field(ge=0, le=100)
    ioprio: int = Field(ge=0, le=0xFFFF, description="class << 13 | hint << 3 | level")


class IoprioParams(BaseModel):
    """I/O priorities (fio's prio/prioclass per thread, cmdprio per request on io_uring)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    thread: int = Field(0, ge=0, le=0xFFFF, description="each run thread's ioprio (0: left as it is)")
    cmd: list[list[CmdPrioRule]] = Field(
        default_factory=lambda: [[], []],
        min_length=2,
        max_length=2,
        description="per-request rules for reads, then writes",
    )


class IoLogParams(BaseModel):
    """fio's per-I/O latency log, written by the engine after the run phase (engine: access/iolog.rs)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    paths: list[str] = Field(min_length=1, description="the files to write, each with every line")
    offset: bool = Field(False, description="an offset column (fio's log_offset)")
    prio_hex: bool = Field(False, description="the priority as 16-bit hex (fio's log_prio)")
    max_records: int = Field(1 << 20, ge=1, le=1 << 28, description="requests each thread logs at most")


class IssueLogParams(BaseModel):
    """fio's write_iolog: every request issued, in fio's I/O log version 3, written by the engine after the run
    phase (engine: access/issuelog.rs)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    path: str = Field(min_length=1, description="the log file to write")
    names: list[str] = Field(min_length=1, description="each file's name as the log gives it, in file order")
    max_records: int = Field(1 << 22, ge=1, le=1 << 28, description="requests each thread logs at most")


class ReplayParams(BaseModel):
    """fio's read_iolog: the requests of a log, replayed in order (engine: access/replay.rs)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    ops: list[tuple[int, int, int, int, int]] = Field(
        min_length=1,
        description="the requests: [due_ns, file, action, offset, length], action 0 read, 1 write, 2 trim, 3 sync, "
        "4 datasync; due_ns from the thread's start",
    )
    timed: bool = Field(True, description="each request waits for its time (false: fio's replay_no_stall)")


class SprandomParams(BaseModel):
    """fio's sprandom: SanDisk's preconditioning of a flash device (engine: access/sprandom.rs)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    over_provisioning: float = Field(0.15, gt=0.0, lt=1.0, description="the over-provisioning ratio (fio spr_op)")
    regions: int = Field(100, ge=1, le=1 << 24, description="the regions (fio spr_num_regions)")
    cache_size: int = Field(
        0,
        ge=0,
        description="the device cache in bytes; with one, a region's invalidations "
        "wait until the next region is written (fio spr_cs)",
    )
    logical_size: int = Field(0, ge=0, description="the logical size the plan is made for (0: the file size)")


class MemPolicyParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    mode: Literal["default", "prefer", "bind", "interleave", "local"]
    nodes: list[int] = Field(default_factory=list)


class PlaceParams(BaseModel):
    """Where the run phase's threads run and their buffers' memory comes from (fio's cpus_allowed / cpumask /
    numa_cpu_nodes with cpus_allowed_policy, and numa_mem_policy)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    cpus: list[int] = Field(default_factory=list, description="the CPUs the threads may run on (empty: any)")
    split: bool = Field(False, description="each thread on one CPU of the set, round robin (cpus_allowed_policy=split)")
    mem_policy: MemPolicyParams | None = None


class ContentParams(BaseModel):
    """What writes carry, as fio makes its buffers (engine: backend/content.rs; docs/fio.md)."""

    model_config = ConfigDict(extra="forbid", defer_build=True, populate_by_name=True)
    refill: bool = Field(False, description="new random bytes for every write (fio refill_buffers)")
    scramble: bool = Field(
        False, description="stamp each 512-byte sector of a write with its offset and the time (fio scramble_buffers)"
    )
    zero: bool = Field(False, description="every write all zeros (fio buffer_compress_percentage=100)")
    compress_pct: int = Field(
        0,
        ge=0,
        le=99,
        description="percent of each chunk that is zeros (or buffer_pattern): fio buffer_compress_percentage",
    )
    compress_chunk: int = Field(
        512,
        ge=0,
        le=1 << 30,
        description="bytes per random-then-fixed chunk; 0: the smallest write (fio buffer_compress_chunk)",
    )
    dedupe_pct: int = Field(
        0, ge=0, le=100, description="percent of writes that repeat earlier bytes (fio dedupe_percentage)"
    )
    dedupe_mode: Literal["repeat", "working_set"] = "repeat"
    working_set: int = Field(0, ge=0, le=1 << 32, description="working_set mode: the entries copies are drawn from")
    global_: bool = Field(
        False, alias="global", description="the working set spans every job's threads of the file (fio dedupe_global)"
    )
    seed: int | None = Field(None, ge=0, lt=1 << 64, description="the streams' seed (None: the job's)")
    thread_base: int = Field(0, ge=0, le=1 << 20)
    threads_total: int = Field(0, ge=0, le=1 << 20)

    @model_validator(mode="after")
    def _check(self):
        if self.dedupe_pct and self.dedupe_mode == "working_set" and not self.working_set:
            raise ValueError("content.working_set: give the working set's entries (>= 1) for dedupe_mode=working_set")
        if self.zero and (self.compress_pct or self.dedupe_pct or self.scramble):
            raise ValueError("content.zero: cannot be combined with compress_pct, dedupe_pct or scramble")
        return self

    def engine_dict(self) -> dict:
        d = self.model_dump(by_alias=True)
        return d


class ThreadRegionParams(BaseModel):
    """One thread's own region of the one shared file (fio's offset_increment: clone t from offset + t * increment)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    start: int = Field(ge=0, description="where the thread's region starts, in bytes")
    len: int = Field(gt=0, description="the region's length in bytes: every request of the thread lands inside it")
    bytes: int = Field(0, ge=0, description="the measured bytes the thread does (instead of its share of total_bytes)")
    pass_ios: int = Field(
        0,
        ge=0,
        description="sequential requests per pass: then the walk starts the region again "
        "(fio's next loop); 0: only where a request would not fit before its end",
    )
