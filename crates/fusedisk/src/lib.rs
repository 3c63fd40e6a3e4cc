//! A one-file FUSE filesystem serving a disk image: the part fsmeter's block-layer daemons share.
//!
//! The mount point holds `disk.img` (the disk, of a fixed size) and, optionally, small side files
//! a daemon exposes to its caller (`fsmeter-diskmodel`'s `stats.json` and `control`). A loop
//! device is attached to `disk.img`; every block request it sends arrives here as a FUSE read,
//! write, fsync (the loop device's cache flush) or fallocate (discard, write-zeroes) and is handed
//! to the program's [`Disk`], which answers it, now or later from another thread: fuser's replies
//! may be sent from any thread, so the session loop goes on reading requests meanwhile.
//!
//! ```no_run
//! # use fsmeter_fusedisk::{serve, Disk, ServeOptions};
//! # fn demo<D: Disk>(disk: D) -> std::io::Result<()> {
//! serve(disk, std::path::Path::new("/mnt/x"), &ServeOptions { fsname: "fsmeter-x", direct_io: true, async_dio: true })
//! # }
//! ```
//!
//! `serve` prints `ready` on stdout once mounted and returns when the mount point is unmounted.

use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use fuser::{
    FileAttr, FileType, Filesystem, KernelConfig, MountOption, ReplyAttr, ReplyDirectory, ReplyEntry, ReplyOpen,
    Request, TimeOrNow,
};
pub use fuser::{ReplyData, ReplyEmpty, ReplyWrite};

const ROOT: u64 = 1;
const DISK: u64 = 2;
/// The first side file's inode; side file `i` is `SIDE + i`.
const SIDE: u64 = 3;
pub const DISK_NAME: &str = "disk.img";
const TTL: Duration = Duration::from_secs(3600);
/// Large requests pass whole where the kernel allows it (FUSE's max_pages follows max_write).
const MAX_REQUEST: u32 = 1 << 20;

/// CLOCK_MONOTONIC in nanoseconds: the clock requests are stamped with.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own; MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What a daemon does with the requests the loop device sends. Each method must answer its reply
/// exactly once, now or later (from any thread).
pub trait Disk: Send + 'static {
    /// The disk's size in bytes (fixed, like a real disk's).
    fn size(&self) -> u64;
    /// Read `size` bytes at `offset` (the kernel never asks past the end: `size()` bounds it).
    fn read(&mut self, offset: u64, size: u32, reply: ReplyData);
    fn write(&mut self, offset: u64, data: &[u8], reply: ReplyWrite);
    /// The loop device's cache flush (REQ_PREFLUSH, and FUA writes' post-flush) arrives as fsync.
    fn fsync(&mut self, reply: ReplyEmpty);
    /// Discard (punch hole), write-zeroes (zero range) or preallocation (mode 0).
    fn fallocate(&mut self, offset: u64, length: u64, mode: i32, reply: ReplyEmpty);
    /// Unmounted: the last call.
    fn destroy(&mut self) {}
    /// Names of the side files beside `disk.img`.
    fn side_files(&self) -> &'static [&'static str] {
        &[]
    }
    /// The whole content of side file `index` (read from its start each time it is opened).
    fn read_side(&mut self, _index: usize) -> Vec<u8> {
        Vec::new()
    }
    /// A write to side file `index`; Err(errno) refuses it.
    fn write_side(&mut self, _index: usize, _data: &[u8]) -> Result<(), i32> {
        Err(libc::EACCES)
    }
}

/// How the file system is mounted.
pub struct ServeOptions<'a> {
    /// The source name in /proc/mounts (how fsmeter's cleanup recognises its own mount).
    pub fsname: &'a str,
    /// Open `disk.img` with FOPEN_DIRECT_IO: the kernel keeps no page cache of it, so every read
    /// the loop device makes reaches the daemon, whatever flags the loop device opened it with.
    pub direct_io: bool,
    /// Ask for FUSE_ASYNC_DIO: the loop device's direct I/O is then submitted without waiting for
    /// each piece, so several requests can be in flight (a disk's queue).
    pub async_dio: bool,
}

struct OneFile<D: Disk> {
    disk: D,
    direct_io: bool,
    async_dio: bool,
    /// Side file contents, taken when the file is opened (fh = index into this list).
    snapshots: Vec<Option<Vec<u8>>>,
}

impl<D: Disk> OneFile<D> {
    fn side_index(&self, ino: u64) -> Option<usize> {
        let i = ino.checked_sub(SIDE)? as usize;
        (i < self.disk.side_files().len()).then_some(i)
    }

    fn attr(&self, ino: u64) -> FileAttr {
        let (kind, perm, size, nlink) = match ino {
            ROOT => (FileType::Directory, 0o755, 0, 2),
            DISK => (FileType::RegularFile, 0o600, self.disk.size(), 1),
            // Side files are read with direct I/O, so their size is not what bounds a read.
            _ => (FileType::RegularFile, 0o600, 0, 1),
        };
        let t = SystemTime::UNIX_EPOCH;
        FileAttr {
            ino,
            size,
            blocks: size / 512,
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            kind,
            perm,
            nlink,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }
}

impl<D: Disk> Filesystem for OneFile<D> {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), libc::c_int> {
        let _ = config.set_max_write(MAX_REQUEST);
        if self.async_dio {
            let _ = config.add_capabilities(fuser::consts::FUSE_ASYNC_DIO);
        }
        Ok(())
    }

    fn destroy(&mut self) {
        self.disk.destroy();
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        if parent != ROOT {
            return reply.error(libc::ENOENT);
        }
        if name == DISK_NAME {
            return reply.entry(&TTL, &self.attr(DISK), 0);
        }
        match self.disk.side_files().iter().position(|n| name == *n) {
            Some(i) => reply.entry(&TTL, &self.attr(SIDE + i as u64), 0),
            None => reply.error(libc::ENOENT),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        if ino == ROOT || ino == DISK || self.side_index(ino).is_some() {
            reply.attr(&TTL, &self.attr(ino))
        } else {
            reply.error(libc::ENOENT)
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        // The disk has a fixed size, like a real one; a side file opened for writing with O_TRUNC
        // passes through here with size 0.
        if ino == DISK && size.is_some_and(|s| s != self.disk.size()) {
            reply.error(libc::EPERM);
        } else {
            reply.attr(&TTL, &self.attr(ino));
        }
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        if ino == DISK {
            let flags = if self.direct_io { fuser::consts::FOPEN_DIRECT_IO } else { 0 };
            return reply.opened(0, flags);
        }
        match self.side_index(ino) {
            Some(i) => {
                let content = self.disk.read_side(i);
                self.snapshots.push(Some(content));
                reply.opened((self.snapshots.len() - 1) as u64, fuser::consts::FOPEN_DIRECT_IO)
            }
            None => reply.error(libc::EISDIR),
        }
    }

    fn release(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        fh: u64,
        _flags: i32,
        _lock_owner: Option<u64>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        if ino != DISK {
            if let Some(slot) = self.snapshots.get_mut(fh as usize) {
                *slot = None;
            }
            while self.snapshots.last().is_some_and(|s| s.is_none()) {
                self.snapshots.pop();
            }
        }
        reply.ok();
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock: Option<u64>,
        reply: ReplyData,
    ) {
        let offset = offset.max(0) as u64;
        if ino == DISK {
            let end = (offset + size as u64).min(self.disk.size());
            return self.disk.read(offset, end.saturating_sub(offset) as u32, reply);
        }
        match self.snapshots.get(fh as usize).and_then(|s| s.as_ref()) {
            Some(content) => {
                let start = (offset as usize).min(content.len());
                let end = (start + size as usize).min(content.len());
                reply.data(&content[start..end])
            }
            None => reply.error(libc::EBADF),
        }
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock: Option<u64>,
        reply: ReplyWrite,
    ) {
        if ino == DISK {
            let offset = offset.max(0) as u64;
            if offset + data.len() as u64 > self.disk.size() {
                return reply.error(libc::EIO);
            }
            return self.disk.write(offset, data, reply);
        }
        match self.side_index(ino) {
            Some(i) => match self.disk.write_side(i, data) {
                Ok(()) => reply.written(data.len() as u32),
                Err(errno) => reply.error(errno),
            },
            None => reply.error(libc::EBADF),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
        reply.ok(); // close(2), not a cache flush
    }

    fn fsync(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, _datasync: bool, reply: ReplyEmpty) {
        if ino == DISK {
            self.disk.fsync(reply)
        } else {
            reply.ok()
        }
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if ino != DISK || offset < 0 || length <= 0 {
            return reply.error(libc::EINVAL);
        }
        self.disk.fallocate(offset as u64, length as u64, mode, reply)
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        if ino == ROOT {
            reply.opened(0, 0)
        } else {
            reply.error(libc::ENOTDIR)
        }
    }

    fn readdir(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, offset: i64, mut reply: ReplyDirectory) {
        if ino != ROOT {
            return reply.error(libc::ENOTDIR);
        }
        let mut entries = vec![
            (ROOT, FileType::Directory, "."),
            (ROOT, FileType::Directory, ".."),
            (DISK, FileType::RegularFile, DISK_NAME),
        ];
        for (i, name) in self.disk.side_files().iter().enumerate() {
            entries.push((SIDE + i as u64, FileType::RegularFile, name));
        }
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset.max(0) as usize) {
            if reply.add(*ino, (i + 1) as i64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

/// Mount `disk` at `mountpoint`, print `ready` on stdout, and serve until unmounted.
pub fn serve<D: Disk>(disk: D, mountpoint: &Path, opts: &ServeOptions<'_>) -> std::io::Result<()> {
    let fs = OneFile { disk, direct_io: opts.direct_io, async_dio: opts.async_dio, snapshots: Vec::new() };
    let mount_opts =
        [MountOption::FSName(opts.fsname.into()), MountOption::AllowOther, MountOption::DefaultPermissions];
    let mut session = fuser::Session::new(fs, mountpoint, &mount_opts)?;
    println!("ready");
    let _ = std::io::stdout().flush();
    session.run()
}
