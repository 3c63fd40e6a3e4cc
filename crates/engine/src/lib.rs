//! fsmeter's engine: generates every operation the filesystem sees.
//!
//! A `Session` holds one job and runs its workload one named phase at a time;
//! each phase returns a `PhaseReport`. Nothing on the hot path allocates,
//! locks or calls out: workers own their counters and histograms, merged at
//! the end of the phase.

pub mod backend;
pub mod error;
pub mod job;
pub mod measure;
pub mod nofollow;
pub mod report;
pub mod settings;
pub mod sys;
pub mod verify;
pub mod workload;

pub use error::{EngineError, Result};
pub use job::Job;
pub use measure::{Control, Progress};
pub use report::PhaseReport;
pub use workload::WorkloadSpec;

use workload::family::Workload;

pub struct Session {
    job: Job,
    workload: Box<dyn Workload>,
}

impl Session {
    pub fn new(job: Job) -> Result<Session> {
        job.validate()?;
        let workload = job.workload.build(&job.settings)?;
        Ok(Session { job, workload })
    }

    pub fn from_json(text: &str) -> Result<Session> {
        Session::new(Job::from_json(text)?)
    }

    pub fn phases(&self) -> &'static [&'static str] {
        self.workload.phases()
    }

    pub fn job(&self) -> &Job {
        &self.job
    }

    /// Run one phase. A stop requested through `ctl` ends it early, marked interrupted.
    pub fn run_phase(&mut self, phase: &str, ctl: &Control) -> Result<PhaseReport> {
        if !self.phases().contains(&phase) {
            return Err(EngineError::UnknownPhase { phase: phase.to_string(), known: self.phases().to_vec() });
        }
        let mut report = self.workload.run_phase(phase, &self.job.settings, ctl)?;
        report.phase = phase.to_string();
        Ok(report)
    }
}
