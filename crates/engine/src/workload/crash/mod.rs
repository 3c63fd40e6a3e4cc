//! The crash family: a write-heavy load that records what fsync promised (the durability ledger),
//! and a check that compares a crashed copy of the filesystem with those promises.
//!
//! `write` phase: each thread owns `dir/crash-t<tid>/` and grows up to `files_per_thread` files
//! of at most `file_size`, writing `write_size` at a time: appends, or (with `overwrite_pct`)
//! in-place overwrites of blocks already written. Every `block_size` block carries a verification
//! header (crate::verify) with its offset, a generation (the thread's write sequence number, so a
//! newer write of a block always has a larger one), the thread and a per-file seed. After
//! `dirty_bytes` written, the thread syncs: fsync/fdatasync of each file it dirtied, then fsync
//! of its directory when it created files since the last one. Each sync that returned is a line
//! of the ledger (JSON lines, written to `ledger` at the end of the phase):
//!
//! ```text
//! {"op":"fsync"|"fdatasync","tid":0,"t0_ns":..,"t_ns":..,"file":"crash-t0/f000003","writes":[[block,nblocks,gen],..]}
//! {"op":"dirsync","tid":0,"t0_ns":..,"t_ns":..,"dir":"crash-t0","names":["f000003",..]}
//! {"op":"create","tid":0,"t_ns":..,"file":"crash-t0/f000003","seed":..}
//! ```
//! `t_ns` is CLOCK_MONOTONIC when the call returned: from then on the data (for a data sync,
//! the listed writes, i.e. every write to that file since its previous sync) or the directory
//! entries (for a dirsync) are durable by POSIX's promise.
//!
//! `check` phase (run on the crashed copy, mounted): the promises are the ledger lines with
//! `t_ns < cut_ns` (all of them when `cut_ns` is unset). Every block of every file the ledger
//! knows is read and checked. A promised block is intact when its header is valid, for this
//! offset and file, with a generation at least the promised one (a later, unpromised write may
//! have landed too). Anything else of a promised block (missing file or entry, short file,
//! zeros, another generation, garbage) is data lost beyond what fsync promised: a finding.

mod check;
mod spec;
mod write;

use crate::error::{EngineError, Result};
use crate::measure::Control;
use crate::report::PhaseReport;
use crate::settings::Settings;
use crate::verify::Checksum;
use crate::workload::family::Workload;
use check::{broke_promises, check_phase};
pub use spec::{CrashSpec, SyncCall};
use write::{cleanup_phase, write_phase};

pub struct Crash {
    spec: CrashSpec,
    algo: Checksum,
    /// Whether the last check found a promise broken (None: no check ran).
    broken: Option<bool>,
}

impl Crash {
    pub fn new(job: &Settings, spec: CrashSpec) -> Result<Self> {
        let algo = spec.validate(job)?;
        Ok(Crash { spec, algo, broken: None })
    }
}

impl Workload for Crash {
    fn phases(&self) -> &'static [&'static str] {
        &["write", "check", "cleanup"]
    }

    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        match phase {
            "write" => write_phase(&self.spec, self.algo, job, ctl),
            "check" => {
                let report = check_phase(&self.spec, self.algo, job)?;
                self.broken = Some(broke_promises(&report.counters));
                Ok(report)
            }
            "cleanup" => {
                let mut report = cleanup_phase(job)?;
                let at = self.spec.ledger.display();
                let removed = match (self.spec.ledger_temporary, self.broken) {
                    (true, Some(false)) => {
                        std::fs::remove_file(&self.spec.ledger)
                            .map_err(|e| EngineError::io(format!("remove {at}"), e))?;
                        true
                    }
                    (true, Some(true)) => {
                        report.warnings.push(format!("the check found promises broken: the ledger stays at {at}"));
                        false
                    }
                    _ => false, // a ledger the user named, or no check in this session: never guessed at
                };
                report.counters.insert("ledger_removed".into(), removed as u64);
                Ok(report)
            }
            _ => Err(EngineError::UnknownPhase { phase: phase.into(), known: self.phases().to_vec() }),
        }
    }
}
