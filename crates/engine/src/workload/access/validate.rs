//! The access spec's checks: every parameter and every combination the engine cannot run is
//! refused before a phase starts, naming the parameter and saying what is allowed
//! (`EngineError::invalid`). `validate` runs them all; `check_direct_alignment` runs when the
//! files are opened O_DIRECT and the filesystem's alignment is known.

use super::spec::{AccessSpec, FioEngine, MAX_BACKLOG};
use crate::backend::dio::DioAlign;
use crate::backend::BackendKind;
use crate::error::{EngineError, Result};
use crate::measure::duration::secs_to_ns;
use crate::settings::Settings;
use crate::verify::{self, Checksum};

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
                "psync keeps one request in flight per thread; use backend=io_uring or libaio for queue_depth > 1",
            ));
        }
        if job.backend.maps() {
            self.validate_mmap(job)?;
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
        if let Some(spr) = &self.sprandom {
            self.validate_sprandom(spr)?;
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
        self.validate_latency_target(job)?;
        self.validate_replay()?;
        self.validate_fio_layout(job)?;
        let check = super::regions::RegionCheck {
            threads: job.threads,
            one_file: self.file_count == 1 && !self.thread_files && !self.shared_file && self.run_offset.is_none(),
            plain: self.zone_size == 0 && self.random_distribution.trim() == "random",
            end: self.offset + self.file_size,
            max_size: self.max_size() as u64,
            alignment: self.alignment,
            sequential: self.regions_sequential(),
            needs_bytes: self.duration_s.is_none(),
            total_bytes: self.total_bytes,
        };
        super::regions::validate(&self.thread_regions, &check)
    }

    /// fio's read_iolog: the log's requests fit the files, and nothing else draws or holds them.
    fn validate_replay(&self) -> Result<()> {
        let Some(r) = &self.replay else { return Ok(()) };
        r.validate(self.file_count, self.offset + self.file_size, self.max_size() as u64)?;
        if self.direct && !self.allow_unaligned_direct {
            if let Some(i) =
                r.ops.iter().position(|o| o[2] <= super::replay::TRIM && (o[3] % 512 != 0 || o[4] % 512 != 0))
            {
                return Err(EngineError::invalid(
                    "replay.ops",
                    format!(
                        "request {i}: {} bytes at {}: O_DIRECT needs multiples of 512 bytes",
                        r.ops[i][4], r.ops[i][3]
                    ),
                ));
            }
        }
        let clash = if self.pace.is_active() {
            Some("a rate, thinktime or flow (the log's times pace the requests)")
        } else if self.verify.is_some() || !self.verify_pattern.is_empty() || self.fault.is_some() {
            Some("verify, verify_pattern or a fault")
        } else if self.random_map || self.sprandom.is_some() || self.max_ios > 0 || self.trim_then_write {
            Some("random_map, sprandom, max_ios or trim_then_write (the log gives the requests)")
        } else if !self.thread_regions.is_empty() || self.zone_size > 0 || self.seq_add != 0 {
            Some("thread regions, zones or seq_add (the log gives the offsets)")
        } else if self.latency_target.is_some() || self.serialize_overlap {
            Some("latency_target or serialize_overlap")
        } else if self.fio_engine != FioEngine::Data {
            Some("an engine that is not data transfer")
        } else {
            None
        };
        match clash {
            Some(what) => Err(EngineError::invalid("replay", format!("cannot be combined with {what}"))),
            None => Ok(()),
        }
    }

    /// fio's latency target: one thread per job (fio searches each clone's depth on its own, and the
    /// statistics reset of the final window is the thread's own), and nothing else that holds requests back.
    fn validate_latency_target(&self, job: &Settings) -> Result<()> {
        let Some(l) = &self.latency_target else { return Ok(()) };
        l.validate()?;
        let clash = if job.threads > 1 {
            Some("threads > 1 (each thread would search its own depth and reset its own statistics): use one thread")
        } else if self.pace.is_active() {
            Some("a rate, thinktime or flow (they hold requests back while the depth is judged by latency)")
        } else if self.steadystate.is_some() {
            Some("steadystate (both would end the run)")
        } else if self.interval_lat || self.io_log.is_some() {
            Some("per-interval latency or a per-I/O log (the final window's statistics restart mid-run)")
        } else if self.fio_engine != FioEngine::Data {
            Some("an engine that is not data transfer")
        } else if self.serialize_overlap {
            Some("serialize_overlap (it holds requests back while the depth is judged by latency)")
        } else {
            None
        };
        match clash {
            Some(what) => Err(EngineError::invalid("latency_target", format!("cannot be combined with {what}"))),
            None => Ok(()),
        }
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
        if !self.offset.is_multiple_of(self.alignment) && !self.regions_sequential() {
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
        if self.random_map_block > 0 {
            self.check_dir_map(job)?;
        } else if self.random_map {
            let size = self.entries.iter().map(|e| e.size as u64).min().unwrap_or(0);
            if self.entries.iter().any(|e| !(e.size as u64).is_multiple_of(size)) || self.alignment != size {
                return Err(EngineError::invalid(
                    "random_map",
                    "needs request sizes that are multiples of the smallest, and alignment equal to it",
                ));
            }
            if self.sized_map() && self.entries.iter().any(|e| e.random_pct < 100.0) {
                return Err(EngineError::invalid(
                    "random_map",
                    "with several request sizes, needs every request random (random_pct = 100)",
                ));
            }
            let files = self.file_count as u64;
            if self.sized_map() && files * (self.file_size / size) > 1 << 30 {
                return Err(EngineError::invalid(
                    "random_map",
                    "with several request sizes, at most 2^30 blocks (a map of 128 MiB per thread): set random_map = false",
                ));
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
        let sequence = self.random_distribution.trim().starts_with("sequence");
        if (self.walks_one_file() || sequence)
            && !(self.file_count == 1 || (self.thread_files && self.file_count as usize == job.threads))
        {
            return Err(EngineError::invalid(
                if self.zone_size > 0 {
                    "zone_size"
                } else if sequence {
                    "random_distribution"
                } else {
                    "seq_add"
                },
                format!(
                    "each thread walks one file: use file_count = 1, or thread_files with file_count = threads ({})",
                    job.threads
                ),
            ));
        }
        if !self.verify_pattern.is_empty() && job.backend == BackendKind::Null {
            return Err(EngineError::invalid(
                "verify_pattern",
                "the null backend moves no data, so there is nothing to verify: use backend = psync or io_uring",
            ));
        }
        self.validate_fio_access()?;
        self.validate_fio_engine(job)?;
        self.validate_fill(job)?;
        self.validate_verify(job)
    }

    /// The mmap backends (backend/mmap.rs): one request at a time; with `direct` (msync and drop
    /// each request's pages) or fsyncs (msync), requests of whole pages, as fio's mmap engine asks.
    fn validate_mmap(&self, job: &Settings) -> Result<()> {
        let name = job.backend.name();
        if self.queue_depth > 1 {
            return Err(EngineError::invalid(
                "queue_depth",
                format!("the {name} backend copies one request at a time per thread (a memcpy); use queue_depth = 1"),
            ));
        }
        const PAGE: u64 = 4096;
        if self.direct || self.fsync_every > 0 {
            if let Some((i, e)) = self.entries.iter().enumerate().find(|(_, e)| !(e.size as u64).is_multiple_of(PAGE)) {
                return Err(EngineError::invalid(
                    format!("entries[{i}].size"),
                    format!(
                        "{} bytes: with direct or fsync_every the {name} backend msyncs whole pages, so request sizes \
                         must be multiples of {PAGE} bytes (fio's mmap engines ask the same)",
                        e.size
                    ),
                ));
            }
        }
        Ok(())
    }

    /// fio's fill_device: one thread writing its one file sequentially from the start, nothing else.
    fn validate_fill(&self, job: &Settings) -> Result<()> {
        if !self.fill {
            return Ok(());
        }
        let seq_writes = self.entries.iter().all(|e| e.read_pct == 0.0 && e.trim_pct == 0.0 && e.random_pct == 0.0);
        if !seq_writes || self.fio_engine != FioEngine::Data {
            return Err(EngineError::invalid(
                "fill",
                "fills with sequential writes only: make every entry a write with random_pct = 0",
            ));
        }
        if job.threads != 1 || self.file_count != 1 || self.offset != 0 {
            return Err(EngineError::invalid(
                "fill",
                "one thread fills one file from its start: use threads = 1, file_count = 1 and offset = 0",
            ));
        }
        // A pattern written unchecked (verify_pattern_check = false) is only what the writes carry.
        let checked_pattern = !self.verify_pattern.is_empty() && self.verify_pattern_check;
        if self.verify.is_some() || checked_pattern || self.fault.is_some() || self.shared_file {
            return Err(EngineError::invalid(
                "fill",
                "cannot be combined with verify, a checked verify_pattern, fault or a shared file",
            ));
        }
        if self.seq_add != 0 || self.zone_size != 0 {
            return Err(EngineError::invalid("fill", "fills from the start to the end: remove seq_add and zones"));
        }
        Ok(())
    }

    /// fio's file, directory and one-call engines: each issues its own system call per request, one at a
    /// time, and moves no data.
    fn validate_fio_engine(&self, job: &Settings) -> Result<()> {
        let e = self.fio_engine;
        if e != FioEngine::E4defrag && (!self.donor_name.is_empty() || self.donor_inplace) {
            return Err(EngineError::invalid("donor_name", "only for fio_engine = \"e4defrag\""));
        }
        if e != FioEngine::Cpuio && (self.cpu_load != 0 || self.cpu_exit_on_io_done) {
            return Err(EngineError::invalid("cpu_load", "only for fio_engine = \"cpuio\""));
        }
        if e == FioEngine::Data {
            return Ok(());
        }
        let name = e.name();
        if e == FioEngine::Cpuio {
            if !(1..=100).contains(&self.cpu_load) {
                return Err(EngineError::invalid("cpu_load", "the percent of one CPU to burn: between 1 and 100"));
            }
            if self.cpu_chunk_us == 0 || self.cpu_chunk_us > 3_600_000_000 {
                return Err(EngineError::invalid("cpu_chunk_us", "between 1 microsecond and an hour"));
            }
            if self.duration_s.is_none() {
                return Err(EngineError::invalid("duration_s", "a cpuio job burns CPU for a time: give duration_s"));
            }
        }
        if job.backend != BackendKind::Psync || self.queue_depth != 1 {
            return Err(EngineError::invalid(
                "fio_engine",
                format!("{name} issues one system call per request, as fio's engine does: use backend = psync and queue_depth = 1"),
            ));
        }
        if self.verify.is_some() || self.fault.is_some() || self.shared_file {
            return Err(EngineError::invalid(
                "fio_engine",
                format!("{name} moves no data: it cannot be combined with verify, fault or a shared file"),
            ));
        }
        if e.per_name() {
            if e.once() && self.duration_s.is_some() {
                return Err(EngineError::invalid(
                    "duration_s",
                    format!("{name} does each file name once (it is then created or gone): give total_bytes, not a duration"),
                ));
            }
            if e.once() && self.warmup_s > 0.0 {
                return Err(EngineError::invalid(
                    "warmup_s",
                    format!(
                        "{name} does each file name once: a warm-up would use names up unmeasured; set warmup_s = 0"
                    ),
                ));
            }
            if e.once() && job.threads > 1 && !self.thread_files {
                return Err(EngineError::invalid(
                    "thread_files",
                    format!("{name} with {} threads on one set of names would do each name several times: give each thread its own names (thread_files = true)", job.threads),
                ));
            }
            return Ok(());
        }
        let writes_only = self.entries.iter().all(|x| x.read_pct == 0.0 && x.trim_pct == 0.0);
        if matches!(e, FioEngine::Ftruncate | FioEngine::E4defrag) && !writes_only {
            return Err(EngineError::invalid(
                "entries",
                format!("{name} acts on writes only (fio fails its reads and trims with EINVAL): make every entry a write (read_pct = 0, trim_pct = 0)"),
            ));
        }
        if e == FioEngine::E4defrag {
            let d = &self.donor_name;
            if d.is_empty() || d.starts_with('/') || d.split('/').any(|c| c == ".." || c.is_empty()) {
                return Err(EngineError::invalid(
                    "donor_name",
                    format!("{d:?}: e4defrag needs a donor file: give a relative path inside dir, without '..'"),
                ));
            }
        }
        Ok(())
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
        self.validate_verify_pattern()?;
        if let Some(c) = &self.content {
            c.check().map_err(|m| EngineError::invalid("content", m))?;
            if self.verify.is_some() || !self.verify_pattern.is_empty() {
                return Err(EngineError::invalid(
                    "content",
                    "cannot be combined with verify or verify_pattern (verified writes carry their own bytes): drop one",
                ));
            }
        }
        if self.atomic && !self.direct {
            return Err(EngineError::invalid("atomic", "untorn writes (RWF_ATOMIC) need direct = true (O_DIRECT)"));
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
        self.ioprio.validate()?;
        if let Some(l) = &self.io_log {
            l.validate()?;
        }
        if let Some(l) = &self.iolog_out {
            l.validate(self.file_count)?;
            if self.fio_engine != FioEngine::Data {
                return Err(EngineError::invalid("iolog_out", "logs data transfers only: use the data engine"));
            }
        }
        self.place.validate()?;
        self.pace.validate(self.min_sizes())?;
        self.validate_shape(dist)
    }

    /// Zoned and sequence distributions, strided zones and the sequential offset modifier.
    fn validate_shape(&self, dist: crate::workload::access::Dist) -> Result<()> {
        use crate::workload::access::{parse_sequence, Dist, ZoneSplit};
        let min = self.entries.iter().map(|e| e.size as u64).min().unwrap_or(1);
        let bad = |m: String| EngineError::invalid("random_distribution", m);
        match dist {
            Dist::Zoned => {
                let z = ZoneSplit::parse(&self.random_distribution).map_err(bad)?;
                if z.abs_bytes() > self.file_size {
                    return Err(bad(format!(
                        "the zones of {:?} add up to {} bytes, more than the file's {} bytes (fio stops: zoned_abs \
                         sizes exceed file size): make them smaller or the file larger",
                        self.random_distribution,
                        z.abs_bytes(),
                        self.file_size
                    )));
                }
            }
            Dist::Sequence => {
                let seq = parse_sequence(&self.random_distribution).map_err(bad)?;
                let blocks = (self.file_size - min) / self.alignment + 1;
                if let Some(b) = seq.iter().find(|b| **b >= blocks) {
                    return Err(bad(format!(
                        "block {b} is beyond the file's {blocks} blocks of {} bytes: give blocks below {blocks}",
                        self.alignment
                    )));
                }
            }
            _ if self.random_sequence_stride => {
                return Err(EngineError::invalid(
                    "random_sequence_stride",
                    "only with random_distribution = \"sequence:...\"",
                ));
            }
            _ => {}
        }
        if self.zone_size == 0 && (self.zone_range != 0 || self.zone_skip != 0) {
            return Err(EngineError::invalid(
                "zone_size",
                "give zone_size (bytes per zone) with zone_range or zone_skip",
            ));
        }
        if self.zone_size > 0 {
            let range = self.zone_range();
            if range < min {
                return Err(EngineError::invalid(
                    "zone_range",
                    format!("{range} bytes: a zone must hold the smallest request ({min} bytes)"),
                ));
            }
            if self.seq_add != 0 {
                return Err(EngineError::invalid("seq_add", "cannot be combined with zone_size: use one or the other"));
            }
            if !dist.is_uniform() {
                return Err(EngineError::invalid(
                    "zone_size",
                    "strided zones draw random offsets uniformly inside the zone: use random_distribution = random",
                ));
            }
        }
        if self.seq_add != 0 && self.entries.iter().any(|e| e.random_pct > 0.0) {
            return Err(EngineError::invalid(
                "seq_add",
                "moves sequential requests only: every entry needs random_pct = 0 (fio's rw=randread:N is another option)",
            ));
        }
        if self.seq_add.unsigned_abs() >= self.file_size {
            return Err(EngineError::invalid(
                "seq_add",
                format!("{} bytes: must be smaller than file_size ({} bytes)", self.seq_add, self.file_size),
            ));
        }
        Ok(())
    }

    /// `verify_pattern`: alone (no headers, no other pattern, no trims), and its length divides every
    /// place a request or a layout write can start, so each byte's place in the pattern is fixed.
    fn validate_verify_pattern(&self) -> Result<()> {
        let n = self.verify_pattern.len() as u64;
        if n == 0 {
            if self.verify_pattern_meta || !self.verify_pattern_check {
                return Err(EngineError::invalid(
                    if self.verify_pattern_meta { "verify_pattern_meta" } else { "verify_pattern_check" },
                    "needs verify_pattern: set it, or drop this",
                ));
            }
            return Ok(());
        }
        let why = |m: String| Err(EngineError::invalid("verify_pattern", m));
        if self.verify_pattern_meta {
            self.validate_meta_blocks(n)?;
        }
        if self.verify.is_some() || !self.buffer_pattern.is_empty() {
            return why(
                "cannot be combined with verify or buffer_pattern (the pattern is what is written and checked): \
                        drop one"
                    .into(),
            );
        }
        if self.entries.iter().any(|e| e.trim_pct > 0.0) {
            return why("cannot be combined with trims (a trimmed range reads back as zeros): drop one".into());
        }
        if let Some((name, v)) = self.grid_place_not_divided_by(n) {
            return why(format!(
                "its {n} bytes must divide {name} ({v} bytes) so that every byte has one place in the pattern: use a \
                 pattern of 1, 2, 4, 8 ... bytes"
            ));
        }
        Ok(())
    }

    /// The first place a request can start or end (alignment, offsets, strides, zones, the layout's 1 MiB
    /// writes, each request size) that `unit` does not divide, named as in the spec: a pattern or a block of
    /// `unit` bytes repeats on a fixed grid only when it divides them all.
    fn grid_place_not_divided_by(&self, unit: u64) -> Option<(String, u64)> {
        let fixed = [
            ("alignment", self.alignment),
            ("offset", self.offset),
            ("run_offset", self.run_offset.unwrap_or(0)),
            ("seq_add", self.seq_add.unsigned_abs()),
            ("zone_range", self.zone_range()),
            ("zone_skip", self.zone_skip),
            ("1 MiB (the layout's writes)", 1 << 20),
        ];
        if let Some((name, v)) = fixed.iter().find(|(_, v)| !v.is_multiple_of(unit)) {
            return Some((name.to_string(), *v));
        }
        let (i, e) = self.entries.iter().enumerate().find(|(_, e)| !(e.size as u64).is_multiple_of(unit))?;
        Some((format!("entries[{i}].size"), e.size as u64))
    }

    /// `verify_pattern_meta`: a block holds a header and a payload, the pattern divides it, and every
    /// request and place a request starts covers whole blocks (one header each, at a fixed grid).
    fn validate_meta_blocks(&self, n: u64) -> Result<()> {
        let b = self.verify_block();
        let why = |m: String| Err(EngineError::invalid("verify_block", m));
        if b < verify::MIN_BLOCK as u64 || b > u32::MAX as u64 {
            return why(format!(
                "{b} bytes: a block with a header holds at least {} bytes (the {}-byte header and a payload)",
                verify::MIN_BLOCK,
                verify::HEADER_LEN
            ));
        }
        if !b.is_multiple_of(n) {
            return why(format!("{b} bytes is not a multiple of the {n}-byte verify_pattern: use a block that is"));
        }
        if let Some((name, v)) = self.grid_place_not_divided_by(b) {
            return why(format!(
                "{b} bytes must divide {name} ({v} bytes) so that every request covers whole blocks, each with its \
                 header: use a verify_block that does"
            ));
        }
        Ok(())
    }

    /// With verify, every request covers whole blocks of a fixed grid (one header each).
    fn validate_verify(&self, job: &Settings) -> Result<()> {
        if self.verify_backlog > MAX_BACKLOG || self.verify_backlog_batch > MAX_BACKLOG {
            return Err(EngineError::invalid(
                "verify_backlog",
                format!("at most {MAX_BACKLOG} requests (each thread keeps that many written requests to re-read)"),
            ));
        }
        if self.verify.is_none() {
            if self.verify_backlog > 0 && !self.checks_pattern() {
                return Err(EngineError::invalid(
                    "verify_backlog",
                    "needs verify (block headers to check) or a checked verify_pattern: set one",
                ));
            }
            return Ok(());
        }
        let b = self.verify_block();
        let algo = self.verify.unwrap_or(Checksum::Crc32c);
        if b < algo.min_block() as u64 {
            return Err(EngineError::invalid(
                "verify_block",
                format!(
                    "{b} bytes: a block verified with {} holds a {}-byte header and data: use >= {} bytes",
                    algo.name(),
                    algo.header_len(),
                    algo.min_block()
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
            if v % b != 0 && !(matches!(name, "offset" | "file_size") && self.regions_off_grid()) {
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
    /// fio's sprandom asks for one file, random writes only, of one size the offsets align to, and no
    /// random map or skewed distribution (fio: norandommap and its lfsr).
    fn validate_sprandom(&self, spr: &crate::workload::access::SprandomSpec) -> Result<()> {
        let e = &self.entries;
        if e.len() != 1 || e[0].read_pct != 0.0 || e[0].random_pct != 100.0 || e[0].trim_pct != 0.0 {
            return Err(EngineError::invalid("sprandom", "needs one entry of random writes only (fio: rw=randwrite)"));
        }
        if self.file_count != 1 {
            return Err(EngineError::invalid("sprandom", "needs exactly one file"));
        }
        if self.alignment != e[0].size as u64 {
            return Err(EngineError::invalid("sprandom", "needs alignment equal to the request size"));
        }
        if self.random_map
            || self.random_distribution != "random"
            || self.fio_engine != FioEngine::Data
            || self.walks_one_file()
        {
            return Err(EngineError::invalid(
                "sprandom",
                "takes its own offsets: no random_map, random_distribution, zones, offset modifier or fio engine with it",
            ));
        }
        spr.validate(self.file_size, self.alignment)
    }

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
        super::regions::check_direct(&self.thread_regions, a)
    }

    /// `random_map_block`: what fio's map with per-direction block sizes needs (dirmap.rs).
    fn check_dir_map(&self, job: &Settings) -> Result<()> {
        let block = self.random_map_block;
        let bad = |why: String| Err(EngineError::invalid("random_map_block", why));
        if !self.random_map {
            return bad("needs random_map = true".into());
        }
        if self.alignment != block {
            return bad(format!("must equal alignment ({})", self.alignment));
        }
        if self.entries.iter().any(|e| !(e.read_pct == 0.0 || e.read_pct == 100.0) || e.trim_pct > 0.0) {
            return bad("needs every entry to read or to write (read_pct 100 or 0, no trims)".into());
        }
        if self.entries.iter().any(|e| e.random_pct < 100.0) || self.walks_one_file() {
            return bad("needs every request random (random_pct = 100), with no zones or offset modifier".into());
        }
        let files =
            if self.thread_files { self.file_count as usize / job.threads.max(1) } else { self.file_count as usize };
        if files != 1 {
            return bad(format!("needs one file per thread, not {files}"));
        }
        for write in [false, true] {
            let sizes: Vec<u64> =
                self.entries.iter().filter(|e| (e.read_pct == 0.0) == write).map(|e| e.size as u64).collect();
            let Some(&unit) = sizes.iter().min() else { continue };
            if !unit.is_multiple_of(block) || sizes.iter().any(|s| !s.is_multiple_of(unit)) {
                return bad(format!(
                    "each direction's sizes must be multiples of its smallest, and that a multiple of {block}"
                ));
            }
            if unit > self.file_size {
                return bad(format!("a {unit}-byte request does not fit in the {}-byte file", self.file_size));
            }
        }
        if self.file_size / block > 1 << 30 {
            return bad("at most 2^30 blocks (a map of 128 MiB per thread): set random_map = false".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::spec::tests::{e, spec};
    use crate::backend::dio::DioAlign;

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
