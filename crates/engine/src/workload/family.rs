//! What every workload family implements: a named list of phases that the
//! session runs one at a time, keeping its state (file table, files laid out)
//! between them so Python can remount or drop caches in between.

use crate::error::Result;
use crate::measure::Control;
use crate::report::PhaseReport;
use crate::settings::Settings;

pub trait Workload: Send {
    /// The phases in their natural order.
    fn phases(&self) -> &'static [&'static str];
    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport>;
}
