//! What each thread counts (files and bytes per operation kind), and how the counts are reported.

use crate::report::PhaseReport;

/// Per-thread cumulative counts since the last create phase.
#[derive(Clone, Copy, Default, Debug)]
pub(super) struct Counts {
    pub(super) created_alone: u64,
    pub(super) created_mixed: u64,
    pub(super) read: u64,
    pub(super) appended: u64,
    pub(super) deleted_alone: u64,
    pub(super) deleted_mixed: u64,
    pub(super) bytes_read: u64,
    pub(super) bytes_written: u64,
    pub(super) transactions: u64,
    pub(super) transactions_measured: u64,
    pub(super) out_of_files: u64,
}

impl Counts {
    pub(super) fn sub(&self, o: &Counts) -> Counts {
        Counts {
            created_alone: self.created_alone - o.created_alone,
            created_mixed: self.created_mixed - o.created_mixed,
            read: self.read - o.read,
            appended: self.appended - o.appended,
            deleted_alone: self.deleted_alone - o.deleted_alone,
            deleted_mixed: self.deleted_mixed - o.deleted_mixed,
            bytes_read: self.bytes_read - o.bytes_read,
            bytes_written: self.bytes_written - o.bytes_written,
            transactions: self.transactions - o.transactions,
            transactions_measured: self.transactions_measured - o.transactions_measured,
            out_of_files: self.out_of_files - o.out_of_files,
        }
    }
    pub(super) fn add(&mut self, o: &Counts) {
        self.created_alone += o.created_alone;
        self.created_mixed += o.created_mixed;
        self.read += o.read;
        self.appended += o.appended;
        self.deleted_alone += o.deleted_alone;
        self.deleted_mixed += o.deleted_mixed;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.transactions += o.transactions;
        self.transactions_measured += o.transactions_measured;
        self.out_of_files += o.out_of_files;
    }
    pub(super) fn put(&self, r: &mut PhaseReport) {
        let c = &mut r.counters;
        c.insert("files_created_alone".into(), self.created_alone);
        c.insert("files_created_mixed".into(), self.created_mixed);
        c.insert("files_read".into(), self.read);
        c.insert("files_appended".into(), self.appended);
        c.insert("files_deleted_alone".into(), self.deleted_alone);
        c.insert("files_deleted_mixed".into(), self.deleted_mixed);
        c.insert("bytes_read".into(), self.bytes_read);
        c.insert("bytes_written".into(), self.bytes_written);
        c.insert("transactions".into(), self.transactions);
        c.insert("transactions_measured".into(), self.transactions_measured);
    }
    pub(super) fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "files_created": self.created_alone + self.created_mixed,
            "files_created_alone": self.created_alone,
            "files_created_mixed": self.created_mixed,
            "files_read": self.read,
            "files_appended": self.appended,
            "files_deleted": self.deleted_alone + self.deleted_mixed,
            "files_deleted_alone": self.deleted_alone,
            "files_deleted_mixed": self.deleted_mixed,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "transactions": self.transactions,
        })
    }
}

pub(super) const KINDS: &[&str] = &["create", "read", "append", "delete"];
pub(super) const CREATE: usize = 0;
pub(super) const READ: usize = 1;
pub(super) const APPEND: usize = 2;
pub(super) const DELETE: usize = 3;
