//! The bonnie family (Bonnie 1.x and bonnie++): sequential per-char and block
//! I/O, rewrite and random seeks on one file, then bonnie++'s small-file tests.
//!
//! Phases, in Bonnie's order: `putc_write`, `block_write`, `rewrite`,
//! `getc_read`, `block_read`, `seeks` (io.rs), then `seq_create`, `seq_stat`,
//! `seq_del`, `ran_create`, `ran_stat`, `ran_del` (files.rs), and `cleanup`.
//! Each phase is timed from its first operation to the end of its closing
//! fsync/close (or sync), as the originals time them; CPU is the process's
//! rusage over that window, so %CPU = (user + sys) / elapsed as Bonnie prints it.

mod files;
mod io;
mod stdio;

use serde::Deserialize;

use crate::error::{EngineError, Result};
use crate::measure::Control;
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::workload::family::Workload;

/// The data file, in `dir`; bonnie++ calls it Bonnie.<pid>.
pub const DATA_FILE: &str = "Bonnie.data";
/// The directory of the small-file tests, in `dir`.
pub const FILES_DIR: &str = "Bonnie.files";
/// Bonnie's seek write-back period: every 10th seek also writes its chunk back.
pub const UPDATE_SEEK: u64 = 10;

/// How the per-char phases move each byte.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CharIo {
    /// Bonnie 1.x: putc/getc into a stdio-like buffer of st_blksize bytes (glibc's choice).
    Stdio,
    /// bonnie++ 1.9x/2.x: one write(2)/read(2) system call per byte.
    Syscall,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BonnieSpec {
    /// Size of the data file (0: no I/O phases, file tests only).
    #[serde(default = "default_size")]
    pub size: u64,
    /// Block size of the block, rewrite and seek phases.
    #[serde(default = "default_chunk")]
    pub chunk: u64,
    #[serde(default = "default_char_io")]
    pub char_io: CharIo,
    /// Bytes moved by the per-char phases (None: the whole file, as Bonnie 1.x; bonnie++ does 3 MiB).
    #[serde(default)]
    pub char_io_size: Option<u64>,
    #[serde(default = "default_seeks")]
    pub seeks: u64,
    #[serde(default = "default_seek_procs")]
    pub seek_procs: usize,
    /// End every I/O phase with fsync inside its time (bonnie++ does; Bonnie 1.x only closes).
    #[serde(default)]
    pub fsync: bool,
    /// O_DIRECT for the block, rewrite and seek phases.
    #[serde(default)]
    pub direct: bool,
    /// bonnie++ -b: fsync after every write (seek write-backs, each created file and its directory).
    #[serde(default)]
    pub sync_writes: bool,
    /// Small-file tests: number of files (bonnie++ -n N creates N x 1024; 0: no file tests).
    #[serde(default)]
    pub files: u64,
    #[serde(default)]
    pub file_max_size: u64,
    #[serde(default)]
    pub file_min_size: u64,
    #[serde(default = "default_dirs")]
    pub file_dirs: u32,
    /// write(2)/read(2) size for the small files' contents (bonnie++ -n ...:chunk-size).
    #[serde(default = "default_chunk")]
    pub file_chunk: u64,
    /// Verify the data file (docs/verify.md): every chunk carries a header and a checksum.
    #[serde(default)]
    pub verify: Option<crate::verify::Checksum>,
    /// Time every chunk, seek and file and keep latency histograms (bonnie++ reports a latency per
    /// phase); false: the phases are timed whole and their operations counted, with no clock read
    /// per operation.
    #[serde(default = "default_true")]
    pub latency: bool,
}

fn default_true() -> bool {
    true
}

fn default_size() -> u64 {
    1 << 30
}
fn default_chunk() -> u64 {
    8192
}
fn default_char_io() -> CharIo {
    CharIo::Stdio
}
fn default_seeks() -> u64 {
    4000
}
fn default_seek_procs() -> usize {
    3
}
fn default_dirs() -> u32 {
    1
}

impl BonnieSpec {
    /// The harness's histogram precision: 3 significant digits, or 0 (operations counted, not timed).
    pub(crate) fn sigfig(&self) -> u8 {
        if self.latency {
            3
        } else {
            0
        }
    }

    pub fn char_bytes(&self) -> u64 {
        self.char_io_size.unwrap_or(self.size).min(self.size)
    }

    pub fn chunks(&self) -> u64 {
        self.size.checked_div(self.chunk).unwrap_or(0)
    }

    pub fn validate(&self, job: &Settings) -> Result<()> {
        if job.threads != 1 {
            return Err(EngineError::invalid(
                "threads",
                "bonnie runs one file in one process: leave threads at 1 (seek_procs sets the seekers)",
            ));
        }
        if self.size == 0 && self.files == 0 {
            return Err(EngineError::invalid("size", "size and files are both 0: nothing to run"));
        }
        if self.size > 0 {
            if self.chunk == 0 || self.chunk > (64 << 20) {
                return Err(EngineError::invalid("chunk", "must be between 1 byte and 64 MiB"));
            }
            if self.size < self.chunk {
                return Err(EngineError::invalid(
                    "size",
                    format!(
                        "{} bytes is smaller than chunk ({} bytes): use a larger size or a smaller chunk",
                        self.size, self.chunk
                    ),
                ));
            }
            if !self.size.is_multiple_of(self.chunk) {
                return Err(EngineError::invalid(
                    "size",
                    format!("{} bytes is not a whole number of chunks of {} bytes: round it", self.size, self.chunk),
                ));
            }
            if self.direct && !self.chunk.is_multiple_of(512) {
                return Err(EngineError::invalid(
                    "chunk",
                    format!("{} bytes does not fit O_DIRECT, which needs multiples of 512 bytes: use a multiple of 512, or direct=false", self.chunk),
                ));
            }
            if let Some(c) = self.char_io_size {
                if c > self.size {
                    return Err(EngineError::invalid(
                        "char_io_size",
                        "must be <= size (the per-char phases stay in the file)",
                    ));
                }
            }
            if self.seek_procs == 0 || self.seek_procs > 1024 {
                return Err(EngineError::invalid("seek_procs", "must be between 1 and 1024"));
            }
            if self.seeks > (1 << 40) {
                return Err(EngineError::invalid("seeks", "must be <= 2^40"));
            }
            if let Some(algo) = self.verify {
                if self.chunk < algo.min_block() as u64 {
                    return Err(EngineError::invalid(
                        "chunk",
                        format!(
                            "{} bytes: with verify, each chunk holds a {}-byte header and data: use >= {} bytes",
                            self.chunk,
                            algo.header_len(),
                            algo.min_block()
                        ),
                    ));
                }
                if !self.char_bytes().is_multiple_of(self.chunk) {
                    return Err(EngineError::invalid("char_io_size", format!("{} bytes: with verify, the per-char phases move whole chunks: use a multiple of chunk ({} bytes)", self.char_bytes(), self.chunk)));
                }
            }
        } else if self.verify.is_some() {
            return Err(EngineError::invalid("verify", "size is 0: there is no data file to verify"));
        }
        if self.files > 0 {
            if self.files > 50_000_000 {
                return Err(EngineError::invalid(
                    "files",
                    "must be <= 50,000,000 (the names are kept in memory, as bonnie++ does)",
                ));
            }
            if self.file_min_size > self.file_max_size {
                return Err(EngineError::invalid("file_min_size", "must be <= file_max_size"));
            }
            if self.file_max_size > (1 << 30) {
                return Err(EngineError::invalid("file_max_size", "must be <= 1 GiB"));
            }
            if self.file_dirs == 0 || self.file_dirs >= 100_000 {
                return Err(EngineError::invalid("file_dirs", "must be between 1 and 99,999 (bonnie++'s limit)"));
            }
            if self.file_chunk == 0 || self.file_chunk > (64 << 20) {
                return Err(EngineError::invalid("file_chunk", "must be between 1 byte and 64 MiB"));
            }
        }
        Ok(())
    }
}

/// Memory that can cache the data file: the smaller of RAM and the limit of
/// this process's memory cgroup (and its ancestors). Returns (bytes, source).
pub fn cacheable_memory() -> (u64, String) {
    let mut best = (mem_total().unwrap_or(u64::MAX), "RAM (MemTotal)".to_string());
    for (path, file) in cgroup_limit_files() {
        if let Ok(text) = std::fs::read_to_string(&path) {
            if let Ok(v) = text.trim().parse::<u64>() {
                // cgroup v1 reports "no limit" as a huge page-rounded number.
                if v < best.0 && v < (1u64 << 60) {
                    best = (
                        v,
                        format!(
                            "memory cgroup limit ({file} of {})",
                            path.parent().map(|p| p.display().to_string()).unwrap_or_default()
                        ),
                    );
                }
            }
        }
    }
    best
}

fn mem_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// memory.max (v2) or memory.limit_in_bytes (v1) of this process's cgroup and every ancestor.
fn cgroup_limit_files() -> Vec<(std::path::PathBuf, &'static str)> {
    let mut out = Vec::new();
    let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") else { return out };
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrl, rel) = (parts.next(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let (base, file) = if ctrl.is_empty() {
            (std::path::PathBuf::from("/sys/fs/cgroup"), "memory.max")
        } else if ctrl.split(',').any(|c| c == "memory") {
            (std::path::PathBuf::from("/sys/fs/cgroup/memory"), "memory.limit_in_bytes")
        } else {
            continue;
        };
        let mut p = base.join(rel.trim_start_matches('/'));
        loop {
            out.push((p.join(file), file));
            if p == base || !p.pop() {
                break;
            }
        }
    }
    out
}

/// The size rule: Bonnie wants a file of at least twice the memory that can cache it.
pub fn size_rule_warning(size: u64) -> (Option<String>, serde_json::Value) {
    let (mem, source) = cacheable_memory();
    let ok = mem == u64::MAX || size >= mem.saturating_mul(2);
    let detail = serde_json::json!({"cacheable_memory_bytes": if mem == u64::MAX { serde_json::Value::Null } else { mem.into() },
                                     "cacheable_memory_source": source, "size_rule_ok": ok});
    if ok {
        return (None, detail);
    }
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    (
        Some(format!(
            "size {:.0} MiB is under twice the memory that can cache it ({:.0} MiB, {source}): the page cache, not the \
             filesystem, answers much of this phase; use size >= {:.0} MiB, or bound the cache with the \
             page_cache_limit host factor (a campaign) or a memory cgroup",
            mib(size),
            mib(mem),
            mib(mem * 2)
        )),
        detail,
    )
}

pub struct Bonnie {
    spec: BonnieSpec,
    files: files::FileTests,
    verify: Option<io::Verifier>,
}

impl Bonnie {
    pub fn new(job: &Settings, spec: BonnieSpec) -> Result<Bonnie> {
        spec.validate(job)?;
        let files = files::FileTests::new(&spec, job);
        let verify = spec.verify.map(|algo| io::Verifier::new(algo, &spec));
        Ok(Bonnie { spec, files, verify })
    }

    pub fn spec(&self) -> &BonnieSpec {
        &self.spec
    }

    fn cleanup(&mut self, job: &Settings) -> Result<PhaseReport> {
        let mut report = PhaseReport::new("cleanup");
        let data = job.dir.join(DATA_FILE);
        let removed = match std::fs::remove_file(&data) {
            Ok(()) => 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(EngineError::io(format!("unlink {}", data.display()), e)),
        };
        report.counters.insert("data_files".into(), removed);
        let (files, dirs) = self.files.cleanup(job)?;
        report.counters.insert("files".into(), files);
        report.counters.insert("directories".into(), dirs);
        Ok(report)
    }
}

pub const PHASES: &[&str] = &[
    "putc_write",
    "block_write",
    "rewrite",
    "getc_read",
    "block_read",
    "seeks",
    "verify",
    "seq_create",
    "seq_stat",
    "seq_del",
    "ran_create",
    "ran_stat",
    "ran_del",
    "cleanup",
];

impl Workload for Bonnie {
    fn phases(&self) -> &'static [&'static str] {
        PHASES
    }

    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        let needs_io =
            matches!(phase, "putc_write" | "block_write" | "rewrite" | "getc_read" | "block_read" | "seeks" | "verify");
        if needs_io && self.spec.size == 0 {
            return Err(EngineError::invalid("size", format!("size is 0: there is no data file for phase {phase}")));
        }
        if phase.starts_with("seq_") || phase.starts_with("ran_") {
            if self.spec.files == 0 {
                return Err(EngineError::invalid(
                    "files",
                    format!("files is 0: there are no small files for phase {phase}"),
                ));
            }
            return self.files.run(phase, &self.spec, job, ctl);
        }
        if let Some(v) = self.verify.as_mut() {
            v.start_phase(phase);
        }
        match phase {
            "cleanup" => self.cleanup(job),
            "seeks" => io::seeks(&self.spec, job, ctl, self.verify.as_mut()),
            "verify" => match &self.verify {
                Some(v) => v.reread(&self.spec, job, ctl),
                None => Err(EngineError::invalid(
                    "verify",
                    "the verify phase needs verify = \"crc32c\", \"xxh3\" or \"sha256\" in the spec",
                )),
            },
            _ => io::sequential(phase, &self.spec, job, ctl, self.verify.as_ref()),
        }
    }
}

/// splitmix64: a fast, well-mixed hash of a counter (seek offsets, names).
#[inline(always)]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A NUL-terminated C path for one-off (not per-operation) system calls.
pub(crate) fn cpath(p: &std::path::Path) -> std::ffi::CString {
    std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).expect("path without NUL")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_a_permutation_like_hash() {
        let v: std::collections::HashSet<u64> = (0..10_000).map(mix64).collect();
        assert_eq!(v.len(), 10_000);
    }

    #[test]
    fn size_rule_warns_on_small_files() {
        let (w, d) = size_rule_warning(1 << 20);
        assert!(w.is_some(), "a 1 MiB file is cached on any machine");
        assert_eq!(d["size_rule_ok"], false);
        let (w, _) = size_rule_warning(u64::MAX / 2);
        assert!(w.is_none());
    }
}
