//! fio's `verify_backlog`: a thread's written requests that no read has checked yet, and when
//! to re-read them during the run.
//!
//! fio logs every write it issues; once N logged writes are waiting (and the last request it
//! completed was not a read), the next `verify_backlog_batch` requests it issues (default N) are
//! reads of logged writes, oldest first, each taken off the log; what is left when its writes are
//! done is read back before the job ends. Here a write joins the queue when it completes (so a
//! read never overtakes the write it checks), and the trigger is tested then.

use std::collections::VecDeque;

/// A written request still to be checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub file: u32,
    pub offset: u64,
    pub len: u32,
    pub generation: u64,
}

/// One thread's backlog. Its queue is allocated once, before the run (no allocation per request).
pub struct Backlog {
    queue: VecDeque<Piece>,
    every: usize,
    batch: u64,
    /// Reads of the current batch still to issue.
    pending: u64,
    /// Reads issued from the backlog (during the run and at its end).
    pub reads: u64,
}

impl Backlog {
    /// `every` (fio's verify_backlog, > 0) and `batch` (verify_backlog_batch; 0: `every`);
    /// `queue_depth` writes may complete between two checks of the trigger.
    pub fn new(every: u32, batch: u32, queue_depth: usize) -> Backlog {
        let every = every.max(1) as usize;
        Backlog {
            queue: VecDeque::with_capacity(every + queue_depth + 1),
            every,
            batch: if batch == 0 { every as u64 } else { batch as u64 },
            pending: 0,
            reads: 0,
        }
    }

    /// A write completed: queue it, and start a batch when `every` writes are waiting.
    #[inline]
    pub fn written(&mut self, p: Piece) {
        if self.queue.len() == self.queue.capacity() {
            // Cannot happen (a batch starts at `every`); never grow the queue on the hot path.
            self.pending = self.pending.max(1);
            return;
        }
        self.queue.push_back(p);
        if self.queue.len().is_multiple_of(self.every) {
            self.pending = self.batch;
        }
    }

    /// The next read of a batch, if one is due and a write is waiting.
    #[inline]
    pub fn next_read(&mut self) -> Option<Piece> {
        if self.pending == 0 {
            return None;
        }
        let p = self.queue.pop_front()?;
        self.pending -= 1;
        self.reads += 1;
        Some(p)
    }

    /// What is left at the end of the writes (read back before the thread ends).
    #[inline]
    pub fn take_left(&mut self) -> Option<Piece> {
        let p = self.queue.pop_front()?;
        self.reads += 1;
        Some(p)
    }

    pub fn waiting(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(i: u64) -> Piece {
        Piece { file: 0, offset: i * 4096, len: 4096, generation: i + 1 }
    }

    #[test]
    fn a_batch_starts_every_n_writes_oldest_first() {
        let mut b = Backlog::new(3, 0, 1);
        b.written(piece(0));
        b.written(piece(1));
        assert_eq!(b.next_read(), None, "two writes waiting, the backlog is three");
        b.written(piece(2));
        assert_eq!(b.next_read(), Some(piece(0)));
        assert_eq!(b.next_read(), Some(piece(1)));
        assert_eq!(b.next_read(), Some(piece(2)));
        assert_eq!(b.next_read(), None);
        b.written(piece(3));
        assert_eq!(b.next_read(), None);
        assert_eq!(b.take_left(), Some(piece(3)));
        assert_eq!(b.reads, 4);
    }

    #[test]
    fn a_smaller_batch_leaves_the_rest_waiting() {
        let mut b = Backlog::new(4, 2, 1);
        for i in 0..4 {
            b.written(piece(i));
        }
        assert_eq!((b.next_read(), b.next_read(), b.next_read()), (Some(piece(0)), Some(piece(1)), None));
        assert_eq!(b.waiting(), 2);
        b.written(piece(4));
        assert_eq!(b.next_read(), None, "three waiting: not a multiple of four");
        b.written(piece(5));
        assert_eq!(b.next_read(), Some(piece(2)), "four waiting again: the next batch");
    }

    #[test]
    fn backlog_one_reads_every_write_back_at_once() {
        let mut b = Backlog::new(1, 0, 16);
        for i in 0..100 {
            b.written(piece(i));
            assert_eq!(b.next_read(), Some(piece(i)));
            assert_eq!(b.next_read(), None);
        }
        assert_eq!(b.reads, 100);
    }
}
