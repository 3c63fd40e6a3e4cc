//! Verification of data that carries no fsmeter block headers (external tools'
//! output, dbench's unaligned writes): what was found, in the same shape as the
//! header checks' `extra.verify`, and one mismatch described by its bytes.

use serde_json::{json, Value};

use super::header::hex;
use super::{Checksum, KEEP_MISMATCHES};

/// Bytes shown around a first differing byte.
const WINDOW: usize = 16;

/// What a content check found.
pub struct ContentCheck {
    /// The checksum algorithm reported beside the comparison (None: bytes compared only).
    pub algo: Option<Checksum>,
    pub checked: u64,
    pub mismatches: u64,
    pub kept: Vec<Value>,
    pub notes: Value,
}

impl ContentCheck {
    pub fn new(algo: Option<Checksum>) -> ContentCheck {
        ContentCheck { algo, checked: 0, mismatches: 0, kept: Vec::new(), notes: json!({}) }
    }

    #[cold]
    pub fn note(&mut self, m: Value) {
        self.mismatches += 1;
        if self.kept.len() < KEEP_MISMATCHES {
            self.kept.push(m);
        }
    }

    /// Add another check's findings (e.g. another thread's).
    pub fn absorb(&mut self, other: ContentCheck) {
        self.checked += other.checked;
        self.mismatches += other.mismatches;
        let room = KEEP_MISMATCHES.saturating_sub(self.kept.len());
        self.kept.extend(other.kept.into_iter().take(room));
    }

    /// Into a phase report: counters and `extra.verify`.
    pub fn merge_into(self, report: &mut crate::report::PhaseReport) {
        report.counters.insert("verify_blocks_checked".into(), self.checked);
        report.counters.insert("verify_blocks_written".into(), 0);
        report.counters.insert("verify_mismatches".into(), self.mismatches);
        if !report.extra.is_object() {
            report.extra = json!({});
        }
        report.extra["verify"] = json!({
            "algo": self.algo.map_or("pattern", |a| a.name()),
            "blocks_checked": self.checked,
            "mismatches_total": self.mismatches,
            "mismatches": self.kept,
            "notes": self.notes,
        });
    }
}

/// The kinds of a content mismatch, by the code `mismatch_kind` returns.
pub const KINDS: [&str; 3] = ["bad_data", "zero_filled", "zero_tail"];

/// What a block or range `found` whose byte `first` differs looks like: all zeros (1), zeros
/// from the first difference on (2), or other bytes (0); an index into `KINDS`.
#[cold]
pub fn mismatch_kind(found: &[u8], first: usize) -> u8 {
    if found.iter().all(|&v| v == 0) {
        1
    } else if found[first..].iter().all(|&v| v == 0) {
        2
    } else {
        0
    }
}

/// One mismatch: `len` bytes at `offset` of `file` (the block or range checked), whose
/// byte `first` differs: expected `exp`, found `found` (both the whole range).
#[cold]
pub fn byte_mismatch(
    file: &str,
    offset: u64,
    len: usize,
    phase: &str,
    exp: &[u8],
    found: &[u8],
    first: usize,
) -> Value {
    let kind = KINDS[mismatch_kind(found, first) as usize];
    let start = first.saturating_sub(WINDOW / 2);
    let end = (start + WINDOW).min(exp.len()).min(found.len()).max(start);
    json!({
        "file": file, "offset": offset, "len": len, "kind": kind, "phase": phase,
        "first_diff": first, "first_diff_offset": offset + first as u64, "window_start": start,
        "expected_bytes": hex(&exp[start..end]), "found_bytes": hex(&found[start..end]),
    })
}
