//! fsmeter-diskmodel: a disk image served with a spinning disk's timing.
//!
//! ```text
//! fsmeter-diskmodel describe DRIVE.json
//!     prints the drive's derived figures as JSON (capacity, zones and their media rates, the seek
//!     curve's figures) and exits; a bad description exits 2 with one line on stderr.
//! fsmeter-diskmodel serve DRIVE.json IMAGE MOUNTPOINT [--offset BYTES] [--spin-us N] [--memory 1]
//!                         [--idle-poll 1] [--populate 1]
//!     serves IMAGE as MOUNTPOINT/disk.img (FUSE, FOPEN_DIRECT_IO) until MOUNTPOINT is unmounted
//!     (with `--memory 1`, an image of IMAGE's size kept in memory, IMAGE itself left untouched;
//!     with `--idle-poll 1`, every CPU kept out of its idle state by a lowest-priority spinner;
//!     with `--populate 1` as well as `--memory 1`, every page of the image in memory written before
//!     `ready`, and kept: fsmeter_diskmodel::image::Image::populate);
//!     prints `ready` once mounted. IMAGE's byte 0 is the drive's byte BYTES (default 0, the outer
//!     edge). MOUNTPOINT/stats.json reads the counters and histograms (fsmeter_diskmodel::stats);
//!     writing `reset` to MOUNTPOINT/control zeroes them.
//! ```
//!
//! A loop device attached to disk.img sends its requests here. The FUSE thread stamps each with
//! its arrival (CLOCK_MONOTONIC), queues it for the drive thread and hands its data I/O on IMAGE
//! to the image thread (reads fill a buffer, writes change IMAGE, discards punch holes), which does
//! it in arrival order while the drive times the request, and sends the drive its result. The drive
//! thread serves the queued requests one at a time: it asks the model when the request completes
//! and sends the reply at that instant (an absolute-time sleep, then a spin for the last
//! `--spin-us` microseconds), once the request's data I/O is done, recording how late the reply
//! left (taken as the reply is handed to the kernel, after it is counted in stats.json). The FUSE
//! thread does no I/O of its own, so a burst of requests is stamped as it arrives, and the image's
//! I/O overlaps the modelled service instead of adding to it (a write the drive's cache takes in
//! 0.3 ms would otherwise wait for the host's disk first). Data is never cached below the filesystem: every request the loop device
//! makes reaches this daemon and is timed by the model, and IMAGE is read and written with direct
//! I/O where its filesystem allows (fsmeter_diskmodel::image), so the daemon dirties no page cache
//! of the host's and no dirty limit holds its replies back.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use fsmeter_diskmodel::geometry::SECTOR_BYTES;
use fsmeter_diskmodel::image::Image;
use fsmeter_diskmodel::queue::{queue, Receiver, Sender};
use fsmeter_diskmodel::seek::SeekCurve;
use fsmeter_diskmodel::stats::{Instants, Stats};
use fsmeter_diskmodel::{Drive, DriveSpec, Model, Op, Request};
use fsmeter_fusedisk::{now_ns, serve, Disk, ReplyData, ReplyEmpty, ReplyWrite, ServeOptions};
use serde_json::json;

const PROG: &str = "fsmeter-diskmodel";

fn fail(code: i32, msg: impl std::fmt::Display) -> ! {
    eprintln!("{PROG}: error: {msg}");
    std::process::exit(code);
}

fn load_drive(path: &str) -> Drive {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(2, format_args!("{path}: {e}")));
    let spec = DriveSpec::from_json(&text).unwrap_or_else(|e| fail(2, format_args!("{path}: {e}")));
    Drive::new(&spec).unwrap_or_else(|e| fail(2, format_args!("{path}: {e}")))
}

/// The derived figures of a drive, for `fsmeter disk-model show` and calibration's expected values.
fn describe(d: &Drive) -> serde_json::Value {
    let g = &d.geometry;
    let zones: Vec<_> = g
        .zones
        .iter()
        .map(|z| {
            let sectors = z.lbns.min(g.capacity - z.first_lbn);
            json!({
                "first_cylinder": z.first_cylinder,
                "last_cylinder": z.last_cylinder,
                "sectors_per_track": z.spt,
                "first_lbn": z.first_lbn,
                "sectors": sectors,
                "track_mb_s": z.spt as f64 * SECTOR_BYTES as f64 / (d.rev_ns / 1e9) / 1e6,
                "sustained_mb_s": d.streaming_rate(z.first_lbn) / 1e6,
            })
        })
        .collect();
    let (first_cyl, last_cyl) = g.data_cylinders();
    let span = last_cyl - first_cyl;
    // The innermost whole cylinder (the capacity may end inside the last one).
    let inner_lbn = g.first_lbn_of_cylinder(last_cyl.saturating_sub(1).max(first_cyl)).unwrap_or(0);
    // A 4 KiB transfer's media time, averaged over the blocks (each zone weighted by its blocks).
    let mut xfer = 0.0;
    for z in &g.zones {
        let sectors = z.lbns.min(g.capacity - z.first_lbn) as f64;
        xfer += sectors / g.capacity as f64 * 8.0 * d.rev_ns / z.spt as f64;
    }
    // The mean seek of uniformly random blocks (outer cylinders hold more blocks, so seeks are
    // shorter than the datasheet's cylinder-pair average): exact over the cylinders' block counts.
    let cyl_weights: Vec<(u32, f64)> = g
        .zones
        .iter()
        .flat_map(|z| {
            let per_cyl = (g.surfaces as u64 * z.spt as u64) as f64;
            (z.first_cylinder..=z.last_cylinder)
                .filter(|&c| g.first_lbn_of_cylinder(c).is_some())
                .map(move |c| (c, per_cyl))
        })
        .collect();
    let lba_seek = random_block_seek_ms(&d.seek, &cyl_weights);
    let curve: Vec<[f64; 2]> = [1u32, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000]
        .iter()
        .filter(|&&x| x < g.cylinders)
        .chain(std::iter::once(&(g.cylinders - 1)))
        .map(|&x| [x as f64, d.seek.ms(x)])
        .collect();
    json!({
        "name": d.name,
        "capacity_sectors": g.capacity,
        "capacity_bytes": d.capacity_bytes(),
        "cylinders": g.cylinders,
        "data_cylinders": [first_cyl, last_cyl],
        "surfaces": g.surfaces,
        "revolution_ms": d.rev_ns / 1e6,
        "zones": zones,
        "seek": {
            "kind": match d.seek { SeekCurve::Table(_) => "table", SeekCurve::Lee { .. } => "lee" },
            "track_to_track_ms": d.seek.ms(1),
            "average_ms": d.seek.average_ms(g.cylinders),
            "random_block_ms": lba_seek,
            "full_stroke_ms": d.seek.ms(span),
            "full_stroke_cylinders": span,
            "curve": curve,
        },
        "transfer_4k_ms": xfer / 1e6,
        "read_miss_overhead_ms": d.read_miss_ns / 1e6,
        "outer_sustained_mb_s": d.streaming_rate(0) / 1e6,
        "inner_sustained_mb_s": d.streaming_rate(inner_lbn) / 1e6,
        "inner_lbn": inner_lbn,
        "write_cache": d.write_cache,
        "queue": {"policy": format!("{:?}", d.policy).to_lowercase(), "depth": d.queue_depth},
    })
}

/// Mean seek between two blocks drawn uniformly: cylinders weighted by the blocks they hold.
/// O(C) with prefix sums over the sorted cylinders: sum_i sum_j w_i w_j seek(|c_i - c_j|) needs
/// the pairwise distances, so it is computed on a coarse grid of at most 2000 cylinder bands.
fn random_block_seek_ms(seek: &SeekCurve, cyls: &[(u32, f64)]) -> f64 {
    let bands = 2000usize.min(cyls.len().max(1));
    let per = cyls.len().div_ceil(bands);
    let mut pts: Vec<(f64, f64)> = Vec::with_capacity(bands);
    for chunk in cyls.chunks(per.max(1)) {
        let w: f64 = chunk.iter().map(|c| c.1).sum();
        let c: f64 = chunk.iter().map(|c| c.0 as f64 * c.1).sum::<f64>() / w;
        pts.push((c, w));
    }
    let total: f64 = pts.iter().map(|p| p.1).sum();
    let mut s = 0.0;
    for a in &pts {
        for b in &pts {
            let d = (a.0 - b.0).abs().round() as u32;
            s += a.1 * b.1 * seek.ms(d);
        }
    }
    s / (total * total)
}

enum Answer {
    Data(ReplyData),
    Written(ReplyWrite, u32),
    Empty(ReplyEmpty),
}

/// What a request's data I/O on the image gave: a read's bytes, nothing, or an errno.
type IoResult = Result<Option<Vec<u8>>, i32>;

impl Answer {
    fn send(self, io: IoResult) {
        match (self, io) {
            (Answer::Data(r), Ok(Some(buf))) => r.data(&buf),
            (Answer::Data(r), Ok(None)) => r.error(libc::EIO),
            (Answer::Written(r, n), Ok(_)) => r.written(n),
            (Answer::Empty(r), Ok(_)) => r.ok(),
            (Answer::Data(r), Err(e)) => r.error(e),
            (Answer::Written(r, _), Err(e)) => r.error(e),
            (Answer::Empty(r), Err(e)) => r.error(e),
        }
    }
}

struct Job {
    /// The request's place in arrival order: the image thread's result names it.
    seq: u64,
    req: Request,
    bytes: u64,
    arrival: u64,
    answer: Answer,
    /// The data I/O's result, once the image thread has sent it (a flush has none to wait for).
    io: Option<IoResult>,
}

/// What reaches the drive thread: a new request, or the data I/O result of one it holds.
enum Msg {
    Job(Job),
    Done(u64, IoResult),
}

/// The image thread's work, in arrival order.
enum ImageIo {
    Read { seq: u64, offset: u64, size: u32 },
    Write { seq: u64, offset: u64, data: Vec<u8> },
    Fallocate { seq: u64, offset: u64, length: u64, mode: i32 },
}

struct Shared {
    stats: Stats,
    dirty_sectors: u64,
    /// The model's busy time so far (fsmeter_diskmodel::Model::busy_ns).
    busy_ns: u64,
    requests: u64,
}

struct ModelDisk {
    size: u64,
    /// The image's first block on the drive.
    offset_lbn: u64,
    /// The next request's sequence number.
    seq: u64,
    jobs: Sender<Msg>,
    io: Sender<ImageIo>,
    shared: Arc<Mutex<Shared>>,
    drive_name: String,
    /// The idle pollers' CPU clocks (ns), one per CPU (none without `--idle-poll 1`).
    pollers: Arc<Vec<AtomicU64>>,
}

impl ModelDisk {
    /// Queue a request for the drive, then its data I/O (if any) for the image thread: the drive
    /// receives the request before the I/O's result, which follows it on the same queue.
    fn queue(&mut self, op: Op, offset: u64, len: u64, arrival: u64, answer: Answer, io: Option<ImageIo>) {
        let lbn = self.offset_lbn + offset / SECTOR_BYTES;
        let end = self.offset_lbn + (offset + len).div_ceil(SECTOR_BYTES);
        let seq = self.seq;
        self.seq += 1;
        let done = if io.is_none() { Some(Ok(None)) } else { None };
        let job = Job { seq, req: Request { op, lbn, sectors: end - lbn }, bytes: len, arrival, answer, io: done };
        if let Err(Msg::Job(j)) = self.jobs.send(Msg::Job(job)) {
            // The drive thread is gone (it panicked): fail the request rather than hang it.
            j.answer.send(Err(libc::EIO));
            return;
        }
        if let Some(work) = io {
            if self.io.send(work).is_err() {
                // The image thread is gone: the drive gets the failure in its place.
                let _ = self.jobs.send(Msg::Done(seq, Err(libc::EIO)));
            }
        }
    }
}

impl Disk for ModelDisk {
    fn size(&self) -> u64 {
        self.size
    }

    fn read(&mut self, offset: u64, size: u32, reply: ReplyData) {
        let arrival = now_ns();
        let seq = self.seq;
        self.queue(
            Op::Read,
            offset,
            size as u64,
            arrival,
            Answer::Data(reply),
            Some(ImageIo::Read { seq, offset, size }),
        );
    }

    fn write(&mut self, offset: u64, data: &[u8], reply: ReplyWrite) {
        let arrival = now_ns();
        let seq = self.seq;
        let n = data.len();
        let work = ImageIo::Write { seq, offset, data: data.to_vec() };
        self.queue(Op::Write, offset, n as u64, arrival, Answer::Written(reply, n as u32), Some(work));
    }

    fn fsync(&mut self, reply: ReplyEmpty) {
        // The image need not reach the host's disk: it is the model's durability that is timed.
        self.queue(Op::Flush, 0, 0, now_ns(), Answer::Empty(reply), None);
    }

    fn fallocate(&mut self, offset: u64, length: u64, mode: i32, reply: ReplyEmpty) {
        let arrival = now_ns();
        let op = if mode & libc::FALLOC_FL_ZERO_RANGE != 0 {
            Op::WriteZeroes
        } else if mode & libc::FALLOC_FL_PUNCH_HOLE != 0 {
            Op::Discard
        } else {
            return reply.ok(); // preallocation: no data changes, nothing for the drive to do
        };
        let seq = self.seq;
        // In the image thread, in order with the writes before it.
        let work = ImageIo::Fallocate { seq, offset, length, mode };
        let length = length.min(self.size.saturating_sub(offset));
        self.queue(op, offset, length, arrival, Answer::Empty(reply), Some(work));
    }

    fn side_files(&self) -> &'static [&'static str] {
        &["stats.json", "control"]
    }

    fn read_side(&mut self, index: usize) -> Vec<u8> {
        if index != 0 {
            return Vec::new();
        }
        let sh = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        let state = json!({
            "drive": self.drive_name,
            "dirty_sectors": sh.dirty_sectors,
            "busy_ns": sh.busy_ns,
            "requests_served": sh.requests,
            "offset_bytes": self.offset_lbn * SECTOR_BYTES,
            "size_bytes": self.size,
            "idle_poll_threads": self.pollers.len(),
            "idle_poll_cpu_ns": self.pollers.iter().map(|c| c.load(Ordering::Relaxed)).sum::<u64>(),
        });
        let mut out = serde_json::to_vec(&sh.stats.json(state)).unwrap_or_default();
        out.push(b'\n');
        out
    }

    fn write_side(&mut self, index: usize, data: &[u8]) -> Result<(), i32> {
        if index != 1 {
            return Err(libc::EACCES);
        }
        match std::str::from_utf8(data).map(str::trim) {
            Ok("reset") => {
                self.shared.lock().unwrap_or_else(|e| e.into_inner()).stats.reset();
                Ok(())
            }
            _ => Err(libc::EINVAL),
        }
    }
}

/// Sleep until `deadline` (CLOCK_MONOTONIC ns): an absolute-time sleep to `spin_ns` before it,
/// then a spin, so that the wake-up's delay does not make every reply late.
fn sleep_until(deadline: u64, spin_ns: u64) {
    let now = now_ns();
    if deadline > now + spin_ns {
        let wake = deadline - spin_ns;
        let ts =
            libc::timespec { tv_sec: (wake / 1_000_000_000) as libc::time_t, tv_nsec: (wake % 1_000_000_000) as _ };
        // SAFETY: an absolute sleep on CLOCK_MONOTONIC with a timespec we own; EINTR just wakes early.
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    }
    // No PAUSE in the loop: under a hypervisor a run of PAUSEs can make the virtual CPU exit to the
    // host (pause-loop exiting), which is the delay the spin is there to avoid. Reading the clock
    // (the vDSO, tens of ns) paces it.
    while now_ns() < deadline {}
}

/// Keep every CPU of the daemon's affinity out of the processor's (or the hypervisor's) idle
/// state: one thread per CPU, pinned to it, spinning under SCHED_IDLE, the lowest priority there
/// is, so that any other thread that wants the CPU has it at once. Waking a halted CPU is what
/// makes a timer's wake-up late: on a 2-CPU virtual machine a real-time thread's sleep ended
/// 0.12 ms late at p99 on idle CPUs and 0.03-0.04 ms when both were busy (cyclictest), and the
/// drive thread's wake-up 0.15-0.7 ms late at p99 under dbench, which leaves the CPUs mostly idle
/// in I/O wait. The pollers' CPU time (each thread's own clock, read every few ms) is reported in
/// stats.json, so that the caller can tell it from other work. Returns the pollers' counters.
fn idle_pollers() -> Arc<Vec<AtomicU64>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, filled by sched_getaffinity for this thread.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the size and pointer describe `set`, which we own.
    let cpus: Vec<usize> = if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } == 0 {
        // SAFETY: CPU_ISSET reads the set we own, for indexes below its size.
        (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
    } else {
        Vec::new()
    };
    let counters: Arc<Vec<AtomicU64>> = Arc::new(cpus.iter().map(|_| AtomicU64::new(0)).collect());
    for (i, &cpu) in cpus.iter().enumerate() {
        let counters = counters.clone();
        let spawned = std::thread::Builder::new().name("idle-poll".into()).spawn(move || {
            // SAFETY: a zeroed set with one CPU added, applied to the calling thread (pid 0).
            unsafe {
                let mut one: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut one);
                libc::sched_setaffinity(0, std::mem::size_of_val(&one), &one);
            }
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: sets the calling thread's policy from a parameter we own.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
                return; // without SCHED_IDLE it would compete with the workload: no poller
            }
            let mut x = 0u64;
            loop {
                for _ in 0..200_000 {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
                let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                // SAFETY: reads this thread's CPU clock into a timespec we own.
                unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
                counters[i].store(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64, Ordering::Relaxed);
            }
        });
        if let Err(e) = spawned {
            eprintln!("{PROG}: no idle poller on CPU {cpu}: {e}");
        }
    }
    counters
}

/// The image thread: every request's data I/O on the image, in arrival order, each result sent to
/// the drive thread (which replies once the modelled completion has come and the I/O is done).
fn image_thread(mut image: Image, work: Receiver<ImageIo>, drive: Sender<Msg>) {
    realtime("image", IO_RT_PRIORITY);
    let errno = |e: std::io::Error| e.raw_os_error().unwrap_or(libc::EIO);
    for w in &work {
        let (seq, result) = match w {
            ImageIo::Read { seq, offset, size } => {
                let mut buf = vec![0u8; size as usize];
                (seq, image.read_at(&mut buf, offset).map(|_| Some(buf)).map_err(errno))
            }
            ImageIo::Write { seq, offset, data } => (seq, image.write_at(&data, offset).map(|_| None).map_err(errno)),
            ImageIo::Fallocate { seq, offset, length, mode } => {
                (seq, image.zero_range(offset, length, mode).map(|_| None).map_err(errno))
            }
        };
        if drive.send(Msg::Done(seq, result)).is_err() {
            return; // the drive thread is gone
        }
    }
}

/// The drive thread's SCHED_FIFO priority: above every normal thread, low among real-time ones,
/// and above the daemon's other two threads, so that a reply due leaves even while they work.
const DRIVE_RT_PRIORITY: libc::c_int = 11;
/// The SCHED_FIFO priority of the threads that stamp arrivals and do the image's I/O.
const IO_RT_PRIORITY: libc::c_int = 10;

/// Put the calling thread under SCHED_FIFO at `priority`, with a timer slack of 1 ns.
///
/// A disk does not wait for a CPU: the FUSE thread (which stamps each request's arrival), the image
/// thread (whose I/O a reply waits for) and the drive thread (which sleeps until each modelled
/// completion) run under SCHED_FIFO, a low real-time priority, so that the workload's own threads
/// and the kernel's writeback on a small machine delay neither the arrival stamps nor the replies
/// (dbench's 20 clients on 2 CPUs held a normal image thread back by up to 167 ms). Each blocks
/// between requests; the drive spins at most `--spin-us` before a reply, and the kernel's
/// real-time throttling bounds them in any case. The drive's priority is the highest of the three:
/// at the same priority a FIFO thread does not preempt another, and the image thread copying a
/// large write held replies due on a 2-CPU machine (Layton's 4 MiB files: lateness p99 up to 4 ms
/// against 12.5 ms of service). Without the privilege (not root) a thread stays
/// normal and says so; the lateness it records shows the cost. The timer slack would otherwise add
/// up to 50 us to every sleep.
fn realtime(thread: &str, priority: libc::c_int) {
    // SAFETY: prctl on the calling thread with a plain integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: sets the calling thread's policy (pid 0) from a parameter we own.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        eprintln!(
            "{PROG}: the {thread} thread runs without real-time priority ({}): replies may be late on a busy machine",
            std::io::Error::last_os_error()
        );
    }
}

/// The drive: serve the queued requests one at a time, each reply at its modelled completion.
fn drive_thread(mut model: Model, jobs: Receiver<Msg>, shared: Arc<Mutex<Shared>>, spin_ns: u64) {
    realtime("drive", DRIVE_RT_PRIORITY);
    let mut queue: VecDeque<Job> = VecDeque::new();
    let mut reqs: Vec<Request> = Vec::new();
    // A message for the job in service (`current`) or for one still queued.
    fn take(msg: Msg, queue: &mut VecDeque<Job>, current: Option<&mut Job>) {
        match msg {
            Msg::Job(j) => queue.push_back(j),
            Msg::Done(seq, r) => match current {
                Some(c) if c.seq == seq => c.io = Some(r),
                _ => {
                    if let Some(j) = queue.iter_mut().find(|j| j.seq == seq) {
                        j.io = Some(r);
                    }
                }
            },
        }
    }
    loop {
        if queue.is_empty() {
            match jobs.recv() {
                Some(m) => take(m, &mut queue, None),
                None => return, // unmounted
            }
            if queue.is_empty() {
                continue;
            }
        }
        while let Some(m) = jobs.try_recv() {
            take(m, &mut queue, None);
        }
        reqs.clear();
        reqs.extend(queue.iter().take(model.drive.queue_depth).map(|j| j.req));
        let i = model.pick(&reqs, now_ns());
        let mut job = queue.remove(i).expect("picked from the queue");
        let svc = model.serve(job.req, job.arrival);
        sleep_until(svc.end, spin_ns);
        let woke = now_ns();
        // The reply carries the data I/O's result: wait for it if the image is slower than the model.
        while job.io.is_none() {
            match jobs.recv() {
                Some(m) => take(m, &mut queue, Some(&mut job)),
                None => return,
            }
        }
        // Counted before the reply leaves, so that a caller who reads stats.json after its reply
        // finds its request there; the lateness is taken as the reply is handed over, with the lock
        // held (a wait for it, stats.json being read, delays the reply and is counted).
        let ready = now_ns();
        {
            let mut sh = shared.lock().unwrap_or_else(|e| e.into_inner());
            let sent = now_ns();
            sh.stats.queue_seen(queue.len() + 1);
            sh.stats.record(job.req.op, job.bytes, &svc, Instants { arrival: job.arrival, woke, ready, sent });
            sh.dirty_sectors = model.dirty_sectors();
            sh.busy_ns = model.busy_ns();
            sh.requests += 1;
        }
        let io = job.io.take().unwrap_or(Err(libc::EIO));
        job.answer.send(io);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: fsmeter-diskmodel describe DRIVE.json | serve DRIVE.json IMAGE MOUNTPOINT [--offset BYTES] [--spin-us N] [--memory 1] [--idle-poll 1] [--populate 1]";
    match args.get(1).map(String::as_str) {
        Some("describe") if args.len() == 3 => {
            let d = load_drive(&args[2]);
            println!("{}", describe(&d));
        }
        Some("serve") if args.len() >= 5 => {
            let mut offset = 0u64;
            // 200 us: on a 2-CPU virtual machine the drive's wake-up was late by up to 0.1-0.45 ms at
            // p99 in Lourdas's copy and untar with a 50 us spin, 0.02-0.10 ms with 200 us; the cost
            // is at most 200 us of one CPU per request (an untar's 30,000 small writes in 38 s: at
            // most 16% of one CPU), and the phase's time did not move.
            let mut spin_us = 200u64;
            let mut memory = false;
            let mut idle_poll = false;
            let mut populate = false;
            let mut rest = args[5..].iter();
            while let Some(flag) = rest.next() {
                let value = rest.next().unwrap_or_else(|| fail(2, format_args!("{flag} needs a value")));
                let n: u64 =
                    value.parse().unwrap_or_else(|_| fail(2, format_args!("{flag} {value}: not a whole number")));
                match flag.as_str() {
                    "--offset" => offset = n,
                    "--spin-us" => spin_us = n,
                    "--memory" => memory = n != 0,
                    "--idle-poll" => idle_poll = n != 0,
                    "--populate" => populate = n != 0,
                    _ => fail(2, format_args!("unknown option {flag}\n{usage}")),
                }
            }
            let drive = load_drive(&args[2]);
            let mut image = Image::open(Path::new(&args[3]))
                .unwrap_or_else(|e| fail(1, format_args!("open image {}: {e}", args[3])));
            if memory {
                image = Image::memory(image.len())
                    .unwrap_or_else(|e| fail(1, format_args!("an image of {} bytes in memory: {e}", image.len())));
            } else if populate {
                fail(2, "--populate 1 needs --memory 1 (a file image is not committed)");
            }
            let size = image.len();
            if size == 0 || !size.is_multiple_of(SECTOR_BYTES) || !offset.is_multiple_of(SECTOR_BYTES) {
                fail(
                    2,
                    format_args!("image size {size} and --offset {offset} must be non-zero multiples of 512 bytes"),
                );
            }
            if offset + size > drive.capacity_bytes() {
                fail(
                    2,
                    format_args!(
                        "the image ({size} bytes at offset {offset}) does not fit on {} ({} bytes)",
                        drive.name,
                        drive.capacity_bytes()
                    ),
                );
            }
            if populate {
                image
                    .populate()
                    .unwrap_or_else(|e| fail(1, format_args!("commit the image's {size} bytes of memory: {e}")));
            }
            let shared =
                Arc::new(Mutex::new(Shared { stats: Stats::default(), dirty_sectors: 0, busy_ns: 0, requests: 0 }));
            let (tx, rx) = queue();
            let name = drive.name.clone();
            let model = Model::new(drive);
            let sh = shared.clone();
            let (io_tx, io_rx) = queue();
            let done = tx.clone();
            let imager = std::thread::Builder::new()
                .name("image".into())
                .spawn(move || image_thread(image, io_rx, done))
                .unwrap_or_else(|e| fail(1, format_args!("start the image thread: {e}")));
            let worker = std::thread::Builder::new()
                .name("drive".into())
                .spawn(move || drive_thread(model, rx, sh, spin_us * 1000))
                .unwrap_or_else(|e| fail(1, format_args!("start the drive thread: {e}")));
            let disk = ModelDisk {
                size,
                offset_lbn: offset / SECTOR_BYTES,
                seq: 0,
                jobs: tx,
                io: io_tx,
                shared,
                drive_name: name,
                // Started before this thread turns real-time: a thread inherits its creator's policy.
                pollers: if idle_poll { idle_pollers() } else { Arc::new(Vec::new()) },
            };
            let opts = ServeOptions { fsname: PROG, direct_io: true, async_dio: true };
            realtime("FUSE", IO_RT_PRIORITY); // this thread serves the FUSE session
            if let Err(e) = serve(disk, Path::new(&args[4]), &opts) {
                fail(1, format_args!("{}: {e}", args[4]));
            }
            let _ = imager.join();
            let _ = worker.join();
        }
        _ => fail(2, usage),
    }
}
