//! fsmeter's disk model: the service time of every request a spinning disk receives.
//!
//! The model follows Ruemmler and Wilkes, "An introduction to disk drive modeling" (IEEE
//! Computer, 1994), and the drive modules of DiskSim (Bucy, Schindler, Schlosser, Ganger; the
//! `diskmodel` library's layout "g1" and mechanics "g1"):
//!
//! - [`geometry`]: zoned recording (sectors per track by zone), the logical-to-physical map
//!   (cylinder after cylinder, surface after surface) with track and cylinder skew;
//! - [`seek`]: the seek time over cylinder distance, from a measured seek table (linear
//!   interpolation, DiskSim's "extracted" curve) or from three datasheet figures (track to track,
//!   average, full stroke) with Lee's curve `a*sqrt(d-1) + b*(d-1) + c`;
//! - [`drive`]: the drive's state over time: the head's cylinder and surface, the platter's angle
//!   (a function of time), the read-ahead segment buffer, the write-back cache with its destaging
//!   while idle, cache flushes, and the choice of the next queued request (FIFO or shortest
//!   positioning time first);
//! - [`spec`]: the drive description (JSON) every number comes from;
//! - [`queue`]: the queue between the daemon's threads, in which a waiting thread sleeps (never
//!   spins: the threads run under SCHED_FIFO);
//! - [`stats`]: counters and histograms of the served requests (modelled service times and
//!   lateness of the replies).
//!
//! Time is nanoseconds of CLOCK_MONOTONIC, passed in explicitly: the model never reads a clock, so
//! it is deterministic and its tests run on a simulated clock.

pub mod drive;
pub mod geometry;
pub mod image;
pub mod queue;
pub mod seek;
pub mod spec;
pub mod stats;

pub use drive::{Drive, Model, Op, Request, Service};
pub use spec::{DriveSpec, SpecError};
