//! The access family (pgmeter / Iometer / fio class): a weighted mix of request
//! sizes, each with its own read and random percentages, over files laid out
//! before measuring.
//!
//! `access_group` (group.rs) runs several access jobs together in one measured phase, as fio
//! runs the jobs of one group.
//!
//! Phases: `prepare` lays the files out (timed, reported as writes), `run`
//! measures the mix, `cleanup` removes the files.
//!
//! Sequential requests of thread t walk its own 1/T share of the data set (the
//! files seen as one concatenated space), wrapping at the end of the share, so
//! one thread reading `total_bytes` = the data set reads every byte once.

mod backlog;
mod blockmap;
mod cpuio;
mod depth1;
mod dirmap;
mod dist;
mod errors;
mod fd;
mod fileops;
mod gen;
mod group;
mod iolog;
mod issuelog;
mod lattarget;
mod layout;
mod pace;
mod prio;
mod regions;
mod replay;
mod run;
mod shape;
mod spec;
mod sprandom;
mod validate;
mod verification;
mod worker;
mod workload;

pub use backlog::{Backlog, Piece};
pub use blockmap::BlockPerm;
pub use cpuio::CpuMode;
pub use dist::{zeta, Dist, Skew};
pub use errors::{ContinueOn, ErrorCounts, OnError};
pub use gen::{AccessGen, GenOp};
pub use group::{AccessGroup, AccessGroupSpec, ExitWhat, GroupJob};
pub use iolog::{IoLogSpec, IoRecord};
pub use issuelog::{Action as IssueAction, IssueLogSpec, Issued};
pub use lattarget::LatTargetSpec;
pub use pace::{Go, MemMode, MemPolicy, PaceSpec, Pacer, PlaceSpec, RateProcess, SteadyKind, SteadySpec};
pub use prio::{CmdPrio, PrioSpec};
pub use regions::ThreadRegion;
pub use replay::ReplaySpec;
pub use shape::{parse_sequence, SequenceWalk, Walk, Zone, ZoneIndex, ZoneSplit};
pub use spec::{AccessEntry, AccessSpec, FioEngine, StatType, MAX_BACKLOG};

pub use sprandom::{physical_size as sprandom_physical_size, Plan as SprandomPlan, SprStats, Sprandom, SprandomSpec};
pub use workload::Access;
