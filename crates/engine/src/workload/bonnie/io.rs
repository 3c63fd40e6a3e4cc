//! Bonnie's six I/O phases on the data file: per-char write, block write,
//! rewrite, per-char read, block read (one thread each) and random seeks
//! (`seek_procs` threads sharing `seeks` tickets).
//!
//! As in bonnie++'s TestFileOps: the file is opened before the clock starts;
//! the per-char and block writes each create it anew (unlink, O_CREAT|O_EXCL);
//! every phase ends with fflush (per-char write), fsync when `fsync` is set
//! (bonnie++ fsyncs in every close; Bonnie 1.x only closes) and close, inside
//! its time, recorded as the `close` operation.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::backend::buffer::AlignedBuf;
use crate::error::{EngineError, Result};
use crate::measure::{own_fd_table, run_threads, Control, PhaseTiming};
use crate::report::PhaseReport;
use crate::settings::Settings;

use super::stdio::{self, Reader, Writer};
use super::{cpath, mix64, size_rule_warning, BonnieSpec, CharIo, DATA_FILE, UPDATE_SEEK};
use crate::verify::{self, Checker, Checksum, LastWrites};

const KINDS: &[&str] = &["putc", "getc", "write", "rewrite", "read", "seek", "close"];
const PUTC: usize = 0;
const GETC: usize = 1;
const WRITE: usize = 2;
const REWRITE: usize = 3;
const READ: usize = 4;
const SEEK: usize = 5;
const CLOSE: usize = 6;

/// What a per-char read says when the file ends early.
const EARLY_EOF: &str = "early end of file: run block_write first";

/// O_DIRECT wants buffers aligned to the logical block; a page covers every device.
const ALIGN: usize = 4096;

/// An open data file; closed on drop if the phase did not close it (errors, Ctrl-C).
struct Fd(i32);

impl Drop for Fd {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // SAFETY: we own the descriptor.
            unsafe { crate::sys::close(self.0) };
        }
    }
}

fn os_err(what: &str, path: &std::path::Path) -> EngineError {
    let e = std::io::Error::last_os_error();
    let mut ctx = format!("{what} {}", path.display());
    if e.raw_os_error() == Some(libc::ENOENT) {
        ctx.push_str(" (run the phases in Bonnie's order: block_write makes the file the later phases use)");
    } else if e.raw_os_error() == Some(libc::EINVAL) && what.contains("O_DIRECT") {
        ctx.push_str(
            " (this filesystem refuses O_DIRECT, or chunk is not a multiple of its block size: use direct=false)",
        );
    }
    EngineError::io(ctx, e)
}

fn open(path: &std::path::Path, create: bool, direct: bool) -> Result<Fd> {
    let c = cpath(path);
    let mut flags = libc::O_RDWR | libc::O_CLOEXEC;
    if create {
        // SAFETY: NUL-terminated path; a missing file is fine.
        unsafe { crate::sys::unlink(c.as_ptr()) };
        flags |= libc::O_CREAT | libc::O_EXCL;
    }
    if direct {
        flags |= libc::O_DIRECT;
    }
    // SAFETY: NUL-terminated path.
    let fd = unsafe { crate::nofollow::open(c.as_ptr(), flags, 0o600) };
    if fd < 0 {
        return Err(os_err(if direct { "open (O_DIRECT)" } else { "open" }, path));
    }
    Ok(Fd(fd))
}

/// Repeats a read(2)/write(2)-like call until `len` bytes have moved: `call(done)` moves
/// the bytes from `done` on and returns what the system call returned. A failure is
/// the call's error, a return of 0 is `at_zero()`. Inlined, so each caller compiles
/// to the loop it would have written out.
#[inline(always)]
fn transfer_all(
    len: usize,
    at_zero: impl FnOnce() -> std::io::Error,
    mut call: impl FnMut(usize) -> isize,
) -> std::io::Result<()> {
    let mut off = 0;
    while off < len {
        let n = call(off);
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if n == 0 {
            return Err(at_zero());
        }
        off += n as usize;
    }
    Ok(())
}

/// The data file ended before `size` bytes.
fn early_eof(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::UnexpectedEof, what.to_string())
}

/// write(2) all of `buf` (a short write continues where it stopped).
#[inline]
fn write_all(fd: i32, buf: &[u8]) -> std::io::Result<()> {
    // SAFETY: off < buf.len(), so the range is inside buf.
    transfer_all(
        buf.len(),
        || std::io::Error::from_raw_os_error(libc::ENOSPC),
        |off| unsafe { crate::sys::write(fd, buf.as_ptr().add(off) as *const libc::c_void, buf.len() - off) },
    )
}

/// read(2) all of `buf`; an early end of file is an error (the file is shorter than `size`).
#[inline]
fn read_all(fd: i32, buf: &mut [u8]) -> std::io::Result<()> {
    let (ptr, len) = (buf.as_mut_ptr(), buf.len());
    // SAFETY: off < len, so the range is inside buf, which is writable.
    transfer_all(
        len,
        || early_eof("the data file is shorter than size: run block_write first"),
        |off| unsafe { crate::sys::read(fd, ptr.add(off) as *mut libc::c_void, len - off) },
    )
}

/// pwrite(2) all of `buf` at `at`. The block phases use positioned I/O at the running offset, not
/// write(2)/read(2): in fsmeter's multi-threaded process those also take the file-position lock
/// on every call, which the single-threaded bonnie++ does not pay. The filesystem sees the same
/// writes and reads.
#[inline]
fn pwrite_all(fd: i32, buf: &[u8], at: u64) -> std::io::Result<()> {
    // SAFETY: off < buf.len(), so the range is inside buf.
    transfer_all(
        buf.len(),
        || std::io::Error::from_raw_os_error(libc::ENOSPC),
        |off| unsafe {
            crate::sys::pwrite(
                fd,
                buf.as_ptr().add(off) as *const libc::c_void,
                buf.len() - off,
                (at + off as u64) as i64,
            )
        },
    )
}

/// pread(2) all of `buf` from `at` (see pwrite_all); an early end of file is an error.
#[inline]
fn pread_all(fd: i32, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    let (ptr, len) = (buf.as_mut_ptr(), buf.len());
    // SAFETY: off < len, so the range is inside buf, which is writable.
    transfer_all(
        len,
        || early_eof("the data file is shorter than size: run block_write first"),
        |off| unsafe { crate::sys::pread(fd, ptr.add(off) as *mut libc::c_void, len - off, (at + off as u64) as i64) },
    )
}

/// bonnie++'s per-char loop without stdio: `n` one-byte system calls at the running
/// offset `pos`; `call(i, at)` makes call i at offset `at` and returns its result.
/// Anything but 1 byte fails: the call's error, or `short()` for a 0 return.
#[inline(always)]
fn byte_calls(
    n: usize,
    pos: &mut u64,
    short: impl FnOnce() -> std::io::Error,
    mut call: impl FnMut(usize, i64) -> isize,
) -> std::io::Result<()> {
    for i in 0..n {
        let r = call(i, *pos as i64);
        *pos += 1;
        if r != 1 {
            return Err(if r < 0 { std::io::Error::last_os_error() } else { short() });
        }
    }
    Ok(())
}

#[inline]
fn seek(fd: i32, off: i64, whence: i32) -> std::io::Result<()> {
    // SAFETY: plain syscall on our descriptor.
    if unsafe { crate::sys::lseek(fd, off, whence) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// fflush is done by the caller; this is the closing fsync (if asked) and close.
fn finish(fd: &mut Fd, fsync: bool) -> std::io::Result<()> {
    // SAFETY: we own fd.
    if fsync && unsafe { crate::sys::fsync(fd.0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let r = unsafe { crate::sys::close(fd.0) };
    fd.0 = -1;
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Data verification of the data file: one block per chunk; the last-writes table says
/// which write each chunk should hold.
pub struct Verifier {
    algo: Checksum,
    last_writes: LastWrites,
    /// The last-writes table is exact until several seekers wrote back chunks at once.
    exact: bool,
    /// Phases run so far: the high bits of write numbers.
    phases: u64,
}

impl Verifier {
    pub fn new(algo: Checksum, spec: &BonnieSpec) -> Verifier {
        Verifier { algo, last_writes: LastWrites::new(1, spec.size, spec.chunk), exact: true, phases: 0 }
    }

    pub fn start_phase(&mut self, phase: &str) {
        self.phases += 1;
        if matches!(phase, "putc_write" | "block_write") {
            // A new file.
            self.last_writes = LastWrites::new(1, self.last_writes_len(), self.last_writes.block());
            self.exact = true;
        }
    }

    fn last_writes_len(&self) -> u64 {
        self.last_writes.len_bytes()
    }

    fn gen_base(&self) -> u64 {
        self.phases << 40
    }

    #[inline]
    fn expect(&self, off: u64) -> Option<(u32, u64)> {
        if self.exact {
            self.last_writes.expected(0, off)
        } else {
            None
        }
    }

    fn notes(&self) -> serde_json::Value {
        serde_json::json!({
            "exact": self.exact,
            "why": if self.exact {
                "every chunk is checked against the write that should be there"
            } else {
                "several seekers wrote chunks back at once: chunks are checked for their own header and checksum, not which write they hold"
            },
        })
    }

    /// The `verify` phase: re-read the whole data file.
    pub fn reread(&self, spec: &BonnieSpec, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        let files = [verify::RereadFile { path: job.dir.join(DATA_FILE), start: 0, len: spec.size }];
        verify::reread(job, ctl, &files, self.algo, spec.chunk, Some(&self.last_writes), self.exact, self.notes())
    }
}

fn static_phase(phase: &str) -> &'static str {
    super::PHASES.iter().copied().find(|p| *p == phase).unwrap_or("bonnie")
}

/// Bonnie's size rule for the report: its warning (when the file is too small) and its details.
fn size_rule(spec: &BonnieSpec, report: &mut PhaseReport) -> serde_json::Value {
    let (warning, rule) = size_rule_warning(spec.size);
    report.warnings.extend(warning);
    rule
}

struct SeqState {
    fd: Fd,
    buf: AlignedBuf,
    writer: Option<Writer>,
    reader: Option<Reader>,
    stdio_buffer: usize,
}

impl SeqState {
    /// The data file opened for `phase`, before the clock starts (as bonnie++ does), with its
    /// stdio stream for the per-char phases in stdio mode.
    fn open(phase: &str, path: &std::path::Path, direct: bool, stdio_chars: bool, chunk: usize) -> Result<Self> {
        let create = matches!(phase, "putc_write" | "block_write");
        let fd = open(path, create, direct)?;
        let stdio_buffer = if stdio_chars { stdio::stdio_buffer_size(fd.0) } else { 0 };
        let (writer, reader) = match (phase, stdio_chars) {
            ("putc_write", true) => (Some(Writer::new(fd.0)), None),
            ("getc_read", true) => (None, Some(Reader::new(fd.0))),
            _ => (None, None),
        };
        Ok(SeqState { fd, buf: AlignedBuf::new(chunk, ALIGN), writer, reader, stdio_buffer })
    }
}

#[derive(Default)]
struct SeqDone {
    bytes: u64,
    blocks: u64,
    /// getc: how often each byte value came back (Bonnie's chars[] counter; keeps the reads honest).
    checksum: u64,
    /// The stdio stream's buffer, in the per-char phases in stdio mode.
    stdio_buffer: usize,
}

/// A sequential phase's running state between chunks.
struct SeqCursor {
    /// The next byte Bonnie's block phases dirty, so that no two chunks are alike.
    bufindex: usize,
    /// getc: how often each byte value came back.
    chars: [u64; 256],
    /// The per-byte system calls' running offset: they use pread/pwrite there, since in a
    /// multi-threaded process read(2)/write(2) also take the file-position lock on every call,
    /// which the single-threaded bonnie++ does not pay (see docs/bonnie.md).
    pos: u64,
    /// Verified writes so far (their generation).
    writes: u64,
}

/// The shape of a sequential phase.
struct SeqShape {
    /// Bytes the phase moves.
    total: u64,
    /// One byte per call (putc/getc) rather than a chunk per call.
    per_char: bool,
    direct: bool,
    /// The per-char phases go through stdio (fputc/getc), not a system call per byte.
    stdio_chars: bool,
}

impl SeqShape {
    fn of(phase: &str, spec: &BonnieSpec) -> Self {
        let (total, per_char) = match phase {
            "putc_write" | "getc_read" => (spec.char_bytes(), true),
            _ => (spec.size, false),
        };
        let stdio_chars = per_char && spec.char_io == CharIo::Stdio;
        SeqShape { total, per_char, direct: spec.direct && !per_char, stdio_chars }
    }
}

/// One of the five single-stream phases.
pub fn sequential(
    phase: &str,
    spec: &BonnieSpec,
    job: &Settings,
    ctl: &Control,
    v: Option<&Verifier>,
) -> Result<PhaseReport> {
    let path = job.dir.join(DATA_FILE);
    let chunk = spec.chunk as usize;
    let shape = SeqShape::of(phase, spec);
    let total = shape.total;
    let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
    let (report, done) = run_threads(
        phase,
        1,
        timing,
        ctl,
        KINDS,
        spec.sigfig(),
        total.div_ceil(spec.chunk),
        // The data file's descriptor is the worker's own, opened here and closed when the state drops.
        |_| {
            own_fd_table(&[]);
            SeqState::open(phase, &path, shape.direct, shape.stdio_chars, chunk)
        },
        |st, rec| {
            let mut checker = v.map(|v| Checker::new(v.algo, chunk, job.seed, 0, static_phase(phase)));
            let mut done = SeqDone::default();
            let io = |what: &str, e: std::io::Error| EngineError::io(format!("{phase}: {what} {}", path.display()), e);
            let mut cur = SeqCursor { bufindex: 0, chars: [0u64; 256], pos: 0, writes: 0 };
            let mut left = total;
            while left > 0 && !rec.interrupted() {
                let n = left.min(spec.chunk) as usize;
                let t0 = rec.stamp();
                let off = done.bytes;
                let kind = match (checker.as_mut(), v) {
                    (Some(ch), Some(v)) => verified_seq_op(
                        phase,
                        st.fd.0,
                        &mut st.writer,
                        &mut st.reader,
                        &mut st.buf.as_mut_slice()[..n],
                        off,
                        ch,
                        v,
                        &mut cur.writes,
                        &mut cur.pos,
                    ),
                    _ => plain_seq_op(phase, st, n, off, &mut cur),
                }
                .map_err(|(what, e)| io(what, e))?;
                rec.record(kind, n as u64, t0, rec.stamp());
                left -= n as u64;
                done.bytes += n as u64;
                done.blocks += 1;
            }
            // The closing flush, fsync and close are inside the phase's time.
            let t0 = rec.stamp();
            if let Some(w) = st.writer.as_mut() {
                w.flush().map_err(|e| io("fflush", e))?;
            }
            finish(&mut st.fd, spec.fsync).map_err(|e| io(if spec.fsync { "fsync/close" } else { "close" }, e))?;
            rec.record(CLOSE, 0, t0, rec.stamp());
            done.checksum = cur.chars.iter().enumerate().map(|(i, &n)| i as u64 * n).sum();
            done.stdio_buffer = st.stdio_buffer;
            Ok((done, checker))
        },
    )?;
    let (d, checker) = done.into_iter().next().unwrap_or_default();
    Ok(seq_report(report, phase, spec, &shape, &path, d, v.zip(checker.as_ref())))
}

/// A sequential phase's counters and details, with the verification's findings.
fn seq_report(
    mut report: PhaseReport,
    phase: &str,
    spec: &BonnieSpec,
    shape: &SeqShape,
    path: &std::path::Path,
    d: SeqDone,
    verified: Option<(&Verifier, &Checker)>,
) -> PhaseReport {
    report.counters.insert("bytes".into(), d.bytes);
    report.counters.insert("blocks".into(), d.blocks);
    if phase == "getc_read" {
        report.counters.insert("byte_sum".into(), d.checksum);
    }
    let rule = size_rule(spec, &mut report);
    let verify_extra = verified.and_then(|(v, ch)| {
        verify::merge_into(&mut report, [ch], |_| path.display().to_string(), v.notes());
        report.extra.get("verify").cloned()
    });
    report.extra = serde_json::json!({
        "file": path.display().to_string(),
        "size_bytes": spec.size,
        "phase_bytes": shape.total,
        "chunk_bytes": spec.chunk,
        "per_char": shape.per_char,
        "char_io": if shape.per_char { Some(format!("{:?}", spec.char_io).to_lowercase()) } else { None },
        "stdio_buffer_bytes": if shape.stdio_chars { Some(d.stdio_buffer) } else { None },
        "fsync": spec.fsync,
        "direct": shape.direct,
        "size_rule": rule,
    });
    if let Some(x) = verify_extra {
        report.extra["verify"] = x;
    }
    report
}

/// One chunk of a sequential phase without verification; returns the operation's kind.
#[inline]
fn plain_seq_op(
    phase: &str,
    st: &mut SeqState,
    n: usize,
    off: u64,
    cur: &mut SeqCursor,
) -> std::result::Result<usize, (&'static str, std::io::Error)> {
    let fd = st.fd.0;
    // The whole chunk: the last one may be shorter (`n`), the byte dirtied is anywhere in it.
    let buf = st.buf.as_mut_slice();
    let chunk = buf.len();
    Ok(match phase {
        "putc_write" => {
            match st.writer.as_mut() {
                Some(w) => {
                    for i in 0..n {
                        w.putc((i & 0x7f) as u8).map_err(|e| ("putc to", e))?;
                    }
                }
                None => {
                    let short = || std::io::Error::from_raw_os_error(libc::ENOSPC);
                    byte_calls(n, &mut cur.pos, short, |i, at| {
                        let c = (i & 0x7f) as u8;
                        // SAFETY: one byte from a local.
                        unsafe { crate::sys::pwrite(fd, &c as *const u8 as *const libc::c_void, 1, at) }
                    })
                    .map_err(|e| ("write(1 byte) to", e))?;
                }
            }
            PUTC
        }
        "getc_read" => {
            let chars = &mut cur.chars;
            match st.reader.as_mut() {
                Some(r) => {
                    for _ in 0..n {
                        let c = r.getc().map_err(|e| ("getc from", e))?;
                        if c < 0 {
                            return Err(("getc from", early_eof(EARLY_EOF)));
                        }
                        chars[c as usize] += 1;
                    }
                }
                None => {
                    byte_calls(
                        n,
                        &mut cur.pos,
                        || early_eof(EARLY_EOF),
                        |_, at| {
                            let mut c = 0u8;
                            // SAFETY: one byte into a local.
                            let r = unsafe { crate::sys::pread(fd, &mut c as *mut u8 as *mut libc::c_void, 1, at) };
                            chars[c as usize] += (r == 1) as u64;
                            r
                        },
                    )
                    .map_err(|e| ("read(1 byte) from", e))?;
                }
            }
            GETC
        }
        "block_write" => {
            // Bonnie changes one byte per chunk so no two chunks are alike.
            buf[cur.bufindex] = buf[cur.bufindex].wrapping_add(1);
            cur.bufindex = (cur.bufindex + 1) % chunk;
            pwrite_all(fd, &buf[..n], off).map_err(|e| ("write to", e))?;
            WRITE
        }
        "rewrite" => {
            // Bonnie reads, seeks back and writes; pread and pwrite at the chunk's offset do the
            // same I/O without the lseek.
            pread_all(fd, &mut buf[..n], off).map_err(|e| ("read from", e))?;
            buf[cur.bufindex % chunk] = buf[cur.bufindex % chunk].wrapping_add(1);
            cur.bufindex += 1;
            pwrite_all(fd, &buf[..n], off).map_err(|e| ("rewrite to", e))?;
            REWRITE
        }
        _ => {
            pread_all(fd, &mut buf[..n], off).map_err(|e| ("read from", e))?;
            READ
        }
    })
}

/// One chunk of a sequential phase with verification: block phases write
/// verified chunks (instead of dirtying one byte) and check what they read;
/// the per-char phases move the bytes of verified chunks one at a time.
#[allow(clippy::too_many_arguments)] // the phase loop's own state, borrowed per chunk on the hot path
#[inline]
fn verified_seq_op(
    phase: &str,
    fd: i32,
    writer: &mut Option<Writer>,
    reader: &mut Option<Reader>,
    buf: &mut [u8],
    off: u64,
    ch: &mut Checker,
    v: &Verifier,
    writes: &mut u64,
    pos: &mut u64,
) -> std::result::Result<usize, (&'static str, std::io::Error)> {
    let n = buf.len();
    let mut fill = |buf: &mut [u8], ch: &mut Checker| {
        *writes += 1;
        let g = v.gen_base() | *writes;
        ch.fill(buf, off, g);
        g
    };
    Ok(match phase {
        "putc_write" => {
            let g = fill(buf, ch);
            match writer.as_mut() {
                Some(w) => {
                    for &c in buf.iter() {
                        w.putc(c).map_err(|e| ("putc to", e))?;
                    }
                }
                None => {
                    for &c in buf.iter() {
                        // SAFETY: one byte from a local.
                        let w =
                            unsafe { crate::sys::pwrite(fd, &c as *const u8 as *const libc::c_void, 1, *pos as i64) };
                        *pos += 1;
                        if w != 1 {
                            let e = if w < 0 {
                                std::io::Error::last_os_error()
                            } else {
                                std::io::Error::from_raw_os_error(libc::ENOSPC)
                            };
                            return Err(("write(1 byte) to", e));
                        }
                    }
                }
            }
            v.last_writes.record(0, off, n as u64, 0, g);
            PUTC
        }
        "getc_read" => {
            match reader.as_mut() {
                Some(r) => {
                    for c in buf.iter_mut() {
                        let x = r.getc().map_err(|e| ("getc from", e))?;
                        if x < 0 {
                            return Err((
                                "getc from",
                                std::io::Error::new(
                                    std::io::ErrorKind::UnexpectedEof,
                                    "early end of file: run block_write first",
                                ),
                            ));
                        }
                        *c = x as u8;
                    }
                }
                None => {
                    for c in buf.iter_mut() {
                        // SAFETY: one byte into the buffer.
                        let r = unsafe { crate::sys::pread(fd, c as *mut u8 as *mut libc::c_void, 1, *pos as i64) };
                        *pos += 1;
                        if r != 1 {
                            let e = if r < 0 {
                                std::io::Error::last_os_error()
                            } else {
                                std::io::Error::new(
                                    std::io::ErrorKind::UnexpectedEof,
                                    "early end of file: run block_write first",
                                )
                            };
                            return Err(("read(1 byte) from", e));
                        }
                    }
                }
            }
            ch.check(buf, 0, off, |o| v.expect(o));
            GETC
        }
        "block_write" => {
            let g = fill(buf, ch);
            pwrite_all(fd, buf, off).map_err(|e| ("write to", e))?;
            v.last_writes.record(0, off, n as u64, 0, g);
            WRITE
        }
        "rewrite" => {
            pread_all(fd, buf, off).map_err(|e| ("read from", e))?;
            ch.check(buf, 0, off, |o| v.expect(o));
            let g = fill(buf, ch);
            pwrite_all(fd, buf, off).map_err(|e| ("rewrite to", e))?;
            v.last_writes.record(0, off, n as u64, 0, g);
            REWRITE
        }
        _ => {
            pread_all(fd, buf, off).map_err(|e| ("read from", e))?;
            ch.check(buf, 0, off, |o| v.expect(o));
            READ
        }
    })
}

struct SeekState {
    fd: Fd,
    buf: AlignedBuf,
}

#[derive(Default)]
struct SeekDone {
    seeks: u64,
    writebacks: u64,
}

/// Random seeks: `seek_procs` threads, each with its own descriptor (as
/// Bonnie's children reopen the file), take tickets 0..seeks from a shared
/// counter; ticket t reads the chunk at a pseudo-random chunk offset, and when
/// t is a multiple of 10 it also dirties one byte and writes the chunk back.
pub fn seeks(
    spec: &BonnieSpec,
    job: &Settings,
    ctl: &Control,
    mut verifier: Option<&mut Verifier>,
) -> Result<PhaseReport> {
    // Several seekers may read a chunk while another writes it back: their reads are not checked.
    let v = verifier.as_deref();
    let check_reads = spec.seek_procs == 1;
    let path = job.dir.join(DATA_FILE);
    let chunk = spec.chunk as usize;
    let nchunks = spec.chunks();
    let next = AtomicU64::new(0);
    let seed = mix64(job.seed);
    let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
    let (mut report, done) = run_threads(
        "seeks",
        spec.seek_procs,
        timing,
        ctl,
        KINDS,
        spec.sigfig(),
        spec.seeks,
        // Each seeker its own descriptor in a table of its own, as bonnie++'s forked seekers.
        |_| {
            own_fd_table(&[]);
            Ok(SeekState { fd: open(&path, false, spec.direct)?, buf: AlignedBuf::new(chunk, ALIGN) })
        },
        |st, rec| {
            let mut checker = v.map(|v| Checker::new(v.algo, chunk, job.seed, rec.tid as u32, "seeks"));
            let mut done = SeekDone::default();
            let fd = st.fd.0;
            let buf = st.buf.as_mut_slice();
            let io = |what: &str, e: std::io::Error| EngineError::io(format!("seeks: {what} {}", path.display()), e);
            while !rec.interrupted() {
                let t = next.fetch_add(1, Relaxed);
                if t >= spec.seeks {
                    break;
                }
                let at = mix64(seed ^ t) % nchunks;
                let off = (at * spec.chunk) as i64;
                let t0 = rec.stamp();
                seek(fd, off, libc::SEEK_SET).map_err(|e| io("lseek in", e))?;
                read_all(fd, buf).map_err(|e| io("read from", e))?;
                if let (Some(ch), Some(v)) = (checker.as_mut(), v) {
                    if check_reads {
                        ch.check(buf, 0, off as u64, |o| v.expect(o));
                    }
                }
                if t.is_multiple_of(UPDATE_SEEK) {
                    let mut written = None;
                    match (checker.as_mut(), v) {
                        (Some(ch), Some(v)) => {
                            // The write-back carries a new verified chunk instead of one dirtied byte.
                            let g = v.gen_base() | (t + 1);
                            ch.fill(buf, off as u64, g);
                            written = Some((v, g, ch.thread));
                        }
                        _ => {
                            let i = (at % spec.chunk) as usize;
                            buf[i] = buf[i].wrapping_sub(1);
                        }
                    }
                    seek(fd, off, libc::SEEK_SET).map_err(|e| io("lseek in", e))?;
                    write_all(fd, buf).map_err(|e| io("write back to", e))?;
                    if let Some((v, g, th)) = written {
                        v.last_writes.record(0, off as u64, chunk as u64, th, g);
                    }
                    // SAFETY: our descriptor.
                    if spec.sync_writes && unsafe { crate::sys::fsync(fd) } != 0 {
                        return Err(io("fsync", std::io::Error::last_os_error()));
                    }
                    done.writebacks += 1;
                }
                rec.record(SEEK, 0, t0, rec.stamp());
                done.seeks += 1;
            }
            let t0 = rec.stamp();
            finish(&mut st.fd, spec.fsync).map_err(|e| io(if spec.fsync { "fsync/close" } else { "close" }, e))?;
            rec.record(CLOSE, 0, t0, rec.stamp());
            Ok((done, checker))
        },
    )?;
    let (done, checkers): (Vec<SeekDone>, Vec<Option<Checker>>) = done.into_iter().unzip();
    let seeks: u64 = done.iter().map(|d| d.seeks).sum();
    let writebacks: u64 = done.iter().map(|d| d.writebacks).sum();
    if let Some(v) = verifier.as_deref_mut() {
        if spec.seek_procs > 1 && writebacks > 0 {
            v.exact = false;
        }
    }
    let verify_extra = verifier.as_deref().map(|v| {
        verify::merge_into(&mut report, checkers.iter().flatten(), |_| path.display().to_string(), v.notes());
        report.extra["verify"].clone()
    });
    report.counters.insert("seeks".into(), seeks);
    report.counters.insert("writebacks".into(), writebacks);
    report.counters.insert("bytes_read".into(), seeks * spec.chunk);
    report.counters.insert("bytes_written".into(), writebacks * spec.chunk);
    let rule = size_rule(spec, &mut report);
    report.extra = serde_json::json!({
        "file": path.display().to_string(),
        "size_bytes": spec.size,
        "chunk_bytes": spec.chunk,
        "seek_procs": spec.seek_procs,
        "seeks_per_thread": done.iter().map(|d| d.seeks).collect::<Vec<_>>(),
        "seeks_per_s": if report.elapsed_s > 0.0 { seeks as f64 / report.elapsed_s } else { 0.0 },
        "fsync": spec.fsync,
        "direct": spec.direct,
        "sync_writes": spec.sync_writes,
        "size_rule": rule,
    });
    if let Some(x) = verify_extra {
        report.extra["verify"] = x;
    }
    Ok(report)
}
