//! The operations of a load file: dbench's kinds and one compact parsed line.

/// Operation kinds, named and ordered as dbench's latency table (dbench.c op_names).
pub const KINDS: &[&str] = &[
    "NTCreateX",
    "Close",
    "Rename",
    "Unlink",
    "Deltree",
    "Rmdir",
    "Mkdir",
    "Qpathinfo",
    "Qfileinfo",
    "Qfsinfo",
    "Sfileinfo",
    "Find",
    "WriteX",
    "ReadX",
    "LockX",
    "UnlockX",
    "Flush",
];
pub(super) const NTCREATEX: u8 = 0;
pub(super) const CLOSE: u8 = 1;
pub(super) const RENAME: u8 = 2;
pub(super) const UNLINK: u8 = 3;
pub(super) const DELTREE: u8 = 4;
pub(super) const RMDIR: u8 = 5;
pub(super) const MKDIR: u8 = 6;
pub(super) const QPATHINFO: u8 = 7;
pub(super) const QFILEINFO: u8 = 8;
pub(super) const QFSINFO: u8 = 9;
pub(super) const SFILEINFO: u8 = 10;
pub(super) const FIND: u8 = 11;
pub(super) const WRITEX: u8 = 12;
pub(super) const READX: u8 = 13;
pub(super) const LOCKX: u8 = 14;
pub(super) const UNLOCKX: u8 = 15;
pub(super) const FLUSH: u8 = 16;
/// dbench's Sleep: not an operation on the filesystem, so not measured.
pub(super) const SLEEP: u8 = 17;
pub(super) const NKINDS: usize = 17;

/// Stands for "client1" inside interned paths; replaced by each client's name.
pub(super) const CLIENT_MARK: u8 = 0x01;
pub(super) const NONE: u32 = u32::MAX;

/// dbench's NTCreateX create dispositions and options (dbench.h).
pub(super) const FILE_CREATE: u32 = 2;
pub(super) const FILE_OVERWRITE: u32 = 4;
pub(super) const FILE_OVERWRITE_IF: u32 = 5;
pub(super) const FILE_DIRECTORY_FILE: u32 = 0x1;

/// One load-file line, 28 bytes (client.txt has 458k of them). `a`, `b`, `c`
/// by kind: NTCreateX (options, disposition, -), ReadX/WriteX (offset, size,
/// ret_size), LockX/UnlockX (offset, size, -), FIND_FIRST (level, maxcnt, -),
/// Rename (-, -, second path), Sleep (usec, -, -). Offsets fit 32 bits as in
/// dbench, which reads them into an int.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub line: u32,
    pub kind: u8,
    pub expect_ok: bool,
    pub status: u16,
    pub path: u32,
    pub handle: u32,
    pub a: u32,
    pub b: u32,
    pub c: u32,
}

impl Op {
    #[inline]
    pub fn path2(&self) -> u32 {
        if self.kind == RENAME {
            self.c
        } else {
            NONE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_stay_compact() {
        assert_eq!(std::mem::size_of::<Op>(), 28);
    }
}
