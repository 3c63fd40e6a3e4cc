//! Opening and creating fsmeter's own files and directories under a run's directory so that a
//! symbolic link planted there under one of their names is never followed.
//!
//! Running as root in a shared directory, a link named like a file fsmeter writes (a job's
//! `NAME.0.0`, a tree's file, an exec job's output) would otherwise send the writes, or an
//! O_TRUNC, to the link's target. Every open of a name fsmeter makes carries O_NOFOLLOW (the
//! kernel then refuses a link at the last component with ELOOP, O_CREAT or not), creates carry
//! O_EXCL where the file must be new, and the directories fsmeter makes below a run's directory
//! are walked one component at a time with `openat(O_NOFOLLOW|O_DIRECTORY)` from a descriptor of
//! that directory, so a planted directory link cannot redirect the tree either. The run's
//! directory itself is the user's to name and may be reached through links.
//!
//! The opens happen in setup or are the workload's own operations: adding a flag costs nothing.

use std::ffi::{CStr, CString};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path};

use libc::{c_char, c_int, mode_t};

use crate::error::{EngineError, Result, LINK_HINT};

/// open(2) of a name fsmeter makes: never through a symbolic link at its last component.
///
/// # Safety
/// `path` must be a NUL-terminated string.
#[inline]
pub unsafe fn open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    crate::sys::open(path, flags | libc::O_NOFOLLOW, mode)
}

/// openat(2) of a name fsmeter makes below `dirfd`: never through a symbolic link at its last
/// component.
///
/// # Safety
/// `path` must be a NUL-terminated string; `dirfd` an open directory (or AT_FDCWD).
#[inline]
pub unsafe fn openat(dirfd: RawFd, path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    crate::sys::openat(dirfd, path, flags | libc::O_NOFOLLOW, mode)
}

/// std's OpenOptions for a name fsmeter makes (O_NOFOLLOW, O_CLOEXEC as std adds).
pub fn options() -> std::fs::OpenOptions {
    let mut o = std::fs::OpenOptions::new();
    o.custom_flags(libc::O_NOFOLLOW);
    o
}

/// Creates (or truncates) a file fsmeter writes, refusing a link in its place.
pub fn create(path: &Path) -> Result<std::fs::File> {
    options().write(true).create(true).truncate(true).open(path).map_err(|e| error(path, "create", e))
}

/// Opens a file fsmeter wrote, for reading, refusing a link in its place.
pub fn open_read(path: &Path) -> Result<std::fs::File> {
    options().read(true).open(path).map_err(|e| error(path, "open", e))
}

/// The error of a failed open of `path`: the link message when a link stands there, else the
/// system's error with `what` and the path.
pub fn error(path: &Path, what: &str, e: std::io::Error) -> EngineError {
    if is_link(path) {
        return link_error(path);
    }
    EngineError::io(format!("{what} {}", path.display()), e)
}

/// The error for a link found at `path`.
pub fn link_error(path: &Path) -> EngineError {
    EngineError::invalid("dir", format!("{} {LINK_HINT}", path.display()))
}

/// Whether `path` itself (not what it leads to) is a symbolic link.
pub fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// mkdir(2) of a directory fsmeter makes; an existing directory is fine, a link in its place
/// is refused.
pub fn create_dir(path: &Path) -> Result<bool> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let m = std::fs::symlink_metadata(path).map_err(|e| error(path, "creating directory", e))?;
            if m.file_type().is_symlink() {
                Err(link_error(path))
            } else if m.is_dir() {
                Ok(false)
            } else {
                Err(EngineError::io(format!("creating directory {}", path.display()), e))
            }
        }
        Err(e) => Err(error(path, "creating directory", e)),
    }
}

/// create_dir_all of `path` below the run's directory `root`: every component below `root` is
/// made (or found) with mkdirat and entered with openat(O_NOFOLLOW|O_DIRECTORY) from the one
/// before, so no component is a link. A `path` outside `root` (one the user named) is made as
/// it is; a ".." below `root` is refused.
pub fn create_dirs(root: &Path, path: &Path) -> Result<()> {
    let Ok(rel) = path.strip_prefix(root) else {
        return std::fs::create_dir_all(path).map_err(|e| error(path, "creating", e));
    };
    if rel.as_os_str().is_empty() {
        return std::fs::create_dir_all(path).map_err(|e| error(path, "creating", e));
    }
    std::fs::create_dir_all(root).map_err(|e| error(root, "creating", e))?;
    let croot = cstring(root)?;
    // SAFETY: croot is a valid C string. The root is the user's: its links are followed.
    let mut fd = unsafe { crate::sys::open(croot.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0) };
    if fd < 0 {
        return Err(EngineError::last_os(format!("open directory {}", root.display())));
    }
    let mut walked = root.to_path_buf();
    for comp in rel.components() {
        let name = match comp {
            Component::Normal(n) => n,
            Component::CurDir => continue,
            _ => {
                close(fd);
                return Err(EngineError::invalid("dir", format!("{} leaves {}", path.display(), root.display())));
            }
        };
        walked.push(name);
        let c = match cstring(Path::new(name)) {
            Ok(c) => c,
            Err(e) => {
                close(fd);
                return Err(e);
            }
        };
        // SAFETY: fd is an open directory (O_PATH serves *at calls); c a valid C string.
        let made = unsafe { crate::sys::mkdirat(fd, c.as_ptr(), 0o755) };
        let mkdir_err = (made < 0).then(std::io::Error::last_os_error);
        // SAFETY: as above.
        let next = unsafe {
            crate::sys::openat(fd, c.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0)
        };
        let open_err = std::io::Error::last_os_error();
        close(fd);
        if next < 0 {
            if is_link(&walked) {
                return Err(link_error(&walked));
            }
            let e = match mkdir_err {
                Some(e) if e.raw_os_error() != Some(libc::EEXIST) => e,
                _ => open_err,
            };
            return Err(EngineError::io(format!("creating {}", walked.display()), e));
        }
        fd = next;
    }
    close(fd);
    Ok(())
}

/// mkdirat(2) of a directory fsmeter makes below `dirfd` (shown as `shown`): an existing
/// directory is fine, a link in its place is refused.
pub fn mkdirat(dirfd: RawFd, name: &CStr, mode: mode_t, shown: &Path) -> Result<()> {
    // SAFETY: name is a C string; dirfd an open directory.
    if unsafe { crate::sys::mkdirat(dirfd, name.as_ptr(), mode) } == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::EEXIST) {
        return Err(EngineError::io(format!("mkdir {}", shown.display()), e));
    }
    // SAFETY: a zeroed stat for the kernel to fill; name and dirfd as above.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let r = unsafe { crate::sys::fstatat(dirfd, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    match st.st_mode & libc::S_IFMT {
        _ if r != 0 => Err(EngineError::last_os(format!("mkdir {}", shown.display()))),
        libc::S_IFDIR => Ok(()),
        libc::S_IFLNK => Err(link_error(shown)),
        _ => Err(EngineError::io(format!("mkdir {}", shown.display()), e)),
    }
}

fn close(fd: RawFd) {
    // SAFETY: the caller owns fd.
    unsafe { crate::sys::close(fd) };
}

fn cstring(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| EngineError::invalid("dir", format!("{} contains a NUL byte", p.display())))
}

/// Whether the errno of a failed open says a link stood at the name (ELOOP under O_NOFOLLOW).
pub fn is_link_errno(errno: Option<i32>) -> bool {
    errno == Some(libc::ELOOP)
}

/// The name as a C string, for callers that hold a CStr already.
pub fn c_path(c: &CStr) -> &Path {
    Path::new(std::ffi::OsStr::from_bytes(c.to_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn outside() -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target");
        std::fs::write(&target, b"7 bytes").unwrap();
        (d, target)
    }

    #[test]
    fn open_refuses_a_link_at_the_name_even_with_o_creat() {
        let run = tempfile::tempdir().unwrap();
        let (_o, target) = outside();
        let name = run.path().join("job.0.0");
        symlink(&target, &name).unwrap();
        let c = cstring(&name).unwrap();
        for flags in [libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, libc::O_RDWR, libc::O_RDONLY] {
            // SAFETY: c is a valid C string.
            let fd = unsafe { open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o644) };
            assert_eq!(fd, -1);
            assert!(is_link_errno(std::io::Error::last_os_error().raw_os_error()));
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"7 bytes");
    }

    #[test]
    fn create_and_open_read_name_the_link() {
        let run = tempfile::tempdir().unwrap();
        let (_o, target) = outside();
        let name = run.path().join("out");
        symlink(&target, &name).unwrap();
        let e = create(&name).unwrap_err().to_string();
        assert!(e.contains(LINK_HINT) && e.contains("out") && !e.contains('\n'), "{e}");
        assert!(open_read(&name).unwrap_err().to_string().contains(LINK_HINT));
        assert_eq!(std::fs::read(&target).unwrap(), b"7 bytes");
        // A plain name is created and read back.
        let plain = run.path().join("plain");
        std::io::Write::write_all(&mut create(&plain).unwrap(), b"x").unwrap();
        assert_eq!(std::io::read_to_string(open_read(&plain).unwrap()).unwrap(), "x");
    }

    #[test]
    fn create_dirs_refuses_a_planted_directory_link() {
        let run = tempfile::tempdir().unwrap();
        let away = tempfile::tempdir().unwrap();
        symlink(away.path(), run.path().join("a")).unwrap();
        let e = create_dirs(run.path(), &run.path().join("a/b/c")).unwrap_err().to_string();
        assert!(e.contains(LINK_HINT) && e.contains("/a "), "{e}");
        assert!(std::fs::read_dir(away.path()).unwrap().next().is_none(), "nothing made through the link");
        // Directories below the root are made; an existing one is fine; a ".." is refused.
        create_dirs(run.path(), &run.path().join("x/y/z")).unwrap();
        create_dirs(run.path(), &run.path().join("x/y/z")).unwrap();
        assert!(run.path().join("x/y/z").is_dir());
        assert!(create_dirs(run.path(), &run.path().join("x/../../e")).is_err());
        // The root itself may be reached through a link (the user named it).
        let via = away.path().join("via");
        symlink(run.path(), &via).unwrap();
        create_dirs(&via, &via.join("q")).unwrap();
        assert!(run.path().join("q").is_dir());
    }

    #[test]
    fn create_dir_refuses_a_link_and_accepts_a_directory() {
        let run = tempfile::tempdir().unwrap();
        let away = tempfile::tempdir().unwrap();
        symlink(away.path(), run.path().join("l")).unwrap();
        assert!(create_dir(&run.path().join("l")).unwrap_err().to_string().contains(LINK_HINT));
        assert!(create_dir(&run.path().join("d")).unwrap());
        assert!(!create_dir(&run.path().join("d")).unwrap());
    }
}
