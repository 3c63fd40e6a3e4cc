//! Parsing a dbench load file (client.txt format) into a shared, compact table.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::ops::*;
use crate::error::{EngineError, Result};

/// A parsed load file: shared read-only by every client.
#[derive(Debug)]
pub struct LoadFile {
    pub source: PathBuf,
    pub ops: Vec<Op>,
    /// Interned paths (each starting with '/', "client1" replaced by CLIENT_MARK).
    pub(super) path_data: Vec<u8>,
    pub(super) path_ends: Vec<u32>,
    pub statuses: Vec<String>,
    /// Distinct handle numbers of the file, by dense index.
    pub handles: Vec<i64>,
    pub max_io: u32,
    /// Requested ReadX and WriteX bytes of one pass (what one pass moves).
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl LoadFile {
    pub fn path(&self, id: u32) -> &[u8] {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.path_ends[i - 1] as usize };
        &self.path_data[start..self.path_ends[i] as usize]
    }

    pub fn path_count(&self) -> usize {
        self.path_ends.len()
    }

    /// Parse a load file as dbench's child_run does, but strictly: a line dbench
    /// would skip or misread (unknown operation, missing or non-numeric field,
    /// bad status) is an error naming the file and line.
    pub fn open(path: &Path) -> Result<LoadFile> {
        let f = std::fs::File::open(path)
            .map_err(|e| EngineError::invalid("loadfile", format!("cannot open {}: {e}", path.display())))?;
        Self::parse(path, BufReader::with_capacity(1 << 16, f))
    }

    pub fn parse(source: &Path, mut r: impl BufRead) -> Result<LoadFile> {
        let mut p = Parser {
            lf: LoadFile {
                source: source.to_path_buf(),
                ops: Vec::new(),
                path_data: Vec::new(),
                path_ends: Vec::new(),
                statuses: Vec::new(),
                handles: Vec::new(),
                max_io: 0,
                read_bytes: 0,
                write_bytes: 0,
            },
            paths: HashMap::new(),
            statuses: HashMap::new(),
            handles: HashMap::new(),
        };
        let mut raw = Vec::with_capacity(1024);
        let mut line_no = 0u32;
        loop {
            raw.clear();
            let n = r
                .read_until(b'\n', &mut raw)
                .map_err(|e| EngineError::io(format!("reading {}", source.display()), e))?;
            if n == 0 {
                break;
            }
            line_no += 1;
            p.line(&raw, line_no).map_err(|what| {
                EngineError::invalid("loadfile", format!("load file {} line {line_no}: {what}", source.display()))
            })?;
        }
        if p.lf.ops.is_empty() {
            return Err(EngineError::invalid("loadfile", format!("{} holds no operations", source.display())));
        }
        p.lf.ops.shrink_to_fit();
        p.lf.path_data.shrink_to_fit();
        Ok(p.lf)
    }
}

pub(super) struct Parser {
    pub(super) lf: LoadFile,
    pub(super) paths: HashMap<Vec<u8>, u32>,
    pub(super) statuses: HashMap<String, u16>,
    pub(super) handles: HashMap<i64, u32>,
}

/// dbench's next_token(): space-separated, double quotes group (and are dropped).
pub(super) fn tokens(line: &[u8], out: &mut Vec<Vec<u8>>) {
    out.clear();
    let mut i = 0;
    while i < line.len() && out.len() < 19 {
        while i < line.len() && line[i] == b' ' {
            i += 1;
        }
        if i >= line.len() {
            break;
        }
        let mut tok = Vec::new();
        let mut quoted = false;
        while i < line.len() && (quoted || line[i] != b' ') {
            if line[i] == b'"' {
                quoted = !quoted;
            } else {
                tok.push(line[i]);
            }
            i += 1;
        }
        i += 1;
        out.push(tok);
    }
}

/// strtol(s, NULL, 0), but the whole token must be a number.
pub(super) fn parse_int(tok: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(tok).ok()?;
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if s.len() > 1 && s.starts_with('0') {
        i64::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}

pub(super) fn show(tok: &[u8]) -> String {
    String::from_utf8_lossy(tok).into_owned()
}

/// A load-file line as dbench reads it (the newline already stripped): '\\' becomes '/', and " /"
/// becomes " " (so only quoted paths keep their leading '/').
fn normalise(raw: &[u8]) -> Vec<u8> {
    let line: Vec<u8> = raw.iter().map(|&b| if b == b'\\' { b'/' } else { b }).collect();
    if !line.windows(2).any(|w| w == b" /") {
        return line;
    }
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        if line[i] == b' ' && line.get(i + 1) == Some(&b'/') {
            out.push(b' ');
            i += 2;
        } else {
            out.push(line[i]);
            i += 1;
        }
    }
    out
}

/// Whether a line's expected status says success: NT_STATUS_OK, 0x0 or SUCCESS.
fn expects_success(st: &str) -> std::result::Result<bool, String> {
    Ok(if st.starts_with("NT_STATUS_") {
        st == "NT_STATUS_OK"
    } else if let Some(h) = st.strip_prefix("0x") {
        u64::from_str_radix(h, 16).map_err(|_| format!("status {st:?} is not a hex number"))? == 0
    } else if st == "SUCCESS" {
        true
    } else if st == "ERROR" {
        false
    } else {
        return Err(format!(
            "the last field must be the expected status (NT_STATUS_..., 0x..., SUCCESS or ERROR), got {st:?}"
        ));
    })
}

/// An operation's kind and the fields it needs before the status.
fn kind_of(name: &str) -> std::result::Result<(u8, usize), String> {
    Ok(match name {
        "NTCreateX" => (NTCREATEX, 4),
        "Close" => (CLOSE, 1),
        "Rename" => (RENAME, 2),
        "Unlink" => (UNLINK, 2),
        "Deltree" => (DELTREE, 1),
        "Rmdir" => (RMDIR, 1),
        "Mkdir" => (MKDIR, 1),
        "QUERY_PATH_INFORMATION" => (QPATHINFO, 2),
        "QUERY_FILE_INFORMATION" => (QFILEINFO, 2),
        "QUERY_FS_INFORMATION" => (QFSINFO, 1),
        "SET_FILE_INFORMATION" => (SFILEINFO, 2),
        "FIND_FIRST" => (FIND, 4),
        "WriteX" => (WRITEX, 4),
        "ReadX" => (READX, 4),
        "LockX" => (LOCKX, 3),
        "UnlockX" => (UNLOCKX, 3),
        "Flush" => (FLUSH, 1),
        "Sleep" => (SLEEP, 1),
        _ => return Err(format!("unknown operation {name:?}")),
    })
}

impl Parser {
    pub(super) fn line(&mut self, raw: &[u8], line_no: u32) -> std::result::Result<(), String> {
        let end = raw.len() - raw.iter().rev().take_while(|&&b| b == b'\n' || b == b'\r').count();
        let line = normalise(&raw[..end]);
        let mut toks = Vec::new();
        tokens(&line, &mut toks);
        if toks.len() < 2 || toks[0].first() == Some(&b'#') {
            return Ok(());
        }
        // The same fields as written, to tell "\dir" (from the share root, as dbench load
        // files name paths) from "/dir" (an absolute name) once both read "/dir".
        let mut raw_toks = Vec::new();
        tokens(&raw[..end], &mut raw_toks);
        if raw_toks.len() != toks.len() {
            return Err("a field holds nothing but a path separator".into());
        }
        if toks[0].starts_with(b"SMB") {
            return Err("this is a dbench 1 load file (SMB... operations); dbench 4 load files are needed".into());
        }
        // A leading number is a timestamp (dbench paces to it only with no -R);
        // fsmeter replays as fast as possible and ignores it.
        if toks[0].first().is_some_and(|c| c.is_ascii_digit()) {
            toks.remove(0);
            raw_toks.remove(0);
            if toks.len() < 2 {
                return Err("a timestamp with no operation after it".into());
            }
        }
        let st = show(toks.last().unwrap());
        let expect_ok = expects_success(&st)?;
        let status = self.status_index(st);
        let name = show(&toks[0]);
        let (kind, nargs) = kind_of(&name)?;
        // Fields between the operation and the status.
        let have = toks.len() - 2;
        if have < nargs {
            return Err(format!("{name} needs {nargs} field(s) before the status, found {have}"));
        }
        let args = &toks[1..toks.len() - 1];
        let raw_args = &raw_toks[1..raw_toks.len() - 1];
        let num = |i: usize, what: &str, max: i64| -> std::result::Result<i64, String> {
            let v =
                parse_int(&args[i]).ok_or_else(|| format!("{name}: {what} {:?} is not a number", show(&args[i])))?;
            if v < 0 || v > max {
                return Err(format!("{name}: {what} {v} is out of range (0..={max})"));
            }
            Ok(v)
        };
        let mut op = Op { line: line_no, kind, expect_ok, status, path: NONE, handle: NONE, a: 0, b: 0, c: 0 };
        let u32max = u32::MAX as i64;
        match kind {
            NTCREATEX => {
                op.path = self.path(&args[0], &raw_args[0], &name)?;
                op.a = num(1, "create options", u32max)? as u32;
                op.b = num(2, "create disposition", u32max)? as u32;
                op.handle = self.handle(num(3, "handle", i32::MAX as i64)?);
            }
            CLOSE | FLUSH => op.handle = self.handle(num(0, "handle", i32::MAX as i64)?),
            QFILEINFO | SFILEINFO => {
                op.handle = self.handle(num(0, "handle", i32::MAX as i64)?);
                op.a = num(1, "level", u32max)? as u32;
            }
            RENAME => {
                op.path = self.path(&args[0], &raw_args[0], &name)?;
                op.c = self.path(&args[1], &raw_args[1], &name)?;
            }
            UNLINK | DELTREE | RMDIR | MKDIR | QPATHINFO => op.path = self.path(&args[0], &raw_args[0], &name)?,
            QFSINFO => op.a = num(0, "level", u32max)? as u32,
            FIND => {
                op.path = self.path(&args[0], &raw_args[0], &name)?;
                op.a = num(1, "level", u32max)? as u32;
                op.b = num(2, "maxcnt", u32max)? as u32;
            }
            WRITEX | READX => {
                op.handle = self.handle(num(0, "handle", i32::MAX as i64)?);
                op.a = num(1, "offset", i32::MAX as i64)? as u32;
                op.b = num(2, "size", 1 << 30)? as u32;
                op.c = num(3, "returned size", 1 << 30)? as u32;
                self.lf.max_io = self.lf.max_io.max(op.b);
                if kind == READX {
                    self.lf.read_bytes += op.b as u64;
                } else {
                    self.lf.write_bytes += op.b as u64;
                }
            }
            LOCKX | UNLOCKX => {
                op.handle = self.handle(num(0, "handle", i32::MAX as i64)?);
                op.a = num(1, "offset", u32max)? as u32;
                op.b = num(2, "size", u32max)? as u32;
            }
            SLEEP => op.a = num(0, "microseconds", u32max)? as u32,
            _ => unreachable!(),
        }
        self.lf.ops.push(op);
        Ok(())
    }

    /// The index of a status in the load file's table, added on first sight.
    fn status_index(&mut self, st: String) -> u16 {
        if let Some(&i) = self.statuses.get(&st) {
            return i;
        }
        let i = self.lf.statuses.len() as u16;
        self.lf.statuses.push(st.clone());
        self.statuses.insert(st, i);
        i
    }

    pub(super) fn path(&mut self, tok: &[u8], raw: &[u8], name: &str) -> std::result::Result<u32, String> {
        if tok.first() != Some(&b'/') {
            return Err(format!("{name}: {:?} is not a quoted path like \"\\clients\\client1\\file\"", show(tok)));
        }
        confined(raw)?;
        if tok.contains(&0) || tok.contains(&CLIENT_MARK) {
            return Err(format!("{name}: the path holds a control byte"));
        }
        // Every "client1" becomes the client's own name (dbench all_string_sub).
        let mut key = Vec::with_capacity(tok.len());
        let mut i = 0;
        while i < tok.len() {
            if tok[i..].starts_with(b"client1") {
                key.push(CLIENT_MARK);
                i += 7;
            } else {
                key.push(tok[i]);
                i += 1;
            }
        }
        if let Some(&id) = self.paths.get(&key) {
            return Ok(id);
        }
        let id = self.lf.path_ends.len() as u32;
        self.lf.path_data.extend_from_slice(&key);
        self.lf.path_ends.push(self.lf.path_data.len() as u32);
        self.paths.insert(key, id);
        Ok(id)
    }

    pub(super) fn handle(&mut self, h: i64) -> u32 {
        *self.handles.entry(h).or_insert_with(|| {
            self.lf.handles.push(h);
            (self.lf.handles.len() - 1) as u32
        })
    }
}

/// A load file is data from elsewhere: every name it gives must stay inside the client's
/// directory. dbench names paths from the share root ("\\clients\\client1\\f") and puts them
/// under its directory; a ".." component would climb out of it, and a name written as an
/// absolute one ("/etc/f", "\\\\server\\share") means a place outside it.
/// `raw` is the field as written (quotes dropped, separators not yet turned into '/').
pub(super) fn confined(raw: &[u8]) -> std::result::Result<(), String> {
    let leaves = |why: &str| Err(format!("path \"{}\" leaves the client directory: {why}", show(raw)));
    if raw.first() == Some(&b'/') {
        return leaves(
            "it is an absolute name; name paths from the share root with backslashes, as \"\\clients\\client1\\file\"",
        );
    }
    if raw.starts_with(b"\\\\") {
        return leaves("it names a network share; name paths from the share root, as \"\\clients\\client1\\file\"");
    }
    if raw.split(|&b| b == b'\\' || b == b'/').any(|c| c == b"..") {
        return leaves("a \"..\" component climbs out of it; remove it");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> std::result::Result<LoadFile, String> {
        LoadFile::parse(Path::new("t.txt"), text.as_bytes()).map_err(|e| e.to_string())
    }

    #[test]
    fn tokens_follow_dbench_next_token() {
        let lf = parse("Rename \"\\clients\\client1\\a b\" \"\\clients\\client1\\c\" NT_STATUS_OK\n").unwrap();
        let op = lf.ops[0];
        assert_eq!(lf.path(op.path), b"/clients/\x01/a b");
        assert_eq!(lf.path(op.path2()), b"/clients/\x01/c");
    }

    #[test]
    fn paths_that_leave_the_client_directory_are_refused_with_their_line() {
        for (text, why) in [
            ("Close 1 NT_STATUS_OK\nDeltree \"\\..\\victim\" NT_STATUS_OK\n", "a \"..\" component"),
            ("NTCreateX \"\\clients\\client1\\..\\..\\..\\p.txt\" 0x40 0x5 1 NT_STATUS_OK\n", "a \"..\" component"),
            ("Rename \"\\a\" \"\\a\\..\" NT_STATUS_OK\n", "a \"..\" component"),
            ("Mkdir \"/etc/x\" NT_STATUS_OK\n", "absolute name"),
            ("Unlink \"\\\\server\\share\\f\" 0x6 NT_STATUS_OK\n", "network share"),
            ("0.5 Unlink \"\"/etc/passwd 0x6 NT_STATUS_OK\n", "absolute name"),
        ] {
            let e = parse(text).unwrap_err();
            let line = if text.starts_with("Close") { 2 } else { 1 };
            assert!(e.contains(&format!("load file t.txt line {line}: path \"")), "{e}");
            assert!(e.contains("leaves the client directory") && e.contains(why), "{e}");
        }
        // Names that only look odd stay allowed: "..." and "a..b" are ordinary names, "." stays put.
        let lf = parse("Mkdir \"\\clients\\client1\\...\\a..b\\.\" NT_STATUS_OK\n").unwrap();
        assert_eq!(lf.path(lf.ops[0].path), b"/clients/\x01/.../a..b/.");
    }

    #[test]
    fn numbers_parse_like_strtol_base_0() {
        assert_eq!(parse_int(b"0x40"), Some(64));
        assert_eq!(parse_int(b"010"), Some(8));
        assert_eq!(parse_int(b"16385"), Some(16385));
        assert_eq!(parse_int(b"0"), Some(0));
        assert_eq!(parse_int(b"12ab"), None);
    }

    #[test]
    fn comments_blank_lines_and_timestamps_are_skipped() {
        let lf = parse("# comment\n\nx\n0.125 Close 5 NT_STATUS_OK\n").unwrap();
        assert_eq!(lf.ops.len(), 1);
        assert_eq!(lf.ops[0].line, 4);
        assert_eq!(lf.ops[0].kind, CLOSE);
    }

    #[test]
    fn expected_status_decides_ok() {
        let lf = parse(
            "Close 1 NT_STATUS_OK\nClose 1 0x0\nClose 1 0xc0000034\nClose 1 NT_STATUS_NO_SUCH_FILE\nClose 1 SUCCESS\n",
        )
        .unwrap();
        let ok: Vec<bool> = lf.ops.iter().map(|o| o.expect_ok).collect();
        assert_eq!(ok, [true, true, false, false, true]);
    }
}
