//! The access spec: the request mix, the files, and their checks (O_DIRECT alignment included).

use serde::{Deserialize, Serialize};

use crate::backend::buffer::BufferMemory;
use crate::backend::dio::DioAlign;
use crate::backend::fault::FaultSpec;
use crate::backend::BackendKind;
use crate::error::{EngineError, Result};
use crate::measure::duration::secs_to_ns;
use crate::settings::Settings;
use crate::verify::{self, Checksum};
use crate::workload::access::pace::{PaceSpec, PlaceSpec, SteadySpec};

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
    /// fsync the file after every N writes (0: never).
    #[serde(default)]
    pub fsync_every: u64,
    /// fsync every file at the end of the run, inside the measured time.
    #[serde(default)]
    pub fsync_end: bool,
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
    /// pass (without replacement). One request size only, offsets aligned to it.
    #[serde(default)]
    pub random_map: bool,
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
    /// Bytes written requests carry, repeated to fill each buffer (fio's buffer_pattern); empty:
    /// pseudo-random bytes.
    #[serde(default)]
    pub buffer_pattern: Vec<u8>,
    /// How fast each thread may issue (fio's rate, rate_iops, rate_process, rate_min, thinktime);
    /// see `pace.rs`. The default: as fast as it can.
    #[serde(default)]
    pub pace: PaceSpec,
    /// Stop when the rate is steady (fio's steadystate); see `pace.rs`.
    #[serde(default)]
    pub steadystate: Option<SteadySpec>,
    /// Where the run phase's threads run and their buffers' memory comes from (fio's
    /// cpus_allowed, numa_cpu_nodes, numa_mem_policy); see `pace.rs`.
    #[serde(default)]
    pub place: PlaceSpec,
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

impl AccessSpec {
    pub fn validate(&self, job: &Settings) -> Result<()> {
        if self.entries.is_empty() {
            return Err(EngineError::invalid(
                "entries",
                "at least one {size, weight, read_pct, random_pct} entry is needed",
            ));
        }
        for (i, e) in self.entries.iter().enumerate() {
            let f = |name: &str| format!("entries[{i}].{name}");
            if e.size == 0 {
                return Err(EngineError::invalid(f("size"), "must be > 0 bytes"));
            }
            if e.size as u64 > self.file_size {
                return Err(EngineError::invalid(
                    f("size"),
                    format!("{} bytes is larger than file_size ({} bytes)", e.size, self.file_size),
                ));
            }
            if !(e.weight >= 0.0 && e.weight.is_finite()) {
                return Err(EngineError::invalid(f("weight"), "must be a percentage >= 0"));
            }
            for (name, v) in [("read_pct", e.read_pct), ("random_pct", e.random_pct), ("trim_pct", e.trim_pct)] {
                if !(0.0..=100.0).contains(&v) {
                    return Err(EngineError::invalid(f(name), "must be between 0 and 100"));
                }
            }
            if e.read_pct + e.trim_pct > 100.0 {
                return Err(EngineError::invalid(
                    f("trim_pct"),
                    format!("read_pct + trim_pct is {}: at most 100 (the rest are writes)", e.read_pct + e.trim_pct),
                ));
            }
        }
        if self.entries.iter().map(|e| e.weight).sum::<f64>() <= 0.0 {
            return Err(EngineError::invalid("entries", "the weights must add up to more than 0"));
        }
        if self.alignment == 0 {
            return Err(EngineError::invalid("alignment", "must be >= 1 byte"));
        }
        if self.file_count == 0 {
            return Err(EngineError::invalid("file_count", "must be >= 1"));
        }
        if self.queue_depth == 0 || self.queue_depth > 4096 {
            return Err(EngineError::invalid("queue_depth", "must be between 1 and 4096"));
        }
        if self.queue_depth > 1 && job.backend == BackendKind::Psync {
            return Err(EngineError::invalid(
                "queue_depth",
                "psync keeps one request in flight per thread; use backend=io_uring for queue_depth > 1",
            ));
        }
        secs_to_ns("warmup_s", self.warmup_s)?;
        if let Some(d) = self.duration_s {
            if secs_to_ns("duration_s", d)? == 0 {
                return Err(EngineError::invalid("duration_s", "must be > 0"));
            }
        }
        if self.duration_s.is_none() && self.total_bytes.is_none() {
            return Err(EngineError::invalid(
                "duration_s",
                "give duration_s or total_bytes (or both: whichever comes first)",
            ));
        }
        if self.total_bytes == Some(0) {
            return Err(EngineError::invalid("total_bytes", "must be > 0"));
        }
        if self.direct && !self.allow_unaligned_direct {
            // No device does O_DIRECT below 512 bytes; the filesystem's own figure is checked at open.
            self.check_direct_alignment(&DioAlign { offset: 512, mem: 512, source: "the smallest device sector" })?;
        }
        if self.direct_layout {
            if self.verify.is_some() {
                return Err(EngineError::invalid(
                    "direct_layout",
                    "cannot be combined with verify (verified blocks are laid out buffered): use one or the other",
                ));
            }
            for (name, v) in [("file_size", self.file_size), ("offset", self.offset)] {
                if v % 512 != 0 {
                    return Err(EngineError::invalid(
                        name,
                        format!("{v} bytes: with direct_layout it must be a multiple of 512 bytes (O_DIRECT writes)"),
                    ));
                }
            }
        }
        if self.file_prefix.is_empty() || self.file_prefix.contains('/') {
            return Err(EngineError::invalid("file_prefix", "must be a plain file name prefix without '/'"));
        }
        self.validate_fio_layout(job)
    }

    /// The fields fio job files need: explicit names, a region offset, per-thread files.
    pub(super) fn validate_fio_layout(&self, job: &Settings) -> Result<()> {
        if !self.file_names.is_empty() {
            if self.file_names.len() != self.file_count as usize {
                return Err(EngineError::invalid(
                    "file_names",
                    format!("{} names for file_count = {}", self.file_names.len(), self.file_count),
                ));
            }
            for n in &self.file_names {
                if n.is_empty() || n.starts_with('/') || n.split('/').any(|c| c == ".." || c.is_empty()) {
                    return Err(EngineError::invalid(
                        "file_names",
                        format!("{n:?}: give a relative path inside dir, without '..'"),
                    ));
                }
            }
        }
        if !self.offset.is_multiple_of(self.alignment) {
            return Err(EngineError::invalid(
                "offset",
                format!("{} is not a multiple of alignment ({})", self.offset, self.alignment),
            ));
        }
        if let Some(r) = self.run_offset {
            if !self.shared_file {
                return Err(EngineError::invalid(
                    "run_offset",
                    "only for a shared file (shared_file = true), whose other regions other processes lay out",
                ));
            }
            if r % self.alignment != 0 {
                return Err(EngineError::invalid(
                    "run_offset",
                    format!("{r} is not a multiple of alignment ({})", self.alignment),
                ));
            }
        }
        if self.shared_file && self.reuse_files {
            return Err(EngineError::invalid("reuse_files", "cannot be combined with shared_file: a shared file's length says nothing about whether this region was laid out"));
        }
        if self.random_map {
            let size = self.entries[0].size as u64;
            if self.entries.iter().any(|e| e.size as u64 != size) || self.alignment != size {
                return Err(EngineError::invalid("random_map", "needs one request size and alignment equal to it"));
            }
        }
        if self.thread_files && !(self.file_count as usize).is_multiple_of(job.threads) {
            return Err(EngineError::invalid(
                "thread_files",
                format!("file_count ({}) must be a multiple of threads ({})", self.file_count, job.threads),
            ));
        }
        if let Some(f) = &self.fault {
            f.validate()?;
            if job.backend != BackendKind::Psync {
                return Err(EngineError::invalid(
                    "fault",
                    "fault injection wraps the psync backend: use backend = \"psync\"",
                ));
            }
        }
        self.validate_fio_access()?;
        self.validate_verify(job)
    }

    /// The fio options of the run phase itself: distribution, trims, buffer pattern.
    fn validate_fio_access(&self) -> Result<()> {
        let dist = self.distribution()?;
        if !dist.is_uniform() && self.random_map {
            return Err(EngineError::invalid("random_map", format!("cannot be combined with random_distribution = {:?} (fio turns its random map off for a skewed distribution): set random_map = false", self.random_distribution)));
        }
        let trims = self.entries.iter().any(|e| e.trim_pct > 0.0);
        if trims && self.verify.is_some() {
            return Err(EngineError::invalid(
                "verify",
                "cannot be combined with trims (a trimmed block reads back as zeros, not as the last write): drop one",
            ));
        }
        if self.trim_then_write && self.entries.iter().any(|e| e.trim_pct < 100.0) {
            return Err(EngineError::invalid(
                "trim_then_write",
                "every request must be a trim (trim_pct = 100): each is followed by its write",
            ));
        }
        if !self.buffer_pattern.is_empty() && self.verify.is_some() {
            return Err(EngineError::invalid(
                "buffer_pattern",
                "cannot be combined with verify (verified blocks carry their own header and data): drop one",
            ));
        }
        if self.buffer_pattern.len() > 1 << 20 {
            return Err(EngineError::invalid("buffer_pattern", "at most 1 MiB"));
        }
        if self.pace.is_active() && trims {
            return Err(EngineError::invalid(
                "pace",
                "pacing (a rate, thinktime) is not supported with trims: drop one",
            ));
        }
        if let Some(ss) = &self.steadystate {
            ss.to_steady(0)?;
        }
        self.place.validate()?;
        self.pace.validate(self.min_sizes())
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

    /// With verify, every request covers whole blocks of a fixed grid (one header each).
    fn validate_verify(&self, job: &Settings) -> Result<()> {
        if self.verify.is_none() {
            return Ok(());
        }
        let b = self.verify_block();
        if b < verify::MIN_BLOCK as u64 {
            return Err(EngineError::invalid(
                "verify_block",
                format!(
                    "{b} bytes: a verified block holds an {}-byte header and data: use >= {} bytes",
                    verify::HEADER_LEN,
                    verify::MIN_BLOCK
                ),
            ));
        }
        for (i, e) in self.entries.iter().enumerate() {
            if !(e.size as u64).is_multiple_of(b) {
                return Err(EngineError::invalid(
                    format!("entries[{i}].size"),
                    format!(
                        "{} bytes: with verify, every request size must be a multiple of the verify block ({b} bytes)",
                        e.size
                    ),
                ));
            }
        }
        for (name, v) in [
            ("alignment", self.alignment),
            ("file_size", self.file_size),
            ("offset", self.offset),
            ("run_offset", self.run_offset.unwrap_or(0)),
        ] {
            if v % b != 0 {
                return Err(EngineError::invalid(name, format!("{v} bytes: with verify, it must be a multiple of the verify block ({b} bytes) so every request covers whole blocks: set {name} = a multiple of {b}")));
            }
        }
        if job.backend == BackendKind::Null {
            return Err(EngineError::invalid(
                "verify",
                "the null backend moves no data, so there is nothing to verify: use backend = psync or io_uring",
            ));
        }
        if self.reuse_files {
            return Err(EngineError::invalid(
                "reuse_files",
                "cannot be combined with verify: the files must be laid out with verification headers",
            ));
        }
        Ok(())
    }

    /// O_DIRECT is direct only for requests whose length and file offset are
    /// multiples of the filesystem's alignment: every size, and `alignment` when
    /// some requests are random (sequential offsets are sums of sizes from a
    /// share start aligned to the same figure, see `AccessGen::with_share_align`).
    pub fn check_direct_alignment(&self, a: &DioAlign) -> Result<()> {
        let al = a.offset;
        let fix = |what: &str| {
            format!(
                "O_DIRECT on this filesystem is direct only for {what} in multiples of {al} bytes ({}); smaller or \
                 unaligned requests may be served through the page cache: use multiples of {al} (the *-4k workloads), \
                 direct=false, or allow_unaligned_direct=true to measure them anyway",
                a.source
            )
        };
        for (i, e) in self.entries.iter().enumerate() {
            if !(e.size as u64).is_multiple_of(al) {
                return Err(EngineError::invalid(
                    format!("entries[{i}].size"),
                    format!("{} bytes: {}", e.size, fix("request sizes")),
                ));
            }
        }
        if self.entries.iter().any(|e| e.random_pct > 0.0) && !self.alignment.is_multiple_of(al) {
            return Err(EngineError::invalid(
                "alignment",
                format!("{} bytes: {}", self.alignment, fix("random offsets")),
            ));
        }
        Ok(())
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
            allow_unaligned_direct: false,
            direct_layout: false,
            verify: None,
            verify_block: 0,
            fault: None,
            buffer_memory: BufferMemory::Heap,
            random_distribution: default_distribution(),
            random_scramble: true,
            trim_then_write: false,
            buffer_pattern: vec![],
            pace: PaceSpec::default(),
            steadystate: None,
            place: PlaceSpec::default(),
        }
    }

    pub(in crate::workload::access) fn e(size: u32, weight: f64, read_pct: f64, random_pct: f64) -> AccessEntry {
        AccessEntry { size, weight, read_pct, random_pct, trim_pct: 0.0 }
    }

    fn dio(offset: u64) -> DioAlign {
        DioAlign { offset, mem: offset, source: "test" }
    }

    #[test]
    fn direct_alignment_names_the_parameter_that_does_not_fit() {
        // Iometer's file-server mix: 512 B requests at 512 B offsets.
        let mut s = spec(vec![e(4096, 60.0, 80.0, 100.0), e(512, 10.0, 80.0, 100.0)], 1, 1 << 20);
        assert!(s.check_direct_alignment(&dio(512)).is_ok());
        let err = s.check_direct_alignment(&dio(4096)).unwrap_err().to_string();
        assert!(err.starts_with("entries[1].size: 512 bytes:"), "{err}");
        assert!(err.contains("multiples of 4096") && err.contains("test"), "{err}");
        // Sizes fit but random offsets are 512-aligned: `alignment` is named.
        s.entries[1].size = 8192;
        let err = s.check_direct_alignment(&dio(4096)).unwrap_err().to_string();
        assert!(err.starts_with("alignment: 512 bytes:"), "{err}");
        s.alignment = 4096;
        assert!(s.check_direct_alignment(&dio(4096)).is_ok());
        // Purely sequential requests do not use `alignment`: their offsets are sums of sizes.
        let seq = spec(vec![e(65536, 100.0, 100.0, 0.0)], 1, 1 << 20);
        assert!(seq.check_direct_alignment(&dio(4096)).is_ok());
    }
}
