//! Data verification for the iozone grid: every record written carries a
//! header and a checksum (docs/verify.md), every record read is checked, and at
//! the end of each cell, before iozone removes the file, the whole file is
//! re-read (untimed) and checked against the write each record should hold.

use std::ffi::CStr;

use crate::verify::{Checker, Checksum, LastWrites};

pub struct CellVerify {
    pub checker: Checker,
    last_writes: LastWrites,
    /// Index of the cell being run (mismatches name it as their "file").
    pub cell: u32,
    writes: u64,
    /// The last-writes table is exact until test 8's threads write the file at once.
    pub exact: bool,
    /// Cells whose own re-read found bad records.
    pub cells_corrupt: u64,
}

impl CellVerify {
    pub fn new(algo: Checksum, seed: u64) -> CellVerify {
        CellVerify {
            checker: Checker::new(algo, 4096, seed, 0, "grid"),
            last_writes: LastWrites::new(0, 0, 4096),
            cell: 0,
            writes: 0,
            exact: true,
            cells_corrupt: 0,
        }
    }

    /// A new cell: a new file of `file` bytes in records of `rec` bytes.
    pub fn start_cell(&mut self, cell: u32, file: u64, rec: u64) {
        self.cell = cell;
        self.checker.set_block(rec as usize);
        self.last_writes = LastWrites::new(1, file, rec);
        self.exact = true;
    }

    pub fn algo(&self) -> Checksum {
        self.checker.algo
    }

    pub fn seed(&self) -> u64 {
        self.checker.seed
    }

    /// Before record `buf` is written at `off`: fill it as a new write.
    #[inline]
    pub fn before_write(&mut self, buf: &mut [u8], off: u64) {
        self.writes += 1;
        self.checker.fill(buf, off, self.writes);
        self.last_writes.record(0, off, buf.len() as u64, 0, self.writes);
    }

    /// After record `buf` was read from `off`: check it.
    #[inline]
    pub fn after_read(&mut self, buf: &[u8], off: u64) {
        let (l, exact) = (&self.last_writes, self.exact);
        self.checker.check(buf, self.cell, off, |o| if exact { l.expected(0, o) } else { None });
    }

    /// Untimed, at the end of a cell: re-read the file record by record into `buf` and check it.
    pub fn reread(&mut self, path: &CStr, numrecs: u64, buf: &mut [u8]) {
        let before = self.checker.mismatches;
        // SAFETY: NUL-terminated path.
        let fd = unsafe { crate::nofollow::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC, 0) };
        let rec = buf.len() as u64;
        for i in 0..numrecs {
            let off = i * rec;
            let mut got = 0usize;
            while fd >= 0 && got < buf.len() {
                // SAFETY: buf[got..] is valid for writes.
                let n = unsafe {
                    crate::sys::pread(
                        fd,
                        buf[got..].as_mut_ptr() as *mut libc::c_void,
                        buf.len() - got,
                        (off + got as u64) as i64,
                    )
                };
                if n <= 0 {
                    break;
                }
                got += n as usize;
            }
            let b = &buf[..got];
            let (l, exact) = (&self.last_writes, self.exact);
            self.checker.check(b, self.cell, off, |o| if exact { l.expected(0, o) } else { None });
        }
        if fd >= 0 {
            // SAFETY: our descriptor.
            unsafe { crate::sys::close(fd) };
        }
        if self.checker.mismatches > before {
            self.cells_corrupt += 1;
        }
    }
}
