//! bonnie++'s small-file tests (its -n option), with its exact semantics:
//!
//! - names: bonnie++'s, 10 hex digits of the file's index plus 0..12 random
//!   alphanumerics, digits first for the sequential tests (so the names sort
//!   in creation order) and last for the random ones;
//! - files spread over `file_dirs` subdirectories `00000`, `00001`, ... as
//!   bonnie++ spreads them (directory_num advances after names_per_dir + 1 names);
//! - sizes: `file_max_size` bytes, or uniform in [min, max] when they differ,
//!   written in `file_chunk` pieces; `sync_writes` fsyncs each file and its directory;
//! - `seq_create`/`ran_create`: create every file in index order, then sync;
//! - `seq_stat`: readdir each directory, stat every entry and read its data;
//!   `ran_stat`: the same per file in a random order (shuffled before the clock);
//! - `seq_del`: readdir and unlink, `ran_del`: unlink in a random order; both
//!   then remove the directories and sync, inside the time.
//!
//! Deliberate difference: bonnie++ calls sync(2), which flushes every
//! filesystem on the machine; fsmeter calls syncfs(2) on the measured one.
//! bonnie++ chdirs into each directory; fsmeter uses *at() calls on directory
//! descriptors (the same lookups, relative to the same directory).

use crate::backend::buffer::AlignedBuf;
use crate::error::{EngineError, Result};
use crate::measure::{own_fd_table, run_threads, Control, PhaseTiming};
use crate::report::PhaseReport;
use crate::settings::Settings;

use super::{cpath, mix64, BonnieSpec, FILES_DIR};

const KINDS: &[&str] = &["create", "stat", "delete", "sync"];
const CREATE: usize = 0;
const STAT: usize = 1;
const DELETE: usize = 2;
const SYNC: usize = 3;

/// bonnie++'s RandExtraLen: up to 12 random characters in a name.
const RAND_EXTRA: u64 = 12;
/// 10 hex digits + 12 characters + NUL, rounded up.
const STRIDE: usize = 24;
const RAND_CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

struct Rng(u64);

impl Rng {
    fn new(seed: u64, stream: u64) -> Rng {
        Rng(mix64(seed ^ mix64(stream)))
    }
    #[inline]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(1);
        mix64(self.0)
    }
}

/// The file set of the current create/stat/delete round, kept between phases.
pub struct FileTests {
    names: Vec<u8>,
    dir_of: Vec<u32>,
    sizes: Vec<u32>,
    order: Vec<u32>,
    /// Descriptors of the directories holding files (the top one when file_dirs is 1).
    dir_fds: Vec<i32>,
    seed: u64,
}

impl Drop for FileTests {
    fn drop(&mut self) {
        self.close_dirs();
    }
}

fn os_err(what: &str, name: &str) -> EngineError {
    let e = std::io::Error::last_os_error();
    let mut ctx = format!("{what} {name}");
    if e.raw_os_error() == Some(libc::EEXIST) {
        ctx.push_str(" (left by an earlier run? run the cleanup phase, or use an empty --dir)");
    }
    EngineError::io(ctx, e)
}

impl FileTests {
    pub fn new(_spec: &BonnieSpec, job: &Settings) -> FileTests {
        FileTests {
            names: Vec::new(),
            dir_of: Vec::new(),
            sizes: Vec::new(),
            order: Vec::new(),
            dir_fds: Vec::new(),
            seed: job.seed,
        }
    }

    fn close_dirs(&mut self) {
        for fd in self.dir_fds.drain(..) {
            // SAFETY: we own these descriptors.
            unsafe { crate::sys::close(fd) };
        }
    }

    #[inline]
    fn name(&self, i: usize) -> *const libc::c_char {
        self.names[i * STRIDE..].as_ptr() as *const libc::c_char
    }

    fn name_str(&self, i: usize) -> String {
        let s = &self.names[i * STRIDE..(i + 1) * STRIDE];
        String::from_utf8_lossy(&s[..s.iter().position(|&b| b == 0).unwrap_or(STRIDE)]).into_owned()
    }

    /// bonnie++'s make_names and its directory assignment.
    fn make_names(&mut self, spec: &BonnieSpec, random: bool, rng: &mut Rng) {
        let n = spec.files as usize;
        let per_dir = n / spec.file_dirs as usize;
        self.names = vec![0u8; n * STRIDE];
        self.dir_of = vec![0u32; n];
        self.order = (0..n as u32).collect();
        let (mut in_dir, mut dir) = (0usize, 0u32);
        for i in 0..n {
            let len = (rng.next() % (RAND_EXTRA + 1)) as usize;
            let mut extra = [0u8; RAND_EXTRA as usize];
            for c in extra.iter_mut().take(len) {
                *c = RAND_CHARS[(rng.next() % RAND_CHARS.len() as u64) as usize];
            }
            let hex = format!("{i:010x}");
            let slot = &mut self.names[i * STRIDE..(i + 1) * STRIDE];
            let (first, second): (&[u8], &[u8]) =
                if random { (&extra[..len], hex.as_bytes()) } else { (hex.as_bytes(), &extra[..len]) };
            slot[..first.len()].copy_from_slice(first);
            slot[first.len()..first.len() + second.len()].copy_from_slice(second);
            self.dir_of[i] = dir.min(spec.file_dirs - 1);
            in_dir += 1;
            if in_dir > per_dir {
                in_dir = 0;
                dir += 1;
            }
        }
        self.sizes = (0..n)
            .map(|_| {
                let range = spec.file_max_size - spec.file_min_size;
                if range > 0 {
                    (spec.file_min_size + rng.next() % (range + 1)) as u32
                } else {
                    spec.file_max_size as u32
                }
            })
            .collect();
    }

    /// bonnie++'s random_sort: for each i, swap with a random position.
    fn shuffle(&mut self, rng: &mut Rng) {
        let n = self.order.len();
        for i in 0..n {
            let j = (rng.next() % n as u64) as usize;
            self.order.swap(i, j);
        }
    }

    /// mkdir the test directory (and its subdirectories) and open them.
    fn make_dirs(&mut self, spec: &BonnieSpec, job: &Settings) -> Result<()> {
        self.close_dirs();
        let top = job.dir.join(FILES_DIR);
        let c = cpath(&top);
        // SAFETY: NUL-terminated path.
        if unsafe { crate::sys::mkdir(c.as_ptr(), 0o700) } != 0 {
            return Err(os_err("mkdir", &top.display().to_string()));
        }
        let dirs: Vec<std::path::PathBuf> = if spec.file_dirs > 1 {
            (0..spec.file_dirs).map(|d| top.join(format!("{d:05}"))).collect()
        } else {
            vec![top.clone()]
        };
        for d in &dirs {
            let c = cpath(d);
            // SAFETY: NUL-terminated path.
            if spec.file_dirs > 1 && unsafe { crate::sys::mkdir(c.as_ptr(), 0o700) } != 0 {
                return Err(os_err("mkdir", &d.display().to_string()));
            }
            // SAFETY: NUL-terminated path.
            let fd =
                unsafe { crate::nofollow::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC, 0) };
            if fd < 0 {
                return Err(os_err("open directory", &d.display().to_string()));
            }
            self.dir_fds.push(fd);
        }
        Ok(())
    }

    pub fn run(&mut self, phase: &str, spec: &BonnieSpec, job: &Settings, ctl: &Control) -> Result<PhaseReport> {
        let random = phase.starts_with("ran_");
        let stream = match phase {
            "seq_create" => 1,
            "seq_stat" => 2,
            "seq_del" => 3,
            "ran_create" => 4,
            "ran_stat" => 5,
            _ => 6,
        };
        let mut rng = Rng::new(self.seed, stream);
        let creating = phase.ends_with("_create");
        if creating {
            self.make_names(spec, random, &mut rng);
            self.make_dirs(spec, job)?;
        } else if self.dir_fds.is_empty() {
            let before = if random { "ran_create" } else { "seq_create" };
            return Err(EngineError::invalid(
                "phase",
                format!("{phase} needs the files of {before}: run {before} first"),
            ));
        } else if random {
            self.shuffle(&mut rng);
        }
        // An fd on the measured filesystem, for syncfs.
        let top = cpath(&job.dir);
        // SAFETY: NUL-terminated path.
        let fs_fd = unsafe { crate::sys::open(top.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC, 0) };
        if fs_fd < 0 {
            return Err(os_err("open", &job.dir.display().to_string()));
        }
        let n = spec.files;
        let timing = PhaseTiming { warmup_ns: 0, duration_ns: None, interval_ns: job.interval_ns() };
        let this = &*self;
        let keep: Vec<i32> = this.dir_fds.iter().copied().chain([fs_fd]).collect();
        let result = run_threads(
            phase,
            1,
            timing,
            ctl,
            KINDS,
            spec.sigfig(),
            n,
            // The files' descriptors are opened and closed by the worker; the directories' (opened
            // before) are copies in its own table, closed when the state drops.
            |_| {
                let table = own_fd_table(&keep);
                Ok((AlignedBuf::new(spec.file_chunk.max(1) as usize, 4096), table))
            },
            |(buf, _), rec| {
                let buf = buf.as_mut_slice();
                let mut count = 0u64;
                let mut bytes = 0u64;
                match phase {
                    "seq_create" | "ran_create" => {
                        for i in 0..n as usize {
                            if rec.interrupted() {
                                break;
                            }
                            let t0 = rec.stamp();
                            let size = this.sizes[i] as u64;
                            this.create_one(i, size, buf, spec.sync_writes)?;
                            rec.record(CREATE, size, t0, rec.stamp());
                            count += 1;
                            bytes += size;
                        }
                    }
                    "ran_stat" | "ran_del" => {
                        for &j in &this.order {
                            if rec.interrupted() {
                                break;
                            }
                            let j = j as usize;
                            let dfd = this.dir_fds[this.dir_of[j] as usize];
                            let t0 = rec.stamp();
                            if phase == "ran_stat" {
                                bytes += stat_file(dfd, this.name(j), buf)
                                    .map_err(|e| EngineError::io(format!("stat {}", this.name_str(j)), e))?;
                                rec.record(STAT, 0, t0, rec.stamp());
                            } else {
                                // SAFETY: NUL-terminated name relative to an open directory.
                                if unsafe { crate::sys::unlinkat(dfd, this.name(j), 0) } != 0 {
                                    return Err(os_err("unlink", &this.name_str(j)));
                                }
                                // SAFETY: our directory descriptor.
                                if spec.sync_writes && unsafe { crate::sys::fsync(dfd) } != 0 {
                                    return Err(os_err("fsync directory of", &this.name_str(j)));
                                }
                                rec.record(DELETE, 0, t0, rec.stamp());
                            }
                            count += 1;
                        }
                    }
                    _ => {
                        // seq_stat / seq_del: readdir order, directory by directory.
                        for &dfd in &this.dir_fds {
                            let (c, b) = this.walk_dir(dfd, phase == "seq_del", spec.sync_writes, buf, rec)?;
                            count += c;
                            bytes += b;
                        }
                        if !rec.interrupted() && count != n {
                            return Err(EngineError::io(
                                format!("{phase}: expected {n} files but readdir found {count}"),
                                std::io::Error::from_raw_os_error(libc::EIO),
                            ));
                        }
                    }
                }
                // The end of the test: deletes remove the directories; creates and deletes sync.
                if !rec.interrupted() && phase != "seq_stat" && phase != "ran_stat" {
                    let t0 = rec.stamp();
                    if phase.ends_with("_del") {
                        this.remove_dirs(spec, job)?;
                    }
                    // SAFETY: an open descriptor on the filesystem.
                    if unsafe { libc::syncfs(fs_fd) } != 0 {
                        return Err(os_err("syncfs", &job.dir.display().to_string()));
                    }
                    rec.record(SYNC, 0, t0, rec.stamp());
                }
                Ok((count, bytes))
            },
        );
        // SAFETY: our descriptor.
        unsafe { crate::sys::close(fs_fd) };
        let (mut report, done) = result?;
        if phase.ends_with("_del") && !report.interrupted {
            self.close_dirs();
        }
        let (count, bytes) = done.into_iter().next().unwrap_or((0, 0));
        report.counters.insert("files".into(), count);
        report.counters.insert("bytes".into(), bytes);
        let main = match phase {
            "seq_create" | "ran_create" => "create",
            "seq_stat" | "ran_stat" => "stat",
            _ => "delete",
        };
        report.extra = serde_json::json!({
            "files": n,
            "file_dirs": spec.file_dirs,
            "file_max_size": spec.file_max_size,
            "file_min_size": spec.file_min_size,
            "sync_writes": spec.sync_writes,
            "files_per_s": if report.elapsed_s > 0.0 { count as f64 / report.elapsed_s } else { 0.0 },
            "op": main,
        });
        Ok(report)
    }

    #[inline]
    fn create_one(&self, i: usize, size: u64, buf: &[u8], sync: bool) -> Result<()> {
        let dfd = self.dir_fds[self.dir_of[i] as usize];
        // SAFETY: NUL-terminated name relative to an open directory.
        let fd = unsafe {
            crate::nofollow::openat(
                dfd,
                self.name(i),
                libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
                0o600,
            )
        };
        if fd < 0 {
            return Err(os_err("create", &self.name_str(i)));
        }
        let fail = |what: &str| {
            let e = os_err(what, &self.name_str(i));
            // SAFETY: our descriptor.
            unsafe { crate::sys::close(fd) };
            e
        };
        let mut done = 0u64;
        while done < size {
            let n = (size - done).min(buf.len() as u64) as usize;
            // SAFETY: n <= buf.len().
            let w = unsafe { crate::sys::write(fd, buf.as_ptr() as *const libc::c_void, n) };
            if w <= 0 {
                if w == 0 {
                    // SAFETY: setting errno for os_err.
                    unsafe { *libc::__errno_location() = libc::ENOSPC };
                }
                return Err(fail("write"));
            }
            done += w as u64;
        }
        if sync {
            // SAFETY: our descriptors.
            if unsafe { crate::sys::fsync(fd) } != 0 || unsafe { crate::sys::fsync(dfd) } != 0 {
                return Err(fail("fsync"));
            }
        }
        // SAFETY: our descriptor.
        if unsafe { crate::sys::close(fd) } != 0 {
            return Err(os_err("close", &self.name_str(i)));
        }
        Ok(())
    }

    /// readdir one directory; stat (and read) or unlink every entry not starting with '.'.
    fn walk_dir(
        &self,
        dfd: i32,
        delete: bool,
        sync: bool,
        buf: &mut [u8],
        rec: &mut crate::measure::Recorder,
    ) -> Result<(u64, u64)> {
        // SAFETY: dup of our descriptor, handed to fdopendir which owns it.
        let d = unsafe { libc::fdopendir(libc::dup(dfd)) };
        if d.is_null() {
            return Err(os_err("opendir", FILES_DIR));
        }
        // SAFETY: d is a valid DIR*; the dup shares the offset, so rewind.
        unsafe { libc::rewinddir(d) };
        let (mut count, mut bytes) = (0u64, 0u64);
        let out = loop {
            if rec.interrupted() {
                break Ok(());
            }
            let t0 = rec.stamp();
            // SAFETY: d is valid.
            let ent = unsafe { libc::readdir(d) };
            if ent.is_null() {
                break Ok(());
            }
            // SAFETY: readdir returned a valid entry with a NUL-terminated name.
            let name = unsafe { (*ent).d_name.as_ptr() };
            // SAFETY: name has at least its NUL.
            if unsafe { *name } == b'.' as libc::c_char {
                continue;
            }
            if delete {
                // SAFETY: NUL-terminated name in an open directory.
                if unsafe { crate::sys::unlinkat(dfd, name, 0) } != 0 {
                    break Err(os_err("unlink", &cstr(name)));
                }
                // SAFETY: our directory descriptor.
                if sync && unsafe { crate::sys::fsync(dfd) } != 0 {
                    break Err(os_err("fsync directory", FILES_DIR));
                }
                rec.record(DELETE, 0, t0, rec.stamp());
            } else {
                match stat_file(dfd, name, buf) {
                    Ok(b) => bytes += b,
                    Err(e) => break Err(EngineError::io(format!("stat {}", cstr(name)), e)),
                }
                rec.record(STAT, 0, t0, rec.stamp());
            }
            count += 1;
        };
        // SAFETY: d is valid; closes the dup.
        unsafe { libc::closedir(d) };
        out.map(|_| (count, bytes))
    }

    /// rmdir the subdirectories and the test directory (their descriptors stay open until after).
    fn remove_dirs(&self, spec: &BonnieSpec, job: &Settings) -> Result<()> {
        let top = job.dir.join(FILES_DIR);
        if spec.file_dirs > 1 {
            for d in 0..spec.file_dirs {
                let p = top.join(format!("{d:05}"));
                // SAFETY: NUL-terminated path.
                if unsafe { crate::sys::rmdir(cpath(&p).as_ptr()) } != 0 {
                    return Err(os_err("rmdir", &p.display().to_string()));
                }
            }
        }
        // SAFETY: NUL-terminated path.
        if unsafe { crate::sys::rmdir(cpath(&top).as_ptr()) } != 0 {
            return Err(os_err("rmdir", &top.display().to_string()));
        }
        Ok(())
    }

    /// Removes the test directory and what is in it (after an interrupted or failed run).
    pub fn cleanup(&mut self, job: &Settings) -> Result<(u64, u64)> {
        self.close_dirs();
        let top = job.dir.join(FILES_DIR);
        let (mut files, mut dirs) = (0u64, 0u64);
        let Ok(entries) = std::fs::read_dir(&top) else { return Ok((0, 0)) };
        let io = |p: &std::path::Path, e: std::io::Error| EngineError::io(format!("cleanup {}", p.display()), e);
        for e in entries {
            let e = e.map_err(|x| io(&top, x))?;
            let p = e.path();
            if e.file_type().map_err(|x| io(&p, x))?.is_dir() {
                for f in std::fs::read_dir(&p).map_err(|x| io(&p, x))? {
                    let f = f.map_err(|x| io(&p, x))?;
                    std::fs::remove_file(f.path()).map_err(|x| io(&f.path(), x))?;
                    files += 1;
                }
                std::fs::remove_dir(&p).map_err(|x| io(&p, x))?;
                dirs += 1;
            } else {
                std::fs::remove_file(&p).map_err(|x| io(&p, x))?;
                files += 1;
            }
        }
        std::fs::remove_dir(&top).map_err(|x| io(&top, x))?;
        Ok((files, dirs + 1))
    }
}

fn cstr(p: *const libc::c_char) -> String {
    // SAFETY: p is NUL-terminated (a dirent name).
    unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// bonnie++'s stat_file: stat, and when the file has data, open it and read it all.
#[inline]
fn stat_file(dfd: i32, name: *const libc::c_char, buf: &mut [u8]) -> std::io::Result<u64> {
    // SAFETY: zeroed stat is a valid out-buffer.
    let mut sb: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: NUL-terminated name in an open directory.
    if unsafe { crate::sys::fstatat(dfd, name, &mut sb, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let size = sb.st_size as u64;
    if size == 0 {
        return Ok(0);
    }
    // SAFETY: as above.
    let fd = unsafe { crate::nofollow::openat(dfd, name, libc::O_RDONLY | libc::O_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut done = 0u64;
    while done < size {
        let want = (size - done).min(buf.len() as u64) as usize;
        // SAFETY: want <= buf.len().
        let r = unsafe { crate::sys::read(fd, buf.as_mut_ptr() as *mut libc::c_void, want) };
        if r <= 0 {
            let e = if r < 0 {
                std::io::Error::last_os_error()
            } else {
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof)
            };
            // SAFETY: our descriptor.
            unsafe { crate::sys::close(fd) };
            return Err(e);
        }
        done += r as u64;
    }
    // SAFETY: our descriptor.
    unsafe { crate::sys::close(fd) };
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(files: u64, dirs: u32) -> BonnieSpec {
        serde_json::from_value(serde_json::json!({"size": 0, "files": files, "file_dirs": dirs})).unwrap()
    }

    fn tests() -> FileTests {
        FileTests {
            names: Vec::new(),
            dir_of: Vec::new(),
            sizes: Vec::new(),
            order: Vec::new(),
            dir_fds: Vec::new(),
            seed: 1,
        }
    }

    #[test]
    fn names_follow_bonnie_plus_plus() {
        let mut t = tests();
        t.make_names(&spec(300, 1), false, &mut Rng::new(1, 1));
        let names: Vec<String> = (0..300).map(|i| t.name_str(i)).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(n.starts_with(&format!("{i:010x}")), "{n}");
            assert!(n.len() >= 10 && n.len() <= 22);
            assert!(n[10..].bytes().all(|b| RAND_CHARS.contains(&b)));
        }
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(sorted, names, "sequential names sort in creation order");
        t.make_names(&spec(300, 1), true, &mut Rng::new(1, 4));
        for i in 0..300 {
            assert!(t.name_str(i).ends_with(&format!("{i:010x}")));
        }
    }

    #[test]
    fn directories_fill_as_bonnie_plus_plus_fills_them() {
        let mut t = tests();
        // 10 files in 3 directories: names_per_directory = 3, each directory takes 4.
        t.make_names(&spec(10, 3), false, &mut Rng::new(1, 1));
        assert_eq!(t.dir_of, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]);
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut t = tests();
        t.make_names(&spec(1000, 1), true, &mut Rng::new(1, 1));
        t.shuffle(&mut Rng::new(1, 5));
        let mut o = t.order.clone();
        assert_ne!(o, (0..1000).collect::<Vec<u32>>());
        o.sort();
        assert_eq!(o, (0..1000).collect::<Vec<u32>>());
    }
}
