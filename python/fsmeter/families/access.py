"""The access family (pgmeter / Iometer / fio class): a weighted size/read/random mix."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from fsmeter.errors import UserError
from fsmeter.families import (
    Family,
    Metric,
    Phase,
    bytes_series,
    kind_series,
    op_latency_metric,
    ops_series,
    total_metric,
)
from fsmeter.families.access_params import (
    AccessEntry,
    ContentParams,
    ContinueOnParams,
    FaultParams,
    IoLogParams,
    IoprioParams,
    IssueLogParams,
    LatTargetParams,
    PaceParams,
    PlaceParams,
    ReplayParams,
    SprandomParams,
    SteadyParams,
    ThreadRegionParams,
    check_distribution,
    parse_buffer_pattern,
    verify_header_len,
)
from fsmeter.units import Size


class AccessParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    family: Literal["access"] = "access"
    entries: list[AccessEntry] = Field(min_length=1)
    record_size: Size | None = Field(None, description="sets every entry's request size")
    alignment: Size = Field(512, gt=0, description="request offsets are multiples of this")
    file_count: int = Field(1, ge=1)
    file_size: Size = Field(256 << 20, gt=0)
    queue_depth: int = Field(1, ge=1, le=4096, description="requests in flight per thread (io_uring, libaio)")
    direct: bool = Field(False, description="O_DIRECT")
    fsync_every: int = Field(0, ge=0, description="fsync after every N writes (0: never)")
    fsync_end: bool = Field(False, description="fsync every file at the end, inside the measured time")
    fdatasync_every: int = Field(0, ge=0, description="fdatasync after every N writes (0: never; fsync_every wins)")
    sync_range_every: int = Field(
        0, ge=0, description="sync_file_range over the file after every N writes (0: never; fsync/fdatasync win)"
    )
    sync_range_flags: int = Field(0, ge=0, le=7, description="the SYNC_FILE_RANGE_* bits of sync_range_every")
    max_ios: int = Field(0, ge=0, description="each thread stops after this many requests (fio's number_ios; 0: none)")
    reap_min: int = Field(
        0,
        ge=0,
        le=4096,
        description="wait for this many completions before handling any (fio's iodepth_batch_complete_min)",
    )
    open_sync: Literal["none", "sync", "dsync"] = Field(
        "none", description="open the files O_SYNC or O_DSYNC (each write durable when it completes)"
    )
    warmup_s: float = Field(2.0, ge=0)
    duration_s: float | None = Field(10.0, gt=0)
    total_bytes: Size | None = Field(None, gt=0, description="stop after this many measured bytes")
    reuse_files: bool = Field(False, description="keep existing files of the right size instead of rewriting")
    direct_layout: bool = Field(
        False,
        description="prepare writes the files with O_DIRECT, every thread and rank at "
        "once, as IOR's write phase leaves them (concurrent writers' blocks interleave on the "
        "device); default: buffered writes and an fsync, as fio lays files out",
    )
    # Set by fio job files (fsmeter.interop.fio); defaults keep the named workloads as they were.
    file_names: list[str] = Field(default_factory=list, description="file names relative to --dir (fio filename)")
    offset: Size = Field(0, ge=0, description="requests land in [offset, offset + file_size) of each file (fio offset)")
    thread_files: bool = Field(False, description="each thread works on its own file_count/threads files (fio numjobs)")
    random_map: bool = Field(
        False,
        description="random requests visit each block once per pass (fio's random map; "
        "sizes multiples of the smallest, alignment equal to it)",
    )
    random_map_block: Size = Field(
        0,
        ge=0,
        description="fio's random map with per-direction block sizes: one map of "
        "blocks of this size (the alignment), each direction drawing and marking blocks in "
        "units of its own smallest size, the run ending when a draw moves past the file "
        "(fio's stop); every entry reads or writes, all random, one file per thread. 0: off",
    )
    allow_unaligned_direct: bool = Field(
        False,
        description="with direct=true, run requests that are not multiples "
        "of the filesystem's O_DIRECT alignment instead of refusing them (the "
        "kernel may serve them through the page cache; the phase report says so)",
    )
    verify: Literal[
        "off",
        "crc32c",
        "xxh3",
        "sha256",
        "md5",
        "sha1",
        "crc32",
        "crc16",
        "crc7",
        "crc64",
        "sha3_224",
        "sha3_256",
        "sha512",
        "sha3_384",
        "sha3_512",
    ] = Field(
        "off",
        description="data verification (docs/verify.md): every block written carries a header and a checksum, "
        "reads check them, a verify phase re-reads everything; off by default",
    )
    serialize_overlap: bool = Field(
        False,
        description="a request whose bytes overlap one of its thread's requests in flight waits, with the "
        "requests drawn after it, until that one is back (fio's serialize_overlap)",
    )
    verify_backlog: int = Field(
        0,
        ge=0,
        le=1 << 20,
        description="with verify or a checked verify_pattern: each thread re-reads and checks its "
        "written requests during the run, the oldest ones whenever this many are waiting "
        "(fio's verify_backlog), and those left at the end of its writes; 0: off",
    )
    verify_backlog_batch: int = Field(
        0,
        ge=0,
        le=1 << 20,
        description="reads per verify_backlog round (0: verify_backlog; fio's verify_backlog_batch)",
    )
    verify_dump: bool = Field(
        False,
        description="with verify: the first corrupt blocks the run's reads find are "
        "written beside their file as <file>.<offset>.received and .expected (fio's "
        "verify_dump)",
    )
    verify_fatal: bool = Field(
        False,
        description="with verify or a checked verify_pattern: a thread stops at its first corrupt block "
        "(fio's verify_fatal)",
    )
    verify_write_sequence: bool = Field(
        True,
        description="with verify: compare the write number a block holds with "
        "the one expected when no two writes can race (a lost write is then stale); "
        "false checks each block's own header and checksum only (fio's "
        "verify_write_sequence=0)",
    )
    verify_phase: bool = Field(
        True,
        description="with verify or verify_pattern: re-read every file in a verify phase after the run; "
        "false when the run's own read-back (verify_backlog) is the whole check, as in fio",
    )
    verify_block: Size = Field(
        0, ge=0, description="bytes per verified block (one header each); 0: the smallest request size"
    )
    fault: FaultParams | None = Field(
        None,
        description="testing verification: torn, short, lost or misdirected "
        "writes injected under the psync backend (docs/verify.md)",
    )
    buffer_memory: Literal["heap", "thp", "hugetlb"] = Field(
        "heap",
        description="where the run phase's request buffers get their pages: heap (4 KiB pages, as malloc "
        "gives them: fio's default, IOR), thp (transparent huge pages: 2 MiB-aligned memory advised MADV_HUGEPAGE, "
        "as far as the kernel gives them; the report says how much it did), hugetlb (the huge-page pool reserved "
        "with vm.nr_hugepages: fio's iomem=mmaphuge)",
    )
    random_distribution: str = Field(
        "random",
        description="where random offsets land, with fio's meanings (docs/access.md): random (uniform), "
        "zipf:THETA, pareto:H, normal:DEV% (alias gauss), each with an optional :CENTER from 0 to 1; fio's zones, "
        "zoned:ACCESS/SIZE%:... and zoned_abs:ACCESS/BYTES:... (one list per direction after commas); "
        "sequence:B0,B1,... (blocks visited in turn)",
    )
    random_scramble: bool = Field(
        True,
        description="with a skewed random_distribution, spread the hot blocks over the "
        "file (as fio does); false keeps them side by side from the center",
    )
    trim_then_write: bool = Field(
        False,
        description="every trim is followed by a write of the same range (fio's "
        "trimwrite); needs trim_pct = 100 in every entry",
    )
    seq_per_direction: bool = Field(
        False,
        description="sequential requests of each direction (reads, writes, trims) walk the "
        "region from a position of their own, as fio's rw=rw does; false: one position "
        "per thread, shared by every direction",
    )
    buffer_pattern: str = Field(
        "",
        description="bytes written requests carry, repeated to fill each buffer, in fio's "
        'forms: 0xdeadface, a decimal number, "text", combined; empty: pseudo-random bytes',
    )
    random_sequence_stride: bool = Field(
        False,
        description="with random_distribution=sequence:...: after each pass "
        "over the sequence the next starts that many blocks further (fio's option)",
    )
    seq_add: int = Field(
        0,
        description="bytes added to each sequential offset after the request before it, negative "
        "to walk backwards (fio's rw=read:N); each thread walks one whole file",
    )
    zone_size: Size = Field(
        0,
        ge=0,
        description="strided zones (fio's zonemode=strided): bytes transferred in a zone "
        "before the next; 0: no zones; each thread walks one whole file",
    )
    zone_range: Size = Field(0, ge=0, description="bytes of a strided zone (0: zone_size)")
    zone_skip: Size = Field(0, ge=0, description="bytes skipped between strided zones")
    verify_pattern: str = Field(
        "",
        description="fio's verify_pattern, in buffer_pattern's forms: the layout and "
        "every write carry it, every read and a verify phase check each byte against it; its "
        "length divides the request sizes, the alignment and 1 MiB",
    )
    verify_pattern_meta: bool = Field(
        False,
        description="with verify_pattern, fio's verify=meta: each verify_block "
        "starts with fsmeter's 80-byte header and holds the pattern in the rest; reads "
        "and the verify phase check the header's fields and every pattern byte",
    )
    verify_pattern_check: bool = Field(
        True,
        description="with verify_pattern: false writes it (and its headers) and "
        "checks nothing, with no verify phase (fio's do_verify=0)",
    )
    fio_engine: Literal[
        "data",
        "filecreate",
        "filestat",
        "filedelete",
        "dircreate",
        "dirstat",
        "dirdelete",
        "falloc",
        "ftruncate",
        "e4defrag",
        "cpuio",
    ] = Field(
        "data",
        description="what one request of the run is (docs/fio.md): data (read/write), or one of fio's engines "
        "that make one call per I/O: filecreate/filestat/filedelete and dircreate/dirstat/dirdelete (one create, stat "
        "or removal per file name), falloc (fallocate the range), ftruncate (truncate to the offset), e4defrag "
        "(EXT4_IOC_MOVE_EXT of the range to donor_name); or cpuio (no I/O: each thread burns cpu_load percent of one "
        "CPU for duration_s)",
    )
    stat_type: Literal["stat", "lstat", "statx"] = Field("stat", description="the call of filestat and dirstat")
    donor_name: str = Field("", description="e4defrag's donor file, relative to the directory")
    cpu_load: int = Field(
        0, ge=0, le=100, description="cpuio: the percent of one CPU each thread burns (fio's cpuload)"
    )
    cpu_chunk_us: int = Field(
        50_000, ge=1, le=3_600_000_000, description="cpuio: microseconds of each burst of spinning (fio's cpuchunks)"
    )
    cpu_mode: Literal["noop", "qsort"] = Field(
        "noop",
        description="cpuio: a burst spins on the clock (noop) or "
        "sorts 256 Ki integers four ways (qsort), as fio's cpumode",
    )
    cpu_exit_on_io_done: bool = Field(
        False, description="cpuio: stop once the I/O jobs of its group are done (fio's exit_on_io_done)"
    )
    donor_inplace: bool = Field(
        False,
        description="e4defrag: allocate the donor's blocks per request and truncate "
        "it after (fio's inplace=1), instead of allocating its region before the run",
    )
    pace: PaceParams = Field(
        default_factory=PaceParams,
        description="how fast each thread may issue (fio's rate, rate_iops, rate_process, rate_min, thinktime)",
    )
    steadystate: SteadyParams | None = Field(None, description="stop once the rate is steady (fio's steadystate)")
    interval_lat: bool = Field(
        False,
        description="keep the run phase's latency per sample interval (each "
        "interval's lat: count, mean, min, max per kind), for fio's latency logs",
    )
    latency: bool = Field(
        True,
        description="time every request and keep latency percentiles; false (fio's gtod_reduce=1): the run "
        "phase counts its requests without timing them and reads the clock about every 100 us (every few dozen "
        "cached requests), for its warm-up's end and deadline only: one clock read and a histogram update less "
        "per request (a few percent of a cached 4 KiB read, docs/bare-loops.md)",
    )
    ioprio: IoprioParams = Field(
        default_factory=IoprioParams, description="I/O priorities of the run phase's threads and requests"
    )
    io_log: IoLogParams | None = Field(
        None, description="log every measured request of the run phase in fio's per-I/O latency log format"
    )
    iolog_out: IssueLogParams | None = Field(
        None, description="log every request the run phase issues in fio's I/O log (version 3; fio's write_iolog)"
    )
    replay: ReplayParams | None = Field(
        None, description="replay the requests of fio's I/O log instead of drawing them from the mix (fio's read_iolog)"
    )
    place: PlaceParams = Field(
        default_factory=PlaceParams,
        description="where the run phase's threads run and "
        "their memory comes from (fio's cpus_allowed, numa_cpu_nodes, numa_mem_policy)",
    )
    content: ContentParams | None = Field(
        None,
        description="what writes carry, as fio makes its buffers: "
        "compressible, deduplicable, refilled, zero or scrambled (docs/fio.md)",
    )
    atomic: bool = Field(
        False,
        description="untorn writes (RWF_ATOMIC, fio atomic=1): needs direct and a filesystem "
        "with an atomic write unit that holds every write size",
    )
    continue_on: ContinueOnParams = Field(
        default_factory=ContinueOnParams,
        description="the errors after which a "
        "thread counts the failed request and goes on (fio's continue_on_error "
        "with ignore_error); by default every error stops the run",
    )
    fill: bool = Field(
        False,
        description="fio's fill_device: one thread writes its one file sequentially until the "
        "filesystem is full (ENOSPC or EDQUOT ends the run phase, not as an error); file_size and "
        "total_bytes only bound it",
    )
    latency_target: LatTargetParams | None = Field(
        None,
        description="search the deepest queue depth (up to "
        "queue_depth) whose latency stays within a target (fio's "
        "latency_target); one thread only",
    )
    thread_regions: list[ThreadRegionParams] = Field(
        default_factory=list,
        description="fio's offset_increment: "
        "one region of the one shared file per thread, with its own "
        "bytes; empty: the threads share the data set",
    )
    sprandom: SprandomParams | None = Field(
        None,
        description="fio's sprandom: one thread's random writes to its "
        "one file follow SanDisk's preconditioning plan and end with it",
    )

    # Set by `fsmeter run --shared-file` under mpirun (fsmeter.mpi.run), never from a workload file:
    # (this rank's region start, the run and verify phases' region start).
    _shared_region: tuple | None = PrivateAttr(None)

    def share_file(self, region_offset: int, run_offset: int) -> None:
        """Make this rank one of several sharing each file (IOR's shared file): prepare lays out only
        [region_offset, + file_size); the run and verify phases work on [run_offset, + file_size)."""
        self._shared_region = (region_offset, run_offset)

    @model_validator(mode="after")
    def _check(self):
        if self.record_size is not None:
            for e in self.entries:
                e.size = self.record_size
        if sum(e.weight for e in self.entries) <= 0:
            raise ValueError("entries: the weights must add up to more than 0")
        for i, e in enumerate(self.entries):
            if e.size > self.file_size:
                raise ValueError(
                    f"entries[{i}].size ({e.size} bytes) is larger than file_size ({self.file_size} bytes)"
                )
        if self.direct and not self.allow_unaligned_direct:
            # The filesystem's own figure (btrfs: 4096) is checked by the engine when it opens the files.
            for i, e in enumerate(self.entries):
                if e.size % 512:
                    raise ValueError(
                        f"entries[{i}].size: {e.size} bytes does not fit O_DIRECT, which needs multiples of 512 bytes: "
                        "use a multiple of 512, or direct=false"
                    )
            if self.alignment % 512:
                raise ValueError(
                    f"alignment: {self.alignment} does not fit O_DIRECT (multiples of 512): fix it or use direct=false"
                )
        if self.direct_layout:
            if self.verify != "off":
                raise ValueError(
                    "direct_layout: cannot be combined with verify (verified blocks are laid out "
                    "buffered): use one or the other"
                )
            for name in ("file_size", "offset"):
                v = getattr(self, name)
                if v % 512:
                    raise ValueError(
                        f"{name}: {v} bytes: with direct_layout it must be a multiple of 512 bytes (O_DIRECT writes)"
                    )
        small = min(e.size for e in self.entries)
        if self.random_map_block and (not self.random_map or self.alignment != self.random_map_block):
            raise ValueError("random_map_block: needs random_map=true and alignment equal to it")
        if (
            self.random_map
            and not self.random_map_block
            and (any(e.size % small for e in self.entries) or self.alignment != small)
        ):
            raise ValueError(
                "random_map: needs request sizes that are multiples of the smallest, and alignment equal to it"
            )
        if (
            self.random_map
            and len({e.size for e in self.entries}) > 1
            and any(e.random_pct < 100 for e in self.entries)
        ):
            raise ValueError("random_map: with several request sizes, needs every request random (random_pct=100)")
        if self.verify != "off":
            self._check_verify()
        elif self.verify_backlog_batch and not self.verify_backlog:
            raise ValueError("verify_backlog_batch: needs verify_backlog (the reads it batches)")
        elif self.verify_backlog and not (self.verify_pattern and self.verify_pattern_check):
            raise ValueError(
                "verify_backlog: needs verify (block headers to check) or a checked verify_pattern: set one"
            )
        if not self.latency:
            self._check_untimed()
        if self.duration_s is None and self.total_bytes is None:
            raise ValueError("duration_s: give duration_s or total_bytes (or both: whichever comes first)")
        self._check_fio_access()
        return self

    def _check_untimed(self) -> None:
        """latency = false leaves nothing for what reads each request's latency."""
        needs = {
            "interval_lat": self.interval_lat,
            "io_log": self.io_log is not None,
            "latency_target": self.latency_target is not None,
            "steadystate": self.steadystate is not None and self.steadystate.criterion.startswith("lat"),
        }
        for name, on in needs.items():
            if on:
                raise ValueError(f"{name}: needs every request's latency, which latency=false does not keep: drop one")

    def _check_fio_access(self) -> None:
        """random_distribution, trims and buffer_pattern, as the engine checks them."""
        try:
            self.random_distribution = check_distribution(self.random_distribution)
        except ValueError as exc:
            raise ValueError(f"random_distribution: {exc}") from None
        if self.random_sequence_stride and not self.random_distribution.startswith("sequence"):
            raise ValueError("random_sequence_stride: only with random_distribution=sequence:...")
        if not self.zone_size and (self.zone_range or self.zone_skip):
            raise ValueError("zone_size: give it (bytes per zone) with zone_range or zone_skip")
        if self.seq_add and any(e.random_pct > 0 for e in self.entries):
            raise ValueError("seq_add: moves sequential requests only: every entry needs random_pct=0")
        if self.seq_add and self.zone_size:
            raise ValueError("seq_add: cannot be combined with zone_size: use one or the other")
        if self.random_distribution != "random" and self.random_map:
            raise ValueError(
                "random_map: cannot be combined with a skewed random_distribution (fio turns its random "
                "map off for one): set random_map=false"
            )
        for i, e in enumerate(self.entries):
            if e.read_pct + e.trim_pct > 100:
                raise ValueError(
                    f"entries[{i}].trim_pct: read_pct + trim_pct is {e.read_pct + e.trim_pct:g}: at most "
                    "100 (the rest are writes)"
                )
        if self.trim_then_write and any(e.trim_pct < 100 for e in self.entries):
            raise ValueError(
                "trim_then_write: every entry must be all trims (trim_pct=100): each trim is followed by its write"
            )
        if self.verify != "off" and any(e.trim_pct > 0 for e in self.entries):
            raise ValueError(
                "verify: cannot be combined with trims (a trimmed block reads back as zeros, not as the "
                "last write): drop one"
            )
        if self.verify_pattern:
            try:
                n = len(parse_buffer_pattern(self.verify_pattern))
            except ValueError as exc:
                raise ValueError(f"verify_pattern: {exc}") from None
            if self.verify != "off" or self.buffer_pattern or any(e.trim_pct > 0 for e in self.entries):
                raise ValueError(
                    "verify_pattern: cannot be combined with verify, buffer_pattern or trims (the pattern "
                    "is what is written and checked): drop one"
                )
            for name, v in [
                ("alignment", self.alignment),
                ("offset", self.offset),
                ("seq_add", abs(self.seq_add)),
                *((f"entries[{i}].size", e.size) for i, e in enumerate(self.entries)),
                ("1 MiB (the layout's writes)", 1 << 20),
            ]:
                if v % n:
                    raise ValueError(
                        f"verify_pattern: its {n} bytes must divide {name} ({v} bytes) so that every "
                        "byte has one place in the pattern: use a pattern of 1, 2, 4, 8 ... bytes"
                    )
        if (self.verify_pattern_meta or not self.verify_pattern_check) and not self.verify_pattern:
            raise ValueError("verify_pattern_meta, verify_pattern_check: need verify_pattern: set it, or drop them")
        if self.verify_pattern_meta:
            block = self.verify_block or min(e.size for e in self.entries)
            if block < 88:
                raise ValueError(f"verify_block: {block} bytes is too small for the 80-byte header: use >= 88 bytes")
            for name, v in [
                ("alignment", self.alignment),
                ("offset", self.offset),
                ("seq_add", abs(self.seq_add)),
                *((f"entries[{i}].size", e.size) for i, e in enumerate(self.entries)),
                ("1 MiB (the layout's writes)", 1 << 20),
            ]:
                if v % block:
                    raise ValueError(
                        f"verify_block: {block} bytes must divide {name} ({v} bytes): with "
                        "verify_pattern_meta every request covers whole blocks, one header each"
                    )
            if block % n:
                raise ValueError(
                    f"verify_block: {block} bytes is not a multiple of verify_pattern's {n} bytes: use a block that is"
                )
        if self.content is not None and (self.verify != "off" or self.verify_pattern):
            raise ValueError(
                "content: cannot be combined with verify or verify_pattern (verified writes carry their "
                "own bytes): drop one"
            )
        if self.atomic and not self.direct:
            raise ValueError("atomic: untorn writes (RWF_ATOMIC) need direct=true (O_DIRECT)")
        if self.buffer_pattern:
            try:
                parse_buffer_pattern(self.buffer_pattern)
            except ValueError as exc:
                raise ValueError(f"buffer_pattern: {exc}") from None
            if self.verify != "off":
                raise ValueError(
                    "buffer_pattern: cannot be combined with verify (verified blocks carry their own "
                    "header and data): drop one"
                )

    def _check_verify(self) -> None:
        block = self.verify_block or min(e.size for e in self.entries)
        if "alignment" not in self.model_fields_set:
            self.alignment = block  # like fio, whose random offsets are multiples of the block size
        header = verify_header_len(self.verify)
        if block < header + 8:
            raise ValueError(
                f"verify_block: {block} bytes is too small for verify={self.verify}'s {header}-byte header "
                f"and data: use >= {header + 8} bytes"
            )
        for i, e in enumerate(self.entries):
            if e.size % block:
                raise ValueError(
                    f"entries[{i}].size: {e.size} bytes: with verify, every request size must be a "
                    f"multiple of the verify block ({block} bytes)"
                )
        # Thread regions (fio's offset_increment) of sequential writes whose reads re-read the written requests
        # only: those carry their own headers, and the layout's blocks they cut across are never read.
        off_grid = (
            self.thread_regions
            and not self.verify_phase
            and self.verify_backlog > 0
            and all(e.random_pct == 0 and e.read_pct == 0 and e.trim_pct == 0 for e in self.entries)
        )
        for name in ("alignment", "file_size", "offset"):
            v = getattr(self, name)
            if v % block and not (off_grid and name != "alignment"):
                raise ValueError(
                    f"{name}: {v} bytes: with verify, it must be a multiple of the verify block ({block} bytes)"
                )
        if self.reuse_files:
            raise ValueError("reuse_files: cannot be combined with verify (the files must be laid out with headers)")
        if self.verify_backlog_batch and not self.verify_backlog:
            raise ValueError("verify_backlog_batch: needs verify_backlog (the reads it batches)")

    def check_settings(self, settings) -> None:
        """Checks that need the shared settings too."""
        if self.thread_files and self.file_count % settings.threads:
            raise UserError(
                f"parameter threads: {settings.threads} threads cannot share {self.file_count} per-thread "
                "files evenly (a fio job file's numjobs sets threads; change numjobs there)"
            )
        if self.verify != "off" and settings.backend == "null":
            raise UserError(
                "parameter verify: the null backend moves no data, so there is nothing to verify: "
                "use --set backend=psync or io_uring"
            )
        if self.verify_pattern and settings.backend == "null":
            raise UserError(
                "parameter verify_pattern: the null backend moves no data, so there is nothing to "
                "verify: use --set backend=psync or io_uring"
            )
        if self.latency_target is not None and settings.threads > 1:
            raise UserError(
                f"parameter latency_target: it searches one thread's queue depth, and threads is "
                f"{settings.threads}: use threads=1 (a fio job file: numjobs=1)"
            )
        if self.fault is not None and settings.backend != "psync":
            raise UserError("parameter fault: fault injection wraps the psync backend: use --set backend=psync")
        if self.queue_depth > 1 and settings.backend in ("mmap", "libpmem"):
            raise UserError(
                f"parameter queue_depth: the {settings.backend} backend copies one request at a time per "
                "thread (a memcpy); use queue_depth=1, or --set backend=io_uring"
            )
        if self.queue_depth > 1 and settings.backend == "psync":
            raise UserError(
                "parameter queue_depth: psync keeps one request in flight per thread; "
                "use --set backend=io_uring or libaio for queue_depth > 1"
            )
        if self.buffer_memory == "hugetlb":
            self._check_hugetlb_pool(settings.threads)
        if self.fio_engine != "data" and settings.backend != "psync":
            raise UserError(
                f"parameter fio_engine: {self.fio_engine} issues one system call per request itself: use "
                "--set backend=psync"
            )

    def _check_hugetlb_pool(self, threads: int) -> None:
        """Refuse hugetlb buffers before any file is laid out when the 2 MiB pool cannot cover this
        process's threads (each maps queue_depth buffers, every one rounded up to 4 KiB, in whole
        huge pages). The engine meets the pool again when it maps them: other processes, and the
        other MPI ranks of a host, draw from the same pool meanwhile."""
        pool = Path("/sys/kernel/mm/hugepages/hugepages-2048kB")
        try:
            n = {
                k: int((pool / k).read_text())
                for k in (
                    "nr_hugepages",
                    "free_hugepages",
                    "resv_hugepages",
                    "nr_overcommit_hugepages",
                    "surplus_hugepages",
                )
            }
        except (OSError, ValueError):
            raise UserError(
                "parameter buffer_memory: hugetlb needs the kernel's pool of 2 MiB huge pages, and this "
                f"kernel shows none ({pool}): use buffer_memory=thp or heap"
            ) from None
        # Free pages others have reserved are not ours; surplus pages come on demand up to the overcommit.
        available = (
            n["free_hugepages"] - n["resv_hugepages"] + max(0, n["nr_overcommit_hugepages"] - n["surplus_hugepages"])
        )
        page = 2 << 20
        per_buffer = -(-max(e.size for e in self.entries) // 4096) * 4096
        per_thread = -(-(self.queue_depth * per_buffer) // page)
        need = threads * per_thread
        if available < need:
            raise UserError(
                f"parameter buffer_memory: hugetlb buffers need {need} huge page(s) of 2 MiB ({threads} "
                f"thread(s) x {per_thread} for queue_depth {self.queue_depth} x {per_buffer} bytes), and "
                f"{max(available, 0)} are available: reserve more first (as root: `sysctl "
                f"vm.nr_hugepages={n['nr_hugepages'] + need - max(available, 0)}`; under MPI every rank "
                "on a host draws from this one pool), or use buffer_memory=thp or heap"
            )

    def engine_spec(self) -> dict:
        spec = self.model_dump(exclude={"record_size", "verify_phase"})
        spec["verify"] = None if self.verify == "off" else self.verify
        spec["buffer_pattern"] = list(parse_buffer_pattern(self.buffer_pattern)) if self.buffer_pattern else []
        spec["verify_pattern"] = list(parse_buffer_pattern(self.verify_pattern)) if self.verify_pattern else []
        spec["content"] = self.content.engine_dict() if self.content is not None else None
        if self._shared_region is not None:
            spec["shared_file"] = True
            spec["offset"], spec["run_offset"] = self._shared_region
        return spec


def _phases(p: AccessParams) -> list:
    phases = [Phase("prepare", measured=False), Phase("run", cold_cache=True)]
    if p.verify_phase and (p.verify != "off" or (p.verify_pattern and p.verify_pattern_check)):
        # Re-read everything written, from the storage rather than the page cache when it can be dropped.
        phases.append(Phase("verify", measured=False, cold_cache=True))
    return phases


def _metrics(p: AccessParams) -> list:
    ms = [total_metric("run", "ops_per_s", "ops/s"), total_metric("run", "bytes_per_s", "MiB/s")]
    ms += _latency_metrics(p) if p.latency else []
    syncs = p.fsync_every or p.fdatasync_every or p.sync_range_every
    if p.fsync_end or (syncs > 0 and any(e.read_pct < 100 for e in p.entries)):
        # fsync is not a data operation: the headline leaves it out (as fio does) and it is measured apart.
        ms.append(
            Metric(
                "run", "fsync_per_s", "fsync/s", True, lambda r: (r.get("ops", {}).get("fsync") or {}).get("ops_per_s")
            )
        )
        if p.latency:
            ms.append(op_latency_metric("run", "fsync"))
    ms.append(Metric("run", "cpu_pct", "%", False, lambda r: r["cpu"]["process_pct"]))
    return ms


def _latency_metrics(p: AccessParams) -> list:
    """The p99 of each kind of request the run makes (none with latency = false: nothing is timed)."""
    ms = []
    if any(e.read_pct > 0 for e in p.entries):
        ms.append(op_latency_metric("run", "read"))
    if p.trim_then_write or any(e.read_pct + e.trim_pct < 100 for e in p.entries):
        ms.append(op_latency_metric("run", "write"))
    if any(e.trim_pct > 0 for e in p.entries):
        ms.append(op_latency_metric("run", "trim"))
    for kind, engines in (
        ("create", ("filecreate", "dircreate")),
        ("stat", ("filestat", "dirstat")),
        ("delete", ("filedelete", "dirdelete")),
    ):
        if p.fio_engine in engines:
            ms.append(op_latency_metric("run", kind))
    return ms


FAMILY = Family(
    name="access",
    params=AccessParams,
    phases=_phases,
    metrics=_metrics,
    description="Iometer/fio-class data transfer: size mix, read %, random %, queue depth",
    # Must count what the metrics above count (run.ops_per_s: the data operations of the totals, which
    # the engine's intervals count too; fsync apart).
    series={"ops_per_s": ops_series, "MiB_per_s": bytes_series(1 << 20), "fsync_per_s": kind_series("fsync")},
)
