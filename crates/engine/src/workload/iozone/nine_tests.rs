//! iozone's nine tests on one file of one cell (file size x record size).
//!
//! Each test times what iozone times: from just before the first record to the
//! end of the last one, plus the fsync (`fsync`, iozone -e) and the close
//! (`close`, iozone -c) when asked. What iozone does outside that window is
//! done here too, untimed: the fsync after opening, the priming read of the
//! read test, and the fsync and close at the end when they are not timed.
//! With `purge` (iozone -p) a separate buffer is read before every record,
//! inside the timed loop as in iozone, to push the record buffer out of the
//! processor cache.

use std::ffi::CStr;
use std::os::fd::RawFd;

use super::stdio::{pread_all, pwrite_all, read_all, Errno, Stream};
use crate::measure::{now_ns, Recorder};

/// Operation kinds, one per iozone result column (mix_* are test 8's two halves).
pub const KINDS: &[&str] = &[
    "write",
    "rewrite",
    "read",
    "reread",
    "random_read",
    "random_write",
    "bkwd_read",
    "record_rewrite",
    "stride_read",
    "fwrite",
    "frewrite",
    "fread",
    "freread",
    "mix",
];
pub const WRITE: usize = 0;
pub const REWRITE: usize = 1;
pub const READ: usize = 2;
pub const REREAD: usize = 3;
pub const RANDOM_READ: usize = 4;
pub const RANDOM_WRITE: usize = 5;
pub const BKWD_READ: usize = 6;
pub const RECORD_REWRITE: usize = 7;
pub const STRIDE_READ: usize = 8;
pub const FWRITE: usize = 9;
pub const FREWRITE: usize = 10;
pub const FREAD: usize = 11;
pub const FREREAD: usize = 12;
pub const MIX: usize = 13;

/// The result columns each iozone test number yields, in iozone's order.
pub fn columns(test: u8) -> &'static [usize] {
    match test {
        0 => &[WRITE, REWRITE],
        1 => &[READ, REREAD],
        2 => &[RANDOM_READ, RANDOM_WRITE],
        3 => &[BKWD_READ],
        4 => &[RECORD_REWRITE],
        5 => &[STRIDE_READ],
        6 => &[FWRITE, FREWRITE],
        7 => &[FREAD, FREREAD],
        8 => &[MIX],
        _ => &[],
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Opts {
    pub fsync: bool,
    pub close: bool,
    pub direct: bool,
    /// Stride read: distance between records, in records (iozone -j, 17).
    pub stride: u64,
}

/// iozone -p: read `min(record, cache) / line` lines of a buffer of twice the
/// cache size, starting where the record buffer's address falls in the cache.
pub struct Purge {
    buf: Vec<u8>,
    cache: usize,
    line: usize,
}

impl Purge {
    pub fn new(cache: usize, line: usize) -> Self {
        Purge { buf: vec![1u8; 2 * cache], cache, line }
    }

    #[inline]
    pub fn run(&self, record: *const u8, reclen: usize) {
        let lines = (reclen / self.line).min(self.cache / self.line);
        let start = (record as usize) & (self.cache - 1);
        let mut acc = 0u8;
        for i in 0..lines {
            // SAFETY: start < cache and i * line < cache, so the index is inside 2 x cache.
            acc = acc.wrapping_add(unsafe { std::ptr::read_volatile(self.buf.as_ptr().add(start + i * self.line)) });
        }
        std::hint::black_box(acc);
    }
}

/// One cell's file and the buffers a test needs (all allocated before).
pub struct Cell<'a> {
    pub path: &'a CStr,
    pub rec: usize,
    pub numrecs: u64,
    pub buf: &'a mut [u8],
    pub stdio: &'a mut [u8],
    /// Random order of the records (iozone shuffles them once per cell, Fisher-Yates).
    pub perm: &'a [u32],
    pub purge: Option<&'a Purge>,
    /// iozone -a's "fetch": read every cache line of the record buffer just before a test's
    /// time starts (off with -p, which purges instead).
    pub fetch: bool,
    /// Data verification (verify = ...): records written carry headers, records read are checked.
    pub verify: Option<&'a mut super::verify::CellVerify>,
    /// Time every record into the latency histograms (iozone -Q). Off, as iozone by default,
    /// only the pass is timed: two clock reads and a histogram update per record cost about
    /// a tenth of a cached 4 KiB read.
    pub latency: bool,
}

/// Touch every 32-byte line of `buf` (iozone's fetchit, with its default line size).
#[inline]
fn fetch(buf: &[u8]) {
    let mut acc = 0u8;
    let mut i = 0;
    while i < buf.len() {
        // SAFETY: i < buf.len().
        acc = acc.wrapping_add(unsafe { std::ptr::read_volatile(buf.as_ptr().add(i)) });
        i += 32;
    }
    std::hint::black_box(acc);
}

impl Cell<'_> {
    pub fn bytes(&self) -> u64 {
        self.numrecs * self.rec as u64
    }
}

/// Why a test could not finish: the failing call and its errno.
#[derive(Debug)]
pub struct Fail {
    pub what: &'static str,
    pub errno: Errno,
}

type R<T> = std::result::Result<T, Fail>;

/// The timed passes a test ran: (column, seconds); `stopped` when asked to stop.
#[derive(Default, Debug)]
pub struct Done {
    pub passes: [(usize, f64); 2],
    pub n: usize,
    pub stopped: bool,
}

impl Done {
    fn push(&mut self, col: usize, secs: f64) {
        self.passes[self.n] = (col, secs);
        self.n += 1;
    }

    /// Ends a timed pass that `records` ran (its start and whether it was asked
    /// to stop). Stopped: marks the test stopped and returns true, leaving the
    /// file to close untimed. Else `finish` ends the pass (fsync and close, timed
    /// as asked) and returns the end of the time; the pass's seconds are kept.
    #[inline(always)]
    fn end_pass(&mut self, col: usize, (start, stopped): (u64, bool), finish: impl FnOnce() -> R<u64>) -> R<bool> {
        if stopped {
            self.stopped = true;
            return Ok(true);
        }
        let end = finish()?;
        self.push(col, secs(start, end));
        Ok(false)
    }
}

fn errno() -> Errno {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

fn open(path: &CStr, flags: i32, what: &'static str) -> R<RawFd> {
    // SAFETY: path is NUL-terminated.
    let fd = unsafe { crate::nofollow::open(path.as_ptr(), flags | libc::O_CLOEXEC, 0o640) };
    if fd < 0 {
        return Err(Fail { what, errno: errno() });
    }
    Ok(fd)
}

fn fsync(fd: RawFd) -> R<()> {
    // SAFETY: plain syscall on our fd.
    if unsafe { crate::sys::fsync(fd) } != 0 {
        return Err(Fail { what: "fsync", errno: errno() });
    }
    Ok(())
}

fn close(fd: RawFd) -> R<()> {
    // SAFETY: we own the fd and never use it after this.
    if unsafe { crate::sys::close(fd) } != 0 {
        return Err(Fail { what: "close", errno: errno() });
    }
    Ok(())
}

/// Closes the fd on an early return.
struct Fd(RawFd);
impl Drop for Fd {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // SAFETY: we own the fd.
            unsafe { crate::sys::close(self.0) };
        }
    }
}
impl Fd {
    /// The end of a pass: fsync and close inside the time when asked, then the
    /// rest untimed (iozone always fsyncs and closes). Returns the timed end.
    fn finish(mut self, o: &Opts, flush_sync: bool) -> R<u64> {
        let fd = std::mem::replace(&mut self.0, -1);
        let guard = Fd(fd);
        if o.fsync && flush_sync {
            fsync(fd)?;
        }
        if o.close {
            std::mem::forget(guard);
            close(fd)?;
            return Ok(now_ns());
        }
        let end = now_ns();
        fsync(fd)?;
        std::mem::forget(guard);
        close(fd)?;
        Ok(end)
    }
}

fn dflag(o: &Opts) -> i32 {
    if o.direct {
        libc::O_DIRECT
    } else {
        0
    }
}

/// Runs one record loop of the cell: record i is at file offset `at(i)` and
/// `op(offset, record buffer)` moves it; each op is recorded as `col`. Returns (start, stopped).
#[inline(always)]
fn records(
    c: &mut Cell,
    rec: &mut Recorder,
    col: usize,
    what: &'static str,
    at: impl FnMut(u64) -> u64,
    op: impl FnMut(u64, &mut [u8]) -> std::result::Result<(), Errno>,
) -> R<(u64, bool)> {
    record_loop(
        &mut c.buf[..c.rec],
        c.numrecs,
        c.purge,
        c.fetch,
        c.latency,
        c.verify.as_deref_mut(),
        rec,
        col,
        what,
        at,
        op,
    )
}

/// The loop itself, on the pieces of a cell, so that a stdio stream may borrow
/// the cell's stream buffer meanwhile: fetch (iozone -a) before the time starts,
/// then per record the purge (iozone -p), the op, and (with `latency`) its time. With verify,
/// a write's record is filled with its header first and a read's is checked
/// after (both inside the op's time).
#[inline(always)]
#[allow(clippy::too_many_arguments)] // inlined into each test's loop: the closures and switches fold away
fn record_loop(
    buf: &mut [u8],
    numrecs: u64,
    purge: Option<&Purge>,
    fetch_first: bool,
    latency: bool,
    mut verify: Option<&mut super::verify::CellVerify>,
    rec: &mut Recorder,
    col: usize,
    what: &'static str,
    mut at: impl FnMut(u64) -> u64,
    mut op: impl FnMut(u64, &mut [u8]) -> std::result::Result<(), Errno>,
) -> R<(u64, bool)> {
    let write = what == "write" || what == "fwrite";
    let reclen = buf.len();
    if fetch_first {
        fetch(buf);
    }
    let start = now_ns();
    let mut t0 = start;
    let mut i = 0;
    let mut stopped = false;
    while i < numrecs {
        if rec.interrupted() {
            stopped = true;
            break;
        }
        if let Some(p) = purge {
            p.run(buf.as_ptr(), reclen);
        }
        let off = at(i);
        if let Some(v) = verify.as_deref_mut() {
            if write {
                v.before_write(buf, off);
            }
        }
        op(off, buf).map_err(|errno| Fail { what, errno })?;
        if let Some(v) = verify.as_deref_mut() {
            if !write {
                v.after_read(buf, off);
            }
        }
        i += 1;
        if latency {
            let t1 = now_ns();
            rec.record(col, reclen as u64, t0, t1);
            t0 = t1;
        }
    }
    if !latency {
        rec.record_untimed(col, i, i * reclen as u64, start, now_ns());
    }
    Ok((start, stopped))
}

fn secs(start: u64, end: u64) -> f64 {
    end.saturating_sub(start) as f64 / 1e9
}

/// Test 0: write a new file, then rewrite it.
pub fn write_rewrite(c: &mut Cell, o: &Opts, rec: &mut Recorder) -> R<Done> {
    let mut d = Done::default();
    // iozone's sanity check and fresh start: create, truncate, close, unlink, then creat.
    let fd = open(c.path, libc::O_CREAT | libc::O_WRONLY, "create")?;
    // SAFETY: our fd.
    unsafe { crate::sys::ftruncate(fd, 0) };
    close(fd)?;
    // SAFETY: NUL-terminated path.
    unsafe { crate::sys::unlink(c.path.as_ptr()) };
    close(open(c.path, libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC, "create")?)?;
    for col in [WRITE, REWRITE] {
        let fd = Fd(open(c.path, libc::O_RDWR | dflag(o), "open")?);
        fsync(fd.0)?;
        let raw = fd.0;
        let reclen = c.rec as u64;
        // pwrite at the running offset, not write(2): in fsmeter's multi-threaded process write(2)
        // also takes the file-position lock per call, which single-threaded iozone does not pay.
        let pass = records(c, rec, col, "write", |i| i * reclen, |off, b| pwrite_all(raw, b, off))?;
        if d.end_pass(col, pass, || fd.finish(o, true))? {
            return Ok(d);
        }
    }
    Ok(d)
}

/// Test 1: read the file sequentially, twice.
pub fn read_reread(c: &mut Cell, o: &Opts, rec: &mut Recorder) -> R<Done> {
    let mut d = Done::default();
    for col in [READ, REREAD] {
        let fd = Fd(open(c.path, libc::O_RDONLY | dflag(o), "open")?);
        fsync(fd.0)?;
        // iozone primes the caches and TLB with one record, then seeks back.
        read_all(fd.0, &mut c.buf[..c.rec]).map_err(|errno| Fail { what: "read", errno })?;
        // SAFETY: our fd.
        unsafe { crate::sys::lseek(fd.0, 0, libc::SEEK_SET) };
        let raw = fd.0;
        let reclen = c.rec as u64;
        // pread at the running offset, for the same reason as test 0's pwrite.
        let pass = records(c, rec, col, "read", |i| i * reclen, |off, b| pread_all(raw, b, off))?;
        if d.end_pass(col, pass, || fd.finish(o, true))? {
            return Ok(d);
        }
    }
    Ok(d)
}

/// Test 2: read every record once in a random order, then write every record
/// once in the same order.
pub fn random_rw(c: &mut Cell, o: &Opts, rec: &mut Recorder) -> R<Done> {
    let mut d = Done::default();
    let reclen = c.rec as u64;
    for (col, write) in [(RANDOM_READ, false), (RANDOM_WRITE, true)] {
        let fd = Fd(open(c.path, libc::O_RDWR | libc::O_CREAT | dflag(o), "open")?);
        let raw = fd.0;
        let perm = c.perm;
        let pass = if write {
            records(c, rec, col, "write", |i| perm[i as usize] as u64 * reclen, |off, b| pwrite_all(raw, b, off))?
        } else {
            records(c, rec, col, "read", |i| perm[i as usize] as u64 * reclen, |off, b| pread_all(raw, b, off))?
        };
        if d.end_pass(col, pass, || fd.finish(o, true))? {
            return Ok(d);
        }
    }
    Ok(d)
}

/// Test 3: read the file from its last record to its first.
pub fn backward_read(c: &mut Cell, o: &Opts, rec: &mut Recorder) -> R<Done> {
    let mut d = Done::default();
    let fd = Fd(open(c.path, libc::O_RDONLY | dflag(o), "open")?);
    fsync(fd.0)?;
    let (raw, n, reclen) = (fd.0, c.numrecs, c.rec as u64);
    let pass = records(c, rec, BKWD_READ, "read", |i| (n - 1 - i) * reclen, |off, b| pread_all(raw, b, off))?;
    d.end_pass(BKWD_READ, pass, || fd.finish(o, true))?;
    Ok(d)
}

/// Test 4: write the first record again and again, as many times as the file has records.
pub fn record_rewrite(c: &mut Cell, o: &Opts, rec: &mut Recorder) -> R<Done> {
    let mut d = Done::default();
    let fd = Fd(open(c.path, libc::O_RDWR | libc::O_CREAT | dflag(o), "open")?);
    fsync(fd.0)?;
    let raw = fd.0;
    let pass = records(c, rec, RECORD_REWRITE, "write", |_| 0, |off, b| pwrite_all(raw, b, off))?;
    d.end_pass(RECORD_REWRITE, pass, || fd.finish(o, true))?;
    Ok(d)
}

/// Offsets (in records) of iozone's stride read: `stride` records apart; when
/// the next one would reach the last record, start over one record further on
/// (iozone's "stripewrap"), from 0 when the file has no more than `stride` records.
pub struct StrideWalk {
    pos: u64,
    wrap: u64,
    n: u64,
    stride: u64,
}

impl StrideWalk {
    pub fn new(n: u64, stride: u64) -> Self {
        StrideWalk { pos: 0, wrap: 0, n, stride }
    }
    /// The record to read now; advances to the next.
    #[inline]
    // Not an Iterator: the walk wraps around and never ends, and callers must not pay for Option.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        let here = self.pos;
        let after = here + 1;
        if after + self.stride >= self.n.saturating_sub(1) {
            self.wrap += 1;
            self.pos = if self.n <= self.stride { 0 } else { self.wrap % self.n };
        } else {
            self.pos = after + self.stride - 1;
        }
        here
    }
}

/// Test 5: read one record every `stride` records, wrapping as iozone does.
pub fn stride_read(c: &mut Cell, o: &Opts, rec: &mut Recorder) -> R<Done> {
    let mut d = Done::default();
    let fd = Fd(open(c.path, libc::O_RDONLY | dflag(o), "open")?);
    fsync(fd.0)?;
    let (raw, reclen) = (fd.0, c.rec as u64);
    let mut walk = StrideWalk::new(c.numrecs, o.stride.max(1));
    let pass = records(c, rec, STRIDE_READ, "read", |_| walk.next() * reclen, |off, b| pread_all(raw, b, off))?;
    d.end_pass(STRIDE_READ, pass, || fd.finish(o, true))?;
    Ok(d)
}

/// The timed end of a stdio pass: fflush (+ fsync for writes) with `fsync`,
/// fclose with `close`; the rest untimed.
fn finish_stream(fd: Fd, s: &mut Stream, o: &Opts, write: bool) -> R<u64> {
    let ioerr = |errno| Fail { what: if write { "fwrite" } else { "fread" }, errno };
    if o.fsync {
        s.flush().map_err(ioerr)?;
    }
    if o.close {
        s.flush().map_err(ioerr)?;
    } else {
        if o.fsync && write {
            fsync(fd.0)?;
        }
        let end = now_ns();
        s.flush().map_err(ioerr)?;
        if write {
            fsync(fd.0)?;
        }
        drop(fd);
        return Ok(end);
    }
    fd.finish(&Opts { fsync: o.fsync && write, close: true, ..*o }, true)
}

/// Test 6: fwrite the file through a buffer of one record (setvbuf), twice.
/// The first pass creates the file when test 0 has not ("w+"), else writes
/// over it ("r+"). stdio never uses O_DIRECT.
pub fn fwrite_refwrite(c: &mut Cell, o: &Opts, rec: &mut Recorder) -> R<Done> {
    let mut d = Done::default();
    for col in [FWRITE, FREWRITE] {
        let fd = Fd(open(c.path, libc::O_RDWR | libc::O_CREAT, "fopen")?);
        fsync(fd.0)?;
        let reclen = c.rec;
        let mut s = Stream::new(fd.0, &mut c.stdio[..reclen]);
        let r = reclen as u64;
        let pass = record_loop(
            &mut c.buf[..reclen],
            c.numrecs,
            c.purge,
            c.fetch,
            c.latency,
            c.verify.as_deref_mut(),
            rec,
            col,
            "fwrite",
            |i| i * r,
            |_, b| s.write(b),
        )?;
        if d.end_pass(col, pass, || finish_stream(fd, &mut s, o, true))? {
            return Ok(d);
        }
    }
    Ok(d)
}

/// Test 7: fread the file through a buffer of one record, twice.
pub fn fread_refread(c: &mut Cell, o: &Opts, rec: &mut Recorder) -> R<Done> {
    let mut d = Done::default();
    for col in [FREAD, FREREAD] {
        let fd = Fd(open(c.path, libc::O_RDONLY, "fopen")?);
        fsync(fd.0)?;
        let reclen = c.rec;
        let mut s = Stream::new(fd.0, &mut c.stdio[..reclen]);
        let r = reclen as u64;
        let pass = record_loop(
            &mut c.buf[..reclen],
            c.numrecs,
            c.purge,
            c.fetch,
            c.latency,
            c.verify.as_deref_mut(),
            rec,
            col,
            "fread",
            |i| i * r,
            |_, b| s.read(b),
        )?;
        if d.end_pass(col, pass, || finish_stream(fd, &mut s, o, false))? {
            return Ok(d);
        }
    }
    Ok(d)
}

/// Test 8, the random mix: `bufs.len()` threads on the same file, split
/// round-robin between readers (even) and writers (odd) as iozone's throughput
/// mode does; each visits every record once in its own random order (a
/// rotation of the cell's shuffle). One figure: all bytes over the wall time
/// from the common start to the last thread's end. Its operations are not in
/// the phase's per-operation tables and intervals (the threads are not the
/// harness's); the cell's result carries its ops, bytes and time.
pub fn random_mix(
    c: &mut Cell,
    o: &Opts,
    bufs: &mut [crate::backend::buffer::AlignedBuf],
    rec: &mut Recorder,
) -> R<Done> {
    let mut d = Done::default();
    let nthreads = bufs.len();
    let reclen = c.rec;
    let n = c.numrecs;
    let perm = c.perm;
    let path = c.path;
    let purge = c.purge;
    let fds: Vec<Fd> = (0..nthreads).map(|_| open(path, libc::O_RDWR | dflag(o), "open").map(Fd)).collect::<R<_>>()?;
    for fd in &fds {
        fsync(fd.0)?;
    }
    let stop = rec.interrupted();
    if stop {
        d.stopped = true;
        return Ok(d);
    }
    // With verify, writers write verified records (as their own thread); reads are not checked
    // (a reader may meet a write in progress) and the cell's re-read checks records for themselves.
    let verify = c.verify.as_deref_mut().map(|v| {
        v.exact = false;
        (v.algo(), v.seed())
    });
    // The threads start together at a gate that the coordinator opens once every thread
    // it could start has arrived: a thread the system refuses fails the cell, and the
    // ones already started return at once instead of waiting for ever.
    let gate = crate::measure::StartGate::new();
    let refused = std::sync::atomic::AtomicBool::new(false);
    let start_cell = std::sync::atomic::AtomicU64::new(0);
    let results: Vec<std::result::Result<u64, Fail>> = std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(nthreads);
        let mut spawn_err = None;
        for (t, (buf, fd)) in bufs.iter_mut().zip(fds.iter()).enumerate() {
            let (gate, refused, start_cell) = (&gate, &refused, &start_cell);
            let raw = fd.0;
            let spawned = std::thread::Builder::new().spawn_scoped(s, move || -> std::result::Result<u64, Fail> {
                let b = &mut buf.as_mut_slice()[..reclen];
                gate.arrive_and_wait();
                if refused.load(std::sync::atomic::Ordering::SeqCst) {
                    return Ok(0);
                }
                if t == 0 {
                    start_cell.store(now_ns(), std::sync::atomic::Ordering::SeqCst);
                }
                let shift = (t as u64 * n) / nthreads as u64;
                for i in 0..n {
                    let r = perm[((i + shift) % n) as usize] as u64;
                    if let Some(p) = purge {
                        p.run(b.as_ptr(), reclen);
                    }
                    if t % 2 == 0 {
                        pread_all(raw, b, r * reclen as u64).map_err(|errno| Fail { what: "read", errno })?;
                    } else {
                        if let Some((algo, seed)) = verify {
                            crate::verify::fill_block(
                                b,
                                r * reclen as u64,
                                (1 << 40) | (i + 1),
                                t as u32 + 1,
                                seed,
                                algo,
                            );
                        }
                        pwrite_all(raw, b, r * reclen as u64).map_err(|errno| Fail { what: "write", errno })?;
                    }
                }
                if o.fsync && t % 2 == 1 {
                    fsync(raw)?;
                }
                Ok(now_ns())
            });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    refused.store(true, std::sync::atomic::Ordering::SeqCst);
                    spawn_err = Some(Fail { what: "start a thread", errno: e.raw_os_error().unwrap_or(libc::EAGAIN) });
                    break;
                }
            }
        }
        gate.release_when_arrived(handles.len());
        let mut out: Vec<std::result::Result<u64, Fail>> =
            handles.into_iter().map(|h| h.join().expect("mix thread panicked")).collect();
        if let Some(f) = spawn_err {
            out.push(Err(f));
        }
        out
    });
    let mut end = 0u64;
    for r in results {
        end = end.max(r?);
    }
    let start = start_cell.load(std::sync::atomic::Ordering::SeqCst);
    for fd in fds {
        if o.close {
            let f = fd.0;
            std::mem::forget(fd);
            close(f)?;
        } else {
            drop(fd);
        }
    }
    if o.close {
        end = end.max(now_ns());
    }
    d.push(MIX, secs(start, end));
    Ok(d)
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn stride_walk_visits_as_iozone_does() {
        // 100 records, stride 17: 0, 17, .., 85; then 1, 18, ...
        let mut w = StrideWalk::new(100, 17);
        let got: Vec<u64> = (0..8).map(|_| w.next()).collect();
        assert_eq!(got, vec![0, 17, 34, 51, 68, 85, 1, 18]);
        // A file of no more than `stride` records reads record 0 over and over.
        let mut w = StrideWalk::new(8, 17);
        assert_eq!((0..3).map(|_| w.next()).collect::<Vec<_>>(), vec![0, 0, 0]);
    }
}
