//! fsmeter-blocklog: fsmeter's power-cut recorder.
//!
//! A FUSE filesystem with one regular file, `disk.img`, served from an image file (the serving is
//! `fsmeter-fusedisk`'s, shared with `fsmeter-diskmodel`). A loop device
//! attached to that file sends every block write, discard/zero-out and cache flush it receives
//! here, one request at a time (the session loop is single-threaded), and each one is appended to
//! a write log in arrival order before it is answered, like dm-log-writes does in the kernel:
//!
//! ```text
//! record = kind:u8 pad:[u8;3] len:u32 seq:u64 t_ns:u64 offset:u64  (32 bytes, little-endian)
//!          then `len` data bytes for a write record
//! kind   = 1 write, 2 flush (fsync of the file: the loop device's REQ_PREFLUSH / FUA),
//!          3 zero range (fallocate punch-hole / zero-range), 4 start (t_ns of the first record)
//! t_ns   = CLOCK_MONOTONIC when the request arrived, the same clock the engine stamps its
//!          durability ledger with
//! ```
//!
//! Replaying the records of the log up to any instant over a copy of the image taken when the log
//! started gives what the device had received at that instant: a state a power cut of a disk
//! without volatile write cache can leave (see fsmeter.crash for the other cut models).
//!
//! Usage: fsmeter-blocklog IMAGE LOG MOUNTPOINT. Runs in the foreground until MOUNTPOINT is
//! unmounted; prints `ready` on stdout once mounted.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;

use fsmeter_fusedisk::{now_ns, serve, Disk, ReplyData, ReplyEmpty, ReplyWrite, ServeOptions};

const KIND_WRITE: u8 = 1;
const KIND_FLUSH: u8 = 2;
const KIND_ZERO: u8 = 3;
const KIND_START: u8 = 4;

struct BlockLog {
    image: File,
    size: u64,
    log: BufWriter<File>,
    seq: u64,
    failed: bool,
}

impl BlockLog {
    fn record(&mut self, kind: u8, offset: u64, len: u32, data: &[u8]) -> std::io::Result<()> {
        let mut head = [0u8; 32];
        head[0] = kind;
        head[4..8].copy_from_slice(&len.to_le_bytes());
        head[8..16].copy_from_slice(&self.seq.to_le_bytes());
        head[16..24].copy_from_slice(&now_ns().to_le_bytes());
        head[24..32].copy_from_slice(&offset.to_le_bytes());
        self.seq += 1;
        self.log.write_all(&head)?;
        self.log.write_all(data)
    }

    /// A log that cannot be written makes every later answer an error: the device "fails" rather
    /// than acknowledging writes the log does not hold.
    fn fail(&mut self, what: &str, err: std::io::Error) -> i32 {
        eprintln!("fsmeter-blocklog: {what}: {err}");
        self.failed = true;
        err.raw_os_error().unwrap_or(libc::EIO)
    }
}

impl Disk for BlockLog {
    fn size(&self) -> u64 {
        self.size
    }

    fn destroy(&mut self) {
        let _ = self.log.flush();
    }

    fn read(&mut self, offset: u64, size: u32, reply: ReplyData) {
        let mut buf = vec![0u8; size as usize];
        match self.image.read_exact_at(&mut buf, offset) {
            Ok(()) => reply.data(&buf),
            Err(e) => reply.error(e.raw_os_error().unwrap_or(libc::EIO)),
        }
    }

    fn write(&mut self, offset: u64, data: &[u8], reply: ReplyWrite) {
        if self.failed {
            return reply.error(libc::EIO);
        }
        // Logged before the image changes and before the answer: the log never lacks an acknowledged write.
        if let Err(e) = self.record(KIND_WRITE, offset, data.len() as u32, data) {
            return reply.error(self.fail("log write", e));
        }
        match self.image.write_all_at(data, offset) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(self.fail("image write", e)),
        }
    }

    fn fsync(&mut self, reply: ReplyEmpty) {
        if self.failed {
            return reply.error(libc::EIO);
        }
        // The loop device's cache flush. The log reaches the OS (not necessarily the host's disk:
        // fsmeter reads it, the host does not crash) so the log file is whole whenever it is read.
        let res = self.record(KIND_FLUSH, 0, 0, &[]).and_then(|_| self.log.flush());
        match res {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(self.fail("log flush", e)),
        }
    }

    fn fallocate(&mut self, offset: u64, length: u64, mode: i32, reply: ReplyEmpty) {
        // The loop device turns DISCARD and WRITE_ZEROES into punch-hole / zero-range: both read
        // back as zeros afterwards, so the log holds them as a zero range. Plain preallocation
        // (mode 0) changes no data.
        let zeroing = mode & (libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE) != 0;
        if self.failed {
            return reply.error(libc::EIO);
        }
        if zeroing {
            // The length field is 32 bits: a larger range is logged in pieces.
            let (mut at, end) = (offset, offset + length);
            while at < end {
                let piece = (end - at).min(1 << 30);
                if let Err(e) = self.record(KIND_ZERO, at, piece as u32, &[]) {
                    return reply.error(self.fail("log zero range", e));
                }
                at += piece;
            }
        }
        // SAFETY: fallocate on the fd we own, with the kernel's own mode and range.
        let rc = unsafe { libc::fallocate(self.image.as_raw_fd(), mode, offset as i64, length as i64) };
        if rc == 0 {
            reply.ok()
        } else {
            reply.error(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: fsmeter-blocklog IMAGE LOG MOUNTPOINT");
        std::process::exit(2);
    }
    let image = match OpenOptions::new().read(true).write(true).open(&args[1]) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("fsmeter-blocklog: open image {}: {e}", args[1]);
            std::process::exit(1);
        }
    };
    let size = image.metadata().map(|m| m.len()).unwrap_or(0);
    let log = match OpenOptions::new().write(true).create_new(true).open(&args[2]) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("fsmeter-blocklog: create log {}: {e}", args[2]);
            std::process::exit(1);
        }
    };
    let mut fs = BlockLog { image, size, log: BufWriter::with_capacity(4 << 20, log), seq: 0, failed: false };
    if let Err(e) = fs.record(KIND_START, 0, 0, &[]).and_then(|_| fs.log.flush()) {
        eprintln!("fsmeter-blocklog: write log: {e}");
        std::process::exit(1);
    }
    // The session loop answers one request at a time, so the log holds them in arrival order. The
    // loop device opens the file with O_DIRECT (losetup --direct-io=on), which bypasses FUSE's
    // page cache; FOPEN_DIRECT_IO and asynchronous direct I/O stay off, as they always were here.
    let opts = ServeOptions { fsname: "fsmeter-blocklog", direct_io: false, async_dio: false };
    if let Err(e) = serve(fs, std::path::Path::new(&args[3]), &opts) {
        eprintln!("fsmeter-blocklog: {}: {e}", args[3]);
        std::process::exit(1);
    }
}
