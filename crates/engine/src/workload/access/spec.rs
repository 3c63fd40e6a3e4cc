//! The access spec: the request mix, the files, and what they derive (sizes, the verify block,
//! regions); its checks are `validate.rs`.

use serde::{Deserialize, Serialize};

use crate::backend::buffer::BufferMemory;
use crate::backend::content::ContentSpec;
use crate::backend::fault::FaultSpec;
use crate::error::{EngineError, Result};
use crate::verify::Checksum;
use crate::workload::access::errors::ContinueOn;
use crate::workload::access::pace::{PaceSpec, PlaceSpec, SteadySpec};
use crate::workload::access::CpuMode;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AccessEntry {
    /// Request size in bytes.
    pub size: u32,
    /// Share of requests, in percent (entries are normalised to their sum).
    pub weight: f64,
    pub read_pct: f64,
    pub random_pct: f64,
    /// Share of requests that are trims (a hole punched over the request's range), in percent;
    /// read_pct + trim_pct <= 100, the rest are writes.
    #[serde(default)]
    pub trim_pct: f64,
}

/// How the run's files are opened for fio's sync=.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OpenSync {
    #[default]
    None,
    /// O_SYNC: data and metadata durable when each write completes.
    Sync,
    /// O_DSYNC: data (and the metadata needed to read it) durable when each write completes.
    Dsync,
}

impl OpenSync {
    /// The open(2) flags it adds.
    pub fn flags(self) -> i32 {
        match self {
            OpenSync::None => 0,
            OpenSync::Sync => libc::O_SYNC,
            OpenSync::Dsync => libc::O_DSYNC,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessSpec {
    pub entries: Vec<AccessEntry>,
    /// Offsets of requests are multiples of this.
    #[serde(default = "default_alignment")]
    pub alignment: u64,
    #[serde(default = "default_one")]
    pub file_count: u32,
    pub file_size: u64,
    /// Requests in flight per thread (io_uring; psync is 1).
    #[serde(default = "default_one")]
    pub queue_depth: u32,
    /// O_DIRECT: bypass the page cache.
    #[serde(default)]
    pub direct: bool,
    /// fio's serialize_overlap: a thread issues no request whose bytes overlap one of its requests
    /// in flight; it waits (and every request drawn after it waits behind it) until that one is back.
    #[serde(default)]
    pub serialize_overlap: bool,
    /// fsync the file after every N writes (0: never).
    #[serde(default)]
    pub fsync_every: u64,
    /// fsync every file at the end of the run, inside the measured time.
    #[serde(default)]
    pub fsync_end: bool,
    /// fio's fdatasync=N: fdatasync the file after every N writes (0: never); fsync_every wins
    /// where both fall on the same write, as in fio.
    #[serde(default)]
    pub fdatasync_every: u64,
    /// fio's sync_file_range=FLAGS:N: sync_file_range(2) with `sync_range_flags` over the file
    /// after every N writes (0: never); fsync_every and fdatasync_every win where they fall too.
    #[serde(default)]
    pub sync_range_every: u64,
    /// SYNC_FILE_RANGE_* bits for `sync_range_every`.
    #[serde(default)]
    pub sync_range_flags: u32,
    /// fio's sync=: open the run's files O_SYNC or O_DSYNC (every write durable on completion).
    #[serde(default)]
    pub open_sync: OpenSync,
    /// fio's number_ios: each thread stops after drawing this many requests (0: no limit), whatever
    /// their sizes; the byte quota and the deadline still apply.
    #[serde(default)]
    pub max_ios: u64,
    /// fio's iodepth_batch_complete_min: wait for at least this many completions (fewer when fewer
    /// are in flight) before handling any; 0 or 1: each as it comes.
    #[serde(default)]
    pub reap_min: u32,
    #[serde(default)]
    pub warmup_s: f64,
    /// Stop after this many measured seconds ...
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// ... or after this many measured bytes, whichever comes first.
    #[serde(default)]
    pub total_bytes: Option<u64>,
    #[serde(default = "default_prefix")]
    pub file_prefix: String,
    /// prepare writes the files with O_DIRECT (1 MiB requests, every thread and MPI rank at once)
    /// instead of buffered writes and an fsync: blocks land where concurrent direct writers put
    /// them, as IOR's write phase leaves its files (several writers' blocks interleave on the
    /// device). The default, buffered, is how fio lays files out.
    #[serde(default)]
    pub direct_layout: bool,
    /// Keep files that already exist with the right size instead of rewriting them.
    #[serde(default)]
    pub reuse_files: bool,
    /// fio job files: explicit file names (relative to `dir`), one per file, instead of `<prefix>.<i>`.
    #[serde(default)]
    pub file_names: Vec<String>,
    /// fio's `offset`: every request lands in [offset, offset + file_size) of its file.
    #[serde(default)]
    pub offset: u64,
    /// IOR's shared file (under MPI): several processes share each file, each on its own region
    /// [offset, offset + file_size). prepare opens the file without truncating it and writes only
    /// that region; cleanup tolerates a file another process already removed.
    #[serde(default)]
    pub shared_file: bool,
    /// With `shared_file`: where the run and verify phases' region starts when it is another
    /// process's region (IOR's -C: read back what another rank wrote, not this one's cache).
    /// None: `offset`, the region prepare laid out.
    #[serde(default)]
    pub run_offset: Option<u64>,
    /// fio's per-job files: thread t works only on its own file_count / threads files.
    #[serde(default)]
    pub thread_files: bool,
    /// fio's random map: random requests visit each request-sized block of the thread's files once per
    /// pass (without replacement). With several request sizes (each a multiple of the smallest, which is the
    /// alignment), fio's map of smallest blocks: a request ends at the first block already done.
    #[serde(default)]
    pub random_map: bool,
    /// fio's random map when a direction's smallest request size is not the job's smallest block (fio's
    /// rw_min_bs over reads, writes and trims; bs= or bssplit= with a READ,WRITE pair): the map has one bit
    /// per `random_map_block` bytes (the alignment), each direction draws blocks in units of its own smallest
    /// request size and marks one bit per such unit, as fio indexes its map, and a draw that moves past the
    /// file ends the thread (dirmap.rs). Every entry reads or writes (read_pct 100 or 0), every request is
    /// random, one file per thread. 0: off.
    #[serde(default)]
    pub random_map_block: u64,
    /// With `direct`, run requests the filesystem cannot do directly (not
    /// multiples of its O_DIRECT alignment) instead of refusing them; the kernel
    /// may then serve them through the page cache, and the report says so.
    #[serde(default)]
    pub allow_unaligned_direct: bool,
    /// Verify data (docs/verify.md): every block written carries a header and a
    /// checksum of this kind, reads check them, the `verify` phase re-reads everything.
    #[serde(default)]
    pub verify: Option<Checksum>,
    /// Bytes per verified block (one header each); 0: the smallest request size.
    #[serde(default)]
    pub verify_block: u32,
    /// fio's verify_backlog: with verify, each thread re-reads and checks its written requests
    /// during the run: once N of them are unchecked, the next `verify_backlog_batch` (default N)
    /// requests it issues are reads of the oldest ones; at the end of its writes (not at a
    /// deadline or a stop) it reads back those left. 0: off. Reads counted as the run's reads.
    #[serde(default)]
    pub verify_backlog: u32,
    #[serde(default)]
    pub verify_backlog_batch: u32,
    /// fio's verify_dump: the first corrupt blocks the run's reads find are written beside their
    /// file as `<file>.<offset>.received` and `.expected`.
    #[serde(default)]
    pub verify_dump: bool,
    /// fio's verify_fatal: a thread stops at its first corrupt block (no read-back after it).
    #[serde(default)]
    pub verify_fatal: bool,
    /// Compare the write number a block holds with the one expected when no two writes can race
    /// (default); false: each block's own header and checksum only (fio's verify_write_sequence=0).
    #[serde(default = "default_true")]
    pub verify_write_sequence: bool,
    /// Testing verification: make chosen writes torn, short, lost or misdirected (psync only).
    #[serde(default)]
    pub fault: Option<FaultSpec>,
    /// Where the run phase's request buffers get their pages (heap, thp, hugetlb).
    #[serde(default)]
    pub buffer_memory: BufferMemory,
    /// Where random offsets land: fio's `random_distribution` (`random`, `zipf:THETA[:CENTER]`,
    /// `pareto:H[:CENTER]`, `normal:DEV%[:CENTER]`); see `dist.rs`.
    #[serde(default = "default_distribution")]
    pub random_distribution: String,
    /// With a skewed distribution, spread the hot blocks over the file (fio does); false keeps
    /// them side by side from the centre.
    #[serde(default = "default_true")]
    pub random_scramble: bool,
    /// fio's trimwrite: every trim is followed by a write of the same range.
    #[serde(default)]
    pub trim_then_write: bool,
    /// fio's sequential mixes: each direction walks the region from its own position (fio's
    /// last_pos per direction), so reads and writes of `rw=rw` both start at the region's start.
    /// False: one position per thread, shared by every direction.
    #[serde(default)]
    pub seq_per_direction: bool,
    /// Bytes written requests carry, repeated to fill each buffer (fio's buffer_pattern); empty:
    /// pseudo-random bytes.
    #[serde(default)]
    pub buffer_pattern: Vec<u8>,
    /// fio's `random_sequence_stride` with `random_distribution = "sequence:..."`: after each pass
    /// over the sequence, the next one is that many blocks further on.
    #[serde(default)]
    pub random_sequence_stride: bool,
    /// fio's `rw=read:N` / `rw=write:N` (shape.rs): bytes added to each sequential offset after the
    /// request before it (negative: a backwards walk); 0: none. Each thread walks one whole file.
    #[serde(default)]
    pub seq_add: i64,
    /// fio's `zonemode=strided` (shape.rs): bytes transferred in each zone (0: no zones) ...
    #[serde(default)]
    pub zone_size: u64,
    /// ... of this many bytes (0: zone_size) ...
    #[serde(default)]
    pub zone_range: u64,
    /// ... before the next zone, this many bytes after the zone's end. Each thread walks one whole file.
    #[serde(default)]
    pub zone_skip: u64,
    /// fio's verify_pattern (verify=pattern): the layout and every write carry these bytes, repeated
    /// (as buffer_pattern); every read of the run and the verify phase checks them. Its length divides
    /// the request sizes, offsets and 1 MiB, so byte `o` of a file holds `pattern[o % len]`.
    #[serde(default)]
    pub verify_pattern: Vec<u8>,
    /// fio's `verify=meta` with `verify_pattern` (verify/meta_pattern.rs): each block of
    /// `verify_block` bytes starts with fsmeter's header and holds the pattern in the rest; reads
    /// and the verify phase check the header's fields and the pattern.
    #[serde(default)]
    pub verify_pattern_meta: bool,
    /// With `verify_pattern`: false writes it (and its headers) but checks nothing, and there is no
    /// verify phase (fio's do_verify=0).
    #[serde(default = "default_true")]
    pub verify_pattern_check: bool,
    /// What one request of the run phase is: data (`data`, the default), or one of fio's file and
    /// directory engines or one-call engines (docs/fio.md, `fileops.rs`).
    #[serde(default)]
    pub fio_engine: FioEngine,
    /// fio's `stat_type` of the filestat and dirstat engines.
    #[serde(default)]
    pub stat_type: StatType,
    /// fio's `donorname` of the e4defrag engine: the donor file, relative to `dir`.
    #[serde(default)]
    pub donor_name: String,
    /// fio's cpuio engine (`fio_engine = "cpuio"`, cpuio.rs): the percent of one CPU each thread burns (fio's cpuload) ...
    #[serde(default)]
    pub cpu_load: u32,
    /// ... in bursts of this many microseconds (fio's cpuchunks; noop mode) ...
    #[serde(default = "default_cpu_chunk")]
    pub cpu_chunk_us: u64,
    /// ... of spinning (noop) or sorting (qsort) (fio's cpumode) ...
    #[serde(default)]
    pub cpu_mode: CpuMode,
    /// ... until the I/O jobs of its group are done, if that comes first (fio's exit_on_io_done).
    #[serde(default)]
    pub cpu_exit_on_io_done: bool,
    /// fio's `inplace` of the e4defrag engine: allocate the donor's blocks for each request and
    /// truncate it after, instead of allocating the whole donor region before the run.
    #[serde(default)]
    pub donor_inplace: bool,
    /// How fast each thread may issue (fio's rate, rate_iops, rate_process, rate_min, thinktime);
    /// see `pace.rs`. The default: as fast as it can.
    #[serde(default)]
    pub pace: PaceSpec,
    /// Stop when the rate is steady (fio's steadystate); see `pace.rs`.
    #[serde(default)]
    pub steadystate: Option<SteadySpec>,
    /// Keep the latency of the run phase's requests per sample interval (each interval's `lat`:
    /// count, mean, min and max per kind), for fio's latency logs (`write_lat_log`).
    #[serde(default)]
    pub interval_lat: bool,
    /// Time every request and keep latency histograms (the default). False (fio's gtod_reduce): the
    /// requests are counted, not timed; the run phase reads the clock once per batch of requests
    /// (about every 100 us), only for its warm-up's end and its deadline.
    #[serde(default = "default_true")]
    pub latency: bool,
    /// I/O priorities (fio's prio/prioclass per thread, cmdprio per request); see `prio.rs`.
    #[serde(default)]
    pub ioprio: super::prio::PrioSpec,
    /// Log every measured request of the run phase in fio's per-I/O log format; see `iolog.rs`.
    #[serde(default)]
    pub io_log: Option<super::iolog::IoLogSpec>,
    /// fio's write_iolog: every request issued, logged in fio's I/O log version 3.
    #[serde(default)]
    pub iolog_out: Option<super::issuelog::IssueLogSpec>,
    /// fio's read_iolog: the requests replayed from a log instead of drawn from the mix.
    #[serde(default)]
    pub replay: Option<super::replay::ReplaySpec>,
    /// Where the run phase's threads run and their buffers' memory comes from (fio's
    /// cpus_allowed, numa_cpu_nodes, numa_mem_policy); see `pace.rs`.
    #[serde(default)]
    pub place: PlaceSpec,
    /// fio's buffer contents (compressible, deduplicable, refilled, zero or scrambled writes); see
    /// `backend/content.rs`. None: every slot's buffer as filled before the start (or the pattern).
    #[serde(default)]
    pub content: Option<ContentSpec>,
    /// fio's atomic=1: every write is issued untorn (pwritev2 / io_uring with RWF_ATOMIC), with
    /// O_DIRECT, each request inside the file's atomic write unit (statx STATX_WRITE_ATOMIC).
    #[serde(default)]
    pub atomic: bool,
    /// fio's continue_on_error with ignore_error and error_dump: the errors a thread counts and goes
    /// on after (errors.rs). The default: every error stops the run.
    #[serde(default)]
    pub continue_on: ContinueOn,
    /// fio's fill_device: sequential writes until the filesystem is full. prepare creates the files
    /// empty; ENOSPC or EDQUOT on a write ends the thread's work (not counted as an error, as in fio),
    /// and a short write then too (fio would write its rest, which fails); file_size and total_bytes
    /// only bound it.
    #[serde(default)]
    pub fill: bool,
    /// fio's latency_target, latency_window, latency_percentile and latency_run (lattarget.rs): the
    /// queue depth is searched for, up to queue_depth, instead of fixed.
    #[serde(default)]
    pub latency_target: Option<super::LatTargetSpec>,
    /// fio's offset_increment: thread t works on its own region of the one shared file, with its own
    /// bytes (regions.rs). Empty: the threads share the data set as usual.
    #[serde(default)]
    pub thread_regions: Vec<super::regions::ThreadRegion>,
    /// fio's sprandom (sprandom.rs): one file, random writes of one size; the offsets follow the
    /// preconditioning plan and the run ends where it ends (or at total_bytes / duration_s first).
    #[serde(default)]
    pub sprandom: Option<crate::workload::access::SprandomSpec>,
}

/// fio's ioengines that are not data transfer, run in the engine as fio runs them (one system call
/// per I/O, timed as the I/O): `filecreate` opens each file with O_CREAT, `filestat` stats it,
/// `filedelete` unlinks it, `dircreate`/`dirstat`/`dirdelete` do the same on directories (each file
/// name once per pass); `falloc` fallocates the request's range (reads: KEEP_SIZE, writes: mode 0,
/// trims: PUNCH_HOLE), `ftruncate` truncates the file to the write's offset, `e4defrag` moves the
/// write's range to a donor file's blocks (EXT4_IOC_MOVE_EXT).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FioEngine {
    #[default]
    Data,
    Filecreate,
    Filestat,
    Filedelete,
    Dircreate,
    Dirstat,
    Dirdelete,
    Falloc,
    Ftruncate,
    E4defrag,
    /// No I/O: CPU burnt in bursts (cpuio.rs).
    Cpuio,
}

impl FioEngine {
    /// One operation per file name (no data, no offsets): the file and directory engines.
    pub fn per_name(self) -> bool {
        matches!(
            self,
            FioEngine::Filecreate
                | FioEngine::Filestat
                | FioEngine::Filedelete
                | FioEngine::Dircreate
                | FioEngine::Dirstat
                | FioEngine::Dirdelete
        )
    }

    /// The names are directories.
    pub fn dirs(self) -> bool {
        matches!(self, FioEngine::Dircreate | FioEngine::Dirstat | FioEngine::Dirdelete)
    }

    /// Each name can be done once only (it is created or removed).
    pub fn once(self) -> bool {
        matches!(self, FioEngine::Filecreate | FioEngine::Filedelete | FioEngine::Dircreate | FioEngine::Dirdelete)
    }

    /// The names exist before the run (laid out by prepare).
    pub fn needs_layout(self) -> bool {
        !matches!(self, FioEngine::Filecreate | FioEngine::Dircreate)
    }

    /// One system call per request, issued by the thread itself (not through a backend).
    pub fn one_call(self) -> bool {
        matches!(self, FioEngine::Falloc | FioEngine::Ftruncate | FioEngine::E4defrag)
    }

    pub fn name(self) -> &'static str {
        match self {
            FioEngine::Data => "data",
            FioEngine::Filecreate => "filecreate",
            FioEngine::Filestat => "filestat",
            FioEngine::Filedelete => "filedelete",
            FioEngine::Dircreate => "dircreate",
            FioEngine::Dirstat => "dirstat",
            FioEngine::Dirdelete => "dirdelete",
            FioEngine::Falloc => "falloc",
            FioEngine::Ftruncate => "ftruncate",
            FioEngine::E4defrag => "e4defrag",
            FioEngine::Cpuio => "cpuio",
        }
    }
}

/// fio's `stat_type`: the call filestat and dirstat time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StatType {
    #[default]
    Stat,
    Lstat,
    Statx,
}

fn default_cpu_chunk() -> u64 {
    50_000
}
fn default_distribution() -> String {
    "random".to_string()
}
fn default_true() -> bool {
    true
}

fn default_alignment() -> u64 {
    512
}
fn default_one<T: From<u8>>() -> T {
    T::from(1u8)
}
fn default_prefix() -> String {
    "fsmeter.access".to_string()
}

/// The most written requests a thread keeps for `verify_backlog` (24 bytes each).
pub const MAX_BACKLOG: u32 = 1 << 20;

impl AccessSpec {
    /// The run phase's histogram precision: 3 significant digits, or 0 (requests counted, not timed).
    pub(crate) fn sigfig(&self) -> u8 {
        if self.latency {
            3
        } else {
            0
        }
    }

    /// The smallest request size of each direction ([read, write]; 0: no request of it).
    pub(super) fn min_sizes(&self) -> [u64; 2] {
        let mut out = [0u64; 2];
        for e in &self.entries {
            let size = e.size as u64;
            let shares = [e.read_pct > 0.0, e.read_pct + e.trim_pct < 100.0];
            for (o, &share) in out.iter_mut().zip(&shares) {
                if share && e.weight > 0.0 && (*o == 0 || size < *o) {
                    *o = size;
                }
            }
        }
        out
    }

    /// The bytes written requests carry: `verify_pattern`, else `buffer_pattern` (empty: pseudo-random).
    pub fn write_pattern(&self) -> &[u8] {
        if self.verify_pattern.is_empty() {
            &self.buffer_pattern
        } else {
            &self.verify_pattern
        }
    }

    /// Whether reads check their bytes against a `verify_pattern` (written and checked).
    pub fn checks_pattern(&self) -> bool {
        !self.verify_pattern.is_empty() && self.verify_pattern_check
    }

    /// Whether there is a verify phase: block headers (`verify`) or a pattern (`verify_pattern`).
    pub fn verifies(&self) -> bool {
        self.verify.is_some() || self.checks_pattern()
    }

    /// Strided zones' range: `zone_range`, else `zone_size` (fio's default).
    pub fn zone_range(&self) -> u64 {
        if self.zone_range == 0 {
            self.zone_size
        } else {
            self.zone_range
        }
    }

    /// Each thread walks one whole file (zones, an offset modifier) instead of its share of the data set.
    pub fn walks_one_file(&self) -> bool {
        self.zone_size > 0 || self.seq_add != 0
    }

    /// `random_distribution`, parsed.
    pub fn distribution(&self) -> Result<crate::workload::access::Dist> {
        crate::workload::access::Dist::parse(&self.random_distribution)
            .map_err(|m| EngineError::invalid("random_distribution", m))
    }

    /// Where the run and verify phases' region starts (`run_offset`, else `offset`).
    pub fn run_base(&self) -> u64 {
        self.run_offset.unwrap_or(self.offset)
    }

    /// Bytes per verified block: `verify_block`, or the smallest request size.
    pub fn verify_block(&self) -> u64 {
        match self.verify_block {
            0 => self.entries.iter().map(|e| e.size as u64).min().unwrap_or(4096),
            b => b as u64,
        }
    }

    /// Thread regions (fio's offset_increment) of purely sequential requests: random offsets (and so
    /// `alignment`) play no part, and the regions may start anywhere (fio's offset=120k with 16 KiB requests).
    pub fn regions_sequential(&self) -> bool {
        !self.thread_regions.is_empty() && self.entries.iter().all(|e| e.random_pct == 0.0)
    }

    /// With verify, thread regions off the verify block grid: allowed when every request is a sequential
    /// write and reads only re-read written requests (verify_backlog), which carry their own headers; the
    /// layout's blocks they cut across are never read (the verify phase refuses to run on them).
    pub fn regions_off_grid(&self) -> bool {
        self.regions_sequential()
            && self.verify_backlog > 0
            && self.entries.iter().all(|e| e.read_pct == 0.0 && e.trim_pct == 0.0)
    }

    /// fio's random map over requests of several sizes (a bitmap of blocks, shortened requests); one size is a
    /// permutation of the blocks.
    pub(super) fn sized_map(&self) -> bool {
        self.entries.iter().any(|e| e.size != self.entries[0].size)
    }

    /// Whether writes are followed by a sync every so often (fsync=, fdatasync=, sync_file_range=).
    pub(super) fn syncs_writes(&self) -> bool {
        self.fsync_every > 0 || self.fdatasync_every > 0 || self.sync_range_every > 0
    }

    pub(super) fn max_size(&self) -> usize {
        self.entries.iter().map(|e| e.size as usize).max().unwrap_or(0)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::workload::access) fn spec(entries: Vec<AccessEntry>, file_count: u32, file_size: u64) -> AccessSpec {
        AccessSpec {
            entries,
            alignment: 512,
            file_count,
            file_size,
            queue_depth: 1,
            direct: false,
            fsync_every: 0,
            fsync_end: false,
            fdatasync_every: 0,
            sync_range_every: 0,
            sync_range_flags: 0,
            open_sync: OpenSync::None,
            reap_min: 0,
            max_ios: 0,
            warmup_s: 0.0,
            duration_s: Some(1.0),
            total_bytes: None,
            file_prefix: default_prefix(),
            reuse_files: false,
            file_names: vec![],
            offset: 0,
            shared_file: false,
            run_offset: None,
            thread_files: false,
            random_map: false,
            random_map_block: 0,
            allow_unaligned_direct: false,
            direct_layout: false,
            serialize_overlap: false,
            verify: None,
            verify_block: 0,
            verify_backlog: 0,
            verify_backlog_batch: 0,
            verify_dump: false,
            verify_fatal: false,
            verify_write_sequence: true,
            fault: None,
            buffer_memory: BufferMemory::Heap,
            random_distribution: default_distribution(),
            random_scramble: true,
            trim_then_write: false,
            seq_per_direction: false,
            buffer_pattern: vec![],
            random_sequence_stride: false,
            seq_add: 0,
            zone_size: 0,
            zone_range: 0,
            zone_skip: 0,
            verify_pattern: vec![],
            verify_pattern_meta: false,
            verify_pattern_check: true,
            fio_engine: FioEngine::Data,
            stat_type: StatType::Stat,
            donor_name: String::new(),
            donor_inplace: false,
            cpu_load: 0,
            cpu_chunk_us: default_cpu_chunk(),
            cpu_mode: CpuMode::Noop,
            cpu_exit_on_io_done: false,
            pace: PaceSpec::default(),
            steadystate: None,
            interval_lat: false,
            latency: true,
            ioprio: Default::default(),
            io_log: None,
            iolog_out: None,
            replay: None,
            place: PlaceSpec::default(),
            content: None,
            atomic: false,
            continue_on: Default::default(),
            fill: false,
            latency_target: None,
            thread_regions: vec![],
            sprandom: None,
        }
    }

    pub(in crate::workload::access) fn e(size: u32, weight: f64, read_pct: f64, random_pct: f64) -> AccessEntry {
        AccessEntry { size, weight, read_pct, random_pct, trim_pct: 0.0 }
    }
}
