//! fio's read_iolog: a thread's requests replayed from an I/O log, in the log's order, each at its
//! time (fio's replay; or as fast as they go with replay_no_stall). The log is parsed and checked
//! by the caller (its file names, which are paths); here are the requests, already mapped onto the
//! spec's files, and their times from the start.

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

/// What a replayed request does: fio's log actions.
pub const READ: u64 = 0;
pub const WRITE: u64 = 1;
pub const TRIM: u64 = 2;
pub const SYNC: u64 = 3;
pub const DATASYNC: u64 = 4;

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReplaySpec {
    /// The requests in order: `[due_ns, file, action, offset, len]`, `due_ns` from the thread's
    /// start (already scaled by replay_time_scale), `action` one of the constants above.
    pub ops: Vec<[u64; 5]>,
    /// Each request waits for its time (false: fio's replay_no_stall).
    #[serde(default = "yes")]
    pub timed: bool,
}

fn yes() -> bool {
    true
}

impl ReplaySpec {
    /// Every request on a file of the spec, within `file_size`, no longer than `max_len` (the
    /// request buffers' size), of a known action, in order of time.
    pub fn validate(&self, file_count: u32, file_size: u64, max_len: u64) -> Result<()> {
        if self.ops.is_empty() {
            return Err(EngineError::invalid("replay.ops", "give at least one request"));
        }
        let mut last = 0;
        for (i, &[due, file, action, offset, len]) in self.ops.iter().enumerate() {
            let bad = |m: String| Err(EngineError::invalid("replay.ops", format!("request {i}: {m}")));
            if file >= file_count as u64 {
                return bad(format!("file {file}, of {file_count}"));
            }
            if ![READ, WRITE, TRIM, SYNC, DATASYNC].contains(&action) {
                return bad(format!("action {action} (0 read, 1 write, 2 trim, 3 sync, 4 datasync)"));
            }
            if action <= TRIM && (len == 0 || len > max_len || offset.saturating_add(len) > file_size) {
                return bad(format!(
                    "{len} bytes at {offset}: a request is 1 to {max_len} bytes within the file's {file_size}"
                ));
            }
            if due < last {
                return bad(format!("its time {due} ns comes before the one before it ({last} ns)"));
            }
            last = due;
        }
        Ok(())
    }
}

/// One thread's place in the log.
pub struct Replay {
    ops: Vec<[u64; 5]>,
    timed: bool,
    pos: usize,
    start_ns: u64,
    due_ns: u64,
}

impl Replay {
    /// The thread's copy of the requests (made before the start).
    pub fn new(spec: &ReplaySpec) -> Self {
        Replay { ops: spec.ops.clone(), timed: spec.timed, pos: 0, start_ns: 0, due_ns: 0 }
    }

    /// The thread's common start: the log's time zero.
    pub fn start(&mut self, now_ns: u64) {
        self.start_ns = now_ns;
    }

    /// The next request, `[file, action, offset, len]` (None: the log is done).
    #[inline]
    pub fn next(&mut self) -> Option<[u64; 4]> {
        let &[due, file, action, offset, len] = self.ops.get(self.pos)?;
        self.pos += 1;
        self.due_ns = if self.timed { self.start_ns + due } else { 0 };
        Some([file, action, offset, len])
    }

    /// When the request last returned is due (0: now).
    #[inline]
    pub fn due(&self) -> u64 {
        self.due_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_come_in_order_at_their_times() {
        let spec = ReplaySpec {
            ops: vec![[0, 0, READ, 0, 4096], [1_000, 1, SYNC, 0, 0], [5_000, 1, TRIM, 8192, 512]],
            timed: true,
        };
        assert!(spec.validate(2, 1 << 20, 4096).is_ok());
        let mut r = Replay::new(&spec);
        r.start(100);
        assert_eq!((r.next(), r.due()), (Some([0, READ, 0, 4096]), 100));
        assert_eq!((r.next(), r.due()), (Some([1, SYNC, 0, 0]), 1_100));
        assert_eq!((r.next(), r.due()), (Some([1, TRIM, 8192, 512]), 5_100));
        assert!(r.next().is_none());
        let untimed = ReplaySpec { timed: false, ..spec.clone() };
        let mut r = Replay::new(&untimed);
        r.start(100);
        r.next();
        assert_eq!(r.due(), 0);
    }

    #[test]
    fn what_the_files_cannot_hold_is_refused_naming_the_request() {
        let one = |op: [u64; 5]| ReplaySpec { ops: vec![[0, 0, READ, 0, 512], op], timed: true };
        for (op, want) in [
            ([0, 2, READ, 0, 512], "request 1: file 2, of 2"),
            ([0, 0, 9, 0, 512], "request 1: action 9"),
            ([0, 0, WRITE, 4096, 8192], "request 1: 8192 bytes at 4096"),
            ([0, 0, READ, 1 << 20, 512], "within the file's"),
        ] {
            let e = one(op).validate(2, 1 << 20, 4096).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
        let late = ReplaySpec { ops: vec![[9, 0, READ, 0, 512], [3, 0, READ, 0, 512]], timed: true };
        assert!(late.validate(1, 4096, 512).unwrap_err().to_string().contains("comes before"));
        assert!(ReplaySpec { ops: vec![], timed: true }.validate(1, 4096, 512).is_err());
    }
}
