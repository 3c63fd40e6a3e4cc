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
pub mod report;
pub mod settings;
pub mod sys;
pub mod verify;
pub mod workload;

pub use error::{EngineError, Result};
pub use job::{Job, WorkloadSpec};
pub use measure::{Control, Progress};
pub use report::PhaseReport;

use workload::Workload;

pub struct Session {
    job: Job,
    workload: Box<dyn Workload>,
}

impl Session {
    pub fn new(job: Job) -> Result<Session> {
        job.validate()?;
        let workload: Box<dyn Workload> = match &job.workload {
            WorkloadSpec::Access(spec) => Box::new(workload::access::Access::new(&job.settings, spec.clone())?),
            WorkloadSpec::Replay(spec) => Box::new(workload::replay::Replay::new(&job.settings, spec.clone())?),
            WorkloadSpec::Fileset(spec) => Box::new(workload::fileset::Fileset::new(&job.settings, spec.clone())?),
            WorkloadSpec::Tree(spec) => Box::new(workload::tree::Tree::new(&job.settings, spec.clone())?),
            WorkloadSpec::Iozone(spec) => Box::new(workload::iozone::Iozone::new(&job.settings, spec.clone())?),
            WorkloadSpec::Mix(spec) => Box::new(workload::mix::Mix::new(&job.settings, spec.clone())?),
            WorkloadSpec::Bonnie(spec) => Box::new(workload::bonnie::Bonnie::new(&job.settings, spec.clone())?),
            WorkloadSpec::Macro(spec) => Box::new(workload::macro_tools::MacroTools::new(&job.settings, spec.clone())?),
            WorkloadSpec::Crash(spec) => Box::new(workload::crash::Crash::new(&job.settings, spec.clone())?),
        };
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
