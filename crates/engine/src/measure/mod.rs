//! Measurement: clock, durations, latency histograms, CPU usage, and the timed multi-thread harness.

pub mod clock;
pub mod cpu;
pub mod duration;
pub mod harness;
pub mod hist;
pub mod interval_lat;

pub use clock::now_ns;
pub use harness::{
    run_group, run_threads, Control, Exit, GroupMember, MemberReport, PhaseTiming, Progress, Recorder, RunState,
    StartGate, Steady,
};
