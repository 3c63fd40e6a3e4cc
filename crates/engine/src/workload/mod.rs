//! Workload families. Each is a `Workload`: a named list of phases that the
//! session runs one at a time, keeping its state (file table, files laid out)
//! between them so Python can remount or drop caches in between.

pub mod access;
pub mod replay;
pub mod fileset;
pub mod tree;
pub mod iozone;
pub mod mix;
pub mod bonnie;
pub mod macro_tools;
pub mod macro_verify;
pub mod crash;

use crate::error::Result;
use crate::settings::Settings;
use crate::measure::Control;
use crate::report::PhaseReport;

pub trait Workload: Send {
    /// The phases in their natural order.
    fn phases(&self) -> &'static [&'static str];
    fn run_phase(&mut self, phase: &str, job: &Settings, ctl: &Control) -> Result<PhaseReport>;
}
