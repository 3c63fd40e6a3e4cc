//! The access_group family: several access jobs measured together in one phase, as fio runs
//! the jobs of one group. Its code lives with the access family it is made of (`access/group.rs`).

pub use super::access::{AccessGroup, AccessGroupSpec, GroupJob};
