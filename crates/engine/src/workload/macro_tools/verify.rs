//! Content checks of the macro family's output (`verify` other than off), run
//! after a phase's timed tool and sync, outside the timing.
//!
//! The data is written by external tools (cp, tar), so it carries no fsmeter
//! block headers; it is checked against its source instead:
//! - cp: the copy is read back (evicted from the page cache first, so the read
//!   comes from the filesystem's storage where it can) beside the source, and
//!   compared byte for byte in 4 KiB blocks; every differing block is counted and
//!   the first ones are kept with their first differing byte. Both files'
//!   checksums with the chosen algorithm are reported as well.
//! - untar: GNU `tar --compare` reads the archive and compares every member with
//!   what was extracted (contents, sizes, types, links); each member it finds
//!   different or missing is one mismatch. Differences of modification time,
//!   mode or owner are counted apart, not as corruption (extractors may set them
//!   differently). The checksum algorithm plays no part here.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use sha2::Digest;

use crate::error::{EngineError, Result};
use crate::verify::content::{byte_mismatch, ContentCheck};
use crate::verify::header::{self, hex};
use crate::verify::Checksum;

/// Bytes per compared block (the unit mismatches are counted in).
pub const BLOCK: usize = 4096;
const CHUNK: usize = 1 << 20;

/// A running checksum of a whole file.
enum Running {
    Crc32c(u32),
    Xxh3(Box<xxhash_rust::xxh3::Xxh3>),
    Sha256(sha2::Sha256),
    Md5(md5::Md5),
    Sha1(sha1::Sha1),
    Sha3_224(sha3::Sha3_224),
    Sha3_256(sha3::Sha3_256),
    Sha512(sha2::Sha512),
    Sha3_384(sha3::Sha3_384),
    Sha3_512(sha3::Sha3_512),
    Crc32(crc::Digest<'static, u32>),
    Crc16(crc::Digest<'static, u16>),
    Crc7(crc::Digest<'static, u8>),
    Crc64(crc::Digest<'static, u64>),
}

impl Running {
    fn new(algo: Checksum) -> Running {
        match algo {
            Checksum::Crc32c => Running::Crc32c(0),
            Checksum::Xxh3 => Running::Xxh3(Box::default()),
            Checksum::Sha256 => Running::Sha256(sha2::Sha256::new()),
            Checksum::Md5 => Running::Md5(md5::Md5::new()),
            Checksum::Sha1 => Running::Sha1(sha1::Sha1::new()),
            Checksum::Sha3_224 => Running::Sha3_224(sha3::Sha3_224::new()),
            Checksum::Sha3_256 => Running::Sha3_256(sha3::Sha3_256::new()),
            Checksum::Sha512 => Running::Sha512(sha2::Sha512::new()),
            Checksum::Sha3_384 => Running::Sha3_384(sha3::Sha3_384::new()),
            Checksum::Sha3_512 => Running::Sha3_512(sha3::Sha3_512::new()),
            Checksum::Crc32 => Running::Crc32(header::CRC32.digest()),
            Checksum::Crc16 => Running::Crc16(header::CRC16.digest()),
            Checksum::Crc7 => Running::Crc7(header::CRC7.digest()),
            Checksum::Crc64 => Running::Crc64(header::CRC64.digest()),
        }
    }
    fn update(&mut self, data: &[u8]) {
        match self {
            Running::Crc32c(c) => *c = crc32c::crc32c_append(*c, data),
            Running::Xxh3(h) => h.update(data),
            Running::Sha256(h) => h.update(data),
            Running::Md5(h) => h.update(data),
            Running::Sha1(h) => h.update(data),
            Running::Sha3_224(h) => h.update(data),
            Running::Sha3_256(h) => h.update(data),
            Running::Sha512(h) => h.update(data),
            Running::Sha3_384(h) => h.update(data),
            Running::Sha3_512(h) => h.update(data),
            Running::Crc32(d) => d.update(data),
            Running::Crc16(d) => d.update(data),
            Running::Crc7(d) => d.update(data),
            Running::Crc64(d) => d.update(data),
        }
    }
    fn finish(self) -> String {
        match self {
            Running::Crc32c(c) => format!("{c:08x}"),
            Running::Xxh3(h) => format!("{:016x}", h.digest()),
            Running::Sha256(h) => hex(&h.finalize()),
            Running::Md5(h) => hex(&h.finalize()),
            Running::Sha1(h) => hex(&h.finalize()),
            Running::Sha3_224(h) => hex(&h.finalize()),
            Running::Sha3_256(h) => hex(&h.finalize()),
            Running::Sha512(h) => hex(&h.finalize()),
            Running::Sha3_384(h) => hex(&h.finalize()),
            Running::Sha3_512(h) => hex(&h.finalize()),
            Running::Crc32(d) => format!("{:08x}", d.finalize()),
            Running::Crc16(d) => format!("{:04x}", d.finalize()),
            Running::Crc7(d) => format!("{:02x}", d.finalize()),
            Running::Crc64(d) => format!("{:016x}", d.finalize()),
        }
    }
}

fn read_full(f: &mut std::fs::File, buf: &mut [u8], what: &Path) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match f.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(EngineError::io(format!("verify: reading {}", what.display()), e)),
        }
    }
    Ok(got)
}

fn len_of(f: &std::fs::File, what: &Path) -> Result<u64> {
    f.metadata().map(|m| m.len()).map_err(|e| EngineError::io(format!("verify: stat {}", what.display()), e))
}

fn short(copy: &Path, offset: u64, len: u64, kind: &str) -> Value {
    json!({"file": copy.display().to_string(), "offset": offset, "len": len, "kind": kind, "phase": "cp"})
}

/// cp: compare `copy` with `source` block by block, reading the copy back from storage where
/// the filesystem allows it (its pages are dropped first: the sync has written them).
pub fn compare_copy(source: &Path, copy: &Path, algo: Checksum) -> Result<ContentCheck> {
    let mut chk = ContentCheck::new(Some(algo));
    let mut src =
        std::fs::File::open(source).map_err(|e| EngineError::io(format!("verify: opening {}", source.display()), e))?;
    let mut dst =
        std::fs::File::open(copy).map_err(|e| EngineError::io(format!("verify: opening {}", copy.display()), e))?;
    // SAFETY: advisory calls on fds we own.
    unsafe { libc::posix_fadvise(dst.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    let (mut a, mut b) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    let (mut ha, mut hb) = (Running::new(algo), Running::new(algo));
    let mut off = 0u64;
    loop {
        let na = read_full(&mut src, &mut a, source)?;
        let nb = read_full(&mut dst, &mut b, copy)?;
        ha.update(&a[..na]);
        hb.update(&b[..nb]);
        let n = na.min(nb);
        for (i, (x, y)) in a[..n].chunks(BLOCK).zip(b[..n].chunks(BLOCK)).enumerate() {
            chk.checked += 1;
            if x != y {
                let first = x.iter().zip(y).position(|(p, q)| p != q).unwrap_or(0);
                let name = copy.display().to_string();
                chk.note(byte_mismatch(&name, off + (i * BLOCK) as u64, x.len(), "cp", x, y, first));
            }
        }
        if na != nb {
            // One file ended first: every block the other still holds is missing (or extra).
            let (src_len, dst_len) = (len_of(&src, source)?, len_of(&dst, copy)?);
            let end = off + n as u64;
            let (longer, what) = if src_len > dst_len { (src_len, "short") } else { (dst_len, "too_long") };
            let rest = (longer - end).div_ceil(BLOCK as u64);
            chk.checked += rest;
            chk.mismatches += rest.saturating_sub(1);
            chk.note(short(copy, end, longer - end, what));
            break;
        }
        if na < CHUNK {
            break;
        }
        off += na as u64;
    }
    chk.notes = json!({
        "how": "the copy is read back (its pages dropped from the cache first) and compared with the source byte for byte, in 4 KiB blocks",
        "source": source.display().to_string(),
        "source_checksum": ha.finish(),
        "copy_checksum": hb.finish(),
    });
    Ok(chk)
}

/// untar: `compare_argv` is `tar --compare ...` against the extracted tree; every member it
/// finds different in content, size or type, or missing, is a mismatch.
pub fn compare_tree(
    compare_argv: &[String],
    cwd: &Path,
    tree: &Path,
    algo: Checksum,
    files: u64,
) -> Result<ContentCheck> {
    let mut chk = ContentCheck::new(Some(algo));
    evict_tree(tree);
    let out = Command::new(&compare_argv[0])
        .args(&compare_argv[1..])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| EngineError::io(format!("verify: cannot start `{}`", compare_argv.join(" ")), e))?;
    // tar --compare: 0 same, 1 some differ, 2 trouble (which may still list differences).
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut metadata_only = 0u64;
    for line in stdout.lines().chain(stderr.lines()) {
        let line = line.strip_prefix("tar: ").unwrap_or(line);
        let Some((path, what)) = line.split_once(": ") else { continue };
        let kind = if what.contains("Contents differ") {
            "bad_data"
        } else if what.contains("Size differs") {
            "wrong_size"
        } else if what.contains("File type differs") || what.contains("Not a") {
            "wrong_type"
        } else if what.contains("link") && what.contains("differ") {
            "wrong_link"
        } else if what.contains("Cannot stat") || what.contains("No such file") {
            "missing"
        } else if what.contains("time differs")
            || what.contains("Mode differs")
            || what.contains("Uid differs")
            || what.contains("Gid differs")
        {
            metadata_only += 1;
            continue;
        } else {
            continue;
        };
        chk.note(json!({"file": tree.join(path).display().to_string(), "member": path, "kind": kind, "detail": what, "phase": "untar"}));
    }
    let code = out.status.code();
    if code == Some(2) && chk.mismatches == 0 {
        return Err(EngineError::io(
            format!("verify: `{}` failed", compare_argv.join(" ")),
            std::io::Error::other(stderr.lines().last().unwrap_or("exit status 2").to_string()),
        ));
    }
    chk.checked = files;
    chk.notes = json!({
        "how": "GNU tar --compare read the archive and compared every member with the extracted tree (contents, size, type, links); the checksum algorithm plays no part",
        "command": compare_argv,
        "metadata_differences": metadata_only,
    });
    Ok(chk)
}

/// Drop the extracted files' pages (written back by the sync), so tar reads them from storage.
fn evict_tree(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            evict_tree(&e.path());
        } else if t.is_file() {
            if let Ok(f) = std::fs::File::open(e.path()) {
                // SAFETY: advisory call on an fd we own.
                unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn an_exact_copy_passes_with_equal_checksums() {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3 * CHUNK + 1234).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(d.path().join("a"), &data).unwrap();
        std::fs::write(d.path().join("b"), &data).unwrap();
        for algo in Checksum::ALL {
            let c = compare_copy(&d.path().join("a"), &d.path().join("b"), algo).unwrap();
            assert_eq!(c.mismatches, 0);
            assert_eq!(c.checked, (data.len() as u64).div_ceil(BLOCK as u64));
            assert_eq!(c.notes["source_checksum"], c.notes["copy_checksum"]);
        }
        let c = compare_copy(&d.path().join("a"), &d.path().join("b"), Checksum::Crc32c).unwrap();
        assert_eq!(c.notes["source_checksum"], format!("{:08x}", crc32c::crc32c(&data)));
    }

    #[test]
    fn damaged_blocks_are_counted_and_the_first_byte_found() {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..2 * CHUNK).map(|i| (i % 253) as u8 | 1).collect();
        std::fs::write(d.path().join("a"), &data).unwrap();
        std::fs::write(d.path().join("b"), &data).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(d.path().join("b")).unwrap();
        f.write_at(&[0xAA], CHUNK as u64 + 5000).unwrap();
        f.write_at(&vec![0u8; BLOCK], 8 * BLOCK as u64).unwrap();
        let c = compare_copy(&d.path().join("a"), &d.path().join("b"), Checksum::Xxh3).unwrap();
        assert_eq!(c.mismatches, 2);
        assert_eq!(c.kept[0]["kind"], "zero_filled");
        assert_eq!(c.kept[0]["offset"], 8 * BLOCK as u64);
        assert_eq!(c.kept[1]["first_diff_offset"], CHUNK as u64 + 5000);
        assert_eq!(c.kept[1]["offset"], (CHUNK + 4096) as u64);
        assert_ne!(c.notes["source_checksum"], c.notes["copy_checksum"]);
        // A copy cut short: the missing blocks are counted.
        f.set_len(CHUNK as u64 - 3 * BLOCK as u64).unwrap();
        let c = compare_copy(&d.path().join("a"), &d.path().join("b"), Checksum::Crc32c).unwrap();
        let short = c.kept.iter().find(|m| m["kind"] == "short").expect("a short entry");
        assert_eq!(short["offset"], (CHUNK - 3 * BLOCK) as u64);
        assert_eq!(c.mismatches, 1 + 3 + (CHUNK / BLOCK) as u64, "the zeroed block and every missing block");
    }

    #[test]
    fn tar_compare_finds_changed_and_missing_members() {
        if Command::new("tar")
            .arg("--version")
            .output()
            .map(|o| !String::from_utf8_lossy(&o.stdout).contains("GNU tar"))
            .unwrap_or(true)
        {
            eprintln!("skipped: needs GNU tar");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src/t");
        std::fs::create_dir_all(src.join("sub")).unwrap();
        for (n, body) in [("a", "alpha"), ("sub/b", "beta"), ("sub/c", "gamma")] {
            std::fs::write(src.join(n), body).unwrap();
        }
        let archive = d.path().join("t.tar");
        assert!(Command::new("tar")
            .args(["cf", archive.to_str().unwrap(), "-C", d.path().join("src").to_str().unwrap(), "t"])
            .status()
            .unwrap()
            .success());
        let dest = d.path().join("x");
        std::fs::create_dir(&dest).unwrap();
        assert!(Command::new("tar")
            .args(["xf", archive.to_str().unwrap(), "-C", dest.to_str().unwrap()])
            .status()
            .unwrap()
            .success());
        let argv: Vec<String> = ["tar", "--compare", "-f", archive.to_str().unwrap(), "-C", dest.to_str().unwrap()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let c = compare_tree(&argv, d.path(), &dest, Checksum::Sha256, 3).unwrap();
        assert_eq!((c.mismatches, c.checked), (0, 3));
        std::fs::write(dest.join("t/sub/b"), "BETA").unwrap();
        std::fs::remove_file(dest.join("t/a")).unwrap();
        let c = compare_tree(&argv, d.path(), &dest, Checksum::Sha256, 3).unwrap();
        assert_eq!(c.mismatches, 2);
        let kinds: Vec<_> = c
            .kept
            .iter()
            .map(|m| (m["member"].as_str().unwrap().to_string(), m["kind"].as_str().unwrap().to_string()))
            .collect();
        assert!(kinds.contains(&("t/sub/b".into(), "bad_data".into())), "{kinds:?}");
        assert!(kinds.contains(&("t/a".into(), "missing".into())), "{kinds:?}");
    }
}
