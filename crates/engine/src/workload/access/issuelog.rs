//! fio's write_iolog: every request a thread issues (reads, writes, trims, syncs and the read-backs
//! of verification), logged as fio's I/O log version 3, which fio's and fsmeter's `read_iolog`
//! replay: `TIME_US FILE ACTION OFFSET LENGTH`, after a `TIME_US FILE add` and `open` line per
//! file and before a `close` line each (fio's log_io_u and log_file).
//!
//! As the per-I/O latency log (iolog.rs), each thread appends a fixed-size record per request to a
//! buffer it allocated and touched before the start; a request past a full buffer is counted, not
//! logged (`counters.iolog_dropped`). The time is taken where the request is issued, from the
//! thread's common start (fio's: from its job's start).

use std::io::Write;

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

fn default_max_records() -> u64 {
    1 << 22
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IssueLogSpec {
    /// The log file to write.
    pub path: String,
    /// Each file's name as the log gives it, in the spec's file order.
    pub names: Vec<String>,
    /// Records each thread keeps at most (32 bytes each, allocated before the start).
    #[serde(default = "default_max_records")]
    pub max_records: u64,
}

impl IssueLogSpec {
    pub fn validate(&self, file_count: u32) -> Result<()> {
        if self.path.is_empty() || self.path.contains('\0') {
            return Err(EngineError::invalid("iolog_out.path", "give a file name"));
        }
        if self.names.len() != file_count as usize
            || self.names.iter().any(|n| n.is_empty() || n.chars().any(|c| c.is_whitespace() || c == '\0'))
        {
            return Err(EngineError::invalid(
                "iolog_out.names",
                format!("give one name per file ({file_count}), each without blanks (a log line splits at them)"),
            ));
        }
        if self.max_records == 0 || self.max_records > 1 << 28 {
            return Err(EngineError::invalid("iolog_out.max_records", "between 1 and 2^28 records per thread"));
        }
        Ok(())
    }
}

/// What a logged request did, as fio's log names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Action {
    #[default]
    Read = 0,
    Write = 1,
    Trim = 2,
    Sync = 3,
    Datasync = 4,
    SyncFileRange = 5,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Read => "read",
            Action::Write => "write",
            Action::Trim => "trim",
            Action::Sync => "sync",
            Action::Datasync => "datasync",
            Action::SyncFileRange => "sync_file_range",
        }
    }
}

/// One issued request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Issued {
    pub t_ns: u64,
    pub offset: u64,
    pub len: u32,
    pub file: u32,
    pub action: Action,
}

/// One thread's records, and the time they count from.
pub struct IssueBuf {
    recs: Vec<Issued>,
    base_ns: u64,
    pub dropped: u64,
}

impl IssueBuf {
    /// Allocates and touches the whole buffer now (before the start).
    pub fn new(max_records: u64) -> Self {
        let mut recs = vec![Issued::default(); max_records as usize];
        recs.clear();
        IssueBuf { recs, base_ns: 0, dropped: 0 }
    }

    /// The thread's common start: the log's time zero.
    pub fn start(&mut self, now_ns: u64) {
        self.base_ns = now_ns;
    }

    #[inline(always)]
    pub fn push(&mut self, t_ns: u64, action: Action, file: u32, offset: u64, len: u32) {
        if self.recs.len() < self.recs.capacity() {
            let t_ns = t_ns.saturating_sub(self.base_ns);
            self.recs.push(Issued { t_ns, offset, len, file, action });
        } else {
            self.dropped += 1;
        }
    }

    pub fn take(&mut self) -> Vec<Issued> {
        std::mem::take(&mut self.recs)
    }
}

/// The log's text: the threads' records merged in issue order, every file added and opened at time
/// zero and closed at `end_ns` (from the common start).
pub fn text(spec: &IssueLogSpec, threads: Vec<Vec<Issued>>, end_ns: u64) -> (String, u64) {
    use std::fmt::Write as _;
    let mut all: Vec<Issued> = threads.into_iter().flatten().collect();
    all.sort_by_key(|r| r.t_ns);
    let mut out = String::with_capacity(64 + all.len() * 40);
    out.push_str("fio version 3 iolog\n");
    for act in ["add", "open"] {
        for n in &spec.names {
            let _ = writeln!(out, "0 {n} {act}");
        }
    }
    for r in &all {
        let name = &spec.names[r.file as usize];
        let _ = writeln!(out, "{} {name} {} {} {}", r.t_ns / 1000, r.action.name(), r.offset, r.len);
    }
    let end_us = (end_ns / 1000).max(all.last().map_or(0, |r| r.t_ns / 1000));
    for n in &spec.names {
        let _ = writeln!(out, "{end_us} {n} close");
    }
    (out, all.len() as u64)
}

/// Writes the log; the number of requests it holds.
pub fn write_iolog(spec: &IssueLogSpec, threads: Vec<Vec<Issued>>, end_ns: u64) -> Result<u64> {
    let (body, n) = text(spec, threads, end_ns);
    let mut f = crate::nofollow::create(std::path::Path::new(&spec.path))?;
    f.write_all(body.as_bytes()).map_err(|e| EngineError::io(format!("writing the I/O log {}", spec.path), e))?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of fio 3's own log for a one-file job (fio-3.33: `write_iolog` of a 64 KiB
    /// randrw job with fsync=4): header, add, open, one line per request, close.
    #[test]
    fn lines_are_fios() {
        let spec = IssueLogSpec { path: "x".into(), names: vec!["f1".into()], max_records: 4 };
        let mut b = IssueBuf::new(3);
        b.start(1_000);
        b.push(149_000, Action::Read, 0, 0, 4096);
        b.push(488_500, Action::Write, 0, 28672, 4096);
        b.push(625_000, Action::Sync, 0, 0, 0);
        b.push(700_000, Action::Read, 0, 4096, 4096);
        assert_eq!(b.dropped, 1);
        let (t, n) = text(&spec, vec![b.take()], 7_495_000);
        assert_eq!(n, 3);
        assert_eq!(
            t,
            "fio version 3 iolog\n0 f1 add\n0 f1 open\n148 f1 read 0 4096\n487 f1 write 28672 4096\n\
             624 f1 sync 0 0\n7495 f1 close\n"
        );
    }

    #[test]
    fn two_threads_merge_in_issue_order() {
        let spec = IssueLogSpec { path: "x".into(), names: vec!["a".into(), "b".into()], max_records: 4 };
        let (mut x, mut y) = (IssueBuf::new(2), IssueBuf::new(2));
        x.push(2_000, Action::Write, 0, 0, 512);
        y.push(1_000, Action::Trim, 1, 512, 512);
        let (t, _) = text(&spec, vec![x.take(), y.take()], 0);
        assert!(t.contains("1 b trim 512 512\n2 a write 0 512\n2 a close\n2 b close\n"), "{t}");
        assert!(spec.validate(2).is_ok() && spec.validate(3).is_err());
        let blank = IssueLogSpec { names: vec!["a b".into(), "c".into()], ..spec };
        assert!(blank.validate(2).is_err());
    }
}
