//! Data verification: every block a verifying workload writes carries a
//! header (magic, offset, length, writer thread, seed, write number) and a
//! checksum of its payload; reads check them. `header` holds the format and
//! the check; docs/verify.md describes the layout for users.

pub mod header;

pub use header::{
    check_block, check_block_expect, fill_block, fill_blocks, BlockHeader, Checksum, Mismatch, MismatchKind, CHECKSUM_LEN,
    HEADER_LEN, MIN_BLOCK,
};
