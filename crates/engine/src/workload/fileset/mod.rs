//! The fileset family: PostMark 1.5 (faithful) and filemark (PostMark made
//! multi-threaded, time-based and with biases in 1% steps).
//!
//! PostMark keeps a table of 2 x `files` slots. `create` fills `files` of them,
//! each transaction reads or appends one live file, then creates or deletes one,
//! and `delete` removes what is left in slot order. fsmeter draws its random
//! numbers from the same generator (MT19937 as PostMark 1.5x seeds it:
//! `sgenrand`, the 1999 reference code) in the same order, so for one thread
//! and the same parameters and seed it creates, reads, appends and deletes
//! exactly the files PostMark does:
//!
//! 1. `sgenrand(seed)`, then the source buffer (2 x size_high bytes of
//!    `32 + RND(95)`);
//! 2. per create: a free slot (no draw), the location (`RND(total weight)`, only
//!    with more than one location), the subdirectory (`RND(n)`, only when n > 1),
//!    the size (`low + RND(high - low)`, no draw when high = low);
//! 3. per transaction: unless bias read is -1, `RND(10) < bias_read` picks read
//!    over append, then a live slot (`RND(2 x files)` until one is in use), and
//!    for an append below size_high `RND(high - size) + 1` bytes; unless bias
//!    create is -1, `RND(10) < bias_create` picks create over delete (a delete
//!    draws a live slot the same way).
//!
//! `RND(x)` is `genrand() % x`, and 0 without a draw when x <= 0. Files are named
//! as PostMark names them: the running number of the create, under `s<k>/`
//! when subdirectories > 1, under the drawn location.
//!
//! Threads (filemark): each thread owns `files / threads` of the files, its own
//! 2 x share slot table, its own generator (thread 0 seeded with `seed` itself,
//! so one thread is PostMark) and a share of the transactions. Nothing is shared
//! on the hot path: no lock, no contention but the filesystem's own (all threads
//! work in the same directories). Names stay unique: thread t of T names its
//! n-th file `(n - 1) * T + t + 1`.
//!
//! Memory: 12 bytes per slot (size, name number, directory index), 24 per file;
//! names are built into a per-thread buffer when needed.

mod buffered;
mod counts;
mod dirs;
mod io;
mod phases;
mod rng;
mod spec;
mod threads;
mod verify;
mod worker;

pub use phases::Fileset;
pub use rng::Mt1999;
pub use spec::{FilesetMode, FilesetSpec, Location};
