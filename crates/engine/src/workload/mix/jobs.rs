//! The filesystem and process jobs, as re-aim-7 defines them (block size,
//! counts, which calls, in which order), run by one task with everything it
//! needs allocated before the subrun starts: a job neither allocates nor
//! locks, because it may run in a child forked from a multi-threaded process.

use std::os::raw::c_char;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::catalog::{disk_blocks, JobId, JobId::*};
use super::compute::{self, Arena};
use super::fakeh::{Fakeh, MFILES};
use super::order::Rng;
use super::sys::{close, cvt, cvt_i, errno, short, spawn_wait, wait_ok, CPath, JobErr, JobResult};

/// re-aim's disk block (NBUFSIZE): every disk job moves 1 KiB per call.
pub const BLOCK: usize = 1024;
const MODE: libc::mode_t = 0o777;

/// What the disk jobs do between their steps where re-aim runs `system("sync")`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncMode {
    /// Fork and exec `/bin/sh -c sync`, as re-aim does by default.
    Shell,
    /// Call sync(2) directly: the same flush without the two program loads.
    Syscall,
    /// Skip them (re-aim -y / --nosync).
    None,
}

/// Transfer sizes of the pipe and socket jobs, cycled through (re-aim's table).
const MSG_SIZES: [usize; 37] = [
    1, 3, 5, 7, 16, 32, 64, 512, 1024, 2048, 4096, 1, 3, 5, 7, 16, 32, 64, 512, 1024, 2048, 4096, 32, 32, 32, 32, 32,
    32, 512, 512, 512, 512, 512, 2048, 2048, 2048, 2048,
];

/// Counts of signal_test's handler (one per process; tasks in threads share it,
/// each counting its own raises through the difference it sees).
pub static SIGNALS: AtomicU64 = AtomicU64::new(0);

pub extern "C" fn count_signal(_sig: libc::c_int) {
    SIGNALS.fetch_add(1, Relaxed);
}

#[repr(C, align(4096))]
pub struct Aligned(pub [u8; 4096]);

/// Programs the process jobs run, as C strings and argv/envp arrays built once.
pub struct Programs {
    _strings: Vec<std::ffi::CString>,
    pub exec_argv: [*const c_char; 2],
    pub shell_argv: [*const c_char; 4],
    pub sync_argv: [*const c_char; 4],
    pub envp: [*const c_char; 3],
}

// SAFETY: the pointers point into `_strings`, owned by the same value and never changed.
unsafe impl Send for Programs {}
unsafe impl Sync for Programs {}

impl Programs {
    pub fn new(exec_path: &str) -> Programs {
        let s: Vec<std::ffi::CString> =
            [exec_path, "/bin/sh", "-c", "ls -l > /dev/null 2>&1", "sync", "PATH=/usr/bin:/bin", "LC_ALL=C"]
                .iter()
                .map(|x| std::ffi::CString::new(*x).expect("no NUL in program strings"))
                .collect();
        let p = |i: usize| s[i].as_ptr();
        let nul = std::ptr::null();
        Programs {
            exec_argv: [p(0), nul],
            shell_argv: [p(1), p(2), p(3), nul],
            sync_argv: [p(1), p(2), p(4), nul],
            envp: [p(5), p(6), nul],
            _strings: s,
        }
    }
}

/// One task's state: names, buffers, random generator. Built before the subrun.
pub struct Task<'a> {
    pub index: usize,
    pub file_kib: u64,
    pub sync: SyncMode,
    pub rng: Rng,
    pub progs: &'a Programs,
    pub fakeh: &'a Fakeh,
    counter: u64,
    msg: usize,
    path: CPath,
    path2: CPath,
    common: CPath,
    dir: CPath,
    buf: Box<Aligned>,
    pub arena: Arena,
    /// Verify (spec `verify`): reads of file data land in `rbuf` and are compared with the
    /// block every write puts down (`buf`, re-aim's printable pattern).
    pub verify: bool,
    rbuf: Box<Aligned>,
    pub checks: BlockChecks,
}

/// What a verifying task's reads found: plain numbers, kept in the task and copied into its
/// shared slot (no allocation: a task may be a fork of a multi-threaded process).
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockChecks {
    pub checked: u64,
    pub bad: u64,
    /// The first bad block: its byte offset in the file, the file's name prefix (tmpb., tmpf.,
    /// tmpa.common) as a code, the index of its first differing byte, and 16 bytes from there.
    pub first: Option<FirstBad>,
}

#[derive(Clone, Copy, Debug)]
pub struct FirstBad {
    pub offset: u64,
    pub file: u8,
    pub byte: u16,
    /// `verify::content::KINDS` index, judged on the whole block.
    pub kind: u8,
    pub found: [u8; 16],
    pub expected: [u8; 16],
}

/// re-aim's buffer: printable characters, ' ' to '~', repeating.
fn fill_pattern(b: &mut [u8; 4096]) {
    for (i, x) in b.iter_mut().enumerate() {
        *x = b' ' + (i % 95) as u8;
    }
}

/// A job that writes or reads file data (the ones verify checks).
fn n_is_disk(id: JobId) -> bool {
    super::catalog::info(id).class == super::catalog::Class::Disk
}

/// The files a disk job reads, by code (FirstBad::file).
pub const CHECKED_FILES: [&str; 3] =
    ["tmpb.* (the job's own file)", "tmpf.* (the job's own file)", "tmpa.common (shared input)"];

/// What one run of a job did (re-aim's accounting units and the bytes moved).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Done {
    pub units: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

impl<'a> Task<'a> {
    pub fn new(
        index: usize,
        dir: &[u8],
        file_kib: u64,
        sync: SyncMode,
        seed: u64,
        progs: &'a Programs,
        fakeh: &'a Fakeh,
    ) -> Task<'a> {
        let mut common = CPath::new(dir);
        common.name(b"tmpa.common");
        let mut d = CPath::new(dir);
        d.name(b".");
        let mut buf = Box::new(Aligned([0; 4096]));
        fill_pattern(&mut buf.0);
        Task {
            index,
            file_kib,
            sync,
            rng: Rng::new(seed),
            progs,
            fakeh,
            counter: 0,
            msg: 0,
            path: CPath::new(dir),
            path2: CPath::new(dir),
            common,
            dir: d,
            buf,
            arena: Arena::new(),
            verify: false,
            rbuf: Box::new(Aligned([0; 4096])),
            checks: BlockChecks::default(),
        }
    }

    /// With verify: compare the block just read into `rbuf` (at `offset` of file `file`) with
    /// the block that was written.
    #[inline]
    fn check_block(&mut self, offset: u64, file: u8) {
        self.checks.checked += 1;
        if self.rbuf.0[..BLOCK] == self.buf.0[..BLOCK] {
            return;
        }
        self.checks.bad += 1;
        if self.checks.first.is_none() {
            let byte = (0..BLOCK).find(|&k| self.rbuf.0[k] != self.buf.0[k]).unwrap_or(0);
            let at = byte.min(BLOCK - 16);
            let mut found = [0u8; 16];
            let mut expected = [0u8; 16];
            found.copy_from_slice(&self.rbuf.0[at..at + 16]);
            expected.copy_from_slice(&self.buf.0[at..at + 16]);
            let kind = crate::verify::content::mismatch_kind(&self.rbuf.0[..BLOCK], byte);
            self.checks.first = Some(FirstBad { offset, file, byte: byte as u16, kind, found, expected });
        }
    }

    /// A fresh unique temporary name `dir/<prefix><task><counter>` in `path`.
    fn temp(&mut self, prefix: &[u8]) -> *const c_char {
        self.counter += 1;
        self.path.temp(prefix, self.index as u64, self.counter, b"")
    }

    fn do_sync(&mut self) -> JobResult<()> {
        match self.sync {
            SyncMode::None => Ok(()),
            SyncMode::Syscall => {
                unsafe { libc::sync() };
                Ok(())
            }
            // SAFETY: Programs keeps the strings its argv/envp arrays point to, NULL-terminated.
            SyncMode::Shell => unsafe {
                spawn_wait(self.progs.sync_argv.as_ptr(), self.progs.envp.as_ptr(), std::ptr::null())
            },
        }
    }

    pub fn run(&mut self, id: JobId) -> JobResult<Done> {
        if self.verify && n_is_disk(id) {
            // Other jobs (disk_src, the pipes, directory reads) use the same buffer, so re-aim's
            // writes put down whatever it last held. Verified, every disk job writes the pattern.
            fill_pattern(&mut self.buf.0);
        }
        let n = disk_blocks(id, self.file_kib);
        let kib = |r: u64, w: u64| Done { units: n, bytes_read: r * BLOCK as u64, bytes_written: w * BLOCK as u64 };
        match id {
            DiskRr => self.fill_then(b"tmpb.", n, Access::Random, Op::Read, false, true, true).map(|_| kib(n, n)),
            DiskRw => self.fill_then(b"tmpb.", n, Access::Random, Op::Write, false, true, true).map(|_| kib(0, 2 * n)),
            DiskRd => self.fill_then(b"tmpf.", n, Access::Seq, Op::Read, false, true, true).map(|_| kib(n, n)),
            DiskBrr => self.fill_then(b"tmpc.", n, Access::Random, Op::Read, false, false, false).map(|_| kib(n, n)),
            DiskBrw => {
                self.fill_then(b"tmpc.", n, Access::Random, Op::Write, false, false, false).map(|_| kib(0, 2 * n))
            }
            DiskDioRr => self.fill_then(b"tmpe.", n, Access::RandomByte, Op::Read, true, true, true).map(|_| kib(n, n)),
            DiskDioRw => {
                self.fill_then(b"tmpb.", n, Access::Random, Op::Write, true, true, true).map(|_| kib(0, 2 * n))
            }
            SyncDiskRw => self.sync_random_write(n).map(|_| kib(0, 2 * n)),
            SyncDiskUpdate => self.sync_update(n).map(|_| kib(n / 2, n + n / 2)),
            DiskWrt => self.seq_write(n, 0, true).map(|_| kib(0, n)),
            DiskBwrt => self.seq_write(n, 0, false).map(|_| kib(0, n)),
            SyncDiskWrt => self.seq_write(n, libc::O_SYNC, false).map(|_| kib(0, n)),
            DiskDioWrt => self.seq_write(n, libc::O_DIRECT, true).map(|_| kib(0, n)),
            DiskBrd => self.read_common(n, 0, false).map(|_| kib(n, 0)),
            DiskDioRd => self.read_common(n, libc::O_DIRECT, true).map(|_| kib(n, 0)),
            DiskCp => self.copy(n, 0, 0, true).map(|_| kib(n, n)),
            DiskBcp => self.copy(n, 0, 0, false).map(|_| kib(n, n)),
            SyncDiskCp => self.copy(n, 0, libc::O_SYNC, false).map(|_| kib(n, n)),
            DiskDioCp => self.copy(n, libc::O_DIRECT, libc::O_DIRECT, true).map(|_| kib(n, n)),
            DiskSrc => self.disk_src().map(|(s, c)| Done { units: s + c, ..Done::default() }),
            CreatClo => self.creat_clo().map(|u| Done { units: u, ..Done::default() }),
            LinkTest => self.link_test().map(|u| Done { units: u, ..Done::default() }),
            DirRtns1 => self.dir_rtns().map(|u| Done { units: u, ..Done::default() }),
            ForkTest => self.fork_test(100).map(|u| Done { units: u, ..Done::default() }),
            ExecTest => self.exec_test(5).map(|u| Done { units: u, ..Done::default() }),
            ShellRtns1 | ShellRtns2 | ShellRtns3 => {
                // SAFETY: as in do_sync(); the job's directory is a CPath, NUL-terminated.
                unsafe { spawn_wait(self.progs.shell_argv.as_ptr(), self.progs.envp.as_ptr(), self.dir.ptr()) }
                    .map(|_| Done { units: 1, ..Done::default() })
            }
            PipeCpy => self.pipe_job(PipeKind::Pipe),
            StreamPipe => self.pipe_job(PipeKind::Stream),
            DgramPipe => self.pipe_job(PipeKind::Dgram),
            FifoTest => self.pipe_job(PipeKind::Fifo),
            TcpTest => self.tcp_test(90),
            UdpTest => self.udp_test(100),
            SignalTest => self.signal_test(1000).map(|u| Done { units: u, ..Done::default() }),
            _ => Ok(Done { units: compute::run(id, &mut self.arena, &mut self.rng, &mut self.msg), ..Done::default() }),
        }
    }

    /// Create a file of `n` blocks (closed, synced), reopen it (O_DIRECT if
    /// `direct`) and do `n` reads or writes of a block, then remove it:
    /// disk_rr, disk_rw, disk_rd, disk_brr, disk_brw, disk_dio_rr, disk_dio_rw.
    #[allow(clippy::too_many_arguments)] // the seven disk jobs differ by these switches only
    fn fill_then(
        &mut self,
        prefix: &[u8],
        n: u64,
        access: Access,
        op: Op,
        direct: bool,
        sync_between: bool,
        sync_after: bool,
    ) -> JobResult<()> {
        let p = self.temp(prefix);
        let fd = cvt_i(unsafe { crate::sys::creat(p, MODE) }, "creat")?;
        let w = self.write_blocks(fd, n);
        close(fd);
        if let Err(e) = w {
            unsafe { crate::sys::unlink(p) };
            return Err(e);
        }
        if sync_between {
            self.do_sync()?;
        }
        let mode = match op {
            Op::Read => libc::O_RDONLY,
            Op::Write => libc::O_WRONLY,
        };
        let fd = cvt_i(
            unsafe { crate::nofollow::open(self.path.ptr(), mode | if direct { libc::O_DIRECT } else { 0 }, 0) },
            "open",
        )?;
        let file = if prefix == b"tmpf." { 1 } else { 0 };
        let r = self.blocks_of(fd, n, n, access, op, file);
        close(fd);
        unsafe { crate::sys::unlink(self.path.ptr()) };
        r?;
        if sync_after {
            self.do_sync()?;
        }
        Ok(())
    }

    /// `count` block reads or writes at the current offset (Seq) or at a random
    /// block below `span` drawn as re-aim draws it (Random, RandomByte: lseek then read/write).
    fn blocks(&mut self, fd: i32, count: u64, span: u64, access: Access, op: Op) -> JobResult<()> {
        self.blocks_of(fd, count, span, access, op, 0)
    }

    /// As `blocks`, naming the file read (for verification reports): a CHECKED_FILES index.
    fn blocks_of(&mut self, fd: i32, count: u64, span: u64, access: Access, op: Op, file: u8) -> JobResult<()> {
        let buf = self.buf.0.as_mut_ptr() as *mut libc::c_void;
        let check = self.verify && op == Op::Read;
        let into = if check { self.rbuf.0.as_mut_ptr() as *mut libc::c_void } else { buf };
        // Sequential calls start at the file's start (every caller opens the file just before).
        let mut pos = 0u64;
        for _ in 0..count {
            if access != Access::Seq {
                let blk = random_block(self.rng.below(AIM_RAND_SPAN), span, access);
                pos = blk * BLOCK as u64;
                cvt(unsafe { crate::sys::lseek(fd, pos as libc::off_t, libc::SEEK_SET) } as isize, "lseek")?;
            }
            let r = match op {
                Op::Read => unsafe { crate::sys::read(fd, into, BLOCK) },
                Op::Write => unsafe { crate::sys::write(fd, buf, BLOCK) },
            };
            if cvt(r, op.step())? as usize != BLOCK {
                return Err(short(op.step()));
            }
            if check {
                self.check_block(pos, file);
            }
            pos += BLOCK as u64;
        }
        Ok(())
    }

    fn write_blocks(&mut self, fd: i32, n: u64) -> JobResult<()> {
        self.blocks(fd, n, n, Access::Seq, Op::Write)
    }

    /// sync_disk_rw: a file of n blocks (here n is already half the file
    /// size), reopened O_SYNC, n random block writes.
    fn sync_random_write(&mut self, n: u64) -> JobResult<()> {
        let p = self.temp(b"tmpb.");
        let fd =
            cvt_i(unsafe { crate::nofollow::open(p, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, MODE) }, "open")?;
        let w = self.write_blocks(fd, n);
        close(fd);
        let r = w.and_then(|_| {
            let fd = cvt_i(
                unsafe { crate::nofollow::open(self.path.ptr(), libc::O_WRONLY | libc::O_SYNC, 0) },
                "open O_SYNC",
            )?;
            let r = self.blocks(fd, n, n, Access::Random, Op::Write);
            close(fd);
            r
        });
        unsafe { crate::sys::unlink(self.path.ptr()) };
        r
    }

    /// sync_disk_update: a file of n blocks reopened O_RDWR|O_SYNC; n/2 times
    /// read a random block then write the block after it (the read moved the offset).
    fn sync_update(&mut self, n: u64) -> JobResult<()> {
        let p = self.temp(b"tmpb.");
        let fd =
            cvt_i(unsafe { crate::nofollow::open(p, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, MODE) }, "open")?;
        let w = self.write_blocks(fd, n);
        close(fd);
        let r = w.and_then(|_| {
            let fd = cvt_i(
                unsafe { crate::nofollow::open(self.path.ptr(), libc::O_RDWR | libc::O_SYNC, 0) },
                "open O_SYNC",
            )?;
            let mut r = Ok(());
            for _ in 0..n / 2 {
                r = self
                    .blocks(fd, 1, n, Access::Random, Op::Read)
                    .and_then(|_| self.blocks(fd, 1, n, Access::Seq, Op::Write));
                if r.is_err() {
                    break;
                }
            }
            close(fd);
            r
        });
        unsafe { crate::sys::unlink(self.path.ptr()) };
        r
    }

    /// disk_wrt (sync before and after), disk_bwrt, sync_disk_wrt (O_SYNC),
    /// disk_dio_wrt (O_DIRECT): create and write n blocks, remove.
    fn seq_write(&mut self, n: u64, flags: i32, syncs: bool) -> JobResult<()> {
        let p = self.temp(if flags == libc::O_DIRECT { b"tmpc." } else { b"tmpb." });
        let fd = cvt_i(
            unsafe { crate::nofollow::open(p, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | flags, MODE) },
            "open",
        )?;
        let mut r = if syncs { self.do_sync() } else { Ok(()) };
        if r.is_ok() {
            r = self.write_blocks(fd, n);
        }
        unsafe { crate::sys::unlink(self.path.ptr()) };
        close(fd);
        r?;
        if syncs {
            self.do_sync()?;
        }
        Ok(())
    }

    /// disk_brd, disk_dio_rd: read n blocks of the shared file from its start.
    fn read_common(&mut self, n: u64, flags: i32, sync_after: bool) -> JobResult<()> {
        let fd =
            cvt_i(unsafe { crate::nofollow::open(self.common.ptr(), libc::O_RDONLY | flags, 0) }, "open tmpa.common")?;
        let r = self.blocks_of(fd, n, n, Access::Seq, Op::Read, 2);
        close(fd);
        r?;
        if sync_after {
            self.do_sync()?;
        }
        Ok(())
    }

    /// disk_cp, disk_bcp, sync_disk_cp, disk_dio_cp: copy n blocks of the
    /// shared file into a new file, block by block, then remove the copy.
    fn copy(&mut self, n: u64, src_flags: i32, dst_flags: i32, syncs: bool) -> JobResult<()> {
        if syncs && dst_flags == 0 {
            self.do_sync()?;
        }
        let src = cvt_i(
            unsafe { crate::nofollow::open(self.common.ptr(), libc::O_RDONLY | src_flags, 0) },
            "open tmpa.common",
        )?;
        let p = self.temp(b"tmpb.");
        let trunc = if dst_flags == libc::O_DIRECT { 0 } else { libc::O_TRUNC };
        let dst = match cvt_i(
            unsafe { crate::nofollow::open(p, libc::O_WRONLY | libc::O_CREAT | trunc | dst_flags, MODE) },
            "open copy",
        ) {
            Ok(fd) => fd,
            Err(e) => {
                close(src);
                return Err(e);
            }
        };
        let mut r = if syncs { self.do_sync() } else { Ok(()) };
        let buf = if self.verify { self.rbuf.0.as_mut_ptr() } else { self.buf.0.as_mut_ptr() } as *mut libc::c_void;
        if r.is_ok() {
            for i in 0..n {
                let got = unsafe { crate::sys::read(src, buf, BLOCK) };
                if got != BLOCK as isize {
                    r = Err(if got < 0 { JobErr { step: "read", errno: errno() } } else { short("read") });
                    break;
                }
                if self.verify {
                    self.check_block(i * BLOCK as u64, 2);
                }
                let put = unsafe { crate::sys::write(dst, buf, BLOCK) };
                if put != BLOCK as isize {
                    r = Err(if put < 0 { JobErr { step: "write", errno: errno() } } else { short("write") });
                    break;
                }
            }
        }
        unsafe { crate::sys::unlink(self.path.ptr()) };
        close(src);
        close(dst);
        r?;
        if syncs {
            self.do_sync()?;
        }
        Ok(())
    }

    /// disk_src: read the tree's list, shuffle its stat and create names (five
    /// passes of random swaps over 75 slots, empty ones included), then for
    /// each slot stat the name, and creat + close + unlink the other.
    fn disk_src(&mut self) -> JobResult<(u64, u64)> {
        let f = self.fakeh;
        let root = f.root_fd;
        // The list is read on every run, as re-aim reads its dirlist.
        let lf =
            cvt_i(unsafe { crate::nofollow::openat(root, c"dirlist".as_ptr(), libc::O_RDONLY, 0) }, "open dirlist")?;
        let buf = self.buf.0.as_mut_ptr() as *mut libc::c_void;
        loop {
            let r = unsafe { crate::sys::read(lf, buf, 4096) };
            if r <= 0 {
                break;
            }
        }
        close(lf);
        let mut stat_slots = f.stat_slots;
        let mut creat_slots = f.creat_slots;
        for slots in [&mut stat_slots, &mut creat_slots] {
            for _ in 0..5 {
                for i in 0..MFILES {
                    let j = self.rng.below(MFILES as u64) as usize;
                    slots.swap(i, j);
                }
            }
        }
        let (mut stats, mut creats) = (0, 0);
        let mut name = [0u8; 96];
        for i in 0..MFILES {
            if let Some(k) = slot(stat_slots[i]) {
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                cvt_i(unsafe { crate::sys::fstatat(root, f.stat_name(k), &mut st, 0) }, "stat")?;
                stats += 1;
            }
            if let Some(k) = slot(creat_slots[i]) {
                let p = f.creat_name(k, self.index, &mut name);
                let fd = cvt_i(
                    unsafe { crate::nofollow::openat(root, p, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, MODE) },
                    "creat",
                )?;
                close(fd);
                cvt_i(unsafe { crate::sys::unlinkat(root, p, 0) }, "unlink")?;
                creats += 1;
            }
        }
        Ok((stats, creats))
    }

    /// creat_clo: 1000 times creat + close of one name, then unlink it.
    fn creat_clo(&mut self) -> JobResult<u64> {
        let p = self.temp(b"tmpb.");
        for _ in 0..1000 {
            let fd = cvt_i(unsafe { crate::sys::creat(p, MODE) }, "creat")?;
            close(fd);
        }
        cvt_i(unsafe { crate::sys::unlink(p) }, "unlink")?;
        Ok(1000)
    }

    /// link_test: a file and 7 links to it; 9 rounds of unlink + link of each
    /// link; remove all 8 names. Counts the link calls (7 + 63).
    fn link_test(&mut self) -> JobResult<u64> {
        self.counter += 1;
        let (t, c) = (self.index as u64, self.counter);
        let first = self.path2.temp(b"link", t, c, b"_0");
        let fd = cvt_i(unsafe { crate::sys::creat(first, MODE) }, "creat")?;
        close(fd);
        let digits = [b"_1", b"_2", b"_3", b"_4", b"_5", b"_6", b"_7"];
        let mut links = 0;
        let mut r = Ok(());
        'outer: for round in 0..10 {
            for d in digits {
                let p = self.path.temp(b"link", t, c, d);
                if round > 0 {
                    if let Err(e) = cvt_i(unsafe { crate::sys::unlink(p) }, "unlink") {
                        r = Err(e);
                        break 'outer;
                    }
                }
                if let Err(e) = cvt_i(unsafe { libc::link(self.path2.ptr(), p) }, "link") {
                    r = Err(e);
                    break 'outer;
                }
                links += 1;
            }
        }
        for d in digits {
            unsafe { crate::sys::unlink(self.path.temp(b"link", t, c, d)) };
        }
        unsafe { crate::sys::unlink(self.path2.ptr()) };
        r.map(|_| links)
    }

    /// dir_rtns_1: read 10,000 entries of /bin, rewinding at its end (the end
    /// itself counts as a read, as in re-aim). getdents64 into our buffer
    /// stands in for opendir/readdir, which allocate.
    fn dir_rtns(&mut self) -> JobResult<u64> {
        let fd =
            cvt_i(unsafe { crate::sys::open(c"/bin".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY, 0) }, "open /bin")?;
        let buf = self.buf.0.as_mut_ptr();
        let (mut pos, mut len) = (0usize, 0usize);
        let mut r = Ok(10_000);
        for _ in 0..10_000 {
            if pos >= len {
                let got = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf, 4096usize) };
                if got < 0 {
                    r = Err(JobErr { step: "getdents64", errno: errno() });
                    break;
                }
                if got == 0 {
                    unsafe { crate::sys::lseek(fd, 0, libc::SEEK_SET) };
                    continue;
                }
                pos = 0;
                len = got as usize;
            }
            // d_reclen is the u16 at offset 16 of struct linux_dirent64.
            let reclen = u16::from_ne_bytes([self.buf.0[pos + 16], self.buf.0[pos + 17]]) as usize;
            pos += reclen.max(1);
        }
        close(fd);
        r
    }

    /// fork_test: fork a child that exits at once, wait for it; `n` times.
    fn fork_test(&mut self, n: u64) -> JobResult<u64> {
        for _ in 0..n {
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                return Err(JobErr { step: "fork", errno: errno() });
            }
            if pid == 0 {
                unsafe { libc::_exit(0) };
            }
            wait_ok(pid, "forked child")?;
        }
        Ok(n)
    }

    /// exec_test: fork + exec the small program, wait; `n` times.
    fn exec_test(&mut self, n: u64) -> JobResult<u64> {
        for _ in 0..n {
            // SAFETY: as in do_sync().
            unsafe { spawn_wait(self.progs.exec_argv.as_ptr(), self.progs.envp.as_ptr(), std::ptr::null()) }?;
        }
        Ok(n)
    }

    /// Write then read back one message through a channel, 99 times (re-aim's
    /// loop runs `--loops > 0`), with sizes cycling through its table.
    fn messages(&mut self, rd: i32, wr: i32, loops: u64) -> JobResult<Done> {
        let buf = self.buf.0.as_mut_ptr();
        let mut bytes = 0u64;
        for _ in 1..loops {
            let size = MSG_SIZES[self.msg % MSG_SIZES.len()];
            self.msg += 1;
            let mut off = 0;
            while off < size {
                let r = unsafe { crate::sys::write(wr, buf.add(off) as *const libc::c_void, size - off) };
                if r < 0 && errno() == libc::EINTR {
                    continue;
                }
                off += cvt(r, "message write")? as usize;
            }
            off = 0;
            while off < size {
                let r = unsafe { crate::sys::read(rd, buf.add(off) as *mut libc::c_void, size - off) };
                if r < 0 && errno() == libc::EINTR {
                    continue;
                }
                let got = cvt(r, "message read")? as usize;
                if got == 0 {
                    return Err(short("message read"));
                }
                off += got;
            }
            bytes += size as u64;
        }
        Ok(Done { units: loops, bytes_read: bytes, bytes_written: bytes })
    }

    fn pipe_job(&mut self, kind: PipeKind) -> JobResult<Done> {
        let mut fds = [0i32; 2];
        let (rd, wr) = match kind {
            PipeKind::Pipe => {
                cvt_i(unsafe { libc::pipe(fds.as_mut_ptr()) }, "pipe")?;
                (fds[0], fds[1])
            }
            PipeKind::Stream | PipeKind::Dgram => {
                let t = if kind == PipeKind::Stream { libc::SOCK_STREAM } else { libc::SOCK_DGRAM };
                cvt_i(unsafe { libc::socketpair(libc::AF_UNIX, t, 0, fds.as_mut_ptr()) }, "socketpair")?;
                (fds[0], fds[1])
            }
            PipeKind::Fifo => {
                let p = self.temp(b"fifo.");
                unsafe { crate::sys::unlink(p) };
                cvt_i(unsafe { libc::mkfifo(p, 0o666) }, "mkfifo")?;
                let rd = cvt_i(unsafe { crate::nofollow::open(p, libc::O_RDONLY | libc::O_NONBLOCK, 0) }, "open fifo")?;
                let wr =
                    match cvt_i(unsafe { crate::nofollow::open(p, libc::O_RDWR | libc::O_NONBLOCK, 0) }, "open fifo") {
                        Ok(fd) => fd,
                        Err(e) => {
                            close(rd);
                            return Err(e);
                        }
                    };
                (rd, wr)
            }
        };
        let r = self.messages(rd, wr, 100);
        close(rd);
        close(wr);
        if kind == PipeKind::Fifo {
            unsafe { crate::sys::unlink(self.path.ptr()) };
        }
        r
    }

    /// tcp_test: a listening socket on the loopback address, a connection to
    /// it (TCP_NODELAY), `n - 1` messages through it.
    fn tcp_test(&mut self, n: u64) -> JobResult<Done> {
        unsafe {
            let lst = cvt_i(libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0), "socket")?;
            let mut addr = loopback();
            let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let sa = &mut addr as *mut libc::sockaddr_in as *mut libc::sockaddr;
            let one: libc::c_int = 1;
            let setup = (|| -> JobResult<(i32, i32)> {
                cvt_i(libc::bind(lst, sa, len), "bind")?;
                cvt_i(libc::getsockname(lst, sa, &mut len), "getsockname")?;
                cvt_i(
                    libc::setsockopt(
                        lst,
                        libc::IPPROTO_TCP,
                        libc::TCP_NODELAY,
                        &one as *const _ as *const libc::c_void,
                        4,
                    ),
                    "setsockopt",
                )?;
                cvt_i(libc::listen(lst, 5), "listen")?;
                let c = cvt_i(libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0), "socket")?;
                if let Err(e) = cvt_i(libc::connect(c, sa, len), "connect") {
                    close(c);
                    return Err(e);
                }
                let a = loop {
                    let a = libc::accept(lst, std::ptr::null_mut(), std::ptr::null_mut());
                    if a < 0 && errno() == libc::EINTR {
                        continue;
                    }
                    break a;
                };
                if a < 0 {
                    let e = errno();
                    close(c);
                    return Err(JobErr { step: "accept", errno: e });
                }
                Ok((c, a))
            })();
            let r = setup.and_then(|(c, a)| {
                let r = self.messages(c, a, n);
                close(c);
                close(a);
                r
            });
            close(lst);
            r
        }
    }

    /// udp_test: two datagram sockets on the loopback address, the writer
    /// connected to the reader, `n - 1` datagrams.
    fn udp_test(&mut self, n: u64) -> JobResult<Done> {
        unsafe {
            let rd = cvt_i(libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0), "socket")?;
            let wr = match cvt_i(libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0), "socket") {
                Ok(fd) => fd,
                Err(e) => {
                    close(rd);
                    return Err(e);
                }
            };
            let mut addr = loopback();
            let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let sa = &mut addr as *mut libc::sockaddr_in as *mut libc::sockaddr;
            let r = cvt_i(libc::bind(rd, sa, len), "bind")
                .and_then(|_| cvt_i(libc::getsockname(rd, sa, &mut len), "getsockname"))
                .and_then(|_| cvt_i(libc::connect(wr, sa, len), "connect"))
                .and_then(|_| self.messages(rd, wr, n));
            close(rd);
            close(wr);
            r
        }
    }

    /// signal_test: send ourselves SIGUSR2 `n` times; the handler counts them.
    fn signal_test(&mut self, n: u64) -> JobResult<u64> {
        let start = SIGNALS.load(Relaxed);
        let mut sent = 0u64;
        while sent < n {
            cvt_i(unsafe { libc::raise(libc::SIGUSR2) }, "raise")?;
            sent += 1;
        }
        if SIGNALS.load(Relaxed).wrapping_sub(start) < n {
            // Another task thread's handler calls may interleave; ours were all delivered
            // synchronously by raise(), so a shortfall means the handler is missing.
            return Err(JobErr { step: "signal handler", errno: libc::EINVAL });
        }
        Ok(n)
    }
}

fn slot(v: u8) -> Option<usize> {
    if v == u8::MAX {
        None
    } else {
        Some(v as usize)
    }
}

fn loopback() -> libc::sockaddr_in {
    let mut a: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    a.sin_family = libc::AF_INET as libc::sa_family_t;
    a.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
    a.sin_port = 0;
    a
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Seq,
    /// re-aim's random block: its 15-bit aim_rand() modulo the file's blocks (so only the first
    /// 32768 blocks are ever drawn).
    Random,
    /// re-aim's disk_dio_rr: aim_rand() modulo the file's size in bytes, rounded down to a
    /// block. aim_rand() is below 32768, so with files over 32 KiB only the first 32 blocks
    /// are read.
    RandomByte,
}

/// re-aim's aim_rand(): 15 bits (0..32767).
const AIM_RAND_SPAN: u64 = 1 << 15;

/// The block a random job seeks to, from a draw `r` of aim_rand()'s range, in a file of `span`
/// blocks, by re-aim's two formulas (see `Access`).
fn random_block(r: u64, span: u64, access: Access) -> u64 {
    match access {
        Access::RandomByte => (r % (span * BLOCK as u64).max(1)) / BLOCK as u64,
        _ => r % span.max(1),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Read,
    Write,
}

impl Op {
    fn step(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PipeKind {
    Pipe,
    Stream,
    Dgram,
    Fifo,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks_drawn(span: u64, access: Access) -> std::collections::BTreeSet<u64> {
        let mut rng = Rng::new(7);
        (0..20_000).map(|_| random_block(rng.below(AIM_RAND_SPAN), span, access)).collect()
    }

    #[test]
    fn random_offsets_follow_reaims_formulas() {
        // A 1034-block file (FILESIZE 10k + POOLSIZE 1m, one task): block draws cover the file...
        let b = blocks_drawn(1034, Access::Random);
        assert_eq!((*b.first().unwrap(), *b.last().unwrap(), b.len()), (0, 1033, 1034));
        // ...disk_dio_rr's byte draw stays in the first 32 KiB, as re-aim's does.
        let b = blocks_drawn(1034, Access::RandomByte);
        assert_eq!((*b.first().unwrap(), *b.last().unwrap(), b.len()), (0, 31, 32));
        // aim_rand() has 15 bits: a file of 40,000 blocks is drawn only below block 32,768.
        assert!(*blocks_drawn(40_000, Access::Random).last().unwrap() < 32_768);
        // A file under 32 KiB: both formulas reach every block.
        assert_eq!(blocks_drawn(20, Access::RandomByte).len(), 20);
    }
}
