//! Measurement: clock, durations, latency histograms, CPU usage, and the timed multi-thread harness
//! (its control, its workers' recording, and steady-state detection).

pub mod clock;
pub mod control;
pub mod cpu;
pub mod duration;
pub mod fd_table;
pub mod harness;
pub mod hist;
pub mod interval_lat;
pub mod recorder;
pub mod sparse_clock;
pub mod steady;

pub use clock::now_ns;
pub use control::{Control, Progress, RunState, StartGate};
pub use fd_table::{own_fd_table, OwnFdTable};
pub use harness::{run_group, run_threads, Exit, GroupMember, MemberReport, PhaseTiming};
pub use recorder::Recorder;
pub use steady::Steady;
