//! The replay family (dbench 4): replay a dbench load file (client.txt format)
//! against the filesystem, one client per thread, the way dbench's `fileio`
//! backend turns each line into system calls.
//!
//! Phases: `setup` creates `clients/clientN` for every client, `run` replays
//! the file in a loop (warm-up, then a time- or pass-bounded measured window),
//! `cleanup` removes what the clients left under `clients/`; with `verify`, a
//! `verify` phase re-reads every byte the clients wrote (written.rs).
//!
//! The load file is parsed once, in `Replay::new`, into a compact table of
//! operations (paths interned once, handles mapped to dense indices) shared by
//! every client; each client only owns its open-file table and a few buffers.
//!
//! Semantics follow dbench 4.0 (child.c, fileio.c); the references in the
//! comments name the function there.

mod client;
mod ops;
mod parse;
mod replayer;
mod spec;
mod sys;
mod written;

pub use ops::{Op, KINDS};
pub use parse::LoadFile;
pub use replayer::Replay;
pub use spec::{ReplaySpec, DEFAULT_LOADFILE};
